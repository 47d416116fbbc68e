"""GEMMs. `gemm_mma_sync`: shared-memory tiles, `ldmatrix` into operand fragments and
`mma.sync.m16n8k16` on four warps arranged 2x2 over the accumulator."""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS
from argus.lang.errors import DSLError

# --- operand layouts of the Hopper GEMMs (gemm_wgmma_tma and gemm_wgmma_tma_persistent) -----------------------
#
# A_MAJOR / B_MAJOR say which dimension of each operand is contiguous in global memory (docs/gemm.md, "Operand
# layouts"): A is (M, K) K-major (row-major A) or (K, M) M-major (A^T stored row-major); B is (N, K) K-major
# (C = A @ B^T, today's "TN") or (K, N) N-major (C = A @ B, torch.matmul's B). A K-major operand is staged as
# (stages, BMN, BK) tiles loaded by one TMA box each; an MN-major one as (stages, BK, BMN) tiles in swizzle-wide
# panels (T.alloc_shared(..., panels=True)), loaded by one (BK, 64) box per panel, all on the stage's mbarrier,
# and read by wgmma as a transposed (MN-major) operand.

_MAJORS = {"A_MAJOR": ("K", "M"), "B_MAJOR": ("K", "N")}


def _major(param: str, value: Any) -> str:
    if value not in _MAJORS[param]:
        raise DSLError(
            "DSL_OPERAND_MAJOR",
            f"{param} = {value!r}: an operand of the Hopper GEMMs is K-major or {_MAJORS[param][1]}-major",
            f"pass {param}='K' (the default) or {param}={_MAJORS[param][1]!r}",
            requirement=" or ".join(repr(v) for v in _MAJORS[param]),
            actual=repr(value),
        )
    return value


def a_shape(A_MAJOR: str) -> tuple[str, str]:  # noqa: N803 - named after the kernel parameter
    """A's global shape: ``(M, K)`` K-major, or ``(K, M)`` M-major (A^T stored row-major)."""
    return ("M", "K") if _major("A_MAJOR", A_MAJOR) == "K" else ("K", "M")


def b_shape(B_MAJOR: str) -> tuple[str, str]:  # noqa: N803
    """B's global shape: ``(N, K)`` K-major (C = A @ B^T), or ``(K, N)`` N-major (C = A @ B)."""
    return ("N", "K") if _major("B_MAJOR", B_MAJOR) == "K" else ("K", "N")


def operand_assumption(a_major: str, b_major: str) -> str:
    """The `T.assume` TMA needs: every row stride of A and B (their contiguous extent, in 16-bit elements) a
    multiple of 16 bytes."""
    dims = sorted({"K" if a_major == "K" else "M", "K" if b_major == "K" else "N"}, key="KMN".index)
    return " and ".join(f"{d} % 8 == 0" for d in dims)


@T.macro
def alloc_operand_stages(major: str, stages: int, bmn: int, bk: int, dtype: Any) -> T.Shared:
    """The shared stages of one operand: ``(stages, bmn, bk)`` 128-byte-swizzled for a K-major operand,
    ``(stages, bk, bmn)`` in 64-element panels for an MN-major one."""
    if major == "K":
        return T.alloc_shared((stages, bmn, bk), dtype, swizzle=128)
    return T.alloc_shared((stages, bk, bmn), dtype, swizzle=128, panels=True)


@T.macro
def load_operand(tensor: Any, major: str, stage: T.Tile, mn: Any, k: Any, bmn: int, bk: int, bar: Any) -> None:
    """TMA-load MN-block `mn`, K-block `k` of an operand into `stage` on mbarrier `bar`: one (bmn, bk) box for a
    K-major operand; for an MN-major one, one (bk, P) box per panel (P = 128 bytes of elements: a box's inner
    extent may not exceed the swizzle span), panel j at MN-block ``mn * (bmn / P) + j`` of width P."""
    if major == "K":
        T.copy(tensor.tile((mn, k), (bmn, bk)), stage, atom="tma", mbarrier=bar)
        return
    panel = 128 // tensor.dtype.itemsize
    for j in range(bmn // panel):
        T.copy(
            tensor.tile((k, mn * (bmn // panel) + j), (bk, panel)),
            stage.window((0, panel * j), (bk, panel)),
            atom="tma",
            mbarrier=bar,
        )


@T.macro
def operand(major: str, stage: T.Tile, contraction_first: bool) -> T.Tile:
    """A stage as `T.gemm` takes it: A as (BM, BK) (`contraction_first` False), B as (BK, BN) (True)."""
    k_first = major != "K"
    return stage if k_first == contraction_first else stage.T


@T.macro
def holds(major: str, block_mn: Any, block_k: Any, bmn: int, bk: int):
    """The tag predicate "this stage holds MN-block `block_mn`, K-block `block_k`" of an operand whose tags are
    its global coordinates: ``(mn, k)`` for a K-major operand, ``(k, mn)`` for an MN-major one."""
    i_mn, i_k = (0, 1) if major == "K" else (1, 0)
    return lambda x: (x[i_k] // bk == block_k) & (x[i_mn] // bmn == block_mn)


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
    # TMA needs the row strides of A and B (their contiguous extents, 16-bit elements) to be multiples of 16 bytes
    T.assume(operand_assumption(A_MAJOR, B_MAJOR))
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
