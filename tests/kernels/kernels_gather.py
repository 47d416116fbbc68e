"""Kernels around gathered TMA loads (``X.gather(...)``): a probe that loads rows of X named by an index into
swizzled shared memory and stores them, its misuses, and a copy of the gathered up-projection whose gather starts one
routed row late (a seeded bug for the verifier)."""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.kernels.grouped import gated_up_projection


@argus.kernel
def gather_probe(
    X: T.Tensor[("TOKENS", "K"), "IN"],
    IDX: T.Tensor[("R",), T.i32],
    Y: T.Tensor[("M", "K"), "IN"],
    BM: int = 16,
    BK: int = 64,
    SWIZZLE: int = 128,
    IN: str = "bf16",
):
    """Y[bx * BM + r, k * BK ..] = X[IDX[bx * BM + r], k * BK ..] (zeros where bx * BM + r is at or past R): one
    gathered load of BM rows and BK columns per K-block into shared memory swizzled by SWIZZLE bytes, then stored."""
    T.assume("K % 8 == 0")  # 16-byte rows: TMA's row stride
    T.assume_values(IDX, lo=0, hi="TOKENS - 1")
    with T.grid(T.cdiv(Y.shape[0], BM), T.cdiv(X.shape[1], BK), threads=128) as (bx, bk):
        sA = T.alloc_shared((BM, BK), X.dtype, swizzle=SWIZZLE)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0], expect_bytes=BM * BK * X.dtype.itemsize)
        T.copy(X.gather(IDX, bx * BM, (BM, BK), (bk * BK,)), sA, atom="tma", mbarrier=bar[0])
        T.mbarrier_wait(bar[0], phase=0)
        T.copy(sA, Y.tile((bx, bk), (BM, BK)))


#: One bad use of ``X.gather`` per VARIANT of `gather_misuse` (each refused at trace time with ``DSL_GATHER``).
MISUSES = ("index is a float tensor", "shape rank", "origin rank", "cp.async", "a destination")


@argus.kernel
def gather_misuse(
    X: T.Tensor[("TOKENS", "K"), T.bf16],
    IDX: T.Tensor[("R",), T.i32],
    W: T.Tensor[("R",), T.f32],
    Y: T.Tensor[("M", "K"), T.bf16],
    VARIANT: str = "",
):
    with T.grid(1, threads=128):
        sA = T.alloc_shared((16, 64), T.bf16, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        if VARIANT == "index is a float tensor":
            T.copy(X.gather(W, 0, (16, 64), (0,)), sA, atom="tma", mbarrier=bar[0])
        elif VARIANT == "shape rank":
            T.copy(X.gather(IDX, 0, (16,), (0,)), sA, atom="tma", mbarrier=bar[0])
        elif VARIANT == "origin rank":
            T.copy(X.gather(IDX, 0, (16, 64), (0, 0)), sA, atom="tma", mbarrier=bar[0])
        elif VARIANT == "cp.async":
            T.copy(X.gather(IDX, 0, (16, 64), (0,)), sA, atom="cp.async")
        else:
            T.copy(sA, Y.gather(IDX, 0, (16, 64), (0,)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gathered_up_one_row_late(
    X: T.Tensor[("TOKENS", "K"), "IN"],
    TOK: T.Tensor[("R",), T.i32],
    B: T.Tensor[("E", "K", "N2"), "IN"],
    offs: T.Tensor[("E",), T.i32],
    tiles: T.Tensor[("E",), T.i32],
    scale: T.Tensor[("R",), T.f32],
    C: T.Tensor[("R", "N"), "OUT"],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
    OUT: str = "bf16",
    IN: str = "bf16",
    PRODUCER_REGS: int = 40,
    CONSUMER_REGS: int = 232,
    BLOCKS: int = 3,
    CONSUMERS: int = 2,
    SEARCH: int = 3,
    GROUP: int = 8,
    ACT: str = "silu",
    EPILOGUE: str = "direct",
):
    """`argus.kernels.grouped.grouped_gemm_swiglu_gathered` whose gather starts at routed row row0 + 1 (an off-by-one
    position): every row of the tile reads the next routed row's token; the stage's invariant says row m holds token
    TOK[row0 + m]."""
    R = TOK.shape[0]  # noqa: N806
    T.assume_values(TOK, lo=0, hi="TOKENS - 1")

    def load_rows(stage: Any, k: Any, row0: Any, bar: Any) -> None:
        T.copy(X.gather(TOK, row0 + 1, (BM, BK), (k * BK,)), stage, atom="tma", mbarrier=bar)

    def assert_rows(stage: Any, k: Any, row0: Any) -> None:
        T.assert_tag(
            lambda x: (
                (x[1] // BK == k) & ((row0 + x.coord[0] >= R) | (x[0] == TOK[T.minimum(row0 + x.coord[0], R - 1)]))
            ),
            stage,
        )

    p = {"BM": BM, "BN": BN, "BK": BK, "STAGES": STAGES, "BLOCKS": BLOCKS, "CONSUMERS": CONSUMERS, "SEARCH": SEARCH}
    p |= {"GROUP": GROUP, "ACT": ACT, "PRODUCER_REGS": PRODUCER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    p["EPILOGUE"] = EPILOGUE
    gated_up_projection(R, load_rows, assert_rows, B, offs, tiles, scale, C, p)
