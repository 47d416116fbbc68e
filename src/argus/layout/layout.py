"""`Layout(shape, stride)` and the CuTe layout algebra.

A layout is a function from coordinates to integers: coordinate ``c`` of shape ``S`` goes to
``inner_product(c, D)`` for stride ``D``; an integer index is first split column-major over the
shape. Everything here follows CuTe's semantics and names (``cute/layout.hpp``, the CuTe docs
"CuTe Layout Algebra"), and each public function's docstring states the defining property that
the tests check by enumeration.

Where CuTe's admissibility conditions (stride and shape divisibility, injectivity) fail, these
functions raise `LayoutError` naming the operands and the condition, instead of silently
returning a layout that does not have the defining property.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from argus.layout import arith
from argus.layout.errors import LayoutError
from argus.layout.int_tuple import (
    crd2idx,
    depth,
    flatten,
    fmt,
    has_none,
    is_int,
    is_tuple,
    normalize,
    prefix_product,
    product,
    replace_none,
    slice_,
)


class Layout:
    """A CuTe layout: a pair of congruent int tuples (shape, stride).

    ``Layout((4, 8), (8, 1))`` prints as ``(4,8):(8,1)``; the stride defaults to column-major
    (``prefix_product(shape)``). Calling a layout evaluates it: ``L(i)`` for an integer index,
    ``L(m, n)`` or ``L((m, (n0, n1)))`` for hierarchical coordinates, and any leaf may be a Z3
    term (the result is then a Z3 term). A coordinate containing ``None`` slices instead:
    ``L(2, None)`` is the layout of row 2.
    """

    __slots__ = ("shape", "stride")
    shape: Any
    stride: Any

    def __init__(self, shape: Any, stride: Any | None = None) -> None:
        shape = normalize(shape, "shape", positive=True)
        stride = prefix_product(shape) if stride is None else normalize(stride, "stride")
        if not _congruent(shape, stride):
            raise LayoutError(
                "LAYOUT_INCONGRUENT",
                f"shape {fmt(shape)} and stride {fmt(stride)} are not congruent",
                "a layout needs one stride per shape extent, nested the same way",
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Layout is immutable")

    # --- structure -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.shape) if is_tuple(self.shape) else 1

    def __getitem__(self, i: int | slice) -> Layout:
        """Mode `i` (or a range of modes, as a layout of that rank)."""
        if is_tuple(self.shape):
            if isinstance(i, slice):
                return Layout(self.shape[i], self.stride[i])
            try:
                return Layout(self.shape[i], self.stride[i])
            except IndexError:
                raise LayoutError("LAYOUT_BAD_MODE", f"mode {i} of {self} does not exist (rank {len(self)})") from None
        if isinstance(i, slice):
            return Layout((self.shape,), (self.stride,))[i]
        if i not in (0, -1):
            raise LayoutError("LAYOUT_BAD_MODE", f"mode {i} of {self} does not exist (rank 1)")
        return Layout(self.shape, self.stride)

    def __iter__(self) -> Iterator[Layout]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self.shape == other.shape and self.stride == other.stride

    def __hash__(self) -> int:
        return hash(("Layout", self.shape, self.stride))

    def __str__(self) -> str:
        return f"{fmt(self.shape)}:{fmt(self.stride)}"

    def __repr__(self) -> str:
        return str(self)

    # --- evaluation -----------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        crd = args[0] if len(args) == 1 else tuple(args)
        if len(args) == 0:
            raise LayoutError("LAYOUT_BAD_COORDINATE", f"{self} was called with no coordinate")
        if has_none(crd):
            return Layout(_unwrap(slice_(crd, self.shape)), _unwrap(slice_(crd, self.stride)))
        return crd2idx(crd, self.shape, self.stride)

    def size(self) -> int:
        return product(self.shape)

    def cosize(self) -> int:
        return cosize(self)


def _congruent(a: Any, b: Any) -> bool:
    if is_tuple(a) and is_tuple(b):
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b, strict=True))
    return not is_tuple(a) and not is_tuple(b)


def _unwrap(t: tuple) -> Any:
    if len(t) == 1:
        return t[0]
    return t


def _as_layout(x: Any, what: str) -> Layout:
    if isinstance(x, Layout):
        return x
    if is_int(x):
        return Layout(x)
    raise LayoutError("LAYOUT_BAD_OPERAND", f"{what} must be a Layout or an integer, got {x!r}")


# --- basic queries ---------------------------------------------------------------------------


def size(x: Any) -> int:
    """Number of coordinates: the product of the shape (for a layout or an int tuple)."""
    if hasattr(x, "shape") and not is_tuple(x) and not is_int(x):
        return product(x.shape)
    return product(x)


def mode_sizes(layout: Any) -> tuple[int, ...]:
    """The number of coordinates of each top-level mode: the shape a layout gives a view, ``(4, 8, 64)`` for
    ``((4, 1, 1), 8, (32, 2))`` (a layout of one mode: a one-tuple)."""
    shape = layout.shape
    return tuple(int(product(m)) for m in (shape if is_tuple(shape) else (shape,)))


def cosize(layout: Any) -> int:
    """Size of the codomain: ``L(size(L) - 1) + 1``, i.e. one past the largest offset for
    non-negative strides."""
    if not isinstance(layout, Layout):
        return layout.cosize()
    flat_shape = flatten(layout.shape)
    flat_stride = flatten(layout.stride)
    if any(d < 0 for d in flat_stride):
        raise LayoutError("LAYOUT_NEGATIVE_STRIDE", f"cosize({layout}) is defined for non-negative strides only")
    return sum((s - 1) * d for s, d in zip(flat_shape, flat_stride, strict=True)) + 1


def rank(x: Any) -> int:
    """Number of top-level modes of a layout or an int tuple."""
    if isinstance(x, Layout) or hasattr(x, "outer"):
        return len(x)
    return len(x) if is_tuple(x) else 1


def layout_depth(x: Any) -> int:
    """Nesting depth of a layout's shape (0 for ``8:1``, 1 for ``(4,8):(1,4)``)."""
    return depth(x.shape) if isinstance(x, Layout) else depth(x)


