"""The executor interface (`argus.eval.executor`): the local pool and a local Ray instance judge a KernelBench CPU
sample sweep alike; a Ray worker killed mid-job costs a re-run, never a verdict or a duplicate; the local pool never
imports Ray; a missing Ray or a wrong address is a typed error with a stable code.

The Ray instance is started once for the module (``ray.init(address="local", num_cpus=2)``: private, no dashboard)
and stopped after it. Its workers inherit this process's environment at start: ``PYTHONPATH`` gains the repository
(for `tests.eval.workers`) and ``src``, ``ARGUS_CACHE_DIR`` a private directory, and ``CLUSTER_SECRET_TOKEN`` a
value the candidates' sandboxes must never see."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from argus.eval.executor import ExecutorError, GateJob, LocalExecutor, Resource, open_executor, ray_address
from argus.eval.gate import GateOptions
from argus.eval.isolation import failure_status
from argus.eval.kernelbench import KernelBenchReport, run_kernelbench
from argus.eval.results import Status
from argus.eval.store import ResultStore
from tests.private_ray import private_ray

ROOT = Path(__file__).resolve().parents[2]
#: Three problems of the CPU sample; the solutions (written per test from the problems' own files) make one
#: accepted, one rejected as wrong and one missing, so that "the same verdicts" compares more than "all correct".
PROBLEMS = [13, 19, 23]
SECRET = "CLUSTER_SECRET_TOKEN"


def solutions(kernelbench_dir: Path, into: Path) -> Path:
    """Solution files for `PROBLEMS`: 19 wrong by a factor of 2, 23 the problem's own Model, 13 none."""
    into.mkdir(parents=True, exist_ok=True)
    level = kernelbench_dir / "level1"
    (relu,) = level.glob("19_*.py")
    (softmax,) = level.glob("23_*.py")
    wrong = "\n\nclass ModelNew(Model):\n    def forward(self, x):\n        return super().forward(x) * 2\n"
    (into / relu.name).write_text(relu.read_text() + wrong)
    (into / softmax.name).write_text(softmax.read_text() + "\n\nModelNew = Model\n")
    return into


def verdicts(report: KernelBenchReport) -> dict[int, tuple[str, bool, str | None]]:
    return {r.problem_id: (r.verdict, r.correct, r.code) for r in report.rows}


def sweep(kernelbench_dir: Path, solutions_dir: Path, **kwargs: Any) -> KernelBenchReport:
    return run_kernelbench(
        kernelbench_dir, 1, solutions_dir, problems=PROBLEMS, small=True, options=GateOptions(trials=2), **kwargs
    )


@pytest.fixture(scope="module")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    secret = {SECRET: "sk-cluster-" + os.urandom(8).hex()}
    with private_ray(tmp_path_factory.mktemp("ray-cache"), env=secret) as ray:
        yield ray


