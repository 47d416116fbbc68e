"""The batch-parallel loop (`optimize(..., parallel=K)`, `argus optimize --parallel K`): up to K candidates in flight,
results applied in submission order, so that the candidates proposed do not depend on the order in which gates
finish; budgets, crashes, the wall-time stop and resume.

Most tests gate through `ScriptedExecutor`: an in-process executor whose gate results are made up from the
candidate's kernel and parameters (deterministic, instant) and handed back in an order the test chooses (first in
first out, newest first, shuffled), so that the loop's own logic is tested without the cost of real gates. One test
runs real gates on CPU workers (`LocalExecutor`), once in the order they finish and once with the results forced to
arrive newest first, with one candidate's worker process crashing in both.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from argus.agent import loop as loop_module
from argus.agent.loop import Budget, RunInterrupted, optimize
from argus.agent.planner import BanditPlanner, Choice, PlanContext
from argus.agent.store import RunStore
from argus.eval.executor import Executor, GateJob, JobResult, LocalExecutor, WorkerIdentity

GATE = "argus.agent.gatejob:gate_candidate"
START = "gemm_mma_sync"  # a library kernel with several arms: tile shapes and the next rung of its lineage


def made_up_gate(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A gate result that depends only on the candidate's kernel and parameters: accepted with a time between 1
    and 11 ms (the cost model's estimate, as on a CPU), or rejected at the correctness stage for about one in
    five kernels."""
    digest = int(hashlib.sha256(json.dumps(kwargs["ref"], sort_keys=True).encode()).hexdigest()[:8], 16)
    if step_of(kwargs["name"]) == 0:  # the start: accepted, and slow
        digest = 0
    if digest % 5 == 1:
        stages = [{"stage": "correct", "status": "failed", "code": "CORRECT_MISMATCH", "reason": "made up"}]
        return {"candidate": kwargs["name"], "task": kwargs["task"], "verdict": "rejected", "stages": stages}
    ms = 12.0 if digest == 0 else 1.0 + (digest % 1000) / 100
    profile = {"stage": "profile", "status": "skipped", "code": "PROFILE_NO_GPU", "details": {"cost_model": {"ms": ms}}}
    stages = [profile]
    return {"candidate": kwargs["name"], "task": kwargs["task"], "verdict": "accepted", "stages": stages}


class ScriptedExecutor(Executor):
    """An executor that gates nothing: each gate job's result is `made_up_gate`'s, handed back when the caller
    reads `as_completed`, in `order` among the jobs outstanding: ``fifo``, ``reverse`` (newest first) or
    ``shuffle`` (a seeded shuffle). Jobs whose key is in `crash` end as a crashed worker process. After
    `interrupt_after` results it raises KeyboardInterrupt instead (Ctrl-C while gates are in flight). `on_result`
    is called before each result is handed back (a test's clock)."""

    backend = "scripted"

    def __init__(
        self,
        order: str = "fifo",
        *,
        crash: set[str] | None = None,
        interrupt_after: int | None = None,
        on_result: Any = None,
        seed: int = 0,
    ) -> None:
        self.order = order
        self.crash = crash or set()
        self.interrupt_after = interrupt_after
        self.on_result = on_result
        self.rng = random.Random(seed)
        self.pending: list[GateJob] = []
        self.submitted: list[str] = []  # gate jobs' keys (candidate ids), in submission order
        self.delivered: list[str] = []  # in the order they were handed back
        self.max_in_flight = 0

    def submit(self, job: GateJob) -> None:
        self.pending.append(job)
        if job.target == GATE:
            self.submitted.append(job.key)
        self.max_in_flight = max(self.max_in_flight, sum(1 for j in self.pending if j.target == GATE))

    def as_completed(self) -> Iterator[JobResult]:
        while self.pending:
            if self.interrupt_after is not None and len(self.delivered) >= self.interrupt_after:
                raise KeyboardInterrupt
            if self.order == "reverse":
                job = self.pending.pop()
            elif self.order == "shuffle":
                job = self.pending.pop(self.rng.randrange(len(self.pending)))
            else:
                job = self.pending.pop(0)
            self.delivered.append(job.key)
            if self.on_result is not None:
                self.on_result()
            yield self._result(job)

    def _result(self, job: GateJob) -> JobResult:
        worker = WorkerIdentity("scripted", "here")
        if job.key in self.crash:
            details = {"attempts": 1, "exitcode": 3}
            return JobResult(job.key, False, code="WORKER_CRASHED", reason="exited with status 3", details=details,
                             worker=worker)  # fmt: skip
        assert job.target == GATE, job.target  # library kernels with the transform coder need no other job
        return JobResult(job.key, True, value=made_up_gate(job.kwargs), worker=worker)

    def gpus(self) -> int:
        return 0


