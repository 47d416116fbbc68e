"""Gate jobs on a Ray cluster: `RayExecutor`, the scale-out implementation of `argus.eval.executor.Executor`.

The only module of argus that imports Ray, and only when a `RayExecutor` is made (``argus kernelbench --ray
auto|ADDRESS|local`` or ``$ARGUS_RAY_ADDRESS``). What runs where:

* **the driver** (the ``argus`` process): connects with ``ray.init(address=...)`` (``auto``: the cluster this
  machine belongs to, as ``ray start`` recorded it; ``HOST:PORT`` or ``ray://HOST:PORT``: that cluster;
  ``local``: a private Ray instance on this machine, stopped at the end), submits one Ray task per job, reads
  results as they finish (``ray.wait``), and is the only process that writes the run store;
* **a Ray task** per job, with ``num_gpus=1`` for a GPU job (Ray pins the task to one device through
  ``CUDA_VISIBLE_DEVICES``; it takes a CPU too) or ``num_cpus=1`` for a CPU job. The task is a thin shell
  (`run_in_ray_worker`): it records who it is (host, pid, node, GPU) and runs the job in a one-worker
  `argus.eval.isolation.WorkerPool` — a spawned process with the pool's time limit, containment and fault handling,
  so a hang, a crash or a broken CUDA context never reaches the Ray worker, and the Ray worker's own state never
  reaches the job. The Ray worker keeps that process for its next task on the same GPU (PyTorch is imported once
  per Ray worker, as in the local pool's workers);
* **the sandbox**: a job that runs candidate code (the gate of a KernelBench solution) starts its own sandbox
  (`argus.eval.sandbox`: a fresh process per candidate, scrubbed environment, limits) inside that process, as it
  does locally. Ray is the scheduler, never the isolation boundary: nothing of the Ray worker's environment
  (``RAY_*`` variables, cluster tokens, cloud credentials) passes the sandbox's allowlist.

Progress (`Executor.progress`): Ray does not tell the driver when a task starts, nor where, until its result is
back; the snapshot counts the jobs submitted and not finished as queued (``running_known`` is False), and each
finished job under the place it ran (``host/gpu N``, or ``host:pid``). The stage reports of a job reach the one-worker
pool inside its Ray task, not the driver: a Ray run shows no stages.

Faults: Ray's own retries are off (``max_retries=0``). A job whose Ray worker or node is lost (``WorkerCrashedError``,
``NodeDiedError``, a raylet that died, Ray's out-of-memory kill, a lost result object) is submitted once more — not
the candidate's fault; when the second attempt is lost too the result is ``WORKER_LOST`` (an error of the harness,
never a verdict on the candidate). What happens inside the job's process (a crash, a hang, an exception) is the
worker pool's outcome, as with the local executor.

Connection faults are `ExecutorError`\\ s: ``EXECUTOR_RAY_MISSING`` (Ray is not installed: ``pip install
argus-kernels[ray]``), ``EXECUTOR_RAY_CONNECT`` (no cluster at the address: a ``HOST:PORT`` is probed with a plain TCP
connection first, so a wrong address fails in seconds rather than after Ray's long GCS retries), ``EXECUTOR_NO_GPU``
(a GPU job on a cluster without GPUs, which Ray would otherwise queue for ever).
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from argus.eval.executor import (
    MAX_ATTEMPTS,
    Executor,
    ExecutorError,
    GateJob,
    JobResult,
    Resource,
    WorkerIdentity,
    place_of,
)

#: How long the driver waits for a TCP connection to a ``HOST:PORT`` before it calls the address wrong.
CONNECT_PROBE_S = 5.0

#: Ray's exceptions (by name: they are looked up on ``ray.exceptions`` when Ray is loaded) that mean the job's
#: worker, node or result was lost, not that the job failed.
LOST_WORKER_ERRORS = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "OutOfMemoryError",
    "ObjectLostError",
    "OwnerDiedError",
    "ObjectReconstructionFailedError",
    "ObjectFetchTimedOutError",
    "RaySystemError",
)


#: This Ray worker's job process: (the environment it was started with, its time limit, the one-worker pool). Kept
#: between the tasks this Ray worker runs, so that PyTorch is imported once per Ray worker rather than once per job;
#: replaced when Ray gives the worker a task on another GPU (or the caller another environment).
_JOB_POOL: tuple[dict[str, str], float, Any] | None = None


def _job_pool(env: dict[str, str], timeout_s: float) -> Any:
    global _JOB_POOL
    from argus.eval.isolation import WorkerPool

    if _JOB_POOL is not None and _JOB_POOL[:2] == (env, timeout_s):
        return _JOB_POOL[2]
    if _JOB_POOL is not None:
        _JOB_POOL[2].close()
    _JOB_POOL = (env, timeout_s, WorkerPool(workers=1, timeout_s=timeout_s, env=env))
    return _JOB_POOL[2]


def run_in_ray_worker(
    target: str, kwargs: dict[str, Any], timeout_s: float, job_env: dict[str, str] | None = None
) -> tuple[Any, dict[str, Any]]:
    """The body of every Ray task: run ``target(**kwargs)`` in this Ray worker's one-worker `WorkerPool` (a process
    of its own, pinned to the GPU Ray gave this task, with the job's time limit; the pool replaces it after a
    crash, a hang or a CUDA error) and return the pool's `Outcome` with this worker's identity. Runs in the Ray
    worker; never raises for what the job does (the outcome says it). `job_env` is set in the job's process."""
    import ray

    from argus.eval.isolation import Job

    device = os.environ.get("CUDA_VISIBLE_DEVICES")  # set by Ray for this task ("" for a CPU task on a GPU node)
    identity = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "gpu": device or None,
        "node": ray.get_runtime_context().get_node_id(),
        "job_pid": None,
    }
    env = {**(job_env or {}), **({"CUDA_VISIBLE_DEVICES": device} if device is not None else {})}
    for outcome in _job_pool(env, timeout_s).run([Job("job", target, kwargs)]):
        identity["job_pid"] = outcome.worker_pid
        return outcome, identity
    raise RuntimeError("the worker pool returned no outcome")  # pragma: no cover - the pool yields one per job


