"""The DSL users write (`import argus.lang as T`) and the tracer that turns it into IR.

Tracing runs the decorated Python function once with proxy objects. Python control flow runs at
trace time; `T.serial`, `T.pipeline`, `T.if_` and `T.role` build IR control flow. Every `T.*`
call records the user's line (`caller_loc`) on the statement it emits, and every error is a
`DSLError` that points there.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from argus.atoms import MmaAtom, mma_sync_m16n8k16, wgmma
from argus.atoms import get_atom as get_atom_by_name
from argus.atoms.common import (
    SHARED_MEMORY_BUDGET,  # Hopper's shared memory per block (re-exported by the DSL)
    SMS,
    shared_budget,
)
from argus.atoms.smem import SharedCarve
from argus.atoms.swizzle import hopper_swizzle, swizzle_width
from argus.atoms.target import DEFAULT_TARGET
from argus.diagnostics import ArgusError
from argus.ir import types as irtypes
from argus.ir.expr import Const, Expr, Var, VarKind, as_expr, cdiv
from argus.ir.nodes import (
    FLOAT_MAP_OPS,
    INTEGER_MAP_OPS,
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
    Policies,
    Reduce,
    ReduceOp,
    Role,
    Space,
    Stmt,
    TileOrder,
    TileRef,
    map_compute_dtype,
    walk,
    whole,
)
from argus.ir.types import DType
from argus.lang.errors import DSLError, caller_loc
from argus.lang.fragments import blocked_tv, check_mma_tiling, mma_tv
from argus.layout import ComposedLayout, Layout
from argus.layout.int_tuple import suffix_product

bf16, f16, f32, i32, u32, boolean = (
    irtypes.bf16,
    irtypes.f16,
    irtypes.f32,
    irtypes.i32,
    irtypes.u32,
    irtypes.boolean,
)


# --- annotations --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorSpec:
    """The annotation ``T.Tensor[("M", "K"), T.bf16]``: a global tensor parameter, row-major. The dtype may
    name a trace-time parameter instead (``T.Tensor[("M", "N"), "OUT"]`` with ``OUT: str = "f32"``): the tensor
    then has the dtype that parameter names when the kernel is traced.

    The shape may be a function of trace-time parameters instead of a tuple: its argument names are parameters
    of the kernel, and it returns the shape tuple, e.g. ``T.Tensor[lambda B_MAJOR: ("N", "K") if B_MAJOR == "K"
    else ("K", "N"), "IN"]`` for an operand whose orientation a parameter chooses."""

    shape: tuple[str | int, ...] | Callable[..., tuple[str | int, ...]]
    dtype: DType | str

    def resolve_dtype(self, values: dict[str, Any]) -> DType:
        """The dtype, looking a parameter's value up in `values`; `irtypes.DTypeError` if it names none."""
        if isinstance(self.dtype, DType):
            return self.dtype
        return irtypes.dtype_from_name(values[self.dtype])

    @property
    def shape_params(self) -> tuple[str, ...]:
        """The trace-time parameters the shape depends on (none for a tuple)."""
        if not callable(self.shape):
            return ()
        return tuple(inspect.signature(self.shape).parameters)

    def resolve_shape(self, values: dict[str, Any]) -> tuple[str | int, ...]:
        """The shape tuple for the parameter `values` (a tuple shape as it is). Raises `ValueError` when a shape
        function returns something other than a tuple of dimension names and positive ints."""
        if not callable(self.shape):
            return self.shape
        shape = self.shape(**{name: values[name] for name in self.shape_params})
        shape = (shape,) if isinstance(shape, (str, int)) else shape
        if not isinstance(shape, (tuple, list)) or not all(
            (isinstance(d, str) and d.isidentifier()) or (isinstance(d, int) and d >= 1) for d in shape
        ):
            raise ValueError(f"a shape is a tuple of dimension names and positive ints, got {shape!r}")
        return tuple(shape)


class Tensor:
    """``T.Tensor[shape, dtype]``: annotate a kernel parameter as a global tensor."""

    def __class_getitem__(cls, item: Any) -> TensorSpec:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError('write T.Tensor[("M", "K"), T.bf16]: a shape tuple and a dtype')
        shape, dtype = item
        if isinstance(shape, (str, int)):
            shape = (shape,)
        elif not callable(shape):
            shape = tuple(shape)
        if not isinstance(dtype, DType):
            try:
                dtype = irtypes.dtype_from_name(str(dtype))
            except irtypes.DTypeError:
                if not (isinstance(dtype, str) and dtype.isidentifier()):
                    raise
                # not a dtype name: a trace-time parameter naming the dtype (checked by @argus.kernel)
        return TensorSpec(shape, dtype)


# --- trace state -----------------------------------------------------------------------------------------


class _Trace:
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


_TRACE: contextvars.ContextVar[_Trace | None] = contextvars.ContextVar("argus_trace", default=None)


def _state(what: str) -> _Trace:
    st = _TRACE.get()
    if st is None:
        raise DSLError(
            "DSL_OUTSIDE_KERNEL",
            f"{what} can only be used inside an @argus.kernel function while it is traced",
            "call it from the body of a kernel",
        )
    if not st.in_grid and what not in ("T.grid",):
        raise DSLError("DSL_OUTSIDE_GRID", f"{what} must be inside `with T.grid(...)`", "open the grid first")
    return st


# --- proxies -----------------------------------------------------------------------------------------------


class Tile:
    """A window of a buffer as the DSL sees it (global tile, shared stage, or a fragment)."""

    def __init__(self, ref: TileRef) -> None:
        self.ref = ref

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ref.shape

    @property
    def dtype(self) -> DType:
        return self.ref.dtype

    @property
    def buffer(self) -> Buffer:
        return self.ref.buffer

    def __repr__(self) -> str:
        from argus.ir.printer import format_ref

        return f"<{self.ref.space.value} {format_ref(self.ref)} {self.dtype.name}{list(self.shape)}>"

    @property
    def T(self) -> Tile:  # noqa: N802 - the transpose, as numpy spells it
        """The transposed view of a 2-D shared-memory or global tile (no data moves)."""
        r = self.ref
        if len(r.shape) != 2 or r.space == Space.FRAGMENT:
            raise DSLError("DSL_TRANSPOSE", "only 2-D shared or global tiles have a transposed view", actual=r.shape)
        perm = (1, 0) if r.perm is None else (r.perm[1], r.perm[0])
        return Tile(TileRef(r.buffer, r.origin, r.extent, r.dropped, layout=r.layout, perm=perm))

    def window(self, origin: Any, shape: Any) -> Tile:
        """The sub-window of this shared-memory tile at static element `origin` (one per tile dimension) of
        static `shape`, e.g. ``sB[s].window((0, 64 * j), (BK, 64))``: one TMA box of a tile wider than the
        swizzle span. It must lie inside the tile; no data moves."""
        r = self.ref
        origin = tuple(origin) if isinstance(origin, (tuple, list)) else (origin,)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if r.space != Space.SHARED or r.perm is not None:
            raise DSLError(
                "DSL_WINDOW",
                "sub-windows are taken of shared-memory tiles that are not transposed views",
                "take the window first, then the transpose (.T)",
                actual=f"a {r.space.value} tile" + (" (transposed)" if r.perm is not None else ""),
            )
        ok = len(origin) == len(shape) == len(r.shape) and all(
            isinstance(o, int) and isinstance(e, int) and o >= 0 and e >= 1 and o + e <= full
            for o, e, full in zip(origin, shape, r.shape, strict=False)
        )
        if not ok:
            raise DSLError(
                "DSL_WINDOW",
                f"a window of a {list(r.shape)} tile",
                requirement=f"{len(r.shape)} static origins and extents (Python ints) with origin + extent inside "
                "the tile",
                actual=f"origin {origin}, shape {shape}",
            )
        new_origin = list(r.origin)
        new_extent = list(r.extent)
        for i, d in enumerate(r.kept):
            base = r.origin[d]
            if isinstance(base, int):
                new_origin[d] = base + origin[i]
            else:
                new_origin[d] = as_expr(base) + origin[i] if origin[i] else base
            new_extent[d] = shape[i]
        return Tile(TileRef(r.buffer, _simplify(tuple(new_origin)), tuple(new_extent), r.dropped, layout=r.layout))


