"""The executor interface for gate jobs: where a job runs, and how its result comes back to the driver.

A caller (``argus kernelbench`` today) describes each unit of work as a `GateJob` — a function named by
``"package.module:function"``, its keyword arguments as plain (picklable) data, and the resource it needs: one GPU
or one CPU core (`Resource`). It submits jobs to an `Executor` and reads `JobResult`\\ s back *as they finish*, not in
submission order; each result names the worker that ran it (`WorkerIdentity`: backend, host, process, GPU). The
driver — the process that called the executor — is the only one that writes the run store, so the store stays
consistent however many workers there are.

Two implementations:

* `LocalExecutor` (the default): the worker processes of `argus.eval.isolation.WorkerPool` on this machine, one per
  GPU (or ``workers`` CPU workers), with its time limits, its containment and its fault policy (a worker killed
  from outside re-runs its job once). It never imports Ray.
* `argus.eval.ray_executor.RayExecutor`: tasks on a Ray cluster (``--ray auto|ADDRESS``, ``ARGUS_RAY_ADDRESS``);
  see that module. Ray is the scheduler, never the isolation boundary: a job that runs candidate code still starts
  its own sandbox (`argus.eval.sandbox`) inside the Ray worker.

`open_executor` picks one from a ``--ray`` value. Failures to reach an executor are `ExecutorError`\\ s with a
stable code (``EXECUTOR_RAY_MISSING``, ``EXECUTOR_RAY_CONNECT``, ``EXECUTOR_NO_GPU``).

Progress (`Executor.progress`, a `Progress` snapshot a caller may take at any time, from any thread): every job is
*queued*, *running* on a place (a GPU or a worker slot: `place_of`) or *done* (``failed`` among them when not ok),
counted in total and per place. The local pool knows when each job starts and where (the pool's ``on_event``) and
which stages of the gate it has finished (`argus.eval.isolation.report_stage`, sent on the worker's own pipe and
validated there and here against `REPORTED_STAGES`), so its snapshot counts the running jobs by the last stage they
finished and totals each stage's wall time. Through Ray the same reports travel from the one-worker pool inside each
Ray task to the driver through a small Ray actor (`argus.eval.ray_executor.ProgressInbox`), stamped with the Ray
worker's clock (the ``at`` of `ProgressTracker.started` and `ProgressTracker.stage`), so its snapshot is the same
kind; when that actor is lost the snapshot says so in ``note`` and counts the jobs submitted and not finished as
queued (``running_known`` False, `ProgressTracker.requeue_running`).

A job's outcome codes are the worker pool's (``WORKER_EXCEPTION``, ``WORKER_CRASHED``, ``WORKER_TIMEOUT``) plus
``WORKER_LOST``: Ray lost the job's worker or node on both attempts (never the candidate's verdict: the harness
could not decide).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from argus.diagnostics import ArgusError
from argus.eval.isolation import REPORTED_STAGES, Job, WorkerPool
from argus.eval.sandbox import secretless_overrides

#: The environment variable that names a Ray cluster to run on when ``--ray`` is not given.
RAY_ADDRESS_ENV = "ARGUS_RAY_ADDRESS"

#: How many times a job is started at most when its worker is lost (a first attempt and one retry).
MAX_ATTEMPTS = 2


class ExecutorError(ArgusError):
    """The executor cannot be used: Ray is not installed, its cluster cannot be reached, or it has no GPU for a GPU
    job. ``code`` is ``EXECUTOR_RAY_MISSING``, ``EXECUTOR_RAY_CONNECT`` or ``EXECUTOR_NO_GPU``."""


class Resource(StrEnum):
    """What a job needs for itself: one GPU (and the host CPU that drives it) or one CPU core."""

    GPU = "gpu"
    CPU = "cpu"


@dataclass(frozen=True)
class GateJob:
    """One unit of work: call ``target`` (``"package.module:function"``) with ``kwargs`` (plain data) on a worker
    with `resource`. ``key`` identifies the job among those of a run (the run store's key)."""

    key: str
    target: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    resource: Resource = Resource.CPU


@dataclass(frozen=True)
class WorkerIdentity:
    """Which worker ran a job: ``backend`` (``"local"`` or ``"ray"``), the host, the process id, the GPU it saw
    (its ``CUDA_VISIBLE_DEVICES``, None when it was not pinned), and for Ray the node's id."""

    backend: str
    host: str
    pid: int | None = None
    gpu: str | None = None
    node: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "host": self.host, "pid": self.pid, "gpu": self.gpu, "node": self.node}

    def label(self) -> str:
        """``host:pid`` plus ``/gpu N`` when pinned, e.g. ``node3:4711/gpu 1``."""
        return f"{self.host}:{self.pid}" + (f"/gpu {self.gpu}" if self.gpu is not None else "")


