"""Scaled dot-product attention as one step of a generated solution (`argus solve`'s attention groups):
``O = softmax(Q Kᵀ · scale, masked) V`` for torch's ``scaled_dot_product_attention`` as a user calls it, on the CPU
interpreter for CPU tensors (small sizes) and on the GPU for CUDA tensors.

`Attention` is one call as torch defines it: q (B, H, SQ, D), k (B, HK, SK, D), v (B, HK, SK, DV) (H a multiple of
HK: ``enable_gqa``; query head h reads key/value head h // (H / HK)), ``is_causal`` aligned at the TOP LEFT as
torch aligns it (query i sees keys j <= i), the scale 1/sqrt(D) unless given. `attention_plan` picks one of two
plans:

* **fused** (bf16/f16 inputs, D and DV multiples of 8 up to 256, and a causal mask only where SQ = SK, where
  torch's top-left and the kernel's bottom-right alignments agree): `argus.kernels.sdpa`, the FlashAttention kernel
  (`argus.kernels.attention.flash_attention`); O is never materialized as scores.
* **composed** (everything else: f32 inputs, other head dims, causal with SQ != SK): three steps, each an argus
  kernel. S = Q Kᵀ in f32 through the GEMM library's batched GEMM (`argus.kernels.matmul`; f32 inputs at f32
  accuracy by split precision), batched over (batch, key/value head) with a group's query heads stacked as rows
  (q (B, H, SQ, D) is (B·HK, G·SQ, D) without a copy, so GQA needs no repeated K or V); `attention_softmax`, a row
  softmax that folds the scale in, masks the key tail and the causal triangle, and writes P in the inputs' dtype;
  O = P V through the batched GEMM. The batched GEMM has no fused epilogue yet, so the scale lives in the softmax.

`LibraryAttention` is the callable the emitted solution holds: `kernels()` are the traced kernels of the captured
call's plan (the pipeline verifies each), and a call plans for the tensors it is given. Rank-3 tensors (N, L, E) are
one head per batch entry.

Known costs of the composed plan: S and P are materialized (2 · B·H·SQ·SK elements), and for f32 inputs P is split
into bf16 parts for the second GEMM; the causal softmax walks every key tile (the masked ones write zeros) and both
GEMMs compute the masked half. Not built: an explicit ``attn_mask`` and dropout (the frontend refuses them).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from argus.ir.types import DTypeError, dtype_from_name
from argus.kernels import matmul, sdpa
from argus.kernels.attention import HEAD_DIM_MULTIPLE, attention_softmax

#: Input dtypes an attention step takes (f32 only on the composed plan).
DTYPES = ("f32", "bf16", "f16")

#: The softmax's tile: BM rows of BN keys per block of 128 threads (a row of BN f32 values held by one warp).
SOFTMAX_TILE = (4, 128)


class AttentionStepError(ValueError):
    """A call the attention step cannot run, with the reason."""


@dataclass(frozen=True)
class Attention:
    """One ``scaled_dot_product_attention`` call as torch defines it: `batch` x `heads` query heads over `kv_heads`
    key/value heads, lengths `sq` and `sk`, head dims `d` (Q, K) and `dv` (V, O), `causal` aligned at the top left
    (query i sees keys j <= i), `scale` (None: 1/sqrt(d)), inputs and output in `dtype`."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    sk: int
    d: int
    dv: int
    causal: bool = False
    scale: float | None = None
    dtype: str = "f32"

    def __post_init__(self) -> None:
        for name in ("batch", "heads", "kv_heads", "sq", "sk", "d", "dv"):
            if getattr(self, name) < 1:
                raise AttentionStepError(f"{name} = {getattr(self, name)}: every extent must be positive")
        if self.heads % self.kv_heads:
            raise AttentionStepError(
                f"{self.heads} query heads over {self.kv_heads} key/value heads: the query heads must be a multiple"
            )
        if self.dtype not in DTYPES:
            raise AttentionStepError(f"inputs in {self.dtype}: attention takes {', '.join(DTYPES)}")

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def scale_value(self) -> float:
        return self.scale if self.scale is not None else 1.0 / math.sqrt(self.d)

    @property
    def fused(self) -> bool:
        """Whether the FlashAttention kernel runs it (see the module docstring)."""
        dims_ok = all(x % HEAD_DIM_MULTIPLE == 0 and x <= sdpa.MAX_HEAD_DIM for x in (self.d, self.dv))
        return self.dtype in sdpa.INPUTS and dims_ok and (not self.causal or self.sq == self.sk)


