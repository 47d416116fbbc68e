"""Output comparison: per-dtype tolerances, the element / norm / NaN-Inf checks, and what a zero output or a
uniformly slightly-wrong output gets."""

from __future__ import annotations

import pytest
import torch

from argus.eval.tolerance import TOLERANCES, compare, lowest_precision, tolerance_for


def test_tolerances_are_kernelbench_s() -> None:
    assert TOLERANCES["float32"] == (1e-4, 1e-4)
    assert TOLERANCES["bfloat16"] == (1e-2, 1e-2)
    assert TOLERANCES["float16"] == (1e-2, 1e-2)
    assert tolerance_for(torch.bfloat16).atol == 1e-2
    assert lowest_precision([torch.float32, torch.bfloat16, torch.int64]) == torch.bfloat16
    assert lowest_precision([torch.int32]) is None


def test_identical_outputs_pass_and_report_zero_error() -> None:
    ref = torch.randn(16, 16, dtype=torch.float64)
    c = compare(ref.float(), ref, tolerance_for(torch.float32))
    assert c.ok, c.reason
    assert c.details["max_abs_err"] < 1e-6


def test_one_element_out_of_tolerance_is_named() -> None:
    ref = torch.ones(4, 8, dtype=torch.float64)
    out = ref.float().clone()
    out[2, 5] += 1e-2
    c = compare(out, ref, tolerance_for(torch.float32))
    assert not c.ok and c.code == "CORRECT_MISMATCH"
    assert c.details["index"] == [2, 5]
    assert c.details["mismatched"] == 1


def test_error_within_each_element_bound_but_not_in_norm_fails() -> None:
    # every element is off by 1.5e-4 relative: inside atol*rms + rtol*|ref| = 2e-4, outside the 1e-4 norm bound
    ref = torch.ones(64, dtype=torch.float64)
    out = (ref * (1 + 1.5e-4)).float()
    c = compare(out, ref, tolerance_for(torch.float32))
    assert not c.ok
    assert "relative error norm" in c.reason
    assert c.details["rel_norm"] == pytest.approx(1.5e-4, rel=1e-2)


def test_all_zero_softmax_fails_though_kernelbench_allclose_accepts_it() -> None:
    # a softmax over long rows: every probability is far below KernelBench's atol of 1e-4
    x = torch.rand(4, 65536, dtype=torch.float64)
    ref = torch.softmax(x, dim=1)
    zeros = torch.zeros(4, 65536)
    assert torch.allclose(zeros.double(), ref, atol=1e-4, rtol=1e-4)  # the hack works against plain allclose
    c = compare(zeros, ref, tolerance_for(torch.float32))
    assert not c.ok and c.code == "CORRECT_MISMATCH"
    with_inputs = compare(zeros, ref, tolerance_for(torch.float32), input_scale=0.58)  # torch.rand's RMS
    assert not with_inputs.ok and "relative error norm" in with_inputs.reason
    honest = compare(torch.softmax(x.float(), dim=1), ref, tolerance_for(torch.float32))
    assert honest.ok, honest.reason


def test_bf16_sized_error_fails_an_fp32_task() -> None:
    ref = torch.randn(256, dtype=torch.float64)
    out = ref.to(torch.bfloat16).float()  # rounding error ~ 2^-9 relative
    assert not compare(out, ref, tolerance_for(torch.float32)).ok
    assert compare(out, ref, tolerance_for(torch.bfloat16)).ok


def test_nan_only_where_the_reference_has_nan() -> None:
    ref = torch.tensor([1.0, float("nan"), 3.0], dtype=torch.float64)
    assert compare(torch.tensor([1.0, float("nan"), 3.0]), ref, tolerance_for(torch.float32)).ok
    c = compare(torch.tensor([1.0, 2.0, 3.0]), ref, tolerance_for(torch.float32))
    assert not c.ok and c.code == "CORRECT_NONFINITE"
    poisoned = compare(torch.tensor([float("nan"), float("nan"), 3.0]), ref, tolerance_for(torch.float32))
    assert not poisoned.ok and poisoned.code == "CORRECT_NONFINITE" and poisoned.details["index"] == [0]


