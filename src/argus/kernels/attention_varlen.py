"""Variable-length attention (issue #22): a batch of sequences of different lengths packed end to end, as
FlashAttention's ``varlen`` call takes them. Q (TQ, H, D), K (TK, HK, D), V (TK, HK, DV) and O (TQ, H, DV) hold
every sequence's tokens one after the other; sequence b's queries are rows ``SEQ_Q[b-1] .. SEQ_Q[b]`` (0 for b = 0)
and its keys rows ``SEQ_K[b-1] .. SEQ_K[b]`` (the cumulative ends: FlashAttention's ``cu_seqlens[1:]``). Query i of
sequence b attends to the keys of sequence b only; with CAUSAL, to keys j <= i + lk - lq of it (the mask aligned at
the bottom right of the sequence's own lq x lk scores, as in FlashAttention), and with a sliding WINDOW = W as well,
to the W last of those only (j > i + lk - lq - W). LSE (H, TQ): each row's log-sum-exp.

`flash_attention_varlen` is `argus.kernels.attention.flash_attention`'s loop (a TMA producer warpgroup, CONSUMERS
wgmma consumer warpgroups, the online softmax with exp2, P in registers as the second product's A operand) over a
one-dimensional grid that follows the sequences: block u takes query tile ``u // H`` of all sequences' query tiles,
head ``u % H`` (the heads of one tile are consecutive blocks, so the query heads of one key/value head read its
tiles together, from L2), where ``TILES[b]`` counts the tiles of sequences 0..b (`argus.kernels.moe.tile_counts`,
computed on the device without a host synchronization) and a binary search over TILES finds the tile's sequence:
the grouped GEMM's units (`argus.kernels.grouped.each_unit`) with the heads as the column tiles. The grid holds
``(cdiv(TQ, BM) + B) * H`` blocks, at least the ``H * sum cdiv(lq_b, BM)`` there are; the blocks past them do nothing.

A tile's boxes start at the sequence's first row (TMA boxes start at any element), so they run on into the next
sequence: the keys past the sequence's end are masked out of the softmax (declared with `T.exclude`, so the
verifier proves it for every content of SEQ_K), and the query rows past it are computed and not stored (a window
bounded at the sequence's end). A sequence with no key gets O = 0 and LSE = -inf; one with no query, no block.

What the kernel relies on of its metadata is declared (`T.assume_values`): SEQ_Q and SEQ_K nondecreasing within
0..TQ and 0..TK, TILES nondecreasing within ``0 .. cdiv(TQ, BM) + B``. The interpreter checks the declarations on
every call; `argus.kernels.sdpa_varlen` keeps them by construction.
"""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import WARPGROUP_SIZE
from argus.kernels.attention import LN2, LOG2E, PANEL, check_head_dims, score_operands, tile_width, value_columns
from argus.kernels.grouped import each_unit
from argus.lang.errors import DSLError


