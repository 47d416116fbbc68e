"""A kernel's structure and control flow: the grid (``T.grid``, ``T.persistent_grid`` and the order it walks tiles
in, ``T.tile_order``), thread and warp indices, runtime loops (``T.serial``, ``T.unroll``, ``T.pipeline``) and
branches (``T.if_``), warp roles (``T.role``), and the assumptions on the problem sizes (``T.assume``)."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from typing import Any

from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.atoms.target import DEFAULT_TARGET
from argus.atoms.tma import CLUSTER_BLOCKS
from argus.ir.expr import (
    COMPARISONS,
    LOGICAL,
    BinaryOp,
    BinOp,
    Expr,
    Var,
    VarKind,
    as_expr,
    binary,
    cdiv,
    elements,
    free_vars,
    maximum,
    minimum,
)
from argus.ir.nodes import For, If, Let, LoopKind, PartialOutput, PartialSums, Role, Space, ValueAssumption
from argus.lang.errors import DSLError, caller_loc
from argus.lang.sync import check_turns
from argus.lang.tiles import GlobalTensor, index_expr
from argus.lang.trace import CURRENT, current


@contextlib.contextmanager
def grid(*extents: Any, threads: int = 128, blocks_per_sm: int = 1, cluster: int = 1) -> Iterator[tuple[Var, ...]]:
    """``with T.grid(nx[, ny[, nz]], threads=128) as (bx, ...)``: launch one block per grid point.

    `blocks_per_sm`: how many blocks are meant to be resident on an SM together (so that one block's epilogue and
    pipeline fill overlap another's work). It sets ``__launch_bounds__(threads, blocks_per_sm)``, and the budgets
    follow: shared memory per block (`argus.atoms.common.shared_budget`) and, with warp roles, the registers their
    ``setmaxnreg`` budgets may hold together (`argus.atoms.common.register_pool`).

    `cluster`: 2 launches the blocks in 2-block thread-block clusters along the first dimension (blocks 2c and
    2c + 1 form cluster c; the first extent must be even: an int, or an expression the verifier proves even), where
    a TMA load may be multicast into both blocks (``T.copy(..., multicast=True)``) and an mbarrier may be the
    pair's (``T.alloc_mbarrier(..., cluster=True)``). The verifier proves the two blocks of a cluster issue the same
    multicast boxes and the same cluster arrivals (`argus.verify.checks.cluster`)."""
    st = CURRENT.get()
    if st is None:
        raise DSLError("DSL_OUTSIDE_KERNEL", "T.grid can only be used inside an @argus.kernel function")
    if st.grid is not None:
        raise DSLError("DSL_TWO_GRIDS", "a kernel has exactly one T.grid", "merge the two grids into one kernel")
    if not 1 <= len(extents) <= 3:
        raise DSLError("DSL_GRID_RANK", f"T.grid takes 1 to 3 extents, got {len(extents)}")
    if not isinstance(threads, int) or threads < 1 or threads > 1024 or threads % 32:
        raise DSLError(
            "DSL_THREADS",
            f"threads={threads!r} is not a valid block size",
            requirement="a multiple of 32 between 32 and 1024",
            actual=threads,
        )
    most_blocks, most_threads = DEFAULT_TARGET.max_blocks_per_sm, DEFAULT_TARGET.max_threads_per_sm
    if not isinstance(blocks_per_sm, int) or not 1 <= blocks_per_sm <= most_blocks:
        raise DSLError(
            "DSL_BLOCKS_PER_SM",
            f"blocks_per_sm={blocks_per_sm!r} is not a number of resident blocks",
            requirement=f"an int in 1..{most_blocks} (Hopper holds at most {most_blocks} blocks per SM)",
            actual=blocks_per_sm,
        )
    if threads * blocks_per_sm > most_threads:
        raise DSLError(
            "DSL_BLOCKS_PER_SM",
            f"{blocks_per_sm} blocks of {threads} threads cannot be resident on one SM together",
            requirement=f"threads x blocks_per_sm at most {most_threads} on Hopper",
            actual=threads * blocks_per_sm,
        )
    if cluster not in (1, CLUSTER_BLOCKS) or isinstance(cluster, bool):
        raise DSLError(
            "DSL_CLUSTER",
            f"cluster={cluster!r}: argus launches 2-block clusters or none",
            requirement=f"cluster=1 or cluster={CLUSTER_BLOCKS}",
            actual=cluster,
        )
    if cluster > 1 and isinstance(extents[0], int) and extents[0] % cluster:  # an expression: the verifier proves it
        raise DSLError(
            "DSL_CLUSTER",
            f"a grid of {cluster}-block clusters needs a first extent that is a multiple of {cluster}, not "
            f"{extents[0]!r}",
            actual=extents[0],
        )
    st.cluster = cluster
    st.blocks_per_sm = blocks_per_sm
    st.grid_loc = caller_loc()
    names = st.grid_names(("bx", "by", "bz")[: len(extents)])  # those of `with T.grid(...) as (bm, bn)`
    st.block_vars = tuple(Var(name, VarKind.BLOCK) for name in names)
    st.grid = tuple(e if isinstance(e, int) else as_expr(e) for e in extents)
    st.threads = threads
    st.in_grid = True
    try:
        yield st.block_vars
    finally:
        st.in_grid = False


def thread_id() -> Var:
    """The thread's index in its block (``threadIdx.x``)."""
    return current("T.thread_id").thread_var


def warp_id() -> Expr:
    """The warp's index in its block (``threadIdx.x / 32``)."""
    return current("T.warp_id").thread_var // 32


def lane_id() -> Expr:
    """The thread's lane in its warp (``threadIdx.x % 32``)."""
    return current("T.lane_id").thread_var % 32


TILE_ORDERS = ("row_major", "column_major", "grouped")


def tile_order(
    t: Any, tiles: tuple[Any, Any], order: str = "row_major", group: int = 8, clamp: bool = False
) -> tuple[Expr, Expr]:
    """The (m, n) tile that linear tile number `t` covers among ``tiles = (tiles_m, tiles_n)``:
    ``row_major`` walks n fastest, ``column_major`` m fastest, ``grouped`` walks `group` rows of
    tiles at a time, column by column, so that consecutive tiles share A and B panels in L2.

    With `clamp`, each coordinate is clamped into ``0 .. tiles - 1``: a no-op for every existing tile, it states
    the bound for the verifier, which otherwise has to reason through the grouped order's divisions by symbolic
    sizes to bound ``bm * BM`` (the Hopper GEMMs' K-block assertions: about a second with it, 16 s to a solver
    timeout without)."""
    if clamp:
        m, n = tile_order(t, tiles, order, group)
        tm, tn = (as_expr(x) for x in tiles)
        return minimum(maximum(m, 0), tm - 1), minimum(maximum(n, 0), tn - 1)

    if order == "grouped" and (not isinstance(group, int) or isinstance(group, bool) or group < 1):
        raise DSLError(
            "DSL_TILE_ORDER",
            f"the grouped tile order takes a positive int group (rows of tiles walked together), got {group!r}",
            requirement="group >= 1",
        )
    tm, tn = (as_expr(x) for x in tiles)
    t = as_expr(t)
    if order == "row_major":
        return t // tn, t % tn
    if order == "column_major":
        return t % tm, t // tm
    if order == "grouped":
        per_group = tn * group
        first_m = (t // per_group) * group
        rows = minimum(tm - first_m, group)
        within = t % per_group
        return first_m + within % rows, within // rows
    raise DSLError("DSL_TILE_ORDER", f"unknown tile order {order!r}", requirement=f"one of {', '.join(TILE_ORDERS)}")


@contextlib.contextmanager
def persistent_grid(
    tiles: tuple[Any, Any], blocks: int = SMS, threads: int = 128, order: str = "grouped", group: int = 8
) -> Iterator[tuple[Expr, Expr]]:
    """``with T.persistent_grid((tiles_m, tiles_n), blocks=SMS) as (tm, tn):`` a persistent kernel:
    `blocks` blocks (one per SM) loop over the tiles in `order`; the body runs once per tile."""
    if order not in TILE_ORDERS:
        choices = ", ".join(TILE_ORDERS)
        raise DSLError("DSL_TILE_ORDER", f"unknown tile order {order!r}", requirement=f"one of {choices}")
    if not isinstance(blocks, int) or blocks < 1:
        raise DSLError("DSL_GRID_RANK", f"blocks must be a positive int, got {blocks!r}")
    with grid(blocks, threads=threads) as (bx,):
        st = current("T.persistent_grid")
        st.persistent = (order, group)
        total = as_expr(tiles[0]) * tiles[1]
        for it in serial(cdiv(total, blocks)):
            t = bx + it * blocks
            with if_(t < total):
                yield tile_order(t, tiles, order, group)


@contextlib.contextmanager
def role(name: str, warpgroups: tuple[int, ...], registers: int | None = None) -> Iterator[None]:
    """``with T.role("producer", warpgroups=(0,), registers=40):`` warp specialization: the body
    runs only in those warpgroups (128 threads each); fragments allocated inside are spread over
    the role's threads; `registers` is the ``setmaxnreg`` budget per thread."""
    st = current("T.role")
    loc = caller_loc()
    total = (st.threads or 0) // WARPGROUP_SIZE
    warpgroups = tuple(warpgroups)
    if not warpgroups or any(not isinstance(w, int) or not 0 <= w < total for w in warpgroups):
        raise DSLError(
            "DSL_ROLE",
            f"T.role {name!r}: warpgroups {warpgroups} do not exist in a block of {st.threads} threads",
            requirement=f"indices in 0..{total - 1}",
            actual=warpgroups,
            loc=loc,
        )
    if registers is not None and (registers % 8 or not 24 <= registers <= 256):
        raise DSLError(
            "DSL_ROLE_REGISTERS",
            f"T.role {name!r}: setmaxnreg takes a multiple of 8 between 24 and 256",
            actual=registers,
            loc=loc,
        )
    if st.role is not None:
        raise DSLError("DSL_ROLE", "warp roles do not nest", loc=loc)
    st.role = (name, WARPGROUP_SIZE * len(warpgroups))
    st.stack.append([])
    try:
        yield
    finally:
        body = tuple(st.stack.pop())
        st.role = None
    check_turns(body, name, st.thread_var)
    st.emit(Role(name, warpgroups, body, registers, loc=loc))


def _loop(name: str, extent: Any, kind: LoopKind, stages: int = 1, start: Any = 0) -> Iterator[Var]:
    st = current(f"T.{name}")
    loc = caller_loc()
    var = Var(st.loop_name("k" if kind == LoopKind.PIPELINED else "i"), VarKind.LOOP)
    st.stack.append([])
    try:
        yield var
    finally:
        body = tuple(st.stack.pop())
    extent_e = extent if isinstance(extent, int) else index_expr(as_expr(extent), "a loop's extent")
    start_e = start if isinstance(start, int) else index_expr(as_expr(start), "a loop's start")
    st.emit(For(var, extent_e, body, kind, stages, start_e, loc=loc))


def serial(extent: Any) -> Iterator[Var]:
    """``for i in T.serial(n)``: a loop that runs at kernel run time (its body is traced once)."""
    return _loop("serial", extent, LoopKind.SERIAL)


def unroll(extent: int) -> Iterator[Var]:
    """A loop the compiler unrolls (its extent must be a Python int)."""
    if not isinstance(extent, int):
        raise DSLError("DSL_UNROLL_EXTENT", "T.unroll needs a Python int extent", actual=extent)
    return _loop("unroll", extent, LoopKind.UNROLLED)


def pipeline(extent: Any, stages: int, start: Any = 0) -> Iterator[tuple[Var, Expr]]:
    """``for k, s in T.pipeline(n, stages=S)``: a software-pipelined loop; `s` is the stage
    (``k % S``) whose buffers iteration `k` uses.

    ``T.pipeline(n, stages=S, start=g0)`` continues a stage rotation begun earlier: iteration `k` is global
    iteration ``g = g0 + k``, its stage ``g % S`` and its mbarrier phase ``g // S`` (parity ``(g // S) % 2``).
    A persistent kernel passes ``start=it * n`` in its tile loop, so that the stages and barrier phases run on
    across tiles and the producer fills the next tile's stages while the consumers finish this one. `start`
    must be the number of iterations of this pipeline that ran before (in every role using the stages): the
    verifier proves it (``start`` 0 for the first tile, and one tile's start the previous one's plus its
    extent)."""
    if not isinstance(stages, int) or stages < 1:
        raise DSLError("DSL_STAGES", f"stages must be a positive int, got {stages!r}")
    if isinstance(start, bool) or not isinstance(start, int | Expr):
        raise DSLError("DSL_STAGES", f"start must be an int or a runtime expression, got {start!r}")
    if isinstance(start, int) and start < 0:
        raise DSLError("DSL_STAGES", f"start must not be negative, got {start}")
    for var in _loop("pipeline", extent, LoopKind.PIPELINED, stages, start):
        yield var, (var + start) % stages if not (isinstance(start, int) and start == 0) else var % stages


@contextlib.contextmanager
def if_(cond: Any) -> Iterator[None]:
    """``with T.if_(cond):``: a branch taken at run time. Compare runtime values with ``<``,
    ``<=``, ``>``, ``>=``, or `T.eq` / `T.ne` (Python's ``==`` on expressions compares identity)."""
    st = current("T.if_")
    loc = caller_loc()
    if isinstance(cond, bool):
        raise DSLError(
            "DSL_TRACE_TIME_CONDITION",
            f"T.if_ got the Python bool {cond}: the condition was decided while tracing, not at run time",
            "compare runtime values with T.eq(a, b) / T.ne(a, b) (== and != on expressions compare identity), "
            "or use a plain Python `if` for a trace-time choice",
            loc=loc,
        )
    st.stack.append([])
    try:
        yield
    finally:
        body = tuple(st.stack.pop())
    st.emit(If(as_expr(cond), body, loc=loc))


@contextlib.contextmanager
def let(value: Any, name: str = "v") -> Iterator[Var]:
    """``with T.let(value, "row0") as row0:``: bind `value` (an integer expression every thread of the block
    agrees on: sizes, block and loop indices, tensor elements such as ``offs[g]``) once to a variable for the
    statements of the block, which read the variable instead of repeating the expression (the generated code
    declares ``const int row0 = ...;``; the verifier reads the value itself). A search built at trace time
    (``lo = T.let(T.select(...))`` step after step) stays linear in size this way."""
    st = current("T.let")
    loc = caller_loc()
    if isinstance(value, bool | float) or not isinstance(value, int | Expr):
        raise DSLError(
            "DSL_LET",
            f"T.let binds an integer expression, not {value!r}",
            "pass an int or an integer expression",
            loc=loc,
        )
    e = as_expr(value)
    if not e.dtype.is_integer:
        raise DSLError("DSL_LET", f"T.let binds an integer expression, got one of dtype {e.dtype.name}", loc=loc)
    per_thread = [v.name for v in free_vars(e) if v.kind == VarKind.THREAD]
    if per_thread:
        raise DSLError(
            "DSL_LET",
            f"T.let binds a value the whole block agrees on; {value} depends on the thread index",
            "compute per-thread values in fragments (T.coord, elementwise operations)",
            loc=loc,
        )
    if not isinstance(name, str) or not name.isidentifier():
        raise DSLError("DSL_LET", f"T.let's name must be an identifier, got {name!r}", loc=loc)
    var = Var(name, VarKind.LET)
    st.stack.append([])
    try:
        yield var
    finally:
        body = tuple(st.stack.pop())
    st.emit(Let(var, e, body, loc=loc))


# --- assumptions on the problem sizes ------------------------------------------------------------------------


def assume(condition: Any) -> None:
    """``T.assume(T.eq(K % 8, 0))`` or ``T.assume("K % 8 == 0")``: declare a condition on the problem sizes
    (shape symbols) that every launch satisfies. The verifier proves the kernel for the sizes that satisfy
    the kernel's assumptions only, and the runtime rejects a launch that violates one (``RUNTIME_ASSUMPTION``).
    A string may use the shape symbols, integers, ``+ - * // %``, comparisons (``==`` included), ``and``,
    ``or`` and ``not``. (Python's ``==`` between expressions compares identity, so ``T.assume(K % 8 == 0)``
    is rejected: write it as a string or with `T.eq`.)"""
    st = CURRENT.get()
    loc = caller_loc()
    if st is None:
        raise DSLError("DSL_OUTSIDE_KERNEL", "T.assume can only be used inside an @argus.kernel function", loc=loc)
    names = dict(st.shape_vars)
    if isinstance(condition, str):
        condition = _parse_assumption(condition, names, loc)
    if isinstance(condition, bool) or not isinstance(condition, Expr):
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume got {condition!r}, not a condition on the problem sizes",
            'write T.assume(T.eq(K % 8, 0)) or T.assume("K % 8 == 0") (== between expressions is Python\'s '
            "identity test and was decided while tracing)",
            loc=loc,
        )

    if not (isinstance(condition, BinOp) and (condition.op in COMPARISONS or condition.op in LOGICAL)):
        raise DSLError("DSL_ASSUME", f"T.assume takes a comparison, got {condition}", loc=loc)
    bad = [v.name for v in free_vars(condition) if v.kind != VarKind.SHAPE]
    if bad:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume may only constrain problem sizes (shape symbols); {', '.join(sorted(bad))} is not one",
            actual=str(condition),
            loc=loc,
        )
    st.assumptions.append(condition)
    st.assumption_locs.append(loc)


