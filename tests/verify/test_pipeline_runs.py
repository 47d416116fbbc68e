# ruff: noqa: F821, UP037, B023 -- a DSL kernel: shape symbols (M, N, K) injected by the tracer, string shapes, tag lambdas
"""A TMA pipeline outside warp roles that runs once per iteration of an enclosing loop (a block walking its output
tiles one after another, the mbarrier rotation running on across them: ``T.pipeline(k_tiles, start=bn * k_tiles)``):
the wait's parity is checked against its step in the whole rotation (`argus.verify.checks.tma_order`,
`_numbered_step`), where before such a kernel was `unknown` (`UNKNOWN_MBARRIER_ORDER`). A wait whose parity counts
the iteration of its own run only is a violation with a witness; runs not numbered as one rotation stay unknown."""

from __future__ import annotations

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.interp import run_kernel
from argus.verify import verify


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def walked_gemm(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 64,
    STAGES: int = 2,
    BUG: str = "",
):
    """C = A @ B^T, a block per row tile walking the column tiles in a loop, one TMA + wgmma pipeline a column tile
    whose stages and phases run on across them (step ``bn * k_tiles + k``). BUG "local_phase": the wait's parity
    counts k alone; "short_start": the runs are numbered one K-block short."""
    T.assume("K % 8 == 0")
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
        k_tiles = T.cdiv(K, BK)
        stage_bytes = (BM + BN) * BK * 2

        def load(bn, k, s):  # noqa: ANN001, ANN202
            T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
            T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
            T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])

        for bn in T.serial(T.cdiv(N, BN)):
            base = bn * (k_tiles - 1) if BUG == "short_start" else bn * k_tiles
            T.fill(acc, 0.0)
            for t in range(STAGES - 1):
                with T.if_(k_tiles > t):
                    load(bn, t, (base + t) % STAGES)
            for k, s in T.pipeline(k_tiles, stages=STAGES, start=base):
                nxt = k + (STAGES - 1)
                with T.if_(nxt < k_tiles):
                    load(bn, nxt, (base + nxt) % STAGES)
                step = k if BUG == "local_phase" else base + k
                T.mbarrier_wait(full[s], phase=(step // STAGES) % 2)
                T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
                T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
                T.gemm(sA[s], sB[s].T, acc)
                T.barrier()
            T.copy(acc, C.tile((bm, bn), (BM, BN)))


def _parity_findings(result) -> list:  # noqa: ANN001
    return [f for f in result.findings if f.code in ("MBARRIER_PHASE", "UNKNOWN_MBARRIER_ORDER")]


def test_a_pipeline_whose_runs_continue_one_rotation_verifies() -> None:
    result = verify(walked_gemm.trace())
    assert result.verdict.value == "verified", [(f.code, f.message) for f in result.findings]
    assert not _parity_findings(result)
    parity = [c for c in result.checks if c.check == "TMA wait parity"]
    assert parity and all(c.verdict.value == "verified" for c in parity)


def test_the_walked_pipeline_computes_the_product_on_the_interpreter() -> None:
    """Three column tiles of three K-blocks each (the last partial), three stages: every output element written, the
    product within bf16 rounding of the operands."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((70, 200))
    b = rng.standard_normal((136, 200))
    c = np.full((70, 136), np.nan, np.float32)
    run_kernel(walked_gemm.trace(STAGES=3), {"A": a, "B": b, "C": c})
    assert not np.isnan(c).any()
    assert np.abs(c - a @ b.T).max() <= 0.02 * np.abs(a @ b.T).max()


def test_a_parity_that_counts_its_own_run_only_is_a_violation() -> None:
    result = verify(walked_gemm.trace(BUG="local_phase"))
    phase = [f for f in result.findings if f.code == "MBARRIER_PHASE"]
    assert phase and phase[0].verdict.value == "violated", [(f.code, f.message) for f in result.findings]
    assert phase[0].counterexample is not None and "bn" in phase[0].counterexample.loops


@pytest.mark.parametrize("bug", ["short_start"])
def test_runs_not_numbered_as_one_rotation_stay_unknown(bug: str) -> None:
    result = verify(walked_gemm.trace(BUG=bug))
    assert result.verdict.value != "verified"
    assert any(f.code == "UNKNOWN_MBARRIER_ORDER" for f in result.findings), [f.code for f in result.findings]