@dataclass
class JobResult:
    """What became of a `GateJob`, with the fields of `argus.eval.isolation.Outcome` (so `failure_status` reads it
    the same way) plus the worker that ran it. ``details["attempts"]`` is how many times the job was started;
    after a lost worker, ``details["first_attempt"]`` says how the first attempt ended."""

    key: str
    ok: bool
    value: Any = None
    code: str | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    worker: WorkerIdentity | None = None

    @property
    def attempts(self) -> int:
        return int(self.details.get("attempts", 1))

    @classmethod
    def of(
        cls, outcome: Any, worker: WorkerIdentity, *, key: str | None = None, details: dict[str, Any] | None = None
    ) -> JobResult:
        """The result of a pool's `Outcome`, run by `worker` (`key`, `details`: where they differ from the
        outcome's: a job run under another name, details amended)."""
        return cls(
            outcome.key if key is None else key,
            outcome.ok,
            value=outcome.value,
            code=outcome.code,
            reason=outcome.reason,
            details=outcome.details if details is None else details,
            seconds=outcome.seconds,
            worker=worker,
        )


class JobState(StrEnum):
    """Where a job is: waiting for a worker, running on one, or finished (its result handed back)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


def gpu_place(host: str, gpu: Any) -> str:
    """The name of GPU `gpu` of `host` in progress and summaries (``host/gpu N``: `place_of`, ``jobs_per_gpu``)."""
    return f"{host}/gpu {gpu}"


def place_of(worker: WorkerIdentity) -> str:
    """The place a job ran, for progress: `gpu_place` for a GPU worker, else ``host:pid``."""
    return gpu_place(worker.host, worker.gpu) if worker.gpu is not None else f"{worker.host}:{worker.pid}"


@dataclass(frozen=True)
class PlaceProgress:
    """The jobs of one place (a GPU or a worker): running now, done (``failed`` of them not ok)."""

    running: int = 0
    done: int = 0
    failed: int = 0


@dataclass(frozen=True)
class Progress:
    """A snapshot of an executor's jobs (see the module docstring). ``places`` counts per GPU or worker;
    ``running_known`` is False where the executor cannot tell queued from running (Ray once its progress reports are
    lost: ``queued`` then means submitted and not finished); ``note`` says what the snapshot lacks and why.
    ``after_stage`` counts the running jobs by the last stage they finished (``start``: none yet); ``stage_jobs``
    how many jobs finished each stage; ``stage_seconds`` each stage's wall time summed over the jobs (from the job's
    start or its previous stage to the report). Stages are empty where none are reported."""

    queued: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0
    places: dict[str, PlaceProgress] = field(default_factory=dict)
    running_known: bool = True
    after_stage: dict[str, int] = field(default_factory=dict)
    stage_jobs: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    note: str = ""

    @property
    def total(self) -> int:
        return self.queued + self.running + self.done

    def to_json(self) -> dict[str, Any]:
        return {
            "queued": self.queued,
            "running": self.running,
            "done": self.done,
            "failed": self.failed,
            "running_known": self.running_known,
            "places": {k: {"running": v.running, "done": v.done, "failed": v.failed} for k, v in self.places.items()},
            "after_stage": dict(self.after_stage),
            "stage_jobs": dict(self.stage_jobs),
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
            "note": self.note,
        }


@dataclass
class _Tracked:
    state: JobState
    place: str | None = None
    started: float = 0.0
    last: str | None = None  # the last stage it finished
    last_at: float = 0.0
    ok: bool = True
    stage_seconds: dict[str, float] = field(default_factory=dict)


class ProgressTracker:
    """The state of each job of an executor (see `Progress`). Thread-safe: the driver updates it as it submits,
    hands out and collects jobs; a display may take a `snapshot` from another thread at any time. A stage report
    counts only when it names a running job and a stage of `stages`; anything else is ignored.

    ``at`` (`started`, `stage`): when the event happened, by a clock other than `clock` (a Ray worker's, whose events
    reach the driver late and in batches); all the events of one job's run must then carry it, from one clock."""

    def __init__(self, stages: tuple[str, ...] = REPORTED_STAGES, clock: Callable[[], float] = time.monotonic) -> None:
        self.stages = stages
        self.clock = clock
        self.running_known = True
        self.note = ""  # what the snapshot lacks and why (e.g. Ray's progress reports lost)
        self._jobs: dict[str, _Tracked] = {}
        self._lock = threading.Lock()

    def queued(self, key: str) -> None:
        with self._lock:
            self._jobs[key] = _Tracked(JobState.QUEUED)

    def started(self, key: str, place: str, at: float | None = None) -> None:
        """`key` runs on `place` now (again, after a retry: its stages start over)."""
        with self._lock:
            now = self.clock() if at is None else at
            self._jobs[key] = _Tracked(JobState.RUNNING, place, now, None, now)

    def stage(self, key: str, stage: Any, at: float | None = None) -> bool:
        """The running job `key` finished `stage`; False (and nothing recorded) for an unknown stage or a job that
        is not running."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or job.state != JobState.RUNNING or type(stage) is not str or stage not in self.stages:
                return False
            now = self.clock() if at is None else at
            job.stage_seconds[stage] = job.stage_seconds.get(stage, 0.0) + (now - job.last_at)
            job.last, job.last_at = stage, now
            return True

    def requeue_running(self) -> None:
        """The executor can no longer tell which jobs run: every running job counts as queued again (the stages it
        finished are kept), and `running_known` is False."""
        with self._lock:
            self.running_known = False
            for job in self._jobs.values():
                if job.state == JobState.RUNNING:
                    job.state, job.place = JobState.QUEUED, None

    def finished(self, key: str, ok: bool, place: str | None = None) -> None:
        """`key`'s result came back (`place`: where it ran, when the tracker did not see it start)."""
        with self._lock:
            job = self._jobs.get(key) or _Tracked(JobState.QUEUED)
            job.state, job.ok = JobState.DONE, ok
            job.place = place or job.place
            self._jobs[key] = job

    def stage_seconds(self, key: str) -> dict[str, float]:
        """The wall time of each stage job `key` reported (empty when it reported none)."""
        with self._lock:
            job = self._jobs.get(key)
            return dict(job.stage_seconds) if job is not None else {}

    def snapshot(self) -> Progress:
        with self._lock:
            counts = {state: 0 for state in JobState}
            failed = 0
            places: dict[str, list[int]] = {}
            after: dict[str, int] = {}
            stage_jobs: dict[str, int] = {}
            seconds: dict[str, float] = {}
            for job in self._jobs.values():
                counts[job.state] += 1
                failed += job.state == JobState.DONE and not job.ok
                if job.place is not None and job.state != JobState.QUEUED:
                    place = places.setdefault(job.place, [0, 0, 0])
                    place[0] += job.state == JobState.RUNNING
                    place[1] += job.state == JobState.DONE
                    place[2] += job.state == JobState.DONE and not job.ok
                if job.state == JobState.RUNNING:
                    after[job.last or "start"] = after.get(job.last or "start", 0) + 1
                for stage, s in job.stage_seconds.items():
                    stage_jobs[stage] = stage_jobs.get(stage, 0) + 1
                    seconds[stage] = seconds.get(stage, 0.0) + s
            order = {name: i for i, name in enumerate(("start", *self.stages))}
            return Progress(
                queued=counts[JobState.QUEUED],
                running=counts[JobState.RUNNING],
                done=counts[JobState.DONE],
                failed=failed,
                places={k: PlaceProgress(*v) for k, v in sorted(places.items())},
                running_known=self.running_known,
                after_stage=dict(sorted(after.items(), key=lambda kv: order[kv[0]])),
                stage_jobs=dict(sorted(stage_jobs.items(), key=lambda kv: order[kv[0]])),
                stage_seconds=dict(sorted(seconds.items(), key=lambda kv: order[kv[0]])),
                note=self.note,
            )


