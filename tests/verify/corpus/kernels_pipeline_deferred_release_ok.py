"""A consumer loop written by hand the way the deferred-release pass lowers one: each iteration issues its wgmma
with ``wait_group=1`` (its MMAs go on reading the stage after the statement), so only the MMAs of iteration k - 1
are known to have finished, and it releases *that* stage, empty[(k - 1) % STAGES] when k > 0; after the loop it
waits for the last MMAs (``T.wgmma_wait(0)``) and releases the last stage. Correct: every stage is released once,
in iteration order, after the tensor cores have finished reading it.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 4,
):
    T.assume("K % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,), registers=40):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)  # the first pass finds every stage free
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s].T, acc, wait_group=1)  # iteration k - 1's MMAs have finished; k's run on
                with T.if_(k > 0):
                    T.mbarrier_arrive(empty[(k - 1) % STAGES])  # release the stage iteration k - 1 read
            T.wgmma_wait(0)  # the last iteration's MMAs
            with T.if_(T.cdiv(K, BK) > 0):
                T.mbarrier_arrive(empty[(T.cdiv(K, BK) - 1) % STAGES])  # and its stage
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
