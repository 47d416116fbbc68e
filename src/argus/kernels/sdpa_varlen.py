"""Variable-length attention, the call a user makes (issue #22): `sdpa_varlen` runs
`argus.kernels.attention_varlen.flash_attention_varlen` on a batch of sequences packed end to end, as
FlashAttention's ``flash_attn_varlen_func`` takes them.

``sdpa_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=..., scale=...)`` takes bf16 or f16 CUDA tensors
q (TQ, H, D), k (TK, HK, D), v (TK, HK, DV) (H a multiple of HK) and the cumulative sequence lengths ``cu_seqlens_q``
and ``cu_seqlens_k`` (B + 1,) (int32 or int64, ``cu[0] = 0``, nondecreasing, ``cu[B]`` the tensor's length): sequence
b's queries are rows ``cu_seqlens_q[b] .. cu_seqlens_q[b+1]`` of q and its keys the same rows of k and v. It returns
O (TQ, H, DV) in the inputs' dtype (or `out_dtype`) and, with ``return_lse=True``, each row's log-sum-exp (H, TQ) in
f32. ``causal=True`` aligns each sequence's mask at the bottom right of its own scores (query i sees keys
j <= i + lk - lq), as FlashAttention does; ``window=W`` (with ``causal``) keeps only the W keys up to each query's
diagonal (j > i + lk - lq - W: FlashAttention's ``window_size=(W - 1, 0)``, Mistral's and Gemma's local layers), and
a query tile reads only the key tiles its rows' windows cover. A sequence with no key gets O = 0 and LSE = -inf.
No maximum length is asked for: the grid follows the sequences' query tiles, counted on the device
(`argus.kernels.moe.tile_counts`).

``validate=True`` (the default) reads the offsets back to check them (one device-to-host copy of B + 1 integers,
which synchronizes); ``validate=False`` skips that for CUDA-graph capture and timing loops, and the offsets are then
the caller's contract: offsets that break it make the kernel read and write other sequences' rows.

`VarlenPlan.run_on_interpreter` runs the same kernel and parameters on the CPU interpreter (small shapes), which is
how the tests check the boundaries without a GPU.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

from argus.kernels import arrays, matmul
from argus.kernels.attention_varlen import flash_attention_varlen
from argus.kernels.grouped import search_steps
from argus.kernels.sdpa import AttentionError, check_heads, check_window, dtypes_of


@dataclass(frozen=True)
class VarlenProblem:
    """One varlen call: `batch` sequences, `heads` query heads over `kv_heads` key/value heads, `total_q` query and
    `total_k` key rows in all, head dims `d` (Q, K) and `dv` (V, O)."""

    batch: int
    heads: int
    kv_heads: int
    total_q: int
    total_k: int
    d: int
    dv: int
    causal: bool = False
    dtype: str = "bf16"
    out: str = "bf16"
    scale: float | None = None
    #: a sliding window (causal only): each query sees the `window` keys up to its diagonal; 0: all of them
    window: int = 0

    def __post_init__(self) -> None:
        if self.batch < 1:
            raise AttentionError(f"{self.batch} sequences: cu_seqlens needs at least two entries (one sequence)")
        check_heads(self.dtype, self.out, self.heads, self.kv_heads, self.d, self.dv, self.scale)
        check_window(self.window, self.causal)

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads


@dataclass(frozen=True)
class VarlenPlan:
    problem: VarlenProblem

    def params(self) -> tuple[tuple[str, Any], ...]:
        """The kernel's parameters: 128 query rows per block over two consumer warpgroups, 128 keys per tile up to
        head dim 128 and 64 beyond (as `argus.kernels.sdpa.choose` for a long query), two stages, a binary search
        over the B sequences."""
        p = self.problem
        return tuple(
            sorted(
                {
                    "BM": 128,
                    "BN": 128 if max(p.d, p.dv) <= 128 else 64,
                    "STAGES": 2,
                    "CONSUMERS": 2,
                    "D": p.d,
                    "DV": p.dv,
                    "CAUSAL": p.causal,
                    "WINDOW": p.window,
                    "GROUP": p.group,
                    "SCALE": p.scale if p.scale is not None else 0.0,
                    "SEARCH": search_steps(p.batch),
                    "IN": p.dtype,
                    "OUT": p.out,
                }.items()
            )
        )

    @property
    def block_m(self) -> int:
        return dict(self.params())["BM"]

    def kernel(self) -> Any:
        """The traced kernel this plan launches."""
        return _traced(self.params())

    def describe(self) -> dict[str, Any]:
        return {"problem": asdict(self.problem), "params": dict(self.params())}

    def run_on_interpreter(self, q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any) -> tuple[Any, Any]:
        """(O, LSE) on the lane-level interpreter for numpy q (TQ, H, D), k (TK, HK, D), v (TK, HK, DV) and the
        cumulative lengths, through the kernel and parameters a GPU call launches (small shapes only)."""
        import numpy as np

        from argus.interp import run_kernel
        from argus.kernels.moe import tile_counts

        p = self.problem
        ends_q, ends_k = (np.asarray(c, dtype=np.int32)[1:] for c in (cu_q, cu_k))
        o = np.full((p.total_q, p.heads, p.dv), np.nan)
        lse = np.full((p.heads, p.total_q), np.nan)
        tensors = {
            "Q": np.asarray(q, dtype=np.float64),
            "K": np.asarray(k, dtype=np.float64),
            "V": np.asarray(v, dtype=np.float64),
            "SEQ_Q": ends_q,
            "SEQ_K": ends_k,
            "TILES": tile_counts(ends_q, self.block_m),
            "O": o,
            "LSE": lse,
        }
        run_kernel(self.kernel(), tensors)
        return o, lse


@functools.lru_cache(maxsize=64)
def _traced(params: tuple[tuple[str, Any], ...]) -> Any:
    return flash_attention_varlen.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _loaded(params: tuple[tuple[str, Any], ...]) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel(_traced(params)))


def check_offsets(cu: Any, total: int, name: str) -> None:
    """AttentionError unless `cu` (a 1-d sequence of integers) starts at 0, never decreases and ends at `total`."""
    import numpy as np

    values = np.asarray(cu).astype(np.int64)
    if values.ndim != 1 or values.size < 2:
        raise AttentionError(f"{name} has shape {values.shape}: (B + 1,) cumulative lengths, B >= 1")
    if values[0] != 0:
        raise AttentionError(f"{name}[0] = {values[0]}: the cumulative lengths start at 0")
    drops = np.nonzero(np.diff(values) < 0)[0]
    if drops.size:
        i = int(drops[0])
        raise AttentionError(f"{name} decreases at index {i + 1} ({values[i]} -> {values[i + 1]}): lengths are >= 0")
    if values[-1] != total:
        raise AttentionError(f"{name}[-1] = {values[-1]}, but the tensor has {total} rows: the sequences must cover it")


def problem_of(
    q: Any,
    k: Any,
    v: Any,
    cu_q: Any,
    cu_k: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    window: int = 0,
) -> VarlenProblem:
    """The problem of q (TQ, H, D), k (TK, HK, D), v (TK, HK, DV) and the offsets (shapes and dtypes checked; the
    offsets' values are checked by `check_offsets`)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if len(x.shape) != 3:
            raise AttentionError(f"{name} has shape {tuple(x.shape)}: sdpa_varlen takes (tokens, heads, head dim)")
    (tq, h, d), (tk, hk, dk), (tv, hv, dv) = q.shape, k.shape, v.shape
    if (tk, hk) != (tv, hv) or dk != d:
        raise AttentionError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: k needs q's head dim, and k and v one "
            "(tokens, heads)"
        )
    if len(cu_q.shape) != 1 or tuple(cu_q.shape) != tuple(cu_k.shape):
        raise AttentionError(
            f"cu_seqlens_q {tuple(cu_q.shape)}, cu_seqlens_k {tuple(cu_k.shape)}: one (B + 1,) vector each"
        )
    for name, c in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        if "int" not in str(c.dtype):
            raise AttentionError(f"{name} in {c.dtype}: cumulative lengths are integers (int32 or int64)")
    dtype, out = dtypes_of({"q": q, "k": k, "v": v}, out_dtype)
    return VarlenProblem(int(cu_q.shape[0]) - 1, h, hk, tq, tk, d, dv, causal, dtype, out, scale, window)


