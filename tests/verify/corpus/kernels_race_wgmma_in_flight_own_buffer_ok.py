"""Corpus race_wgmma_in_flight_own_buffer with the consumer's buffer rewritten only after ``T.wgmma_wait(0)``: the
MMAs of iteration k - 1 have finished reading sAct (the wait retires them) before any thread of the warpgroup passes
the named barrier and stores the next tile.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 4,
):
    T.assume("K % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=256) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        sAct = T.alloc_shared((BM, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,), registers=40):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1,), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            x = T.alloc_fragment((BM, BK), T.f32)
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.copy(sA[s], x)
                T.wgmma_wait(0)  # iteration k - 1's MMAs have finished reading sAct
                T.barrier(1, threads=128)
                T.copy(x * 2.0, sAct)
                T.fence_proxy_async()
                T.barrier(1, threads=128)
                T.gemm(sAct, sB[s].T, acc, wait_group=1)
                with T.if_(k > 0):
                    T.mbarrier_arrive(empty[(k - 1) % STAGES])
            T.wgmma_wait(0)
            with T.if_(T.cdiv(K, BK) > 0):
                T.mbarrier_arrive(empty[(T.cdiv(K, BK) - 1) % STAGES])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
