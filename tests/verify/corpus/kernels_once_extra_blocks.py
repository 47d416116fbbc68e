"""The grid is rounded up to a multiple of 4 row tiles (a launch-size habit), and the epilogue wraps the block row
index with `bm % T.cdiv(M, BM)` so that the extra blocks stay in bounds: for M not a multiple of 4 * BM the extra
blocks store their accumulator into a row tile another block also stores, and C keeps whichever lands last.

expect: violated
code: COVERAGE_OUTPUT_TWICE

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
    with T.grid(T.cdiv(T.cdiv(M, BM), 4) * 4, T.cdiv(N, BN), threads=BM * BN) as (bm, bn):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), rA)
            T.copy(B.tile((k, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, C.tile((bm % T.cdiv(M, BM), bn), (BM, BN)))  # <- COVERAGE_OUTPUT_TWICE
