"""The LLM path of `argus solve` (`argus.agent.writer.KernelWriter`) against the scripted local server: what the
model is shown (the reference, the tensors, the rules, the DSL sheet read from argus.lang, two whole example
kernels), an accepted kernel gated in a sandbox, and repair over turns — a wrong result comes back with how many
elements are off and where, and the next answer that fixes it is accepted; a module that breaks the rules, or no
code, is said and retried; turns run out with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus.agent.writer import KernelWriter, TensorArg, WriteRequest, reference_sheet
from argus.eval.gate import GateOptions
from tests.agent.llm_server import ok

N = 1200

KERNEL = """
import argus
import argus.lang as T


@argus.kernel
def triple(X: T.Tensor[({n},), T.f32], OUT: T.Tensor[({n},), T.f32], BLOCK: int = 512):
    with T.grid(T.cdiv({n}, BLOCK), threads=128) as (b,):
        x = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(X.tile(b, BLOCK), x)
        T.copy(x * {factor}, OUT.tile(b, BLOCK))
"""


def _answer(factor: str, prose: str = "Here it is.") -> str:
    return f"{prose}\n```python\n{KERNEL.format(n=N, factor=factor)}```\n"


def _request() -> WriteRequest:
    return WriteRequest(
        "triple",
        "def reference(X):\n    return X * 3.0\n",
        lambda x: x * 3.0,
        [TensorArg("X", (N,), "f32"), TensorArg("OUT", (N,), "f32", output=True)],
        what="aten.mul.Tensor",
    )


@pytest.fixture
def writer(make, tmp_path: Path) -> KernelWriter:
    return KernelWriter(make(), tmp_path / "written", turns=3, options=GateOptions(trials=2, device="cpu"))


def test_the_first_message_holds_what_a_kernel_engineer_needs(server, writer: KernelWriter) -> None:
    server.script += [ok(_answer("3.0"))]
    out = writer.write(_request())
    assert out.ok and out.turns == 1 and out.function == "triple" and Path(out.path).read_text() == out.source
    system, user = server.requests[0].body["messages"]
    text = user["content"]
    assert "def reference(X):\n    return X * 3.0" in text and "(aten.mul.Tensor)" in text
    assert "- X: f32 (1200,), input" in text and "- OUT: f32 (1200,), output" in text
    assert "threads=128" in text and "T.copy(src, dst" in text and "X.window(origin, shape, bound=None)" in text
    assert "def vector_add(" in text and "LOG2E = " in text  # two whole examples, self-contained
    assert "You write a kernel." in system["content"]


def test_a_wrong_result_is_sent_back_with_where_and_the_fix_is_accepted(server, writer: KernelWriter) -> None:
    server.script += [ok(_answer("2.0")), ok(_answer("3.0", "Fixed: the factor is 3."))]
    out = writer.write(_request())
    assert out.ok and out.turns == 2, out.feedback
    (lines,) = out.feedback
    assert "CORRECT_MISMATCH" in lines[0] and "elements outside tolerance" in lines[0] and "worst at [" in lines[0]
    retry = server.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "worst at [" in retry[-1]["content"] and "got " in retry[-1]["content"]


def test_broken_rules_and_missing_code_are_said_and_turns_run_out(server, writer: KernelWriter) -> None:
    evil = "import os\n" + KERNEL.format(n=N, factor="3.0")
    server.script += [ok(f"```python\n{evil}```"), ok("I cannot do that."), ok(_answer("4.0"))]
    out = writer.write(_request())
    assert not out.ok and out.turns == 3 and out.source is None
    assert "breaks the DSL's rules" in out.feedback[0][0] and "os" in out.feedback[0][0]
    assert "no ```python code block" in out.feedback[1][0]
    assert "CORRECT_MISMATCH" in out.reason
    assert len(server.requests) == 3


def test_the_sheet_is_read_from_the_dsl() -> None:
    import argus.lang as T

    sheet = reference_sheet()
    public = [n for n in dir(T) if not n.startswith("_") and callable(getattr(T, n))]
    assert "T.reduce_sum(x, axis=1): Sum along `axis` of a 2-D fragment" in sheet
    assert sum(1 for line in sheet.splitlines() if line.startswith("T.")) >= 0.6 * len(public)
    json.dumps(sheet)  # plain text


INT_PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 3  # int32: no template takes it


def get_inputs():
    return [torch.randint(-50, 50, (1200,), dtype=torch.int32)]


def get_init_inputs():
    return []
"""