def assume_values(
    tensor: Any, *, lo: Any = None, hi: Any = None, nondecreasing: bool = False, tile_counts: Any = None
) -> None:
    """``T.assume_values(offs, lo=0, hi="R", nondecreasing=True)``: declare what the *contents* of an integer tensor
    the kernel reads as scalars (``offs[g]``) are: every element in ``lo .. hi`` (both inclusive; ints, expressions
    of the shape symbols, or strings over them as in `assume`; None leaves that side open) and, with
    `nondecreasing`, ``tensor[i] <= tensor[j]`` whenever ``i <= j`` (1-d tensors).

    ``tile_counts=(offs, BM)`` relates two tensors: element g is the number of BM-row tiles of the first g + 1
    segments of the cumulative row ends `offs`, ``sum(cdiv(offs[h] - offs[h - 1], BM) for h <= g)`` with ``offs[-1]
    = 0`` (what `argus.kernels.moe.tile_counts` computes); the two tensors have one 1-d shape.

    The verifier proves the kernel for every content of the tensor these facts allow, and for no other: a proof
    that rests on them (that the experts' row ranges ``offs[g-1] .. offs[g]`` do not overlap, so a grouped GEMM
    stores each row once) says nothing about data that breaks them. The CPU interpreter checks them on every call
    and refuses data that violates one (``INTERP_DATA_ASSUMPTION``, naming the tensor and the first violating
    index). **On the GPU they are not checked** (that would take a pass over device memory, and a host
    synchronization, before every launch): there they are the caller's contract. The library's grouped GEMMs take
    ``offs`` and ``tiles`` from `argus.kernels.moe`, which establishes them by construction (``offs`` a cumulative
    sum of non-negative counts, ``tiles`` a cumulative sum of tile counts). The code generator emits nothing for
    them."""
    st = CURRENT.get()
    loc = caller_loc()
    if st is None:
        raise DSLError(
            "DSL_OUTSIDE_KERNEL", "T.assume_values can only be used inside an @argus.kernel function", loc=loc
        )
    if not isinstance(tensor, GlobalTensor) or tensor.buffer.space != Space.GLOBAL:
        raise DSLError("DSL_ASSUME", f"T.assume_values takes a tensor parameter of the kernel, got {tensor!r}", loc=loc)
    buffer = tensor.buffer
    if not buffer.dtype.is_integer:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume_values({buffer.name}): {buffer.name} holds {buffer.dtype}; value assumptions are about "
            "integer tensors (offsets, counts)",
            loc=loc,
        )
    if not isinstance(nondecreasing, bool):
        raise DSLError("DSL_ASSUME", f"T.assume_values: nondecreasing is a bool, got {nondecreasing!r}", loc=loc)
    if nondecreasing and buffer.rank != 1:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume_values({buffer.name}, nondecreasing=True): {buffer.name} has {buffer.rank} dimensions",
            requirement="a 1-d tensor",
            loc=loc,
        )
    if lo is None and hi is None and not nondecreasing and tile_counts is None:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume_values({buffer.name}) declares nothing",
            "give lo=, hi=, nondecreasing=True or tile_counts=(offs, BM)",
            loc=loc,
        )
    counts_of, tile = _tile_counts(st, buffer, tile_counts, loc)
    names = dict(st.shape_vars)

    def bound(value: Any, side: str) -> Expr | int | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = _parse_assumption(value, names, loc)
        if isinstance(value, bool) or not isinstance(value, int | Expr):
            raise DSLError(
                "DSL_ASSUME", f"T.assume_values({buffer.name}): {side} must be an int or a size expression", loc=loc
            )
        if isinstance(value, Expr):
            bad = [v.name for v in free_vars(value) if v.kind != VarKind.SHAPE]
            if bad or (isinstance(value, BinOp) and (value.op in COMPARISONS or value.op in LOGICAL)):
                raise DSLError(
                    "DSL_ASSUME",
                    f"T.assume_values({buffer.name}): {side} must be an expression of the problem sizes",
                    actual=str(value),
                    loc=loc,
                )
        return value

    st.value_assumptions.append(
        ValueAssumption(
            buffer,
            bound(lo, "lo"),
            bound(hi, "hi"),
            nondecreasing=nondecreasing,
            loc=loc,
            counts_of=counts_of,
            tile=tile,
        )
    )


