"""What a kernel's Python sees of its memory: the tensor annotation (``T.Tensor[shape, dtype]``), global tensors
and their tiles (`GlobalTensor`, `Tile`), and shared-memory buffers with their stages (`Shared`). Tiles are views:
indexing, transposing and windowing one moves no data and emits nothing."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus.ir import types as irtypes
from argus.ir.expr import Const, Element, Expr, as_expr
from argus.ir.nodes import Buffer, Gather, Im2col, Space, TileRef
from argus.ir.printer import format_ref
from argus.ir.types import DType
from argus.lang.errors import DSLError
from argus.layout import ComposedLayout, Layout, mode_sizes, size

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


# --- tiles ---------------------------------------------------------------------------------------------------


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
        return Tile(
            TileRef(r.buffer, simplify_origin(tuple(new_origin)), tuple(new_extent), r.dropped, layout=r.layout)
        )


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
        return Tile(TileRef(self.buffer, simplify_origin(origin), extent, dropped=dropped))

    def window(self, origin: Any, shape: Any, bound: Any = None) -> Tile:
        """The window at element `origin` (one per dimension) of `shape`. `bound`, one entry per dimension (an
        int, an expression or None), limits the elements accessed to coordinates below it, as the tensor's end
        does: ``C.window((row0, bn * BN), (BM, BN), bound=(row_end, None))`` stores the rows of one expert only.
        A bounded window is the destination of a store (not a TMA store: a TMA box is masked at the tensor's
        end only). A ``None`` extent fixes that dimension to element ``origin[d]`` and drops it from the window's
        shape, as in `tile` (``B.window((g, k0, col), (None, BK, 64))`` is a (BK, 64) window of matrix g)."""
        origin = origin if isinstance(origin, tuple) else (origin,)
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        dropped = tuple(d for d, e in enumerate(shape) if e is None)
        shape = tuple(1 if e is None else e for e in shape)
        if bound is not None:
            bound = tuple(bound) if isinstance(bound, (tuple, list)) else (bound,)
            if len(bound) != self.buffer.rank or any(
                b is not None and (isinstance(b, bool | float) or not isinstance(b, int | Expr)) for b in bound
            ):
                raise DSLError(
                    "DSL_WINDOW",
                    f"{self.buffer.name}.window: bound takes one int, integer expression or None per dimension",
                    actual=repr(bound),
                )
            bound = tuple(None if b is None else simplify_origin((as_expr(b),))[0] for b in bound)
            if all(b is None for b in bound):
                bound = None
        return Tile(
            TileRef(
                self.buffer, simplify_origin(tuple(as_expr(o) for o in origin)), shape, bound=bound, dropped=dropped
            )
        )

    def gather(self, index: Any, position: Any, shape: Any, origin: Any = None) -> Tile:
        """A gathered window of `shape`: its row r is this tensor's row ``index[position + r]`` (dimension 0), its
        other dimensions start at `origin` (one int or integer expression per remaining dimension; default 0).
        `index` is a 1-d integer tensor the kernel only reads (a MoE routing's token of each routed row); a row whose
        position is at or past the index's end reads 0, as elements past a tensor's end do. The source of a TMA load
        into shared memory (``T.copy(X.gather(TOK, row0, (BM, BK), (k * BK,)), sA[s], atom="tma",
        mbarrier=full[s])``): one box per row, issued by the scope's threads (a row each), completing on the
        mbarrier with the window's bytes (a whole box's). ``index[position + r]`` must lie inside the tensor's rows
        where the position is inside the index (declare it: ``T.assume_values(TOK, lo=0, hi=rows - 1)``)."""
        b = self.buffer
        idx = index.buffer if isinstance(index, GlobalTensor) else None
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if origin is None:
            origin = (0,) * (b.rank - 1)
        origin = tuple(origin) if isinstance(origin, (tuple, list)) else (origin,)
        problem = None
        if idx is None or idx.rank != 1 or not idx.dtype.is_integer or idx.space != Space.GLOBAL:
            problem = "index is a 1-d integer tensor parameter of the kernel"
        elif b.rank < 2:
            problem = f"{b.name} has {b.rank} dimension; a gather takes rows of a tensor of 2 or more"
        elif len(shape) != b.rank or any(not isinstance(e, int) or isinstance(e, bool) or e < 1 for e in shape):
            problem = f"shape takes {b.rank} positive Python ints (the rows, then the other dimensions' extents)"
        elif len(origin) != b.rank - 1 or any(
            isinstance(o, bool | float) or not isinstance(o, int | Expr) for o in origin
        ):  # noqa: E501
            problem = f"origin takes {b.rank - 1} ints or integer expressions (the dimensions after the rows)"
        elif isinstance(position, bool | float) or not isinstance(position, int | Expr):
            problem = "position is an int or an integer expression"
        if problem:
            raise DSLError(
                "DSL_GATHER",
                f"{b.name}.gather: {problem}",
                actual=f"index {getattr(getattr(index, 'buffer', None), 'name', type(index).__name__)}, position "
                f"{position}, shape {shape}, origin {tuple(str(o) for o in origin)}",
            )
        spec = Gather(idx, simplify_origin((as_expr(position),))[0])
        full_origin = simplify_origin(tuple(as_expr(o) for o in (0, *origin)))
        return Tile(TileRef(b, full_origin, shape, gather=spec))

    def im2col_pixel(self, position: Any, *, lower: Any, upper: Any, strides: Any = None) -> tuple[Any, ...]:
        """(n, spatial...) of the base pixel at traversal index `position` of `im2col`'s box (its `lower`, `upper`
        and `strides`): what an im2col load of that position starts at. Bind it once with `T.let` outside a loop of
        loads and pass it as their ``start=`` (the generated code computes it once, not per load)."""
        rank = self.buffer.rank
        spatial = rank - 2
        lower = tuple(lower) if isinstance(lower, (tuple, list)) else (lower,)
        upper = tuple(upper) if isinstance(upper, (tuple, list)) else (upper,)
        strides = (
            (1,) * spatial if strides is None else tuple(strides) if isinstance(strides, (tuple, list)) else (strides,)
        )
        if not (len(lower) == len(upper) == len(strides) == spatial):
            raise DSLError(
                "DSL_IM2COL",
                f"{self.buffer.name}.im2col_pixel: lower, upper and strides take {spatial} ints",
                actual=f"lower {lower}, upper {upper}, strides {strides}",
            )
        return Im2col(lower, upper, strides, (0,) * spatial, as_expr(position)).pixel(
            as_expr(position), self.buffer.shape
        )

    def im2col(
        self,
        position: Any,
        channel: Any,
        *,
        pixels: int,
        channels: int,
        offsets: Any,
        lower: Any,
        upper: Any,
        strides: Any = None,
        start: Any = None,
    ) -> Tile:
        """The (pixels, channels) operand of a convolution's implicit GEMM, for one TMA im2col load (``T.copy(...,
        atom="tma", mbarrier=...)`` into shared memory; `argus.atoms.tma`, "im2col mode"). The tensor is channels
        last, (N, spatial..., C), 3-d to 5-d. Per spatial dimension (tensor order): `lower` and `upper` bound the
        base pixels to ``lower .. extent - 1 + upper`` (for a convolution, ``-padding`` and ``padding - (window -
        1)``, the window dilated: the base pixels are then the output positions'), `strides` is the traversal's
        step (the convolution's stride; default 1), and `offsets` (ints or expressions, 0 ..) are added to every
        base pixel (the filter tap times the dilation). Row r is the base pixel at traversal index ``position + r``
        (images outermost, the last spatial dimension fastest: for a convolution, output position ``position + r``
        flattened over N, OD, OH, OW), channels ``channel ..``; it holds the pixel plus the offsets, zeros where
        that lies outside the tensor (padding, past the last image, channels past C). The copy starts at the pixel
        `Im2col.pixel` gives for `position` (inside the box, on its stride grid): `start`, when given, is that pixel
        bound once (`T.let` of `X.im2col_pixel(position, ...)`'s values, outside the loop of loads); the verifier
        refuses (`unknown`) a start that is not exactly it."""
        from argus.atoms.tma import (
            IM2COL_CORNER_RANGE,
            IM2COL_MAX_CHANNELS,
            IM2COL_MAX_PIXELS,
            IM2COL_RANKS,
            TMA_MAX_BOX,
        )

        b = self.buffer
        rank = b.rank
        spatial = rank - 2
        offsets = tuple(offsets) if isinstance(offsets, (tuple, list)) else (offsets,)
        lower = tuple(lower) if isinstance(lower, (tuple, list)) else (lower,)
        upper = tuple(upper) if isinstance(upper, (tuple, list)) else (upper,)
        strides = (
            (1,) * spatial if strides is None else tuple(strides) if isinstance(strides, (tuple, list)) else (strides,)
        )

        def ints(xs: tuple) -> bool:
            return all(isinstance(x, int) and not isinstance(x, bool) for x in xs)

        problem = None
        if rank not in IM2COL_RANKS:
            problem = f"{b.name} has {rank} dimensions; im2col loads take a channels-last tensor of 3 to 5"
        elif len(offsets) != spatial:
            problem = f"offsets takes one per spatial dimension ({spatial})"
        elif not (ints(lower) and ints(upper) and ints(strides)) or not (
            len(lower) == len(upper) == len(strides) == spatial
        ):
            problem = f"lower, upper and strides take {spatial} Python ints (one per spatial dimension)"
        elif not all(IM2COL_CORNER_RANGE[rank][0] <= c <= IM2COL_CORNER_RANGE[rank][1] for c in lower + upper):
            problem = f"a {rank}-d tensor's corners lie in {list(IM2COL_CORNER_RANGE[rank])}"
        elif not all(1 <= x <= 8 for x in strides):
            problem = "traversal strides lie in 1 .. 8"
        elif not (isinstance(pixels, int) and 1 <= pixels <= min(IM2COL_MAX_PIXELS, TMA_MAX_BOX)):
            # the hardware takes up to 1024; argus lays the box out (and checks it) as a tiled box, of at most 256 rows
            problem = f"pixels is a Python int in 1 .. {TMA_MAX_BOX}"
        elif not (isinstance(channels, int) and 1 <= channels <= IM2COL_MAX_CHANNELS):
            problem = f"channels is a Python int in 1 .. {IM2COL_MAX_CHANNELS}"
        elif any(isinstance(o, bool | float) or not isinstance(o, int | Expr) for o in (position, channel, *offsets)):
            problem = "position, channel and offsets are ints or integer expressions"
        elif any(isinstance(o, int) and o < 0 for o in offsets):
            problem = "offsets are unsigned (add them to the base pixels; move negative shifts into lower/upper)"
        if problem:
            raise DSLError(
                "DSL_IM2COL",
                f"{b.name}.im2col: {problem}",
                actual=f"position {position}, channel {channel}, pixels {pixels}, channels {channels}, offsets "
                f"{offsets}, lower {lower}, upper {upper}, strides {strides}",
            )
        spec = Im2col(
            lower,
            upper,
            strides,
            simplify_origin(tuple(as_expr(o) for o in offsets)),
            simplify_origin((as_expr(position),))[0],
        )
        if start is None:
            start = spec.pixel(spec.position, b.shape)
        else:
            start = tuple(start) if isinstance(start, (tuple, list)) else (start,)
            if len(start) != 1 + spatial or any(
                isinstance(o, bool | float) or not isinstance(o, int | Expr) for o in start
            ):
                raise DSLError(
                    "DSL_IM2COL",
                    f"{b.name}.im2col: start takes (n, {spatial} spatial) ints or expressions: "
                    f"{b.name}.im2col_pixel(position, ...) bound with T.let",
                    actual=repr(start),
                )
        origin = simplify_origin(tuple(as_expr(o) for o in (*start, channel)))
        extent = (pixels,) + (1,) * spatial + (channels,)
        return Tile(TileRef(b, origin, extent, dropped=tuple(range(1, 1 + spatial)), im2col=spec))

    def __getitem__(self, index: Any) -> Expr:
        """``offs[g]``: the value of one element of an integer tensor the kernel only reads, as an integer
        expression (known when the kernel runs: device-side offsets, counts, indices). Use it in tile origins,
        bounds, loop extents and conditions. The index must lie inside the tensor (the interpreter checks it; the
        kernel's own guards or `T.assume` must ensure it); the kernel must not write the tensor.

        ``scale[0]`` of a float tensor is likewise one value for the whole kernel, known when it runs (a scale factor
        held on the device), for elementwise math on fragments (``acc * scale[0]``), not for index math."""
        index = index if isinstance(index, tuple) else (index,)
        b = self.buffer
        if not (b.dtype.is_integer or b.dtype.is_float):
            raise DSLError(
                "DSL_ELEMENT",
                f"{b.name}[...] reads an element as a number; {b.name} holds {b.dtype.name}",
                "only integer tensors (offsets, counts, indices) and float tensors (scales) are read as scalars",
            )
        if len(index) != b.rank or any(isinstance(i, bool | float) or not isinstance(i, int | Expr) for i in index):
            raise DSLError(
                "DSL_ELEMENT",
                f"{b.name}[...] takes {b.rank} integer indices",
                actual=repr(index),
            )
        return Element(b, tuple(as_expr(i) for i in index), b.dtype)


def simplify_origin(origin: tuple) -> tuple:
    for o in origin:
        index_expr(o, "a tile's origin or bound")
    return tuple(o.value if isinstance(o, Const) and isinstance(o.value, int) else o for o in origin)


def index_expr(e: Any, what: str) -> Any:
    """`e`, refused (``DSL_ELEMENT``) where it is a float: an element of a float tensor (a scale, ``scale[0]``) is a
    value for fragment math, never an index, an extent or a bound."""
    if isinstance(e, Expr) and e.dtype.is_float:
        raise DSLError(
            "DSL_ELEMENT",
            f"{what} must be an integer expression; {e} is {e.dtype.name}",
            "only integer tensors (offsets, counts, indices) give indices; a float tensor's element is a value",
        )
    return e


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class Shared(Tile):
    """A shared-memory buffer; ``sA[s]`` is stage `s` of a multi-stage buffer."""

    def view(self, layout: Layout | ComposedLayout) -> Shared:
        """Expert escape hatch: the same memory seen through an explicit `layout` (coordinate ->
        element offset) instead of the buffer's own. The view's shape is the layout's (one extent per top-level
        mode): the buffer's own shape, or, of a whole buffer, any shape of as many elements (a (R, C, W) buffer
        seen as (C, R, W), so that a stage index `view[s]` picks what was its second dimension)."""
        r = self.ref
        modes = mode_sizes(layout)
        if size(layout) != _elements(self.shape):
            raise DSLError("DSL_VIEW_LAYOUT", f"view layout {layout} does not cover the buffer's shape {self.shape}")
        if modes == tuple(r.extent):
            return Shared(TileRef(r.buffer, r.origin, r.extent, r.dropped, layout=layout))
        if not r.is_whole():
            raise DSLError(
                "DSL_VIEW_LAYOUT",
                f"view layout {layout} reshapes {r.buffer.name} to {modes}",
                "reshape a whole buffer only (take windows and stages of the view)",
                actual=f"a window {list(self.shape)} of {list(r.buffer.static_shape)}",
            )
        return Shared(TileRef(r.buffer, tuple(0 for _ in modes), modes, layout=layout))

    def __getitem__(self, stage: Any) -> Tile:
        ref = self.ref
        if len(ref.extent) < 2:
            raise DSLError("DSL_STAGE_INDEX", f"{ref.buffer.name} has one dimension; it has no stages to index")
        origin = (as_expr(stage),) + tuple(0 for _ in ref.extent[1:])
        return Tile(
            TileRef(ref.buffer, simplify_origin(origin), (1,) + tuple(ref.extent[1:]), dropped=(0,), layout=ref.layout)
        )


def check_same_shape(what: str, a: tuple, b: tuple, loc: Any) -> None:
    if tuple(a) != tuple(b):
        raise DSLError(
            "DSL_SHAPE_MISMATCH",
            f"{what}: shapes differ",
            "make both tiles the same shape",
            requirement="the same shape on both sides",
            actual=f"{tuple(a)} and {tuple(b)}",
            loc=loc,
        )
