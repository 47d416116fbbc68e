"""`kernels_once_conv_staged_taps_ok.py` with its tap loop run over 2 * 3 steps and the tap read as ``t // 2``:
every tap's window enters the stage twice, each input element twice into the same stage row, hence the same
fragment row (output position) against the same weight: the check follows the stage into the fragment and still
finds it.

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
        for t in T.serial(6):
            for cb in T.serial(T.cdiv(C, BK)):
                window = X.window((n, bw * BW + t // 2 - 1, cb * BK), (None, BW, BK))
                T.copy(window, sA)  # <- COVERAGE_CONTRACTION_TWICE
                T.copy(WT.window((t // 2, cb * BK, bf * BF), (None, BK, BF)), sB)
                T.barrier()
                T.copy(sA, rA, atom="ldmatrix")
                T.copy(sB, rB, atom="ldmatrix")
                T.gemm(rA, rB, acc)
                T.barrier()
        T.copy(acc, Y.window((n, bw * BW, bf * BF), (None, BW, BF)))
