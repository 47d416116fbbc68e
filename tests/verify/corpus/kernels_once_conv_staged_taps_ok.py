"""A 1-d implicit-GEMM convolution on mma.sync whose windows are staged in shared memory and read into the operand
fragment by ldmatrix (the lineage's `conv_mma_sync`): one input element lands in several rows of the stage, one per
tap, and the stage's row m is the fragment's row m: different output positions, each product summed once. Before
the contraction check followed the stage into the fragment, this was a false COVERAGE_CONTRACTION_TWICE.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("N", "W", "C"), T.bf16],
    WT: T.Tensor[("KW", "C", "F"), T.bf16],
    Y: T.Tensor[("N", "OW", "F"), T.f32],
    BW: int = 64,
    BF: int = 64,
    BK: int = 32,
):
    T.assume("KW == 3 and OW == W")
    with T.grid(T.cdiv(OW, BW), T.cdiv(F, BF), N, threads=128) as (bw, bf, n):
        sA = T.alloc_shared((BW, BK), T.bf16)
        sB = T.alloc_shared((BK, BF), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BW, BF), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BW, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BF), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for t in T.serial(3):
            for cb in T.serial(T.cdiv(C, BK)):
                T.copy(X.window((n, bw * BW + t - 1, cb * BK), (None, BW, BK)), sA)
                T.copy(WT.window((t, cb * BK, bf * BF), (None, BK, BF)), sB)
                T.barrier()
                T.copy(sA, rA, atom="ldmatrix")
                T.copy(sB, rB, atom="ldmatrix")
                T.gemm(rA, rB, acc)
                T.barrier()
        T.copy(acc, Y.window((n, bw * BW, bf * BF), (None, BW, BF)))
