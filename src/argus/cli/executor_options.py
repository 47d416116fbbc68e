"""The options of the commands whose gate jobs go through an executor (`argus.eval.executor`) — ``--ray
auto|ADDRESS`` (else ``$ARGUS_RAY_ADDRESS``, `argus.eval.executor.ray_address`) and ``--parallel K`` — and the Ray
executor they open: one definition for `argus optimize`, `argus solve --budget`, `argus tune` and `argus lineage
walk` (docs/scale-out.md, "Parallel callers").

Without ``--ray`` and without ``$ARGUS_RAY_ADDRESS``, `ray_executor` gives None and imports nothing of Ray: each
command keeps its embedded default, and ``--parallel K`` opens the local pool the library function behind the
command owns (the optimization loop's K worker processes, the walk's, the GEMM tuning's), so that a library user
gets the same from Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

#: How long one gate job may run on a worker before it is the candidate's ``WORKER_TIMEOUT`` (the loop's default).
JOB_TIMEOUT_S = 600.0


def ray_option(what: str, otherwise: str) -> Any:
    """The ``--ray`` option of a command: `what` runs on a Ray cluster when it is given (or
    ``$ARGUS_RAY_ADDRESS`` is set), `otherwise` says where it runs by default."""
    return typer.Option(
        None,
        "--ray",
        help=f"{what} on a Ray cluster: auto, HOST:PORT, ray://HOST:PORT, or local (a private instance); default: "
        f"$ARGUS_RAY_ADDRESS, else {otherwise} (docs/scale-out.md)",
    )


def parallel_option(text: str) -> Any:
    """The ``--parallel K`` option of a command (at least 1; None when not given), `text` its help."""
    return typer.Option(None, "--parallel", min=1, help=f"{text} (docs/scale-out.md)")


@contextmanager
def ray_executor(ray: str | None, *, timeout_s: float = JOB_TIMEOUT_S) -> Iterator[Any]:
    """The Ray executor a command's ``--ray`` value (else ``$ARGUS_RAY_ADDRESS``) names, closed on leaving the
    block; None where neither asks for Ray (nothing is started, Ray is not imported). Every job's process gets this
    process's secret variables emptied (`argus.agent.providers.secrets.worker_environment`). Raises
    `argus.eval.executor.ExecutorError` (an `ArgusError`: ``EXECUTOR_RAY_MISSING``, ``EXECUTOR_RAY_CONNECT``) when
    Ray is asked for and cannot be used."""
    from argus.eval.executor import ray_address

    if ray_address(ray) is None:
        yield None
        return
    from argus.agent.providers.secrets import worker_environment
    from argus.eval.executor import open_executor

    executor = open_executor(ray, timeout_s=timeout_s, job_env=worker_environment())
    try:
        yield executor
    finally:
        executor.close()
