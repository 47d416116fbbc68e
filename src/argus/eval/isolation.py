"""Candidates run in worker processes with a time limit, so that a crash, a hang or an illegal memory access
fails that candidate and nothing else.

A `WorkerPool` starts `workers` processes with ``multiprocessing``'s *spawn* method (a fresh interpreter: no
state, CUDA context or file descriptors inherited from the parent), each optionally pinned to one GPU through
``CUDA_VISIBLE_DEVICES`` (one worker per GPU). A `Job` names a function by ``"module:function"`` and its keyword
arguments (plain data), so the candidate itself is loaded inside the worker. `WorkerPool.run` yields an
`Outcome` per job as it finishes:

* the function returned: ``ok`` with its value;
* it raised: ``WORKER_EXCEPTION`` with the traceback (the worker carries on; after a CUDA error it exits, since
  the CUDA context is unusable, and is replaced);
* the process died by its own doing (a segfault or other fault signal: SIGSEGV, SIGBUS, SIGILL, SIGABRT, ...;
  ``os._exit`` or any non-zero exit): ``WORKER_CRASHED`` with the signal or exit status, at once; the worker is
  replaced and the run continues;
* the process was killed from outside (SIGKILL or SIGTERM that the pool did not send: the OOM killer, an
  operator's ``kill``): not the candidate's fault as far as anyone can tell, so the job runs once more on a fresh
  worker before anything is reported; only when that attempt is killed too is it ``WORKER_CRASHED``, with
  ``details["attempts"] == 2`` and a reason naming the likely cause;
* it ran past `timeout_s`: the worker is killed (SIGKILL), ``WORKER_TIMEOUT``, replaced.

Every `Outcome` says in ``details["attempts"]`` how many times its job was started (1, or 2 after a retry).

Nothing is left running (`_contain`): each worker starts its own session and process group, and the pool kills
the whole group (whatever the candidate started included) when it replaces or closes the worker. When the parent
itself dies (``kill -9`` of ``argus kernelbench``), the worker gets SIGKILL from the kernel (``PR_SET_PDEATHSIG``),
and a small guard process in the worker's group kills what the worker left behind.

Progress (`WorkerPool`'s ``on_event``): the pool tells its owner when a job is handed to a worker (``"start"``) and
when the job reports that it finished a stage (``"stage"``). A job reports a stage with `report_stage` (the gate
calls it as it records each stage, `argus.eval.gate.static_prelude`); inside a worker that sends
``("stage", key, name)`` on the pipe the pool already reads, anywhere else it does nothing. The pool passes a report
on only when it names the job that worker is running and a stage of `REPORTED_STAGES`; anything else on the channel
is dropped. A report is a label for a display and its timing, nothing the run store records as a verdict.

Nothing heavy is imported at module level: the worker sets its environment before importing PyTorch.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import importlib
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

#: Exception texts after which a worker's CUDA context cannot be trusted: the worker exits and is replaced.
FATAL_MARKERS = (
    "illegal memory access",
    "unspecified launch failure",
    "misaligned address",
    "device-side assert",
    "CUDA error",
    "CUDA_ERROR",
    "RUNTIME_CUDA_",
)

#: Signals by which a worker is killed from outside (the OOM killer sends SIGKILL, an operator SIGKILL or SIGTERM).
#: When the pool did not send one, the job is run once more on a fresh worker before the death is reported; any
#: other signal (SIGSEGV, SIGBUS, SIGILL, SIGABRT, ...) or exit status is the candidate's at once.
EXTERNAL_KILL_SIGNALS = (signal.SIGKILL, signal.SIGTERM)
_EXTERNAL_EXIT_CODES = tuple(-int(s) for s in EXTERNAL_KILL_SIGNALS)  # as ``multiprocessing`` reports them

#: How many times a job is started at most (a first attempt and one retry after an external kill).
MAX_ATTEMPTS = 2

_PR_SET_PDEATHSIG = 1

#: The stages a job may report (`report_stage`): ``load`` (the problem is loaded, KernelBench) and the gate's stages in
#: the order it runs them. The fixed set the driver accepts: a report naming anything else is dropped.
REPORTED_STAGES = ("load", "static", "compile", "verify", "correct", "profile")

#: In a worker process, while it runs a job: sends one stage report on the worker's pipe. Unset elsewhere.
_STAGE_SENDER: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "argus_stage_sender", default=None
)


def report_stage(stage: str) -> None:
    """Tell the pool that runs this job that it finished `stage` (one of `REPORTED_STAGES`); does nothing outside a
    worker process (in-process runs, the sandbox) and never raises: progress is never worth failing a job for."""
    send = _STAGE_SENDER.get()
    if send is not None and stage in REPORTED_STAGES:
        with contextlib.suppress(Exception):
            send(stage)


def valid_stage_report(message: Any, key: str | None) -> str | None:
    """The stage a worker's ``("stage", key, name)`` message reports, when it is well formed, names the job `key`
    the worker is running and a stage of `REPORTED_STAGES`; else None (the message is dropped)."""
    if not (isinstance(message, tuple) and len(message) == 3 and message[0] == "stage"):
        return None
    _, job_key, stage = message
    if key is None or type(job_key) is not str or job_key != key or type(stage) is not str:
        return None
    return stage if stage in REPORTED_STAGES else None


@dataclass(frozen=True)
class Job:
    """A unit of work: call ``target`` (``"package.module:function"``) with ``kwargs`` in a worker. `resource`:
    which workers may run it (`WorkerPool`): ``"gpu"`` the pool's GPU workers, ``"cpu"`` its CPU workers (each where
    the pool has some, else any worker), ``"any"`` any worker."""

    key: str
    target: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    resource: str = "any"


@dataclass
class Outcome:
    """What became of a `Job`. ``details["attempts"]`` is how many times it was started (2 when its first worker
    was killed from outside; then ``details["first_attempt"]`` says how that one ended)."""

    key: str
    ok: bool
    value: Any = None
    code: str | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    worker_pid: int | None = None
    #: The ``CUDA_VISIBLE_DEVICES`` of the worker that ran the job (None: the worker saw whatever the pool saw).
    worker_device: str | None = None


def failure_status(outcome: Outcome) -> Any:
    """The gate status of a failed job: a crash, a hang or a CUDA error is the candidate's (``FAILED``); an
    ordinary exception raised outside every gate stage is the harness's own (``ERROR``: it could not decide, e.g.
    it ran out of memory drawing a reference input), never a rejection of the candidate.

    ``WORKER_CRASHED`` is ``FAILED`` however many attempts it took: a single kill from outside never reaches this
    point (the pool runs the job again), and a job killed on both attempts is most likely the one exhausting the
    host's memory (the OOM killer picks the largest process); ``details["attempts"]`` and the reason say which."""
    from argus.eval.results import Status

    if outcome.code == "WORKER_EXCEPTION" and not any(m in outcome.reason for m in FATAL_MARKERS):
        return Status.ERROR
    if outcome.code == "WORKER_LOST":  # an executor lost the job's worker twice (argus.eval.executor): undecided
        return Status.ERROR
    return Status.FAILED


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"job target {target!r} is not 'package.module:function'")
    return getattr(importlib.import_module(module), name)


