"""Tuning `argus solve`'s kernels (`argus.agent.tune.Tuner`, the solve hook): the chosen parameters reach the
solution's launches and the kernels are verified and checked as tuned; without a GPU the defaults are kept and
said; a measured result is cached per (kernel, sizes, GPU) and reused without searching."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from argus.agent.tune import Tuned, Tuner
from argus.eval.gate import GateOptions
from argus.frontend import solve

PROBLEM = textwrap.dedent(
    """
    import torch


    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.sigmoid(x) * x + 1.0


    def get_inputs():
        return [torch.randn(6, 300)]


    def get_init_inputs():
        return []
    """
)


@pytest.fixture
def problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "swish.py"
    path.write_text(PROBLEM)
    return path


def test_tuned_parameters_reach_the_launches_and_are_verified_and_checked(problem: Path, tmp_path: Path) -> None:
    asked = []

    def tune(solution: Path, kernels: list[str]) -> dict:
        asked.append((solution, list(kernels)))
        return {kernels[0]: {"BLOCK": 2048}, "not_a_kernel": {"X": 1}}

    result = solve(problem, out=tmp_path / "s.py", options=GateOptions(trials=2, device="cpu"), tune=tune)
    assert asked == [(tmp_path / "s.py", ["pointwise_0"])]
    (report,) = result.kernels
    assert report.params == {"BLOCK": 2048} and report.verdict == "verified" and report.interpreter_ok
    assert "_launch(pointwise_0, [x, add], BLOCK=2048)" in (tmp_path / "s.py").read_text()
    assert result.status() == "solved" and result.to_json()["kernels"][0]["params"] == {"BLOCK": 2048}


def test_without_a_gpu_the_defaults_are_kept_and_said(problem: Path, tmp_path: Path) -> None:
    tuner = Tuner(2, store=tmp_path / "runs.db")
    result = solve(problem, out=tmp_path / "s.py", judge=False, options=GateOptions(device="cpu"), tune=tuner)
    assert result.kernels[0].params == {}
    assert "BLOCK=" not in (tmp_path / "s.py").read_text().split("def forward", 1)[1]
    (outcome,) = tuner.outcomes
    assert outcome.params == {} and "not tuned: no GPU" in outcome.note
    assert not (tmp_path / "runs.db").exists()  # no search ran


def test_the_bandit_searches_the_declared_policies_and_estimates_are_not_cached(problem: Path, tmp_path: Path):
    tuner = Tuner(2, store=tmp_path / "runs.db", allow_estimates=True)
    solve(problem, out=tmp_path / "s.py", judge=False, options=GateOptions(device="cpu"), tune=tuner)
    (outcome,) = tuner.outcomes
    assert outcome.metric == "cost_model" and outcome.run_id and outcome.start_ms is not None
    assert not (tmp_path / "cache" / "tuned").exists()  # an estimate is never reused as a measurement


def test_a_measured_result_is_reused_from_the_cache(problem: Path, tmp_path: Path, monkeypatch) -> None:
    import argus.agent.tune as tune_module
    import argus.eval.device as device
    from argus.eval.candidates import import_file
    from argus.kernels.source import module_source

    solve(problem, out=tmp_path / "s.py", judge=False, options=GateOptions(device="cpu"))
    kernel = import_file(tmp_path / "s.py", "tune_cache_solution").pointwise_0
    monkeypatch.setattr(device, "has_gpu", lambda: True)
    monkeypatch.setattr(tune_module, "_gpu_name", lambda: "NVIDIA H200 (sm_90)")
    key = hashlib.sha256((module_source(kernel) + "\0NVIDIA H200 (sm_90)").encode()).hexdigest()[:24]
    cache = tmp_path / "cache" / "tuned"
    cache.mkdir(parents=True)
    measured = Tuned("pointwise_0", {"BLOCK": 512}, 3.1, 3.0, "gpu", "run1")
    (cache / f"{key}.json").write_text(json.dumps(measured.to_json()))

    def no_search(*args, **kwargs):
        raise AssertionError("a cached kernel is not searched again")

    monkeypatch.setattr(Tuner, "_search", no_search)
    tuner = Tuner(4, store=tmp_path / "runs.db")
    assert tuner(tmp_path / "s.py", ["pointwise_0"]) == {"pointwise_0": {"BLOCK": 512}}
    (outcome,) = tuner.outcomes
    assert outcome.cached and outcome.best_ms == 3.0 and "from the cache" in outcome.note


def test_the_command_says_what_tuning_did(problem: Path, tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from argus.cli.main import app

    monkeypatch.chdir(tmp_path)
    args = ["solve", str(problem), "--out", "s.py", "--no-judge", "--device", "cpu", "--tune", "2", "--json", "t.json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # not judged: not solved
    assert "tuned pointwise_0: its defaults; not tuned: no GPU" in result.output
    assert json.loads((tmp_path / "t.json").read_text())["tuned"][0]["kernel"] == "pointwise_0"
    bad = CliRunner().invoke(app, ["solve", str(problem), "--tune", "-1"])
    assert bad.exit_code == 2 and "--tune takes a number" in bad.output


def test_solve_budget_parallel_2_finds_what_the_serial_search_finds(problem: Path, tmp_path: Path, monkeypatch) -> None:
    """`argus solve --budget 2 --parallel 2`: the search's two candidates in flight in a local pool of two worker
    processes (the loop's batch-parallel mode); the same candidates, verdicts and estimates as the serial search, and
    the same outcome. Estimates are taken (no GPU here) so that the search runs at all."""
    from typer.testing import CliRunner

    import argus.agent.tune as tune_module
    from argus.agent.store import RunStore
    from argus.cli.main import app

    class Estimating(Tuner):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "allow_estimates": True})

    monkeypatch.setattr(tune_module, "Tuner", Estimating)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARGUS_RAY_ADDRESS", raising=False)

    def run(name: str, *extra: str) -> tuple[dict, list[tuple], dict]:
        args = ["solve", str(problem), "--out", f"{name}.py", "--no-judge", "--device", "cpu", "--budget", "2",
                "--store", f"{name}.db", "--json", f"{name}.json", *extra]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1, result.output  # not judged: not solved
        (tuned,) = json.loads((tmp_path / f"{name}.json").read_text())["tuned"]
        with RunStore(tmp_path / f"{name}.db") as store:
            run = store.read_run(tuned["run_id"])
        rows = [(c.step, c.action, c.status, (c.params or {}).get("ref", {}).get("params"), (c.summary or {}).get("ms"))
                for c in run.candidates]  # fmt: skip
        return {k: v for k, v in tuned.items() if k != "run_id"}, rows, run.run["config"]

    serial, serial_rows, serial_config = run("serial")
    parallel, parallel_rows, parallel_config = run("parallel", "--parallel", "2")
    assert serial_config["parallel"] == 1 and parallel_config["parallel"] == 2  # the flag reached the loop
    assert len(serial_rows) == 3 and all(row[2] == "accepted" for row in serial_rows)  # the start and two candidates
    assert parallel_rows == serial_rows and parallel == serial and serial["metric"] == "cost_model"
    bad = CliRunner().invoke(app, ["solve", str(problem), "--parallel", "2"], env={"COLUMNS": "200"})
    assert bad.exit_code == 2 and "give --tune (--budget) N too" in bad.output