def _tile_counts(st: Any, buffer: Any, spec: Any, loc: Any) -> tuple[Any, int]:
    """The (offs buffer, tile rows) of `T.assume_values`'s ``tile_counts=(offs, BM)``, checked; (None, 0) without."""
    if spec is None:
        return None, 0
    name = buffer.name
    if not (isinstance(spec, tuple) and len(spec) == 2):
        raise DSLError(
            "DSL_ASSUME", f"T.assume_values({name}, tile_counts=...) takes (offs, BM)", actual=repr(spec), loc=loc
        )
    offs, tile = spec
    if not isinstance(offs, GlobalTensor) or offs.buffer.space != Space.GLOBAL or not offs.buffer.dtype.is_integer:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume_values({name}, tile_counts=(offs, BM)): offs must be an integer tensor parameter",
            loc=loc,
        )
    if isinstance(tile, bool) or not isinstance(tile, int) or tile < 1:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume_values({name}, tile_counts=(offs, BM)): BM must be a positive int, got {tile!r}",
            loc=loc,
        )
    if buffer.rank != 1 or [str(d) for d in buffer.shape] != [str(d) for d in offs.buffer.shape]:
        raise DSLError(
            "DSL_ASSUME",
            f"T.assume_values({name}, tile_counts=({offs.buffer.name}, {tile})): the two tensors must be 1-d of one "
            "shape (one count per segment)",
            loc=loc,
        )
    return offs.buffer, tile


