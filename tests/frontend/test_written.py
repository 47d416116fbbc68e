"""Kernels written for operators no template covers (`argus.frontend.written`, `solve(writer=...)`): the request
a writer gets for an uncovered operator, an accepted module embedded in the solution under the group's name (its
top-level names prefixed, so nothing collides), the operator then covered and the problem solved through the gate;
a writer that has no kernel leaves the operator to ATen with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from argus.eval.gate import GateOptions
from argus.frontend import solve
from argus.frontend.written import WrittenKernel

PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(y) + 1.0, x * 3  # x is int32: the pointwise template takes floats only


def get_inputs():
    return [torch.randint(-50, 50, (1200,), dtype=torch.int32), torch.randn(8, 40)]


def get_init_inputs():
    return []
"""

WRITTEN = """
import argus
import argus.lang as T

FACTOR = 3


def scaled(x):
    return x * FACTOR


@argus.kernel
def triple(IN0: T.Tensor[(1200,), T.i32], OUT: T.Tensor[(1200,), T.i32], BLOCK: int = 512):
    with T.grid(T.cdiv(1200, BLOCK), threads=128) as (b,):
        x = T.alloc_fragment((BLOCK,), T.i32)
        T.copy(IN0.tile(b, BLOCK), x)
        T.copy(scaled(x), OUT.tile(b, BLOCK))
"""


@pytest.fixture
def problem(tmp_path: Path) -> Path:
    path = tmp_path / "ints.py"
    path.write_text(PROBLEM)
    return path


def test_an_uncovered_operator_is_asked_for_and_its_kernel_runs_in_the_solution(problem: Path, tmp_path: Path):
    asked = []

    def writer(request):
        asked.append(request)
        return WrittenKernel(WRITTEN, "triple", "verified", "gated", "cpu")

    result = solve(problem, out=tmp_path / "s.py", options=GateOptions(trials=2, device="cpu"), writer=writer)
    (request,) = asked
    assert request.op == "aten.mul.Tensor" and request.name == "written_0"
    assert request.tensors == [("IN0", (1200,), "i32", False), ("OUT", (1200,), "i32", True)]
    assert request.reference_source == "def reference(IN0):\n    return torch.ops.aten.mul.Tensor(IN0, 3)\n"
    x = torch.arange(-5, 5, dtype=torch.int32)
    assert torch.equal(request.reference(x), x * 3)
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert [g["family"] for g in result.groups] == ["pointwise", "written"]
    text = (tmp_path / "s.py").read_text()
    assert "written_0_FACTOR = 3" in text and "def written_0_scaled(x):" in text and "def written_0(IN0" in text
    assert "_launch(written_0, [x, mul]" in text and "torch.ops.aten.mul" not in text.split("def forward", 1)[1]


def test_a_writer_without_a_kernel_leaves_the_operator_to_aten_and_says_why(problem: Path, tmp_path: Path) -> None:
    result = solve(
        problem, out=tmp_path / "s.py", options=GateOptions(trials=2, device="cpu"),
        writer=lambda request: "no accepted kernel in 3 answer(s): CORRECT_MISMATCH",
    )  # fmt: skip
    (u,) = result.uncovered
    assert u["op"] == "aten.mul.Tensor" and u["writer"].startswith("no accepted kernel")
    assert result.status() == "not covered"
