"""A Hopper GEMM with B given as (K, N), N-major, written out in the DSL with one seeded bug chosen by BUG, for
`tests/kernels/test_gemm_layouts.py`: expected verdicts there (none: verified; box: TAG_ASSERT; transpose:
MMA_K_MISMATCH; layout: LAYOUT_TMA_BOX and LAYOUT_WGMMA_OPERAND), and one whose B panels are stored backwards
(LAYOUT_WGMMA_OPERAND)."""

from __future__ import annotations

import argus
import argus.lang as T
from argus.atoms.swizzle import hopper_swizzle
from argus.layout import ComposedLayout, Layout


@argus.kernel
def gemm_nn_seeded(
    A: T.Tensor[("M", "K"), "bf16"],
    B: T.Tensor[("K", "N"), "bf16"],
    C: T.Tensor[("M", "N"), "f32"],
    BN: int = 128,
    BUG: str = "none",
):
    """C = A @ B with B N-major, written out (as the library kernels' helpers write it), with one seeded bug:
    ``"box"`` (panel j loaded from N-block ``bn + j`` instead of ``bn * (BN / 64) + j``), ``"transpose"`` (B
    read transposed: with BN = BK the shapes still match), ``"layout"`` (B's stages row-major with 256-byte rows,
    not in panels: neither TMA nor wgmma can use it, the interpreter cannot tell)."""
    BM, BK, STAGES = 128, 64, 2  # noqa: N806
    T.assume("K % 8 == 0 and N % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), A.dtype, swizzle=128)
        sB = T.alloc_shared((STAGES, BK, BN), B.dtype, swizzle=128, panels=BUG != "layout")
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,)):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                for j in range(BN // 64):
                    col = bn + j if BUG == "box" else bn * (BN // 64) + j
                    T.copy(
                        B.tile((k, col), (BK, 64)), sB[s].window((0, 64 * j), (BK, 64)), atom="tma", mbarrier=full[s]
                    )
        with T.role("consumer", warpgroups=(1, 2)):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.assert_tag(lambda b: (b[0] // BK == k) & (b[1] // BN == bn), sB[s])  # noqa: B023
                T.gemm(sA[s], sB[s].T if BUG == "transpose" else sB[s], acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))


def reversed_panels(stages: int, bk: int, bn: int) -> ComposedLayout:
    """A (stages, bk, bn) layout with its 64-column panels stored last first: each panel is still the box TMA
    writes, but the panels' distance along N is negative, which a wgmma descriptor (unsigned LBO) cannot say."""
    panels = bn // 64
    outer = Layout((stages, bk, (64, panels)), (bk * bn, 64, (1, -64 * bk)))
    return ComposedLayout(hopper_swizzle(128, 16), 64 * bk * (panels - 1), outer)


@argus.kernel
def gemm_nn_reversed_panels(
    A: T.Tensor[("M", "K"), "bf16"],
    B: T.Tensor[("K", "N"), "bf16"],
    C: T.Tensor[("M", "N"), "f32"],
):
    """`gemm_nn_seeded` with B's stages in `reversed_panels`: correct on the interpreter, accepted box by box by
    TMA, and still no wgmma operand (`LAYOUT_WGMMA_OPERAND` only)."""
    BM, BN, BK, STAGES = 128, 128, 64, 2  # noqa: N806
    T.assume("K % 8 == 0 and N % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), A.dtype, swizzle=128)
        sB = T.alloc_shared((STAGES, BK, BN), B.dtype, layout=reversed_panels(STAGES, BK, BN))
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,)):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                for j in range(BN // 64):
                    dst = sB[s].window((0, 64 * j), (BK, 64))
                    T.copy(B.tile((k, bn * (BN // 64) + j), (BK, 64)), dst, atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2)):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s], acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
