"""A split-K GEMM (four splits of the K-blocks, each into its own slice of W, which the next kernel adds): split z
takes K-blocks ``z * share`` up to the next share or the end, ``share = cdiv(blocks, 4)``. The slices are declared
partial sums (T.partial_sums): no element of A or B enters two slices' accumulations, and every one is loaded
(contraction coverage reads the split index at each of its four values).

expect: verified
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
        for k in T.serial(T.maximum(T.minimum(share, blocks - first), 0)):
            T.copy(A.tile((bm, first + k), (BM, BK)), rA)
            T.copy(B.tile((first + k, bn), (BK, BN)), rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, W.tile((z, bm, bn), (None, BM, BN)))
