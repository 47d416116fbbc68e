"""A MoE routing's sort by expert as two DSL kernels (issue #23, the decode path): what `argus.kernels.moe.route`
does after the top-k with a stable `argsort`, a scatter-add of the counts, their cumulative sum and three gathers
(about a dozen launches, most of a small decode step's routing), in two launches and without a scatter store.

The choices of T tokens are the R = T * k expert ids CHOICE[i] (i = t * k + j: token t's j-th choice). Sorted by
expert, stably (within an expert in i order), choice i lands at routed row

    POS[i] = #{i' : CHOICE[i'] < CHOICE[i]} + #{i' < i : CHOICE[i'] == CHOICE[i]},

and expert e owns rows OFFS[e] - COUNTS[e] .. OFFS[e] with OFFS[e] = #{i' : CHOICE[i'] <= e}, COUNTS[e] =
#{i' : CHOICE[i'] == e}: each a count of comparisons (`moe_route_rank`, an (rows, choices) tile of them a step,
summed along the rows). Before them `moe_route_topk` takes each token's top k logits and their own softmax (a
softmax routing that renormalizes: Mixtral, Qwen3) in one launch, where PyTorch takes a top-k, a softmax and a cast.
The sorted arrays are then gathers through the inverse permutation, which is again a count:
ORDER[r] = the i with POS[i] == r, so ORDER[r] = sum over i of i * [POS[i] == r], and the routed row's weight and
token likewise (`moe_route_sorted`, which also makes the grouped kernels' row-tile counts from COUNTS). Both take
O(R^2) comparisons: for a decode step's few hundred choices a few microseconds' work on a few blocks, where a sort
would take several launches; `argus.kernels.moe.ROUTE_KERNEL_ROWS` bounds where the layer takes them. Kept apart
from the host code (`argus.kernels.moe`): this module holds DSL kernels only."""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.lang.errors import DSLError

#: What a padded choice reads as past the end of CHOICE: above every expert id (it is neither below nor equal to a
#: real choice, nor at most any expert).
PAST = 1 << 30


def one_warp_a_row(TOPK: int, BT: int, BE: int) -> None:  # noqa: N803 - the kernels' parameters
    """The top-k kernels' rows (`moe_route_topk`, `moe_route_select`): TOPK choices of E <= BE experts a token, one
    warp a row of BE (a power of two, 32 to 512), BT rows a block of 128 threads; refused otherwise
    (``DSL_BAD_PARAM``), declared to the verifier (K == TOPK, TOPK <= E <= BE, E a multiple of 4: rows of whole
    16-byte vectors)."""
    if not isinstance(TOPK, int) or not 1 <= TOPK <= BE:
        raise DSLError("DSL_BAD_PARAM", f"TOPK = {TOPK!r} choices of at most BE = {BE} experts")
    if BE not in (32, 64, 128, 256, 512) or BT * BE != max(512, 4 * BE):
        raise DSLError("DSL_BAD_PARAM", f"BE = {BE} experts a row (32 to 512, a power of two) and BT = {BT} tokens: "
                                        f"BT * BE = {max(512, 4 * BE)} (one warp a row)")  # fmt: skip
    T.assume(f"K == {TOPK}")
    T.assume(f"E <= {BE}")
    T.assume(f"E >= {TOPK}")
    T.assume("E % 4 == 0")  # rows of whole 16-byte vectors (8, 64, 128, 256 experts)


