"""Program-order TMA pipeline without the mbarrier wait: the MMA reads the stage as soon as the load is issued.

expect: violated
code: PIPELINE_STALE_READ
fact: PIPELINE_STALE_READ counterexample.element.buffer == "sA"
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
    STAGES: int = 2,
):
    T.assume("K % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        with T.if_(k_tiles > 0):  # prologue: tile 0 in flight
            T.mbarrier_arrive(full[0], expect_bytes=(BM + BN) * BK * 2)
            T.copy(A.tile((bm, 0), (BM, BK)), sA[0], atom="tma", mbarrier=full[0])
            T.copy(B.tile((bn, 0), (BN, BK)), sB[0], atom="tma", mbarrier=full[0])
        for k, s in T.pipeline(k_tiles, stages=STAGES):
            with T.if_(k + 1 < k_tiles):  # the next tile, into the stage the previous iteration freed
                nxt = (k + 1) % STAGES
                T.mbarrier_arrive(full[nxt], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k + 1), (BM, BK)), sA[nxt], atom="tma", mbarrier=full[nxt])
                T.copy(B.tile((bn, k + 1), (BN, BK)), sB[nxt], atom="tma", mbarrier=full[nxt])
            T.gemm(sA[s], sB[s].T, acc)  # <- PIPELINE_STALE_READ
            T.barrier()  # every thread is done with stage s before it is refilled
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