class RecordingPlanner(BanditPlanner):
    """The bandit, recording what it saw at each step: the history's (step, status) rows and the arms offered."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.seen: list[tuple[int, list[tuple[int, str]], list[str]]] = []

    def choose(self, ctx: PlanContext) -> Choice:
        self.seen.append((ctx.step, [(h["step"], h["status"]) for h in ctx.history], [a.id for a in ctx.arms]))
        return super().choose(ctx)


def sequence(result: Any) -> list[tuple[Any, ...]]:
    """What a run proposed and what became of it: step, action, kernel, parameters, verdict, time."""
    return [(r["step"], r["action"], r["kernel"], json.dumps(r["params"], sort_keys=True), r["status"], r["ms"])
            for r in result.trajectory]  # fmt: skip


def run(tmp_path: Path, name: str, executor: Executor, *, parallel: int | None, budget: Any = 6, **kw: Any) -> Any:
    planner = kw.pop("planner", None) or RecordingPlanner(seed=3)
    result = optimize(START, planner=planner, budget=budget, store=tmp_path / f"{name}.db", seed=3,
                      executor=executor, parallel=parallel, **kw)  # fmt: skip
    result.planner = planner
    return result


# ---------------------------------------------------------------------------------------------------------------
# determinism


def test_the_candidates_do_not_depend_on_the_order_in_which_results_arrive(tmp_path: Path) -> None:
    runs = {
        order: run(tmp_path, order, executor, parallel=3)
        for order, executor in [(o, ScriptedExecutor(o, seed=11)) for o in ("fifo", "reverse", "shuffle")]
    }
    fifo = runs["fifo"]
    assert fifo.status == "finished" and fifo.stop_reason == "budget: 6 candidates"
    assert len(fifo.trajectory) == 7 and [r["step"] for r in fifo.trajectory] == list(range(7))
    for order, result in runs.items():
        assert sequence(result) == sequence(fifo), order  # same candidates, same verdicts and times
        assert result.planner.seen == fifo.planner.seen, order  # the planner saw the same at every step
        assert {**result.best, "candidate": None} == {**fifo.best, "candidate": None}, order
        assert stored(tmp_path, order, result.run_id) == stored(tmp_path, "fifo", fifo.run_id), order


def stored(tmp_path: Path, name: str, run_id: str) -> list[tuple[Any, ...]]:
    """A run's candidate rows as the store has them, less their ids and times."""
    with RunStore(tmp_path / f"{name}.db") as store:
        state = store.read_run(run_id)
        return [(c.step, c.action, c.fingerprint, c.status, c.reward, c.attempts, json.dumps(c.params, sort_keys=True))
                for c in state.candidates]  # fmt: skip


