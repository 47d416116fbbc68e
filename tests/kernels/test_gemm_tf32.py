"""The TF32 ``wgmma`` atom (issue #20): f32 operands on ``wgmma.m64nNk8.f32.tf32.tf32`` through the persistent Hopper
GEMM (``IN="f32"``, K-blocks of 32 elements: one 128-byte swizzle span). On the CPU: the interpreter multiplies what the
instruction multiplies (each f32 operand truncated to TF32, `argus.atoms.mma.tf32_operand`) for one and two consumer
warpgroups, split-K and a K that is not a K-block multiple; the kernels verify, and an MN-major f32 operand (which
TF32's ``wgmma`` cannot transpose) is refused by the verifier; they compile to ``HGMMA.64xNx8.F32.TF32`` with TMA loads
and no spills. Not yet on a GPU: whether the tensor core truncates or rounds the dropped bits is the interpreter's
model, to be checked bit for bit there."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from argus.atoms.common import SHARED_MEMORY_BUDGET
from argus.atoms.mma import tf32_operand
from argus.backend.cuda.codegen import compile_kernel
from argus.interp import run_kernel
from argus.kernels import gemm
from argus.kernels import matmul as mm
from argus.verify import verify

CONFIGS = {
    # two consumer warpgroups, partial tiles in M and N, K = 200 not a multiple of BK = 32 (TMA's zeros past K)
    "128x64, two consumers": ((150, 72, 200), dict(BM=128, BN=64, CONSUMERS=2, STAGES=2, BLOCKS=3)),
    # one consumer warpgroup, 64-row tiles, three stages
    "64x128, one consumer": ((70, 136, 96), dict(BM=64, BN=128, CONSUMERS=1, STAGES=3, BLOCKS=2)),
    # split-K: the f32 workspace (S, M, N) of the partial products
    "128x64, split 2": ((130, 64, 256), dict(BM=128, BN=64, CONSUMERS=2, STAGES=2, SPLITS=2, BLOCKS=4)),
}


def _trace(params: dict):
    return gemm.gemm_warp_specialized_persistent.trace(IN="f32", OUT="f32", BK=32, **params)


def _operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(np.float32).astype(np.float64)
    bt = rng.standard_normal((n, k)).astype(np.float32).astype(np.float64)  # B stored (N, K): K-major
    return a, bt


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_persistent_gemm_multiplies_tf32_on_the_interpreter(name: str) -> None:
    (m, n, k), params = CONFIGS[name]
    a, bt = _operands(m, n, k)
    splits = params.get("SPLITS", 1)
    c = np.full((splits, m, n) if splits > 1 else (m, n), np.nan)
    run_kernel(_trace(params), {"A": a, "B": bt, "C": c})
    c = c.sum(axis=0) if splits > 1 else c
    tf32 = tf32_operand(a) @ tf32_operand(bt).T
    exact = a @ bt.T
    scale = np.abs(exact).max()
    # the products of the truncated operands, summed in f32 (the interpreter stores the accumulator in f32 after
    # each wgmma): what the instruction computes
    assert np.abs(c - tf32).max() <= 4e-6 * scale
    # and not the f32 product: TF32 keeps 10 of f32's 23 mantissa bits (so the test fails if nothing is truncated)
    assert np.abs(c - exact).max() > 1e-4 * scale


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_tf32_gemm_verifies(name: str) -> None:
    _, params = CONFIGS[name]
    result = verify(_trace(params))
    assert result.verdict.value == "verified" and not result.errors and not result.unknowns, result.render_text()


@pytest.mark.parametrize("majors", [dict(A_MAJOR="M"), dict(B_MAJOR="N")])
def test_an_mn_major_f32_operand_is_refused_by_the_verifier(majors: dict) -> None:
    """TF32's wgmma reads K-major operands only (no imm-trans for 32-bit types): an M- or N-major f32 stage has no
    canonical layout the instruction can read."""
    result = verify(_trace(dict(BM=128, BN=128, STAGES=2, **majors)))
    assert {f.code for f in result.errors} == {"LAYOUT_WGMMA_OPERAND"}


def test_the_tf32_gemm_compiles_to_hgmma_tf32_with_tma_loads() -> None:
    compiled = compile_kernel(_trace(dict(BM=128, BN=128, STAGES=4)))
    mix = compiled.instruction_mix(modifiers=True)
    assert mix["HGMMA.64x128x8.F32.TF32"] == 4  # one K-block of 32: four k8 steps per consumer warpgroup
    assert not [op for op in mix if "GMMA" in op and "TF32" not in op]
    assert compiled.instruction_mix()["UTMALDG"] > 0
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0


# --- the planner: f32 tensors at TF32 precision (matmul(..., precision="tf32")) ------------------------------------


@pytest.mark.parametrize(
    ("shape", "config"),
    [
        ((150, 72, 200), None),  # the heuristic's plan; K not a K-block multiple
        ((130, 64, 1024), "split"),  # split-K into the f32 workspace, reduced by gemm_split_reduce
        ((70, 40, 131), None),  # K % 4 != 0: TMA cannot address the rows, the operands are zero-padded first
    ],
)
def test_the_tf32_plans_run_on_the_interpreter(shape: tuple, config: str | None) -> None:
    m, n, k = shape
    problem = mm.GemmProblem(m, n, k, mm.TF32, "f32")
    chosen = mm.GemmConfig(128, 64, 2, 2, SPLITS=2, BK=32) if config == "split" else None
    plan = mm.plan(problem, chosen)
    assert plan.config.BK == 32 and plan.config.kernel_params(plan.padded)["IN"] == "f32"
    assert plan.needs_padding == (k % 4 != 0)
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((k, n)).astype(np.float32).astype(np.float64)
    c = plan.run_on_interpreter(a, b)
    tf32 = tf32_operand(a) @ tf32_operand(b)
    scale = np.abs(tf32).max()
    assert np.abs(c - tf32).max() <= 1e-6 * scale  # the TF32 products, summed in f32
    assert np.abs(c - a @ b).max() > 1e-4 * scale  # not the f32 product (bf16x3's accuracy)


def test_the_tf32_heuristic_takes_k_blocks_of_one_span_and_fits_shared_memory() -> None:
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (512, 512, 65536), (1024, 1024, 16384)):
        problem = mm.GemmProblem(*shape, mm.TF32, "f32")
        config = mm.choose(problem)
        assert config.BK == 32 and not config.SWAP, config  # 128 bytes of f32; no swap-AB for 32-bit operands
        assert mm.shared_bytes(config, problem) <= SHARED_MEMORY_BUDGET
    # a TF32 unit costs twice a bf16 one in the tensor cores (half the rate): the model says so
    bf16, tf32 = mm.GemmProblem(4096, 4096, 4096), mm.GemmProblem(4096, 4096, 4096, mm.TF32, "f32")
    config = mm.GemmConfig(128, 256, 2, 4, BK=64)
    assert mm.estimate(tf32, replace(config, BK=32)) > 1.5 * mm.estimate(bf16, config)


def test_tf32_problems_are_refused_where_the_instruction_cannot_read_them() -> None:
    with pytest.raises(mm.GemmError, match="TF32 GEMM reads both operands K-major"):
        mm.GemmProblem(64, 64, 64, mm.TF32, "f32", b_major="N")
    with pytest.raises(mm.GemmError, match="TF32 GEMM reads both operands K-major"):
        mm.GemmProblem(64, 64, 64, mm.TF32, "f32", a_major="M")


def test_precision_is_read_off_the_call() -> None:
    a, w = torch.zeros(64, 128), torch.zeros(96, 128)
    assert mm.problem_of(a, w.t()).dtype == "f32"  # bf16x3 by default
    assert mm.problem_of(a, w.t(), precision="bf16x3").dtype == "f32"
    assert mm.problem_of(a, w.t(), precision="tf32").dtype == mm.TF32
    with pytest.raises(mm.GemmError, match="precision='fp64'"):
        mm.problem_of(a, w.t(), precision="fp64")
    with pytest.raises(mm.GemmError, match="applies to f32 inputs"):
        mm.problem_of(a.bfloat16(), w.t().bfloat16(), precision="tf32")
    with pytest.raises(mm.GemmError, match="K-major"):
        mm.problem_of(a, torch.zeros(128, 96), precision="tf32")  # b row-major (K, N): N-major
