"""`once_grouped_order_ok` with the grouped order's row index taken modulo the group size instead of the rows the
group has: in the last group, when the tile rows are not a multiple of the group, rows past the grid are clamped
onto the last row, and two tile numbers store one tile of C; the tile they should have stored is never written.

expect: violated
code: COVERAGE_OUTPUT_TWICE
code: COVERAGE_OUTPUT
"""

import argus
import argus.lang as T
from argus.ir.expr import maximum, minimum


def grouped(t, tiles_m, tiles_n, group):
    """Tile number t -> (m, n), `group` rows of tiles at a time, column by column, as if every group were full."""
    per_group = tiles_n * group
    first_m = (t // per_group) * group
    within = t % per_group
    m, n = first_m + within % group, within // group  # BUG: the last group has fewer rows
    return minimum(maximum(m, 0), tiles_m - 1), minimum(maximum(n, 0), tiles_n - 1)


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
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = grouped(t, tiles_m, tiles_n, 8)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)
                        T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                        T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                        T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = grouped(t, tiles_m, tiles_n, 8)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        T.gemm(sA[s], sB[s].T, acc)
                        T.mbarrier_arrive(empty[s])
                    T.copy(acc, C.tile((bm, bn), (BM, BN)))  # <- COVERAGE_OUTPUT_TWICE
