"""Pointwise math and reductions on fragments, in registers.

* `map_rule` — ``dst[v] = op(operands)`` for every value of the thread (`elementwise`): a fragment operand is read
  from the register that holds the element ``dst[v]`` needs (the same index in every thread, from the layouts:
  `placement.gather_slots`), a scalar as given; as a loop over the registers where the indices are a layout of
  ``v``. ``T.index`` (`MapOp.COORD`) writes each value's tile coordinate. Operations become CUDA's f32 math
  functions on floats and C's operators on integers, with Python's ``//`` and ``%`` (`map_function`);
* `reduce` — a thread combines its own values of each result, then XOR shuffles over ``shuffle_lanes`` combine
  the lanes that hold the other values of the row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from argus.backend.cuda.codegen import placement as pl
from argus.backend.cuda.codegen.addressing import fragment_coords
from argus.backend.cuda.codegen.cexpr import compute_ctype, convert, float_literal, paren
from argus.backend.cuda.codegen.context import Context
from argus.ir.expr import Const, Expr
from argus.ir.nodes import Broadcast, Buffer, Map, MapOp, Reduce, ReduceOp, Space, TileRef, map_compute_dtype
from argus.ir.types import DTypeKind


def map_rule(cx: Context, s: Map) -> None:
    """`Map`: elementwise, in registers (`MapOp.COORD`: each value's tile coordinate)."""
    if not s.dst.is_whole():
        raise cx.error("elementwise operations on part of a fragment")
    dst = s.dst.buffer
    if s.op == MapOp.COORD:
        _coordinates(cx, dst, s.srcs[0])
        return
    if s.op == MapOp.EXP2_FMA:
        _exp2_split(cx, dst, s)
        return
    compute = _compute_type(dst, s.srcs)
    try:
        fn = _map_function(s.op, compute)
    except ValueError:
        raise cx.invalid(f"elementwise {s.op.value} on {compute} values (the tracer refuses it)") from None
    if s.op in (MapOp.FLOORDIV, MapOp.MOD) and compute == "int":
        cx.use("floor")  # argus::floordiv / floormod: Python's // and %
    if s.op == MapOp.EXP2:
        cx.use("exp2")  # argus::exp2_approx
    elementwise(cx, dst, list(s.srcs), fn, s.op.value, compute)


def _exp2_split(cx: Context, dst: Buffer, s: Map) -> None:
    """``T.exp2(x, fma_every=P)``: every P-th register of the thread's values on the FMA pipe (`argus::exp2_split`,
    resolved per register once the loop is unrolled), the others on the special-function unit."""
    every = s.srcs[1]
    if not isinstance(every, Const) or not isinstance(every.value, int) or every.value < 1:
        raise cx.error("T.exp2(x, fma_every=P) with P not a positive constant")
    cx.use("exp2_fma")
    p = every.value
    split = lambda a, v: f"argus::exp2_split<{p}>({a[0]}, {v})"  # noqa: E731
    elementwise(cx, dst, [s.srcs[0]], split, "exp2", "float", indexed=True)


def _coordinates(cx: Context, dst: Buffer, axis_expr: Any) -> None:
    """``dst[v]`` = the tile coordinate of value ``v`` along `axis` (``T.index``)."""
    if not isinstance(axis_expr, Const) or not isinstance(axis_expr.value, int):
        raise cx.error("T.index with an axis that is not a constant")
    axis = int(axis_expr.value)
    p = pl.placement(dst)
    dst_c = cx.dtype_c(dst.dtype)
    name = cx.buffer_name(dst)
    with cx.block():
        at = fragment_coords(cx, p, only=axis)
        for v in range(p.values):
            cx.line(f"{name}[{v}] = {convert(at(v)[axis], 'int', dst_c)};")


def _compute_type(dst: Buffer, operands: list[Any] | tuple[Any, ...]) -> str:
    return compute_ctype(map_compute_dtype(dst.dtype, operands))


def elementwise(
    cx: Context,
    dst: Buffer,
    operands: list[Any],
    fn: Callable[..., str],
    what: str,
    compute: str | None = None,
    indexed: bool = False,
) -> None:
    """``dst[v] = fn(operand values)`` for every value of the thread: fragment operands read the
    register that holds the needed element (the same index in every thread), scalars as given. With `indexed`,
    ``fn(operand values, v)`` also gets the register's index (C text: the loop's variable or a number)."""
    compute = compute or _compute_type(dst, operands)
    dst_c = cx.dtype_c(dst.dtype)
    values = dst.values_per_thread
    readers: list[Callable[[str | int], str]] = []
    loopable = True
    for operand in operands:
        if isinstance(operand, TileRef | Broadcast):
            ref = operand.ref if isinstance(operand, Broadcast) else operand
            axes = operand.axes if isinstance(operand, Broadcast) else ()
            if ref.space != Space.FRAGMENT or not ref.is_whole():
                raise cx.error(f"{what} on a {ref.space.value} operand (elementwise math needs whole fragments)")
            src = ref.buffer
            if src.tv == dst.tv and not axes and src.values_per_thread == values:
                slots = np.arange(values)
            else:
                found = pl.gather_slots(dst, src, tuple(axes))
                if found is None:
                    raise cx.error(
                        f"{what}: {src.name} holds the elements {dst.name} needs in registers whose index differs "
                        "between threads",
                        "allocate both fragments with the same layout",
                    )
                slots = found
            f = pl.fit(slots)
            name = cx.buffer_name(src)
            src_c = cx.dtype_c(src.dtype)
            if f is None:
                loopable = False
            readers.append(_register_reader(name, slots, f, src_c, compute))
        else:
            text = _scalar_operand(cx, operand, compute)
            readers.append(lambda _v, text=text: text)
    name = cx.buffer_name(dst)
    if loopable and values > 1:
        v = cx.local("v")
        result = convert(fn([r(v) for r in readers], v) if indexed else fn([r(v) for r in readers]), compute, dst_c)
        cx.line("#pragma unroll")
        cx.line(f"for (int {v} = 0; {v} < {values}; ++{v}) {name}[{v}] = {result};")
        cx.forget(v)  # scoped to its loop
        return
    for j in range(values):
        args = [r(j) for r in readers]
        result = convert(fn(args, str(j)) if indexed else fn(args), compute, dst_c)
        cx.line(f"{name}[{j}] = {result};")


def _scalar_operand(cx: Context, e: Any, compute: str) -> str:
    if isinstance(e, Const) and not isinstance(e.value, bool):
        if compute == "float":
            return float_literal(float(e.value))
        return str(int(e.value))
    if isinstance(e, Expr):
        text = cx.expr(e)
        src = cx.dtype_c(e.dtype)
        return convert(text, src, compute) if src != compute else text
    raise cx.invalid(f"operand {e!r}")


# --- reduce ---------------------------------------------------------------------------------------------------


def reduce(cx: Context, s: Reduce) -> None:
    """`Reduce` along one axis of a 2-d fragment: each thread's values, then XOR shuffles over ``shuffle_lanes``."""
    dst, src = s.dst.buffer, s.src.buffer
    if not (s.dst.is_whole() and s.src.is_whole()):
        raise cx.error("reductions of part of a fragment")
    if len(src.static_shape) != 2:
        raise cx.invalid(f"reduction of a {len(src.static_shape)}-D fragment")
    groups = pl.reduce_groups(dst, src, s.axis)
    if groups is None:
        raise cx.error(
            "a reduction whose values per result differ between threads",
            "use a fragment layout in which every thread holds the same pattern of values",
        )
    compute = "float" if src.dtype.kind is DTypeKind.FLOAT or dst.dtype.kind is DTypeKind.FLOAT else "int"
    src_c, dst_c = cx.dtype_c(src.dtype), cx.dtype_c(dst.dtype)
    combine = _combine(s.op, compute)
    identity = _identity(s.op, compute)
    sname, dname = cx.buffer_name(src), cx.buffer_name(dst)
    direct = dst_c == compute and not s.accumulate  # reduce straight into the result's registers
    with cx.block():
        partial = []
        for j, group in enumerate(groups):
            terms = [convert(f"{sname}[{v}]", src_c, compute) for v in group]
            text = identity if not terms else terms[0]
            for t in terms[1:]:
                text = combine(text, t)
            if direct:
                target = f"{dname}[{j}]"
                cx.line(f"{target} = {text};")
            else:
                target = cx.local(f"partial{j}")
                cx.line(f"{compute} {target} = {text};")
            partial.append(target)
        for lane in s.shuffle_lanes:
            for target in partial:
                shuffled = f"__shfl_xor_sync(0xffffffffu, {target}, {lane})"
                cx.line(f"{target} = {combine(target, shuffled)};")
        if not direct:
            for j, target in enumerate(partial):
                value = combine(target, convert(f"{dname}[{j}]", dst_c, compute)) if s.accumulate else target
                cx.line(f"{dname}[{j}] = {convert(value, compute, dst_c)};")


# --- C text of operations ---------------------------------------------------------------------------------------


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
        MapOp.EXP2: lambda a: f"argus::exp2_approx({a})",
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
