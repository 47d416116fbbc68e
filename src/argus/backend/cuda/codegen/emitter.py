"""IR -> CUDA C++: the emitter. One rule per IR statement kind, top to bottom in `Emitter.RULES`.

The generated code does what the interpreter (`argus.interp.machine`) does, thread by thread:

* a **fragment** is a per-thread register array ``T name[values]``; value ``v`` of thread ``t`` is tile
  element ``tv(t, v)``, and every access names it with a compile-time index, so the array stays in
  registers. Where a thread's elements lie is computed from the TV layout (`placement`): a base
  coordinate per dimension as a layout of ``tid`` plus a constant per value;
* a **global window** is addressed through the tensor's strides; elements outside the tensor are masked
  (loads give the pad value, stores are dropped), per run of consecutive elements, which moves as one
  16-, 8- or 4-byte vector when it is entirely in bounds and aligned;
* **shared memory** is one ``extern __shared__`` buffer carved into the kernel's buffers (128-byte
  aligned, 1024 for swizzled ones), each addressed through its `argus.layout` layout, swizzle included;
* copies between global and shared memory are spread over the block's threads in vectors
  (``cp.async`` for ``atom="cp.async"``, committed and waited on by ``AsyncCommit``/``AsyncWait``);
* ``atom="ldmatrix"`` copies become ``ldmatrix.x4/.x2/.x1`` (``.trans`` where the fragment reads the
  shared tile transposed), their row addresses derived from the fragment and shared layouts;
* ``Gemm`` with ``mma.sync`` reads operand registers in the atom's own convention (`mma_tv`), as the
  interpreter does; with the per-thread FMA atom, each thread runs unrolled ``__fmaf_rn`` loops over its
  registers in that same convention; reductions combine a thread's values, then XOR shuffles over
  ``shuffle_lanes``;
* **warp roles** become ``if (warpgroup in role) { setmaxnreg.{inc,dec}; ... }``; inside a role the thread
  index is relative to the role's first thread (its fragments are spread over the role's threads);
* **mbarriers** are 64-bit words carved from shared memory: initialised by thread 0, then
  ``fence.mbarrier_init`` and ``__syncthreads``; an arrive is made once per role (as the IR counts it) by
  the role's thread 0 (``mbarrier.arrive.expect_tx`` with ``expect_bytes``), after a named barrier over
  the role when it is a release (no ``expect_bytes``: every thread of the role must be done with the
  stage); a wait is a ``try_wait.parity`` loop in every thread;
* **TMA loads** (``atom="tma"``) are issued by the scope's thread 0 with a ``CUtensorMap`` per (tensor,
  box, swizzle) passed as a ``const __grid_constant__`` parameter (`TensorMapParam`); the swizzle is the
  one under which the destination's layout equals TMA's box layout, proven by enumeration;
* ``Gemm`` with a ``wgmma`` atom and both operands in shared memory: ``wgmma.fence``, one
  ``wgmma.mma_async`` per k16 step with matrix descriptors fitted (and checked by enumeration) to the
  buffers' layouts, ``commit_group``, ``wait_group 0``; accumulators are the fragment's registers in the
  atom's C order; ``fence.proxy.async`` plus a role barrier first when an operand buffer is written by
  ordinary stores somewhere in the kernel.

Nodes not lowered yet raise `CodegenError` ``CODEGEN_UNSUPPORTED`` at their DSL line.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from argus.atoms import MmaAtom, Scope, get_atom
from argus.atoms.copy import forced_trans, tile_lane_exchange
from argus.atoms.smem import SharedCarve
from argus.backend.cuda.codegen import placement as pl
from argus.backend.cuda.codegen import prelude
from argus.backend.cuda.codegen.cexpr import (
    Names,
    add,
    c_expr,
    compute_ctype,
    convert,
    ctype,
    divisor,
    float_literal,
    layout_at_coords,
    mul,
    paren,
    uses_floor_helpers,
    uses_swizzle,
    value_literal,
)
from argus.backend.cuda.codegen.errors import CodegenError, unsupported
from argus.backend.cuda.codegen.hopper import HopperRules
from argus.backend.cuda.codegen.source import GeneratedSource, ShapeParam, TensorMapParam, TensorParam
from argus.ir.expr import Const, Expr, SourceLoc
from argus.ir.nodes import (
    Alloc,
    AsyncCommit,
    AsyncWait,
    Barrier,
    BarrierKind,
    Broadcast,
    Buffer,
    Copy,
    Fence,
    FenceKind,
    Fill,
    For,
    Gemm,
    If,
    Kernel,
    LoopKind,
    Map,
    MapOp,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Reduce,
    ReduceOp,
    Role,
    Space,
    Stmt,
    TileRef,
    map_compute_dtype,
)
from argus.ir.types import DType, DTypeKind

#: Shared-memory alignment of each buffer, and of swizzled ones (a swizzle pattern repeats every 1024 bytes).
#: Most bytes one thread moves in one vector access.
VECTOR_BYTES = 16
#: Most combinations of a shared window's dropped (stage) coordinates enumerated to prove a layout fact.
MAX_STAGE_COMBINATIONS = 256
#: Statements that only annotate the IR for the verifier; they generate no code.
ANNOTATIONS = ("Tag", "AssertTag")


def _kept(ref: TileRef) -> tuple[int, ...]:
    """The buffer dimension of each window dimension, in window order (`TileRef.kept` where it exists)."""
    kept = getattr(ref, "kept", None)
    if kept is not None:
        return tuple(kept)
    return tuple(d for d in range(len(ref.extent)) if d not in ref.dropped)


def _refs(value: Any) -> Iterator[Buffer]:
    """The buffers a statement field refers to (not looking into nested statements)."""
    if isinstance(value, TileRef):
        yield value.buffer
    elif isinstance(value, Broadcast):
        yield value.ref.buffer
    elif isinstance(value, tuple | list):
        for item in value:
            if not isinstance(item, Stmt):
                yield from _refs(item)


def _stmt_refs(s: Stmt) -> list[Buffer]:
    out: list[Buffer] = []
    if isinstance(s, Alloc):
        return out
    for f in dataclasses.fields(s):
        out.extend(_refs(getattr(s, f.name)))
    return out


def _children(s: Stmt) -> list[tuple[str, tuple[Stmt, ...]]]:
    """Nested statement lists of a compound statement, each with a scope label."""
    out = []
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if isinstance(value, tuple) and value and all(isinstance(x, Stmt) for x in value):
            out.append((f.name, value))
    return out


def _describe(s: Stmt) -> str:
    """The statement as the IR printer writes it (its first line, without the location)."""
    try:
        from argus.ir.printer import format_stmts

        line = format_stmts((s,), indent=0)[0].strip()
    except Exception:  # noqa: BLE001 - a comment must never stop code generation
        line = type(s).__name__
    return line.split("  # ")[0].strip()


def _where(loc: SourceLoc | None) -> str:
    return f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else ""


class _Window:
    """A window of a global or shared buffer as C: buffer coordinates from window coordinates."""

    def __init__(self, em: Emitter, ref: TileRef) -> None:
        self.em = em
        self.ref = ref
        self.buffer = ref.buffer
        self.kept = _kept(ref)
        self.origin = tuple(ref.origin)
        self.origin_c = [em.expr(o) for o in self.origin]
        self.shape = ref.shape
        if ref.buffer.space == Space.GLOBAL:
            buf = ref.buffer
            strides = buf.strides if buf.strides is not None else _row_major(buf.shape)
            self.strides = tuple(strides)
            self.shape_c = [em.expr(s) for s in buf.shape]
            self.strides_c = [em.expr(s) for s in self.strides]
        self.layout = ref.layout if getattr(ref, "layout", None) is not None else ref.buffer.layout

    @property
    def is_global(self) -> bool:
        return self.buffer.space == Space.GLOBAL

    def buffer_coords(self, window: list[str]) -> list[str]:
        out = list(self.origin_c)
        for i, d in enumerate(self.kept):
            out[d] = add(self.origin_c[d], window[i])
        return out

    # --- global ---------------------------------------------------------------------------------------
    def run_dim(self) -> int | None:
        """The window dimension runs of consecutive elements go along (the last one, when its buffer
        dimension is contiguous), or None."""
        if not self.kept:
            return None
        d = self.kept[-1]
        stride = self.strides[d]
        unit = stride == 1 or (isinstance(stride, Const) and stride.value == 1)
        return len(self.kept) - 1 if unit else None

    def offset(self, coords: list[str]) -> str:
        terms = []
        for c, s in zip(coords, self.strides_c, strict=True):
            if s == "0" or c == "0":
                continue
            if s == "1":
                terms.append(c)
            else:
                terms.append(f"static_cast<long long>({c}) * {paren(s)}" if not terms else f"{paren(c)} * {paren(s)}")
        if len(terms) > 1 and not terms[0].startswith("static_cast"):
            terms[0] = f"static_cast<long long>({terms[0]})"
        return add(*terms) if terms else "0"

    def dim_in_bounds(self, d: int, coord: str) -> str | None:
        """C condition that `coord` is inside buffer dimension `d`, or None when statically true."""
        extent = self.buffer.shape[d]
        if isinstance(extent, int):
            origin = self.origin[d]
            window_extent = self.ref.extent[d]
            if isinstance(origin, int) and 0 <= origin and origin + window_extent <= extent:
                return None
        return f"argus::in_range({coord}, {self.shape_c[d]})"

    def mask(self, coords: list[str], run_buffer_dim: int) -> str:
        """The masking arguments of a run along `run_buffer_dim` starting at `coords`: ``row_ok`` (every other
        coordinate in bounds), the run's first coordinate and the extent of its dimension (see `prelude`)."""
        self.em.use("bounds")
        others = [c for d, x in enumerate(coords) if d != run_buffer_dim and (c := self.dim_in_bounds(d, x))]
        return f"{' && '.join(others) or 'true'}, {coords[run_buffer_dim]}, {self.shape_c[run_buffer_dim]}"

    def vector_conditions(self, width: int) -> list[str] | None:
        """Run-time conditions (C text) under which every run of `width` elements of this window starts
        at an address aligned to the run (given an aligned base pointer); None when it can never be."""
        if width == 1:
            return []
        run = self.run_dim()
        if run is None:
            return None
        run_d = self.kept[run]
        conditions = []
        for d, stride in enumerate(self.strides):
            if d == run_d:
                continue
            if isinstance(stride, int):
                if stride % width:
                    return None
            elif divisor(stride) % width:
                conditions.append(f"{paren(self.em.expr(stride))} % {width} == 0")
        origin = self.origin[run_d]
        if divisor(origin) % width:
            if isinstance(origin, int):
                return None
            conditions.append(f"{paren(self.em.expr(origin))} % {width} == 0")
        return conditions

    # --- shared ---------------------------------------------------------------------------------------
    def shared_offset(self, coords: list[str]) -> str:
        if uses_swizzle(self.layout):
            self.em.use("swizzle")
        return layout_at_coords(self.layout, coords)

    def pointer(self, coords: list[str]) -> str:
        return f"{self.em.buffer_name(self.buffer)} + {paren(self.shared_offset(coords))}"

    def stage_values(self) -> list[dict[int, int]] | None:
        """Every assignment of the dropped dimensions' coordinates (their extents are static), or None
        when there are too many, or a kept dimension's origin is not a constant."""
        if any(not isinstance(self.origin[d], int) for d in self.kept):
            return None
        dropped = [d for d in range(len(self.origin)) if d not in self.kept]
        shape = self.buffer.static_shape
        combos = math.prod(shape[d] for d in dropped)
        if combos > MAX_STAGE_COMBINATIONS:
            return None
        out = []
        for values in itertools.product(*[range(shape[d]) for d in dropped]):
            assignment = dict(zip(dropped, values, strict=True))
            for d in dropped:  # a constant origin is the only value
                if isinstance(self.origin[d], int):
                    assignment[d] = int(self.origin[d])
            out.append(assignment)
        unique = {tuple(sorted(a.items())) for a in out}
        return [dict(u) for u in sorted(unique)]

    def offsets_of(self, window_coords: np.ndarray, layout: Any = None) -> np.ndarray | None:
        """Shared element offsets of window coordinates ``(..., rank)`` for every stage assignment:
        ``(S, ...)``; None when not enumerable."""
        stages = self.stage_values()
        if stages is None:
            return None
        out = []
        for assignment in stages:
            coords = []
            for d in range(len(self.origin)):
                if d in self.kept:
                    i = self.kept.index(d)
                    coords.append(int(self.origin[d]) + window_coords[..., i])
                else:
                    coords.append(np.full(window_coords.shape[:-1], assignment[d], dtype=np.int64))
            out.append(pl.layout_offsets(self.layout if layout is None else layout, coords))
        return np.stack(out)


