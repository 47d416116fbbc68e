"""The interpreter is faithful enough to fail on real bugs: each deliberately broken variant of a
correct kernel gives results that differ from the reference (and the correct kernel does not)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from argus.interp import run_kernel
from argus.ir.nodes import Reduce
from argus.ir.types import bf16, round_to
from argus.kernels import get_kernel
from tests.interp import kernels_broken as broken

SHAPE = {"M": 64, "N": 64, "K": 96}


def _gemm_error(kernel) -> float:
    rng = np.random.default_rng(3)
    a = np.asarray(round_to(bf16, rng.standard_normal((SHAPE["M"], SHAPE["K"]))), dtype=np.float64)
    b = np.asarray(round_to(bf16, rng.standard_normal((SHAPE["K"], SHAPE["N"]))), dtype=np.float64)
    c = np.zeros((SHAPE["M"], SHAPE["N"]))
    run_kernel(kernel, {"A": a, "B": b, "C": c})
    err = np.abs(c - a @ b)
    return float("inf") if not np.isfinite(err).all() else float(err.max())


def test_the_correct_gemms_pass_at_this_shape() -> None:
    assert _gemm_error(get_kernel("gemm_mma_sync").kernel.trace()) < 1e-3
    assert _gemm_error(get_kernel("gemm_cp_async").kernel.trace()) < 1e-3
    assert _gemm_error(broken.gemm_forced_ldmatrix_variants_that_are_right().trace()) < 1e-3


@pytest.mark.parametrize(
    "make",
    [
        lambda: broken.gemm_missing_wait.trace(),
        lambda: broken.gemm_wrong_stage.trace(),
        lambda: broken.gemm_off_by_one_tile().trace(),
        lambda: broken.gemm_swizzle_mismatch().trace(),
        lambda: broken.gemm_wrong_fragment_layout().trace(),
        lambda: broken.gemm_transposed_ldmatrix().trace(),
    ],
    ids=[
        "missing cp.async wait",
        "wrong pipeline stage",
        "off-by-one tile origin",
        "swizzle mismatch",
        "wrong mma fragment layout",
        "transposed ldmatrix misuse",
    ],
)
def test_broken_gemm_gives_wrong_numbers(make) -> None:
    assert _gemm_error(make()) > 1e-2


def test_missing_shuffle_gives_wrong_softmax() -> None:
    entry = get_kernel("softmax")
    kernel = entry.kernel.trace()
    body = tuple(
        dataclasses.replace(s, shuffle_lanes=s.shuffle_lanes[:-1]) if isinstance(s, Reduce) else s for s in kernel.body
    )
    broken_kernel = dataclasses.replace(kernel, body=body)
    rng = np.random.default_rng(0)
    arrays = entry.make(entry.default_shape, rng)
    want = entry.reference({k: v.copy() for k, v in arrays.items()})["Y"]
    run_kernel(broken_kernel, arrays)
    assert np.abs(arrays["Y"] - want).max() > 1e-2


def test_unmasked_softmax_fails_on_partial_rows() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 100)) - 3.0  # all-negative rows: a masked 0 would win the max
    y = np.zeros_like(x)
    run_kernel(broken.softmax_unmasked.trace(), {"X": x, "Y": y})
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() > 1e-2


HOPPER = {"M": 128, "N": 64, "K": 192}


def _hopper_error(kernel) -> float:
    """The worst error over both warp-role schedules; a deadlock counts as infinitely wrong."""
    from argus.interp import SCHEDULES, InterpError

    worst = 0.0
    for schedule in SCHEDULES:
        rng = np.random.default_rng(5)
        a = np.asarray(round_to(bf16, rng.standard_normal((HOPPER["M"], HOPPER["K"]))), dtype=np.float64)
        b = np.asarray(round_to(bf16, rng.standard_normal((HOPPER["N"], HOPPER["K"]))), dtype=np.float64)
        c = np.zeros((HOPPER["M"], HOPPER["N"]))
        try:
            run_kernel(kernel, {"A": a, "B": b, "C": c}, schedule)
        except InterpError as e:
            assert e.code == "INTERP_DEADLOCK", e
            return float("inf")
        err = np.abs(c - a @ b.T)
        worst = max(worst, float("inf") if not np.isfinite(err).all() else float(err.max()))
    return worst


def test_correct_hopper_pipeline_passes() -> None:
    assert _hopper_error(broken.hopper_correct().trace()) < 1e-3


@pytest.mark.parametrize(
    "make",
    [broken.hopper_missing_mbarrier_wait, broken.hopper_wrong_phase_bit, broken.hopper_wrong_wgmma_fragment_layout],
    ids=["missing mbarrier wait", "wrong phase bit", "wrong wgmma fragment layout"],
)
def test_broken_hopper_gemm_gives_wrong_numbers(make) -> None:
    assert _hopper_error(make().trace()) > 1e-2


def test_wrong_expect_bytes_is_caught() -> None:
    """Announcing fewer bytes than the TMA loads bring completes a phase early (the consumer reads
    a stage whose data has not all landed) or leaves the pipeline hanging; either way it is caught."""
    assert _hopper_error(broken.hopper_wrong_expect_bytes().trace()) > 1e-2


def test_missing_wait_reads_poison_when_the_consumer_runs_first() -> None:
    from argus.interp import InterpError

    kernel = broken.hopper_missing_mbarrier_wait().trace()
    rng = np.random.default_rng(5)
    a = rng.standard_normal((HOPPER["M"], HOPPER["K"]))
    b = rng.standard_normal((HOPPER["N"], HOPPER["K"]))
    c = np.zeros((HOPPER["M"], HOPPER["N"]))
    try:
        run_kernel(kernel, {"A": a, "B": b, "C": c}, "reversed")
    except InterpError as e:  # it may also hang later, when the producer finds no free stage
        assert e.code == "INTERP_DEADLOCK"
    else:
        assert not np.isfinite(c).all()
