"""Errors raised while tracing a kernel: they point at the user's DSL line with a caret, say what
was expected, what was found and how to fix it, and show no tracer internals."""

from __future__ import annotations

import contextlib
import inspect
import itertools
import linecache
import os
import sys
import traceback
from typing import Any

from argus.diagnostics import LocatedError
from argus.ir.expr import SourceLoc

_LANG_DIR = os.path.dirname(os.path.abspath(__file__))
_ARGUS_DIR = os.path.dirname(_LANG_DIR)


_CONTEXTLIB = os.path.abspath(contextlib.__file__)


#: Code objects of the functions decorated with `macro`: their frames are skipped like the tracer's own.
_MACRO_CODES: set[Any] = set()


def macro(fn: Any) -> Any:
    """Decorate a trace-time helper that emits DSL operations for a kernel (``@T.macro``): the statements it
    emits, and the errors they raise, are located at the kernel line that called it, as if written there."""
    _MACRO_CODES.add(fn.__code__)
    return fn


def _is_internal(filename: str, code: Any = None) -> bool:
    """Frames of the tracer itself (and of `contextlib`, which runs `with T.grid(...)`), and of `macro`s."""
    if code is not None and code in _MACRO_CODES:
        return True
    path = os.path.abspath(filename)
    if path == _CONTEXTLIB:
        return True
    return path.startswith(_LANG_DIR + os.sep) or path.startswith(os.path.join(_ARGUS_DIR, "ir") + os.sep)


def def_loc(fn: Any) -> SourceLoc:
    """The ``def`` line of function `fn` (its first line where the source is unavailable)."""
    code = fn.__code__
    try:
        lines, start = inspect.getsourcelines(fn)
        text = next((ln for ln in lines if ln.lstrip().startswith("def ")), lines[0]).rstrip("\n")
        line = start + next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("def ")), 0)
    except (OSError, TypeError):
        text, line = "", code.co_firstlineno
    return SourceLoc(code.co_filename, line, len(text) - len(text.lstrip()), text)


def raise_loc(err: BaseException, fn: Any) -> SourceLoc:
    """Where `err` was raised in `fn`'s file (the innermost such frame), else `fn`'s definition."""
    file = fn.__code__.co_filename
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == file]
    if not frames:
        return def_loc(fn)
    frame = frames[-1]
    text = linecache.getline(file, frame.lineno or 0).rstrip("\n")
    col = frame.colno if getattr(frame, "colno", None) is not None else len(text) - len(text.lstrip())
    return SourceLoc(file, frame.lineno or 0, col, text)


def _user_frame() -> Any:
    """The innermost frame outside argus's tracer (None if there is none)."""
    frame = sys._getframe(2)
    while frame is not None and _is_internal(frame.f_code.co_filename, frame.f_code):
        frame = frame.f_back  # type: ignore[assignment]
    return frame


def caller_position() -> tuple[str, tuple[int | None, int | None, int | None, int | None]] | None:
    """The file and span (first line, last line, first column, end column) of what the user's frame is running:
    the call or operator expression that reached the tracer, or the ``for`` / ``with`` statement whose iteration
    or entry did (`argus.lang.names` reads what that span binds)."""
    frame = _user_frame()
    if frame is None:
        return None
    positions = frame.f_code.co_positions()
    span = next(itertools.islice(positions, frame.f_lasti // 2, None), None)
    return (frame.f_code.co_filename, span) if span is not None else None


def caller_loc() -> SourceLoc | None:
    """The first frame outside argus's tracer: the user's DSL line that is being traced."""
    frame = _user_frame()
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    line = frame.f_lineno
    text = linecache.getline(filename, line).rstrip("\n")
    col = len(text) - len(text.lstrip())
    return SourceLoc(filename, line, col, text)


class DSLError(LocatedError, ValueError):
    """A kernel cannot be traced as written (code ``DSL_<DETAIL>``); rendered with the user's line
    and a caret (`argus.diagnostics.LocatedError`). Without an explicit `loc`, the line is the
    caller's: the DSL statement being traced."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        loc: SourceLoc | None = None,
        requirement: str | None = None,
        actual: Any = None,
    ) -> None:
        super().__init__(
            code, message, hint, loc=loc if loc is not None else caller_loc(), requirement=requirement, actual=actual
        )
