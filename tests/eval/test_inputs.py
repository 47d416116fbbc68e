"""Trial inputs: several distributions, never only zeros nor only the standard normal, and the structure the task
relies on kept (domain, zero pattern, symmetry, labels, integer tensors)."""

from __future__ import annotations

import torch

from argus.eval.inputs import DISTRIBUTIONS, redistribute, redraw, structure_of, trial_distributions


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_trials_start_native_and_cover_every_distribution() -> None:
    plan = trial_distributions(6)
    assert plan[0] == "native"
    assert set(plan) == set(DISTRIBUTIONS)
    assert trial_distributions(8)[6:] == ["native", "normal"]


def test_distributions_differ_in_scale_and_are_not_standard_normal() -> None:
    native = torch.randn(4096)
    stats = {}
    for d in DISTRIBUTIONS[1:]:
        x = redraw(native, d, _g(1)).double()
        assert not torch.equal(x, native.double())
        assert x.abs().max() > 0
        stats[d] = (float(x.mean()), float(x.std()), float(x.abs().max()))
    assert stats["large"][1] > 100 * stats["normal"][1]
    assert stats["small"][1] < stats["normal"][1] / 100
    # outliers: a few elements far beyond the bulk
    assert stats["outliers"][2] > 20 * stats["outliers"][1] / 3
    # the "normal" draw has a random mean and deviation, not N(0, 1)
    means_stds = {(round(m, 2), round(s, 2)) for m, s, _ in [stats["normal"], stats["uniform"]]}
    assert all(abs(s - 1.0) > 0.01 or abs(m) > 0.01 for m, s in means_stds)


def test_nonnegative_and_positive_domains_are_kept() -> None:
    native = torch.rand(1000) + 1e-3  # strictly positive, as torch.rand draws (a task may take its log)
    assert structure_of(native).domain == "positive"
    for d in DISTRIBUTIONS[1:]:
        assert bool((redraw(native, d, _g(2)) > 0).all()), d
    relu = torch.relu(torch.randn(1000))
    assert structure_of(relu).domain == "nonnegative"


def test_triangular_zero_pattern_and_symmetry_are_kept() -> None:
    tri = torch.triu(torch.rand(32, 32))
    x = redraw(tri, "normal", _g(3))
    assert torch.equal(x == 0, tri == 0)
    sym = torch.rand(16, 16)
    sym = (sym + sym.T) / 2
    y = redraw(sym, "outliers", _g(4))
    assert torch.equal(y, y.T)
    assert not torch.equal(y, sym)


def test_labels_and_integer_tensors_are_left_as_drawn() -> None:
    labels = torch.randint(0, 2, (64,)).float() * 2 - 1
    assert torch.equal(redraw(labels, "large", _g(5)), labels)
    idx = torch.randint(0, 10, (64,))
    mask = torch.rand(64) > 0.5
    out = redistribute([idx, mask, 3.14], "large", 6)
    assert torch.equal(out[0], idx) and torch.equal(out[1], mask) and out[2] == 3.14


def test_dtype_and_device_are_kept_and_half_ranges_respected() -> None:
    x = torch.randn(100, dtype=torch.float16)
    y = redraw(x, "large", _g(7))
    assert y.dtype == torch.float16 and bool(torch.isfinite(y).all())
    b = redraw(torch.randn(100, dtype=torch.bfloat16), "small", _g(8))
    assert b.dtype == torch.bfloat16 and float(b.float().abs().max()) > 0


def test_finite_min_skips_non_finite_values_in_chunks() -> None:
    from argus.eval.inputs import _finite_min

    x = torch.tensor([float("nan"), 3.0, float("-inf"), 2.5, float("inf"), 7.0])
    assert _finite_min(x, chunk=2) == 2.5
    assert _finite_min(torch.full((5,), float("nan")), chunk=2) == 0.0
    assert structure_of(torch.tensor([float("-inf"), 0.5, 1.0])).domain == "positive"
