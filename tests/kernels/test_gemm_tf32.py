"""The TF32 ``wgmma`` atom (issue #20): f32 operands on ``wgmma.m64nNk8.f32.tf32.tf32`` through the persistent Hopper
GEMM (``IN="f32"``, K-blocks of 32 elements: one 128-byte swizzle span). On the CPU: the interpreter multiplies what the
instruction multiplies (each f32 operand truncated to TF32, `argus.atoms.mma.tf32_operand`) for one and two consumer
warpgroups, split-K and a K that is not a K-block multiple; the kernels verify, and an MN-major f32 operand (which
TF32's ``wgmma`` cannot transpose) is refused by the verifier; they compile to ``HGMMA.64xNx8.F32.TF32`` with TMA loads
and no spills. Not yet on a GPU: whether the tensor core truncates or rounds the dropped bits is the interpreter's
model, to be checked bit for bit there."""

from __future__ import annotations

import numpy as np
import pytest

from argus.atoms.mma import tf32_operand
from argus.backend.cuda.codegen import compile_kernel
from argus.interp import run_kernel
from argus.kernels import gemm
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
