"""Scalar types: `DType`, its instances, lookup by name, and how values of each type live in numpy.

Owns the one description of every scalar type argus knows: its name, width, kind and (for floats)
its exponent and mantissa widths. Atoms (`argus.atoms`), the interpreter and the code generator all
read dtypes from here.

Instances: `bf16`, `f16`, `f32`, `i32`, `i64`, `u32`, `boolean` (named ``"bool"``), and the 8-bit floats (OCP
FP8) `e4m3` and `e5m2`, which the FP8 ``wgmma`` atoms (``m64nNk32``), TMA and the vector copies take. A type can be
*known* (it parses, prints and rounds) but not yet *supported* (``DType.supported`` False: no atom accepts it). A
new float format is one line, as ``e5m2``'s is::

    e5m2 = _register(DType("e5m2", 8, DTypeKind.FLOAT, exponent_bits=5, mantissa_bits=2))

(formats with IEEE-style infinities and NaNs, or, with ``finite_only=True``, E4M3FN-style ones whose
only NaN is all ones; a format with neither, such as FP6, would need one more flag).

numpy representation (`DType.numpy_dtype`): ``f16``, ``f32``, ``i32``, ``i64``, ``u32`` and ``bool`` map to the
numpy type of the same name. numpy has no ``bfloat16`` (nor fp8): a ``bf16`` array is a ``float32``
array whose every value is exactly representable in ``bf16``. `round_to` makes an array so, rounding
to nearest, ties to even, as the hardware's ``cvt.rn`` does; values that merely sit in a ``float32``
array are *not* assumed to be representable until they went through `round_to`.

``bool`` is 8 bits wide: its storage width in memory (``sizeof(bool)`` in CUDA C++), not a predicate
register's single bit.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from argus.diagnostics import ArgusError


class DTypeError(ArgusError, TypeError):
    """A dtype was named or used in a way argus does not know (code ``DTYPE_<DETAIL>``; see
    `argus.diagnostics.ArgusError` for the attributes)."""


class DTypeKind(StrEnum):
    """What the bits of a scalar mean."""

    FLOAT = "float"
    INT = "int"
    UINT = "uint"
    BOOL = "bool"


@dataclass(frozen=True)
class DType:
    """A scalar type.

    Attributes:
        name: argus's name (``"bf16"``), also its printed form.
        bits: storage width in bits.
        kind: float, signed int, unsigned int or bool.
        exponent_bits: for floats, the exponent field's width (0 otherwise).
        mantissa_bits: for floats, the stored mantissa (fraction) field's width (0 otherwise).
        supported: False for a type that is known but that no atom or code path accepts yet.
        finite_only: for floats without infinities (``e4m3``, OCP's E4M3FN): the all-ones exponent
            still encodes numbers, only ``S.1111.111`` is NaN.
    """

    name: str
    bits: int
    kind: DTypeKind
    exponent_bits: int = 0
    mantissa_bits: int = 0
    supported: bool = True
    finite_only: bool = False

    def __post_init__(self) -> None:
        if self.kind is DTypeKind.FLOAT:
            widths = 1 + self.exponent_bits + self.mantissa_bits
            if self.exponent_bits < 2 or self.mantissa_bits < 1 or widths != self.bits:
                raise DTypeError(
                    "DTYPE_BAD_DEFINITION",
                    f"float type {self.name!r}: 1 sign + {self.exponent_bits} exponent + {self.mantissa_bits} mantissa "
                    f"bits must add up to its width {self.bits}",
                )
        elif self.exponent_bits or self.mantissa_bits or self.finite_only:
            raise DTypeError("DTYPE_BAD_DEFINITION", f"{self.kind} type {self.name!r} has float fields set")

    def __str__(self) -> str:
        return self.name

    # --- properties --------------------------------------------------------------------------
    @property
    def itemsize(self) -> int:
        """Bytes one element occupies in memory."""
        return (self.bits + 7) // 8

    @property
    def is_float(self) -> bool:
        return self.kind is DTypeKind.FLOAT

    @property
    def is_integer(self) -> bool:
        return self.kind in (DTypeKind.INT, DTypeKind.UINT)

    @property
    def exponent_bias(self) -> int:
        """``2**(exponent_bits - 1) - 1`` for floats."""
        self._require_float("exponent_bias")
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def max_finite(self) -> float:
        """The largest finite value of a float type."""
        self._require_float("max_finite")
        if self.finite_only:
            # The all-ones exponent holds numbers; its all-ones mantissa is NaN.
            emax = (1 << self.exponent_bits) - 1 - self.exponent_bias
            return float(2.0**emax * (2.0 - 2.0 ** (1 - self.mantissa_bits)))
        emax = self.exponent_bias
        return float(2.0**emax * (2.0 - 2.0 ** (-self.mantissa_bits)))

    @property
    def min_normal(self) -> float:
        """The smallest positive normal value of a float type."""
        self._require_float("min_normal")
        return float(2.0 ** (1 - self.exponent_bias))

    @property
    def epsilon(self) -> float:
        """The distance from 1.0 to the next larger value of a float type (``2**-mantissa_bits``)."""
        self._require_float("epsilon")
        return float(2.0 ** (-self.mantissa_bits))

    @property
    def min_value(self) -> int:
        """The smallest value of an integer type."""
        self._require_integer("min_value")
        return -(1 << (self.bits - 1)) if self.kind is DTypeKind.INT else 0

    @property
    def max_value(self) -> int:
        """The largest value of an integer type."""
        self._require_integer("max_value")
        return (1 << (self.bits - 1)) - 1 if self.kind is DTypeKind.INT else (1 << self.bits) - 1

    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype that holds values of this type (see the module docstring for ``bf16``,
        ``e4m3`` and ``e5m2``, which live in ``float32`` arrays)."""
        return np.dtype(_NUMPY[self.name]) if self.name in _NUMPY else _numpy_fallback(self)

    def _require_float(self, what: str) -> None:
        if not self.is_float:
            raise DTypeError("DTYPE_NOT_FLOAT", f"{what} is defined for float types; {self.name} is {self.kind}")

    def _require_integer(self, what: str) -> None:
        if not self.is_integer:
            raise DTypeError("DTYPE_NOT_INTEGER", f"{what} is defined for integer types; {self.name} is {self.kind}")


def _numpy_fallback(dtype: DType) -> np.dtype:
    if dtype.is_float and dtype.bits <= 32:
        return np.dtype(np.float32)
    raise DTypeError("DTYPE_NO_NUMPY", f"{dtype.name} has no numpy representation")


_NUMPY: dict[str, Any] = {
    "bf16": np.float32,  # rounded to bf16 by round_to; numpy has no bfloat16
    "f16": np.float16,
    "f32": np.float32,
    "i32": np.int32,
    "i64": np.int64,
    "u32": np.uint32,
    "bool": np.bool_,
}

_BY_NAME: dict[str, DType] = {}


def _register(dtype: DType) -> DType:
    _BY_NAME[dtype.name] = dtype
    return dtype


bf16 = _register(DType("bf16", 16, DTypeKind.FLOAT, exponent_bits=8, mantissa_bits=7))
f16 = _register(DType("f16", 16, DTypeKind.FLOAT, exponent_bits=5, mantissa_bits=10))
f32 = _register(DType("f32", 32, DTypeKind.FLOAT, exponent_bits=8, mantissa_bits=23))
i32 = _register(DType("i32", 32, DTypeKind.INT))
i64 = _register(DType("i64", 64, DTypeKind.INT))  # indices (torch's argmax returns int64)
u32 = _register(DType("u32", 32, DTypeKind.UINT))
boolean = _register(DType("bool", 8, DTypeKind.BOOL))
# 8-bit floats (OCP FP8): the FP8 wgmma atoms' inputs.
e4m3 = _register(DType("e4m3", 8, DTypeKind.FLOAT, exponent_bits=4, mantissa_bits=3, finite_only=True))
e5m2 = _register(DType("e5m2", 8, DTypeKind.FLOAT, exponent_bits=5, mantissa_bits=2))

#: Other spellings accepted by `dtype_from_name` (numpy's, torch's and PTX's names).
_ALIASES = {
    "bfloat16": "bf16",
    "float16": "f16",
    "half": "f16",
    "float32": "f32",
    "float": "f32",
    "int32": "i32",
    "s32": "i32",
    "int64": "i64",
    "long": "i64",
    "s64": "i64",
    "uint32": "u32",
    "boolean": "bool",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
}


def all_dtypes() -> tuple[DType, ...]:
    """Every dtype argus knows, supported or not, in definition order."""
    return tuple(_BY_NAME.values())


def dtype_from_name(name: str | DType) -> DType:
    """The dtype called `name` (argus's names, plus numpy/torch/PTX spellings such as ``"bfloat16"``,
    ``"float32"``, ``"s32"``); a `DType` is returned as is. Raises `DTypeError` (``DTYPE_UNKNOWN``)
    for anything else."""
    if isinstance(name, DType):
        return name
    if not isinstance(name, str):
        raise DTypeError("DTYPE_UNKNOWN", f"a dtype name must be a string, got {name!r} ({type(name).__name__})")
    key = name.strip().lower()
    if key.startswith("torch."):
        key = key[len("torch.") :]
    key = _ALIASES.get(key, key)
    if key in _BY_NAME:
        return _BY_NAME[key]
    known = sorted(_BY_NAME)
    close = difflib.get_close_matches(key, known + sorted(_ALIASES), n=1)
    hint = f"did you mean {_ALIASES.get(close[0], close[0])!r}? " if close else ""
    raise DTypeError(
        "DTYPE_UNKNOWN",
        f"unknown dtype {name!r}",
        f"{hint}known dtypes: {', '.join(known)}",
    )


# --- rounding ---------------------------------------------------------------------------------


def round_to(dtype: DType | str, values: Any) -> np.ndarray:
    """`values` converted to `dtype`, as an array of ``dtype.numpy_dtype()``.

    Floats round to nearest, ties to even (``cvt.rn``), with gradual underflow; a value whose
    rounding exceeds the largest finite number becomes ``inf`` (``e4m3``, which has no infinity:
    NaN), and NaN stays NaN. The result is exact in the target format: ``round_to(t, round_to(t, x))
    == round_to(t, x)``. ``bf16`` from a ``float32`` (or narrower) array is rounded by bit
    manipulation of the ``float32`` encoding; wider inputs take the general path, which rounds once
    from ``float64`` (never ``float64 -> float32 -> bf16``, which could round twice).

    Integers and bool convert as a C cast would, but refuse to lose information silently: a float
    input is truncated toward zero, and a value outside the type's range, or a NaN or infinity,
    raises `DTypeError` (``DTYPE_OUT_OF_RANGE``). ``bool`` is ``value != 0``.
    """
    dtype = dtype_from_name(dtype)
    array = np.asarray(values)
    if dtype.kind is DTypeKind.BOOL:
        return array != 0
    if dtype.is_integer:
        return _to_integer(dtype, array)
    if dtype.name == "bf16" and array.dtype.kind == "f" and array.dtype.itemsize <= 4:
        return _round_bf16_from_f32(array.astype(np.float32))
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype.name == "f32":
            return array.astype(np.float64).astype(np.float32)  # numpy's cast rounds to nearest even
        return _round_float(dtype, array.astype(np.float64)).astype(dtype.numpy_dtype())


def _round_bf16_from_f32(x: np.ndarray) -> np.ndarray:
    """bf16 keeps the top 16 bits of the float32 encoding: add half an ulp of bf16 (minus one when
    the kept part is even, so that ties go to even) and clear the low 16 bits."""
    bits = x.view(np.uint32).astype(np.uint64)  # 64-bit so the addition cannot wrap
    keep_lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + keep_lsb) & 0xFFFF0000).astype(np.uint32)
    nan = np.isnan(x)
    # NaN: keep it a NaN (quiet) instead of letting the rounding carry into the exponent.
    rounded = np.where(nan, (bits.astype(np.uint32) & 0xFFFF0000) | 0x00400000, rounded).astype(np.uint32)
    return rounded.view(np.float32)


