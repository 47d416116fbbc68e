# ruff: noqa: F821, UP037
"""Elementwise math in the generated CUDA: each operation becomes CUDA's f32 function or C's integer operator,
the kernels compile with NVRTC for sm_90a (no GPU needed) without spills or warnings, and the SASS shows the
instructions the operations were meant to become (``FRND.FLOOR`` for ``floorf``, an arithmetic shift for ``>>``
on i32 and a logical one on u32)."""

from __future__ import annotations

import dataclasses
import re

import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import CodegenError, CompiledKernel, compile_kernel, generate
from argus.ir.nodes import Map, MapOp


def _elementwise(fn):
    @argus.kernel
    def elementwise(
        A: T.Tensor[("M", "N"), "DT"], B: T.Tensor[("M", "N"), "DT"], C: T.Tensor[("M", "N"), "DT"], DT: str = "f32"
    ):
        with T.grid(T.cdiv(M, 8), T.cdiv(N, 64), threads=128) as (bm, bn):
            a = T.alloc_fragment((8, 64), A.dtype)
            b = T.alloc_fragment((8, 64), B.dtype)
            T.copy(A.tile((bm, bn), (8, 64)), a)
            T.copy(B.tile((bm, bn), (8, 64)), b)
            T.copy(fn(a, b), C.tile((bm, bn), (8, 64)))

    return elementwise


def _float_ops(a, b):
    y = T.tanh(a) + T.erf(a) + T.log(b) + T.log2(b) + T.log1p(b) + T.expm1(a) + abs(a) + T.sigmoid(a)
    y = y + T.sin(a) + T.cos(a) + T.floor(a) + T.ceil(a) + T.rcp(b) + b**a + T.fmod(a, b)
    return y + (a <= b) + (a > b) + T.eq(a, b) + T.ne(a, 0.0)


