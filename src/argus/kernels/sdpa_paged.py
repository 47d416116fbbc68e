"""Decoding against a paged KV cache, the call a user makes (issue #22): `sdpa_paged` runs
`argus.kernels.attention_paged.flash_attention_paged` (and, with split keys, `argus.kernels.attention.
attention_combine`) on one query token per sequence against keys and values kept in pages, as vLLM and SGLang keep
them.

``sdpa_paged(q, k_cache, v_cache, block_table, seqlens_k, scale=...)`` takes bf16 or f16 CUDA tensors q (B, H, D),
k_cache (PAGES, PAGE, HK, D), v_cache (PAGES, PAGE, HK, DV) (H a multiple of HK, at most 64 query heads per
key/value head; PAGE a multiple of 64 tokens, or 16 or 32), and int32 block_table (B, MAXP) and seqlens_k (B,):
sequence b's token t is row ``t % PAGE`` of page ``block_table[b, t // PAGE]`` and it has ``seqlens_k[b]`` tokens.
Every entry of the table must name a page of the pool, unused ones too (0, say), and the pages a sequence uses are
distinct. It returns O (B, H, DV) in q's dtype (or `out_dtype`) and, with ``return_lse=True``, LSE (B, H) in f32; a
sequence with no token gets O = 0 and LSE = -inf. ``window=W`` is a sliding window (Mistral's, Gemma's local
layers; vLLM's ``sliding_window``): the query, the sequence's newest token, sees its last W tokens only, and only the
pages holding them are read (a table's entries before them must still name pages of the pool).

The keys are split across blocks (flash-decoding, `argus.kernels.sdpa.key_splits`) by `max_seqlen_k` (default:
the table's capacity, MAXP * PAGE, when not given; at most the window's tiles); each split takes its share of its own
sequence's tiles.
``validate=True`` (the default) reads the table and the lengths back to check them (a device-to-host copy, which
synchronizes); ``validate=False`` skips that for CUDA graphs, and they are then the caller's contract.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.kernels import arrays, matmul, sdpa
from argus.kernels.attention import merge_reducers
from argus.kernels.attention_paged import SMALL_PAGES, flash_attention_paged, flash_attention_paged_combined
from argus.kernels.sdpa import COMBINE_TILE, AttentionError, check_heads, check_window, dtypes_of, key_splits

#: The most query heads per key/value head (the packed rows of one 64-row tile).
MAX_GROUP = 64


@dataclass(frozen=True)
class PagedProblem:
    """One paged decode: `batch` sequences of one query token, `heads` query heads over `kv_heads` key/value heads,
    pages of `page` tokens, a table of `max_pages` entries per sequence, head dims `d` and `dv`; `max_seqlen` sizes
    the split of the keys (0: the table's capacity)."""

    batch: int
    heads: int
    kv_heads: int
    page: int
    max_pages: int
    d: int
    dv: int
    dtype: str = "bf16"
    out: str = "bf16"
    scale: float | None = None
    max_seqlen: int = 0
    #: a sliding window: the query sees the sequence's last `window` tokens only; 0: all of them
    window: int = 0

    def __post_init__(self) -> None:
        check_heads(self.dtype, self.out, self.heads, self.kv_heads, self.d, self.dv, self.scale)
        check_window(self.window, True)  # the query is the sequence's last token: a window is causal
        if self.heads // self.kv_heads > MAX_GROUP:
            raise AttentionError(
                f"{self.heads // self.kv_heads} query heads per key/value head: at most {MAX_GROUP} (one 64-row tile)"
            )
        if (self.page % 64 or self.page < 64) and self.page not in SMALL_PAGES:
            raise AttentionError(
                f"pages of {self.page} tokens: a multiple of 64 is supported (one key tile in a page), or "
                f"{' or '.join(map(str, SMALL_PAGES))} (several pages a key tile)"
            )

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads


#: Whether a split plan merges its partial results in the attention kernel's own launch
#: (`flash_attention_paged_combined`) where the grid fits one wave, as `argus.kernels.sdpa.COMBINE_IN_KERNEL` does
#: for `sdpa`. Measured on an H100 (benchmarks/results/2026-12-06-attention-paged-merged/, interleaved): 1.00-1.09x
#: the two launches' speed on every split row (B=1 at 8k 30.5 -> 27.9 µs), bit for bit their result before and
#: after the timed relaunches; `test_paged_decode_matches_torch_on_the_gpu` passed both ways. A switch for A/B runs.
COMBINE_IN_KERNEL = True


@dataclass(frozen=True)
class PagedPlan:
    """What `sdpa_paged` launches for `problem`: the paged kernel, and with split keys either `attention_combine`
    after it or (`combined`) the merge in the kernel's own launch. `combined` None takes `COMBINE_IN_KERNEL` where
    `combined_refusal` allows it on `SMS` SMs; True where it does not is refused with the reason."""

    problem: PagedProblem
    combined: bool | None = None

    def __post_init__(self) -> None:
        why = combined_refusal(self, SMS) if self.combined is not False else None
        if self.combined is None:
            object.__setattr__(self, "combined", COMBINE_IN_KERNEL and why is None)
        elif self.combined and why is not None:
            raise AttentionError(f"the merge in the paged kernel's launch: {why}")

    @property
    def block_n(self) -> int:
        """Keys per tile: 128 where the page holds whole 128-key tiles and the head dims are at most 128, else 64
        (pages of 16 or 32 tokens: four or two pages a tile)."""
        p = self.problem
        return 128 if p.page % 128 == 0 and max(p.d, p.dv) <= 128 else 64

    @property
    def splits(self) -> int:
        p = self.problem
        keys = p.max_seqlen or p.page * p.max_pages
        tiles = -(-keys // self.block_n)
        if p.window:  # the tiles the window's tokens can lie in
            tiles = min(tiles, -(-(p.window - 1) // self.block_n) + 1)
        return key_splits(p.batch * p.kv_heads, tiles)

    def blocks(self) -> int:
        """The kernel's grid: a block per (sequence, key/value head, split)."""
        return self.problem.batch * self.problem.kv_heads * self.splits

    def counters(self) -> int:
        """The group-barrier counters a combined plan's kernel takes: one per (sequence, key/value head) unit."""
        return self.problem.batch * self.problem.kv_heads

    def params(self) -> tuple[tuple[str, Any], ...]:
        p = self.problem
        params = {
            "D": p.d,
            "DV": p.dv,
            "BN": self.block_n,
            "PAGE_SIZE": p.page,
            "STAGES": 2,
            "SPLITS": self.splits,
            "WINDOW": p.window,
            "SCALE": p.scale if p.scale is not None else 0.0,
            "IN": p.dtype,
            "OUT": p.out if self.splits == 1 or self.combined else "f32",
        }
        if self.combined:
            params["WAVE"] = SMS
        return tuple(sorted(params.items()))

    def combine_params(self) -> tuple[tuple[str, Any], ...] | None:
        if self.splits == 1 or self.combined:
            return None
        br, bd = COMBINE_TILE
        return tuple(sorted({"SPLITS": self.splits, "BR": br, "BD": bd, "OUT": self.problem.out}.items()))

    def kernel(self) -> Any:
        """The traced paged kernel this plan launches."""
        return (_traced_combined if self.combined else _traced)(self.params())

    def kernels(self) -> list[Any]:
        """The traced kernels a call launches, in order (the paged attention, then the combine where split and not
        merged in the same launch)."""
        combine = self.combine_params()
        return [self.kernel()] + ([sdpa._traced_combine(combine)] if combine is not None else [])

    def describe(self) -> dict[str, Any]:
        return {"problem": asdict(self.problem), "combined": self.combined, "params": dict(self.params())}

    def run_on_interpreter(self, q: Any, k_cache: Any, v_cache: Any, table: Any, lens: Any) -> tuple[Any, Any]:
        """(O (B, H, DV), LSE (B, H)) on the lane-level interpreter for numpy inputs, through the kernels and
        parameters a GPU call launches (small shapes only)."""
        import numpy as np

        from argus.interp import run_kernel

        p = self.problem
        b, hk, g = p.batch, p.kv_heads, p.group
        splits = self.splits
        lead = (splits,) if splits > 1 else ()
        part_o = np.full((*lead, b, hk, g, p.dv), np.nan)
        part_lse = np.full((*lead, b, hk, g), np.nan)
        tensors = {
            "Q": np.asarray(q, dtype=np.float64).reshape(b, hk, g, p.d),
            "KC": np.asarray(k_cache, dtype=np.float64),
            "VC": np.asarray(v_cache, dtype=np.float64),
            "TABLE": np.asarray(table, dtype=np.int32),
            "LENS": np.asarray(lens, dtype=np.int32),
            "O": part_o,
            "LSE": part_lse,
        }
        kernels = self.kernels()
        if splits == 1:
            run_kernel(kernels[0], tensors)
            return part_o.reshape(b, p.heads, p.dv), part_lse.reshape(b, p.heads)
        o, lse = np.full((b, hk, g, p.dv), np.nan), np.full((b, hk, g), np.nan)
        if self.combined:  # the partial results, then their merge, in one kernel
            merged = {**tensors, "OP": part_o, "LP": part_lse, "O": o, "LSE": lse}
            run_kernel(kernels[0], {**merged, "F": np.zeros(self.counters(), np.int32)})
        else:
            run_kernel(kernels[0], tensors)
            ops = {"OP": part_o.reshape(splits, b * hk, g, p.dv), "LP": part_lse.reshape(splits, b * hk, g)}
            run_kernel(kernels[1], {**ops, "O": o.reshape(b * hk, g, p.dv), "LSE": lse.reshape(b * hk, g)})
        return o.reshape(b, p.heads, p.dv), lse.reshape(b, p.heads)


def combined_refusal(plan: PagedPlan, sms: int = SMS) -> str | None:
    """Why `plan` cannot merge its split keys in its own launch on a GPU of `sms` SMs, or None where it can: split
    keys, the grid in one wave (a unit's blocks wait for each other), and the packed rows in shares the consumer
    threads fill (`attention.merge_reducers`)."""
    if plan.splits == 1:
        return "the keys are not split: there is nothing to merge"
    if plan.blocks() > sms:
        return f"{plan.blocks()} blocks wait for each other on {sms} SMs: not one wave"
    if merge_reducers(64, plan.splits, plan.problem.dv, WARPGROUP_SIZE) == 0:
        return f"64 rows of {plan.problem.dv} values do not give {WARPGROUP_SIZE} threads a 4-value vector each"
    return None


@functools.lru_cache(maxsize=64)
def _traced(params: tuple[tuple[str, Any], ...]) -> Any:
    return flash_attention_paged.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_combined(params: tuple[tuple[str, Any], ...]) -> Any:
    return flash_attention_paged_combined.trace(**dict(params))


def _loaded(params: tuple[tuple[str, Any], ...], combined: bool = False) -> Any:
    """The paged kernel (or `combined`, the merging one) compiled and loaded, for programmatic dependent launch as
    `sdpa`'s (`sdpa.DEPENDENT_LAUNCHES`); the combine is `sdpa`'s own (`sdpa._loaded("combine", ...)`)."""
    return _loaded_for(params, combined, sdpa.DEPENDENT_LAUNCHES)


@functools.lru_cache(maxsize=64)
def _loaded_for(params: tuple[tuple[str, Any], ...], combined: bool, dependent: bool) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel((_traced_combined if combined else _traced)(params), dependent=dependent))


def check_cache_tables(table: Any, lens: Any, pages: int, page: int, window: int = 0) -> None:
    """AttentionError unless every entry of `table` (B, MAXP) names a page of a pool of `pages`, every length of
    `lens` (B,) lies in 0 .. MAXP * page, and no sequence uses a page twice (the pages its length covers; with a
    sliding `window`, those its last `window` tokens lie in: a cache may reuse the pages behind the window)."""
    import numpy as np

    table, lens = np.asarray(table).astype(np.int64), np.asarray(lens).astype(np.int64)
    bad = np.argwhere((table < 0) | (table >= pages))
    if bad.size:
        b, i = (int(x) for x in bad[0])
        raise AttentionError(
            f"block_table[{b}, {i}] = {table[b, i]}: every entry must name a page of the pool (0 .. {pages - 1}), "
            "unused entries too"
        )
    bad = np.nonzero((lens < 0) | (lens > table.shape[1] * page))[0]
    if bad.size:
        b = int(bad[0])
        raise AttentionError(
            f"seqlens_k[{b}] = {lens[b]}: lengths lie in 0 .. {table.shape[1] * page} (the table's {table.shape[1]} "
            f"pages of {page} tokens)"
        )
    for b in range(table.shape[0]):  # a page holds one stretch of one sequence: its pages in use are distinct
        first = max(int(lens[b]) - window, 0) // page if window else 0
        used = table[b, first : -(-int(lens[b]) // page)]
        values, counts = np.unique(used, return_counts=True)
        if (counts > 1).any():
            twice = int(values[counts > 1][0])
            at = np.nonzero(used == twice)[0][:2].tolist()
            raise AttentionError(
                f"block_table[{b}, {first + at[0]}] and block_table[{b}, {first + at[1]}] both name page {twice}: a "
                "sequence's pages in use must be distinct (a page repeated would be attended twice)"
            )


def problem_of(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    block_table: Any,
    seqlens_k: Any,
    *,
    scale: float | None = None,
    out_dtype: Any = None,
    max_seqlen_k: int | None = None,
    window: int = 0,
) -> PagedProblem:
    """The problem of the call's tensors, their shapes and dtypes checked."""
    if len(q.shape) != 3:
        raise AttentionError(f"q has shape {tuple(q.shape)}: sdpa_paged takes one token per sequence, (B, H, D)")
    for name, x in (("k_cache", k_cache), ("v_cache", v_cache)):
        if len(x.shape) != 4:
            raise AttentionError(f"{name} has shape {tuple(x.shape)}: (pages, page size, key/value heads, head dim)")
    (b, h, d), (pages, page, hk, dk), (pv, pagev, hkv, dv) = q.shape, k_cache.shape, v_cache.shape
    if (pages, page, hk) != (pv, pagev, hkv) or dk != d:
        raise AttentionError(
            f"q {tuple(q.shape)}, k_cache {tuple(k_cache.shape)}, v_cache {tuple(v_cache.shape)}: the caches need "
            "one (pages, page size, heads) and k_cache q's head dim"
        )
    if len(block_table.shape) != 2 or block_table.shape[0] != b or tuple(seqlens_k.shape) != (b,):
        raise AttentionError(
            f"block_table {tuple(block_table.shape)}, seqlens_k {tuple(seqlens_k.shape)}: (B, max pages) and (B,) "
            f"for B = {b}"
        )
    for name, x in (("block_table", block_table), ("seqlens_k", seqlens_k)):
        if "int32" not in str(x.dtype):
            raise AttentionError(f"{name} in {x.dtype}: int32")
    dtype, out = dtypes_of({"q": q, "k_cache": k_cache, "v_cache": v_cache}, out_dtype)
    return PagedProblem(b, h, hk, page, block_table.shape[1], d, dv, dtype, out, scale, max_seqlen_k or 0, window)


def prepare(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    block_table: Any,
    seqlens_k: Any,
    *,
    scale: float | None = None,
    out_dtype: Any = None,
    max_seqlen_k: int | None = None,
    validate: bool = True,
    window: int = 0,
) -> tuple[Any, Any, Any]:
    """(O, LSE, the prepared launches): `sdpa_paged` without launching, for timing loops and CUDA graphs (keep the
    returned objects alive while the launches are used)."""
    import torch

    problem = problem_of(
        q, k_cache, v_cache, block_table, seqlens_k, scale=scale, out_dtype=out_dtype, max_seqlen_k=max_seqlen_k,
        window=window,
    )  # fmt: skip
    for name, x in (("k_cache", k_cache), ("v_cache", v_cache), ("block_table", block_table)):
        if not x.is_contiguous():
            raise AttentionError(f"{name} is not contiguous: the kernel reads it through TMA as it lies")
    if validate:
        check_cache_tables(
            block_table.cpu().numpy(), seqlens_k.cpu().numpy(), k_cache.shape[0], problem.page, problem.window
        )
    plan = PagedPlan(problem)
    if plan.combined and q.is_cuda and combined_refusal(plan, matmul.device_sms(q.device)) is not None:
        plan = PagedPlan(problem, combined=False)  # two launches on a GPU with fewer SMs
    b, hk, g = problem.batch, problem.kv_heads, problem.group
    q = q if q.is_contiguous() else q.contiguous()
    lens = seqlens_k.contiguous()
    o = torch.empty((b, problem.heads, problem.dv), dtype=matmul.torch_dtype(problem.out), device=q.device)
    lse = torch.empty((b, problem.heads), dtype=torch.float32, device=q.device)
    splits = plan.splits
    out_views = (o.view(b, hk, g, problem.dv), lse.view(b, hk, g))
    if splits == 1:
        first_out = out_views
    else:
        first_out = (
            torch.empty((splits, b, hk, g, problem.dv), dtype=torch.float32, device=q.device),
            torch.empty((splits, b, hk, g), dtype=torch.float32, device=q.device),
        )
    views = (q.view(b, hk, g, problem.d), k_cache, v_cache, block_table, lens, *first_out)
    if plan.combined:  # one launch: the partial results, then each unit's merge
        counters = torch.zeros(plan.counters(), dtype=torch.int32, device=q.device)  # reused by every relaunch
        kernel = _loaded(plan.params(), combined=True)
        launches = matmul.Launches([kernel.prepare(*views, *out_views, counters, dependent=sdpa.DEPENDENT_LAUNCHES)])
        launches.keep = [q, k_cache, v_cache, block_table, lens, o, lse, *first_out, counters]
        return o, lse, launches
    launches = matmul.Launches([_loaded(plan.params()).prepare(*views, dependent=sdpa.DEPENDENT_LAUNCHES)])
    if splits > 1:
        part_o, part_lse = first_out
        combine = sdpa._loaded("combine", plan.combine_params())
        launches.append(
            combine.prepare(
                part_o.view(splits, b * hk, g, problem.dv),
                part_lse.view(splits, b * hk, g),
                o.view(b * hk, g, problem.dv),
                lse.view(b * hk, g),
                dependent=sdpa.DEPENDENT_LAUNCHES,
            )
        )
    launches.keep = [q, k_cache, v_cache, block_table, lens, o, lse, *first_out]
    return o, lse, launches


def sdpa_paged(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    block_table: Any,
    seqlens_k: Any,
    *,
    scale: float | None = None,
    out_dtype: Any = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    validate: bool = True,
    window: int = 0,
) -> Any:
    """One decode step's attention against a paged cache (module docstring); with `return_lse`, (O, LSE). `window`
    > 0: the query sees its sequence's last `window` tokens only. Launches on the current stream and returns without
    synchronizing (beyond `validate`'s read of the table)."""
    o, lse, launches = prepare(
        q,
        k_cache,
        v_cache,
        block_table,
        seqlens_k,
        scale=scale,
        out_dtype=out_dtype,
        max_seqlen_k=max_seqlen_k,
        validate=validate,
        window=window,
    )
    for launch in launches:
        launch.launch()
    return (o, lse) if return_lse else o


def reference(
    q: Any, k_cache: Any, v_cache: Any, table: Any, lens: Any, *, scale: float | None = None, window: int = 0
) -> tuple[Any, Any]:
    """(O (B, H, DV), LSE (B, H)) in float64 numpy: each sequence's keys gathered from its pages, then
    `arrays.attention` (a sequence with no token: O = 0, LSE = -inf); `window`: its last `window` tokens only."""
    import numpy as np

    q, kc, vc = (np.asarray(x, dtype=np.float64) for x in (q, k_cache, v_cache))
    table, lens = np.asarray(table).astype(np.int64), np.asarray(lens).astype(np.int64)
    b, h, _ = q.shape
    page = kc.shape[1]
    o, lse = np.zeros((b, h, vc.shape[3])), np.full((b, h), -np.inf)
    for i in range(b):
        if lens[i] == 0:
            continue
        t = np.arange(lens[i])
        k, v = (c[table[i, t // page], t % page].transpose(1, 0, 2)[None] for c in (kc, vc))  # (1, HK, n, D)
        ob, lb = arrays.attention(q[i][:, None][None], k, v, scale=scale, causal=bool(window), window=window)
        o[i], lse[i] = ob[0, :, 0], lb[0, :, 0]
    return o, lse


__all__ = [
    "COMBINE_IN_KERNEL",
    "PagedPlan",
    "PagedProblem",
    "check_cache_tables",
    "combined_refusal",
    "prepare",
    "problem_of",
    "reference",
    "sdpa_paged",
]
