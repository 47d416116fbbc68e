"""A consumer loop with two asynchronous MMA statements per iteration (two accumulators from one stage, as a
SwiGLU GEMM's gate and up), lowered by hand as the deferred-release pass lowers one: each waits with
``wait_group=2``, so after the second only iteration k's two groups may still run and iteration k - 1's have
finished (groups complete in issue order); the loop releases the stage of iteration k - 1, then after the loop
waits for everything and releases the last stage. Correct.

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
            acc2 = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            T.fill(acc2, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s].T, acc, wait_group=2)  # groups: k - 1's second and k's first may run on
                T.gemm(sA[s], sB[s].T, acc2, wait_group=2)  # iteration k - 1's two have finished; k's run on
                with T.if_(k > 0):
                    T.mbarrier_arrive(empty[(k - 1) % STAGES])  # release the stage iteration k - 1 read
            T.wgmma_wait(0)  # the last iteration's MMAs
            with T.if_(T.cdiv(K, BK) > 0):
                T.mbarrier_arrive(empty[(T.cdiv(K, BK) - 1) % STAGES])  # and its stage
            T.copy(acc * acc2, C.tile((bm, bn), (BM, BN)))
