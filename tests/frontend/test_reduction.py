"""The reduction family of `argus solve`: its level-1 coverage table (end to end through the gate, at small odd
sizes), the template on our own problems — middle and last axes, axis sets, keepdim, full reductions, values
and int64 indices, float16 and bfloat16, extents that are not multiples of the tiles — each kernel verified and
matched on the interpreter, first occurrences on ties, and the reductions it refuses with their reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from argus.eval.candidates import import_file
from argus.frontend import solve

#: Level-1 problems the reduction family completes, with the small sizes the test runs them at (odd: no tile divides
#: them). 94_MSELoss is one kernel: a whole-tensor mean with the difference and its square fused before it.
SOLVED: dict[str, dict[str, Any]] = {
    "47_Sum_reduction_over_a_dimension": {"batch_size": 3, "dim1": 13, "dim2": 7},
    "48_Mean_reduction_over_a_dimension": {"batch_size": 3, "dim1": 13, "dim2": 7},
    "49_Max_reduction_over_a_dimension": {"batch_size": 3, "dim1": 13, "dim2": 7},
    "51_Argmax_over_a_dimension": {"batch_size": 3, "dim1": 13, "dim2": 7},
    "52_Argmin_over_a_dimension": {"batch_size": 3, "dim1": 13, "dim2": 7},
    "94_MSELoss": {"batch_size": 4, "input_shape": (33,)},
    "38_L1Norm_": {"batch_size": 4, "dim": 37},
    "39_L2Norm_": {"batch_size": 4, "dim": 37},
    "98_KLDivLoss": {"batch_size": 4, "input_shape": (33,)},
    "99_TripletMarginLoss": {"batch_size": 4, "input_shape": (33,)},
    "100_HingeLoss": {"batch_size": 33, "input_shape": (33,)},  # its targets (B,) broadcast along the last axis
}


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_the_coverage_table_level1(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=SOLVED[name], out=tmp_path / f"{name}.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert "reduction" in [g["family"] for g in result.groups]
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
    assert result.gate.verdict == "accepted" and result.gate.environment["sandbox"]
    text = Path(result.solution).read_text()
    forward = text[text.index("    def forward(") :]
    assert "torch.ops" not in forward and "_launch(" in forward


#: (forward body, input shapes and dtype, the kernel's view) — every case a single reduction kernel.
CASES: dict[str, tuple[str, str, str]] = {
    "sum_middle_keepdim": ("torch.sum(x, dim=1, keepdim=True)", "[torch.randn(3, 13, 7)]", "middle"),
    "sum_last_long": ("x.sum(-1)", "[torch.randn(5, 300)]", "last"),
    "sum_middle_wider_than_a_tile": ("x.sum(1)", "[torch.randn(1, 3, 515)]", "middle"),
    "mean_axis_set": ("x.mean(dim=(1, 2))", "[torch.randn(2, 5, 6, 3)]", "middle"),
    "mean_axis_set_ignoring_unit_axes": ("x.mean(dim=(1, 3))", "[torch.randn(3, 4, 1, 5)]", "last"),
    "amax_last_keepdim": ("torch.amax(x, dim=-1, keepdim=True)", "[torch.randn(4, 37)]", "last"),
    "amin_first": ("torch.amin(x, dim=0)", "[torch.randn(9, 5)]", "middle"),
    "sum_full": ("x.sum()", "[torch.randn(3, 50)]", "last"),
    "max_full": ("x.max()", "[torch.randn(7, 9)]", "last"),
    "max_values_and_indices": ("tuple(torch.max(x, 1))", "[torch.randn(3, 21, 5)]", "middle"),
    "min_values_and_indices_last": ("tuple(torch.min(x, -1, keepdim=True))", "[torch.randn(6, 145)]", "last"),
    "min_indices_only": ("torch.min(x, 1)[1]", "[torch.randn(2, 9, 3)]", "middle"),
    "argmax_flattened": ("torch.argmax(x)", "[torch.randn(4, 33)]", "last"),
    "argmin_last_keepdim": ("torch.argmin(x, dim=1, keepdim=True)", "[torch.randn(5, 140)]", "last"),
    "sum_f16_middle": ("x.sum(1)", "[torch.randn(2, 11, 6).half()]", "middle"),
    "mean_bf16_last": ("x.mean(-1)", "[torch.randn(3, 70).bfloat16()]", "last"),
    "argmax_bf16_middle": ("x.argmax(1)", "[torch.randn(2, 17, 5).bfloat16()]", "middle"),
    "norm2_last_keepdim": ("torch.linalg.vector_norm(x, dim=1, keepdim=True)", "[torch.randn(4, 140)]", "last"),
    "norm1_middle": ("torch.linalg.vector_norm(x, ord=1, dim=1)", "[torch.randn(2, 13, 6)]", "middle"),
    "norm_inf_middle": ("torch.linalg.vector_norm(x, ord=float('inf'), dim=1)", "[torch.randn(2, 13, 6)]", "middle"),
    "norm_neg_inf_last": ("torch.linalg.vector_norm(x, ord=float('-inf'), dim=-1)", "[torch.randn(3, 37)]", "last"),
    "norm2_full": ("torch.linalg.vector_norm(x)", "[torch.randn(5, 19)]", "last"),
    "norm_inf_last": ("torch.linalg.vector_norm(x, ord=float('inf'), dim=-1)", "[torch.randn(3, 133)]", "last"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_reduction_kernel_verifies_and_matches(problem, tmp_path: Path, case: str) -> None:
    body, inputs, design = CASES[case]
    result = solve(problem(body, inputs=inputs, name=case), out=tmp_path / "s.py", judge=False)
    assert result.covered, result.uncovered
    assert [g["family"] for g in result.groups] == ["reduction"]
    (kernel,) = result.kernels
    assert kernel.verdict == "verified", kernel.to_json()
    assert kernel.interpreter_ok, kernel.to_json()
    text = Path(result.solution).read_text()
    assert ("T.grid(OUTER, T.cdiv(INNER, BN)" in text) == (design == "middle")
    assert "T.serial(T.cdiv(R, B" in text  # the reduced axis is looped over in tiles
    assert '"tile_shape"' in text


def test_the_first_occurrence_wins_on_ties(problem, tmp_path: Path) -> None:
    """Integer-valued inputs tie everywhere: each kernel's index is torch's (the first extremum), on both views."""
    for body, shape, view in (
        ("torch.argmax(x, 1)", (3, 40, 6), (3, 40, 6)),
        ("tuple(torch.min(x, -1))", (4, 300), (4, 300)),
    ):
        result = solve(problem(body, inputs=f"[torch.randn{shape}]", name="ties"), out=tmp_path / "t.py", judge=False)
        module = import_file(Path(result.solution), "argus_test_ties")
        kernel = module.reduction_0
        x = torch.randint(0, 3, shape).float()
        x[0, ..., 0] = 2.0  # a whole row of one value: index 0
        x[1, -1, ...] = 5.0  # the maximum only in the last (partial) tile
        want = torch.argmax(x, 1) if "argmax" in body else torch.min(x, -1).indices
        out_shape = want.shape
        indices = torch.empty(out_shape, dtype=torch.int64)
        if "argmax" in body:
            kernel(x.view(view), indices, device="cpu")
        else:
            values = torch.empty(out_shape)
            kernel(x.view(view), values, indices, device="cpu")
            assert torch.equal(values, torch.min(x, -1).values)
        assert torch.equal(indices, want), (indices, want)


#: Reductions the template refuses, and what the reason says.
REFUSED: dict[str, tuple[str, str, str]] = {
    # a sum, mean, maximum or minimum over such axes arrives as one reduction per run (argus.frontend.decompositions)
    "axes_not_contiguous": ("torch.linalg.vector_norm(x, dim=(0, 2))", "[torch.randn(3, 4, 5)]", "not contiguous"),
    "integer_product": ("torch.prod(x, 1)", "[torch.randint(1, 4, (3, 4))]", "integer product"),
    # a norm of another order arrives as a sum of powers; one with a dtype argument stays whole
    "norm_with_a_dtype": (
        "torch.linalg.vector_norm(x, ord=3, dim=1, dtype=torch.float64)",
        "[torch.randn(3, 4)]",
        "dtype argument",
    ),
    "integer_input": ("x.sum(1)", "[torch.randint(0, 5, (3, 4))]", "input dtype torch.int64"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_reduction_the_template_refuses_is_reported_with_its_reason(problem, tmp_path: Path, case: str) -> None:
    body, inputs, why = REFUSED[case]
    result = solve(problem(body, inputs=inputs, name=case), out=tmp_path / "s.py", judge=False)
    reductions = [u for u in result.uncovered if u["family"] == "reduction"]
    assert reductions and why in reductions[0]["reason"], result.uncovered
    assert not result.solved


# -- two stages: a reduction of many elements into few outputs ---------------------------------------------------


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split thresholds scaled down to interpreter sizes: two blocks are enough, R of 64 is long."""
    import argus.frontend.families.reduction as red

    monkeypatch.setattr(red, "min_blocks", lambda: 2)
    monkeypatch.setattr(red, "SPLIT_MIN_R", 64)
    monkeypatch.setattr(red, "SPLIT_MIN_ELEMENTS", 64)


