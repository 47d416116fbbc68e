"""rA laid out with the two value sub-modes of mma.sync's A layout swapped: a valid bijection over
the tile, but the instruction reads register a_i as another element than the one it holds.

expect: violated
code: MMA_K_MISMATCH
code: MMA_ROW_MISMATCH
code: MMA_ROW_MIXED
"""

import argus
import argus.lang as T
from argus.atoms import mma_sync_m16n8k16
from argus.ir.types import bf16, f32
from argus.lang.fragments import mma_tv
from argus.layout import Layout

_correct = mma_tv(mma_sync_m16n8k16(bf16, bf16, f32), "A", (64, 32), (2, 2))
_thr, _val = _correct[0], _correct[1]
_vs, _vd = _val.shape, _val.stride
WRONG_A = Layout(
    (_thr.shape, ((_vs[0][1], _vs[0][0], _vs[0][2]), _vs[1])),
    (_thr.stride, ((_vd[0][1], _vd[0][0], _vd[0][2]), _vd[1])),
)


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16)
        sB = T.alloc_shared((BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2), tv=WRONG_A)  # BUG
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA)
            T.copy(sB, rB)
            T.gemm(rA, rB, acc)  # <- MMA_K_MISMATCH
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
