"""Scaled dot-product attention, the call a user makes: `sdpa` runs `argus.kernels.attention.flash_attention` on a
configuration chosen by the problem's head dims and lengths.

``sdpa(q, k, v, causal=..., scale=...)`` takes bf16 or f16 CUDA tensors q (B, H, SQ, D), k (B, HK, SK, D) and
v (B, HK, SK, DV) (H a multiple of HK: grouped-query and multi-query attention), and returns O (B, H, SQ, DV) in
the inputs' dtype (or `out_dtype`) and, with ``return_lse=True``, each row's log-sum-exp (B, H, SQ) in f32. With
``layout="bshd"`` the tensors are torch's (batch, length, heads, head dim) of FlashAttention and most KV caches,
q (B, SQ, H, D), k and v (B, SK, HK, D), O (B, SQ, H, DV) (LSE stays (B, H, SQ)), read and written in place (a
short query against many keys, a decoding step, runs the (B, H, S, D) mechanisms below with K and V read in place:
one token's q and O are (B, H, 1, D)'s bytes, several tokens' are copied, `kernel_layouts`).
``causal=True`` aligns the mask at the bottom right (query i sees keys j <= i + SK - SQ), as FlashAttention does;
for SQ = SK that is torch's ``is_causal``. Head dims are multiples of 64 up to 256. A row that sees no key (causal
with SQ > SK) gets O = 0 and LSE = -inf.

`choose` picks the tile shape and pipeline depth: 128 query rows per block over two consumer warpgroups (64 rows
when the query is that short: one warpgroup; 192 over three for non-causal head dims up to 64),
128 keys per tile up to head dim 128 and 64 beyond (the output accumulator then takes 128 registers per thread), the
deepest pipeline the shared memory holds (at most `MAX_STAGES`), and for causal prefill query blocks in pairs
(`PAIRS`, head dims from `QUERY_PAIRS_MIN_WIDTH` where two Q buffers fit), else, on grids of at most
`LONGEST_FIRST_MAX_WAVES` waves, the longest blocks launched first. Two mechanisms serve decoding (a short query
against a long key sequence):

* **packed query heads**: with grouped-query heads and a short query that is not causal (or one token, whose
  bottom-right mask keeps every key), the GROUP query heads of one key/value head are rows of one tile (q viewed as
  (B * HK, GROUP * SQ, D), a free view of the contiguous (B, H, SQ, D)): each key/value tile is read once for the
  group instead of once per query head;
* **split keys** (flash-decoding): when the blocks would not fill the GPU, the keys are split SPLITS ways, each
  block computes its share's partial result and log-sum-exp into an f32 workspace, and `attention_combine` (a
  second, verified kernel) merges them.

`AttentionPlan.run_on_interpreter` runs the same kernels and parameters on the CPU interpreter (small shapes),
which is how the tests check every mechanism without a GPU.

Variable-length batches and a paged KV cache are their own calls (`argus.kernels.sdpa_varlen`,
`argus.kernels.sdpa_paged`). Non-causal prefill on two or three consumer warpgroups runs the overlapped loop
(each tile's softmax beside the previous tile's P V, `OVERLAP_PREFILL`). Built but off (measured slower,
docs/attention.md): ping-pong between the consumer warpgroups, and persistent blocks for non-causal work
(`PERSISTENT`: correct, 0.90-0.96x the grid kernel on an H200, `unknown` to the verifier). Not built yet (issue 22):
a persistent scheduler that pays, and one for causal work.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace
from typing import Any

from argus.atoms.common import SMS, WARPGROUP_SIZE, consumer_registers, shared_budget
from argus.ir.types import DTypeError, dtype_from_name
from argus.kernels import arrays, attention, matmul

#: Input dtypes (Q, K, V) and output dtypes `sdpa` takes.
INPUTS = ("bf16", "f16")
OUTPUTS = ("bf16", "f16", "f32")
#: The deepest K/V pipeline a configuration gets. Two: on an H200 a third or fourth stage was never faster and up
#: to 6 % slower (d128 causal), for prefill and decode alike, with P in registers and the warpgroups releasing
#: stages for themselves (benchmarks/results/2026-11-28-attention-gpu2, the "2 stages" column).
MAX_STAGES = 2
#: Head dims: multiples of `attention.HEAD_DIM_MULTIPLE` (16-byte rows) up to this (whole 64-column panels in the
#: kernel, the columns past the head dim zeros).
MAX_HEAD_DIM = attention.MAX_HEAD_DIM
#: The most ways the keys are split, and the fewest key tiles a split gets.
MAX_SPLITS = 32
MIN_TILES_PER_SPLIT = 2
#: The combine kernel's tile: rows, value columns.
COMBINE_TILE = (16, 64)
#: Non-causal attention of head dims up to this many columns runs three consumer warpgroups (192 query rows a
#: block, 160 registers each) where the query has more than 128 rows: measured 1.07-1.13x two warpgroups at d64
#: (the softmax is a larger share of a d64 tile: a third warpgroup's MMAs fill the tensor cores while two run
#: theirs), the same speed at d128; slower for causal d64 (192x64 tiles: 0.85-0.92x; 192x128 ones spill at 160
#: registers). benchmarks/results/2026-12-01-attention-tiles/. With a key tail too (since session 37: the verifier's
#: register estimate no longer counts the tail mask, an integer function of the coordinates that ptxas folds, as
#: stored: 164 of the 160 before, and ptxas spills nothing); varlen on three ran 1.20x its two-warpgroup form (every
#: tile masked, call 6 there), the bhsd tail itself is not timed yet.
THREE_CONSUMERS_HEAD_DIM = 64
#: Causal prefill launches its blocks longest first (AttentionConfig.LPT): measured 1.11-1.31x the launch order
#: before (query blocks fastest, first to last) where the grid is a few waves (512 blocks: d64 0.78 -> 0.87-0.97x
#: cuDNN, d128 0.85-0.88 -> 0.93-1.09x, d256 0.91 -> 0.97-1.15x), 1.00-1.04x at 2048 blocks. Same results.
LONGEST_FIRST = True
#: ... but only where the grid is at most this many waves: its order runs every head's last query block before any
#: head's second last, so a head's query blocks, which read the same keys and values, run far apart in time, and at
#: many waves the keys come from device memory again and again. Measured on an H200 (session 53,
#: `benchmarks/results/2026-12-04-attention-persistent/`, calls 12-13, interleaved with cuDNN): causal at 512 blocks
#: (3.9 waves) LPT 0.89-1.07x cuDNN against 0.79-0.88x in launch order; at 2048 blocks launch order 0.75-0.91x
#: against 0.73-0.87x (d256 0.89 against 0.74 at S = 1k), at 4096 and 8192 blocks 0.72-0.90x against 0.69-0.81x.
LONGEST_FIRST_MAX_WAVES = 8
#: Causal prefill whose head dims reach this many columns computes query blocks in pairs (`AttentionConfig.PAIRS`:
#: block p and n - 1 - p in one block, every block n + 1 key tiles, no launch order needed) where two Q buffers fit.
#: Measured on an H200 (session 53, `benchmarks/results/2026-12-04-attention-persistent/`, call 15, the verified
#: kernel, interleaved with cuDNN): d128 causal 0.93 / 1.01 / 1.06 -> 0.96 / 1.05 / 1.08x cuDNN at S = 1k / 2k / 4k
#: (B·H·S = 64k), 0.79 / 0.83 / 0.84 -> 0.83 / 0.85 / 0.85x at 16 times the tokens, GQA 32/8 0.86 -> 0.90x; d64
#: causal 0.91-0.92x against LPT's 0.90-0.98x and 0.72x against 0.72-0.76x in launch order: not taken there.
QUERY_PAIRS_MIN_WIDTH = 128
#: Non-causal prefill on two or three consumer warpgroups overlaps each tile's softmax with the previous tile's
#: O += P V inside each warpgroup (AttentionConfig.OVERLAP; FlashAttention-3's intra-warpgroup overlap): measured
#: 1.02-1.11x the plain loop on every such row (d128 S=16k 0.90-0.92 -> 0.99-1.00x cuDNN, GQA 32/8 0.87-0.90 ->
#: 0.96-0.97x, d256 0.91-0.92 -> 0.95-0.99x, d64 on three warpgroups 0.84-0.94 -> 0.88-0.96x); neutral to 2 % slower
#: on causal grids of many blocks (its first and last tiles are peeled) and on decoding, which keep the plain loop.
#: benchmarks/results/2026-12-02-attention-overlap/.
OVERLAP_PREFILL = True
#: Head dim -> every how many exponentials of a thread's scores one is evaluated on the FMA pipe in causal prefill
#: (`AttentionConfig.EXP2_FMA`; a head dim not listed: none). At head dim 64 the special-function unit's ex2 takes
#: as long as the MMAs (16 a cycle per SM against 256 FLOP of MMA a score). Measured on an H200
#: (`benchmarks/results/2026-12-03-attention-exp2/`, two calls, interleaved with cuDNN): causal d64 (two consumer
#: warpgroups) +1.9-2.5 % at every sixth, both calls (S = 1k, 4k, 16k: 199 -> 203, 309 -> 315, 355 -> 364 TFLOP/s
#: in the second); non-causal rows (three consumers, the overlapped loop: bound by instruction issue as much) 11-30 %
#: slower at every share tried (2, 4, 6, 8), d128 6-20 % slower: not taken there.
EXP2_FMA_CAUSAL_BY_HEAD_DIM: dict[int, int] = {64: 6}
#: setmaxnreg budgets: the producer warpgroup's, and the most a consumer warpgroup takes (what two consumers get;
#: three get what the register file leaves them, 160)
PRODUCER_REGISTERS = 24
MAX_CONSUMER_REGISTERS = 240


class AttentionError(ValueError):
    """A problem `sdpa` does not take, with the reason."""


def check_heads(dtype: str, out: str, heads: int, kv_heads: int, d: int, dv: int, scale: float | None) -> None:
    """AttentionError unless the dtypes, heads, head dims and scale are ones every attention call here takes (`sdpa`,
    `sdpa_varlen`, `sdpa_paged`): bf16 or f16 inputs, an output in `OUTPUTS`, query heads a multiple of the
    key/value heads, head dims multiples of 8 up to `MAX_HEAD_DIM`, a nonzero scale."""
    if dtype not in INPUTS:
        raise AttentionError(f"inputs in {dtype}: attention takes {', '.join(INPUTS)}")
    if out not in OUTPUTS:
        raise AttentionError(f"output in {out}: attention writes {', '.join(OUTPUTS)}")
    for name, x in (("heads", heads), ("kv_heads", kv_heads), ("d", d), ("dv", dv)):
        if x < 1:
            raise AttentionError(f"{name} = {x}: every extent must be positive")
    if scale == 0.0:
        raise AttentionError("scale = 0: the kernels read 0 as 'the default, 1/sqrt(D)'; pass a nonzero scale")
    if heads % kv_heads:
        raise AttentionError(f"{heads} query heads over {kv_heads} key/value heads: the query heads must be a multiple")
    for name, x in (("d", d), ("dv", dv)):
        if x % attention.HEAD_DIM_MULTIPLE or x > MAX_HEAD_DIM:
            raise AttentionError(
                f"head dim {name} = {x}: multiples of {attention.HEAD_DIM_MULTIPLE} up to {MAX_HEAD_DIM} are "
                "supported (rows of 16 bytes, which TMA reads; a head dim short of a multiple of 64 runs on zero "
                "columns up to the next one)"
            )


def check_window(window: Any, causal: bool) -> None:
    """AttentionError unless `window` is 0 or a positive number of keys with `causal` (a sliding window is the last
    keys up to each query's causal diagonal)."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 0 or (window and not causal):
        raise AttentionError(
            f"window = {window!r}: a sliding window is a number of keys up to each query's causal diagonal "
            "(causal=True); 0 for none"
        )


@dataclass(frozen=True)
class AttentionProblem:
    """One attention call: `batch` x `heads` query heads over `kv_heads` key/value heads, query length `sq`, key
    length `sk`, head dims `d` (Q, K) and `dv` (V, O)."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    sk: int
    d: int
    dv: int
    causal: bool = False
    dtype: str = "bf16"
    out: str = "bf16"
    scale: float | None = None
    layout: str = "bhsd"  # or "bshd": (batch, length, heads, head dim)
    #: a sliding window (causal only): each query sees the `window` keys up to its diagonal; 0: all of them
    window: int = 0

    def __post_init__(self) -> None:
        if self.layout not in attention.LAYOUTS:
            raise AttentionError(f"layout {self.layout!r}: sdpa takes {', '.join(attention.LAYOUTS)}")
        check_window(self.window, self.causal)
        for name in ("batch", "sq", "sk"):
            if getattr(self, name) < 1:
                raise AttentionError(f"{name} = {getattr(self, name)}: every extent must be positive")
        check_heads(self.dtype, self.out, self.heads, self.kv_heads, self.d, self.dv, self.scale)

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def windowed(self) -> int:
        """The window the kernel applies: `window`, or 0 where it keeps every causal key (window >= sk)."""
        return self.window if self.window < self.sk else 0

    def flops(self) -> float:
        """Multiply-adds of QK^T and PV, counted as 2 flops each, over the (query, key) pairs the mask keeps."""
        pairs = self.sq * self.sk
        if self.causal:  # keys j <= i + sk - sq for each query i (and within the window: j > i + sk - sq - window)
            offset, w = self.sk - self.sq, self.windowed or self.sk
            pairs = sum(max(0, min(self.sk, i + offset + 1) - max(0, i + offset + 1 - w)) for i in range(self.sq))
        return 2.0 * self.batch * self.heads * pairs * (self.d + self.dv)


@dataclass(frozen=True)
class AttentionConfig:
    BM: int
    BN: int
    STAGES: int
    CONSUMERS: int
    SPLITS: int = 1  # ways the keys are split (then `attention_combine` merges the partial results)
    PACK: bool = False  # the GROUP query heads of a key/value head as rows of one tile
    #: P kept in registers as P @ V's A operand (the ``.rs`` wgmma) instead of going through shared memory (which it
    #: then does not take): `choose` turns it on (correct and 1.0-1.37x faster on an H200,
    #: benchmarks/results/2026-11-28-attention-gpu.md)
    P_REGISTERS: bool = False
    #: the consumer warpgroups take turns (FA3's ping-pong, `flash_attention`'s PINGPONG): two consumers only. Off:
    #: 0.70-0.85x the speed of free-running warpgroups on an H200 (each warpgroup's softmax is longer than the
    #: other's MMAs, so the strict alternation idles the tensor cores; benchmarks/results/2026-11-28-attention-gpu3)
    PINGPONG: bool = False
    #: O += P V of the previous tile overlapped with this tile's softmax (`flash_attention`'s OVERLAP; P in registers).
    #: Off: correct, but 0.63-0.99x the speed of the plain loop on an H200, and its warp roles verify `unknown`
    #: (benchmarks/results/2026-11-28-attention-gpu5.md)
    OVERLAP: bool = False
    #: causal blocks launched longest first (`flash_attention`'s LPT): `choose` turns it on for causal prefill
    LPT: bool = False
    #: every EXP2_FMA-th exponential of a thread's scores on the FMA pipe rather than the special-function unit
    #: (`flash_attention`'s EXP2_FMA; 0: none); `choose` takes `EXP2_FMA_CAUSAL_BY_HEAD_DIM`
    EXP2_FMA: int = 0
    #: one block per SM walking the units (query blocks of a head), BLOCKS apart (`flash_attention`'s PERSISTENT):
    #: a unit's first key tiles and Q load while the previous one's last tiles and epilogue run; non-causal and
    #: unsplit only (its units are all one length)
    PERSISTENT: bool = False
    #: Q's buffers in shared memory (2: the next unit's Q lands while this one runs; PERSISTENT only)
    Q_BUFFERS: int = 1
    #: the persistent blocks launched, at most (0: one per SM); fewer where the problem has fewer units
    BLOCKS: int = 0
    #: blocks resident on an SM together (`T.grid(..., blocks_per_sm=)`): one block's prologue and epilogue overlap
    #: another's key tiles; the shared memory and the consumers' registers are shared out
    BLOCKS_PER_SM: int = 1
    #: causal: query blocks i and n - 1 - i in one block, one after the other (`flash_attention`'s PAIRS; two Q
    #: buffers): every block sees n + 1 key tiles, and the second block's loads overlap the first's last tiles;
    #: `choose` takes it from `QUERY_PAIRS_MIN_WIDTH`
    PAIRS: bool = False
    #: split keys merged in the same launch (`flash_attention_combined`: the splits of a unit meet at a group barrier
    #: and merge its rows, no `attention_combine` launch); the grid must fit one wave. `choose` takes it only with
    #: `COMBINE_IN_KERNEL`
    COMBINED: bool = False

    def consumer_registers(self) -> int:
        """Each consumer warpgroup's setmaxnreg budget: what a resident block's share of the register file
        (BLOCKS_PER_SM blocks) leaves the CONSUMERS warpgroups beside the producer's, at most MAX_CONSUMER_REGISTERS
        (240 for one or two of one block, 160 for three)."""
        threads = WARPGROUP_SIZE * (1 + self.CONSUMERS)
        return consumer_registers(
            threads, self.CONSUMERS, self.BLOCKS_PER_SM, PRODUCER_REGISTERS, MAX_CONSUMER_REGISTERS
        )

    def label(self) -> str:
        extra = (f" split{self.SPLITS}" if self.SPLITS > 1 else "") + (" packed" if self.PACK else "")
        extra += " regP" if self.P_REGISTERS else ""
        extra += " pingpong" if self.PINGPONG else ""
        extra += " overlap" if self.OVERLAP else ""
        extra += " lpt" if self.LPT else ""
        extra += f" exp2fma{self.EXP2_FMA}" if self.EXP2_FMA else ""
        extra += f" persistent q{self.Q_BUFFERS}" if self.PERSISTENT else ""
        extra += f" b{self.BLOCKS}" if self.PERSISTENT and self.BLOCKS else ""
        extra += f" x{self.BLOCKS_PER_SM}" if self.BLOCKS_PER_SM > 1 else ""
        extra += " pairs" if self.PAIRS else ""
        extra += " combined" if self.COMBINED else ""
        return f"{self.BM}x{self.BN} s{self.STAGES} c{self.CONSUMERS}{extra}"


#: Whether a decoding step (one query token) against (B, S, H, D) tensors runs the (B, H, S, D) mechanisms with K and
#: V read in place (`kernel_layouts`: packed query heads, split keys, their merge in the launch), and a short query of
#: several tokens too where those mechanisms apply (`query_copied`); off, it runs the (B, S, H, D) kernel, one block
#: of 64 query rows per query head over every key. A switch for A/B runs.
DECODE_KV_IN_PLACE = True


def kernel_layouts(problem: AttentionProblem) -> tuple[str, str]:
    """(LAYOUT, KV_LAYOUT) of the kernel that runs `problem`: its own layout, except (with `DECODE_KV_IN_PLACE`) a
    short query against (B, S, H, D) tensors, which the kernel reads as (B, H, S, D) with K and V as they are
    ("bhsd", "bshd"), packing query heads and splitting keys as for (B, H, S, D) tensors: one query token (a
    decoding step), whose q (B, 1, H, D), O and LSE are the same bytes as (B, H, 1, D) and (B, H, 1), or several
    where `query_copied` says so."""
    if DECODE_KV_IN_PLACE and problem.layout == "bshd" and (problem.sq == 1 or query_copied(problem)):
        return "bhsd", "bshd"
    return problem.layout, ""


def query_copied(problem: AttentionProblem) -> bool:
    """Whether a (B, S, H, D) problem of several query tokens (speculative decoding's drafts, a decode step's
    chunk) runs with Q copied to (B, H, SQ, D) and O back from it (`prepare`: two copies of B * SQ * H * D values
    among the call's launches, against the K/V read of B * SK * HK * (D + DV)), K and V read in place: where the
    (B, H, S, D) configuration of the same problem splits the keys or packs the query heads, which the (B, S, H, D)
    kernel cannot (one block of 64 rows per query head over every key). Prefill (blocks that fill the GPU) stays
    in place."""
    if not DECODE_KV_IN_PLACE or problem.layout != "bshd" or problem.sq == 1:
        return False
    config = choose(replace(problem, layout="bhsd"))
    return config.SPLITS > 1 or config.PACK


def packable(problem: AttentionProblem) -> bool:
    """Whether the query heads of one key/value head may be rows of one tile: grouped heads, a short query, no mask
    that depends on the row (causal with more than one query token), and Q in the (B, H, SQ, D) layout (as the
    kernel reads it: `kernel_layouts`)."""
    short = problem.group > 1 and problem.sq * problem.group <= 128
    row_free = not problem.causal or (problem.sq == 1 and not problem.windowed)  # a window is a mask of the row
    return short and row_free and kernel_layouts(problem)[0] == "bhsd"


def kernel_extents(problem: AttentionProblem, pack: bool) -> tuple[int, int, int]:
    """(matrices, rows per matrix, group) as the kernel sees the problem: packed, B * HK matrices of GROUP * SQ rows
    and one query head per key/value head."""
    if pack:
        return problem.batch * problem.kv_heads, problem.group * problem.sq, 1
    return problem.batch * problem.heads, problem.sq, problem.group


def fits(problem: AttentionProblem, config: AttentionConfig) -> bool:
    """Whether the configuration's shared memory fits a block's share of an SM (`BLOCKS_PER_SM` blocks)."""
    return shared_bytes(problem, config) <= shared_budget(config.BLOCKS_PER_SM)


def shared_bytes(problem: AttentionProblem, config: AttentionConfig) -> int:
    """The shared memory a configuration takes: Q, the K/V stages and P (16-bit; none where P stays in registers),
    and the mbarriers (V's own pair per stage with OVERLAP; Q's emptied barriers when PERSISTENT)."""
    d, dv = attention.tile_width(problem.d), attention.tile_width(problem.dv)  # whole panels in shared memory
    elements = config.Q_BUFFERS * config.BM * d + config.STAGES * config.BN * (d + dv)
    elements += 0 if config.P_REGISTERS else config.BM * config.BN
    q_barriers = config.Q_BUFFERS * (2 if config.PERSISTENT else 1)
    return 2 * elements + 8 * (q_barriers + (4 if config.OVERLAP else 2) * config.STAGES)


#: A block's fixed work (its prologue: Q's load and the pipeline's fill; its epilogue: the partial result written
#: and merged by the combine), in key tiles, for `key_splits`' cost.
SPLIT_OVERHEAD_TILES = 1
#: Whether `choose` merges split keys in the attention kernel's own launch (`AttentionConfig.COMBINED`) where the
#: grid fits one wave. Measured on an H100 (benchmarks/results/2026-12-06-attention-merged/, call 1, interleaved with
#: the two launches, cuDNN and FlashAttention-2, every split row of `benchmarks/attention_decode.py`): 0.85-1.00x the
#: two launches' time, never slower (B=1 32/8 at 8k 29.5 -> 26.4 us, 0.93 -> 1.04x cuDNN; multi-query 16/1 52.4 ->
#: 44.7 us, 0.83 -> 0.97x), and bit for bit their result, relaunched on the same counters. A switch for A/B runs.
COMBINE_IN_KERNEL = True


def key_splits(blocks: int, key_tiles: int, sms: int = SMS) -> int:
    """The ways to split the keys of `blocks` blocks (each `key_tiles` tiles long) on a GPU of `sms` SMs, one block
    resident per SM (the kernel's setmaxnreg budgets take the whole register file): the split count of least
    ``waves * (tiles per split + SPLIT_OVERHEAD_TILES)``, the fewest splits among equals. The waves are what the
    rule before it missed: 32 blocks split 5 ways are 160 blocks, a second wave of 28 on an H200's SMS, which takes as
    long as the first (measured: decode at 66 % of HBM bandwidth, benchmarks/results/2026-11-28-attention-gpu6.md);
    split 4 ways they are one wave of 128. At most MAX_SPLITS ways, at least MIN_TILES_PER_SPLIT tiles each."""
    most = max(1, min(MAX_SPLITS, key_tiles // MIN_TILES_PER_SPLIT))
    best, best_cost = 1, None
    for splits in range(1, most + 1):
        waves = -(-(blocks * splits) // sms)
        cost = waves * (-(-key_tiles // splits) + SPLIT_OVERHEAD_TILES)
        if best_cost is None or cost < best_cost:
            best, best_cost = splits, cost
    return best


def choose(problem: AttentionProblem, sms: int = SMS) -> AttentionConfig:
    """The configuration `sdpa` runs `problem` on (see the module docstring), for a GPU of `sms` SMs."""
    pack = packable(problem)
    matrices, rows, _ = kernel_extents(problem, pack)
    width = attention.tile_width(max(problem.d, problem.dv))  # the MMAs' width: whole 64-column panels
    bn = 128 if width <= 128 else 64
    consumers = 1 if rows <= 64 else 2
    if rows > 128 and width <= THREE_CONSUMERS_HEAD_DIM and not problem.causal:
        consumers = 3  # 192-row tiles (see THREE_CONSUMERS_HEAD_DIM)
    bm = 64 * consumers
    blocks = -(-rows // bm) * matrices
    seen = min(problem.sk, problem.windowed + bm) if problem.windowed else problem.sk  # the keys a block reads
    key_tiles = -(-seen // bn)
    splits = 1
    layout = kernel_layouts(problem)[0]
    if blocks < sms and layout == "bhsd":  # too few blocks: split the keys, MIN_TILES_PER_SPLIT tiles each
        splits = key_splits(blocks, key_tiles, sms)
    waves = -(-blocks // sms)
    prefill = problem.causal and splits == 1 and not pack
    uneven = prefill and not problem.windowed  # blocks of a sliding window read as many key tiles each
    pairs = uneven and width >= QUERY_PAIRS_MIN_WIDTH and layout == "bhsd"
    lpt = LONGEST_FIRST and uneven and waves <= LONGEST_FIRST_MAX_WAVES
    overlap = OVERLAP_PREFILL and not problem.causal and consumers >= 2 and splits == 1 and not pack
    for stages in range(MAX_STAGES, 1, -1):
        config = AttentionConfig(
            bm, bn, stages, consumers, splits, pack, P_REGISTERS=True, OVERLAP=overlap, LPT=lpt,
            EXP2_FMA=EXP2_FMA_CAUSAL_BY_HEAD_DIM.get(width, 0) if problem.causal and splits == 1 and not pack else 0,
        )  # fmt: skip
        paired = replace(config, PAIRS=True, LPT=False, Q_BUFFERS=2)
        if pairs and fits(problem, paired):
            return paired
        if fits(problem, config):
            combined = replace(config, COMBINED=True)
            if COMBINE_IN_KERNEL and splits > 1 and combined_refusal(problem, combined, sms) is None:
                return combined
            return config
    raise AttentionError(f"no configuration of {problem} fits the shared memory")  # unreachable for d, dv <= 256


@dataclass(frozen=True)
class AttentionPlan:
    problem: AttentionProblem
    config: AttentionConfig

    def extents(self) -> tuple[int, int, int]:
        """(matrices, rows per matrix, group) of the kernel's Q (`kernel_extents`)."""
        return kernel_extents(self.problem, self.config.PACK)

    def units(self) -> int:
        """The (query block, head) units of the problem: the blocks of a non-persistent grid (per split)."""
        matrices, rows, _ = self.extents()
        return -(-rows // self.config.BM) * matrices

    def blocks(self) -> int:
        """The blocks launched: with PERSISTENT one per SM (of the GPU `sdpa` runs on), fewer where there are
        fewer units."""
        units = self.units() * self.config.SPLITS
        if self.config.PAIRS:  # two query blocks a block
            matrices, rows, _ = self.extents()
            q_blocks = -(-rows // self.config.BM)
            return (q_blocks + 1) // 2 * matrices
        return min(units, self.config.BLOCKS or SMS) if self.config.PERSISTENT else units

    def params(self) -> tuple[tuple[str, Any], ...]:
        """The attention kernel's parameters (`flash_attention`'s, or with COMBINED `flash_attention_combined`'s)."""
        if self.config.COMBINED:
            drop = ("PERSISTENT", "BLOCKS", "Q_BUFFERS", "PAIRS", "LPT", "OVERLAP", "PINGPONG")
            kept = {k: v for k, v in self._params() if k not in drop}
            return tuple(sorted({**kept, "OUT": self.problem.out, "WAVE": SMS * self.config.BLOCKS_PER_SM}.items()))
        return self._params()

    def _params(self) -> tuple[tuple[str, Any], ...]:
        p, c = self.problem, self.config
        layout, kv_layout = kernel_layouts(p)
        return tuple(
            sorted(
                {
                    "BM": c.BM,
                    "BN": c.BN,
                    "STAGES": c.STAGES,
                    "CONSUMERS": c.CONSUMERS,
                    "CONSUMER_REGS": c.consumer_registers(),
                    "PRODUCER_REGS": PRODUCER_REGISTERS,
                    "SPLITS": c.SPLITS,
                    "LAYOUT": layout,
                    "KV_LAYOUT": kv_layout,
                    "P_REGISTERS": c.P_REGISTERS,
                    "PINGPONG": c.PINGPONG,
                    "OVERLAP": c.OVERLAP,
                    "LPT": c.LPT,
                    "EXP2_FMA": c.EXP2_FMA,
                    "PERSISTENT": c.PERSISTENT,
                    "BLOCKS": self.blocks() if c.PERSISTENT else 0,
                    "Q_BUFFERS": c.Q_BUFFERS,
                    "BLOCKS_PER_SM": c.BLOCKS_PER_SM,
                    "PAIRS": c.PAIRS,
                    "WINDOW": p.windowed,
                    "D": p.d,
                    "DV": p.dv,
                    "CAUSAL": p.causal and not c.PACK,  # packed: no mask, or one token's, which keeps every key
                    "MASK_TAIL": p.sk % c.BN != 0,  # else every key tile is whole (a causal mask masks tails itself)
                    "GROUP": self.extents()[2],
                    "SCALE": p.scale if p.scale is not None else 0.0,
                    "IN": p.dtype,
                    "OUT": p.out if c.SPLITS == 1 else "f32",
                }.items()
            )
        )

    def combine_params(self) -> tuple[tuple[str, Any], ...] | None:
        """The parameters of `attention_combine` where the keys are split, else None."""
        if self.config.SPLITS == 1 or self.config.COMBINED:
            return None
        br, bd = COMBINE_TILE
        return tuple(sorted({"SPLITS": self.config.SPLITS, "BR": br, "BD": bd, "OUT": self.problem.out}.items()))

    def kernel(self) -> Any:
        """The traced attention kernel this plan launches."""
        return (_traced_combined if self.config.COMBINED else _traced)(self.params())

    def counters(self) -> int:
        """The group-barrier counters a COMBINED plan's kernel takes: one per (query block, head) unit."""
        return self.units()

    def kernels(self) -> list[Any]:
        """Every traced kernel this plan launches, in order (the attention kernel, then the combine)."""
        combine = self.combine_params()
        return [self.kernel()] + ([_traced_combine(combine)] if combine is not None else [])

    def describe(self) -> dict[str, Any]:
        return {"problem": asdict(self.problem), "config": self.config.label(), "params": dict(self.params())}

    def run_on_interpreter(self, q: Any, k: Any, v: Any) -> tuple[Any, Any]:
        """(O, LSE) on the lane-level interpreter for numpy arrays q, k, v in the problem's layout (q (B, H, SQ, D),
        k (B, HK, SK, D), v (B, HK, SK, DV), or (B, S, heads, dim) each for "bshd"), through the kernels and
        parameters a GPU call launches (small shapes only)."""
        import numpy as np

        from argus.interp import run_kernel

        p = self.problem
        q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
        layout, kv_layout = kernel_layouts(p)
        if p.layout == "bshd" and layout == "bhsd":  # a short query: read as (B, H, SQ, D) (`prepare`'s copy)
            q = np.ascontiguousarray(q.transpose(0, 2, 1, 3))
        if layout == "bshd":
            o = np.full((p.batch, p.sq, p.heads, p.dv), np.nan)
            lse = np.full((p.batch, p.heads, p.sq), np.nan)
            run_kernel(self.kernel(), {"Q": q, "K": k, "V": v, "O": o, "LSE": lse})
            return o, lse
        matrices, rows, _ = self.extents()
        splits = self.config.SPLITS
        o = np.full((matrices, rows, p.dv), np.nan)
        lse = np.full((matrices, rows), np.nan)
        lead = (splits,) if splits > 1 else ()
        part_o = np.full((*lead, matrices, rows, p.dv), np.nan) if splits > 1 else o
        part_lse = np.full((*lead, matrices, rows), np.nan) if splits > 1 else lse
        tensors = {  # (a short query in (B, S, H, D): q, O and LSE as (B, H, SQ, ...); K and V as they are)
            "Q": q.reshape(matrices, rows, p.d),
            "K": k if kv_layout == "bshd" else k.reshape(-1, p.sk, p.d),
            "V": v if kv_layout == "bshd" else v.reshape(-1, p.sk, p.dv),
            "O": part_o,
            "LSE": part_lse,
        }
        if self.config.COMBINED:  # the partial results, then their merge, in one kernel
            tensors = {**tensors, "OP": tensors.pop("O"), "LP": tensors.pop("LSE"), "O": o, "LSE": lse}
            run_kernel(self.kernel(), {**tensors, "F": np.zeros(self.counters(), np.int32)})
        else:
            run_kernel(self.kernel(), tensors)
            if splits > 1:
                run_kernel(self.kernels()[1], {"OP": part_o, "LP": part_lse, "O": o, "LSE": lse})
        o = o.reshape(p.batch, p.heads, p.sq, p.dv)
        if p.layout == "bshd":  # back to (B, SQ, H, DV) (`prepare`'s last copy; one token's is the same bytes)
            o = np.ascontiguousarray(o.transpose(0, 2, 1, 3))
        return o, lse.reshape(p.batch, p.heads, p.sq)


def plan(problem: AttentionProblem, config: AttentionConfig | None = None) -> AttentionPlan:
    """What `sdpa` runs for `problem`: `config`, checked against the problem, or `choose`'s."""
    if config is not None and config.PACK and not packable(problem):
        raise AttentionError(
            f"{config.label()} packs query heads, which {problem} does not allow (packing needs grouped heads, a "
            "short query, no row-dependent mask and the (B, H, S, D) layout)"
        )
    if config is not None and config.PAIRS and problem.windowed:
        raise AttentionError(
            f"{config.label()}: query-block pairs are for causal blocks of unequal length, not a window"
        )
    if config is not None and config.PERSISTENT and (problem.causal or config.SPLITS > 1 or config.LPT):
        raise AttentionError(
            f"{config.label()}: persistent blocks walk units of one length: non-causal and unsplit attention only"
        )
    if config is not None and (
        config.Q_BUFFERS not in (1, 2) or (config.Q_BUFFERS == 2 and not (config.PERSISTENT or config.PAIRS))
    ):
        raise AttentionError(f"{config.label()}: one buffer for Q, or two for persistent blocks (PERSISTENT) or PAIRS")
    if (
        config is not None
        and config.PAIRS
        and (
            not problem.causal
            or config.SPLITS > 1
            or config.LPT
            or config.PERSISTENT
            or kernel_layouts(problem)[0] != "bhsd"
        )
    ):
        raise AttentionError(
            f"{config.label()}: query-block pairs are for causal, unsplit (B, H, S, D) attention without LPT or "
            "persistent blocks"
        )
    if config is not None and config.PINGPONG and config.CONSUMERS < 2:
        raise AttentionError(f"{config.label()}: ping-pong takes turns between two consumer warpgroups, not one")
    if config is not None and config.LPT and (not problem.causal or config.SPLITS > 1 or config.PACK):
        raise AttentionError(f"{config.label()}: the longest-first order is for causal blocks, unsplit, unpacked")
    if config is not None and config.OVERLAP and not config.P_REGISTERS:
        raise AttentionError(f"{config.label()}: the overlapped loop keeps P in registers (P_REGISTERS)")
    if config is not None and config.COMBINED and config.SPLITS == 1:  # nothing to merge: the one launch it is
        config = replace(config, COMBINED=False)
    if config is not None and config.COMBINED and (why := combined_refusal(problem, config)) is not None:
        raise AttentionError(f"{config.label()}: the split keys cannot be merged in the kernel's launch: {why}")
    return AttentionPlan(problem, config or choose(problem))


@functools.lru_cache(maxsize=64)
def _traced(params: tuple[tuple[str, Any], ...]) -> Any:
    return attention.flash_attention.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_combine(params: tuple[tuple[str, Any], ...]) -> Any:
    return attention.attention_combine.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_combined(params: tuple[tuple[str, Any], ...]) -> Any:
    return attention.flash_attention_combined.trace(**dict(params))


_TRACERS = {"attention": _traced, "combine": _traced_combine, "combined": _traced_combined}


def combined_refusal(problem: AttentionProblem, config: AttentionConfig, sms: int = SMS) -> str | None:
    """Why `config` cannot merge its split keys in its own launch (`AttentionConfig.COMBINED`) on a GPU of `sms`
    SMs, or None where it can: split keys in the (B, H, S, D) layout, one unit a block (no persistent blocks, pairs,
    longest-first order, overlap or ping-pong), the grid in one wave (a unit's blocks wait for each other), and the
    block's rows in shares the consumer threads fill (`attention.merge_reducers`)."""
    if config.SPLITS == 1:
        return "the keys are not split: there is nothing to merge"
    if kernel_layouts(problem)[0] != "bhsd":
        return "split keys are for the (B, H, S, D) layout (or a short query in (B, S, H, D): `kernel_layouts`)"
    if config.PERSISTENT or config.PAIRS or config.LPT or config.OVERLAP or config.PINGPONG:
        return "the merge takes one unit a block, without the overlapped loop or ping-pong"
    blocks = AttentionPlan(problem, replace(config, COMBINED=False)).blocks()
    if blocks > sms * config.BLOCKS_PER_SM:
        return f"{blocks} blocks wait for each other on {sms} SMs of {config.BLOCKS_PER_SM} block(s): not one wave"
    threads = WARPGROUP_SIZE * config.CONSUMERS
    if attention.merge_reducers(config.BM, config.SPLITS, problem.dv, threads) == 0:
        return f"{config.BM} rows of {problem.dv} values do not give {threads} threads a 4-value vector each"
    return None


#: Whether `prepare` launches the attention kernel and the combine as programmatic dependents (as the GEMM plans do,
#: `argus.kernels.matmul.DEPENDENT_LAUNCHES`: each may start while the grid before it in the stream finishes, and
#: waits for it before touching memory). Off: on an H200 it was no faster for decoding (the split kernel and its
#: combine, 16 rows: 0.4-2.4 % slower on 7, 2.4-3.3 % faster on the 3 rows split 32 ways, the rest within 0.3 %;
#: benchmarks/results/2026-12-01-attention-decode/decode2.md, "argus-nodep" there being today's default). A switch
#: for A/B measurements; `sdpa_paged` follows it.
DEPENDENT_LAUNCHES = False


def _loaded(kind: str, params: tuple[tuple[str, Any], ...]) -> Any:
    return _loaded_for(kind, params, DEPENDENT_LAUNCHES)


@functools.lru_cache(maxsize=64)
def _loaded_for(kind: str, params: tuple[tuple[str, Any], ...], dependent: bool) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel(_TRACERS[kind](params), dependent=dependent))


def _name(dtype: Any) -> str:
    """The DSL name (``"bf16"``) of a torch or numpy dtype, or AttentionError."""
    try:
        return dtype_from_name(str(dtype).removeprefix("torch.")).name
    except DTypeError:
        raise AttentionError(f"tensors of {dtype}: sdpa takes bf16 or f16 inputs") from None


def dtypes_of(tensors: dict[str, Any], out_dtype: Any = None) -> tuple[str, str]:
    """(input dtype, output dtype) as DSL names of the named tensors (`q` first) and the optional `out_dtype`
    (default: the inputs'), or AttentionError where they are not one bf16 or f16 dtype: the check every attention
    call here makes (`sdpa`, `sdpa_varlen`, `sdpa_paged`)."""
    names = {name: _name(x.dtype) for name, x in tensors.items()}
    dtype = next(iter(names.values()))
    if any(n != dtype for n in names.values()):
        listed = ", ".join(tensors)
        got = ", ".join(str(x.dtype) for x in tensors.values())
        raise AttentionError(f"{listed} in {got}: one dtype for all {len(tensors)}")
    return dtype, dtype if out_dtype is None else _name(out_dtype)


def problem_of(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    layout: str = "bhsd",
    window: int = 0,
) -> AttentionProblem:
    """The problem of q, k, v in `layout` (torch tensors or numpy arrays with a dtype name), checked for
    consistency: "bhsd" q (B, H, SQ, D), k (B, HK, SK, D), v (B, HK, SK, DV); "bshd" the length before the heads."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if len(x.shape) != 4:
            raise AttentionError(f"{name} has shape {tuple(x.shape)}: sdpa takes (batch, heads, length, head dim)")
    if layout == "bshd":
        (b, sq, h, d), (bk, sk, hk, dk), (bv, skv, hkv, dv) = q.shape, k.shape, v.shape
    else:
        (b, h, sq, d), (bk, hk, sk, dk), (bv, hkv, skv, dv) = q.shape, k.shape, v.shape
    if (bk, hk, sk) != (bv, hkv, skv) or bk != b or dk != d:
        raise AttentionError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} ({layout}): k and v need q's batch and "
            "head dim (k's), and one (heads, length) between them"
        )
    dtype, out = dtypes_of({"q": q, "k": k, "v": v}, out_dtype)
    return AttentionProblem(b, h, hk, sq, sk, d, dv, causal, dtype, out, scale, layout, window)


def prepare(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    layout: str = "bhsd",
    config: AttentionConfig | None = None,
    window: int = 0,
) -> tuple[Any, Any, list[Any]]:
    """(O, LSE, the prepared launches that compute them, in order): `sdpa` without the launches, for timing loops.
    The launches hold raw addresses: keep q, k, v, the results and the list (it holds the split workspace) alive
    while they are used. A relaunch reads q, k and v's current values where they were contiguous (a (B, S, H, D)
    query of several tokens that the kernel reads as (B, H, S, D) whatever its strides: its copy is the first
    launch, `query_copied`)."""
    import torch

    problem = problem_of(q, k, v, causal=causal, scale=scale, out_dtype=out_dtype, layout=layout, window=window)
    the_plan = plan(problem, config)
    kernel_layout, kv_layout = kernel_layouts(problem)
    copied = layout == "bshd" and kernel_layout == "bhsd" and problem.sq > 1  # q read through a copy (any strides)
    q = q if q.is_contiguous() or copied else q.contiguous()
    k, v = (x if x.is_contiguous() else x.contiguous() for x in (k, v))
    dtype = matmul.torch_dtype(problem.out)
    lse = torch.empty((problem.batch, problem.heads, problem.sq), dtype=torch.float32, device=q.device)
    if kernel_layout == "bshd":  # the tensors as they are: 4-d TMA boxes of one head's rows
        o = torch.empty((problem.batch, problem.sq, problem.heads, problem.dv), dtype=dtype, device=q.device)
        launches = matmul.Launches(
            [_loaded("attention", the_plan.params()).prepare(q, k, v, o, lse, dependent=DEPENDENT_LAUNCHES)]
        )
        launches.keep = [q, k, v, o, lse]
        return o, lse, launches
    # a short query in (B, S, H, D): one token's q (B, 1, H, D) and O (B, 1, H, DV) are (B, H, 1, ...)'s bytes;
    # several tokens' are copied to (B, H, SQ, ...) and back by the call's first and last launches (`query_copied`).
    # K and V as they are
    launches = matmul.Launches()
    shape = (problem.batch, *((problem.sq, problem.heads) if layout == "bshd" else (problem.heads, problem.sq)))
    o = torch.empty((*shape, problem.dv), dtype=dtype, device=q.device)
    q_kernel, o_kernel = q, o
    if copied:
        q_kernel = torch.empty((problem.batch, problem.heads, problem.sq, problem.d), dtype=q.dtype, device=q.device)
        o_kernel = torch.empty((problem.batch, problem.heads, problem.sq, problem.dv), dtype=dtype, device=q.device)
        launches.append(matmul.Copies(((q.transpose(1, 2), q_kernel),)))
    matrices, rows, _ = the_plan.extents()
    splits = the_plan.config.SPLITS
    out_views = (o_kernel.view(matrices, rows, problem.dv), lse.view(matrices, rows))
    if splits > 1:
        part_o = torch.empty((splits, matrices, rows, problem.dv), dtype=torch.float32, device=q.device)
        part_lse = torch.empty((splits, matrices, rows), dtype=torch.float32, device=q.device)
        first_out = (part_o, part_lse)
    else:
        first_out = out_views
    views = (
        q_kernel.view(matrices, rows, problem.d),
        k if kv_layout == "bshd" else k.view(-1, problem.sk, problem.d),
        v if kv_layout == "bshd" else v.view(-1, problem.sk, problem.dv),
        *first_out,
    )
    launches.keep = [q, k, v, o, lse, q_kernel, o_kernel, *first_out]
    sms = matmul.device_sms(q.device) if the_plan.config.COMBINED and q.is_cuda else SMS  # asked only when needed
    if the_plan.config.COMBINED and (why := combined_refusal(problem, the_plan.config, sms)) is not None:
        if config is not None and config.COMBINED:  # asked for: refused, not changed
            raise AttentionError(f"{config.label()} on this GPU: {why}")
        the_plan = plan(problem, replace(the_plan.config, COMBINED=False))  # two launches on a smaller GPU
    if the_plan.config.COMBINED:  # one launch: the partial results, then each unit's merge
        counters = torch.zeros(the_plan.counters(), dtype=torch.int32, device=q.device)  # reused by every relaunch
        kernel = _loaded("combined", the_plan.params())
        launches.append(kernel.prepare(*views, *out_views, counters, dependent=DEPENDENT_LAUNCHES))
        launches.keep.append(counters)
    else:
        launches.append(_loaded("attention", the_plan.params()).prepare(*views, dependent=DEPENDENT_LAUNCHES))
        if splits > 1:
            combine = _loaded("combine", the_plan.combine_params())
            launches.append(combine.prepare(part_o, part_lse, *out_views, dependent=DEPENDENT_LAUNCHES))
    if copied:
        launches.append(matmul.Copies(((o_kernel.transpose(1, 2), o),)))
    return o, lse, launches


def sdpa(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    return_lse: bool = False,
    layout: str = "bhsd",
    window: int = 0,
) -> Any:
    """softmax(q k^T * scale) v (scale: 1/sqrt(D) by default) for CUDA tensors (see the module docstring); with
    `return_lse`, (O, LSE). `window` > 0 (with `causal`): each query sees only the `window` keys up to its diagonal
    (a sliding window). Launches on the current stream and returns without synchronizing, as torch does."""
    o, lse, launches = prepare(q, k, v, causal=causal, scale=scale, out_dtype=out_dtype, layout=layout, window=window)
    for launch in launches:
        launch.launch()
    return (o, lse) if return_lse else o


def reference(
    q: Any, k: Any, v: Any, *, causal: bool = False, scale: float | None = None, window: int = 0
) -> tuple[Any, Any]:
    """(O, LSE) in float64 numpy for numpy q, k, v in `sdpa`'s (B, H, S, D) shapes: the definition the kernels are
    checked against (`argus.kernels.arrays.attention`; rows that see no key: O = 0, LSE = -inf)."""
    import numpy as np

    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    return arrays.attention(q, k, v, causal=causal, scale=scale, window=window)


__all__ = [
    "AttentionConfig",
    "check_heads",
    "check_window",
    "dtypes_of",
    "key_splits",
    "AttentionError",
    "AttentionPlan",
    "AttentionProblem",
    "choose",
    "kernel_extents",
    "packable",
    "plan",
    "prepare",
    "problem_of",
    "reference",
    "sdpa",
    "shared_bytes",
]
