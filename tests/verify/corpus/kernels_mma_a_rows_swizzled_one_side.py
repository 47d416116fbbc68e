"""A is M-major (given as (K, M)) and staged 64-byte-swizzled, but the writer stores it through a plain row-major view
while ldmatrix reads the swizzled buffer transposed. The swizzle permutes the 16-byte chunks within a row of the
staged (K, M) tile, so every element read has the right K index but the wrong M: the products summed into one
accumulator row come from different rows of A (the element read for row 8 is A's row 8 at k = 0 and row 24 at
k = 2).

expect: violated
code: MMA_ROW_MIXED
"""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def KERNEL(
    A: T.Tensor[("K", "M"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BK, BM), T.bf16, swizzle=64)
        sB = T.alloc_shared((BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((k, bm), (BK, BM)), sA.view(Layout((BK, BM), (BM, 1))))  # BUG: unswizzled writer
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA.T, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)  # <- MMA_ROW_MIXED
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
