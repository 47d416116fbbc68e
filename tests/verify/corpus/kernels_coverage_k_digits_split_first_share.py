"""A split-K contraction over (tap, channel block) pairs, as an implicit-GEMM convolution's K loop runs (K-step
``kk``: tap ``kk // CB``, channel block ``kk % CB``), whose splits all take the first split's K-steps: the taps past
the first share are never loaded, and the reduction of the workspace's slices sums one share SPLITS times. Each
split's sum is its own slice, so no element is accumulated twice into one sum, and every other check holds.

expect: violated
code: COVERAGE_CONTRACTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "TAPS", "C"), T.bf16],
    B: T.Tensor[("N", "TAPS", "C"), T.bf16],
    W: T.Tensor[("S", "M", "N"), T.f32],
    BM: int = 16,
    BN: int = 16,
    BK: int = 16,
    CB: int = 2,
    SPLITS: int = 3,
):
    T.assume(f"TAPS == 9 and C == {CB * BK} and S == {SPLITS}")
    ks = 9 * CB // SPLITS  # the K-steps of one split
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), SPLITS, threads=BM * BN) as (bm, bn, split):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        T.fill(acc, 0.0)
        for k in T.serial(ks):
            kk = k  # BUG: k + split * ks (every split sums the first share)
            T.copy(A.window((bm * BM, kk // CB, kk % CB * BK), (BM, None, BK)), rA)  # <- COVERAGE_CONTRACTION
            T.copy(B.window((bn * BN, kk // CB, kk % CB * BK), (BN, None, BK)).T, rB)
            T.gemm(rA, rB, acc)
        T.copy(acc, W.window((split, bm * BM, bn * BN), (None, BM, BN)))