def test_inf_must_match_in_place_and_sign() -> None:
    ref = torch.tensor([float("inf"), -1.0], dtype=torch.float64)
    tol = tolerance_for(torch.float32)
    assert compare(torch.tensor([float("inf"), -1.0]), ref, tol).ok
    assert not compare(torch.tensor([float("-inf"), -1.0]), ref, tol).ok
    assert not compare(torch.tensor([3.0e38, -1.0]), ref, tol).ok
    assert not compare(torch.tensor([float("inf"), float("inf")]), ref, tol).ok


def test_inf_where_the_reference_overflows_the_output_dtype_matches() -> None:
    ref = torch.tensor([1e39, 2.0], dtype=torch.float64)  # finite in float64, beyond float32's range
    assert compare(torch.tensor([float("inf"), 2.0]), ref, tolerance_for(torch.float32)).ok


def test_integer_outputs_are_exact() -> None:
    ref = torch.tensor([1, 2, 3])
    assert compare(torch.tensor([1, 2, 3]), ref, tolerance_for(torch.float32)).ok
    c = compare(torch.tensor([1, 2, 4]), ref, tolerance_for(torch.float32))
    assert not c.ok and c.details["index"] == [2]


def test_shape_mismatch() -> None:
    c = compare(torch.zeros(3, 4), torch.zeros(4, 3, dtype=torch.float64), tolerance_for(torch.float32))
    assert not c.ok and c.code == "CORRECT_SHAPE"


def test_input_scale_keeps_the_absolute_tolerance_of_averaging_outputs() -> None:
    # an attention-like output: a weighted average of unit-scale values is much smaller than its inputs
    ref = torch.full((1000,), 0.05, dtype=torch.float64)
    ref[0] = 0.3
    out = ref.clone()
    out[0] += 6e-3  # bf16 rounding of the inputs makes errors of this size
    tol = tolerance_for(torch.bfloat16)
    assert not compare(out, ref, tol).ok
    assert compare(out, ref, tol, input_scale=1.0).ok
    # capped at 1: large inputs do not loosen the element check beyond KernelBench's absolute atol
    assert compare(out, ref, tol, input_scale=1e3).details["atol_effective"] == pytest.approx(1e-2)


def test_noise_floor_for_outputs_dominated_by_cancellation() -> None:
    # the exact answer is 0; any fp32 implementation returns rounding noise of ~1e-8
    ref = torch.tensor([1e-17, -2e-17], dtype=torch.float64)
    own_precision = torch.tensor([2e-8, -1e-8])
    candidate = torch.tensor([-1.5e-8, 3e-8])
    tol = tolerance_for(torch.float32)
    assert not compare(candidate, ref, tol).ok
    noise = own_precision.double() - ref
    assert compare(candidate, ref, tol, noise=noise).ok
    assert not compare(torch.tensor([1e-3, 0.0]), ref, tol, noise=noise).ok  # far above the noise


def test_compare_leaves_its_arguments_alone() -> None:
    ref = torch.randn(1000, dtype=torch.float64)
    out = ref.float()
    ref_before, out_before = ref.clone(), out.clone()
    assert compare(out, ref, tolerance_for(torch.float32)).ok
    assert compare(ref.clone(), ref, tolerance_for(torch.float64)).ok  # float64 output: no conversion copies
    assert torch.equal(ref, ref_before) and torch.equal(out, out_before)


def test_large_outputs_are_compared_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import argus.eval.tolerance as tolerance

    monkeypatch.setattr(tolerance, "CHUNK", 1000)
    ref = torch.randn(10_500, dtype=torch.float64)
    out = ref.float().clone()
    out[7_777] = float("nan")
    out[9_001] += 1.0
    c = compare(out, ref, tolerance_for(torch.float32))
    assert c.code == "CORRECT_NONFINITE" and c.details["index"] == [7_777]
    out[7_777] = ref[7_777]
    c = compare(out, ref, tolerance_for(torch.float32))
    assert c.code == "CORRECT_MISMATCH" and c.details["index"] == [9_001] and c.details["mismatched"] == 1


def test_large_host_comparisons_go_to_the_gpu_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Host tensors of more than one chunk are compared on the GPU when there is one (the judge's copies of a large
    trial live on the host); small ones, and any without a GPU, stay on the host; a GPU tensor decides alone."""
    from argus.eval import tolerance

    big, small = torch.empty(tolerance.CHUNK + 1, dtype=torch.uint8), torch.zeros(8)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert tolerance._work_device(big, small).type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert tolerance._work_device(big, small) == torch.device("cuda", 0)
    assert tolerance._work_device(small, small).type == "cpu"