def test_a_whole_tensor_reduction_at_kernelbench_size_is_split_over_many_blocks() -> None:
    """98_KLDivLoss's sum over 16384 x 16384 elements: one kernel would run in one block (983 ms on an H200, 0.003x
    eager); split, the first stage's blocks reach two waves and the extents stay 32-bit."""
    from argus.frontend.families.reduction import Reduction, blocks, min_blocks, split_of

    whole = Reduction("sum", True, False, (16384, 16384), (0, 1), 1, 16384 * 16384, 1)
    assert blocks(whole) == 1
    s, c = split_of(whole)
    assert s * c == 16384 * 16384 and s >= 64
    first = Reduction("sum", True, False, (1, s, c), (1,), 1, s, c)
    assert blocks(first) >= min_blocks()
    # 94_MSELoss's 2^30 elements: refused as one kernel (an extent of 2^30), taken split
    mse = Reduction("mean", True, False, (32768, 32768), (0, 1), 1, 1 << 30, 1)
    assert split_of(mse) is not None
    # enough blocks already (a row per block over 32768 rows), an index reduction, a short R: one kernel
    assert split_of(Reduction("sum", True, False, (32768, 65535), (1,), 32768, 65535, 1)) is None
    assert split_of(Reduction("max", False, True, (1, 1 << 20), (1,), 1, 1 << 20, 1)) is None
    assert split_of(Reduction("sum", True, False, (1, 4096), (1,), 1, 4096, 1)) is None
    assert split_of(Reduction("sum", True, False, (2, 8192), (1,), 2, 8192, 1)) is None  # 64 KB: one kernel
    # 4 MB in 4 blocks: split since a vector of 32768 f32 measured 0.120 ms as one kernel and 0.014 ms split
    assert split_of(Reduction("sum", True, False, (16, 65536), (1,), 16, 65536, 1)) is not None
    # a prime R has no divisor: one kernel
    assert split_of(Reduction("sum", True, False, (1, 1000003), (1,), 1, 1000003, 1)) is None


