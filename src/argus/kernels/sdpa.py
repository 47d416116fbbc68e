"""Scaled dot-product attention, the call a user makes: `sdpa` runs `argus.kernels.attention.flash_attention` on a
configuration chosen by the problem's head dims and lengths.

``sdpa(q, k, v, causal=..., scale=...)`` takes bf16 or f16 CUDA tensors q (B, H, SQ, D), k (B, HK, SK, D) and
v (B, HK, SK, DV) (H a multiple of HK: grouped-query and multi-query attention), and returns O (B, H, SQ, DV) in
the inputs' dtype (or `out_dtype`) and, with ``return_lse=True``, each row's log-sum-exp (B, H, SQ) in f32.
``causal=True`` aligns the mask at the bottom right (query i sees keys j <= i + SK - SQ), as FlashAttention does;
for SQ = SK that is torch's ``is_causal``. Head dims are multiples of 64 up to 256. A row that sees no key (causal
with SQ > SK) gets O = 0 and LSE = -inf.

`choose` picks the tile shape and pipeline depth: 128 query rows per block over two consumer warpgroups (64 rows
when the query is that short: one warpgroup), 128 keys per tile up to head dim 128 and 64 beyond (the output
accumulator then takes 128 registers per thread), and the deepest pipeline the shared memory holds (at most
`MAX_STAGES`). `AttentionPlan.run_on_interpreter` runs the same kernel and parameters on the CPU interpreter
(small shapes), which is how the tests check every mechanism without a GPU.

Not built yet (issue 22): P fed to the second GEMM from registers (the register-A ``wgmma``), ping-pong between the
consumer warpgroups, intra-warpgroup overlap of softmax with the next QK^T, a persistent scheduler, variable-length
batches, the (B, S, H, D) layout without a copy, and split-KV decoding.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

from argus.atoms.common import SHARED_MEMORY_BUDGET
from argus.kernels import attention

#: Input dtypes (Q, K, V) and output dtypes `sdpa` takes.
INPUTS = ("bf16", "f16")
OUTPUTS = ("bf16", "f16", "f32")
#: The deepest K/V pipeline a configuration gets.
MAX_STAGES = 4
#: Head dims: multiples of one 64-element panel, up to what one TMA box row and wgmma's N take.
MAX_HEAD_DIM = 256


class AttentionError(ValueError):
    """A problem `sdpa` does not take, with the reason."""


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

    def __post_init__(self) -> None:
        if self.dtype not in INPUTS:
            raise AttentionError(f"inputs in {self.dtype}: sdpa takes {', '.join(INPUTS)}")
        if self.out not in OUTPUTS:
            raise AttentionError(f"output in {self.out}: sdpa writes {', '.join(OUTPUTS)}")
        for name in ("batch", "heads", "kv_heads", "sq", "sk", "d", "dv"):
            if getattr(self, name) < 1:
                raise AttentionError(f"{name} = {getattr(self, name)}: every extent must be positive")
        if self.heads % self.kv_heads:
            raise AttentionError(
                f"{self.heads} query heads over {self.kv_heads} key/value heads: the query heads must be a multiple"
            )
        for name in ("d", "dv"):
            x = getattr(self, name)
            if x % attention.PANEL or x > MAX_HEAD_DIM:
                raise AttentionError(
                    f"head dim {name} = {x}: multiples of {attention.PANEL} up to {MAX_HEAD_DIM} are supported "
                    "(other head dims are not built yet)"
                )

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    def flops(self) -> float:
        """Multiply-adds of QK^T and PV, counted as 2 flops each, over the (query, key) pairs the mask keeps."""
        pairs = self.sq * self.sk
        if self.causal:  # keys j <= i + sk - sq for each query i
            offset = self.sk - self.sq
            pairs = sum(max(0, min(self.sk, i + offset + 1)) for i in range(self.sq))
        return 2.0 * self.batch * self.heads * pairs * (self.d + self.dv)


@dataclass(frozen=True)
class AttentionConfig:
    BM: int
    BN: int
    STAGES: int
    CONSUMERS: int

    def label(self) -> str:
        return f"{self.BM}x{self.BN} s{self.STAGES} c{self.CONSUMERS}"


def shared_bytes(problem: AttentionProblem, config: AttentionConfig) -> int:
    """The shared memory a configuration takes: Q, the K/V stages and P (16-bit), and the mbarriers."""
    elements = config.BM * problem.d + config.STAGES * config.BN * (problem.d + problem.dv) + config.BM * config.BN
    return 2 * elements + 8 * (1 + 2 * config.STAGES)


def choose(problem: AttentionProblem) -> AttentionConfig:
    """The configuration `sdpa` runs `problem` on (see the module docstring)."""
    consumers = 1 if problem.sq <= 64 else 2
    bm = 64 * consumers
    bn = 128 if max(problem.d, problem.dv) <= 128 else 64
    for stages in range(MAX_STAGES, 1, -1):
        config = AttentionConfig(bm, bn, stages, consumers)
        if shared_bytes(problem, config) <= SHARED_MEMORY_BUDGET:
            return config
    raise AttentionError(f"no configuration of {problem} fits the shared memory")  # unreachable for d, dv <= 256


@dataclass(frozen=True)
class AttentionPlan:
    problem: AttentionProblem
    config: AttentionConfig

    def params(self) -> tuple[tuple[str, Any], ...]:
        p = self.problem
        return tuple(
            sorted(
                {
                    **asdict(self.config),
                    "D": p.d,
                    "DV": p.dv,
                    "CAUSAL": p.causal,
                    "GROUP": p.group,
                    "SCALE": p.scale if p.scale is not None else 0.0,
                    "IN": p.dtype,
                    "OUT": p.out,
                }.items()
            )
        )

    def kernel(self) -> Any:
        """The traced kernel this plan launches."""
        return _traced(self.params())

    def describe(self) -> dict[str, Any]:
        return {"problem": asdict(self.problem), "config": self.config.label(), "params": dict(self.params())}

    def run_on_interpreter(self, q: Any, k: Any, v: Any) -> tuple[Any, Any]:
        """(O, LSE) on the lane-level interpreter for numpy arrays q (B, H, SQ, D), k (B, HK, SK, D), v (B, HK,
        SK, DV), through the kernel and parameters a GPU call launches (small shapes only)."""
        import numpy as np

        from argus.interp import run_kernel

        p = self.problem
        q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
        o = np.full((p.batch * p.heads, p.sq, p.dv), np.nan)
        lse = np.full((p.batch * p.heads, p.sq), np.nan)
        tensors = {
            "Q": q.reshape(-1, p.sq, p.d),
            "K": k.reshape(-1, p.sk, p.d),
            "V": v.reshape(-1, p.sk, p.dv),
            "O": o,
            "LSE": lse,
        }
        run_kernel(self.kernel(), tensors)
        return o.reshape(p.batch, p.heads, p.sq, p.dv), lse.reshape(p.batch, p.heads, p.sq)


def plan(problem: AttentionProblem, config: AttentionConfig | None = None) -> AttentionPlan:
    return AttentionPlan(problem, config or choose(problem))


@functools.lru_cache(maxsize=64)
def _traced(params: tuple[tuple[str, Any], ...]) -> Any:
    return attention.flash_attention.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _loaded(params: tuple[tuple[str, Any], ...]) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel(_traced(params)))


_NAMES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}


def _name(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in _NAMES:
        raise AttentionError(f"tensors of {dtype}: sdpa takes bf16 or f16 inputs")
    return _NAMES[name]


def problem_of(
    q: Any, k: Any, v: Any, *, causal: bool = False, scale: float | None = None, out_dtype: Any = None
) -> AttentionProblem:
    """The problem of q (B, H, SQ, D), k (B, HK, SK, D), v (B, HK, SK, DV) (torch tensors or numpy arrays with a
    dtype name), checked for consistency."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if len(x.shape) != 4:
            raise AttentionError(f"{name} has shape {tuple(x.shape)}: sdpa takes (batch, heads, length, head dim)")
    b, h, sq, d = q.shape
    bk, hk, sk, dk = k.shape
    if (bk, hk, sk) != tuple(v.shape[:3]) or bk != b or dk != d:
        raise AttentionError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: k and v need q's batch and head dim "
            "(k's), and one (heads, length) between them"
        )
    dtype = _name(q.dtype)
    if _name(k.dtype) != dtype or _name(v.dtype) != dtype:
        raise AttentionError(f"q, k, v in {q.dtype}, {k.dtype}, {v.dtype}: one dtype for all three")
    out = dtype if out_dtype is None else _name(out_dtype)
    return AttentionProblem(b, h, hk, sq, sk, d, v.shape[3], causal, dtype, out, scale)