@argus.kernel(policies={"tile_shape": ("BT",)})
def moe_route_topk(
    LOGITS: T.Tensor[("TOKENS", "E"), T.f32],
    CHOICE: T.Tensor[("TOKENS", "K"), T.i32],
    WIN: T.Tensor[("TOKENS", "K"), T.f32],
    TOPK: int = 2,
    BT: int = 4,
    BE: int = 128,
):
    """A softmax routing's top-k that renormalizes, as `argus.kernels.moe.route` computes it: each token's TOPK
    largest logits (CHOICE[t, j]: the j-th largest, the lowest expert id among equal logits) and their own softmax
    (WIN[t, j] = exp(l_j - l_0) / sum over i of exp(l_i - l_0): the top-k of the softmax over every expert,
    renormalized). Block b takes tokens b * BT .., one warp a token over BE >= E experts; TOPK rounds of a row maximum,
    its first expert, and that expert masked."""
    one_warp_a_row(TOPK, BT, BE)
    with T.grid(T.cdiv(TOKENS, BT), threads=128) as (bt,):
        x = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # a row in one warp
        T.copy(LOGITS.tile((bt, 0), (BT, BE)), x)
        expert = T.index(x, 1, T.i32)
        left = T.where(expert < E, x, float("-inf"))  # the experts not chosen yet (none past E)
        chosen = T.alloc_fragment((BT, BE), T.i32, vector_bytes=max(16, BE // 8))  # column j: the j-th choice
        tops = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # column j: its logit
        T.fill(chosen, 0)
        T.fill(tops, float("-inf"))
        for j in range(TOPK):  # unrolled at trace time: TOPK is a constant
            top = T.reduce_max(left, axis=1)
            hit = T.where(expert < E, T.eq(left, top[:, None]), 0.0)
            # the lowest expert holding the maximum (a row of NaN logits holds none: expert E - 1, its weight NaN, as
            # PyTorch's NaN propagates, never an expert id past the last)
            first = T.minimum(-T.reduce_max(T.where(hit, -expert, -BE), axis=1), E - 1)
            T.copy(T.where(T.eq(expert, j), first[:, None], chosen), chosen)
            T.copy(T.where(T.eq(expert, j), top[:, None], tops), tops)
            T.copy(T.where(T.eq(expert, first[:, None]), float("-inf"), left), left)
        T.copy(chosen, CHOICE.tile((bt, 0), (BT, BE)))  # the first TOPK columns (the tensor's)
        # the softmax of the k logits: columns past TOPK are -inf, exp gives them 0
        m = T.reduce_max(tops, axis=1)  # the largest: column 0
        p = T.exp(tops - m[:, None])
        T.copy(p * T.rcp(T.reduce_sum(p, axis=1))[:, None], WIN.tile((bt, 0), (BT, BE)))


@argus.kernel(policies={"tile_shape": ("BI", "BJ")})
def moe_route_rank(
    CHOICE: T.Tensor[("R",), T.i32],
    POS: T.Tensor[("R",), T.i32],
    OFFS: T.Tensor[("E",), T.i32],
    COUNTS: T.Tensor[("E",), T.i32],
    BI: int = 32,
    BJ: int = 128,
):
    """POS (R,): each choice's routed row in the stable sort by expert; OFFS (E,): each expert's cumulative row end;
    COUNTS (E,): its rows (module docstring). Block b computes POS for choices b * BI .. and OFFS, COUNTS for experts
    b * BI .. (the grid covers the larger of R and E), streaming every choice in tiles of BJ."""
    if BI % 4 or BJ % 32 or BI * BJ > 128 * 64:
        raise DSLError("DSL_BAD_PARAM", f"BI = {BI} rows (a multiple of 4) by BJ = {BJ} choices (of 32), at most 64 a "
                                        "thread of 128")  # fmt: skip
    T.assume_values(CHOICE, lo=0, hi="E - 1")
    with T.grid(T.cdiv(T.maximum(R, E), BI), threads=128) as (bi,):
        x = T.alloc_fragment((BI, BJ), T.i32)
        row = T.index(x, 0, T.i32) + bi * BI  # this block's choice i (for POS) and expert e (for OFFS, COUNTS)
        mine = T.alloc_reduced(x, axis=1)
        T.copy(CHOICE.tile(bi, BI), mine, pad=PAST)
        rank = T.alloc_reduced(x, axis=1)
        ends = T.alloc_reduced(x, axis=1)
        counts = T.alloc_reduced(x, axis=1)
        T.fill(rank, 0)
        T.fill(ends, 0)
        T.fill(counts, 0)
        for jt in T.serial(T.cdiv(R, BJ)):
            theirs = T.alloc_reduced(x, axis=0)
            T.copy(CHOICE.tile(jt, BJ), theirs, pad=PAST)
            other = row * 0 + theirs[None, :]  # choice i' = jt * BJ + column's expert, along every row
            col = T.index(x, 1, T.i32) + jt * BJ  # i'
            real = col < R  # past the last choice: no term (the masks keep the padding out of every sum)
            before = (other < mine[:, None]) | (T.eq(other, mine[:, None]) & (col < row))
            T.copy(rank + T.reduce_sum(T.where(real, before, 0), axis=1), rank)
            T.copy(ends + T.reduce_sum(T.where(real, other <= row, 0), axis=1), ends)
            T.copy(counts + T.reduce_sum(T.where(real, T.eq(other, row), 0), axis=1), counts)
        T.copy(rank, POS.tile(bi, BI))
        T.copy(ends, OFFS.tile(bi, BI))
        T.copy(counts, COUNTS.tile(bi, BI))


@argus.kernel(policies={"tile_shape": ("BR", "BI")})
def moe_route_sorted(
    POS: T.Tensor[("R",), T.i32],
    WIN: T.Tensor[("R",), T.f32],
    COUNTS: T.Tensor[("E",), T.i32],
    ORDER: T.Tensor[("R",), T.i32],
    TOKEN: T.Tensor[("R",), T.i32],
    WEIGHT: T.Tensor[("R",), T.f32],
    TILES: T.Tensor[("E",), T.i32],
    TOPK: int = 2,
    BM: int = 64,
    BR: int = 32,
    BI: int = 128,
):
    """The routed rows in expert order from `moe_route_rank`'s POS: ORDER[r] = the choice i with POS[i] == r,
    TOKEN[r] = ORDER[r] // TOPK (its token), WEIGHT[r] = WIN[ORDER[r]] (its router weight, WIN in choice order); and
    the grouped kernels' row-tile counts for tiles of BM rows from its COUNTS, TILES[e] = sum over e' <= e of
    cdiv(COUNTS[e'], BM) (`argus.kernels.moe.tile_counts`). Block b takes routed rows and experts b * BR .. (the
    grid covers the larger of R and E), streaming POS and WIN, and COUNTS, in tiles of BI; POS a permutation of
    0 .. R - 1, each row's sums take exactly one term."""
    if not isinstance(TOPK, int) or TOPK < 1 or not isinstance(BM, int) or BM < 1:
        raise DSLError("DSL_BAD_PARAM", f"TOPK = {TOPK!r} choices a token and BM = {BM!r} rows a tile: positive")
    if BR % 4 or BI % 32 or BR * BI > 128 * 64:
        raise DSLError("DSL_BAD_PARAM", f"BR = {BR} rows (a multiple of 4) by BI = {BI} choices (of 32), at most 64 "
                                        "a thread of 128")  # fmt: skip
    T.assume(f"R % {TOPK} == 0")
    T.assume_values(COUNTS, lo=0, hi="R")
    with T.grid(T.cdiv(T.maximum(R, E), BR), threads=128) as (br,):
        x = T.alloc_fragment((BR, BI), T.i32)
        row = T.index(x, 0, T.i32) + br * BR  # routed row r (and expert e, for TILES)
        order = T.alloc_reduced(x, axis=1)
        weight = T.alloc_reduced(x, axis=1, dtype=T.f32)
        tiles = T.alloc_reduced(x, axis=1)
        T.fill(order, 0)
        T.fill(weight, 0.0)
        T.fill(tiles, 0)
        for it in T.serial(T.cdiv(R, BI)):
            pos = T.alloc_reduced(x, axis=0)
            win = T.alloc_reduced(x, axis=0, dtype=T.f32)
            T.copy(POS.tile(it, BI), pos, pad=-1)
            T.copy(WIN.tile(it, BI), win, pad=0.0)
            col = T.index(x, 1, T.i32) + it * BI  # choice i
            hit = T.where(col < R, T.eq(row * 0 + pos[None, :], row), 0)  # choice i lands at row r (no padding)
            T.copy(order + T.reduce_sum(hit * col, axis=1), order)
            T.copy(weight + T.reduce_sum(T.where(hit, win[None, :], 0.0), axis=1), weight)
        for et in T.serial(T.cdiv(E, BI)):
            counts = T.alloc_reduced(x, axis=0)
            T.copy(COUNTS.tile(et, BI), counts, pad=0)
            col = T.index(x, 1, T.i32) + et * BI  # expert e'
            per = (row * 0 + counts[None, :] + (BM - 1)) // BM  # its row tiles
            T.copy(tiles + T.reduce_sum(T.where((col < E) & (col <= row), per, 0), axis=1), tiles)
        T.copy(order, ORDER.tile(br, BR))
        T.copy(order // TOPK, TOKEN.tile(br, BR))
        T.copy(weight, WEIGHT.tile(br, BR))
        T.copy(tiles, TILES.tile(br, BR))


@argus.kernel(policies={"tile_shape": ("BT",)})
def moe_route_select(
    LOGITS: T.Tensor[("TOKENS", "E"), T.f32],
    CORRECTION: T.Tensor[("E",), T.f32],
    CHOICE: T.Tensor[("TOKENS", "K"), T.i32],
    WIN: T.Tensor[("TOKENS", "K"), T.f32],
    TOPK: int = 8,
    BT: int = 4,
    BE: int = 256,
    SCORING: str = "sigmoid",
    GROUPS: int = 1,
    TOP_GROUPS: int = 1,
    RENORMALIZE: bool = True,
    SCALING: float = 1.0,
):
    """Any top-k routing `argus.kernels.moe.route` takes, in one launch: each token's scores (SCORING "softmax" over
    its E logits, or each logit's "sigmoid"); the choice scores, the scores plus CORRECTION[e] (DeepSeek-V3's bias
    for choosing; zeros for none); with GROUPS > 1 the experts split into GROUPS equal groups, each scored by the sum
    of its two best choice scores, and only the TOP_GROUPS best groups' experts chosen from; the TOPK best choice
    scores (CHOICE[t, j]: the j-th best, the lowest expert among equal ones) and as WIN[t, j] their uncorrected
    scores, renormalized to sum 1 (RENORMALIZE), times SCALING. Block b takes tokens b * BT .., one warp a token
    over BE >= E experts, as `moe_route_topk`; every selection a round of a row (or group) maximum, its first
    expert, and that expert masked. A row of NaN logits takes expert E - 1 (a group's, the last group) with NaN
    weights, never an id past the last."""
    if SCORING not in ("softmax", "sigmoid"):
        raise DSLError("DSL_BAD_PARAM", f"SCORING is 'softmax' or 'sigmoid', got {SCORING!r}")
    if not isinstance(GROUPS, int) or GROUPS < 1:
        raise DSLError("DSL_BAD_PARAM", f"GROUPS = {GROUPS!r}: a positive number of groups of experts")
    if not isinstance(TOP_GROUPS, int) or not 1 <= TOP_GROUPS <= GROUPS or 2 * GROUPS > BE:
        raise DSLError("DSL_BAD_PARAM", f"TOP_GROUPS = {TOP_GROUPS!r} of GROUPS = {GROUPS} groups of two experts or "
                                        f"more within BE = {BE}")  # fmt: skip
    one_warp_a_row(TOPK, BT, BE)
    if GROUPS > 1:
        T.assume(f"E % {GROUPS} == 0")
        T.assume(f"E >= {2 * GROUPS}")  # two experts or more a group: its score is the sum of its two best
        T.assume(f"{TOP_GROUPS} * (E // {GROUPS}) >= {TOPK}")  # the chosen groups hold TOPK experts
    inf = float("inf")
    with T.grid(T.cdiv(TOKENS, BT), threads=128) as (bt,):
        x = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # a row in one warp
        T.copy(LOGITS.tile((bt, 0), (BT, BE)), x)
        expert = T.index(x, 1, T.i32)
        real = expert < E
        if SCORING == "softmax":
            top = T.reduce_max(T.where(real, x, -inf), axis=1)
            p = T.where(real, T.exp(x - top[:, None]), 0.0)
            score = p * T.rcp(T.reduce_sum(p, axis=1))[:, None]
        else:
            score = T.where(real, T.sigmoid(x), 0.0)  # past E: no score (the padding never enters a selection)
        bias = T.alloc_reduced(x, axis=0)  # (BE,): every row's correction
        T.copy(CORRECTION.tile(0, BE), bias, pad=0.0)
        pick = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # the choice scores left
        T.copy(T.where(real, score + bias[None, :], -inf), pick)

        def first_of(values: Any, best: Any, last: Any) -> Any:
            """Per row, the lowest column holding `best` in `values` (`last` where none does: a NaN row)."""
            hit = T.where(real, T.eq(values, best[:, None]), 0)
            return T.minimum(-T.reduce_max(T.where(hit, -expert, -BE), axis=1), last)

        if GROUPS > 1:
            size = E // GROUPS
            scores = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # column g: group g's score
            T.fill(scores, -inf)
            for g in range(GROUPS):  # unrolled at trace time: GROUPS is a constant
                inside = T.where((expert >= g * size) & (expert < (g + 1) * size), pick, -inf)
                best = T.reduce_max(inside, axis=1)
                first = first_of(inside, best, E - 1)
                second = T.reduce_max(T.where(T.eq(expert, first[:, None]), -inf, inside), axis=1)
                T.copy(T.where(T.eq(expert, g), (best + second)[:, None], scores), scores)
            allowed = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # the chosen groups' picks
            T.fill(allowed, -inf)
            T.copy(T.where(expert < GROUPS, scores, -inf), scores)
            for _ in range(TOP_GROUPS):
                best = T.reduce_max(scores, axis=1)
                group = first_of(scores, best, GROUPS - 1)
                lo, hi = group * size, group * size + size
                T.copy(T.where((expert >= lo[:, None]) & (expert < hi[:, None]), pick, allowed), allowed)
                T.copy(T.where(T.eq(expert, group[:, None]), -inf, scores), scores)
            T.copy(allowed, pick)
        chosen = T.alloc_fragment((BT, BE), T.i32, vector_bytes=max(16, BE // 8))  # column j: the j-th choice
        weights = T.alloc_fragment((BT, BE), T.f32, vector_bytes=max(16, BE // 8))  # column j: its score
        T.fill(chosen, 0)
        T.fill(weights, 0.0)
        for j in range(TOPK):  # unrolled at trace time: TOPK is a constant
            best = T.reduce_max(pick, axis=1)
            first = first_of(pick, best, E - 1)
            mine = T.eq(expert, first[:, None])
            weight = T.reduce_max(T.where(mine, score, -inf), axis=1)  # the chosen expert's own score
            T.copy(T.where(T.eq(expert, j), first[:, None], chosen), chosen)
            T.copy(T.where(T.eq(expert, j), weight[:, None], weights), weights)
            T.copy(T.where(mine, -inf, pick), pick)
        T.copy(chosen, CHOICE.tile((bt, 0), (BT, BE)))  # the first TOPK columns (the tensor's)
        if RENORMALIZE:  # columns past TOPK hold 0
            T.copy(weights * T.rcp(T.reduce_sum(weights, axis=1))[:, None], weights)
        T.copy(weights * SCALING, WIN.tile((bt, 0), (BT, BE)))


__all__ = ["PAST", "moe_route_rank", "moe_route_select", "moe_route_sorted", "moe_route_topk", "one_warp_a_row"]
