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

A job's outcome codes are the worker pool's (``WORKER_EXCEPTION``, ``WORKER_CRASHED``, ``WORKER_TIMEOUT``) plus
``WORKER_LOST``: Ray lost the job's worker or node on both attempts (never the candidate's verdict: the harness
could not decide).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from argus.diagnostics import ArgusError
from argus.eval.isolation import Job, WorkerPool

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
    index in `devices`, else `workers` CPU workers. GPU and CPU jobs share the pool's workers (each worker is pinned
    to its GPU when there are GPUs). The pool's fault policy applies as it is."""

    backend = "local"

    def __init__(
        self,
        workers: int = 1,
        *,
        devices: list[int] | None = None,
        timeout_s: float = 600.0,
        job_env: dict[str, str] | None = None,
        pool: WorkerPool | None = None,
    ) -> None:
        self.devices = list(devices) if devices else []
        self.pool = (
            pool if pool is not None else WorkerPool(workers=workers, devices=devices, timeout_s=timeout_s, env=job_env)
        )
        self.host = socket.gethostname()

    def submit(self, job: GateJob) -> None:
        if job.resource == Resource.GPU and not self.devices:
            raise ExecutorError(
                "EXECUTOR_NO_GPU",
                f"job {job.key!r} needs a GPU, and this local pool has none",
                requirement="a local pool started with devices (one worker per GPU)",
                actual="CPU workers only",
            )
        self.pool.submit(Job(job.key, job.target, job.kwargs))

    def as_completed(self) -> Iterator[JobResult]:
        for outcome in self.pool.run():
            yield JobResult.of(outcome, WorkerIdentity("local", self.host, outcome.worker_pid, outcome.worker_device))

    def gpus(self) -> int:
        return len(self.devices)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "gpus": self.gpus(), "host": self.host, "workers": len(self.pool._envs)}

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
