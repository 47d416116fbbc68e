"""argus's own decompositions (`argus.frontend.decompositions`): float products and cumulative products as sums of
logarithms, each case solved through the gate on the interpreter at odd sizes — zeros, negative factors (an odd and
an even count), float16, middle axes, keepdim, the whole tensor — and the integer ones left whole with a reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from argus.frontend import solve
from argus.frontend.decompositions import cumprod, prod_all, prod_dim

TWO_SUMS = ["reduction", "reduction", "pointwise"]  # the sums of log|x| and of the negatives, then exp * sign
TWO_SCANS = ["pointwise", "scan", "scan", "pointwise"]

#: (forward body, inputs, the families of its kernels)
CASES: dict[str, tuple[str, str, list[str]]] = {
    "prod_middle": ("torch.prod(x, dim=1)", "[torch.randn(4, 33, 7)]", TWO_SUMS),
    "prod_last_keepdim": ("torch.prod(x, -1, keepdim=True)", "[torch.rand(5, 37) + 0.5]", TWO_SUMS),
    "prod_all": ("torch.prod(x)", "[torch.rand(3, 11) + 0.6]", TWO_SUMS),
    "prod_f16": ("torch.prod(x, 0)", "[torch.rand(9, 6).half() + 0.5]", TWO_SUMS),
    # relu(x) is read by both sums: a kernel of its own (a prologue is read by its reduction alone)
    "prod_with_zeros": ("torch.prod(torch.relu(x), 1)", "[torch.randn(6, 5)]", ["pointwise", *TWO_SUMS]),
    "cumprod_last": ("torch.cumprod(x, dim=1)", "[torch.rand(4, 67) + 0.5]", TWO_SCANS),
    "cumprod_middle_signed": ("torch.cumprod(x, dim=1)", "[torch.randn(3, 9, 5)]", TWO_SCANS),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_products_are_solved_as_sums_of_logarithms(problem: Callable[..., Path], tmp_path: Path, case: str) -> None:
    body, inputs, families = CASES[case]
    result = solve(problem(body, inputs=inputs, name=case), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert sorted(g["family"] for g in result.groups) == sorted(families), result.groups
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)


def test_the_decompositions_match_torch_on_signs_zeros_and_infinities() -> None:
    x = torch.tensor(
        [[2.0, -3.0, 0.5, -1.0], [-2.0, 4.0, 0.25, 1.5], [0.0, -7.0, 3.0, 1.0], [float("inf"), 0.0, 1.0, 2.0]]
    )
    torch.testing.assert_close(prod_dim(x, 1), torch.prod(x, 1), equal_nan=True)
    torch.testing.assert_close(prod_dim(x, 0, True), torch.prod(x, 0, keepdim=True), equal_nan=True)
    torch.testing.assert_close(cumprod(x[:3], 1), torch.cumprod(x[:3], 1))
    torch.testing.assert_close(prod_all(x[:2]), torch.prod(x[:2]))
    h = (torch.rand(5, 8) + 0.5).half()
    # computed in float32 and rounded once: within one float16 rounding of the exact product
    torch.testing.assert_close(prod_dim(h, 1), torch.prod(h.double(), 1).half(), rtol=1e-3, atol=0.0)
    assert prod_dim(h, 1).dtype == torch.float16


def test_integer_products_stay_whole_with_their_reason(problem: Callable[..., Path], tmp_path: Path) -> None:
    result = solve(problem("torch.prod(x, 1)", inputs="[torch.randint(1, 4, (3, 4))]"), out=tmp_path / "s.py",
                   judge=False)  # fmt: skip
    (u,) = [u for u in result.uncovered if u["family"] == "reduction"]
    assert "integer product" in u["reason"]


#: (forward body, inputs): torch.var and torch.std in their forms (dim, correction, unbiased, keepdim, the whole
#: tensor, 16-bit), one of large mean and small spread (two passes do not cancel), one of a single element a row
VARIANCES: dict[str, tuple[str, str]] = {
    "std_last_keepdim": ("torch.std(x, dim=-1, keepdim=True)", "[torch.randn(11, 15, 19)]"),
    "var_middle_correction_0": ("torch.var(x, dim=1, correction=0)", "[torch.randn(6, 23, 5)]"),
    "var_all": ("torch.var(x)", "[torch.randn(7, 9)]"),
    "var_unbiased_false_f16": ("torch.var(x, 0, unbiased=False)", "[torch.randn(13, 6).half()]"),
    "var_large_mean": ("torch.var(x * 0.01 + 1000.0, dim=-1)", "[torch.randn(4, 33)]"),
    "std_one_element": ("torch.std(x, dim=0, correction=0)", "[torch.randn(1, 5)]"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(VARIANCES))
def test_variances_are_solved_in_two_passes(problem: Callable[..., Path], tmp_path: Path, case: str) -> None:
    body, inputs = VARIANCES[case]
    result = solve(problem(body, inputs=inputs, name=case), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups].count("reduction") == 2, result.groups  # the mean, the squares' sum
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)


def test_the_variance_matches_torch_where_one_pass_cancels() -> None:
    from argus.frontend.decompositions import var_correction

    x = torch.randn(4, 1000, dtype=torch.float32) * 1e-3 + 1e4  # mean 1e4, spread 1e-3: E[x^2] - E[x]^2 is noise
    for dim, correction, keepdim in (([1], 1, False), ([0, 1], 0, True), (None, None, False)):
        got = var_correction(x, dim, correction=correction, keepdim=keepdim)
        want = torch.var(x.double(), dim=dim, correction=1 if correction is None else correction, keepdim=keepdim)
        assert got.shape == want.shape and torch.allclose(got.double(), want, rtol=1e-3), (dim, got, want)
    one = var_correction(torch.randn(1, 3), [0])  # n - correction = 0: as torch, NaN (0 / 0)
    assert torch.isnan(one).all() and torch.isnan(torch.var(torch.randn(1, 3), 0)).all()


#: (module, input shape): adaptive pooling with even windows (each input extent a multiple of the output's)
ADAPTIVE: dict[str, tuple[str, str]] = {
    "avg_2d": ("torch.nn.AdaptiveAvgPool2d((3, 2))", "(2, 5, 6, 4)"),
    "avg_1d": ("torch.nn.AdaptiveAvgPool1d(4)", "(2, 5, 12)"),
    "avg_3d": ("torch.nn.AdaptiveAvgPool3d((1, 2, 3))", "(1, 3, 2, 4, 9)"),
    "max_2d": ("torch.nn.AdaptiveMaxPool2d((3, 2))", "(2, 5, 6, 4)"),
    "max_3d_none": ("torch.nn.AdaptiveMaxPool3d((2, None, 1))", "(1, 2, 4, 3, 5)"),
}


@pytest.mark.parametrize("case", sorted(ADAPTIVE))
def test_adaptive_pooling_with_even_windows_is_plain_pooling(
    problem: Callable[..., Path], tmp_path: Path, case: str
) -> None:
    module, shape = ADAPTIVE[case]
    path = problem("self.pool(x)", inputs=f"[torch.randn{shape}]", name=case, extra=f"POOL = {module}")
    text = path.read_text().replace("self.args = args", "self.args = args\n        self.pool = POOL")
    path.write_text(text)
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups] == ["pooling"], result.groups
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        ("torch.nn.functional.adaptive_avg_pool2d(x, (4, 2))", "(2, 3, 6, 4)"),  # 6 -> 4: overlapping windows
        ("torch.nn.functional.adaptive_avg_pool2d(x, (1, 7)).to(torch.bfloat16)", "(1, 3, 8, 11)"),
        ("torch.nn.functional.adaptive_avg_pool3d(x, (2, 3, 5))", "(1, 2, 5, 4, 7)"),
    ],
)
def test_adaptive_average_pooling_with_uneven_windows_is_products_with_averaging_matrices(
    problem: Callable[..., Path], tmp_path: Path, body: str, shape: str
) -> None:
    # each pooled dimension contracted with its averaging matrix (`decompositions.averaging_products`), the matrices
    # computed from aranges in pointwise kernels; before session 76 left to PyTorch
    inputs = f"[torch.randn{shape}" + (".to(torch.bfloat16)]" if "bfloat16" in body else "]")
    result = solve(problem(body.replace(".to(torch.bfloat16)", ""), inputs=inputs), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert "matmul-like" in [g["family"] for g in result.groups], result.groups
    assert result.gate.verdict == "accepted", result.gate


def test_adaptive_max_pooling_with_uneven_windows_stays_whole(problem: Callable[..., Path], tmp_path: Path) -> None:
    path = problem("torch.nn.functional.adaptive_max_pool2d(x, (4, 2))", inputs="[torch.randn(2, 3, 6, 4)]")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    (u,) = result.uncovered
    assert u["op"] == "aten.adaptive_max_pool2d.default" and "adaptive pooling" in u["reason"]


#: (forward body, inputs, reductions): sums, means, maxima and minima over axes that are not neighbours, one
#: reduction kernel per run of neighbouring axes (NCHW channel statistics, the two ends, keepdim, an axis of
#: extent 1 between two reduced ones that does not split them, half precision)
SPLIT_RUNS: dict[str, tuple[str, str, int]] = {
    "channel_mean_nchw": ("x.mean(dim=(0, 2, 3))", "[torch.randn(3, 5, 4, 6)]", 2),
    "sum_ends_keepdim": ("torch.tanh(x).sum(dim=(0, 2), keepdim=True)", "[torch.randn(4, 5, 7)]", 2),
    "amax_1_3": ("x.amax(dim=(1, 3))", "[torch.randn(2, 5, 3, 6)]", 2),
    "amin_negative_dims": ("x.amin(dim=(-1, 0))", "[torch.randn(6, 3, 5)]", 2),
    "sum_three_runs": ("x.sum(dim=(0, 2, 4))", "[torch.randn(2, 3, 4, 3, 5)]", 3),
    "one_run_across_extent_1": ("x.sum(dim=(1, 3))", "[torch.randn(4, 5, 1, 6, 3)]", 1),
    "mean_bf16": ("x.mean(dim=(0, 2))", "[torch.randn(6, 5, 7).to(torch.bfloat16)]", 2),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SPLIT_RUNS))
def test_reductions_over_axes_that_are_not_neighbours_are_one_reduction_per_run(
    problem: Callable[..., Path], tmp_path: Path, case: str
) -> None:
    body, inputs, runs = SPLIT_RUNS[case]
    result = solve(problem(body, inputs=inputs, name=case), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups].count("reduction") == runs, result.groups
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)


def test_the_runs_of_reduced_axes() -> None:
    from argus.frontend.decompositions import reduced_runs

    assert reduced_runs((3, 5, 4, 6), (0, 2, 3)) == [[0], [2, 3]]
    assert reduced_runs((4, 5, 1, 6, 3), (1, 3)) == [[1, 3]]  # the axis between has extent 1
    assert reduced_runs((4, 5, 7), (-1, 0)) == [[0], [2]]
    assert reduced_runs((4, 5, 7), (1, 1, 2)) == [[1, 2]]
    assert reduced_runs((4, 5, 7), None) == [] and reduced_runs((4, 5, 7), []) == []


#: (forward body, inputs): vector norms of orders the reduction family does not take whole
NORMS: dict[str, tuple[str, str]] = {
    "order_3_last": ("torch.linalg.vector_norm(x, ord=3, dim=-1)", "[torch.randn(5, 17)]"),
    "order_half_keepdim": ("torch.linalg.vector_norm(x, ord=0.5, dim=1, keepdim=True)", "[torch.randn(4, 9, 3)]"),
    "order_0_all": ("torch.linalg.vector_norm(x, ord=0)", "[torch.relu(torch.randn(6, 7))]"),
    "norm_p_4_f16": ("torch.norm(x, p=4, dim=0)", "[torch.randn(8, 5).half()]"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NORMS))
def test_vector_norms_of_other_orders_are_a_sum_of_powers(
    problem: Callable[..., Path], tmp_path: Path, case: str
) -> None:
    body, inputs = NORMS[case]
    result = solve(problem(body, inputs=inputs, name=case), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert "reduction" in [g["family"] for g in result.groups], result.groups
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
