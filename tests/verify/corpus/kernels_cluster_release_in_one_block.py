"""A 2-block cluster whose consumers release the shared stage on the pair's barrier in the cluster's first block
only: that block's arrivals count on both blocks' barriers, the second block's never, so each phase of `empty`
completes on half of its arrivals (the interpreter: a hang). The finding points at the arrival, whose branch
condition differs between the two blocks.

expect: violated
code: PIPELINE_CLUSTER_ASYMMETRIC
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 64,
):
    T.assume("K % 8 == 0")
    T.assume("N % 4 == 0")
    with T.grid(2 * T.cdiv(T.cdiv(M, BM), 2), T.cdiv(N, BN), threads=256, cluster=2) as (bm, bn):
        sA = T.alloc_shared((2, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((2, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(2, arrive_count=1)
        empty = T.alloc_mbarrier(2, arrive_count=1, cluster=True)
        with T.role("producer", warpgroups=(0,), registers=40):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=2):
                T.mbarrier_wait(empty[s], phase=(k // 2 + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s], multicast=True)
        with T.role("consumer", warpgroups=(1,), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=2):
                T.mbarrier_wait(full[s], phase=(k // 2) % 2)
                T.gemm(sA[s], sB[s].T, acc)
                with T.if_(T.eq(bm % 2, 0)):
                    T.mbarrier_arrive(empty[s])  # <- PIPELINE_CLUSTER_ASYMMETRIC
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
