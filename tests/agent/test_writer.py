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