def _row_major(shape: tuple[Expr | int, ...]) -> tuple[Expr | int, ...]:
    strides: list[Expr | int] = []
    acc: Expr | int = 1
    for d in reversed(shape):
        strides.append(acc)
        acc = acc * d
    return tuple(reversed(strides))


class Emitter(HopperRules):
    """Builds the translation unit of one kernel. `generate` is the entry point."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.names = Names(reserved=("argus_smem",))
        self.tid = self.names.name(kernel.thread_var, "tid")
        self.lines: list[str] = []
        self.depth = 1
        self.used: set[str] = set()
        self.includes: set[str] = set()
        self.notes: list[str] = []
        self.alignment: dict[Buffer, int] = {}
        self.written: set[Buffer] = set()
        self.shared: dict[Buffer, int] = {}
        self.shared_bytes = 0
        self.carve = SharedCarve()
        self.hoisted: set[Buffer] = set()
        self.declared: set[Buffer] = set()
        self.locals: set[str] = set()
        self.current: Stmt | None = None
        self.extra_snippets: dict[str, prelude.Snippet] = {}
        self.threads = kernel.threads  # threads of the current scope (a role's, inside one)
        self.role: Role | None = None
        self.role_barrier = 0
        self.register_roles = False  # some role sets its register budget (setmaxnreg)
        self.roles_seen = 0
        self.tensor_maps: dict[tuple, TensorMapParam] = {}
        self.tma_stores = False  # some copy issued TMA stores (atom "tma.store"): wait for them at the end
        self.generic_shared_writes: set[Buffer] = set()
        self._deferred: dict | None = None  # hopper.plan_deferred_releases, computed on first use
        self.deferring: Any = None  # the DeferredRelease whose loop is being emitted

    # --- small utilities -------------------------------------------------------------------------------
    def line(self, text: str = "") -> None:
        self.lines.append(("  " * self.depth + text) if text else "")

    @contextmanager
    def block(self, opener: str = "{", closer: str = "}") -> Iterator[None]:
        self.line(opener)
        self.depth += 1
        saved = set(self.locals)
        try:
            yield
        finally:
            self.depth -= 1
            self.locals = saved
            self.line(closer)

    def local(self, base: str) -> str:
        """A block-local identifier that shadows nothing the block refers to."""
        ident, n = base, 0
        while ident in self.names._taken or ident in self.locals:
            n += 1
            ident = f"{base}{n}"
        self.locals.add(ident)
        return ident

    def use(self, snippet: str) -> None:
        self.used.add(snippet)

    def expr(self, e: Expr | int) -> str:
        if isinstance(e, Expr) and uses_floor_helpers(e):
            self.use("floor")
        return c_expr(e, self.names)

    def buffer_name(self, b: Buffer) -> str:
        return self.names.name(b, b.name)

    def dtype_c(self, dtype: DType) -> str:
        if dtype.name == "bf16":
            self.includes.add("cuda_bf16.h")
        elif dtype.name == "f16":
            self.includes.add("cuda_fp16.h")
        try:
            return ctype(dtype)
        except KeyError:
            raise self.error(f"dtype {dtype.name}") from None

    def error(self, what: str, hint: str | None = None) -> CodegenError:
        loc = self.current.loc if self.current is not None else self.kernel.loc
        return unsupported(what, loc, hint)

    def invalid(self, message: str) -> CodegenError:
        loc = self.current.loc if self.current is not None else self.kernel.loc
        return CodegenError("CODEGEN_INVALID", message, loc=loc)

    def note(self, message: str) -> None:
        where = _where(self.current.loc) if self.current is not None else ""
        text = f"{where}: {message}" if where else message
        self.notes.append(text)
        self.line(f"// note: {message}")

    def require_alignment(self, b: Buffer, nbytes: int) -> None:
        self.alignment[b] = max(self.alignment.get(b, b.dtype.itemsize), nbytes)

    # --- the kernel ------------------------------------------------------------------------------------
    def generate(self) -> GeneratedSource:
        k = self.kernel
        for t in k.tensors:
            self.names.name(t, t.name)
        for v in k.shape_vars:
            self.names.name(v, v.name)
        for axis, v in zip("xyz", k.block_vars, strict=False):
            self.names.name(v, v.name or f"b{axis}")
        self._prepass()  # names every buffer and loop variable before any block-local name is chosen
        for b in sorted(self.hoisted, key=lambda b: self._order.get(b, 0)):
            self.line(
                f"// {_where(b.loc)}  {b.name}: fragment {b.dtype.name}{list(b.static_shape)} tv {b.tv} (hoisted)"
            )
            self._declare_fragment(b)
        self.body(k.body)
        if self.tma_stores:
            self.line(
                "argus::tma_store_wait_all();  // every TMA store has read its shared memory before the block exits"
            )
        return self._assemble()

    def _prepass(self) -> None:
        """Shared-memory carving, written tensors, and which fragments must be declared at the top
        (those used outside the scope of their allocation)."""
        alloc_scope: dict[Buffer, tuple] = {}
        uses: dict[Buffer, list[tuple]] = {}
        self._order: dict[Buffer, int] = {}

        def visit(stmts: tuple[Stmt, ...], scope: tuple) -> None:
            for s in stmts:
                if isinstance(s, For):
                    self.names.name(s.var, s.var.name)
                if isinstance(s, Alloc):
                    b = s.buffer
                    self.buffer_name(b)
                    self._order[b] = len(self._order)
                    if b.space in (Space.SHARED, Space.MBARRIER):
                        self._carve(b, s)
                    elif b.space == Space.FRAGMENT:
                        alloc_scope[b] = scope
                for b in _stmt_refs(s):
                    uses.setdefault(b, []).append(scope)
                if isinstance(s, Copy | Fill) and s.dst.buffer.space == Space.GLOBAL:
                    self.written.add(s.dst.buffer)
                if (
                    isinstance(s, Copy | Fill)
                    and s.dst.buffer.space == Space.SHARED
                    and getattr(s, "atom", "") != "tma"
                ):
                    self.generic_shared_writes.add(s.dst.buffer)
                for label, child in _children(s):
                    visit(child, scope + ((id(s), label),))

        visit(self.kernel.body, ())
        for b, scope in alloc_scope.items():
            for used in uses.get(b, []):
                if used[: len(scope)] != scope:
                    self.hoisted.add(b)
                    break

    def _carve(self, b: Buffer, s: Alloc) -> None:
        if b.space != Space.MBARRIER and b.layout is None:
            raise CodegenError("CODEGEN_INVALID", f"shared buffer {b.name} has no layout", loc=s.loc)
        self.shared[b] = self.carve.place(b)  # the one carve the tracer and the verifier check (argus.atoms.smem)
        self.shared_bytes = self.carve.total

    # --- statements ------------------------------------------------------------------------------------
    def body(self, stmts: tuple[Stmt, ...]) -> None:
        for s in stmts:
            self.statement(s)

    def statement(self, s: Stmt) -> None:
        previous, self.current = self.current, s
        try:
            rule = self._rule(s)
            if rule is None:
                return
            self.line(f"// {_where(s.loc)}  {_describe(s)}" if s.loc is not None else f"// {_describe(s)}")
            rule(s)
        finally:
            self.current = previous

    def _rule(self, s: Stmt) -> Callable[[Any], None] | None:
        name = type(s).__name__
        if name in ANNOTATIONS:
            return None
        for kind, method in self.RULES:
            if type(s) is kind:
                return getattr(self, method)
        what = {
            "Role": f"warp role {getattr(s, 'name', '?')!r} (Role)",
            "MbarrierInit": "mbarrier initialisation (MbarrierInit)",
            "MbarrierArrive": "mbarrier arrive (MbarrierArrive)",
            "MbarrierWait": "mbarrier wait (MbarrierWait)",
            "MbarrierExpectTx": "mbarrier expect-tx (MbarrierExpectTx)",
        }.get(name, f"IR statement {name}")
        raise self.error(what, "the generator has no rule for this statement kind (Emitter.RULES)")

    RULES: tuple[tuple[type, str], ...] = (
        (Alloc, "alloc"),  # fragments become register arrays; shared buffers were carved up front
        (Copy, "copy"),  # by source and destination space, and atom
        (Fill, "fill"),
        (Map, "map"),  # elementwise, in registers
        (Reduce, "reduce"),  # in registers, then XOR shuffles
        (Gemm, "gemm"),  # mma.sync on register operands
        (For, "loop"),
        (If, "branch"),
        (Barrier, "barrier"),
        (AsyncCommit, "async_commit"),
        (AsyncWait, "async_wait"),
        (Fence, "fence"),
        (Role, "role_block"),  # warp specialization: a branch on the warpgroup, with its register budget
        (MbarrierInit, "mbarrier_init"),
        (MbarrierArrive, "mbarrier_arrive"),
        (MbarrierWait, "mbarrier_wait"),
    )

    # alloc ----------------------------------------------------------------------------------------------
    def alloc(self, s: Alloc) -> None:
        b = s.buffer
        if b.space in (Space.SHARED, Space.MBARRIER):
            self.line(f"// {self.buffer_name(b)}: shared memory at byte {self.shared[b]} (declared above)")
            return
        if b.space != Space.FRAGMENT:
            what = f"mbarrier array {b.name}" if b.space.value == "mbarrier" else f"{b.space.value} buffer {b.name}"
            raise self.error(what, "fragments, shared buffers and mbarrier arrays are the allocations lowered")
        if b in self.hoisted:
            self.line(f"// {self.buffer_name(b)}: declared at the top (used outside this scope)")
            return
        self._declare_fragment(b)

    def _declare_fragment(self, b: Buffer) -> None:
        if b in self.declared:
            return
        if b.threads != self.threads:
            where = f"role {self.role.name!r}" if self.role is not None and b not in self.hoisted else "the block"
            raise CodegenError(
                "CODEGEN_INVALID",
                f"fragment {b.name} is spread over {b.threads} threads, {where} has {self.threads}",
                loc=b.loc,
            )
        self.declared.add(b)
        c = self.dtype_c(b.dtype)
        align = "alignas(16) " if b.dtype.bits < 32 else ""
        self.line(f"{align}{c} {self.buffer_name(b)}[{b.values_per_thread}];")

    # copy -----------------------------------------------------------------------------------------------
    def copy(self, s: Copy) -> None:
        src, dst = s.src, s.dst
        if s.atom == "tma.store":
            self._tma_store(s)
            return
        if s.atom == "tma" or s.mbarrier is not None:
            self._tma_copy(s)
            return
        if src.shape != dst.shape:
            raise self.invalid(f"copy between windows of shapes {src.shape} and {dst.shape}")
        spaces = (src.space, dst.space)
        if dst.space == Space.FRAGMENT and src.space == Space.FRAGMENT:
            self._copy_registers(s)
        elif dst.space == Space.FRAGMENT and src.space in (Space.GLOBAL, Space.SHARED):
            if s.atom.startswith("ldmatrix") and self._matrix_copy(s, load=True):
                return
            self._fragment_memory(s, load=True)
        elif src.space == Space.FRAGMENT and dst.space in (Space.GLOBAL, Space.SHARED):
            if s.atom == "stmatrix" and self._matrix_copy(s, load=False):
                return
            self._fragment_memory(s, load=False)
        elif spaces in ((Space.GLOBAL, Space.SHARED), (Space.SHARED, Space.GLOBAL), (Space.SHARED, Space.SHARED)):
            self._block_copy(s)
        else:
            raise self.error(f"copy from {src.space.value} to {dst.space.value} memory")

    def _fragment_coords(self, p: pl.Placement, only: int | None = None) -> Callable[[int], list[str]]:
        """Declare the thread's base tile coordinates; return value -> C tile coordinates of that value.

        Separable placements get one ``const int`` per dimension (a layout of ``tid``) and constant
        per-value offsets; others evaluate ``tv``'s thread part at ``tid`` and split each value's
        column-major tile index into coordinates. With `only`, just that dimension is needed."""
        rank = len(p.shape)
        if p.base is not None:
            bases = self._base_coords(p.base, only)

            def at(v: int) -> list[str]:
                return [add(bases[d], int(p.offsets[v, d])) for d in range(rank)]

            return at
        var = self.local("index")
        self.line(f"const int {var} = {p.thread_index.c(self.tid)};  // tv's thread part: a column-major tile index")

        def at_generic(v: int) -> list[str]:
            index = add(var, int(p.value_index[v]))
            out, prefix_product = [], 1
            for d, extent in enumerate(p.shape):
                term = index if prefix_product == 1 else f"{paren(index)} / {prefix_product}"
                if d < rank - 1:
                    term = f"{paren(term)} % {extent}"
                out.append(term)
                prefix_product *= extent
            return out

        return at_generic

    def _base_coords(self, fits: tuple[pl.Fit, ...], only: int | None = None, comment: str = "") -> list[str]:
        """C text of a thread's base tile coordinates, one `Fit` of ``tid`` per dimension: a ``const int`` declared
        for each that varies (only dimension `only` when given), the constant itself for the others."""
        rank = len(fits)
        names = {1: ["i"], 2: ["row", "col"]}.get(rank, [f"c{d}" for d in range(rank)])
        bases: list[str] = []
        for d, f in enumerate(fits):
            if f.is_constant or (only is not None and d != only):
                bases.append(str(f.constant))
                continue
            var = self.local(names[d])
            self.line(f"const int {var} = {f.c(self.tid)};{comment}")
            bases.append(var)
        return bases

    @contextmanager
    def _holders_only(self, p: pl.Placement) -> Iterator[None]:
        """Stores from a replicated fragment: only the first thread holding each element writes it."""
        mask = pl.holder_mask(p)
        guard = mask.c(self.tid) if mask is not None else None
        if guard is None:
            yield
            return
        with self.block(f"if ({guard}) {{  // one thread of each group that holds the same elements stores them"):
            yield

    def _fragment_memory(self, s: Copy, load: bool) -> None:
        """Fragment <-> global or shared memory, value by value, in vector runs where possible."""
        frag_ref, mem_ref = (s.dst, s.src) if load else (s.src, s.dst)
        if not frag_ref.is_whole():
            raise self.error("copies into or out of part of a fragment")
        frag = frag_ref.buffer
        p = pl.placement(frag)
        window = _Window(self, mem_ref)
        mem_c, frag_c = self.dtype_c(mem_ref.dtype), self.dtype_c(frag.dtype)
        fname, mname = self.buffer_name(frag), self.buffer_name(mem_ref.buffer)
        limit = max(1, VECTOR_BYTES // mem_ref.dtype.itemsize)
        with self.block():
            if window.is_global:
                run = window.run_dim()
                width, conditions = 1, []
                if run is not None:
                    width = pl.vector_width(p.coords, run, limit)
                    while width > 1 and window.vector_conditions(width) is None:
                        width //= 2
                    conditions = window.vector_conditions(width) or []
                run_buffer_dim = window.kept[run if run is not None else -1]
                if not load and run is not None and self._exchange_store(p, window, mem_ref, fname, frag_c, run):
                    return
                self.require_alignment(mem_ref.buffer, width * mem_ref.dtype.itemsize)
                vec = self._uniform_condition(conditions, width)
                at = self._fragment_coords(p)
                if load:
                    self.use("global_load")
                    pad = value_literal(s.pad, mem_ref.dtype)
                    for v0 in range(0, p.values, width):
                        coords = window.buffer_coords(at(v0))
                        args = f"{mname}, {window.offset(coords)}, {window.mask(coords, run_buffer_dim)}"
                        self._load_into(
                            fname,
                            v0,
                            width,
                            mem_c,
                            frag_c,
                            f"argus::load_global<{width}>({{dst}}, {args}, {vec}, {pad});",
                        )
                    return
                self.use("global_store")
                with self._holders_only(p):
                    for v0 in range(0, p.values, width):
                        coords = window.buffer_coords(at(v0))
                        source = self._store_source(fname, v0, width, frag_c, mem_c)
                        mask = window.mask(coords, run_buffer_dim)
                        self.line(
                            f"argus::store_global<{width}>({mname}, {window.offset(coords)}, {mask}, {vec}, {source});"
                        )
                return
            # shared memory: contiguity and alignment of runs come from enumerating the layout
            offsets = window.offsets_of(p.coords)
            width = _shared_run_width(offsets, limit) if offsets is not None else 1
            at = self._fragment_coords(p)
            self.use("shared_access")
            if load:
                for v0 in range(0, p.values, width):
                    pointer = window.pointer(window.buffer_coords(at(v0)))
                    self._load_into(
                        fname, v0, width, mem_c, frag_c, f"argus::load_shared<{width}>({{dst}}, {pointer});"
                    )
                return
            with self._holders_only(p):
                for v0 in range(0, p.values, width):
                    pointer = window.pointer(window.buffer_coords(at(v0)))
                    source = self._store_source(fname, v0, width, frag_c, mem_c)
                    self.line(f"argus::store_shared<{width}>({pointer}, {source});")

    #: Widen fragment -> global stores by a lane exchange where `argus.atoms.copy.lane_exchange` finds one (off:
    #: the stores as the fragment holds its values, for A/B measurements).
    lane_exchange_stores = True

    def _exchange_store(
        self, p: pl.Placement, window: _Window, mem_ref: TileRef, fname: str, frag_c: str, run: int
    ) -> bool:
        """Fragment -> global store through a lane exchange (`argus.atoms.copy.LaneExchange`): neighbouring lanes
        transpose their short runs with shuffles so that each thread stores 16-byte runs. False (nothing emitted)
        where there is no exchange plan, or the exchanged runs are not a per-thread base plus per-group offsets."""
        if not self.lane_exchange_stores or pl.holder_mask(p) is not None:
            return False
        itemsize = mem_ref.dtype.itemsize
        plan = tile_lane_exchange(p.coords, run, itemsize)
        if plan is None:
            return False
        conditions = window.vector_conditions(plan.vector)
        if conditions is None:
            return False
        rank = len(p.shape)
        starts = plan.regroup(p.coords)[:, :: plan.vector, :]  # (threads, groups, rank): each 16-byte run's start
        offsets = starts[0] - starts[0, 0]
        if not np.array_equal(starts, starts[:, :1, :] + offsets[None]):
            return False
        fits = [pl.fit(starts[:, 0, d]) for d in range(rank)]
        if any(f is None for f in fits):
            return False
        self.require_alignment(mem_ref.buffer, plan.vector * itemsize)
        self.use("global_store")
        self.use("lane_exchange")
        mem_c, mname = self.dtype_c(mem_ref.dtype), self.buffer_name(mem_ref.buffer)
        vec = self._uniform_condition(conditions, plan.vector)
        bases = self._base_coords(tuple(fits), comment="  // the thread's first 16-byte run, after the exchange")
        lane = self.local("lane")
        self.line(f"const int {lane} = {self.tid} % {plan.lanes};  // its place among the exchanging lanes")
        words = plan.width * itemsize // 4
        run_buffer_dim = window.kept[run]
        for g, runs in enumerate(plan.groups):
            with self.block():
                x = self.local("runs")
                self.line(f"unsigned {x}[{plan.lanes}][{words}];  // runs {', '.join(map(str, runs))} of {plan.width}")
                for i, r in enumerate(runs):
                    values = ", ".join(
                        convert(f"{fname}[{r * plan.width + e}]", frag_c, mem_c) for e in range(plan.width)
                    )
                    tmp = self.local("run")
                    self.line(f"const {mem_c} {tmp}[{plan.width}] = {{{values}}};")
                    self.line(f"argus::pack_words({x}[{i}], {tmp});")
                self.line(f"argus::lane_exchange({x}, {lane});")
                coords = window.buffer_coords([add(bases[d], int(offsets[g, d])) for d in range(rank)])
                mask = window.mask(coords, run_buffer_dim)
                source = f"reinterpret_cast<const {mem_c}*>(&{x}[0][0])"
                self.line(
                    f"argus::store_global<{plan.vector}>({mname}, {window.offset(coords)}, {mask}, {vec}, {source});"
                )
        return True

    def _load_into(self, fname: str, v0: int, width: int, mem_c: str, frag_c: str, call: str) -> None:
        """Emit `call` (with ``{dst}`` for the destination) loading `width` values into ``fname[v0..]``,
        through a temporary when the fragment's dtype differs from memory's."""
        if mem_c == frag_c:
            self.line(call.replace("{dst}", f"&{fname}[{v0}]"))
            return
        with self.block():
            tmp = self.local("loaded")
            self.line(f"{mem_c} {tmp}[{width}];")
            self.line(call.replace("{dst}", tmp))
            for j in range(width):
                self.line(f"{fname}[{v0 + j}] = {convert(f'{tmp}[{j}]', mem_c, frag_c)};")

    def _store_source(self, fname: str, v0: int, width: int, frag_c: str, mem_c: str) -> str:
        """C pointer to `width` values of ``fname[v0..]`` in memory's dtype (converted into a temporary
        when the dtypes differ)."""
        if frag_c == mem_c:
            return f"&{fname}[{v0}]"
        tmp = self.local("converted")
        values = ", ".join(convert(f"{fname}[{v0 + j}]", frag_c, mem_c) for j in range(width))
        self.line(f"const {mem_c} {tmp}[{width}] = {{{values}}};")
        return tmp

    def _uniform_condition(self, conditions: list[str], width: int) -> str:
        if width == 1 or not conditions:
            return "true"
        var = self.local("vector_ok")
        self.line(f"const bool {var} = {' && '.join(conditions)};  // every {width}-element run is aligned")
        return var

    def _copy_registers(self, s: Copy) -> None:
        if not s.dst.is_whole() or not s.src.is_whole():
            raise self.error("copies between parts of fragments")
        self._elementwise(s.dst.buffer, [s.src], lambda args: args[0], "copy")

    # ldmatrix / stmatrix --------------------------------------------------------------------------------
    def _matrix_copy(self, s: Copy, load: bool) -> bool:
        """``ldmatrix``/``stmatrix`` for a whole fragment; False (after a note) when the layouts do not
        allow it, so that the caller emits plain shared-memory accesses with the same effect."""
        op = "ldmatrix" if load else "stmatrix"
        frag_ref, mem_ref = (s.dst, s.src) if load else (s.src, s.dst)
        if mem_ref.space != Space.SHARED:
            self.note(f"{op} works on shared memory; {mem_ref.buffer.name} is {mem_ref.space.value}: plain accesses")
            return False
        if not frag_ref.is_whole():
            raise self.error(f"{op} into or out of part of a fragment")
        if frag_ref.dtype.bits != 16 or mem_ref.dtype != frag_ref.dtype:
            self.note(f"{op} moves 16-bit elements of one dtype: plain shared-memory accesses instead")
            return False
        p = pl.placement(frag_ref.buffer)
        window = _Window(self, mem_ref)
        offsets = window.offsets_of(p.coords)
        if offsets is None:
            self.note(f"{op}: the shared window's position is not static enough to prove the row layout")
            return False
        plan = pl.plan_matrix_copy(p, offsets)
        forced = forced_trans(s.atom)
        if isinstance(plan, str):
            if forced is not None:
                raise self.error(f"{s.atom} on this fragment and shared layout ({plan})", "use atom='ldmatrix'")
            self.note(f"{op} not applicable ({plan}): plain shared-memory accesses instead")
            return False
        if forced is not None:
            # a forced variant keeps the row addresses the layouts call for; if it disagrees with them, each
            # 8x8 matrix arrives transposed, exactly as the interpreter models the misuse
            plan = [dataclasses.replace(ins, trans=forced) for ins in plan]
        self.use("registers")
        self.use("smem_address")
        fname = self.buffer_name(frag_ref.buffer)
        counts = {}
        for ins in plan:
            key = f"{op}.x{ins.num}{'.trans' if ins.trans else ''}"
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{n} x {k}" for k, n in counts.items())
        with self.block():
            self.line(f"// {summary}: lane 8j+r addresses row r of matrix j (register j of the instruction)")
            rank = len(p.shape)
            names = {2: ["row", "col"]}.get(rank, [f"c{d}" for d in range(rank)])
            cache: dict[tuple, str] = {}
            for ins in plan:
                coords = []
                for d, f in enumerate(ins.row_start):
                    if f.is_constant:
                        coords.append(str(f.constant))
                        continue
                    key = (d, f.layout, f.domain)
                    if key not in cache:
                        var = self.local(names[d])
                        self.line(f"const int {var} = {pl.Fit(f.layout, 0, f.domain).c(self.tid)};")
                        cache[key] = var
                    coords.append(add(cache[key], f.constant))
                pointer = window.pointer(window.buffer_coords(coords))
                helper = f"{op}_x{ins.num}{'_trans' if ins.trans else ''}"
                self.use(helper)
                regs = ", ".join(f"argus::reg({fname}, {r})" for r in ins.registers)
                self.line(f"argus::{helper}({regs}, argus::smem_u32({pointer}));")
        return True

    # block copies (global/shared <-> shared/global) ------------------------------------------------------
    def _block_copy(self, s: Copy) -> None:
        src, dst = _Window(self, s.src), _Window(self, s.dst)
        shape = tuple(s.src.shape)
        if not shape:
            raise self.invalid("a copy of a zero-dimensional window")
        itemsize = max(s.src.dtype.itemsize, s.dst.dtype.itemsize)
        limit = max(1, VECTOR_BYTES // itemsize)
        cp_async = s.atom == "cp.async"
        width, conditions = self._block_width(shape, [src, dst], limit)
        if cp_async and s.src.dtype != s.dst.dtype:
            self.note("cp.async cannot convert dtypes: a synchronous copy instead")
            cp_async = False
        if cp_async:
            while width > 1 and width * s.dst.dtype.itemsize > VECTOR_BYTES:
                width //= 2
            if width * s.dst.dtype.itemsize < 4:
                self.note(
                    f"cp.async needs 4-, 8- or 16-byte runs; this copy's runs are {width * s.dst.dtype.itemsize} "
                    "bytes: a synchronous copy instead"
                )
                cp_async = False
        for w in (src, dst):
            if w.is_global:
                self.require_alignment(w.buffer, width * w.buffer.dtype.itemsize)
        self._distribute(
            shape,
            width,
            conditions,
            lambda coords, vec: self._block_body(s, src, dst, coords, width, vec, cp_async),
        )

    def _block_width(self, shape: tuple[int, ...], windows: list[_Window], limit: int) -> tuple[int, list[str]]:
        """The widest run (power of two, <= `limit`, dividing the last extent) every side can move as one
        aligned vector, and the run-time conditions that keeps it aligned on the global sides."""
        width = pl.power_of_two_at_most(min(limit, shape[-1]))
        while width > 1 and shape[-1] % width:
            width //= 2
        while width > 1:
            conditions: list[str] = []
            ok = True
            for w in windows:
                if w.is_global:
                    conds = w.vector_conditions(width)
                    if conds is None:
                        ok = False
                        break
                    conditions += conds
                else:
                    starts = _run_starts(shape, width)  # (Q, rank) window coordinates
                    offsets = w.offsets_of(starts[:, None, :] + _unit(len(shape), width)[None, :, :])
                    if offsets is None or not _contiguous(offsets, width):
                        ok = False
                        break
            if ok:
                return width, conditions
            width //= 2
        return 1, []

    def _distribute(self, shape: tuple[int, ...], width: int, conditions: list[str], body: Callable) -> None:
        """Spread the window's runs over the block's threads: thread ``tid`` takes runs ``tid + it *
        threads``; run ``q``'s window coordinates are row-major (the last dimension fastest, so that
        consecutive threads touch consecutive addresses)."""
        threads = self.threads
        runs = math.prod(shape) // width
        iterations = -(-runs // threads)
        with self.block():
            vec = self._uniform_condition(conditions, width)
            q = self.local("q")
            if iterations > 1:
                it = self.local("it")
                self.line("#pragma unroll")
                self.line(f"for (int {it} = 0; {it} < {iterations}; ++{it}) {{")
                self.depth += 1
                self.line(f"const int {q} = {self.tid} + {it} * {threads};")
            else:
                self.line(f"const int {q} = {self.tid};")
            guarded = runs % threads != 0
            if guarded:
                self.line(f"if ({q} < {runs}) {{")
                self.depth += 1
            rank = len(shape)
            names = {1: ["i"], 2: ["row", "col"]}.get(rank, [f"c{d}" for d in range(rank)])
            coords = ["0"] * rank
            rest = q
            for d in range(rank - 1, -1, -1):
                extent = shape[d] // width if d == rank - 1 else shape[d]
                if extent == 1:
                    continue
                term = rest if d == 0 else f"{paren(rest)} % {extent}"
                var = self.local(names[d])
                self.line(f"const int {var} = {mul(term, width) if d == rank - 1 else term};")
                coords[d] = var
                rest = f"{paren(rest)} / {extent}"
            body(coords, vec)
            if guarded:
                self.depth -= 1
                self.line("}")
            if iterations > 1:
                self.depth -= 1
                self.line("}")

    def _block_body(
        self, s: Copy, src: _Window, dst: _Window, coords: list[str], width: int, vec: str, cp_async: bool
    ) -> None:
        sc, dc = src.buffer_coords(coords), dst.buffer_coords(coords)
        src_c, dst_c = self.dtype_c(s.src.dtype), self.dtype_c(s.dst.dtype)
        if src.is_global and not dst.is_global:
            valid = src.mask(sc, src.kept[-1])
            pad = value_literal(s.pad, s.src.dtype)
            target = dst.pointer(dc)
            name = self.buffer_name(src.buffer)
            if cp_async:
                self.use("cp_async")
                zero = "true" if s.pad == 0.0 else "false"
                self.line(
                    f"argus::cp_async<{width}>({target}, {name}, {src.offset(sc)}, {valid}, {vec}, {pad}, {zero});"
                )
            elif src_c == dst_c:
                self.use("copy_to_shared")
                self.line(
                    f"argus::copy_global_to_shared<{width}>({target}, {name}, {src.offset(sc)}, {valid}, {vec}, {pad});"
                )
            else:
                self.use("global_load")
                tmp = self.local("tmp")
                self.line(f"{src_c} {tmp}[{width}];")
                self.line(f"argus::load_global<{width}>({tmp}, {name}, {src.offset(sc)}, {valid}, {vec}, {pad});")
                for j in range(width):
                    self.line(f"({target})[{j}] = {convert(f'{tmp}[{j}]', src_c, dst_c)};")
            return
        if dst.is_global and not src.is_global:
            valid = dst.mask(dc, dst.kept[-1])
            source = src.pointer(sc)
            name = self.buffer_name(dst.buffer)
            if src_c == dst_c:
                self.use("copy_to_global")
                self.line(f"argus::copy_shared_to_global<{width}>({name}, {dst.offset(dc)}, {valid}, {vec}, {source});")
            else:
                self.use("global_store")
                tmp = self.local("tmp")
                values = ", ".join(convert(f"({source})[{j}]", src_c, dst_c) for j in range(width))
                self.line(f"const {dst_c} {tmp}[{width}] = {{{values}}};")
                self.line(f"argus::store_global<{width}>({name}, {dst.offset(dc)}, {valid}, {vec}, {tmp});")
            return
        # shared -> shared
        self.use("shared_access")
        tmp = self.local("tmp")
        self.line(f"{src_c} {tmp}[{width}];")
        self.line(f"argus::load_shared<{width}>({tmp}, {src.pointer(sc)});")
        if src_c != dst_c:
            tmp2 = self.local("tmp")
            values = ", ".join(convert(f"{tmp}[{j}]", src_c, dst_c) for j in range(width))
            self.line(f"const {dst_c} {tmp2}[{width}] = {{{values}}};")
            tmp = tmp2
        self.line(f"argus::store_shared<{width}>({dst.pointer(dc)}, {tmp});")

    # fill -----------------------------------------------------------------------------------------------
    def fill(self, s: Fill) -> None:
        ref = s.dst
        c = self.dtype_c(ref.dtype)
        value = self._scalar(s.value, ref.dtype)
        if ref.space == Space.FRAGMENT:
            if not ref.is_whole():
                raise self.error("filling part of a fragment")
            b = ref.buffer
            v = self.local("v")
            self.line("#pragma unroll")
            self.line(f"for (int {v} = 0; {v} < {b.values_per_thread}; ++{v}) {self.buffer_name(b)}[{v}] = {value};")
            self.locals.discard(v)  # scoped to its loop
            return
        window = _Window(self, ref)
        shape = tuple(ref.shape)
        limit = max(1, VECTOR_BYTES // ref.dtype.itemsize)
        width, conditions = self._block_width(shape, [window], limit)
        if window.is_global:
            self.require_alignment(ref.buffer, width * ref.dtype.itemsize)

        def body(coords: list[str], vec: str) -> None:
            bc = window.buffer_coords(coords)
            tmp = self.local("tmp")
            self.line(f"const {c} {tmp}[{width}] = {{{', '.join([value] * width)}}};")
            if window.is_global:
                self.use("global_store")
                valid = window.mask(bc, window.kept[-1])
                self.line(
                    f"argus::store_global<{width}>({self.buffer_name(ref.buffer)}, {window.offset(bc)}, {valid}, "
                    f"{vec}, {tmp});"
                )
            else:
                self.use("shared_access")
                self.line(f"argus::store_shared<{width}>({window.pointer(bc)}, {tmp});")

        self._distribute(shape, width, conditions, body)

    def _scalar(self, e: Expr | int | float, dtype: DType) -> str:
        """A scalar IR expression converted to `dtype`'s C type."""
        if isinstance(e, Const) and not isinstance(e.value, bool) and isinstance(e.value, int | float):
            return value_literal(e.value, dtype)
        if isinstance(e, int | float):
            return value_literal(e, dtype)
        text = self.expr(e)
        src = self.dtype_c(e.dtype) if isinstance(e, Expr) else "int"
        return convert(text, src, self.dtype_c(dtype))

    # map ------------------------------------------------------------------------------------------------
    def map(self, s: Map) -> None:
        if not s.dst.is_whole():
            raise self.error("elementwise operations on part of a fragment")
        dst = s.dst.buffer
        if s.op == MapOp.COORD:
            self._coordinates(dst, s.srcs[0])
            return
        compute = self._compute_type(dst, s.srcs)
        try:
            fn = _map_function(s.op, compute)
        except ValueError:
            raise self.invalid(f"elementwise {s.op.value} on {compute} values (the tracer refuses it)") from None
        if s.op in (MapOp.FLOORDIV, MapOp.MOD) and compute == "int":
            self.use("floor")  # argus::floordiv / floormod: Python's // and %
        self._elementwise(dst, list(s.srcs), fn, s.op.value, compute)

    def _coordinates(self, dst: Buffer, axis_expr: Any) -> None:
        """``dst[v]`` = the tile coordinate of value ``v`` along `axis` (``T.index``)."""
        if not isinstance(axis_expr, Const) or not isinstance(axis_expr.value, int):
            raise self.error("T.index with an axis that is not a constant")
        axis = int(axis_expr.value)
        p = pl.placement(dst)
        dst_c = self.dtype_c(dst.dtype)
        name = self.buffer_name(dst)
        with self.block():
            at = self._fragment_coords(p, only=axis)
            for v in range(p.values):
                self.line(f"{name}[{v}] = {convert(at(v)[axis], 'int', dst_c)};")

    def _compute_type(self, dst: Buffer, operands: list[Any] | tuple[Any, ...]) -> str:
        return compute_ctype(map_compute_dtype(dst.dtype, operands))

    def _elementwise(
        self,
        dst: Buffer,
        operands: list[Any],
        fn: Callable[[list[str]], str],
        what: str,
        compute: str | None = None,
    ) -> None:
        """``dst[v] = fn(operand values)`` for every value of the thread: fragment operands read the
        register that holds the needed element (the same index in every thread), scalars as given."""
        compute = compute or self._compute_type(dst, operands)
        dst_c = self.dtype_c(dst.dtype)
        values = dst.values_per_thread
        readers: list[Callable[[str | int], str]] = []
        loopable = True
        for operand in operands:
            if isinstance(operand, TileRef | Broadcast):
                ref = operand.ref if isinstance(operand, Broadcast) else operand
                axes = operand.axes if isinstance(operand, Broadcast) else ()
                if ref.space != Space.FRAGMENT or not ref.is_whole():
                    raise self.error(f"{what} on a {ref.space.value} operand (elementwise math needs whole fragments)")
                src = ref.buffer
                if src.tv == dst.tv and not axes and src.values_per_thread == values:
                    slots = np.arange(values)
                else:
                    found = pl.gather_slots(dst, src, tuple(axes))
                    if found is None:
                        raise self.error(
                            f"{what}: {src.name} holds the elements {dst.name} needs in registers whose index differs "
                            "between threads",
                            "allocate both fragments with the same layout",
                        )
                    slots = found
                f = pl.fit(slots)
                name = self.buffer_name(src)
                src_c = self.dtype_c(src.dtype)
                if f is None:
                    loopable = False
                readers.append(_register_reader(name, slots, f, src_c, compute))
            else:
                text = self._scalar_operand(operand, compute)
                readers.append(lambda _v, text=text: text)
        name = self.buffer_name(dst)
        if loopable and values > 1:
            v = self.local("v")
            result = convert(fn([r(v) for r in readers]), compute, dst_c)
            self.line("#pragma unroll")
            self.line(f"for (int {v} = 0; {v} < {values}; ++{v}) {name}[{v}] = {result};")
            self.locals.discard(v)  # scoped to its loop
            return
        for j in range(values):
            result = convert(fn([r(j) for r in readers]), compute, dst_c)
            self.line(f"{name}[{j}] = {result};")

    def _scalar_operand(self, e: Any, compute: str) -> str:
        if isinstance(e, Const) and not isinstance(e.value, bool):
            if compute == "float":
                return float_literal(float(e.value))
            return str(int(e.value))
        if isinstance(e, Expr):
            text = self.expr(e)
            src = self.dtype_c(e.dtype)
            return convert(text, src, compute) if src != compute else text
        raise self.invalid(f"operand {e!r}")

    # reduce ---------------------------------------------------------------------------------------------
    def reduce(self, s: Reduce) -> None:
        dst, src = s.dst.buffer, s.src.buffer
        if not (s.dst.is_whole() and s.src.is_whole()):
            raise self.error("reductions of part of a fragment")
        if len(src.static_shape) != 2:
            raise self.invalid(f"reduction of a {len(src.static_shape)}-D fragment")
        groups = pl.reduce_groups(dst, src, s.axis)
        if groups is None:
            raise self.error(
                "a reduction whose values per result differ between threads",
                "use a fragment layout in which every thread holds the same pattern of values",
            )
        compute = "float" if src.dtype.kind is DTypeKind.FLOAT or dst.dtype.kind is DTypeKind.FLOAT else "int"
        src_c, dst_c = self.dtype_c(src.dtype), self.dtype_c(dst.dtype)
        combine = _combine(s.op, compute)
        identity = _identity(s.op, compute)
        sname, dname = self.buffer_name(src), self.buffer_name(dst)
        direct = dst_c == compute and not s.accumulate  # reduce straight into the result's registers
        with self.block():
            partial = []
            for j, group in enumerate(groups):
                terms = [convert(f"{sname}[{v}]", src_c, compute) for v in group]
                text = identity if not terms else terms[0]
                for t in terms[1:]:
                    text = combine(text, t)
                if direct:
                    target = f"{dname}[{j}]"
                    self.line(f"{target} = {text};")
                else:
                    target = self.local(f"partial{j}")
                    self.line(f"{compute} {target} = {text};")
                partial.append(target)
            for lane in s.shuffle_lanes:
                for target in partial:
                    shuffled = f"__shfl_xor_sync(0xffffffffu, {target}, {lane})"
                    self.line(f"{target} = {combine(target, shuffled)};")
            if not direct:
                for j, target in enumerate(partial):
                    value = combine(target, convert(f"{dname}[{j}]", dst_c, compute)) if s.accumulate else target
                    self.line(f"{dname}[{j}] = {convert(value, compute, dst_c)};")

    # gemm -----------------------------------------------------------------------------------------------
    def gemm(self, s: Gemm) -> None:
        atom = get_atom(s.atom)
        if isinstance(atom, MmaAtom) and atom.ptx.startswith("wgmma."):
            self._wgmma(s, atom)
            return
        if isinstance(atom, MmaAtom) and atom.scope is Scope.THREAD:
            self._fma_gemm(s, atom)
            return
        if not isinstance(atom, MmaAtom) or atom.thread_count != 32 or not atom.ptx.startswith("mma.sync"):
            raise self.error(f"{s.atom} (Gemm with a warpgroup MMA)", "wgmma lowering comes with the Hopper pipeline")
        for name, ref in (("a", s.a), ("b", s.b), ("acc", s.acc)):
            if ref.space != Space.FRAGMENT:
                raise self.error(
                    f"T.gemm with mma.sync reading operand {name} from {ref.space.value} memory",
                    "copy the operand into a fragment first: T.copy(sA, rA, atom='ldmatrix')",
                )
            if not ref.is_whole():
                raise self.error(f"T.gemm on part of fragment {ref.buffer.name}")
        gm, gn = s.groups
        m, k = s.a.shape
        _, n = s.b.shape
        sub_m, sub_n = m // gm, n // gn
        am, an, ak = atom.shape
        rep_m, rep_n, rep_k = sub_m // am, sub_n // an, k // ak
        if gm * gn * atom.thread_count != self.threads or rep_m * am != sub_m or rep_n * an != sub_n:
            raise self.invalid(f"{atom.name} over {gm}x{gn} groups does not tile a {m}x{n} accumulator")
        counts = {
            "A": (s.a.buffer, atom.values_per_thread("A"), atom.a_dtype, rep_m * rep_k),
            "B": (s.b.buffer, atom.values_per_thread("B"), atom.b_dtype, rep_k * rep_n),
            "C": (s.acc.buffer, atom.values_per_thread("C"), atom.acc_dtype, rep_m * rep_n),
        }
        regs: dict[str, int] = {}
        for operand, (buf, per_atom, dtype, repeats) in counts.items():
            if buf.values_per_thread != per_atom * repeats:
                raise self.invalid(
                    f"{buf.name} holds {buf.values_per_thread} values per thread; {atom.name} over this tile reads "
                    f"{per_atom * repeats}"
                )
            if buf.dtype != dtype:
                raise self.invalid(f"{buf.name} is {buf.dtype.name}; {atom.name} takes {dtype.name} for {operand}")
            regs[operand] = per_atom * dtype.bits // 32 if dtype.bits < 32 else per_atom
        helper = prelude.mma_function_name(atom)
        self.extra_snippets[helper] = prelude.mma_snippet(atom)
        self.use("registers")
        self.dtype_c(atom.a_dtype)
        a, b, c = (self.buffer_name(x.buffer) for x in (s.a, s.b, s.acc))
        mm, nn, kk = (self.local(v) if extent > 1 else "0" for v, extent in (("m", rep_m), ("n", rep_n), ("k", rep_k)))
        self.line(
            f"// per warp: {rep_m} x {rep_n} x {rep_k} {atom.name} on its ({sub_m}, {sub_n}) sub-tile; operand "
            "registers in the atom's order (value i + values_per_atom * repeat)"
        )
        a_rep = add(mm, mul(kk, rep_m))
        b_rep = add(kk, mul(nn, rep_k))
        c_rep = add(mm, mul(nn, rep_m))
        self.dtype_c(atom.acc_dtype)

        def registers(name: str, operand: str, rep: str, packed: bool) -> list[str]:
            out = []
            for i in range(regs[operand]):
                index = add(mul(paren(rep), regs[operand]), i) if rep != "0" else str(i)
                out.append(f"argus::reg({name}, {index})" if packed else f"{name}[{index}]")
            return out

        args = (
            registers(c, "C", c_rep, atom.acc_dtype.bits < 32)
            + registers(a, "A", a_rep, True)
            + registers(b, "B", b_rep, True)
        )
        opened = 0
        for var, extent in ((kk, rep_k), (mm, rep_m), (nn, rep_n)):
            if extent == 1:
                continue
            self.line("#pragma unroll")
            self.line(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{")
            self.depth += 1
            opened += 1
        self.line(f"argus::{helper}({', '.join(args)});")
        for _ in range(opened):
            self.depth -= 1
            self.line("}")
        self.locals -= {mm, nn, kk}  # scoped to their loops

    def _fma_gemm(self, s: Gemm, atom: MmaAtom) -> None:
        """``T.gemm`` with the per-thread FMA atom: every thread multiplies its own registers, ``(SM, K)`` of A
        by ``(K, SN)`` of B into its ``(SM, SN)`` accumulator micro-tile, one ``fma.rn.f32`` per product. The
        registers are read in the atom's convention (value ``r + rows * c`` is element ``(r, c)`` of the
        thread's sub-tile: the repeats of a 1x1x1 atom, rows first), as the interpreter reads them."""
        for name, ref in (("a", s.a), ("b", s.b), ("acc", s.acc)):
            if ref.space != Space.FRAGMENT:
                raise self.error(
                    f"T.gemm with {atom.name} reading operand {name} from {ref.space.value} memory",
                    "copy the operand into a fragment allocated with the same atom first: T.copy(sA, rA)",
                )
            if not ref.is_whole():
                raise self.error(f"T.gemm on part of fragment {ref.buffer.name}")
        if atom.shape != (1, 1, 1) or atom.thread_count != 1:
            raise self.error(f"{atom.name}: a per-thread MMA atom other than 1x1x1 on one thread")
        gm, gn = s.groups
        m, k = s.a.shape
        _, n = s.b.shape
        sub_m, sub_n = m // gm, n // gn
        if gm * gn != self.threads or sub_m * gm != m or sub_n * gn != n:
            raise self.invalid(f"{atom.name} over {gm}x{gn} threads does not tile a {m}x{n} accumulator")
        for ref, dtype, values in (
            (s.a, atom.a_dtype, sub_m * k),
            (s.b, atom.b_dtype, k * sub_n),
            (s.acc, atom.acc_dtype, sub_m * sub_n),
        ):
            if ref.buffer.values_per_thread != values:
                raise self.invalid(
                    f"{ref.buffer.name} holds {ref.buffer.values_per_thread} values per thread; {atom.name} over "
                    f"this tile reads {values}"
                )
            if ref.buffer.dtype != dtype:
                raise self.invalid(f"{ref.buffer.name} is {ref.buffer.dtype.name}; {atom.name} takes {dtype.name}")
        a, b, c = (self.buffer_name(x.buffer) for x in (s.a, s.b, s.acc))
        a_c, b_c = self.dtype_c(atom.a_dtype), self.dtype_c(atom.b_dtype)
        self.dtype_c(atom.acc_dtype)
        self.line(
            f"// per thread: its ({sub_m}, {k}) rows of A times its ({k}, {sub_n}) columns of B into its "
            f"({sub_m}, {sub_n}) accumulator, {atom.ptx}"
        )
        with self.block():  # the loop variables and a_value are local to this gemm
            mm, nn, kk = (self.local(v) if e > 1 else "0" for v, e in (("m", sub_m), ("n", sub_n), ("k", k)))
            a_value = self.local("a_value")

            def open_loop(var: str, extent: int) -> int:
                if extent == 1:
                    return 0
                self.line("#pragma unroll")
                self.line(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{")
                self.depth += 1
                return 1

            opened = open_loop(kk, k) + open_loop(mm, sub_m)
            a_element = f"{a}[{add(mm, mul(kk, sub_m))}]"  # converted once, then met by the thread's columns
            self.line(f"const float {a_value} = {convert(a_element, a_c, 'float')};")
            opened += open_loop(nn, sub_n)
            b_value = convert(f"{b}[{add(kk, mul(nn, k))}]", b_c, "float")
            acc = f"{c}[{add(mm, mul(nn, sub_m))}]"
            self.line(f"{acc} = __fmaf_rn({a_value}, {b_value}, {acc});")
            for _ in range(opened):
                self.depth -= 1
                self.line("}")

    # control flow and synchronization -------------------------------------------------------------------
    def loop(self, s: For) -> None:
        plan = self.deferred_releases().get(id(s)) if s.kind == LoopKind.PIPELINED else None
        if plan is not None:
            self.release_loop(s, plan)
            return
        var = self.names.name(s.var, s.var.name)
        extent = self.expr(s.extent)
        if s.kind == LoopKind.UNROLLED:
            self.line("#pragma unroll")
        elif s.kind == LoopKind.PIPELINED:
            self.line(f"// pipelined loop ({s.stages} stages), emitted as written: the pipelining pass has not run")
        with self.block(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{"):
            self.body(s.body)

    def branch(self, s: If) -> None:
        with self.block(f"if ({self.expr(s.cond)}) {{", "}" if not s.orelse else "} else {"):
            self.body(s.then)
        if s.orelse:
            self.depth += 1
            self.body(s.orelse)
            self.depth -= 1
            self.line("}")

    def barrier(self, s: Barrier) -> None:
        if s.kind == BarrierKind.BLOCK:
            self.line("__syncthreads();")
            return
        threads = s.threads if s.threads is not None else self.kernel.threads
        self.line(f'asm volatile("bar.sync %0, %1;\\n" :: "r"({s.barrier_id}), "r"({threads}) : "memory");')

    def async_commit(self, s: AsyncCommit) -> None:
        self.use("cp_async")
        self.line("argus::cp_async_commit();")

    def async_wait(self, s: AsyncWait) -> None:
        self.use("cp_async")
        self.line(f"argus::cp_async_wait<{int(s.pending)}>();")

    def fence(self, s: Fence) -> None:
        if s.kind == FenceKind.PROXY_ASYNC:
            self.line('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')
        elif s.kind == FenceKind.WGMMA:
            self.line('asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");')
        else:
            raise self.error(f"fence {s.kind}")

    # --- assembling the translation unit -------------------------------------------------------------------
    def _assemble(self) -> GeneratedSource:
        k = self.kernel
        body = "\n".join(self.lines)
        entry = re.sub(r"\W", "_", k.name)
        tensors, params = [], []
        for t in k.tensors:
            c = self.dtype_c(t.dtype)
            written = t in self.written
            params.append(f"{'' if written else 'const '}{c}* __restrict__ {self.buffer_name(t)}")
            tensors.append(
                TensorParam(
                    name=t.name,
                    dtype=t.dtype,
                    shape=tuple(t.shape),
                    strides=tuple(t.strides if t.strides is not None else _row_major(t.shape)),
                    written=written,
                    alignment=self.alignment.get(t, t.dtype.itemsize),
                )
            )
        shape_params = []
        for v in k.shape_vars:
            params.append(f"int {self.names.name(v, v.name)}")
            shape_params.append(ShapeParam(v.name, v))
        for tmap in self.tensor_maps.values():
            params.append(f"const __grid_constant__ argus::TensorMap {tmap.name}")
        used_ids = set(re.findall(r"\b\w+\b", body))
        prologue = []
        if self.tid in used_ids:
            prologue.append(f"const int {self.tid} = threadIdx.x;")
        for axis, v in zip("xyz", k.block_vars, strict=False):
            name = self.names.name(v, v.name)
            if name in used_ids:
                prologue.append(f"const int {name} = blockIdx.{axis};")
        if self.tensor_maps and self.prefetch_tensormaps:  # the first fetch overlaps the set-up, not the first copy
            fetches = " ".join(f"argus::prefetch_tensormap(&{t.name});" for t in self.tensor_maps.values())
            prologue.append(f"if (threadIdx.x == 0) {{ {fetches} }}  // TMA descriptors into the TMA unit's cache")
        if self.shared:
            prologue.append(f"// shared memory: {self.shared_bytes} bytes, one buffer per allocation")
            prologue.append("extern __shared__ __align__(1024) unsigned char argus_smem[];")
            for b, offset in self.shared.items():
                name = self.buffer_name(b)
                if name not in used_ids:
                    continue
                if b.space == Space.MBARRIER:
                    prologue.append(
                        f"unsigned long long* const {name} = reinterpret_cast<unsigned long long*>(argus_smem + "
                        f"{offset});  // {_where(b.loc)}  {math.prod(b.static_shape)} mbarrier(s)"
                    )
                    continue
                c = self.dtype_c(b.dtype)
                prologue.append(
                    f"{c}* const {name} = reinterpret_cast<{c}*>(argus_smem + {offset});  // {_where(b.loc)}  "
                    f"{b.dtype.name}{list(b.static_shape)}, layout {b.layout}"
                )
        header = [
            f"// Generated by argus from kernel `{k.name}` ({_where(k.loc) or 'unknown source'}).",
            f"// Specialization: {', '.join(f'{n}={v!r}' for n, v in k.params) or 'no parameters'}.",
            "// Do not edit: regenerate with argus.backend.cuda.codegen.generate(kernel).",
        ]
        parts = ["\n".join(header)]
        if self.includes:
            parts.append("\n".join(f"#include <{h}>" for h in sorted(self.includes)))
        helpers = prelude.render(self.used, tuple(self.extra_snippets.values()))
        if helpers:
            parts.append(helpers.rstrip("\n"))
        # with setmaxnreg, ptxas must know the register count at entry: the number of resident blocks per SM
        # (one unless the kernel asks for more) fixes it at the most the block size allows, which the role budgets
        # redistribute; a kernel asking for several resident blocks gets them as the minimum, with or without roles
        blocks = k.blocks_per_sm
        bounds = f"{k.threads}, {blocks}" if self.register_roles or blocks > 1 else f"{k.threads}"
        signature = f'extern "C" __global__ void __launch_bounds__({bounds}) {entry}({", ".join(params)}) {{'
        parts.append("\n".join([signature, *(f"  {p}" for p in prologue), *([body] if body else []), "}"]))
        return GeneratedSource(
            kernel_name=k.name,
            entry=entry,
            source="\n\n".join(parts) + "\n",
            tensors=tuple(tensors),
            shape_params=tuple(shape_params),
            threads=k.threads,
            grid=tuple(k.grid),
            shared_bytes=self.shared_bytes,
            assumptions=tuple(k.assumptions),
            params=tuple(k.params),
            notes=tuple(self.notes),
            tensor_maps=tuple(self.tensor_maps.values()),
        )


# --- helpers -------------------------------------------------------------------------------------------------


def _shared_run_width(offsets: np.ndarray, limit: int) -> int:
    """Largest power-of-two run of consecutive fragment values that is contiguous and aligned in shared
    memory for every thread and stage (`offsets`: ``(S, threads, values)``)."""
    values = offsets.shape[2]
    width = 1
    while width * 2 <= limit and values % (width * 2) == 0:
        width *= 2
    while width > 1:
        runs = offsets.reshape(offsets.shape[0], offsets.shape[1], values // width, width)
        if np.array_equal(runs, runs[..., :1] + np.arange(width)) and not np.any(runs[..., 0] % width):
            return width
        width //= 2
    return 1


def _run_starts(shape: tuple[int, ...], width: int) -> np.ndarray:
    """Window coordinates of the first element of every run of `width` along the last dimension."""
    grids = np.meshgrid(*[np.arange(s) for s in shape[:-1]], np.arange(0, shape[-1], width), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=-1)


def _unit(rank: int, width: int) -> np.ndarray:
    out = np.zeros((width, rank), dtype=np.int64)
    out[:, -1] = np.arange(width)
    return out


def _contiguous(offsets: np.ndarray, width: int) -> bool:
    """`offsets` ``(S, runs, width)``: each run contiguous and aligned to `width`."""
    return bool(np.array_equal(offsets, offsets[..., :1] + np.arange(width)) and not np.any(offsets[..., 0] % width))


def _register_reader(
    name: str, slots: np.ndarray, f: pl.Fit | None, src_c: str, compute: str
) -> Callable[[str | int], str]:
    def read(v: str | int) -> str:
        if isinstance(v, int):
            index = str(int(slots[v]))
        else:
            index = f.c(v) if f is not None else v
        return convert(f"{name}[{index}]", src_c, compute)

    return read


def _compare(c_op: str, is_float: bool) -> Callable[[str, str], str]:
    one, zero = ("1.0f", "0.0f") if is_float else ("1", "0")
    return lambda a, b: f"({paren(a)} {c_op} {paren(b)} ? {one} : {zero})"


def _c_operator(c_op: str) -> Callable[[str, str], str]:
    return lambda a, b: f"{paren(a)} {c_op} {paren(b)}"


def _map_function(op: MapOp, compute: str) -> Callable[[list[str]], str]:
    """The C text of `op` on operands of C type `compute` (``float``, ``int`` or ``unsigned``): CUDA's f32 math
    functions for floats, C's operators for integers (Python's ``//`` and ``%`` on ``int`` through
    ``argus::floordiv`` / ``floormod``; on ``unsigned`` they equal C's). Raises `ValueError` for an operation
    that has no meaning on `compute` values (a bitwise operation on floats)."""
    is_float = compute == "float"
    binary = {
        MapOp.ADD: _c_operator("+"),
        MapOp.SUB: _c_operator("-"),
        MapOp.MUL: _c_operator("*"),
        MapOp.DIV: _c_operator("/"),
        MapOp.MAX: (lambda a, b: f"fmaxf({a}, {b})") if is_float else (lambda a, b: f"max({a}, {b})"),
        MapOp.MIN: (lambda a, b: f"fminf({a}, {b})") if is_float else (lambda a, b: f"min({a}, {b})"),
        MapOp.LT: _compare("<", is_float),
        MapOp.LE: _compare("<=", is_float),
        MapOp.EQ: _compare("==", is_float),
        MapOp.NE: _compare("!=", is_float),
        MapOp.FMOD: (lambda a, b: f"fmodf({a}, {b})") if is_float else _c_operator("%"),
    }
    if is_float:
        binary[MapOp.POW] = lambda a, b: f"powf({a}, {b})"
    else:
        binary |= {
            MapOp.FLOORDIV: (lambda a, b: f"argus::floordiv({a}, {b})") if compute == "int" else _c_operator("/"),
            MapOp.MOD: (lambda a, b: f"argus::floormod({a}, {b})") if compute == "int" else _c_operator("%"),
            MapOp.AND: _c_operator("&"),
            MapOp.OR: _c_operator("|"),
            MapOp.XOR: _c_operator("^"),
            MapOp.SHL: _c_operator("<<"),
            MapOp.SHR: _c_operator(">>"),  # arithmetic on int, logical on unsigned
        }
    unary = {
        MapOp.NEG: lambda a: f"-{paren(a)}",
        MapOp.EXP2: lambda a: f"exp2f({a})",
        MapOp.EXP: lambda a: f"expf({a})",
        MapOp.LOG2: lambda a: f"log2f({a})",
        MapOp.RSQRT: lambda a: f"rsqrtf({a})",
        MapOp.SQRT: lambda a: f"sqrtf({a})",
        MapOp.RCP: lambda a: f"1.0f / {paren(a)}",
        MapOp.ABS: (lambda a: f"fabsf({a})")
        if is_float
        else (lambda a: f"abs({a})")
        if compute == "int"
        else (lambda a: a),  # |x| of an unsigned value is itself
        MapOp.CAST: lambda a: a,
        MapOp.TANH: lambda a: f"tanhf({a})",
        MapOp.ERF: lambda a: f"erff({a})",
        MapOp.LOG: lambda a: f"logf({a})",
        MapOp.LOG1P: lambda a: f"log1pf({a})",
        MapOp.EXPM1: lambda a: f"expm1f({a})",
        MapOp.SIGMOID: lambda a: f"1.0f / (1.0f + expf(-{paren(a)}))",
        MapOp.SIN: lambda a: f"sinf({a})",
        MapOp.COS: lambda a: f"cosf({a})",
        MapOp.FLOOR: lambda a: f"floorf({a})",
        MapOp.CEIL: lambda a: f"ceilf({a})",
    }
    if not is_float:
        unary[MapOp.INVERT] = lambda a: f"~{paren(a)}"
    if op in binary:
        return lambda args: binary[op](args[0], args[1])
    if op in unary:
        return lambda args: unary[op](args[0])
    if op == MapOp.FMA:
        return (
            (lambda args: f"fmaf({args[0]}, {args[1]}, {args[2]})")
            if is_float
            else (lambda args: f"{paren(args[0])} * {paren(args[1])} + {paren(args[2])}")
        )
    if op == MapOp.SELECT:
        return lambda args: f"({paren(args[0])} != 0 ? {paren(args[1])} : {paren(args[2])})"
    raise ValueError(f"map operation {op}")


def _combine(op: ReduceOp, compute: str) -> Callable[[str, str], str]:
    if op == ReduceOp.SUM:
        return lambda a, b: f"{paren(a)} + {paren(b)}"
    if compute == "float":
        return (lambda a, b: f"fmaxf({a}, {b})") if op == ReduceOp.MAX else (lambda a, b: f"fminf({a}, {b})")
    return (lambda a, b: f"max({a}, {b})") if op == ReduceOp.MAX else (lambda a, b: f"min({a}, {b})")


def _identity(op: ReduceOp, compute: str) -> str:
    if op == ReduceOp.SUM:
        return "0.0f" if compute == "float" else "0"
    if compute == "float":
        return float_literal(float("-inf") if op == ReduceOp.MAX else float("inf"))
    return "(-2147483647 - 1)" if op == ReduceOp.MAX else "2147483647"