def _round_float(dtype: DType, x: np.ndarray) -> np.ndarray:
    """Round float64 values to `dtype`'s grid, to nearest even; returns float64 values."""
    emin = 1 - dtype.exponent_bias
    finite = np.isfinite(x)
    safe = np.where(finite, x, 0.0)
    _, exponent = np.frexp(safe)  # safe = m * 2**exponent with 0.5 <= |m| < 1
    quantum_exponent = np.maximum(exponent - 1, emin) - dtype.mantissa_bits
    rounded = np.ldexp(np.round(np.ldexp(safe, -quantum_exponent)), quantum_exponent)  # np.round: ties to even
    overflow = np.abs(rounded) > dtype.max_finite
    if dtype.finite_only:
        return np.where(overflow | ~finite, np.nan, rounded)
    out = np.where(overflow, np.copysign(np.inf, safe), rounded)
    return np.where(finite, out, x)


def _to_integer(dtype: DType, array: np.ndarray) -> np.ndarray:
    target = dtype.numpy_dtype()
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            raise DTypeError("DTYPE_OUT_OF_RANGE", f"cannot convert NaN or infinity to {dtype.name}")
        array = np.trunc(array)
    elif array.dtype.kind == "b":
        array = array.astype(np.int64)
    elif array.dtype.kind not in "iu":
        raise DTypeError("DTYPE_NOT_NUMERIC", f"cannot convert an array of {array.dtype} to {dtype.name}")
    if array.size and (array.min() < dtype.min_value or array.max() > dtype.max_value):
        raise DTypeError(
            "DTYPE_OUT_OF_RANGE",
            f"values in [{array.min()}, {array.max()}] do not fit {dtype.name} "
            f"([{dtype.min_value}, {dtype.max_value}])",
            "clamp or wrap the values explicitly before converting",
        )
    return array.astype(target)


__all__ = [
    "DType",
    "DTypeError",
    "DTypeKind",
    "all_dtypes",
    "bf16",
    "boolean",
    "dtype_from_name",
    "e4m3",
    "e5m2",
    "f16",
    "f32",
    "i32",
    "round_to",
    "u32",
]
