"""A held-out kernel family: GEMM with a fused residual + ReLU epilogue, C = relu(A @ B + R), as a ladder of rungs
that mirrors the GEMM ladder (`argus.kernels.gemm`) mechanism by mechanism, rung for rung and in the same order, so
that the optimization agent can climb it with skills mined from the GEMM lineage without having seen it (lineage
family ``"gemm_residual"``, declared in `argus.kernels.workloads`; docs/gemm.md).

Every rung is its GEMM counterpart (same tiles, stages, threads, tag assertions and assumptions) plus one
epilogue: after the main loop, the block's (BM, BN) tile of R (f32, the accumulator's precision) is loaded into a
fragment with the accumulator's own layout (same MMA atom and thread groups), added to the accumulator, clamped
at 0 and stored to C. A tag assertion states that the residual added to element (i, j) of the block's tile is
R's element (bm * BM + i, bn * BN + j).

All take bf16 A (M, K), f32 R (M, N) and give f32 C (M, N); B is (K, N) up to `gemm_residual_cp_async_swizzled`
and (N, K), K-major, from `gemm_residual_tma_wgmma` on, as in the GEMM lineage. The last two rungs are one kernel,
`gemm_residual_warp_specialized_persistent` (the persistent grid), with EPILOGUE="tma" for the TMA-store epilogue:
there relu(acc + R) is written into the accumulator, which the staged store takes. Rungs 7 and 8 were named
``gemm_residual_wgmma_tma`` and ``gemm_residual_wgmma_tma_persistent``; those names still resolve
(`argus.kernels.workloads.OLD_NAMES`).
"""

from __future__ import annotations

