"""The common shape of argus's errors: a stable code, a message in the user's terms, the
requirement and the actual value where there are such, and a hint on how to fix it.

Every typed error of argus derives from `ArgusError`, except `argus.layout.LayoutError`, which
has the same attributes but lives in `argus.layout` (that package imports nothing from the rest
of argus); it is registered here as a virtual subclass, so ``except ArgusError`` catches it too.
The CUDA backend's `BackendError` is registered the same way (`argus.backend.cuda.errors`).

Every code is an entry of the diagnostics catalog, `Code` (`argus.diagnostics.catalog`): its
category, a message template and a fix. An `ArgusError` raised without a hint shows the catalog's
fix as its hint; ``argus explain CODE`` prints an entry; docs/diagnostics.md lists them all.
"""

from __future__ import annotations

from abc import ABCMeta
from typing import Any

from argus.diagnostics.catalog import Category, Code, fix_for, lookup
from argus.layout.errors import LayoutError

__all__ = ["ArgusError", "Category", "Code", "LayoutError", "LocatedError", "fix_for", "lookup"]


class ArgusError(Exception, metaclass=ABCMeta):
    """Base of argus's typed errors.

    Attributes:
        code: stable identifier ``CATEGORY_DETAIL`` (a `Code`, or its string), for programs and the agent.
        message: what is wrong, in the user's terms.
        requirement: the rule that was broken, when there is one.
        actual: the value that broke it, when there is one.
        hint: how to fix it: the raise site's own, else the catalog's fix for the code (`Code.fix`),
            else None.
    """

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        requirement: str | None = None,
        actual: Any = None,
    ) -> None:
        self.code = code
        self.message = message
        self.requirement = requirement
        self.actual = actual
        self.hint = hint if hint is not None else fix_for(code)
        super().__init__(self.render())

    def render(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.requirement:
            text += f"\n  requires: {self.requirement}"
        if self.actual is not None:
            text += f"\n  actual: {self.actual}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def __str__(self) -> str:
        # KeyError and friends would quote their argument; argus errors always read as rendered text
        return self.render()

    def __reduce__(self) -> tuple:
        return (
            _rebuild,
            (type(self), self.code, self.message, self.hint, self.requirement, self.actual),
        )


def _rebuild(cls: type, code: str, message: str, hint: str | None, requirement: str | None, actual: Any) -> Any:
    return cls(code, message, hint=hint, requirement=requirement, actual=actual)


class LocatedError(ArgusError):
    """An `ArgusError` about one line of the user's DSL source (`loc`: an `argus.ir.expr.SourceLoc`),
    rendered with that line and a caret under it::

        error[DSL_SHAPE_MISMATCH]: T.copy: shapes differ
          --> gemm.py:42
           |
        42 |         T.copy(A.tile((bm, k), (BM, BK)), sA[s])
           |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
          expected: the same shape on both sides
          found: (128, 64) and (128, 32)
    """

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        loc: Any = None,
        requirement: str | None = None,
        actual: Any = None,
    ) -> None:
        self.loc = loc
        super().__init__(code, message, hint, requirement=requirement, actual=actual)

    def render(self) -> str:
        import os

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
        return (
            _rebuild_located,
            (type(self), self.code, self.message, self.hint, self.loc, self.requirement, self.actual),
        )


def _rebuild_located(cls: type, code: str, message: str, hint: Any, loc: Any, requirement: Any, actual: Any) -> Any:
    return cls(code, message, hint, loc=loc, requirement=requirement, actual=actual)


ArgusError.register(LayoutError)
