"""Split-K: a third grid dimension splits the K loop into SPLIT slices, each block multiplying its slice; but every
block stores its partial product straight into the same C tile instead of reducing the partial sums, so C holds
one slice's product (whichever block stored last).

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
    SPLIT: int = 4,
):
    T.assume(f"K % {BK * SPLIT} == 0")  # every slice is whole K blocks
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), SPLIT, threads=BM * BN) as (bm, bn, sk):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        T.fill(acc, 0.0)
        per_split = K // (BK * SPLIT)
        for k in T.serial(per_split):
            T.copy(A.tile((bm, sk * per_split + k), (BM, BK)), rA)
            T.copy(B.tile((sk * per_split + k, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, C.tile((bm, bn), (BM, BN)))  # <- COVERAGE_OUTPUT_TWICE
