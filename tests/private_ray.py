"""A private Ray instance for the tests that run the executor through Ray (one definition for every test module)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def private_ray(cache_dir: Path, *, num_gpus: int = 0, env: dict[str, str] | None = None) -> Iterator[Any]:
    """``ray.init(address="local", num_cpus=2)`` (with `num_gpus` declared, for the stage split's routing): a
    private instance, never a cluster this machine may run (a plain ``ray.init()`` would join one), stopped on
    leaving. Its workers inherit this process's environment at start: ``PYTHONPATH`` gains the repository (for
    `tests.eval.workers`) and ``src``, ``ARGUS_CACHE_DIR`` is `cache_dir`, plus `env`; all restored after."""
    import ray

    extra = dict(env or {})
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "ARGUS_CACHE_DIR", *extra)}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "src"), *([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else [])]
    )
    os.environ["ARGUS_CACHE_DIR"] = str(cache_dir)
    os.environ.update(extra)
    resources = {"num_gpus": num_gpus} if num_gpus else {}
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, **resources)
    try:
        yield ray
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
