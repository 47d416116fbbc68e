"""A consumer loop that keeps one wgmma group in flight (``wait_group=1``) but releases the stage it has just
issued MMAs on, empty[s], instead of the previous iteration's: ``wgmma.wait_group 1`` only guarantees that the MMAs
of iteration k - 1 have finished, so the stage of iteration k may still be being read by the tensor cores when the
producer, seeing it released, overwrites it with the tile of iteration k + STAGES. The loop as one would write it
without the wait (T.gemm, then T.mbarrier_arrive(empty[s])) is correct; this bug exists only in the lowered form,
which is what the deferred-release pass emits and the verifier now proves. Reported at the arrival.

expect: violated
code: PIPELINE_OVERWRITE
fact: PIPELINE_OVERWRITE counterexample.variables.release_lag_d == 0
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
                T.mbarrier_arrive(empty[s])  # <- PIPELINE_OVERWRITE
            T.wgmma_wait(0)  # the last iteration's MMAs
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
