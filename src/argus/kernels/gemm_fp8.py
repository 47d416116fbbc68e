"""FP8 GEMM with block scales: C = sum over K-blocks kb of (A_kb @ B_kb^T) * SA[kb, rows] * SB[kb, columns], the
scaling of DeepSeek-V3's FP8 training and inference recipe (an activation scale per row and 128-element K-block, a
weight scale per 128 x 128 block) that ``torch._scaled_mm`` calls block-wise 1x128 / 128x128.

`gemm_fp8_block_scaled` is the persistent warp-specialized Hopper GEMM (`argus.kernels.gemm.persistent_gemm`'s
producer, stages and tile walk) with a different consumer: the products of one K-block (``wgmma`` m64nNk32, four per
K-block of 128) go into a fresh f32 accumulator ``part``, which is then multiplied by the K-block's scales and added
to the tile's sum ``acc`` by the consumer's own FMAs. That is also how the sum gets f32 accuracy: the tensor core's
FP8 accumulator sums 128 products at a time only, and the long sum over K is an f32 sum in registers (the
"promotion" cuBLAS makes without fast accumulation), where `argus.kernels.matmul.scaled_mm`'s kernel accumulates all
of K in the tensor core.

The scales come as torch's block-wise ``_scaled_mm`` takes them, transposed so that one K-block's row scales are
contiguous: SA (KB, M) (``scale_a.t()`` of an (M, KB) tensor stored column-major: a view, no copy), and SB (KB, NB)
as it is, one value per tile and K-block (a tile is one 128-column block). Both are read while the K-block's MMAs
run.

Tag assertions (proved by the verifier): the stages consumed at iteration k hold K-block k of the tile's rows of A and
columns of B (as in the GEMM), and the row scales multiplied into iteration k's product are SA's row k at the tile's
rows: a scale of the wrong K-block or the wrong rows is a counterexample. B's scale is one element, ``SB[k, bn]``,
read by that index (a scalar read carries no tag).
"""

from __future__ import annotations

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.kernels.gemm import alloc_operand_stages, holds, load_operand, operand, operand_assumption
from argus.lang.errors import DSLError

#: The K-block of the scales and of the kernel: one 128-byte swizzle span of FP8 elements.
BLOCK = 128


@argus.kernel(policies={"tile_shape": ("BM",), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"})
def gemm_fp8_block_scaled(
    A: T.Tensor[("M", "K"), "IN"],
    B: T.Tensor[("N", "K"), "IN"],
    SA: T.Tensor[("KB", "M"), T.f32],
    SB: T.Tensor[("KB", "NB"), T.f32],
    C: T.Tensor[("M", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    STAGES: int = 6,
    OUT: str = "bf16",
    IN: str = "e4m3",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = SMS,
    ORDER: str = "grouped",
    GROUP: int = 8,
    CONSUMERS: int = 2,
):
    """C = the block-scaled product (module docstring) of A (M, K) and B (N, K), both K-major FP8, with SA (KB, M)
    and SB (KB, NB) f32, KB = cdiv(K, 128), NB = cdiv(N, 128); C in OUT. BLOCKS blocks, each a TMA producer
    warpgroup and CONSUMERS consumer warpgroups of BM / CONSUMERS rows each, walk the (BM, BN) tiles in ORDER; the K
    loop runs on K-blocks of 128 through a STAGES-deep mbarrier pipeline that continues across a block's tiles."""
    M, N = C.shape  # noqa: N806 - the kernel's shape symbols
    K = A.shape[1]  # noqa: N806
    BK = BLOCK  # noqa: N806
    if A.dtype.bits != 8 or B.dtype != A.dtype:
        raise DSLError("DSL_BAD_PARAM", f"block-scaled FP8 takes e4m3 or e5m2 A and B, not IN = {IN!r}")
    if CONSUMERS not in (1, 2, 3) or BM != 64 * CONSUMERS:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"1 to 3 consumer warpgroups of 64 rows each (BM = 64 x CONSUMERS), not CONSUMERS = {CONSUMERS}, BM = {BM}",
        )
    T.assume(operand_assumption("K", "K", 1))  # TMA: the rows of A and B in whole 16-byte units
    T.assume("KB == (K + 127) // 128")  # one scale per 128-element K-block
    T.assume(f"N % {16 // C.dtype.itemsize} == 0")  # C's rows in whole 16-byte vectors
    T.assume("NB == (N + 127) // 128")  # one scale of B per 128 x 128 block
    if BN != BLOCK:
        raise DSLError("DSL_BAD_PARAM", f"a tile is one 128-column block of B's scales: BN = {BLOCK}, not {BN}")
    with T.grid(BLOCKS, threads=WARPGROUP_SIZE * (1 + CONSUMERS)) as (bx,):
        sA = alloc_operand_stages("K", STAGES, BM, BK, A.dtype)
        sB = alloc_operand_stages("K", STAGES, BN, BK, B.dtype)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=CONSUMERS)  # each consumer warpgroup releases for itself
        tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
        units = tiles_m * tiles_n
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * A.dtype.itemsize
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = bx + it * BLOCKS
                with T.if_(u < units):
                    bm, bn = T.tile_order(u, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)
                        T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                        load_operand(A, "K", sA[s], bm, k, BM, BK, full[s])
                        load_operand(B, "K", sB[s], bn, k, BN, BK, full[s])
        with T.role("consumer", warpgroups=tuple(range(1, 1 + CONSUMERS)), registers=CONSUMER_REGS):
            atom = T.wgmma_atom(BN, A.dtype)
            acc = T.alloc_fragment((BM, BN), T.f32, mma=atom)  # the tile's f32 sum over the K-blocks
            part = T.alloc_fragment((BM, BN), T.f32, mma=atom)  # one K-block's product, from the tensor cores
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = bx + it * BLOCKS
                with T.if_(u < units):
                    bm, bn = T.tile_order(u, (tiles_m, tiles_n), ORDER, GROUP, clamp=True)
                    T.fill(acc, 0.0)
                    for k, s in T.pipeline(k_tiles, stages=STAGES, start=it * k_tiles):
                        g = k + it * k_tiles
                        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
                        # invariant: the stage consumed at iteration k holds K-block k of this tile's A and B
                        T.assert_tag(holds("K", bm, k, BM, BK), sA[s])
                        T.assert_tag(holds("K", bn, k, BN, BK), sB[s])
                        T.fill(part, 0.0)
                        # issue the K-block's MMAs, and load its scales while they run
                        T.gemm(operand("K", sA[s], False), operand("K", sB[s], True), part, wait_group=1)
                        sa = T.alloc_reduced(part, axis=1)
                        T.copy(SA.tile((k, bm), (None, BM)), sa)
                        # invariant: row i of the tile is scaled by SA[k, bm * BM + i]
                        T.assert_tag(lambda x: (x[0] == k) & (x[1] == bm * BM + x.coord[0]), sa)
                        scale = T.alloc_reduced(part, axis=1)
                        T.copy(sa * SB[k, bn], scale)  # times the scale of B's block (K-block k, column block bn)
                        T.wgmma_wait(0)
                        # this warpgroup's MMAs have read the stage: release it for itself, so that the warpgroups
                        # run free of each other and one's FMAs below overlap the other's MMAs
                        T.mbarrier_arrive(empty[s], per_warpgroup=True)
                        T.copy(acc + part * scale[:, None], acc)
                    T.copy(acc, C.tile((bm, bn), (BM, BN)))


__all__ = ["BLOCK", "gemm_fp8_block_scaled"]
