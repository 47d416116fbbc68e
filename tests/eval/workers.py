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
