"""Decoding attention over a paged KV cache (issue #22): the keys and values of each sequence lie in fixed-size pages
of a shared pool, in the order a block table lists them, as vLLM and SGLang keep their caches.

KC (PAGES, PAGE, HK, D) and VC (PAGES, PAGE, HK, DV) are the pools: page p holds PAGE consecutive tokens of some
sequence, every key/value head. Sequence b's token t lies in page ``TABLE[b, t // PAGE]`` at row ``t % PAGE``, and
the sequence has ``LENS[b]`` tokens. Q (B, HK, ROWS, D) is the query, the GROUP query heads of each key/value head
packed as ROWS = GROUP rows of one tile (a free view of a (B, H, D) decode query with H = HK * GROUP): each K/V tile
is read once for the group.

`flash_attention_paged` is `argus.kernels.attention.flash_attention`'s decode path (a TMA producer warpgroup, one
consumer warpgroup over 64 packed rows, the online softmax with exp2, P in registers) with the key tiles read
through the table: key tile t (BN tokens) is a TMA box at row ``(t % (PAGE / BN)) * BN`` of page
``TABLE[b, t // (PAGE / BN)]`` (PAGE a multiple of BN: one box per 64-column panel, no tile straddles two pages);
with pages of 16 or 32 tokens (`SMALL_PAGES`, vLLM's default 16) a 64-key tile is BN / PAGE pages, rows
``q * PAGE ..`` of the stage a box from page ``TABLE[b, t * (BN / PAGE) + q]`` each.
With SPLITS > 1 the sequence's key tiles are split SPLITS ways (flash-decoding) and each block writes its share's
partial result and log-sum-exp (P = SPLITS, f32) for `argus.kernels.attention.attention_combine`. Keys past
``LENS[b]`` (the rest of the last page) are masked, declared with `T.exclude` so that the verifier proves it for
every content of LENS and TABLE the declarations allow. With a sliding WINDOW = W the query sees the sequence's last
W tokens only: the block starts at the key tile of token ``LENS[b] - W`` (its splits share the tiles from there),
the tokens before it in that tile masked and declared the same way.
"""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.kernels.attention import (
    LOG2E,
    PANEL,
    check_head_dims,
    check_reducers,
    merge_share,
    score_operands,
    tile_width,
    value_columns,
)
from argus.kernels.attention_varlen import softmax_result, softmax_step
from argus.lang.errors import DSLError

#: Page sizes below a key tile the kernel takes (several pages a tile, each its own TMA boxes): vLLM's default 16 and
#: 32; a multiple of the tile otherwise.
SMALL_PAGES = (16, 32)


def o_shape(DV: int, SPLITS: int) -> tuple[Any, ...]:  # noqa: N803 - named after the kernel parameters
    """O's global shape: Q's with the value head dim; one partial result per split with SPLITS > 1."""
    return ("P", "B", "HK", "ROWS", DV) if SPLITS > 1 else ("B", "HK", "ROWS", DV)


def lse_shape(SPLITS: int) -> tuple[Any, ...]:  # noqa: N803
    return ("P", "B", "HK", "ROWS") if SPLITS > 1 else ("B", "HK", "ROWS")


