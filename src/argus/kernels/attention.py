"""Flash-attention forward on Hopper's structure: TMA loads of Q once and of K/V tiles through an
mbarrier pipeline (producer warpgroup), S = Q K^T and O += P V with wgmma (consumer warpgroup),
online softmax with exp2 and the scale folded in, row statistics by warp shuffles."""

import math
from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.atoms.tma import TMA_GLOBAL_STRIDE_MULTIPLE
from argus.lang.errors import DSLError

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@argus.kernel
def flash_attention_fwd(
    Q: T.Tensor[("BH", "S", 64), T.bf16],
    K: T.Tensor[("BH", "S", 64), T.bf16],
    V: T.Tensor[("BH", "S", 64), T.bf16],
    O: T.Tensor[("BH", "S", 64), T.f32],
    BM: int = 64,
    BN: int = 64,
    D: int = 64,
    STAGES: int = 2,
):
    """O = softmax(Q K^T / sqrt(D)) V per (batch*head), sequences of any length S (masked)."""
    scale_log2 = LOG2E / D**0.5
    with T.grid(T.cdiv(S, BM), BH, threads=256) as (bm, bh):
        sQ = T.alloc_shared((BM, D), T.bf16, swizzle=128)
        sK = T.alloc_shared((STAGES, BN, D), T.bf16, swizzle=128)  # (stages, BN, D)
        sV = T.alloc_shared((STAGES, BN, D), T.bf16, swizzle=128)
        sP = T.alloc_shared((BM, BN), T.bf16, swizzle=128)  # probabilities, the A operand of P @ V
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        n_tiles = T.cdiv(S, BN)
        with T.role("producer", warpgroups=(0,), registers=40):
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * D * 2)
            T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ, atom="tma", mbarrier=q_ready[0])
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=2 * BN * D * 2)
                T.copy(K.tile((bh, j, 0), (None, BN, D)), sK[s], atom="tma", mbarrier=full[s])
                T.copy(V.tile((bh, j, 0), (None, BN, D)), sV[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1,), registers=240):
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # S tile, wgmma C layout
            o = T.alloc_fragment((BM, D), T.f32, mma=T.wgmma_atom(D))
            m = T.alloc_reduced(scores, axis=1)  # running row maximum (log2 domain)
            l = T.alloc_reduced(scores, axis=1)  # running row sum
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[s].T, scores)  # S = Q K^T
                valid = T.index(scores, 1) + j * BN < S  # key positions past the sequence
                x = T.where(valid, scores * scale_log2, float("-inf"))
                m_new = T.maximum(T.reduce_max(x, axis=1), m)  # tagged by its first operand: this tile's rows
                p = T.exp2(x - m_new[:, None])
                alpha = T.exp2(m - m_new)  # rescales what was accumulated with the old maximum
                # invariant: the statistics that rescale row r of S (and of O) were computed from row r of S
                T.assert_tag(lambda pv, mv: (pv[0] == mv[0]) & (pv[0] // BM == bm), p, m_new[:, None])
                T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
                T.copy(o * alpha[:, None], o)
                T.copy(m_new, m)
                T.barrier(1, threads=128)  # the previous P @ V has finished reading sP
                T.copy(p, sP)  # to bf16 in shared memory: wgmma reads A from there
                T.fence_proxy_async()  # ordinary stores -> visible to wgmma (the async proxy)
                T.barrier(1, threads=128)  # every thread's part of P is in place
                T.gemm(sP, sV[s], o)  # O += P V
                T.mbarrier_arrive(empty[s])
            T.copy(o / l[:, None], O.tile((bh, bm, 0), (None, BM, D)))


# --- the general forward kernel: head dims, causal, GQA, output dtype, log-sum-exp ---------------------------------


#: The layouts `flash_attention` reads and writes: (batch * heads, length, head dim), or torch's (batch, length,
#: heads, head dim) of FlashAttention and most KV caches.
LAYOUTS = ("bhsd", "bshd")


def q_shape(D: int, LAYOUT: str) -> tuple[Any, ...]:  # noqa: N803 - named after the kernel parameters
    """Q's global shape: (batch * query heads, query length, head dim), or (batch, query length, query heads, head
    dim) for "bshd"."""
    return ("B", "SQ", "H", D) if LAYOUT == "bshd" else ("BH", "SQ", D)


def kv_layout(LAYOUT: str, KV_LAYOUT: str) -> str:  # noqa: N803
    """The layout K and V are read in: `KV_LAYOUT`, or where it is empty `LAYOUT`."""
    return KV_LAYOUT or LAYOUT


def k_shape(D: int, LAYOUT: str, KV_LAYOUT: str) -> tuple[Any, ...]:  # noqa: N803
    """K's global shape: (batch * key/value heads, key length, head dim), or (batch, key length, key/value heads,
    head dim) for "bshd" (`kv_layout`)."""
    return ("B", "SK", "HK", D) if kv_layout(LAYOUT, KV_LAYOUT) == "bshd" else ("BHK", "SK", D)


def v_shape(DV: int, LAYOUT: str, KV_LAYOUT: str) -> tuple[Any, ...]:  # noqa: N803
    """V's global shape: K's, with the value head dim."""
    return ("B", "SK", "HK", DV) if kv_layout(LAYOUT, KV_LAYOUT) == "bshd" else ("BHK", "SK", DV)


def o_shape(DV: int, SPLITS: int, LAYOUT: str) -> tuple[Any, ...]:  # noqa: N803
    """O's global shape: Q's, with the value head dim; with SPLITS > 1, one (batch * query heads, query length,
    value head dim) partial result per split of the keys (``P`` = SPLITS)."""
    if SPLITS > 1:
        return ("P", "BH", "SQ", DV)
    return ("B", "SQ", "H", DV) if LAYOUT == "bshd" else ("BH", "SQ", DV)


def lse_shape(SPLITS: int, LAYOUT: str) -> tuple[Any, ...]:  # noqa: N803
    """LSE's global shape: (batch * query heads, query length), or (batch, query heads, query length) for "bshd";
    after the split with SPLITS > 1."""
    if SPLITS > 1:
        return ("P", "BH", "SQ")
    return ("B", "H", "SQ") if LAYOUT == "bshd" else ("BH", "SQ")


#: Elements of a 16-bit operand in one 128-byte swizzle span: the width of one TMA box and one panel of a tile.
PANEL = 64
#: The widest head dim the kernels take: four panels (the output accumulator then takes 128 registers a thread).
MAX_HEAD_DIM = 256
#: A 16-bit head dim's columns come in multiples of this many: the rows' byte strides are then the multiples of 16
#: that a TMA descriptor takes (`argus.atoms.tma.TMA_GLOBAL_STRIDE_MULTIPLE`).
HEAD_DIM_MULTIPLE = TMA_GLOBAL_STRIDE_MULTIPLE // 2


def tile_width(d: int) -> int:
    """The columns a head dim `d` takes in shared memory: whole 64-column panels, TMA filling a panel's columns past
    `d` with zeros. The MMAs read the head dim's columns only (`contracted`, `value_columns`)."""
    return -(-d // PANEL) * PANEL


def check_head_dims(D: Any, DV: Any) -> None:  # noqa: N803 - the kernels' parameters
    """DSL_BAD_PARAM unless the head dims are positive multiples of `HEAD_DIM_MULTIPLE` up to `MAX_HEAD_DIM`."""
    for name, d in (("D", D), ("DV", DV)):
        if not isinstance(d, int) or d % HEAD_DIM_MULTIPLE or not 0 < d <= MAX_HEAD_DIM:
            raise DSLError(
                "DSL_BAD_PARAM",
                f"head dim {name}={d!r}: a positive multiple of {HEAD_DIM_MULTIPLE} up to {MAX_HEAD_DIM} (16-byte "
                "rows for TMA)",
            )


@T.macro
def load_panels(tensor: Any, head: tuple, block: Any, rows: int, width: int, dst: T.Tile, bar: Any) -> None:
    """TMA-load rows ``block * rows ...`` of one head of `tensor` (all `width` columns) into `dst`, one box per
    64-column panel (a box's inner extent may not exceed the swizzle span). `head`: (matrix,) for a (heads, length,
    dim) tensor; (batch, head) for a (batch, length, heads, dim) one."""
    for c in range(width // PANEL):
        if len(head) == 1:
            box = tensor.tile((head[0], block, c), (None, rows, PANEL))
        else:
            box = tensor.tile((head[0], block, head[1], c), (None, rows, None, PANEL))
        T.copy(
            box,
            dst.window((0, PANEL * c), (rows, PANEL)),
            atom="tma",
            mbarrier=bar,
        )


def contracted(tile: T.Tile, d: int, dtype: Any) -> T.Tile:
    """The columns of a (rows, `tile_width(d)`) operand tile that S = Q K^T contracts: the head dim `d`, rounded up
    to the MMA's K step (16 for 16-bit inputs; the columns in between are TMA's zeros in both operands)."""
    step = T.wgmma_atom(64, dtype).shape[2]
    k = -(-d // step) * step
    return tile if k == tile.shape[-1] else tile.window((0, 0), (tile.shape[0], k))


def score_operands(sq: T.Tile, sk: T.Tile, d: int, dtype: Any) -> tuple[T.Tile, T.Tile]:
    """S = Q K^T's operands from the Q and K tiles: their `contracted` columns, K transposed."""
    return contracted(sq, d, dtype), contracted(sk, d, dtype).T


def value_columns(tile: T.Tile, dv: int) -> T.Tile:
    """The columns of a (keys, `tile_width(dv)`) V tile that O += P V reads: the value head dim `dv` (wgmma's N,
    a multiple of 8)."""
    return tile if dv == tile.shape[-1] else tile.window((0, 0), (tile.shape[0], dv))


@T.macro
def holds_head(head: tuple, block: Any, rows: int):
    """The tag predicate "this stage holds rows block * rows ... of `head`" (as in `load_panels`)."""
    if len(head) == 1:
        return lambda x: (x[0] == head[0]) & (x[1] // rows == block)
    return lambda x: (x[0] == head[0]) & (x[2] == head[1]) & (x[1] // rows == block)


@argus.kernel(policies={"tile_shape": ("BM", "BN")})
def flash_attention(
    Q: T.Tensor[q_shape, "IN"],
    K: T.Tensor[k_shape, "IN"],
    V: T.Tensor[v_shape, "IN"],
    O: T.Tensor[o_shape, "OUT"],
    LSE: T.Tensor[lse_shape, T.f32],
    D: int = 128,
    DV: int = 128,
    BM: int = 128,
    BN: int = 128,
    STAGES: int = 2,
    CONSUMERS: int = 2,
    CAUSAL: bool = False,
    GROUP: int = 1,
    SCALE: float = 0.0,
    SPLITS: int = 1,
    LAYOUT: str = "bhsd",
    KV_LAYOUT: str = "",
    P_REGISTERS: bool = False,
    PINGPONG: bool = False,
    OVERLAP: bool = False,
    LPT: bool = False,
    MASK_TAIL: bool = True,
    EXP2_FMA: int = 0,
    IN: str = "bf16",
    OUT: str = "bf16",
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
    PERSISTENT: bool = False,
    BLOCKS: int = 0,
    Q_BUFFERS: int = 1,
    BLOCKS_PER_SM: int = 1,
    PAIRS: bool = False,
    WINDOW: int = 0,
):
    """O = softmax(Q K^T * SCALE) V for every (batch, query head), and LSE, each row's log-sum-exp of the scaled
    scores (natural log; -inf and O = 0 for a row that sees no key). Q (BH, SQ, D), K (BHK, SK, D), V (BHK, SK, DV)
    in IN (bf16 or f16), O in OUT; query head ``h`` reads key/value head ``h // GROUP`` (GQA, MQA: BH = BHK *
    GROUP for heads numbered batch-major). SCALE 0 means 1/sqrt(D). CAUSAL: query i sees keys j <= i + SK - SQ
    (the mask aligned at the bottom right, as in FlashAttention; for SQ = SK, torch's ``is_causal``), and a
    block skips the key tiles past its last row's diagonal. Sequences of any length: tails are masked.

    One block per (BM query rows, head): a producer warpgroup loads Q once and K/V tiles through a STAGES-deep
    mbarrier pipeline (TMA, one box per 64-column panel), CONSUMERS warpgroups (BM / CONSUMERS rows each) compute
    S = Q K^T and O += P V with wgmma, the online softmax in registers (exp2 of one fma per score), P through
    shared memory as wgmma's A operand.

    SPLITS > 1 splits the keys (flash-decoding, for short queries against long keys): block (bm, bh, split) attends
    to the split's ``cdiv(n_tiles, SPLITS)`` key tiles only and writes that partial result, normalized by its own
    row sums, into slice ``split`` of O and LSE (P = SPLITS, f32); `attention_combine` merges the slices.

    P_REGISTERS keeps P in registers as the A operand of O += P V (the ``.rs`` wgmma): S's accumulator layout is
    the A register layout thread for thread, so P is converted in place, with no shared-memory round trip and no
    barriers between the consumer warpgroups.

    PINGPONG (two or more consumer warpgroups) makes them take turns (FlashAttention-3's ping-pong): a warpgroup
    issues O += P V of one key tile and S = Q K^T of the next while it holds the turn, and passes it on for its
    softmax, so that one warpgroup's softmax runs while the other's MMAs do. With OVERLAP the turn covers the issue
    of S of tile j and P V of tile j - 1 (and the peeled tiles' MMAs); S is waited for after the turn is passed.

    EXP2_FMA = P > 0 evaluates every P-th exponential of a thread's scores by a polynomial on the FMA pipe instead of
    the special-function unit (`T.exp2(..., fma_every=P)`), whose 16 ex2 a cycle per SM take as long as the MMAs at
    head dim 64 (FlashAttention-3's bound there); the values are the same 2^x within a few f32 ulp.

    MASK_TAIL=False (non-causal) declares SK a multiple of BN (`T.assume`, checked at every launch): no key tile has
    a tail, and the softmax reads the scores unmasked.

    OVERLAP (with P_REGISTERS) pipelines each warpgroup against itself (FlashAttention-3's intra-warpgroup overlap):
    iteration j issues S_j = Q K_j^T, rescales O to tile j - 1's maximum, issues O += P_{j-1} V_{j-1} and leaves it
    running, and runs tile j's softmax while that MMA runs; it waits for it behind the softmax (`T.wgmma_wait(0,
    after=l)`: ptxas hoists a bare wait above it) before overwriting P. Tile 0's S and the last tile's P V are peeled
    (no branch may enclose an MMA in flight). K and V have barriers of their own: a K stage is released once S is
    computed, a V stage after its P V (released together, the producer could not prefetch the next tile).

    PAIRS (causal, unsplit, "bhsd", Q_BUFFERS = 2) gives a block query blocks p and n - 1 - p of one head, one after
    the other in a loop of two unrolled iterations (the middle block of an odd count alone): every block sees n + 1
    key tiles where SQ = SK, the second's stage rotation continues the first's (start = it * the first's key tiles),
    and both Q blocks are loaded before the loop, each into a buffer of its own.

    PERSISTENT (non-causal, unsplit) launches BLOCKS blocks that walk the (query block, head) units BLOCKS apart,
    the stage rotation running on across units and Q refilled once the consumers released it (Q_BUFFERS = 2: the
    next unit's Q lands while this one runs). Measured slower than the grid (docs/attention.md) and `unknown` to the
    verifier: off.

    LPT (causal, unsplit) launches the blocks longest first: the grid's first (fastest) dimension is the head, and
    the query blocks come in reverse, so every head's last query block (the one that sees the most key tiles) is
    launched before any head's second last; the short blocks fill the last wave (the longest-processing-time-first
    order of FlashAttention-3's causal scheduler, here by launch order alone). In "bshd" the grid is then (H, B,
    query blocks).

    LAYOUT "bshd" reads and writes torch's (batch, length, heads, head dim) tensors of FlashAttention and most KV
    caches in place: Q (B, SQ, H, D), K (B, SK, HK, D), V (B, SK, HK, DV), O (B, SQ, H, DV), LSE (B, H, SQ); the
    grid is (query blocks, H, B), and one head's rows are 4-d TMA boxes. (Split keys write (B * H, SQ) partial
    results: "bhsd" only.)

    WINDOW = W > 0 (CAUSAL) is a sliding window: query i sees the W keys up to its diagonal only, keys j with
    i + SK - SQ - W < j <= i + SK - SQ (Mistral's and Gemma's local layers); a block starts at the first key tile
    its first row sees, so it reads about W + BM keys whatever the length.

    KV_LAYOUT "bshd" with LAYOUT "bhsd" reads K and V as (batch, length, heads, head dim) tensors while Q, O and LSE
    are (batch * query heads, query length, ...): what a decoding step against FlashAttention's KV cache needs, whose
    one query token makes Q (B, 1, H, D) the same bytes as (B * H, 1, D), so that query heads may be packed into one
    tile's rows and the keys split, as in "bhsd" (query matrix ``m`` reads head ``m // GROUP % HK`` of batch ``m //
    GROUP // HK`` of K and V). Empty: `LAYOUT`'s."""
    attention_body(
        Q, K, V, O, LSE,
        D=D, DV=DV, BM=BM, BN=BN, STAGES=STAGES, CONSUMERS=CONSUMERS, CAUSAL=CAUSAL, GROUP=GROUP, SCALE=SCALE,
        SPLITS=SPLITS, LAYOUT=LAYOUT, KV_LAYOUT=KV_LAYOUT, P_REGISTERS=P_REGISTERS, PINGPONG=PINGPONG,
        OVERLAP=OVERLAP, LPT=LPT, MASK_TAIL=MASK_TAIL, EXP2_FMA=EXP2_FMA, IN=IN, OUT=OUT, PRODUCER_REGS=PRODUCER_REGS,
        CONSUMER_REGS=CONSUMER_REGS, PERSISTENT=PERSISTENT, BLOCKS=BLOCKS, Q_BUFFERS=Q_BUFFERS,
        BLOCKS_PER_SM=BLOCKS_PER_SM, PAIRS=PAIRS, WINDOW=WINDOW,
    )  # fmt: skip


def attention_body(  # noqa: C901, PLR0912, PLR0913, PLR0915 - the kernel's parameters and mechanisms
    Q: Any,  # noqa: N803 - named as the kernel's tensors
    K: Any,  # noqa: N803
    V: Any,  # noqa: N803
    O: Any,  # noqa: N803
    LSE: Any,  # noqa: N803
    *,
    D: Any,  # noqa: N803
    DV: Any,
    BM: Any,
    BN: Any,
    STAGES: Any,
    CONSUMERS: Any,
    CAUSAL: Any,
    GROUP: Any,
    SCALE: Any,
    SPLITS: Any,
    LAYOUT: Any,
    P_REGISTERS: Any,
    PINGPONG: Any,
    OVERLAP: Any,
    LPT: Any,
    MASK_TAIL: Any,
    EXP2_FMA: Any,
    IN: Any,
    OUT: Any,
    PRODUCER_REGS: Any,
    CONSUMER_REGS: Any,
    PERSISTENT: Any,
    BLOCKS: Any,
    Q_BUFFERS: Any,
    BLOCKS_PER_SM: Any,
    PAIRS: Any,
    KV_LAYOUT: Any = "",
    WINDOW: Any = 0,
    combined: Any = None,
) -> None:
    """`flash_attention`'s statements, for its parameters (the same names). With `combined` = (OUT, LSE_OUT, F,
    REDUCERS) the SPLITS > 1 blocks of one query block and head meet at a group barrier on counter ``F[bh * q_blocks
    + bm]`` once they have stored their partial results into O and LSE, and the first REDUCERS of them each merge
    BM / REDUCERS of the rows into OUT and LSE_OUT (`merge_rows`), where `attention_combine` would in a second
    launch (`flash_attention_combined`)."""
    bshd = LAYOUT == "bshd"
    kv_bshd = kv_layout(LAYOUT, KV_LAYOUT) == "bshd"  # K and V (batch, length, heads, dim); Q too with `bshd`
    SQ, SK = Q.shape[1], K.shape[1]  # noqa: N806 - the kernel's shape symbols
    if bshd:
        B, H = Q.shape[0], Q.shape[2]  # noqa: N806
    else:
        BH = Q.shape[0]  # noqa: N806
    if kv_bshd:
        HK = K.shape[2]  # noqa: N806
    check_head_dims(D, DV)
    DT, DVT = tile_width(D), tile_width(DV)  # noqa: N806 - the head dims' widths in shared memory
    if BM != 64 * CONSUMERS * (BM // (64 * CONSUMERS)) or BM // CONSUMERS not in (64, 128):
        raise DSLError("DSL_BAD_PARAM", f"BM={BM} rows over CONSUMERS={CONSUMERS} warpgroups: 64 or 128 rows each")
    if LAYOUT not in LAYOUTS:
        raise DSLError("DSL_BAD_PARAM", f"LAYOUT={LAYOUT!r}: one of {', '.join(LAYOUTS)}")
    if KV_LAYOUT not in ("", *LAYOUTS) or (bshd and not kv_bshd):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"KV_LAYOUT={KV_LAYOUT!r}: empty (LAYOUT's), or {', '.join(LAYOUTS)}; with LAYOUT 'bshd' K and V are "
            "'bshd'",
        )
    if PINGPONG and CONSUMERS < 2:
        raise DSLError("DSL_BAD_PARAM", "PINGPONG takes turns between consumer warpgroups: CONSUMERS must be 2")
    if not MASK_TAIL and not CAUSAL:  # no key tile has a tail: the softmax needs no mask (two instructions a score)
        T.assume(f"SK % {BN} == 0")
    if not isinstance(WINDOW, int) or WINDOW < 0 or (WINDOW and (not CAUSAL or PAIRS)):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"WINDOW={WINDOW!r}: 0, or the keys a query sees up to its causal diagonal (CAUSAL, without PAIRS)",
        )
    if OVERLAP and not P_REGISTERS:
        raise DSLError("DSL_BAD_PARAM", "OVERLAP keeps P of the previous tile in registers: P_REGISTERS")
    if SPLITS > 1 and bshd:
        raise DSLError("DSL_BAD_PARAM", "split keys write (B * H, SQ) partial results: LAYOUT must be 'bhsd'")
    if bshd:  # H query heads of D (and DV) columns each, H / GROUP key/value heads
        T.assume(f"H == HK * {GROUP}")
    elif kv_bshd:  # query matrices batch-major, GROUP of them a key/value head of K's B x HK: BH == B * HK * GROUP,
        # stated without the product of two sizes (with it the merged launch's cross-block check was `unknown`)
        T.assume(f"BH % HK == 0 and BH // HK == B * {GROUP}")
    elif str(K.shape[0]) != str(Q.shape[0]) or GROUP != 1:  # (K read by Q's own symbol: nothing to assume)
        T.assume(f"BH == BHK * {GROUP}")
    if LSE is None and (SPLITS > 1 or bshd):
        raise DSLError("DSL_BAD_PARAM", "split keys and the 'bshd' layout write the log-sum-exp: LSE is needed")
    if SPLITS > 1:
        if O.dtype != T.f32:
            raise DSLError("DSL_BAD_PARAM", f"SPLITS={SPLITS} writes f32 partial results, not OUT={O.dtype.name!r}")
        T.assume(f"P == {SPLITS}")
        # invariant: each key's products enter one split's partial result (the verifier pairs the slices' blocks)
        T.partial_sums(O, 0, "attention_combine merges the splits' partial results by their log-sum-exp")
    scale = SCALE if SCALE else 1.0 / D**0.5
    # the softmax runs on the raw scores, times the sign of the scale: its maximum is the scaled scores' maximum,
    # and each exponent is one fma, s * |scale| log2(e) - m * |scale| log2(e)
    scale_log2, sign = LOG2E * abs(scale), (1.0 if scale > 0 else -1.0)
    consumers = tuple(range(1, 1 + CONSUMERS))
    if LPT and (not CAUSAL or SPLITS > 1):
        raise DSLError("DSL_BAD_PARAM", "LPT orders causal blocks by their length: CAUSAL, SPLITS = 1")
    if bshd:
        extents = (H, B, T.cdiv(SQ, BM)) if LPT else (T.cdiv(SQ, BM), H, B)
    elif LPT:
        extents = (BH, T.cdiv(SQ, BM))
    else:
        extents = (T.cdiv(SQ, BM), BH, SPLITS) if SPLITS > 1 else (T.cdiv(SQ, BM), BH)
    if PERSISTENT:
        if CAUSAL or SPLITS > 1 or LPT:
            raise DSLError(
                "DSL_BAD_PARAM",
                "PERSISTENT blocks walk units of one length: non-causal, unsplit (SPLITS = 1), without LPT",
            )
        if BLOCKS < 1:
            raise DSLError("DSL_BAD_PARAM", f"BLOCKS={BLOCKS} persistent blocks: at least one")
        extents = (BLOCKS,)
    if PAIRS:
        if not CAUSAL or SPLITS > 1 or LPT or PERSISTENT or bshd or Q_BUFFERS != 2:
            raise DSLError(
                "DSL_BAD_PARAM",
                "PAIRS (query blocks i and n - 1 - i in one block) is for causal, unsplit 'bhsd' attention without LPT "
                "or PERSISTENT, with Q_BUFFERS = 2",
            )
        extents = (T.cdiv(T.cdiv(SQ, BM), 2), BH)
    if Q_BUFFERS not in (1, 2) or (Q_BUFFERS == 2 and not (PERSISTENT or PAIRS)):
        raise DSLError("DSL_BAD_PARAM", f"Q_BUFFERS={Q_BUFFERS}: 1, or 2 for a persistent kernel (PERSISTENT) or PAIRS")
    with T.grid(*extents, threads=WARPGROUP_SIZE * (1 + CONSUMERS), blocks_per_sm=BLOCKS_PER_SM) as blocks:
        q_blocks = T.cdiv(SQ, BM)
        if PERSISTENT:  # unit u: query block u % q_blocks of head u // q_blocks (in "bshd" head h of batch b, b H + h)
            units = q_blocks * (H * B if bshd else BH)
        elif LPT:  # heads fastest, query blocks last to first
            fixed = (T.cdiv(SQ, BM) - 1 - blocks[-1], blocks[0], (blocks[1] if bshd else None))
        else:
            fixed = (blocks[0], blocks[1], (blocks[2] if bshd else None))  # bshd: bh is the head in batch b
        split = blocks[2] if SPLITS > 1 else 0
        if Q_BUFFERS == 1:
            sQ = T.alloc_shared((BM, DT), Q.dtype, swizzle=128, panels=True)
        else:  # the next unit's Q lands while this one runs
            sQ = T.alloc_shared((Q_BUFFERS, BM, DT), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, DT), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, DVT), Q.dtype, swizzle=128, panels=True)
        sP = None if P_REGISTERS else T.alloc_shared((BM, BN), Q.dtype, swizzle=128, panels=True)  # P @ V's A
        q_ready = T.alloc_mbarrier(Q_BUFFERS, arrive_count=1)
        if PERSISTENT:  # Q's buffer may be refilled: every consumer warpgroup has computed its last S of the unit
            q_empty = T.alloc_mbarrier(Q_BUFFERS, arrive_count=CONSUMERS)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=CONSUMERS)  # one arrival per consumer warpgroup
        if OVERLAP:  # V has barriers of its own: a K stage is released once S is computed, a V stage after P V
            full_v = T.alloc_mbarrier(STAGES, arrive_count=1)
            empty_v = T.alloc_mbarrier(STAGES, arrive_count=CONSUMERS)

        def key_tiles(bm):  # noqa: ANN001, ANN202 - (the unit's first key tile, its count of key tiles)
            n_tiles = T.cdiv(SK, BN)
            first = 0  # the block's first key tile
            if CAUSAL:  # the key tiles up to the block's last row's diagonal, none where it is above the first key
                n_tiles = T.minimum(n_tiles, T.cdiv(T.maximum((bm + 1) * BM + SK - SQ, 0), BN))
            if WINDOW:  # from the tile of the first key the block's first row sees
                first = T.maximum(bm * BM + SK - SQ - (WINDOW - 1), 0) // BN
                n_tiles = T.maximum(n_tiles - first, 0)
            if SPLITS > 1:  # the split's share of them
                share = T.cdiv(n_tiles, SPLITS)
                first = first + split * share
                n_tiles = T.maximum(T.minimum(share, n_tiles - split * share), 0)
            return first, n_tiles

        def each_unit(body):  # noqa: ANN001, ANN202 - body(it, qb, bm, bh, batch, base) for every unit of the block
            # (`base`: the key tiles the block loaded before the unit)
            if PAIRS:  # query block p, then n - 1 - p (the two see n + 1 key tiles together), unless they are one:
                # a loop of two units unrolled by the compiler, the second's stage rotation starting where the first's
                # ends (their Q buffers were filled before the loop)
                p = blocks[0]
                span = q_blocks - 1 - 2 * p  # the second query block's distance from the first (0: the middle block)
                for it in T.unroll(2):
                    with T.if_(it * span >= it):
                        body(it, it, p + it * span, blocks[1], None, it * key_tiles(p)[1])
                return
            if not PERSISTENT:  # one unit: the block's own
                body(0, 0, *fixed, 0)
                return
            # the units in order, BLOCKS apart; the walk is a pipeline of Q_BUFFERS stages (Q's buffers). The unit's
            # coordinates bound once (T.let): recomputed in the producer's loop, the division by the query blocks
            # cost 5 % (benchmarks/results/2026-12-04-attention-persistent/)
            for it, qb in T.pipeline(T.cdiv(units, BLOCKS), stages=Q_BUFFERS):
                u = blocks[0] + it * BLOCKS
                with T.if_(u < units), T.let(u % q_blocks, "q_block") as bm, T.let(u // q_blocks, "head") as bh:
                    base = it * key_tiles(bm)[1]  # units of one length: it units of n_tiles each before this one
                    if bshd:
                        with T.let(bh // H, "batch") as batch, T.let(bh % H, "query_head") as h:
                            body(it, qb, bm, h, batch, base)
                    else:
                        body(it, qb, bm, bh, None, base)

        def rotation(base):  # noqa: ANN001, ANN202 - a unit's key tile x: its iteration of the block's stage
            # rotation (`base` the tiles before the unit), its stage, and the parity of its phase (plus `plus`)
            def gi(x):  # noqa: ANN001, ANN202
                return x + base if PERSISTENT or PAIRS else x

            def st(x):  # noqa: ANN001, ANN202
                return gi(x) % STAGES

            def ph(x, plus=0):  # noqa: ANN001, ANN202
                return (gi(x) // STAGES + plus) % 2

            return gi, st, ph

        def heads(bh, batch):  # noqa: ANN001, ANN202 - the query head and its key/value head: (matrix,), or (batch, head)
            if bshd:
                return (batch, bh), (batch, bh // GROUP)
            if kv_bshd:  # query matrix bh of Q's batch-major B x H, its key/value head of K's (B, SK, HK, D)
                return (bh,), ((bh // GROUP) // HK, (bh // GROUP) % HK)
            return (bh,), (bh // GROUP,)

        def q_buffer(qb):  # noqa: ANN001, ANN202
            return sQ if Q_BUFFERS == 1 else sQ[qb]

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):

            def produce(it, qb, bm, bh, batch, base):  # noqa: ANN001, ANN202
                head, kv = heads(bh, batch)
                first, n_tiles = key_tiles(bm)
                gi, st, ph = rotation(base)

                if PERSISTENT:  # the first pass finds every Q buffer free
                    T.mbarrier_wait(q_empty[qb], phase=(it // Q_BUFFERS + 1) % 2)
                if not PAIRS:  # (PAIRS: both Q blocks loaded before the units)
                    T.mbarrier_arrive(q_ready[qb], expect_bytes=BM * DT * Q.dtype.itemsize)
                    load_panels(Q, head, bm, BM, DT, q_buffer(qb), q_ready[qb])
                for j, s in T.pipeline(n_tiles, stages=STAGES, start=gi(0)):
                    T.mbarrier_wait(empty[s], phase=ph(j, 1))
                    if OVERLAP:  # K on `full`, V on `full_v`: P V of tile j - 1 holds its V stage, not its K stage
                        T.mbarrier_arrive(full[s], expect_bytes=BN * DT * Q.dtype.itemsize)
                        load_panels(K, kv, first + j, BN, DT, sK[s], full[s])
                        T.mbarrier_wait(empty_v[s], phase=ph(j, 1))
                        T.mbarrier_arrive(full_v[s], expect_bytes=BN * DVT * Q.dtype.itemsize)
                        load_panels(V, kv, first + j, BN, DVT, sV[s], full_v[s])
                    else:
                        T.mbarrier_arrive(full[s], expect_bytes=BN * (DT + DVT) * Q.dtype.itemsize)
                        load_panels(K, kv, first + j, BN, DT, sK[s], full[s])
                        load_panels(V, kv, first + j, BN, DVT, sV[s], full[s])

            if PAIRS:  # the pair's two Q blocks, each into a buffer of its own (one for the middle block)
                T.mbarrier_arrive(q_ready[0], expect_bytes=BM * DT * Q.dtype.itemsize)
                load_panels(Q, (blocks[1],), blocks[0], BM, DT, sQ[0], q_ready[0])
                with T.if_(q_blocks - 1 - blocks[0] > blocks[0]):
                    T.mbarrier_arrive(q_ready[1], expect_bytes=BM * DT * Q.dtype.itemsize)
                    load_panels(Q, (blocks[1],), q_blocks - 1 - blocks[0], BM, DT, sQ[1], q_ready[1])
            each_unit(produce)
        with T.role("consumer", warpgroups=consumers, registers=CONSUMER_REGS):
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))  # BM / CONSUMERS rows each
            pv = T.wgmma_atom(DV, Q.dtype, a_source="registers" if P_REGISTERS else "shared")
            o = T.alloc_fragment((BM, DV), T.f32, mma=pv)
            m = T.alloc_reduced(scores, axis=1)  # running row maximum of the raw scores (times the sign of the scale)
            l = T.alloc_reduced(scores, axis=1)  # running row sum

            def consume(it, qb, bm, bh, batch, base):  # noqa: ANN001, ANN202, C901 - one unit: (BM query rows, head)
                head, kv = heads(bh, batch)
                first, n_tiles = key_tiles(bm)
                sq = q_buffer(qb)
                gi, st, ph = rotation(base)

                def release_q():  # noqa: ANN202 - every S of the unit is complete: Q's buffer may be refilled
                    if PERSISTENT:
                        T.mbarrier_arrive(q_empty[qb], per_warpgroup=True)

                T.fill(o, 0.0)
                T.fill(m, float("-inf"))
                T.fill(l, 0.0)
                if not PAIRS:
                    T.mbarrier_wait(q_ready[qb], phase=(it // Q_BUFFERS) % 2 if PERSISTENT else 0)

                def online_softmax(j, scores=scores):  # noqa: ANN001, ANN202 - tile j's statistics and probabilities; l updated
                    if CAUSAL:  # keys past the row's diagonal, key - row > bm * BM + SK - SQ - j * BN (for a row
                        # of the query, SK - 1 at most: that masks the keys past the sequence too)
                        # invariant: key (first + j) * BN + c past row bm * BM + r's diagonal does not contribute,
                        # written on its own (not through `limit`), so that the verifier checks the mask against it
                        # (every exclusion declared before anything is computed from S: what was computed before
                        # a declaration would not carry it, DSL_EXCLUDE_AFTER_READ)
                        T.exclude(scores, lambda r, c: c - r > bm * BM + (SK - SQ) - (first + j) * BN)
                        if WINDOW:  # invariant: nor does a key WINDOW or more behind the row's diagonal
                            T.exclude(scores, lambda r, c: c - r <= bm * BM + (SK - SQ) - (first + j) * BN - WINDOW)
                    raw = scores if sign > 0 else -scores
                    if CAUSAL:
                        limit = bm * BM + (SK - SQ) - (first + j) * BN
                        diagonal = T.index(scores, 1, T.i32) - T.index(scores, 0, T.i32)  # integers: ptxas folds them
                        x = T.where(diagonal <= limit, raw, float("-inf"))
                        if WINDOW:
                            x = T.where(diagonal > limit - WINDOW, x, float("-inf"))
                    elif MASK_TAIL:  # key positions past the sequence
                        x = T.where(T.index(scores, 1, T.i32) < SK - (first + j) * BN, raw, float("-inf"))
                    else:  # SK is a multiple of BN: every key of every tile is real
                        x = raw
                    m_new = T.maximum(T.reduce_max(x, axis=1), m)  # tagged by its first operand: this tile's rows
                    # a row that has seen no key yet keeps -inf: subtract 0 from it instead (exp2(-inf) = 0)
                    m_safe = T.where(m_new > float("-inf"), m_new, 0.0)
                    shift = m_safe * -scale_log2
                    p = T.exp2(T.fma(x, scale_log2, shift[:, None]), fma_every=EXP2_FMA)
                    alpha = T.exp2((m - m_safe) * scale_log2)  # rescales what was accumulated with the old maximum
                    # invariant: the statistics that rescale row r of S (and of O) were computed from row r of S
                    T.assert_tag(lambda pv, mv: (pv[0] == mv[0]) & (pv[0] // BM == bm), p, m_new[:, None])
                    T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
                    return m_new, p, alpha

                def peeled_gemm(a, b, acc):  # noqa: ANN001, ANN202 - a peeled tile's MMA, completed before it returns
                    if PINGPONG:  # the turn covers the MMA's issue only
                        T.turn_wait()
                        T.gemm(a, b, acc, wait_group=1)
                        T.turn_pass()
                        T.wgmma_wait(0)
                    else:
                        T.gemm(a, b, acc)

                def overlapped():  # noqa: ANN202 - OVERLAP's loop: tile j's softmax runs while P V of tile j - 1 does
                    pa = T.alloc_fragment((BM, BN), Q.dtype, mma=pv, operand="A")  # P of the previous tile
                    rescale = T.alloc_reduced(scores, axis=1)  # the previous tile's alpha, applied before its P V
                    with T.if_(n_tiles > 0):  # tile 0, peeled: S and its softmax (O is still 0)
                        # tile 0's S in a fragment of its own: the same registers to ptxas, and to the verifier's
                        # liveness (first write to last use) `scores` then lives in the loop only, not across P's copy
                        first_scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))
                        s0 = st(0)
                        T.mbarrier_wait(full[s0], phase=ph(0))
                        T.assert_tag(holds_head(kv, first, BN), sK[s0])
                        T.fill(first_scores, 0.0)
                        peeled_gemm(*score_operands(sq, sK[s0], D, Q.dtype), first_scores)
                        T.mbarrier_arrive(empty[s0], per_warpgroup=True)  # K stage of tile 0 read
                        m_first, p_first, alpha_first = online_softmax(0, first_scores)
                        T.copy(m_first, m)
                        T.copy(alpha_first, rescale)
                        T.copy(p_first, pa)
                    for i, s in T.pipeline(n_tiles - 1, stages=STAGES, start=gi(1)):  # tile j = i + 1, stage s
                        j = i + 1
                        prev = st(i)  # tile j - 1's stage
                        T.mbarrier_wait(full[s], phase=ph(j))
                        T.assert_tag(holds_head(kv, first + j, BN), sK[s])
                        T.fill(scores, 0.0)
                        if (
                            PINGPONG
                        ):  # the turn covers S's and P V's issue: the other warpgroup's softmax runs meanwhile
                            T.turn_wait()
                        # S = Q K^T of tile j, issued (nothing else in flight)
                        T.gemm(*score_operands(sq, sK[s], D, Q.dtype), scores, wait_group=1)
                        # O, which holds tiles up to j - 2, rescaled to tile j - 1's maximum before its P V is added
                        T.copy(o * rescale[:, None], o)
                        T.mbarrier_wait(full_v[prev], phase=ph(j - 1))
                        T.assert_tag(holds_head(kv, first + j - 1, BN), sV[prev])
                        if PINGPONG:  # O += P V of tile j - 1 issued; both left running
                            T.gemm(pa, value_columns(sV[prev], DV), o, wait_group=2)
                            T.turn_pass()
                            T.wgmma_wait(1)  # S complete
                        else:  # O += P V of tile j - 1, left running; S complete
                            T.gemm(pa, value_columns(sV[prev], DV), o, wait_group=1)
                        T.mbarrier_arrive(empty[s], per_warpgroup=True)  # K stage s read
                        m_new, p, alpha = online_softmax(j)
                        # tile j - 1's P V, waited for behind the softmax (ptxas would hoist a bare wait above it)
                        T.wgmma_wait(0, after=l)
                        T.mbarrier_arrive(empty_v[prev], per_warpgroup=True)  # V stage of tile j - 1 read
                        T.copy(m_new, m)
                        T.copy(alpha, rescale)
                        T.copy(p, pa)
                    release_q()
                    with T.if_(n_tiles > 0):  # the last tile's O += P V, and the release of its V stage
                        last = st(n_tiles - 1)
                        T.copy(o * rescale[:, None], o)
                        T.mbarrier_wait(full_v[last], phase=ph(n_tiles - 1))
                        T.assert_tag(holds_head(kv, first + n_tiles - 1, BN), sV[last])
                        peeled_gemm(pa, value_columns(sV[last], DV), o)
                        T.mbarrier_arrive(empty_v[last], per_warpgroup=True)

                def plain():  # noqa: ANN202 - the loop: S, its softmax, then O += P V, tile after tile
                    if PINGPONG:  # the turn covers O += P V of tile j - 1 and S = Q K^T of tile j
                        T.turn_wait()
                    for j, s in T.pipeline(n_tiles, stages=STAGES, start=gi(0)):
                        T.mbarrier_wait(full[s], phase=ph(j))
                        # invariant: the stage holds key tile first + j of this head's key/value head
                        T.assert_tag(holds_head(kv, first + j, BN), sK[s])
                        T.assert_tag(holds_head(kv, first + j, BN), sV[s])
                        T.fill(scores, 0.0)
                        T.gemm(*score_operands(sq, sK[s], D, Q.dtype), scores)  # S = Q K^T
                        if PINGPONG:  # the softmax runs while the next warpgroup's MMAs do
                            T.turn_pass()
                        m_new, p, alpha = online_softmax(j)
                        T.copy(o * alpha[:, None], o)
                        T.copy(m_new, m)
                        if P_REGISTERS:  # P stays in registers: S's accumulator layout is wgmma's A register layout
                            pa = T.alloc_fragment((BM, BN), Q.dtype, mma=pv, operand="A")
                            T.copy(p, pa)
                            if PINGPONG:
                                T.turn_wait()
                            T.gemm(pa, value_columns(sV[s], DV), o)  # O += P V
                        else:
                            T.barrier(
                                1, threads=WARPGROUP_SIZE * CONSUMERS
                            )  # the previous P @ V has finished reading sP
                            T.copy(p, sP)  # to IN in shared memory: wgmma reads A from there
                            T.fence_proxy_async()  # ordinary stores -> visible to wgmma (the async proxy)
                            T.barrier(1, threads=WARPGROUP_SIZE * CONSUMERS)  # every thread's part of P is in place
                            if PINGPONG:
                                T.turn_wait()
                            T.gemm(sP, value_columns(sV[s], DV), o)  # O += P V
                        T.mbarrier_arrive(empty[s], per_warpgroup=True)  # no lockstep between the warpgroups
                    if PINGPONG:
                        T.turn_pass()
                    release_q()

                if OVERLAP:
                    overlapped()
                else:
                    plain()
                seen = l > 0.0
                inv = T.where(seen, T.rcp(l), 0.0)  # a row that saw no key: O = 0
                lse = T.where(seen, (m * scale_log2 + T.log2(l)) * LN2, float("-inf"))
                if SPLITS > 1:
                    T.copy(o * inv[:, None], O.tile((split, bh, bm, 0), (None, None, BM, DV)))
                    T.copy(lse, LSE.tile((split, bh, bm), (None, None, BM)))
                    if combined is not None:  # the unit's SPLITS blocks meet, then the first REDUCERS merge its rows
                        out, lse_out, counters, reducers = combined
                        T.group_barrier(counters, bh * q_blocks + bm, split, SPLITS)
                        merge_share(O, LSE, out, lse_out, bh, bm, split, BM, reducers, DV, SPLITS)
                elif bshd:
                    T.copy(o * inv[:, None], O.tile((head[0], bm, bh, 0), (None, BM, None, DV)))
                    T.copy(lse, LSE.tile((head[0], bh, bm), (None, None, BM)))
                else:
                    T.copy(o * inv[:, None], O.tile((bh, bm, 0), (None, BM, DV)))
                    if LSE is not None:  # (None: a kernel that writes O alone, the attention lineage's rungs)
                        T.copy(lse, LSE.tile((bh, bm), (None, BM)))

            if PAIRS:
                T.mbarrier_wait(q_ready[0], phase=0)
                with T.if_(q_blocks - 1 - blocks[0] > blocks[0]):
                    T.mbarrier_wait(q_ready[1], phase=0)
            each_unit(consume)


@argus.kernel(policies={"tile_shape": ("BR",)})
def attention_combine(
    OP: T.Tensor[("P", "BH", "SQ", "DV"), T.f32],
    LP: T.Tensor[("P", "BH", "SQ"), T.f32],
    O: T.Tensor[("BH", "SQ", "DV"), "OUT"],
    LSE: T.Tensor[("BH", "SQ"), T.f32],
    SPLITS: int = 2,
    BR: int = 16,
    BD: int = 64,
    OUT: str = "bf16",
):
    """The second half of split-key attention: for each row, LSE = log(sum over splits s of exp(LP[s])) and
    O = sum over s of exp(LP[s] - LSE) OP[s], from the SPLITS partial results `flash_attention` writes with
    SPLITS > 1 (each normalized by its own row sum; a split that saw no key has LP = -inf and weighs nothing).
    One block per (BR rows, BD value columns, head)."""
    T.assume(f"P == {SPLITS}")
    T.assume("DV % 4 == 0")  # 16-byte rows of f32
    with T.grid(T.cdiv(SQ, BR), T.cdiv(DV, BD), BH, threads=WARPGROUP_SIZE) as (br, bd, bh):
        merge_rows(OP, LP, O, LSE, bh, br, bd, BR, BD, SPLITS)


@T.macro
def merge_rows(OP: Any, LP: Any, O: Any, LSE: Any, bh: Any, br: Any, bd: Any, BR: int, BD: int, SPLITS: int) -> None:  # noqa: N803
    """Rows ``br * BR ...`` and columns ``bd * BD ...`` of head `bh` of O, from the SPLITS partial results OP (P, BH,
    SQ, DV) and their log-sum-exps LP (P, BH, SQ): O = sum over s of exp(LP[s] - LSE) OP[s], and (by the column
    block 0) LSE = log(sum over s of exp(LP[s])). `attention_combine`'s block, and a split block's share of its unit
    in `flash_attention_combined`. `bh` may be a tuple of leading indices instead (the paged kernels' (sequence,
    key/value head): OP (P, B, HK, ROWS, DV))."""
    head = bh if isinstance(bh, tuple) else (bh,)
    n, lead = len(head), (None,) * len(head)

    def same_block(x: Any, s: int) -> Any:
        """Element x of a partial result is split s's, of these rows and columns."""
        c = x[0] == s
        for i, h in enumerate(head):
            c = c & (x[1 + i] == h)
        return c & (x[1 + n] // BR == br) & (x[2 + n] // BD == bd)

    acc = T.alloc_fragment((BR, BD), T.f32)
    top = T.alloc_reduced(acc, axis=1)  # the largest partial log-sum-exp of each row
    total = T.alloc_reduced(acc, axis=1)  # sum over s of exp(LP[s] - top)
    part = T.alloc_reduced(acc, axis=1)
    T.fill(top, float("-inf"))
    for s in range(SPLITS):  # unrolled at trace time: SPLITS is a constant
        T.copy(LP.tile((s, *head, br), (None, *lead, BR)), part)
        T.copy(T.maximum(part, top), top)
    safe = T.where(top > float("-inf"), top, 0.0)  # rows no split saw: every weight exp2(-inf) = 0
    T.fill(acc, 0.0)
    T.fill(total, 0.0)
    for s in range(SPLITS):
        o = T.alloc_fragment((BR, BD), T.f32)
        T.copy(OP.tile((s, *head, br, bd), (None, *lead, BR, BD)), o)
        T.copy(LP.tile((s, *head, br), (None, *lead, BR)), part)
        # invariant: what is added is split s's partial result of the same rows and columns
        T.assert_tag(lambda x, s=s: same_block(x, s), o)
        w = T.exp2((part - safe) * LOG2E)
        T.copy(total + w, total)
        T.copy(acc + o * w[:, None], acc)
    seen = total > 0.0
    T.copy(acc * T.where(seen, T.rcp(total), 0.0)[:, None], O.tile((*head, br, bd), (*lead, BR, BD)))
    lse = T.where(seen, safe + T.log(total), float("-inf"))
    if isinstance(bd, int):  # the rows' every column: this block writes their LSE
        T.copy(lse, LSE.tile((*head, br), (*lead, BR)))
    else:
        with T.if_(T.eq(bd, 0)):  # one column block writes the rows' LSE
            T.copy(lse, LSE.tile((*head, br), (*lead, BR)))


def merge_share(
    OP: Any, LP: Any, O: Any, LSE: Any, head: Any, bm: Any, split: Any, BM: int, reducers: int, DV: int, SPLITS: int
) -> None:  # noqa: N803
    """A split block's share of its unit's merge in the one-launch kernels, after the unit's group barrier: blocks
    0 .. `reducers` - 1 each merge BM / `reducers` of the unit's BM rows (row block ``bm * reducers + split`` of
    head `head`, `merge_rows`), the others only arrived. The rows are merged `tile_width(DV)` columns wide (those
    past DV read as zeros and are not stored)."""
    rows, width = BM // reducers, tile_width(DV)
    if reducers == SPLITS:
        merge_rows(OP, LP, O, LSE, head, bm * reducers + split, 0, rows, width, SPLITS)
        return
    with T.if_(split < reducers):
        merge_rows(OP, LP, O, LSE, head, bm * reducers + split, 0, rows, width, SPLITS)


def check_reducers(kernel: str, REDUCERS: int, BM: int, SPLITS: int, DV: int, threads: int) -> int:  # noqa: N803
    """The REDUCERS a one-launch kernel takes (0: `merge_reducers`), DSL_BAD_PARAM unless they divide the unit's BM
    rows, are at most SPLITS and give each of the `threads` consumer threads the same whole number of 4-value
    vectors."""
    reducers, width = REDUCERS or merge_reducers(BM, SPLITS, DV, threads), tile_width(DV)
    if not 1 <= reducers <= SPLITS or BM % reducers or (BM // reducers) * width % (4 * threads):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"{kernel}'s REDUCERS blocks of a unit each merge BM / REDUCERS rows, every one of the {threads} "
            f"consumer threads the same whole number of 4-value vectors of them: REDUCERS = {REDUCERS} (taken: "
            f"{reducers}) must divide BM = {BM}, be at most SPLITS = {SPLITS} and leave a multiple of "
            f"{4 * threads // math.gcd(4 * threads, width)} rows of DV = {DV} ({width} columns merged)",
        )
    return reducers


def merge_reducers(BM: int, SPLITS: int, DV: int, threads: int) -> int:  # noqa: N803
    """How many of a unit's SPLITS blocks merge its BM rows in `flash_attention_combined`: the most, at most
    SPLITS, dividing BM into shares of rows whose DV columns (`tile_width`'s) give each of the `threads` consumer
    threads whole 4-element vectors, the same number each (0 where none does: a fragment spreads evenly over the
    threads; 4 rows of 192 columns do not over 128)."""
    width = tile_width(DV)
    fit = [r for r in range(1, SPLITS + 1) if BM % r == 0 and (BM // r) * width % (4 * threads) == 0]
    return max(fit, default=0)


def combined_partial_shape(DV: int) -> tuple[Any, ...]:  # noqa: N803
    """`flash_attention_combined`'s partial results: one (batch * query heads, query length, DV) slice a split."""
    return ("P", "BH", "SQ", DV)


def combined_out_shape(DV: int) -> tuple[Any, ...]:  # noqa: N803
    """`flash_attention_combined`'s output: (batch * query heads, query length, DV)."""
    return ("BH", "SQ", DV)


@argus.kernel(policies={"tile_shape": ("BM", "BN")})
def flash_attention_combined(
    Q: T.Tensor[q_shape, "IN"],
    K: T.Tensor[k_shape, "IN"],
    V: T.Tensor[v_shape, "IN"],
    OP: T.Tensor[combined_partial_shape, T.f32],
    LP: T.Tensor[("P", "BH", "SQ"), T.f32],
    O: T.Tensor[combined_out_shape, "OUT"],
    LSE: T.Tensor[("BH", "SQ"), T.f32],
    F: T.Tensor[("NF",), T.i32],
    D: int = 128,
    DV: int = 128,
    BM: int = 64,
    BN: int = 128,
    STAGES: int = 2,
    CONSUMERS: int = 1,
    CAUSAL: bool = False,
    GROUP: int = 1,
    SCALE: float = 0.0,
    SPLITS: int = 2,
    LAYOUT: str = "bhsd",
    KV_LAYOUT: str = "",
    P_REGISTERS: bool = False,
    MASK_TAIL: bool = True,
    EXP2_FMA: int = 0,
    IN: str = "bf16",
    OUT: str = "bf16",
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
    BLOCKS_PER_SM: int = 1,
    WAVE: int = SMS,
    REDUCERS: int = 0,
    WINDOW: int = 0,
):
    """Split-key attention in one launch: `flash_attention` with SPLITS > 1 writes each split's partial result and
    log-sum-exp into OP and LP as there, then the SPLITS blocks of one (query block, head) meet at a group barrier
    on counter ``F[bh * q_blocks + bm]`` (`T.group_barrier`, rank ``split``) and the first REDUCERS of them each
    merge BM / REDUCERS of the block's rows over every split into O and LSE (`merge_rows`, what `attention_combine`
    does in a second launch): the partial results are read from L2 right after they are written, and the second
    launch and its gap are gone (at decode sizes a few microseconds of a step). REDUCERS 0 takes
    `merge_reducers`.

    The blocks of a unit wait for each other, so they must run at once: the kernel assumes the grid fits WAVE
    blocks (the SMs times the blocks resident on each; checked at every launch) and a counter per unit. F holds
    zeros when first used and is left at the barriers' next generation: a relaunch needs no reset. "bhsd" only
    (the split's layout; K and V may be "bshd": KV_LAYOUT, as in `flash_attention`), without LPT, PERSISTENT or
    PAIRS (one unit a block)."""
    if not isinstance(SPLITS, int) or SPLITS < 2 or LAYOUT != "bhsd":
        raise DSLError(
            "DSL_BAD_PARAM",
            f"flash_attention_combined splits the keys at least two ways in the 'bhsd' layout (SPLITS = {SPLITS!r}, "
            f"LAYOUT = {LAYOUT!r})",
        )
    reducers = check_reducers("flash_attention_combined", REDUCERS, BM, SPLITS, DV, WARPGROUP_SIZE * CONSUMERS)
    units = f"((SQ + {BM - 1}) // {BM}) * BH"
    # one wave: the blocks of a unit wait for each other (each factor bounded on its own too: the product of two
    # unbounded sizes could wrap around in the index width)
    T.assume(f"BH <= {WAVE}")
    T.assume(f"(SQ + {BM - 1}) // {BM} <= {WAVE}")
    T.assume(f"{units} * {SPLITS} <= {WAVE}")
    T.assume(f"NF >= {units}")  # a counter per unit
    attention_body(
        Q, K, V, OP, LP,
        D=D, DV=DV, BM=BM, BN=BN, STAGES=STAGES, CONSUMERS=CONSUMERS, CAUSAL=CAUSAL, GROUP=GROUP, SCALE=SCALE,
        SPLITS=SPLITS, LAYOUT=LAYOUT, KV_LAYOUT=KV_LAYOUT, P_REGISTERS=P_REGISTERS, PINGPONG=False, OVERLAP=False,
        LPT=False, MASK_TAIL=MASK_TAIL, EXP2_FMA=EXP2_FMA, IN=IN, OUT=OUT, PRODUCER_REGS=PRODUCER_REGS,
        CONSUMER_REGS=CONSUMER_REGS, PERSISTENT=False, BLOCKS=0, Q_BUFFERS=1, BLOCKS_PER_SM=BLOCKS_PER_SM,
        PAIRS=False, WINDOW=WINDOW, combined=(O, LSE, F, reducers),
    )  # fmt: skip


@argus.kernel(policies={"tile_shape": ("BM", "BN")})
def attention_softmax(
    S: T.Tensor[("L", "SQ", "SK"), T.f32],
    P: T.Tensor[("L", "SQ", "SK"), "DT"],
    BM: int = 4,
    BN: int = 128,
    SCALE: float = 1.0,
    CAUSAL: bool = False,
    DT: str = "f32",
    ALIGNED: bool = False,
):
    """The composed attention's softmax (`argus.kernels.attention_step`): P[l, i, :] = softmax(S[l, i, :] · SCALE)
    over the keys, keys j > i masked when CAUSAL (torch's top-left alignment); rounded once to DT. One block per
    BM query rows of one (batch, head); each row streamed in BN-key tiles twice: an online pass (running
    maximum, rescaled running sum, in the log2 domain with SCALE · log2(e) folded into one multiply), then a
    pass that writes exp2(t - m) / l. Key 0 is never masked, so every real row has a finite maximum after its
    first tile. ALIGNED: SK is a multiple of 4 (rows of 16-byte vectors); otherwise the copies run element by
    element."""
    if ALIGNED:
        T.assume("SK % 4 == 0")
    with T.grid(L, T.cdiv(SQ, BM), threads=WARPGROUP_SIZE) as (b, bm):
        x = T.alloc_fragment((BM, BN), T.f32)  # (BM, BN), 16-byte vectors along the row
        m = T.alloc_reduced(x, axis=1)  # running maximum of each row (log2 domain)
        total = T.alloc_reduced(x, axis=1)  # running sum of exp2(t - m)
        T.fill(m, float("-inf"))
        T.fill(total, 0.0)
        for j in T.serial(T.cdiv(SK, BN)):
            T.copy(S.tile((b, bm, j), (None, BM, BN)), x)
            t = softmax_logits(x, bm, j, BM, BN, SK, SCALE, CAUSAL)
            m_new = T.maximum(T.reduce_max(t, axis=1), m)
            p = T.exp2(t - m_new[:, None])
            # what was summed under the old maximum is rescaled to the new one
            T.copy(total * T.exp2(m - m_new) + T.reduce_sum(p, axis=1), total)
            T.copy(m_new, m)
        r = T.rcp(total)
        for j in T.serial(T.cdiv(SK, BN)):
            T.copy(S.tile((b, bm, j), (None, BM, BN)), x)
            t = softmax_logits(x, bm, j, BM, BN, SK, SCALE, CAUSAL)
            T.copy(T.exp2(t - m[:, None]) * r[:, None], P.tile((b, bm, j), (None, BM, BN)))


@T.macro
def softmax_logits(x: Any, bm: Any, j: Any, BM: int, BN: int, SK: Any, SCALE: float, CAUSAL: bool) -> Any:  # noqa: N803
    """x · SCALE · log2(e), -inf at the keys past SK and (CAUSAL) at the keys after the row's query."""
    if CAUSAL:  # key j * BN + c sees query bm * BM + r when c - r <= bm * BM - j * BN
        # invariant: no key after its row's query contributes (the verifier proves the mask below; declared before
        # anything is computed from x)
        T.exclude(x, lambda r, c: c - r > bm * BM - j * BN)
    t = T.where(T.index(x, 1) < SK - j * BN, x * (SCALE * LOG2E), float("-inf"))
    if CAUSAL:
        t = T.where(T.index(x, 1) - T.index(x, 0) <= bm * BM - j * BN, t, float("-inf"))
    return t
