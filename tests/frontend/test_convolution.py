"""The convolution family against PyTorch: ``aten.convolution`` groups become calls of argus's convolution library
(the im2col gather, the GEMM library's plan, the output pass), every kernel of the plan verified, the call checked
on the CPU interpreter against the group's FX subgraph, and the emitted ModelNew judged by the gate. The level-1
problems are pinned: `SOLVED` (forward) and `SOLVED_TRANSPOSED` (stride 1, and with a stride: the input upsampled
first) end to end at small odd sizes."""

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

#: Level-1 transposed convolutions solved end to end: the weight permuted, the flipped gather; with a stride (72, 73,
#: 75, 77, 79, 81) the input upsampled (its zeros inserted) before the gather.
SOLVED_TRANSPOSED: dict[str, dict[str, Any]] = {
    "57_conv_transposed_2D__square_input__square_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 5, "width": 4,
    },
    "58_conv_transposed_3D__asymmetric_input__asymmetric_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "depth_in": 2, "height_in": 3, "width_in": 4,
    },
    "61_conv_transposed_3D__square_input__square_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 2, "height": 3, "width": 3,
    },
    "64_conv_transposed_1D": {"batch_size": 2, "in_channels": 3, "out_channels": 2, "length": 7},
    "65_conv_transposed_2D__square_input__asymmetric_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 4, "width": 3,
    },
    "69_conv_transposed_2D__asymmetric_input__asymmetric_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height_in": 3, "width_in": 4,
    },
    "71_conv_transposed_2D__asymmetric_input__square_kernel": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height_in": 4, "width_in": 5,
    },
    "74_conv_transposed_1D_dilated": {"batch_size": 2, "in_channels": 3, "out_channels": 2, "length": 6},
    "78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height": 4, "width": 5,
    },
    "72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_": {
        "batch_size": 1, "in_channels": 4, "out_channels": 4, "depth": 2, "height": 3, "width": 4,
    },
    "73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped": {
        "batch_size": 1, "in_channels": 4, "out_channels": 4, "depth": 2, "height": 3, "width": 4,
    },
    "75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__": {
        "batch_size": 1, "in_channels": 4, "out_channels": 4, "height": 3, "width": 4,
    },
    "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "depth": 2, "height": 3, "width": 3,
    },
    "79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "length": 7,
    },
    "81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__": {
        "batch_size": 1, "in_channels": 2, "out_channels": 3, "height_in": 3, "width_in": 4,
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SOLVED) + sorted(SOLVED_TRANSPOSED))
def test_the_level1_convolution_problems_are_solved(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    sizes = SOLVED.get(name) or SOLVED_TRANSPOSED[name]
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=sizes, out=tmp_path / f"{name}.py")
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
    assert ("transposed=True" in text) == (name in SOLVED_TRANSPOSED)


def test_a_transposed_convolution_that_crops_is_solved(problem: Callable[..., Path], tmp_path: Path) -> None:
    # padding 2 past the window's reach 1: the output crops the full one (the gather reads with padding -1)
    path = problem(
        "F.conv_transpose1d(x, w, stride=2, padding=2)",
        inputs="[torch.randn(1, 2, 6), torch.randn(2, 3, 2)]",
        args="x, w",
    )
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups] == ["convolution"]


@pytest.mark.parametrize(
    ("module", "shape"),
    [
        ("torch.nn.Conv2d(3, 8, 3, padding=1, padding_mode='reflect')", "(2, 3, 9, 10)"),
        ("torch.nn.Conv1d(1, 8, 7, padding=3, padding_mode='reflect')", "(1, 1, 40)"),  # mono audio: one channel
        ("torch.nn.Conv2d(1, 4, 5, padding=2, padding_mode='replicate')", "(1, 1, 9, 10)"),
        ("torch.nn.Conv1d(4, 6, 3, padding=1, padding_mode='circular')", "(2, 4, 17)"),
    ],
    ids=["reflect-2d", "reflect-1d-mono", "replicate-2d", "circular-1d"],
)
def test_a_convolution_s_padding_mode_is_a_layout_kernel_before_it(tmp_path: Path, module: str, shape: str) -> None:
    path = tmp_path / "padded.py"
    path.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.conv = {module}\n\n    def forward(self, x):\n        return self.conv(x)\n\n\n"
        f"def get_inputs():\n    return [torch.randn{shape}]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [(g["family"], g["ops"]) for g in result.groups] == [("layout", ["pad"]), ("convolution", ["convolution"])]
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)


