"""`argus kernelbench --generate` (`argus.frontend.level`): argus solve over a level's problems in worker processes,
then the judge; the rows say what was covered, a problem solve refuses is a rejected row with solve's code (never
judged from an older file), hand-written solutions are never overwritten, and a run resumes from its store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from argus.cli.main import app
from argus.diagnostics import ArgusError
from argus.eval.executor import LocalExecutor
from argus.eval.gate import GateOptions
from argus.eval.kernelbench import read_csv
from argus.eval.store import ResultStore
from argus.frontend.emit import GENERATED_MARK
from argus.frontend.level import SOLVE_KEY, solve_level, written_by_solve

_HEAD = (
    "import torch\nimport torch.nn as nn\n\n\n"
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
)
_TAIL = (
    "\n\nrows = 6\ncols = 40\n\n\ndef get_inputs():\n    return [torch.randn(rows, cols)]\n\n\n"
    "def get_init_inputs():\n    return []\n"
)

PROBLEMS = {
    # every operator in the pointwise family: solved
    "1_Swishy.py": _HEAD + "    def forward(self, x):\n        return x * torch.sigmoid(x) + 1.5" + _TAIL,
    # a sort is in no family: correct, not covered
    "2_Sorted.py": _HEAD + "    def forward(self, x):\n        return torch.sort(x, dim=1)[0] * 2.0" + _TAIL,
    # NumPy on the tensor's data: torch.export refuses it, and torch._dynamo's graph of it (NumPy traced through
    # its own wrappers) is no problem file either, so solve writes no solution
    "3_Numpy.py": _HEAD.replace("import torch\n", "import numpy as np\nimport torch\n", 1)
    + "    def forward(self, x):\n        return torch.from_numpy(np.sort(x.numpy(), axis=1))"
    + _TAIL,
}


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    root = tmp_path / "problems"
    (root / "level1").mkdir(parents=True)
    for name, text in PROBLEMS.items():
        (root / "level1" / name).write_text(text)
    return root


def _solve(problems: Path, out: Path, tmp_path: Path, ids: list[int], **kw: Any) -> Any:
    solved: list[str] = []
    with LocalExecutor(1, timeout_s=300.0) as executor:
        report = solve_level(
            problems,
            1,
            out,
            executor=executor,
            problems=ids,
            options=GateOptions(trials=2, device="cpu"),
            store_path=tmp_path / "kb.sqlite",
            csv_path=tmp_path / "kb.csv",
            on_solved=lambda p, payload: solved.append(p.key),
            **kw,
        )
    report.solved_now = solved
    return report


def test_generate_judge_and_resume(problems: Path, tmp_path: Path) -> None:
    out = tmp_path / "solutions"
    out.mkdir()
    # an earlier run's solution of the problem solve now refuses: removed, never judged for this run
    (out / "3_Numpy.py").write_text(f'"""ModelNew for old, {GENERATED_MARK} long ago."""\nclass ModelNew: pass\n')
    report = _solve(problems, out, tmp_path, [1, 2, 3])
    assert sorted(report.solved_now) == ["level1/1_Swishy", "level1/2_Sorted", "level1/3_Numpy"]
    rows = {r.problem_id: r for r in report.kernelbench.rows}
    assert rows[1].correct and rows[1].covered is True and rows[1].uncovered == ""
    assert rows[2].correct and rows[2].covered is False and "sort" in rows[2].uncovered
    assert rows[3].verdict == "rejected" and rows[3].code == "SOLVE_EXPORT" and rows[3].covered is None
    assert "no solution was generated" in rows[3].reason
    assert not (out / "3_Numpy.py").exists()
    assert written_by_solve(out / "1_Swishy.py") and written_by_solve(out / "2_Sorted.py")
    assert report.kernelbench.summary["solved"] == 1 and report.kernelbench.summary["correct"] == 2
    csv = {int(r["problem_id"]): r for r in read_csv(tmp_path / "kb.csv")}
    assert (csv[1]["covered"], csv[2]["covered"], csv[3]["covered"]) == ("True", "False", "")
    with ResultStore(tmp_path / "kb.sqlite") as store:
        keys = {r["key"] for r in store.results(report.run_id)}
    assert {SOLVE_KEY + "level1/1_Swishy", "level1/1_Swishy", "level1/3_Numpy"} <= keys

    # resumed: nothing is solved or judged again; a solution file that went away is solved again
    (out / "2_Sorted.py").unlink()
    again = _solve(problems, out, tmp_path, [1, 2, 3], resume=report.run_id)
    assert again.solved_now == ["level1/2_Sorted"]
    assert [r.problem_id for r in again.kernelbench.rows] == [1, 2, 3]
    assert again.kernelbench.summary["solved"] == 1

    # the directory moved (another machine): its solutions are found there by name, and judged from there
    moved = tmp_path / "moved"
    out.rename(moved)
    with ResultStore(tmp_path / "kb.sqlite") as store:
        store.put(report.run_id, "level1/1_Swishy", "gone", {"note": "no row: judged again"})
    third = _solve(problems, moved, tmp_path, [1, 2], resume=report.run_id)
    assert third.solved_now == [] and third.generated[1].solution == str(moved.resolve() / "1_Swishy.py")
    assert third.kernelbench.rows[0].correct and third.kernelbench.rows[0].covered is True


def test_hand_written_solutions_are_never_overwritten(problems: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    mine = "class ModelNew:  # written by hand\n    pass\n"
    (out / "1_Swishy.py").write_text(mine)
    with pytest.raises(ArgusError) as e, LocalExecutor(1, timeout_s=60.0) as executor:
        solve_level(problems, 1, out, executor=executor, problems=[1, 2])
    assert e.value.code == "SOLVE_WRITE" and "1_Swishy.py" in str(e.value)
    assert (out / "1_Swishy.py").read_text() == mine and sorted(p.name for p in out.iterdir()) == ["1_Swishy.py"]


def test_cli_generate_without_judging_and_bad_flags(problems: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "sol"
    base = ["kernelbench", "--problems", str(problems), "--only", "1,2"]
    result = runner.invoke(app, [*base, "--generate", "--no-judge", "--solutions", str(out), "--json", "-"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["generated"]["1"]["covered"] is True and doc["generated"]["2"]["covered"] is False
    assert sorted(p.name for p in out.iterdir()) == ["1_Swishy.py", "2_Sorted.py"]
    for bad, says in (
        (["--no-judge"], "--no-judge goes with --generate"),
        (["--resume", "abc"], "--resume RUN needs --store"),
        (["--generate", "--solutions", "identity"], "not 'identity'"),
    ):
        result = runner.invoke(app, [*base, *bad])
        assert result.exit_code == 2 and says in result.output, result.output


def test_a_run_resumed_without_only_continues_over_its_own_problems(problems: Path, tmp_path: Path) -> None:
    # `--generate --resume RUN` without --only once took the whole level and solved every other problem of it on the
    # machine that resumed (session 29 lost nine minutes of GPU time so): the run's recorded ids decide now
    from argus.eval.kernelbench import run_selection

    runner = CliRunner()
    out, store = tmp_path / "sol", tmp_path / "kb.sqlite"
    base = ["kernelbench", "--problems", str(problems), "--solutions", str(out), "--store", str(store)]
    result = runner.invoke(app, [*base, "--only", "1", "--generate", "--no-judge"])
    assert result.exit_code == 0, result.output
    (run,) = [r for r in ResultStore(store).runs() if r["kind"] == "kernelbench"]
    assert run_selection(store, run["id"]) == [1]
    result = runner.invoke(app, [*base, "--generate", "--no-judge", "--resume", run["id"]])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["1_Swishy.py"]  # 2 and 3 neither solved nor judged
    with ResultStore(store) as s:
        assert {r["key"] for r in s.results(run["id"])} == {SOLVE_KEY + "level1/1_Swishy"}
    # a run recorded before runs kept their ids: the problems it has results for
    with ResultStore(store) as s:
        old = s.start_run("kernelbench", {"level": 1, "solutions": str(out), "problems": 2})
        s.put(old, SOLVE_KEY + "level1/2_Sorted", "not judged", {"solve": {}})
        s.put(old, "level1/3_Numpy", "rejected", {"row": {}})
    assert run_selection(store, old) == [2, 3]
    with pytest.raises(ArgusError) as e:
        run_selection(store, "nosuchrun")
    assert e.value.code == "TASK_KERNELBENCH_RESUME"
