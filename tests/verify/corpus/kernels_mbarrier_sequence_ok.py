"""Program-order TMA GEMM (the lineage's `gemm_tma_wgmma`): the first STAGES - 1 K-blocks loaded before the loop,
each under `T.if_(k_tiles > s)`, and K-block k + STAGES - 1 inside it under `T.if_(k + STAGES - 1 < k_tiles)`, each
arrival on `full[j % STAGES]` for K-block j: one arrival a phase, in sequence (docs/verify.md, "Arrive counts").

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
    STAGES: int = 3,
):
    T.assume("K % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=2 * 128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2
        for s in range(STAGES - 1):  # prologue: the first tiles in flight
            with T.if_(k_tiles > s):
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
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
