"""The built-in tasks: the workloads of argus's kernel library (vector add, softmax, layer norm, GEMM, Hopper
GEMM, GEMM + residual + ReLU, flash attention) and the MoE grouped GEMM, each with its reference, sizes, FLOP/byte
counts, baselines and what a candidate may not call.

Tensor names and order match the library kernels' parameters, so a library kernel runs on its task as is.
References are PyTorch functions of the inputs: run on float64 inputs they are the correctness reference, on
the task's own dtypes the eager baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from argus.tasks.base import Task, TaskError, TensorSpec

#: What a GEMM candidate may not call: PyTorch's and cuBLAS's matrix products (static check, by name).
MATMUL_CALLS = (
    "torch.matmul",
    "torch.mm",
    "torch.bmm",
    "torch.addmm",
    "torch.baddbmm",
    "torch.einsum",
    "torch.tensordot",
    "torch.inner",
    "torch.mv",
    "torch._grouped_mm",
    "torch.nn.functional.linear",
    "torch.nn.Linear",
    "torch.linalg.*",
)
#: The same, as dispatched operators (dynamic check).
MATMUL_OPS = (
    "aten::mm",
    "aten::bmm",
    "aten::addmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::mv",
    "aten::dot",
    "aten::_grouped_mm",
    "aten::_scaled_mm",
    "aten::_int_mm",
)
ATTENTION_CALLS = (*MATMUL_CALLS, "torch.nn.functional.*", "torch.softmax", "torch.nn.MultiheadAttention")
ATTENTION_OPS = (*MATMUL_OPS, "aten::_softmax", "aten::_safe_softmax", "aten::*scaled_dot_product*")


def _bf16_normal(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
    import torch

    return torch.randn(shape, generator=g, dtype=torch.float64).to(torch.bfloat16)


def _uniform(lo: float, hi: float) -> Callable[[tuple[int, ...], Mapping[str, int], Any], Any]:
    def sample(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
        import torch

        return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(torch.float32)

    return sample


# ---- references -----------------------------------------------------------------------------------------------


def _vector_add(a: Any, b: Any) -> Any:
    return a + b


def _softmax(x: Any) -> Any:
    import torch

    return torch.softmax(x, dim=1)


def _layer_norm(x: Any, w: Any, b: Any) -> Any:
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5)


def _gemm(a: Any, b: Any) -> Any:
    import torch

    return torch.matmul(a, b)


def _gemm_nt(a: Any, b: Any) -> Any:
    import torch

    return torch.matmul(a, b.transpose(0, 1))


def _gemm_residual(a: Any, b: Any, r: Any) -> Any:
    """relu(A @ B + R): the product in the precision of A and B (bf16 natively), the epilogue in R's (f32)."""
    import torch

    return torch.relu(torch.matmul(a, b) + r)


def _gemm_nt_residual(a: Any, b: Any, r: Any) -> Any:
    import torch

    return torch.relu(torch.matmul(a, b.transpose(0, 1)) + r)


def _attention(q: Any, k: Any, v: Any) -> Any:
    """softmax(Q K^T / sqrt(d)) V, written out (the math the kernel computes)."""
    import torch

    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def _sdpa(backend: str) -> Callable[..., Any]:
    def run(q: Any, k: Any, v: Any) -> Any:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend)):
            out = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])
        return out[0]

    run.__name__ = f"sdpa_{backend.lower()}"
    return run


