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

Progress (`Executor.progress`): the same snapshot as the local pool's — queued, running on a place (``host/gpu N``, or
``host:pid`` of the job's process), done; the running jobs by the last stage they finished; each stage's wall time.
Ray itself tells the driver nothing between a task's submission and its result, so the reports travel another way:

* the driver starts one small actor, `ProgressInbox` (``num_cpus=0``, no restarts), and passes its handle and a
  token (one per attempt of a job) to each task;
* inside the task the one-worker pool's ``on_event`` (`_Forwarder`) turns each event — the job handed to the job
  process (with its host, pid and GPU), a stage it finished (`argus.eval.isolation.report_stage`, already validated
  by the pool) — into ``(seq, kind, value, at)``, ``at`` by the Ray worker's clock, and sends it to the inbox
  fire-and-forget (never awaited: a slow or dead inbox never delays the job; whatever goes wrong is swallowed);
* the driver drains the inbox as it waits for results and whenever a display asks (`RayExecutor.progress`), and
  applies the reports of attempts still in flight, in ``seq`` order, to its `ProgressTracker` — which checks the
  stage names against the fixed set again. A report naming anything else (a finished job, a retried attempt, a
  malformed event) is dropped;
* each result carries its attempt's whole event log too: the driver applies what it has not seen before it counts
  the job done, so a finished job's stages are complete even when live reports were late or lost.

The reports are a label and a timing for a display, never an outcome: the driver alone writes results, from the
task's return value. When the inbox is lost (it died, or cannot be created), `progress` does not raise: it carries a
``note`` saying so, counts the jobs submitted and not finished as queued (``running_known`` False, as before live
reports existed), and places and stages come with each result.

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
import threading
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
    Progress,
    Resource,
    WorkerIdentity,
    place_of,
)
from argus.eval.isolation import REPORTED_STAGES
from argus.eval.sandbox import secretless_overrides

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


#: How long `RayExecutor.progress` waits for the inbox's reports (a local round trip takes milliseconds); on time-out
#: the snapshot is taken without them and they are applied at the next poll.
DRAIN_WAIT_S = 0.5

#: How many reports the inbox holds undrained at most; more are dropped (and counted): a driver that stops polling
#: costs progress, never memory without bound.
INBOX_LIMIT = 10_000


class ProgressInbox:
    """The Ray actor that carries progress reports from the Ray tasks to the driver (see the module docstring):
    tasks ``report`` fire-and-forget, the driver drains them. It only stores what it is sent, up to `INBOX_LIMIT`
    undrained; the driver validates every report."""

    def __init__(self, limit: int = INBOX_LIMIT) -> None:
        self.limit = limit
        self.reports: list[tuple[Any, Any]] = []
        self.dropped = 0

    def report(self, token: Any, event: Any) -> None:
        if len(self.reports) < self.limit:
            self.reports.append((token, event))
        else:
            self.dropped += 1

    def drain(self) -> tuple[list[tuple[Any, Any]], int]:
        """The reports since the last drain, and how many were dropped so far."""
        reports, self.reports = self.reports, []
        return reports, self.dropped


