"""The capture fallback (`argus.frontend.dynamo`): a problem ``torch.export`` cannot capture is solved as the graphs
``torch._dynamo`` splits its forward into — each graph's kernels generated, verified and checked as any problem's,
one solution file routing each graph dynamo compiles to them, judged by the gate in its sandbox; a graph no capture
saw runs in PyTorch and is said; a problem dynamo cannot take either is still ``SOLVE_EXPORT``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from argus.eval.candidates import import_file
from argus.eval.gate import GateOptions
from argus.frontend import solve
from argus.frontend.capture import REAL_CAPTURE_ELEMENTS
from argus.frontend.dynamo import PROBE_DRAWS, capture_graphs, graph_key
from argus.frontend.errors import FrontendError
from argus.frontend.partition import propose


def _problem(path: Path, forward: str, *, init: str = "[]", inputs: str = "[torch.randn(rows, cols)]") -> Path:
    path.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n"
        "    def __init__(self, *args):\n        super().__init__()\n        self.args = args\n"
        "        self.bias = torch.nn.Parameter(torch.randn(8))\n\n"
        f"    def forward(self, x):\n{forward}\n\n\n"
        "rows, cols = 4, 8\n\n\n"
        f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n"
    )
    return path


#: y = relu(x) + bias, then a branch on the sign of x's sum: torch.export refuses it; dynamo compiles the graph
#: before the branch (its condition a comparison) and one graph for each side
BRANCHY = (
    "        y = torch.relu(x) + self.bias\n"
    "        if x.sum() > 0:\n"
    "            return y * self.args[0]\n"
    "        return y - 1.0"
)


@pytest.fixture(scope="module")
def branchy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """(the solve result, the problem) of `BRANCHY`, solved and judged once for the tests below (about 15 s)."""
    root = tmp_path_factory.mktemp("branchy")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ARGUS_CACHE_DIR", str(root / "cache"))
        path = _problem(root / "branchy.py", BRANCHY, init="[2.0]")
        result = solve(path, out=root / "solution.py", options=GateOptions(trials=3, device="cpu"))
        yield result, path


def _both_signs() -> list[torch.Tensor]:
    """Fresh inputs, one taking each side of the branch."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(123))
    return [x.abs() + 0.1, -x.abs() - 0.1]


def _built(module_class: type, init: list[Any]) -> Any:
    """`module_class(*init)` built as the judge builds the reference and the solution: the generator at 0 first,
    so both have the same weights."""
    torch.manual_seed(0)
    return module_class(*init)


def test_a_branch_on_a_tensor_value_is_solved_graph_by_graph(branchy: tuple[Any, Path]) -> None:
    result, path = branchy
    # the report: three graphs, where dynamo broke the forward and why, each graph's kernels named by graph
    assert "captured by torch._dynamo as 3 graph(s)" in result.captured
    assert "branchy.py:12 (a branch on a tensor's value" in result.captured
    groups = [(g["kernel"], g["ops"]) for g in result.groups]
    if propose(torch.fx.symbolic_trace(torch.nn.ReLU()), bool, vertical_only=True) is None:
        # torch 2.11's partitioner merges relu -> add with the comparison side by side and cannot be asked for
        # chains only: the refused group becomes one kernel per operator (`argus.frontend.partition.propose`)
        assert [ops for _, ops in groups] == [["relu"], ["add"], ["sum"], ["gt"], ["mul"], ["sub"]], groups
    else:
        assert groups == [
            ("g0_pointwise_0", ["relu", "add"]), ("g0_reduction_1", ["sum"]), ("g0_pointwise_2", ["gt"]),
            ("g1_pointwise_0", ["mul"]), ("g2_pointwise_0", ["sub"]),
        ]  # fmt: skip
    assert all(k.verdict == "verified" and k.interpreter_ok for k in result.kernels)
    # the gate ran the file written, in its sandbox, against the problem (torch.compile inside the sandbox)
    assert result.gate.verdict == "accepted" and result.gate.environment["sandbox"]
    # the branch's condition is a comparison whose boolean leaves its graph: a kernel that stores a bool tensor
    assert result.uncovered == [] and result.status() == "solved" and result.solved

    text = Path(result.solution).read_text()
    for graph in ("g0", "g1", "g2"):
        assert f"'{graph}', Graph{graph[1]}, ()" in text  # each graph routed by its key to its module
    modules = "".join(re.findall(r"\nclass Graph\d\(.*?(?=\n\n\n)", text, re.S))
    assert modules.count("_launch(") == len(groups) and "torch.ops." not in modules  # a launch a kernel, no ATen call


