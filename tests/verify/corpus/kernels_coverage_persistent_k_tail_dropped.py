"""The persistent warp-specialized GEMM whose K loop runs ``K // BK`` blocks in both roles: for K not a multiple of
BK the tail of the contraction is never loaded, and every tile of C misses its products. The loads are placed by
the tile order under the tile guard; they follow the cells of C's store, which output coverage proves, and the K
loop does not reach the tail. Every other check holds.

expect: violated
code: COVERAGE_CONTRACTION
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
    BLOCKS: int = 132,
):
    T.assume("K % 8 == 0")
    with T.grid(BLOCKS, threads=384) as (bx,):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        tiles = tiles_m * tiles_n
        k_tiles = K // BK  # BUG: the tail of K is dropped where BK does not divide it
        with T.role("producer", warpgroups=(0,), registers=40):
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)
                        T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                        a, b = A.tile((bm, k), (BM, BK)), B.tile((bn, k), (BN, BK))
                        T.copy(a, sA[s], atom="tma", mbarrier=full[s])  # <- COVERAGE_CONTRACTION
                        T.copy(b, sB[s], atom="tma", mbarrier=full[s])  # <- COVERAGE_CONTRACTION
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        T.gemm(sA[s], sB[s].T, acc)
                        T.mbarrier_arrive(empty[s])
                    T.copy(acc, C.tile((bm, bn), (BM, BN)))