import argus
import argus.lang as T
from argus.atoms.common import SMS
from argus.atoms.tma import STAGING_BUFFERS, store_chunk_columns
from argus.lang.errors import DSLError
from argus.layout import Layout


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def gemm_residual_naive(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 1,
    BN: int = 128,
    BK: int = 16,
):
    """C = relu(A @ B + R) with one thread per element of C (`gemm_naive` plus the epilogue): the thread reads
    its row of A and its column of B from global memory, BK elements at a time, accumulates with FMAs in f32,
    then adds its element of R and clamps at 0."""
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=BM * BN) as (bm, bn):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))  # one element per thread
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))  # its row of A
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))  # its column of B
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), rA)  # past K reads 0
            T.copy(B.tile((k, bn), (BK, BN)), rB)
            # invariant: the operands multiplied at iteration k are K-block k of this block's rows / columns
            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), rA)
            T.assert_tag(lambda b: (b[0] // BK == k) & (b[1] // BN == bn), rB)
            T.gemm(rA, rB, acc)
        rR = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))  # R's tile, laid out as acc
        T.copy(R.tile((bm, bn), (BM, BN)), rR)
        # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def gemm_residual_smem_tiled(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 8,
    TM: int = 8,
    TN: int = 8,
):
    """`gemm_smem_tiled` plus the epilogue: (BM, BK) and (BK, BN) tiles staged in shared memory between barriers,
    a (TM, TN) register micro-tile of FMAs per thread; each thread then adds its (TM, TN) micro-tile of R and
    clamps at 0."""
    groups = (BM // TM, BN // TN)
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=groups[0] * groups[1]) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16, layout=Layout((BM, BK), (1, BM)))  # (BM, BK), M-contiguous
        sB = T.alloc_shared((BK, BN), T.bf16, layout=Layout((BK, BN), (1, BK)))  # (BK, BN), K-contiguous
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=groups)  # (TM, TN) per thread
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=groups)  # (TM, BK) per thread
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=groups)  # (BK, TN) per thread
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA)
            T.copy(sB, rB)
            # invariant: the operands multiplied at iteration k are K-block k of this block's tiles
            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), rA)
            T.assert_tag(lambda b: (b[0] // BK == k) & (b[1] // BN == bn), rB)
            T.gemm(rA, rB, acc)
            T.barrier()  # sA and sB may be overwritten from here on
        rR = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=groups)  # R's tile, laid out as acc
        T.copy(R.tile((bm, bn), (BM, BN)), rR)
        # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def gemm_residual_mma_sync(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
):
    """`gemm_mma_sync` plus the epilogue: shared-memory tiles, ``ldmatrix`` into operand fragments,
    ``mma.sync.m16n8k16`` on 2x2 warps; R is loaded in the accumulator's ``mma.sync`` layout."""
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
        rR = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))  # R's tile, laid out as acc
        T.copy(R.tile((bm, bn), (BM, BN)), rR)
        # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_residual_cp_async(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
):
    """`gemm_cp_async` plus the epilogue: `gemm_residual_mma_sync` with a ``cp.async`` multi-stage pipeline (the
    copy of tile k+STAGES-1 is in flight while tile k is multiplied)."""
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
        rR = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))  # R's tile, laid out as acc
        T.copy(R.tile((bm, bn), (BM, BN)), rR)
        # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_residual_cp_async_swizzled(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
):
    """`gemm_cp_async_swizzled` plus the epilogue: `gemm_residual_cp_async` with XOR-swizzled shared memory (64-
    and 128-byte swizzles), so that ``ldmatrix`` reads are free of bank conflicts."""
    T.assume("K % 8 == 0 and N % 8 == 0")  # rows of A and B start 16-byte aligned: cp.async moves 16-byte vectors
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=BK * 2)  # (stages, BM, BK), rows of BK*2 bytes
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16, swizzle=min(BN * 2, 128))  # (stages, BK, BN)
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
        rR = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))  # R's tile, laid out as acc
        T.copy(R.tile((bm, bn), (BM, BN)), rR)
        # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_residual_tma_wgmma(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
):
    """`gemm_tma_wgmma` plus the epilogue: C = relu(A @ B^T + R) (B given as (N, K), K-major) with TMA loads
    into 128-byte-swizzled stages on mbarriers and ``wgmma.m64nBNk16``, both warpgroups issuing and computing in
    program order; R is loaded in the accumulator's ``wgmma`` layout."""
    T.assume("K % 8 == 0")  # TMA needs the row strides of A and B (K bf16 elements) to be multiples of 16 bytes
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=2 * 128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)  # (stages, BM, BK), K-major
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)  # (stages, BN, BK), K-major
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: one expect_tx arrival + TMA bytes
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # 2 warpgroups x 64 rows
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2
        for s in range(STAGES - 1):  # prologue: the first STAGES-1 tiles in flight
            with T.if_(k_tiles > s):
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, s), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        for k, s in T.pipeline(k_tiles, stages=STAGES):
            nxt = k + (STAGES - 1)  # into the stage iteration k - 1 consumed (freed by its closing barrier)
            with T.if_(nxt < k_tiles):
                T.mbarrier_arrive(full[nxt % STAGES], expect_bytes=stage_bytes)
                T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="tma", mbarrier=full[nxt % STAGES])
                T.copy(B.tile((bn, nxt), (BN, BK)), sB[nxt % STAGES], atom="tma", mbarrier=full[nxt % STAGES])
            T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)  # the stage's (k // STAGES)-th load has landed
            # invariant: the stage consumed at iteration k holds K-block k of this block's A and B tiles
            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
            T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
            T.gemm(sA[s], sB[s].T, acc)
            T.barrier()  # every warpgroup is done with stage s: the next iteration may refill it
        rR = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # R's tile, laid out as acc
        T.copy(R.tile((bm, bn), (BM, BN)), rR)
        # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_residual_warp_specialized(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
    BLOCKS_PER_SM: int = 1,
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
):
    """`gemm_warp_specialized` plus the epilogue: C = relu(A @ B^T + R) with one producer warpgroup (TMA) and two
    consumer warpgroups (``wgmma``) on ``full``/``empty`` mbarriers and the register split by ``setmaxnreg``; the
    consumers load R in the accumulator's ``wgmma`` layout after their main loop."""
    T.assume("K % 8 == 0")  # TMA needs the row strides of A and B (K bf16 elements) to be multiples of 16 bytes
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384, blocks_per_sm=BLOCKS_PER_SM) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)  # (stages, BM, BK), K-major
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)  # (stages, BN, BK), K-major
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
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # 2 warpgroups x 64 rows
            T.fill(acc, 0.0)
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                # invariant: the stage consumed at iteration k holds K-block k of this block's A and B tiles
                T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
                T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
                T.gemm(sA[s], sB[s].T, acc)
                T.mbarrier_arrive(empty[s])
            rR = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # R's tile, laid out as acc
            T.copy(R.tile((bm, bn), (BM, BN)), rR)
            # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
            T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
            T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def gemm_residual_warp_specialized_persistent(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    R: T.Tensor[("M", "N"), T.f32],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    ORDER: str = "grouped",
    GROUP: int = 8,
    EPILOGUE: str = "direct",
):
    """`gemm_warp_specialized_persistent` plus the epilogue: C = relu(A @ B^T + R) on BLOCKS persistent blocks walking
    the tiles in ORDER, the mbarrier pipeline running on across each block's tiles; after a tile's main loop the
    consumers load R's tile in the accumulator's layout. EPILOGUE ``"direct"`` stores relu(acc + R) from registers;
    ``"tma"`` writes it into the accumulator and stores that through shared memory and TMA stores (C's rows 16-byte
    aligned: N % 4 == 0 for f32 C)."""
    T.assume("K % 8 == 0")  # TMA needs the row strides of A and B (K bf16 elements) to be multiples of 16 bytes
    if EPILOGUE not in ("direct", "tma"):
        raise DSLError("DSL_BAD_PARAM", f"EPILOGUE must be 'direct' or 'tma', not {EPILOGUE!r}")
    if EPILOGUE == "tma":
        T.assume("N % 4 == 0")  # TMA stores need C's row stride (N f32 elements) in multiples of 16 bytes
    with T.grid(BLOCKS, threads=384) as (bx,):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)  # (stages, BM, BK), K-major
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)  # (stages, BN, BK), K-major
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: producer's expect_tx + TMA bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s may be refilled: the consumers arrive
        if EPILOGUE == "tma":  # (buffer, BM, 128 bytes of columns): two chunks of C on their way to TMA stores
            sC = T.alloc_shared((STAGING_BUFFERS, BM, store_chunk_columns(C.dtype)), C.dtype, swizzle=128)
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        tiles = tiles_m * tiles_n
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles  # the block's global pipeline iteration
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)  # the first pass finds every stage free
                        T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                        T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                        T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # 2 warpgroups x 64 rows
            for it in T.serial(T.cdiv(tiles, BLOCKS)):
                t = bx + it * BLOCKS
                with T.if_(t < tiles):
                    bm, bn = T.tile_order(t, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        # invariant: the stage consumed at iteration k holds K-block k of this tile's A and B
                        T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
                        T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
                        T.gemm(sA[s], sB[s].T, acc)
                        T.mbarrier_arrive(empty[s])
                    rR = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # R's tile, laid out as acc
                    T.copy(R.tile((bm, bn), (BM, BN)), rR)
                    # invariant: the residual added to element (i, j) of the tile is R[bm * BM + i, bn * BN + j]
                    T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
                    if EPILOGUE == "tma":
                        T.copy(T.maximum(acc + rR, 0.0), acc)  # the staged store takes a wgmma accumulator
                        T.copy(acc, C.tile((bm, bn), (BM, BN)), atom="tma.store", staging=sC)
                    else:
                        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))
