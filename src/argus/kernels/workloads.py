"""Every workload of the library, declared once: what it computes (`Problem`: tensors, reference, inputs, sizes,
work, baselines, what a candidate may not call) and the kernels that compute it (`Workload`: kernel, parameters,
interpreter shapes, tolerance, lineage position). The shape of a declaration is `argus.kernels.declarations`.

Everything else is derived from these tables: the kernel registry (`argus.kernels.registry`: `get_kernel`,
`all_kernels`, `lineage`, `lineages`) reads `WORKLOADS`, in their order; the built-in tasks (`argus.tasks.builtin`:
`get_task`, `all_tasks`, `task_of_kernel`) read `PROBLEMS`, each task's kernels being the workloads on it. A lineage
is the workloads of one family in declaration order, so the GEMM ladder below is written rung by rung, naive first,
as its kernels are in `argus.kernels.gemm`.

Each reference is written once, in `argus.kernels.arrays`' operators: on numpy arrays it checks the kernels on the
interpreter, on torch tensors it is the gate's reference and the PyTorch-eager baseline. `OLD_NAMES` lists the names
kernels had before they were named for what they add; `get_kernel` and `task_of_kernel` still accept them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from argus.atoms.common import SMS
from argus.ir.types import bf16, round_to
from argus.kernels import (
    arrays,
    attention,
    attention_lineage,
    conv_lineage,
    elementwise,
    gemm,
    gemm_residual,
    grouped,
    moe,
    softmax,
)
from argus.kernels.declarations import Problem, ProblemSizeError, Rung, Shapes, Tensor, Workload, draw_dtype

# ---- references: each written once -----------------------------------------------------------------------------------


def vector_sum(A: Any, B: Any) -> Any:
    return A + B


def row_softmax(X: Any) -> Any:
    return arrays.softmax(X, axis=-1)


def row_layer_norm(X: Any, W: Any, Bias: Any) -> Any:
    return arrays.layer_norm(X, W, Bias, eps=1e-5)


def product(A: Any, B: Any) -> Any:
    """C = A @ B (on torch tensors: cuBLAS's GEMM, in the precision of A and B)."""
    return A @ B


def product_nt(A: Any, B: Any) -> Any:
    """C = A @ B^T, B given as (N, K)."""
    return A @ B.T


def residual_relu(A: Any, B: Any, R: Any) -> Any:
    """relu(A @ B + R): the product in the precision of A and B (bf16 natively), the epilogue in R's (f32)."""
    return arrays.relu(A @ B + R)


def residual_relu_nt(A: Any, B: Any, R: Any) -> Any:
    """relu(A @ B^T + R), B given as (N, K)."""
    return arrays.relu(A @ B.T + R)


def conv3x3_nhwc(X: Any, WT: Any) -> Any:
    """The 3x3 convolution of stride 1 and padding 1 of channels-last X (N, H, W, C) with WT (9, C, F) (tap kh * 3
    + kw, channel, output channel), channels last (N, H, W, F)."""
    return arrays.conv2d_nhwc(X, WT, (3, 3), padding=1)


def attention_forward(Q: Any, K: Any, V: Any) -> Any:
    """softmax(Q K^T / sqrt(d)) V, written out (the math the kernel computes)."""
    scores = Q @ arrays.transpose(K) / math.sqrt(Q.shape[-1])
    return arrays.softmax(scores, axis=-1) @ V


def grouped_product(A: Any, B: Any, offs: Any, tiles: Any = None) -> Any:
    """Row block g of A (rows offs[g-1]..offs[g]) times expert g's matrix B[g] (`tiles`, the row-tile counts the
    kernel schedules by, does not change the result); rows past offs[E-1] are zero. On torch tensors or numpy
    arrays."""
    if isinstance(A, np.ndarray):
        out = np.zeros((A.shape[0], B.shape[2]))
        ends = [int(x) for x in np.asarray(offs)]
    else:
        import torch

        dtype = torch.promote_types(A.dtype, B.dtype)
        out = torch.zeros(A.shape[0], B.shape[2], dtype=dtype, device=A.device)
        ends = offs.tolist()
    start = 0
    for g, end in enumerate(ends):
        out[start:end] = A[start:end] @ B[g]
        start = end
    return out


# ---- baselines other than PyTorch eager and torch.compile (torch tensors) --------------------------------------------


def _sdpa(backend: str) -> Callable[..., Any]:
    def run(q: Any, k: Any, v: Any) -> Any:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend)):
            out = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])
        return out[0]

    run.__name__ = f"sdpa_{backend.lower()}"
    return run


def grouped_swiglu_product(A: Any, B: Any, offs: Any, tiles: Any = None, scale: Any = None) -> Any:
    """The MoE up-projection with SwiGLU: ``scale[:, None] * silu(h[:, :N]) * h[:, N:]`` of the grouped product
    ``h`` of A and B (E, K, 2N), each expert's gate columns then its up columns, `scale` one factor per row (the
    router weight; none: 1); rows past offs[E-1] are zero. On torch tensors or numpy arrays. On 16-bit torch
    tensors it computes in f32 and rounds once, as the task asks of a kernel: in bf16 throughout, the rounding of
    h and of each pointwise step compounds past the bf16 tolerance on a few elements in a million (measured at the
    bench sizes), and the gate would then take this run, not the float64 one, as the reference."""
    low = not isinstance(A, np.ndarray) and A.element_size() == 2
    if low:
        return grouped_swiglu_product(A.float(), B.float(), offs, tiles, scale).to(A.dtype)
    h = grouped_product(A, B, offs)
    n = B.shape[2] // 2
    gate, up = h[:, :n], h[:, n:]
    exp = np.exp if isinstance(h, np.ndarray) else type(h).exp
    out = gate / (1 + exp(-gate)) * up
    return out if scale is None else out * scale[:, None]


def _grouped_mm(a: Any, b: Any, offs: Any, tiles: Any = None) -> Any:
    import torch

    return torch._grouped_mm(a, b, offs=offs)


def _grouped_mm_swiglu(a: Any, b: Any, offs: Any, tiles: Any = None, scale: Any = None) -> Any:
    import torch

    h = torch._grouped_mm(a, b, offs=offs)
    n = b.shape[2] // 2
    return torch.nn.functional.silu(h[:, :n]) * h[:, n:] * scale[:, None]


#: The grouped GEMM task's row tile: its `tiles` input counts each expert's rows in tiles of this many rows, as the
#: library's kernel (`argus.kernels.grouped`, BM) schedules them.
GROUPED_TILE_ROWS = 128


def _tile_counts(inputs: Mapping[str, Any]) -> Any:
    """The grouped GEMM task's derived input: the cumulative row-tile counts of its offsets."""
    return moe.tile_counts(inputs["offs"], GROUPED_TILE_ROWS)


# ---- the tasks' native draws (torch) ---------------------------------------------------------------------------------


