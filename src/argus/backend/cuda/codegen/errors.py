"""The code generator's error: `CodegenError`, with a stable code and the DSL line it is about.

Codes:

* ``CODEGEN_UNSUPPORTED`` — the IR uses a node kind, atom or layout the CUDA code generator does not
  lower yet (warp roles, mbarriers, TMA copies, ``wgmma``, ...); the message names the construct and
  the error points at the DSL line that made it.
* ``CODEGEN_INVALID`` — the IR is not well formed for code generation (e.g. a fragment whose thread
  count differs from the block's); a bug in whatever built the IR.
"""

from __future__ import annotations

from argus.diagnostics import LocatedError
from argus.ir.expr import SourceLoc


class CodegenError(LocatedError, ValueError):
    """The IR cannot be turned into CUDA C++ (code ``CODEGEN_<DETAIL>``), rendered like a
    `argus.lang.DSLError`: the code and message, then the DSL line with a caret
    (`argus.diagnostics.LocatedError`)."""

    @property
    def location(self) -> str | None:
        """``"file.py:LINE"`` of the DSL statement, when known."""
        return str(self.loc) if self.loc is not None else None


def unsupported(what: str, loc: SourceLoc | None, hint: str | None = None) -> CodegenError:
    """The ``CODEGEN_UNSUPPORTED`` error for `what` at `loc`."""
    return CodegenError(
        "CODEGEN_UNSUPPORTED",
        f"{what}: not supported by the CUDA code generator yet",
        hint,
        loc=loc,
    )
