"""The executor's progress: each job queued, running on a place, or done (failed among them), counted per place; the
stages a job reports on its worker's pipe (validated against a fixed set); the command's display without a terminal."""

from __future__ import annotations

import io
import json
import pickle
import threading
import time
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from argus.eval.executor import GateJob, JobResult, LocalExecutor, Progress, ProgressTracker
from argus.eval.isolation import REPORTED_STAGES, WorkerPool, report_stage, valid_stage_report

JOBS = "tests.eval.progress_jobs"


def wait_until(check, timeout_s: float = 120.0):  # noqa: ANN001, ANN201 - a test helper
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_the_snapshot_follows_each_job_to_its_place_and_a_crash_ends_done(tmp_path: Path) -> None:
    release = tmp_path / "release"
    with LocalExecutor(pool=WorkerPool(workers=2, preload=())) as executor:
        jobs = [
            GateJob("a", f"{JOBS}:wait_for", {"path": str(release)}),
            GateJob("b", f"{JOBS}:wait_for", {"path": str(release)}),
            GateJob("c", f"{JOBS}:staged", {"stages": ["load", "static"]}),
            GateJob("d", f"{JOBS}:crash_after", {"stage": "compile"}),
        ]
        for job in jobs:
            executor.submit(job)
        assert executor.progress() == Progress(queued=4)
        results: list[JobResult] = []
        consumer = threading.Thread(target=lambda: results.extend(executor.as_completed()))
        consumer.start()
        try:
            # both workers busy with the waiting jobs, each past its "load" report; the other two wait in the queue
            seen = wait_until(lambda: (p := executor.progress()).after_stage == {"load": 2} and p)
            assert (seen.queued, seen.running, seen.done) == (2, 2, 0)
            assert {name: c.running for name, c in seen.places.items()} == {
                name: 1 for name in (executor.place(0), executor.place(1))
            }
        finally:
            release.touch()
            consumer.join(timeout=120)
        assert not consumer.is_alive()
    final = executor.progress()
    assert (final.queued, final.running, final.done, final.failed) == (0, 0, 4, 1)
    assert sum(c.done for c in final.places.values()) == 4 and sum(c.failed for c in final.places.values()) == 1
    assert all(c.running == 0 for c in final.places.values()) and final.after_stage == {}
    crashed = next(r for r in results if r.key == "d")
    assert not crashed.ok and crashed.code == "WORKER_CRASHED"
    assert set(executor.tracker.stage_seconds("c")) == {"load", "static"}
    assert final.stage_jobs == {"load": 3, "static": 1, "compile": 1}
    places = final.to_json()["places"]
    assert places[executor.place(0)]["done"] + places[executor.place(1)]["done"] == 4


def test_a_stage_outside_the_fixed_set_is_ignored() -> None:
    raw = ["nope", ("verify",), None, "verify"]  # sent straight on the channel, past report_stage's own check
    with LocalExecutor(pool=WorkerPool(workers=1, preload=())) as executor:
        job = GateJob("j", f"{JOBS}:staged", {"stages": ["load", "bogus", "static"], "raw": raw})
        (result,) = executor.run([job])
    assert result.ok, result.reason  # a report is never an outcome, whatever it says
    assert set(executor.tracker.stage_seconds("j")) == {"load", "static", "verify"}
    assert executor.progress().stage_jobs == {"load": 1, "static": 1, "verify": 1}


def test_the_channel_and_the_tracker_validate_every_report() -> None:
    assert valid_stage_report(("stage", "k", "correct"), "k") == "correct"
    assert valid_stage_report(("stage", "other", "correct"), "k") is None  # not the job this worker runs
    assert valid_stage_report(("stage", "k", "correct"), None) is None  # the worker runs nothing
    assert valid_stage_report(("stage", "k", "rm -rf"), "k") is None
    assert valid_stage_report(("stage", "k", "correct", "extra"), "k") is None
    assert valid_stage_report(["stage", "k", "correct"], "k") is None
    tracker = ProgressTracker(clock=iter(range(100)).__next__)
    tracker.queued("k")
    assert not tracker.stage("k", "load")  # not running yet
    tracker.started("k", "host/gpu 0")
    assert not tracker.stage("k", "warp-specialize")
    assert tracker.stage("k", "load") and tracker.stage("k", "compile")
    assert tracker.snapshot().after_stage == {"compile": 1}
    tracker.finished("k", ok=True)
    assert not tracker.stage("k", "profile")  # finished: nothing more counts
    assert tracker.stage_seconds("k") == {"load": 1.0, "compile": 1.0}
    assert set(REPORTED_STAGES) >= {"compile", "verify", "correct", "profile"}
    report_stage("correct")  # outside a worker: nothing happens, nothing raises


def test_the_gate_s_reporting_stage_list_pickles_as_a_list() -> None:
    from argus.eval.gate import static_prelude
    from argus.eval.results import GateResult

    result = GateResult("c", "t")
    static_prelude(result, "x = 1\n", (), True)
    assert [s.stage for s in result.stages] == ["static"]
    assert type(pickle.loads(pickle.dumps(result)).stages) is list


def test_the_display_renders_without_a_terminal() -> None:
    from argus.cli.eval_cmd import executor_view, progress_line

    tracker = ProgressTracker()
    for key in ("a", "b", "c"):
        tracker.queued(key)
    tracker.started("a", "node/gpu 0")
    tracker.stage("a", "compile")
    tracker.started("b", "node/gpu 1")
    tracker.finished("b", ok=False)
    snapshot = tracker.snapshot()
    line = progress_line(snapshot)
    assert line.startswith("1 queued, 1 running, 1 done (1 failed); node/gpu 0: 1 running, 0 done; ")
    assert "node/gpu 1: 0 running, 1 done" in line and "running after compile 1" in line
    console = Console(file=io.StringIO(), force_terminal=False, width=100)
    console.print(executor_view(snapshot))
    text = console.file.getvalue()
    assert "node/gpu 0" in text and "node/gpu 1" in text and "all" in text and "compile" in text
    tracker.running_known = False
    assert "submitted (queued or running)" in progress_line(tracker.snapshot())


def test_the_command_prints_plain_progress_lines_and_records_stage_times(kernelbench_dir: Path, tmp_path: Path) -> None:
    from tests.eval.test_bench import app

    out = tmp_path / "kb.json"
    result = CliRunner().invoke(
        app,
        ["kernelbench", "--problems", str(kernelbench_dir), "--small", "--only", "19,23", "--workers", "2",
         "--trials", "2", "--csv", str(tmp_path / "kb.csv"), "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("[")]
    assert [line.split("|")[0].split("]")[0] for line in lines] == ["[1/2", "[2/2"]
    assert lines[-1].split("| ", 1)[1].startswith("0 queued, 0 running, 2 done; ")
    summary = json.loads(out.read_text())["summary"]["executor"]
    assert set(summary["stage_seconds"]) == {"load", "static", "compile", "verify", "correct", "profile"}
    assert "stage wall time (summed over problems)" in result.output
