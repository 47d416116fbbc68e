"""KernelBench: loading problems (with size overrides), finding solutions, the identity solution on a CPU sample
of level-1 and level-2 problems, wrong and cheating solutions, containment of crashing and hanging solutions,
the fast_p summary and the CSV."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from argus.eval.kernelbench import Row, evaluate_problem, read_csv, run_kernelbench, summarize, write_csv
from argus.eval.store import ResultStore
from argus.tasks import TaskError
from argus.tasks.kernelbench import (
    CPU_SAMPLE,
    ENV_DIR,
    ProblemFile,
    default_kernelbench_dir,
    discover,
    find_solution,
    load_problem,
    module_assignments,
)


def test_problems_directory_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    assert default_kernelbench_dir() == tmp_path
    monkeypatch.delenv(ENV_DIR)
    assert default_kernelbench_dir().name == "kernelbench"


def test_discover_by_level_and_id(kernelbench_dir: Path) -> None:
    level1 = discover(kernelbench_dir, 1)
    ids = [p.problem_id for p in level1]
    assert ids == sorted(ids) and 23 in ids and len(level1) >= 50
    (softmax,) = discover(kernelbench_dir, 1, [23])
    assert softmax.name == "Softmax" and softmax.key == "level1/23_Softmax"
    with pytest.raises(TaskError, match="no problem"):
        discover(kernelbench_dir, 1, [99999])
    with pytest.raises(TaskError, match="no level9"):
        discover(kernelbench_dir, 9)


def test_size_overrides_reach_dependent_assignments_and_get_inputs(kernelbench_dir: Path) -> None:
    (ce,) = discover(kernelbench_dir, 1, [95])
    task = load_problem(ce.path, {"batch_size": 4, "num_classes": 10})
    predictions, targets = task.sample(0)
    assert predictions.shape == (4, 10)  # input_shape = (num_classes,) was recomputed
    assert targets.shape == (4,) and int(targets.max()) < 10
    assert task.sizes == {"batch_size": 4, "num_classes": 10}
    (conv3d,) = discover(kernelbench_dir, 2, [23])
    task = load_problem(conv3d.path, {"batch_size": 1, "D": 5, "H": 6, "W": 7})  # a tuple assignment
    assert task.sample(0)[0].shape[2:] == (5, 6, 7)


def test_unknown_size_name_is_an_error_unless_lenient(kernelbench_dir: Path) -> None:
    (relu,) = discover(kernelbench_dir, 1, [19])
    with pytest.raises(TaskError) as e:
        load_problem(relu.path, {"batchsize": 2})
    assert e.value.code == "TASK_SIZE_UNKNOWN" and "batch_size" in str(e.value)
    task = load_problem(relu.path, {"batchsize": 2, "dim": 8}, strict=False)
    assert task.sizes == {"dim": 8}
    assert "batch_size" in module_assignments(relu.path.read_text())


def test_input_dtypes_are_found_without_allocating(kernelbench_dir: Path) -> None:
    (softmax,) = discover(kernelbench_dir, 1, [23])
    task = load_problem(softmax.path)  # full size: 4096 x 393216 floats, never allocated
    assert task.input_dtypes() == [torch.float32]


def _sample() -> list[tuple[int, int]]:
    return [(level, pid) for level, problems in CPU_SAMPLE.items() for pid in problems]


@pytest.mark.parametrize(("level", "problem_id"), _sample())
def test_identity_solution_is_correct(kernelbench_dir: Path, level: int, problem_id: int) -> None:
    (problem,) = discover(kernelbench_dir, level, [problem_id])
    out = evaluate_problem(problem, "identity", sizes=CPU_SAMPLE[level][problem_id], strict_sizes=True)
    row = out["row"]
    assert row["verdict"] == "accepted" and row["correct"], row["reason"]
    assert row["trials"] >= 5
    assert row["timing"] == "skipped: no CUDA GPU here"


def _solution(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_wrong_and_cheating_solutions_are_rejected(kernelbench_dir: Path, tmp_path: Path) -> None:
    (softmax,) = discover(kernelbench_dir, 1, [23])
    sizes = {"batch_size": 4, "dim": 4096}
    wrong_dim = _solution(
        tmp_path,
        "wrong.py",
        """
        import torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=0)
        """,
    )
    zeros = _solution(
        tmp_path,
        "zeros.py",
        """
        import torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.zeros_like(x)  # every value of the real answer is below 1e-3
        """,
    )
    tf32 = _solution(
        tmp_path,
        "tf32.py",
        """
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.softmax(x, dim=1)
        """,
    )
    codes = {}
    for path in (wrong_dim, zeros, tf32):
        row = evaluate_problem(softmax, path, sizes=sizes)["row"]
        assert row["verdict"] == "rejected" and not row["correct"]
        codes[path.stem] = row["code"]
    assert codes == {"wrong": "CORRECT_MISMATCH", "zeros": "CORRECT_MISMATCH", "tf32": "STATIC_PRECISION_TOGGLE"}


def test_find_solution_naming_conventions(tmp_path: Path) -> None:
    problem = ProblemFile(1, 23, "Softmax", Path("/problems/level1/23_Softmax.py"))
    assert find_solution(tmp_path, problem) is None
    (tmp_path / "level_1_problem_23_sample_0_kernel.py").write_text("")
    assert find_solution(tmp_path, problem).name == "level_1_problem_23_sample_0_kernel.py"
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "23_Softmax.py").write_text("")
    assert find_solution(tmp_path, problem) == tmp_path / "level1" / "23_Softmax.py"


def _row(pid: int, correct: bool, eager: float | None, compiled: float | None) -> Row:
    return Row(1, pid, f"p{pid}", "s", correct=correct, speedup_eager=eager, speedup_compile=compiled)


def test_fast_p_geomean_and_median() -> None:
    rows = [
        _row(1, True, 0.5, 0.4),
        _row(2, True, 1.2, 1.0),
        _row(3, True, 2.0, 1.6),
        _row(4, True, 4.0, 2.5),
        _row(5, False, None, None),
    ]
    s = summarize(rows)
    assert s["problems"] == 5 and s["correct"] == 4 and s["fast_0"] == pytest.approx(0.8)
    e = s["eager"]
    assert e["fast_1"] == pytest.approx(3 / 5) and e["fast_1.5"] == pytest.approx(2 / 5) and e["fast_2"] == 0.2
    assert e["geomean"] == pytest.approx((0.5 * 1.2 * 2.0 * 4.0) ** 0.25)
    assert e["median"] == pytest.approx(1.6)
    assert s["compile"]["fast_2"] == pytest.approx(1 / 5)
    untimed = summarize([_row(1, True, None, None), _row(2, False, None, None)])
    assert untimed["fast_0"] == 0.5 and untimed["eager"]["fast_1"] is None and untimed["eager"]["geomean"] is None


def test_csv_round_trip(tmp_path: Path) -> None:
    rows = [_row(1, True, 1.5, None), _row(2, False, None, None)]
    path = write_csv(rows, tmp_path / "out" / "kb.csv")
    back = read_csv(path)
    assert [r["problem_id"] for r in back] == ["1", "2"]
    assert back[0]["speedup_eager"] == "1.5" and back[0]["speedup_compile"] == ""


PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return torch.tanh(x) * self.factor


rows = 8
cols = 16


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return [2.0]
"""

