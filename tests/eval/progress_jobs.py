"""Jobs for the progress tests (imported by name inside the worker processes): they report stages and sleep, so that
a snapshot taken meanwhile sees them running."""

from __future__ import annotations

import os
import time


def staged(stages: list[str], sleep_s: float = 0.0, raw: list[object] | None = None) -> str:
    """Report each of `stages` (through `report_stage`, which drops unknown names here), then each of `raw` straight
    on the channel (as a job that bypasses `report_stage` would: the pool must validate), sleeping `sleep_s` after
    each; returns this worker's pid."""
    from argus.eval.isolation import _STAGE_SENDER, report_stage

    for stage in stages:
        report_stage(stage)
        time.sleep(sleep_s)
    send = _STAGE_SENDER.get()
    for message in raw or []:
        assert send is not None
        send(message)  # type: ignore[arg-type]
        time.sleep(sleep_s)
    return str(os.getpid())


def wait_for(path: str, timeout_s: float = 60.0) -> str:
    """Report ``load``, then wait until `path` exists (the test lets the job finish when it has seen it running)."""
    from argus.eval.isolation import report_stage

    report_stage("load")
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    return "done"


def crash_after(stage: str) -> None:
    """Report `stage`, then die as a crashing candidate would (a non-zero exit)."""
    from argus.eval.isolation import report_stage

    report_stage(stage)
    time.sleep(0.1)
    os._exit(3)