def writes_part(tensor: Any, why: str, below: Any = None) -> None:
    """``T.writes_part(C, "the tail's tiles are the next kernel's")``: declare that the kernel writes only part of
    the output `tensor`, by design — another kernel of the same plan writes the rest (a split tail's whole-wave
    kernel and its tail reduction each write their own tiles of C). The verifier then does not check that every
    element of `tensor` is written (*output coverage*): it lists the check as not checked, with `why`, in the
    report (`argus verify`'s "not checked"). Every other check still applies, *output written once* included. The
    code generator and the interpreter ignore it.

    `below` (one entry per dimension: an exclusive upper limit, or None for the whole extent) says which part: the
    verifier then checks that every element below the limits is written. A limit is an expression of the sizes and
    of integer tensor data read at indices of the sizes: a grouped GEMM writes the rows before the last expert's end,
    ``below=(offs[E - 1], None)``."""
    st = CURRENT.get()
    loc = caller_loc()
    if st is None:
        raise DSLError("DSL_OUTSIDE_KERNEL", "T.writes_part can only be used inside an @argus.kernel function", loc=loc)
    if not isinstance(tensor, GlobalTensor) or tensor.buffer.space != Space.GLOBAL:
        raise DSLError("DSL_ASSUME", f"T.writes_part takes a tensor parameter of the kernel, got {tensor!r}", loc=loc)
    if not isinstance(why, str) or not why.strip():
        raise DSLError(
            "DSL_ASSUME",
            f"T.writes_part({tensor.buffer.name}) needs the reason: which kernel writes the rest",
            actual=repr(why),
            loc=loc,
        )
    if any(p.tensor is tensor.buffer for p in st.partial_outputs):
        raise DSLError("DSL_ASSUME", f"T.writes_part({tensor.buffer.name}) is declared twice", loc=loc)
    limits = None
    if below is not None:
        name = tensor.buffer.name
        if not isinstance(below, tuple) or len(below) != tensor.buffer.rank:
            raise DSLError(
                "DSL_ASSUME",
                f"T.writes_part({name}, below=...) takes one limit (or None) per dimension of {name}",
                actual=repr(below),
                loc=loc,
            )
        limits = tuple(_part_limit(name, b, loc) for b in below)
    st.partial_outputs.append(PartialOutput(tensor.buffer, why.strip(), loc=loc, below=limits))


