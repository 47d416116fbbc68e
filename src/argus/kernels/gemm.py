"""GEMMs. `gemm_mma_sync`: shared-memory tiles, `ldmatrix` into operand fragments and
`mma.sync.m16n8k16` on four warps arranged 2x2 over the accumulator."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def gemm_mma_sync(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
):
    """C = A @ B, bf16 inputs, f32 accumulation and output; partial tiles are masked."""
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16)  # (BM, BK)
        sB = T.alloc_shared((BK, BN), T.bf16)  # (BK, BN)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            # invariant: the operands multiplied at iteration k are K-block k, and A's rows are this block's
            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), rA)
            T.assert_tag(lambda b: (b[0] // BK == k) & (b[1] // BN == bn), rB)
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_cp_async(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
):
    """`gemm_mma_sync` with a `cp.async` multi-stage pipeline: the copy of tile k+STAGES-1 is in
    flight while tile k is multiplied."""
    T.assume("K % 8 == 0 and N % 8 == 0")  # rows of A and B start 16-byte aligned: cp.async moves 16-byte vectors
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16)  # (stages, BM, BK)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        for s in range(STAGES - 1):  # prologue: the first STAGES-1 tiles in flight
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((s, bn), (BK, BN)), sB[s], atom="cp.async")
            T.async_commit()
        for k in T.serial(k_tiles):
            nxt = k + (STAGES - 1)
            T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
            T.copy(B.tile((nxt, bn), (BK, BN)), sB[nxt % STAGES], atom="cp.async")
            T.async_commit()
            T.async_wait(STAGES - 1)  # tile k has landed
            T.barrier()
            T.copy(sA[k % STAGES], rA, atom="ldmatrix")
            T.copy(sB[k % STAGES], rB, atom="ldmatrix")
            # invariant: stage k % STAGES holds K-block k when iteration k consumes it
            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), rA)
            T.assert_tag(lambda b: (b[0] // BK == k) & (b[1] // BN == bn), rB)
            T.gemm(rA, rB, acc)
            T.barrier()  # stage k % STAGES may be overwritten from here on
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_wgmma_tma(
    A: T.Tensor[("M", "K"), "IN"],
    B: T.Tensor[("N", "K"), "IN"],
    C: T.Tensor[("M", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
    OUT: str = "f32",
    IN: str = "bf16",
    BLOCKS_PER_SM: int = 1,
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    ORDER: str = "grid",
    GROUP: int = 8,
):
    """C = A @ B^T (A and B in IN: bf16 or f16) (B given as (N, K), K-major: the "TN" layout) on Hopper: TMA loads into
    128-byte-swizzled shared memory, an mbarrier pipeline of STAGES stages, one producer
    warpgroup (TMA) and two consumer warpgroups (wgmma.m64nBNk16, f32 accumulators), with the
    register split done by setmaxnreg (PRODUCER_REGS / CONSUMER_REGS per thread). C is written in OUT
    (f32, bf16 or f16), converted from the f32 accumulators. BLOCKS_PER_SM = 2 asks for two resident
    blocks per SM (shared memory and the register split must fit half an SM, e.g. 128x128x64 with 3
    stages and 24 / 104 registers), so that one block's epilogue overlaps the other's MMAs.

    ORDER: which output tile each block computes. ``"grid"`` (the default) launches a 2-D grid,
    ``(bm, bn) = (blockIdx.x, blockIdx.y)``, so consecutive blocks walk M fastest. Any order of
    `T.tile_order` (``"grouped"``, ``"row_major"``, ``"column_major"``) launches a 1-D grid of
    ``tiles_m * tiles_n`` blocks and maps the block index to ``(bm, bn)`` with it; ``"grouped"`` walks
    GROUP rows of M-tiles at a time, column by column, so that the blocks resident together share
    A and B panels in L2. GROUP is read by ``"grouped"`` only."""
    T.assume("K % 8 == 0")  # TMA needs the row strides of A and B (K bf16 elements) to be multiples of 16 bytes
    tiles = (T.cdiv(M, BM), T.cdiv(N, BN))  # (tiles_m, tiles_n)
    extents = tiles if ORDER == "grid" else (tiles[0] * tiles[1],)
    with T.grid(*extents, threads=384, blocks_per_sm=BLOCKS_PER_SM) as blocks:
        # any other order (unknown: DSL_TILE_ORDER) maps the 1-D block index, clamped into the grid for the verifier
        bm, bn = blocks if ORDER == "grid" else T.tile_order(blocks[0], tiles, ORDER, GROUP, clamp=True)
        sA = T.alloc_shared((STAGES, BM, BK), A.dtype, swizzle=128)  # (stages, BM, BK), K-major
        sB = T.alloc_shared((STAGES, BN, BK), B.dtype, swizzle=128)  # (stages, BN, BK), K-major
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: producer's expect_tx + TMA bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s may be refilled: the consumers arrive
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)  # the first pass finds every stage free
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))  # 2 warpgroups x 64 rows
            T.fill(acc, 0.0)
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                # invariant: the stage consumed at iteration k holds K-block k of this block's A and B tiles
                T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
                T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
                T.gemm(sA[s], sB[s].T, acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "tile_order": "ORDER"})
def gemm_persistent(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    BLOCKS: int = 132,
    ORDER: str = "grouped",
):
    """`gemm_mma_sync` as a persistent kernel: BLOCKS blocks (one per SM) walk the output tiles in
    an L2-friendly grouped order."""
    with T.persistent_grid((T.cdiv(M, BM), T.cdiv(N, BN)), blocks=BLOCKS, threads=128, order=ORDER) as (tm, tn):
        sA = T.alloc_shared((BM, BK), T.bf16)
        sB = T.alloc_shared((BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((tm, k), (BM, BK)), sA)
            T.copy(B.tile((k, tn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((tm, tn), (BM, BN)))