class GlobalTensor:
    """A kernel's global tensor parameter (shape may be symbolic)."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer

    @property
    def shape(self) -> tuple[Expr | int, ...]:
        return self.buffer.shape

    @property
    def dtype(self) -> DType:
        return self.buffer.dtype

    def tile(self, index: Any, shape: Any) -> Tile:
        """The tile number `index` (one entry per dimension) of tiles of `shape`: the window
        starting at ``index[d] * shape[d]``. Parts past the tensor's end are masked. A ``None``
        extent fixes that dimension to element ``index[d]`` and drops it from the tile's shape
        (``Q.tile((bh, bm, 0), (None, BM, D))`` is a (BM, D) tile of head `bh`)."""
        index = index if isinstance(index, tuple) else (index,)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if len(index) != self.buffer.rank or len(shape) != self.buffer.rank:
            raise DSLError(
                "DSL_RANK_MISMATCH",
                f"{self.buffer.name}.tile: {self.buffer.name} has {self.buffer.rank} dimensions",
                requirement=f"{self.buffer.rank} tile indices and a {self.buffer.rank}-dimensional tile shape",
                actual=f"index {index}, shape {shape}",
            )
        for s in shape:
            if s is not None and (not isinstance(s, int) or s < 1):
                raise DSLError("DSL_TILE_SHAPE", f"tile extents must be positive Python ints or None, got {shape}")
        origin = tuple(as_expr(i) if s is None else as_expr(i) * s for i, s in zip(index, shape, strict=True))
        dropped = tuple(d for d, s in enumerate(shape) if s is None)
        extent = tuple(1 if s is None else s for s in shape)
        return Tile(TileRef(self.buffer, _simplify(origin), extent, dropped=dropped))

    def window(self, origin: Any, shape: Any) -> Tile:
        """The window at element `origin` (one per dimension) of `shape`."""
        origin = origin if isinstance(origin, tuple) else (origin,)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        return Tile(TileRef(self.buffer, _simplify(tuple(as_expr(o) for o in origin)), shape))


def _flat_shape(layout: Any) -> tuple:
    shape = layout.shape
    return shape if isinstance(shape, tuple) else (shape,)


def _simplify(origin: tuple) -> tuple:
    return tuple(o.value if isinstance(o, Const) and isinstance(o.value, int) else o for o in origin)


class Shared(Tile):
    """A shared-memory buffer; ``sA[s]`` is stage `s` of a multi-stage buffer."""

    def view(self, layout: Layout | ComposedLayout) -> Shared:
        """Expert escape hatch: the same memory seen through an explicit `layout` (coordinate ->
        element offset) instead of the buffer's own. Its shape must be the buffer's."""
        from argus.layout import size

        if tuple(_flat_shape(layout)) != tuple(self.ref.buffer.static_shape) and size(layout) != _elements(self.shape):
            raise DSLError("DSL_VIEW_LAYOUT", f"view layout {layout} does not cover the buffer's shape {self.shape}")
        r = self.ref
        return Shared(TileRef(r.buffer, r.origin, r.extent, r.dropped, layout=layout))

    def __getitem__(self, stage: Any) -> Tile:
        ref = self.ref
        if len(ref.extent) < 2:
            raise DSLError("DSL_STAGE_INDEX", f"{ref.buffer.name} has one dimension; it has no stages to index")
        origin = (as_expr(stage),) + tuple(0 for _ in ref.extent[1:])
        return Tile(
            TileRef(ref.buffer, _simplify(origin), (1,) + tuple(ref.extent[1:]), dropped=(0,), layout=ref.layout)
        )


class Fragment(Tile):
    """A register tile. Arithmetic on fragments emits elementwise operations into a new fragment."""

    def _binary(self, op: MapOp, other: Any, reverse: bool = False) -> Fragment:
        operand = _operand(other, self, "the other operand")
        srcs = (operand, self.ref) if reverse else (self.ref, operand)
        return _map(op, srcs, self)

    def __add__(self, o: Any) -> Fragment:
        return self._binary(MapOp.ADD, o)

    def __radd__(self, o: Any) -> Fragment:
        return self._binary(MapOp.ADD, o, True)

    def __sub__(self, o: Any) -> Fragment:
        return self._binary(MapOp.SUB, o)

    def __rsub__(self, o: Any) -> Fragment:
        return self._binary(MapOp.SUB, o, True)

    def __mul__(self, o: Any) -> Fragment:
        return self._binary(MapOp.MUL, o)

    def __rmul__(self, o: Any) -> Fragment:
        return self._binary(MapOp.MUL, o, True)

    def __truediv__(self, o: Any) -> Fragment:
        return self._binary(MapOp.DIV, o)

    def __rtruediv__(self, o: Any) -> Fragment:
        return self._binary(MapOp.DIV, o, True)

    def __floordiv__(self, o: Any) -> Fragment:
        """Integer division rounding toward negative infinity, as Python's ``//`` (integer fragments)."""
        return self._binary(MapOp.FLOORDIV, o)

    def __rfloordiv__(self, o: Any) -> Fragment:
        return self._binary(MapOp.FLOORDIV, o, True)

    def __mod__(self, o: Any) -> Fragment:
        """Python's ``%`` on integer fragments: the result has the divisor's sign. Floats: use `T.fmod`."""
        return self._binary(MapOp.MOD, o)

    def __rmod__(self, o: Any) -> Fragment:
        return self._binary(MapOp.MOD, o, True)

    def __pow__(self, o: Any) -> Fragment:
        return self._binary(MapOp.POW, o)

    def __rpow__(self, o: Any) -> Fragment:
        return self._binary(MapOp.POW, o, True)

    def __and__(self, o: Any) -> Fragment:
        return self._binary(MapOp.AND, o)

    def __rand__(self, o: Any) -> Fragment:
        return self._binary(MapOp.AND, o, True)

    def __or__(self, o: Any) -> Fragment:
        return self._binary(MapOp.OR, o)

    def __ror__(self, o: Any) -> Fragment:
        return self._binary(MapOp.OR, o, True)

    def __xor__(self, o: Any) -> Fragment:
        return self._binary(MapOp.XOR, o)

    def __rxor__(self, o: Any) -> Fragment:
        return self._binary(MapOp.XOR, o, True)

    def __lshift__(self, o: Any) -> Fragment:
        return self._binary(MapOp.SHL, o)

    def __rlshift__(self, o: Any) -> Fragment:
        return self._binary(MapOp.SHL, o, True)

    def __rshift__(self, o: Any) -> Fragment:
        return self._binary(MapOp.SHR, o)

    def __rrshift__(self, o: Any) -> Fragment:
        return self._binary(MapOp.SHR, o, True)

    def __invert__(self) -> Fragment:
        return _map(MapOp.INVERT, (self.ref,), self)

    def __neg__(self) -> Fragment:
        return _map(MapOp.NEG, (self.ref,), self)

    def __abs__(self) -> Fragment:
        return _map(MapOp.ABS, (self.ref,), self)

    # Comparisons give 1 where true and 0 where false, in the left operand's dtype (for `T.where`); ``==`` and
    # ``!=`` keep Python's identity meaning on fragments: compare values with `T.eq` and `T.ne`.
    def __lt__(self, o: Any) -> Fragment:
        """Elementwise ``self < o`` as 1.0 / 0.0 (for `T.where`)."""
        return self._binary(MapOp.LT, o)

    def __le__(self, o: Any) -> Fragment:
        return self._binary(MapOp.LE, o)

    def __gt__(self, o: Any) -> Fragment:
        return self._binary(MapOp.LT, o, True)  # o < self

    def __ge__(self, o: Any) -> Fragment:
        return self._binary(MapOp.LE, o, True)  # o <= self

    def __getitem__(self, key: Any) -> _BroadcastView:
        """``m[:, None]``: use an ``(R,)`` fragment as ``(R, C)``, repeated along the new axis."""
        key = key if isinstance(key, tuple) else (key,)
        axes = tuple(i for i, k in enumerate(key) if k is None)
        kept = [k for k in key if k is not None]
        if not axes or len(kept) != len(self.shape) or any(k != slice(None) for k in kept):
            raise DSLError(
                "DSL_BAD_INDEX",
                "a fragment can only be indexed to broadcast it, as in m[:, None]",
                "index its buffer through T.copy, or use None to add a broadcast axis",
            )
        return _BroadcastView(self, axes)


class _BroadcastView:
    def __init__(self, fragment: Fragment, axes: tuple[int, ...]) -> None:
        self.fragment = fragment
        self.axes = axes


def _operand(x: Any, like: Fragment, what: str) -> Any:
    if isinstance(x, Fragment):
        return x.ref
    if isinstance(x, _BroadcastView):
        return Broadcast(x.fragment.ref, x.axes)
    if isinstance(x, (int, float, Expr)):
        return as_expr(x)
    if isinstance(x, Tile):
        raise DSLError(
            "DSL_NOT_A_FRAGMENT",
            f"{what} is a {x.ref.space.value} tile; elementwise math works on fragments (registers)",
            "T.copy it into a fragment first",
        )
    raise DSLError("DSL_BAD_OPERAND", f"{what} must be a fragment or a number, got {type(x).__name__}")


# --- kernel structure -------------------------------------------------------------------------------------


@contextlib.contextmanager
def grid(*extents: Any, threads: int = 128, blocks_per_sm: int = 1) -> Iterator[tuple[Var, ...]]:
    """``with T.grid(nx[, ny[, nz]], threads=128) as (bx, ...)``: launch one block per grid point.

    `blocks_per_sm`: how many blocks are meant to be resident on an SM together (so that one block's epilogue and
    pipeline fill overlap another's work). It sets ``__launch_bounds__(threads, blocks_per_sm)``, and the budgets
    follow: shared memory per block (`argus.atoms.common.shared_budget`) and, with warp roles, the registers their
    ``setmaxnreg`` budgets may hold together (`argus.atoms.common.register_pool`)."""
    st = _TRACE.get()
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
    st.blocks_per_sm = blocks_per_sm
    names = ("bx", "by", "bz")
    st.block_vars = tuple(Var(names[i], VarKind.BLOCK) for i in range(len(extents)))
    st.grid = tuple(e if isinstance(e, int) else as_expr(e) for e in extents)
    st.threads = threads
    st.in_grid = True
    try:
        yield st.block_vars
    finally:
        st.in_grid = False


def thread_id() -> Var:
    """The thread's index in its block (``threadIdx.x``)."""
    return _state("T.thread_id").thread_var


def warp_id() -> Expr:
    """The warp's index in its block (``threadIdx.x / 32``)."""
    return _state("T.warp_id").thread_var // 32


def lane_id() -> Expr:
    """The thread's lane in its warp (``threadIdx.x % 32``)."""
    return _state("T.lane_id").thread_var % 32


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
    from argus.ir.expr import maximum, minimum

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
        st = _state("T.persistent_grid")
        st.persistent = (order, group)
        total = as_expr(tiles[0]) * tiles[1]
        for it in serial(cdiv(total, blocks)):
            t = bx + it * blocks
            with if_(t < total):
                yield tile_order(t, tiles, order, group)


# --- assumptions --------------------------------------------------------------------------------------------


def assume(condition: Any) -> None:
    """``T.assume(T.eq(K % 8, 0))`` or ``T.assume("K % 8 == 0")``: declare a condition on the problem sizes
    (shape symbols) that every launch satisfies. The verifier proves the kernel for the sizes that satisfy
    the kernel's assumptions only, and the runtime rejects a launch that violates one (``RUNTIME_ASSUMPTION``).
    A string may use the shape symbols, integers, ``+ - * // %``, comparisons (``==`` included), ``and``,
    ``or`` and ``not``. (Python's ``==`` between expressions compares identity, so ``T.assume(K % 8 == 0)``
    is rejected: write it as a string or with `T.eq`.)"""
    st = _TRACE.get()
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
    from argus.ir.expr import COMPARISONS, LOGICAL, BinOp, free_vars

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