def partial_sums(tensor: Any, axis: int, why: str) -> None:
    """``T.partial_sums(W, 0, "gemm_split_reduce adds the slices")``: declare that the slices of the output `tensor`
    along `axis` are terms of one sum that a later kernel adds (or merges: split attention's combine): each block of a
    split writes its share of a contraction into its own slice. The verifier then proves that no element of a
    matrix-multiply operand enters the accumulations stored into two slices at the same other coordinates
    (*contraction accumulated once across the slices*: overlapping splits count a K-block twice), as it proves it
    within one accumulation. The code generator and the interpreter ignore it."""
    st = CURRENT.get()
    loc = caller_loc()
    if st is None:
        raise DSLError(
            "DSL_OUTSIDE_KERNEL", "T.partial_sums can only be used inside an @argus.kernel function", loc=loc
        )
    if not isinstance(tensor, GlobalTensor) or tensor.buffer.space != Space.GLOBAL:
        raise DSLError("DSL_ASSUME", f"T.partial_sums takes a tensor parameter of the kernel, got {tensor!r}", loc=loc)
    name = tensor.buffer.name
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < tensor.buffer.rank:
        raise DSLError(
            "DSL_ASSUME",
            f"T.partial_sums({name}, axis): the axis along which the slices are summed, a dimension of {name}",
            requirement=f"an int in 0 .. {tensor.buffer.rank - 1}",
            actual=repr(axis),
            loc=loc,
        )
    if not isinstance(why, str) or not why.strip():
        raise DSLError(
            "DSL_ASSUME",
            f"T.partial_sums({name}) needs the reason: which kernel adds the slices",
            actual=repr(why),
            loc=loc,
        )
    if any(p.tensor is tensor.buffer for p in st.partial_sums):
        raise DSLError("DSL_ASSUME", f"T.partial_sums({name}) is declared twice", loc=loc)
    st.partial_sums.append(PartialSums(tensor.buffer, axis, why.strip(), loc=loc))


