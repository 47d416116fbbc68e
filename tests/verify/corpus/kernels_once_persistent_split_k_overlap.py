"""A persistent split-K GEMM (two splits a tile, each summing its range of K-blocks into its slice of the workspace
C, declared partial sums: T.partial_sums) whose loop runs one K-block past its share: split 0's last iteration loads
the first K-block of split 1's range, which the sum then counts twice. Within a block every K-block enters the
accumulation once and every K-block is loaded; the check pairs two blocks whose units store the same tile into the
two slices (each block's loads those of the unit that stores, the producer's through the proved pairing).

expect: violated
code: COVERAGE_CONTRACTION_TWICE
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("S", "M", "N"), T.f32],
    BM: int = 128,
    BN: int = 64,
    BK: int = 64,
    STAGES: int = 3,
    BLOCKS: int = 132,
):
    T.assume("K % 8 == 0")
    T.assume("S == 2")
    T.partial_sums(C, 0, "the next kernel adds the two slices")
    with T.grid(BLOCKS, threads=384) as (bx,):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        units = tiles_m * tiles_n * 2
        k_split = T.cdiv(T.cdiv(K, BK), 2)
        steps = k_split + 1  # BUG: one K-block past the split's share
        with T.role("producer", warpgroups=(0,), registers=40):
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = bx + it * BLOCKS
                with T.if_(u < units):
                    bm, bn = T.tile_order(u // 2, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    for k, s in T.pipeline(steps, stages=STAGES, start=it * steps):
                        g = k + it * steps
                        kb = k + u % 2 * k_split
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)
                        T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                        a, b = A.tile((bm, kb), (BM, BK)), B.tile((bn, kb), (BN, BK))
                        T.copy(a, sA[s], atom="tma", mbarrier=full[s])  # <- COVERAGE_CONTRACTION_TWICE
                        T.copy(b, sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = bx + it * BLOCKS
                with T.if_(u < units):
                    bm, bn = T.tile_order(u // 2, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(steps, stages=STAGES, start=it * steps):
                        g = k + it * steps
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        T.gemm(sA[s], sB[s].T, acc)
                        T.mbarrier_arrive(empty[s])
                    T.copy(acc, C.tile((u % 2, bm, bn), (None, BM, BN)))