class Executor:
    """Runs `GateJob`\\ s and streams their `JobResult`\\ s back as they finish (see the module docstring).

    Use: ``submit`` jobs, then iterate ``as_completed()`` (more may be submitted while iterating: they are run and
    yielded by the same iteration), or ``run(jobs)`` for both at once. ``close`` (or leaving a ``with`` block)
    releases the workers."""

    #: ``"local"`` or ``"ray"``.
    backend: str = ""

    def submit(self, job: GateJob) -> None:
        raise NotImplementedError

    def as_completed(self) -> Iterator[JobResult]:
        raise NotImplementedError

    def run(self, jobs: Iterable[GateJob]) -> Iterator[JobResult]:
        """Submit `jobs` and yield every result as it finishes."""
        for job in jobs:
            self.submit(job)
        yield from self.as_completed()

    def gpus(self) -> int:
        """How many GPUs this executor runs GPU jobs on (0: submit CPU jobs only)."""
        raise NotImplementedError

    def cpu_workers(self) -> int:
        """How many workers run CPU jobs apart from the GPU jobs' workers (0: CPU jobs share the GPU workers, or
        the executor does not say). A caller splits a gate into a CPU job and a GPU job only where this is > 0
        (`argus.agent.loop`: the stage split)."""
        return 0

    @property
    def tracker(self) -> ProgressTracker:
        """This executor's job states (an executor that does not track its jobs shows none)."""
        found = self.__dict__.get("_tracker")
        if found is None:
            found = self.__dict__.setdefault("_tracker", ProgressTracker())
        return found

    def progress(self) -> Progress:
        """A snapshot of the jobs submitted so far (see `Progress`); safe to call from another thread."""
        return self.tracker.snapshot()

    def describe(self) -> dict[str, Any]:
        """What the executor is, for the run store's metadata."""
        return {"backend": self.backend, "gpus": self.gpus()}

    def close(self) -> None:
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalExecutor(Executor):
    """The local worker pool (`argus.eval.isolation.WorkerPool`) behind the executor interface: one worker per GPU
    index in `devices`, else `workers` CPU workers. With `devices` and `cpu_workers` > 0, that many more workers see
    no GPU and run the CPU jobs, the GPU workers the GPU jobs; otherwise GPU and CPU jobs share the pool's workers
    (each pinned to its GPU when there are GPUs). The pool's fault policy applies as it is. `job_env` is set in every
    worker's environment; without one, every variable whose name says it holds a secret is emptied there
    (`argus.eval.sandbox.secretless_overrides`)."""

    backend = "local"

    def __init__(
        self,
        workers: int = 1,
        *,
        devices: list[int] | None = None,
        timeout_s: float = 600.0,
        job_env: dict[str, str] | None = None,
        pool: WorkerPool | None = None,
        cpu_workers: int = 0,
        preload: tuple[str, ...] | None = None,
    ) -> None:
        self.devices = list(devices) if devices else []
        extra = {"preload": preload} if preload is not None else {}
        self.pool = (
            pool
            if pool is not None
            else WorkerPool(
                workers=workers,
                devices=devices,
                timeout_s=timeout_s,
                env=secretless_overrides() if job_env is None else job_env,
                cpu_workers=cpu_workers,
                **extra,
            )
        )
        self.pool.on_event = self._on_event
        self.host = socket.gethostname()

    def place(self, index: int) -> str:
        """Worker `index`'s place: ``host/gpu N`` when pinned to a GPU, else ``host/worker i`` (a slot: a worker
        replaced after a crash keeps its place)."""
        device = self.pool._envs[index].get("CUDA_VISIBLE_DEVICES")
        if device == "":  # a CPU worker beside the GPU workers
            return f"{self.host}/cpu {index - len(self.devices)}"
        return gpu_place(self.host, device) if device is not None else f"{self.host}/worker {index}"

    def _on_event(self, kind: str, key: str, index: int, stage: str | None) -> None:
        if kind == "start":
            self.tracker.started(key, self.place(index))
        elif kind == "stage":
            self.tracker.stage(key, stage)

    def submit(self, job: GateJob) -> None:
        if job.resource == Resource.GPU and not self.devices:
            raise ExecutorError(
                "EXECUTOR_NO_GPU",
                f"job {job.key!r} needs a GPU, and this local pool has none",
                requirement="a local pool started with devices (one worker per GPU)",
                actual="CPU workers only",
            )
        self.tracker.queued(job.key)
        self.pool.submit(Job(job.key, job.target, job.kwargs, str(job.resource)))

    def as_completed(self) -> Iterator[JobResult]:
        for outcome in self.pool.run():
            self.tracker.finished(outcome.key, outcome.ok)
            device = outcome.worker_device or None  # "": a CPU worker, which saw no GPU
            yield JobResult.of(outcome, WorkerIdentity("local", self.host, outcome.worker_pid, device))

    def gpus(self) -> int:
        return len(self.devices)

    def cpu_workers(self) -> int:
        return self.pool._kinds.count("cpu")

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "gpus": self.gpus(),
            "host": self.host,
            "workers": len(self.pool._envs),
            "cpu_workers": self.cpu_workers(),
        }

    def close(self) -> None:
        self.pool.close()