def _part_limit(name: str, limit: Any, loc: Any) -> Any:
    """One limit of `T.writes_part`'s `below`: None, an int, or an expression of the sizes and of data read at
    indices of the sizes."""
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool)):
        return limit
    reads = elements(limit) if isinstance(limit, Expr) else []
    bad = (
        isinstance(limit, bool) or not isinstance(limit, Expr) or any(v.kind != VarKind.SHAPE for v in free_vars(limit))
    )
    bad = bad or any(v.kind != VarKind.SHAPE for r in reads for i in r.index for v in free_vars(as_expr(i)))
    if bad:
        raise DSLError(
            "DSL_ASSUME",
            f"T.writes_part({name}, below=...): a limit must be an int, None, or an expression of the sizes and of "
            "tensor data read at indices of the sizes",
            actual=repr(limit),
            loc=loc,
        )
    return limit


def _parse_assumption(text: str, names: dict[str, Var], loc: Any) -> Expr:
    """An assumption written as Python source over the shape symbols, as an IR expression."""

    def fail(why: str) -> DSLError:
        return DSLError("DSL_ASSUME", f"T.assume({text!r}): {why}", loc=loc)

    arith = {ast.Add: BinaryOp.ADD, ast.Sub: BinaryOp.SUB, ast.Mult: BinaryOp.MUL, ast.FloorDiv: BinaryOp.FLOORDIV}
    arith[ast.Mod] = BinaryOp.MOD
    compare = {ast.Lt: (BinaryOp.LT, False), ast.LtE: (BinaryOp.LE, False), ast.Eq: (BinaryOp.EQ, False)}
    compare.update({ast.NotEq: (BinaryOp.NE, False), ast.Gt: (BinaryOp.LT, True), ast.GtE: (BinaryOp.LE, True)})

    def conv(node: ast.AST) -> Expr:
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise fail(f"{node.id!r} is not a shape symbol of this kernel ({', '.join(sorted(names))})")
            return names[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return as_expr(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in arith:
            return binary(arith[type(node.op)], conv(node.left), conv(node.right))
        if isinstance(node, ast.Compare):
            out: Expr | None = None
            left = conv(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                if type(op) not in compare:
                    raise fail(f"the comparison {type(op).__name__} is not supported")
                right = conv(right_node)
                kind, swap = compare[type(op)]
                term = binary(kind, right, left) if swap else binary(kind, left, right)
                out = term if out is None else binary(BinaryOp.AND, out, term)
                left = right
            assert out is not None
            return out
        if isinstance(node, ast.BoolOp):
            kind = BinaryOp.AND if isinstance(node.op, ast.And) else BinaryOp.OR
            out = conv(node.values[0])
            for v in node.values[1:]:
                out = binary(kind, out, conv(v))
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return binary(BinaryOp.EQ, conv(node.operand), as_expr(False))
        raise fail(f"{ast.dump(node)[:60]} is not supported (shape symbols, ints, + - * // %, comparisons, and/or/not)")

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise fail(f"not a Python expression ({err.msg})") from None
    return conv(tree.body)