INT_KERNEL = """
import argus
import argus.lang as T


@argus.kernel
def written_0(IN0: T.Tensor[(1200,), T.i32], OUT: T.Tensor[(1200,), T.i32], BLOCK: int = 512):
    with T.grid(T.cdiv(1200, BLOCK), threads=128) as (b,):
        x = T.alloc_fragment((BLOCK,), T.i32)
        T.copy(IN0.tile(b, BLOCK), x)
        T.copy(x * {factor}, OUT.tile(b, BLOCK))
"""


def test_solve_with_the_llm_path_repairs_a_counterexample_and_solves(server, make, tmp_path: Path) -> None:
    """The issue's end-to-end case: argus solve asks the model for the operator no template covers, the first
    kernel is wrong, the mismatch goes back, the second is accepted and the problem is solved by the gate."""
    from argus.agent.writer import solve_writer
    from argus.frontend import solve

    problem = tmp_path / "ints.py"
    problem.write_text(INT_PROBLEM)
    server.script += [
        ok(f"```python\n{INT_KERNEL.format(factor=2)}```"),
        ok(f"Fixed.\n```python\n{INT_KERNEL.format(factor=3)}```"),
    ]
    options = GateOptions(trials=2, device="cpu")
    writer = solve_writer(make(), tmp_path / "written", turns=3, options=options)
    result = solve(problem, out=tmp_path / "s.py", options=options, writer=writer)
    assert result.status() == "solved", (result.uncovered, result.gate)
    (kernel,) = result.kernels
    assert kernel.family == "written" and "after 2 answer(s)" in kernel.verify_summary
    first = server.requests[0].body["messages"][1]["content"]
    assert "torch.ops.aten.mul.Tensor(IN0, 3)" in first and "- IN0: i32 (1200,), input" in first
    repair = server.requests[1].body["messages"][-1]["content"]
    assert "CORRECT_MISMATCH" in repair and "first at [0]: 2 != 3" in repair  # where, and the values
    assert "T.copy(x * 3, OUT.tile(b, BLOCK))" in (tmp_path / "s.py").read_text()


