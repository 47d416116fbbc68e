"""Hopper GEMM whose two consumer warpgroups each release a stage for themselves (`per_warpgroup=True`), against
`empty` barriers that wait for one arrival: the first warpgroup's arrival completes the phase, and the producer
overwrites the stage while the second warpgroup's MMAs may still read it.

expect: violated
code: MBARRIER_ARRIVE_COUNT
fact: MBARRIER_ARRIVE_COUNT details.arrive_count == 1
fact: MBARRIER_ARRIVE_COUNT details.arrivals_per_phase == 2
fact: MBARRIER_ARRIVE_COUNT counterexample.element.buffer == "empty"
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 64,
    BK: int = 64,
    STAGES: int = 3,
):
    T.assume("K % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # <- MBARRIER_ARRIVE_COUNT
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
                T.gemm(sA[s], sB[s].T, acc)
                T.mbarrier_arrive(empty[s], per_warpgroup=True)
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
