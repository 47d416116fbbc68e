"""The emission context: the one object every rule of the CUDA code generator reads and writes.

A rule (`emitter.Emitter.RULES`) is a function ``rule(cx, statement)`` that appends C text through a
`Context`; rules hold no state of their own. The state of one kernel's emission is kept here, in a few
objects with one job each:

* `Writer` — the body's lines, the indentation depth and the block-local identifiers in scope; every rule
  writes it, through `Context.line`, `Context.block`, `Context.local`, `Context.open` / `Context.close`;
* `Scope` — where the emitter is, immutable: the scope's thread index and thread count (the block's, or a
  warp role's), the role and its named barrier, the statement being emitted. `Context.within` replaces it
  for a nested part and restores it afterwards;
* `Needs` — what the body asks of the translation unit, gathered while it is emitted and read once by
  `frame.assemble`: prelude snippets, headers, notes, tensor alignments, TMA tensor maps, whether TMA
  stores must be drained and whether warp roles set register budgets;
* `Names` (`cexpr`) — one C identifier per IR object: `analysis.analyse` names the tensors, shape
  symbols, buffers and loop variables before any rule runs; rules add the tensor maps (`tma.tensor_map`).

The rest is read-only during emission: the kernel, its `analysis.KernelFacts` (the shared-memory carve,
written tensors, hoisted fragments), the `Switches`, the rule table, and the named
barriers (`sync.NamedBarriers`, whose own counters the role and TMA-store rules advance).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from argus.atoms.target import DEFAULT_TARGET
from argus.backend.cuda.codegen import prelude
from argus.backend.cuda.codegen.cexpr import Names, c_expr, ctype, uses_floor_helpers
from argus.backend.cuda.codegen.errors import CodegenError, unsupported
from argus.backend.cuda.codegen.source import TensorMapParam
from argus.ir.expr import Expr, SourceLoc
from argus.ir.nodes import Buffer, Kernel, Role, Stmt
from argus.ir.types import DType

if TYPE_CHECKING:
    from argus.backend.cuda.codegen.analysis import KernelFacts, NamedBarriers

#: Threads in a warpgroup (``wgmma``'s scope; warp roles are whole warpgroups).
WARPGROUP = DEFAULT_TARGET.warpgroup_size
#: Statements that only annotate the IR for the verifier; they generate no code.
ANNOTATIONS = ("Tag", "AssertTag")
#: What the unsupported-statement error calls a statement kind that has no rule.
_KIND_NAMES = {
    "MbarrierInit": "mbarrier initialisation (MbarrierInit)",
    "MbarrierArrive": "mbarrier arrive (MbarrierArrive)",
    "MbarrierWait": "mbarrier wait (MbarrierWait)",
    "MbarrierExpectTx": "mbarrier expect-tx (MbarrierExpectTx)",
}

Rule = Callable[["Context", Any], None]


def where(loc: SourceLoc | None) -> str:
    """``file.py:LINE`` of a DSL location, or ``""``."""
    return f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else ""


def describe(s: Stmt) -> str:
    """The statement as the IR printer writes it (its first line, without the location). What a rule comments
    inline where it emits it is left out: a `Gemm`'s ``wgmma.wait_group`` and the per-warpgroup factor of an
    `MbarrierInit`'s count."""
    try:
        from argus.ir.nodes import Gemm, MbarrierInit
        from argus.ir.printer import format_stmts

        if isinstance(s, Gemm) and s.pending:
            s = dataclasses.replace(s, pending=0)
        elif isinstance(s, MbarrierInit) and s.warpgroups != 1:
            s = dataclasses.replace(s, arrive_count=s.arrive_count // s.warpgroups, warpgroups=1)
        line = format_stmts((s,), indent=0)[0].strip()
    except Exception:  # noqa: BLE001 - a comment must never stop code generation
        line = type(s).__name__
    return line.split("  # ")[0].strip()


@dataclass(frozen=True)
class Switches:
    """Code-generation choices kept switchable for A/B measurements (`emitter.Emitter` documents each)."""

    single_warp_issuers: bool = False
    prefetch_tensormaps: bool = True
    lane_exchange_stores: bool = True
    uniform_warpgroup: bool = False
    grid_dependency: bool = False
    wide_offsets: bool = False


@dataclass(frozen=True)
class Scope:
    """Where the emitter is.

    Attributes:
        tid: the C name of the thread index, relative to the scope's first thread.
        threads: threads of the scope (the block's, or the warp role's).
        role: the warp role being emitted, or None outside roles.
        role_barrier: the named barrier of the role's threads (`sync.scope_barrier`).
        turn_barrier: the first of the role's turn barriers, one per warpgroup (`sync.warpgroup_turn`), or -1.
        stmt: the statement being emitted: errors and notes point at its DSL line.
    """

    tid: str
    threads: int
    role: Role | None = None
    role_barrier: int = 0
    turn_barrier: int = -1
    stmt: Stmt | None = None


@dataclass
class Needs:
    """What the emitted body asks of the translation unit (append-only while emitting; `frame.assemble` reads it).

    Attributes:
        snippets: names of the `prelude` helpers the body calls.
        extra_snippets: kernel-specific helpers (one per MMA atom used), in first-use order.
        includes: CUDA headers (``cuda_bf16.h``, ``cuda_fp16.h``).
        notes: where the generator chose a slower path than the IR asked for, and why.
        alignment: bytes each tensor's base address must be a multiple of (widest vector access into it).
        tensor_maps: TMA tensor maps by (tensor, box, swizzle), in first-use order: kernel parameters.
        tma_stores: some copy issued TMA stores: the kernel waits for them before it exits.
        register_roles: some warp role sets its register budget (``setmaxnreg``): fixes ``__launch_bounds__``.
    """

    snippets: set[str] = field(default_factory=set)
    extra_snippets: dict[str, prelude.Snippet] = field(default_factory=dict)
    includes: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    alignment: dict[Buffer, int] = field(default_factory=dict)
    tensor_maps: dict[tuple, TensorMapParam] = field(default_factory=dict)
    tma_stores: bool = False
    register_roles: bool = False


class Writer:
    """The kernel body as lines of C: `lines`, the current `depth` of indentation (the body starts at 1), and the
    block-local identifiers in scope (`locals`, saved and restored by `block`)."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.lines: list[str] = []
        self.depth = 1
        self.locals: set[str] = set()

    def line(self, text: str = "") -> None:
        self.lines.append(("  " * self.depth + text) if text else "")

    @contextmanager
    def block(self, opener: str = "{", closer: str = "}") -> Iterator[None]:
        """`opener`, the indented lines written inside, `closer`; identifiers declared inside go out of scope."""
        self.line(opener)
        self.depth += 1
        saved = set(self.locals)
        try:
            yield
        finally:
            self.depth -= 1
            self.locals = saved
            self.line(closer)

    def open(self, text: str | None) -> None:
        """`text` (ending in ``{``; None: no line), then indent: the caller `close`s it; identifiers declared
        inside stay in scope."""
        if text is not None:
            self.line(text)
        self.depth += 1

    def close(self, text: str = "}") -> None:
        self.depth -= 1
        self.line(text)

    def local(self, base: str) -> str:
        """A block-local identifier that shadows nothing the block refers to."""
        ident, n = base, 0
        while self.names.is_taken(ident) or ident in self.locals:
            n += 1
            ident = f"{base}{n}"
        self.locals.add(ident)
        return ident


def zero_fill_folded(stmts: tuple[Stmt, ...], i: int) -> bool:
    """Whether statement `i` is a zero fill of a whole fragment that the next statement (annotations aside), a
    ``wgmma`` with both operands in shared memory, accumulates into: the MMA's first instruction then writes
    ``A @ B`` instead of adding it (``scale-d`` 0), which is what the fill and the MMA compute together, and the
    fill's register moves are not emitted. Every instruction of such an MMA covers the warpgroup's whole share of
    the accumulator (`mma.gemm`'s tiling: one m64 row per warpgroup, the tile's full N), so the first one overwrites
    every value the fill would have set."""
    from argus.atoms import get_atom
    from argus.ir.expr import Const
    from argus.ir.nodes import Fill, Gemm, Space

    s = stmts[i]
    if not (isinstance(s, Fill) and s.dst.space == Space.FRAGMENT and s.dst.is_whole()):
        return False
    if not (isinstance(s.value, Const | int | float) and float(getattr(s.value, "value", s.value)) == 0.0):
        return False
    following = [t for t in stmts[i + 1 :] if type(t).__name__ not in ANNOTATIONS]
    if not following or not isinstance(following[0], Gemm):
        return False
    g = following[0]
    atom = get_atom(g.atom)
    return (
        g.acc.buffer is s.dst.buffer
        and g.acc.is_whole()
        and atom.ptx.startswith("wgmma.")
        and atom.a_source.value == "shared"
        and atom.acc_dtype.bits == 32
    )


def drained_loop(stmts: tuple[Stmt, ...], i: int) -> bool:
    """Whether statement `i` is a pipelined loop of a trip count not known when the kernel is built whose MMAs stay in
    flight (a `Gemm` with ``pending``: the deferred-release pass's form), followed by the ``wgmma.wait_group 0``
    that drains them (`Context._drained` emits the two together)."""
    from argus.ir.expr import Const
    from argus.ir.nodes import For, Gemm, LoopKind, WgmmaWait

    s = stmts[i]
    if not (isinstance(s, For) and s.kind == LoopKind.PIPELINED and i + 1 < len(stmts)):
        return False
    if isinstance(s.extent, int | Const) or not any(isinstance(x, Gemm) and x.pending for x in s.body):
        return False
    after = stmts[i + 1]
    return isinstance(after, WgmmaWait) and after.pending == 0


class Context:
    """The state of one kernel's emission and the helpers every rule uses.

    Read-only while emitting:
        kernel: the IR kernel.
        facts: `analysis.KernelFacts`, computed before the first rule runs.
        switches: the `Switches` of this run (from `emitter.Emitter`'s class attributes).
        rules: the rule table (`emitter.Emitter.RULES`), by statement type.

    Written while emitting (and by whom):
        out: the `Writer` — every rule, through `line`, `block`, `open`/`close`, `local`, `forget`.
        scope: the current `Scope` — replaced (never mutated) by `within`: `statement` for each statement,
            `hopper.role_block` inside a role.
        needs: the `Needs` of the translation unit — any rule, through `use`, `dtype_c`, `require_alignment`,
            `note`, `tma.tensor_map`; `hopper` and `epilogue` set its flags; `frame.assemble` reads it.
        names: C identifiers — `analysis.analyse` names the IR objects, `tma.tensor_map` reserves tensor maps.
        barriers: `sync.NamedBarriers` — advanced by `hopper.role_block` and `epilogue.tma_store`.
        declared: fragments whose register array is declared — `memory.declare_fragment`.
    """

    def __init__(
        self,
        kernel: Kernel,
        facts: KernelFacts,
        names: Names,
        tid: str,
        *,
        switches: Switches,
        rules: tuple[tuple[type, Rule], ...],
        barriers: NamedBarriers,
    ) -> None:
        self.kernel = kernel
        self.facts = facts
        self.switches = switches
        self.rules = rules
        self.names = names
        self.out = Writer(names)
        self.scope = Scope(tid=tid, threads=kernel.threads)
        self.needs = Needs()
        self.barriers = barriers
        self.declared: set[Buffer] = set()
        #: accumulators whose zero fill was folded into the next ``wgmma`` (`zero_fill_folded`): its first instruction
        #: writes the products instead of adding them (scale-d = 0); `mma.gemm` takes the buffer out again
        self.zeroed_by_mma: set[Buffer] = set()
        #: the `For` loops open around the statement being emitted (`control.loop`)
        self.loop_depth = 0
        #: id() of the cluster mbarrier buffers (`MbarrierInit.cluster`): their arrivals are made in both blocks
        self.cluster_barriers = kernel.cluster_barriers()

    # --- writing ---------------------------------------------------------------------------------------
    def line(self, text: str = "") -> None:
        self.out.line(text)

    def block(self, opener: str = "{", closer: str = "}") -> AbstractContextManager[None]:
        return self.out.block(opener, closer)

    def open(self, text: str | None) -> None:
        self.out.open(text)

    def close(self, text: str = "}") -> None:
        self.out.close(text)

    def local(self, base: str) -> str:
        return self.out.local(base)

    def forget(self, *idents: str) -> None:
        """End the scope of block-local identifiers declared by a loop the rule has closed."""
        self.out.locals -= set(idents)

    @contextmanager
    def within(self, **changes: Any) -> Iterator[Scope]:
        """The scope with `changes` (fields of `Scope`) while the caller emits a nested part."""
        saved = self.scope
        self.scope = dataclasses.replace(saved, **changes)
        try:
            yield self.scope
        finally:
            self.scope = saved

    @property
    def tid(self) -> str:
        return self.scope.tid

    @property
    def threads(self) -> int:
        return self.scope.threads

    # --- statements ------------------------------------------------------------------------------------
    def body(self, stmts: tuple[Stmt, ...]) -> None:
        stmts = tuple(stmts)
        skip = -1
        for i, s in enumerate(stmts):
            if i == skip:
                continue
            if zero_fill_folded(stmts, i):
                self.line(f"// {where(s.loc)}  {describe(s)}: folded into the next wgmma (scale-d = 0)")
                self.zeroed_by_mma.add(s.dst.buffer)
                continue
            if self.loop_depth == 0 and drained_loop(stmts, i):
                self._drained(s, stmts[i + 1])
                skip = i + 1
                continue
            self.statement(s)

    def _drained(self, loop: Stmt, wait: Stmt) -> None:
        """A pipelined loop of a run-time trip count that keeps wgmma groups in flight, with the wait that drains
        them after it (`drained_loop`), emitted as ``if (trip > 0) { loop; wait } else { wait }``: where the loop
        may run no iteration, the accumulator's value after it merges the fill's with the loop's, and ptxas put that
        merge's register moves before a wait that followed the loop and serialized every wgmma of the loop (C7515,
        `gemm_warp_specialized`'s K loop); with the wait inside each branch, the moves come after it. The same
        program: the wait runs exactly once on either path. Only for a loop outside any other (`Context.body`): a K
        loop inside a persistent kernel's tile loop kept its pipeline without it, and its measured code stays."""
        from argus.backend.cuda.codegen.cexpr import paren

        trip = paren(self.expr(loop.extent))  # type: ignore[attr-defined]
        with self.block(
            f"if ({trip} > 0) {{  // the wait inside the branch: ptxas keeps the wgmma pipeline", "} else {"
        ):
            self.statement(loop)
            self.statement(wait)
        self.open(None)
        self.statement(wait)
        self.close()

    def statement(self, s: Stmt) -> None:
        """A ``// file.py:LINE  statement`` comment, then the statement's rule. A statement a pass inserted or moved
        (`Stmt.made_by`) has no comment line of its own: its rule explains it inline."""
        with self.within(stmt=s):
            rule = self._rule(s)
            if rule is None:
                return
            if s.made_by is None:
                self.line(f"// {where(s.loc)}  {describe(s)}" if s.loc is not None else f"// {describe(s)}")
            rule(self, s)

    def _rule(self, s: Stmt) -> Rule | None:
        name = type(s).__name__
        if name in ANNOTATIONS:
            return None
        for kind, rule in self.rules:
            if type(s) is kind:
                return rule
        what = f"warp role {getattr(s, 'name', '?')!r} (Role)" if name == "Role" else None
        what = what or _KIND_NAMES.get(name, f"IR statement {name}")
        raise self.error(what, "the generator has no rule for this statement kind (Emitter.RULES)")

    # --- names, types and what the unit needs ------------------------------------------------------------
    def use(self, snippet: str) -> None:
        """The body calls `prelude` helper `snippet`."""
        self.needs.snippets.add(snippet)

    def expr(self, e: Expr | int) -> str:
        if isinstance(e, Expr) and uses_floor_helpers(e):
            self.use("floor")
        return c_expr(e, self.names)

    def buffer_name(self, b: Buffer) -> str:
        return self.names.name(b, b.name)

    def dtype_c(self, dtype: DType) -> str:
        """The C type of `dtype` (its header included)."""
        if dtype.name == "bf16":
            self.needs.includes.add("cuda_bf16.h")
        elif dtype.name == "f16":
            self.needs.includes.add("cuda_fp16.h")
        elif dtype.name in ("e4m3", "e5m2"):
            self.needs.includes.add("cuda_fp8.h")
        try:
            return ctype(dtype)
        except KeyError:
            raise self.error(f"dtype {dtype.name}") from None

    def require_alignment(self, b: Buffer, nbytes: int) -> None:
        self.needs.alignment[b] = max(self.needs.alignment.get(b, b.dtype.itemsize), nbytes)

    def note(self, message: str) -> None:
        """Record (and comment in the code) where the generator took a slower path than the IR asked for."""
        stmt = self.scope.stmt
        text = f"{where(stmt.loc)}: {message}" if stmt is not None and where(stmt.loc) else message
        self.needs.notes.append(text)
        self.line(f"// note: {message}")

    # --- errors ------------------------------------------------------------------------------------------
    def _loc(self) -> SourceLoc | None:
        return self.scope.stmt.loc if self.scope.stmt is not None else self.kernel.loc

    def error(self, what: str, hint: str | None = None) -> CodegenError:
        """``CODEGEN_UNSUPPORTED`` for `what`, at the statement being emitted."""
        return unsupported(what, self._loc(), hint)

    def invalid(self, message: str) -> CodegenError:
        """``CODEGEN_INVALID`` (the IR is not well formed for code generation), at the statement being emitted."""
        return CodegenError("CODEGEN_INVALID", message, loc=self._loc())
