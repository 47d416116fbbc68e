"""The program-order TMA GEMM of corpus tma_order_wgmma_in_flight with one wgmma group in flight (``wait_group=1``)
done right: the loads run STAGES - 2 tiles ahead, into the stage iteration k - 2 read, whose MMAs the wait of
iteration k - 1's own wgmma retired (and iteration k - 1's closing barrier shows every warpgroup passed that wait).

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
):
    T.assume("K % 8 == 0")  # TMA needs the row strides of A and B (K bf16 elements) to be multiples of 16 bytes
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=2 * 128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)  # (stages, BM, BK), K-major
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)  # (stages, BN, BK), K-major
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: one expect_tx arrival + TMA bytes
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # 2 warpgroups x 64 rows
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2
        for s in range(STAGES - 2):  # prologue: the first STAGES - 2 tiles in flight
            with T.if_(k_tiles > s):
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, s), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        for k, s in T.pipeline(k_tiles, stages=STAGES):
            nxt = k + (STAGES - 2)  # into the stage iteration k - 2 read: its MMAs retired at iteration k - 1
            with T.if_(nxt < k_tiles):
                T.mbarrier_arrive(full[nxt % STAGES], expect_bytes=stage_bytes)
                bar = full[nxt % STAGES]
                T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="tma", mbarrier=bar)
                T.copy(B.tile((bn, nxt), (BN, BK)), sB[nxt % STAGES], atom="tma", mbarrier=full[nxt % STAGES])
            T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)  # the stage's (k // STAGES)-th load has landed
            # invariant: the stage consumed at iteration k holds K-block k of this block's A and B tiles
            T.assert_tag(lambda a, k=k: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
            T.assert_tag(lambda b, k=k: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
            T.gemm(sA[s], sB[s].T, acc, wait_group=1)  # one wgmma group kept in flight (overlap)
            T.barrier()  # every warpgroup has *issued* its reads of stage s, not completed them
        T.wgmma_wait(0)
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