def test_results_arriving_out_of_order_are_applied_in_submission_order(tmp_path: Path) -> None:
    fifo, reverse = ScriptedExecutor("fifo"), ScriptedExecutor("reverse")
    a = run(tmp_path, "a", fifo, parallel=3)
    b = run(tmp_path, "b", reverse, parallel=3)
    assert fifo.max_in_flight == reverse.max_in_flight == 3  # three candidates were in flight at once
    assert fifo.delivered == fifo.submitted
    assert reverse.delivered != reverse.submitted  # they arrived newest first ...
    assert sequence(a) == sequence(b)  # ... and changed nothing
    with RunStore(tmp_path / "b.db") as store:  # the store has them in submission order
        state = store.read_run(b.run_id)
        finished = sorted(state.candidates, key=lambda c: c.finished)
        assert [c.id for c in finished] == reverse.submitted
        assert all(c.attempts == 1 for c in state.candidates)  # nothing gated twice
    # the planner sees the candidates in flight in its history (no reward yet) and is not offered their arms
    seen = b.planner.seen
    step2 = next(s for s in seen if s[0] == 2)
    assert step2[1][-1] == (1, "gating")
    step1_arm = b.trajectory[1]["action"]
    assert step1_arm not in step2[2]


def test_with_k_in_flight_the_planner_sees_results_k_minus_1_candidates_late(tmp_path: Path) -> None:
    """With 3 in flight, the candidate of step s is planned when steps up to s - 3 are applied."""
    result = run(tmp_path, "late", ScriptedExecutor("reverse"), parallel=3)
    for step, history, _ in result.planner.seen:
        applied = [s for s, status in history if status != "gating"]
        in_flight = [s for s, status in history if status == "gating"]
        assert max(applied) == max(0, step - 3), (step, history)
        assert in_flight == list(range(max(1, step - 2), step)), (step, history)


def test_parallel_one_is_the_serial_loop(tmp_path: Path) -> None:
    serial, one = ScriptedExecutor("fifo"), ScriptedExecutor("reverse")
    a = run(tmp_path, "serial", serial, parallel=None)  # the default
    b = run(tmp_path, "one", one, parallel=1)
    assert serial.max_in_flight == one.max_in_flight == 1
    assert sequence(a) == sequence(b) and a.planner.seen == b.planner.seen
    assert all(status != "gating" for _, history, _ in a.planner.seen for _, status in history)
    three = run(tmp_path, "three", ScriptedExecutor("fifo"), parallel=3)
    assert sequence(three) != sequence(a)  # three in flight plan from older results: a different trajectory


# ---------------------------------------------------------------------------------------------------------------
# budgets, crashes, resume


def test_never_more_candidates_than_the_budget_with_more_slots_than_budget(tmp_path: Path) -> None:
    executor = ScriptedExecutor("reverse")
    result = run(tmp_path, "small", executor, parallel=5, budget=2)
    assert result.stop_reason == "budget: 2 candidates"
    assert len(executor.submitted) == 3 and executor.max_in_flight == 2  # the start, then two at once
    with RunStore(tmp_path / "small.db") as store:
        state = store.read_run(result.run_id)
        assert len(state.candidates) == 3 and len(state.done) == 3 and not state.to_gate
        assert state.run["config"]["parallel"] == 5


def test_a_crashed_gate_is_that_candidates_failure_and_the_run_goes_on(tmp_path: Path) -> None:
    executor = ScriptedExecutor("reverse")
    executor.crash = _StepKeys(2)  # type: ignore[assignment]  # the gate of step 2 crashes its worker
    result = run(tmp_path, "crash", executor, parallel=3)
    assert executor.delivered.index(result.trajectory[2]["candidate"]) < executor.delivered.index(
        result.trajectory[1]["candidate"]
    )  # it arrived before the step before it
    row = result.trajectory[2]
    assert row["status"] == "rejected" and row["reward"] == loop_module.PENALTIES["isolation"]
    assert result.status == "finished" and len(result.trajectory) == 7  # the run went on to its budget
    assert [r["step"] for r in result.trajectory] == list(range(7))
    with RunStore(tmp_path / "crash.db") as store:
        state = store.read_run(result.run_id)
        c = state.candidate(row["candidate"])
        assert c.status == "rejected" and c.gate["isolation"]["code"] == "WORKER_CRASHED" and c.attempts == 1


