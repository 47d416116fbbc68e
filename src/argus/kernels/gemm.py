"""The GEMM ladder: one kernel per rung, in ladder order. Each rung adds one mechanism to the rung before it, and
its name says which (`argus.kernels.workloads` declares each rung's library entry and its lineage position;
docs/gemm.md):

1. `gemm_naive` — one thread per output element, operands straight from global memory into registers,
   ``fma.rn.f32`` on CUDA cores (the per-thread FMA atom, `T.fma_atom`);
2. `gemm_smem_tiled` — adds shared-memory tiling: the block stages (BM, BK) and (BK, BN) tiles in shared memory
   between barriers, and each thread computes a (TM, TN) register micro-tile from them;
3. `gemm_mma_sync` — adds tensor cores: ``ldmatrix`` into operand fragments and ``mma.sync.m16n8k16`` on four
   warps arranged 2x2 over the accumulator;
4. `gemm_cp_async` — adds a ``cp.async`` multi-stage pipeline;
5. `gemm_cp_async_swizzled` — adds XOR-swizzled shared memory, so that ``ldmatrix`` reads are free of bank
   conflicts;
6. `gemm_tma_wgmma` — adds Hopper's TMA loads on an mbarrier pipeline and warpgroup MMAs (``wgmma``), every
   warpgroup both issuing and computing in program order;
7. `gemm_warp_specialized` — adds warp specialization: a producer warpgroup (TMA) and consumer warpgroups
   (``wgmma``), with the register split by ``setmaxnreg``;
8. `gemm_warp_specialized_persistent` — adds a persistent grid: BLOCKS blocks walk the output tiles in grouped
   order, the mbarrier pipeline running on across each block's tiles;
9. (`gemm_tma_store_epilogue`, the library entry of rung 8's kernel with ``EPILOGUE="tma"``: the epilogue through
   shared memory and TMA stores.)

Off the ladder: `gemm_persistent`, `gemm_mma_sync` on a persistent grid.

All take bf16 A (M, K) and give f32 C (M, N) (rungs 7 and 8: C in OUT); B is (K, N) up to `gemm_cp_async_swizzled`
and (N, K), K-major, from `gemm_tma_wgmma` on (TMA + ``wgmma`` want both operands K-major); rungs 7 and 8 take
either orientation of A and B (A_MAJOR, B_MAJOR). Rungs 7 and 8 were named ``gemm_wgmma_tma`` and
``gemm_wgmma_tma_persistent``; those names still resolve (`argus.kernels.workloads.OLD_NAMES`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.atoms.tma import STAGING_BUFFERS, store_chunk_columns
from argus.lang.errors import DSLError
from argus.lang.fragment import fragment_like
from argus.layout import Layout

# --- rung 1: one thread per output element ----------------------------------------------------------------------------


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


# --- rung 2: shared-memory tiling -------------------------------------------------------------------------------------


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


# --- rung 3: tensor cores (ldmatrix + mma.sync) -----------------------------------------------------------------------


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


# --- rung 4: a cp.async pipeline --------------------------------------------------------------------------------------


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


# --- rung 5: swizzled shared memory -----------------------------------------------------------------------------------


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


# --- rung 6: TMA loads and wgmma, in program order --------------------------------------------------------------------


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


# --- operand layouts of the warp-specialized rungs (gemm_warp_specialized and its persistent grid) --------------------
#
# A_MAJOR / B_MAJOR say which dimension of each operand is contiguous in global memory (docs/gemm.md, "Operand
# layouts"): A is (M, K) K-major (row-major A) or (K, M) M-major (A^T stored row-major); B is (N, K) K-major
# (C = A @ B^T, today's "TN") or (K, N) N-major (C = A @ B, torch.matmul's B). A K-major operand is staged as
# (stages, BMN, BK) tiles loaded by one TMA box each; an MN-major one as (stages, BK, BMN) tiles in swizzle-wide
# panels (T.alloc_shared(..., panels=True)), loaded by one (BK, 64) box per panel, all on the stage's mbarrier,
# and read by wgmma as a transposed (MN-major) operand.

#: The layouts each operand may take: K-major, or major in its other dimension.
OPERAND_MAJORS = {"A_MAJOR": ("K", "M"), "B_MAJOR": ("K", "N")}


def checked_major(param: str, value: Any) -> str:
    """`value` if operand `param` (``"A_MAJOR"`` or ``"B_MAJOR"``) may take that layout, else ``DSL_OPERAND_MAJOR``."""
    if value not in OPERAND_MAJORS[param]:
        raise DSLError(
            "DSL_OPERAND_MAJOR",
            f"{param} = {value!r}: an operand of the Hopper GEMMs is K-major or {OPERAND_MAJORS[param][1]}-major",
            f"pass {param}='K' (the default) or {param}={OPERAND_MAJORS[param][1]!r}",
            requirement=" or ".join([repr(v) for v in OPERAND_MAJORS[param]]),
            actual=repr(value),
        )
    return value


def a_shape(A_MAJOR: str) -> tuple[str, str]:  # noqa: N803 - named after the kernel parameter
    """A's global shape: ``(M, K)`` K-major, or ``(K, M)`` M-major (A^T stored row-major)."""
    return ("M", "K") if checked_major("A_MAJOR", A_MAJOR) == "K" else ("K", "M")


def b_shape(B_MAJOR: str) -> tuple[str, str]:  # noqa: N803
    """B's global shape: ``(N, K)`` K-major (C = A @ B^T), or ``(K, N)`` N-major (C = A @ B)."""
    return ("N", "K") if checked_major("B_MAJOR", B_MAJOR) == "K" else ("K", "N")


def batched_a_shape(A_MAJOR: str, BATCH: bool) -> tuple[str, ...]:  # noqa: N803
    """A's global shape in the persistent GEMM: `a_shape`, after a batch extent ``L`` when BATCH."""
    return (("L",) if BATCH else ()) + a_shape(A_MAJOR)


def batched_b_shape(B_MAJOR: str, BATCH: bool) -> tuple[str, ...]:  # noqa: N803
    """B's global shape in the persistent GEMM: `b_shape`, after a batch extent ``L`` when BATCH."""
    return (("L",) if BATCH else ()) + b_shape(B_MAJOR)


def operand_assumption(a_major: str, b_major: str, itemsize: int = 2) -> str:
    """The `T.assume` TMA needs: every row stride of A and B (their contiguous extent, in elements of `itemsize`
    bytes: 16-bit by default, 1 for FP8) a multiple of 16 bytes."""
    dims = sorted({"K" if a_major == "K" else "M", "K" if b_major == "K" else "N"}, key="KMN".index)
    return " and ".join([f"{d} % {16 // itemsize} == 0" for d in dims])


@T.macro
def alloc_operand_stages(major: str, stages: int, bmn: int, bk: int, dtype: Any) -> T.Shared:
    """The shared stages of one operand: ``(stages, bmn, bk)`` 128-byte-swizzled for a K-major operand (in panels
    of 128 bytes of K where a K-block is wider: BK = 128 of a 16-bit type, two TMA boxes per stage),
    ``(stages, bk, bmn)`` in 64-element panels for an MN-major one."""
    if major == "K":
        return T.alloc_shared((stages, bmn, bk), dtype, swizzle=128, panels=bk * dtype.itemsize > 128)
    return T.alloc_shared((stages, bk, bmn), dtype, swizzle=128, panels=True)


