"""A persistent warp-specialized GEMM (`argus.kernels.gemm`, row-major tile order) with one seeded
bug chosen by BUG, for `test_persistent_pipeline.py` (verifier) and `tests/kernels/test_gemm_persistent_ws.py`
(interpreter):

* ``""``: correct (verified);
* ``"consumer_local_phase"``: the consumer waits on ``full`` with parity ``(k // STAGES) % 2``, the tile-local
  counter, instead of the global iteration's: violated, MBARRIER_PHASE (a tile after the first);
* ``"producer_local_phase"``: the producer's release wait on ``empty`` likewise: violated, MBARRIER_PHASE;
* ``"producer_next_tile"``: the producer loads the tiles of ``t + 1``: violated, TAG_ASSERT;
* ``"no_start"``: ``T.pipeline`` without ``start`` in both roles (every tile restarts the rotation): unknown,
  UNKNOWN_WARP_ROLES (the numbering is not provable; right only when k_tiles is a multiple of 2 x STAGES);
* ``"consumer_guard"``: the consumer's tile guard ``t <= tiles`` differs from the producer's: unknown,
  UNKNOWN_WARP_ROLES;
* ``"floor_k"``: both roles run ``K // BK`` K-blocks, dropping the tail of K when BK does not divide it: violated,
  COVERAGE_CONTRACTION (the loads are placed by the tile order, under the tile guard).
"""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def persistent_variant(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 64,
    BK: int = 64,
    STAGES: int = 3,
    BLOCKS: int = 132,
    BUG: str = "",
):
    """`gemm_warp_specialized_persistent` (row-major tile order) with one seeded bug, named by BUG."""
    T.assume("K % 8 == 0")
    with T.grid(BLOCKS, threads=384) as (bx,):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        tiles = tiles_m * tiles_n
        k_tiles = K // BK if BUG == "floor_k" else T.cdiv(K, BK)
        start = 0 if BUG == "no_start" else None
        with T.role("producer", warpgroups=(0,), registers=40):
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    if BUG == "producer_next_tile":
                        bm, bn = T.tile_order(t + 1, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles if start is None else start):
                        g = k + it * k_tiles
                        release = (k // STAGES + 1) % 2 if BUG == "producer_local_phase" else (g // STAGES + 1) % 2
                        T.mbarrier_wait(empty[s], phase=release)
                        T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                        T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                        T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                guard = t <= tiles if BUG == "consumer_guard" else t < tiles
                with T.if_(guard):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), "row_major", 8, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles if start is None else start):
                        g = k + it * k_tiles
                        # the seeded bug of the task: the tile-local counter k instead of the global g
                        phase = (k // STAGES) % 2 if BUG == "consumer_local_phase" else (g // STAGES) % 2
                        T.mbarrier_wait(full[s], phase=phase)
                        T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])  # noqa: B023
                        T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])  # noqa: B023
                        T.gemm(sA[s], sB[s].T, acc)
                        T.mbarrier_arrive(empty[s])
                    T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel
def program_order_two_passes(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 64,
    STAGES: int = 2,
):
    """The corpus's `tma_order_ok` (TMA and wgmma in program order, no roles) run twice over the same barriers,
    waiting with the parity (k // STAGES) % 2 of a first run: wrong on the second pass whenever k_tiles is not a
    multiple of 2 x STAGES. The program-order check used to verify it; it is UNKNOWN_MBARRIER_ORDER now."""
    T.assume("K % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
        k_tiles = T.cdiv(K, BK)
        for _rep in T.serial(2):
            T.fill(acc, 0.0)
            with T.if_(k_tiles > 0):
                T.mbarrier_arrive(full[0], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, 0), (BM, BK)), sA[0], atom="tma", mbarrier=full[0])
                T.copy(B.tile((bn, 0), (BN, BK)), sB[0], atom="tma", mbarrier=full[0])
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                with T.if_(k + 1 < k_tiles):
                    nxt = (k + 1) % STAGES
                    T.mbarrier_arrive(full[nxt], expect_bytes=(BM + BN) * BK * 2)
                    T.copy(A.tile((bm, k + 1), (BM, BK)), sA[nxt], atom="tma", mbarrier=full[nxt])
                    T.copy(B.tile((bn, k + 1), (BN, BK)), sB[nxt], atom="tma", mbarrier=full[nxt])
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s].T, acc)
                T.barrier()
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
