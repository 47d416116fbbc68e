"""Nested integer tuples (CuTe's ``IntTuple``) and the helpers the layout algebra is built from.

An int tuple is an ``int`` or a (possibly nested, possibly empty) ``tuple`` of int tuples:
``8``, ``(4, 8)``, ``((2, 2), 4)``. Shapes and strides are int tuples; coordinates are int tuples
whose leaves may also be Z3 expressions or ``None`` (a slice, CuTe's ``_``).

Names and semantics follow CuTe (``cute/int_tuple.hpp``) and its Python reference, pycute.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any, TypeAlias

from argus.layout import arith
from argus.layout.errors import LayoutError

IntTuple: TypeAlias = "int | tuple[IntTuple, ...]"


def is_int(x: Any) -> bool:
    """True for a plain integer (not a bool, not a tuple)."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_tuple(x: Any) -> bool:
    """True for a tuple (an int tuple's inner node)."""
    return isinstance(x, tuple)


def fmt(x: Any) -> str:
    """CuTe's printing of an int tuple: ``(4,(2,2))``, no spaces; ``None`` prints as ``_``."""
    if is_tuple(x):
        return "(" + ",".join(fmt(e) for e in x) + ")"
    if x is None:
        return "_"
    return str(x)


def normalize(x: Any, what: str, *, positive: bool = False) -> Any:
    """Validate an int tuple given by a user and return it with Python ints and tuples only.

    Lists become tuples and integer-like values (``numpy.int64``) become ``int``. With `positive`,
    every leaf must be ≥ 1 (shapes). Raises `LayoutError` naming `what` otherwise.
    """
    if isinstance(x, (tuple, list)):
        return tuple(normalize(e, what, positive=positive) for e in x)
    if isinstance(x, bool):
        raise LayoutError("LAYOUT_BAD_INT_TUPLE", f"{what} {x!r} is a bool, expected an integer or a tuple of them")
    try:
        v = operator.index(x)
    except TypeError:
        raise LayoutError(
            "LAYOUT_BAD_INT_TUPLE", f"{what} contains {x!r} ({type(x).__name__}), expected an integer or a tuple"
        ) from None
    if positive and v < 1:
        raise LayoutError("LAYOUT_BAD_SHAPE", f"{what} contains {v}; every extent of a shape must be at least 1")
    return v


def flatten(t: Any) -> tuple:
    """The leaves of `t`, left to right, as a flat tuple (an int gives a 1-tuple)."""
    if is_tuple(t):
        out: list = []
        for e in t:
            out.extend(flatten(e))
        return tuple(out)
    return (t,)


def rank(t: Any) -> int:
    """Number of top-level modes: ``len(t)`` for a tuple, 1 for an int."""
    return len(t) if is_tuple(t) else 1


def depth(t: Any) -> int:
    """Nesting depth: 0 for an int, 1 + max depth of the elements for a tuple (1 for ``()``)."""
    if is_tuple(t):
        return 1 + max((depth(e) for e in t), default=0)
    return 0


def product(t: Any) -> int:
    """Product of all leaves (the size of a shape); 1 for ``()``."""
    if is_tuple(t):
        p = 1
        for e in t:
            p *= product(e)
        return p
    return t


def inner_product(a: Any, b: Any) -> Any:
    """Sum of products of corresponding leaves of congruent `a` and `b`."""
    if is_tuple(a):
        total: Any = 0
        for x, y in zip(a, b, strict=True):
            total = arith.add(total, inner_product(x, y))
        return total
    return arith.mul(a, b) if arith.is_symbolic(a) else a * b


def tuple_max(t: Any) -> int:
    """Largest leaf."""
    return max(flatten(t))


def signum(a: int) -> int:
    """-1, 0 or 1 with the sign of `a`."""
    return (a > 0) - (a < 0)


