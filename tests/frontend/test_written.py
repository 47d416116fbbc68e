"""Kernels written for operators no template covers (`argus.frontend.written`, `solve(writer=...)`): the request
a writer gets for an uncovered operator, an accepted module embedded in the solution under the group's name (its
top-level names prefixed, so nothing collides), the operator then covered and the problem solved through the gate;
a writer that has no kernel leaves the operator to ATen with its reason. Connected uncovered operators are one
request (the views between them inside it), a group read outside in two places falls back to one request per
operator, and the library kernel to start from is chosen by the group's family."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from argus.eval.gate import GateOptions
from argus.frontend import solve
from argus.frontend.capture import capture
from argus.frontend.partition import Family, partition
from argus.frontend.written import CLOSEST, WrittenKernel, closest_kernel, group_family, requests

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


GROUPS = """
import torch


class Model(torch.nn.Module):
    def forward(self, x, y, s):
        a = x * 3  # read by two operators whose results are both returned: not one kernel's output
        return a + y, a - y, (x * 2).view(-1) + 1, torch.fmod(x * s, 7)


def get_inputs():
    ints = [torch.randint(-50, 50, (8, 40), dtype=torch.int32) for _ in range(2)]
    return [*ints, 5]


def get_init_inputs():
    return []
"""


def test_connected_operators_are_one_request_and_two_outputs_are_not(tmp_path: Path) -> None:
    path = tmp_path / "groups.py"
    path.write_text(GROUPS)
    part = partition(capture(path))
    graph = str(part.fused.graph)
    asks, skipped = requests(part)
    assert str(part.fused.graph) == graph  # the partition's graph is read, never changed
    by_node = {r.node: r for r in asks}
    # x * 2, its view and + 1: one kernel, the view inside it and shown in the reference
    chained = next(r for r in asks if "view" in r.nodes)
    assert chained.nodes == ["mul_1", "view", "add_1"] and chained.ops == ["aten.mul.Tensor", "aten.add.Tensor"]
    assert "    view = torch.ops.aten.view.default(mul_1, [-1])\n" in chained.reference_source
    assert chained.tensors == [("IN0", (8, 40), "i32", False), ("OUT", (320,), "i32", True)]
    x = torch.randint(-(2**20), 2**20, (8, 40), dtype=torch.int32)
    assert torch.equal(chained.reference(x), (x * 2).view(-1) + 1)
    # a * 3 read by + y and - y, both returned: each operator alone, the product an input of the other two
    assert [by_node[n].ops for n in ("mul", "add", "sub")] == [["aten.mul.Tensor"], ["aten.add.Tensor"],
                                                                  ["aten.sub.Tensor"]]  # fmt: skip
    assert by_node["add"].inputs == ["mul", "y"]
    # x * s takes s at run time: no written kernel for it, its fmod alone
    assert skipped == {"mul_2": "a constant of it is the forward's argument s, which a written kernel cannot take"}
    assert by_node["fmod"].inputs == ["mul_2"] and [r.name for r in asks] == [f"written_{i}" for i in range(5)]


def test_the_kernel_to_start_from_is_the_closest_not_already_an_example() -> None:
    from argus.kernels.registry import get_kernel

    examples = ("vector_add", "softmax")
    assert closest_kernel(Family.REDUCTION, examples) == "layer_norm"  # softmax is shown already
    assert closest_kernel(Family.REDUCTION) == "softmax"
    assert closest_kernel(Family.POINTWISE, examples) == "vector_add"  # nothing closer: the example is named
    assert closest_kernel(Family.MATMUL, examples) == "gemm_naive"
    # a gather summed is a reduction, a pointwise tail does not make it pointwise
    assert group_family([Family.POINTWISE, Family.INDEXING, Family.REDUCTION, Family.POINTWISE]) is Family.REDUCTION
    assert group_family([Family.POINTWISE, Family.LAYOUT]) is Family.LAYOUT
    with pytest.raises(ValueError, match="a group has an operator"):
        group_family([Family.VIEW])
    assert set(CLOSEST) == set(Family) - {Family.VIEW}  # every family an uncovered operator can have
    for names in CLOSEST.values():
        for name in names:
            assert get_kernel(name).name == name