def test_the_command_takes_the_configured_llm(server, tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from argus.cli.main import app
    from tests.agent.conftest import KEY

    problem = tmp_path / "ints.py"
    problem.write_text(INT_PROBLEM)
    for name, value in (("PROVIDER", "openai"), ("BASE_URL", server.openai_base_url), ("MODEL", "gpt-4o"),
                        ("API_KEY", KEY), ("CACHE", "off")):  # fmt: skip
        monkeypatch.setenv(f"ARGUS_LLM_{name}", value)
    monkeypatch.chdir(tmp_path)
    server.script += [ok(f"```python\n{INT_KERNEL.format(factor=3)}```")]
    args = ["solve", str(problem), "--llm", "--device", "cpu", "--trials", "2", "--out", "s.py"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "written_0" in result.output and "written" in result.output and ": solved" in result.output
    assert KEY not in result.output
    bad = CliRunner().invoke(app, ["solve", str(problem), "--llm", "--turns", "0"])
    assert bad.exit_code == 2 and "--turns is at least 1" in bad.output


CHAIN_PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.fmod(x * 3 + y, 7)  # int32, and fmod: no template takes these three operators


def get_inputs():
    return [torch.randint(-50, 50, (1200,), dtype=torch.int32), torch.randint(-50, 50, (1200,), dtype=torch.int32)]


def get_init_inputs():
    return []
"""

CHAIN_KERNEL = """
import argus
import argus.lang as T


@argus.kernel
def written_0(
    IN0: T.Tensor[(1200,), T.i32], IN1: T.Tensor[(1200,), T.i32], OUT: T.Tensor[(1200,), T.i32], BLOCK: int = 512
):
    with T.grid(T.cdiv(1200, BLOCK), threads=128) as (b,):
        x = T.alloc_fragment((BLOCK,), T.i32)
        y = T.alloc_fragment((BLOCK,), T.i32)
        T.copy(IN0.tile(b, BLOCK), x)
        T.copy(IN1.tile(b, BLOCK), y)
        T.copy(T.fmod(x * 3 + y, 7), OUT.tile(b, BLOCK))
"""

CHAIN = ["aten.mul.Tensor", "aten.add.Tensor", "aten.fmod.Scalar"]


def _recorded(writer, asked: list):
    def write(request):
        asked.append(request)
        return writer(request)

    return write


def test_a_chain_of_uncovered_operators_is_one_kernel_and_solves(server, make, tmp_path: Path) -> None:
    """Three connected operators no template covers are one request (its reference the chain, one ATen call a
    line, computing what they compute), the model's one kernel runs in place of all three and the problem is
    solved by the gate."""
    import torch

    from argus.agent.writer import solve_writer
    from argus.frontend import solve

    problem = tmp_path / "chain.py"
    problem.write_text(CHAIN_PROBLEM)
    server.script += [ok(f"```python\n{CHAIN_KERNEL}```")]
    options = GateOptions(trials=2, device="cpu")
    asked: list = []
    writer = _recorded(solve_writer(make(), tmp_path / "written", turns=2, options=options), asked)
    result = solve(problem, out=tmp_path / "s.py", options=options, writer=writer)
    (request,) = asked
    assert request.ops == CHAIN and request.inputs == ["x", "y"] and request.node == "fmod"
    assert request.reference_source == (
        "def reference(IN0, IN1):\n"
        "    mul = torch.ops.aten.mul.Tensor(IN0, 3)\n"
        "    add = torch.ops.aten.add.Tensor(mul, IN1)\n"
        "    return torch.ops.aten.fmod.Scalar(add, 7)\n"
    )
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randint(-1000, 1000, (1200,), dtype=torch.int32, generator=g) for _ in range(2))
    assert torch.equal(request.reference(x, y), torch.fmod(x * 3 + y, 7))
    assert result.status() == "solved", (result.uncovered, result.gate)
    assert result.groups == [{"kernel": "written_0", "family": "written", "ops": CHAIN}]
    (kernel,) = result.kernels
    assert kernel.family == "written" and kernel.ops == CHAIN
    forward = (tmp_path / "s.py").read_text().split("def forward", 1)[1]
    assert "_launch(written_0, [x, y, fmod], [(1200,), (1200,), (1200,)])" in forward
    assert "torch.ops.aten" not in forward  # none of the group's operators stays an ATen call
    (first,) = [r.body["messages"][1]["content"] for r in server.requests]
    assert "torch.ops.aten.fmod.Scalar(add, 7)" in first and "- IN1: i32 (1200,), input" in first
    # pointwise: the closest library kernel is vector_add, one of the examples, so it is named and not repeated
    assert "Start from the example vector_add above" in first and first.count("def vector_add(") == 1


REDUCTION_PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sum(x * 5, dim=1)  # int32 rows summed to int64: no template takes either operator


def get_inputs():
    return [torch.randint(-50, 50, (8, 40), dtype=torch.int32)]


def get_init_inputs():
    return []
"""


def test_a_group_with_no_accepted_kernel_leaves_every_operator_uncovered(server, make, tmp_path: Path) -> None:
    """A reduction-like group starts from the library's closest kernel not shown already (layer_norm: softmax is an
    example), and when no answer is accepted each of its operators is reported not covered with the reason."""
    from argus.agent.writer import solve_writer
    from argus.frontend import solve

    problem = tmp_path / "rows.py"
    problem.write_text(REDUCTION_PROBLEM)
    server.script += [ok("I cannot write that one.")]
    options = GateOptions(trials=2, device="cpu")
    writer = solve_writer(make(), tmp_path / "written", turns=1, options=options)
    result = solve(problem, out=tmp_path / "s.py", options=options, writer=writer, judge=False)
    assert len(server.requests) == 1  # the two operators are one request
    first = server.requests[0].body["messages"][1]["content"]
    assert "mul = torch.ops.aten.mul.Tensor(IN0, 5)" in first and "aten.sum.dim_IntList(mul, [1])" in first
    assert "- OUT: i64 (8,), output" in first
    assert "Start from this kernel (the library's layer_norm, the closest to the reference):" in first
    assert "def layer_norm(" in first and first.count("def softmax(") == 1
    why = "no accepted kernel in 1 answer(s): the answer could not be used: the answer holds no ```python code block"
    assert [(u["op"], u["writer"]) for u in result.uncovered] == [
        ("aten.mul.Tensor", why),
        ("aten.sum.dim_IntList", why),
    ]
    assert not result.kernels and not result.groups
    text = (tmp_path / "s.py").read_text()
    assert "torch.ops.aten.mul.Tensor(x, 5)  # not covered" in text and "written_0" not in text


def test_the_prompt_names_an_example_to_start_from_rather_than_repeating_it(writer: KernelWriter) -> None:
    request = _request()
    request.start_from_kernel = "vector_add"
    (text,) = [m["content"] for m in writer.prompt(request) if m["role"] == "user"]
    assert "Start from the example vector_add above" in text and text.count("def vector_add(") == 1
    request.start_from_kernel = "layer_norm"
    with pytest.raises(ValueError, match="'layer_norm' without its source"):
        writer.prompt(request)