def ceil_div(a: int, b: int) -> int:
    """``⌈a / b⌉`` for positive `b`."""
    return -(-a // b)


def elem_scale(a: Any, b: Any) -> Any:
    """``a * product(b)`` leaf-wise for congruent tuples, else ``a * product(b)``."""
    if is_tuple(a):
        if not is_tuple(b) or len(a) != len(b):
            raise LayoutError("LAYOUT_INCONGRUENT", f"elem_scale({fmt(a)}, {fmt(b)}): operands are not congruent")
        return tuple(elem_scale(x, y) for x, y in zip(a, b, strict=True))
    return a * product(b)


def shape_div(a: Any, b: Any) -> Any:
    """Divide shape `a` by `b` from the left: CuTe's ``shape_div``.

    For ints, ``a / b`` when `b` divides `a`, and 1 when `a` divides `b` (the quotient is used
    up); any other pair violates the divisibility condition. A tuple `a` is divided mode by mode,
    the divisor shrinking as it is used up. Defining property: for ints with ``b | a``,
    ``shape_div(a, b) * b == a``.
    """
    if is_tuple(a):
        if is_tuple(b):
            if len(a) != len(b):
                raise LayoutError("LAYOUT_INCONGRUENT", f"shape_div({fmt(a)}, {fmt(b)}): ranks differ")
            return tuple(shape_div(x, y) for x, y in zip(a, b, strict=True))
        out = []
        for x in a:
            out.append(shape_div(x, b))
            b = shape_div(b, product(x))
        return tuple(out)
    if is_tuple(b):
        return shape_div(a, product(b))
    if a % b == 0:
        return a // b
    if b % a == 0:
        return signum(a * b)
    raise LayoutError(
        "LAYOUT_DIVISIBILITY",
        f"shape_div({a}, {b}): neither divides the other",
        "tile and shape extents must divide one another",
    )


def prefix_product(t: Any, init: int = 1) -> Any:
    """Exclusive prefix product, congruent with `t`: the compact column-major strides of shape `t`.

    ``prefix_product((4, (2, 3))) == (1, (4, 8))``.
    """
    if is_tuple(t):
        out = []
        for e in t:
            out.append(prefix_product(e, init))
            init = init * product(e)
        return tuple(out)
    return init


def suffix_product(t: Any, init: int = 1) -> Any:
    """Exclusive suffix product, congruent with `t`: the compact row-major strides of shape `t`."""
    if is_tuple(t):
        out = []
        for e in reversed(t):
            out.append(suffix_product(e, init))
            init = init * product(e)
        return tuple(reversed(out))
    return init


def congruent(a: Any, b: Any) -> bool:
    """True when `a` and `b` have the same tree structure (shape and stride of one layout)."""
    if is_tuple(a) and is_tuple(b):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b, strict=True))
    return not is_tuple(a) and not is_tuple(b)


def compatible(a: Any, b: Any) -> bool:
    """True when shape `a` is compatible with shape `b`: same size, and every coordinate of `a`
    is also a coordinate of `b` (an int in `a` may stand for a whole subtree of `b`)."""
    if is_tuple(a):
        return is_tuple(b) and len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b, strict=True))
    return a == product(b)


def has_none(t: Any) -> bool:
    """True when a coordinate contains ``None`` (it slices rather than evaluates)."""
    if is_tuple(t):
        return any(has_none(e) for e in t)
    return t is None


def crd2idx(crd: Any, shape: Any, stride: Any | None = None) -> Any:
    """Map a coordinate into an index through (`shape`, `stride`): CuTe's ``crd2idx``.

    `stride` defaults to the column-major ``prefix_product(shape)``. A hierarchical coordinate
    must be congruent with `shape` down to where it has an int; an int coordinate at a tuple
    node is split column-major over that node's modes, the last mode taking what is left (so a
    layout extends past its size along its last mode, as in CuTe). Leaves may be Z3 terms.
    """
    if stride is None:
        stride = prefix_product(shape)
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            raise LayoutError(
                "LAYOUT_BAD_COORDINATE",
                f"coordinate {fmt(crd)} is not congruent with shape {fmt(shape)}",
                "give one coordinate per mode, or a single integer index",
            )
        total: Any = 0
        for c, s, d in zip(crd, shape, stride, strict=True):
            total = arith.add(total, crd2idx(c, s, d))
        return total
    if crd is None:
        raise LayoutError("LAYOUT_BAD_COORDINATE", "a slice (None) cannot be evaluated to an index")
    if is_tuple(shape):
        if len(shape) == 0:
            return 0
        total = 0
        for s, d in zip(shape[:-1], stride[:-1], strict=True):
            n = product(s)
            total = arith.add(total, crd2idx(arith.mod(crd, n), s, d))
            crd = arith.floordiv(crd, n)
        return arith.add(total, crd2idx(crd, shape[-1], stride[-1]))
    return arith.mul(crd, stride) if arith.is_symbolic(crd) else crd * stride