def _contain(conn_fd: int, parent_pid: int | None, deathsig: bool) -> None:
    """The worker's first act, so that nothing it runs outlives the pool:

    * its own session and process group (``setsid``): the pool kills the whole group, whatever the job started in
      it, when it replaces or closes the worker (a process that starts a session of its own escapes this);
    * SIGKILL from the kernel when the parent dies (``PR_SET_PDEATHSIG``), armed only when the parent started the
      worker from its main thread: the signal follows the *thread* that forked, and another thread may end while
      the pool lives on;
    * an exit at once when the parent already died before the signal was armed (``getppid`` changed);
    * a guard process (`_guard`) that kills the group when the worker or the parent is gone.
    """
    with contextlib.suppress(OSError):  # EPERM: already a group leader (not when started by the pool)
        os.setsid()
    if deathsig and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(75)  # the parent died before the death signal was armed: nobody wants the result
    if os.getpgrp() == os.getpid() and hasattr(select, "poll") and hasattr(os, "fork"):
        _guard(conn_fd)


def _guard(conn_fd: int) -> None:
    """Fork the group's guard: a small process that waits until the worker is gone (the pipe it shares with the
    worker reads end-of-file: the worker's copy closes when it exits, however it dies) or the parent is (the
    worker's connection to the parent hangs up), then kills the worker's process group, itself included. It
    covers what ``PR_SET_PDEATHSIG`` does not: processes the job started, and parents on another thread.

    Runs in the worker before anything is imported (one thread: a safe ``fork``); only for a worker that leads its
    own process group, so that it can never kill the parent's."""
    group = os.getpgrp()
    read_end, write_end = os.pipe()  # not inheritable: the worker's write end closes when it exits or execs
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return
    if pid:  # the worker: keeps its write end open for life (never closed: its closing is the signal)
        os.close(read_end)
        return
    try:  # the guard: never returns into the worker's code
        os.close(write_end)
        keep = sorted({read_end, conn_fd})
        os.closerange(3, keep[0])  # the multiprocessing sentinel included: the parent sees the worker exit
        for low, high in zip(keep, [*keep[1:], os.sysconf("SC_OPEN_MAX")], strict=True):
            os.closerange(low + 1, high)
        poller = select.poll()
        poller.register(read_end, select.POLLIN)
        poller.register(conn_fd, getattr(select, "POLLRDHUP", 0))  # hang-ups (HUP, ERR) are always reported
        while not poller.poll():
            pass
        os.killpg(group, signal.SIGKILL)
    finally:
        os._exit(0)