def _parse_assumption(text: str, names: dict[str, Var], loc: Any) -> Expr:
    """An assumption written as Python source over the shape symbols, as an IR expression."""
    import ast

    from argus.ir.expr import BinaryOp, binary

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


# --- allocation --------------------------------------------------------------------------------------------


def alloc_shared(
    shape: Any,
    dtype: DType,
    swizzle: int = 0,
    layout: Layout | ComposedLayout | None = None,
    panels: bool = False,
) -> Shared:
    """A shared-memory buffer, row-major (last dimension contiguous) unless `layout` is given,
    with Hopper's 32/64/128-byte `swizzle` applied to its offsets.

    ``panels=True`` (with a swizzle) cuts the last dimension into panels one swizzle width wide, each stored
    whole before the next (`argus.atoms.smem.panel_layout`): the layout of a tile wider than the swizzle span
    loaded by one TMA box per panel (``sB[s].window((0, 64 * j), (BK, 64))``) and read by ``wgmma`` as an
    MN-major operand."""
    st = _state("T.alloc_shared")
    loc = caller_loc()
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(s, int) and s >= 1 for s in shape):
        raise DSLError("DSL_TILE_SHAPE", f"shared buffers need a static shape of positive ints, got {shape}", loc=loc)
    if panels:
        from argus.atoms.errors import AtomError
        from argus.atoms.smem import panel_layout

        if layout is not None:
            raise DSLError("DSL_TILE_SHAPE", "give either layout= or panels=True, not both", loc=loc)
        try:
            layout = panel_layout(shape, dtype, swizzle)
        except AtomError as err:
            raise DSLError(
                "DSL_TILE_SHAPE",
                f"panels=True: {err.message}",
                err.hint,
                requirement=err.requirement,
                actual=err.actual,
                loc=loc,
            ) from None
    if layout is None:
        base = Layout(shape, suffix_product(shape))
        layout = base if swizzle == 0 else ComposedLayout(hopper_swizzle(swizzle, dtype.bits), 0, base)
    buffer = Buffer(st.fresh("s"), Space.SHARED, dtype, shape, layout=layout, loc=loc)
    nbytes = SharedCarve.footprint(buffer)[0]
    budget = shared_budget(st.blocks_per_sm)
    if st.carve.would_need(buffer) > budget:
        per = "" if st.blocks_per_sm == 1 else f" with {st.blocks_per_sm} blocks per SM"
        raise DSLError(
            "DSL_SMEM_BUDGET",
            f"shared memory over budget: this buffer needs {nbytes} bytes and {st.carve.total} are already in use "
            "(buffers start aligned: 1024 bytes for a swizzled one, 128 otherwise)",
            "use fewer stages or a smaller tile" + (", or fewer blocks per SM" if st.blocks_per_sm > 1 else ""),
            requirement=f"at most {budget} bytes per block on Hopper{per}",
            actual=f"{st.carve.would_need(buffer)} bytes",
            loc=loc,
        )
    st.carve.place(buffer)
    st.emit(Alloc(buffer, loc=loc))
    return Shared(whole(buffer))


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def alloc_fragment(
    shape: Any,
    dtype: DType,
    mma: MmaAtom | None = None,
    operand: str = "C",
    groups: tuple[int, int] | None = None,
    vector_bytes: int = 16,
    name: str = "r",
    tv: Layout | None = None,
) -> Fragment:
    """A register tile spread over the block's threads.

    With `mma`, the layout is the atom's `operand` layout (``"A"``, ``"B"`` or ``"C"``) tiled over
    `groups` = (thread groups along rows, along columns), each of the atom's thread count (default:
    all groups along rows). Without, each thread holds runs of `vector_bytes` of the last dimension.
    Expert escape hatch: `tv` gives the thread–value layout explicitly (with `mma`, the fragment is
    still read by the atom's own register convention, so a `tv` that differs gives other numbers).
    """
    st = _state("T.alloc_fragment")
    loc = caller_loc()
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(s, int) and s >= 1 for s in shape):
        raise DSLError("DSL_TILE_SHAPE", f"fragments need a static shape of positive ints, got {shape}", loc=loc)
    threads = st.role[1] if st.role else (st.threads or 0)
    atom_name = None
    if mma is not None:
        if len(shape) != 2:
            raise DSLError("DSL_TILE_SHAPE", f"an MMA fragment is 2-D, got shape {shape}", loc=loc)
        if operand not in ("A", "B", "C"):
            raise DSLError("DSL_BAD_OPERAND", f"operand must be 'A', 'B' or 'C', got {operand!r}", loc=loc)
        groups = groups or (threads // mma.thread_count, 1)
        if groups[0] * groups[1] * mma.thread_count != threads:
            raise DSLError(
                "DSL_MMA_GROUPS",
                f"{mma.name}: {groups[0]}x{groups[1]} groups of {mma.thread_count} threads "
                f"do not make the block's {threads}",
                requirement=f"groups whose product is {threads // mma.thread_count}",
                actual=groups,
                loc=loc,
            )
        why = check_mma_tiling(mma, operand, (shape[0], shape[1]), groups)
        if why:
            raise DSLError(
                "DSL_MMA_TILE", f"{mma.name}: {why}", "choose a tile that is a multiple of the atom", loc=loc
            )
        tv = tv if tv is not None else mma_tv(mma, operand, (shape[0], shape[1]), groups)
        atom_name = mma.name
    elif tv is not None:
        pass
    else:
        tv = blocked_tv(shape, threads, max(1, vector_bytes * 8 // dtype.bits))
        if tv is None:
            raise DSLError(
                "DSL_FRAGMENT_LAYOUT",
                f"a {shape} tile does not spread evenly over {threads} threads",
                "choose a tile whose element count is a multiple of the thread count times the vector width",
                loc=loc,
            )
    buffer = Buffer(
        st.fresh(name),
        Space.FRAGMENT,
        dtype,
        shape,
        tv=tv,
        threads=threads,
        atom=atom_name,
        groups=groups if mma is not None else None,
        operand=operand if mma is not None else None,
        loc=loc,
    )
    st.emit(Alloc(buffer, loc=loc))
    return Fragment(whole(buffer))


def alloc_reduced(x: Fragment, axis: int, dtype: DType | None = None) -> Fragment:
    """A fragment with the shape and thread–value layout of reducing 2-D fragment `x` along
    `axis`: ``(R,)`` for ``axis=1``, ``(C,)`` for ``axis=0``. Use it for per-row or per-column
    values (a bias, a scale) that combine with `x` through broadcasting."""
    from argus.lang.fragments import reduced_tv

    loc = caller_loc()
    if not isinstance(x, Fragment) or len(x.shape) != 2 or axis not in (0, 1):
        raise DSLError("DSL_REDUCE_AXIS", "T.alloc_reduced takes a 2-D fragment and axis 0 or 1", loc=loc)
    result = reduced_tv(x.buffer.tv, x.buffer.static_shape, axis, x.buffer.threads, shuffles=False)
    if isinstance(result, str):
        raise DSLError("DSL_REDUCE_LAYOUT", f"T.alloc_reduced: {result}", loc=loc)
    shape = (x.shape[0],) if axis == 1 else (x.shape[1],)
    return _like(x, dtype=dtype, shape=shape, tv=result[0])


def _like(f: Fragment, dtype: DType | None = None, shape: tuple[int, ...] | None = None, tv: Layout | None = None):
    st = _state("fragment math")
    b = f.buffer
    buffer = Buffer(
        st.fresh("r"),
        Space.FRAGMENT,
        dtype or b.dtype,
        shape or b.shape,
        tv=tv or b.tv,
        threads=b.threads,
        atom=b.atom,
        groups=b.groups,
        operand=b.operand,
        loc=caller_loc(),
    )
    st.emit(Alloc(buffer, loc=buffer.loc))
    return Fragment(whole(buffer))


# --- operations ---------------------------------------------------------------------------------------------


def _check_same_shape(what: str, a: tuple, b: tuple, loc: Any) -> None:
    if tuple(a) != tuple(b):
        raise DSLError(
            "DSL_SHAPE_MISMATCH",
            f"{what}: shapes differ",
            "make both tiles the same shape",
            requirement="the same shape on both sides",
            actual=f"{tuple(a)} and {tuple(b)}",
            loc=loc,
        )


_COPY_ATOMS = (
    "auto",
    "vector",
    "cp.async",
    "tma",
    "tma.store",
    "ldmatrix",
    "ldmatrix.x4",
    "ldmatrix.x4.trans",
    "stmatrix",
)


def copy(src: Tile, dst: Tile, atom: str = "auto", pad: float = 0.0, mbarrier: Any = None, staging: Any = None) -> None:
    """Copy tile `src` into tile `dst` (same shape; the dtype is converted if they differ).

    `atom`: ``"auto"`` (the lowering chooses), ``"vector"`` (16-byte loads/stores), ``"cp.async"``
    (global -> shared, asynchronous: wait with `T.async_wait`), ``"tma"``, ``"ldmatrix"``
    (shared -> MMA operand fragment; ``.trans`` chosen from the layouts), or forced variants
    ``"ldmatrix.x4"`` / ``"ldmatrix.x4.trans"`` (lane-level escape hatch), ``"stmatrix"``.
    Source elements outside a global tensor read as `pad` (use ``-inf`` before a maximum).
    A ``"tma"`` load completes on `mbarrier` (an element of `T.alloc_mbarrier`): its bytes count
    towards the barrier's current phase, and the data may only be read after waiting for that
    phase; out-of-bounds box elements read 0.

    ``"tma.store"`` stores a fragment (a ``wgmma`` accumulator: each warpgroup holds 64 whole rows) into a
    global tile through `staging`, ``T.alloc_shared((2, rows, 128 // itemsize), dst.dtype, swizzle=128)``: the
    tile goes out in chunks of 128 bytes of columns, each warpgroup writing its rows of a chunk into one of the two
    buffers and one of its threads issuing a TMA store of them; the threads go on while the store drains (before
    a buffer is rewritten, the store that read it last must have finished reading). Out-of-bounds rows and columns
    are not written. The staging buffer belongs to the copy (no other statement may use it), the stores complete
    before the block exits, and no other statement may touch the destination tensor (the stores are asynchronous).
    The destination's rows must be 16-byte aligned (``T.assume`` it).
    """
    st = _state("T.copy")
    loc = caller_loc()
    for name, t in (("source", src), ("destination", dst)):
        if not isinstance(t, Tile):
            raise DSLError(
                "DSL_BAD_OPERAND",
                f"T.copy: the {name} must be a tile (A.tile(...), a shared buffer or a fragment)",
                actual=type(t).__name__,
                loc=loc,
            )
    _check_same_shape("T.copy", src.shape, dst.shape, loc)
    if atom not in _COPY_ATOMS:
        raise DSLError(
            "DSL_UNKNOWN_ATOM",
            f"T.copy: unknown atom {atom!r}",
            requirement=f"one of {', '.join(_COPY_ATOMS)}",
            loc=loc,
        )
    s, d = src.ref.space, dst.ref.space
    spaces = {"cp.async": (Space.GLOBAL, Space.SHARED), "ldmatrix": (Space.SHARED, Space.FRAGMENT)}
    spaces["tma"] = (Space.GLOBAL, Space.SHARED)
    spaces["ldmatrix.x4"] = spaces["ldmatrix.x4.trans"] = spaces["ldmatrix"]
    spaces["stmatrix"] = (Space.FRAGMENT, Space.SHARED)
    spaces["tma.store"] = (Space.FRAGMENT, Space.GLOBAL)
    if atom in spaces and (s, d) != spaces[atom]:
        want = spaces[atom]
        raise DSLError(
            "DSL_ATOM_SPACES",
            f"T.copy: {atom} copies {want[0].value} memory into {want[1].value} memory",
            requirement=f"{want[0].value} -> {want[1].value}",
            actual=f"{s.value} -> {d.value}",
            loc=loc,
        )
    if s == Space.GLOBAL and d == Space.GLOBAL:
        raise DSLError("DSL_ATOM_SPACES", "T.copy from global to global memory is not supported", loc=loc)
    bar = None
    if atom == "tma":
        if not isinstance(mbarrier, _MbarrierRef):
            raise DSLError(
                "DSL_TMA_MBARRIER",
                "T.copy(..., atom='tma') needs mbarrier=<an element of T.alloc_mbarrier>",
                "the TMA unit signals completion on an mbarrier; wait on it before reading the data",
                loc=loc,
            )
        if pad != 0.0:
            raise DSLError("DSL_TMA_PAD", "TMA fills out-of-bounds elements with 0; pad must be 0", loc=loc)
        bar = mbarrier.ref
    elif mbarrier is not None:
        raise DSLError("DSL_TMA_MBARRIER", f"only TMA loads complete on an mbarrier, not atom={atom!r}", loc=loc)
    stage = None
    if atom == "tma.store":
        stage = _tma_store_staging(src, dst, staging, pad, loc)
    elif staging is not None:
        raise DSLError("DSL_TMA_STAGING", f"only atom='tma.store' takes a staging buffer, not atom={atom!r}", loc=loc)
    st.emit(Copy(src.ref, dst.ref, atom, mbarrier=bar, pad=float(pad), staging=stage, loc=loc))


def _tma_store_staging(src: Tile, dst: Tile, staging: Any, pad: float, loc: Any) -> TileRef:
    """The staging buffer of a ``tma.store`` copy, checked: (2, rows, 128 bytes of columns) of the destination's
    dtype, 128-byte swizzled, row-major."""
    dtype = dst.ref.buffer.dtype
    if not isinstance(staging, Shared) or not staging.ref.is_whole():
        raise DSLError(
            "DSL_TMA_STAGING",
            "T.copy(..., atom='tma.store') needs staging=<a whole T.alloc_shared buffer>",
            "the fragment goes to global memory through shared memory: "
            f"staging=T.alloc_shared((2, rows, 128 // {dtype.itemsize}), {dtype.name}, swizzle=128)",
            actual=type(staging).__name__,
            loc=loc,
        )
    if pad != 0.0:
        raise DSLError("DSL_TMA_PAD", "a TMA store has no padding; pad must be 0", loc=loc)
    if len(src.shape) != 2 or not all(isinstance(e, int) for e in src.shape):
        raise DSLError("DSL_TMA_STAGING", "atom='tma.store' stores a 2-d fragment", actual=str(src.shape), loc=loc)
    from argus.atoms.tma import store_chunk_columns

    rows, cols = src.shape
    width = store_chunk_columns(dtype)
    buf = staging.ref.buffer
    shape = (2, rows, width)
    base = Layout(shape, suffix_product(shape))
    want = ComposedLayout(hopper_swizzle(128, dtype.bits), 0, base)
    if buf.dtype != dtype or tuple(buf.static_shape) != shape or buf.layout != want:
        raise DSLError(
            "DSL_TMA_STAGING",
            f"the staging buffer of a tma.store of {rows}x{cols} {dtype.name} must be two 128-byte-swizzled "
            f"chunks of {rows} rows and {width} columns",
            requirement=f"T.alloc_shared({shape}, {dtype.name}, swizzle=128)",
            actual=f"{buf.dtype.name}{list(buf.static_shape)} layout {buf.layout}",
            loc=loc,
        )
    if cols % width:
        raise DSLError(
            "DSL_TMA_STAGING",
            f"a tma.store writes whole chunks of {width} columns; the tile has {cols}",
            requirement=f"tile columns % {width} == 0",
            loc=loc,
        )
    return staging.ref


def _check_tma_stores(kernel_name: str, body: tuple) -> None:
    """A ``tma.store``'s staging buffer and destination tensor are the tma.store copies' alone: the stores are
    asynchronous, so any other access to either could race with them."""
    stores = [s for s in walk(body) if isinstance(s, Copy) and s.atom == "tma.store"]
    if not stores:
        return
    owned = {s.staging.buffer: "staging buffer" for s in stores} | {s.dst.buffer: "destination" for s in stores}
    for s in walk(body):
        if isinstance(s, Copy) and s.atom == "tma.store":
            continue
        for f in dataclasses.fields(s):
            value = getattr(s, f.name)
            for ref in value if isinstance(value, tuple) else (value,):
                buffer = getattr(ref, "buffer", None)
                if isinstance(ref, TileRef) and buffer in owned:
                    raise DSLError(
                        "DSL_TMA_STAGING",
                        f"kernel {kernel_name}: {buffer.name} is the {owned[buffer]} of a tma.store, which is "
                        "asynchronous; no other statement may use it",
                        "give the statement its own buffer, or store with a synchronous copy",
                        loc=s.loc,
                    )


def fill(dst: Tile, value: Any) -> None:
    """Set every element of `dst` to `value`."""
    st = _state("T.fill")
    st.emit(Fill(dst.ref, as_expr(value), loc=caller_loc()))


def _check_owned(op: str, dst: Fragment, operand: Any, loc: Any) -> None:
    """Every element an elementwise op reads must be held by the thread that writes the result."""
    if isinstance(operand, Expr):
        return
    ref = operand.ref if isinstance(operand, Broadcast) else operand
    if ref.buffer.space != Space.FRAGMENT:
        raise DSLError("DSL_NOT_A_FRAGMENT", f"{op}: operands must be fragments", loc=loc)
    from argus.lang.fragments import colmajor_index, owners

    src_buf = ref.buffer
    src_shape = src_buf.static_shape
    dst_shape = dst.buffer.static_shape
    axes = operand.axes if isinstance(operand, Broadcast) else ()
    if isinstance(operand, Broadcast):
        expected = tuple(s for i, s in enumerate(dst_shape) if i not in axes)
        if expected != src_shape:
            raise DSLError(
                "DSL_SHAPE_MISMATCH",
                f"{op}: broadcasting {src_shape} along axes {axes} does not give {dst_shape}",
                actual=f"{src_shape} -> {dst_shape}",
                loc=loc,
            )
    elif src_shape != dst_shape:
        _check_same_shape(op, src_shape, dst_shape, loc)
    if src_buf.tv == dst.buffer.tv and not axes:
        return
    held = owners(src_buf.tv, src_buf.threads)
    dst_tv = dst.buffer.tv
    for t in range(dst.buffer.threads):
        for v in range(dst_tv[1].size()):
            idx = dst_tv(t, v)
            coord = _coord(idx, dst_shape)
            src_coord = tuple(c for i, c in enumerate(coord) if i not in axes)
            src_idx = colmajor_index(src_coord, src_shape)
            if not any(tt == t for tt, _ in held.get(src_idx, [])):
                raise DSLError(
                    "DSL_FRAGMENT_MISMATCH",
                    f"{op}: thread {t} computes element {coord} but does not hold element {src_coord} of "
                    f"{src_buf.name}, which has another thread-value layout",
                    "convert one operand through shared memory, or allocate both with the same layout",
                    requirement=f"the layout {dst_tv}",
                    actual=f"{src_buf.tv}",
                    loc=loc,
                )


def _coord(idx: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for s in shape:
        out.append(idx % s)
        idx //= s
    return tuple(out)


def _map(op: MapOp, srcs: tuple, like: Fragment, dtype: DType | None = None) -> Fragment:
    loc = caller_loc()
    _check_value_kinds(op, srcs, dtype or like.dtype, loc)
    for operand in srcs:
        _check_owned(f"fragment {op.value}", like, operand, loc)
    out = _like(like, dtype=dtype)
    _state("fragment math").emit(Map(op, out.ref, srcs, loc=loc))
    return out


#: How the user spells an operation that is an operator; the others are ``T.<op>``.
_SPELLING = {
    MapOp.DIV: "/",
    MapOp.POW: "T.pow (**)",
    MapOp.FLOORDIV: "//",
    MapOp.MOD: "%",
    MapOp.AND: "&",
    MapOp.OR: "|",
    MapOp.XOR: "^",
    MapOp.SHL: "<<",
    MapOp.SHR: ">>",
    MapOp.INVERT: "~",
}

_INTEGER_OP_FIX = {
    MapOp.MOD: "on floats Python's % (floored) and C's fmod differ: use T.fmod(a, b) for C's fmod (the sign of a), "
    "or T.cast the operands to T.i32",
    MapOp.FLOORDIV: "use T.floor(a / b) for floats, or T.cast the operands to T.i32",
}


def _check_value_kinds(op: MapOp, srcs: tuple, dtype: DType, loc: Any) -> None:
    """Integer operations need integer (i32/u32) values throughout; float math needs float values to compute on
    (`map_compute_dtype`: a float destination or operand)."""
    kinds = [dtype] + [(x.ref if isinstance(x, Broadcast) else x).dtype for x in srcs]
    spelling = _SPELLING.get(op, f"T.{op.value}")
    found = f"operands {', '.join(d.name for d in kinds[1:])}; result {dtype.name}"
    if op in INTEGER_MAP_OPS and not all(d.is_integer for d in kinds):
        raise DSLError(
            "DSL_INTEGER_OP",
            f"{spelling} works on integer fragments (i32, u32)",
            _INTEGER_OP_FIX.get(op, "T.cast the fragment to T.i32 or T.u32 first"),
            requirement="integer operands and an integer result",
            actual=found,
            loc=loc,
        )
    if op in FLOAT_MAP_OPS and not map_compute_dtype(dtype, srcs).is_float:
        fix = "use // for integer (floored) division" if op == MapOp.DIV else "T.cast the fragment to T.f32 first"
        raise DSLError(
            "DSL_FLOAT_OP",
            f"{spelling} works on float fragments; every value here is an integer",
            fix + (" (T.cast(x, T.f32) / y for true division)" if op == MapOp.DIV else ""),
            requirement="a float operand or result",
            actual=found,
            loc=loc,
        )


def _unary(op: MapOp, x: Fragment) -> Fragment:
    if not isinstance(x, Fragment):
        raise DSLError("DSL_NOT_A_FRAGMENT", f"T.{op.value} works on fragments, got {type(x).__name__}")
    return _map(op, (x.ref,), x)


def _binary(op: MapOp, a: Any, b: Any) -> Fragment:
    """``op(a, b)`` where `a` or `b` is a fragment (the other may be a number); the result is like that fragment."""
    if isinstance(a, Fragment):
        return a._binary(op, b)
    if isinstance(b, Fragment):
        return b._binary(op, a, reverse=True)
    raise DSLError(
        "DSL_NOT_A_FRAGMENT",
        f"T.{op.value} works on fragments, got {type(a).__name__} and {type(b).__name__}",
        "pass at least one fragment (scalars combine with Python arithmetic)",
    )


def exp2(x: Fragment) -> Fragment:
    return _unary(MapOp.EXP2, x)


def exp(x: Fragment) -> Fragment:
    return _unary(MapOp.EXP, x)


def rsqrt(x: Fragment) -> Fragment:
    return _unary(MapOp.RSQRT, x)


def sqrt(x: Fragment) -> Fragment:
    return _unary(MapOp.SQRT, x)


def rcp(x: Fragment) -> Fragment:
    """``1 / x``."""
    return _unary(MapOp.RCP, x)


def log(x: Fragment) -> Fragment:
    """The natural logarithm (``logf``)."""
    return _unary(MapOp.LOG, x)


def log2(x: Fragment) -> Fragment:
    return _unary(MapOp.LOG2, x)


def log1p(x: Fragment) -> Fragment:
    """``log(1 + x)``, accurate for small `x` (``log1pf``)."""
    return _unary(MapOp.LOG1P, x)


def expm1(x: Fragment) -> Fragment:
    """``exp(x) - 1``, accurate for small `x` (``expm1f``)."""
    return _unary(MapOp.EXPM1, x)


def tanh(x: Fragment) -> Fragment:
    return _unary(MapOp.TANH, x)


def erf(x: Fragment) -> Fragment:
    """The error function (``erff``; GELU is ``0.5 * x * (1 + T.erf(x * 0.7071067811865476))``)."""
    return _unary(MapOp.ERF, x)


def sigmoid(x: Fragment) -> Fragment:
    """``1 / (1 + exp(-x))``."""
    return _unary(MapOp.SIGMOID, x)


def sin(x: Fragment) -> Fragment:
    return _unary(MapOp.SIN, x)


def cos(x: Fragment) -> Fragment:
    return _unary(MapOp.COS, x)


def floor(x: Fragment) -> Fragment:
    """The largest integer value not above `x` (a float fragment; cast to get an integer one)."""
    return _unary(MapOp.FLOOR, x)


def ceil(x: Fragment) -> Fragment:
    """The smallest integer value not below `x` (a float fragment)."""
    return _unary(MapOp.CEIL, x)


def abs(x: Fragment) -> Fragment:  # shadows the builtin in this module, which does not use it
    """``|x|`` (also Python's ``abs(x)``); for i32, ``abs`` of the smallest value wraps to itself, as in C."""
    return _unary(MapOp.ABS, x)


def pow(a: Any, b: Any) -> Fragment:  # shadows the builtin in this module, which does not use it
    """``a ** b`` (``powf``; also ``a ** b`` on fragments): float values."""
    return _binary(MapOp.POW, a, b)


def fmod(a: Any, b: Any) -> Fragment:
    """C's ``fmod``: ``a - trunc(a / b) * b``, with the sign of `a` (``torch.fmod``); on integer fragments C's
    ``%``. Python's ``%`` (the sign of `b`) is ``a % b`` on integer fragments."""
    return _binary(MapOp.FMOD, a, b)


def _fragment_first(name: str, a: Any, b: Any) -> tuple[Fragment, Any]:
    """(fragment, other) for a commutative elementwise op given in either order (``T.maximum(0.0, x)``)."""
    if not isinstance(a, Fragment) and isinstance(b, Fragment):
        a, b = b, a
    if not isinstance(a, Fragment):
        raise DSLError(
            "DSL_NOT_A_FRAGMENT",
            f"T.{name} needs a fragment operand, got {type(a).__name__} and {type(b).__name__}",
            "for two scalars use Python's max and min",
        )
    return a, b


def maximum(a: Any, b: Any) -> Fragment:
    """Elementwise maximum of a fragment and a fragment or scalar, in either order."""
    x, y = _fragment_first("maximum", a, b)
    return x._binary(MapOp.MAX, y)


def minimum(a: Any, b: Any) -> Fragment:
    """Elementwise minimum of a fragment and a fragment or scalar, in either order."""
    x, y = _fragment_first("minimum", a, b)
    return x._binary(MapOp.MIN, y)


def eq(a: Any, b: Any) -> Any:
    """The runtime condition ``a == b`` (Python's ``==`` on expressions and fragments compares identity). With a
    fragment operand: elementwise, 1 where equal and 0 elsewhere (for `T.where`), in that fragment's dtype."""
    from argus.ir.expr import BinaryOp, binary

    if isinstance(a, Fragment | _BroadcastView) or isinstance(b, Fragment | _BroadcastView):
        return _binary(MapOp.EQ, a, b)
    return binary(BinaryOp.EQ, as_expr(a), as_expr(b))


def ne(a: Any, b: Any) -> Any:
    """The runtime condition ``a != b``; elementwise (1 / 0) with a fragment operand, as `eq`."""
    from argus.ir.expr import BinaryOp, binary

    if isinstance(a, Fragment | _BroadcastView) or isinstance(b, Fragment | _BroadcastView):
        return _binary(MapOp.NE, a, b)
    return binary(BinaryOp.NE, as_expr(a), as_expr(b))


def index(x: Fragment, axis: int) -> Fragment:
    """A fragment like `x` whose every element is its own coordinate along `axis` of the tile
    (for masks: ``T.index(s, 1) + j * BN < N``)."""
    if not isinstance(x, Fragment) or not 0 <= axis < len(x.shape):
        raise DSLError("DSL_BAD_OPERAND", f"T.index takes a fragment and an axis below its rank, got axis {axis}")
    return _map(MapOp.COORD, (as_expr(axis),), x, dtype=f32)


def where(cond: Fragment, a: Any, b: Any) -> Fragment:
    """Elementwise ``a if cond else b`` (`cond` nonzero means true)."""
    if not isinstance(cond, Fragment):
        raise DSLError("DSL_NOT_A_FRAGMENT", "T.where: the condition must be a fragment (e.g. from a comparison)")
    like = a if isinstance(a, Fragment) else b if isinstance(b, Fragment) else cond
    return _map(MapOp.SELECT, (cond.ref, _operand(a, cond, "a"), _operand(b, cond, "b")), like)


def fma(a: Fragment, b: Any, c: Any) -> Fragment:
    """``a * b + c`` in one rounding."""
    return _map(MapOp.FMA, (a.ref, _operand(b, a, "b"), _operand(c, a, "c")), a)


def cast(x: Fragment, dtype: DType) -> Fragment:
    """`x` converted to `dtype`: to a float type, rounded to nearest even; from a float to an integer type, truncated
    toward zero and saturated, NaN giving 0 (PTX ``cvt.rzi``); between integer types, wrapped."""
    return _map(MapOp.CAST, (x.ref,), x, dtype=dtype)


def _reduce(op: ReduceOp, x: Fragment, axis: int) -> Fragment:
    from argus.lang.fragments import reduced_tv

    loc = caller_loc()
    if not isinstance(x, Fragment):
        raise DSLError("DSL_NOT_A_FRAGMENT", f"T.reduce_{op.value} works on fragments", loc=loc)
    shape = x.buffer.static_shape
    if len(shape) != 2 or axis not in (0, 1, -1):
        raise DSLError("DSL_REDUCE_AXIS", f"reductions take a 2-D fragment and axis 0 or 1, got {shape}, axis={axis}")
    axis = axis % 2
    result = reduced_tv(x.buffer.tv, shape, axis, x.buffer.threads)
    if isinstance(result, str):
        raise DSLError("DSL_REDUCE_LAYOUT", f"T.reduce_{op.value}: {result}", loc=loc)
    tv, lanes = result
    kept = (shape[0],) if axis == 1 else (shape[1],)
    out = _like(x, shape=kept, tv=tv)
    _state("T.reduce").emit(Reduce(op, out.ref, x.ref, axis, lanes, loc=loc))
    return out


def reduce_max(x: Fragment, axis: int = 1) -> Fragment:
    """Maximum along `axis` of a 2-D fragment; the result is held by every thread of each row."""
    return _reduce(ReduceOp.MAX, x, axis)


def reduce_sum(x: Fragment, axis: int = 1) -> Fragment:
    """Sum along `axis` of a 2-D fragment; the result is held by every thread of each row."""
    return _reduce(ReduceOp.SUM, x, axis)


def gemm(a: Tile, b: Tile, acc: Fragment) -> None:
    """``acc += a @ b`` with the MMA atom `acc` was allocated with: `a` is ``(M, K)``, `b` ``(K, N)``."""
    st = _state("T.gemm")
    loc = caller_loc()
    if not isinstance(acc, Fragment) or acc.buffer.atom is None:
        raise DSLError(
            "DSL_GEMM_ACCUMULATOR",
            "T.gemm: the accumulator must be a fragment allocated with mma=<atom>",
            "T.alloc_fragment((BM, BN), T.f32, mma=T.mma_sync(...))",
            loc=loc,
        )
    (m, k), (k2, n), (m2, n2) = a.shape, b.shape, acc.shape
    if k != k2 or m != m2 or n != n2:
        raise DSLError(
            "DSL_SHAPE_MISMATCH",
            "T.gemm: operand shapes do not form a matrix product",
            requirement="a (M, K), b (K, N), acc (M, N)",
            actual=f"a {a.shape}, b {b.shape}, acc {acc.shape}",
            loc=loc,
        )
    atom = get_atom_by_name(acc.buffer.atom)
    if atom.b_source.value == "shared" and b.ref.space != Space.SHARED:
        raise DSLError("DSL_GEMM_OPERAND", f"T.gemm: {atom.name} reads B from shared memory", loc=loc)
    if atom.a_source.value == "shared" and a.ref.space != Space.SHARED:
        raise DSLError("DSL_GEMM_OPERAND", f"T.gemm: {atom.name} reads A from shared memory", loc=loc)
    if atom.scope.value == "thread":  # the per-thread FMA atom multiplies what each thread holds
        for name, t in (("a", a), ("b", b)):
            if t.ref.space != Space.FRAGMENT:
                raise DSLError(
                    "DSL_GEMM_OPERAND",
                    f"T.gemm: {atom.name} multiplies registers; operand {name} is in {t.ref.space.value} memory",
                    f"load it into a fragment first: T.alloc_fragment(shape, dtype, mma=<the atom>, "
                    f"operand={name.upper()!r}, groups=<the accumulator's>) and T.copy",
                    loc=loc,
                )
    for name, t in (("a", a), ("b", b)):
        if t.ref.space == Space.FRAGMENT and t.buffer.atom != acc.buffer.atom:
            raise DSLError(
                "DSL_FRAGMENT_ATOM",
                f"T.gemm: fragment {name} was laid out for {t.buffer.atom}, the accumulator for {acc.buffer.atom}",
                "allocate the operand with the same mma atom",
                loc=loc,
            )
    for name, t in (("a", a), ("b", b)):
        if t.ref.space == Space.FRAGMENT and t.buffer.groups != acc.buffer.groups:
            raise DSLError(
                "DSL_FRAGMENT_ATOM",
                f"T.gemm: fragment {name} is spread over {t.buffer.groups} thread groups, the accumulator over "
                f"{acc.buffer.groups}",
                "allocate the operands with the same groups as the accumulator",
                loc=loc,
            )
    st.emit(Gemm(a.ref, b.ref, acc.ref, acc.buffer.atom, acc.buffer.groups, loc=loc))


def fence_proxy_async() -> None:
    """``fence.proxy.async``: make this thread's ordinary shared-memory writes visible to the async
    proxy (TMA stores, wgmma operand reads) — needed before wgmma reads what registers stored."""
    _state("T.fence_proxy_async").emit(Fence(FenceKind.PROXY_ASYNC, loc=caller_loc()))


def async_commit() -> None:
    """``cp.async.commit_group``."""
    _state("T.async_commit").emit(AsyncCommit(loc=caller_loc()))


def async_wait(pending: int = 0) -> None:
    """``cp.async.wait_group pending``: wait until at most `pending` groups are still in flight."""
    _state("T.async_wait").emit(AsyncWait(pending, loc=caller_loc()))


def barrier(barrier_id: int = 0, threads: int | None = None) -> None:
    """``__syncthreads()``; with a `barrier_id` > 0, the named barrier ``bar.sync id, threads``
    (for example between the consumer warpgroups of a warp-specialized kernel)."""
    st = _state("T.barrier")
    loc = caller_loc()
    if barrier_id == 0 and threads is None:
        st.emit(Barrier(loc=loc))
        return
    if not 1 <= barrier_id <= 15 or threads is None or threads % 32 or not 32 <= threads <= (st.threads or 0):
        raise DSLError(
            "DSL_NAMED_BARRIER",
            f"named barrier {barrier_id} for {threads} threads is not valid",
            requirement=f"an id in 1..15 and a multiple of 32 threads up to {st.threads}",
            actual=(barrier_id, threads),
            loc=loc,
        )
    st.emit(Barrier(BarrierKind.NAMED, barrier_id, threads, loc=loc))


class _MbarrierRef:
    def __init__(self, ref: TileRef) -> None:
        self.ref = ref


class Mbarriers:
    """An array of mbarriers (`T.alloc_mbarrier`); ``bars[s]`` is barrier `s`."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer

    def __getitem__(self, index: Any) -> _MbarrierRef:
        return _MbarrierRef(TileRef(self.buffer, _simplify((as_expr(index),)), (1,), dropped=(0,)))


def alloc_mbarrier(count: int, arrive_count: int = 1) -> Mbarriers:
    """`count` mbarriers, each completing a phase after `arrive_count` arrivals (one per arriving
    warp role) and all the TMA bytes announced for that phase."""
    st = _state("T.alloc_mbarrier")
    loc = caller_loc()
    if not isinstance(count, int) or count < 1 or not isinstance(arrive_count, int) or arrive_count < 1:
        raise DSLError("DSL_MBARRIER", f"T.alloc_mbarrier needs positive int counts, got {count}, {arrive_count}")
    buffer = Buffer(st.fresh("bar"), Space.MBARRIER, irtypes.u32, (count,), loc=loc)
    st.carve.place(buffer)
    st.emit(Alloc(buffer, loc=loc))
    st.emit(MbarrierInit(whole(buffer), arrive_count, loc=loc))
    return Mbarriers(buffer)


def mbarrier_arrive(bar: _MbarrierRef, expect_bytes: int = 0) -> None:
    """Arrive on `bar` (once for the warp role); with `expect_bytes`, announce that many bytes of
    TMA traffic for the current phase (``mbarrier.arrive.expect_tx``)."""
    st = _state("T.mbarrier_arrive")
    if not isinstance(bar, _MbarrierRef):
        raise DSLError("DSL_MBARRIER", "T.mbarrier_arrive takes an element of T.alloc_mbarrier")
    st.emit(MbarrierArrive(bar.ref, int(expect_bytes), loc=caller_loc()))


def mbarrier_wait(bar: _MbarrierRef, phase: Any) -> None:
    """Wait until the phase of `bar` with parity `phase` (0 or 1) has completed."""
    st = _state("T.mbarrier_wait")
    if not isinstance(bar, _MbarrierRef):
        raise DSLError("DSL_MBARRIER", "T.mbarrier_wait takes an element of T.alloc_mbarrier")
    st.emit(MbarrierWait(bar.ref, as_expr(phase), loc=caller_loc()))


@contextlib.contextmanager
def role(name: str, warpgroups: tuple[int, ...], registers: int | None = None) -> Iterator[None]:
    """``with T.role("producer", warpgroups=(0,), registers=40):`` warp specialization: the body
    runs only in those warpgroups (128 threads each); fragments allocated inside are spread over
    the role's threads; `registers` is the ``setmaxnreg`` budget per thread."""
    st = _state("T.role")
    loc = caller_loc()
    total = (st.threads or 0) // 128
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
    st.role = (name, 128 * len(warpgroups))
    st.stack.append([])
    try:
        yield
    finally:
        body = tuple(st.stack.pop())
        st.role = None
    st.emit(Role(name, warpgroups, body, registers, loc=loc))


def mma_sync(a_dtype: DType = bf16, acc_dtype: DType = f32) -> MmaAtom:
    """The ``mma.sync.aligned.m16n8k16`` atom (one warp)."""
    return mma_sync_m16n8k16(a_dtype, a_dtype, acc_dtype)


def wgmma_atom(n: int, a_dtype: DType = bf16, acc_dtype: DType = f32, a_source: str = "shared") -> MmaAtom:
    """The ``wgmma.mma_async.m64nNk16`` atom (one warpgroup)."""
    return wgmma(n, a_dtype, acc_dtype=acc_dtype, a_source=a_source)


def fma_atom(a_dtype: DType = bf16, acc_dtype: DType = f32) -> MmaAtom:
    """The per-thread FMA atom (one thread, ``1x1x1``, ``fma.rn.f32`` on CUDA cores): `T.gemm` with it makes
    each thread multiply the A rows and B columns it holds into the accumulator micro-tile it owns."""
    from argus.atoms import fma as fma_of  # `fma` in this module is the elementwise T.fma

    return fma_of(a_dtype, a_dtype, acc_dtype)


# --- control flow -------------------------------------------------------------------------------------------


def _loop(name: str, extent: Any, kind: LoopKind, stages: int = 1, start: Any = 0) -> Iterator[Var]:
    st = _state(f"T.{name}")
    loc = caller_loc()
    var = Var(st.fresh("k" if kind == LoopKind.PIPELINED else "i"), VarKind.LOOP)
    st.stack.append([])
    try:
        yield var
    finally:
        body = tuple(st.stack.pop())
    extent_e = extent if isinstance(extent, int) else as_expr(extent)
    start_e = start if isinstance(start, int) else as_expr(start)
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
    st = _state("T.if_")
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


# --- the kernel decorator -----------------------------------------------------------------------------------


class KernelFunction:
    """A Python function decorated with `@argus.kernel`: trace it with `trace(**params)`."""

    def __init__(self, fn: types.FunctionType) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.signature = inspect.signature(fn, eval_str=True)
        self._cache: dict[tuple, Kernel] = {}
        self.policy_params: dict[str, Any] = {}
        self.reference: Any = None  # `@argus.kernel(reference=...)`: the kernel's own reference (see `kernel`)
        self.sizes: dict[str, int] = {}
        self.tolerance: float | None = None
        self.tensor_specs: dict[str, TensorSpec] = {}
        self.defaults: dict[str, Any] = {}
        for p in self.signature.parameters.values():
            if isinstance(p.annotation, TensorSpec):
                self.tensor_specs[p.name] = p.annotation
            elif p.default is not inspect.Parameter.empty:
                self.defaults[p.name] = p.default
            else:
                raise DSLError(
                    "DSL_KERNEL_SIGNATURE",
                    f"parameter {p.name!r} of kernel {self.name} is neither a T.Tensor[...] nor has a default",
                    "annotate tensors with T.Tensor[shape, dtype]; give trace-time parameters defaults",
                    loc=_def_loc(fn),
                )
        for pname, spec in self.tensor_specs.items():
            unknown = [p for p in spec.shape_params if p not in self.defaults]
            if unknown:
                raise DSLError(
                    "DSL_KERNEL_SIGNATURE",
                    f"the shape function of tensor {pname!r} of kernel {self.name} takes {unknown[0]!r}, which is not "
                    "a trace-time parameter of the kernel",
                    "name the shape function's arguments after parameters with defaults, e.g. lambda B_MAJOR: ...",
                    loc=_def_loc(fn),
                )
            if isinstance(spec.dtype, str) and spec.dtype not in self.defaults:
                raise DSLError(
                    "DSL_KERNEL_SIGNATURE",
                    f"tensor {pname!r} of kernel {self.name} has dtype {spec.dtype!r}, which is neither a dtype nor "
                    "a parameter of the kernel",
                    f"a dtype (T.bf16, 'f32', ...) or a parameter with a default, e.g. {spec.dtype}: str = 'f32'",
                    loc=_def_loc(fn),
                )

    def __repr__(self) -> str:
        return f"<argus kernel {self.name}>"

    def __call__(self, *tensors: Any, device: str | None = None, **params: Any) -> None:
        """Run the kernel on `tensors` (in parameter order), writing outputs in place.

        ``device="cpu"`` (or the environment variable ``ARGUS_INTERPRET=1``) runs it on the
        lane-level interpreter, with numpy arrays or CPU torch tensors.
        """
        import os

        if device is None and os.environ.get("ARGUS_INTERPRET", "") not in ("", "0"):
            device = "cpu"
        if device != "cpu":
            raise DSLError(
                "DSL_NO_GPU_PATH",
                f"kernel {self.name}: launching on a GPU from a kernel call is not available yet",
                "call it with device='cpu' (or set ARGUS_INTERPRET=1) to run it on the interpreter",
                loc=_def_loc(self.fn),
            )
        run_traced(self.trace(**params), tensors, loc=_def_loc(self.fn))

    def trace(self, **params: Any) -> Kernel:
        """The IR of this kernel specialized with `params` (defaults for the rest)."""
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise DSLError(
                "DSL_UNKNOWN_PARAM",
                f"kernel {self.name} has no parameter {sorted(unknown)[0]!r}",
                requirement=f"one of {sorted(self.defaults)}",
                loc=_def_loc(self.fn),
            )
        values = {**self.defaults, **params}
        key = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if key not in self._cache:
            try:
                self._cache[key] = self._trace(values)
            except DSLError as err:
                raise err.with_traceback(None) from None
            except (ArgusError, KeyboardInterrupt, SystemExit, MemoryError):
                raise  # a typed error of argus's own (an atom's, a layout's) keeps its code
            except Exception as err:  # a Python error in the kernel's own code: its line, not the tracer's frames
                raise DSLError(
                    "DSL_KERNEL_RAISED",
                    f"tracing kernel {self.name} raised {type(err).__name__}: {err}",
                    "fix the kernel's Python at this line (it runs once, while tracing, with the sizes as symbols)",
                    loc=_raise_loc(err, self.fn),
                ) from None
        return self._cache[key]

    def _trace(self, values: dict[str, Any]) -> Kernel:
        st = _Trace(self.name)
        shape_vars: dict[str, Var] = {}
        tensors: list[Buffer] = []
        for pname, spec in self.tensor_specs.items():
            dims: list[Expr | int] = []
            try:
                shape = spec.resolve_shape(values)
            except DSLError:
                raise  # the shape function's own refusal (e.g. a parameter value it does not know)
            except ValueError as err:
                raise DSLError(
                    "DSL_TENSOR_SHAPE",
                    f"tensor {pname}: {err}",
                    "return a tuple such as ('K', 'N') from the shape function",
                    loc=_def_loc(self.fn),
                ) from None
            for d in shape:
                if isinstance(d, str):
                    dims.append(shape_vars.setdefault(d, Var(d, VarKind.SHAPE)))
                else:
                    dims.append(d)
            strides: list[Expr | int] = []
            acc: Expr | int = 1
            for d in reversed(dims):
                strides.append(acc)
                acc = acc * d if isinstance(acc, Expr) or isinstance(d, Expr) else acc * d
            strides.reverse()
            try:
                dtype = spec.resolve_dtype(values)
            except irtypes.DTypeError:
                raise DSLError(
                    "DSL_TENSOR_DTYPE",
                    f"tensor {pname}: parameter {spec.dtype} = {values[spec.dtype]!r} does not name a dtype",
                    "a dtype name such as 'f32', 'bf16' or 'f16'",
                    loc=_def_loc(self.fn),
                ) from None
            tensors.append(Buffer(pname, Space.GLOBAL, dtype, tuple(dims), strides=tuple(strides)))
        fn = types.FunctionType(
            self.fn.__code__,
            {**self.fn.__globals__, **shape_vars},
            self.fn.__name__,
            self.fn.__defaults__,
            self.fn.__closure__,
        )
        args = {t.name: GlobalTensor(t) for t in tensors}
        st.shape_vars = dict(shape_vars)
        token = _TRACE.set(st)
        try:
            fn(**args, **values)
        finally:
            _TRACE.reset(token)
        if st.grid is None or st.threads is None:
            raise DSLError(
                "DSL_NO_GRID",
                f"kernel {self.name} never opened `with T.grid(...)`",
                "put the kernel body under `with T.grid(n_blocks, threads=128) as (bx,):`",
                loc=_def_loc(self.fn),
            )
        _check_tma_stores(self.name, tuple(st.stack[0]))
        return Kernel(
            name=self.name,
            tensors=tuple(tensors),
            shape_vars=tuple(shape_vars.values()),
            grid=st.grid,
            block_vars=st.block_vars,
            threads=st.threads,
            thread_var=st.thread_var,
            body=tuple(st.stack[0]),
            params=tuple(sorted(values.items())),
            policies=_policies(self.policy_params, values, st),
            assumptions=tuple(v >= 1 for v in shape_vars.values()) + tuple(st.assumptions),
            loc=_def_loc(self.fn),
            blocks_per_sm=st.blocks_per_sm,
        )


def _policies(declared: dict[str, Any], values: dict[str, Any], st: _Trace) -> Policies:
    """The policy values of one specialization: declared ones from the parameters, the rest read
    off the trace."""
    from argus.ir.nodes import For as ForNode
    from argus.ir.nodes import walk

    def resolve(ref: Any) -> Any:
        if isinstance(ref, tuple):
            return tuple(resolve(r) for r in ref)
        return values[ref] if isinstance(ref, str) else ref

    found: dict[str, Any] = {k: resolve(v) for k, v in declared.items()}
    body = tuple(st.stack[0])
    roles = [s for s in walk(body) if isinstance(s, Role)]
    if roles and "warp_roles" not in found:
        found["warp_roles"] = tuple(r.name for r in roles)
    if roles and "register_split" not in found and any(r.registers for r in roles):
        found["register_split"] = tuple(r.registers or 0 for r in roles)
    swizzles = [
        s.buffer.layout.inner.bits
        for s in walk(body)
        if isinstance(s, Alloc) and s.buffer.space == Space.SHARED and isinstance(s.buffer.layout, ComposedLayout)
    ]
    if swizzles and "swizzle" not in found:
        found["swizzle"] = swizzle_width(max(swizzles))
    pipelined = [s.stages for s in walk(body) if isinstance(s, ForNode) and s.kind == LoopKind.PIPELINED]
    if pipelined and "stages" not in found:
        found["stages"] = max(pipelined)
    if st.persistent is not None:
        found.setdefault("persistent", True)
        found.setdefault("tile_order", st.persistent[0])
    if "tile_order" in found and isinstance(found["tile_order"], str):
        found["tile_order"] = TileOrder(found["tile_order"])
    return Policies(**found)


def run_traced(kernel: Kernel, tensors: tuple[Any, ...] | list[Any], loc: Any = None) -> None:
    """Run the traced `kernel` on the CPU interpreter with `tensors` (numpy arrays or CPU torch tensors, in
    parameter order), writing outputs in place; sizes that violate its ``T.assume`` are refused."""
    from argus.interp import run_kernel

    names = [t.name for t in kernel.tensors]
    if len(tensors) != len(names):
        raise DSLError(
            "DSL_CALL_ARGUMENTS",
            f"kernel {kernel.name} takes {len(names)} tensors ({', '.join(names)}), got {len(tensors)}",
            loc=loc,
        )
    arrays, writeback = {}, []
    for name, value in zip(names, tensors, strict=True):
        array, back = _as_numpy(name, value)
        arrays[name] = array
        if back is not None:
            writeback.append((back, array))
    _check_assumptions(kernel, arrays)
    run_kernel(kernel, arrays)
    for back, array in writeback:
        back(array)


class TracedKernel:
    """A kernel that is already IR (traced elsewhere, e.g. in a sandbox, and decoded from data): it answers
    `trace` with that IR (for the parameters it was traced with, and no others) and runs on the CPU interpreter
    like an ``@argus.kernel`` call, so that the gate, the verifier, the code generator and the cost model take it
    as they take a kernel function, without running any of its Python."""

    def __init__(self, kernel: Kernel, params: dict[str, Any] | None = None) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.params = dict(params or {})
        self.tensor_specs = {t.name: t for t in kernel.tensors}

    def __repr__(self) -> str:
        return f"<traced argus kernel {self.name}>"

    def trace(self, **params: Any) -> Kernel:
        """The IR; `params` must be empty or those it was traced with."""
        differs = {k: v for k, v in params.items() if k not in self.params or self.params[k] != v}
        if differs:
            raise DSLError(
                "DSL_TRACED_PARAMS",
                f"kernel {self.name} was traced with {self.params}; it cannot be specialized again with {differs}",
                "trace the kernel function itself with these parameters",
            )
        return self.kernel

    def __call__(self, *tensors: Any, device: str | None = None, **params: Any) -> None:
        if device not in (None, "cpu"):
            raise DSLError("DSL_NO_GPU_PATH", f"kernel {self.name}: a traced kernel runs on the CPU interpreter")
        run_traced(self.trace(**params), tensors)


def _check_assumptions(kernel: Kernel, arrays: dict[str, Any]) -> None:
    """Refuse a call whose sizes violate the kernel's assumptions (``T.assume``), as the GPU runtime does
    (`argus.runtime.arguments.bind`, ``RUNTIME_ASSUMPTION``): the kernel is verified for those sizes only."""
    from argus.ir.expr import evaluate
    from argus.runtime.errors import ArgumentError

    sizes: dict[Var, int] = {}
    for t in kernel.tensors:
        shape = getattr(arrays.get(t.name), "shape", ())
        for dim, extent in zip(t.shape, shape, strict=False):
            if isinstance(dim, Var):
                sizes.setdefault(dim, int(extent))
    if len(sizes) != len(kernel.shape_vars):
        return  # the interpreter reports the missing or mismatched tensor itself
    for assumption in kernel.assumptions[len(kernel.shape_vars) :]:
        if not bool(evaluate(assumption, sizes)):
            values = {v.name: n for v, n in sizes.items()}
            raise ArgumentError(
                "RUNTIME_ASSUMPTION",
                f"{kernel.name}: the shapes {values} violate the kernel's assumption {assumption} (declared with "
                "T.assume: the kernel is verified for those sizes only)",
                "pass sizes that satisfy it (pad the tensors), or use a kernel written for these sizes",
                kernel=kernel.name,
            )


def _as_numpy(name: str, value: Any):
    """(a float64 numpy array with the values, a function writing results back or None)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value, None
    if type(value).__module__.startswith("torch"):
        if value.device.type != "cpu":
            raise DSLError("DSL_CALL_ARGUMENTS", f"{name}: the interpreter takes CPU tensors, got {value.device}")
        work = value.detach().to("cpu").double().numpy().copy()

        def back(result: np.ndarray, target: Any = value) -> None:
            import torch

            target.copy_(torch.from_numpy(result).to(target.dtype))

        return work, back
    raise DSLError(
        "DSL_CALL_ARGUMENTS", f"{name}: expected a numpy array or a CPU torch tensor, got {type(value).__name__}"
    )


def _def_loc(fn: Any):
    from argus.ir.expr import SourceLoc

    code = fn.__code__
    try:
        lines, start = inspect.getsourcelines(fn)
        text = next((ln for ln in lines if ln.lstrip().startswith("def ")), lines[0]).rstrip("\n")
        line = start + next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("def ")), 0)
    except (OSError, TypeError):
        text, line = "", code.co_firstlineno
    return SourceLoc(code.co_filename, line, len(text) - len(text.lstrip()), text)


def _raise_loc(err: BaseException, fn: Any):
    """Where `err` was raised in `fn`'s file (the innermost such frame), else `fn`'s definition."""
    import linecache
    import traceback

    from argus.ir.expr import SourceLoc

    file = fn.__code__.co_filename
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == file]
    if not frames:
        return _def_loc(fn)
    frame = frames[-1]
    text = linecache.getline(file, frame.lineno or 0).rstrip("\n")
    col = frame.colno if getattr(frame, "colno", None) is not None else len(text) - len(text.lstrip())
    return SourceLoc(file, frame.lineno or 0, col, text)


POLICY_NAMES = ("tile_shape", "stages", "swizzle", "warp_roles", "register_split", "tile_order", "persistent", "unroll")


def kernel(
    fn: types.FunctionType | None = None,
    *,
    policies: dict[str, Any] | None = None,
    reference: Any = None,
    sizes: dict[str, int] | None = None,
    tolerance: float | None = None,
) -> Any:
    """Decorate a Python function as an argus kernel: ``@argus.kernel`` or
    ``@argus.kernel(policies={"stages": "STAGES", "tile_shape": ("BM", "BN", "BK")})``, which names
    the parameters that carry each compiler policy (so a planner can change one at a time). Policies
    the kernel's IR shows (swizzle, warp roles and their register split, persistence and tile
    order) are recorded from the trace as well.

    `reference` makes the kernel self-describing, so ``argus interpret|verify|compile|bench|optimize FILE.py:NAME``
    need no built-in task: a plain Python/PyTorch function of the kernel's *input* tensors (matched by parameter
    name) that returns its outputs (one tensor, a tuple in parameter order, or a dict by name).
    `sizes` gives the problem sizes used when the command line gives none (``{"M": 100, "N": 72}``);
    `tolerance` the largest error allowed relative to the reference's scale (default: by the tensors' dtypes)."""
    if policies is not None:
        unknown = set(policies) - set(POLICY_NAMES)
        if unknown:
            raise DSLError(
                "DSL_UNKNOWN_POLICY",
                f"unknown policy {sorted(unknown)[0]!r}",
                requirement=f"one of {', '.join(POLICY_NAMES)}",
            )

    def wrap(f: types.FunctionType) -> KernelFunction:
        kf = KernelFunction(f)
        kf.policy_params = dict(policies or {})
        if isinstance(kf.policy_params.get("tile_shape"), str):  # one tiled dimension: a tile shape of one
            kf.policy_params["tile_shape"] = (kf.policy_params["tile_shape"],)
        if reference is not None and not callable(reference):
            raise DSLError(
                "DSL_KERNEL_REFERENCE",
                f"reference= of kernel {kf.name} is a {type(reference).__name__}, not a function",
                "pass a function of the kernel's input tensors that returns its outputs",
                loc=_def_loc(f),
            )
        if sizes is not None and not (
            isinstance(sizes, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in sizes.values())
        ):
            raise DSLError(
                "DSL_KERNEL_SIZES", f"sizes= of kernel {kf.name} must map size names to ints", loc=_def_loc(f)
            )
        kf.reference = reference
        kf.sizes = dict(sizes or {})
        kf.tolerance = tolerance
        for name, ref in kf.policy_params.items():
            for p in ref if isinstance(ref, tuple) else (ref,):
                if isinstance(p, str) and p not in kf.defaults:
                    raise DSLError(
                        "DSL_UNKNOWN_POLICY",
                        f"policy {name!r} names parameter {p!r}, which kernel {kf.name} does not have",
                        loc=_def_loc(f),
                    )
        return kf

    return wrap(fn) if fn is not None else wrap


__all__ = [
    "SHARED_MEMORY_BUDGET",
    "Fragment",
    "GlobalTensor",
    "KernelFunction",
    "Shared",
    "Tensor",
    "TensorSpec",
    "Tile",
    "Mbarriers",
    "abs",
    "alloc_fragment",
    "alloc_mbarrier",
    "alloc_reduced",
    "alloc_shared",
    "assume",
    "async_commit",
    "async_wait",
    "barrier",
    "bf16",
    "boolean",
    "cast",
    "cdiv",
    "ceil",
    "copy",
    "cos",
    "eq",
    "erf",
    "exp",
    "exp2",
    "expm1",
    "f16",
    "fence_proxy_async",
    "f32",
    "fill",
    "floor",
    "fma",
    "fma_atom",
    "fmod",
    "gemm",
    "grid",
    "i32",
    "if_",
    "index",
    "lane_id",
    "persistent_grid",
    "kernel",
    "log",
    "log1p",
    "log2",
    "maximum",
    "mbarrier_arrive",
    "mbarrier_wait",
    "minimum",
    "mma_sync",
    "ne",
    "pipeline",
    "pow",
    "reduce_max",
    "reduce_sum",
    "rcp",
    "role",
    "rsqrt",
    "serial",
    "sigmoid",
    "sin",
    "sqrt",
    "tanh",
    "thread_id",
    "tile_order",
    "u32",
    "unroll",
    "warp_id",
    "wgmma_atom",
    "where",
]
