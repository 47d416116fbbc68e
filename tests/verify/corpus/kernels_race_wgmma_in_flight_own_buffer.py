"""A warp-specialized GEMM with a prologue on A (C = (2 A) B^T, the scaling standing for a dequantization): the
consumer reads A's stage into registers, scales it into its own shared buffer sAct, fences, syncs its warpgroup and
multiplies sAct with B's stage, keeping one wgmma in flight (``wait_group=1``, stages released one iteration late as
in corpus pipeline_deferred_release_ok). sAct has one buffer: iteration k rewrites it while iteration k - 1's MMAs
may still read it; the named barrier before the store only shows every thread *issued* them. Found by a blind bug
hunt (session 55): the race check ended an asynchronous read at its statement. Corpus
race_wgmma_in_flight_own_buffer_ok waits for the MMAs first.

expect: violated
code: RACE_READ_WRITE
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
                T.barrier(1, threads=128)  # iteration k - 1's wgmma was only issued: it may still read sAct
                T.copy(x * 2.0, sAct)  # <- RACE_READ_WRITE
                T.fence_proxy_async()
                T.barrier(1, threads=128)
                T.gemm(sAct, sB[s].T, acc, wait_group=1)
                with T.if_(k > 0):
                    T.mbarrier_arrive(empty[(k - 1) % STAGES])
            T.wgmma_wait(0)
            with T.if_(T.cdiv(K, BK) > 0):
                T.mbarrier_arrive(empty[(T.cdiv(K, BK) - 1) % STAGES])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
