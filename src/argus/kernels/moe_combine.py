"""The MoE layer's combine as a DSL kernel (issue #23): each token's output is the sum of its k routed rows, read
where the grouped GEMMs left them (expert order) through the routing's positions, in one pass: the rows are read
once and the tokens' sums written once, where the PyTorch combine scattered the rows back to token order (one more
write and read of every routed row) before summing them; and `moe_glu_sum`, the gated activation of a split
up-projection's slices at decode sizes (`argus.kernels.moe.decode_up_split`). Kept apart from the host code
(`argus.kernels.moe`): this module holds DSL kernels only."""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.kernels.grouped import GLU_ACTIVATIONS, glu_gate
from argus.lang.errors import DSLError


def _rows_shape(SPLITS: int = 1) -> tuple[Any, ...]:  # noqa: N803 - a kernel parameter
    """`moe_combine`'s Y: the routed rows (R, H), or split along K (SPLITS > 1) their f32 slices (SPLITS, R, H)."""
    return (SPLITS, "R", "H") if SPLITS > 1 else ("R", "H")


@argus.kernel(policies={"tile_shape": ("BH",)})
def moe_combine(
    Y: T.Tensor[_rows_shape, "IN"],
    POS: T.Tensor[("R",), T.i32],
    Z: T.Tensor[("TOKENS", "H"), "OUT"],
    TOPK: int = 2,
    BH: int = 1024,
    VEC: int = 8,
    IN: str = "bf16",
    OUT: str = "bf16",
    SPLITS: int = 1,
):
    """Z[t] = sum over j < TOPK of Y[POS[t * TOPK + j]], accumulated in f32 in the order j = 0, 1, ... (the same
    every run: no atomics), rounded once to OUT.

    Y (R, H): the routed rows in expert order, as the down-projection wrote them (already weighted: the router
    weights are applied in the up-projection's epilogue, the down-projection being linear). POS (R,): the routing's
    positions, R = TOKENS * TOPK, routed row (t, j) (token t's j-th choice) at row POS[t * TOPK + j] of Y: the
    inverse of the permutation that sorted the choices by expert (`argus.kernels.moe.Routing.positions`). A block
    sums one token's rows over BH columns, VEC consecutive values a thread (16-byte loads of bf16 rows at VEC 8).

    The tag assertion is the combine's invariant: what is added for choice j is row POS[t * TOPK + j] of Y, at the
    block's columns; with the output written once per token (the verifier's own check), each token's k rows are
    added exactly once (a token's row added twice, or another token's, is a violated assertion with the thread,
    the choice and the positions that show it).

    SPLITS > 1: Y (SPLITS, R, H) holds the down-projection's split-K partial products
    (`argus.kernels.grouped.grouped_gemm_persistent` with SPLITS), and what is added for choice j is the sum of its
    row's SPLITS slices, in the order s = 0, 1, ... (the tag assertion names the slice too)."""
    if not isinstance(TOPK, int) or TOPK < 1:
        raise DSLError("DSL_BAD_PARAM", f"TOPK must be a positive number of choices per token, not {TOPK!r}")
    if not isinstance(SPLITS, int) or SPLITS < 1:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS must be a positive number of K slices, not {SPLITS!r}")
    if BH % VEC or BH // VEC < 32 or BH // VEC > 1024:
        raise DSLError("DSL_BAD_PARAM", f"BH = {BH} columns must be VEC = {VEC} values for each of 32 to 1024 threads")
    T.assume(f"R == {TOPK} * TOKENS")
    T.assume(f"H % {VEC} == 0")  # rows in whole vectors
    T.assume_values(POS, lo=0, hi="R - 1")  # rows of Y (a permutation: each row one choice)
    with T.grid(TOKENS, T.cdiv(H, BH), threads=BH // VEC) as (t, bh):
        acc = None
        for j in range(TOPK):  # unrolled at trace time: TOPK is a constant
            with T.let(POS[t * TOPK + j], f"row{j}") as row:
                for s in range(SPLITS):  # unrolled at trace time: SPLITS is a constant
                    part = T.alloc_fragment((1, BH), Y.dtype)
                    if SPLITS == 1:
                        T.copy(Y.tile((row, bh), (1, BH)), part)
                        # invariant: what is added for token t's choice j is row POS[t * TOPK + j] of Y, this block's
                        # columns
                        T.assert_tag(lambda y, j=j: (y[0] == POS[t * TOPK + j]) & (y[1] // BH == bh), part)
                    else:
                        T.copy(Y.tile((s, row, bh), (None, 1, BH)), part)
                        # invariant: what is added for token t's choice j is slice s of row POS[t * TOPK + j]
                        T.assert_tag(
                            lambda y, j=j, s=s: (y[0] == s) & (y[1] == POS[t * TOPK + j]) & (y[2] // BH == bh), part
                        )
                    value = T.cast(part, T.f32)
                    acc = value if acc is None else acc + value
        T.copy(acc, Z.tile((t, bh), (1, BH)))


__all__ = ["moe_combine"]


def glu_slices_shape(SPLITS: int = 1) -> tuple[Any, ...]:  # noqa: N803 - a kernel parameter
    """`moe_glu_sum`'s Y: the gate-and-up product's f32 slices (SPLITS, R, 2 * I) seen as (SPLITS, R, 2, I): half 0
    the gate columns, half 1 the up columns."""
    return (SPLITS, "R", 2, "I")


@argus.kernel(policies={"tile_shape": ("BI",)})
def moe_glu_sum(
    Y: T.Tensor[glu_slices_shape, T.f32],
    SCALE: T.Tensor[("R",), T.f32],
    H: T.Tensor[("R", "I"), "OUT"],
    SPLITS: int = 2,
    BI: int = 512,
    VEC: int = 4,
    ACT: str = "silu",
    OUT: str = "bf16",
):
    """H[r, c] = SCALE[r] * act(sum over s of Y[s, r, 0, c]) * (sum over s of Y[s, r, 1, c]), the slices added in
    the order s = 0, 1, ... in f32 (the same every run), rounded once to OUT.

    Y (SPLITS, R, 2, I): the MoE up-projection's gate-and-up product (routed rows times each expert's (H, 2I)
    weight, gate columns then up columns) split along K into f32 slices, as the plain grouped kernel writes them
    (`argus.kernels.grouped.grouped_gemm_persistent` with SPLITS; its (SPLITS, R, 2I) workspace viewed with the
    halves apart); SCALE (R,): each routed row's router weight (the down-projection is linear: weighting its input
    weights its output, as `grouped_gemm_swiglu`'s epilogue does); act the gate's activation (`ACT`, SwiGLU's silu
    or GeGLU's gelu and gelu_tanh: `argus.kernels.grouped.glu_gate`, the fused epilogue's own). A block takes one
    routed row's BI columns, VEC consecutive values a thread (16-byte loads at VEC 4).

    The tag assertions are the reduction's invariant: what is added into the gate of column c of row r is slice s's
    gate column c of row r, and into its up the same slice's up column c (a slice read twice, another row's slice,
    or the up half taken for the gate is a violated assertion)."""
    if not isinstance(SPLITS, int) or SPLITS < 1:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS must be a positive number of K slices, not {SPLITS!r}")
    if ACT not in GLU_ACTIVATIONS:
        raise DSLError("DSL_BAD_PARAM", f"ACT={ACT!r}: the gate's activation is one of {', '.join(GLU_ACTIVATIONS)}")
    if BI % VEC or BI // VEC < 32 or BI // VEC > 1024:
        raise DSLError("DSL_BAD_PARAM", f"BI = {BI} columns must be VEC = {VEC} values for each of 32 to 1024 threads")
    T.assume(f"I % {VEC} == 0")  # rows in whole vectors
    with T.grid(R, T.cdiv(I, BI), threads=BI // VEC) as (r, bi):
        sums = []
        for half in (0, 1):  # the gate, then the up columns
            acc = None
            for s in range(SPLITS):  # unrolled at trace time: SPLITS is a constant
                part = T.alloc_fragment((1, BI), T.f32)
                T.copy(Y.tile((s, r, half, bi), (None, 1, None, BI)), part)
                # invariant: what is added into this half of row r is slice s's same half of row r, these columns
                T.assert_tag(
                    lambda y, s=s, half=half: (y[0] == s) & (y[1] == r) & (y[2] == half) & (y[3] // BI == bi), part
                )
                acc = part if acc is None else acc + part
            sums.append(acc)
        gate, up = sums
        T.copy(glu_gate(gate, ACT) * up * SCALE[r], H.tile((r, bi), (1, BI)))
