"""Register tiles (`Fragment`) and their arithmetic: every operator on a fragment emits an elementwise `Map` into a
new fragment, after checking that the values are of the kind the operation takes and that each thread holds every
element it reads."""

from __future__ import annotations

from typing import Any

from argus.ir.expr import Expr, as_expr
from argus.ir.nodes import (
    FLOAT_MAP_OPS,
    INTEGER_MAP_OPS,
    Alloc,
    Broadcast,
    Buffer,
    Map,
    MapOp,
    Space,
    map_compute_dtype,
    whole,
)
from argus.ir.types import DType
from argus.lang.errors import DSLError, caller_loc
from argus.lang.fragments import colmajor_index, owners
from argus.lang.tiles import Tile, check_same_shape
from argus.lang.trace import current
from argus.layout import Layout


class Fragment(Tile):
    """A register tile. Arithmetic on fragments emits elementwise operations into a new fragment."""

    def _binary(self, op: MapOp, other: Any, reverse: bool = False) -> Fragment:
        operand = operand_of(other, self, "the other operand")
        srcs = (operand, self.ref) if reverse else (self.ref, operand)
        return emit_map(op, srcs, self)

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
        return emit_map(MapOp.INVERT, (self.ref,), self)

    def __neg__(self) -> Fragment:
        return emit_map(MapOp.NEG, (self.ref,), self)

    def __abs__(self) -> Fragment:
        return emit_map(MapOp.ABS, (self.ref,), self)

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

    def __getitem__(self, key: Any) -> BroadcastView:
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
        return BroadcastView(self, axes)


class BroadcastView:
    def __init__(self, fragment: Fragment, axes: tuple[int, ...]) -> None:
        self.fragment = fragment
        self.axes = axes


def operand_of(x: Any, like: Fragment, what: str) -> Any:
    if isinstance(x, Fragment):
        return x.ref
    if isinstance(x, BroadcastView):
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


def fragment_like(
    f: Fragment, dtype: DType | None = None, shape: tuple[int, ...] | None = None, tv: Layout | None = None
):
    st = current("fragment math")
    b = f.buffer
    buffer = Buffer(
        st.value_name("r"),
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


def _check_owned(op: str, dst: Fragment, operand: Any, loc: Any) -> None:
    """Every element an elementwise op reads must be held by the thread that writes the result."""
    if isinstance(operand, Expr):
        return
    ref = operand.ref if isinstance(operand, Broadcast) else operand
    if ref.buffer.space != Space.FRAGMENT:
        raise DSLError("DSL_NOT_A_FRAGMENT", f"{op}: operands must be fragments", loc=loc)

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
        check_same_shape(op, src_shape, dst_shape, loc)
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


def emit_map(op: MapOp, srcs: tuple, like: Fragment, dtype: DType | None = None) -> Fragment:
    loc = caller_loc()
    _check_value_kinds(op, srcs, dtype or like.dtype, loc)
    for operand in srcs:
        _check_owned(f"fragment {op.value}", like, operand, loc)
    out = fragment_like(like, dtype=dtype)
    current("fragment math").emit(Map(op, out.ref, srcs, loc=loc))
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
