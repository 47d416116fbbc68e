"""The K loop runs the K // BK whole blocks, and a separate tail step loads the partial last block only when BK does
not divide K: every K block is accumulated exactly once (and every element of A and B is loaded).

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 16,
    BN: int = 16,
    BK: int = 16,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=BM * BN) as (bm, bn):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        T.fill(acc, 0.0)
        for k in T.serial(K // BK):
            T.copy(A.tile((bm, k), (BM, BK)), rA)
            T.copy(B.tile((k, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        with T.if_(T.ne(K % BK, 0)):
            T.copy(A.tile((bm, K // BK), (BM, BK)), rA)  # the partial block: past K reads 0
            T.copy(B.tile((K // BK, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