def test_the_solution_file_matches_the_reference_on_both_branches(branchy: tuple[Any, Path]) -> None:
    result, path = branchy
    module = import_file(Path(result.solution), "branchy_solution")
    model = _built(module.ModelNew, [2.0])
    reference = _built(import_file(path, "branchy_reference").Model, [2.0])
    with torch.no_grad():
        for x in _both_signs():
            torch.testing.assert_close(model(x), reference(x), rtol=1e-5, atol=1e-5)
    # both sides ran in argus kernels: every graph dynamo compiled was one the capture had solved
    assert sorted(model.router.routed) == ["g0", "g1", "g2"] and model.router.eager == []


def test_a_graph_no_capture_saw_runs_in_pytorch_and_is_recorded(branchy: tuple[Any, Path]) -> None:
    result, path = branchy
    module = import_file(Path(result.solution), "branchy_solution_unknown")
    model = _built(module.ModelNew, [2.0])
    reference = _built(import_file(path, "branchy_reference").Model, [2.0])
    # as if the capture had never taken the negative side: its graph is unknown to the router
    negative_key = next(key for key, (label, _, _) in module._GRAPHS.items() if label == "g2")
    del model.router.graphs[negative_key]
    positive, negative = _both_signs()
    with torch.no_grad(), pytest.warns(UserWarning, match="runs in PyTorch, not in argus kernels"):
        torch.testing.assert_close(model(negative), reference(negative), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model(positive), reference(positive), rtol=1e-5, atol=1e-5)
    assert model.router.eager == [negative_key] and sorted(model.router.routed) == ["g0", "g1"]


def test_a_branch_whose_graphs_are_all_covered_is_solved(tmp_path: Path) -> None:
    # the condition is a float tensor's truth (nonzero where the sum is positive): no boolean leaves a graph
    path = _problem(tmp_path / "truthy.py", "        return torch.relu(x) * 2.0 if torch.relu(x.sum()) else x - 1.0")
    result = solve(path, out=tmp_path / "s.py", options=GateOptions(trials=3, device="cpu"))
    assert "captured by torch._dynamo as 3 graph(s)" in result.captured
    assert {g["graph"] for g in result.groups} == {"g0", "g1", "g2"} and result.uncovered == []
    assert result.status() == "solved" and result.solved, (result.uncovered, result.gate)


def test_a_value_folded_into_the_next_graph_is_not_covered(tmp_path: Path) -> None:
    """``float(x.max())`` breaks the graph and the next graph holds the number as a constant: each draw compiles
    another graph, so the fresh draws after the capture find graphs it did not see."""
    path = _problem(tmp_path / "item.py", "        return x * float(x.max())")
    refused = FrontendError("SOLVE_EXPORT", "torch.export cannot capture item.py")
    graphs = capture_graphs(path, None, refused)
    assert len(graphs.unseen) == PROBE_DRAWS and all(ops == "mul" for _, ops in graphs.unseen)
    assert "Tensor.item()" in graphs.breaks


def test_inputs_too_large_to_draw_keep_the_export_error(tmp_path: Path) -> None:
    side = int(REAL_CAPTURE_ELEMENTS**0.5) + 1
    path = _problem(tmp_path / "big.py", BRANCHY, init="[2.0]", inputs=f"[torch.randn({side}, {side})]")
    refused = FrontendError("SOLVE_EXPORT", "torch.export cannot capture big.py")
    with pytest.raises(FrontendError) as err:
        capture_graphs(path, None, refused)
    assert err.value.code == "SOLVE_EXPORT" and err.value.message.startswith("torch.export cannot capture big.py")
    assert "too large to draw here" in err.value.message and "--shape" in err.value.message


def test_a_graph_key_is_its_code_and_its_inputs_shapes_not_its_device() -> None:
    class Scaled(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2.0

    gm = torch.fx.symbolic_trace(Scaled())
    key = graph_key(gm, [torch.randn(4, 8)])
    assert key == graph_key(gm, [torch.zeros(4, 8)])
    assert key != graph_key(gm, [torch.randn(4, 9)]) and key != graph_key(gm, [torch.randn(4, 8).double()])
    cpu, gpu = "device(type='cpu')", "device(type='cuda', index=0)"
    fake = type("Code", (), {})
    a, b = fake(), fake()
    a.code, b.code = f"torch.zeros(3, device={cpu})", f"torch.zeros(3, device={gpu})"
    assert graph_key(a, []) == graph_key(b, [])


def test_a_problem_dynamo_cannot_take_either_is_solve_export(tmp_path: Path) -> None:
    (tmp_path / "numpy_sort.py").write_text(
        "import numpy as np\nimport torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.from_numpy(np.sort(x.numpy()))\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    run = subprocess.run([sys.executable, "-m", "argus", "solve", "numpy_sort.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == 2 and "[SOLVE_EXPORT] torch.export cannot capture numpy_sort.py" in run.stderr
    assert "the torch._dynamo fallback cannot take it either" in run.stderr and "which no import names" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "numpy_sort_solution.py").exists()
