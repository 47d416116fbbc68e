"""B is N-major (K, N) and staged 64-byte-swizzled, but the writer stores it through a plain row-major view while
ldmatrix reads the swizzled buffer. The swizzle permutes the 16-byte chunks within a row of the tile, so every element
read is in the right row (its K index matches A's: no `MMA_K_MISMATCH`) but in the wrong column: the products summed
into one accumulator element come from different columns of B (the element read for column 36 is B's column 36 at
k = 0 and column 52 at k = 2).

expect: violated
code: MMA_COL_MIXED
"""

import argus
import argus.lang as T
from argus.layout import Layout


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
        sB = T.alloc_shared((BK, BN), T.bf16, swizzle=64)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB.view(Layout((BK, BN), (BN, 1))))  # BUG: unswizzled writer
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)  # <- MMA_COL_MIXED
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
