"""The persistent warp-specialized GEMM whose blocks run ``tiles // BLOCKS`` iterations (the floor, for
``cdiv(tiles, BLOCKS)``): the tiles of the last, partial wave are never stored (with 100 tiles on 132 blocks, none
is). Every other check holds: no tile is stored twice, every stored tile is the right one.

expect: violated
code: COVERAGE_OUTPUT
fact: COVERAGE_OUTPUT counterexample.code == 'COVERAGE_OUTPUT'
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
        k_tiles = T.cdiv(K, BK)
        with T.role("producer", warpgroups=(0,), registers=40):
            for it in T.serial(tiles // BLOCKS):  # BUG: the last, partial wave is dropped
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)
                        T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                        T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                        T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            for it in T.serial(tiles // BLOCKS):  # BUG: the last, partial wave is dropped
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        T.gemm(sA[s], sB[s].T, acc)
                        T.mbarrier_arrive(empty[s])
                    T.copy(acc, C.tile((bm, bn), (BM, BN)))  # <- COVERAGE_OUTPUT
