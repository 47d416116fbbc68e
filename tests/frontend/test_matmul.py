"""The matmul-like family against PyTorch: ``mm`` groups become calls of argus's GEMM library (the split-precision
passes for float32, the persistent Hopper GEMM, the split-K reduction where the plan splits K), each kernel of the
plan verified, the call checked on the CPU interpreter against the group's FX subgraph, and the emitted ModelNew
judged by the gate. The level-1 problems are pinned: `SOLVED` end to end at small sizes (transposed operands taken
into the group, a 3-d tensor times a matrix through views, a matrix-vector product whose plan splits K), `PARTIAL`
with what the template does not take reported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from argus.frontend import solve
from argus.frontend.families import matmul

#: Level-1 matmul problems solved, at small sizes (K not a multiple of the K-block; N, M not of the tile).
SOLVED: dict[str, dict[str, Any]] = {
    "16_Matmul_with_transposed_A": {"M": 40, "K": 70, "N": 24},  # permute -> mm: the GEMM reads A M-major
    "10_3D_tensor_matrix_multiplication": {"N": 2, "M": 20, "K": 70, "L": 24},  # views around one mm
    "4_Matrix_vector_multiplication_": {"M": 40, "K": 300},  # N = 1; the f32 chain splits K: four kernels
}

#: Level-1 matmul problems the template leaves (in part) to PyTorch, and the operators reported.
PARTIAL: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "3_Batched_matrix_multiplication": (
        {"batch_size": 2, "m": 4, "k": 5, "n": 3},
        [("aten.bmm.default", "matmul-like")],
    ),
}


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_the_level1_matmul_problems_are_solved(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=SOLVED[name], out=tmp_path / f"{name}.py",
                   options=None)  # fmt: skip
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    (report,) = result.kernels
    assert report.family == "matmul-like" and report.verdict == "verified" and report.interpreter_ok
    assert "kernels of its plan" in report.verify_summary
    text = Path(result.solution).read_text()
    forward = text[text.index("    def forward(") :]
    assert "torch.ops.aten.mm" not in forward and "_launch(matmul_0" in forward
    assert "LibraryGemm(" in text


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_what_the_template_does_not_take_is_reported(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    sizes, ops = PARTIAL[name]
    result = solve(kernelbench_dir / "level1" / f"{name}.py", sizes=sizes, out=tmp_path / "s.py", judge=False)
    assert [(u["op"], u["family"]) for u in result.uncovered] == ops
    assert "not built" in result.uncovered[0]["reason"]


def test_a_transpose_read_elsewhere_stays_outside_the_group(problem: Callable[..., Path], tmp_path: Path) -> None:
    # one x.T feeds the mm and a multiplication: the group cannot take it in (its only reader must be the mm)
    body = "(lambda t: (t @ y, t * 2))(x.T)"
    path = problem(body, inputs="[torch.randn(7, 5), torch.randn(7, 3)]", args="x, y")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    assert sorted(g["ops"] for g in result.groups) == [["mm"], ["mul"]]
    assert [u["op"] for u in result.uncovered] == ["aten.permute.default"]


def test_x_times_its_own_transpose_reads_one_input_twice(problem: Callable[..., Path], tmp_path: Path) -> None:
    path = problem("x @ x.T", inputs="[torch.randn(9, 13)]", args="x")
    result = solve(path, out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert [g["ops"] for g in result.groups] == [["permute", "mm"]]
    assert "order=(0, 0)" in Path(result.solution).read_text()


def test_the_template_says_why_it_does_not_take_a_node(problem: Callable[..., Path], tmp_path: Path) -> None:
    path = problem(
        "torch.addmm(b, x, y)", inputs="[torch.randn(3), torch.randn(4, 5), torch.randn(5, 3)]", args="b, x, y"
    )
    result = solve(path, out=tmp_path / "s.py", judge=False)
    (u,) = result.uncovered
    assert u["op"] == "aten.addmm.default" and "epilogue" in u["reason"]
    assert matmul.TRANSPOSES == {"permute", "t", "transpose"}