_STUB = "class ModelNew:\n    def __init__(self, factor):\n        pass\n\n    def __call__(self, x):\n"
SOLUTIONS = {
    "1_Crash.py": "import os\n" + _STUB + "        os._exit(3)\n",
    "2_Segfault.py": "import ctypes\n" + _STUB + "        ctypes.string_at(0)\n",
    "3_Hang.py": "import time\n" + _STUB + "        time.sleep(600)\n",
    "4_Raise.py": "class ModelNew:\n    def __init__(self, factor):\n        raise RuntimeError('cannot build')\n",
    "5_Good.py": (
        "import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self, f):\n        super().__init__()\n"
        "        self.f = f\n\n    def forward(self, x):\n        return torch.tanh(x) * self.f\n"
    ),
}


def test_crashing_and_hanging_solutions_are_contained(tmp_path: Path) -> None:
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    (problems / "level1").mkdir(parents=True)
    solutions.mkdir()
    for name in [*SOLUTIONS, "6_Missing.py"]:
        (problems / "level1" / name).write_text(PROBLEM)
    for name, body in SOLUTIONS.items():
        (solutions / name).write_text(body)
    arrived = []
    written: list[int] = []  # the CSV's rows each time a row arrives: a run stopped from outside leaves them

    def arrive(row: Any) -> None:
        arrived.append(row.problem_id)
        written.append(len(read_csv(tmp_path / "kb.csv")))

    report = run_kernelbench(
        problems,
        1,
        solutions,
        workers=2,
        # long enough for a worker to start a solution's sandbox (import PyTorch) on a loaded 2-core machine:
        # at 4 s the crashing solution itself ran past the limit there, so the hang and the crash looked alike
        timeout_s=60.0,
        store_path=tmp_path / "runs.db",
        csv_path=tmp_path / "kb.csv",
        on_row=arrive,
    )
    by_id = {r.problem_id: r for r in report.rows}
    assert sorted(arrived) == [1, 2, 3, 4, 5, 6]
    assert written == [1, 2, 3, 4, 5, 6]
    # the solution runs in its sandbox, so its crash is that sandbox's, said by the correct stage
    assert (by_id[1].code, by_id[1].failed_stage) == ("SANDBOX_CRASHED", "correct")
    assert "status 3" in by_id[1].reason
    assert by_id[2].code == "SANDBOX_CRASHED" and "SIGSEGV" in by_id[2].reason
    assert by_id[3].code == "WORKER_TIMEOUT"  # the worker's limit (60 s) is shorter than the sandbox's own
    assert by_id[4].code == "COMPILE_INIT" and "cannot build" in by_id[4].reason
    assert by_id[5].correct and by_id[5].verdict == "accepted"
    assert by_id[6].code == "COMPILE_MISSING"
    assert report.summary["correct"] == 1 and report.summary["fast_0"] == pytest.approx(1 / 6)
    assert len(read_csv(tmp_path / "kb.csv")) == 6
    with ResultStore(tmp_path / "runs.db") as store:
        (run,) = store.runs()
        assert run["finished"] is not None and run["summary"]["correct"] == 1
        stored = store.results(run["id"])
        assert {r["key"] for r in stored} == {f"level1/{n[:-3]}" for n in [*SOLUTIONS, "6_Missing.py"]}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