@T.macro
def load_page_tile(cache: Any, page: Any, row: Any, kvh: Any, rows: int, width: int, dst: T.Tile, bar: Any) -> None:
    """TMA-load `rows` tokens from row `row` of page `page` of head `kvh` of a (pages, page size, heads, dim) pool
    (all `width` columns) into `dst`, one box per 64-column panel."""
    for c in range(width // PANEL):
        T.copy(
            cache.window((page, row, kvh, PANEL * c), (None, rows, None, PANEL)),
            dst.window((0, PANEL * c), (rows, PANEL)),
            atom="tma",
            mbarrier=bar,
        )


@argus.kernel(policies={"tile_shape": ("BN",), "stages": "STAGES"})
def flash_attention_paged(
    Q: T.Tensor[lambda D: ("B", "HK", "ROWS", D), "IN"],
    KC: T.Tensor[lambda D: ("PAGES", "PAGE", "HK", D), "IN"],
    VC: T.Tensor[lambda DV: ("PAGES", "PAGE", "HK", DV), "IN"],
    TABLE: T.Tensor[("B", "MAXP"), T.i32],
    LENS: T.Tensor[("B",), T.i32],
    O: T.Tensor[o_shape, "OUT"],
    LSE: T.Tensor[lse_shape, T.f32],
    D: int = 128,
    DV: int = 128,
    BN: int = 128,
    PAGE_SIZE: int = 128,
    STAGES: int = 2,
    SPLITS: int = 1,
    WINDOW: int = 0,
    SCALE: float = 0.0,
    IN: str = "bf16",
    OUT: str = "bf16",
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
):
    """O = softmax(Q K^T * SCALE) V of each sequence's packed query rows against its cached keys (module docstring),
    for ROWS <= 64 query rows per key/value head. SCALE 0 means 1/sqrt(D). WINDOW = W > 0 is a sliding window: the
    query (the sequence's last token) sees only its last W tokens, ``LENS[b] - W .. LENS[b]``, and the block reads
    only the key tiles they lie in."""
    paged_body(
        Q, KC, VC, TABLE, LENS, O, LSE, D=D, DV=DV, BN=BN, PAGE_SIZE=PAGE_SIZE, STAGES=STAGES, SPLITS=SPLITS,
        WINDOW=WINDOW, SCALE=SCALE, PRODUCER_REGS=PRODUCER_REGS, CONSUMER_REGS=CONSUMER_REGS,
    )  # fmt: skip


@argus.kernel(policies={"tile_shape": ("BN",), "stages": "STAGES"})
def flash_attention_paged_combined(
    Q: T.Tensor[lambda D: ("B", "HK", "ROWS", D), "IN"],
    KC: T.Tensor[lambda D: ("PAGES", "PAGE", "HK", D), "IN"],
    VC: T.Tensor[lambda DV: ("PAGES", "PAGE", "HK", DV), "IN"],
    TABLE: T.Tensor[("B", "MAXP"), T.i32],
    LENS: T.Tensor[("B",), T.i32],
    OP: T.Tensor[lambda DV: ("P", "B", "HK", "ROWS", DV), T.f32],
    LP: T.Tensor[("P", "B", "HK", "ROWS"), T.f32],
    O: T.Tensor[lambda DV: ("B", "HK", "ROWS", DV), "OUT"],
    LSE: T.Tensor[("B", "HK", "ROWS"), T.f32],
    F: T.Tensor[("NF",), T.i32],
    D: int = 128,
    DV: int = 128,
    BN: int = 128,
    PAGE_SIZE: int = 128,
    STAGES: int = 2,
    SPLITS: int = 2,
    WINDOW: int = 0,
    SCALE: float = 0.0,
    IN: str = "bf16",
    OUT: str = "bf16",
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
    WAVE: int = SMS,
    REDUCERS: int = 0,
):
    """Split-key paged decoding in one launch, as `argus.kernels.attention.flash_attention_combined` is for
    `flash_attention`: each split block writes its share's partial result and log-sum-exp into OP and LP, then the
    SPLITS blocks of one (sequence, key/value head) meet at a group barrier on counter ``F[b * HK + kvh]``
    (`T.group_barrier`, rank ``split``) and the first REDUCERS of them each merge 64 / REDUCERS of its packed rows
    over every split into O and LSE (`attention.merge_rows`). REDUCERS 0 takes `attention.merge_reducers`.

    The blocks of a unit wait for each other, so they must run at once: the kernel assumes the grid fits WAVE
    blocks (one per SM; `sdpa_paged.prepare` checks the device's SMs) and a counter per unit. F holds zeros when
    first used and is left at the barriers' next generation: a relaunch needs no reset."""
    if not isinstance(SPLITS, int) or SPLITS < 2:
        raise DSLError("DSL_BAD_PARAM", f"flash_attention_paged_combined splits the keys at least two ways (SPLITS = "
                                        f"{SPLITS!r})")  # fmt: skip
    # the packed rows' 64-row tile (`paged_body`)
    reducers = check_reducers("flash_attention_paged_combined", REDUCERS, 64, SPLITS, DV, WARPGROUP_SIZE)
    # one wave: the blocks of a unit wait for each other (each factor bounded on its own too: a product of unbounded
    # sizes could wrap around in the index width)
    T.assume(f"B <= {WAVE}")
    T.assume(f"HK <= {WAVE}")
    T.assume(f"B * HK * {SPLITS} <= {WAVE}")
    T.assume("NF >= B * HK")  # a counter per unit
    paged_body(
        Q, KC, VC, TABLE, LENS, OP, LP, D=D, DV=DV, BN=BN, PAGE_SIZE=PAGE_SIZE, STAGES=STAGES, SPLITS=SPLITS,
        WINDOW=WINDOW, SCALE=SCALE, PRODUCER_REGS=PRODUCER_REGS, CONSUMER_REGS=CONSUMER_REGS,
        combined=(O, LSE, F, reducers),
    )  # fmt: skip


def paged_body(
    Q: Any,
    KC: Any,
    VC: Any,
    TABLE: Any,
    LENS: Any,
    O: Any,
    LSE: Any,
    *,
    D: int,
    DV: int,
    BN: int,
    PAGE_SIZE: int,
    STAGES: int,
    SPLITS: int,
    WINDOW: int,
    SCALE: float,
    PRODUCER_REGS: int,
    CONSUMER_REGS: int,
    combined: tuple[Any, Any, Any, int] | None = None,
) -> None:  # noqa: N803 - the kernels' parameter names
    """`flash_attention_paged`'s statements (O and LSE the partial results with SPLITS > 1); with `combined` = (the
    merged O, its LSE, the counters, REDUCERS), `flash_attention_paged_combined`'s merge after them."""
    B, HK, ROWS, _ = Q.shape  # noqa: N806 - the kernel's shape symbols
    _, MAXP = TABLE.shape  # noqa: N806
    BM = 64  # noqa: N806 - one consumer warpgroup: a decode's packed rows fit one 64-row tile
    check_head_dims(D, DV)
    DT, DVT = tile_width(D), tile_width(DV)  # noqa: N806 - the head dims' widths in shared memory
    if BN % PANEL or (PAGE_SIZE % BN and (PAGE_SIZE not in SMALL_PAGES or BN % PAGE_SIZE)):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"PAGE_SIZE={PAGE_SIZE} a multiple of BN={BN}, a multiple of {PANEL}: a key tile in one page (or "
            f"pages of {' or '.join(map(str, SMALL_PAGES))} tokens, several a key tile)",
        )
    if SPLITS > 1 and O.dtype != T.f32:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS={SPLITS} writes f32 partial results, not OUT={O.dtype.name!r}")
    if not isinstance(WINDOW, int) or isinstance(WINDOW, bool) or WINDOW < 0:
        raise DSLError("DSL_BAD_PARAM", f"WINDOW={WINDOW!r}: 0, or the number of last tokens the query sees")
    T.assume(f"PAGE == {PAGE_SIZE}")
    T.assume(f"ROWS <= {BM}")
    if SPLITS > 1:
        T.assume(f"P == {SPLITS}")
    PAGES = KC.shape[0]  # noqa: N806
    T.assume_values(LENS, lo=0, hi=MAXP * PAGE_SIZE)
    T.assume_values(TABLE, lo=0, hi=PAGES - 1)  # every entry a page of the pool (unused ones too: 0, say)
    per_page = PAGE_SIZE // BN  # key tiles per page (0: pages smaller than a tile)
    pages_per_tile = BN // PAGE_SIZE if PAGE_SIZE < BN else 1
    scale = SCALE if SCALE else 1.0 / D**0.5
    scale_log2, sign = LOG2E * abs(scale), (1.0 if scale > 0 else -1.0)
    extents = (B, HK, SPLITS) if SPLITS > 1 else (B, HK)
    with T.grid(*extents, threads=2 * WARPGROUP_SIZE) as blocks:
        b, kvh = blocks[0], blocks[1]
        split = blocks[2] if SPLITS > 1 else 0
        sQ = T.alloc_shared((BM, DT), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, DT), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, DVT), Q.dtype, swizzle=128, panels=True)
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)

        def tiles_of(lk: Any) -> tuple[Any, Any]:
            """(the block's first key tile, how many it reads) of a sequence of `lk` tokens: all of them (under a
            WINDOW those from the tile of its first token the query sees), or with SPLITS > 1 the split's share."""
            n_tiles = T.cdiv(lk, BN)
            start = 0
            if WINDOW:
                start = T.maximum(lk - WINDOW, 0) // BN
                n_tiles = n_tiles - start
            if SPLITS == 1:
                return start, n_tiles
            share = T.cdiv(n_tiles, SPLITS)
            first = start + split * share if WINDOW else split * share
            return first, T.maximum(T.minimum(share, n_tiles - split * share), 0)

        def page_of(t: Any) -> Any:
            """The page of key tile `t` (its table entry clamped inside the table: a tile past the sequence is never
            loaded, the clamp only keeps every read of TABLE inside it)."""
            return TABLE[b, T.minimum(t // per_page, MAXP - 1)]

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS), T.let(LENS[b], "lk") as lk:
            first, n_tiles = tiles_of(lk)
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * DT * Q.dtype.itemsize)
            for c in range(DT // PANEL):
                T.copy(Q.window((b, kvh, 0, PANEL * c), (None, None, BM, PANEL)),
                       sQ.window((0, PANEL * c), (BM, PANEL)), atom="tma", mbarrier=q_ready[0])  # fmt: skip
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=BN * (DT + DVT) * Q.dtype.itemsize)
                t = first + j
                if per_page:
                    load_page_tile(KC, page_of(t), (t % per_page) * BN, kvh, BN, DT, sK[s], full[s])
                    load_page_tile(VC, page_of(t), (t % per_page) * BN, kvh, BN, DVT, sV[s], full[s])
                else:  # small pages: each of the tile's pages its own boxes, at its rows of the stage
                    for q in range(pages_per_tile):
                        page = TABLE[b, T.minimum(t * pages_per_tile + q, MAXP - 1)]
                        rows = (q * PAGE_SIZE, PAGE_SIZE)
                        load_page_tile(
                            KC, page, 0, kvh, PAGE_SIZE, DT, sK[s].window((rows[0], 0), (rows[1], DT)), full[s]
                        )
                        load_page_tile(
                            VC, page, 0, kvh, PAGE_SIZE, DVT, sV[s].window((rows[0], 0), (rows[1], DVT)), full[s]
                        )
        with T.role("consumer", warpgroups=(1,), registers=CONSUMER_REGS), T.let(LENS[b], "lk") as lk:
            first, n_tiles = tiles_of(lk)
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))
            pv = T.wgmma_atom(DV, Q.dtype, a_source="registers")
            o = T.alloc_fragment((BM, DV), T.f32, mma=pv)
            m = T.alloc_reduced(scores, axis=1)
            l = T.alloc_reduced(scores, axis=1)
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                t = first + j
                # invariant: the stages hold key tile t of this sequence: the rows of its page (as the table lists
                # it for this sequence) at the tile's offset, of this key/value head
                if per_page:
                    T.assert_tag(lambda x: (x[0] == TABLE[b, T.minimum(t // per_page, MAXP - 1)])
                                 & (x[1] // BN == t % per_page) & (x[2] == kvh), sK[s])  # fmt: skip
                    T.assert_tag(lambda x: (x[0] == TABLE[b, T.minimum(t // per_page, MAXP - 1)])
                                 & (x[1] // BN == t % per_page) & (x[2] == kvh), sV[s])  # fmt: skip
                else:  # small pages: row r of the stage is row r % PAGE of the tile's page r // PAGE
                    T.assert_tag(lambda x: (x[0] == TABLE[b, T.minimum(t * pages_per_tile + x.coord[0] // PAGE_SIZE,
                                                                       MAXP - 1)])
                                 & (x[1] == x.coord[0] % PAGE_SIZE) & (x[2] == kvh), sK[s])  # fmt: skip
                    T.assert_tag(lambda x: (x[0] == TABLE[b, T.minimum(t * pages_per_tile + x.coord[0] // PAGE_SIZE,
                                                                       MAXP - 1)])
                                 & (x[1] == x.coord[0] % PAGE_SIZE) & (x[2] == kvh), sV[s])  # fmt: skip
                T.fill(scores, 0.0)
                T.gemm(*score_operands(sQ, sK[s], D, Q.dtype), scores)  # S = Q K^T
                # invariant: the tokens of the last page past the sequence's length do not contribute; nor, with a
                # WINDOW, a token WINDOW or more behind the query, the sequence's last (declared before anything is
                # computed from S)
                T.exclude(scores, lambda r, c: c >= lk - t * BN)
                if WINDOW:
                    T.exclude(scores, lambda r, c: c < lk - WINDOW - t * BN)
                raw = scores if sign > 0 else -scores
                x = T.where(T.index(scores, 1, T.i32) < lk - t * BN, raw, float("-inf"))
                if WINDOW:
                    x = T.where(T.index(scores, 1, T.i32) >= lk - WINDOW - t * BN, x, float("-inf"))
                p = softmax_step(x, m, l, o, scale_log2)
                pa = T.alloc_fragment((BM, BN), Q.dtype, mma=pv, operand="A")
                T.copy(p, pa)
                T.gemm(pa, value_columns(sV[s], DV), o)  # O += P V
                T.mbarrier_arrive(empty[s], per_warpgroup=True)
            inv, lse = softmax_result(m, l, scale_log2)
            if SPLITS > 1:
                T.copy(o * inv[:, None], O.tile((split, b, kvh, 0, 0), (None, None, None, BM, DV)))
                T.copy(lse, LSE.tile((split, b, kvh, 0), (None, None, None, BM)))
                if combined is not None:  # the unit's SPLITS blocks meet, then the first REDUCERS merge its rows
                    out, lse_out, counters, reducers = combined
                    T.group_barrier(counters, b * HK + kvh, split, SPLITS)
                    merge_share(O, LSE, out, lse_out, (b, kvh), 0, split, BM, reducers, DV, SPLITS)
            else:
                T.copy(o * inv[:, None], O.tile((b, kvh, 0, 0), (None, None, BM, DV)))
                T.copy(lse, LSE.tile((b, kvh, 0), (None, None, BM)))


__all__ = ["flash_attention_paged", "flash_attention_paged_combined", "paged_body"]
