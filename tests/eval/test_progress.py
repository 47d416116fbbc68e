"""The executor's progress: each job queued, running on a place, or done (failed among them), counted per place; the
stages a job reports on its worker's pipe (validated against a fixed set); the command's display without a terminal.

The snapshot test runs on both executors: the local pool, and Ray — a private instance started once for the module
(``ray.init(address="local", num_cpus=2)``, the first time a test asks for it, stopped after the module), whose tasks
forward their pool's reports to the driver through the executor's inbox actor. Its workers inherit ``PYTHONPATH``
with the repository (for `tests.eval.progress_jobs`) and ``src``, and a private ``ARGUS_CACHE_DIR``."""

from __future__ import annotations

import io
import json
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from argus.eval.executor import (
    Executor,
    GateJob,
    JobResult,
    LocalExecutor,
    PlaceProgress,
    Progress,
    ProgressTracker,
    place_of,
)
from argus.eval.isolation import REPORTED_STAGES, WorkerPool, report_stage, valid_stage_report
from tests.private_ray import private_ray

JOBS = "tests.eval.progress_jobs"


@pytest.fixture(scope="module")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    pytest.importorskip("ray")
    with private_ray(tmp_path_factory.mktemp("ray-progress-cache")) as ray:
        yield ray


@pytest.fixture(params=["local", "ray"])
def two_worker_executor(request: pytest.FixtureRequest) -> Callable[[], Executor]:
    """An executor that runs two CPU jobs at once: the local pool's two workers, or Ray's two CPUs."""
    if request.param == "local":
        return lambda: LocalExecutor(pool=WorkerPool(workers=2, preload=()))
    request.getfixturevalue("ray_session")
    from argus.eval.ray_executor import RayExecutor

    return RayExecutor