class _Forwarder:
    """The one-worker pool's ``on_event`` inside a Ray task: logs each event of the job as ``(seq, kind, value, at)``
    (``start``: ``(host, job pid, GPU)``; ``stage``: its name) and sends it to the inbox, if there is one. Never
    raises and never waits: the pool does not catch its callback's exceptions, and a report is not worth a job."""

    def __init__(self, pool: Any, host: str, gpu: str | None, inbox: Any = None, token: Any = None) -> None:
        self.pool, self.host, self.gpu, self.inbox, self.token = pool, host, gpu, inbox, token
        self.log: list[tuple[int, str, Any, float]] = []

    def __call__(self, kind: str, key: str, index: int, stage: str | None) -> None:
        try:
            if kind == "start":
                value: Any = (self.host, self.pool._workers[index].pid, self.gpu)
            elif kind == "stage" and stage in REPORTED_STAGES:
                value = stage
            else:
                return
            event = (len(self.log), kind, value, time.monotonic())
            self.log.append(event)
            if self.inbox is not None:
                self.inbox.report.remote(self.token, event)
        except Exception:  # noqa: BLE001, S110 - a lost report costs a display line, never the job
            pass


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
    target: str,
    kwargs: dict[str, Any],
    timeout_s: float,
    job_env: dict[str, str] | None = None,
    report_to: tuple[Any, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The body of every Ray task: run ``target(**kwargs)`` in this Ray worker's one-worker `WorkerPool` (a process
    of its own, pinned to the GPU Ray gave this task, with the job's time limit; the pool replaces it after a
    crash, a hang or a CUDA error) and return the pool's `Outcome` with this worker's identity and the attempt's
    progress events (``identity["reports"]``). Runs in the Ray worker; never raises for what the job does (the
    outcome says it). The job's process gets every variable of this Ray worker's environment whose name says it holds
    a secret emptied (`argus.eval.sandbox.secretless_overrides`: a node's environment is its own, not the caller's),
    then `job_env`; `report_to` is ``(inbox, token)``: where to forward the progress events as they happen
    (`ProgressInbox`), None for nowhere."""
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
    env = {
        **secretless_overrides(),
        **(job_env or {}),
        **({"CUDA_VISIBLE_DEVICES": device} if device is not None else {}),
    }
    pool = _job_pool(env, timeout_s)
    inbox, token = report_to if report_to is not None else (None, None)
    forward = _Forwarder(pool, identity["host"], identity["gpu"], inbox, token)
    pool.on_event = forward
    try:
        for outcome in pool.run([Job("job", target, kwargs)]):
            identity["job_pid"] = outcome.worker_pid
            identity["reports"] = forward.log
            return outcome, identity
    finally:
        pool.on_event = None
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
    token: int = 0  # names this attempt in its progress reports
    applied: int = 0  # how many of its progress events the tracker has had (in seq order)
    early: dict[int, tuple[Any, ...]] | None = None  # events that arrived before an earlier one


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
        # progress: the inbox the tasks forward their pool's events to (None once lost), the attempts in flight by
        # token, the drain call under way; the lock orders the driver's and a display thread's use of them
        self._reports_lock = threading.Lock()
        self._in_flight: dict[int, _Pending] = {}
        self._tokens = 0
        self._drain: Any = None
        self._inbox: Any = None
        try:
            self._inbox = ray.remote(num_cpus=0, max_restarts=0)(ProgressInbox).remote()
        except Exception as e:  # noqa: BLE001 - whatever Ray raises: the run goes on without live progress
            self._inbox_lost(f"could not be created ({type(e).__name__}: {_first_line(e)})")

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
        with self._reports_lock:
            self._tokens += 1
            pending.token = self._tokens
            self._in_flight[pending.token] = pending
            report_to = (self._inbox, pending.token) if self._inbox is not None else None
        ref = self._remote.options(**options).remote(
            pending.job.target, pending.job.kwargs, self.timeout_s, self.job_env, report_to
        )
        self._pending[ref] = pending

    def as_completed(self) -> Iterator[JobResult]:
        ray = self._ray
        while self._pending:
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=DRAIN_WAIT_S)
            self._poll(0.0)
            for ref in ready:
                pending = self._pending.pop(ref)
                result = self._collect(ref, pending)
                if result is not None:
                    self.finished += 1
                    where = place_of(result.worker) if result.worker is not None else None
                    self.tracker.finished(result.key, result.ok, where)
                    yield result

    def progress(self) -> Progress:
        """A snapshot of the jobs (`argus.eval.executor.Progress`), with the reports the inbox holds applied first
        (waiting for them at most `DRAIN_WAIT_S`); safe to call from another thread, never raises for the inbox."""
        self._poll(DRAIN_WAIT_S)
        return self.tracker.snapshot()

    def _poll(self, wait_s: float) -> None:
        """Apply the reports the inbox holds: the drain call under way when it is back, then (when none is under way)
        a fresh one, waited for up to `wait_s` — on time-out it stays under way and a later poll applies it. A slow
        inbox costs a display its freshest reports, never a wait past `wait_s`; its failure is `_inbox_lost`."""
        ray = self._ray
        with self._reports_lock:
            if self._inbox is None:
                return
            try:
                if self._drain is not None and ray.wait([self._drain], num_returns=1, timeout=0)[0]:
                    self._take_drain()
                if self._drain is None:
                    self._drain = self._inbox.drain.remote()
                    if ray.wait([self._drain], num_returns=1, timeout=wait_s)[0]:
                        self._take_drain()
            except Exception as e:  # noqa: BLE001 - ActorDiedError, a lost object, a broken connection ...
                self._inbox_lost(f"died ({type(e).__name__}: {_first_line(e)})")

    def _take_drain(self) -> None:
        ref, self._drain = self._drain, None
        reports, dropped = self._ray.get(ref)
        for token, event in reports if isinstance(reports, list) else ():
            if type(token) is int and (pending := self._in_flight.get(token)) is not None:
                self._apply(pending, event)
        if dropped:
            self.tracker.note = f"{dropped} progress reports were dropped (the inbox was full: the driver polled late)"

    def _inbox_lost(self, why: str) -> None:
        """Live progress is over (called with the lock held, or before any job): the running jobs count as queued
        again, and each job's place and stages come with its result (its attempt's event log, replayed whole)."""
        if self._inbox is not None:
            try:
                self._ray.kill(self._inbox)
            except Exception:  # noqa: BLE001, S110 - already gone
                pass
        self._inbox, self._drain = None, None
        self.tracker.note = (
            f"live progress from the Ray tasks is lost: its inbox actor {why}; jobs submitted and not finished count "
            "as queued, and a job's place and stages show when its result is back"
        )
        self.tracker.requeue_running()
        for pending in self._in_flight.values():
            pending.applied, pending.early = 0, None

    def _apply(self, pending: _Pending, event: Any) -> None:
        """Give the tracker the attempt's event `event` (``(seq, kind, value, at)``) in seq order: an event that
        arrives before an earlier one waits for it, one seen before is skipped, a malformed one is dropped."""
        if not (isinstance(event, tuple) and len(event) == 4 and type(event[0]) is int):
            return
        if event[0] != pending.applied:
            if event[0] > pending.applied and len(pending.early or {}) < 2 * len(REPORTED_STAGES):
                pending.early = {**(pending.early or {}), event[0]: event}
            return
        while event is not None:
            _, kind, value, at = event
            pending.applied += 1
            if type(at) is float:
                if kind == "start" and (place := _reported_place(value)) is not None:
                    self.tracker.started(pending.job.key, place, at=at)
                elif kind == "stage":
                    self.tracker.stage(pending.job.key, value, at=at)  # checks the name against the fixed set
            event = (pending.early or {}).pop(pending.applied, None)

    def _collect(self, ref: Any, pending: _Pending) -> JobResult | None:
        ray = self._ray
        job = pending.job
        try:
            outcome, who = ray.get(ref)
        except self._lost as e:
            self._done_reporting(pending, None)
            what = f"{type(e).__name__}: {_first_line(e)}"
            if pending.attempt < MAX_ATTEMPTS:
                self.retried += 1
                first = {"reason": f"the Ray worker running the job was lost ({what})"}
                self.tracker.queued(job.key)  # waiting again: the lost attempt's place and stages are void
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
            self._done_reporting(pending, None)
            text = _ANSI.sub("", str(e))
            return JobResult(
                job.key,
                False,
                code="WORKER_EXCEPTION",
                reason=_task_failure(text),
                details={"attempts": pending.attempt, "traceback": text[-6000:]},
                seconds=time.monotonic() - pending.started,
            )
        self._done_reporting(pending, who.get("reports"))
        details = dict(outcome.details)
        details["attempts"] = int(details.get("attempts", 1)) + pending.attempt - 1
        if pending.first is not None:
            details["first_attempt"] = pending.first
        worker = WorkerIdentity("ray", who["host"], who.get("job_pid"), who.get("gpu"), who.get("node"))
        details["ray_worker_pid"] = who.get("pid")
        return JobResult.of(outcome, worker, key=job.key, details=details)

    def _done_reporting(self, pending: _Pending, log: Any) -> None:
        """The attempt is over: apply what its returned event log (`log`) has that the tracker has not had, then
        take it off the attempts in flight (a late report for it is dropped)."""
        with self._reports_lock:
            for event in log if isinstance(log, list) else ():
                self._apply(pending, event)
            self._in_flight.pop(pending.token, None)

    def close(self) -> None:
        with self._reports_lock:  # not lost: closed (the note stays empty)
            inbox, self._inbox, self._drain = self._inbox, None, None
        if inbox is not None:
            try:
                self._ray.kill(inbox)
            except Exception:  # noqa: BLE001, S110 - already gone, or Ray already shut down
                pass
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


def _reported_place(value: Any) -> str | None:
    """The place a ``start`` report names (``(host, job pid, GPU)``, as `_Forwarder` sends it): `place_of` of that
    worker, as the job's result will name it; None when the value is not of that shape."""
    if not (isinstance(value, tuple) and len(value) == 3):
        return None
    host, pid, gpu = value
    if type(host) is not str or not 0 < len(host) <= 255 or not (pid is None or type(pid) is int):
        return None
    if not (gpu is None or (type(gpu) is str and len(gpu) <= 64)):
        return None
    return place_of(WorkerIdentity("ray", host, pid, gpu))


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