def ray_address(option: str | None) -> str | None:
    """The Ray address a run uses: the ``--ray`` value when given, else ``$ARGUS_RAY_ADDRESS``, else None (the
    local pool). An empty value or ``local-pool``/``none``/``off`` means the local pool."""
    value = option if option is not None else os.environ.get(RAY_ADDRESS_ENV)
    if value is None or value.strip().lower() in ("", "none", "off", "local-pool"):
        return None
    return value.strip()


def open_executor(
    ray: str | None = None,
    *,
    workers: int = 1,
    devices: list[int] | None = None,
    timeout_s: float = 600.0,
    job_env: dict[str, str] | None = None,
) -> Executor:
    """The executor a run asks for: Ray at `ray` (see `ray_address`: ``auto``, ``HOST:PORT``, ``ray://HOST:PORT``,
    or ``local`` to start a private Ray instance on this machine), else the local pool with `workers` or `devices`.
    `job_env` is set in every job's process (e.g. secret variables emptied). Raises `ExecutorError` when Ray is
    asked for and cannot be used."""
    address = ray_address(ray)
    if address is None:
        return LocalExecutor(workers, devices=devices, timeout_s=timeout_s, job_env=job_env)
    from argus.eval.ray_executor import RayExecutor  # the only path that may import Ray

    return RayExecutor(address, timeout_s=timeout_s, job_env=job_env)
