"""Jobs for the worker-pool tests (imported by name inside the worker processes)."""

from __future__ import annotations

import ctypes
import os
import time


def square(x: int) -> int:
    return x * x


def crash(status: int = 3) -> None:
    os._exit(status)


def segfault() -> None:
    ctypes.string_at(0)


def hang(seconds: float = 600.0) -> None:
    time.sleep(seconds)


def fail(message: str) -> None:
    raise ValueError(message)


def illegal_memory_access() -> None:
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def pid() -> int:
    return os.getpid()


def modules_loaded(names: list[str]) -> list[str]:
    """Which of `names` this worker process has imported."""
    import sys

    return [n for n in names if n in sys.modules]


def _call(target: str, kwargs: dict) -> object:
    from argus.eval.isolation import _resolve

    return _resolve(target)(**kwargs)


def kill_self_once(marker: str, target: str, kwargs: dict) -> object:
    """The first time (no `marker` file yet): SIGKILL this worker process, as the OOM killer would. Afterwards: run
    ``target(**kwargs)``."""
    import signal

    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return _call(target, kwargs)


def _ray_worker_parent() -> int:
    """The pid of the Ray worker that started this process (refuses to name any other process)."""
    parent = os.getppid()
    with open(f"/proc/{parent}/cmdline", "rb") as f:
        cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
    if "ray::" not in cmdline and "default_worker.py" not in cmdline:
        raise RuntimeError(f"the parent process {parent} is not a Ray worker: {cmdline[:200]!r}")
    return parent


def kill_ray_worker_once(marker: str, target: str, kwargs: dict) -> object:
    """The first time (no `marker` file yet): SIGKILL the Ray worker running this job, mid-job, and wait to die with
    it. Afterwards: run ``target(**kwargs)``."""
    import signal

    if not os.path.exists(marker):
        parent = _ray_worker_parent()
        open(marker, "w").close()
        os.kill(parent, signal.SIGKILL)
        time.sleep(600)
    return _call(target, kwargs)


def kill_ray_worker_always() -> None:
    """SIGKILL the Ray worker running this job, every time."""
    import signal

    os.kill(_ray_worker_parent(), signal.SIGKILL)
    time.sleep(600)


def environment(names: list[str]) -> dict[str, str | None]:
    """The job process's values of the environment variables `names` (None where unset)."""
    return {name: os.environ.get(name) for name in names}