def prepare(
    q: Any,
    k: Any,
    v: Any,
    cu_seqlens_q: Any,
    cu_seqlens_k: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    validate: bool = True,
    window: int = 0,
) -> tuple[Any, Any, Any]:
    """(O, LSE, the prepared launches that compute them): `sdpa_varlen` without the launches, for timing loops (the
    launches hold raw addresses: keep the returned objects alive while they are used)."""
    import torch

    from argus.kernels.moe import tile_counts

    problem = problem_of(
        q, k, v, cu_seqlens_q, cu_seqlens_k, causal=causal, scale=scale, out_dtype=out_dtype, window=window
    )
    if validate:
        check_offsets(cu_seqlens_q.detach().cpu().numpy(), problem.total_q, "cu_seqlens_q")
        check_offsets(cu_seqlens_k.detach().cpu().numpy(), problem.total_k, "cu_seqlens_k")
    if problem.total_q == 0 or problem.total_k == 0:  # no query, or no key for any: no launch (a shape of 0 cannot)
        o = torch.zeros((problem.total_q, problem.heads, problem.dv), dtype=matmul.torch_dtype(problem.out),
                        device=q.device)  # fmt: skip
        lse = torch.full((problem.heads, problem.total_q), float("-inf"), dtype=torch.float32, device=q.device)
        launches = matmul.Launches()
        launches.keep = [o, lse]
        return o, lse, launches  # (every row that sees no key: O = 0, LSE = -inf, as a sequence with no key)
    the_plan = VarlenPlan(problem)
    q, k, v = (x if x.is_contiguous() else x.contiguous() for x in (q, k, v))
    ends_q = cu_seqlens_q[1:].to(torch.int32).contiguous()
    ends_k = cu_seqlens_k[1:].to(torch.int32).contiguous()
    tiles = tile_counts(ends_q, the_plan.block_m)
    out = matmul.torch_dtype(problem.out)
    o = torch.empty((problem.total_q, problem.heads, problem.dv), dtype=out, device=q.device)
    lse = torch.empty((problem.heads, problem.total_q), dtype=torch.float32, device=q.device)
    launches = matmul.Launches([_loaded(the_plan.params()).prepare(q, k, v, ends_q, ends_k, tiles, o, lse)])
    launches.keep = [q, k, v, ends_q, ends_k, tiles, o, lse]
    return o, lse, launches


