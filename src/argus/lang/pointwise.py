"""Math on fragments: the elementwise functions (``T.exp``, ``T.maximum``, ``T.where``, ``T.cast``, ...), the
runtime comparisons ``T.eq`` / ``T.ne``, and the row and column reductions (``T.reduce_max``, ``T.reduce_sum``)."""

from __future__ import annotations

from typing import Any

from argus.ir.expr import BinaryOp, Expr, Select, as_expr, binary
from argus.ir.nodes import MapOp, Reduce, ReduceOp
from argus.ir.types import DType, f32, i32
from argus.lang.errors import DSLError, caller_loc
from argus.lang.fragment import BroadcastView, Fragment, emit_map, fragment_like, operand_of
from argus.lang.fragments import reduced_tv
from argus.lang.trace import current


def _unary(op: MapOp, x: Fragment) -> Fragment:
    if not isinstance(x, Fragment):
        raise DSLError("DSL_NOT_A_FRAGMENT", f"T.{op.value} works on fragments, got {type(x).__name__}")
    return emit_map(op, (x.ref,), x)


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


def exp2(x: Fragment, fma_every: int = 0) -> Fragment:
    """2^x. With `fma_every` P > 0, every P-th register of each thread (its registers P - 1, 2P - 1, ...; P = 1:
    all of them) is evaluated by a polynomial on the FMA pipe instead of the special-function unit, whose ``ex2``
    issues at a sixteenth of the FMA rate and bounds a softmax over short rows (attention at head dim 64). The value
    is 2^x either way, within a few f32 ulp (`argus.backend.cuda.codegen.prelude.EXP2_POLY`; 0 for x <= -127,
    as the special-function unit's subnormal results flush to 0; +inf from x >= 127.5, the top half binade below
    f32's overflow); the interpreter and the verifier see 2^x."""
    if not isinstance(fma_every, int) or isinstance(fma_every, bool) or fma_every < 0:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"T.exp2: fma_every is a number of registers (0: every exponential on the special-function unit), "
            f"not {fma_every!r}",
            loc=caller_loc(),
        )
    if not fma_every:
        return _unary(MapOp.EXP2, x)
    if not isinstance(x, Fragment):
        raise DSLError("DSL_NOT_A_FRAGMENT", f"T.exp2 works on fragments, got {type(x).__name__}")
    return emit_map(MapOp.EXP2_FMA, (x.ref, as_expr(fma_every)), x)


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


def _has_fragment(*xs: Any) -> bool:
    return any(isinstance(x, Fragment | BroadcastView) for x in xs)


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


def maximum(a: Any, b: Any) -> Any:
    """Elementwise maximum of a fragment and a fragment or scalar, in either order; of two scalars (run-time
    integers such as a loop's extent), the scalar expression ``max(a, b)``."""
    if not _has_fragment(a, b):
        return binary(BinaryOp.MAX, as_expr(a), as_expr(b))
    x, y = _fragment_first("maximum", a, b)
    return x._binary(MapOp.MAX, y)


def minimum(a: Any, b: Any) -> Any:
    """Elementwise minimum of a fragment and a fragment or scalar, in either order; of two scalars (run-time
    integers such as a loop's extent), the scalar expression ``min(a, b)``."""
    if not _has_fragment(a, b):
        return binary(BinaryOp.MIN, as_expr(a), as_expr(b))
    x, y = _fragment_first("minimum", a, b)
    return x._binary(MapOp.MIN, y)


def eq(a: Any, b: Any) -> Any:
    """The runtime condition ``a == b`` (Python's ``==`` on expressions and fragments compares identity). With a
    fragment operand: elementwise, 1 where equal and 0 elsewhere (for `T.where`), in that fragment's dtype."""
    if isinstance(a, Fragment | BroadcastView) or isinstance(b, Fragment | BroadcastView):
        return _binary(MapOp.EQ, a, b)
    return binary(BinaryOp.EQ, as_expr(a), as_expr(b))


