"""A split-K GEMM (four splits of the K-blocks, each into its own slice of W, which the next kernel adds) whose loop
runs one K-block past its share: the first K-block of every later share is also summed by the split before it. Each
block's own accumulation loads every element once and every element is loaded (coverage holds); the slices are
declared partial sums (T.partial_sums), so the verifier pairs the blocks of two slices and finds the element loaded
by both, with the two blocks, their iterations and the sizes.

expect: violated
code: COVERAGE_CONTRACTION_TWICE
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    W: T.Tensor[(4, "M", "N"), T.f32],
    BM: int = 16,
    BN: int = 16,
    BK: int = 16,
):
    T.assume("K % 8 == 0")
    T.assume("N % 8 == 0")
    T.partial_sums(W, 0, "the next kernel adds the four slices")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), 4, threads=BM * BN) as (bm, bn, z):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        blocks = T.cdiv(K, BK)
        share = T.cdiv(blocks, 4)
        first = z * share
        T.fill(acc, 0.0)
        for k in T.serial(T.maximum(T.minimum(share + 1, blocks - first), 0)):  # BUG: share, not share + 1
            T.copy(A.tile((bm, first + k), (BM, BK)), rA)  # <- COVERAGE_CONTRACTION_TWICE
            T.copy(B.tile((first + k, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, W.tile((z, bm, bn), (None, BM, BN)))
