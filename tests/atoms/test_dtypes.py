"""The scalar type system (`argus.ir.types`): lookup, properties, numpy mapping and rounding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argus.ir.types import (
    DType,
    DTypeError,
    DTypeKind,
    all_dtypes,
    bf16,
    boolean,
    dtype_from_name,
    e4m3,
    e5m2,
    f16,
    f32,
    i32,
    i64,
    round_to,
    u32,
)


def test_instances():
    assert (bf16.bits, bf16.exponent_bits, bf16.mantissa_bits, bf16.kind) == (16, 8, 7, DTypeKind.FLOAT)
    assert (f16.bits, f16.exponent_bits, f16.mantissa_bits) == (16, 5, 10)
    assert (f32.bits, f32.exponent_bits, f32.mantissa_bits) == (32, 8, 23)
    assert (i32.bits, i32.kind, u32.kind) == (32, DTypeKind.INT, DTypeKind.UINT)
    assert (i64.bits, i64.kind, i64.itemsize, i64.max_value) == (64, DTypeKind.INT, 8, 2**63 - 1)
    assert i64.numpy_dtype() == np.int64 and dtype_from_name("int64") is i64 and dtype_from_name("torch.int64") is i64
    assert boolean.name == "bool" and boolean.kind is DTypeKind.BOOL and boolean.itemsize == 1
    assert (e4m3.exponent_bits, e4m3.mantissa_bits, e5m2.exponent_bits, e5m2.mantissa_bits) == (4, 3, 5, 2)
    assert all(d.supported for d in (bf16, f16, f32, i32, i64, u32, boolean, e4m3, e5m2))
    assert str(bf16) == "bf16" and bf16.itemsize == 2
    assert set(all_dtypes()) == {bf16, f16, f32, i32, i64, u32, boolean, e4m3, e5m2}


def test_float_properties():
    assert f16.max_finite == 65504.0 and bf16.max_finite == 2.0**127 * (2 - 2.0**-7)
    assert f32.max_finite == float(np.finfo(np.float32).max)
    assert e4m3.max_finite == 448.0 and e5m2.max_finite == 57344.0
    assert f16.min_normal == 2.0**-14 and bf16.min_normal == 2.0**-126
    assert bf16.epsilon == 2.0**-7 and f32.epsilon == float(np.finfo(np.float32).eps)
    assert (i32.min_value, i32.max_value, u32.min_value, u32.max_value) == (-(2**31), 2**31 - 1, 0, 2**32 - 1)
    with pytest.raises(DTypeError) as err:
        i32.max_finite  # noqa: B018
    assert err.value.code == "DTYPE_NOT_FLOAT"
    with pytest.raises(DTypeError):
        f32.max_value  # noqa: B018


def test_numpy_dtypes():
    assert bf16.numpy_dtype() == np.float32  # no numpy bfloat16: float32 values rounded to bf16
    assert f16.numpy_dtype() == np.float16 and f32.numpy_dtype() == np.float32
    assert i32.numpy_dtype() == np.int32 and u32.numpy_dtype() == np.uint32 and boolean.numpy_dtype() == np.bool_
    assert e4m3.numpy_dtype() == np.float32 and e5m2.numpy_dtype() == np.float32


@pytest.mark.parametrize(
    "name, dtype",
    [
        ("bf16", bf16),
        ("bfloat16", bf16),
        ("torch.bfloat16", bf16),
        ("float16", f16),
        ("half", f16),
        ("F32", f32),
        ("float32", f32),
        ("s32", i32),
        ("int32", i32),
        ("uint32", u32),
        ("bool", boolean),
        ("e4m3", e4m3),
    ],
)
def test_dtype_from_name(name, dtype):
    assert dtype_from_name(name) is dtype
    assert dtype_from_name(dtype) is dtype


@pytest.mark.parametrize("name", ["bf61", "float64", "", "fp8"])
def test_unknown_names(name):
    with pytest.raises(DTypeError) as err:
        dtype_from_name(name)
    assert err.value.code == "DTYPE_UNKNOWN" and isinstance(err.value, TypeError)
    assert "bf16" in err.value.hint  # lists the known names


def test_unknown_name_suggests():
    with pytest.raises(DTypeError) as err:
        dtype_from_name("bf61")
    assert "did you mean 'bf16'" in err.value.hint
    with pytest.raises(DTypeError):
        dtype_from_name(16)  # type: ignore[arg-type]


def test_new_float_is_one_line():
    e3m4 = DType("e3m4", 8, DTypeKind.FLOAT, exponent_bits=3, mantissa_bits=4, supported=False)
    assert e3m4.max_finite == 15.5 and e3m4.min_normal == 0.25 and e3m4.numpy_dtype() == np.float32
    np.testing.assert_array_equal(round_to(e3m4, [15.5, 15.75, 0.25 + 2**-7]), [15.5, np.inf, 0.25])
    with pytest.raises(DTypeError) as err:
        DType("bad", 8, DTypeKind.FLOAT, exponent_bits=4, mantissa_bits=4)
    assert err.value.code == "DTYPE_BAD_DEFINITION"


# --- rounding ---------------------------------------------------------------------------------


def test_bf16_rounding_cases():
    one = 1.0
    cases = {
        one: one,
        one + 2.0**-8: one,  # tie: to even (1.0)
        one + 3 * 2.0**-8: one + 2.0**-6,  # tie: to even (1 + 2**-6)
        one + 2.0**-8 + 2.0**-20: one + 2.0**-7,  # above the tie
        -(one + 3 * 2.0**-8): -(one + 2.0**-6),
        3.4e38: np.inf,
        2.0**-133: 2.0**-133,  # bf16 subnormal
        2.0**-134 * 1.5: 2.0**-133,
    }
    x = np.array(list(cases), dtype=np.float32)
    expected = np.array(list(cases.values()), dtype=np.float32)
    for source in (x, x.astype(np.float64)):
        out = round_to(bf16, source)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, expected)
    assert np.isnan(round_to(bf16, np.array([np.nan], dtype=np.float32))).all()
    assert np.isnan(round_to(bf16, [np.nan])).all()
    np.testing.assert_array_equal(round_to(bf16, np.array([np.inf, -np.inf], np.float32)), [np.inf, -np.inf])


def test_bf16_from_float64_rounds_once():
    # 1 + 2**-8 + 2**-30 rounds up in one step; through float32 it would first become 1 + 2**-8 (a tie),
    # which then rounds down to 1.0.
    x = 1 + 2.0**-8 + 2.0**-30
    assert np.float32(x) == np.float32(1 + 2.0**-8)
    assert round_to(bf16, np.array([x]))[0] == np.float32(1 + 2.0**-7)


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=200))
@settings(suppress_health_check=[HealthCheck.too_slow])  # (a loaded 2-core machine drew one input in 1.3 s)
def test_bf16_bit_path_equals_general_path(bits):
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    fast = round_to(bf16, x)  # bit manipulation of the float32 encoding
    slow = round_to(bf16, x.astype(np.float64))  # general path
    np.testing.assert_array_equal(fast, slow)
    finite = np.isfinite(fast)
    assert (fast[finite].view(np.uint32) & 0xFFFF == 0).all()  # representable in bf16


@given(st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=200))
def test_f16_matches_numpy(values):
    x = np.array(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(round_to(f16, x), x.astype(np.float16))


@given(st.lists(st.floats(allow_nan=False, width=64), min_size=1, max_size=200))
def test_rounding_is_idempotent(values):
    x = np.array(values)
    for dtype in (bf16, f16, f32, e5m2):
        once = round_to(dtype, x)
        np.testing.assert_array_equal(round_to(dtype, once), once)


def test_fp8_rounding():
    out = round_to(e4m3, [448, 464, 465, 2.0**-9, 2.0**-10, 2.0**-10 * 3, -np.inf, 1.0625, 1.1875])
    np.testing.assert_array_equal(out[[0, 1, 3, 4, 5, 7, 8]], [448, 448, 2.0**-9, 0, 2.0**-8, 1.0, 1.25])
    assert np.isnan(out[2]) and np.isnan(out[6])  # e4m3 has no infinity
    np.testing.assert_array_equal(round_to(e5m2, [57344, 61439, 61440, -1e9]), [57344, 57344, np.inf, -np.inf])


def test_integer_and_bool_conversion():
    np.testing.assert_array_equal(round_to(i32, [1.7, -1.7, 3]), [1, -1, 3])
    assert round_to(i32, [1]).dtype == np.int32 and round_to(u32, [1]).dtype == np.uint32
    np.testing.assert_array_equal(round_to(boolean, [0, 2, -0.0, 0.5]), [False, True, False, True])
    for dtype, bad in ((i32, [2**31]), (u32, [-1]), (i32, [np.nan]), (u32, [np.inf])):
        with pytest.raises(DTypeError) as err:
            round_to(dtype, bad)
        assert err.value.code == "DTYPE_OUT_OF_RANGE"
