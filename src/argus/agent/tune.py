"""Tuning the kernels `argus solve` generates: each kernel's declared policies searched by the agent's bandit
(`argus.agent.loop.optimize`, transform coder, no LLM) with measured times, the best parameters launched by the
solution (`argus.frontend.solve`'s ``tune`` hook).

A generated kernel is an ``@argus.kernel`` with a reference and the captured sizes, so the agent takes it as a task
of its own (``SOLUTION.py:KERNEL``): every candidate is gated (verified, checked against the reference) and, on a
GPU, timed at the captured sizes; the cost model only orders the arms. Without a GPU the loop's times are the
cost model's estimates, which do not decide here: the kernels keep their defaults and the outcome says so
(``allow_estimates`` takes them anyway, for tests of the plumbing).

Results are cached per (kernel, sizes, GPU): the key is the kernel's self-contained source
(`argus.kernels.source.module_source`, whose decorator holds the captured sizes) and the GPU's name; a measured
result is written to ``$ARGUS_CACHE_DIR/tuned`` (else ``~/.cache/argus/tuned``) and a second solve of the same
kernel on the same GPU takes it without searching again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    from argus.backend.cuda.cache import cache_root

    return cache_root("tuned")


@dataclass
class Tuned:
    """One kernel's tuning: the parameters chosen (empty: its defaults), the start's and the best time (ms,
    measured when `metric` is ``gpu``), the agent's run, whether it came from the cache, and a note."""

    kernel: str
    params: dict[str, Any] = field(default_factory=dict)
    start_ms: float | None = None
    best_ms: float | None = None
    metric: str | None = None
    run_id: str | None = None
    cached: bool = False
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class Tuner:
    """The ``tune`` hook of `argus.frontend.solve.solve` (see the module docstring): ``tuner(solution, kernels)``
    returns kernel -> parameters and keeps each kernel's `Tuned` in `outcomes`."""

    def __init__(
        self,
        budget: int,
        *,
        store: str | Path,
        allow_estimates: bool = False,
        cache_dir: str | Path | None = None,
        timeout_s: float = 600.0,
        on_step: Callable[[str], Any] | None = None,
    ) -> None:
        if budget < 1:
            raise ValueError("a tuning budget is at least one candidate per kernel")
        self.budget = budget
        self.store = Path(store)
        self.allow_estimates = allow_estimates
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.timeout_s = timeout_s
        self.on_step = on_step or (lambda text: None)
        self.outcomes: list[Tuned] = []

    def __call__(self, solution: Path, kernels: list[str]) -> dict[str, dict[str, Any]]:
        from argus.eval.candidates import import_file
        from argus.eval.device import has_gpu
        from argus.kernels.source import module_source

        gpu = has_gpu()
        if not gpu and not self.allow_estimates:
            for k in kernels:
                self.outcomes.append(
                    Tuned(k, note="not tuned: no GPU here (the cost model's estimates order the arms, they do not "
                          "choose); its defaults are kept")
                )  # fmt: skip
            return {}
        device = _gpu_name() if gpu else "cost model"
        module = import_file(Path(solution), "argus_tune_solution")
        chosen: dict[str, dict[str, Any]] = {}
        for name in kernels:
            key = hashlib.sha256((module_source(getattr(module, name)) + "\0" + device).encode()).hexdigest()[:24]
            hit = self._read(key)
            if hit is not None:
                outcome = Tuned(name, cached=True, **hit)
                outcome.note = f"from the cache ({device})"
            else:
                self.on_step(f"tuning {name} ({self.budget} candidates)")
                outcome = self._search(solution, name)
                if outcome.metric == "gpu":
                    self._write(key, outcome)
            self.outcomes.append(outcome)
            if outcome.params:
                chosen[name] = dict(outcome.params)
        return chosen

    def _search(self, solution: Path, name: str) -> Tuned:
        from argus.agent.loop import Budget, optimize

        result = optimize(
            f"{solution}:{name}",
            planner="bandit",
            coder="transform",
            budget=Budget(candidates=self.budget),
            store=self.store,
            seed=0,
            timeout_s=self.timeout_s,
        )
        best = result.best or {}
        outcome = Tuned(name, start_ms=result.start_ms, metric=result.metric, run_id=result.run_id)
        outcome.best_ms = best.get("ms")
        same_kernel = str(best.get("kernel", "")).endswith(f":{name}")
        if best and best.get("step", 0) != 0 and same_kernel:
            outcome.params = dict(best.get("params") or {})
            outcome.note = f"best of {len(result.trajectory)} candidates ({result.metric})"
        else:
            outcome.note = f"the defaults were the best of {len(result.trajectory)} candidates ({result.metric})"
        return outcome

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.cache_dir / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        fields = set(Tuned.__dataclass_fields__) - {"kernel", "cached"}
        return {k: v for k, v in data.items() if k in fields} if isinstance(data, dict) else None

    def _write(self, key: str, outcome: Tuned) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            (self.cache_dir / f"{key}.json").write_text(json.dumps(outcome.to_json(), default=str))
        except OSError:
            pass  # a cache that cannot be written costs a search next time, nothing else


def _gpu_name() -> str:
    import torch

    return f"{torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))})"
