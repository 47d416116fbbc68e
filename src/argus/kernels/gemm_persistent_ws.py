"""The persistent warp-specialized Hopper GEMM: `gemm_wgmma_tma` on a grid of BLOCKS blocks (one per SM) that
walk the output tiles, with one mbarrier pipeline per block running across its tiles.

Each warp role loops over the block's tiles (tile ``t = bx + it * BLOCKS``, in `T.tile_order`), and inside it
over the K-blocks of the tile with ``T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles)``: iteration k of
tile it is global iteration ``g = k + it * k_tiles`` of the block's stage rotation, so it uses stage
``g % STAGES`` and completes phase ``g // STAGES`` of that stage's barriers. The producer therefore runs on
into the next tile's stages while the consumers multiply this one's last K-blocks and store C, instead of
every tile starting with an empty pipeline and ending with an exposed epilogue.

EPILOGUE says how the consumers store C. ``"direct"``: from registers to global memory (16-byte stores after
the lane exchange where C is 16-bit), the consumers starting the next tile's MMAs only once the last store has
issued. ``"tma"``: through shared memory and TMA stores (``T.copy(..., atom="tma.store")``): each consumer
warpgroup writes its rows of C in chunks of 128 bytes of columns into one of two staging buffers and hands each
chunk to a TMA store, which drains while the warpgroup goes on to the next tile. The staging buffers take
2 x BM x 128 bytes of shared memory (32 KB at BM = 128), and C's rows must be 16-byte aligned."""

from __future__ import annotations

import argus
import argus.lang as T
from argus.atoms.common import SMS
from argus.atoms.tma import store_chunk_columns
from argus.kernels.gemm import (
    a_shape,
    alloc_operand_stages,
    b_shape,
    holds,
    load_operand,
    operand,
    operand_assumption,
)
from argus.lang.errors import DSLError


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def gemm_wgmma_tma_persistent(
    A: T.Tensor[a_shape, "IN"],
    B: T.Tensor[b_shape, "IN"],
    C: T.Tensor[("M", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
    OUT: str = "f32",
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    ORDER: str = "grouped",
    GROUP: int = 8,
    EPILOGUE: str = "direct",
    A_MAJOR: str = "K",
    B_MAJOR: str = "K",
):
    """C = A @ B^T (B given as (N, K), K-major; or C = A @ B with B_MAJOR="N") on Hopper, persistent: BLOCKS
    blocks, each with a producer warpgroup (TMA) and two consumer warpgroups (wgmma, f32 accumulators, C written
    in OUT), walk the output tiles in ORDER (``grouped``: GROUP rows of tiles at a time, for L2 reuse). The
    `full`/`empty` mbarrier pipeline of STAGES stages continues across a block's tiles (global iteration
    ``it * k_tiles + k``). EPILOGUE: ``"direct"`` (registers -> global) or ``"tma"`` (shared-memory staging and
    TMA stores, overlapping the next tile).

    A_MAJOR, B_MAJOR: the operands' layouts, as in `gemm_wgmma_tma`: A (M, K) or, with ``A_MAJOR="M"``, (K, M);
    B (N, K) (C = A @ B^T) or, with ``B_MAJOR="N"``, (K, N) (C = A @ B). MN-major operands are loaded one TMA
    box per 64-element panel and read by wgmma transposed (docs/gemm.md, "Operand layouts")."""
    # TMA needs the row strides of A and B (their contiguous extents, 16-bit elements) to be multiples of 16 bytes
    T.assume(operand_assumption(A_MAJOR, B_MAJOR))
    if EPILOGUE not in ("direct", "tma"):
        raise DSLError("DSL_BAD_PARAM", f"EPILOGUE must be 'direct' or 'tma', not {EPILOGUE!r}")
    if EPILOGUE == "tma":
        T.assume(f"N % {16 // C.dtype.itemsize} == 0")  # TMA stores need C's row stride in multiples of 16 bytes
    with T.grid(BLOCKS, threads=384) as (bx,):
        sA = alloc_operand_stages(A_MAJOR, STAGES, BM, BK, A.dtype)  # (stages, BM, BK) K-major, or (stages, BK, BM)
        sB = alloc_operand_stages(B_MAJOR, STAGES, BN, BK, B.dtype)  # (stages, BN, BK) K-major, or (stages, BK, BN)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: producer's expect_tx + TMA bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s may be refilled: the consumers arrive
        if EPILOGUE == "tma":  # (buffer, BM, 128 bytes of columns): two chunks of C on their way to TMA stores
            sC = T.alloc_shared((2, BM, store_chunk_columns(C.dtype)), C.dtype, swizzle=128)
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        tiles = tiles_m * tiles_n
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2  # every box of the stage counts in full, also where it is out of bounds
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        # the block's global pipeline iteration, in the order of T.pipeline's stage (k + start) % STAGES
                        g = k + it * k_tiles
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)  # the first pass finds every stage free
                        T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                        load_operand(A, A_MAJOR, sA[s], bm, k, BM, BK, full[s])
                        load_operand(B, B_MAJOR, sB[s], bn, k, BN, BK, full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))  # 2 warpgroups x 64 rows
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        # invariant: the stage consumed at iteration k holds K-block k of this tile's A and B
                        T.assert_tag(holds(A_MAJOR, bm, k, BM, BK), sA[s])
                        T.assert_tag(holds(B_MAJOR, bn, k, BN, BK), sB[s])
                        T.gemm(operand(A_MAJOR, sA[s], False), operand(B_MAJOR, sB[s], True), acc)
                        T.mbarrier_arrive(empty[s])
                    if EPILOGUE == "tma":
                        T.copy(acc, C.tile((bm, bn), (BM, BN)), atom="tma.store", staging=sC)
                    else:
                        T.copy(acc, C.tile((bm, bn), (BM, BN)))
