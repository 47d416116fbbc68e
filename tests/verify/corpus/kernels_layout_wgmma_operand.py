"""C = A @ B with B given as (K, N), its stages in 64-column panels loaded one TMA box per panel, but the panels
stored last first: every box is still the layout TMA writes and the interpreter computes the right product, yet
the panels' distance along N is negative and a wgmma descriptor's leading byte offset is unsigned, so no
descriptor (K-major or MN-major) reads the operand.

expect: violated
code: LAYOUT_WGMMA_OPERAND
fact: LAYOUT_WGMMA_OPERAND counterexample.element.buffer == 'sB'
"""

import argus
import argus.lang as T
from argus.atoms.swizzle import hopper_swizzle
from argus.layout import ComposedLayout, Layout


def reversed_panels(stages: int, bk: int, bn: int) -> ComposedLayout:
    panels = bn // 64
    outer = Layout((stages, bk, (64, panels)), (bk * bn, 64, (1, -64 * bk)))
    return ComposedLayout(hopper_swizzle(128, 16), 64 * bk * (panels - 1), outer)


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 2,
):
    T.assume("K % 8 == 0 and N % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16, layout=reversed_panels(STAGES, BK, BN))
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,)):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                for j in range(BN // 64):
                    dst = sB[s].window((0, 64 * j), (BK, 64))
                    T.copy(B.tile((k, bn * (BN // 64) + j), (BK, 64)), dst, atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2)):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s], acc)  # <- LAYOUT_WGMMA_OPERAND
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