def _bf16_normal(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
    import torch

    return torch.randn(shape, generator=g, dtype=draw_dtype(g, torch.bfloat16)).to(torch.bfloat16)


def _uniform(lo: float, hi: float) -> Callable[[tuple[int, ...], Mapping[str, int], Any], Any]:
    def sample(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
        import torch

        return (torch.rand(shape, generator=g, dtype=draw_dtype(g, torch.float32)) * (hi - lo) + lo).to(torch.float32)

    return sample


def _offsets(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
    """Cumulative row counts per expert: a random split of R rows into E groups of multiples of 16 rows."""
    import torch

    (experts,) = shape
    tokens = int(sizes["R"])
    if tokens % 16:
        raise ProblemSizeError("TASK_SIZE", f"grouped_gemm needs R to be a multiple of 16, got {tokens}", "e.g. R=256")
    blocks = tokens // 16
    cuts = torch.sort(torch.randint(0, blocks + 1, (experts - 1,), generator=g)).values
    ends = torch.cat([cuts, torch.tensor([blocks])]) * 16
    return ends.to(torch.int32)


# ---- the interpreter's inputs (numpy, float64; outputs zeroed) -------------------------------------------------------


def _bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(round_to(bf16, x), dtype=np.float64)


def _vector_add_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = s["N"]
    return {"A": rng.standard_normal(n), "B": rng.uniform(-4, 4, n), "C": np.zeros(n)}


def _softmax_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n = s["M"], s["N"]
    return {"X": rng.standard_normal((m, n)) * 4 + rng.uniform(-2, 2, (m, 1)), "Y": np.zeros((m, n))}


def _layer_norm_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n = s["M"], s["N"]
    return {
        "X": rng.standard_normal((m, n)) * 2 + 1,
        "W": rng.uniform(0.5, 1.5, n),
        "Bias": rng.standard_normal(n) * 0.1,
        "Y": np.zeros((m, n)),
    }


def _gemm_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = s["M"], s["N"], s["K"]
    return {"A": _bf16(rng.standard_normal((m, k))), "B": _bf16(rng.uniform(-1, 1, (k, n))), "C": np.zeros((m, n))}


def _conv_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n, h, w, c, f = s["N"], s["H"], s["W"], CONV_CHANNELS, s["F"]
    return {
        "X": _bf16(rng.standard_normal((n, h, w, c))),
        "WT": _bf16(rng.uniform(-1, 1, (9, c, f))),
        "Y": np.zeros((n, s["OH"], s["OW"], f)),
    }


def _gemm_nt_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = s["M"], s["N"], s["K"]
    b = _bf16(rng.uniform(-1, 1, (n, k)))
    return {"A": _bf16(rng.standard_normal((m, k))), "B": b, "C": np.zeros((m, n))}


def _residual_inputs(nt: bool) -> Callable[[Mapping[str, int], np.random.Generator], dict[str, np.ndarray]]:
    def make(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
        m, n, k = s["M"], s["N"], s["K"]
        return {
            "A": _bf16(rng.standard_normal((m, k))),
            "B": _bf16(rng.uniform(-1, 1, (n, k) if nt else (k, n))),
            "R": rng.standard_normal((m, n)).astype(np.float32).astype(np.float64) * 4,  # ReLU clamps about half
            "C": np.zeros((m, n)),
        }

    return make


def _attention_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    bh, n = s["BH"], s["S"]
    q = _bf16(rng.standard_normal((bh, n, 64)))
    k = _bf16(rng.standard_normal((bh, n, 64)))
    v = _bf16(rng.uniform(-1, 1, (bh, n, 64)))
    return {"Q": q, "K": k, "V": v, "O": np.zeros((bh, n, 64))}


def _grouped_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every row routed, in groups of any size (not multiples of 16: the kernel takes any), one expert empty."""
    rows, experts, k, n = s["R"], s["E"], s["K"], s["N"]
    cuts = np.sort(rng.integers(0, rows + 1, experts - 1))
    if experts > 2:
        cuts[1] = cuts[0]  # expert 1 gets no rows
    offs = np.concatenate([cuts, [rows]]).astype(np.int64)
    return {
        "A": _bf16(rng.standard_normal((rows, k))),
        "B": _bf16(rng.uniform(-1, 1, (experts, k, n))),
        "offs": offs,
        "tiles": moe.tile_counts(offs, GROUPED_TILE_ROWS),
        "C": np.zeros((rows, n)),
    }


def _check_swiglu_sizes(s: Mapping[str, int]) -> None:
    """The grouped_swiglu task's B holds 2N columns: sizes with N2 != 2N are a size error."""
    if s["N2"] != 2 * s["N"]:
        raise ProblemSizeError("TASK_SIZE", f"grouped_swiglu needs N2 = 2 * N, got N={s['N']}, N2={s['N2']}")


def _grouped_swiglu_inputs(s: Mapping[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """As `_grouped_inputs`, with B holding each expert's gate and up columns (E, K, 2N) and C (R, N)."""
    _check_swiglu_sizes(s)
    out = _grouped_inputs({**s, "N": s["N2"]}, rng)
    out["B"] = _bf16(rng.uniform(-1, 1, out["B"].shape) / np.sqrt(s["K"]))
    out["scale"] = rng.uniform(0.0, 1.0, s["R"])
    out["C"] = np.zeros((s["R"], s["N"]))
    return out


def _swiglu_weight(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
    """The gate-and-up weight (E, K, 2N), scaled by K^-1/2 so that the gate's values stay O(1) (silu of a
    standard normal draw's K-term sum would saturate)."""
    _check_swiglu_sizes(sizes)
    import torch

    return (_bf16_normal(shape, sizes, g).float() * sizes["K"] ** -0.5).to(torch.bfloat16)


# ---- what candidates may not call ------------------------------------------------------------------------------------

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

_SQUARE_GEMMS = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192})


def _gemm_flops(s: Mapping[str, int]) -> float:
    return 2 * s["M"] * s["N"] * s["K"]


def _residual_flops(s: Mapping[str, int]) -> float:
    return 2 * s["M"] * s["N"] * s["K"] + 2 * s["M"] * s["N"]


def _gemm_bytes(c_bytes: int) -> Callable[[Mapping[str, int]], float]:
    """bf16 A and B read once, C written once in `c_bytes` per element."""
    return lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + c_bytes * s["M"] * s["N"]


# ---- problems: the built-in tasks ------------------------------------------------------------------------------------

VECTOR_ADD = Problem(
    "vector_add",
    "C = A + B (f32)",
    (Tensor("A", ("N",), "f32"), Tensor("B", ("N",), "f32"), Tensor("C", ("N",), "f32", output=True)),
    vector_sum,
    _vector_add_inputs,
    cpu_sizes={"N": 3000},
    bench_sizes=({"N": 1 << 26}, {"N": 1 << 20}),
    flops=lambda s: s["N"],
    moved_bytes=lambda s: 12 * s["N"],
)

SOFTMAX = Problem(
    "softmax",
    "row softmax of an M x N f32 matrix (rows of up to 128 for the library kernel)",
    (Tensor("X", ("M", "N"), "f32"), Tensor("Y", ("M", "N"), "f32", output=True)),
    row_softmax,
    _softmax_inputs,
    cpu_sizes={"M": 10, "N": 100},
    bench_sizes=({"M": 1 << 18, "N": 128},),
    flops=lambda s: 5 * s["M"] * s["N"],
    moved_bytes=lambda s: 8 * s["M"] * s["N"],
    forbidden=("torch.softmax", "torch.nn.functional.softmax", "torch.nn.Softmax", "torch.special.softmax"),
    forbidden_ops=("aten::_softmax", "aten::_safe_softmax"),
)

LAYER_NORM = Problem(
    "layer_norm",
    "layer norm over the rows of an M x N f32 matrix, with weight and bias (eps 1e-5)",
    (
        Tensor("X", ("M", "N"), "f32"),
        Tensor("W", ("N",), "f32", draw=_uniform(0.5, 1.5)),
        Tensor("Bias", ("N",), "f32"),
        Tensor("Y", ("M", "N"), "f32", output=True),
    ),
    row_layer_norm,
    _layer_norm_inputs,
    cpu_sizes={"M": 10, "N": 100},
    bench_sizes=({"M": 1 << 18, "N": 128},),
    flops=lambda s: 8 * s["M"] * s["N"],
    moved_bytes=lambda s: 8 * s["M"] * s["N"] + 8 * s["N"],
    forbidden=("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.nn.LayerNorm"),
    forbidden_ops=("aten::native_layer_norm", "aten::layer_norm"),
)

GEMM = Problem(
    "gemm",
    "C = A @ B: bf16 A (M x K) and B (K x N), f32 C",
    (
        Tensor("A", ("M", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("K", "N"), "bf16", draw=_bf16_normal),
        Tensor("C", ("M", "N"), "f32", output=True),
    ),
    product,
    _gemm_inputs,
    cpu_sizes={"M": 100, "N": 72, "K": 80},
    bench_sizes=_SQUARE_GEMMS,
    flops=_gemm_flops,
    moved_bytes=_gemm_bytes(4),
    baselines={"cublas": product},
    default_baselines=("eager", "compile", "cublas"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

#: The input channels of the `CONV` task (KLineage's convolution workload's, and ResNet's first stage's): the
#: lineage's rungs take the channels as a parameter fixed when they are built (`argus.kernels.conv_lineage`), so C
#: is part of the task, not one of its sizes.
CONV_CHANNELS = 64


def _conv_sizes(n: int, h: int, w: int, f: int) -> dict[str, int]:
    """The `CONV` task's sizes: the 3x3 convolution of padding 1 keeps H and W (OH = H, OW = W)."""
    return {"N": n, "H": h, "W": w, "OH": h, "OW": w, "F": f}


CONV = Problem(
    "conv2d_nhwc",
    f"Y = conv2d(X, W), 3x3, stride 1, padding 1, channels last: bf16 X (N x H x W x {CONV_CHANNELS}) and W (9 taps x "
    f"{CONV_CHANNELS} x F), f32 Y (N x OH x OW x F, OH = H, OW = W); KLineage's convolution workload (the convolution "
    "lineage's task)",
    (
        Tensor("X", ("N", "H", "W", CONV_CHANNELS), "bf16", draw=_bf16_normal),
        Tensor("WT", (9, CONV_CHANNELS, "F"), "bf16", draw=_bf16_normal),
        Tensor("Y", ("N", "OH", "OW", "F"), "f32", output=True),
    ),
    conv3x3_nhwc,
    _conv_inputs,
    cpu_sizes=_conv_sizes(1, 3, 67, 72),
    bench_sizes=(_conv_sizes(8, 56, 56, 128), _conv_sizes(32, 56, 56, 64)),
    flops=lambda s: 2 * s["N"] * s["OH"] * s["OW"] * s["F"] * 9 * CONV_CHANNELS,
    moved_bytes=lambda s: (
        2 * s["N"] * s["H"] * s["W"] * CONV_CHANNELS
        + 18 * CONV_CHANNELS * s["F"]
        + 4 * s["N"] * s["OH"] * s["OW"] * s["F"]
    ),
    baselines={"cudnn": conv3x3_nhwc},
    default_baselines=("eager", "compile", "cudnn"),
    forbidden=(*MATMUL_CALLS, "torch.nn.functional.conv2d", "torch.conv2d", "torch.nn.Conv2d", "torch.convolution"),
    forbidden_ops=(*MATMUL_OPS, "aten::convolution", "aten::_convolution", "aten::conv2d", "aten::cudnn_convolution"),
)

GEMM_NT = Problem(
    "gemm_nt",
    "C = A @ B^T: bf16 A (M x K) and B (N x K), f32 C (the Hopper TMA/wgmma GEMM)",
    (
        Tensor("A", ("M", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("N", "K"), "bf16", draw=_bf16_normal),
        Tensor("C", ("M", "N"), "f32", output=True),
    ),
    product_nt,
    _gemm_nt_inputs,
    cpu_sizes={"M": 200, "N": 72, "K": 136},
    bench_sizes=_SQUARE_GEMMS,
    flops=_gemm_flops,
    moved_bytes=_gemm_bytes(4),
    baselines={"cublas": product_nt},
    default_baselines=("eager", "compile", "cublas"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

GEMM_NT_BF16 = Problem(
    "gemm_nt_bf16",
    "C = A @ B^T: bf16 A (M x K) and B (N x K), bf16 C (cuBLAS's own output type; the expert Hopper GEMM)",
    (
        Tensor("A", ("M", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("N", "K"), "bf16", draw=_bf16_normal),
        Tensor("C", ("M", "N"), "bf16", output=True),
    ),
    product_nt,
    _gemm_nt_inputs,
    cpu_sizes={"M": 200, "N": 72, "K": 136},
    bench_sizes=(
        {"M": 2048, "N": 2048, "K": 2048},
        {"M": 4096, "N": 4096, "K": 4096},
        {"M": 8192, "N": 8192, "K": 8192},
        {"M": 8192, "N": 7168, "K": 2048},
        {"M": 4096, "N": 14336, "K": 4096},
        {"M": 16384, "N": 4096, "K": 4096},
        {"M": 2048, "N": 8192, "K": 28672},
    ),
    flops=_gemm_flops,
    moved_bytes=_gemm_bytes(2),
    baselines={"cublas": product_nt},
    default_baselines=("eager", "compile", "cublas"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

# The held-out family of the lineage curriculum (docs/gemm.md): a GEMM with a fused epilogue. R is f32, the
# accumulator's and C's precision: the residual stream of a network is kept there, the add needs no conversion, and
# a C can be the next call's R. Its cuBLAS baseline is cuBLAS's GEMM, then PyTorch's add and ReLU (unfused).
GEMM_RESIDUAL = Problem(
    "gemm_residual",
    "C = relu(A @ B + R): bf16 A (M x K) and B (K x N), f32 residual R (M x N), f32 C",
    (
        Tensor("A", ("M", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("K", "N"), "bf16", draw=_bf16_normal),
        Tensor("R", ("M", "N"), "f32"),
        Tensor("C", ("M", "N"), "f32", output=True),
    ),
    residual_relu,
    _residual_inputs(nt=False),
    cpu_sizes={"M": 100, "N": 72, "K": 80},
    bench_sizes=_SQUARE_GEMMS,
    flops=_residual_flops,
    moved_bytes=lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 8 * s["M"] * s["N"],
    baselines={"cublas": residual_relu},
    default_baselines=("eager", "compile", "cublas"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

GEMM_NT_RESIDUAL = Problem(
    "gemm_nt_residual",
    "C = relu(A @ B^T + R): bf16 A (M x K) and B (N x K), f32 residual R (M x N), f32 C (the Hopper rungs)",
    (
        Tensor("A", ("M", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("N", "K"), "bf16", draw=_bf16_normal),
        Tensor("R", ("M", "N"), "f32"),
        Tensor("C", ("M", "N"), "f32", output=True),
    ),
    residual_relu_nt,
    _residual_inputs(nt=True),
    cpu_sizes={"M": 200, "N": 72, "K": 136},
    bench_sizes=_SQUARE_GEMMS,
    flops=_residual_flops,
    moved_bytes=lambda s: 2 * s["M"] * s["K"] + 2 * s["K"] * s["N"] + 8 * s["M"] * s["N"],
    baselines={"cublas": residual_relu_nt},
    default_baselines=("eager", "compile", "cublas"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

ATTENTION = Problem(
    "attention",
    "attention forward O = softmax(Q K^T / sqrt(64)) V: bf16 Q, K, V (BH x S x 64), f32 O",
    (
        Tensor("Q", ("BH", "S", 64), "bf16", draw=_bf16_normal),
        Tensor("K", ("BH", "S", 64), "bf16", draw=_bf16_normal),
        Tensor("V", ("BH", "S", 64), "bf16", draw=_bf16_normal),
        Tensor("O", ("BH", "S", 64), "f32", output=True),
    ),
    attention_forward,
    _attention_inputs,
    cpu_sizes={"BH": 1, "S": 100},
    bench_sizes=({"BH": 32, "S": 4096}, {"BH": 64, "S": 1024}),
    flops=lambda s: 4 * s["BH"] * s["S"] * s["S"] * 64,
    moved_bytes=lambda s: 3 * 2 * s["BH"] * s["S"] * 64 + 4 * s["BH"] * s["S"] * 64,
    baselines={
        "sdpa-flash": _sdpa("FLASH_ATTENTION"),
        "sdpa-cudnn": _sdpa("CUDNN_ATTENTION"),
        "sdpa-efficient": _sdpa("EFFICIENT_ATTENTION"),
        "sdpa-math": _sdpa("MATH"),
    },
    default_baselines=("eager", "compile", "sdpa-flash", "sdpa-cudnn"),
    forbidden=ATTENTION_CALLS,
    forbidden_ops=ATTENTION_OPS,
)

GROUPED_GEMM = Problem(
    "grouped_gemm",
    "MoE grouped GEMM: rows offs[g-1]..offs[g] of bf16 A (R x K) times bf16 B[g] (K x N), bf16 C; tiles: the "
    "cumulative 128-row tile counts of offs (routing metadata, derived)",
    (
        Tensor("A", ("R", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("E", "K", "N"), "bf16", draw=_bf16_normal),
        Tensor("offs", ("E",), "i32", draw=_offsets),
        Tensor("tiles", ("E",), "i32", derive=_tile_counts),
        Tensor("C", ("R", "N"), "bf16", output=True),
    ),
    grouped_product,
    _grouped_inputs,
    cpu_sizes={"R": 96, "E": 4, "K": 32, "N": 24},
    # the MoE up-projections (#23): Mixtral, Qwen3-30B-A3B, DeepSeek-V3
    bench_sizes=(
        {"R": 8192, "E": 8, "K": 4096, "N": 28672},
        {"R": 64 * 1024, "E": 128, "K": 2048, "N": 1536},
        {"R": 32768, "E": 256, "K": 7168, "N": 4096},
    ),
    flops=lambda s: 2 * s["R"] * s["K"] * s["N"],
    moved_bytes=lambda s: 2 * s["R"] * s["K"] + 2 * s["E"] * s["K"] * s["N"] + 2 * s["R"] * s["N"],
    baselines={"grouped_mm": _grouped_mm},
    default_baselines=("eager", "grouped_mm"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

GROUPED_SWIGLU = Problem(
    "grouped_swiglu",
    "MoE up-projection with SwiGLU: scale[:, None] * silu(h[:, :N]) * h[:, N:] for h the grouped product of bf16 "
    "A (R x K) and B[g] (K x 2N: expert g's gate columns, then its up columns), f32 scale (R: each row's router "
    "weight), bf16 C (R x N); offs and tiles as in grouped_gemm (N2 = 2N)",
    (
        Tensor("A", ("R", "K"), "bf16", draw=_bf16_normal),
        Tensor("B", ("E", "K", "N2"), "bf16", draw=_swiglu_weight),
        Tensor("offs", ("E",), "i32", draw=_offsets),
        Tensor("tiles", ("E",), "i32", derive=_tile_counts),
        Tensor("scale", ("R",), "f32", draw=_uniform(0.0, 1.0)),
        Tensor("C", ("R", "N"), "bf16", output=True),
    ),
    grouped_swiglu_product,
    _grouped_swiglu_inputs,
    cpu_sizes={"R": 96, "E": 4, "K": 32, "N": 24, "N2": 48},
    # the three grouped shapes are gate-and-up projections (#23): N2 = 2 I
    bench_sizes=(
        {"R": 8192, "E": 8, "K": 4096, "N": 14336, "N2": 28672},
        {"R": 64 * 1024, "E": 128, "K": 2048, "N": 768, "N2": 1536},
        {"R": 32768, "E": 256, "K": 7168, "N": 2048, "N2": 4096},
    ),
    flops=lambda s: 2 * s["R"] * s["K"] * s["N2"],
    moved_bytes=lambda s: 2 * s["R"] * s["K"] + 2 * s["E"] * s["K"] * s["N2"] + 2 * s["R"] * s["N"] + 4 * s["R"],
    baselines={"grouped_mm_swiglu": _grouped_mm_swiglu},
    default_baselines=("eager", "grouped_mm_swiglu"),
    forbidden=MATMUL_CALLS,
    forbidden_ops=MATMUL_OPS,
)

#: Every problem, in the order `all_tasks` lists them.
PROBLEMS: tuple[Problem, ...] = (
    VECTOR_ADD,
    SOFTMAX,
    LAYER_NORM,
    GEMM,
    GEMM_NT,
    GEMM_NT_BF16,
    GEMM_RESIDUAL,
    GEMM_NT_RESIDUAL,
    ATTENTION,
    GROUPED_GEMM,
    GROUPED_SWIGLU,
    CONV,
)

# ---- interpreter shapes and expert configurations --------------------------------------------------------------------

#: The GEMM rungs on CUDA cores and mma.sync (64x64 tiles and smaller).
SMALL_TILES = Shapes({"M": 128, "N": 128, "K": 64}, {"M": 100, "N": 72, "K": 80})
#: The Hopper rungs (128x128x64 tiles and larger): 2 x 1 tiles, 4 K-blocks; partial: 2 x 1 tiles, both partial, and
#: 3 K-blocks, the last one partial.
HOPPER_TILES = Shapes({"M": 256, "N": 128, "K": 256}, {"M": 200, "N": 72, "K": 136})
#: The persistent rungs: 2 x 2 tiles (the blocks past them find no tile), 4 K-blocks on 3 stages; partial: 2 x 2
#: tiles, three of them partial, and 3 K-blocks, the last one partial. N is a multiple of 8 in both (the TMA-store
#: epilogue needs C's rows 16-byte aligned, which the kernel assumes).
PERSISTENT_TILES = Shapes({"M": 256, "N": 256, "K": 256}, {"M": 200, "N": 200, "K": 136})
#: The grouped GEMM lineage's rungs: 2 row tiles (an expert straddling them, one empty) x 2 column tiles, 2 K-blocks;
#: partial: every extent partial.
GROUPED_TILES = Shapes({"R": 256, "E": 4, "K": 128, "N": 256}, {"R": 200, "E": 5, "K": 136, "N": 200})
#: The SwiGLU lineage's rungs: 2 row tiles (an expert straddling them, one empty) x 1 column tile; partial: N not a
#: multiple of the tile.
GROUPED_SWIGLU_TILES = Shapes(
    {"R": 256, "E": 4, "K": 128, "N": 128, "N2": 256}, {"R": 200, "E": 5, "K": 136, "N": 72, "N2": 144}
)

#: The convolution lineage's rungs: one row tile of 64 output columns by 64 output channels; partial: both partial.
CONV_TILES = Shapes(_conv_sizes(1, 3, 64, 64), _conv_sizes(1, 3, 67, 72))
#: The Hopper GEMMs with B given as (K, N): N fills whole 64-column panels of B (partial: one panel in part).
HOPPER_TILES_NN = Shapes({"M": 256, "N": 256, "K": 256}, {"M": 200, "N": 136, "K": 136})

#: The attention lineage's rungs: two batch-heads of two 64-row query blocks and 64-key tiles; partial: S = 100 (the
#: second query block and key tile partial).
ATTENTION_TILES = Shapes({"BH": 2, "S": 128}, {"BH": 2, "S": 100})

#: Blocks of the persistent library rungs: one per SM of an H100 SXM / H200, as on the GPU they are measured, gated
#: and walked on (session 5: at the 3 blocks they once had, so that blocks walk several tiles at interpreter sizes, a
#: GPU and the cost model put the persistent rung ~40x slower at 4096^3 and KLineage mined its step as 0.02x). The
#: kernel tests walk several tiles per block with explicit small BLOCKS (`tests/kernels/test_gemm_persistent_ws.py`).
PERSISTENT_BLOCKS = SMS

#: The expert Hopper GEMM's configuration: the tile shape and stage count measured best on all seven benchmark
#: shapes of five configurations (benchmarks/results/2026-11-21-gemm-h200.md), bf16 output as cuBLAS writes it.
GEMM_HOPPER_PARAMS: dict[str, Any] = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "OUT": "bf16"}

#: The persistent expert (issue #7): the expert's tiles on `gemm_warp_specialized_persistent`, one block per SM of
#: an H100/H200 (`PERSISTENT_BLOCKS`), tiles in grouped order 16 M-tiles at a time. GROUP chosen by measurement over
#: {4, 8, 16} at the seven benchmark shapes on an H200 (`benchmarks/results/2026-11-21-session4.md`); BLOCKS is the
#: SM count (fewer SMs, e.g. an H100 PCIe's 114, still compute the right result with some blocks waiting for an SM).
#: C goes out through shared memory and TMA stores that drain while the consumers start the next tile (EPILOGUE
#: "tma", session 5: `benchmarks/results/2026-11-21-session5.md`); it needs N % 8 == 0 (C's rows 16-byte aligned),
#: which the kernel assumes, so the runtime refuses other N with the assumption's message.
GEMM_HOPPER_PERSISTENT_PARAMS: dict[str, Any] = {
    **GEMM_HOPPER_PARAMS,
    "BLOCKS": PERSISTENT_BLOCKS,
    "ORDER": "grouped",
    "GROUP": 16,
    "EPILOGUE": "tma",
}

# ---- workloads: the library's kernels, in registry order -------------------------------------------------------------

_PERSISTENT_RUNG = (
    "a persistent grid: BLOCKS blocks walk the output tiles in grouped order, the mbarrier pipeline running on across "
    "each block's tiles"
)

WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "vector_add",
        "C = A + B (f32), one 16-byte vector per thread",
        VECTOR_ADD,
        elementwise.vector_add,
        Shapes({"N": 4096}, {"N": 3000}),
    ),
    Workload(
        "softmax",
        "row softmax, rows of up to 128 in registers, warp-shuffle row statistics",
        SOFTMAX,
        softmax.softmax,
        Shapes({"M": 16, "N": 128}, {"M": 10, "N": 100}),
        tolerance=1e-5,
    ),
    Workload(
        "layer_norm",
        "layer norm over rows of up to 128, statistics by warp shuffles",
        LAYER_NORM,
        softmax.layer_norm,
        Shapes({"M": 16, "N": 128}, {"M": 10, "N": 100}),
        tolerance=1e-4,
    ),
    # -- the GEMM ladder (docs/gemm.md), naive first: each rung adds exactly one mechanism to the one before it ----
    Workload(
        "gemm_naive",
        "bf16 GEMM, one thread per output element: A and B from global memory into registers, FMA in f32",
        GEMM,
        gemm.gemm_naive,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung("gemm", "naive_fma", "one thread per output element; A and B from global memory; FMA in f32"),
    ),
    Workload(
        "gemm_smem_tiled",
        "gemm_naive with shared-memory tiles between barriers and an 8x8 register micro-tile of FMAs per thread",
        GEMM,
        gemm.gemm_smem_tiled,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm",
            "smem_tiling",
            "block tiles of A and B staged in shared memory between barriers; a register micro-tile per thread",
        ),
    ),
    Workload(
        "gemm_mma_sync",
        "bf16 GEMM: shared-memory tiles, ldmatrix, mma.sync.m16n8k16 on 2x2 warps",
        GEMM,
        gemm.gemm_mma_sync,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung("gemm", "mma_sync", "tensor cores: ldmatrix into operand fragments and mma.sync"),
    ),
    Workload(
        "gemm_cp_async",
        "gemm_mma_sync with a 2-stage cp.async pipeline",
        GEMM,
        gemm.gemm_cp_async,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung("gemm", "cp_async_pipeline", "a multi-stage cp.async pipeline: the next tiles load during the MMA"),
    ),
    Workload(
        "gemm_cp_async_swizzled",
        "gemm_cp_async with 64/128-byte swizzled shared memory: ldmatrix free of bank conflicts",
        GEMM,
        gemm.gemm_cp_async_swizzled,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung("gemm", "smem_swizzle", "XOR-swizzled shared memory: no bank conflicts"),
    ),
    Workload(
        "gemm_tma_wgmma",
        "Hopper GEMM C = A @ B^T: TMA into 128B-swizzled stages on mbarriers and wgmma, no warp specialization "
        "(both warpgroups load and compute in program order)",
        GEMM_NT,
        gemm.gemm_tma_wgmma,
        HOPPER_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm",
            "tma_wgmma",
            "TMA loads completing on mbarriers and warpgroup MMAs (wgmma) from swizzled shared memory",
        ),
    ),
    Workload(
        "gemm_warp_specialized",
        "Hopper GEMM C = A @ B^T: gemm_tma_wgmma with warp specialization, a producer warpgroup (TMA) and two "
        "consumer warpgroups (wgmma) on full/empty mbarriers, the register split by setmaxnreg",
        GEMM_NT,
        gemm.gemm_warp_specialized,
        HOPPER_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm",
            "warp_specialization",
            "a producer warpgroup (TMA) and consumer warpgroups (wgmma) with a setmaxnreg register split",
        ),
    ),
    Workload(
        "gemm_warp_specialized_persistent",
        "persistent Hopper GEMM C = A @ B^T: gemm_warp_specialized on one block per SM walking the tiles in grouped "
        "order, the mbarrier pipeline running on across each block's tiles (the producer prefetches the next tile "
        "during the epilogue)",
        GEMM_NT,
        gemm.gemm_warp_specialized_persistent,
        PERSISTENT_TILES,
        tolerance=1e-3,
        params={"BLOCKS": PERSISTENT_BLOCKS},
        rung=Rung("gemm", "persistent_grid", _PERSISTENT_RUNG),
    ),
    Workload(
        "gemm_tma_store_epilogue",
        "gemm_warp_specialized_persistent with C stored through two 128-byte-swizzled shared-memory chunk buffers and "
        "TMA stores that drain while the consumers start the block's next tile",
        GEMM_NT,
        gemm.gemm_warp_specialized_persistent,
        PERSISTENT_TILES,
        tolerance=1e-3,
        params={"BLOCKS": PERSISTENT_BLOCKS, "EPILOGUE": "tma"},
        rung=Rung(
            "gemm",
            "tma_store",
            "the epilogue through shared memory and TMA stores, which drain while the block's next tile starts",
        ),
    ),
    # -- off the ladder: rung 3 on a persistent grid, and the expert configurations of rungs 7 and 8 ---------------
    Workload(
        "gemm_persistent",
        "gemm_mma_sync on a persistent grid (grouped tile order); 3 blocks here so each walks several tiles",
        GEMM,
        gemm.gemm_persistent,
        SMALL_TILES,
        tolerance=1e-3,
        params={"BLOCKS": 3},
    ),
    Workload(
        "gemm_hopper",
        "the expert Hopper GEMM: gemm_warp_specialized with 128x256x64 tiles, 4 stages (one wgmma group kept in "
        "flight), bf16 C",
        GEMM_NT_BF16,
        gemm.gemm_warp_specialized,
        HOPPER_TILES,
        tolerance=5e-3,  # C rounded to bf16 (2^-9 relative) after f32 accumulation
        params=GEMM_HOPPER_PARAMS,
    ),
    Workload(
        "gemm_hopper_persistent",
        "the persistent expert Hopper GEMM: gemm_warp_specialized_persistent with 128x256x64 tiles, 4 stages, one "
        f"block per SM ({SMS}) walking the tiles 16 M-tiles at a time, the pipeline running on across tiles, bf16 C "
        "stored through shared memory by TMA stores that drain while the next tile's MMAs run",
        GEMM_NT_BF16,
        gemm.gemm_warp_specialized_persistent,
        HOPPER_TILES,
        tolerance=5e-3,  # C rounded to bf16 (2^-9 relative) after f32 accumulation
        params=GEMM_HOPPER_PERSISTENT_PARAMS,
    ),
    Workload(
        "gemm_hopper_nn",
        "the expert Hopper GEMM with B given as (K, N) (C = A @ B): gemm_warp_specialized with 128x256x64 tiles, 4 "
        "stages, B staged in four 64-column panels (one TMA box each) and read by wgmma transposed; f32 C",
        GEMM,
        gemm.gemm_warp_specialized,
        HOPPER_TILES_NN,
        tolerance=1e-3,
        params={**GEMM_HOPPER_PARAMS, "B_MAJOR": "N", "OUT": "f32"},
    ),
    Workload(
        "gemm_hopper_persistent_nn",
        "the persistent expert Hopper GEMM with B given as (K, N) (C = A @ B): gemm_warp_specialized_persistent with "
        "the expert's tiles, blocks, tile order and TMA-store epilogue, B staged in 64-column panels (one TMA box "
        "each) and read by wgmma transposed; f32 C",
        GEMM,
        gemm.gemm_warp_specialized_persistent,
        HOPPER_TILES_NN,
        tolerance=1e-3,
        params={**GEMM_HOPPER_PERSISTENT_PARAMS, "B_MAJOR": "N", "OUT": "f32"},
    ),
    # -- the held-out family C = relu(A @ B + R) (`argus.kernels.gemm_residual`): the GEMM ladder's rungs with a
    # fused residual + ReLU epilogue, one rung per mechanism of "gemm" under the same mechanism names (so that
    # `argus.lineage.mechanisms.RUNGS` names its moves); held out from skill mining.
    Workload(
        "gemm_residual_naive",
        "relu(A @ B + R), one thread per output element, FMA in f32 (gemm_naive + epilogue)",
        GEMM_RESIDUAL,
        gemm_residual.gemm_residual_naive,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm_residual",
            "naive_fma",
            "one thread per output element; A and B from global memory; FMA in f32; R added and ReLU in registers",
        ),
    ),
    Workload(
        "gemm_residual_smem_tiled",
        "relu(A @ B + R): shared-memory tiles and an 8x8 FMA micro-tile per thread (gemm_smem_tiled + epilogue)",
        GEMM_RESIDUAL,
        gemm_residual.gemm_residual_smem_tiled,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm_residual",
            "smem_tiling",
            "block tiles of A and B staged in shared memory between barriers; a register micro-tile per thread",
        ),
    ),
    Workload(
        "gemm_residual_mma_sync",
        "relu(A @ B + R): ldmatrix and mma.sync on 2x2 warps (gemm_mma_sync + epilogue)",
        GEMM_RESIDUAL,
        gemm_residual.gemm_residual_mma_sync,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung("gemm_residual", "mma_sync", "tensor cores: ldmatrix into operand fragments and mma.sync"),
    ),
    Workload(
        "gemm_residual_cp_async",
        "relu(A @ B + R): a 2-stage cp.async pipeline (gemm_cp_async + epilogue)",
        GEMM_RESIDUAL,
        gemm_residual.gemm_residual_cp_async,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm_residual", "cp_async_pipeline", "a multi-stage cp.async pipeline: the next tiles load during the MMA"
        ),
    ),
    Workload(
        "gemm_residual_cp_async_swizzled",
        "relu(A @ B + R): cp.async into swizzled shared memory (gemm_cp_async_swizzled + epilogue)",
        GEMM_RESIDUAL,
        gemm_residual.gemm_residual_cp_async_swizzled,
        SMALL_TILES,
        tolerance=1e-3,
        rung=Rung("gemm_residual", "smem_swizzle", "XOR-swizzled shared memory: no bank conflicts"),
    ),
    Workload(
        "gemm_residual_tma_wgmma",
        "relu(A @ B^T + R): TMA and wgmma in program order (gemm_tma_wgmma + epilogue)",
        GEMM_NT_RESIDUAL,
        gemm_residual.gemm_residual_tma_wgmma,
        HOPPER_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm_residual",
            "tma_wgmma",
            "TMA loads completing on mbarriers and warpgroup MMAs (wgmma) from swizzled shared memory",
        ),
    ),
    Workload(
        "gemm_residual_warp_specialized",
        "relu(A @ B^T + R): producer/consumer warpgroups, TMA, wgmma, setmaxnreg (gemm_warp_specialized + epilogue)",
        GEMM_NT_RESIDUAL,
        gemm_residual.gemm_residual_warp_specialized,
        HOPPER_TILES,
        tolerance=1e-3,
        rung=Rung(
            "gemm_residual",
            "warp_specialization",
            "a producer warpgroup (TMA) and consumer warpgroups (wgmma) with a setmaxnreg register split",
        ),
    ),
    Workload(
        "gemm_residual_warp_specialized_persistent",
        "relu(A @ B^T + R) on a persistent grid walking the tiles in grouped order (gemm_warp_specialized_persistent "
        "+ epilogue)",
        GEMM_NT_RESIDUAL,
        gemm_residual.gemm_residual_warp_specialized_persistent,
        PERSISTENT_TILES,
        tolerance=1e-3,
        params={"BLOCKS": PERSISTENT_BLOCKS},
        rung=Rung("gemm_residual", "persistent_grid", _PERSISTENT_RUNG),
    ),
    Workload(
        "gemm_residual_tma_store_epilogue",
        "relu(A @ B^T + R) written into the accumulator and stored through shared memory and TMA stores "
        "(gemm_tma_store_epilogue + epilogue)",
        GEMM_NT_RESIDUAL,
        gemm_residual.gemm_residual_warp_specialized_persistent,
        PERSISTENT_TILES,
        tolerance=1e-3,
        params={"BLOCKS": PERSISTENT_BLOCKS, "EPILOGUE": "tma"},
        rung=Rung(
            "gemm_residual",
            "tma_store",
            "relu(acc + R) stored through shared memory and TMA stores, which drain while the block's next tile starts",
        ),
    ),
    Workload(
        "flash_attention_fwd",
        "flash attention forward (head dim 64): TMA K/V pipeline, wgmma for QK^T and PV, online softmax",
        ATTENTION,
        attention.flash_attention_fwd,
        Shapes({"BH": 2, "S": 128}, {"BH": 1, "S": 100}),
        tolerance=1e-2,  # P is rounded to bf16 before P @ V, as on the GPU
    ),
    # -- the MoE grouped GEMM's lineage (docs/moe.md, "The lineage"): from every expert's dense GEMM in one grid to
    # the persistent kernel, each rung adding one mechanism to the one before it
    Workload(
        "grouped_gemm_expert_grid",
        "MoE grouped GEMM as a loop of every expert's dense GEMM launched at the largest size, in one grid: a "
        "warp-specialized TMA/wgmma tile per (expert, row tile, column tile), blocks past their expert's rows exit",
        GROUPED_GEMM,
        grouped.grouped_gemm_expert_grid,
        GROUPED_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4},
        rung=Rung(
            "grouped",
            "expert_grid",
            "every expert's dense GEMM (a warp-specialized TMA/wgmma tile) in one grid bounded by the largest expert",
        ),
    ),
    Workload(
        "grouped_gemm_units",
        "MoE grouped GEMM: one block per unit of all experts' row tiles numbered together, each unit's expert found "
        "from the device-side cumulative row-tile counts by a binary search",
        GROUPED_GEMM,
        grouped.grouped_gemm_units,
        GROUPED_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4},
        rung=Rung(
            "grouped",
            "grouped_units",
            "the units of every expert's row tiles numbered together, the expert of each searched in the device-side "
            "cumulative tile counts: no block without work",
        ),
    ),
    Workload(
        "grouped_gemm_persistent",
        "MoE grouped GEMM: every expert's tiles in one persistent launch (TMA producer, wgmma consumers), experts "
        "found from device-side row-tile counts by a binary search, each expert's rows stored through a bounded "
        "window",
        GROUPED_GEMM,
        grouped.grouped_gemm_persistent,
        GROUPED_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4, "BLOCKS": PERSISTENT_BLOCKS},
        rung=Rung(
            "grouped",
            "persistent_grid",
            "a persistent grid: BLOCKS blocks walk the units, each expert's GROUP row tiles at a time, the mbarrier "
            "pipeline running on across each block's units",
        ),
    ),
    Workload(
        "grouped_gemm_tma_store",
        "grouped_gemm_persistent with each tile whose rows are all its expert's stored through shared-memory staging "
        "and TMA stores that drain while the consumers start the next unit (an expert's last tile through the "
        "bounded window)",
        GROUPED_GEMM,
        grouped.grouped_gemm_persistent,
        GROUPED_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4, "BLOCKS": PERSISTENT_BLOCKS, "EPILOGUE": "tma"},
        rung=Rung(
            "grouped",
            "tma_store",
            "full tiles through shared memory and TMA stores, which drain while the block's next unit starts",
        ),
    ),
    # -- the SwiGLU up-projection's lineage: the grouped lineage's rungs with SwiGLU in the epilogue (a family the
    # grouped GEMM's skills are admitted on, as gemm_residual is for the GEMM's)
    Workload(
        "grouped_gemm_swiglu_expert_grid",
        "MoE up-projection with SwiGLU in the epilogue, every expert's tile in one grid bounded by the largest expert "
        "(grouped_gemm_expert_grid's schedule): gate and up boxes per stage, two accumulators per consumer",
        GROUPED_SWIGLU,
        grouped.grouped_gemm_swiglu_expert_grid,
        GROUPED_SWIGLU_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4},
        rung=Rung(
            "grouped_swiglu",
            "expert_grid",
            "every expert's gated up-projection tile in one grid bounded by the largest expert",
        ),
    ),
    Workload(
        "grouped_gemm_swiglu_units",
        "MoE up-projection with SwiGLU in the epilogue, one block per unit of all experts' row tiles, each unit's "
        "expert searched in the device-side cumulative row-tile counts",
        GROUPED_SWIGLU,
        grouped.grouped_gemm_swiglu_units,
        GROUPED_SWIGLU_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4},
        rung=Rung(
            "grouped_swiglu",
            "grouped_units",
            "the units of every expert's row tiles numbered together, each unit's expert searched in the tile counts",
        ),
    ),
    Workload(
        "grouped_gemm_swiglu",
        "MoE up-projection with SwiGLU in the epilogue: the grouped kernel's schedule, gate and up boxes per stage, "
        "two accumulators per consumer, silu(gate) * up stored from f32",
        GROUPED_SWIGLU,
        grouped.grouped_gemm_swiglu,
        GROUPED_SWIGLU_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4, "BLOCKS": PERSISTENT_BLOCKS},
        rung=Rung(
            "grouped_swiglu",
            "persistent_grid",
            "a persistent grid walking the units, each expert's GROUP row tiles at a time",
        ),
    ),
    Workload(
        "grouped_gemm_swiglu_tma_store",
        "grouped_gemm_swiglu with each tile whose rows are all its expert's stored through shared-memory staging and "
        "TMA stores (an expert's last tile through the bounded window)",
        GROUPED_SWIGLU,
        grouped.grouped_gemm_swiglu,
        GROUPED_SWIGLU_TILES,
        tolerance=1e-2,  # bf16 output
        params={"BM": GROUPED_TILE_ROWS, "BN": 128, "STAGES": 4, "BLOCKS": PERSISTENT_BLOCKS, "EPILOGUE": "tma"},
        rung=Rung(
            "grouped_swiglu",
            "tma_store",
            "full tiles through shared memory and TMA stores, which drain while the block's next unit starts",
        ),
    ),
    # -- the convolution lineage (docs/conv.md, "The lineage"): the GEMM ladder's first rungs as implicit GEMMs over
    # a channels-last 3x3 convolution of 64 channels, each adding one mechanism to the one before it
    Workload(
        "conv_naive",
        "3x3 convolution (NHWC, bf16 in, f32 out), one thread per output element: each K step's input window row and "
        "weight column from global memory into registers, FMA in f32",
        CONV,
        conv_lineage.conv_naive,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung(
            "conv",
            "naive_fma",
            "one thread per output element; input window and weights from global memory; FMA in f32",
        ),
    ),
    Workload(
        "conv_smem_tiled",
        "conv_naive with the K step's input window and weight block staged in shared memory between barriers and a "
        "4x8 register micro-tile of FMAs per thread",
        CONV,
        conv_lineage.conv_smem_tiled,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung(
            "conv",
            "smem_tiling",
            "the input window and weight block staged in shared memory between barriers; register micro-tiles",
        ),
    ),
    Workload(
        "conv_mma_sync",
        "3x3 convolution as an implicit GEMM on tensor cores: shared-memory windows, ldmatrix, mma.sync.m16n8k16 on "
        "2x2 warps",
        CONV,
        conv_lineage.conv_mma_sync,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung("conv", "mma_sync", "tensor cores: ldmatrix into operand fragments and mma.sync"),
    ),
    Workload(
        "conv_cp_async",
        "conv_mma_sync with a 2-stage cp.async pipeline: the next K step's windows load during the MMAs",
        CONV,
        conv_lineage.conv_cp_async,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung("conv", "cp_async_pipeline", "a multi-stage cp.async pipeline: the next K steps load during the MMA"),
    ),
    Workload(
        "conv_swizzle",
        "conv_cp_async with its stages in XOR-swizzled shared memory: the ldmatrix reads free of bank conflicts",
        CONV,
        conv_lineage.conv_swizzle,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung("conv", "smem_swizzle", "XOR-swizzled shared memory: no bank conflicts"),
    ),
    Workload(
        "conv_tma_wgmma",
        "conv_swizzle on Hopper's TMA and wgmma, no warp specialization: each K step's input window and weight "
        "block loaded by TMA onto mbarriers (the padding TMA's zeros), multiplied by wgmma from the swizzled stages",
        CONV,
        conv_lineage.conv_tma_wgmma,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung(
            "conv",
            "tma_wgmma",
            "TMA loads completing on mbarriers and warpgroup MMAs (wgmma) from swizzled shared memory",
        ),
    ),
    Workload(
        "conv_warp_specialized",
        "conv_tma_wgmma with warp roles: a producer warpgroup (TMA) fills a ring of stages that the consumer "
        "warpgroup (wgmma) releases through empty mbarriers, the register split by setmaxnreg",
        CONV,
        conv_lineage.conv_warp_specialized,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung(
            "conv",
            "warp_specialization",
            "a producer warpgroup (TMA) and a consumer warpgroup (wgmma) with a setmaxnreg register split",
        ),
    ),
    Workload(
        "conv_warp_specialized_persistent",
        "conv_warp_specialized on a persistent grid: the SMs' blocks walk the (position tile, output channel tile) "
        "units in a grouped tile order, the mbarrier ring running on across a block's units",
        CONV,
        conv_lineage.conv_warp_specialized_persistent,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS},
        rung=Rung(
            "conv",
            "persistent_grid",
            "a persistent grid: the blocks walk the units in a grouped tile order, the pipeline running on across them",
        ),
    ),
    Workload(
        "conv_tma_store_epilogue",
        "conv_warp_specialized_persistent with each tile stored through swizzled shared-memory staging and TMA stores "
        "that drain while the consumer starts the block's next unit",
        CONV,
        conv_lineage.conv_warp_specialized_persistent,
        CONV_TILES,
        tolerance=1e-3,
        params={"C": CONV_CHANNELS, "EPILOGUE": "tma"},
        rung=Rung(
            "conv",
            "tma_store",
            "the output tile through shared memory and TMA stores, which drain while the block's next unit starts",
        ),
    ),
    # -- the attention lineage (docs/attention.md, "The lineage"): forward attention with the online softmax in every
    # rung, each adding one mechanism to the one before it
    Workload(
        "attention_naive",
        "attention forward (bf16 in, f32 out), one thread per query row: scores, running max and sum, and P V from "
        "global memory, FMA in f32, online softmax over 4-key tiles",
        ATTENTION,
        attention_lineage.attention_naive,
        ATTENTION_TILES,
        tolerance=1e-4,  # P stays in f32
        rung=Rung(
            "attention",
            "naive_fma",
            "one thread per query row; Q, K and V from global memory; FMA in f32; online softmax",
        ),
    ),
    Workload(
        "attention_smem_tiled",
        "attention_naive with the block's Q rows and each key tile's K and V staged in shared memory between "
        "barriers, S^T and O^T as 8x4 register micro-tiles of FMAs per thread, P^T through shared memory in f32",
        ATTENTION,
        attention_lineage.attention_smem_tiled,
        ATTENTION_TILES,
        tolerance=1e-4,
        rung=Rung(
            "attention",
            "smem_tiling",
            "Q, K and V tiles staged in shared memory between barriers; register micro-tiles",
        ),
    ),
    Workload(
        "attention_mma_sync",
        "attention_smem_tiled on tensor cores: S = Q K^T and O += P V by ldmatrix and mma.sync.m16n8k16 on four "
        "warps of 16 query rows, P rounded to bf16 before P V",
        ATTENTION,
        attention_lineage.attention_mma_sync,
        ATTENTION_TILES,
        tolerance=1e-2,  # P is rounded to bf16 before P V, as FlashAttention does
        rung=Rung("attention", "mma_sync", "tensor cores: ldmatrix into operand fragments and mma.sync"),
    ),
    Workload(
        "attention_cp_async",
        "attention_mma_sync with a 2-stage cp.async pipeline: the next key tile's K and V load during the MMAs",
        ATTENTION,
        attention_lineage.attention_cp_async,
        ATTENTION_TILES,
        tolerance=1e-2,  # P is rounded to bf16 before P V, as in attention_mma_sync
        rung=Rung(
            "attention",
            "cp_async_pipeline",
            "a multi-stage cp.async pipeline: the next key tile's K and V load during the MMAs",
        ),
    ),
    Workload(
        "attention_swizzle",
        "attention_cp_async with Q, K and V in 128-byte-swizzled shared memory: ldmatrix free of bank conflicts",
        ATTENTION,
        attention_lineage.attention_swizzle,
        ATTENTION_TILES,
        tolerance=1e-2,  # P is rounded to bf16 before P V, as in attention_mma_sync
        rung=Rung("attention", "smem_swizzle", "XOR-swizzled shared memory: no bank conflicts"),
    ),
    Workload(
        "attention_tma_wgmma",
        "attention_swizzle on Hopper's TMA and wgmma, no warp specialization: Q, K and V loaded by TMA onto "
        "mbarriers (key tiles STAGES - 1 ahead), S = Q K^T and O += P V by wgmma from swizzled shared memory, P "
        "through shared memory",
        ATTENTION,
        attention_lineage.attention_tma_wgmma,
        ATTENTION_TILES,
        tolerance=1e-2,  # P is rounded to bf16 before P V, as in attention_mma_sync
        rung=Rung(
            "attention",
            "tma_wgmma",
            "TMA loads completing on mbarriers and warpgroup MMAs (wgmma) from swizzled shared memory",
        ),
    ),
    Workload(
        "attention_warp_specialized",
        "attention_tma_wgmma with warp roles: a producer warpgroup (TMA) fills a ring of stages that consumer "
        "warpgroups (wgmma, the online softmax) release through empty mbarriers, the register split by setmaxnreg",
        ATTENTION,
        attention_lineage.attention_warp_specialized,
        ATTENTION_TILES,
        tolerance=1e-2,  # P is rounded to bf16 before P V, as in attention_mma_sync
        rung=Rung(
            "attention",
            "warp_specialization",
            "a producer warpgroup (TMA) and consumer warpgroups (wgmma) with a setmaxnreg register split",
        ),
    ),
    Workload(
        "attention_p_registers",
        "attention_warp_specialized with P kept in registers as the A operand of O += P V (wgmma's register-A "
        "form): no shared-memory tile for P, no barrier between the consumer warpgroups; flash_attention's loop "
        "(128-row tiles over two consumers) writing O alone",
        ATTENTION,
        attention_lineage.attention_p_registers,
        ATTENTION_TILES,
        tolerance=1e-2,  # P is rounded to bf16 before P V, as in attention_mma_sync
        rung=Rung(
            "attention",
            "register_operand",
            "P stays in registers and feeds the register-A wgmma: no shared-memory round trip",
        ),
    ),
    Workload(
        "attention_pingpong",
        "attention_p_registers with the consumer warpgroups taking turns at the tensor cores (FlashAttention-3's "
        "ping-pong): one warpgroup's softmax runs while the other's MMAs do",
        ATTENTION,
        attention_lineage.attention_p_registers,
        ATTENTION_TILES,
        tolerance=1e-2,
        params={"PINGPONG": True},
        rung=Rung("attention", "pingpong", "consumer warpgroups issue their MMAs in turns (named barriers in a ring)"),
    ),
    Workload(
        "attention_overlap",
        "attention_pingpong with each warpgroup's O += P V of the previous key tile left running while it computes "
        "this tile's softmax (FlashAttention-3's intra-warpgroup overlap; K and V on barriers of their own)",
        ATTENTION,
        attention_lineage.attention_p_registers,
        ATTENTION_TILES,
        tolerance=1e-2,
        params={"PINGPONG": True, "OVERLAP": True},
        rung=Rung(
            "attention",
            "intra_overlap",
            "P V of key tile j - 1 runs while the same warpgroup computes tile j's softmax",
        ),
    ),
)

#: Names kernels had before they were named for the mechanism they add, old -> new; `get_kernel` and
#: `task_of_kernel` accept them. The GEMM ladder's rungs 7 and 8 were named for their instructions, which rung 6
#: (`gemm_tma_wgmma`) already uses: rung 7 adds warp specialization, rung 8 a persistent grid on top of it.
OLD_NAMES: dict[str, str] = {
    "gemm_wgmma_tma": "gemm_warp_specialized",
    "gemm_wgmma_tma_persistent": "gemm_warp_specialized_persistent",
    "gemm_residual_wgmma_tma": "gemm_residual_warp_specialized",
    "gemm_residual_wgmma_tma_persistent": "gemm_residual_warp_specialized_persistent",
}
