"""A 1-d convolution as an implicit GEMM, channels last: for tap kw the A operand is the input window shifted by kw,
so one input element enters the accumulation once per tap, each time in another row (another output position)
against another weight. Each product is summed once: not a double accumulation (the contraction check pairs an
element with the operand row it lands in).

expect: verified
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
    T.assume("KW == 3 and OW == W")  # a window of 3, padding 1
    with T.grid(T.cdiv(OW, BW), T.cdiv(F, BF), N, threads=BW * BF) as (bw, bf, n):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BW, BF), T.f32, mma=atom, groups=(BW, BF))
        rA = T.alloc_fragment((BW, BK), T.bf16, mma=atom, operand="A", groups=(BW, BF))
        rB = T.alloc_fragment((BK, BF), T.bf16, mma=atom, operand="B", groups=(BW, BF))
        T.fill(acc, 0.0)
        for kw in T.serial(3):
            for cb in T.serial(T.cdiv(C, BK)):
                T.copy(X.window((n, bw * BW + kw - 1, cb * BK), (None, BW, BK)), rA)
                T.copy(WT.window((kw, cb * BK, bf * BF), (None, BK, BF)), rB)
                T.gemm(rA, rB, acc)
        T.copy(acc, Y.window((n, bw * BW, bf * BF), (None, BW, BF)))
