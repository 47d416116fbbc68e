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
* the process died (segfault, ``os._exit``, the OOM killer): ``WORKER_CRASHED`` with the signal or exit status;
  the worker is replaced and the run continues;
* it ran past `timeout_s`: the worker is killed (SIGKILL), ``WORKER_TIMEOUT``, replaced.

Nothing heavy is imported at module level: the worker sets its environment before importing PyTorch.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
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


@dataclass(frozen=True)
class Job:
    """A unit of work: call ``target`` (``"package.module:function"``) with ``kwargs`` in a worker."""

    key: str
    target: str
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """What became of a `Job`."""

    key: str
    ok: bool
    value: Any = None
    code: str | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    worker_pid: int | None = None


def failure_status(outcome: Outcome) -> Any:
    """The gate status of a failed job: a crash, a hang or a CUDA error is the candidate's (``FAILED``); an
    ordinary exception raised outside every gate stage is the harness's own (``ERROR``: it could not decide, e.g.
    it ran out of memory drawing a reference input), never a rejection of the candidate."""
    from argus.eval.results import Status

    if outcome.code == "WORKER_EXCEPTION" and not any(m in outcome.reason for m in FATAL_MARKERS):
        return Status.ERROR
    return Status.FAILED


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"job target {target!r} is not 'package.module:function'")
    return getattr(importlib.import_module(module), name)


def _worker_main(conn: Any, env: dict[str, str], preload: tuple[str, ...]) -> None:
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
        try:
            value = _resolve(target)(**kwargs)
            reply: tuple[Any, ...] = ("ok", key, value, time.perf_counter() - start)
        except BaseException as e:  # noqa: BLE001 - SystemExit from a candidate included
            text = f"{type(e).__name__}: {e}"
            fatal = any(m in text for m in FATAL_MARKERS)
            reply = ("error", key, text, "".join(traceback.format_exception(e))[-6000:], time.perf_counter() - start)
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


class _Worker:
    def __init__(self, ctx: Any, env: dict[str, str], preload: tuple[str, ...]) -> None:
        parent, child = ctx.Pipe()
        self.conn = parent
        self.process = ctx.Process(target=_worker_main, args=(child, env, preload), daemon=False)
        with _main_module_hidden():
            self.process.start()
        child.close()
        self.env = env
        self.ready = False
        self.pid: int | None = None
        self.started = time.monotonic()
        self.job: Job | None = None
        self.deadline = float("inf")
        self.job_started = 0.0

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
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
        startup_timeout_s: how long a worker may take to start (import PyTorch).
        preload: modules each worker imports before it reports ready.
        env: extra environment for every worker.
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
    ) -> None:
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.preload = preload
        self._ctx = multiprocessing.get_context("spawn")
        self._envs = (
            [{**(env or {}), "CUDA_VISIBLE_DEVICES": visible_device(d)} for d in devices]
            if devices
            else [dict(env or {}) for _ in range(max(1, workers))]
        )
        self._workers: list[_Worker] = [_Worker(self._ctx, e, preload) for e in self._envs]
        self.replaced = 0
        self._startup_failures = 0

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker (politely, then by force)."""
        for w in self._workers:
            try:
                if w.process.is_alive() and w.ready and w.job is None:
                    w.conn.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5
        for w in self._workers:
            w.process.join(timeout=max(0.0, deadline - time.monotonic()))
            w.kill()
        self._workers = []

    def _replace(self, index: int) -> None:
        old = self._workers[index]
        old.kill()
        self._workers[index] = _Worker(self._ctx, old.env, self.preload)
        self.replaced += 1

    def run(self, jobs: Iterable[Job]) -> Iterator[Outcome]:
        """Run `jobs`; yield each `Outcome` as it finishes (not necessarily in order)."""
        queue = collections.deque(jobs)
        while queue or any(w.job is not None for w in self._workers):
            now = time.monotonic()
            for w in self._workers:  # hand out work
                if w.ready and w.job is None and queue:
                    job = queue.popleft()
                    w.conn.send((job.key, job.target, job.kwargs))
                    w.job, w.job_started, w.deadline = job, now, now + self.timeout_s
            deadlines = [w.deadline for w in self._workers if w.job is not None]
            deadlines += [w.started + self.startup_timeout_s for w in self._workers if not w.ready]
            wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            objects = [w.conn for w in self._workers] + [w.process.sentinel for w in self._workers]
            ready = set(wait(objects, timeout=wait_s))
            for i, w in enumerate(list(self._workers)):
                outcome: Outcome | None = None
                if w.conn in ready or w.process.sentinel in ready:
                    outcome = self._service(i, w)
                elif w.job is not None and time.monotonic() >= w.deadline:
                    job = w.job
                    self._replace(i)
                    outcome = Outcome(
                        job.key,
                        False,
                        code="WORKER_TIMEOUT",
                        reason=f"ran past its time limit of {self.timeout_s:g} s; the worker was killed and replaced",
                        details={"timeout_s": self.timeout_s},
                        seconds=time.monotonic() - w.job_started,
                        worker_pid=w.pid,
                    )
                elif not w.ready and time.monotonic() >= w.started + self.startup_timeout_s:
                    self._startup_failed(i, f"did not start within {self.startup_timeout_s:g} s")
                if outcome is not None:
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
            w.process.join(timeout=10)
            status = describe_exit(w.process.exitcode)
            job = w.job
            if job is None:  # died while idle or starting
                self._startup_failed(index, f"worker {status}")
                return None
            self._replace(index)
            return Outcome(
                job.key,
                False,
                code="WORKER_CRASHED",
                reason=f"the worker process {status} while evaluating; it was replaced",
                details={"exitcode": w.process.exitcode},
                seconds=time.monotonic() - w.job_started,
                worker_pid=w.pid,
            )
        kind = message[0]
        if kind == "ready":
            w.ready, w.pid = True, message[1]
            return None
        job = w.job
        w.job, w.deadline = None, float("inf")
        key = job.key if job is not None else message[1]
        if kind == "ok":
            return Outcome(key, True, value=message[2], seconds=message[3], worker_pid=w.pid)
        outcome = Outcome(
            key,
            False,
            code="WORKER_EXCEPTION",
            reason=message[2],
            details={"traceback": message[3]},
            seconds=message[4],
            worker_pid=w.pid,
        )
        if any(m in message[2] for m in FATAL_MARKERS):
            w.process.join(timeout=10)
            self._replace(index)
        return outcome
