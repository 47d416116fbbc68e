"""The library's kernels with what is needed to check them: a reference implementation, a
default small shape, a shape that is not a multiple of the tiles, and an input generator."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus.atoms.common import SMS
from argus.diagnostics import ArgusError
from argus.ir.types import bf16, round_to


class KernelLookupError(ArgusError, KeyError):
    """No library kernel of that name (code ``KERNEL_UNKNOWN``)."""


@dataclass(frozen=True)
class LibraryKernel:
    """A library kernel: `make(shape, rng)` returns all its arrays by parameter name (outputs
    zeroed), `reference(arrays)` the expected outputs by name, in float64."""

    name: str
    description: str
    kernel: Any  # an argus.lang KernelFunction
    default_shape: dict[str, int]
    partial_shape: dict[str, int]
    make: Callable[[dict[str, int], np.random.Generator], dict[str, np.ndarray]]
    reference: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    tolerance: float = 1e-4
    params: dict[str, Any] = field(default_factory=dict)
    #: The same reference written with PyTorch's own operators (torch tensors in and out, float64),
    #: imported lazily: the tests check that it agrees with `reference` and with the kernel.
    torch_reference: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(round_to(bf16, x), dtype=np.float64)


def _torch_softmax(t: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {"Y": torch.softmax(t["X"], dim=1)}


def _torch_layer_norm(t: dict[str, Any]) -> dict[str, Any]:
    import torch

    n = t["X"].shape[1]
    return {"Y": torch.nn.functional.layer_norm(t["X"], (n,), t["W"], t["Bias"], eps=1e-5)}


def _torch_attention(t: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {"O": torch.nn.functional.scaled_dot_product_attention(t["Q"], t["K"], t["V"])}


def torch_check(entry: LibraryKernel, shape: dict[str, int], seed: int = 0) -> tuple[float, float]:
    """(largest difference between the numpy and the PyTorch reference, largest difference between
    the interpreted kernel and the PyTorch reference), both relative to the output scale."""
    import torch

    from argus.interp import run_kernel

    rng = np.random.default_rng(seed)
    arrays = entry.make(shape, rng)
    tensors = {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
    want_torch = {k: v.numpy() for k, v in entry.torch_reference(tensors).items()}
    want_numpy = entry.reference({k: v.copy() for k, v in arrays.items()})
    run_kernel(entry.kernel.trace(**entry.params), arrays)
    ref_gap = kernel_gap = 0.0
    for name, want in want_torch.items():
        scale = max(1.0, float(np.abs(want).max()))
        ref_gap = max(ref_gap, float(np.abs(want_numpy[name] - want).max()) / scale)
        kernel_gap = max(kernel_gap, float(np.abs(arrays[name] - want).max()) / scale)
    return ref_gap, kernel_gap


def _vector_add() -> LibraryKernel:
    from argus.kernels.elementwise import vector_add

    def make(shape, rng):
        n = shape["N"]
        return {"A": rng.standard_normal(n), "B": rng.uniform(-4, 4, n), "C": np.zeros(n)}

    return LibraryKernel(
        "vector_add",
        "C = A + B (f32), one 16-byte vector per thread",
        vector_add,
        {"N": 4096},
        {"N": 3000},
        make,
        lambda a: {"C": a["A"] + a["B"]},
        torch_reference=lambda t: {"C": t["A"] + t["B"]},
    )


def _softmax() -> LibraryKernel:
    from argus.kernels.softmax import softmax

    def make(shape, rng):
        m, n = shape["M"], shape["N"]
        return {"X": rng.standard_normal((m, n)) * 4 + rng.uniform(-2, 2, (m, 1)), "Y": np.zeros((m, n))}

    def reference(a):
        x = a["X"]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return {"Y": e / e.sum(axis=1, keepdims=True)}

    return LibraryKernel(
        "softmax",
        "row softmax, rows of up to 128 in registers, warp-shuffle row statistics",
        softmax,
        {"M": 16, "N": 128},
        {"M": 10, "N": 100},
        make,
        reference,
        tolerance=1e-5,
        torch_reference=_torch_softmax,
    )


def _layer_norm() -> LibraryKernel:
    from argus.kernels.softmax import layer_norm

    def make(shape, rng):
        m, n = shape["M"], shape["N"]
        return {
            "X": rng.standard_normal((m, n)) * 2 + 1,
            "W": rng.uniform(0.5, 1.5, n),
            "Bias": rng.standard_normal(n) * 0.1,
            "Y": np.zeros((m, n)),
        }

    def reference(a):
        x = a["X"]
        mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        return {"Y": (x - mu) / np.sqrt(var + 1e-5) * a["W"] + a["Bias"]}

    return LibraryKernel(
        "layer_norm",
        "layer norm over rows of up to 128, statistics by warp shuffles",
        layer_norm,
        {"M": 16, "N": 128},
        {"M": 10, "N": 100},
        make,
        reference,
        tolerance=1e-4,
        torch_reference=_torch_layer_norm,
    )


def _gemm(
    name: str, description: str, attr: str, params: dict[str, Any] | None = None, module_name: str = "gemm"
) -> LibraryKernel:
    import importlib

    module = importlib.import_module(f"argus.kernels.{module_name}")

    def make(shape, rng):
        m, n, k = shape["M"], shape["N"], shape["K"]
        return {"A": _bf16(rng.standard_normal((m, k))), "B": _bf16(rng.uniform(-1, 1, (k, n))), "C": np.zeros((m, n))}

    return LibraryKernel(
        name,
        description,
        getattr(module, attr),
        {"M": 128, "N": 128, "K": 64},
        {"M": 100, "N": 72, "K": 80},
        make,
        lambda a: {"C": a["A"] @ a["B"]},
        tolerance=1e-3,
        params=dict(params or {}),
        torch_reference=lambda t: {"C": t["A"] @ t["B"]},
    )


def _gemm_hopper(
    name: str = "gemm_wgmma_tma",
    description: str = "Hopper GEMM C = A @ B^T: TMA, 128B swizzle, mbarrier pipeline, producer/consumer warpgroups, "
    "wgmma",
    module_name: str = "gemm",
    attr: str | None = None,
    params: dict[str, Any] | None = None,
    tolerance: float = 1e-3,
    n_major: bool = False,
) -> LibraryKernel:
    """A Hopper GEMM taking B as (N, K), K-major (C = A @ B^T), as TMA + wgmma kernels do natively; with `n_major`,
    B as (K, N) (``B_MAJOR="N"``: C = A @ B, as the task ``gemm`` and ``torch.matmul`` take it) and f32 C, at
    interpreter sizes whose N fills whole 64-column panels of B (and, partial, one panel in part)."""
    import importlib

    kernel = getattr(importlib.import_module(f"argus.kernels.{module_name}"), attr or name)

    def make(shape, rng):
        m, n, k = shape["M"], shape["N"], shape["K"]
        b = _bf16(rng.uniform(-1, 1, (k, n) if n_major else (n, k)))
        return {"A": _bf16(rng.standard_normal((m, k))), "B": b, "C": np.zeros((m, n))}

    if n_major:  # C = A @ B
        shapes = ({"M": 256, "N": 256, "K": 256}, {"M": 200, "N": 136, "K": 136})
        params = {**(params or {}), "B_MAJOR": "N", "OUT": "f32"}
    else:  # C = A @ B^T
        shapes = ({"M": 256, "N": 128, "K": 256}, {"M": 200, "N": 72, "K": 136})

    def product(x: dict[str, Any]) -> dict[str, Any]:  # numpy arrays and torch tensors alike
        return {"C": x["A"] @ (x["B"] if n_major else x["B"].T)}

    return LibraryKernel(
        name,
        description,
        kernel,
        *shapes,
        make,
        product,
        tolerance=tolerance,
        params=dict(params or {}),
        torch_reference=product,
    )


#: Blocks of the persistent library rungs: one per SM of an H100 SXM / H200, as on the GPU they are measured, gated
#: and walked on (session 5: at the 3 blocks they once had, so that blocks walk several tiles at interpreter sizes, a
#: GPU and the cost model put the persistent rung ~40x slower at 4096^3 and KLineage mined its step as 0.02x). The
#: kernel tests walk several tiles per block with explicit small BLOCKS (`tests/kernels/test_gemm_persistent_ws.py`).
PERSISTENT_BLOCKS = SMS


def _gemm_hopper_persistent() -> LibraryKernel:
    """`gemm_wgmma_tma_persistent` at the ladder's 128x128x64 tiles and 3 stages on one block per SM; at the
    interpreter sizes the blocks past the 2 x 2 tiles find no tile (4 K-blocks on 3 stages; the partial shape has
    2 x 2 tiles, three of them partial, and 3 K-blocks, the last one partial)."""
    entry = _gemm_hopper(
        "gemm_wgmma_tma_persistent",
        "persistent Hopper GEMM C = A @ B^T: gemm_wgmma_tma on one block per SM walking the tiles in grouped order, "
        "the mbarrier pipeline running on across each block's tiles (the producer prefetches the next tile during "
        "the epilogue)",
        "gemm_persistent_ws",
        params={"BLOCKS": PERSISTENT_BLOCKS},
    )
    return dataclasses.replace(
        entry, default_shape={"M": 256, "N": 256, "K": 256}, partial_shape={"M": 200, "N": 200, "K": 136}
    )


def _gemm_tma_store_epilogue() -> LibraryKernel:
    """The lineage's last rung: `gemm_wgmma_tma_persistent` at its library entry's parameters with one change, C
    stored through shared memory and TMA stores (EPILOGUE "tma"). The same shapes as the persistent rung: N is a
    multiple of 8 in both (the staged store needs C's rows 16-byte aligned, which the kernel assumes), and the partial
    shape still has partial tiles in M, N and K (200 = 128 + 72; 136 = 2 x 64 + 8)."""
    persistent = _gemm_hopper_persistent()
    return dataclasses.replace(
        persistent,
        name="gemm_tma_store_epilogue",
        description="gemm_wgmma_tma_persistent with C stored through two 128-byte-swizzled shared-memory chunk "
        "buffers and TMA stores that drain while the consumers start the block's next tile",
        params={**persistent.params, "EPILOGUE": "tma"},
    )


#: The expert Hopper GEMM's configuration: the tile shape and stage count measured best on all seven benchmark
#: shapes of five configurations (benchmarks/results/2026-11-21-gemm-h200.md), bf16 output as cuBLAS writes it.
GEMM_HOPPER_PARAMS: dict[str, Any] = {"BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "OUT": "bf16"}

#: The persistent expert (issue #7): the expert's tiles on `gemm_wgmma_tma_persistent`, one block per SM of an
#: H100/H200 (`PERSISTENT_BLOCKS`), tiles in grouped order 16 M-tiles at a time. GROUP chosen by measurement over
#: {4, 8, 16} at the seven benchmark shapes on an H200 (`benchmarks/results/2026-11-21-session4.md`); BLOCKS is
#: the SM count (fewer SMs, e.g. an H100 PCIe's 114, still compute the right result with some blocks waiting for an
#: SM). C goes out
#: through shared memory and TMA stores that drain while the consumers start the next tile (EPILOGUE "tma", session 5:
#: `benchmarks/results/2026-11-21-session5.md`); it needs N % 8 == 0 (C's rows 16-byte aligned), which the kernel
#: assumes, so the runtime refuses other N with the assumption's message.
GEMM_HOPPER_PERSISTENT_PARAMS: dict[str, Any] = {
    **GEMM_HOPPER_PARAMS,
    "BLOCKS": PERSISTENT_BLOCKS,
    "ORDER": "grouped",
    "GROUP": 16,
    "EPILOGUE": "tma",
}


def _gemm_residual(
    name: str, description: str, nt: bool = False, attr: str | None = None, params: dict[str, Any] | None = None
) -> LibraryKernel:
    """A rung of the held-out family C = relu(A @ B + R) (`argus.kernels.gemm_residual`): f32 R (M, N); B is
    (K, N), or (N, K) with `nt` (C = relu(A @ B^T + R)), at the sizes and parameters of the GEMM rung it mirrors
    (`attr`: the kernel, when the entry's name is not its own)."""
    from argus.kernels import gemm_residual

    def make(shape, rng):
        m, n, k = shape["M"], shape["N"], shape["K"]
        b_shape = (n, k) if nt else (k, n)
        return {
            "A": _bf16(rng.standard_normal((m, k))),
            "B": _bf16(rng.uniform(-1, 1, b_shape)),
            "R": rng.standard_normal((m, n)).astype(np.float32).astype(np.float64) * 4,  # ReLU clamps about half
            "C": np.zeros((m, n)),
        }

    def reference(a):
        b = a["B"].T if nt else a["B"]
        return {"C": np.maximum(a["A"] @ b + a["R"], 0.0)}

    def torch_reference(t):
        import torch

        b = t["B"].T if nt else t["B"]
        return {"C": torch.relu(t["A"] @ b + t["R"])}

    default, partial = (
        ({"M": 256, "N": 128, "K": 256}, {"M": 200, "N": 72, "K": 136})
        if nt
        else ({"M": 128, "N": 128, "K": 64}, {"M": 100, "N": 72, "K": 80})
    )
    if params and "BLOCKS" in params:  # the persistent rungs: the shapes of theirs (blocks walking several tiles)
        persistent = _gemm_hopper_persistent()
        default, partial = persistent.default_shape, persistent.partial_shape
    return LibraryKernel(
        name,
        description,
        getattr(gemm_residual, attr or name),
        default,
        partial,
        make,
        reference,
        tolerance=1e-3,
        params=dict(params or {}),
        torch_reference=torch_reference,
    )


def _attention() -> LibraryKernel:
    from argus.kernels.attention import flash_attention_fwd

    def make(shape, rng):
        bh, s = shape["BH"], shape["S"]
        q = _bf16(rng.standard_normal((bh, s, 64)))
        k = _bf16(rng.standard_normal((bh, s, 64)))
        v = _bf16(rng.uniform(-1, 1, (bh, s, 64)))
        return {"Q": q, "K": k, "V": v, "O": np.zeros((bh, s, 64))}

    def reference(a):
        scores = a["Q"] @ np.swapaxes(a["K"], 1, 2) / np.sqrt(64.0)
        p = np.exp(scores - scores.max(axis=2, keepdims=True))
        p = p / p.sum(axis=2, keepdims=True)
        return {"O": p @ a["V"]}

    return LibraryKernel(
        "flash_attention_fwd",
        "flash attention forward (head dim 64): TMA K/V pipeline, wgmma for QK^T and PV, online softmax",
        flash_attention_fwd,
        {"BH": 2, "S": 128},
        {"BH": 1, "S": 100},
        make,
        reference,
        tolerance=1e-2,  # P is rounded to bf16 before P @ V, as on the GPU
        torch_reference=_torch_attention,
    )


_FACTORIES: dict[str, Callable[[], LibraryKernel]] = {
    "vector_add": _vector_add,
    "softmax": _softmax,
    "layer_norm": _layer_norm,
    "gemm_naive": lambda: _gemm(
        "gemm_naive",
        "bf16 GEMM, one thread per output element: A and B from global memory into registers, FMA in f32",
        "gemm_naive",
        module_name="gemm_lineage",
    ),
    "gemm_smem_tiled": lambda: _gemm(
        "gemm_smem_tiled",
        "gemm_naive with shared-memory tiles between barriers and an 8x8 register micro-tile of FMAs per thread",
        "gemm_smem_tiled",
        module_name="gemm_lineage",
    ),
    "gemm_mma_sync": lambda: _gemm(
        "gemm_mma_sync", "bf16 GEMM: shared-memory tiles, ldmatrix, mma.sync.m16n8k16 on 2x2 warps", "gemm_mma_sync"
    ),
    "gemm_cp_async": lambda: _gemm("gemm_cp_async", "gemm_mma_sync with a 2-stage cp.async pipeline", "gemm_cp_async"),
    "gemm_cp_async_swizzled": lambda: _gemm(
        "gemm_cp_async_swizzled",
        "gemm_cp_async with 64/128-byte swizzled shared memory: ldmatrix free of bank conflicts",
        "gemm_cp_async_swizzled",
        module_name="gemm_lineage",
    ),
    "gemm_tma_wgmma": lambda: _gemm_hopper(
        "gemm_tma_wgmma",
        "Hopper GEMM C = A @ B^T: TMA into 128B-swizzled stages on mbarriers and wgmma, no warp specialization "
        "(both warpgroups load and compute in program order)",
        "gemm_lineage",
    ),
    "gemm_wgmma_tma": _gemm_hopper,
    "gemm_hopper": lambda: _gemm_hopper(
        "gemm_hopper",
        "the expert Hopper GEMM: gemm_wgmma_tma with 128x256x64 tiles, 4 stages (one wgmma group kept in flight), "
        "bf16 C",
        attr="gemm_wgmma_tma",
        params=GEMM_HOPPER_PARAMS,
        tolerance=5e-3,  # C rounded to bf16 (2^-9 relative) after f32 accumulation
    ),
    "gemm_wgmma_tma_persistent": lambda: _gemm_hopper_persistent(),
    "gemm_tma_store_epilogue": _gemm_tma_store_epilogue,
    "gemm_hopper_persistent": lambda: _gemm_hopper(
        "gemm_hopper_persistent",
        "the persistent expert Hopper GEMM: gemm_wgmma_tma_persistent with 128x256x64 tiles, 4 stages, one block "
        f"per SM ({SMS}) walking the tiles 16 M-tiles at a time, the pipeline running on across tiles, bf16 C stored "
        "through shared memory by TMA stores that drain while the next tile's MMAs run",
        "gemm_persistent_ws",
        attr="gemm_wgmma_tma_persistent",
        params=GEMM_HOPPER_PERSISTENT_PARAMS,
        tolerance=5e-3,  # C rounded to bf16 (2^-9 relative) after f32 accumulation
    ),
    "gemm_hopper_nn": lambda: _gemm_hopper(
        "gemm_hopper_nn",
        "the expert Hopper GEMM with B given as (K, N) (C = A @ B): gemm_wgmma_tma with 128x256x64 tiles, 4 stages, "
        "B staged in four 64-column panels (one TMA box each) and read by wgmma transposed; f32 C",
        "gemm",
        "gemm_wgmma_tma",
        GEMM_HOPPER_PARAMS,
        n_major=True,
    ),
    "gemm_hopper_persistent_nn": lambda: _gemm_hopper(
        "gemm_hopper_persistent_nn",
        "the persistent expert Hopper GEMM with B given as (K, N) (C = A @ B): gemm_wgmma_tma_persistent with the "
        "expert's tiles, blocks, tile order and TMA-store epilogue, B staged in 64-column panels (one TMA box each) "
        "and read by wgmma transposed; f32 C",
        "gemm_persistent_ws",
        "gemm_wgmma_tma_persistent",
        GEMM_HOPPER_PERSISTENT_PARAMS,
        n_major=True,
    ),
    "gemm_persistent": lambda: _gemm(
        "gemm_persistent",
        "gemm_mma_sync on a persistent grid (grouped tile order); 3 blocks here so each walks several tiles",
        "gemm_persistent",
        params={"BLOCKS": 3},
    ),
    "flash_attention_fwd": _attention,
    # the held-out family C = relu(A @ B + R): the GEMM lineage's rungs with a fused residual + ReLU epilogue
    "gemm_residual_naive": lambda: _gemm_residual(
        "gemm_residual_naive", "relu(A @ B + R), one thread per output element, FMA in f32 (gemm_naive + epilogue)"
    ),
    "gemm_residual_smem_tiled": lambda: _gemm_residual(
        "gemm_residual_smem_tiled",
        "relu(A @ B + R): shared-memory tiles and an 8x8 FMA micro-tile per thread (gemm_smem_tiled + epilogue)",
    ),
    "gemm_residual_mma_sync": lambda: _gemm_residual(
        "gemm_residual_mma_sync", "relu(A @ B + R): ldmatrix and mma.sync on 2x2 warps (gemm_mma_sync + epilogue)"
    ),
    "gemm_residual_cp_async": lambda: _gemm_residual(
        "gemm_residual_cp_async", "relu(A @ B + R): a 2-stage cp.async pipeline (gemm_cp_async + epilogue)"
    ),
    "gemm_residual_cp_async_swizzled": lambda: _gemm_residual(
        "gemm_residual_cp_async_swizzled",
        "relu(A @ B + R): cp.async into swizzled shared memory (gemm_cp_async_swizzled + epilogue)",
    ),
    "gemm_residual_tma_wgmma": lambda: _gemm_residual(
        "gemm_residual_tma_wgmma",
        "relu(A @ B^T + R): TMA and wgmma in program order (gemm_tma_wgmma + epilogue)",
        nt=True,
    ),
    "gemm_residual_wgmma_tma": lambda: _gemm_residual(
        "gemm_residual_wgmma_tma",
        "relu(A @ B^T + R): producer/consumer warpgroups, TMA, wgmma, setmaxnreg (gemm_wgmma_tma + epilogue)",
        nt=True,
    ),
    "gemm_residual_wgmma_tma_persistent": lambda: _gemm_residual(
        "gemm_residual_wgmma_tma_persistent",
        "relu(A @ B^T + R) on a persistent grid walking the tiles in grouped order (gemm_wgmma_tma_persistent + "
        "epilogue)",
        nt=True,
        params={"BLOCKS": PERSISTENT_BLOCKS},
    ),
    "gemm_residual_tma_store_epilogue": lambda: _gemm_residual(
        "gemm_residual_tma_store_epilogue",
        "relu(A @ B^T + R) written into the accumulator and stored through shared memory and TMA stores "
        "(gemm_tma_store_epilogue + epilogue)",
        nt=True,
        attr="gemm_residual_wgmma_tma_persistent",
        params={"BLOCKS": PERSISTENT_BLOCKS, "EPILOGUE": "tma"},
    ),
}


@dataclass(frozen=True)
class LineageStep:
    """One rung of a kernel lineage: a library kernel and the one mechanism it adds to the rung before it
    (`mechanism` is a stable id, `adds` says what it is in a line)."""

    kernel: str
    mechanism: str
    adds: str


#: Kernel lineages, naive first: each rung adds exactly one mechanism to the one before it (docs/gemm.md). The
#: GEMM ladder is the issue's, complete: after warp specialization a persistent grid walking the tiles in grouped
#: order (`gemm_wgmma_tma_persistent`), then the epilogue through TMA stores (`gemm_tma_store_epilogue`, the same
#: kernel and parameters with EPILOGUE "tma"). Both run 3 blocks at their library parameters (interpreter sizes); the
#: persistent expert `gemm_hopper_persistent` is the last rung at the expert's tiles and one block per SM.
_LINEAGES: dict[str, tuple[LineageStep, ...]] = {
    "gemm": (
        LineageStep("gemm_naive", "naive_fma", "one thread per output element; A and B from global memory; FMA in f32"),
        LineageStep(
            "gemm_smem_tiled",
            "smem_tiling",
            "block tiles of A and B staged in shared memory between barriers; a register micro-tile per thread",
        ),
        LineageStep("gemm_mma_sync", "mma_sync", "tensor cores: ldmatrix into operand fragments and mma.sync"),
        LineageStep(
            "gemm_cp_async", "cp_async_pipeline", "a multi-stage cp.async pipeline: the next tiles load during the MMA"
        ),
        LineageStep("gemm_cp_async_swizzled", "smem_swizzle", "XOR-swizzled shared memory: no bank conflicts"),
        LineageStep(
            "gemm_tma_wgmma",
            "tma_wgmma",
            "TMA loads completing on mbarriers and warpgroup MMAs (wgmma) from swizzled shared memory",
        ),
        LineageStep(
            "gemm_wgmma_tma",
            "warp_specialization",
            "a producer warpgroup (TMA) and consumer warpgroups (wgmma) with a setmaxnreg register split",
        ),
        LineageStep(
            "gemm_wgmma_tma_persistent",
            "persistent_grid",
            "a persistent grid: BLOCKS blocks walk the output tiles in grouped order, the mbarrier pipeline running "
            "on across each block's tiles",
        ),
        LineageStep(
            "gemm_tma_store_epilogue",
            "tma_store",
            "the epilogue through shared memory and TMA stores, which drain while the block's next tile starts",
        ),
    ),
    # Held out from skill mining: the GEMM rungs with a fused residual + ReLU epilogue, one rung per mechanism of
    # "gemm" under the same mechanism names (so `argus.lineage.mechanisms.RUNGS` names its moves).
    "gemm_residual": (
        LineageStep(
            "gemm_residual_naive",
            "naive_fma",
            "one thread per output element; A and B from global memory; FMA in f32; R added and ReLU in registers",
        ),
        LineageStep(
            "gemm_residual_smem_tiled",
            "smem_tiling",
            "block tiles of A and B staged in shared memory between barriers; a register micro-tile per thread",
        ),
        LineageStep("gemm_residual_mma_sync", "mma_sync", "tensor cores: ldmatrix into operand fragments and mma.sync"),
        LineageStep(
            "gemm_residual_cp_async",
            "cp_async_pipeline",
            "a multi-stage cp.async pipeline: the next tiles load during the MMA",
        ),
        LineageStep("gemm_residual_cp_async_swizzled", "smem_swizzle", "XOR-swizzled shared memory: no bank conflicts"),
        LineageStep(
            "gemm_residual_tma_wgmma",
            "tma_wgmma",
            "TMA loads completing on mbarriers and warpgroup MMAs (wgmma) from swizzled shared memory",
        ),
        LineageStep(
            "gemm_residual_wgmma_tma",
            "warp_specialization",
            "a producer warpgroup (TMA) and consumer warpgroups (wgmma) with a setmaxnreg register split",
        ),
        LineageStep(
            "gemm_residual_wgmma_tma_persistent",
            "persistent_grid",
            "a persistent grid: BLOCKS blocks walk the output tiles in grouped order, the mbarrier pipeline running "
            "on across each block's tiles",
        ),
        LineageStep(
            "gemm_residual_tma_store_epilogue",
            "tma_store",
            "relu(acc + R) stored through shared memory and TMA stores, which drain while the block's next tile starts",
        ),
    ),
}


def lineage(family: str) -> tuple[LineageStep, ...]:
    """The lineage of `family` (``"gemm"``, ``"gemm_residual"``), in order from the naive kernel to the expert one;
    raises `KernelLookupError` ``LINEAGE_UNKNOWN`` for a family without one."""
    if family not in _LINEAGES:
        raise KernelLookupError(
            "LINEAGE_UNKNOWN", f"no kernel lineage named {family!r}", f"one of: {', '.join(_LINEAGES)}"
        )
    return _LINEAGES[family]


def lineages() -> tuple[str, ...]:
    """The families that have a lineage."""
    return tuple(_LINEAGES)


def all_kernels() -> list[LibraryKernel]:
    """Every library kernel, in a stable order."""
    return [f() for f in _FACTORIES.values()]


def get_kernel(name: str) -> LibraryKernel:
    if name not in _FACTORIES:
        import difflib

        close = difflib.get_close_matches(name, list(_FACTORIES), n=1)
        raise KernelLookupError(
            "KERNEL_UNKNOWN",
            f"no library kernel named {name!r}",
            f"did you mean {close[0]!r}?" if close else f"one of: {', '.join(_FACTORIES)}",
        )
    return _FACTORIES[name]()


def check_on_interpreter(entry: LibraryKernel, shape: dict[str, int], seed: int = 0) -> float:
    """Run `entry` on the interpreter at `shape`; return the largest error relative to the
    reference's scale (0 when exact). Raises nothing for a mismatch: the caller decides."""
    from argus.interp import SCHEDULES, has_roles, run_kernel
    from argus.interp.machine import check_assumptions, check_memory

    kernel = entry.kernel.trace(**entry.params)
    check_assumptions(kernel, shape)  # sizes the kernel excludes are refused, with the assumption
    check_memory(kernel, shape)  # before the inputs are built: a size too large is refused, with the bytes needed
    worst = 0.0
    for schedule in SCHEDULES if has_roles(kernel) else SCHEDULES[:1]:  # warp roles: every schedule
        rng = np.random.default_rng(seed)
        arrays = entry.make(shape, rng)
        expected = entry.reference({k: v.copy() for k, v in arrays.items()})
        run_kernel(kernel, arrays, schedule)
        for name, want in expected.items():
            got = arrays[name]
            if not np.all(np.isfinite(got)):
                return float("inf")
            scale = max(1.0, float(np.abs(want).max()))
            worst = max(worst, float(np.abs(got - want).max()) / scale)
    return worst


def load(spec: str) -> Any:
    """A library kernel by name, or ``FILE.py:NAME`` (a `LibraryKernel` or an ``@argus.kernel``
    defined in that file)."""
    if ":" not in spec or not spec.split(":", 1)[0].endswith(".py"):
        return get_kernel(spec)
    import importlib.util
    import pathlib

    path_text, attr = spec.rsplit(":", 1)
    path = pathlib.Path(path_text)
    if not path.is_file():
        raise KernelLookupError("KERNEL_FILE", f"no such file: {path}", "give FILE.py:function with an existing file")
    module_spec = importlib.util.spec_from_file_location(f"argus_user_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise KernelLookupError("KERNEL_FILE", f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module  # as an import does: torch.compile and pickle look modules up by name
    try:
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_spec.name, None)
            raise
    except SyntaxError as e:
        raise KernelLookupError(
            "KERNEL_FILE_SYNTAX",
            f"{e.filename or path}:{e.lineno}: {e.msg}\n    {(e.text or '').rstrip()}",
            "fix the syntax error at that line",
        ) from None
    except ArgusError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        import traceback

        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == str(path)]
        where = f"{path}:{frames[-1].lineno}: " if frames else f"{path}: "
        raise KernelLookupError(
            "KERNEL_FILE_IMPORT",
            f"{where}importing the file raised {type(e).__name__}: {e}",
            "run `python FILE.py` to see the full error",
        ) from None
    if not hasattr(module, attr):
        raise KernelLookupError("KERNEL_UNKNOWN", f"{path} defines no {attr!r}")
    return getattr(module, attr)


def parse_shape(text: str) -> dict[str, int]:
    """``"M=128,N=64"`` -> ``{"M": 128, "N": 64}``."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if not name.isidentifier() or not value.strip().isdigit() or int(value) < 1:
            raise KernelLookupError(
                "KERNEL_BAD_SHAPE", f"cannot read {part!r} in shape {text!r}", "write NAME=VALUE pairs, e.g. M=128,N=64"
            )
        out[name] = int(value)
    return out