def make_layout(*args: Any) -> Layout:
    """Either ``make_layout(shape, stride=None)`` from int tuples, or ``make_layout(L0, L1, ...)``:
    the layout whose mode ``i`` is ``Li`` (concatenation)."""
    if args and all(isinstance(a, Layout) for a in args):
        return Layout(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if (
        len(args) == 1
        and isinstance(args[0], (list, tuple))
        and args[0]
        and all(isinstance(a, Layout) for a in args[0])
    ):
        return make_layout(*args[0])
    if len(args) in (1, 2) and not any(isinstance(a, Layout) for a in args):
        return Layout(*args)
    raise LayoutError(
        "LAYOUT_BAD_OPERAND",
        f"make_layout{tuple(args)!r}: expected (shape[, stride]) or layouts only",
    )


def make_ordered_layout(shape: Any, order: Any) -> Layout:
    """Compact layout of `shape` whose strides increase in the order given by `order`
    (``make_ordered_layout((4, 8), (1, 0))`` is row-major ``(4,8):(8,1)``)."""
    flat_shape = flatten(normalize(shape, "shape", positive=True))
    flat_order = flatten(normalize(order, "order"))
    if len(flat_shape) != len(flat_order) or sorted(flat_order) != list(range(len(flat_order))):
        raise LayoutError("LAYOUT_BAD_OPERAND", f"order {fmt(order)} is not a permutation for shape {fmt(shape)}")
    strides = [0] * len(flat_shape)
    current = 1
    for i in sorted(range(len(flat_shape)), key=lambda i: flat_order[i]):
        strides[i] = current
        current *= flat_shape[i]
    return Layout(shape, _unflatten(tuple(strides), normalize(shape, "shape")))


def _unflatten(flat: tuple, like: Any) -> Any:
    it = iter(flat)

    def build(t: Any) -> Any:
        if is_tuple(t):
            return tuple(build(e) for e in t)
        return next(it)

    return build(like)


def _with_modes(*modes: Layout) -> Layout:
    """Concatenate modes, unwrapping a single mode."""
    if len(modes) == 1:
        return modes[0]
    return make_layout(*modes)


# --- coalesce and filter ---------------------------------------------------------------------


def coalesce(layout: Layout, profile: Any | None = None) -> Layout:
    """Simplify `layout` to the fewest modes with the same function: ``coalesce(L)(i) == L(i)``
    for every ``0 <= i < size(L)``, and ``size(coalesce(L)) == size(L)``.

    Size-1 modes are dropped and adjacent modes ``(s0, s1):(d0, s0*d0)`` merge. With a tuple
    `profile`, mode ``i`` is coalesced by ``profile[i]`` separately (so the result keeps that
    rank); an int profile coalesces the whole layout.
    """
    layout = _as_layout(layout, "coalesce's operand")
    if is_tuple(profile):
        if len(profile) > len(layout):
            raise LayoutError("LAYOUT_BAD_PROFILE", f"coalesce({layout}, {fmt(profile)}): profile has more modes")
        modes = [coalesce(layout[i], profile[i]) for i in range(len(profile))]
        modes += [layout[i] for i in range(len(profile), len(layout))]
        return make_layout(*modes)
    shapes: list[int] = [1]
    strides: list[int] = [0]
    for s, d in zip(flatten(layout.shape), flatten(layout.stride), strict=True):
        if s == 1:
            continue
        if shapes[-1] == 1:
            shapes[-1], strides[-1] = s, d
        elif shapes[-1] * strides[-1] == d:
            shapes[-1] *= s
        else:
            shapes.append(s)
            strides.append(d)
    if len(shapes) == 1:
        return Layout(shapes[0], strides[0])
    return Layout(tuple(shapes), tuple(strides))


def filter_zeros(layout: Layout) -> Layout:
    """`layout` with every stride-0 mode replaced by a size-1 mode (same shape structure)."""

    def walk(s: Any, d: Any) -> tuple[Any, Any]:
        if is_tuple(s):
            pairs = [walk(x, y) for x, y in zip(s, d, strict=True)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        return (1, 0) if d == 0 else (s, d)

    shape, stride = walk(layout.shape, layout.stride)
    return Layout(shape, stride)


def filter(layout: Layout, profile: Any | None = None) -> Layout:  # noqa: A001 - CuTe's name
    """Drop stride-0 and size-1 modes and coalesce: the image of ``filter(L)`` is the image of
    `L`, and ``filter(L)`` is injective when `L` is injective on its non-broadcast modes."""
    layout = _as_layout(layout, "filter's operand")
    if is_tuple(profile):
        if len(profile) > len(layout):
            raise LayoutError("LAYOUT_BAD_PROFILE", f"filter({layout}, {fmt(profile)}): profile has more modes")
        modes = [filter(layout[i], profile[i]) for i in range(len(profile))]
        modes += [layout[i] for i in range(len(profile), len(layout))]
        return make_layout(*modes)
    return coalesce(filter_zeros(layout))


# --- composition -----------------------------------------------------------------------------


def composition(a: Any, b: Any) -> Any:
    """``R = a ∘ b``: ``R(c) == a(b(c))`` for every coordinate ``c`` of `b` with ``b(c) < size(a)``,
    and `R`'s shape is compatible with `b`'s (same size, same mode structure where `b` has modes).
    Where `b` reaches past ``size(a)``, `a` is extended along the last mode of ``coalesce(a)``, as
    in CuTe: ``R(c) == coalesce(a)(b(c))`` for every ``c``.

    `b` may be a layout, an int ``n`` (meaning ``n:1``), ``None`` (identity), or a tuple of these
    (a by-mode tiler: mode ``i`` of `a` is composed with ``b[i]``, later modes kept). `a` may be a
    `Swizzle` or a composed layout, which gives a composed layout.

    Raises `LayoutError` when CuTe's admissibility conditions fail: every stride of `b` must
    divide, or be divisible by, the extents of `a` it steps over, and `b`'s extents must split
    evenly across `a`'s modes.
    """
    if b is None:
        return a
    if not isinstance(a, Layout):
        if hasattr(a, "compose"):
            return a.compose(b)
        a = _as_layout(a, "composition's left operand")
    if is_int(b):
        b = Layout(b)
    if is_tuple(b):
        if len(b) > len(a):
            raise LayoutError(
                "LAYOUT_BAD_TILER",
                f"composition({a}, {_fmt_tiler(b)}): the tiler has {len(b)} modes but the layout only {len(a)}",
            )
        modes = [composition(a[i], b[i]) for i in range(len(b))]
        modes += [a[i] for i in range(len(b), len(a))]
        return make_layout(*modes)
    if not isinstance(b, Layout):
        raise LayoutError("LAYOUT_BAD_OPERAND", f"composition's right operand must be a layout, got {b!r}")
    if is_tuple(b.shape):
        return make_layout(*[composition(a, bi) for bi in b])
    return _compose_rank1(a, b)


def _compose_rank1(a: Layout, b: Layout) -> Layout:
    """Composition with a right operand of int shape ``s:d``."""
    if b.stride == 0:
        return Layout(b.shape, 0)
    if b.stride < 0:
        raise LayoutError("LAYOUT_NEGATIVE_STRIDE", f"composition({a}, {b}): the right operand has a negative stride")
    flat_a = coalesce(a)
    a_shapes = flatten(flat_a.shape)
    a_strides = flatten(flat_a.stride)
    shapes: list[int] = []
    strides: list[int] = []
    rest_shape, rest_stride = b.shape, b.stride
    for s, d in zip(a_shapes[:-1], a_strides[:-1], strict=True):
        if s % rest_stride != 0 and rest_stride % s != 0:
            raise LayoutError(
                "LAYOUT_STRIDE_DIVISIBILITY",
                f"stride {rest_stride} does not divide shape {s}, nor the reverse, in composition({a}, {b})",
                "the right operand must step over whole extents of the left one",
            )
        new_shape = min(max(1, s // rest_stride), rest_shape)
        if rest_shape % new_shape != 0:
            raise LayoutError(
                "LAYOUT_SHAPE_DIVISIBILITY",
                f"shape {rest_shape} is not divisible by {new_shape} in composition({a}, {b})",
                "the right operand's extent must split evenly across the left operand's modes",
            )
        if new_shape != 1:
            shapes.append(new_shape)
            strides.append(rest_stride * d)
        rest_shape //= new_shape
        rest_stride = -(-rest_stride // s)
    if rest_shape != 1 or not shapes:
        shapes.append(rest_shape)
        strides.append(rest_stride * a_strides[-1])
    if len(shapes) == 1:
        return Layout(shapes[0], strides[0])
    return Layout(tuple(shapes), tuple(strides))


def _fmt_tiler(t: Any) -> str:
    if is_tuple(t):
        return "(" + ",".join(_fmt_tiler(e) for e in t) + ")"
    return "_" if t is None else str(t)


# --- complement and inverses -----------------------------------------------------------------


def complement(layout: Any, cotarget: int = 1) -> Layout:
    """The layout that fills the gaps of `layout` up to `cotarget`: CuTe's ``complement``.

    Defining property, for an injective `layout`: ``R = complement(layout, M)`` has strictly
    increasing values, its image meets the image of `layout` only at 0, and the concatenation
    ``make_layout(filter(layout), R)`` is a bijection onto ``[0, size(filter(layout)) * size(R))``,
    which covers at least ``[0, M)``.

    Raises `LayoutError` when `layout` is not injective or its sorted strides do not divide one
    another in the way a complement needs.
    """
    layout = _as_layout(layout, "complement's operand")
    if not is_int(cotarget) or cotarget < 1:
        raise LayoutError("LAYOUT_BAD_OPERAND", f"complement({layout}, {cotarget!r}): cotarget must be a positive int")
    modes = sorted(
        ((d, s) for s, d in zip(flatten(layout.shape), flatten(layout.stride), strict=True) if d != 0 and s != 1)
    )
    shapes: list[int] = []
    strides: list[int] = []
    current = 1
    for d, s in modes:
        if d < 0:
            raise LayoutError("LAYOUT_NEGATIVE_STRIDE", f"complement({layout}): negative stride {d}")
        if d % current != 0:
            what = "overlaps the modes below it (not injective)" if d < current else f"is not a multiple of {current}"
            raise LayoutError(
                "LAYOUT_NOT_COMPLEMENTABLE",
                f"stride {d} of complement({layout}, {cotarget}) {what}",
                "complement needs an injective layout whose sorted strides divide each other",
            )
        shapes.append(d // current)
        strides.append(current)
        current = s * d
    shapes.append(-(-cotarget // current))
    strides.append(current)
    return coalesce(Layout(tuple(shapes), tuple(strides)))


def right_inverse(layout: Any) -> Layout:
    """The largest `R` with ``layout(R(i)) == i`` for every ``0 <= i < size(R)``: CuTe's
    ``right_inverse`` (it inverts the contiguous prefix of the image starting at 0)."""
    if layout is None:
        return None  # type: ignore[return-value]
    layout = _as_layout(layout, "right_inverse's operand")
    flat_shape = flatten(layout.shape)
    flat_stride = flatten(layout.stride)
    column_major = flatten(prefix_product(layout.shape))
    shapes: list[int] = []
    strides: list[int] = []
    current = 1
    for d, s, r in sorted(zip(flat_stride, flat_shape, column_major, strict=True)):
        if s == 1:
            continue
        if d != current:
            if d < current:
                continue  # stride-0 (broadcast) modes and the like contribute nothing new
            break
        shapes.append(s)
        strides.append(r)
        current = s * d
    return coalesce(Layout(tuple(shapes), tuple(strides)))


def left_inverse(layout: Any) -> Layout:
    """For an injective `layout`, an `R` with ``R(layout(i)) == i`` for every ``0 <= i < size(layout)``:
    CuTe's ``left_inverse`` (the right inverse of ``(layout, complement(layout))``)."""
    if layout is None:
        return None  # type: ignore[return-value]
    layout = _as_layout(layout, "left_inverse's operand")
    return right_inverse(make_layout(layout, complement(layout)))


# --- divides ---------------------------------------------------------------------------------


def logical_divide(layout: Any, tiler: Any) -> Any:
    """Split `layout` into (tile, rest): ``logical_divide(A, B) == composition(A, (B, complement(B, size(A))))``.

    Mode 0 of the result enumerates the elements of one tile (as `B` selects them), mode 1 the
    tiles. A tuple tiler divides mode by mode (``None`` keeps a mode whole); an int ``n`` means ``n:1``.
    Property: for every ``c`` in the tile and ``t`` over the tiles, ``R(c, t) == A((B, B*)(c, t))``.
    """
    if tiler is None:
        return layout
    if is_int(tiler):
        tiler = Layout(tiler)
    if is_tuple(tiler):
        if len(tiler) > rank(layout):
            raise LayoutError(
                "LAYOUT_BAD_TILER",
                f"logical_divide({layout}, {_fmt_tiler(tiler)}): tiler has {len(tiler)} modes, layout {rank(layout)}",
            )
        modes = [logical_divide(layout[i], tiler[i]) for i in range(len(tiler))]
        modes += [layout[i] for i in range(len(tiler), rank(layout))]
        return _concat_any(modes)
    return composition(layout, make_layout(tiler, complement(tiler, size(layout))))


def _concat_any(modes: list) -> Any:
    if all(isinstance(m, Layout) for m in modes):
        return make_layout(*modes)
    # Composed layouts (swizzled): concatenate their outer layouts under the common inner function.
    first = next(m for m in modes if not isinstance(m, Layout))
    return first.with_outer(make_layout(*[m.outer if not isinstance(m, Layout) else m for m in modes]))


def _tile_unzip(layout: Any, tiler: Any) -> Any:
    """((tile modes...), (rest modes..., untouched modes...)) from a by-mode divide or product."""
    if not is_tuple(tiler):
        return layout
    n = len(tiler)
    tiles, rests = [], []
    for i in range(n):
        mode = layout[i]
        if tiler[i] is None:
            tiles.append(mode)
            rests.append(Layout(1, 0))
        else:
            tiles.append(mode[0])
            rests.append(mode[1])
    rests += [layout[i] for i in range(n, rank(layout))]
    return _concat_any([_concat_any(tiles), _concat_any(rests)])


def zipped_divide(layout: Any, tiler: Any) -> Any:
    """``((tile modes), (rest modes))``: `logical_divide` with the tile modes gathered in mode 0
    and the tile-index modes in mode 1, so ``R(c, t)`` is element ``c`` of tile ``t``."""
    return _tile_unzip(logical_divide(layout, tiler), tiler)


def tiled_divide(layout: Any, tiler: Any) -> Any:
    """``((tile modes), rest0, rest1, ...)``: `zipped_divide` with the rest modes unpacked."""
    z = zipped_divide(layout, tiler)
    return _concat_any([z[0], *list(z[1])])


def flat_divide(layout: Any, tiler: Any) -> Any:
    """``(tile0, tile1, ..., rest0, rest1, ...)``: `zipped_divide` with both modes unpacked."""
    z = zipped_divide(layout, tiler)
    return _concat_any([*list(z[0]), *list(z[1])])


# --- products --------------------------------------------------------------------------------


def logical_product(block: Any, tiler: Any) -> Any:
    """Repeat `block` as `tiler` says: ``(A, composition(complement(A, size(A)*cosize(B)), B))``.

    Mode 0 is `block` itself, mode 1 places its copies: ``R(c, t) == A(c) + A*(B(t))`` where
    ``A* = complement(A, size(A)*cosize(B))``. A tuple tiler works mode by mode.
    """
    if tiler is None:
        return block
    if is_int(tiler):
        tiler = Layout(tiler)
    if is_tuple(tiler):
        if len(tiler) > rank(block):
            raise LayoutError(
                "LAYOUT_BAD_TILER",
                f"logical_product({block}, {_fmt_tiler(tiler)}): tiler has {len(tiler)} modes, block {rank(block)}",
            )
        modes = [logical_product(block[i], tiler[i]) for i in range(len(tiler))]
        modes += [block[i] for i in range(len(tiler), rank(block))]
        return _concat_any(modes)
    block = _as_layout(block, "logical_product's block")
    return make_layout(block, composition(complement(block, size(block) * cosize(tiler)), tiler))


def zipped_product(block: Any, tiler: Any) -> Any:
    """``((block modes), (repeat modes))``: `logical_product` gathered like `zipped_divide`."""
    return _tile_unzip(logical_product(block, tiler), tiler)


def tiled_product(block: Any, tiler: Any) -> Any:
    """``((block modes), repeat0, repeat1, ...)``."""
    z = zipped_product(block, tiler)
    return _concat_any([z[0], *list(z[1])])


def _append(layout: Layout, n: int) -> Layout:
    modes = list(layout)
    modes += [Layout(1, 0)] * (n - len(modes))
    return make_layout(*modes)


def _zip_products(block: Layout, tiler: Layout, block_first: bool) -> Layout:
    block = _as_layout(block, "the block")
    tiler = _as_layout(tiler, "the tiler")
    n = max(len(block), len(tiler))
    product_ = logical_product(_append(block, n), _append(tiler, n))
    inner, outer = product_[0], product_[1]
    modes = []
    for i in range(n):
        pair = (inner[i], outer[i]) if block_first else (outer[i], inner[i])
        kept = [m for m in pair if size(m) != 1]  # drop the size-1 padding that aligned the ranks
        modes.append(make_layout(*kept) if len(kept) == 2 else kept[0] if kept else Layout(1, 0))
    return make_layout(*modes)


def blocked_product(block: Layout, tiler: Layout) -> Layout:
    """Mode ``i`` is ``(block_i, tiler_i)``: the block is contiguous and the copies are laid out
    by the tiler (``blocked_product(2x2 block, 2x3 tiler)`` is a 4x6 layout of 2x2 blocks).
    Property: ``R((b0, t0), (b1, t1)) == P((b0, b1), (t0, t1))`` for ``P = logical_product``."""
    return _zip_products(block, tiler, block_first=True)


def raked_product(block: Layout, tiler: Layout) -> Layout:
    """Mode ``i`` is ``(tiler_i, block_i)``: the copies are interleaved (raked) element by element.
    Property: ``R((t0, b0), (t1, b1)) == P((b0, b1), (t0, t1))`` for ``P = logical_product``."""
    return _zip_products(block, tiler, block_first=False)


# --- vectors ---------------------------------------------------------------------------------


def max_common_vector(a: Layout, b: Layout) -> int:
    """The largest ``N`` such that the first ``N`` contiguous offsets of `b` map to ``N``
    contiguous offsets of `a`: with ``r = right_inverse(b)``, ``a(r(i)) == i`` for ``i < N``.
    This is the widest vector that can copy between tensors laid out by `a` and `b`."""
    common = coalesce(composition(a, right_inverse(b)))
    first_shape = flatten(common.shape)[0]
    first_stride = flatten(common.stride)[0]
    return first_shape if first_stride == 1 else 1


def max_common_layout(a: Layout, b: Layout) -> Layout:
    """The layout of `b`'s coordinates over the common vector of `a` and `b`."""
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    first_shape = flatten(common.shape)[0]
    first_stride = flatten(common.stride)[0]
    if first_stride == 1:
        return composition(inv_b, Layout(first_shape))
    return Layout(1, 0)


def slice_and_offset(crd: Any, layout: Layout) -> tuple[Layout, Any]:
    """``(L(crd) as a slice, offset)``: the sliced layout over the ``None`` modes, and the offset of
    the fixed coordinates, so that ``L(c) == offset + sliced(c restricted to the None modes)``."""
    sliced = layout(crd) if has_none(crd) else Layout(1, 0)
    offset = crd2idx(replace_none(crd, 0), layout.shape, layout.stride)
    return sliced, offset


def is_symbolic(x: Any) -> bool:
    """True when `x` is a Z3 term (a layout evaluated at a Z3 coordinate returns one)."""
    return arith.is_symbolic(x)