@T.macro
def load_operand(
    tensor: Any,
    major: str,
    stage: T.Tile,
    mn: Any,
    k: Any,
    bmn: int,
    bk: int,
    bar: Any,
    batch: Any = None,
    multicast: bool = False,
) -> None:
    """TMA-load MN-block `mn`, K-block `k` of an operand into `stage` on mbarrier `bar`: one (bmn, bk) box for a
    K-major operand; for an MN-major one, one (bk, P) box per panel (P = 128 bytes of elements: a box's inner
    extent may not exceed the swizzle span), panel j at MN-block ``mn * (bmn / P) + j`` of width P. `batch`: the
    matrix of a batched operand (its first extent) the box is in. `multicast`: every box is loaded by both blocks of a
    2-block cluster together, half each, into both (`T.copy(..., multicast=True)`)."""
    lead, one = ((batch,), (None,)) if batch is not None else ((), ())
    panel = 128 // tensor.dtype.itemsize
    if major == "K" and bk <= panel:
        T.copy(tensor.tile((*lead, mn, k), (*one, bmn, bk)), stage, atom="tma", mbarrier=bar, multicast=multicast)
        return
    # one (rows, P) box per panel of the contiguous extent: K for a K-block wider than the swizzle span, else MN
    rows, row_block, block, width = (bmn, mn, k, bk) if major == "K" else (bk, k, mn, bmn)
    for j in range(width // panel):
        T.copy(
            tensor.tile((*lead, row_block, block * (width // panel) + j), (*one, rows, panel)),
            stage.window((0, panel * j), (rows, panel)),
            atom="tma",
            mbarrier=bar,
            multicast=multicast,
        )


@T.macro
def operand(major: str, stage: T.Tile, contraction_first: bool) -> T.Tile:
    """A stage as `T.gemm` takes it: A as (BM, BK) (`contraction_first` False), B as (BK, BN) (True)."""
    k_first = major != "K"
    return stage if k_first == contraction_first else stage.T


@T.macro
def holds(major: str, block_mn: Any, block_k: Any, bmn: int, bk: int, batch: Any = None):
    """The tag predicate "this stage holds MN-block `block_mn`, K-block `block_k`" of an operand whose tags are
    its global coordinates: ``(mn, k)`` for a K-major operand, ``(k, mn)`` for an MN-major one; with `batch`, after
    the matrix index, which must be `batch`."""
    i_mn, i_k = (0, 1) if major == "K" else (1, 0)
    if batch is None:
        return lambda x: (x[i_k] // bk == block_k) & (x[i_mn] // bmn == block_mn)
    return lambda x: (x[0] == batch) & (x[1 + i_k] // bk == block_k) & (x[1 + i_mn] // bmn == block_mn)


# --- rung 7: warp specialization --------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_warp_specialized(
    A: T.Tensor[a_shape, "IN"],
    B: T.Tensor[b_shape, "IN"],
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
    A_MAJOR: str = "K",
    B_MAJOR: str = "K",
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
    A and B panels in L2. GROUP is read by ``"grouped"`` only.

    A_MAJOR, B_MAJOR: the operands' layouts in global memory (docs/gemm.md, "Operand layouts"). ``A_MAJOR="K"``
    (default): A is (M, K) row-major; ``"M"``: A is given as (K, M) row-major (A^T stored). ``B_MAJOR="K"``
    (default): B is (N, K) row-major and C = A @ B^T; ``"N"``: B is (K, N) row-major and C = A @ B. An MN-major
    operand (BM or BN a multiple of 64) is staged in 64-element panels, loaded by one TMA box per panel, and read
    by wgmma transposed (imm-trans = 1)."""
    # TMA needs the row strides of A and B (their contiguous extents) to be multiples of 16 bytes
    T.assume(operand_assumption(A_MAJOR, B_MAJOR, A.dtype.itemsize))
    tiles = (T.cdiv(M, BM), T.cdiv(N, BN))  # (tiles_m, tiles_n)
    extents = tiles if ORDER == "grid" else (tiles[0] * tiles[1],)
    with T.grid(*extents, threads=384, blocks_per_sm=BLOCKS_PER_SM) as blocks:
        # any other order (unknown: DSL_TILE_ORDER) maps the 1-D block index, clamped into the grid for the verifier
        bm, bn = blocks if ORDER == "grid" else T.tile_order(blocks[0], tiles, ORDER, GROUP, clamp=True)
        sA = alloc_operand_stages(A_MAJOR, STAGES, BM, BK, A.dtype)  # (stages, BM, BK) K-major, or (stages, BK, BM)
        sB = alloc_operand_stages(B_MAJOR, STAGES, BN, BK, B.dtype)  # (stages, BN, BK) K-major, or (stages, BK, BN)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: producer's expect_tx + TMA bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s may be refilled: the consumers arrive
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2  # every box of the stage counts in full, also where it is out of bounds
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)  # the first pass finds every stage free
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                load_operand(A, A_MAJOR, sA[s], bm, k, BM, BK, full[s])
                load_operand(B, B_MAJOR, sB[s], bn, k, BN, BK, full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))  # 2 warpgroups x 64 rows
            T.fill(acc, 0.0)
            for k, s in T.pipeline(k_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                # invariant: the stage consumed at iteration k holds K-block k of this block's A and B tiles
                T.assert_tag(holds(A_MAJOR, bm, k, BM, BK), sA[s])
                T.assert_tag(holds(B_MAJOR, bn, k, BN, BK), sB[s])
                T.gemm(operand(A_MAJOR, sA[s], False), operand(B_MAJOR, sB[s], True), acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))


# --- rung 8: the persistent grid --------------------------------------------------------------------------------------
#
# `gemm_warp_specialized` on a grid of BLOCKS blocks (one per SM) that walk the output tiles, with one mbarrier
# pipeline per block running across its tiles. Each warp role loops over the block's tiles (tile
# ``t = bx + it * BLOCKS``, in `T.tile_order`), and inside it over the K-blocks of the tile with
# ``T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles)``: iteration k of tile it is global iteration
# ``g = k + it * k_tiles`` of the block's stage rotation, so it uses stage ``g % STAGES`` and completes phase
# ``g // STAGES`` of that stage's barriers. The producer therefore runs on into the next tile's stages while the
# consumers multiply this one's last K-blocks and store C, instead of every tile starting with an empty pipeline and
# ending with an exposed epilogue.
#
# EPILOGUE says how the consumers store C. ``"direct"``: from registers to global memory (16-byte stores after the
# lane exchange where C is 16-bit), the consumers starting the next tile's MMAs only once the last store has issued.
# ``"tma"`` (rung 9): through shared memory and TMA stores (``T.copy(..., atom="tma.store")``): each consumer
# warpgroup writes its rows of C in chunks of 128 bytes of columns into one of two staging buffers and hands each
# chunk to a TMA store, which drains while the warpgroup goes on to the next tile. The staging buffers take
# 2 x BM x 128 bytes of shared memory (32 KB at BM = 128), and C's rows must be 16-byte aligned.


# A fused epilogue (`argus.kernels.epilogue`) reads its operands for one tile of C through these loaders. The tile
# is the tuple (bm, bn, rows, cols): tile coordinates and extents. Each loader returns its operand in f32, in the
# accumulator `acc`'s layout, with a tag assertion that element (i, j) of the tile is given the operand's element of
# row ``bm * rows + i`` and column ``bn * cols + j`` (elements past the tensor's end are masked, as C's are).


@T.macro
def epilogue_columns(acc: Any, tile: tuple, V: Any) -> Any:
    """A per-column vector V (N,), repeated over the tile's rows: ``V[None, :]``."""
    bm, bn, rows, cols = tile
    v = T.alloc_reduced(acc, axis=0, dtype=V.dtype)
    T.copy(V.tile(bn, cols), v)
    # invariant: column j of the tile is given V[bn * cols + j]
    T.assert_tag(lambda x: x[0] == bn * cols + x.coord[0], v)
    return (v if V.dtype == T.f32 else T.cast(v, T.f32))[None, :]


@T.macro
def epilogue_rows(acc: Any, tile: tuple, U: Any) -> Any:
    """A per-row vector U (M,), repeated over the tile's columns: ``U[:, None]``."""
    bm, bn, rows, cols = tile
    u = T.alloc_reduced(acc, axis=1, dtype=U.dtype)
    T.copy(U.tile(bm, rows), u)
    # invariant: row i of the tile is given U[bm * rows + i]
    T.assert_tag(lambda x: x[0] == bm * rows + x.coord[0], u)
    return (u if U.dtype == T.f32 else T.cast(u, T.f32))[:, None]


@T.macro
def epilogue_tile(acc: Any, tile: tuple, R: Any) -> Any:
    """A tensor R (M, N) of C's shape (a residual), in the accumulator's layout."""
    bm, bn, rows, cols = tile
    r = fragment_like(acc, dtype=R.dtype)
    T.copy(R.tile((bm, bn), (rows, cols)), r)
    # invariant: element (i, j) of the tile is given R[bm * rows + i, bn * cols + j]
    T.assert_tag(lambda x: (x[0] == bm * rows + x.coord[0]) & (x[1] == bn * cols + x.coord[1]), r)
    return r if R.dtype == T.f32 else T.cast(r, T.f32)


@T.macro
def epilogue_scalar(acc: Any, tile: tuple, S: Any) -> Any:
    """A one-element tensor S (1,) (a per-tensor scale held on the device): its value, the same for every element of
    the tile, read when the kernel runs (no host synchronization, nothing baked into the kernel)."""
    return S[0]


#: The reductions a fused epilogue may take of each row of its result (`epilogue_reduce`), and each one's partial
#: results' combination (`gemm_reduce_partials`): ``"mean"`` is a sum scaled by 1 / N when the partials are combined.
REDUCTIONS = ("sum", "mean", "max", "min", "logsumexp")

INFINITY = float("inf")


def reduction_op(OP: str) -> str:  # noqa: N803 - the kernels' parameter
    """`OP`, checked against `REDUCTIONS`."""
    if OP not in REDUCTIONS:
        raise DSLError("DSL_BAD_PARAM", f"a row reduction is one of {', '.join(REDUCTIONS)}, not {OP!r}")
    return OP


@T.macro
def epilogue_reduce(value: Any, tile: tuple, P: Any, OP: str, COLS: Any) -> None:  # noqa: N803
    """A reducing epilogue's share for one tile (bm, bn, rows, cols) of the result `value` (f32, in the
    accumulator's layout): each row's reduction `OP` over the tile's columns below COLS (the product's real column
    count: padding columns and rows are masked out by index, whatever the epilogue made of them), stored into column
    bn of the partial results P (M, NP), which `gemm_reduce_partials` combines. A logsumexp's partial is the tile's own
    ``max + log(sum(exp(x - max)))``, its maximum taken as 0 where it is not finite (a row of -inf gives -inf, not
    NaN)."""
    bm, bn, rows, cols = tile
    # the product's elements: columns below COLS, rows below M (the rows past it are stored nowhere; masked, so that
    # no padding enters a reduction at all)
    real = (T.index(value, 1, T.i32) + bn * cols < COLS) & (T.index(value, 0, T.i32) + bm * rows < P.shape[0])
    op = reduction_op(OP)
    if op in ("sum", "mean"):
        part = T.reduce_sum(T.where(real, value, 0.0), axis=1)
    elif op == "min":
        part = -T.reduce_max(T.where(real, -value, -INFINITY), axis=1)
    else:
        part = T.reduce_max(T.where(real, value, -INFINITY), axis=1)
    if op == "logsumexp":
        shift = T.where(T.abs(part) < INFINITY, part, 0.0)
        part = shift + T.log(T.reduce_sum(T.where(real, T.exp(value - shift[:, None]), 0.0), axis=1))
    T.copy(part, P.tile((bm, bn), (rows, None)))


@argus.kernel(policies={"tile_shape": ("BR", "BJ")})
def gemm_reduce_partials(
    P: T.Tensor[("M", "NP"), T.f32],
    O: T.Tensor[("M",), "OUT"],
    OP: str = "sum",
    SCALE: float = 1.0,
    BR: int = 32,
    BJ: int = 128,
    OUT: str = "f32",
):
    """The second half of a reducing epilogue (`epilogue_reduce`): O[m] = the reduction OP of row m's NP partial
    results P[m, :] (one per column tile of the product), in f32, times SCALE for a sum (``"mean"``: 1 / N), converted
    to OUT. Block b takes rows b * BR .., streaming the partials in tiles of BJ; a logsumexp makes two passes (the
    largest partial, then the sum of their exponentials below it)."""
    op = reduction_op(OP)
    if BR % 4 or BJ % 32 or BR * BJ > 128 * 64:
        raise DSLError("DSL_BAD_PARAM", f"BR = {BR} rows (a multiple of 4) by BJ = {BJ} partials (of 32), at most 64 "
                                        "a thread of 128")  # fmt: skip
    with T.grid(T.cdiv(M, BR), threads=128) as (bi,):
        x = T.alloc_fragment((BR, BJ), T.f32)
        best = T.alloc_reduced(x, axis=1)
        T.fill(best, {"sum": 0.0, "mean": 0.0, "min": INFINITY}.get(op, -INFINITY))
        for jt in T.serial(T.cdiv(NP, BJ)):
            T.copy(P.tile((bi, jt), (BR, BJ)), x)
            # invariant: element (i, j) of the tile is row bi * BR + i's partial of column tile jt * BJ + j
            T.assert_tag(lambda t: (t[0] == bi * BR + t.coord[0]) & (t[1] == jt * BJ + t.coord[1]), x)
            real = T.index(x, 1, T.i32) + jt * BJ < NP
            if op in ("sum", "mean"):
                T.copy(best + T.reduce_sum(T.where(real, x, 0.0), axis=1), best)
            elif op == "min":
                T.copy(T.minimum(best, -T.reduce_max(T.where(real, -x, -INFINITY), axis=1)), best)
            else:
                T.copy(T.maximum(best, T.reduce_max(T.where(real, x, -INFINITY), axis=1)), best)
        if op == "logsumexp":
            shift = T.where(T.abs(best) < INFINITY, best, 0.0)
            total = T.alloc_reduced(x, axis=1)
            T.fill(total, 0.0)
            for jt in T.serial(T.cdiv(NP, BJ)):
                T.copy(P.tile((bi, jt), (BR, BJ)), x)
                # invariant: the second pass reads the same partials
                T.assert_tag(lambda t: (t[0] == bi * BR + t.coord[0]) & (t[1] == jt * BJ + t.coord[1]), x)
                real = T.index(x, 1, T.i32) + jt * BJ < NP
                T.copy(total + T.reduce_sum(T.where(real, T.exp(x - shift[:, None]), 0.0), axis=1), total)
            result = shift + T.log(total)
        elif op in ("sum", "mean") and SCALE != 1.0:
            result = best * SCALE
        else:
            result = best
        T.copy(result if O.dtype == T.f32 else T.cast(result, O.dtype), O.tile(bi, BR))


def c_shape(SPLITS: int, BATCH: bool, C_MAJOR: str = "N") -> tuple[str, ...]:  # noqa: N803 - the kernel's names
    """C's global shape: ``(M, N)``; with split-K (SPLITS > 1) the f32 workspace ``(S, M, N)`` of the partial
    products, one (M, N) slice per split, that `gemm_split_reduce` sums into C; batched, ``(L, M, N)``. With
    ``C_MAJOR="M"`` C (and each workspace slice) is stored transposed, ``(N, M)``: the swap-AB store (docs/gemm.md)."""
    if not isinstance(SPLITS, int) or SPLITS < 1:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS must be a positive int, not {SPLITS!r}")
    if C_MAJOR not in ("N", "M"):
        raise DSLError("DSL_BAD_PARAM", f"C_MAJOR must be 'N' (C (M, N)) or 'M' (C stored (N, M)), not {C_MAJOR!r}")
    rows, cols = ("M", "N") if C_MAJOR == "N" else ("N", "M")
    if BATCH:
        return ("L", rows, cols)
    return (rows, cols) if SPLITS == 1 else ("S", rows, cols)


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def gemm_warp_specialized_persistent(
    A: T.Tensor[batched_a_shape, "IN"],
    B: T.Tensor[batched_b_shape, "IN"],
    C: T.Tensor[c_shape, "OUT"],
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
    CONSUMERS: int = 2,
    SPLITS: int = 1,
    BATCH: bool = False,
    PART: str = "all",
    C_MAJOR: str = "N",
    BATCH_GRID: str = "matrix",
    CLUSTER: int = 1,
):
    """C = A @ B^T (B given as (N, K), K-major; or C = A @ B with B_MAJOR="N") on Hopper, persistent: BLOCKS
    blocks, each with a producer warpgroup (TMA) and CONSUMERS consumer warpgroups (wgmma, f32 accumulators, C
    written in OUT), walk the output tiles in ORDER (``grouped``: GROUP rows of tiles at a time, for L2 reuse). The
    `full`/`empty` mbarrier pipeline of STAGES stages continues across a block's tiles (global iteration
    ``it * k_tiles + k``). EPILOGUE: ``"direct"`` (registers -> global) or ``"tma"`` (shared-memory staging and
    TMA stores, overlapping the next tile).

    CONSUMERS: 2 (the default) or 1 consumer warpgroups; the accumulator's rows are spread over them, BM / CONSUMERS
    rows each (a multiple of wgmma's 64). One consumer with BM = 64 is the small-M tile.

    SPLITS > 1 is split-K: the work units are (tile, split) pairs, unit ``u`` computing tile ``u // SPLITS`` over
    the K-blocks ``split * k_split ... + k_split`` (``split = u % SPLITS``, ``k_split = cdiv(k_tiles, SPLITS)``;
    the last split's K-blocks past K load as zeros), and storing its partial product into slice ``split`` of the
    f32 workspace C (S, M, N), S = SPLITS (N a multiple of 4: the rows in whole 16-byte vectors), directly or
    (EPILOGUE ``"tma"``, C not transposed) through the staged TMA stores in 3-D boxes at the slice.
    `gemm_split_reduce` then sums the slices into the result.

    BATCH: L independent products (``bmm``): A, B and C get a leading extent L (no split). BATCH_GRID
    ``"matrix"``: the grid is (BLOCKS, L) and the BLOCKS blocks of matrix l walk its tiles; ``"flat"``: BLOCKS
    persistent blocks walk every matrix's tiles, unit u being tile ``u % tiles`` of matrix ``u // tiles``, so the
    blocks running at once share a few matrices (in L2).

    PART="whole": only the tiles of the whole waves (``tiles - tiles % BLOCKS``), the first half of a split tail:
    `gemm_persistent_split_tail` computes the rest split along K and `gemm_tail_reduce` stores it.

    A_MAJOR, B_MAJOR: the operands' layouts, as in `gemm_warp_specialized`: A (M, K) or, with ``A_MAJOR="M"``, (K, M);
    B (N, K) (C = A @ B^T) or, with ``B_MAJOR="N"``, (K, N) (C = A @ B). MN-major operands are loaded one TMA
    box per 64-element panel and read by wgmma transposed (docs/gemm.md, "Operand layouts").

    C_MAJOR="M": C is stored transposed, (N, M) (each split's workspace slice too), every tile written through the
    transposed view of its window: what swap-AB plans run (C^T = B^T A^T computed as the GEMM of the swapped operands,
    its result stored as the user's C; docs/gemm.md, "Swap-AB"). Direct stores only, unbatched.

    CLUSTER=2: the blocks run in 2-block clusters that share B. Cluster c (blocks 2c and 2c + 1) walks units of pairs
    of row tiles: unit u is the row pair ``pm`` and column tile ``bn`` of ``tile_order(u)`` over ``(cdiv(tiles_m,
    2), tiles_n)`` (and a split of K), block rank r computing tile ``(2 pm + r, bn)`` (past M where tiles_m is odd:
    its A rows load as zeros and nothing is stored). Both blocks load B's (BN, BK) block of each K-step together,
    each half of it multicast into both (one L2 read of B feeds two tiles), and release a stage on the pair's
    `empty` barrier, so that neither refills it before both have consumed it. Unbatched, PART "all" only."""
    persistent_gemm(
        A,
        B,
        C,
        BM=BM,
        BN=BN,
        BK=BK,
        STAGES=STAGES,
        PRODUCER_REGS=PRODUCER_REGS,
        CONSUMER_REGS=CONSUMER_REGS,
        BLOCKS=BLOCKS,
        ORDER=ORDER,
        GROUP=GROUP,
        EPILOGUE=EPILOGUE,
        A_MAJOR=A_MAJOR,
        B_MAJOR=B_MAJOR,
        CONSUMERS=CONSUMERS,
        SPLITS=SPLITS,
        BATCH=BATCH,
        BATCH_GRID=BATCH_GRID,
        PART=PART,
        C_MAJOR=C_MAJOR,
        CLUSTER=CLUSTER,
    )


def persistent_gemm(
    A: Any,
    B: Any,
    C: Any,
    *,
    BM: int,
    BN: int,
    BK: int,
    STAGES: int,
    PRODUCER_REGS: int,
    CONSUMER_REGS: int,
    BLOCKS: int,
    ORDER: str,
    GROUP: int,
    EPILOGUE: str,
    A_MAJOR: str,
    B_MAJOR: str,
    CONSUMERS: int,
    SPLITS: int,
    BATCH: bool,
    epilogue: Any = None,
    PART: str = "all",
    TAIL: int = 1,
    W: Any = None,
    C_MAJOR: str = "N",
    BATCH_GRID: str = "matrix",
    CLUSTER: int = 1,
    fused: Any = None,
) -> None:
    """The body of `gemm_warp_specialized_persistent` (see its docstring for the parameters), which kernels with
    a fused epilogue share (`argus.kernels.epilogue`): `epilogue(acc, tile)`, when given, is the value stored for
    a tile, computed from the f32 accumulator `acc` and the tile (bm, bn, BM, BN), through which the epilogue loads
    its operands (`epilogue_columns`, `epilogue_rows`, `epilogue_tile`; unsplit, unbatched GEMMs: split-K applies
    it in `split_reduce`). PART ``"whole"``: the tiles of the whole waves only; ``"tail"`` (C None, the workspace W,
    TAIL splits): the tiles after them, split (`gemm_persistent_split_tail`). `fused`, with SPLITS > 1: (the
    output C, the counters F, the reducers) of `gemm_split_fused`, whose units sum each other's slices of C (here
    the workspace) after a group barrier per tile instead of `gemm_split_reduce`."""
    # C None outside the tail: a reducing epilogue stores its own outputs (`epilogue_reduce`), not the product
    reducing = C is None and PART == "all" and epilogue is not None
    if PART not in ("all", "whole", "tail") or ((PART == "tail") != (C is None) and not reducing):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"PART must be 'all', 'whole' or 'tail' (the tail only in gemm_persistent_split_tail), not {PART!r}",
        )
    if PART != "all" and (SPLITS > 1 or BATCH):
        raise DSLError(
            "DSL_BAD_PARAM", f"PART = {PART!r} (a split tail) excludes SPLITS > 1 and BATCH ({SPLITS}, {BATCH})"
        )
    if PART == "whole":
        T.writes_part(C, "the tiles of the whole waves: gemm_tail_reduce writes the split tail's tiles")
    if PART == "tail" or reducing:  # M and N from the operands: the tail kernel stores only into W
        M = A.shape[-2] if A_MAJOR == "K" else A.shape[-1]  # noqa: N806 - the kernel's shape symbols
        N = B.shape[-2] if B_MAJOR == "K" else B.shape[-1]  # noqa: N806
        if PART == "tail" and (W is None or TAIL < 2 or epilogue is not None or EPILOGUE != "direct"):
            raise DSLError(
                "DSL_BAD_PARAM",
                f"the tail kernel stores f32 partial products into the workspace W directly, with TAIL >= 2 splits "
                f"(TAIL = {TAIL}, EPILOGUE = {EPILOGUE!r})",
            )
    elif C_MAJOR == "M":  # C stored (N, M)
        N, M = C.shape[-2], C.shape[-1]  # noqa: N806 - the kernel's shape symbols
    else:
        M, N = C.shape[-2], C.shape[-1]  # noqa: N806 - the kernel's shape symbols
    if C_MAJOR == "M" and (BATCH or EPILOGUE != "direct" or epilogue is not None or PART != "all"):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"a transposed C (C_MAJOR='M') is stored directly, unbatched, without a fused epilogue or a split tail "
            f"(BATCH={BATCH}, EPILOGUE={EPILOGUE!r}, fused epilogue: {epilogue is not None}, PART={PART!r})",
        )
    K = A.shape[-1] if A_MAJOR == "K" else A.shape[-2]  # noqa: N806
    L = C.shape[0] if BATCH else None  # noqa: N806
    if reducing and EPILOGUE != "direct":
        raise DSLError("DSL_BAD_PARAM", f"a reducing epilogue stores no tile of C: EPILOGUE 'direct', not {EPILOGUE!r}")
    if epilogue is not None and (BATCH or SPLITS > 1):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"a fused epilogue is applied by the store of an unsplit, unbatched GEMM, not with BATCH={BATCH}, "
            f"SPLITS={SPLITS}",
            "split-K applies the epilogue in gemm_split_reduce",
        )
    # TMA needs the row strides of A and B (their contiguous extents) to be multiples of 16 bytes
    T.assume(operand_assumption(A_MAJOR, B_MAJOR, A.dtype.itemsize))
    if BATCH and SPLITS > 1:
        raise DSLError("DSL_BAD_PARAM", f"a batched GEMM (BATCH) does not split K: SPLITS={SPLITS}")
    if EPILOGUE not in ("direct", "tma"):
        raise DSLError("DSL_BAD_PARAM", f"EPILOGUE must be 'direct' or 'tma', not {EPILOGUE!r}")
    if CONSUMERS not in (1, 2, 3):
        raise DSLError("DSL_BAD_PARAM", f"CONSUMERS must be 1 to 3 consumer warpgroups, not {CONSUMERS!r}")
    if SPLITS > 1:
        if C.dtype != T.f32:
            raise DSLError(
                "DSL_BAD_PARAM",
                f"split-K (SPLITS = {SPLITS}) stores f32 partial products, not OUT = {C.dtype.name!r}",
                "pass OUT='f32', and reduce the slices with gemm_split_reduce",
            )
        T.assume(f"S == {SPLITS}")
        T.partial_sums(C, 0, "gemm_split_reduce adds the slices" if fused is None else "the tile's units add them")
        # the workspace's rows in whole 16-byte vectors of f32 (what gemm_split_reduce reads)
        T.assume("N % 4 == 0" if C_MAJOR == "N" else "M % 4 == 0")
    if EPILOGUE == "tma":
        T.assume(f"N % {16 // C.dtype.itemsize} == 0")  # TMA stores need C's row stride in multiples of 16 bytes
    if PART == "tail":
        tail_assumptions(TAIL, BM, BN, BLOCKS)
    if BATCH_GRID not in ("matrix", "flat"):
        raise DSLError("DSL_BAD_PARAM", f"BATCH_GRID must be 'matrix' or 'flat', not {BATCH_GRID!r}")
    flat = BATCH and BATCH_GRID == "flat"
    if CLUSTER not in (1, 2) or (CLUSTER > 1 and (BATCH or PART != "all" or BLOCKS % CLUSTER)):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"CLUSTER must be 1, or 2 for an unbatched GEMM of every tile (PART 'all') on an even BLOCKS (CLUSTER = "
            f"{CLUSTER!r}, BATCH = {BATCH}, PART = {PART!r}, BLOCKS = {BLOCKS})",
        )
    extents = (BLOCKS, L) if BATCH and not flat else (BLOCKS,)
    with T.grid(*extents, threads=WARPGROUP_SIZE * (1 + CONSUMERS), cluster=CLUSTER) as blocks:
        bx = blocks[0]
        batch = blocks[1] if BATCH and not flat else None  # the matrix this block multiplies (flat: per unit)
        sA = alloc_operand_stages(A_MAJOR, STAGES, BM, BK, A.dtype)  # (stages, BM, BK) K-major, or (stages, BK, BM)
        sB = alloc_operand_stages(B_MAJOR, STAGES, BN, BK, B.dtype)  # (stages, BN, BK) K-major, or (stages, BK, BN)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds data: producer's expect_tx + TMA bytes
        # stage s may be refilled: the consumers arrive (with CLUSTER, both blocks' consumers: B is shared)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1, cluster=CLUSTER > 1)
        if EPILOGUE == "tma":  # (buffer, BM, 128 bytes of columns): two chunks of C on their way to TMA stores
            sC = T.alloc_shared((STAGING_BUFFERS, BM, store_chunk_columns(C.dtype)), C.dtype, swizzle=128)
        else:
            sC = None
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        k_tiles = T.cdiv(K, BK)
        # with CLUSTER, a unit is a pair of row tiles (one per block of the cluster) and the clusters walk the units
        walkers, row_units = BLOCKS // CLUSTER, T.cdiv(tiles_m, CLUSTER) if CLUSTER > 1 else tiles_m
        walker, rank = (bx // CLUSTER, bx % CLUSTER) if CLUSTER > 1 else (bx, 0)
        per_matrix = row_units * tiles_n
        units, k_split, whole, rest = unit_walk(per_matrix * L if flat else per_matrix, k_tiles, walkers, SPLITS, PART,
                                                TAIL)  # fmt: skip
        # every box of the stage counts in full, also where it is out of bounds
        stage_bytes = (BM + BN) * BK * A.dtype.itemsize
        consumers = tuple(range(1, 1 + CONSUMERS))

        def block_unit(it: Any) -> tuple:
            """(unit, rank) of the block's iteration `it`: the cluster's unit ``walker + it * walkers`` and the block's
            rank in it, both read off one number, the block's own unit number ``unit * CLUSTER + rank``. Every
            coordinate of the unit (tile, split, tile number) is then a function of that one number, which is what
            the verifier's tile-order lemma takes (`argus.verify.checks.tiles`): the rank beside it would leave the
            output's coverage, its exactly-once and the cross-block reads not checked."""
            u = walker + it * walkers
            if CLUSTER == 1:
                return u, 0
            own = u * CLUSTER + rank
            return own // CLUSTER, own % CLUSTER

        def unit_runs(u: Any, r: Any) -> Any:
            """Whether unit u exists: ``u < units``, or for the fused split-K its tile number below the tile count
            (the same condition, which names the tile number: the verifier's tile-order lemma reads it as a bound;
            in clusters through the block's own tile number, as `unit_tile` places the tile)."""
            if fused is None:
                return u < units
            if CLUSTER > 1:
                return block_tile(u // SPLITS, r, CLUSTER) // CLUSTER < per_matrix
            return u // SPLITS < per_matrix

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for it in T.serial(T.cdiv(units, walkers)):
                u, r = block_unit(it)
                with T.if_(unit_runs(u, r)):
                    t, split = walk_unit(u, whole, rest, SPLITS, PART)
                    if flat:  # unit u: tile u % tiles of matrix u // tiles
                        batch, t = t // per_matrix, t % per_matrix
                    bm, bn = unit_tile(t, row_units, tiles_n, ORDER, GROUP, CLUSTER, r)
                    # the tile's coordinates bound once (T.let): each K-step recomputed the grouped order's quotients
                    # by the runtime tile counts (~105 SASS instructions a step at 4096^3, 26 bound)
                    with T.let(bm, "tile_m") as bm, T.let(bn, "tile_n") as bn:
                        for k, s in T.pipeline(k_split, stages=STAGES, start=it * k_split):
                            # the block's global pipeline iteration, in T.pipeline's stage order (k + start) % STAGES
                            g = k + it * k_split
                            kb = walk_k_block(k, split, k_split, SPLITS, PART)  # the K-block this iteration loads
                            T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)  # the first pass: every stage free
                            T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                            load_operand(A, A_MAJOR, sA[s], bm, kb, BM, BK, full[s], batch)
                            load_operand(B, B_MAJOR, sB[s], bn, kb, BN, BK, full[s], batch, CLUSTER > 1)
        with T.role("consumer", warpgroups=consumers, registers=CONSUMER_REGS):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, A.dtype))  # BM / CONSUMERS rows each
            for it in T.serial(T.cdiv(units, walkers)):
                u, r = block_unit(it)
                with T.if_(unit_runs(u, r)):
                    t, split = walk_unit(u, whole, rest, SPLITS, PART)
                    if flat:
                        batch, t = t // per_matrix, t % per_matrix
                    bm, bn = unit_tile(t, row_units, tiles_n, ORDER, GROUP, CLUSTER, r)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_split, stages=STAGES, start=it * k_split):
                        g = k + it * k_split
                        kb = walk_k_block(k, split, k_split, SPLITS, PART)
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        # invariant: the stage consumed at iteration k holds K-block kb of this unit's A and B
                        T.assert_tag(holds(A_MAJOR, bm, kb, BM, BK, batch), sA[s])
                        T.assert_tag(holds(B_MAJOR, bn, kb, BN, BK, batch), sB[s])
                        T.gemm(operand(A_MAJOR, sA[s], False), operand(B_MAJOR, sB[s], True), acc)
                        T.mbarrier_arrive(empty[s])
                    if BATCH and EPILOGUE == "tma":  # 3-D boxes of C with the matrix index fixed, as the loads'
                        T.copy(acc, C.tile((batch, bm, bn), (None, BM, BN)), atom="tma.store", staging=sC)
                    elif BATCH:
                        T.copy(acc, C.tile((batch, bm, bn), (None, BM, BN)))
                    elif SPLITS > 1 and C_MAJOR == "M":  # slice `split` of the workspace, stored (N, M)
                        T.copy(acc, C.tile((split, bn, bm), (None, BN, BM)).T)
                    elif SPLITS > 1 and EPILOGUE == "tma":  # 3-D boxes of slice `split`, as a batch's
                        T.copy(acc, C.tile((split, bm, bn), (None, BM, BN)), atom="tma.store", staging=sC)
                    elif SPLITS > 1:
                        T.copy(acc, C.tile((split, bm, bn), (None, BM, BN)))
                    elif C_MAJOR == "M":  # C stored (N, M): the tile through the transposed view of its window
                        T.copy(acc, C.tile((bn, bm), (BN, BM)).T)
                    elif PART == "tail":  # a split of a tail tile: its slot of the workspace
                        T.copy(acc, W.tile((split, t - whole, 0, 0), (None, None, BM, BN)))
                    else:
                        store_tile(acc, C, bm, bn, BM, BN, EPILOGUE, epilogue, sC)
                    if fused is not None:  # the tile's SPLITS units meet, then the first REDUCERS sum its rows
                        out, counters, reducers = fused
                        # the counter of tile t (of the cluster's pair: one per block rank), split `split` its rank
                        T.group_barrier(counters, block_tile(t, r, CLUSTER), split, SPLITS)
                        if reducers == SPLITS:
                            split_rows_sum(C, out, bm * SPLITS + split, bn, SPLITS, BM // SPLITS, BN)
                        else:  # BM / REDUCERS rows each for the first REDUCERS splits; the others only arrive
                            with T.if_(split < reducers):
                                split_rows_sum(C, out, bm * reducers + split, bn, SPLITS, BM // reducers, BN)


def split_reducers(BM: int, BN: int, SPLITS: int, threads: int) -> int | None:  # noqa: N803 - kernel names
    """How many of a split tile's SPLITS units sum its slices in one launch (`split_rows_sum`): the most, at most
    SPLITS, that divide its BM rows into shares of whole 4-element vectors for each of `threads` consumer threads
    (each sums BM / reducers rows of BN columns); None where no count does."""
    for r in range(min(SPLITS, BM), 0, -1):
        if BM % r == 0 and (BM // r) * BN % (4 * threads) == 0:
            return r
    return None


def split_rows_sum(
    W: Any,  # noqa: N803 - kernel names
    C: Any,  # noqa: N803
    row: Any,
    bn: Any,
    SPLITS: int,  # noqa: N803
    ROWS: int,  # noqa: N803
    BN: int,  # noqa: N803
    finish: Callable[[Any], Any] | None = None,
) -> None:
    """Rows ``row * ROWS ...`` and columns of tile `bn` of C: the sum of those rows of every slice of the workspace W
    (S, M, N), in f32, through `finish` (the f32 sum -> what is stored: a convolution's bias and fused epilogue),
    converted to C's dtype. A split-K unit's share of its tile's reduction (`gemm_split_fused`,
    `argus.kernels.conv_im2col.conv_im2col_split_fused`): the SPLITS units of a tile each sum ROWS = BM / SPLITS of
    its rows."""
    acc = T.alloc_fragment((ROWS, BN), T.f32)
    T.copy(W.tile((0, row, bn), (None, ROWS, BN)), acc)
    for s in range(1, SPLITS):  # unrolled at trace time: SPLITS is a constant
        part = T.alloc_fragment((ROWS, BN), T.f32)
        T.copy(W.tile((s, row, bn), (None, ROWS, BN)), part)
        # invariant: what is added is slice s's partial product of the same elements of C
        T.assert_tag(lambda w, s=s: (w[0] == s) & (w[1] // ROWS == row) & (w[2] // BN == bn), part)
        acc = acc + part
    T.copy(acc if finish is None else finish(acc), C.tile((row, bn), (ROWS, BN)))


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def gemm_split_fused(
    A: T.Tensor[a_shape, "IN"],
    B: T.Tensor[b_shape, "IN"],
    W: T.Tensor[("S", "M", "N"), T.f32],
    C: T.Tensor[("M", "N"), "OUT"],
    F: T.Tensor[("NF",), T.i32],
    BM: int = 128,
    BN: int = 256,
    BK: int = 64,
    STAGES: int = 4,
    OUT: str = "bf16",
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    ORDER: str = "grouped",
    GROUP: int = 8,
    EPILOGUE: str = "direct",
    A_MAJOR: str = "K",
    B_MAJOR: str = "K",
    CONSUMERS: int = 2,
    SPLITS: int = 2,
    CLUSTER: int = 1,
    REDUCERS: int = 0,
):
    """Split-K in one launch: the units of `gemm_warp_specialized_persistent` with SPLITS > 1 store their partial
    products into slice ``split`` of the f32 workspace W (S, M, N) as there, then the SPLITS units of each tile meet
    at a group barrier on counter ``F[t]`` (`T.group_barrier`: rank ``split``; t the unit's tile number, in 2-block
    clusters ``2 t + r`` for the tile of block rank r) and each sums BM / SPLITS rows of the tile over every slice
    into C (`split_rows_sum`): no reduction kernel, its launch, nor its pass over W after the GEMM's last wave (the
    slices are read from L2 right after they are written). With REDUCERS (a divisor of BM below SPLITS), only the
    units of splits 0 .. REDUCERS - 1 sum, BM / REDUCERS rows each; the others arrive at the barrier and leave: a
    split count that does not divide BM (3, 6, 12), or shares too small for the consumer threads' 4-element vectors.

    The units of a tile must run at once: the kernel assumes one wave (every unit a block of its own, at most one
    block per SM; checked at every launch) and a counter per tile. F holds zeros when first used and is left at the
    barriers' next generation, so a relaunch needs no reset."""
    reducers = REDUCERS or SPLITS
    if not isinstance(SPLITS, int) or SPLITS < 2 or not isinstance(reducers, int) or not 1 <= reducers <= SPLITS:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"gemm_split_fused splits K at least two ways and sums each tile on 1 to SPLITS of its units (SPLITS = "
            f"{SPLITS!r}, REDUCERS = {REDUCERS!r})",
        )
    if BM % reducers:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"gemm_split_fused's REDUCERS units of a tile (SPLITS when 0) each sum BM / REDUCERS rows of it: "
            f"REDUCERS must divide BM (BM = {BM}, REDUCERS = {reducers})",
        )
    rows = f"((M + {BM - 1}) // {BM} + {CLUSTER - 1}) // {CLUSTER}"  # row tiles (pairs of them in clusters)
    tiles = f"{rows} * ((N + {BN - 1}) // {BN})"
    # one wave: every unit has a block of its own (the units of a tile wait for each other); a counter per tile
    T.assume(f"{tiles} * {SPLITS} <= {BLOCKS // CLUSTER}")
    T.assume(f"NF >= {tiles} * {CLUSTER}")
    persistent_gemm(
        A,
        B,
        W,
        BM=BM,
        BN=BN,
        BK=BK,
        STAGES=STAGES,
        PRODUCER_REGS=PRODUCER_REGS,
        CONSUMER_REGS=CONSUMER_REGS,
        BLOCKS=BLOCKS,
        ORDER=ORDER,
        GROUP=GROUP,
        EPILOGUE=EPILOGUE,
        A_MAJOR=A_MAJOR,
        B_MAJOR=B_MAJOR,
        CONSUMERS=CONSUMERS,
        SPLITS=SPLITS,
        BATCH=False,
        CLUSTER=CLUSTER,
        fused=(C, F, reducers),
    )


def store_tile(  # noqa: PLR0913 - the store's parts, named as in the kernel
    acc: Any,
    C: Any,  # noqa: N803
    bm: Any,
    bn: Any,
    BM: int,  # noqa: N803
    BN: int,  # noqa: N803
    EPILOGUE: str,  # noqa: N803
    epilogue: Any,
    staging: Any,
) -> None:
    """Store tile (bm, bn) of C from the accumulator, through the fused `epilogue` when given, directly or (EPILOGUE
    ``"tma"``) through the shared-memory `staging` buffers and TMA stores."""
    value = acc if epilogue is None else epilogue(acc, (bm, bn, BM, BN))
    if value is None:  # a reducing epilogue stored its own outputs (`epilogue_reduce`)
        return
    if EPILOGUE == "tma":
        T.copy(value, C.tile((bm, bn), (BM, BN)), atom="tma.store", staging=staging)
    else:
        T.copy(value, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BN",)})
def gemm_split_reduce(
    W: T.Tensor[("S", "M", "N"), T.f32],
    C: T.Tensor[("M", "N"), "OUT"],
    SPLITS: int = 2,
    BN: int = 512,
    OUT: str = "f32",
    ROWS: int = 1,
):
    """The second half of split-K: C = sum over s of W[s], in f32, converted to OUT. One block of ROWS * BN / 4
    threads per (ROWS rows, BN columns), each thread adding its four columns of every slice (16-byte loads)."""
    split_reduce(W, C, SPLITS=SPLITS, BN=BN, ROWS=ROWS)


def split_reduce(W: Any, C: Any, *, SPLITS: int, BN: int, epilogue: Any = None, ROWS: int = 1) -> None:  # noqa: N803
    """The body of `gemm_split_reduce`, which kernels with a fused epilogue share (`argus.kernels.epilogue`):
    `epilogue(acc, tile)`, when given, is the value stored for the (ROWS, BN) tile (m, bn), as in
    `persistent_gemm` (a reducing epilogue's: ROWS rows of BN / 4 = 32 threads, a warp a row)."""
    T.assume(f"S == {SPLITS}")
    T.assume("N % 4 == 0")  # rows in whole vectors of four elements: 16-byte loads of W, 4-element stores of C
    M, N = W.shape[1], W.shape[2]  # noqa: N806 - the kernel's shape symbols (C None: a reducing epilogue)
    with T.grid(T.cdiv(M, ROWS) if ROWS > 1 else M, T.cdiv(N, BN), threads=ROWS * BN // 4) as (m, bn):
        acc = T.alloc_fragment((ROWS, BN), T.f32)
        T.copy(W.tile((0, m, bn), (None, ROWS, BN)), acc)
        for s in range(1, SPLITS):  # unrolled at trace time: SPLITS is a constant
            part = T.alloc_fragment((ROWS, BN), T.f32)
            T.copy(W.tile((s, m, bn), (None, ROWS, BN)), part)
            # invariant: what is added is slice s's partial product of the same elements of C
            T.assert_tag(lambda w, s=s: (w[0] == s) & (w[1] // ROWS == m) & (w[2] // BN == bn), part)
            acc = acc + part
        value = acc if epilogue is None else epilogue(acc, (m, bn, ROWS, BN))
        if value is not None:  # (None: a reducing epilogue stored its own outputs)
            T.copy(value, C.tile((m, bn), (ROWS, BN)))


# --- the split tail: whole waves of whole tiles, the last partial wave split along K ----------------------------------
#
# A GEMM of `tiles` output tiles on BLOCKS blocks runs ``cdiv(tiles, BLOCKS)`` waves; when the last is partial (``R =
# tiles % BLOCKS`` tiles) most SMs idle through it. With TAIL = S, the first ``tiles - R`` tiles are whole units as
# before, and each of the R tail tiles is S units of ``cdiv(k_tiles, S)`` K-blocks, whose f32 partial products go to
# slot (split, tile - (tiles - R)) of the workspace W (S, R, BM, BN); `gemm_tail_reduce` then sums each tail tile's S
# slots into C. The last wave then takes about 1 / S of a whole tile's time (the stream-K paper's "data-parallel +
# split tail"), at the cost of writing and reading R * S f32 tiles (mostly in L2) and a second launch.


def unit_walk(tiles: Any, k_tiles: Any, BLOCKS: int, SPLITS: int, PART: str, TAIL: int) -> tuple:  # noqa: N803
    """The work units of the persistent GEMM, as expressions of the tile count, the K-blocks per tile and the block
    count: (units, k_split, whole, rest). Every unit runs the same `k_split` K-blocks, so the pipeline's global
    iteration is ``it * k_split + k``; `whole` is the tiles of the whole waves, `rest` the tail's. PART ``"all"``:
    every tile, split SPLITS ways when SPLITS > 1; ``"whole"``: the whole waves' tiles, one unit each; ``"tail"``: the
    tail's tiles, each split TAIL ways."""
    whole = tiles // BLOCKS * BLOCKS
    rest = tiles - whole
    if PART == "tail":
        return rest * TAIL, T.cdiv(k_tiles, TAIL), whole, rest
    if PART == "whole":
        return whole, k_tiles, whole, rest
    return tiles * SPLITS, (T.cdiv(k_tiles, SPLITS) if SPLITS > 1 else k_tiles), whole, rest


def block_tile(t: Any, rank: Any, CLUSTER: int) -> Any:  # noqa: N803
    """The block's own tile number: unit tile t, or in clusters ``t * CLUSTER + rank`` (the tile of block rank `rank`).
    One expression for `unit_tile`, the fused split-K's unit guard and its counter, so the verifier reads them as one
    tile number."""
    return t * CLUSTER + rank if CLUSTER > 1 else t


def unit_tile(t: Any, row_units: Any, tiles_n: Any, ORDER: str, GROUP: int, CLUSTER: int, rank: Any) -> tuple:  # noqa: N803
    """(bm, bn): the output tile of tile unit t among ``(row_units, tiles_n)`` in ORDER; with CLUSTER > 1 a unit's row
    is a group of CLUSTER row tiles, of which the block of cluster rank `rank` takes its own. The block's tile is
    then a function of one number, ``t * CLUSTER + rank`` (each block's own tile number, which the fused split-K's
    counter also reads): the verifier's tile-order lemma takes the tile as a function of one number
    (`argus.verify.checks.tiles`), and the rank outside it would leave the order's proofs not checked."""
    if CLUSTER == 1:
        return T.tile_order(t, (row_units, tiles_n), ORDER, GROUP, clamp=True)
    own = block_tile(t, rank, CLUSTER)
    bm, bn = T.tile_order(own // CLUSTER, (row_units, tiles_n), ORDER, GROUP, clamp=True)
    return bm * CLUSTER + own % CLUSTER, bn


def walk_unit(u: Any, whole: Any, rest: Any, SPLITS: int, PART: str) -> tuple:  # noqa: N803
    """(tile, split) of unit u (`unit_walk`). Tail units walk the tail's tiles once per split, so that the blocks
    running at once share their operands' K-range in L2."""
    if PART == "tail":
        return whole + u % rest, u // rest
    if SPLITS > 1:
        return u // SPLITS, u % SPLITS
    return u, 0


def walk_k_block(k: Any, split: Any, k_split: Any, SPLITS: int, PART: str) -> Any:  # noqa: N803
    """The K-block a unit's iteration k loads (the last split's blocks past K load as zeros)."""
    return k + split * k_split if PART == "tail" or SPLITS > 1 else k


def tail_tiles(BM: int, BN: int, BLOCKS: int) -> str:  # noqa: N803
    """The split tail's tile count as an assumption's expression of M and N: the tiles past the whole waves."""
    tiles = f"(((M + {BM - 1}) // {BM}) * ((N + {BN - 1}) // {BN}))"
    return f"{tiles} - {tiles} // {BLOCKS} * {BLOCKS}"


def tail_assumptions(TAIL: int, BM: int, BN: int, BLOCKS: int) -> None:  # noqa: N803
    """The workspace W (S, RT, WM, WN) of a split tail: one (BM, BN) slot per split of each tail tile."""
    T.assume(f"S == {TAIL}")
    T.assume(f"WM == {BM}")
    T.assume(f"WN == {BN}")
    T.assume(f"RT == {tail_tiles(BM, BN, BLOCKS)}")


@argus.kernel(
    policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def gemm_persistent_split_tail(
    A: T.Tensor[a_shape, "IN"],
    B: T.Tensor[b_shape, "IN"],
    W: T.Tensor[("S", "RT", "WM", "WN"), T.f32],
    BM: int = 128,
    BN: int = 256,
    BK: int = 64,
    STAGES: int = 4,
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    ORDER: str = "grouped",
    GROUP: int = 8,
    A_MAJOR: str = "K",
    B_MAJOR: str = "K",
    CONSUMERS: int = 2,
    TAIL: int = 2,
):
    """The tail of a split-tail GEMM: the ``RT = tiles % BLOCKS`` tiles that `gemm_warp_specialized_persistent` with
    PART="whole" (the tiles of the whole waves, ``tiles - RT``) leaves, each split into TAIL units of ``cdiv(k_tiles,
    TAIL)`` K-blocks, unit u computing tail tile ``u % RT`` over split ``u // RT``'s K-blocks and storing its f32
    partial product into slot (split, tile) of W (TAIL, RT, BM, BN); `gemm_tail_reduce` sums the slots into C. The
    walk is the persistent kernel's (BLOCKS blocks, the same tile order), M and N taken from A and B."""
    persistent_gemm(
        A,
        B,
        None,
        BM=BM,
        BN=BN,
        BK=BK,
        STAGES=STAGES,
        PRODUCER_REGS=PRODUCER_REGS,
        CONSUMER_REGS=CONSUMER_REGS,
        BLOCKS=BLOCKS,
        ORDER=ORDER,
        GROUP=GROUP,
        EPILOGUE="direct",
        A_MAJOR=A_MAJOR,
        B_MAJOR=B_MAJOR,
        CONSUMERS=CONSUMERS,
        SPLITS=1,
        BATCH=False,
        PART="tail",
        TAIL=TAIL,
        W=W,
    )


@argus.kernel(policies={"tile_shape": ("BM", "BN")})
def gemm_tail_reduce(
    W: T.Tensor[("S", "RT", "WM", "WN"), T.f32],
    C: T.Tensor[("M", "N"), "OUT"],
    TAIL: int = 2,
    BM: int = 128,
    BN: int = 256,
    BLOCKS: int = SMS,
    ORDER: str = "grouped",
    GROUP: int = 8,
    OUT: str = "bf16",
):
    """The second half of a split tail: tail tile i (tile ``whole + i`` of `gemm_persistent_split_tail`'s walk, at
    the same BM, BN, BLOCKS, ORDER and GROUP) is C's tile (bm, bn) = the sum over s of W[s, i], in f32, converted to
    OUT. One block per (tail tile, RC rows of it), each thread adding four columns of every slot (16-byte loads)."""
    tail_reduce(W, C, TAIL=TAIL, BM=BM, BN=BN, BLOCKS=BLOCKS, ORDER=ORDER, GROUP=GROUP)


def tail_reduce_rows(BM: int, BN: int) -> int:  # noqa: N803
    """Rows of a tail tile one `gemm_tail_reduce` block sums: at most 256 threads of four columns, the most rows
    that divide BM (a 192-column tile: 4 rows of 48 threads, 192 threads)."""
    return max([r for r in range(1, max(1, 1024 // BN) + 1) if BM % r == 0])


def tail_reduce(
    W: Any, C: Any, *, TAIL: int, BM: int, BN: int, BLOCKS: int, ORDER: str, GROUP: int, epilogue: Any = None
) -> None:
    """The body of `gemm_tail_reduce`, which kernels with a fused epilogue share (`argus.kernels.epilogue`):
    `epilogue(acc, tile)` is applied to each (RC, BN) piece of a tail tile, as in `persistent_gemm`."""
    tail_assumptions(TAIL, BM, BN, BLOCKS)
    T.assume("N % 4 == 0")  # rows in whole vectors of four elements: 16-byte loads of W, 4-element stores of C
    M, N = C.shape  # noqa: N806 - the kernel's shape symbols
    rc = tail_reduce_rows(BM, BN)
    if BN % 4:
        raise DSLError("DSL_BAD_PARAM", f"a tail reduction takes BN a multiple of 4, not {BN}")
    T.writes_part(C, "the split tail's tiles: gemm_warp_specialized_persistent(PART='whole') writes the whole waves'")
    tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
    tiles = tiles_m * tiles_n
    whole = tiles // BLOCKS * BLOCKS
    with T.grid(W.shape[1], BM // rc, threads=rc * BN // 4) as (i, r):
        bm, bn = T.tile_order(whole + i, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
        acc = T.alloc_fragment((rc, BN), T.f32)
        T.copy(W.tile((0, i, r, 0), (None, None, rc, BN)), acc)
        for s in range(1, TAIL):  # unrolled at trace time: TAIL is a constant
            part = T.alloc_fragment((rc, BN), T.f32)
            T.copy(W.tile((s, i, r, 0), (None, None, rc, BN)), part)
            # invariant: what is added is split s's partial product of the same rows of the same tail tile
            T.assert_tag(lambda w, s=s: (w[0] == s) & (w[1] == i) & (w[2] // rc == r), part)
            acc = acc + part
        rows = bm * (BM // rc) + r  # the piece's rows of C, in units of rc
        value = acc if epilogue is None else epilogue(acc, (rows, bn, rc, BN))
        T.copy(value, C.tile((rows, bn), (rc, BN)))


# --- off the ladder: rung 3 on a persistent grid ----------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "tile_order": "ORDER"})
def gemm_persistent(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    BLOCKS: int = SMS,
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


# --- off the ladder: fp32 operands at fp32 accuracy on bf16 tensor cores ---------------------------------------------
#
# An f32 value x is the sum hi + lo of two bf16 values (hi = bf16(x), lo = bf16(x - hi)) up to 2^-17 |x|, so
# A @ B = A_hi B_hi + A_hi B_lo + A_lo B_hi up to terms of 2^-16 |A| |B| (the dropped A_lo B_lo, and the rounding of
# lo). The three products are one bf16 GEMM over a K three times as long: A3 = [A_hi | A_hi | A_lo] and
# B3 = [B_hi | B_lo | B_hi], concatenated along K, each segment P = K rounded up to BK elements (zeros past K).
# `split_bf16x3` writes one operand's A3 or B3 from its f32 values in one pass; `argus.kernels.matmul` runs it on
# both operands and then the persistent GEMM with f32 C.


@argus.kernel(policies={"tile_shape": ("BR", "BC")})
def pad_copy(
    X: T.Tensor[lambda BATCH: (("L",) if BATCH else ()) + ("R", "C"), "DT"],
    Y: T.Tensor[lambda BATCH: (("L",) if BATCH else ()) + ("RP", "P"), "DT"],
    DT: str = "bf16",
    VEC: int = 8,
    BR: int = 4,
    BC: int = 512,
    BATCH: bool = False,
    PER_THREAD: int = 1,
):
    """Y = X zero-padded: Y[r, c] = X[r, c] for r < R and c < C, 0 elsewhere (RP >= R rows of P >= C elements): an
    operand copied to rows TMA can address, or rows a whole `PITCH_BYTES` apart (`argus.kernels.matmul`). One block
    per (BR, BC) tile of Y, VEC elements per access (16 bytes where X's and Y's rows are whole 16-byte vectors),
    PER_THREAD accesses per thread (narrow accesses take several, so that a block still moves kilobytes). BATCH: X
    and Y get a leading extent L, padded alike."""
    threads = BR * BC // (VEC * PER_THREAD) if PER_THREAD >= 1 else 0
    if VEC not in (1, 2, 4, 8, 16) or BC % VEC or not 1 <= threads <= 1024 or (BR * BC // VEC) % PER_THREAD:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"pad_copy: VEC in 1-16, BC a multiple of it, BR * BC / VEC accesses over PER_THREAD a thread for 1 to "
            f"1024 threads; got VEC {VEC}, BR {BR}, BC {BC}, PER_THREAD {PER_THREAD}",
        )
    T.assume(f"C % {VEC} == 0 and P % {VEC} == 0 and P >= C and RP >= R")
    blocks = (T.cdiv(RP, BR), T.cdiv(P, BC))  # noqa: F821 - RP, P: Y's shape symbols
    blocks = (*blocks, L) if BATCH else blocks  # noqa: F821 - L: the batch extent, a shape symbol when BATCH
    with T.grid(*blocks, threads=threads) as grid:
        br, bc = grid[0], grid[1]
        lead, one = ((grid[2],), (None,)) if BATCH else ((), ())
        x = T.alloc_fragment((BR, BC), X.dtype, vector_bytes=X.dtype.itemsize * VEC)
        T.copy(X.tile((*lead, br, bc), (*one, BR, BC)), x)  # zeros past X's end
        T.copy(x, Y.tile((*lead, br, bc), (*one, BR, BC)))


#: The segments of A3 and B3: which part of the f32 operand each of the three holds.
SPLIT_PATTERNS = {"A": ("hi", "hi", "lo"), "B": ("hi", "lo", "hi")}


@argus.kernel(policies={"tile_shape": ("BR", "BC")})
def split_bf16x3(
    X: T.Tensor[lambda BATCH: (("L",) if BATCH else ()) + ("R", "C"), T.f32],
    Y: T.Tensor[
        lambda AXIS, BATCH: (("L",) if BATCH else ()) + (("D", 3, "P") if AXIS == 1 else (3, "P", "D")), T.bf16
    ],
    AXIS: int = 1,
    OPERAND: str = "A",
    VEC: int = 4,
    BR: int = 16,
    BC: int = 64,
    BATCH: bool = False,
):
    """Y = the three bf16 segments of X (`SPLIT_PATTERNS[OPERAND]`: hi = bf16(x), lo = bf16(x - hi)) along AXIS, the
    contraction axis of X. AXIS = 1: X is (R, K), Y (D, 3, P), read as (D, 3P) by the GEMM, D >= R (rows of zeros
    past R); AXIS = 0: X is (K, C), Y (3, P, D), read as (3P, D), D >= C (the rows padded for TMA). Each segment is
    P long, P a multiple of the tile along AXIS and at least X's extent along it; zeros past X's end. One block per
    Y tile of one segment: it reads the X tile once (VEC f32 per thread and load: 4 needs X's rows 16-byte aligned)
    and writes the three segments' tiles. BATCH: X and Y get a leading extent L (a batch of matrices, split alike).
    """
    if AXIS not in (0, 1) or OPERAND not in SPLIT_PATTERNS or VEC not in (1, 2, 4):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"split_bf16x3: AXIS is 0 or 1, OPERAND 'A' or 'B' and VEC 1, 2 or 4; got {AXIS}, {OPERAND!r}, {VEC}",
        )
    T.assume(f"C % {VEC} == 0")  # X's rows in whole VEC-element vectors
    if AXIS == 1:
        T.assume(f"P % {BC} == 0 and P >= C and D >= R")
        blocks = (T.cdiv(D, BR), P // BC)
    else:
        T.assume(f"P % {BR} == 0 and P >= R and D >= C and D % {VEC} == 0")
        blocks = (P // BR, T.cdiv(D, BC))
    blocks = (*blocks, L) if BATCH else blocks  # noqa: F821 - L: the batch extent, a shape symbol when BATCH
    with T.grid(*blocks, threads=BR * BC // VEC) as grid:
        br, bc = grid[0], grid[1]
        lead, one = ((grid[2],), (None,)) if BATCH else ((), ())  # the matrix of a batched X
        x = T.alloc_fragment((BR, BC), T.f32, vector_bytes=4 * VEC)
        T.copy(X.tile((*lead, br, bc), (*one, BR, BC)), x)  # zeros past X's end
        hi = T.cast(x, T.bf16)
        parts = {"hi": hi, "lo": T.cast(x - T.cast(hi, T.f32), T.bf16)}
        for s, part in enumerate(SPLIT_PATTERNS[OPERAND]):
            if AXIS == 1:
                T.copy(parts[part], Y.tile((*lead, br, s, bc), (*one, BR, None, BC)))
            else:
                T.copy(parts[part], Y.tile((*lead, s, br, bc), (*one, None, BR, BC)))