def _integer_ops(a, b):
    y = (a // b) + (a % b) + (a & b) + (a | b) + (a ^ b) + (a << 3) + (a >> 2) + ~a + T.fmod(a, b)
    return y + (a <= b) + T.eq(a, b)


@pytest.fixture(scope="module")
def built() -> dict[str, CompiledKernel]:
    """Each kernel generated and compiled once, without the on-disk cache (about 0.1-0.3 s each)."""
    kernels = {
        "f32": (_float_ops, "f32"),
        "i32": (_integer_ops, "i32"),
        "u32": (_integer_ops, "u32"),
        "shift i32": (lambda a, b: a >> b, "i32"),
        "shift u32": (lambda a, b: a >> b, "u32"),
    }
    return {
        name: compile_kernel(_elementwise(fn).trace(DT=dtype), cache=False) for name, (fn, dtype) in kernels.items()
    }


FLOAT_TEXT = {
    "tanh": r"\btanhf\(",
    "erf": r"\berff\(",
    "log": r"\blogf\(",
    "log2": r"\blog2f\(",
    "log1p": r"\blog1pf\(",
    "expm1": r"\bexpm1f\(",
    "abs": r"\bfabsf\(",
    "sigmoid": r"= 1\.0f / \(1\.0f \+ expf\(-(?:[ab]|r_?\d*)\[v\]\)\);",
    "sin": r"\bsinf\(",
    "cos": r"\bcosf\(",
    "floor": r"\bfloorf\(",
    "ceil": r"\bceilf\(",
    "rcp": r"= 1\.0f / (?:[ab]|r_?\d*)\[v\];",
    "pow": r"\bpowf\(",
    "fmod": r"\bfmodf\(",
    "le": r"\((?:[ab]|r_?\d*)\[v\] <= (?:[ab]|r_?\d*)\[v\] \? 1\.0f : 0\.0f\)",
    "lt (for >)": r"\((?:[ab]|r_?\d*)\[v\] < (?:[ab]|r_?\d*)\[v\] \? 1\.0f : 0\.0f\)",
    "eq": r"\((?:[ab]|r_?\d*)\[v\] == (?:[ab]|r_?\d*)\[v\] \? 1\.0f : 0\.0f\)",
    "ne": r"\((?:[ab]|r_?\d*)\[v\] != 0\.0f \? 1\.0f : 0\.0f\)",
}


@pytest.mark.parametrize("op", FLOAT_TEXT)
def test_float_operations_use_cudas_f32_functions(op: str, built) -> None:
    source = built["f32"].generated.source
    assert re.search(FLOAT_TEXT[op], source), f"{op}: no match for {FLOAT_TEXT[op]!r}"
    assert f"= {op.split()[0]}(" in source  # the IR comment above the line names the operation


INTEGER_TEXT = {
    "floordiv": r"argus::floordiv\((?:[ab]|r_?\d*)\[v\], (?:[ab]|r_?\d*)\[v\]\)",
    "mod": r"argus::floormod\((?:[ab]|r_?\d*)\[v\], (?:[ab]|r_?\d*)\[v\]\)",
    "and": r"(?:[ab]|r_?\d*)\[v\] & (?:[ab]|r_?\d*)\[v\]",
    "or": r"(?:[ab]|r_?\d*)\[v\] \| (?:[ab]|r_?\d*)\[v\]",
    "xor": r"(?:[ab]|r_?\d*)\[v\] \^ (?:[ab]|r_?\d*)\[v\]",
    "shl": r"(?:[ab]|r_?\d*)\[v\] << 3;",
    "shr": r"(?:[ab]|r_?\d*)\[v\] >> 2;",
    "invert": r"= ~(?:[ab]|r_?\d*)\[v\];",
    "fmod": r"= (?:[ab]|r_?\d*)\[v\] % (?:[ab]|r_?\d*)\[v\];",
    "le": r"\((?:[ab]|r_?\d*)\[v\] <= (?:[ab]|r_?\d*)\[v\] \? 1 : 0\)",
}


@pytest.mark.parametrize("op", INTEGER_TEXT)
def test_integer_operations_are_cs_operators(op: str, built) -> None:
    source = built["i32"].generated.source
    assert re.search(INTEGER_TEXT[op], source), f"{op}: no match for {INTEGER_TEXT[op]!r}"


def test_python_floor_division_brings_its_helpers_and_unsigned_needs_none(built) -> None:
    i32, u32 = built["i32"].generated.source, built["u32"].generated.source
    assert "__device__ __forceinline__ int floordiv(int a, int b)" in i32
    assert "argus::floordiv" not in u32 and "argus::floormod" not in u32  # unsigned // and % are C's / and %
    operand = r"(?:[ab]|r_?\d*)\[v\]"  # the kernel's fragments a and b, or a temporary
    assert re.search(rf"= {operand} / {operand};", u32) and re.search(rf"= {operand} % {operand};", u32)
    assert "unsigned r" in u32


@pytest.mark.parametrize("name", ["f32", "i32", "u32", "shift i32", "shift u32"])
def test_math_kernels_compile_for_sm90a_without_spills_or_warnings(name: str, built) -> None:
    compiled = built[name]
    assert compiled.module.arch == "sm_90a" and compiled.module.cubin[:4] == b"\x7fELF"
    assert compiled.module.warnings == ()
    r = compiled.resources
    assert (r.spill_stores, r.spill_loads, r.stack_frame) == (0, 0, 0), str(r)


def test_float_sass_rounds_with_frnd_and_exponentiates_on_the_sfu(built) -> None:
    mix = built["f32"].instruction_mix(modifiers=True)
    assert mix["FRND.FLOOR"] >= 4 and mix["FRND.CEIL"] >= 4  # floorf / ceilf: 4 values a thread
    assert mix["MUFU.EX2"] >= 4  # expf inside sigmoid, expm1f, tanhf, powf


def test_right_shift_is_arithmetic_on_i32_and_logical_on_u32(built) -> None:
    signed = built["shift i32"].instruction_mix(modifiers=True)
    unsigned = built["shift u32"].instruction_mix(modifiers=True)
    assert signed["SHF.R.S32.HI"] >= unsigned["SHF.R.S32.HI"] + 4  # one arithmetic shift for each of 4 values
    assert unsigned["SHF.R.U32.HI"] >= signed["SHF.R.U32.HI"] + 4


def test_ir_the_tracer_refuses_is_refused_by_the_generator() -> None:
    kernel = _elementwise(lambda a, b: a + b).trace()
    body = tuple(dataclasses.replace(s, op=MapOp.AND) if isinstance(s, Map) else s for s in kernel.body)
    with pytest.raises(CodegenError) as info:
        generate(dataclasses.replace(kernel, body=body))
    assert info.value.code == "CODEGEN_INVALID" and "elementwise and on float values" in str(info.value)