@dataclass(frozen=True)
class AttentionStepPlan:
    """What one attention call runs: the fused `sdpa` plan, or the composed plan's two GEMM plans and the softmax's
    parameters."""

    attention: Attention
    fused: sdpa.AttentionPlan | None = None
    scores: matmul.GemmPlan | None = None
    softmax: tuple[tuple[str, Any], ...] = ()
    output: matmul.GemmPlan | None = None

    def kernels(self) -> list[Any]:
        """Every traced kernel the plan launches, in order."""
        if self.fused is not None:
            return [self.fused.kernel()]
        assert self.scores is not None and self.output is not None
        return [*_gemm_kernels(self.scores), _traced_softmax(self.softmax), *_gemm_kernels(self.output)]

    def describe(self) -> str:
        a = self.attention
        if self.fused is not None:
            return f"fused ({self.fused.config.label()})"
        return f"composed (bmm {self.scores.config.label}, softmax, bmm {self.output.config.label}; {a.dtype})"

    def run_on_interpreter(self, q: Any, k: Any, v: Any) -> Any:
        """O (B, H, SQ, DV) in float64 for numpy q (B, H, SQ, D), k (B, HK, SK, D), v (B, HK, SK, DV), through the
        kernels and parameters a GPU call launches, on the lane-level interpreter (small shapes only)."""
        import numpy as np

        from argus.interp import run_kernel

        a = self.attention
        q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
        if self.fused is not None:
            return self.fused.run_on_interpreter(q, k, v)[0]
        lb, rows = a.batch * a.kv_heads, a.group * a.sq  # the GEMMs' batch and rows: a group's heads stacked
        s = _gemm_on_interpreter(self.scores, q.reshape(lb, rows, a.d), np.swapaxes(k.reshape(lb, a.sk, a.d), -1, -2))
        p = np.full((a.batch * a.heads, a.sq, a.sk), np.nan)
        run_kernel(_traced_softmax(self.softmax), {"S": s.reshape(a.batch * a.heads, a.sq, a.sk), "P": p})
        o = _gemm_on_interpreter(self.output, p.reshape(lb, rows, a.sk), v.reshape(lb, a.sk, a.dv))
        return o.reshape(a.batch, a.heads, a.sq, a.dv)


def attention_plan(attention: Attention) -> AttentionStepPlan:
    """The plan of `attention` (see the module docstring); `AttentionStepError` (or the GEMM library's
    `matmul.GemmError`) when it cannot run."""
    a = attention
    if a.fused:
        problem = sdpa.AttentionProblem(
            a.batch, a.heads, a.kv_heads, a.sq, a.sk, a.d, a.dv, a.causal, a.dtype, a.dtype, a.scale
        )
        return AttentionStepPlan(a, fused=sdpa.plan(problem))
    lb, rows = a.batch * a.kv_heads, a.group * a.sq
    scores = matmul.plan(matmul.GemmProblem(rows, a.sk, a.d, a.dtype, "f32", "K", "K", lb))
    bm, bn = SOFTMAX_TILE
    aligned = a.sk % 4 == 0
    softmax = _key(
        {"BM": bm, "BN": bn, "SCALE": float(a.scale_value), "CAUSAL": a.causal, "DT": a.dtype, "ALIGNED": aligned}
    )
    output = matmul.plan(matmul.GemmProblem(rows, a.dv, a.sk, a.dtype, a.dtype, "K", "N", lb))
    return AttentionStepPlan(a, scores=scores, softmax=softmax, output=output)


def _key(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


def _gemm_kernels(the_plan: matmul.GemmPlan) -> list[Any]:
    return the_plan.kernels()


def _gemm_on_interpreter(the_plan: matmul.GemmPlan, a: Any, b: Any) -> Any:
    """The batched GEMM a (L, M, K) @ b (L, K, N) on the interpreter (a plan of one matrix takes 2-d operands)."""
    if the_plan.problem.batch == 1:
        return the_plan.run_on_interpreter(a[0], b[0])[None]
    return the_plan.run_on_interpreter(a, b)


@functools.lru_cache(maxsize=64)
def _traced_softmax(params: tuple[tuple[str, Any], ...]) -> Any:
    return attention_softmax.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _loaded_softmax(params: tuple[tuple[str, Any], ...]) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel(_traced_softmax(params)))


def _four(x: Any) -> Any:
    """A rank-3 (N, L, E) tensor as (N, 1, L, E): one head per batch entry; a rank-4 tensor as it is."""
    return x.unsqueeze(-3) if x.dim() == 3 else x


