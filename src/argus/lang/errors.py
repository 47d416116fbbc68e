"""Errors raised while tracing a kernel: they point at the user's DSL line with a caret, say what
was expected, what was found and how to fix it, and show no tracer internals."""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from typing import Any

from argus.diagnostics import ArgusError
from argus.ir.expr import SourceLoc

_LANG_DIR = os.path.dirname(os.path.abspath(__file__))
_ARGUS_DIR = os.path.dirname(_LANG_DIR)


_CONTEXTLIB = os.path.abspath(contextlib.__file__)


def _is_internal(filename: str) -> bool:
    """Frames of the tracer itself (and of `contextlib`, which runs `with T.grid(...)`)."""
    path = os.path.abspath(filename)
    if path == _CONTEXTLIB:
        return True
    return path.startswith(_LANG_DIR + os.sep) or path.startswith(os.path.join(_ARGUS_DIR, "ir") + os.sep)


def caller_loc() -> SourceLoc | None:
    """The first frame outside argus's tracer: the user's DSL line that is being traced."""
    frame = sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    line = frame.f_lineno
    text = linecache.getline(filename, line).rstrip("\n")
    col = len(text) - len(text.lstrip())
    return SourceLoc(filename, line, col, text)


class DSLError(ArgusError, ValueError):
    """A kernel cannot be traced as written (code ``DSL_<DETAIL>``).

    Rendered as::

        error[DSL_SHAPE_MISMATCH]: T.copy: source and destination shapes differ
          --> gemm.py:42
           |
        42 |         T.copy(A.tile((bm, k), (BM, BK)), sA[s])
           |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
          expected: the same shape
          found: (128, 64) and (128, 32)
          hint: ...
    """

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
        self.loc = loc if loc is not None else caller_loc()
        super().__init__(code, message, hint, requirement=requirement, actual=actual)

    def render(self) -> str:
        lines = [f"error[{self.code}]: {self.message}"]
        loc = getattr(self, "loc", None)
        if loc is not None:
            lines.append(f"  --> {os.path.basename(loc.file)}:{loc.line}")
            if loc.text:
                width = len(str(loc.line))
                stripped = loc.text.rstrip()
                lines.append(f"{' ' * width} |")
                lines.append(f"{loc.line} | {stripped}")
                lines.append(f"{' ' * width} | {' ' * loc.col}{'^' * max(1, len(stripped) - loc.col)}")
        if self.requirement:
            lines.append(f"  expected: {self.requirement}")
        if self.actual is not None:
            lines.append(f"  found: {self.actual}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)

    def __reduce__(self) -> tuple:
        return (_rebuild_dsl, (self.code, self.message, self.hint, self.loc, self.requirement, self.actual))


def _rebuild_dsl(code: str, message: str, hint: Any, loc: Any, requirement: Any, actual: Any) -> DSLError:
    return DSLError(code, message, hint, loc=loc, requirement=requirement, actual=actual)
