"""Capture and classification on small modules of our own: shapes and dtypes are known, every operator gets its
family, pointwise chains are grouped by the partitioner with their own subgraphs, everything else is listed as not
covered, and bad input gives a code, never a crash."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from argus.diagnostics import ArgusError
from argus.frontend import Family, FrontendError, capture, classify, partition


def _families(path: Path) -> dict[str, Family]:
    cap = capture(path)
    return {n.name: classify(n) for n in cap.graph_module.graph.nodes if n.op == "call_function"}


def test_capture_knows_shapes_dtypes_and_overrides_sizes(problem: Callable[..., Path]) -> None:
    path = problem("torch.relu(x) * y", inputs="[torch.randn(size, 8), torch.randn(size, 8)]", args="x, y")
    cap = capture(path, {"size": 3})
    assert [(s.name, s.kind, s.shape, s.dtype) for s in cap.inputs] == [
        ("x", "tensor", (3, 8), torch.float32),
        ("y", "tensor", (3, 8), torch.float32),
    ]
    assert cap.sizes == {"size": 3} and cap.single_output
    ops = [str(n.target) for n in cap.graph_module.graph.nodes if n.op == "call_function"]
    assert ops == ["aten.relu.default", "aten.mul.Tensor"]


def test_every_operator_is_classified(problem: Callable[..., Path]) -> None:
    body = "torch.softmax(x @ w, dim=1).cumsum(1).sum(0) + F.max_pool1d(x[None], 2).sum()"
    path = problem(body, inputs="[torch.randn(4, 8), torch.randn(8, 8)]", args="x, w")
    families = set(_families(path).values())
    assert {Family.MATMUL, Family.SOFTMAX, Family.SCAN, Family.REDUCTION, Family.POOLING, Family.POINTWISE} <= families


def test_pointwise_chains_are_grouped_and_the_rest_is_not_covered(problem: Callable[..., Path]) -> None:
    path = problem("torch.relu(torch.flip(torch.sigmoid(x) * 2.0, [2]) + 1.0)", inputs="[torch.randn(2, 4, 4)]")
    part = partition(capture(path))
    assert [g.ops for g in part.groups] == [["sigmoid", "mul"], ["add", "relu"]]
    assert [(u.op, u.family) for u in part.uncovered] == [("aten.flip.default", Family.LAYOUT)]
    assert "data movement" in part.uncovered[0].reason
    # each group keeps its own subgraph: the reference its kernel is checked against
    x = torch.randn(2, 4, 4)
    first = part.groups[0].subgraph
    assert torch.equal(first(x), torch.sigmoid(x) * 2.0)


def test_an_operator_the_template_cannot_take_says_why(problem: Callable[..., Path]) -> None:
    # a and b vary along different dimensions beside the columns: no tile's rows hold both (4 canonical dimensions)
    inputs = "[torch.rand(2, 3, 4, 5) > 0.5, torch.randn(2, 1, 1, 1), torch.randn(1, 1, 4, 1)]"
    path = problem("torch.where(c, a, b)", inputs=inputs, args="c, a, b")
    part = partition(capture(path))
    assert not part.groups
    assert part.uncovered[0].family is Family.POINTWISE and "repeats along both dimensions" in part.uncovered[0].reason


def test_a_scalar_argument_is_bound_to_the_constant_it_became(problem: Callable[..., Path]) -> None:
    path = problem("x * s", inputs="[torch.randn(4, 8), 3.5]", args="x, s")
    cap = capture(path)
    assert cap.scalar_uses == {"s": [("mul", 1)]} and not cap.specialized
    folded = problem("x * (1 - s)", inputs="[torch.randn(4, 8), 0.25]", args="x, s", name="folded")
    assert capture(folded).specialized == ["s"]


def test_a_model_that_does_not_export_is_a_clear_error(problem: Callable[..., Path]) -> None:
    path = problem("x * 2 if x.sum() > 0 else x")
    with pytest.raises(FrontendError) as err:
        capture(path)
    assert err.value.code == "SOLVE_EXPORT" and "p.py" in err.value.message
    # torch._dynamo's view: where the graph breaks, on the problem's line, and why in words
    assert "torch._dynamo breaks its graph at p.py:" in err.value.message
    assert "a branch on a tensor's value" in err.value.message


def test_a_file_without_model_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.py"
    path.write_text("import torch\n\ndef get_inputs():\n    return [torch.randn(2)]\n")
    with pytest.raises(ArgusError) as err:
        capture(path)
    assert err.value.code == "TASK_KERNELBENCH_FORMAT"


def test_a_file_that_does_not_load_is_the_users_error_with_its_line(tmp_path: Path) -> None:
    """A problem importing a module this environment lacks (KernelBench level 3's Mamba2 imports einops), or with a
    bug at module level, is `TASK_PROBLEM_LOAD` naming the line and what to do: not an internal error of argus."""
    path = tmp_path / "needs.py"
    path.write_text("import torch\nimport not_installed_anywhere_xyz\n\nclass Model(torch.nn.Module):\n    pass\n")
    with pytest.raises(ArgusError) as err:
        capture(path)
    assert err.value.code == "TASK_PROBLEM_LOAD" and "(line 2)" in err.value.message
    assert "install 'not_installed_anywhere_xyz'" in (err.value.hint or "")
    path.write_text("import torch\n\nN = undefined_name + 1\n")
    with pytest.raises(ArgusError) as err:
        capture(path)
    assert err.value.code == "TASK_PROBLEM_LOAD" and "NameError" in err.value.message
    assert "(line 3)" in err.value.message


def test_inputs_that_cannot_be_drawn_are_a_clear_error(problem: Callable[..., Path]) -> None:
    path = problem("x", inputs="[torch.randn(-1)]")
    with pytest.raises(FrontendError) as err:
        capture(path)
    assert err.value.code == "SOLVE_INPUTS"


def test_the_model_is_captured_as_the_judge_runs_its_reference(problem: Callable[..., Path]) -> None:
    """The judge's reference (`argus.eval.correctness.module_reference`, as KernelBench's) is the model as its
    constructor leaves it, in training mode, called under ``torch.no_grad()``: the captured graph computes what that
    reference computes, however the forward depends on the mode."""
    from argus.eval.correctness import module_reference

    path = problem("x * 2.0 if self.training else x * 3.0")
    cap = capture(path)
    x = torch.randn(4, 8)
    (captured,) = cap.graph_module(x)
    assert torch.equal(captured, module_reference(cap.task, "cpu").run_native([x]))
    assert torch.equal(captured, x * 2.0)


def test_a_dropout_stays_a_dropout_left_to_pytorch(problem: Callable[..., Path]) -> None:
    """In training mode (the judge's) a dropout with p > 0 is random: it is captured as one, not as the identity it
    is in eval mode, and no template takes it; with p = 0 it is a copy, and the pointwise chain takes it."""
    part = partition(capture(problem("torch.relu(F.dropout(x, 0.5, training=self.training))")))
    assert [u.op for u in part.uncovered] == ["aten.native_dropout.default"]
    assert [g.ops for g in part.groups] == [["relu"]]
    identity = partition(capture(problem("torch.relu(F.dropout(x, 0.0, training=self.training))", name="p0")))
    assert not identity.uncovered and [g.ops for g in identity.groups] == [["clone", "relu"]]


def test_a_problem_at_kernelbench_size_is_captured_without_data(kernelbench_dir: Path) -> None:
    """17 GB of input (level 1's 2-d average pooling) and a parameterized module with a scalar argument: captured
    under the fake-tensor mode, shapes and dtypes exact, nothing allocated, the scalar still bound."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cap = capture(kernelbench_dir / "level1" / "45_Average_Pooling_2D.py")
    assert cap.fake and not cap.example
    assert [(s.shape, s.dtype) for s in cap.inputs] == [((16, 64, 2048, 2048), torch.float32)]
    bn = capture(kernelbench_dir / "level1" / "33_BatchNorm.py")
    assert bn.fake and "bn.weight" in bn.state.values()
    scaled = capture(kernelbench_dir / "level1" / "5_Matrix_scalar_multiplication.py")
    assert scaled.fake and scaled.scalar_uses == {"s": [("mul", 1)]} and not scaled.specialized
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 2 << 20  # KiB: under 2 GiB grown
    small = capture(kernelbench_dir / "level1" / "19_ReLU.py", {"batch_size": 2, "dim": 8})
    assert not small.fake and small.example


def test_a_large_model_that_needs_real_values_is_captured_with_data(tmp_path: Path) -> None:
    """A constructor that reads a value (``.item()``) cannot run under the fake-tensor mode: the capture falls back
    to a real draw rather than fail."""
    path = tmp_path / "item.py"
    path.write_text(
        "import torch\n\n\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.k = float(torch.randn(1).abs().item()) + 1.0\n\n"
        "    def forward(self, x):\n"
        "        return x * self.k\n\n\n"
        "def get_inputs():\n"
        "    return [torch.randn(4097, 4096)]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    cap = capture(path)
    assert not cap.fake and cap.example and cap.inputs[0].shape == (4097, 4096)