class LibraryAttention:
    """``scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)`` as one step of a generated solution
    (see the module docstring). `attention` is the captured call; `order` the positions of q, k and v among the
    call's inputs (one tensor may be several of them)."""

    library = True

    def __init__(self, name: str, attention: Attention, order: tuple[int, int, int] = (0, 1, 2)):
        self.name = name
        self.attention = attention
        self.order = tuple(order)
        if len(self.order) != 3:
            raise AttentionStepError(f"{name}: order {self.order} must give the positions of q, k and v")

    def __repr__(self) -> str:
        return f"LibraryAttention({self.name!r}, {self.attention}, order={self.order})"

    def plan(self) -> AttentionStepPlan:
        return attention_plan(self.attention)

    def kernels(self) -> list[Any]:
        """The traced kernels of the captured call's plan, which the pipeline verifies."""
        return self.plan().kernels()

    def attention_for(self, q: Any, k: Any, v: Any) -> Attention:
        """The captured call at these tensors' extents (checked against each other)."""
        q, k, v = _four(q), _four(k), _four(v)
        if not q.dim() == k.dim() == v.dim() == 4:
            raise AttentionStepError(f"{self.name}: q, k, v of ranks {q.dim()}, {k.dim()}, {v.dim()} (3 or 4 each)")
        b, h, sq, d = (int(x) for x in q.shape)
        bk, hk, sk, dk = (int(x) for x in k.shape)
        if (bk, dk) != (b, d) or tuple(v.shape[:3]) != (bk, hk, sk):
            raise AttentionStepError(
                f"{self.name}: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not agree"
            )
        try:
            dtype = dtype_from_name(str(q.dtype).removeprefix("torch.")).name
        except DTypeError:
            dtype = None
        if dtype not in DTYPES or not q.dtype == k.dtype == v.dtype:
            raise AttentionStepError(f"{self.name}: q, k, v in {q.dtype}, {k.dtype}, {v.dtype}")
        a = self.attention
        return Attention(b, h, hk, sq, sk, d, int(v.shape[3]), a.causal, a.scale, dtype)

    def empty_output(self, *inputs: Any) -> Any:
        """An uninitialized O for these inputs: q's shape with v's head dim, q's dtype."""
        import torch

        q, v = inputs[self.order[0]], inputs[self.order[2]]
        return torch.empty((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)

    def __call__(self, *tensors: Any, device: Any = None) -> None:
        """Compute O into the last of `tensors` from q, k and v among the inputs before it (at `order`)."""
        import torch

        *inputs, out = tensors
        q, k, v = (inputs[i] for i in self.order)
        a = self.attention_for(q, k, v)
        the_plan = attention_plan(a)
        q, k, v = (_four(x).contiguous() for x in (q, k, v))
        if not q.is_cuda:
            o = the_plan.run_on_interpreter(*(x.double().numpy() for x in (q, k, v)))
            out.copy_(torch.from_numpy(o).reshape(out.shape).to(out.dtype))
            return
        if the_plan.fused is not None:
            o = sdpa.sdpa(q, k, v, causal=a.causal, scale=a.scale)
            out.copy_(o.reshape(out.shape))
            return
        self._composed_on_gpu(a, the_plan, q, k, v, out)

    @staticmethod
    def _composed_on_gpu(a: Attention, the_plan: AttentionStepPlan, q: Any, k: Any, v: Any, out: Any) -> None:
        import torch

        lb, rows = a.batch * a.kv_heads, a.group * a.sq

        def gemm(x: Any, y: Any, dtype: Any, into: Any) -> None:
            if lb == 1:  # a plan of one matrix takes 2-d operands
                x, y, into = x[0], y[0], into[0]
            c, launches = matmul.prepare(x, y, out_dtype=dtype, out=into)
            for launch in launches:
                launch.launch()
            if c.data_ptr() != into.data_ptr():  # a padded plan: C came out larger, then sliced
                into.copy_(c)

        s = torch.empty((lb, rows, a.sk), dtype=torch.float32, device=q.device)
        gemm(q.view(lb, rows, a.d), k.view(lb, a.sk, a.d).transpose(-1, -2), torch.float32, s)
        p = torch.empty((lb, rows, a.sk), dtype=q.dtype, device=q.device)
        views = (s.view(a.batch * a.heads, a.sq, a.sk), p.view(a.batch * a.heads, a.sq, a.sk))
        _loaded_softmax(the_plan.softmax)(*views)
        o = out if out.is_contiguous() else torch.empty_like(out, memory_format=torch.contiguous_format)
        gemm(p, v.view(lb, a.sk, a.dv), q.dtype, o.view(lb, rows, a.dv))
        if o is not out:
            out.copy_(o)


__all__ = [
    "Attention",
    "AttentionStepError",
    "AttentionStepPlan",
    "LibraryAttention",
    "attention_plan",
    "attention_softmax",
]