@T.macro
def load_rows(tensor: Any, row0: Any, head: Any, rows: int, width: int, dst: T.Tile, bar: Any) -> None:
    """TMA-load rows ``row0 .. row0 + rows`` of head `head` of a (tokens, heads, dim) `tensor` (all `width`
    columns; `row0` any row) into `dst`, one box per 64-column panel."""
    for c in range(width // PANEL):
        T.copy(
            tensor.window((row0, head, PANEL * c), (rows, None, PANEL)),
            dst.window((0, PANEL * c), (rows, PANEL)),
            atom="tma",
            mbarrier=bar,
        )


@T.macro
def each_query_tile(
    u: Any, seq_q: Any, seq_k: Any, tiles: Any, batch: Any, heads: Any, search: int, rows: int, body: Any
) -> None:
    """`body(row0, first, h, q_end, k0, k_end)` for block `u`, when it has work: the query tile of `rows` rows from
    row `row0` (row `first` of its sequence) of head `h` of sequence b, whose queries end at row `q_end` and whose
    keys are rows ``k0 .. k_end``. The blocks walk every sequence's query tiles, each tile's heads one after the
    other (the query heads of one key/value head read its tiles together, from L2): the grouped GEMM's units
    (`argus.kernels.grouped.each_unit`, one row tile at a time) with the heads as the column tiles."""

    def place(b: Any, row0: Any, q_end: Any, h: Any) -> None:
        kb = T.minimum(b, batch - 1)  # b < B where there is work; clamped, every read of SEQ_K lies inside it
        with T.let(row0 - T.where(kb > 0, seq_q[T.maximum(kb - 1, 0)], 0), "first") as first:
            with T.let(T.where(kb > 0, seq_k[T.maximum(kb - 1, 0)], 0), "k0") as k0, T.let(seq_k[kb], "k_end") as k1:
                body(row0, first, h, q_end, k0, k1)

    each_unit(0, u, 1, seq_q, tiles, batch, heads, search, 1, rows, place)


@T.macro
def softmax_step(x: Any, m: Any, l: Any, o: Any, scale_log2: float) -> Any:  # noqa: E741 - l: the row sums
    """One key tile of the online softmax, for the tile's masked raw scores `x` (BM, BN): the running row maximum
    `m`, row sum `l` and output `o` updated (`o` rescaled by the new maximum); returns P (f32), exp2 of one fma a
    score, for ``O += P V``. A row that has seen no key keeps -inf as its maximum and subtracts 0 (exp2(-inf) = 0).
    (The varlen and paged kernels' step; `argus.kernels.attention.flash_attention` interleaves the same statements
    with its ping-pong and overlap variants.)"""
    m_new = T.maximum(T.reduce_max(x, axis=1), m)
    m_safe = T.where(m_new > float("-inf"), m_new, 0.0)
    p = T.exp2(T.fma(x, scale_log2, (m_safe * -scale_log2)[:, None]))
    alpha = T.exp2((m - m_safe) * scale_log2)  # rescales what was accumulated with the old maximum
    # invariant: the statistics that rescale row r of S (and of O) were computed from row r of S
    T.assert_tag(lambda pv, mv: pv[0] == mv[0], p, m_new[:, None])
    T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
    T.copy(o * alpha[:, None], o)
    T.copy(m_new, m)
    return p


@T.macro
def softmax_result(m: Any, l: Any, scale_log2: float) -> tuple[Any, Any]:  # noqa: E741
    """(1 / l, LSE) of rows with running maximum `m` and sum `l`: LSE in natural log; a row that saw no key gets
    0 (so O = 0) and -inf."""
    seen = l > 0.0
    inv = T.where(seen, T.rcp(l), 0.0)
    return inv, T.where(seen, (m * scale_log2 + T.log2(l)) * LN2, float("-inf"))


def key_tiles(first: Any, lq: Any, lk: Any, rows: int, bn: int, causal: bool) -> Any:
    """The key tiles a query tile of `rows` rows from row `first` of a sequence of `lq` queries and `lk` keys reads:
    all of them, or with `causal` those up to its last row's diagonal (none where that lies before the first
    key)."""
    n = T.cdiv(lk, bn)
    if causal:
        n = T.minimum(n, T.cdiv(T.maximum(first + rows + lk - lq, 0), bn))
    return n


def window_tiles(first: Any, lq: Any, lk: Any, rows: int, bn: int, window: int) -> tuple[Any, Any]:
    """(the first key tile, how many from it) a causal query tile reads under a sliding `window`: from the tile of
    the first key its first row sees (key ``first + lk - lq - (window - 1)``, none before the sequence's first) to
    its last row's diagonal (`key_tiles`)."""
    start = T.maximum(first + lk - lq - (window - 1), 0) // bn
    return start, T.maximum(key_tiles(first, lq, lk, rows, bn, True) - start, 0)


@argus.kernel(policies={"tile_shape": ("BM", "BN"), "stages": "STAGES"})
def flash_attention_varlen(
    Q: T.Tensor[lambda D: ("TQ", "H", D), "IN"],
    K: T.Tensor[lambda D: ("TK", "HK", D), "IN"],
    V: T.Tensor[lambda DV: ("TK", "HK", DV), "IN"],
    SEQ_Q: T.Tensor[("B",), T.i32],
    SEQ_K: T.Tensor[("B",), T.i32],
    TILES: T.Tensor[("B",), T.i32],
    O: T.Tensor[lambda DV: ("TQ", "H", DV), "OUT"],
    LSE: T.Tensor[("H", "TQ"), T.f32],
    D: int = 128,
    DV: int = 128,
    BM: int = 128,
    BN: int = 128,
    STAGES: int = 2,
    CONSUMERS: int = 2,
    CAUSAL: bool = False,
    WINDOW: int = 0,
    GROUP: int = 1,
    SCALE: float = 0.0,
    SEARCH: int = 8,
    IN: str = "bf16",
    OUT: str = "bf16",
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
):
    """O = softmax(Q K^T * SCALE) V per sequence and query head (module docstring), query head h reading key/value
    head ``h // GROUP``, for B <= 2**SEARCH sequences. SCALE 0 means 1/sqrt(D). WINDOW = W > 0 (CAUSAL) is a
    sliding window: query i of a sequence sees only the W keys up to its diagonal, keys j with
    i + lk - lq - W < j <= i + lk - lq, and a query tile reads the key tiles from its first row's first one."""
    TQ, H, _ = Q.shape  # noqa: N806 - the kernel's shape symbols
    TK, HK, _ = K.shape  # noqa: N806
    (B,) = SEQ_Q.shape  # noqa: N806
    check_head_dims(D, DV)
    DT, DVT = tile_width(D), tile_width(DV)  # noqa: N806 - the head dims' widths in shared memory
    if CONSUMERS not in (1, 2) or BM != 64 * CONSUMERS:
        raise DSLError("DSL_BAD_PARAM", f"BM={BM} rows over CONSUMERS={CONSUMERS} warpgroups: 64 rows each, 1 or 2")
    if SEARCH < 1:
        raise DSLError("DSL_BAD_PARAM", f"SEARCH >= 1 (up to 2**SEARCH sequences), got {SEARCH}")
    if not isinstance(WINDOW, int) or WINDOW < 0 or (WINDOW and not CAUSAL):
        raise DSLError("DSL_BAD_PARAM", f"WINDOW={WINDOW!r}: 0, or the keys a query sees up to its causal diagonal "
                                        "(CAUSAL)")  # fmt: skip
    T.assume(f"H == HK * {GROUP}")
    T.assume(f"B <= {1 << SEARCH}")
    T.assume_values(SEQ_Q, lo=0, hi=TQ, nondecreasing=True)
    T.assume_values(SEQ_K, lo=0, hi=TK, nondecreasing=True)
    T.assume_values(TILES, lo=0, hi=T.cdiv(TQ, BM) + B, nondecreasing=True)
    scale = SCALE if SCALE else 1.0 / D**0.5
    scale_log2, sign = LOG2E * abs(scale), (1.0 if scale > 0 else -1.0)
    consumers = tuple(range(1, 1 + CONSUMERS))
    # at least the units there are: sum over b of cdiv(lq_b, BM) <= cdiv(TQ, BM) + B query tiles, each of H heads
    with T.grid((T.cdiv(TQ, BM) + B) * H, threads=WARPGROUP_SIZE * (1 + CONSUMERS)) as (u,):
        sQ = T.alloc_shared((BM, DT), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, DT), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, DVT), Q.dtype, swizzle=128, panels=True)
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=CONSUMERS)  # one arrival per consumer warpgroup

        def tiles_of(first: Any, lq: Any, lk: Any) -> tuple[Any, Any]:
            """(the tile's first key tile, how many it reads): from 0, or under a window from its first row's."""
            if WINDOW:
                return window_tiles(first, lq, lk, BM, BN, WINDOW)
            return 0, key_tiles(first, lq, lk, BM, BN, CAUSAL)

        def produce(row0: Any, first: Any, h: Any, q_end: Any, k0: Any, k_end: Any) -> None:
            kvh = h // GROUP
            start, n_tiles = tiles_of(first, q_end - (row0 - first), k_end - k0)
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * DT * Q.dtype.itemsize)
            load_rows(Q, row0, h, BM, DT, sQ, q_ready[0])
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                t = start + j if WINDOW else j  # the key tile of the sequence
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=BN * (DT + DVT) * Q.dtype.itemsize)
                load_rows(K, k0 + t * BN, kvh, BN, DT, sK[s], full[s])
                load_rows(V, k0 + t * BN, kvh, BN, DVT, sV[s], full[s])

        def consume(row0: Any, first: Any, h: Any, q_end: Any, k0: Any, k_end: Any) -> None:
            lq, lk = q_end - (row0 - first), k_end - k0
            start, n_tiles = tiles_of(first, lq, lk)
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))  # BM / CONSUMERS rows each
            pv = T.wgmma_atom(DV, Q.dtype, a_source="registers")
            o = T.alloc_fragment((BM, DV), T.f32, mma=pv)
            m = T.alloc_reduced(scores, axis=1)  # running row maximum of the raw scores (times the scale's sign)
            l = T.alloc_reduced(scores, axis=1)  # running row sum
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                t = start + j if WINDOW else j  # the key tile of the sequence
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                # invariant: the stages hold key tile t of this sequence, of this query head's key/value head
                # (written on its own, not through the producer's head: GQA's mapping is checked, not assumed)
                T.assert_tag(lambda x: (x[1] == h // GROUP) & (x[0] - (k0 + t * BN) >= 0) & (x[0] - (k0 + t * BN) < BN),
                             sK[s])  # fmt: skip
                T.assert_tag(lambda x: (x[1] == h // GROUP) & (x[0] - (k0 + t * BN) >= 0) & (x[0] - (k0 + t * BN) < BN),
                             sV[s])  # fmt: skip
                T.fill(scores, 0.0)
                T.gemm(*score_operands(sQ, sK[s], D, Q.dtype), scores)  # S = Q K^T
                # invariant: a key past the sequence's end (the box runs on into the next sequence) does not
                # contribute; nor, with CAUSAL, one past the row's diagonal; nor, with a WINDOW, one WINDOW or more
                # behind it (every exclusion declared before anything is computed from S)
                T.exclude(scores, lambda r, c: c >= lk - t * BN)
                if CAUSAL:
                    T.exclude(scores, lambda r, c: c - r > first + (lk - lq) - t * BN)
                if WINDOW:
                    T.exclude(scores, lambda r, c: c - r <= first + (lk - lq) - t * BN - WINDOW)
                raw = scores if sign > 0 else -scores
                x = T.where(T.index(scores, 1, T.i32) < lk - t * BN, raw, float("-inf"))
                if CAUSAL:
                    diagonal = T.index(scores, 1, T.i32) - T.index(scores, 0, T.i32)
                    x = T.where(diagonal <= first + (lk - lq) - t * BN, x, float("-inf"))
                    if WINDOW:
                        x = T.where(diagonal > first + (lk - lq) - t * BN - WINDOW, x, float("-inf"))
                p = softmax_step(x, m, l, o, scale_log2)
                pa = T.alloc_fragment((BM, BN), Q.dtype, mma=pv, operand="A")  # S's layout is P's: no shuffle
                T.copy(p, pa)
                T.gemm(pa, value_columns(sV[s], DV), o)  # O += P V
                T.mbarrier_arrive(empty[s], per_warpgroup=True)
            inv, lse = softmax_result(m, l, scale_log2)
            # rows past the sequence's end belong to the next one: not stored
            T.copy(o * inv[:, None], O.window((row0, h, 0), (BM, None, DV), bound=(q_end, None, None)))
            T.copy(lse, LSE.window((h, row0), (None, BM), bound=(None, q_end)))

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            each_query_tile(u, SEQ_Q, SEQ_K, TILES, B, H, SEARCH, BM, produce)
        with T.role("consumer", warpgroups=consumers, registers=CONSUMER_REGS):
            each_query_tile(u, SEQ_Q, SEQ_K, TILES, B, H, SEARCH, BM, consume)


__all__ = ["flash_attention_varlen", "key_tiles", "softmax_result", "softmax_step", "window_tiles"]
