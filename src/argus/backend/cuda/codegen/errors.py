"""The code generator's error: `CodegenError`, with a stable code and the DSL line it is about.

Codes:

* ``CODEGEN_UNSUPPORTED`` — the IR uses a node kind, atom or layout the CUDA code generator does not
  lower yet (warp roles, mbarriers, TMA copies, ``wgmma``, ...); the message names the construct and
  the error points at the DSL line that made it.
* ``CODEGEN_INVALID`` — the IR is not well formed for code generation (e.g. a fragment whose thread
  count differs from the block's); a bug in whatever built the IR.
"""

from __future__ import annotations

import os
from typing import Any

from argus.diagnostics import ArgusError
from argus.ir.expr import SourceLoc


class CodegenError(ArgusError, ValueError):
    """The IR cannot be turned into CUDA C++ (code ``CODEGEN_<DETAIL>``).

    Rendered like a `argus.lang.DSLError`: the code and message, then the DSL line with a caret::

        error[CODEGEN_UNSUPPORTED]: warp role 'producer' (Role): not supported by the CUDA code generator yet
          --> gemm.py:97
           |
        97 |         with T.role("producer", warpgroups=(0,), registers=40):
           |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
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
        self.loc = loc
        super().__init__(code, message, hint, requirement=requirement, actual=actual)

    @property
    def location(self) -> str | None:
        """``"file.py:LINE"`` of the DSL statement, when known."""
        return str(self.loc) if self.loc is not None else None

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
        return (_rebuild, (self.code, self.message, self.hint, self.loc, self.requirement, self.actual))


def _rebuild(code: str, message: str, hint: Any, loc: Any, requirement: Any, actual: Any) -> CodegenError:
    return CodegenError(code, message, hint, loc=loc, requirement=requirement, actual=actual)


def unsupported(what: str, loc: SourceLoc | None, hint: str | None = None) -> CodegenError:
    """The ``CODEGEN_UNSUPPORTED`` error for `what` at `loc`."""
    return CodegenError(
        "CODEGEN_UNSUPPORTED",
        f"{what}: not supported by the CUDA code generator yet",
        hint,
        loc=loc,
    )