def wait_until(check, timeout_s: float = 120.0):  # noqa: ANN001, ANN201 - a test helper
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_the_snapshot_follows_each_job_to_its_place_and_a_crash_ends_done(
    two_worker_executor: Callable[[], Executor], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    with two_worker_executor() as executor:
        local = isinstance(executor, LocalExecutor)
        jobs = [
            GateJob("a", f"{JOBS}:wait_for", {"path": str(release)}),
            GateJob("b", f"{JOBS}:wait_for", {"path": str(release)}),
            GateJob("c", f"{JOBS}:staged", {"stages": ["load", "static"]}),
            GateJob("d", f"{JOBS}:crash_after", {"stage": "compile"}),
        ]
        for job in jobs:
            executor.submit(job)
        first = executor.progress()
        if local:  # the pool hands out nothing before it is iterated
            assert first == Progress(queued=4)
        else:  # Ray starts tasks at once, in order: a and b hold both CPUs, so none can have finished yet
            assert (first.total, first.done, first.running_known, first.note) == (4, 0, True, "")
        results: list[JobResult] = []
        consumer = threading.Thread(target=lambda: results.extend(executor.as_completed()))
        consumer.start()
        try:
            # both workers busy with the waiting jobs, each past its "load" report; the other two wait in the queue
            seen = wait_until(lambda: (p := executor.progress()).after_stage == {"load": 2} and p)
            assert (seen.queued, seen.running, seen.done, seen.running_known) == (2, 2, 0, True)
            assert sorted(c.running for c in seen.places.values()) == [1, 1]
            if local:
                assert set(seen.places) == {executor.place(0), executor.place(1)}
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
    assert all(s >= 0 for s in final.stage_seconds.values())
    assert final.stage_jobs == {"load": 3, "static": 1, "compile": 1}
    assert final.running_known and not final.note
    places = final.to_json()["places"]
    if local:
        assert places[executor.place(0)]["done"] + places[executor.place(1)]["done"] == 4
    else:  # a Ray job runs where its result says it ran: the places seen running are those of a's and b's results
        assert set(seen.places) == {place_of(r.worker) for r in results if r.key in ("a", "b") and r.worker}
        assert set(places) == {place_of(r.worker) for r in results if r.worker}


def test_a_dead_ray_inbox_costs_live_progress_not_a_job(ray_session: Any, tmp_path: Path) -> None:
    """The inbox actor killed while two jobs run: `progress` does not raise, says why it lacks the running jobs (they
    count as queued again), and every job still finishes, its place and stages from its result."""
    from argus.cli.eval_cmd import progress_line
    from argus.eval.ray_executor import RayExecutor

    release = tmp_path / "release"
    with RayExecutor() as executor:
        for key in ("a", "b"):
            executor.submit(GateJob(key, f"{JOBS}:wait_for", {"path": str(release)}))
        results: list[JobResult] = []
        consumer = threading.Thread(target=lambda: results.extend(executor.as_completed()))
        consumer.start()
        try:
            wait_until(lambda: executor.progress().after_stage == {"load": 2})
            ray_session.kill(executor._inbox)
            lost = wait_until(lambda: (p := executor.progress()).note and p)
            assert "inbox actor died" in lost.note and "count as queued" in lost.note
            assert (lost.queued, lost.running, lost.done, lost.running_known) == (2, 0, 0, False)
            assert lost.stage_jobs == {"load": 2}  # the stages seen before are kept
            executor.submit(GateJob("c", f"{JOBS}:staged", {"stages": ["load", "static"]}))  # no inbox to report to
            assert executor.progress().queued == 3
        finally:
            release.touch()
            consumer.join(timeout=120)
        assert not consumer.is_alive()
    assert sorted(r.key for r in results) == ["a", "b", "c"] and all(r.ok for r in results), results
    final = executor.progress()
    assert (final.queued, final.running, final.done, final.failed) == (0, 0, 3, 0)
    assert final.stage_jobs == {"load": 3, "static": 1}  # from the results' own event logs
    assert set(final.places) == {place_of(r.worker) for r in results if r.worker}
    assert "inbox actor died" in final.note and final.note in progress_line(final)


def test_ray_reports_that_name_nothing_in_flight_or_are_malformed_are_dropped(ray_session: Any, tmp_path: Path) -> None:
    from argus.eval.ray_executor import RayExecutor

    release = tmp_path / "release"
    with RayExecutor() as executor:
        executor.submit(GateJob("a", f"{JOBS}:wait_for", {"path": str(release)}))
        results: list[JobResult] = []
        consumer = threading.Thread(target=lambda: results.extend(executor.as_completed()))
        consumer.start()
        try:
            seen = wait_until(lambda: (p := executor.progress()).after_stage == {"load": 1} and p)
            (token,) = executor._in_flight
            forged = [
                (token, (2, "stage", "rm -rf", 5.0)),  # not a stage of the fixed set
                (token, (3, "start", ("evil", "1", None), 6.0)),  # a place of the wrong shape
                (token, (4, "stage", "profile", "late")),  # no time
                (token, ("x",)),
                (token, None),
                (token + 1, (0, "start", ("evil", 1, None), 1.0)),  # no attempt in flight has this token
                ("a", (0, "start", ("evil", 1, None), 1.0)),
            ]
            for report in forged:
                executor._inbox.report.remote(*report)
            after = executor.progress()
            assert after.places == seen.places and after.after_stage == {"load": 1} and not after.note
        finally:
            release.touch()
            consumer.join(timeout=120)
    (result,) = results
    assert result.ok and result.value == "done"
    final = executor.progress()
    assert final.stage_jobs == {"load": 1} and set(final.places) == {place_of(result.worker)}


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
    tracker.queued("r")  # another clock's times (a Ray worker's), given with each event
    tracker.started("r", "node:7", at=100.0)
    assert tracker.stage("r", "load", at=100.5) and tracker.stage("r", "static", at=102.0)
    assert tracker.stage_seconds("r") == {"load": 0.5, "static": 1.5}
    tracker.requeue_running()  # running no longer known: back to queued, stages kept
    lost = tracker.snapshot()
    assert (lost.queued, lost.running, lost.running_known, lost.places) == (
        1,
        0,
        False,
        {"host/gpu 0": PlaceProgress(0, 1)},
    )
    assert not tracker.stage("r", "verify") and lost.stage_jobs["static"] == 1
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
    tracker.note = "live progress from the Ray tasks is lost"
    assert progress_line(tracker.snapshot()).endswith("; live progress from the Ray tasks is lost")
    console = Console(file=io.StringIO(), force_terminal=False, width=100)
    console.print(executor_view(tracker.snapshot()))
    assert "live progress from the Ray tasks is lost" in console.file.getvalue()


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
