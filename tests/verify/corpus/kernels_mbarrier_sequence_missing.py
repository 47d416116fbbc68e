"""`mbarrier_sequence_ok` with the prologue's arrival under a guard one K-block short of its copies' (`k_tiles > s +
1`): with k_tiles = s + 1 K-block s is loaded but its phase of `full[s]` never gets the arrival that announces it, and
the wait for it never completes: the block deadlocks.

expect: violated
code: MBARRIER_ARRIVE_COUNT
fact: MBARRIER_ARRIVE_COUNT details.arrivals_per_phase == 0
fact: MBARRIER_ARRIVE_COUNT counterexample.element.buffer == "full"
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
    STAGES: int = 3,
):
    T.assume("K % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=2 * 128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # <- MBARRIER_ARRIVE_COUNT
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2
        for s in range(STAGES - 1):  # prologue: the first tiles in flight
            with T.if_(k_tiles > s + 1):  # the arrival's guard one K-block short of the copies'
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
            with T.if_(k_tiles > s):
                T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, s), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        for k, s in T.pipeline(k_tiles, stages=STAGES):
            nxt = k + (STAGES - 1)
            with T.if_(nxt < k_tiles):
                T.mbarrier_arrive(full[nxt % STAGES], expect_bytes=stage_bytes)
                T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="tma", mbarrier=full[nxt % STAGES])
                T.copy(B.tile((bn, nxt), (BN, BK)), sB[nxt % STAGES], atom="tma", mbarrier=full[nxt % STAGES])
            T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
            T.gemm(sA[s], sB[s].T, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
