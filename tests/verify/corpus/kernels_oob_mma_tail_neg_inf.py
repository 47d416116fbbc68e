"""Single-stage GEMM whose K tail is copied with ``pad=-inf`` (a maximum's padding, as a copy written for a
softmax's input would pad): where K is not a multiple of BK, the last tile's columns of A past K are -inf and its
rows of B past K are 0, so every real accumulator element adds -inf * 0 = NaN. (The MMA was not checked as a sum of
its padding: this verified.)

expect: violated
code: OOB_MASKED_MMA
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
):
    T.assume("K % 8 == 0")  # rows in whole 16-byte vectors
    T.assume("N % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16)
        sB = T.alloc_shared((BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA, pad=float("-inf"))  # BUG: the contraction's tail must be 0
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)  # <- OOB_MASKED_MMA
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
