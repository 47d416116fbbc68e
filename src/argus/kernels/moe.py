"""The MoE library calls on the kernels of `argus.kernels.grouped`: `grouped_mm` (``torch._grouped_mm`` for a 2-d
``a`` and a 3-d ``b``), `grouped_swiglu` (the up-projection with SwiGLU in its epilogue) and `moe_layer` (a MoE
layer's forward: routing, the two grouped GEMMs, the weighted combine), with their configuration by shape
(`choose`), the row-tile counts they schedule by (`tile_counts`, computed on the device without a host
synchronization) and their prepared launches (`prepare`). docs/moe.md says what is built, verified and measured."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from argus.atoms.common import SMS
from argus.kernels.grouped import (
    GLU_ACTIVATIONS,
    grouped_gemm_persistent,
    grouped_gemm_scaled,
    grouped_gemm_swiglu,
    grouped_gemm_swiglu_gathered,
    search_steps,
)
from argus.kernels.moe_combine import moe_combine, moe_glu_sum
from argus.kernels.moe_route import moe_route_rank, moe_route_select, moe_route_sorted, moe_route_topk

#: The kernels `prepare` launches, by name (and `prepare_scaled`'s FP8 one).
KERNELS = {
    "plain": grouped_gemm_persistent,
    "swiglu": grouped_gemm_swiglu,
    "swiglu_gathered": grouped_gemm_swiglu_gathered,
    "scaled": grouped_gemm_scaled,
}
#: Whether `combine` sums each token's rows with the DSL kernel (`argus.kernels.moe_combine`: the rows read once
#: through the routing's positions, one launch) rather than PyTorch's scatter back to token order and sum (one more
#: write and read of every routed row). On since measured on an H200 (``benchmarks/moe_layer_bench.py
#: --combine-kernel``, `benchmarks/results/2026-12-02-conv-split-moe-combine/`): the whole layer 1.04-1.40x faster
#: at 4096 and 16384 tokens on Mixtral, Qwen3-30B-A3B and DeepSeek-V3 shapes, every routing.
COMBINE_KERNEL = True
#: Columns of a row per block of `moe_combine`, at most (VEC = 8 values a thread: 128 threads).
COMBINE_BH = 1024
#: Whether `moe_layer` fuses the token gather into the up-projection's operand load (`grouped_gemm_swiglu_gathered`:
#: each routed row's token read by its own one-row TMA box) rather than gathering the routed rows with
#: ``index_select`` first (one more write and read of T * k rows of x, and a (T * k, H) buffer). Off: measured on an
#: H200 the one-row boxes cost more than the pass they save (the layer 1.17-1.61x slower at 4096 and 16384 tokens on
#: Mixtral, Qwen3-30B-A3B and DeepSeek-V3 shapes, `benchmarks/results/2026-12-02-moe-gather/`): a warp issues its
#: lanes' boxes one after another (UTMALDG takes warp-uniform operands) and each box moves 128 bytes. Take it where
#: the (T * k, H) buffer does not fit (1.9 GB at DeepSeek-V3's 16384 tokens).
FUSED_GATHER = False
#: A/B switches for measurement (`benchmarks/moe_layer_ab.py`): a renormalized softmax routing as the top-k of the
#: logits and their own softmax (`route`), and the layer's row-tile counts made once from the routing's counts
#: (`moe_layer`); off, the softmax over every expert and `tile_counts(offs, BM)` before each product.
TOPK_OF_LOGITS = True
SHARED_TILE_COUNTS = True
#: Whether `route` sorts the choices by expert with the two DSL kernels of `argus.kernels.moe_route` (the ranks,
#: counts and row ends in one launch, the sorted tokens, weights and order in a second) instead of PyTorch's stable
#: `argsort`, scatter-add, cumulative sum and gathers (about a dozen launches), and takes a renormalized softmax
#: routing's top-k and weights from `moe_route_topk` (one launch for a top-k, a softmax and a cast), where there are
#: at most `ROUTE_KERNEL_ROWS` choices (the sort counts O(choices^2) comparisons: a decode step's). Measured on an
#: H100 (benchmarks/results/2026-12-06-moe-route/, call 1, interleaved, graphed): the routing 1.9-2.3x faster at
#: 1-64 tokens (1.13x at 2048 choices), a Qwen3-30B-A3B one-token layer 1.51x (112 -> 75 µs), never slower.
ROUTE_KERNEL = True
ROUTE_KERNEL_ROWS = 2048
#: Whether `route` computes a 16-bit router's logits as one product with f32 accumulation and output
#: (`router_logits`) rather than converting x and the router to f32 first.
LOGITS_16BIT = True
#: Whether `route` takes the other routings' top-k (sigmoid scores, a correction bias, groups: DeepSeek-V3's; a
#: softmax that does not renormalize) from `moe_route_select` (one launch) where `ROUTE_KERNEL` applies, rather than
#: PyTorch's softmax or sigmoid, group top-k, scatter, mask, top-k, gather and sums (19 launches at DeepSeek-V3's one
#: token; measured on an H100, `benchmarks/results/2026-12-07-moe-select/`: its layer 1.12x faster at one token).
SELECT_KERNEL = True
#: `moe_route_rank`'s (rows, choices) tile and `moe_route_sorted`'s (routed rows, choices) tile.
ROUTE_TILE = (32, 128)
#: Whether `moe_layer` launches its own kernels (routing, products, gated sum, combine) as programmatic dependents of
#: the grid before them in the stream at decode sizes (`dependent_launches`; ``griddepcontrol``, generated with
#: ``dependent=True``: each may start while the one before it finishes and waits for it before touching memory;
#: `argus.runtime.loaded.PreparedLaunch.dependent`), as the dense GEMM's plans are
#: (`argus.kernels.matmul.DEPENDENT_LAUNCHES`). Measured on an H100 (`benchmarks/results/2026-12-07-moe-decode-pdl/`,
#: interleaved, graphed, off -> on): decode steps at one token Qwen3-30B-A3B 0.0740 -> 0.0713 ms, Mixtral 0.2789 ->
#: 0.2756, DeepSeek-V3 0.2908 -> 0.2913 (eager 1.03-1.24x faster), none slower by more than 0.3 % at 1-64 tokens;
#: prefill slower (Qwen3-30B-A3B at 4096 tokens 1.039 -> 1.092 ms, DeepSeek-V3 9.46 -> 10.02), so it launches plain.
#: Read at each call: an A/B switch (`benchmarks/moe_layer_ab.py --switches DEPENDENT_LAUNCHES`).
DEPENDENT_LAUNCHES = True
#: What the loaders (`_compiled`) generate for, the layer's choice for the launches it is making (`_launched_as`):
#: plain outside a layer (a library call alone does not know what runs before it).
_DEPENDENT = contextvars.ContextVar("argus_moe_dependent_launches", default=False)


def tile_counts(offs: Any, block_m: int) -> Any:
    """``tiles[g] = sum over h <= g of cdiv(rows of expert h, block_m)`` from the cumulative row ends `offs` (a torch
    tensor on any device, computed there without a host synchronization, or a numpy array), as int32."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency; numpy arrays need no torch
        torch = None
    if torch is not None and isinstance(offs, torch.Tensor):
        ends = offs.to(torch.int64)
        return tiles_of_counts(torch.diff(ends, prepend=ends.new_zeros(1)), block_m)
    import numpy as np

    ends = np.asarray(offs, dtype=np.int64)
    rows = np.diff(ends, prepend=0)
    return np.cumsum((rows + (block_m - 1)) // block_m).astype(np.int64)


def tiles_of_counts(counts: Any, block_m: int) -> Any:
    """`tile_counts` from each expert's row count (a torch tensor): ``cumsum(cdiv(counts, block_m))`` as int32, two
    launches (what `Routing.tiles` makes from the routing's counts, without `offs`' differences)."""
    import torch

    return torch.cumsum(torch.div(counts + (block_m - 1), block_m, rounding_mode="floor"), 0, dtype=torch.int32)


class GroupedError(ValueError):
    """A grouped GEMM call the kernel does not take (shapes, dtypes, layouts, devices), with what to pass instead."""


#: How the plain grouped kernel's prefill configurations store C (`grouped_gemm_persistent`'s EPILOGUE): full tiles
#: through TMA stores, the expert's partial tile through the bounded window. Measured on an H200
#: (`benchmarks/results/2026-12-02-moe-gather/`, call 3, interleaved with ``torch._grouped_mm``): the chosen
#: configurations' geometric mean over the issue's three shapes and three routings 1.120 -> 1.135x, over all five
#: shapes 1.121 -> 1.132x (Qwen3-30B-A3B balanced 0.999 -> 1.051x; DeepSeek-V3 one-hot 1.373 -> 1.353x). The decode
#: configurations (64-row tiles, one consumer) keep the direct store: not measured with TMA stores.
PLAIN_EPILOGUE = "tma"
#: The same for the gated up-projection (`grouped_gemm_swiglu`, and its gathered form): measured on an H200 (call 5
#: there, `swiglu_sweep.py --tma-store`), the issue's three shapes and three routings 1.255 -> 1.269x
#: ``torch._grouped_mm`` + silu * mul (geometric mean; every row as fast or faster, Qwen3-30B-A3B balanced 1.294 ->
#: 1.342x).
SWIGLU_EPILOGUE = "tma"

#: The configurations `choose` picks from: (BM, BN, BK, STAGES), each within the shared-memory budget.
CONFIGS: tuple[tuple[int, int, int, int], ...] = ((128, 256, 64, 4), (128, 128, 64, 5))


#: The FP8 kernel's configurations (`grouped_gemm_scaled`): K-blocks of 128 (one 128-byte swizzle span).
FP8_CONFIGS: tuple[tuple[int, int, int, int], ...] = ((128, 256, 128, 4), (128, 128, 128, 6))


#: Decoding: where the routed rows average at most this many per expert, each expert's product is a few rows
#: against all of its weight, bound by streaming the weight: `DECODE_CONFIGS` then.
DECODE_ROWS_PER_EXPERT = 32
#: (BM, BN, BK, STAGES) on one consumer warpgroup at decode sizes: 64-row tiles (a tile of 128 rows is mostly
#: padding), narrower columns (more units for the SMs: Mixtral's down-projection for one token has 2 experts x 16
#: column tiles of 256) and 8 stages in flight. Measured on an H200 against the 128-row configurations at 1-256
#: tokens (benchmarks/results/2026-12-01-moe-decode/configs.md): the down-projection 29 -> 54 % of HBM on Mixtral
#: at one token, 73 -> 82 % at 16; the SwiGLU up-projection 59 -> 68 %, 68 -> 81 %; where rows average 64 per
#: expert (Mixtral at 256 tokens) the 128-row tiles are faster, hence the threshold.
DECODE_CONFIGS: dict[str, tuple[int, int, int, int]] = {"plain": (64, 128, 64, 8), "swiglu": (64, 64, 64, 8)}
#: Wider decode tiles where the experts are wide enough to keep the SMs busy with them (session 45,
#: `benchmarks/results/2026-12-03-moe-decode/`, calls 2 and 3, each product alone, interleaved with
#: ``torch._grouped_mm``): the SwiGLU up-projection on 64 x 128 tiles (5 stages) where each expert has at least
#: `DECODE_WIDE_SWIGLU_COLUMNS` output columns (call 3, % of HBM at 1 / 16 / 64 tokens: Mixtral's I = 14336 68 ->
#: 69 and 75 (the same configuration timed twice), 81 -> 89, 86 -> 89; DeepSeek-V3's 2048 71 -> 77, 92 -> 94, 94 ->
#: 95; Qwen3-30B-A3B's 768 loses 0-4 points: 48 units at one token); the down-projection on 64 x 256 tiles (4
#: stages) where the touched experts' 256-column tiles are at least half a wave (`SMS // 2`; at most min(E, rows)
#: experts are touched; call 3: Mixtral 82 -> 88 % and 85 -> 87 % at 16 and 64 tokens, DeepSeek-V3 58 -> 62/64,
#: 86 -> 92, 92 -> 94 %; Mixtral at one token has 32 such units, 49 -> 36 %, and keeps 64 x 128). 4 stages: 5 was
#: as fast in call 2 (and verifies since session 51; until then the release after the loop at a stage count that is
#: not a power of two was UNKNOWN_WARP_ROLES).
DECODE_WIDE_CONFIGS: dict[str, tuple[int, int, int, int]] = {"plain": (64, 256, 64, 4), "swiglu": (64, 128, 64, 5)}
DECODE_WIDE_SWIGLU_COLUMNS = 2048
#: Whether `moe_layer` splits the down-projection's K at decode sizes where its units leave SMs idle
#: (`decode_splits`: Mixtral at one token has 2 experts x 32 tiles of 128 columns, half an H100's SMs), its f32
#: slices summed by the combine (`moe_combine` with SPLITS), which reads each token's rows anyway. Measured on an
#: H100 (`benchmarks/results/2026-12-06-moe-decode-split/`): the down-projection 117.0 -> 93.5 us, the graphed layer
#: 0.300 -> 0.281 ms at one token; the rows it does not split unchanged. An A/B switch.
DECODE_SPLITS = True
#: The most ways `decode_splits` splits K, and the fewest weight bytes a split's share streams (16 K-blocks of a
#: 64 x 256 bf16 tile, 32 of 64 x 128): each (unit, split) pair costs a few microseconds of its own (measured on an
#: H200, `benchmarks/results/2026-12-06-moe-up-split/`, call 3: DeepSeek-V3's down-projection at one token, 224
#: units of 1 MiB, 80 us unsplit, 84 us in shares of 512 KiB, 93 us in 256 KiB and 119 us in 128 KiB, though the
#: finer splits fill the waves better).
DECODE_MAX_SPLITS = 8
DECODE_SPLIT_MIN_BYTES = 512 << 10
#: How much better the last wave must be filled (`wave_fill`) for K to be split at all, and how close to the best
#: fill the fewest splits may stay (fewer splits: fewer f32 slices, longer pipelines). The down-projection's split at
#: one token (fill 0.48 -> 0.97 on an H100's SMs) ran 1.25x faster; these margins are not fitted.
DECODE_SPLIT_GAIN = 0.05
DECODE_SPLIT_TIE = 0.02
#: Whether `moe_layer` runs the gated up-projection at decode sizes as the plain grouped product of the gate-and-up
#: weight split along K (`decode_up_split`: its (unit, split) pairs fill the SMs' waves better than the fused SwiGLU
#: kernel's units) followed by `moe_glu_sum` (the slices' sum, the gate's activation and the router weight, one
#: small launch more). An A/B switch.
DECODE_UP_SPLITS = True
#: The least gain in wave fill that pays for that launch and the slices' f32 round trip (not fitted).
DECODE_UP_SPLIT_GAIN = 0.08
#: `moe_glu_sum`'s columns a block, at most (VEC = 4 f32 values a thread: 128 threads).
GLU_BI = 512


def choose(rows: int, n: int, k: int, experts: int, epilogue: str = "plain") -> dict[str, Any]:
    """The kernel parameters for a grouped product of `rows` routed rows, `experts` experts, (K, N) = (k, n) (N:
    the output's columns), without tuning: 128 x 256 tiles where N fills them (fewer, larger tiles: each B[g]
    panel is read by fewer blocks), else 128 x 128 (``"scaled"``, FP8: the same rule over `FP8_CONFIGS`); with the
    SwiGLU epilogue 128 x 128 x 2 (a gate and an up accumulator) and 4 stages; both store full tiles through TMA
    stores (`PLAIN_EPILOGUE`, `SWIGLU_EPILOGUE`). At decode sizes (at most `DECODE_ROWS_PER_EXPERT` rows per expert on
    average, 16-bit) `DECODE_CONFIGS`' 64-row tiles on one consumer, stored directly, or `DECODE_WIDE_CONFIGS`' wider
    ones where the experts keep the SMs busy with them."""
    if epilogue in DECODE_CONFIGS and rows <= DECODE_ROWS_PER_EXPERT * experts:
        bm, bn, bk, stages = DECODE_CONFIGS[epilogue]
        wide = DECODE_WIDE_CONFIGS[epilogue]
        if epilogue == "swiglu" and n >= DECODE_WIDE_SWIGLU_COLUMNS:
            bm, bn, bk, stages = wide
        if epilogue == "plain" and min(experts, rows) * -(-n // wide[1]) >= SMS // 2:
            bm, bn, bk, stages = wide
        return {"BM": bm, "BN": bn, "BK": bk, "STAGES": stages, "CONSUMERS": 1, "GROUP": 8,
                "SEARCH": search_steps(experts)}  # fmt: skip
    if epilogue == "swiglu":
        bm, bn, bk, stages = 128, 128, 64, 4
    else:
        configs = FP8_CONFIGS if epilogue == "scaled" else CONFIGS
        bm, bn, bk, stages = configs[0] if n % 256 == 0 and n >= 1024 else configs[1]
    params = {"BM": bm, "BN": bn, "BK": bk, "STAGES": stages, "GROUP": 8, "SEARCH": search_steps(experts)}
    if epilogue in ("plain", "swiglu"):
        params["EPILOGUE"] = PLAIN_EPILOGUE if epilogue == "plain" else SWIGLU_EPILOGUE
    return params


def wave_fill(units: int, sms: int = SMS) -> float:
    """The share of the SMs' time that `units` equal work units keep busy when `sms` SMs take them a wave at a
    time: 1.0 for whole waves; for 64 units on an H100's SMs 0.48, for 224 0.85."""
    return units / (-(-units // sms) * sms) if units > 0 else 0.0


def decode_splits(params: dict[str, Any], rows: int, n: int, k: int, experts: int, sms: int = SMS) -> int:
    """How many ways a plain grouped product's K is split at a decode configuration `params` (`choose`'s, one
    consumer, direct store) of `rows` routed rows, `experts` experts, (K, N) = (k, n): among the splits s <=
    `DECODE_MAX_SPLITS` that divide the K-blocks into shares of at least `DECODE_SPLIT_MIN_BYTES` (16-bit weights),
    the fewest whose (unit, split) pairs fill the waves of `sms` blocks within `DECODE_SPLIT_TIE` of the best
    (`wave_fill`), the units counted at min(experts, rows) experts' column tiles; 1 where no split fills them
    `DECODE_SPLIT_GAIN` better than the units alone, or not a decode configuration. (The pairs may take several
    waves: the persistent blocks walk them.)"""
    if "CONSUMERS" not in params or params.get("EPILOGUE", "direct") != "direct":
        return 1
    units = min(experts, rows) * -(-n // params["BN"])
    blocks = -(-k // params["BK"])
    block_bytes = params["BK"] * params["BN"] * 2
    fits = [
        s
        for s in range(2, DECODE_MAX_SPLITS + 1)
        if blocks % s == 0 and blocks // s * block_bytes >= DECODE_SPLIT_MIN_BYTES
    ]
    best = max((wave_fill(units * s, sms) for s in fits), default=0.0)
    if best < wave_fill(units, sms) + DECODE_SPLIT_GAIN:
        return 1
    return min(s for s in fits if wave_fill(units * s, sms) >= best - DECODE_SPLIT_TIE)


def decode_plan(rows: int, n: int, k: int, experts: int, sms: int = SMS) -> dict[str, Any]:
    """The plain grouped product's parameters as `moe_layer` launches it: `choose`'s, and at decode sizes (with
    `DECODE_SPLITS`) the wide decode tile (`DECODE_WIDE_CONFIGS`) split by `decode_splits`, or the narrow one
    (`DECODE_CONFIGS`, split so too) where its (unit, split) pairs fill the waves `DECODE_SPLIT_GAIN` better
    (Qwen3-30B-A3B's down-projection at one token: 64 wide units of 12 K-blocks, too short to split, where the narrow
    tile has 128). The wide tile's rows of 512 bytes stream faster than the narrow one's 256 at equal fill (measured
    on an H200, `benchmarks/results/2026-12-06-moe-up-split/`, call 3: Mixtral's down-projection at two tokens, 64
    wide units split two ways 120.9 us, 128 narrow ones 134.0; at one token 32 wide units split four ways 69.1 us, 64
    narrow ones split two ways 71.1)."""
    params = choose(rows, n, k, experts, "plain")
    if "CONSUMERS" not in params or not DECODE_SPLITS:
        return params

    def tile(config: tuple[int, int, int, int]) -> dict[str, Any]:
        return params | dict(zip(("BM", "BN", "BK", "STAGES"), config, strict=True))

    def filled(option: dict[str, Any]) -> tuple[float, int]:
        splits = decode_splits(option, rows, n, k, experts, sms)
        return wave_fill(min(experts, rows) * -(-n // option["BN"]) * splits, sms), splits

    wide, narrow = tile(DECODE_WIDE_CONFIGS["plain"]), tile(DECODE_CONFIGS["plain"])
    (fill, splits), (narrow_fill, narrow_splits) = filled(wide), filled(narrow)
    params = wide
    if narrow_fill >= fill + DECODE_SPLIT_GAIN:
        params, splits = narrow, narrow_splits
    return params | {"SPLITS": splits} if splits > 1 else params


def decode_up_split(rows: int, inter: int, hidden: int, experts: int, sms: int = SMS) -> dict[str, Any] | None:
    """The split gate-and-up product `moe_layer` runs instead of the fused SwiGLU kernel at decode sizes (with
    `DECODE_UP_SPLITS`), or None: `decode_plan`'s parameters for the plain product of the (E, H, 2I) weight where it
    splits K and its (unit, split) pairs fill the waves of `sms` blocks `DECODE_UP_SPLIT_GAIN` better than the fused
    kernel's units (Mixtral at one token: 2 experts x 112 tiles of 128 gated columns are 1.7 waves of an H100's SMs,
    where 2 x 112 tiles of 256 columns split four ways are 6.8; measured on an H200,
    `benchmarks/results/2026-12-06-moe-up-split/`, 139.0 -> 131.3 us with the gated sum, at two tokens 255.0 ->
    238.6; on an H100, where the fused kernel streams at 80 %, as fast either way)."""
    fused = choose(rows, inter, hidden, experts, "swiglu")
    if "CONSUMERS" not in fused or not DECODE_UP_SPLITS:
        return None
    plain = decode_plan(rows, 2 * inter, hidden, experts, sms)
    splits = plain.get("SPLITS", 1)
    touched = min(experts, rows)
    fused_fill = wave_fill(touched * -(-inter // fused["BN"]), sms)
    split_fill = wave_fill(touched * -(-2 * inter // plain["BN"]) * splits, sms)
    return plain if splits > 1 and split_fill >= fused_fill + DECODE_UP_SPLIT_GAIN else None


def dtype_name(dtype: Any) -> str | None:
    """The kernels' name of a torch dtype these calls write (``torch.bfloat16`` -> ``"bf16"``), None for others."""
    return {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32"}.get(str(dtype))


def combine_params(
    hidden: int, top_k: int, dtype: str = "bf16", splits: int = 1, out: str | None = None
) -> tuple[tuple[str, Any], ...]:
    """`moe_combine`'s parameters for rows of `hidden` values of `dtype` (`splits` > 1: f32 slices of split-K), the
    sums written as `out` (default `dtype`): 8 a thread (16-byte loads of 16-bit rows, 4 for f32), up to
    `COMBINE_BH` columns a block, fewer for narrow rows (at least 32 threads)."""
    vec = 4 if dtype == "f32" else 8
    bh = max(32 * vec, min(COMBINE_BH, 1 << max(hidden - 1, 1).bit_length()))
    params = {"TOPK": top_k, "BH": bh, "VEC": vec, "IN": dtype, "OUT": out or dtype}
    return tuple(sorted((params | ({"SPLITS": splits} if splits > 1 else {})).items()))


def combine_on_interpreter(y: Any, position: Any, tokens: int, top_k: int) -> Any:
    """`moe_combine` on the lane-level interpreter for numpy `y` (R, H) (or split-K's f32 slices (S, R, H)) and
    `position` (R,): (tokens, H) in float64 (values rounded to bf16, as the kernel's output), through the parameters
    a GPU call launches."""
    import numpy as np

    from argus.interp import run_kernel

    out = np.full((tokens, y.shape[-1]), np.nan)
    split = y.ndim == 3
    params = combine_params(y.shape[-1], top_k, "f32" if split else "bf16", y.shape[0] if split else 1, "bf16")
    kernel = moe_combine.trace(**dict(params))
    run_kernel(kernel, {"Y": np.asarray(y, dtype=np.float64), "POS": np.asarray(position), "Z": out})
    return out


def glu_params(inter: int, splits: int, activation: str = "silu", out: str = "bf16") -> tuple[tuple[str, Any], ...]:
    """`moe_glu_sum`'s parameters for `splits` f32 slices of a gate-and-up product of `inter` (I) gated columns, the
    gate's `activation`, the result written as `out`: 4 values a thread (16-byte loads), up to `GLU_BI` columns a
    block, fewer for narrow rows (at least 32 threads)."""
    bi = max(128, min(GLU_BI, 1 << max(inter - 1, 1).bit_length()))
    return tuple(sorted({"SPLITS": splits, "BI": bi, "VEC": 4, "ACT": activation, "OUT": out}.items()))


def prepare_glu_sum(slices: Any, scale: Any, activation: str = "silu", dtype: Any = None) -> tuple[Any, Any]:
    """(H, the prepared launch) of `moe_glu_sum` on a split gate-and-up product's f32 slices (S, R, 2I) (`prepare`
    of the plain product with SPLITS) and each routed row's f32 `scale` (R,): H (R, I) in `dtype` (default bf16),
    ``scale * act(sum of the gate slices) * sum of the up slices``."""
    import torch

    dtype = torch.bfloat16 if dtype is None else dtype
    if slices.dim() != 3 or slices.dtype != torch.float32 or slices.shape[2] % 8 or not slices.is_contiguous():
        raise GroupedError(
            "the slices must be a contiguous f32 (S, R, 2I) tensor with I a multiple of 4; got "
            f"{slices.dtype} {tuple(slices.shape)}"
        )
    splits, rows, inter = slices.shape[0], slices.shape[1], slices.shape[2] // 2
    if scale.shape != (rows,) or scale.dtype != torch.float32 or not scale.is_contiguous():
        raise GroupedError(f"scale must be a contiguous f32 tensor of one factor per row ({rows},), got "
                           f"{scale.dtype} {tuple(scale.shape)}")  # fmt: skip
    out_name = dtype_name(dtype)
    if activation not in GLU_ACTIVATIONS or out_name is None:
        raise GroupedError(
            f"activation is one of {', '.join(GLU_ACTIVATIONS)} (got {activation!r}), dtype bf16, f16 or f32 (got "
            f"{dtype})"
        )
    if slices.device.type != "cuda" or scale.device != slices.device:
        raise GroupedError(
            f"the slices and scale must be on one CUDA device, got {slices.device} and {scale.device} (on the CPU: "
            "`glu_sum_on_interpreter`)"
        )
    h = torch.empty((rows, inter), dtype=dtype, device=slices.device)
    if rows == 0:
        return h, GroupedLaunch(None, (h,))
    view = slices.view(splits, rows, 2, inter)
    kernel = _loaded_small("glu_sum", glu_params(inter, splits, activation, out_name))
    return h, GroupedLaunch(_launch(kernel, view, scale, h), (view, scale, h))


def glu_sum_on_interpreter(slices: Any, scale: Any, activation: str = "silu") -> Any:
    """`moe_glu_sum` on the lane-level interpreter for numpy f32 slices (S, R, 2I) and `scale` (R,): (R, I) in
    float64 (values rounded to bf16, as the kernel's output), through the parameters a GPU call launches."""
    import numpy as np

    from argus.interp import run_kernel

    splits, rows, width = slices.shape
    out = np.full((rows, width // 2), np.nan)
    kernel = moe_glu_sum.trace(**dict(glu_params(width // 2, splits, activation)))
    view = np.asarray(slices, dtype=np.float64).reshape(splits, rows, 2, width // 2)
    run_kernel(kernel, {"Y": view, "SCALE": np.asarray(scale, dtype=np.float64), "H": out})
    return out


#: The layer's small kernels `_loaded_small` loads, by name.
SMALL_KERNELS = {"combine": moe_combine, "glu_sum": moe_glu_sum}


def dependent_launches(routed: int, experts: int) -> bool:
    """Whether `moe_layer` launches its kernels as programmatic dependents for `routed` rows (tokens x k) over
    `experts` experts: with `DEPENDENT_LAUNCHES`, at decode sizes (at most `DECODE_ROWS_PER_EXPERT` routed rows an
    expert on average, where `choose` takes the decode tiles), where a step is a chain of short kernels; prefill
    launches plain (measured slower with them)."""
    return DEPENDENT_LAUNCHES and routed <= DECODE_ROWS_PER_EXPERT * experts


@contextlib.contextmanager
def _launched_as(dependent: bool) -> Iterator[None]:
    """The kernels loaded inside are generated for programmatic dependent launch (`dependent`) or not."""
    token = _DEPENDENT.set(dependent)
    try:
        yield
    finally:
        _DEPENDENT.reset(token)


def _loaded_small(name: str, params: tuple[tuple[str, Any], ...]) -> Any:
    """Small kernel `name` (`SMALL_KERNELS`) compiled and loaded, for dependent launches where the layer makes them
    (`_launched_as`)."""
    return _compiled("small", name, params, _DEPENDENT.get())


def _loaded(epilogue: str, params: tuple[tuple[str, Any], ...]) -> Any:
    """Grouped GEMM `KERNELS[epilogue]` compiled and loaded (dependent as `_loaded_small`)."""
    return _compiled("product", epilogue, params, _DEPENDENT.get())


@functools.lru_cache(maxsize=128)
def _compiled(family: str, name: str, params: tuple[tuple[str, Any], ...], dependent: bool) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    kernels = {"small": SMALL_KERNELS, "product": KERNELS, "route": ROUTE_KERNELS}[family]
    return load(compile_kernel(kernels[name].trace(**dict(params)), dependent=dependent))


def _launch(kernel: Any, *tensors: Any) -> Any:
    """`kernel`'s launch on `tensors` prepared, not made: as a programmatic dependent where it was loaded for one
    (`_compiled` inside the layer's `_launched_as(True)`)."""
    return kernel.prepare(*tensors, dependent=kernel.generated.dependent)


def launch_params(
    config: dict[str, Any], experts: int, dtype: str, epilogue: str = "plain", activation: str = "silu"
) -> dict[str, Any]:
    """The trace parameters of the kernel `prepare` launches (`KERNELS[epilogue]`) on `config` (its tile, stages,
    epilogue and order, `choose`'s or the caller's): SEARCH for `experts` where `config` has none, IN and OUT the
    operands' `dtype` ("bf16" or "f16"), and for the gated up-projection ACT, the gate's `activation`."""
    params = dict(config)
    params.setdefault("SEARCH", search_steps(experts))
    params["OUT"] = params["IN"] = dtype
    if epilogue == "swiglu":
        params["ACT"] = activation
    return params


def _extents(call: str, a: Any, b: Any, offs: Any) -> tuple[int, int, int, int]:
    """(R, K, E, N) of a grouped call's a (R, K), b (E, K, N) and offs (E,) int32, or the `GroupedError` that says
    which does not fit."""
    import torch

    if a.dim() != 2 or b.dim() != 3 or offs.dim() != 1:
        raise GroupedError(
            f"{call} takes a (R, K), b (E, K, N) and offs (E,); got {tuple(a.shape)}, {tuple(b.shape)}, "
            f"{tuple(offs.shape)}"
        )
    (rows, k), (experts, kb, n) = a.shape, b.shape
    if kb != k or offs.shape[0] != experts:
        raise GroupedError(f"a's K ({k}) must be b's ({kb}) and offs must have one end per expert ({experts})")
    if offs.dtype != torch.int32:
        raise GroupedError(f"offs must be int32 (cumulative row ends, as torch's grouped GEMMs take), got {offs.dtype}")
    return rows, k, experts, n


def prepare(
    a: Any,
    b: Any,
    offs: Any,
    *,
    config: dict[str, Any] | None = None,
    out: Any = None,
    epilogue: str = "plain",
    tiles: Any = None,
    scale: Any = None,
    activation: str = "silu",
    token: Any = None,
) -> tuple[Any, Any]:
    """(C, the prepared launch): `grouped_mm` (`epilogue` "plain") or `grouped_swiglu` ("swiglu", with `scale`, one f32
    factor per routed row, default 1, the gate's `activation`, and `token`: see `grouped_swiglu`) without launching,
    for timing loops (the launch holds raw addresses: keep `a`, `b`, `offs`, `scale`, `token` and C alive while it is
    used). The row-tile counts are computed on the device when the launch is prepared (or passed as `tiles`, from
    `tile_counts(offs, BM)`); a new `offs` needs a new prepare. A `config` with SPLITS > 1 (split-K, the plain
    product) gives C as the f32 slices (SPLITS, R, N), whose sum is the product."""
    import torch

    if epilogue not in ("plain", "swiglu"):  # the FP8 kernel is `prepare_scaled`'s; the gathered one takes `token`
        raise GroupedError(f"epilogue is one of ['plain', 'swiglu'], got {epilogue!r}")
    if epilogue == "plain" and scale is not None:
        raise GroupedError("scale is the SwiGLU epilogue's per-row factor: pass epilogue='swiglu'")
    if activation not in GLU_ACTIVATIONS or (activation != "silu" and epilogue != "swiglu"):
        raise GroupedError(
            f"activation is the gated epilogue's ('swiglu'): one of {', '.join(GLU_ACTIVATIONS)}; got {activation!r} "
            f"with epilogue {epilogue!r}"
        )
    if token is not None and epilogue != "swiglu":
        raise GroupedError("token (the gathered rows' tokens) is taken by the SwiGLU epilogue only: epilogue='swiglu'")
    rows, k, experts, n = _extents("grouped_mm", a, b, offs)
    if token is not None:
        if token.dim() != 1 or token.dtype != torch.int32 or not token.is_contiguous() or token.device != a.device:
            raise GroupedError(
                "token must be a contiguous int32 tensor of one row index of a per routed row, on a's device; got "
                f"{token.dtype} {tuple(token.shape)} on {token.device}"
            )
        rows = token.shape[0]  # a holds the tokens; the routed rows are token's
    if a.dtype != b.dtype or a.dtype not in (torch.bfloat16, torch.float16):
        raise GroupedError(f"a and b must both be bf16 or both f16, got {a.dtype} and {b.dtype}")
    if not (a.is_contiguous() and b.is_contiguous() and offs.is_contiguous()):
        raise GroupedError("a, b (E, K, N) and offs must be contiguous row-major tensors: pass .contiguous()")
    if epilogue == "swiglu":
        if n % 2:
            raise GroupedError(
                f"the SwiGLU weight (E, K, 2I) holds the gate then the up columns: 2I must be even, got {n}"
            )
        n //= 2
    if k % 8 or n % 8:
        raise GroupedError(f"K and N must be multiples of 8 (16-byte TMA rows), got K={k}, N={n}")
    if len({a.device, b.device, offs.device}) != 1 or a.device.type != "cuda":
        raise GroupedError("a, b and offs must be on one CUDA device")
    if token is not None and rows and a.shape[0] == 0:
        raise GroupedError(f"token names {rows} rows of a, which has none")
    if rows == 0:  # no routed row: an empty product, no launch (as torch's)
        c = out if out is not None else torch.empty((rows, n), dtype=a.dtype, device=a.device)
        return c, GroupedLaunch(None, (c,))
    dtype = "bf16" if a.dtype == torch.bfloat16 else "f16"
    params = launch_params(choose(rows, n, k, experts, epilogue) if config is None else config, experts, dtype,
                           epilogue, activation)  # fmt: skip
    tiles = tile_counts(offs, params["BM"]) if tiles is None else tiles
    splits = params.get("SPLITS", 1)
    if splits > 1 and (epilogue != "plain" or out is not None):
        raise GroupedError("SPLITS > 1 (split-K's f32 slices) is the plain product's, into slices prepare allocates")
    if splits > 1:  # the f32 slices (S, R, N) of split-K, which the caller sums (`combine`, `grouped_mm`)
        params["OUT"] = "f32"
        c = torch.empty((splits, rows, n), dtype=torch.float32, device=a.device)
    else:
        c = out if out is not None else torch.empty((rows, n), dtype=a.dtype, device=a.device)
    kernel = _loaded(epilogue if token is None else "swiglu_gathered", tuple(sorted(params.items())))
    if epilogue == "plain":
        return c, GroupedLaunch(_launch(kernel, a, b, offs, tiles, c), (a, b, offs, tiles, c))
    if scale is None:
        scale = torch.ones(rows, dtype=torch.float32, device=a.device)
    if scale.shape != (rows,) or scale.dtype != torch.float32 or not scale.is_contiguous():
        raise GroupedError(
            f"scale must be a contiguous f32 tensor of one factor per row ({rows},), got "
            f"{scale.dtype} {tuple(scale.shape)}"
        )
    if scale.device != a.device:
        raise GroupedError("scale must be on a's device")
    if token is not None:
        keep = (a, token, b, offs, tiles, scale, c)
        return c, GroupedLaunch(_launch(kernel, a, token, b, offs, tiles, scale, c), keep)
    return c, GroupedLaunch(_launch(kernel, a, b, offs, tiles, scale, c), (a, b, offs, tiles, scale, c))


@dataclass(frozen=True)
class GroupedLaunch:
    """A prepared grouped GEMM launch and the tensors it addresses (kept alive with it)."""

    prepared: Any
    keep: tuple[Any, ...]

    def launch(self) -> None:
        if self.prepared is not None:  # None: no routed row, nothing to compute (`prepare` of an empty product)
            self.prepared.launch()


def grouped_mm(a: Any, b: Any, offs: Any, *, config: dict[str, Any] | None = None, tiles: Any = None) -> Any:
    """``torch._grouped_mm(a, b, offs=offs)`` for a 2-d `a` (R, K) and a 3-d `b` (E, K, N), bf16 or f16 on a CUDA
    device: rows ``offs[g-1] .. offs[g]`` of a times b[g], in one launch of `grouped_gemm_persistent` on the
    current stream, without a host synchronization. Rows past ``offs[E-1]`` of the result are left unwritten (as
    torch leaves them undefined). `tiles`: the row-tile counts for the configuration's BM, if already made
    (`prepare`)."""
    c, launch = prepare(a, b, offs, config=config, tiles=tiles)
    launch.launch()
    return c.sum(0).to(a.dtype) if c.dim() == 3 else c  # split-K's slices (a `config` with SPLITS), summed


def prepare_scaled(
    a: Any,
    b: Any,
    scale_a: Any,
    scale_b: Any,
    offs: Any,
    *,
    out_dtype: Any = None,
    config: dict[str, Any] | None = None,
) -> tuple[Any, GroupedLaunch]:
    """(C, the prepared launch) of `scaled_grouped_mm`, without launching (see `prepare`)."""
    import torch

    fp8 = (torch.float8_e4m3fn, torch.float8_e5m2)
    rows, k, experts, n = _extents("scaled_grouped_mm", a, b, offs)
    if a.dtype != b.dtype or a.dtype not in fp8:
        raise GroupedError(f"a and b must both be float8_e4m3fn or both float8_e5m2, got {a.dtype} and {b.dtype}")
    weights = b.transpose(1, 2)  # (E, N, K): wgmma reads 8-bit operands K-major only
    if not (a.is_contiguous() and weights.is_contiguous() and offs.is_contiguous()):
        raise GroupedError(
            "a must be row-major (R, K) and b the transpose of a contiguous (E, N, K) weight (b = w.transpose(1, 2), "
            "the layout torch._scaled_grouped_mm takes)"
        )
    out = out_dtype or torch.bfloat16
    if out not in (torch.bfloat16, torch.float16, torch.float32):
        raise GroupedError(f"out_dtype is bf16, f16 or f32, got {out}")
    per_vector = 16 // torch.empty((), dtype=out).element_size()
    if k % 16 or n % per_vector:
        raise GroupedError(f"K must be a multiple of 16 and N of {per_vector}, got K={k}, N={n}")
    for name, s, shape in (("scale_a", scale_a, (rows,)), ("scale_b", scale_b, (experts, n))):
        if tuple(s.shape) != shape or s.dtype != torch.float32 or not s.is_contiguous():
            raise GroupedError(
                f"{name} must be a contiguous float32 tensor of shape {shape} (row-wise scales), got "
                f"{s.dtype} {tuple(s.shape)}"
            )
    if len({a.device, b.device, offs.device, scale_a.device, scale_b.device}) != 1 or a.device.type != "cuda":
        raise GroupedError("a, b, offs and the scales must be on one CUDA device")
    if rows == 0:  # an empty product, no launch
        c = torch.empty((0, n), dtype=out, device=a.device)
        return c, GroupedLaunch(None, (c,))
    params = dict(choose(rows, n, k, experts, "scaled") if config is None else config)
    params.setdefault("SEARCH", search_steps(experts))
    params["IN"] = "e4m3" if a.dtype == torch.float8_e4m3fn else "e5m2"
    params["OUT"] = dtype_name(out)
    tiles = tile_counts(offs, params["BM"])
    c = torch.empty((rows, n), dtype=out, device=a.device)
    kernel = _loaded("scaled", tuple(sorted(params.items())))
    keep = (a, weights, offs, tiles, scale_a, scale_b, c)
    return c, GroupedLaunch(_launch(kernel, a, weights, offs, tiles, scale_a, scale_b, c), keep)


def scaled_grouped_mm(
    a: Any,
    b: Any,
    scale_a: Any,
    scale_b: Any,
    offs: Any,
    *,
    out_dtype: Any = None,
    config: dict[str, Any] | None = None,
) -> Any:
    """``torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=...)`` for a 2-d `a` and a 3-d `b`:
    FP8 a (R, K) row-major and b (E, K, N) the transpose of a contiguous (E, N, K) weight, scale_a (R,) and scale_b
    (E, N) f32 row-wise scales; rows ``offs[g-1] .. offs[g]`` of a times b[g], times their scales, in `out_dtype`
    (bf16 by default), in one launch of `argus.kernels.grouped.grouped_gemm_scaled`, without a host
    synchronization. Rows past ``offs[E-1]`` are left unwritten. The products accumulate in the tensor core's FP8
    accumulator over all of K (fast accumulation)."""
    c, launch = prepare_scaled(a, b, scale_a, scale_b, offs, out_dtype=out_dtype, config=config)
    launch.launch()
    return c


def grouped_swiglu(
    a: Any,
    w: Any,
    offs: Any,
    *,
    scale: Any = None,
    config: dict[str, Any] | None = None,
    activation: str = "silu",
    token: Any = None,
    tiles: Any = None,
) -> Any:
    """``silu(g) * u`` where ``[g | u] = torch._grouped_mm(a, w, offs=offs)``, times ``scale[:, None]`` when given
    (f32, one factor per row); `activation` "gelu" (GeGLU, exact GELU) or "gelu_tanh" (its tanh approximation) in
    place of silu: `a` (R, K), `w` (E, K, 2I) holding each expert's gate columns then its up columns,
    bf16 or f16 on a CUDA device; returns (R, I). One launch of `grouped_gemm_swiglu` (the (R, 2I) product is
    never written; SwiGLU and the scale are computed from the f32 accumulators and rounded once), no host
    synchronization. Rows past ``offs[E-1]`` are left unwritten. With `token` ((R,) int32), `a` holds the tokens
    (T, K) and routed row r is ``a[token[r]]``: ``a.index_select(0, token)`` fused into the operand load
    (`grouped_gemm_swiglu_gathered`, one TMA box a row), the gathered rows never written. `tiles`: the row-tile
    counts for the configuration's BM, if already made (`prepare`)."""
    c, launch = prepare(a, w, offs, config=config, epilogue="swiglu", scale=scale, activation=activation, token=token,
                        tiles=tiles)  # fmt: skip
    launch.launch()
    return c


@dataclass(frozen=True)
class Routing:
    """A top-k routing of T tokens over E experts, sorted by expert: the routed rows are the T * k (token, choice)
    pairs in expert order; row r is token ``token[r]``'s choice, weighted by ``weight[r]``; expert g owns rows
    ``offs[g-1] .. offs[g]``. All on the device, computed without a host synchronization."""

    token: Any  # (T * k,) int64: the token of each routed row
    weight: Any  # (T * k,) float32: its router weight
    offs: Any  # (E,) int32: cumulative row ends per expert
    order: Any  # (T * k,) int64: the flat (token * k + choice) index of each routed row
    counts: Any = None  # (E,) int64: each expert's routed rows (offs' differences), when the routing made them
    pos: Any = None  # (T * k,) int32: the routed row of each (token, choice), when the routing made them
    made_tiles: Any = None  # (block_m, (E,) int32 row-tile counts) when the routing kernels made them

    def tiles(self, block_m: int) -> Any:
        """The grouped kernels' cumulative row-tile counts for tiles of `block_m` rows (`tile_counts(offs,
        block_m)`), from `counts` in two launches where the routing has them (`tile_counts` from `offs` takes eight:
        at decode sizes each is a few microseconds of a step)."""
        if self.made_tiles is not None and self.made_tiles[0] == block_m:
            return self.made_tiles[1]
        if self.counts is None:
            return tile_counts(self.offs, block_m)
        return tiles_of_counts(self.counts, block_m)

    def positions(self) -> Any:
        """(T * k,) int32: the routed row of each (token, choice), the inverse of `order` (one scatter on the
        device, made where the combine kernel needs it; the routing kernels make them as they sort)."""
        import torch

        if self.pos is not None:
            return self.pos

        rows = torch.arange(self.order.numel(), dtype=torch.int32, device=self.order.device)
        return torch.empty_like(rows).scatter_(0, self.order, rows)


#: How router logits become expert scores (`route`): softmax over the experts (Mixtral, Qwen3), or each expert's own
#: sigmoid (DeepSeek-V3), then the top k, renormalized.
SCORINGS = ("softmax", "sigmoid")


def router_logits(x: Any, router: Any) -> Any:
    """``x @ router`` in f32 (T, E): with a 16-bit router of x's dtype on a CUDA device (`LOGITS_16BIT`) one product
    that multiplies the 16-bit values and accumulates and writes f32 (``torch.mm(..., out_dtype=torch.float32)``:
    each product of two 16-bit values is exact in f32, as in ``x.float() @ router.float()``, whose two conversions
    are two launches more and the router's f32 copy written and read every call); else ``x.float() @
    router.float()``."""
    import torch

    sixteen = x.dtype in (torch.bfloat16, torch.float16) and router.dtype == x.dtype
    if LOGITS_16BIT and sixteen and x.is_cuda and router.is_cuda:
        return torch.mm(x, router, out_dtype=torch.float32)
    return x.float() @ router.float()


def route(
    x: Any,
    router: Any,
    top_k: int,
    *,
    renormalize: bool = True,
    bias: Any = None,
    scoring: str = "softmax",
    correction: Any = None,
    groups: int = 1,
    top_groups: int = 1,
    scaling: float = 1.0,
    block_m: int = 64,
) -> Routing:
    """The top-k routing of tokens `x` (T, H) by the router weight `router` (H, E): logits ``x @ router`` in f32
    (plus `bias` (T, E) when given), scores by `scoring` (softmax over the experts, or each logit's sigmoid), the k
    largest, renormalized to sum 1 when `renormalize`, times `scaling`; the routed rows sorted by expert (a stable
    sort: within an expert, token order).

    DeepSeek-V3's selection: `correction` (E,) is added to the scores for choosing the experts only (the weights
    are the uncorrected scores of the chosen ones); with `groups` > 1 the experts are split into that many equal
    groups, each group scored by the sum of its two best (corrected) scores, and the k experts are chosen within the
    `top_groups` best groups only.

    With `ROUTE_KERNEL` (a CUDA device, at most `ROUTE_KERNEL_ROWS` choices) the sort is `sort_by_expert`'s two
    kernels, which also make the row-tile counts for tiles of `block_m` rows (`Routing.tiles`)."""
    import torch

    if scoring not in SCORINGS:
        raise GroupedError(f"scoring is one of {', '.join(SCORINGS)}, got {scoring!r}")
    experts = router.shape[1]
    if groups < 1 or experts % groups or not 1 <= top_groups <= groups or top_k > top_groups * (experts // groups):
        raise GroupedError(
            f"groups={groups} must divide the {experts} experts, top_groups={top_groups} be between 1 and groups, "
            f"and top_k={top_k} fit in the chosen groups' {top_groups * (experts // max(groups, 1))} experts"
        )
    if correction is not None and tuple(correction.shape) != (experts,):
        raise GroupedError(f"correction is one value per expert, ({experts},); got {tuple(correction.shape)}")
    logits = router_logits(x, router)
    if bias is not None:
        logits = logits + bias
    kernels = ROUTE_KERNEL and x.is_cuda and 0 < logits.shape[0] * top_k <= ROUTE_KERNEL_ROWS
    if TOPK_OF_LOGITS and scoring == "softmax" and renormalize and correction is None and groups == 1:
        # the k largest softmax scores are the k largest logits, and renormalized they are the softmax of those k
        # logits alone: one top-k and a softmax over k values (four fewer launches, which a decode step counts)
        if kernels and topk_refusal(experts, top_k) is None:  # both in one launch
            chosen, weights = top_k_softmax(logits, top_k)
        else:
            top, chosen = logits.topk(top_k, dim=-1)
            weights = top.softmax(dim=-1)
    elif kernels and SELECT_KERNEL and select_refusal(experts, top_k, groups, top_groups) is None:
        # any other routing (sigmoid scores, DeepSeek-V3's correction and groups): one launch for 19 operators
        chosen, weights = top_k_select(logits, top_k, scoring=scoring, correction=correction, groups=groups,
                                       top_groups=top_groups, renormalize=renormalize, scaling=scaling)  # fmt: skip
        scaling = 1.0  # applied
    else:
        scores = logits.softmax(dim=-1) if scoring == "softmax" else logits.sigmoid()
        choice = scores if correction is None else scores + correction.float()
        if groups > 1:
            per_group = choice.view(-1, groups, experts // groups)
            group_score = per_group.topk(min(2, experts // groups), dim=-1).values.sum(dim=-1)
            best = group_score.topk(top_groups, dim=-1).indices
            keep = torch.zeros_like(group_score, dtype=torch.bool).scatter_(1, best, True)
            choice = per_group.masked_fill(~keep[:, :, None], float("-inf")).view(-1, experts)
        chosen = choice.topk(top_k, dim=-1).indices
        weights = scores.gather(1, chosen)
        if renormalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
    if scaling != 1.0:
        weights = weights * scaling
    if kernels:
        return sort_by_expert(chosen, weights, experts, block_m)
    flat = chosen.reshape(-1)
    order = torch.argsort(flat, stable=True)
    # counts by scatter-add: torch.bincount would synchronize to size its output
    counts = torch.zeros(experts, dtype=torch.int64, device=x.device).index_add_(0, flat, torch.ones_like(flat))
    offs = torch.cumsum(counts, 0).to(torch.int32)
    return Routing(order // top_k, weights.reshape(-1)[order], offs, order, counts)


def route_params(kind: str, top_k: int = 1, experts: int = 0, block_m: int = 64) -> tuple[tuple[str, Any], ...]:
    """The parameters of `moe_route_rank` (`kind` "rank"), `moe_route_sorted` ("sorted", `top_k` choices a token,
    row-tile counts for tiles of `block_m` rows) or `moe_route_topk` ("topk", over `experts`: a row of the next
    power of two, at least 32, in one warp)."""
    rows, cols = ROUTE_TILE
    if kind == "rank":
        return (("BI", rows), ("BJ", cols))
    if kind == "topk":
        width = max(32, 1 << max(experts - 1, 1).bit_length())
        return (("BE", width), ("BT", max(4, 512 // width)), ("TOPK", top_k))
    return (("BI", cols), ("BM", block_m), ("BR", rows), ("TOPK", top_k))


def topk_refusal(experts: int, top_k: int) -> str | None:
    """Why `moe_route_topk` does not take `experts` logits a token (rows of whole 16-byte vectors, at most 512), or
    None."""
    if experts % 4 or experts > 512 or not 1 <= top_k <= experts:
        return f"{experts} experts, top-{top_k}: the kernel takes a multiple of 4 experts, at most 512"
    return None


def select_refusal(experts: int, top_k: int, groups: int = 1, top_groups: int = 1) -> str | None:
    """Why `moe_route_select` does not take a routing of `experts` experts, top-`top_k`, in `groups` groups of which
    `top_groups` are chosen (`topk_refusal`'s rows; groups of two experts or more), or None."""
    if (why := topk_refusal(experts, top_k)) is not None:
        return why
    if groups > 1 and (experts % groups or experts // groups < 2 or top_k > top_groups * (experts // groups)):
        return f"{experts} experts in {groups} groups: the kernel takes equal groups of two experts or more"
    return None


def top_k_select(
    logits: Any,
    top_k: int,
    *,
    scoring: str = "softmax",
    correction: Any = None,
    groups: int = 1,
    top_groups: int = 1,
    renormalize: bool = True,
    scaling: float = 1.0,
) -> tuple[Any, Any]:
    """(chosen (T, k) int32, weights (T, k) f32) of any routing `route` takes, by `moe_route_select` in one launch
    (the lane-level interpreter for CPU tensors): the experts chosen by their scores (`scoring`: softmax or sigmoid
    of the logits) plus `correction`, within the `top_groups` best of `groups` groups, and their uncorrected scores,
    renormalized (`renormalize`) and times `scaling`: what `route`'s PyTorch operators give (19 launches at
    DeepSeek-V3's routing), the weights within a few ulp (the exponential's rounding), the choices the same where no
    two scores tie."""
    import torch

    tokens, experts = logits.shape
    if (why := select_refusal(experts, top_k, groups, top_groups)) is not None:
        raise GroupedError(why)
    logits = logits.to(torch.float32).contiguous()
    dev = logits.device
    bias = torch.zeros(experts, dtype=torch.float32, device=dev) if correction is None else correction
    chosen = torch.empty((tokens, top_k), dtype=torch.int32, device=dev)
    weights = torch.empty((tokens, top_k), dtype=torch.float32, device=dev)
    params = route_params("topk", top_k, experts) + (
        ("SCORING", scoring), ("GROUPS", groups), ("TOP_GROUPS", top_groups), ("RENORMALIZE", bool(renormalize)),
        ("SCALING", float(scaling)),
    )  # fmt: skip
    _run_route("select", params, LOGITS=logits, CORRECTION=bias.to(torch.float32).contiguous(), CHOICE=chosen,
               WIN=weights)  # fmt: skip
    return chosen, weights


def top_k_softmax(logits: Any, top_k: int) -> tuple[Any, Any]:
    """(chosen (T, k) int32, weights (T, k) f32): each token's `top_k` largest logits (in order; the lowest expert
    among equal ones) and their own softmax, by `moe_route_topk` in one launch (the lane-level interpreter for CPU
    tensors): what ``logits.topk(k)`` and ``top.softmax(-1)`` give, the weights within about 4 ulp (the
    exponential's rounding)."""
    import torch

    tokens, experts = logits.shape
    if (why := topk_refusal(experts, top_k)) is not None:
        raise GroupedError(why)
    logits = logits.to(torch.float32).contiguous()
    chosen = torch.empty((tokens, top_k), dtype=torch.int32, device=logits.device)
    weights = torch.empty((tokens, top_k), dtype=torch.float32, device=logits.device)
    _run_route("topk", route_params("topk", top_k, experts), LOGITS=logits, CHOICE=chosen, WIN=weights)
    return chosen, weights


def sort_by_expert(chosen: Any, weights: Any, experts: int, block_m: int = 64) -> Routing:
    """The `Routing` of choices `chosen` (T, k) (expert ids) weighted `weights` (T, k), sorted by expert stably
    (within an expert in token order), by the two kernels of `argus.kernels.moe_route`: two launches on a CUDA
    device, the lane-level interpreter for CPU tensors (small sizes). Its token, order, counts and positions are
    int32 (`route`'s PyTorch sort gives int64 token, order and counts), offs int32 as always; it carries the
    row-tile counts for tiles of `block_m` rows (`Routing.tiles`)."""
    import torch

    tokens, top_k = chosen.shape
    rows = tokens * top_k
    if rows == 0 or chosen.shape != weights.shape:
        raise GroupedError(f"sort_by_expert takes (T, k) choices and weights, T * k > 0: {tuple(chosen.shape)}, "
                           f"{tuple(weights.shape)}")  # fmt: skip
    dev = chosen.device
    flat = chosen.reshape(-1).to(torch.int32).contiguous()
    win = weights.reshape(-1).to(torch.float32).contiguous()
    pos, order, token = (torch.empty(rows, dtype=torch.int32, device=dev) for _ in range(3))
    offs, counts, tiles = (torch.empty(experts, dtype=torch.int32, device=dev) for _ in range(3))
    weight = torch.empty(rows, dtype=torch.float32, device=dev)
    _run_route("rank", route_params("rank"), CHOICE=flat, POS=pos, OFFS=offs, COUNTS=counts)
    _run_route("sorted", route_params("sorted", top_k, block_m=block_m), POS=pos, WIN=win, COUNTS=counts,
               ORDER=order, TOKEN=token, WEIGHT=weight, TILES=tiles)  # fmt: skip
    return Routing(token, weight, offs, order, counts, pos, (block_m, tiles))


#: The routing kernels, by the `kind` of `route_params`.
ROUTE_KERNELS = {"rank": moe_route_rank, "sorted": moe_route_sorted, "topk": moe_route_topk, "select": moe_route_select}


def _run_route(kind: str, params: tuple[tuple[str, Any], ...], **tensors: Any) -> None:
    """Launch routing kernel `kind` on `tensors` (named as its parameters, given in their order): compiled on a
    CUDA device, on the lane-level interpreter for CPU tensors (written in place through their numpy views)."""
    if next(iter(tensors.values())).is_cuda:
        _launch(_loaded_route(kind, params), *tensors.values()).launch()
        return
    from argus.interp import run_kernel

    run_kernel(ROUTE_KERNELS[kind].trace(**dict(params)), {name: t.numpy() for name, t in tensors.items()})


def _loaded_route(kind: str, params: tuple[tuple[str, Any], ...]) -> Any:
    """Routing kernel `kind` compiled and loaded (dependent as `_loaded_small`)."""
    return _compiled("route", kind, params, _DEPENDENT.get())


def moe_layer(
    x: Any,
    router: Any,
    w1: Any,
    w2: Any,
    top_k: int,
    *,
    renormalize: bool = True,
    bias: Any = None,
    scoring: str = "softmax",
    activation: str = "silu",
    correction: Any = None,
    groups: int = 1,
    top_groups: int = 1,
    scaling: float = 1.0,
    combine_kernel: bool | None = None,
    fused_gather: bool | None = None,
) -> Any:
    """A MoE layer's forward on a CUDA device: tokens `x` (T, H) bf16, router weight `router` (H, E), expert weights
    `w1` (E, H, 2I) (gate then up columns) and `w2` (E, I, H), top-`top_k` routing (`route`: `scoring` "softmax" or
    "sigmoid", and DeepSeek-V3's `correction`, `groups`, `top_groups`, `scaling`); returns (T, H) in x's dtype: for each
    token, the sum over its k experts of ``weight * (act(x @ gate) * (x @ up)) @ w2[e]``, act the `activation` (silu:
    SwiGLU; gelu, gelu_tanh: GeGLU). Steps: routing (`route`: the logits' product, then the DSL routing kernels at
    decode sizes, PyTorch operators beyond; no host synchronization); the routed rows
    gathered in expert order (``index_select``); `grouped_gemm_swiglu` (SwiGLU and each row's router weight in the
    epilogue: the down-projection is linear, so its input rows may carry the weights), or with `fused_gather` (default
    `FUSED_GATHER`, off: measured slower) `grouped_gemm_swiglu_gathered`, which reads each routed row's token itself
    and needs no gathered copy; `grouped_gemm_persistent` for the down-projection; the sum of each token's k rows
    (`combine`: PyTorch operators, or with `combine_kernel` (default `COMBINE_KERNEL`) the `moe_combine` kernel;
    deterministic either way). At decode sizes the products split K where their units leave SMs idle: the
    down-projection's slices summed by the combine (`decode_plan`), the up-projection as the plain product split
    and `moe_glu_sum` (`decode_up_split`), and every kernel is launched as a programmatic dependent of the one
    before it (`dependent_launches`). Not fused yet: the combine into the second GEMM's epilogue (docs/moe.md)."""
    import torch

    if x.dim() != 2 or router.dim() != 2 or w1.dim() != 3 or w2.dim() != 3:
        raise GroupedError(
            "moe_layer takes x (T, H), router (H, E), w1 (E, H, 2I), w2 (E, I, H); got "
            f"{tuple(x.shape)}, {tuple(router.shape)}, {tuple(w1.shape)}, {tuple(w2.shape)}"
        )
    (tokens, hidden), experts = x.shape, router.shape[1]
    inter = w2.shape[1]
    want_w1, want_w2 = (experts, hidden, 2 * inter), (experts, inter, hidden)
    if router.shape[0] != hidden or tuple(w1.shape) != want_w1 or tuple(w2.shape) != want_w2:
        raise GroupedError(
            f"with x (T, {hidden}) and router (H, E={router.shape[1]}): w1 must be (E, H, 2I) and w2 (E, I, H); got "
            f"router {tuple(router.shape)}, w1 {tuple(w1.shape)}, w2 {tuple(w2.shape)}"
        )
    if not 1 <= top_k <= experts:
        raise GroupedError(f"top_k must be between 1 and the number of experts ({experts}), got {top_k}")
    if bias is not None and tuple(bias.shape) != (tokens, experts):
        raise GroupedError(f"bias must be (T, E) = ({tokens}, {experts}), got {tuple(bias.shape)}")
    if activation not in GLU_ACTIVATIONS:
        raise GroupedError(f"activation is one of {', '.join(GLU_ACTIVATIONS)}, got {activation!r}")
    if tokens == 0:  # no token: the layer's output is empty (nothing to route, no launch)
        return x.new_empty((0, hidden))
    routed = tokens * top_k
    with _launched_as(dependent_launches(routed, experts)):  # decode steps: each launch a dependent
        gather = FUSED_GATHER if fused_gather is None else fused_gather
        up = choose(routed, inter, hidden, experts, "swiglu")
        up_split = None if gather else decode_up_split(routed, inter, hidden, experts)
        down = decode_plan(routed, hidden, inter, experts)  # at decode sizes, K split where the units leave SMs idle
        routing = route(x, router, top_k, renormalize=renormalize, bias=bias, scoring=scoring, correction=correction,
                        groups=groups, top_groups=top_groups, scaling=scaling, block_m=up["BM"])  # fmt: skip
        block_ms = {up["BM"], down["BM"], (up_split or up)["BM"]}
        tiles = {bm: routing.tiles(bm) if SHARED_TILE_COUNTS else None for bm in block_ms}  # made once for both
        if up_split is not None:  # decode: the gate-and-up product split along K, then the slices' gated sum
            slices, launch = prepare(x.index_select(0, routing.token), w1, routing.offs, config=up_split,
                                     tiles=tiles[up_split["BM"]])  # fmt: skip
            launch.launch()
            h, launch = prepare_glu_sum(slices, routing.weight, activation, x.dtype)
            launch.launch()
        elif gather:
            token = routing.token.to(torch.int32)
            h = grouped_swiglu(x.contiguous(), w1, routing.offs, scale=routing.weight, activation=activation,
                               token=token, config=up, tiles=tiles[up["BM"]])  # fmt: skip
        else:
            rows = x.index_select(0, routing.token)
            h = grouped_swiglu(rows, w1, routing.offs, scale=routing.weight, activation=activation, config=up,
                               tiles=tiles[up["BM"]])  # fmt: skip
        y, launch = prepare(h, w2, routing.offs, config=down, tiles=tiles[down["BM"]])
        launch.launch()
        return combine(y, routing, tokens, top_k, kernel=combine_kernel, dtype=x.dtype)


def combine(y: Any, routing: Routing, tokens: int, top_k: int, *, kernel: bool | None = None, dtype: Any = None) -> Any:
    """Each token's output ((tokens, H), `dtype`, default y's): the sum of its k routed rows of `y` (rows in expert
    order, as the grouped GEMMs produce them, already weighted; or split-K's f32 slices (S, R, H) of them, each
    row's slices added too), in the same order every run (no atomics). With `kernel` (default `COMBINE_KERNEL`; CUDA
    tensors) the `moe_combine` kernel reads each token's rows through the routing's positions and sums them in f32;
    else the rows are put back in (token, choice) order first and summed by ``torch.sum`` (f32 accumulation)."""
    import torch

    dtype = y.dtype if dtype is None else dtype
    name, out_name = dtype_name(y.dtype), dtype_name(dtype)
    splits = y.shape[0] if y.dim() == 3 else 1
    whole = name is not None and y.shape[-1] % (4 if name == "f32" else 8) == 0  # rows in whole 16-byte vectors
    if (COMBINE_KERNEL if kernel is None else kernel) and y.is_cuda and whole and out_name is not None:
        out = torch.empty((tokens, y.shape[-1]), dtype=dtype, device=y.device)
        params = combine_params(y.shape[-1], top_k, name, splits, out_name)
        _launch(_loaded_small("combine", params), y.contiguous(), routing.positions(), out).launch()
        return out
    if splits > 1:  # the slices' sum in f32, then as the rows
        y = y.sum(0)
    unsorted = torch.empty_like(y)
    unsorted[routing.order] = y
    return unsorted.view(tokens, top_k, -1).sum(dim=1).to(dtype)
