"""`Swizzle(B, M, S)` and composed layouts (swizzle ∘ offset ∘ layout).

A swizzle permutes offsets by XOR-ing ``B`` bits taken ``S`` positions above bit ``M`` into the
``B`` bits starting at bit ``M``::

    offset ^ ((offset & yyy_mask) >> S)      yyy_mask = ((1 << B) - 1) << (M + max(0, S))

(a negative ``S`` shifts left). A `ComposedLayout` is CuTe's ``ComposedLayout<Swizzle, Offset, Layout>``:
``c ↦ swizzle(offset + layout(c))``, the layout of a swizzled shared-memory tile. Which swizzles a GPU
has is a hardware fact, not algebra: Hopper's modes are `argus.atoms.swizzle`'s.
"""

from __future__ import annotations

import functools
from typing import Any

from argus.layout import arith
from argus.layout.errors import LayoutError
from argus.layout.int_tuple import flatten, fmt, has_none, is_int, replace_none
from argus.layout.layout import Layout, composition, crd2idx, size


class Swizzle:
    """CuTe's ``Swizzle<B, M, S>``: a bijection on offsets, and an involution (``sw(sw(x)) == x``).

    Calling it on an int gives an int; on a Z3 bit-vector, a bit-vector; on a Z3 ``Int``, an ``Int``
    (through a bit-vector, since it needs XOR).
    """

    __slots__ = ("bits", "base", "shift")
    bits: int
    base: int
    shift: int

    def __init__(self, bits: int, base: int, shift: int) -> None:
        for name, v in (("B", bits), ("M", base), ("S", shift)):
            if not is_int(v):
                raise LayoutError("LAYOUT_BAD_SWIZZLE", f"Swizzle {name} must be an integer, got {v!r}")
        if bits < 0 or base < 0:
            raise LayoutError("LAYOUT_BAD_SWIZZLE", f"Swizzle<{bits},{base},{shift}>: B and M must be non-negative")
        if abs(shift) < bits:
            raise LayoutError(
                "LAYOUT_BAD_SWIZZLE",
                f"Swizzle<{bits},{base},{shift}>: |S| = {abs(shift)} is less than B = {bits}, so the XOR-ed bit "
                "ranges overlap and the swizzle is not a bijection",
                "use |S| >= B (Hopper's swizzles have S = 3)",
            )
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "shift", shift)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Swizzle is immutable")

    @property
    def yyy_mask(self) -> int:
        """The bits that are read (then shifted onto `zzz_mask` and XOR-ed in)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """The bits that are changed."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: Any) -> Any:
        if not arith.is_symbolic(offset) and not is_int(offset) and not _integer_array(offset):
            raise LayoutError("LAYOUT_BAD_COORDINATE", f"{self} takes an integer offset, got {offset!r}")
        return arith.swizzle_bits(offset, self.yyy_mask, self.shift)

    def size(self) -> int:
        """The period of the swizzle: offsets repeat their pattern every ``2**(M+B+|S|)``."""
        return 1 << (self.base + self.bits + abs(self.shift))

    def cosize(self) -> int:
        return self.size()

    def compose(self, layout: Any) -> ComposedLayout:
        """``Swizzle ∘ layout``: a composed layout with offset 0."""
        if layout is None:
            return ComposedLayout(self, 0, Layout(self.size()))
        if is_int(layout):
            layout = Layout(layout)
        if not isinstance(layout, Layout):
            raise LayoutError("LAYOUT_BAD_OPERAND", f"composition({self}, {layout!r}): expected a Layout")
        return ComposedLayout(self, 0, layout)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Swizzle) and (self.bits, self.base, self.shift) == (
            other.bits,
            other.base,
            other.shift,
        )

    def __hash__(self) -> int:
        return hash(("Swizzle", self.bits, self.base, self.shift))

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    def __repr__(self) -> str:
        return str(self)