@pytest.fixture(scope="module")
def local_sweep(kernelbench_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> KernelBenchReport:
    solutions_dir = solutions(kernelbench_dir, tmp_path_factory.mktemp("solutions"))
    with LocalExecutor(workers=2) as executor:
        return sweep(kernelbench_dir, solutions_dir, executor=executor)


def test_the_local_sweep_judges_each_problem_and_names_its_worker(local_sweep: KernelBenchReport) -> None:
    assert verdicts(local_sweep) == {
        13: ("rejected", False, "COMPILE_MISSING"),
        19: ("rejected", False, "CORRECT_MISMATCH"),
        23: ("accepted", True, None),
    }
    executor = local_sweep.summary["executor"]
    assert executor["backend"] == "local"
    assert sorted(executor["ran_on"]) == sorted(f"level1/{r.problem_id}_{r.name}" for r in local_sweep.rows)
    for row in local_sweep.rows:
        who = executor["ran_on"][f"level1/{row.problem_id}_{row.name}"]
        assert who["backend"] == "local" and who["pid"] != os.getpid() and who["attempts"] == 1
        assert row.worker == f"{who['host']}:{who['pid']}"


def test_ray_sweep_through_the_command_gives_the_local_verdicts(
    ray_session: Any, local_sweep: KernelBenchReport, kernelbench_dir: Path, tmp_path: Path
) -> None:
    from tests.eval.test_bench import app

    solutions_dir = solutions(kernelbench_dir, tmp_path / "solutions")
    out, store = tmp_path / "kb.json", tmp_path / "kb.db"
    only = ",".join(map(str, PROBLEMS))
    result = CliRunner().invoke(
        app,
        ["kernelbench", "--problems", str(kernelbench_dir), "--small", "--only", only, "--solutions",
         str(solutions_dir), "--trials", "2", "--ray", "auto", "--csv", str(tmp_path / "kb.csv"),
         "--store", str(store), "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert {r["problem_id"]: (r["verdict"], r["correct"], r["code"]) for r in doc["rows"]} == verdicts(local_sweep)
    executor = doc["summary"]["executor"]
    assert executor["backend"] == "ray" and executor["nodes"] == 1 and executor["gpus"] == 0
    node = ray_session.get_runtime_context().get_node_id()
    assert {w["node"] for w in executor["ran_on"].values()} == {node}
    assert all(w["backend"] == "ray" and w["pid"] != os.getpid() for w in executor["ran_on"].values())
    with ResultStore(store) as db:  # written by the driver: one entry per problem, with its worker
        (run,) = db.runs()
        entries = db.results(run["id"])
        assert sorted(e["key"] for e in entries) == sorted(executor["ran_on"])
        assert all(e["payload"]["worker"] == executor["ran_on"][e["key"]] for e in entries)
        assert run["meta"]["executor"]["backend"] == "ray"
    # the candidates ran in sandboxes inside the Ray workers: the cluster's secret reached the workers, not them
    sandboxes = [e["payload"]["gate"]["environment"]["sandbox"] for e in entries if e["key"].endswith("_Softmax")]
    assert sandboxes and all(SECRET not in s["environment"] for s in sandboxes)
    assert not [k for s in sandboxes for k in s["environment"] if k.startswith("RAY_")]


def test_a_ray_worker_killed_mid_job_costs_a_rerun_not_a_verdict(
    ray_session: Any, local_sweep: KernelBenchReport, kernelbench_dir: Path, tmp_path: Path
) -> None:
    from argus.eval.ray_executor import RayExecutor

    marker = tmp_path / "killed-once"

    class KillingFirstWorker(RayExecutor):
        """Softmax's job kills its Ray worker (SIGKILL, mid-job) the first time it runs."""

        def submit(self, job: GateJob) -> None:
            if job.key.endswith("_Softmax"):
                kwargs = {"marker": str(marker), "target": job.target, "kwargs": job.kwargs}
                job = GateJob(job.key, "tests.eval.workers:kill_ray_worker_once", kwargs, job.resource)
            super().submit(job)

    seen: list[str] = []
    with KillingFirstWorker() as executor:
        report = sweep(
            kernelbench_dir,
            solutions(kernelbench_dir, tmp_path / "solutions"),
            executor=executor,
            store_path=tmp_path / "kb.db",
            on_row=lambda row: seen.append(f"level1/{row.problem_id}_{row.name}"),
        )
        assert executor.retried == 1
    assert marker.exists()
    assert collections.Counter(seen) == {key: 1 for key in report.summary["executor"]["ran_on"]}  # judged once each
    assert len(seen) == len(PROBLEMS)
    assert verdicts(report) == verdicts(local_sweep)
    ran_on = report.summary["executor"]["ran_on"]
    assert ran_on["level1/23_Softmax"]["attempts"] == 2
    assert all(w["attempts"] == 1 for k, w in ran_on.items() if not k.endswith("_Softmax"))
    with ResultStore(tmp_path / "kb.db") as db:
        (run,) = db.runs()
        assert sorted(e["key"] for e in db.results(run["id"])) == sorted(ran_on)


def test_a_job_whose_ray_worker_is_lost_twice_is_worker_lost(ray_session: Any) -> None:
    from argus.eval.ray_executor import RayExecutor

    with RayExecutor() as executor:
        (result,) = executor.run([GateJob("lost", "tests.eval.workers:kill_ray_worker_always", {}, Resource.CPU)])
        (fine,) = executor.run([GateJob("fine", "tests.eval.workers:square", {"x": 7})])
    assert not result.ok and result.code == "WORKER_LOST" and result.attempts == 2
    assert "both attempts" in result.reason and "WorkerCrashedError" in result.reason
    assert failure_status(result) == Status.ERROR  # the harness could not decide: never a verdict on a candidate
    assert fine.ok and fine.value == 49 and fine.worker is not None and fine.worker.backend == "ray"


def test_the_local_pool_reruns_a_job_whose_worker_was_killed(tmp_path: Path) -> None:
    marker = tmp_path / "killed-once"
    job = GateJob(
        "k", "tests.eval.workers:kill_self_once", {"marker": str(marker), "target": "tests.eval.workers:square",
                                                  "kwargs": {"x": 5}},
    )  # fmt: skip
    with LocalExecutor(workers=1) as executor:
        (result,) = executor.run([job])
    assert result.ok and result.value == 25 and result.attempts == 2 and marker.exists()
    assert result.worker is not None and result.worker.backend == "local" and result.worker.pid != os.getpid()


def test_a_gpu_job_on_a_pool_without_gpus_is_a_typed_error() -> None:
    executor = LocalExecutor(workers=1)
    try:
        with pytest.raises(ExecutorError) as caught:
            executor.submit(GateJob("g", "tests.eval.workers:square", {"x": 1}, Resource.GPU))
        assert caught.value.code == "EXECUTOR_NO_GPU"
    finally:
        executor.close()


def test_job_processes_see_no_secret_unless_their_caller_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """An executor built without a `job_env` (the lineage walk's and the KernelBench sweep's local pools) empties, in
    its job processes, every variable whose name says it holds a secret; a caller's `job_env` (the agent's
    `worker_environment`, which knows the variables its LLM configuration names) replaces that default."""
    from argus.eval.sandbox import secretless_overrides

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789")
    monkeypatch.setenv("SOME_API_KEY", "sk-0123456789")
    monkeypatch.setenv("ARGUS_HARMLESS_SETTING", "kept")
    names = ["MY_SERVICE_TOKEN", "SOME_API_KEY", "ARGUS_HARMLESS_SETTING"]
    assert secretless_overrides() == {**secretless_overrides(), "MY_SERVICE_TOKEN": "", "SOME_API_KEY": ""}
    assert "ARGUS_HARMLESS_SETTING" not in secretless_overrides()
    with LocalExecutor(workers=1) as executor:
        (result,) = executor.run([GateJob("env", "tests.eval.workers:environment", {"names": names})])
    assert result.value == {"MY_SERVICE_TOKEN": "", "SOME_API_KEY": "", "ARGUS_HARMLESS_SETTING": "kept"}
    with LocalExecutor(workers=1, job_env={"ARGUS_HARMLESS_SETTING": ""}) as executor:
        (result,) = executor.run([GateJob("env", "tests.eval.workers:environment", {"names": names})])
    assert result.value == {
        "MY_SERVICE_TOKEN": "tok-0123456789",
        "SOME_API_KEY": "sk-0123456789",
        "ARGUS_HARMLESS_SETTING": "",
    }


def test_the_local_pool_never_imports_ray(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import argus.cli.main, argus.eval.kernelbench\n"
        "from argus.eval.executor import GateJob, open_executor\n"
        "with open_executor(None, workers=1) as ex:\n"
        "    (r,) = ex.run([GateJob('m', 'tests.eval.workers:modules_loaded', {'names': ['ray', 'torch']})])\n"
        "assert r.ok, r.reason\n"
        "print(sorted(r.value), 'ray' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    env.pop("ARGUS_RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['torch'] False"  # the worker imported torch, and neither process ray


def test_a_wrong_ray_address_is_a_clear_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    done = subprocess.run(
        [sys.executable, "-m", "argus", "kernelbench", "--small", "--only", "19", "--csv", str(tmp_path / "kb.csv"),
         "--ray", "127.0.0.1:1"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "[EXECUTOR_RAY_CONNECT] no Ray cluster answers at 127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "kb.csv").exists()
    from argus.eval.ray_executor import probe_address

    with pytest.raises(ExecutorError) as caught:
        probe_address("head-node")
    assert caught.value.code == "EXECUTOR_RAY_CONNECT" and "not a Ray address" in caught.value.message


def test_ray_missing_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ExecutorError) as caught:
        open_executor("auto")
    assert caught.value.code == "EXECUTOR_RAY_MISSING" and "argus-kernels[ray]" in str(caught.value)


def test_the_ray_address_comes_from_the_option_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGUS_RAY_ADDRESS", raising=False)
    assert ray_address(None) is None and ray_address("auto") == "auto"
    monkeypatch.setenv("ARGUS_RAY_ADDRESS", "head:6379")
    assert ray_address(None) == "head:6379" and ray_address("10.0.0.1:6379") == "10.0.0.1:6379"
    assert ray_address("") is None and ray_address("off") is None  # an explicit "no" beats the environment


def test_a_short_optimize_through_ray_follows_the_local_trajectory(ray_session: Any, tmp_path: Path) -> None:
    """`argus optimize`'s gate jobs through the executor: the same candidates, verdicts and (cost-model) times as
    with the loop's own local worker process, each gated on a Ray worker."""
    from argus.agent.loop import Budget, optimize
    from argus.agent.providers.secrets import worker_environment
    from argus.agent.store import RunStore
    from argus.eval.ray_executor import RayExecutor

    def trajectory(result: Any) -> list[tuple[Any, ...]]:
        return [(row["step"], row["action"], row["status"], row["ms"]) for row in result.trajectory]

    local = optimize("gemm_naive", budget=Budget(candidates=2), store=tmp_path / "local.db", isolate=True)
    with RayExecutor(job_env=worker_environment()) as executor:
        through_ray = optimize(
            "gemm_naive", budget=Budget(candidates=2), store=tmp_path / "ray.db", isolate=True, executor=executor
        )
        assert executor.finished >= 3  # the three gates (and the loop's other jobs) ran as Ray tasks
    assert local.status == through_ray.status == "finished"
    assert trajectory(through_ray) == trajectory(local) and len(local.trajectory) == 3
    assert through_ray.trajectory[1]["status"] == "accepted"
    with RunStore(tmp_path / "ray.db") as store:  # the driver wrote every candidate
        assert len(store.read_run(through_ray.run_id).done) == 3