def _worker_main(
    conn: Any, env: dict[str, str], preload: tuple[str, ...], parent_pid: int | None = None, deathsig: bool = False
) -> None:
    _contain(conn.fileno(), parent_pid, deathsig)
    os.environ.update(env)
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if message is None:
            return
        key, target, kwargs = message
        start = time.perf_counter()
        fatal = False
        token = _STAGE_SENDER.set(lambda stage, key=key: conn.send(("stage", key, stage)))
        try:
            value = _resolve(target)(**kwargs)
            reply: tuple[Any, ...] = ("ok", key, value, time.perf_counter() - start)
        except BaseException as e:  # noqa: BLE001 - SystemExit from a candidate included
            text = f"{type(e).__name__}: {e}"
            fatal = any(m in text for m in FATAL_MARKERS)
            reply = ("error", key, text, "".join(traceback.format_exception(e))[-6000:], time.perf_counter() - start)
        finally:
            _STAGE_SENDER.reset(token)
        try:
            conn.send(reply)
        except Exception as e:  # noqa: BLE001 - e.g. an unpicklable return value
            conn.send(("error", key, f"cannot send the result back: {e}", "", time.perf_counter() - start))
        if fatal:
            os._exit(70)


def describe_exit(exitcode: int | None) -> str:
    """``-11`` -> ``"was killed by signal SIGSEGV"``; ``3`` -> ``"exited with status 3"``."""
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While a worker is spawned, hide the parent's ``__main__`` from multiprocessing: the worker needs nothing
    from it, and not re-running it in the child makes the pool safe to start from a script without an
    ``if __name__ == "__main__"`` guard (and the start faster)."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


@dataclass(frozen=True)
class _Attempt:
    """A job as handed to a worker: which attempt this is, and what became of the first one (on a retry)."""

    job: Job
    number: int = 1
    first: dict[str, Any] | None = None


class _Worker:
    def __init__(self, ctx: Any, env: dict[str, str], preload: tuple[str, ...]) -> None:
        parent, child = ctx.Pipe()
        self.conn = parent
        deathsig = threading.current_thread() is threading.main_thread()  # see `_contain`
        self.process = ctx.Process(target=_worker_main, args=(child, env, preload, os.getpid(), deathsig), daemon=False)
        with _main_module_hidden():
            self.process.start()
        child.close()
        self.env = env
        self.ready = False
        self.pid: int | None = None
        self.started = time.monotonic()
        self.attempt: _Attempt | None = None
        self.retry: _Attempt | None = None  # a job killed from outside on another worker, to run here first
        self.deadline = float("inf")
        self.job_started = 0.0
        self.killed_by_pool = False
        self._reaped = False

    @property
    def job(self) -> Job | None:
        return self.attempt.job if self.attempt is not None else None

    def kill(self) -> None:
        """Kill the worker and its whole process group (the guard, whatever the job started), then reap it.

        The group is killed before the worker is reaped, and never after: until then the worker's pid (its group's
        id) cannot be given to another process, so ``killpg`` reaches this worker's group and nobody else's. A
        worker that has not made its own group yet has none by that id (``ESRCH``); it is killed alone."""
        self.killed_by_pool = True
        if not self._reaped and self.process.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.kill()  # signals only a process not reaped yet
            self.process.join(timeout=10)
            self._reaped = self.process.exitcode is not None
        self.conn.close()


