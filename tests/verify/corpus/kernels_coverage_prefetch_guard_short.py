"""A contraction walked as a software pipeline lays it out (K-block 0 before the loop, K-block ``k + 1`` in iteration
``k``) whose prefetch guard stops one K-block early: ``T.if_(k + 1 < k_tiles - 1)``. The last K-block of A and B is
never loaded, so every sum misses its products; each element of C is still stored once.

expect: violated
code: COVERAGE_CONTRACTION
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
        k_tiles = T.cdiv(K, BK)
        T.fill(acc, 0.0)
        with T.if_(0 < k_tiles):
            T.copy(A.tile((bm, 0), (BM, BK)), rA)  # <- COVERAGE_CONTRACTION (the first of A's loads)
            T.copy(B.tile((0, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        for k in T.serial(k_tiles):
            with T.if_(k + 1 < k_tiles - 1):  # BUG: k + 1 < k_tiles
                T.copy(A.tile((bm, k + 1), (BM, BK)), rA)
                T.copy(B.tile((k + 1, bn), (BK, BN)), rB)
                T.gemm(rA, rB, acc)
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
