"""The 1-d implicit-GEMM convolution of `kernels_once_conv_taps_ok.py` with its tap loop run over 2 * 3 steps and
the tap read as ``t // 2``: every tap's window and weight enter the accumulation twice, each input element twice
into the same row (output position) against the same weight.

expect: violated
code: COVERAGE_CONTRACTION_TWICE
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("N", "W", "C"), T.bf16],
    WT: T.Tensor[("KW", "C", "F"), T.bf16],
    Y: T.Tensor[("N", "OW", "F"), T.f32],
    BW: int = 16,
    BF: int = 16,
    BK: int = 16,
):
    T.assume("KW == 3 and OW == W")
    with T.grid(T.cdiv(OW, BW), T.cdiv(F, BF), N, threads=BW * BF) as (bw, bf, n):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BW, BF), T.f32, mma=atom, groups=(BW, BF))
        rA = T.alloc_fragment((BW, BK), T.bf16, mma=atom, operand="A", groups=(BW, BF))
        rB = T.alloc_fragment((BK, BF), T.bf16, mma=atom, operand="B", groups=(BW, BF))
        T.fill(acc, 0.0)
        for t in T.serial(6):
            for cb in T.serial(T.cdiv(C, BK)):
                window = X.window((n, bw * BW + t // 2 - 1, cb * BK), (None, BW, BK))
                T.copy(window, rA)  # <- COVERAGE_CONTRACTION_TWICE
                T.copy(WT.window((t // 2, cb * BK, bf * BF), (None, BK, BF)), rB)
                T.gemm(rA, rB, acc)
        T.copy(acc, Y.window((n, bw * BW, bf * BF), (None, BW, BF)))