class ComposedLayout:
    """``inner ∘ offset ∘ outer``: evaluates ``c ↦ inner(offset + outer(c))``.

    `inner` is a `Swizzle` (or a `Layout`), `outer` a `Layout` that supplies the shape; slicing
    and mode access act on `outer` and fold fixed coordinates into the offset, as CuTe does.
    """

    __slots__ = ("inner", "offset", "outer")
    inner: Any
    offset: int
    outer: Layout

    def __init__(self, inner: Any, offset: int, outer: Layout) -> None:
        if not isinstance(outer, Layout):
            raise LayoutError("LAYOUT_BAD_OPERAND", f"a composed layout's outer part must be a Layout, got {outer!r}")
        if not (isinstance(inner, (Swizzle, Layout))):
            raise LayoutError(
                "LAYOUT_BAD_OPERAND", f"a composed layout's inner part must be a Swizzle or a Layout, got {inner!r}"
            )
        if not is_int(offset):
            raise LayoutError("LAYOUT_BAD_OPERAND", f"a composed layout's offset must be an int, got {offset!r}")
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "outer", outer)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ComposedLayout is immutable")

    @property
    def shape(self) -> Any:
        return self.outer.shape

    def __len__(self) -> int:
        return len(self.outer)

    def __getitem__(self, i: int) -> ComposedLayout:
        return ComposedLayout(self.inner, self.offset, self.outer[i])

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __call__(self, *args: Any) -> Any:
        crd = args[0] if len(args) == 1 else tuple(args)
        if has_none(crd):
            fixed = crd2idx(replace_none(crd, 0), self.outer.shape, self.outer.stride)
            if arith.is_symbolic(fixed):
                raise LayoutError("LAYOUT_BAD_COORDINATE", "slicing a composed layout needs integer fixed coordinates")
            return ComposedLayout(self.inner, self.offset + fixed, self.outer(crd))
        return self.inner(arith.add(self.offset, self.outer(crd)))

    def size(self) -> int:
        return size(self.outer)

    def cosize(self) -> int:
        """One past the largest offset the composed layout produces (by enumeration: a swizzle
        and an offset move values, so the outer layout's cosize is not enough). Cached per layout: the
        interpreter asks at every block's allocation."""
        return _composed_cosize(self)

    def compose(self, b: Any) -> ComposedLayout:
        """``(inner ∘ offset ∘ outer) ∘ b = inner ∘ offset ∘ (outer ∘ b)``."""
        return ComposedLayout(self.inner, self.offset, composition(self.outer, b))

    def with_outer(self, outer: Layout) -> ComposedLayout:
        return ComposedLayout(self.inner, self.offset, outer)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ComposedLayout)
            and self.inner == other.inner
            and self.offset == other.offset
            and self.outer == other.outer
        )

    def __hash__(self) -> int:
        return hash(("ComposedLayout", self.inner, self.offset, self.outer))

    def __str__(self) -> str:
        return f"{self.inner} o {fmt(self.offset)} o {self.outer}"

    def __repr__(self) -> str:
        return str(self)


@functools.lru_cache(maxsize=256)
def _composed_cosize(layout: ComposedLayout) -> int:
    n = size(layout.outer)
    if n > 1 << 22:
        raise LayoutError("LAYOUT_TOO_LARGE", f"cosize({layout}) would enumerate {n} coordinates")
    fast = _swizzled_cosize(layout, n)
    if fast is not None:
        return fast
    return max(layout(i) for i in range(n)) + 1


def _swizzled_cosize(layout: ComposedLayout, n: int) -> int | None:
    """The same maximum over every coordinate, as one vectorized pass where the layout is a swizzle over an
    integer offset and an integer outer layout (every shared-memory stage buffer: a 64 x 256 stage is 16384
    coordinates, 60 µs each one by one). None where a part is not of that form."""
    if not isinstance(layout.inner, Swizzle) or not is_int(layout.offset):
        return None
    shape, stride = flatten(layout.outer.shape), flatten(layout.outer.stride)
    if not all(is_int(x) for x in (*shape, *stride)):
        return None
    import numpy as np

    index = np.arange(n, dtype=np.int64)
    offset = np.full(n, layout.offset, dtype=np.int64)
    for extent, step in zip(shape, stride, strict=True):
        offset += (index % extent) * step
        index //= extent
    swizzle = layout.inner
    bits = offset & swizzle.yyy_mask
    moved = bits >> swizzle.shift if swizzle.shift >= 0 else bits << -swizzle.shift
    return int((offset ^ moved).max()) + 1


def _integer_array(x: Any) -> bool:
    """A numpy array of integers (evaluated elementwise, as `argus.layout.arith` does), without importing numpy."""
    return getattr(getattr(x, "dtype", None), "kind", None) in ("i", "u") and hasattr(x, "shape")