def probe_address(address: str, timeout_s: float = CONNECT_PROBE_S) -> None:
    """Raise ``EXECUTOR_RAY_CONNECT`` unless a TCP connection to `address` (``HOST:PORT`` or ``ray://HOST:PORT``)
    opens within `timeout_s`. ``auto`` and ``local`` are not probed (Ray finds or starts the cluster itself)."""
    if address in ("auto", "local"):
        return
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port_text = rest.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ExecutorError(
            "EXECUTOR_RAY_CONNECT",
            f"{address!r} is not a Ray address",
            requirement="auto, local, HOST:PORT or ray://HOST:PORT",
            actual=address,
        )
    try:
        with socket.create_connection((host, int(port_text)), timeout=timeout_s):
            pass
    except OSError as e:
        raise ExecutorError(
            "EXECUTOR_RAY_CONNECT",
            f"no Ray cluster answers at {address}: {e}",
            actual=address,
        ) from None


@dataclass
class _Pending:
    job: GateJob
    attempt: int
    started: float
    first: dict[str, Any] | None = None


class RayExecutor(Executor):
    """Gate jobs as Ray tasks (see the module docstring).

    Args:
        address: ``auto``, ``HOST:PORT``, ``ray://HOST:PORT``, or ``local`` (a private instance on this machine);
            None: use the Ray session this process already started (``ray.init`` by the caller), else ``auto``.
        timeout_s: the time limit of one job, from when its process starts (the worker pool's limit).
        init_kwargs: extra arguments for ``ray.init`` (e.g. ``num_cpus`` for ``local``, a ``runtime_env``).
        job_env: environment variables set in every job's process (e.g. secret variables emptied), over the Ray
            worker's own.
    """

    backend = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        timeout_s: float = 600.0,
        init_kwargs: dict[str, Any] | None = None,
        job_env: dict[str, str] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as e:
            raise ExecutorError(
                "EXECUTOR_RAY_MISSING",
                f"Ray was asked for ({address or 'the running session'}) but cannot be imported: {e}",
                requirement="the ray package (pip install 'argus-kernels[ray]')",
                actual="not installed",
            ) from None
        self._ray = ray
        self.timeout_s = timeout_s
        self.job_env = dict(job_env or {})
        self.address = address
        self._owned = False
        if not ray.is_initialized():
            self.address = address = address or "auto"
            probe_address(address)
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, **(init_kwargs or {})}
            if address != "local":
                kwargs["address"] = address
            elif "runtime_env" not in kwargs:  # a private instance: its workers import what this process imports
                path = os.pathsep.join(p for p in sys.path if p)
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            try:
                ray.init(**kwargs)
            except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError ...
                raise ExecutorError(
                    "EXECUTOR_RAY_CONNECT",
                    f"cannot connect to the Ray cluster at {address}: {type(e).__name__}: {e}",
                    actual=address,
                ) from None
            self._owned = True
        # the Ray worker holds no CUDA context (the job runs in a process of its own), so it may serve many tasks
        self._remote = ray.remote(max_calls=0)(run_in_ray_worker)
        self._lost = tuple(getattr(ray.exceptions, n) for n in LOST_WORKER_ERRORS if hasattr(ray.exceptions, n))
        self._pending: dict[Any, _Pending] = {}  # object ref -> its job
        self.retried = 0  # jobs submitted again after their worker or node was lost
        self.finished = 0  # results handed back
        self.tracker.running_known = False  # Ray does not say when a task starts

    def gpus(self) -> int:
        return int(self._ray.cluster_resources().get("GPU", 0))

    def cpu_workers(self) -> int:
        """The cluster's CPUs where it has GPUs too (CPU tasks then run a gate's CPU half: the stage split); 0 on
        a cluster without GPUs, where every job is a CPU job anyway."""
        resources = self._ray.cluster_resources()
        return int(resources.get("CPU", 0)) if resources.get("GPU", 0) >= 1 else 0

    def describe(self) -> dict[str, Any]:
        resources = self._ray.cluster_resources()
        return {
            "backend": self.backend,
            "address": self.address,
            "gpus": int(resources.get("GPU", 0)),
            "cpus": int(resources.get("CPU", 0)),
            "nodes": sum(1 for n in self._ray.nodes() if n.get("Alive")),
        }

    def submit(self, job: GateJob) -> None:
        if job.resource == Resource.GPU and self.gpus() < 1:
            raise ExecutorError(
                "EXECUTOR_NO_GPU",
                f"job {job.key!r} needs a GPU, and the Ray cluster at {self.address} has none",
                requirement="a node with a GPU in the cluster (ray start --num-gpus N)",
                actual=f"{self._ray.cluster_resources()}",
            )
        self.tracker.queued(job.key)
        self._submit(_Pending(job, 1, time.monotonic()))

    def _submit(self, pending: _Pending) -> None:
        # a GPU job also takes one CPU: the judge and the candidate's sandbox drive the GPU from the host
        resources = {"num_gpus": 1, "num_cpus": 1} if pending.job.resource == Resource.GPU else {"num_cpus": 1}
        options = {**resources, "max_retries": 0, "retry_exceptions": False}
        ref = self._remote.options(**options).remote(
            pending.job.target, pending.job.kwargs, self.timeout_s, self.job_env
        )
        self._pending[ref] = pending

    def as_completed(self) -> Iterator[JobResult]:
        ray = self._ray
        while self._pending:
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=1.0)
            for ref in ready:
                pending = self._pending.pop(ref)
                result = self._collect(ref, pending)
                if result is not None:
                    self.finished += 1
                    where = place_of(result.worker) if result.worker is not None else None
                    self.tracker.finished(result.key, result.ok, where)
                    yield result

    def _collect(self, ref: Any, pending: _Pending) -> JobResult | None:
        ray = self._ray
        job = pending.job
        try:
            outcome, who = ray.get(ref)
        except self._lost as e:
            what = f"{type(e).__name__}: {_first_line(e)}"
            if pending.attempt < MAX_ATTEMPTS:
                self.retried += 1
                first = {"reason": f"the Ray worker running the job was lost ({what})"}
                self._submit(_Pending(job, pending.attempt + 1, time.monotonic(), first))
                return None
            before = pending.first["reason"] if pending.first else "the first attempt was lost"
            return JobResult(
                job.key,
                False,
                code="WORKER_LOST",
                reason=(
                    f"the job's Ray worker was lost on both attempts ({before}; then {what}); not the candidate's "
                    "verdict: the harness could not decide"
                ),
                details={"attempts": pending.attempt, "first_attempt": pending.first, "ray_error": what},
                seconds=time.monotonic() - pending.started,
            )
        except ray.exceptions.RayError as e:  # the task itself failed before it could run the job
            text = _ANSI.sub("", str(e))
            return JobResult(
                job.key,
                False,
                code="WORKER_EXCEPTION",
                reason=_task_failure(text),
                details={"attempts": pending.attempt, "traceback": text[-6000:]},
                seconds=time.monotonic() - pending.started,
            )
        details = dict(outcome.details)
        details["attempts"] = int(details.get("attempts", 1)) + pending.attempt - 1
        if pending.first is not None:
            details["first_attempt"] = pending.first
        worker = WorkerIdentity("ray", who["host"], who.get("job_pid"), who.get("gpu"), who.get("node"))
        details["ray_worker_pid"] = who.get("pid")
        return JobResult.of(outcome, worker, key=job.key, details=details)

    def close(self) -> None:
        for ref in list(self._pending):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001, S110 - already finished or its worker gone
                pass
        self._pending.clear()
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _task_failure(text: str) -> str:
    """A one-line reason for a Ray task that failed before it ran the job: the exception's last line (Ray's text
    starts with the task's name and pid), with the likely cause when the worker could not import argus."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("^")]
    reason = f"the Ray task failed on its worker: {lines[-1] if lines else text}"
    if "failed to import on the worker" in text or "No module named 'argus" in text:
        reason += (
            "; the Ray workers import a different argus (or none): install argus at the driver's version on every "
            "node (docs/scale-out.md)"
        )
    return reason


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""