def sdpa_varlen(
    q: Any,
    k: Any,
    v: Any,
    cu_seqlens_q: Any,
    cu_seqlens_k: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    return_lse: bool = False,
    validate: bool = True,
    window: int = 0,
) -> Any:
    """Attention over each packed sequence (module docstring); with `return_lse`, (O, LSE). `window` > 0 (with
    `causal`): each query sees only the `window` keys up to its diagonal. Launches on the current stream and returns
    without synchronizing (beyond `validate`'s read of the offsets)."""
    o, lse, launches = prepare(
        q, k, v, cu_seqlens_q, cu_seqlens_k, causal=causal, scale=scale, out_dtype=out_dtype, validate=validate,
        window=window,
    )  # fmt: skip
    for launch in launches:
        launch.launch()
    return (o, lse) if return_lse else o


def reference(
    q: Any,
    k: Any,
    v: Any,
    cu_q: Any,
    cu_k: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    window: int = 0,
) -> tuple[Any, Any]:
    """(O (TQ, H, DV), LSE (H, TQ)) in float64 numpy for numpy inputs: `arrays.attention` on each sequence (a
    sequence with no key, or a row that sees none: O = 0, LSE = -inf)."""
    import numpy as np

    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    cu_q, cu_k = (np.asarray(c).astype(np.int64) for c in (cu_q, cu_k))
    o = np.zeros((q.shape[0], q.shape[1], v.shape[2]))
    lse = np.full((q.shape[1], q.shape[0]), -np.inf)
    for b in range(cu_q.size - 1):
        (q0, q1), (k0, k1) = cu_q[b : b + 2], cu_k[b : b + 2]
        if q1 == q0 or k1 == k0:
            continue
        qb, kb, vb = (x[None].transpose(0, 2, 1, 3) for x in (q[q0:q1], k[k0:k1], v[k0:k1]))
        ob, lb = arrays.attention(qb, kb, vb, causal=causal, scale=scale, window=window)
        o[q0:q1] = ob[0].transpose(1, 0, 2)
        lse[:, q0:q1] = lb[0]
    return o, lse


__all__ = ["VarlenPlan", "VarlenProblem", "check_offsets", "prepare", "problem_of", "reference", "sdpa_varlen"]