def ne(a: Any, b: Any) -> Any:
    """The runtime condition ``a != b``; elementwise (1 / 0) with a fragment operand, as `eq`."""
    if isinstance(a, Fragment | BroadcastView) or isinstance(b, Fragment | BroadcastView):
        return _binary(MapOp.NE, a, b)
    return binary(BinaryOp.NE, as_expr(a), as_expr(b))


def index(x: Fragment, axis: int, dtype: DType = f32) -> Fragment:
    """A fragment like `x` whose every element is its own coordinate along `axis` of the tile
    (for masks: ``T.index(s, 1) + j * BN < N``), in `dtype`: f32, or i32 for integer arithmetic the compiler may
    reassociate (``T.index(s, 1, T.i32) - T.index(s, 0, T.i32) <= limit`` folds into one compare of an immediate
    per element, where the f32 difference is a register per element held across a loop)."""
    if not isinstance(x, Fragment) or not 0 <= axis < len(x.shape):
        raise DSLError("DSL_BAD_OPERAND", f"T.index takes a fragment and an axis below its rank, got axis {axis}")
    if dtype not in (f32, i32):
        raise DSLError("DSL_BAD_OPERAND", f"T.index makes f32 or i32 coordinates, not {dtype.name}")
    return emit_map(MapOp.COORD, (as_expr(axis),), x, dtype=dtype)


def where(cond: Fragment, a: Any, b: Any) -> Fragment:
    """Elementwise ``a if cond else b`` (`cond` nonzero means true). With a run-time scalar condition and scalar
    operands (block or loop indices, tensor elements, sizes), the scalar expression ``a if cond else b``."""
    if isinstance(cond, Expr) and not _has_fragment(a, b):
        a_e, b_e = as_expr(a), as_expr(b)
        return Select(cond, a_e, b_e, a_e.dtype)
    if not isinstance(cond, Fragment):
        raise DSLError("DSL_NOT_A_FRAGMENT", "T.where: the condition must be a fragment (e.g. from a comparison)")
    like = a if isinstance(a, Fragment) else b if isinstance(b, Fragment) else cond
    # the result's dtype: a's, else b's, else the condition's, a broadcast (``w[None, :]``) counting as its fragment
    # (before session 63 a broadcast `a` took the condition's dtype: f32 values selected by an i32 mask truncated)
    typed = [x.fragment if isinstance(x, BroadcastView) else x for x in (a, b)]
    dtype = next((x.dtype for x in typed if isinstance(x, Fragment)), cond.dtype)
    return emit_map(MapOp.SELECT, (cond.ref, operand_of(a, cond, "a"), operand_of(b, cond, "b")), like, dtype=dtype)


def fma(a: Fragment, b: Any, c: Any) -> Fragment:
    """``a * b + c`` in one rounding."""
    return emit_map(MapOp.FMA, (a.ref, operand_of(b, a, "b"), operand_of(c, a, "c")), a)


def cast(x: Fragment, dtype: DType) -> Fragment:
    """`x` converted to `dtype`: to a float type, rounded to nearest even; from a float to an integer type, truncated
    toward zero and saturated, NaN giving 0 (PTX ``cvt.rzi``); between integer types, wrapped."""
    return emit_map(MapOp.CAST, (x.ref,), x, dtype=dtype)


def _reduce(op: ReduceOp, x: Fragment, axis: int) -> Fragment:
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
    out = fragment_like(x, shape=kept, tv=tv)
    current("T.reduce").emit(Reduce(op, out.ref, x.ref, axis, lanes, loc=loc))
    return out


def reduce_max(x: Fragment, axis: int = 1) -> Fragment:
    """Maximum along `axis` of a 2-D fragment; the result is held by every thread of each row."""
    return _reduce(ReduceOp.MAX, x, axis)


def reduce_sum(x: Fragment, axis: int = 1) -> Fragment:
    """Sum along `axis` of a 2-D fragment; the result is held by every thread of each row."""
    return _reduce(ReduceOp.SUM, x, axis)
