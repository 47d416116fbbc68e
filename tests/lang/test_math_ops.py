"""Elementwise math on fragments, through every layer: each operation traces to its `MapOp`, runs on the
interpreter at a partial tile (masked rows and columns) with torch's value, verifies, survives serialization,
and is refused with a stable code where it has no meaning (bitwise operations on floats, ``/`` on integers).

Semantics pinned here (the DSL reference states them):

* float results are the exact value rounded once to the destination (CUDA's ``tanhf``, ``erff``, ... are within
  an ulp or two of it);
* ``//`` and ``%`` on integer fragments are Python's (floored; ``%`` takes the divisor's sign), as
  ``torch.div(rounding_mode="floor")`` and ``torch.remainder``; ``T.fmod`` is C's (truncated; the sign of the
  dividend), as ``torch.fmod``; ``%`` and ``//`` on floats are refused (``DSL_INTEGER_OP``);
* integer arithmetic wraps at 32 bits, ``>>`` is arithmetic on i32 and logical on u32;
* comparisons give 1 / 0 in the left operand's dtype; ``T.eq`` / ``T.ne`` compare fragments elementwise and
  still build scalar conditions from scalars.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

import argus
import argus.lang as T
from argus.eval.costmodel import _HEAVY_MAP_OPS
from argus.ir.expr import BinOp
from argus.ir.nodes import MAP_ARITY, Map, MapOp, walk
from argus.ir.printer import format_kernel
from argus.ir.serialize import kernel_from_json, kernel_to_json
from argus.lang import DSLError
from argus.lang.tags import assert_tag
from argus.verify import verify
from argus.verify.report import Verdict

M, N = 13, 100  # tiles of (8, 64): the last row and column tiles are partial
F32_ULP = 2.0**-23


def _elementwise(fn):
    """``C = fn(a, b)`` over (8, 64) tiles of A and B (fragments of their dtypes); C may have another dtype."""

    @argus.kernel
    def elementwise(
        A: T.Tensor[("M", "N"), "DT"],
        B: T.Tensor[("M", "N"), "DT"],
        C: T.Tensor[("M", "N"), "OUT"],
        DT: str = "f32",
        OUT: str = "f32",
        BM: int = 8,
        BN: int = 64,
    ):
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
            a = T.alloc_fragment((BM, BN), A.dtype)
            b = T.alloc_fragment((BM, BN), B.dtype)
            T.copy(A.tile((bm, bn), (BM, BN)), a)
            T.copy(B.tile((bm, bn), (BM, BN)), b)
            T.copy(fn(a, b), C.tile((bm, bn), (BM, BN)))

    return elementwise


def _run(fn, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype, **params) -> torch.Tensor:
    c = torch.zeros(a.shape, dtype=out_dtype)
    _elementwise(fn)(a, b, c, device="cpu", **params)
    return c


def _uniform(low: float, high: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (low + (high - low) * torch.rand((M, N), generator=g, dtype=torch.float64)).float()


def _small(seed: int) -> torch.Tensor:
    """Values of both signs from 1e-20 to 1: where log1p and expm1 differ from log(1 + x) and exp(x) - 1, even
    when those are computed in float64."""
    g = torch.Generator().manual_seed(seed)
    magnitude = 10.0 ** (-20.0 * torch.rand((M, N), generator=g, dtype=torch.float64))
    sign = torch.where(torch.rand((M, N), generator=g) < 0.5, -1.0, 1.0).double()
    return (sign * magnitude * 0.9).float()


def _f32_of(f64_result: torch.Tensor) -> torch.Tensor:
    return f64_result.float()


# --- float math ------------------------------------------------------------------------------------------------

# (name, DSL, torch on float64, domain of a, domain of b); the interpreter rounds the exact value once, so it agrees
# with torch's float64 result rounded to f32 to within an ulp.
UNARY = [
    ("tanh", lambda a, b: T.tanh(a), torch.tanh, (-5.0, 5.0)),
    ("erf", lambda a, b: T.erf(a), torch.special.erf, (-3.0, 3.0)),
    ("log", lambda a, b: T.log(a), torch.log, (1e-3, 100.0)),
    ("log2", lambda a, b: T.log2(a), torch.log2, (1e-3, 100.0)),
    ("log1p", lambda a, b: T.log1p(a), torch.log1p, "small"),
    ("expm1", lambda a, b: T.expm1(a), torch.expm1, "small"),
    ("sigmoid", lambda a, b: T.sigmoid(a), torch.sigmoid, (-30.0, 30.0)),
    ("sin", lambda a, b: T.sin(a), torch.sin, (-10.0, 10.0)),
    ("cos", lambda a, b: T.cos(a), torch.cos, (-10.0, 10.0)),
    ("rcp", lambda a, b: T.rcp(a), torch.reciprocal, (0.1, 10.0)),
    ("rtruediv", lambda a, b: 2.0 / a, lambda x: 2.0 / x, (0.1, 10.0)),
    ("abs", lambda a, b: T.abs(a), torch.abs, (-5.0, 5.0)),
    ("builtin abs", lambda a, b: abs(a), torch.abs, (-5.0, 5.0)),
    ("floor", lambda a, b: T.floor(a), torch.floor, (-10.0, 10.0)),
    ("ceil", lambda a, b: T.ceil(a), torch.ceil, (-10.0, 10.0)),
]


@pytest.mark.parametrize(("name", "dsl", "reference", "domain"), UNARY, ids=[u[0] for u in UNARY])
def test_float_unary_matches_torch(name, dsl, reference, domain) -> None:
    a = _small(1) if domain == "small" else _uniform(*domain, seed=1)
    got = _run(dsl, a, torch.ones_like(a), torch.float32)
    want = _f32_of(reference(a.double()))
    torch.testing.assert_close(got, want, rtol=F32_ULP, atol=0.0)
    # and torch's own f32 kernels agree to a few ulps (what a user compares against)
    torch.testing.assert_close(got, reference(a), rtol=4 * F32_ULP, atol=1e-7)


def test_floor_and_ceil_are_exact_on_integers_and_halves() -> None:
    a = (torch.arange(M * N, dtype=torch.float32).reshape(M, N) - M * N / 2) / 2  # ..., -1.0, -0.5, 0.0, 0.5, ...
    assert torch.equal(_run(lambda a, b: T.floor(a), a, a, torch.float32), torch.floor(a))
    assert torch.equal(_run(lambda a, b: T.ceil(a), a, a, torch.float32), torch.ceil(a))


BINARY = [
    ("pow", lambda a, b: T.pow(a, b), torch.pow, (0.1, 4.0), (-3.0, 3.0)),
    ("**", lambda a, b: a**b, torch.pow, (0.1, 4.0), (-3.0, 3.0)),
    ("** 2", lambda a, b: a**2, lambda a, b: a**2, (-4.0, 4.0), (0.0, 1.0)),
    ("2 **", lambda a, b: 2.0**a, lambda a, b: 2.0**a, (-4.0, 4.0), (0.0, 1.0)),
    ("fmod", lambda a, b: T.fmod(a, b), torch.fmod, (-10.0, 10.0), (-3.0, 3.0)),
    ("fmod scalar", lambda a, b: T.fmod(a, 0.75), lambda a, b: torch.fmod(a, 0.75), (-10.0, 10.0), (0.0, 1.0)),
]


@pytest.mark.parametrize(("name", "dsl", "reference", "a_domain", "b_domain"), BINARY, ids=[u[0] for u in BINARY])
def test_float_binary_matches_torch(name, dsl, reference, a_domain, b_domain) -> None:
    a, b = _uniform(*a_domain, seed=2), _uniform(*b_domain, seed=3)
    got = _run(dsl, a, b, torch.float32)
    torch.testing.assert_close(got, _f32_of(reference(a.double(), b.double())), rtol=F32_ULP, atol=0.0)


def test_fmod_takes_the_sign_of_the_dividend_and_is_exact() -> None:
    a, b = _uniform(-10.0, 10.0, seed=4), _uniform(-3.0, 3.0, seed=5)
    got = _run(lambda a, b: T.fmod(a, b), a, b, torch.float32)
    assert torch.equal(got, torch.fmod(a, b))  # fmod of two floats is representable: no rounding at all
    nonzero = got != 0
    assert torch.equal(torch.sign(got[nonzero]), torch.sign(a[nonzero]))


COMPARISONS = [
    ("<", lambda a, b: a < b, torch.lt),
    ("<=", lambda a, b: a <= b, torch.le),
    (">", lambda a, b: a > b, torch.gt),
    (">=", lambda a, b: a >= b, torch.ge),
    ("T.eq", lambda a, b: T.eq(a, b), torch.eq),
    ("T.ne", lambda a, b: T.ne(a, b), torch.ne),
    ("scalar <=", lambda a, b: a <= 0.25, lambda a, b: a <= 0.25),
    ("scalar >= (reflected)", lambda a, b: 0.25 >= a, lambda a, b: 0.25 >= a),
    ("T.eq scalar first", lambda a, b: T.eq(0.5, a), lambda a, b: a == 0.5),
]


@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize(("name", "dsl", "reference"), COMPARISONS, ids=[c[0] for c in COMPARISONS])
def test_comparisons_give_one_and_zero(name, dsl, reference, dtype: str) -> None:
    g = torch.Generator().manual_seed(6)
    a = torch.randint(-3, 4, (M, N), generator=g).float() / 2  # many equal pairs, and 0.5 / 0.25 hits
    b = torch.where(torch.rand((M, N), generator=g) < 0.3, a, torch.randint(-3, 4, (M, N), generator=g).float() / 2)
    if dtype == "i32":
        a, b = (a * 2).int(), (b * 2).int()
    out = torch.float32 if dtype == "f32" else torch.int32
    got = _run(dsl, a, b, out, DT=dtype, OUT=dtype)
    assert torch.equal(got, reference(a, b).to(out))


def test_where_with_a_comparison_masks_elements() -> None:
    a, b = _uniform(-1.0, 1.0, seed=7), _uniform(-1.0, 1.0, seed=8)
    got = _run(lambda a, b: T.where(a >= b, a, T.sigmoid(b)), a, b, torch.float32)
    torch.testing.assert_close(got, torch.where(a >= b, a, torch.sigmoid(b.double()).float()), rtol=F32_ULP, atol=0)


def test_integer_coordinates_mask_as_the_float_ones_do() -> None:
    # T.index(x, axis, T.i32): the tile coordinates as integers (a mask the compiler may fold); both give one mask
    a, b = _uniform(-1.0, 1.0, seed=9), _uniform(-1.0, 1.0, seed=10)
    rows = (torch.arange(M) % 8)[:, None]
    cols = (torch.arange(N) % 64)[None, :]
    want = torch.where(cols - rows <= 3, a, b)
    for dtype in (T.i32, T.f32):
        got = _run(
            lambda a, b, dt=dtype: T.where(T.index(a, 1, dt) - T.index(a, 0, dt) <= 3, a, b), a, b, torch.float32
        )
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(DSLError, match="f32 or i32 coordinates"):
        _run(lambda a, b: T.where(T.index(a, 1, T.f16) < 3, a, b), a, b, torch.float32)


def test_eq_and_ne_still_build_scalar_conditions() -> None:
    from argus.ir.expr import BinaryOp, Var, VarKind

    x = Var("x", VarKind.BLOCK)
    assert isinstance(T.eq(x, 3), BinOp) and T.eq(x, 3).op == BinaryOp.EQ
    assert isinstance(T.ne(x, 3), BinOp) and T.ne(x, 3).op == BinaryOp.NE


# --- integer math ----------------------------------------------------------------------------------------------

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _ints(low: int, high: int, seed: int, nonzero: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(low, high, (M, N), generator=g, dtype=torch.int64)
    if nonzero:
        x = torch.where(x == 0, 1, x)
    return x.to(torch.int32)


INTEGER = [
    ("//", lambda a, b: a // b, lambda a, b: torch.div(a, b, rounding_mode="floor"), "divisor"),
    ("%", lambda a, b: a % b, torch.remainder, "divisor"),
    ("fmod", lambda a, b: T.fmod(a, b), torch.fmod, "divisor"),
    ("// scalar", lambda a, b: a // -7, lambda a, b: torch.div(a, -7, rounding_mode="floor"), "divisor"),
    ("% scalar", lambda a, b: a % 7, lambda a, b: torch.remainder(a, 7), "divisor"),
    ("rfloordiv", lambda a, b: 1000 // b, lambda a, b: torch.div(1000, b, rounding_mode="floor"), "divisor"),
    ("&", lambda a, b: a & b, torch.bitwise_and, "full"),
    ("|", lambda a, b: a | b, torch.bitwise_or, "full"),
    ("^", lambda a, b: a ^ b, torch.bitwise_xor, "full"),
    ("& mask", lambda a, b: 0xFF & a, lambda a, b: a & 0xFF, "full"),
    ("~", lambda a, b: ~a, lambda a, b: ~a, "full"),
    ("<<", lambda a, b: a << b, torch.bitwise_left_shift, "shift"),
    (">>", lambda a, b: a >> b, torch.bitwise_right_shift, "shift"),
    ("<< scalar", lambda a, b: a << 5, lambda a, b: a << 5, "full"),
    ("+ wraps", lambda a, b: a + b, torch.add, "full"),
    ("* wraps", lambda a, b: a * b, torch.mul, "full"),
    ("abs", lambda a, b: abs(a), lambda a, b: torch.abs(a), "full"),
    ("max", lambda a, b: T.maximum(a, b), torch.maximum, "full"),
]


def _int_operands(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    if kind == "divisor":  # both signs, exact multiples among them
        a, b = _ints(-1000, 1000, seed=9), _ints(-40, 40, seed=10, nonzero=True)
        a[0] = b[0] * 3  # exact quotients, positive and negative
        return a, b
    if kind == "shift":
        return _ints(I32_MIN, I32_MAX, seed=11), _ints(0, 32, seed=12)
    a, b = _ints(I32_MIN, I32_MAX, seed=13), _ints(I32_MIN, I32_MAX, seed=14)
    a[0, :4] = torch.tensor([I32_MIN, I32_MAX, -1, 0], dtype=torch.int32)
    return a, b


@pytest.mark.parametrize(("name", "dsl", "reference", "kind"), INTEGER, ids=[i[0] for i in INTEGER])
def test_i32_ops_are_exact(name, dsl, reference, kind: str) -> None:
    a, b = _int_operands(kind)
    got = _run(dsl, a, b, torch.int32, DT="i32", OUT="i32")
    assert torch.equal(got, reference(a, b).to(torch.int32))


def test_floor_division_and_modulo_agree_with_python() -> None:
    """``a == (a // b) * b + a % b`` and ``a % b`` has the sign of ``b``, as for Python ints."""
    a, b = _int_operands("divisor")
    q = _run(lambda a, b: a // b, a, b, torch.int32, DT="i32", OUT="i32")
    r = _run(lambda a, b: a % b, a, b, torch.int32, DT="i32", OUT="i32")
    rows = zip(*(t.flatten().tolist() for t in (a, b, q, r)), strict=True)
    assert all((qq, rr) == (x // y, x % y) for x, y, qq, rr in rows)


U32 = [
    (">> is logical", lambda a, b: a >> b, lambda a, b: a >> b),
    ("//", lambda a, b: a // b, lambda a, b: a // b),
    ("%", lambda a, b: a % b, lambda a, b: a % b),
    ("~", lambda a, b: ~a, lambda a, b: ~a),
    ("- wraps", lambda a, b: a - b, lambda a, b: a - b),
]


@pytest.mark.parametrize(("name", "dsl", "reference"), U32, ids=[u[0] for u in U32])
def test_u32_ops_are_exact(name, dsl, reference) -> None:
    rng = np.random.default_rng(15)
    a = rng.integers(0, 2**32, (M, N), dtype=np.uint64).astype(np.uint32)
    b = rng.integers(1, 32, (M, N)).astype(np.uint32)
    c = np.zeros((M, N), dtype=np.uint32)
    _elementwise(dsl)(a, b, c, device="cpu", DT="u32", OUT="u32")
    assert np.array_equal(c, reference(a, b).astype(np.uint32))


def test_cast_to_i32_truncates_toward_zero() -> None:
    a = _uniform(-100.0, 100.0, seed=16)
    a[0, :4] = torch.tensor([-2.5, -0.5, 0.5, 2.5])
    got = _run(lambda a, b: T.cast(a, T.i32), a, a, torch.int32, OUT="i32")
    assert torch.equal(got, a.to(torch.int32))


# --- verification, serialization, the printer ------------------------------------------------------------------


def _all_float_ops(a, b):
    y = T.tanh(a) + T.erf(a) + T.log(b) + T.log2(b) + T.log1p(b) + T.expm1(a) + abs(a) + T.sigmoid(a)
    y = y + T.sin(a) + T.cos(a) + T.floor(a) + T.ceil(a) + T.rcp(b) + b**a + T.fmod(a, b)
    return y + (a <= b) + (a > b) + (a >= b) + T.eq(a, b) + T.ne(a, 0.0)


def _all_integer_ops(a, b):
    y = (a // b) + (a % b) + (a & b) + (a | b) + (a ^ b) + (a << 3) + (a >> 2) + ~a + T.fmod(a, b)
    return y + (a <= b) + T.eq(a, b) + T.ne(a, b)


NEW_OPS = {
    MapOp.TANH, MapOp.ERF, MapOp.LOG, MapOp.LOG2, MapOp.LOG1P, MapOp.EXPM1, MapOp.ABS, MapOp.SIGMOID, MapOp.SIN,
    MapOp.COS, MapOp.FLOOR, MapOp.CEIL, MapOp.RCP, MapOp.POW, MapOp.FMOD, MapOp.LE, MapOp.EQ, MapOp.NE,
    MapOp.FLOORDIV, MapOp.MOD, MapOp.AND, MapOp.OR, MapOp.XOR, MapOp.SHL, MapOp.SHR, MapOp.INVERT,
}  # fmt: skip


def _traced_ops(fn, dtype: str) -> tuple[object, set[MapOp]]:
    kernel = _elementwise(fn).trace(DT=dtype, OUT=dtype)
    return kernel, {s.op for s in walk(kernel.body) if isinstance(s, Map)}


def test_every_new_operation_traces_to_its_map_op() -> None:
    _, float_ops = _traced_ops(_all_float_ops, "f32")
    _, integer_ops = _traced_ops(_all_integer_ops, "i32")
    assert NEW_OPS <= float_ops | integer_ops
    assert all(MAP_ARITY[op] in (1, 2, 3) for op in MapOp) and set(MAP_ARITY) == set(MapOp)


@pytest.mark.parametrize(("fn", "dtype"), [(_all_float_ops, "f32"), (_all_integer_ops, "i32")], ids=["f32", "i32"])
def test_kernels_with_the_new_operations_verify(fn, dtype: str) -> None:
    result = verify(_elementwise(fn), DT=dtype, OUT=dtype)
    assert result.verdict == Verdict.VERIFIED, result.codes()


def _tag_kernel(name: str):
    @argus.kernel
    def tagged(A: T.Tensor[("N",), T.f32], B: T.Tensor[("N",), T.f32], C: T.Tensor[("N",), T.f32], BLOCK: int = 512):
        with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):
            a = T.alloc_fragment((BLOCK,), T.f32)
            b = T.alloc_fragment((BLOCK,), T.f32)
            T.copy(A.tile(bx, BLOCK), a)
            T.copy(B.tile(bx, BLOCK), b)
            y = T.fmod(T.tanh(T.erf(a)) ** b, b) + T.sigmoid(b)
            assert_tag(lambda t: (t.name == name) & (t[0] == bx * BLOCK + t.coord[0]), y)
            T.copy(y, C.tile(bx, BLOCK))

    return tagged


def test_results_carry_the_tags_of_their_first_operand() -> None:
    assert verify(_tag_kernel("A")).verdict == Verdict.VERIFIED
    wrong = verify(_tag_kernel("B"))
    assert wrong.verdict == Verdict.VIOLATED and wrong.codes() == ["TAG_ASSERT"]


@pytest.mark.parametrize(("fn", "dtype"), [(_all_float_ops, "f32"), (_all_integer_ops, "i32")], ids=["f32", "i32"])
def test_map_ops_round_trip_through_serialization_and_print_by_name(fn, dtype: str) -> None:
    kernel, ops = _traced_ops(fn, dtype)
    again = kernel_from_json(kernel_to_json(kernel))
    assert [s.op for s in walk(again.body) if isinstance(s, Map)] == [
        s.op for s in walk(kernel.body) if isinstance(s, Map)
    ]
    text = format_kernel(kernel)
    assert format_kernel(again) == text
    assert all(f"= {op.value}(" in text for op in ops)


def test_the_cost_model_names_real_operations() -> None:
    values = {op.value for op in MapOp}
    assert _HEAVY_MAP_OPS <= values
    assert {"tanh", "erf", "log", "log1p", "expm1", "pow", "sigmoid", "sin", "cos"} <= _HEAVY_MAP_OPS


# --- refusals --------------------------------------------------------------------------------------------------


def _line_of(marker: str) -> int:
    lines = pathlib.Path(__file__).read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.rstrip().endswith(f"# <- {marker}"))


# (name, dtype, DSL, code, what the message says, the marker of the DSL's line)
REFUSED = [
    ("bitwise on floats", "f32", lambda a, b: a & b, "DSL_INTEGER_OP", "& works on integer fragments", "and"),  # <- and
    ("% on floats", "f32", lambda a, b: a % b, "DSL_INTEGER_OP", "T.fmod(a, b)", "mod"),  # <- mod
    ("// on floats", "f32", lambda a, b: a // 2, "DSL_INTEGER_OP", "T.floor(a / b)", "floordiv"),  # <- floordiv
    ("~ on floats", "f32", lambda a, b: ~a, "DSL_INTEGER_OP", "T.cast", "invert"),  # <- invert
    ("shift by a float", "i32", lambda a, b: a << 1.5, "DSL_INTEGER_OP", "operands i32, f32", "shl"),  # <- shl
    ("/ on integers", "i32", lambda a, b: a / b, "DSL_FLOAT_OP", "use // for integer", "div"),  # <- div
    ("tanh on integers", "i32", lambda a, b: T.tanh(a), "DSL_FLOAT_OP", "T.cast the fragment", "tanh"),  # <- tanh
    ("pow on integers", "i32", lambda a, b: a**2, "DSL_FLOAT_OP", "T.pow (**) works on float", "pow"),  # <- pow
]


@pytest.mark.parametrize(("name", "dtype", "dsl", "code", "says", "marker"), REFUSED, ids=[r[0] for r in REFUSED])
def test_meaningless_combinations_are_refused_at_the_users_line(name, dtype, dsl, code, says, marker) -> None:
    with pytest.raises(DSLError) as info:
        _elementwise(dsl).trace(DT=dtype, OUT=dtype)
    err = info.value
    text = str(err)
    assert err.code == code and says in text, text
    assert err.loc is not None and err.loc.file == __file__ and err.loc.line == _line_of(marker)
    assert "argus/lang" not in text


def test_the_interpreter_refuses_ir_the_tracer_would_refuse() -> None:
    import dataclasses

    from argus.interp import run_kernel
    from argus.interp.machine import InterpError

    kernel = _elementwise(lambda a, b: a + b).trace()
    body = tuple(dataclasses.replace(s, op=MapOp.XOR) if isinstance(s, Map) else s for s in kernel.body)
    arrays = {name: np.zeros((M, N), dtype=np.float32) for name in ("A", "B", "C")}
    with pytest.raises(InterpError) as info:
        run_kernel(dataclasses.replace(kernel, body=body), arrays)
    assert info.value.code == "INTERP_UNSUPPORTED" and "elementwise xor on float values" in str(info.value)


def test_math_on_plain_numbers_is_refused() -> None:
    with pytest.raises(DSLError) as info:
        T.pow(2.0, 3.0)
    assert info.value.code == "DSL_NOT_A_FRAGMENT"


def test_a_float_copied_into_an_integer_fragment_truncates_as_the_gpu_does() -> None:
    """`T.copy(f32 fragment, i32 fragment)` converts like the generated code (cvt.rzi: toward zero, saturating)."""

    @argus.kernel
    def to_int(X: T.Tensor[(128,), T.f32], Y: T.Tensor[(128,), T.f32], BLOCK: int = 512):
        with T.grid(1, threads=128) as (bx,):
            x = T.alloc_fragment((BLOCK,), T.f32)
            i = T.alloc_fragment((BLOCK,), T.i32)
            T.copy(X.tile(0, BLOCK), x)
            T.copy(x, i)
            T.copy(T.cast(i, T.f32) + 0.5, Y.tile(0, BLOCK))

    x = np.linspace(-3.7, 3.7, 128)
    x[0], x[1] = 3e10, -3e10  # saturate at the i32 range
    y = np.zeros(128)
    to_int(x, y, device="cpu")
    want = np.clip(np.trunc(x), -(2**31), 2**31 - 1) + 0.5
    np.testing.assert_allclose(y, np.asarray(want, dtype=np.float32), rtol=0, atol=0)


def test_maximum_and_minimum_take_the_scalar_on_either_side() -> None:
    @argus.kernel
    def clamp(X: T.Tensor[(128,), T.f32], Y: T.Tensor[(128,), T.f32], BLOCK: int = 512):
        with T.grid(1, threads=128) as (bx,):
            x = T.alloc_fragment((BLOCK,), T.f32)
            T.copy(X.tile(0, BLOCK), x)
            T.copy(T.minimum(1.0, T.maximum(-1.0, x)), Y.tile(0, BLOCK))

    x = np.linspace(-3, 3, 128)
    y = np.zeros(128)
    clamp(x, y, device="cpu")
    np.testing.assert_array_equal(y, np.clip(x, -1, 1).astype(np.float32))


def test_a_per_thread_scalar_operand_is_the_same_for_each_of_the_threads_values() -> None:
    @argus.kernel
    def plus_lane(X: T.Tensor[(512,), T.f32], Y: T.Tensor[(512,), T.f32], BLOCK: int = 512):
        with T.grid(1, threads=128) as (bx,):
            x = T.alloc_fragment((BLOCK,), T.f32)
            T.copy(X.tile(0, BLOCK), x)
            T.copy(x + T.lane_id(), Y.tile(0, BLOCK))

    x = np.zeros(512)
    y = np.zeros(512)
    plus_lane(x, y, device="cpu")
    # the blocked layout gives thread t elements 4t..4t+3 of the first 512-element vector pass
    np.testing.assert_array_equal(y, (np.arange(512) // 4) % 32)


def test_where_takes_the_dtype_of_a_broadcast_operand_not_of_an_integer_mask() -> None:
    """``T.where(mask, w[None, :], 0.0)`` with an i32 mask and f32 values `w` is f32 (the dtype of `a`, a broadcast
    counting as its fragment), on the interpreter and in the generated code: before session 63 it took the mask's
    dtype and truncated every selected value to an integer (0.7 -> 0)."""
    from argus.backend.cuda.codegen import compile_kernel

    @argus.kernel
    def select_row(W: T.Tensor[(64,), T.f32], Y: T.Tensor[(8, 64), T.f32]):
        with T.grid(1, threads=128) as (bx,):
            x = T.alloc_fragment((8, 64), T.i32)
            w = T.alloc_reduced(x, axis=0, dtype=T.f32)
            T.copy(W.tile(0, 64), w)
            mask = T.index(x, 0, T.i32) <= T.index(x, 1, T.i32)  # i32 1 / 0
            picked = T.where(mask, w[None, :], 0.0)
            assert picked.dtype == T.f32
            T.copy(picked, Y.tile((0, 0), (8, 64)))

    w = np.linspace(0.05, 0.95, 64)
    y = np.full((8, 64), np.nan)
    select_row(w, y, device="cpu")
    rows, cols = np.indices((8, 64))
    np.testing.assert_array_equal(y, np.where(rows <= cols, w.astype(np.float32), 0.0))
    assert compile_kernel(select_row.trace()).resources.spill_stores == 0  # the generated code compiles (NVRTC)
