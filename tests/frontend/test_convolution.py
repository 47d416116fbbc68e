"""The convolution family against PyTorch: ``aten.convolution`` groups become calls of argus's convolution library
(the im2col gather, the GEMM library's plan, the output pass), every kernel of the plan verified, the call checked
on the CPU interpreter against the group's FX subgraph, and the emitted ModelNew judged by the gate. The level-1
problems are pinned: `SOLVED` end to end at small odd sizes, `REFUSED` with the reason the template gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from argus.frontend import solve

#: Level-1 forward convolutions solved end to end, at small sizes (odd extents: the gather's tiles are masked).
SOLVED: dict[str, dict[str, Any]] = {
    "54_conv_standard_3D__square_input__square_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 4, "width": 6, "height": 5,
    },
    "55_conv_standard_2D__asymmetric_input__square_kernel": {
        "batch_size": 2, "in_channels": 3, "out_channels": 5, "height": 5, "width": 9,
    },
    "56_conv_standard_2D__asymmetric_input__asymmetric_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 7, "width": 9,
    },
    "59_conv_standard_3D__asymmetric_input__square_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "width": 6, "height": 5, "depth": 3,
    },
    "60_conv_standard_3D__square_input__asymmetric_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "width": 4, "height": 6, "depth": 9,
    },
    "66_conv_standard_3D__asymmetric_input__asymmetric_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 4, "height": 6, "width": 9,
    },
    "76_conv_standard_1D_dilated_strided__": {"batch_size": 2, "in_channels": 3, "out_channels": 5, "length": 29},
    "82_conv_depthwise_2D_square_input_square_kernel": {"batch_size": 2, "in_channels": 3, "width": 7, "height": 5},
    "83_conv_depthwise_2D_square_input_asymmetric_kernel": {
        "batch_size": 2, "in_channels": 3, "width": 5, "height": 7,
    },
    "84_conv_depthwise_2D_asymmetric_input_square_kernel": {
        "batch_size": 1, "in_channels": 3, "out_channels": 3, "width_in": 7, "height_in": 5,
    },
    "85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel": {
        "batch_size": 1, "in_channels": 3, "out_channels": 3, "width": 9, "height": 5,
    },
    "86_conv_depthwise_separable_2D": {"batch_size": 1, "in_channels": 3, "out_channels": 5, "width": 6, "height": 5},
}  # fmt: skip

#: Level-1 convolutions the template refuses (transposed: not built), with the sizes captured.
REFUSED: dict[str, dict[str, Any]] = {
    "57_conv_transposed_2D__square_input__square_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 5, "width": 5,
    },
    "64_conv_transposed_1D": {"batch_size": 1, "in_channels": 2, "out_channels": 3, "length": 7},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_the_level1_convolution_problems_are_solved(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=SOLVED[name], out=tmp_path / f"{name}.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert {g["family"] for g in result.groups} == {"convolution"}
    for report in result.kernels:
        assert report.verdict == "verified" and report.interpreter_ok, report.to_json()
        assert "kernels of its plan" in report.verify_summary
    assert result.gate.verdict == "accepted"
    text = Path(result.solution).read_text()
    forward = text[text.index("    def forward(") :]
    assert "torch.ops.aten.convolution" not in forward and "_launch(convolution_0" in forward
    assert "LibraryConv(" in text


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_transposed_convolutions_are_reported_not_covered(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=REFUSED[name], out=tmp_path / "s.py", judge=False)
    assert not result.groups
    (u,) = result.uncovered
    assert u["op"] == "aten.convolution.default" and u["family"] == "convolution"
    assert "transposed convolution is not built" in u["reason"]


def test_a_column_matrix_over_the_budget_is_refused(
    problem: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argus.kernels.conv as conv

    monkeypatch.setattr(conv, "COLUMN_BUDGET", 64)  # bytes: one image of this conv needs 2 * 9 * 15 * 4 = 1080
    path = problem("F.conv2d(x, w)", inputs="[torch.randn(1, 2, 5, 7), torch.randn(3, 2, 3, 3)]", args="x, w")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    (u,) = result.uncovered
    assert "CONV_COLUMNS_OVER_BUDGET" in u["reason"] and "implicit GEMM" in u["reason"]


def test_a_functional_conv_with_bias_and_groups_reads_its_operands_in_graph_order(
    problem: Callable[..., Path], tmp_path: Path
) -> None:
    # the inputs arrive as (bias, x, w): the library call picks x, the weight and the bias by position
    path = problem(
        "F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2)",
        inputs="[torch.randn(6), torch.randn(2, 4, 11), torch.randn(6, 2, 3)]",
        args="b, x, w",
    )
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