def _grouped_reference(a: Any, b: Any, offs: Any) -> Any:
    """Row block g of A (rows offs[g-1]..offs[g]) times expert g's matrix B[g]."""
    import torch

    out = torch.empty(a.shape[0], b.shape[2], dtype=torch.promote_types(a.dtype, b.dtype), device=a.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = torch.matmul(a[start:end], b[g])
        start = end
    return out


def _grouped_mm(a: Any, b: Any, offs: Any) -> Any:
    import torch

    return torch._grouped_mm(a, b, offs=offs)


def _offsets(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
    """Cumulative token counts per expert: a random split of T rows into E groups of multiples of 16 rows."""
    import torch

    (experts,) = shape
    tokens = int(sizes["T"])
    if tokens % 16:
        raise TaskError("TASK_SIZE", f"grouped_gemm needs T to be a multiple of 16, got {tokens}", "e.g. T=256")
    blocks = tokens // 16
    cuts = torch.sort(torch.randint(0, blocks + 1, (experts - 1,), generator=g)).values
    ends = torch.cat([cuts, torch.tensor([blocks])]) * 16
    return ends.to(torch.int32)


# ---- the registry ---------------------------------------------------------------------------------------------


def _tasks() -> list[Task]:
    return [
        Task(
            "vector_add",
            "C = A + B (f32)",
            (TensorSpec("A", ("N",), "f32"), TensorSpec("B", ("N",), "f32"), TensorSpec("C", ("N",), "f32", True)),
            _vector_add,
            {"N": 3000},
            ({"N": 1 << 26}, {"N": 1 << 20}),
            lambda s: s["N"],
            lambda s: 12 * s["N"],
            kernels=("vector_add",),
        ),
        Task(
            "softmax",
            "row softmax of an M x N f32 matrix (rows of up to 128 for the library kernel)",
            (TensorSpec("X", ("M", "N"), "f32"), TensorSpec("Y", ("M", "N"), "f32", True)),
            _softmax,
            {"M": 10, "N": 100},
            ({"M": 1 << 18, "N": 128},),
            lambda s: 5 * s["M"] * s["N"],
            lambda s: 8 * s["M"] * s["N"],
            kernels=("softmax",),
            forbidden=("torch.softmax", "torch.nn.functional.softmax", "torch.nn.Softmax", "torch.special.softmax"),
            forbidden_ops=("aten::_softmax", "aten::_safe_softmax"),
        ),
        Task(
            "layer_norm",
            "layer norm over the rows of an M x N f32 matrix, with weight and bias (eps 1e-5)",
            (
                TensorSpec("X", ("M", "N"), "f32"),
                TensorSpec("W", ("N",), "f32", sampler=_uniform(0.5, 1.5)),
                TensorSpec("Bias", ("N",), "f32"),
                TensorSpec("Y", ("M", "N"), "f32", True),
            ),
            _layer_norm,
            {"M": 10, "N": 100},
            ({"M": 1 << 18, "N": 128},),
            lambda s: 8 * s["M"] * s["N"],
            lambda s: 8 * s["M"] * s["N"] + 8 * s["N"],
            kernels=("layer_norm",),
            forbidden=("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.nn.LayerNorm"),
            forbidden_ops=("aten::native_layer_norm", "aten::layer_norm"),
        ),
        Task(
            "gemm",
            "C = A @ B: bf16 A (M x K) and B (K x N), f32 C",
            (
                TensorSpec("A", ("M", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("B", ("K", "N"), "bf16", sampler=_bf16_normal),
                TensorSpec("C", ("M", "N"), "f32", True),
            ),
            _gemm,
            {"M": 100, "N": 72, "K": 80},
            ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}),
            lambda s: 2 * s["M"] * s["N"] * s["K"],
            lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 4 * s["M"] * s["N"],
            kernels=(
                "gemm_naive",
                "gemm_smem_tiled",
                "gemm_mma_sync",
                "gemm_cp_async",
                "gemm_cp_async_swizzled",
                "gemm_persistent",
                "gemm_hopper_nn",
                "gemm_hopper_persistent_nn",
            ),
            baselines={"cublas": _gemm},
            default_baselines=("eager", "compile", "cublas"),
            forbidden=MATMUL_CALLS,
            forbidden_ops=MATMUL_OPS,
        ),
        Task(
            "gemm_nt",
            "C = A @ B^T: bf16 A (M x K) and B (N x K), f32 C (the Hopper TMA/wgmma GEMM)",
            (
                TensorSpec("A", ("M", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("B", ("N", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("C", ("M", "N"), "f32", True),
            ),
            _gemm_nt,
            {"M": 200, "N": 72, "K": 136},
            ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}),
            lambda s: 2 * s["M"] * s["N"] * s["K"],
            lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 4 * s["M"] * s["N"],
            kernels=("gemm_tma_wgmma", "gemm_wgmma_tma"),
            baselines={"cublas": _gemm_nt},
            default_baselines=("eager", "compile", "cublas"),
            forbidden=MATMUL_CALLS,
            forbidden_ops=MATMUL_OPS,
        ),
        Task(
            "gemm_nt_bf16",
            "C = A @ B^T: bf16 A (M x K) and B (N x K), bf16 C (cuBLAS's own output type; the expert Hopper GEMM)",
            (
                TensorSpec("A", ("M", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("B", ("N", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("C", ("M", "N"), "bf16", True),
            ),
            _gemm_nt,
            {"M": 200, "N": 72, "K": 136},
            (
                {"M": 2048, "N": 2048, "K": 2048},
                {"M": 4096, "N": 4096, "K": 4096},
                {"M": 8192, "N": 8192, "K": 8192},
                {"M": 8192, "N": 7168, "K": 2048},
                {"M": 4096, "N": 14336, "K": 4096},
                {"M": 16384, "N": 4096, "K": 4096},
                {"M": 2048, "N": 8192, "K": 28672},
            ),
            lambda s: 2 * s["M"] * s["N"] * s["K"],
            lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 2 * s["M"] * s["N"],
            kernels=("gemm_hopper", "gemm_hopper_persistent"),
            baselines={"cublas": _gemm_nt},
            default_baselines=("eager", "compile", "cublas"),
            forbidden=MATMUL_CALLS,
            forbidden_ops=MATMUL_OPS,
        ),
        # The held-out family of the lineage curriculum (argus.kernels.gemm_residual, docs/gemm.md): a GEMM with a
        # fused epilogue. R is f32, the accumulator's and C's precision: the residual stream of a network is kept
        # there, the add needs no conversion, and a C can be the next call's R.
        Task(
            "gemm_residual",
            "C = relu(A @ B + R): bf16 A (M x K) and B (K x N), f32 residual R (M x N), f32 C",
            (
                TensorSpec("A", ("M", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("B", ("K", "N"), "bf16", sampler=_bf16_normal),
                TensorSpec("R", ("M", "N"), "f32"),
                TensorSpec("C", ("M", "N"), "f32", True),
            ),
            _gemm_residual,
            {"M": 100, "N": 72, "K": 80},
            ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}),
            lambda s: 2 * s["M"] * s["N"] * s["K"] + 2 * s["M"] * s["N"],
            lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 8 * s["M"] * s["N"],
            kernels=(
                "gemm_residual_naive",
                "gemm_residual_smem_tiled",
                "gemm_residual_mma_sync",
                "gemm_residual_cp_async",
                "gemm_residual_cp_async_swizzled",
            ),
            baselines={"cublas": _gemm_residual},  # cuBLAS's GEMM, then PyTorch's add and ReLU (unfused)
            default_baselines=("eager", "compile", "cublas"),
            forbidden=MATMUL_CALLS,
            forbidden_ops=MATMUL_OPS,
        ),
        Task(
            "gemm_nt_residual",
            "C = relu(A @ B^T + R): bf16 A (M x K) and B (N x K), f32 residual R (M x N), f32 C (the Hopper rungs)",
            (
                TensorSpec("A", ("M", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("B", ("N", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("R", ("M", "N"), "f32"),
                TensorSpec("C", ("M", "N"), "f32", True),
            ),
            _gemm_nt_residual,
            {"M": 200, "N": 72, "K": 136},
            ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}),
            lambda s: 2 * s["M"] * s["N"] * s["K"] + 2 * s["M"] * s["N"],
            lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 8 * s["M"] * s["N"],
            kernels=(
                "gemm_residual_tma_wgmma",
                "gemm_residual_wgmma_tma",
                "gemm_residual_wgmma_tma_persistent",
                "gemm_residual_tma_store_epilogue",
            ),
            baselines={"cublas": _gemm_nt_residual},
            default_baselines=("eager", "compile", "cublas"),
            forbidden=MATMUL_CALLS,
            forbidden_ops=MATMUL_OPS,
        ),
        Task(
            "attention",
            "attention forward O = softmax(Q K^T / sqrt(64)) V: bf16 Q, K, V (BH x S x 64), f32 O",
            (
                TensorSpec("Q", ("BH", "S", 64), "bf16", sampler=_bf16_normal),
                TensorSpec("K", ("BH", "S", 64), "bf16", sampler=_bf16_normal),
                TensorSpec("V", ("BH", "S", 64), "bf16", sampler=_bf16_normal),
                TensorSpec("O", ("BH", "S", 64), "f32", True),
            ),
            _attention,
            {"BH": 1, "S": 100},
            ({"BH": 32, "S": 4096}, {"BH": 64, "S": 1024}),
            lambda s: 4 * s["BH"] * s["S"] * s["S"] * 64,
            lambda s: 3 * 2 * s["BH"] * s["S"] * 64 + 4 * s["BH"] * s["S"] * 64,
            kernels=("flash_attention_fwd",),
            baselines={
                "sdpa-flash": _sdpa("FLASH_ATTENTION"),
                "sdpa-cudnn": _sdpa("CUDNN_ATTENTION"),
                "sdpa-efficient": _sdpa("EFFICIENT_ATTENTION"),
                "sdpa-math": _sdpa("MATH"),
            },
            default_baselines=("eager", "compile", "sdpa-flash", "sdpa-cudnn"),
            forbidden=ATTENTION_CALLS,
            forbidden_ops=ATTENTION_OPS,
        ),
        Task(
            "grouped_gemm",
            "MoE grouped GEMM: rows offs[g-1]..offs[g] of bf16 A (T x K) times bf16 B[g] (K x N), bf16 C",
            (
                TensorSpec("A", ("T", "K"), "bf16", sampler=_bf16_normal),
                TensorSpec("B", ("E", "K", "N"), "bf16", sampler=_bf16_normal),
                TensorSpec("offs", ("E",), "i32", sampler=_offsets),
                TensorSpec("C", ("T", "N"), "bf16", True),
            ),
            _grouped_reference,
            {"T": 96, "E": 4, "K": 32, "N": 24},
            ({"T": 16384, "E": 8, "K": 4096, "N": 2048},),
            lambda s: 2 * s["T"] * s["K"] * s["N"],
            lambda s: 2 * s["T"] * s["K"] + 2 * s["E"] * s["K"] * s["N"] + 2 * s["T"] * s["N"],
            baselines={"grouped_mm": _grouped_mm},
            default_baselines=("eager", "grouped_mm"),
            forbidden=MATMUL_CALLS,
            forbidden_ops=MATMUL_OPS,
        ),
    ]


def all_tasks() -> list[Task]:
    """Every built-in task, in a stable order."""
    return _tasks()


def get_task(name: str) -> Task:
    """The built-in task `name` (``TASK_UNKNOWN`` with a suggestion if there is none), or the task of your own
    kernel when `name` is a user task name (``FILE.py:NAME[...]``, `argus.tasks.user`)."""
    from argus.tasks.user import is_user_task, user_task

    if is_user_task(name):
        return user_task(name)
    tasks = {t.name: t for t in _tasks()}
    if name not in tasks:
        import difflib

        close = difflib.get_close_matches(name, list(tasks), n=1)
        raise TaskError(
            "TASK_UNKNOWN",
            f"no built-in task named {name!r}",
            f"did you mean {close[0]!r}?" if close else f"one of: {', '.join(tasks)}",
        )
    return tasks[name]


def task_of_kernel(kernel_name: str) -> Task:
    """The built-in task a library kernel implements."""
    for task in _tasks():
        if kernel_name in task.kernels:
            return task
    raise TaskError(
        "TASK_UNKNOWN",
        f"no built-in task is implemented by the library kernel {kernel_name!r}",
        "name a task instead (argus bench TASK)",
    )