def test_identity_speedup_is_about_one_on_a_gpu(kernelbench_dir: Path) -> None:
    # a tenth of KernelBench's batch (400 M elements): large enough to time, small enough for a quick check
    report = run_kernelbench(kernelbench_dir, 1, "identity", problems=[19, 23], sizes={"batch_size": 410})
    for row in report.rows:
        assert row.correct, row.reason
        assert row.speedup_eager is not None and 0.8 < row.speedup_eager < 1.25


def test_a_run_resumes_from_its_store(tmp_path: Path) -> None:
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    (problems / "level1").mkdir(parents=True)
    solutions.mkdir()
    for name in ("5_Good.py", "6_Missing.py", "7_Good.py"):
        (problems / "level1" / name).write_text(PROBLEM)
    (problems / "level2").mkdir()
    (problems / "level2" / "5_Good.py").write_text(PROBLEM)
    (solutions / "5_Good.py").write_text(SOLUTIONS["5_Good.py"])
    (solutions / "7_Good.py").write_text(SOLUTIONS["5_Good.py"])
    store = tmp_path / "runs.db"
    first = run_kernelbench(problems, 1, solutions, problems=[5, 6], isolate=False, store_path=store)
    assert [r.problem_id for r in first.rows] == [5, 6] and first.run_id is not None
    arrived: list[int] = []
    again = run_kernelbench(
        problems, 1, solutions, isolate=False, store_path=store, resume=first.run_id,
        on_row=lambda row: arrived.append(row.problem_id), csv_path=tmp_path / "kb.csv",
    )  # fmt: skip
    assert arrived == [7]  # 5 and 6 have rows in the run: kept, not judged again
    assert [(r.problem_id, r.correct) for r in again.rows] == [(5, True), (6, False), (7, True)]
    assert [r["problem_id"] for r in read_csv(tmp_path / "kb.csv")] == ["5", "6", "7"]
    with ResultStore(store) as s:
        (run,) = s.runs()
        assert run["summary"]["correct"] == 2
    for run_id, level, says in (("nope", 1, "has no KernelBench run 'nope'"), (first.run_id, 2, "not level 2")):
        with pytest.raises(TaskError) as e:
            run_kernelbench(problems, level, solutions, isolate=False, store_path=store, resume=run_id)
        assert e.value.code == "TASK_KERNELBENCH_RESUME" and says in str(e.value)
