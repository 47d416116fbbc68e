"""A K loop unrolled by hand "two half-steps per block" reads K block `k // 2` in iteration k of 2 * cdiv(K, BK):
every K block enters the accumulator twice.

expect: violated
code: COVERAGE_CONTRACTION_TWICE
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
        for k in T.serial(2 * T.cdiv(K, BK)):
            T.copy(A.tile((bm, k // 2), (BM, BK)), rA)  # <- COVERAGE_CONTRACTION_TWICE
            T.copy(B.tile((k // 2, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
