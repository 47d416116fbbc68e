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


@pytest.mark.parametrize(
    "make",
    [
        lambda: broken.gemm_missing_wait.trace(),
        lambda: broken.gemm_wrong_stage.trace(),
        lambda: broken.gemm_off_by_one_tile().trace(),
        lambda: broken.gemm_swizzle_mismatch().trace(),
        lambda: broken.gemm_wrong_fragment_layout().trace(),
    ],
    ids=[
        "missing cp.async wait",
        "wrong pipeline stage",
        "off-by-one tile origin",
        "swizzle mismatch",
        "wrong mma fragment layout",
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
