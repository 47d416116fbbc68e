"""`T.fma_atom` in the DSL: fragments tiled by it, and the errors of a T.gemm that misuses it."""

from __future__ import annotations

import pytest

import argus
import argus.lang as T
from argus.ir.nodes import Gemm, walk


def _kernel(operands: str = "registers", groups: tuple[int, int] = (8, 8)):
    @argus.kernel
    def fma_gemm(A: T.Tensor[("M", "K"), T.bf16], B: T.Tensor[("K", "N"), T.bf16], C: T.Tensor[("M", "N"), T.f32]):
        with T.grid(T.cdiv(M, 16), T.cdiv(N, 16), threads=64) as (bm, bn):
            sA = T.alloc_shared((16, 8), T.bf16)
            sB = T.alloc_shared((8, 16), T.bf16)
            atom = T.fma_atom()
            acc = T.alloc_fragment((16, 16), T.f32, mma=atom, groups=groups)
            rA = T.alloc_fragment((16, 8), T.bf16, mma=atom, operand="A", groups=groups)
            rB = T.alloc_fragment((8, 16), T.bf16, mma=atom, operand="B", groups=groups)
            T.fill(acc, 0.0)
            T.copy(A.tile((bm, 0), (16, 8)), sA)
            T.copy(B.tile((0, bn), (8, 16)), sB)
            T.barrier()
            T.copy(sA, rA)
            T.copy(sB, rB)
            if operands == "registers":
                T.gemm(rA, rB, acc)
            else:
                T.gemm(sA, rB, acc)
            T.copy(acc, C.tile((bm, bn), (16, 16)))

    return fma_gemm


def test_a_gemm_on_the_fma_atom_traces() -> None:
    kernel = _kernel().trace()
    (gemm,) = [s for s in walk(kernel.body) if isinstance(s, Gemm)]
    assert gemm.atom == "fma.f32.bf16.bf16" and gemm.groups == (8, 8)
    assert gemm.acc.buffer.values_per_thread == 4 and gemm.a.buffer.values_per_thread == 16


def test_an_operand_in_memory_is_refused_at_its_line() -> None:
    with pytest.raises(T.DSLError) as info:
        _kernel(operands="shared").trace()
    err = info.value
    assert err.code == "DSL_GEMM_OPERAND"
    assert "multiplies registers; operand a is in shared memory" in err.message
    assert "T.gemm(sA, rB, acc)" in str(err) and "operand='A'" in str(err)


def test_groups_must_make_the_block() -> None:
    with pytest.raises(T.DSLError) as info:
        _kernel(groups=(8, 4)).trace()
    assert info.value.code == "DSL_MMA_GROUPS"
