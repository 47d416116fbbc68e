"""The trace in progress: the statements a kernel's body has emitted so far, its grid and threads, the warp role
being traced, and fresh IR names. `current` gives it to a DSL call, or says the call is outside a kernel."""

from __future__ import annotations

import contextvars

from argus.atoms.smem import SharedCarve
from argus.ir.expr import Expr, Var, VarKind
from argus.ir.nodes import Stmt
from argus.lang.errors import DSLError


class Trace:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stack: list[list[Stmt]] = [[]]
        self.used: dict[str, int] = {}
        self.grid: tuple[Expr | int, ...] | None = None
        self.block_vars: tuple[Var, ...] = ()
        self.threads: int | None = None
        self.blocks_per_sm = 1
        self.thread_var = Var("tid", VarKind.THREAD)
        self.carve = SharedCarve()  # shared memory as the generated code lays it out (argus.atoms.smem)
        self.in_grid = False
        self.role: tuple[str, int] | None = None  # (name, threads) of the warp role being traced
        self.persistent: tuple[str, int] | None = None  # (tile order, group) of a persistent grid
        self.assumptions: list[Expr] = []  # declared with T.assume: conditions on the shape symbols
        self.shape_vars: dict[str, Var] = {}  # the kernel's shape symbols by name

    def emit(self, stmt: Stmt) -> None:
        self.stack[-1].append(stmt)

    def fresh(self, base: str) -> str:
        n = self.used.get(base, 0)
        self.used[base] = n + 1
        return base if n == 0 else f"{base}_{n}"


CURRENT: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("argus_trace", default=None)


def current(what: str) -> Trace:
    st = CURRENT.get()
    if st is None:
        raise DSLError(
            "DSL_OUTSIDE_KERNEL",
            f"{what} can only be used inside an @argus.kernel function while it is traced",
            "call it from the body of a kernel",
        )
    if not st.in_grid and what not in ("T.grid",):
        raise DSLError("DSL_OUTSIDE_GRID", f"{what} must be inside `with T.grid(...)`", "open the grid first")
    return st