def prepare(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    config: AttentionConfig | None = None,
) -> tuple[Any, Any, Any]:
    """(O, LSE, the prepared launch that computes them): `sdpa` without the launch, for timing loops. The launch
    holds raw addresses: keep q, k, v and the results alive while it is used."""
    import torch

    problem = problem_of(q, k, v, causal=causal, scale=scale, out_dtype=out_dtype)
    the_plan = plan(problem, config)
    q, k, v = (x if x.is_contiguous() else x.contiguous() for x in (q, k, v))
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[problem.out]
    o = torch.empty((problem.batch, problem.heads, problem.sq, problem.dv), dtype=dtype, device=q.device)
    lse = torch.empty((problem.batch, problem.heads, problem.sq), dtype=torch.float32, device=q.device)
    views = (
        q.view(-1, problem.sq, problem.d),
        k.view(-1, problem.sk, problem.d),
        v.view(-1, problem.sk, problem.dv),
        o.view(-1, problem.sq, problem.dv),
        lse.view(-1, problem.sq),
    )
    return o, lse, _loaded(the_plan.params()).prepare(*views)


def sdpa(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    scale: float | None = None,
    out_dtype: Any = None,
    return_lse: bool = False,
) -> Any:
    """softmax(q k^T * scale) v (scale: 1/sqrt(D) by default) for CUDA tensors (see the module docstring); with
    `return_lse`, (O, LSE). Launches on the current stream and returns without synchronizing, as torch does."""
    o, lse, launch = prepare(q, k, v, causal=causal, scale=scale, out_dtype=out_dtype)
    launch.launch()
    return (o, lse) if return_lse else o


def reference(q: Any, k: Any, v: Any, *, causal: bool = False, scale: float | None = None) -> tuple[Any, Any]:
    """(O, LSE) in float64 numpy for numpy q, k, v in `sdpa`'s shapes: the definition the kernel is checked
    against (rows that see no key: O = 0, LSE = -inf)."""
    import numpy as np

    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    sq, sk = q.shape[2], k.shape[2]
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if causal:
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + sk - sq, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    seen = total > 0
    o = np.where(seen, (e @ v) / np.where(seen, total, 1.0), 0.0)
    lse = np.where(seen[..., 0], np.log(np.where(seen, total, 1.0))[..., 0] + top[..., 0], -np.inf)
    return o, lse


__all__ = [
    "AttentionConfig",
    "AttentionError",
    "AttentionPlan",
    "AttentionProblem",
    "choose",
    "plan",
    "prepare",
    "problem_of",
    "reference",
    "sdpa",
    "shared_bytes",
]