SPLIT: dict[str, tuple[str, str]] = {
    "sum_all": ("x.sum()", "[torch.randn(4, 16384)]"),
    "mean_all": ("torch.mean(x)", "[torch.randn(4, 16384)]"),
    "max_middle": ("torch.amax(x, dim=1)", "[torch.randn(1, 65536, 3)]"),
    "min_last": ("torch.amin(x, dim=-1)", "[torch.randn(2, 65536)]"),
    "l2_rows": ("torch.linalg.vector_norm(x, 2, dim=1)", "[torch.randn(2, 65536)]"),
    "l1_all": ("torch.linalg.vector_norm(x, 1)", "[torch.randn(4, 16384)]"),
    "inf_all": ("torch.linalg.vector_norm(x, float('inf'))", "[torch.randn(4, 16384)]"),
    "sum_bf16": ("x.sum(dim=(0, 1))", "[torch.randn(4, 16384, dtype=torch.bfloat16)]"),
}


@pytest.mark.parametrize("case", sorted(SPLIT))
def test_split_reductions_match_on_the_interpreter(problem, tmp_path: Path, small_split: None, case: str) -> None:
    body, inputs = SPLIT[case]
    result = solve(problem(body, inputs=inputs), out=tmp_path / "s.py", judge=False)
    assert not result.uncovered, result.uncovered
    (report,) = result.kernels
    assert report.verdict == "verified" and report.interpreter_ok, report.to_json()
    text = (tmp_path / "s.py").read_text()
    assert "Stages(" in text and "_partial" in text and "_total" in text
    assert "over the 2 kernels of its plan" in report.verify_summary


