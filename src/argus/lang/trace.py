"""The trace in progress: the statements a kernel's body has emitted so far, its grid and threads, the warp role
being traced, and the IR names given so far (taken from the user's source where it names the thing, see
`argus.lang.names`). `current` gives it to a DSL call, or says the call is outside a kernel."""

from __future__ import annotations

import contextvars

from argus.atoms.smem import SharedCarve
from argus.ir.expr import Expr, SourceLoc, Var, VarKind
from argus.ir.nodes import PartialOutput, PartialSums, Stmt, ValueAssumption
from argus.lang.errors import DSLError, caller_position
from argus.lang.names import SourceNames


class Trace:
    """One kernel being traced: the statement lists being filled (one per open loop, branch or role), the grid and
    block size, and the IR names given so far. Every name is unique within the kernel: the kernel's tensors, shape
    symbols and thread index included."""

    def __init__(self, name: str, reserved: tuple[str, ...] = (), source: SourceNames | None = None) -> None:
        self.name = name
        self.stack: list[list[Stmt]] = [[]]
        self.taken: set[str] = {"tid", *reserved}  # IR names in use (`fresh`)
        self._next: dict[str, int] = {}  # the suffix `fresh` tries first for a base
        self.source = source if source is not None else SourceNames()
        self.grid: tuple[Expr | int, ...] | None = None
        self.block_vars: tuple[Var, ...] = ()
        self.threads: int | None = None
        self.blocks_per_sm = 1
        self.cluster = 1  # blocks per cluster (T.grid(..., cluster=2))
        self.cluster_barriers: set[int] = set()  # id() of the mbarrier buffers that are the cluster pair's
        self.thread_var = Var("tid", VarKind.THREAD)
        self.carve = SharedCarve()  # shared memory as the generated code lays it out (argus.atoms.smem)
        self.in_grid = False
        self.role: tuple[str, int] | None = None  # (name, threads) of the warp role being traced
        self.persistent: tuple[str, int] | None = None  # (tile order, group) of a persistent grid
        self.assumptions: list[Expr] = []  # declared with T.assume: conditions on the shape symbols
        self.assumption_locs: list[SourceLoc | None] = []  # where each was declared
        self.value_assumptions: list[ValueAssumption] = []  # declared with T.assume_values: facts about tensor data
        self.partial_outputs: list[PartialOutput] = []  # declared with T.writes_part: outputs written in part
        self.partial_sums: list[PartialSums] = []  # declared with T.partial_sums: slices a later kernel adds
        self.grid_loc: SourceLoc | None = None  # the `with T.grid(...)` statement
        self.shape_vars: dict[str, Var] = {}  # the kernel's shape symbols by name

    def emit(self, stmt: Stmt) -> None:
        self.stack[-1].append(stmt)

    def fresh(self, base: str) -> str:
        """A name no other IR object of this kernel has: `base`, else ``base_1``, ``base_2``, ..."""
        n = self._next.get(base, 0)
        name = base if n == 0 else f"{base}_{n}"
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n + 1
        self.taken.add(name)
        return name

    def value_name(self, fallback: str) -> str:
        """A fresh name for the buffer the running DSL call creates: the variable the user's statement assigns
        it to (``acc`` in ``acc = T.alloc_fragment(...)``), else `fallback` (`argus.lang.names`)."""
        return self.fresh(self.source.value(caller_position()) or fallback)

    def loop_name(self, fallback: str) -> str:
        """A fresh name for the variable of the DSL loop being entered: the ``for`` statement's (``k`` in
        ``for k, s in T.pipeline(...)``), else `fallback`."""
        return self.fresh(self.source.loop(caller_position()) or fallback)

    def grid_names(self, fallbacks: tuple[str, ...]) -> tuple[str, ...]:
        """Fresh names for the block indices of the grid being opened: the targets of ``with T.grid(...) as
        (bm, bn)``, else `fallbacks` (``bx``, ``by``, ``bz``), axis by axis."""
        names = self.source.grid(caller_position())
        if len(names) != len(fallbacks):
            names = (None,) * len(fallbacks)
        return tuple(self.fresh(name or fallback) for name, fallback in zip(names, fallbacks, strict=True))


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
