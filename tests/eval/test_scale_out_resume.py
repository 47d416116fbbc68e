"""`benchmarks/scale_out.py --resume`: a throughput run stopped after one problem (as a command's time limit would
stop it) continues from its store in a second command; every problem is judged exactly once, the verdicts are those
of an uninterrupted run, and the throughput is the problems over the sum of the segments' wall times."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from argus.eval.store import ResultStore

ROOT = Path(__file__).resolve().parents[2]
ONLY = "13,19,23"


def scale_out() -> Any:
    spec = importlib.util.spec_from_file_location("scale_out", ROOT / "benchmarks" / "scale_out.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_stopped_run_resumes_and_judges_each_problem_once(kernelbench_dir: Path, tmp_path: Path) -> None:
    bench = scale_out()
    common = ["--level", "1", "--small", "--only", ONLY, "--trials", "2", "--problems", str(kernelbench_dir),
              "--out", str(tmp_path)]  # fmt: skip

    # the first command stops after one problem: nothing finished, the run resumable
    assert bench.main([*common, "--runs", "local-1cpu", "--stop-after", "1"]) == bench.EXIT_UNFINISHED
    assert not (tmp_path / "local-1cpu.json").exists()
    state = json.loads((tmp_path / "local-1cpu.segments.json").read_text())
    assert [(s["judged"], s["ended"]) for s in state["segments"]] == [(1, "stopped")]
    with ResultStore(tmp_path / "local-1cpu.sqlite") as store:
        first = {e["key"]: e["payload"]["worker"]["pid"] for e in store.results(state["run_id"])}
    assert len(first) == 1

    # the second continues it: the two others judged, the first kept (not judged again)
    assert bench.main([*common, "--runs", "local-1cpu", "--resume"]) == 0
    run = json.loads((tmp_path / "local-1cpu.json").read_text())
    assert run["problems"] == 3 and run["judged"] == 3
    assert [(s["judged"], s["ended"]) for s in run["segments"]] == [(1, "stopped"), (2, "finished")]
    assert run["wall_s"] == pytest.approx(sum(s["wall_s"] for s in run["segments"]), abs=0.02)
    assert run["problems_per_min"] == pytest.approx(60 * 3 / run["wall_s"], rel=0.01)
    assert run["processes"] == 2  # one worker process per command, both counted (not the last segment's only)
    with ResultStore(tmp_path / "local-1cpu.sqlite") as store:
        (only_run,) = store.runs()  # one run across both commands
        entries = store.results(only_run["id"])
    assert sorted(e["key"].rsplit("/", 1)[1].split("_")[0] for e in entries) == ["13", "19", "23"]
    (key,) = first
    assert next(e for e in entries if e["key"] == key)["payload"]["worker"]["pid"] == first[key]
    assert all(e["payload"]["stage_seconds"] for e in entries)  # the local pool timed each problem's stages

    # a resumed command once the run is finished judges nothing more
    assert bench.main([*common, "--runs", "local-1cpu", "--resume"]) == 0
    assert json.loads((tmp_path / "local-1cpu.json").read_text())["segments"] == run["segments"]

    # an uninterrupted run of the same problems: the same verdicts
    assert bench.main([*common, "--runs", "local-2cpu"]) == 0
    whole = json.loads((tmp_path / "local-2cpu.json").read_text())
    assert len(whole["segments"]) == 1 and whole["judged"] == 3
    assert whole["verdicts"] == run["verdicts"]
    report = json.loads((tmp_path / "scale-out.json").read_text())
    assert report["same_verdicts"] is True
    assert "sum of the run's segments" in (tmp_path / "scale-out.md").read_text()


def test_jobs_per_gpu_counts_every_segment_s_rows() -> None:
    from types import SimpleNamespace

    rows = [SimpleNamespace(worker=w) for w in ("vm:11/gpu 0", "vm:12/gpu 0", "vm:13/gpu 1", "vm:14", "", None)]
    assert scale_out().jobs_per_gpu(rows) == {"vm/gpu 0": 2, "vm/gpu 1": 1}