def test_a_split_reduction_is_judged_correct_end_to_end(kernelbench_dir: Path, tmp_path: Path, small_split: None):
    name = "98_KLDivLoss"
    result = solve(
        kernelbench_dir / "level1" / f"{name}.py",
        sizes={"batch_size": 4, "input_shape": (16384,)},
        out=tmp_path / "s.py",
    )
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert "Stages(" in (tmp_path / "s.py").read_text()


def test_stages_refuse_tensors_of_other_sizes(problem, tmp_path: Path, small_split: None) -> None:
    from argus.kernels.stages import StagesError

    solve(problem("x.sum()", inputs="[torch.randn(4, 16384)]"), out=tmp_path / "s.py", judge=False)
    module = import_file(tmp_path / "s.py", "split_solution")
    with pytest.raises(StagesError, match="generated for X of shape"):
        module.ModelNew()(torch.randn(4, 100))


def test_a_mid_sized_whole_reduction_is_split_too_and_a_prime_one_is_not() -> None:
    """2^21 elements into one: eight rows a block in the first stage rather than one block for everything."""
    from argus.frontend.families.reduction import Reduction, blocks, split_of

    mid = Reduction("sum", True, False, (512, 4096), (0, 1), 1, 1 << 21, 1)
    s, c = split_of(mid)
    assert s * c == 1 << 21 and s >= 8 and blocks(Reduction("sum", True, False, (1, s, c), (1,), 1, s, c)) > 1
    assert split_of(Reduction("sum", True, False, (3, 65537), (0, 1), 1, 3 * 65537, 1)) is None


# -- a fused prologue: elementwise operators computed on each loaded element ----------------------------------------