def visible_device(index: int, parent: str | None = None) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value that shows a child the GPU this process calls `index`: with the parent
    limited to ``"2,3"``, index 1 is GPU ``"3"``, not GPU 1."""
    parent = os.environ.get("CUDA_VISIBLE_DEVICES") if parent is None else parent
    if parent is None or not parent.strip():
        return str(index)
    visible = [d.strip() for d in parent.split(",") if d.strip()]
    if not 0 <= index < len(visible):
        raise ValueError(f"GPU {index} is not among this process's visible devices ({parent!r})")
    return visible[index]


class WorkerPool:
    """Worker processes that run `Job`s with a time limit (see the module docstring).

    Args:
        workers: number of processes (ignored when `devices` is given: one per device).
        timeout_s: time limit of one job, from when the worker receives it.
        devices: GPU indices as this process sees them; worker i sees only ``devices[i]`` (``CUDA_VISIBLE_DEVICES``,
            translated through this process's own ``CUDA_VISIBLE_DEVICES`` when that is set).
        cpu_workers: with `devices`, this many more workers that see no GPU (``CUDA_VISIBLE_DEVICES=""``): a job
            whose `Job.resource` is ``"cpu"`` runs only on them, one that is ``"gpu"`` only on the GPU workers (the
            stage split: tracing, verification and NVRTC never hold a GPU's worker).
        startup_timeout_s: how long a worker may take to start (import PyTorch).
        preload: modules each worker imports before it reports ready.
        env: extra environment for every worker.
        on_event: called in the caller's thread as ``on_event("start", key, worker_index, None)`` when a job (or its
            retry) is handed to worker ``worker_index``, and ``on_event("stage", key, worker_index, stage)`` when the
            job reports a stage it finished (validated: `valid_stage_report`). Its exceptions are not caught.
    """

    def __init__(
        self,
        workers: int = 1,
        timeout_s: float = 600.0,
        *,
        devices: list[int] | None = None,
        startup_timeout_s: float = 180.0,
        preload: tuple[str, ...] = ("torch", "argus.eval.gate"),
        env: dict[str, str] | None = None,
        on_event: Callable[[str, str, int, str | None], None] | None = None,
        cpu_workers: int = 0,
    ) -> None:
        self.timeout_s = timeout_s
        self.on_event = on_event
        self.startup_timeout_s = startup_timeout_s
        self.preload = preload
        self._ctx = multiprocessing.get_context("spawn")
        self._envs = (
            [{**(env or {}), "CUDA_VISIBLE_DEVICES": visible_device(d)} for d in devices]
            if devices
            else [dict(env or {}) for _ in range(max(1, workers))]
        )
        # the workers' kinds, by index: "gpu" (pinned to one of `devices`), "cpu" (sees no GPU), "any" (unpinned)
        self._kinds = ["gpu"] * len(self._envs) if devices else ["any"] * len(self._envs)
        if devices and cpu_workers > 0:
            self._envs += [{**(env or {}), "CUDA_VISIBLE_DEVICES": ""} for _ in range(cpu_workers)]
            self._kinds += ["cpu"] * cpu_workers
        self._workers: list[_Worker] = [_Worker(self._ctx, e, preload) for e in self._envs]
        self.replaced = 0  # workers replaced (crashed, hung, killed, retired after a CUDA error)
        self.retried = 0  # jobs run again after their worker was killed from outside
        self._queue: collections.deque[_Attempt] = collections.deque()  # jobs not yet handed to a worker
        self._startup_failures = 0

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker: an idle one is asked to exit and given up to 5 s, a busy one is not waited for; then
        each worker's whole process group is killed (what its job started included) and the worker reaped."""
        idle = [w for w in self._workers if w.ready and w.job is None]
        for w in idle:
            with contextlib.suppress(OSError, ValueError):  # already gone
                w.conn.send(None)
        pending = [w.process.sentinel for w in idle]
        deadline = time.monotonic() + 5
        while pending and time.monotonic() < deadline:  # the sentinels say "exited" without reaping
            done = wait(pending, timeout=max(0.0, deadline - time.monotonic()))
            pending = [s for s in pending if s not in done]
        for w in self._workers:
            w.kill()
        self._workers = []

    def _replace(self, index: int) -> None:
        old = self._workers[index]
        old.kill()
        new = _Worker(self._ctx, old.env, self.preload)
        new.retry = old.retry  # a retry waiting for a fresh worker keeps waiting for the next one
        self._workers[index] = new
        self.replaced += 1

    def submit(self, job: Job) -> None:
        """Queue `job` behind those already queued; a `run` in progress (or the next one) runs it and yields its
        outcome. Lets a caller add work while it consumes outcomes (k candidates in flight)."""
        self._queue.append(_Attempt(self._checked(job)))

    def _checked(self, job: Job) -> Job:
        if job.resource not in ("gpu", "cpu", "any"):
            raise ValueError(f"job {job.key!r}: resource must be 'gpu', 'cpu' or 'any', not {job.resource!r}")
        return job

    def fits(self, job: Job, index: int) -> bool:
        """Whether worker `index` may run `job` (`Job.resource` against the worker's kind; a resource the pool has
        no worker of runs on any worker)."""
        kind = self._kinds[index]
        if job.resource == "any" or job.resource not in self._kinds:
            return True
        return kind == job.resource

    def _next_for(self, index: int) -> _Attempt | None:
        """The first queued job worker `index` may run, taken off the queue; None if there is none."""
        for i, attempt in enumerate(self._queue):
            if self.fits(attempt.job, index):
                del self._queue[i]
                return attempt
        return None

    def run(self, jobs: Iterable[Job] = ()) -> Iterator[Outcome]:
        """Run `jobs` (and whatever `submit` queues meanwhile); yield each `Outcome` as it finishes (not necessarily
        in order). A job whose worker is killed from outside (`EXTERNAL_KILL_SIGNALS`, not sent by the pool) runs
        once more, first thing on the worker that replaces the killed one, before its outcome is yielded (see the
        module docstring)."""
        queue = self._queue
        queue.extend(_Attempt(self._checked(job)) for job in jobs)
        while queue or any(w.attempt is not None or w.retry is not None for w in self._workers):
            now = time.monotonic()
            for index, w in enumerate(self._workers):  # hand out work: a retry waiting for this fresh worker first
                if w.ready and w.attempt is None and (w.retry is not None or queue):
                    attempt = w.retry if w.retry is not None else self._next_for(index)
                    if attempt is None:  # nothing queued that this worker may run
                        continue
                    w.retry = None
                    w.conn.send((attempt.job.key, attempt.job.target, attempt.job.kwargs))
                    w.attempt, w.job_started, w.deadline = attempt, now, now + self.timeout_s
                    if self.on_event is not None:
                        self.on_event("start", attempt.job.key, index, None)
            deadlines = [w.deadline for w in self._workers if w.attempt is not None]
            deadlines += [w.started + self.startup_timeout_s for w in self._workers if not w.ready]
            wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            objects = [w.conn for w in self._workers] + [w.process.sentinel for w in self._workers]
            ready = set(wait(objects, timeout=wait_s))
            for i, w in enumerate(list(self._workers)):
                outcome: Outcome | None = None
                if w.conn in ready or w.process.sentinel in ready:
                    outcome = self._service(i, w)
                elif w.attempt is not None and time.monotonic() >= w.deadline:
                    attempt = w.attempt
                    self._replace(i)
                    outcome = Outcome(
                        attempt.job.key,
                        False,
                        code="WORKER_TIMEOUT",
                        reason=f"ran past its time limit of {self.timeout_s:g} s; the worker was killed and replaced",
                        details=_attempts({"timeout_s": self.timeout_s}, attempt),
                        seconds=time.monotonic() - w.job_started,
                        worker_pid=w.pid,
                    )
                elif not w.ready and time.monotonic() >= w.started + self.startup_timeout_s:
                    self._startup_failed(i, f"did not start within {self.startup_timeout_s:g} s")
                if outcome is not None:
                    outcome.worker_device = self._envs[i].get("CUDA_VISIBLE_DEVICES")
                    yield outcome

    def _startup_failed(self, index: int, why: str) -> None:
        self._startup_failures += 1
        if self._startup_failures > 3 * len(self._workers):
            raise RuntimeError(f"worker processes keep failing to start: {why}")
        self._replace(index)

    def _service(self, index: int, w: _Worker) -> Outcome | None:
        try:
            if w.conn.poll():
                message = w.conn.recv()
            else:
                raise EOFError
        except (EOFError, OSError):
            return self._died(index, w)
        kind = message[0]
        if kind == "ready":
            w.ready, w.pid = True, message[1]
            return None
        if kind == "stage":  # a progress report: passed on when valid, never an outcome
            stage = valid_stage_report(message, w.job.key if w.job is not None else None)
            if stage is not None and self.on_event is not None:
                self.on_event("stage", w.job.key, index, stage)  # type: ignore[union-attr]
            return None
        attempt = w.attempt
        w.attempt, w.deadline = None, float("inf")
        key = attempt.job.key if attempt is not None else message[1]
        if kind == "ok":
            return Outcome(key, True, value=message[2], seconds=message[3], worker_pid=w.pid,
                           details=_attempts({}, attempt))  # fmt: skip
        outcome = Outcome(
            key,
            False,
            code="WORKER_EXCEPTION",
            reason=message[2],
            details=_attempts({"traceback": message[3]}, attempt),
            seconds=message[4],
            worker_pid=w.pid,
        )
        if any(m in message[2] for m in FATAL_MARKERS):
            wait([w.process.sentinel], timeout=10)  # it exits by itself; reaped (after its group) by the replace
            self._replace(index)
        return outcome

    def _died(self, index: int, w: _Worker) -> Outcome | None:
        """The worker's connection closed: it died (or cut the connection). Kill what is left of its group, read
        how it ended, replace it; then report the job's death, or queue the job again on the replacement when the
        worker was killed from outside on the job's first attempt."""
        exited = bool(wait([w.process.sentinel], timeout=10))  # False: it cut the connection but lives on
        killed_by_pool = w.killed_by_pool
        w.kill()  # its group too (the guard, what the job started); reaps it
        exitcode = w.process.exitcode if exited else None
        status = describe_exit(exitcode) if exited else "closed its connection to the pool (it was killed)"
        attempt = w.attempt
        if attempt is None:  # died while idle or starting
            self._startup_failed(index, f"worker {status}")
            return None
        external = exited and not killed_by_pool and exitcode in _EXTERNAL_EXIT_CODES
        if external and attempt.number < MAX_ATTEMPTS:
            first = {"exitcode": exitcode, "reason": f"the worker process {status}", "worker_pid": w.pid}
            self._replace(index)
            self._workers[index].retry = _Attempt(attempt.job, attempt.number + 1, first)
            self.retried += 1
            return None
        self._replace(index)
        if external and attempt.first is not None:  # a first attempt is only ever retried after an external kill
            first = describe_exit(attempt.first["exitcode"])
            reason = (
                f"the worker process was killed from outside on both attempts (first it {first}, then on a fresh "
                f"worker it {status}); the pool sent no signal. Likely cause: the kernel's OOM killer (the host ran "
                "out of memory: this candidate, or another process on the machine; `dmesg` shows 'Out of memory', "
                "/proc/pressure/memory the pressure) or an operator's kill"
            )
        elif attempt.first is not None:
            reason = (
                f"the worker process {status} while evaluating (attempt {attempt.number}: the first attempt's worker "
                f"{describe_exit(attempt.first.get('exitcode'))}, a kill from outside, and the job was run again); "
                "it was replaced"
            )
        else:
            reason = f"the worker process {status} while evaluating; it was replaced"
        return Outcome(
            attempt.job.key,
            False,
            code="WORKER_CRASHED",
            reason=reason,
            details=_attempts({"exitcode": exitcode}, attempt),
            seconds=time.monotonic() - w.job_started,
            worker_pid=w.pid,
        )


def _attempts(details: dict[str, Any], attempt: _Attempt | None) -> dict[str, Any]:
    """`details` with the attempt count (and, after a retry, what became of the first attempt)."""
    details["attempts"] = attempt.number if attempt is not None else 1
    if attempt is not None and attempt.first is not None:
        details["first_attempt"] = attempt.first
    return details
