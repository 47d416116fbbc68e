"""The lower and middle rungs of the GEMM lineage (`argus.kernels.registry.lineage`): each kernel adds one
mechanism to the one before it, so that the agent and the skill miner have a real ladder.

* `gemm_naive` — one thread per output element, operands straight from global memory into registers,
  ``fma.rn.f32`` on CUDA cores (the per-thread FMA atom, `T.fma_atom`);
* `gemm_smem_tiled` — adds shared-memory tiling: the block stages (BM, BK) and (BK, BN) tiles in shared
  memory between barriers, and each thread computes a (TM, TN) register micro-tile from them;
* (`gemm_mma_sync` and `gemm_cp_async` in `argus.kernels.gemm`: tensor cores through ``ldmatrix`` +
  ``mma.sync``, then a ``cp.async`` multi-stage pipeline;)
* `gemm_cp_async_swizzled` — `gemm_cp_async` with XOR-swizzled shared memory, so that ``ldmatrix`` reads
  are free of bank conflicts;
* `gemm_tma_wgmma` — Hopper's TMA loads on an mbarrier pipeline and warpgroup MMAs (``wgmma``), with every
  warpgroup both issuing and computing in program order (the next rung, `gemm_wgmma_tma`, splits them
  into producer and consumer roles with ``setmaxnreg``).

All take bf16 A (M, K) and give f32 C (M, N); B is (K, N) up to `gemm_cp_async_swizzled` and (N, K),
K-major, from `gemm_tma_wgmma` on (TMA + ``wgmma`` want both operands K-major, as `gemm_wgmma_tma`).
"""

from __future__ import annotations

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def gemm_naive(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 1,
    BN: int = 128,
    BK: int = 16,
):
    """C = A @ B with one thread per element of C: thread t of block (bm, bn) owns element (t % BM, t // BM)
    of the block's (BM, BN) tile, reads its row of A and its column of B from global memory, BK elements
    at a time, and accumulates them with FMAs in f32. (With BM = 1, consecutive threads own consecutive
    columns: B and C accesses coalesce and A's are broadcasts.)"""
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
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def gemm_smem_tiled(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 8,
    TM: int = 8,
    TN: int = 8,
):
    """`gemm_naive` plus shared-memory tiling: the block's threads copy a (BM, BK) tile of A and a (BK, BN)
    tile of B into shared memory, synchronize, and each thread computes a (TM, TN) micro-tile of C with
    FMAs from the TM rows of A and TN columns of B it reads from there (each element fetched from global
    memory once per block instead of once per thread). The shared tiles are stored transposed to their
    use (A M-contiguous, B K-contiguous), so that a thread's operand runs are 16-byte shared loads."""
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
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_cp_async_swizzled(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
):
    """`gemm_cp_async` with XOR-swizzled shared memory: the 16-byte chunks of each row of sA (BK * 2 bytes)
    and sB (BN * 2 bytes) are permuted by Hopper's 64- / 128-byte swizzles, so that the eight rows one
    ``ldmatrix`` phase reads lie in eight different bank groups (and the ``cp.async`` writes stay 16-byte
    vectors)."""
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
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_tma_wgmma(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
):
    """C = A @ B^T (B given as (N, K), K-major) with Hopper's TMA and ``wgmma``, without warp specialization:
    TMA loads into 128-byte-swizzled shared memory complete on one mbarrier per stage, STAGES - 1 tiles
    ahead of the one being multiplied, and both warpgroups (64 rows of the accumulator each) issue and
    compute in program order — thread 0 issues the loads, everyone waits for the stage, multiplies it with
    ``wgmma.m64nBNk16``, and a block barrier frees the stage for its next load."""
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
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