#: (forward body, inputs, args, the reduction group's operators, the other groups' operators).
PROLOGUES: dict[str, tuple[str, str, str, list[str], list[list[str]]]] = {
    # exp(0) = 1: the padding past R must be masked after the map, or each odd-length row gains the padding's count
    "exp_sum_last_odd": ("torch.exp(x).sum(-1)", "[torch.randn(4, 37)]", "x", ["exp", "sum"], []),
    "sigmoid_mean_middle": ("torch.sigmoid(x).mean(1)", "[torch.randn(2, 13, 5)]", "x", ["sigmoid", "mean"], []),
    "relu_square_norm": (
        "torch.linalg.vector_norm(torch.relu(x) + 1.0, dim=1)",
        "[torch.randn(3, 45)]",
        "x",
        ["relu", "add", "linalg_vector_norm"],
        [],
    ),
    "neg_amax_middle": ("torch.amax(-x * 2.0, dim=0)", "[torch.randn(9, 6)]", "x", ["neg", "mul", "amax"], []),
    "f16_cube_sum": ("(x * x * x).sum(1)", "[torch.randn(3, 40).half()]", "x", ["mul", "mul", "sum"], []),
    # two tensors read, each loaded tile by tile: the whole loss is one kernel
    "mse": ("((x - y) ** 2).mean()", "[torch.randn(4, 33), torch.randn(4, 33)]", "x, y", ["sub", "pow", "mean"], []),
    "three_inputs_mixed_dtypes": (
        "(x * y - z).abs().sum(0)",  # y promoted to float32 by the product, as torch does
        "[torch.randn(7, 5), torch.randn(7, 5).half(), torch.randn(7, 5)]",
        "x, y, z",
        ["mul", "sub", "abs", "sum"],
        [],
    ),
    # `.float()`: a conversion (fused) and export's `_assert_tensor_metadata` (a check that computes nothing)
    "converted_input": ("(x.float() * 2.0).sum(1)", "[torch.randn(5, 9).half()]", "x", ["_to_copy", "mul", "sum"], []),
    # a broadcast operand is not loaded like the input: the product stays a pointwise kernel
    "broadcast_operand": (
        "torch.clamp(1 - x * y, min=0).mean()",
        "[torch.randn(6, 5), torch.randn(6, 1)]",
        "x, y",
        ["sub", "clamp", "mean"],
        [["mul"]],
    ),
    # the map's result is read elsewhere too: written by its own kernel, read by the reduction
    "shared_map": (
        "(lambda a: (a.sum(1, keepdim=True), a * 2.0))(torch.abs(x))",
        "[torch.randn(4, 33)]",
        "x",
        ["sum"],
        [["abs", "mul"]],
    ),
    # an arg-reduction takes no prologue (its positions are compared on the loaded elements)
    "argmax_of_map": ("torch.argmax(torch.abs(x), dim=1)", "[torch.randn(4, 33)]", "x", ["argmax"], [["abs"]]),
}


@pytest.mark.parametrize("case", sorted(PROLOGUES))
def test_a_pointwise_prologue_is_fused_into_its_reduction(problem, tmp_path: Path, case: str) -> None:
    body, inputs, args, fused, others = PROLOGUES[case]
    result = solve(problem(body, inputs=inputs, args=args, name=case), out=tmp_path / "s.py", judge=False)
    assert result.covered, result.uncovered
    assert [g["ops"] for g in result.groups if g["family"] == "reduction"] == [fused], result.groups
    assert sorted(g["ops"] for g in result.groups if g["family"] != "reduction") == others
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels), [
        k.to_json() for k in result.kernels
    ]
    if len(fused) > 1:
        assert "(fused)" in Path(result.solution).read_text()


SPLIT_PROLOGUES: dict[str, tuple[str, str, str]] = {
    "exp_sum_all": ("torch.exp(x).sum()", "[torch.randn(4, 16383)]", "x"),
    "abs_max_all": ("torch.abs(x - 0.5).amax()", "[torch.randn(4, 16384)]", "x"),
    "mse_all": ("((x - y) ** 2).mean()", "[torch.randn(4, 16384), torch.randn(4, 16384)]", "x, y"),
}


@pytest.mark.parametrize("case", sorted(SPLIT_PROLOGUES))
def test_a_split_reduction_computes_its_prologue_in_the_first_stage(
    problem, tmp_path: Path, small_split: None, case: str
) -> None:
    body, inputs, args = SPLIT_PROLOGUES[case]
    result = solve(problem(body, inputs=inputs, args=args, name=case), out=tmp_path / "s.py", judge=False)
    assert result.covered and len(result.groups) == 1, (result.uncovered, result.groups)
    (report,) = result.kernels
    assert report.verdict == "verified" and report.interpreter_ok, report.to_json()
    text = (tmp_path / "s.py").read_text()
    partial = text[text.index("def reduction_0_partial_reference") : text.index("def reduction_0_total_reference")]
    assert "torch.ops.aten" in partial and "element = T.where(" in partial