def idx2crd(idx: Any, shape: Any, stride: Any | None = None) -> Any:
    """Map an index to the natural (hierarchical) coordinate of `shape`: CuTe's ``idx2crd``.

    With the default column-major `stride`, ``crd2idx(idx2crd(i, s), s) == i`` for ``0 <= i < size(s)``.
    """
    if stride is None:
        stride = prefix_product(shape)
    if is_tuple(idx):
        if not is_tuple(shape) or len(idx) != len(shape):
            raise LayoutError("LAYOUT_BAD_COORDINATE", f"index {fmt(idx)} is not congruent with shape {fmt(shape)}")
        return tuple(idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride, strict=True))
    if is_tuple(shape):
        return tuple(idx2crd(idx, s, d) for s, d in zip(shape, stride, strict=True))
    return arith.mod(arith.floordiv(idx, stride), shape)


def crd2crd(crd: Any, dst_shape: Any, src_shape: Any | None = None) -> Any:
    """Convert a coordinate of `src_shape` into the equivalent coordinate of `dst_shape`."""
    if is_tuple(crd):
        if is_tuple(dst_shape):
            if len(crd) != len(dst_shape):
                raise LayoutError(
                    "LAYOUT_BAD_COORDINATE", f"coordinate {fmt(crd)} is not congruent with shape {fmt(dst_shape)}"
                )
            return tuple(crd2crd(c, d, s) for c, d, s in zip(crd, dst_shape, src_shape, strict=True))
        if src_shape is None:
            raise LayoutError("LAYOUT_BAD_COORDINATE", f"crd2crd({fmt(crd)}, {dst_shape}) needs the source shape")
        return crd2idx(crd, src_shape)
    if is_tuple(dst_shape):
        return idx2crd(crd, dst_shape)
    return crd


def slice_(crd: Any, trg: Any) -> Any:
    """Keep the parts of `trg` where `crd` is ``None``: CuTe's ``slice``.

    Returns a tuple of the kept parts (a part that keeps a single mode is unwrapped); ``()``
    when nothing is kept.
    """
    if is_tuple(crd):
        if not is_tuple(trg) or len(crd) != len(trg):
            raise LayoutError("LAYOUT_BAD_COORDINATE", f"slice {fmt(crd)} is not congruent with {fmt(trg)}")
        out = []
        for c, t in zip(crd, trg, strict=True):
            if is_tuple(c):
                part = slice_(c, t)
                if part == ():
                    continue
                out.append(part[0] if len(part) == 1 else part)
            elif c is None:
                out.append(t)
        return tuple(out)
    if crd is None:
        return (trg,)
    return ()


def dice(crd: Any, trg: Any) -> Any:
    """Keep the parts of `trg` where `crd` is *not* ``None`` (the complement of `slice_`)."""
    if is_tuple(crd):
        if not is_tuple(trg) or len(crd) != len(trg):
            raise LayoutError("LAYOUT_BAD_COORDINATE", f"coordinate {fmt(crd)} is not congruent with {fmt(trg)}")
        out = []
        for c, t in zip(crd, trg, strict=True):
            if is_tuple(c):
                part = dice(c, t)
                if part == ():
                    continue
                out.append(part[0] if len(part) == 1 else part)
            elif c is not None:
                out.append(t)
        return tuple(out)
    if crd is None:
        return ()
    return (trg,)


def replace_none(crd: Any, value: int = 0) -> Any:
    """`crd` with every ``None`` replaced by `value`."""
    if is_tuple(crd):
        return tuple(replace_none(c, value) for c in crd)
    return value if crd is None else crd


def zip_tuples(items: Iterable[Any]) -> tuple:
    """Transpose a sequence of equal-length tuples."""
    return tuple(zip(*items, strict=True))