def test_a_column_matrix_over_the_budget_is_refused(
    problem: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argus.kernels.conv as conv

    monkeypatch.setattr(conv, "COLUMN_BUDGET", 64)  # bytes: one image of this conv needs 2 * 9 * 15 * 4 = 1080
    path = problem("F.conv2d(x, w)", inputs="[torch.randn(1, 2, 5, 7), torch.randn(3, 2, 3, 3)]", args="x, w")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    (u,) = result.uncovered
    assert "CONV_COLUMNS_OVER_BUDGET" in u["reason"] and "implicit-GEMM kernel" in u["reason"]


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


def test_a_local_never_shadows_a_kernel_of_the_same_name(
    problem: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argus.kernels.conv as conv

    # graph nodes convolution, convolution_1 (its column matrix, 9 x 13 f32, over the budget: left to PyTorch),
    # convolution_2; kernels convolution_0 and convolution_1: the uncovered node's local must not rebind the kernel
    monkeypatch.setattr(conv, "COLUMN_BUDGET", 400)  # bytes: the outer two need 4 * 15 * 4 = 240 and 8 * 12 * 4 = 384
    path = problem(
        "F.conv1d(F.conv1d(F.conv1d(x, a), b), c)",
        inputs="[torch.randn(1, 2, 16), torch.randn(3, 2, 2), torch.randn(4, 3, 3), torch.randn(2, 4, 2)]",
        args="x, a, b, c",
    )
    result = solve(path, out=tmp_path / "s.py")
    assert [g["kernel"] for g in result.groups] == ["convolution_0", "convolution_1"]
    assert [u["op"] for u in result.uncovered] == ["aten.convolution.default"]
    assert result.status() == "not covered", (result.gate, [k.to_json() for k in result.kernels])


@pytest.fixture
def fused_epilogues(monkeypatch: pytest.MonkeyPatch) -> None:
    """The convolution family's fused epilogues switched on (`FUSE_EPILOGUES`, the default; kept explicit)."""
    import argus.frontend.families.convolution as family

    monkeypatch.setattr(family, "FUSE_EPILOGUES", True)


@pytest.fixture
def no_fusion(monkeypatch: pytest.MonkeyPatch) -> None:
    """The convolution family's fused epilogues switched off."""
    import argus.frontend.families.convolution as family

    monkeypatch.setattr(family, "FUSE_EPILOGUES", False)


#: F.conv2d then relu, a per-channel scale (F, 1, 1) and shift (1, F, 1, 1), a clamp and a constant factor
CHAIN = "torch.clamp(torch.relu(F.conv2d(x, w, b, padding=1)) * s + t, min=-2.0) * 0.5"
CHAIN_INPUTS = (
    "[torch.randn(2, 16, 7, 9), torch.randn(24, 16, 3, 3), torch.randn(24), torch.randn(24, 1, 1), "
    "torch.randn(1, 24, 1, 1)]"
)


def test_a_convolution_s_elementwise_tail_is_its_fused_epilogue(
    problem: Callable[..., Path], tmp_path: Path, fused_epilogues: None
) -> None:
    path = problem(CHAIN, inputs=CHAIN_INPUTS, args="x, w, b, s, t")
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["ops"] for g in result.groups] == [["convolution", "relu", "mul", "add", "clamp", "mul"]]
    (report,) = result.kernels
    assert report.verdict == "verified" and report.interpreter_ok
    text = Path(result.solution).read_text()
    assert "epilogue=Epilogue(" in text and "epilogue_order=(3, 4)" in text and "'columns'" in text
    forward = text[text.index("    def forward(") :]
    assert "torch.ops.aten" not in forward  # every operator in the convolution's call


def test_without_fusion_the_tail_is_a_kernel_of_its_own(
    problem: Callable[..., Path], tmp_path: Path, no_fusion: None
) -> None:
    path = problem(CHAIN, inputs=CHAIN_INPUTS, args="x, w, b, s, t")
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert [g["ops"] for g in result.groups] == [["convolution"], ["relu", "mul", "add", "clamp", "mul"]]


def test_a_tail_of_many_transcendentals_stays_a_kernel_of_its_own(
    problem: Callable[..., Path], tmp_path: Path, fused_epilogues: None
) -> None:
    """Level 2's 4 (two Mish: exp, log1p, tanh twice) ran slower fused on an H200: over
    `EPILOGUE_TRANSCENDENTALS`, the chain is a pointwise kernel; one Mish (three) is fused."""
    inputs = "[torch.randn(1, 8, 5, 6), torch.randn(16, 8, 3, 3)]"
    path = problem("F.mish(F.mish(F.conv2d(x, w, padding=1)))", inputs=inputs, args="x, w")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    assert [g["ops"][0] for g in result.groups] == ["convolution", "exp"] and len(result.groups[0]["ops"]) == 1
    path = problem("F.mish(F.conv2d(x, w, padding=1))", inputs=inputs, args="x, w", name="one")
    result = solve(path, out=tmp_path / "t.py", judge=False)
    assert [g["ops"][:2] for g in result.groups] == [["convolution", "exp"]]
    assert all(k.interpreter_ok for k in result.kernels), [k.to_json() for k in result.kernels]


def test_the_epilogue_takes_per_channel_operands_and_implicit_plans_only(
    problem: Callable[..., Path], tmp_path: Path, fused_epilogues: None
) -> None:
    # a residual of the output's shape is not a per-channel vector: the chain stops before it
    path = problem(
        "torch.relu(F.conv2d(x, w, padding=1)) + r",
        inputs="[torch.randn(1, 16, 5, 6), torch.randn(8, 16, 3, 3), torch.randn(1, 8, 5, 6)]",
        args="x, w, r",
    )
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert sorted(g["ops"] for g in result.groups) == [["add"], ["convolution", "relu"]]
    # a depthwise convolution runs on the direct kernel, which applies no epilogue: the chain is its own kernel
    path = problem(
        "torch.relu(F.conv2d(x, w, padding=1, groups=16))",
        inputs="[torch.randn(1, 16, 5, 6), torch.randn(16, 1, 3, 3)]",
        args="x, w",
        name="q",
    )
    result = solve(path, out=tmp_path / "t.py")
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert sorted(g["ops"] for g in result.groups) == [["convolution"], ["relu"]]


def test_a_pointwise_convolution_of_one_image_is_solved(tmp_path: Path) -> None:
    """A 1x1 convolution at batch 1 is a product per image of one image, a GEMV-class product of a batch of one (8
    filters): its matrices go to the GEMV kernel 2-d, as copies the interpreter may write back (KernelBench level 3's
    MobileNetV1 at batch 1 was refused with INTERP_ARGUMENT_RANK, then an internal error, until 2026-12-05)."""
    path = tmp_path / "pw1.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(4, 8, 1, bias=False)\n\n"
        "    def forward(self, x):\n        return self.conv(x)\n\n\n"
        "def get_inputs():\n    return [torch.rand(1, 4, 32, 32)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    result = solve(path, out=tmp_path / "pw1_solution.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