class _StepKeys:
    """The keys of the gate jobs of one step (``<run>-<step>``): a set that matches any run."""

    def __init__(self, step: int) -> None:
        self.step = step

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and step_of(key) == self.step


def step_of(key: str) -> int:
    """The step of a candidate id (``<run>-<step>``)."""
    return int(key.rsplit("-", 1)[1])


def test_the_wall_time_stop_records_what_is_in_flight_and_submits_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each result takes 100 s of the loop's clock: after the start (100 s) there is time left under 150 s, so
    three candidates are submitted; they arrive newest first, and when the oldest is applied (400 s) the time is up:
    nothing more is submitted, and the two others (arrived, not yet applied) are recorded too."""
    clock = [0.0]

    class Clock:
        @staticmethod
        def monotonic() -> float:
            return clock[0]

    def tick() -> None:
        clock[0] += 100.0

    monkeypatch.setattr(loop_module, "time", Clock)
    executor = ScriptedExecutor("reverse", on_result=tick)
    result = run(tmp_path, "wall", executor, parallel=3, budget=Budget(candidates=None, wall_s=150))
    assert result.stop_reason == "budget: 150 s of wall time" and result.status == "finished"
    assert len(executor.submitted) == 4 and executor.delivered == [executor.submitted[0], *executor.submitted[:0:-1]]
    with RunStore(tmp_path / "wall.db") as store:
        state = store.read_run(result.run_id)
        assert len(state.done) == 4 and not state.to_gate  # the two still in flight at the stop were recorded
        assert {c.status for c in state.done} <= {"accepted", "rejected"}


def test_a_parallel_run_interrupted_with_gates_in_flight_resumes_without_regating_what_finished(
    tmp_path: Path,
) -> None:
    db = tmp_path / "resume.db"
    first = ScriptedExecutor("reverse", interrupt_after=3)  # the start, then (newest first) step 3 and step 2
    with pytest.raises(RunInterrupted) as stopped:
        optimize(START, budget=6, store=db, seed=3, executor=first, parallel=3)
    run_id = stopped.value.run_id
    with RunStore(db) as store:
        state = store.read_run(run_id)
        # only the start was applied: steps 2 and 3 had arrived but wait for step 1, which never came
        assert [c.step for c in state.done] == [0]
        assert [c.step for c in state.in_flight] == [1, 2, 3]
    second = ScriptedExecutor("shuffle", seed=5)
    result = optimize(None, resume=run_id, store=db, executor=second)  # the run's own parallel: 3
    assert result.status == "finished" and result.stop_reason == "budget: 6 candidates"
    assert second.max_in_flight == 3
    assert len(second.submitted) == 6  # the three in flight again, then three more; never the start
    assert sorted(step_of(key) for key in second.submitted) == [1, 2, 3, 4, 5, 6]
    with RunStore(db) as store:
        state = store.read_run(run_id)
        assert [c.step for c in state.candidates] == list(range(7)) and len(state.done) == 7
        assert len({c.fingerprint for c in state.candidates}) == 7
        attempts = {c.step: c.attempts for c in state.candidates}
        assert attempts == {0: 1, 1: 2, 2: 2, 3: 2, 4: 1, 5: 1, 6: 1}


def test_parallel_must_be_at_least_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        optimize(START, budget=1, store=tmp_path / "r.db", executor=ScriptedExecutor(), parallel=0)


# ---------------------------------------------------------------------------------------------------------------
# real gates on CPU workers


class NewestFirst(Executor):
    """A real executor whose results are held back until every job outstanding has finished, then handed back
    newest first; the gate job of a candidate whose key is in `crash` runs a function that exits its worker
    process (a crash of the candidate's gate)."""

    backend = "local"

    def __init__(self, inner: Executor, crash: Any = ()) -> None:
        self.inner = inner
        self.crash = crash
        self.held: list[JobResult] = []
        self.submitted: list[str] = []
        self.order: list[str] = []  # the keys in the order their results were handed back

    def submit(self, job: GateJob) -> None:
        self.submitted.append(job.key)
        if job.key in self.crash:
            job = GateJob(job.key, "tests.eval.workers:crash", {"status": 3}, job.resource)
        self.inner.submit(job)

    def as_completed(self) -> Iterator[JobResult]:
        while True:
            if not self.held:
                self.held = list(self.inner.as_completed())  # every job outstanding, finished
            if not self.held:
                return
            newest = max(self.held, key=lambda r: self.submitted.index(r.key))
            self.held.remove(newest)
            self.order.append(newest.key)
            yield newest

    def gpus(self) -> int:
        return self.inner.gpus()

    def close(self) -> None:
        self.inner.close()


class Crashing(NewestFirst):
    """`NewestFirst`'s crash without the reordering: results as they finish."""

    def as_completed(self) -> Iterator[JobResult]:
        for result in self.inner.as_completed():
            self.order.append(result.key)
            yield result


def test_real_gates_on_cpu_workers_give_the_same_run_in_any_arrival_order(tmp_path: Path) -> None:
    def trajectory(result: Any) -> list[tuple[Any, ...]]:
        return [(r["step"], r["action"], r["status"], r["ms"]) for r in result.trajectory]

    results, orders = [], []
    for name, wrap in (("as-they-finish", Crashing), ("newest-first", NewestFirst)):
        with wrap(LocalExecutor(workers=3, timeout_s=300), crash=_StepKeys(2)) as executor:
            planner = RecordingPlanner(seed=0)
            result = optimize(START, planner=planner, budget=4, store=tmp_path / f"{name}.db", seed=0,
                              executor=executor, parallel=3)  # fmt: skip
        result.planner = planner
        results.append(result)
        orders.append([step_of(k) for k in executor.order])
    assert orders[1] == [0, 3, 2, 1, 4]  # the second run's results came back newest first
    a, b = results
    assert a.status == b.status == "finished" and a.stop_reason == "budget: 4 candidates"
    assert trajectory(a) == trajectory(b) and len(a.trajectory) == 5
    assert a.planner.seen == b.planner.seen  # step 4 was planned from step 1's result in both
    assert a.trajectory[0]["status"] == "accepted" and a.trajectory[2]["status"] == "rejected"  # the crash
    assert any(r["status"] == "accepted" and r["step"] > 0 for r in a.trajectory)
    with RunStore(tmp_path / "newest-first.db") as store:
        state = store.read_run(b.run_id)
        (crashed,) = [c for c in state.candidates if c.step == 2]
        assert crashed.gate["isolation"]["code"] == "WORKER_CRASHED"
        assert all(c.attempts == 1 for c in state.candidates) and len(state.done) == 5
        finished = sorted(state.candidates, key=lambda c: (c.finished, c.step))
        assert [c.step for c in finished] == [0, 1, 2, 3, 4]  # recorded in submission order


# ---------------------------------------------------------------------------------------------------------------
# the command line


def test_argus_optimize_parallel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--parallel K`` reaches the loop (K in flight, recorded in the run), and a resumed run keeps it; the loop's
    gates go to a scripted executor here instead of K worker processes."""
    from typer.testing import CliRunner

    from argus.cli.main import app

    executors: list[ScriptedExecutor] = []

    def scripted(*args: Any, **kwargs: Any) -> Any:
        executors.append(ScriptedExecutor("reverse"))
        return optimize(*args, **{**kwargs, "executor": executors[-1]})

    monkeypatch.setattr(loop_module, "optimize", scripted)
    runner = CliRunner()
    db, out = tmp_path / "runs.db", tmp_path / "r.json"
    done = runner.invoke(app, ["optimize", START, "--budget", "3", "--parallel", "3", "--store", str(db),
                               "--json", str(out)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "stopped: budget: 3 candidates" in done.output and executors[-1].max_in_flight == 3
    run_id = json.loads(out.read_text())["run_id"]
    more = runner.invoke(app, ["optimize", "--resume", run_id, "--store", str(db), "--budget", "6"])
    assert more.exit_code == 0, more.output
    assert "stopped: budget: 6 candidates" in more.output, more.output[-600:]
    assert executors[-1].max_in_flight == 3  # its own K
    with RunStore(db) as store:
        state = store.read_run(run_id)
        assert state.run["config"]["parallel"] == 3 and [c.step for c in state.candidates] == list(range(7))
    bad = runner.invoke(app, ["optimize", START, "--parallel", "0", "--store", str(db)])
    assert bad.exit_code == 2 and "--parallel" in bad.output


# ---------------------------------------------------------------------------------------------------------------
# the stage split: a CPU half (static, compile, verify) then a GPU half reusing its verification


class SplitExecutor(ScriptedExecutor):
    """A `ScriptedExecutor` with CPU workers (`cpu_workers` > 0): each gate arrives as a CPU half (``stop_after``
    ``"verify"``, key ``<candidate>#prepare``) whose made-up verification fails for one kernel in seven (by the same
    digest as `made_up_gate`), then, where it passed, a GPU half that must carry that verification."""

    def __init__(self, order: str = "fifo", seed: int = 0) -> None:
        super().__init__(order, seed=seed)
        self.halves: list[tuple[str, str, str]] = []  # (key, resource, stop_after or the prepared fingerprint)

    def cpu_workers(self) -> int:
        return 2

    def gpus(self) -> int:
        return 1

    def submit(self, job: GateJob) -> None:
        options = job.kwargs.get("options", {})
        prepared = (options.get("prepared_verify") or {}).get("details") or {}
        mark = options.get("stop_after") or prepared.get("fingerprint")
        self.halves.append((job.key, str(job.resource), str(mark)))
        super().submit(job)

    def _result(self, job: GateJob) -> JobResult:
        if not job.key.endswith("#prepare"):
            return super()._result(job)
        name = job.kwargs["name"]
        digest = int(hashlib.sha256(json.dumps(job.kwargs["ref"], sort_keys=True).encode()).hexdigest()[:8], 16)
        failed = step_of(name) > 0 and digest % 7 == 3
        verify = {"stage": "verify", "status": "failed" if failed else "passed", "code": "VERIFY_VIOLATED" if failed
                  else None, "reason": "made up", "details": {"fingerprint": f"fp-{name}"}}  # fmt: skip
        gate = {"candidate": name, "task": job.kwargs["task"], "verdict": "rejected" if failed else "accepted",
                "stages": [{"stage": "static", "status": "passed"}, verify]}  # fmt: skip
        return JobResult(job.key, True, value=gate, worker=WorkerIdentity("scripted", "here"))


def test_the_stage_split_verifies_on_cpu_workers_and_times_on_the_gpu_with_that_verification(tmp_path: Path) -> None:
    split = SplitExecutor("shuffle", seed=5)
    result = run(tmp_path, "split", split, parallel=3, budget=8)
    assert result.status == "finished"
    prepared = {k.removesuffix("#prepare") for k, r, m in split.halves if k.endswith("#prepare")}
    timed = {k: (r, m) for k, r, m in split.halves if not k.endswith("#prepare")}
    assert all(r == "cpu" and m == "verify" for k, r, m in split.halves if k.endswith("#prepare"))
    assert timed and all(r == "gpu" and m == f"fp-{k}" for k, (r, m) in timed.items())  # its own verification
    assert set(timed) <= prepared  # no GPU half without its CPU half
    rejected = prepared - set(timed)  # decided by the CPU half: rejected at verification, never on the GPU
    assert rejected and len(timed) >= 3
    rows = {r["candidate"]: r for r in result.trajectory if r.get("candidate")}
    for name in rejected:
        assert rows[name]["status"] != "accepted", rows[name]
