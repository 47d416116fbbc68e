"""Curricula compared on one task and budget: no knowledge base, the curated entries only, curated entries plus
mined skills. Each arm runs the same optimizer (a `Runner`) from the same start kernel with the same budget; the
report gives each arm's final quality (best profile time, from the gate: GPU timing or the cost model's estimate)
and the steps it took to reach 90 % of the best quality any arm reached.

The runner is a small interface: ``runner(target, entries, budget) -> list[float | None]``, the best time (ms)
after each step (None before any accepted candidate). `agent_runner` adapts `argus.agent.loop.optimize` when it
can be told which entries to use; when it cannot, `AgentUnavailable` says what is missing.
"""

from __future__ import annotations

import inspect
import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Runner = Callable[[str, tuple[Any, ...], int], Sequence[float | None]]


class AgentUnavailable(RuntimeError):
    """The agent loop is missing, or cannot be given a knowledge-base selection (the message says which)."""


@dataclass
class ArmResult:
    curriculum: str
    entries: int
    trajectory: list[float | None]
    best_ms: float | None
    steps_to_90: int | None

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


def curricula(skills: str | pathlib.Path | None = None) -> dict[str, tuple[Any, ...]]:
    """The three entry sets: ``none`` (empty), ``curated`` (the shipped entries), ``curated+mined`` (plus the
    skills of `skills`, default `argus.lineage.skills.skills_dir()`)."""
    from argus.kb import entries, with_skills
    from argus.lineage.skills import skills_dir

    return {
        "none": (),
        "curated": tuple(entries()),
        "curated+mined": tuple(with_skills(skills if skills is not None else skills_dir())),
    }


def compare(target: str, budget: int, runner: Runner, arms: dict[str, tuple[Any, ...]]) -> list[ArmResult]:
    """Run every arm; quality is speed (1 / best ms); `steps_to_90` is the first step (0: the start kernel) at which
    an arm's best time is within 1/0.9 of the best time of all arms (None if never)."""
    runs = {
        name: [t if t is None else float(t) for t in runner(target, entries, budget)] for name, entries in arms.items()
    }
    finals = [min((t for t in traj if t is not None), default=None) for traj in runs.values()]
    overall = min((f for f in finals if f is not None), default=None)
    out = []
    for (name, traj), best in zip(runs.items(), finals, strict=True):
        reach = None
        if overall is not None:
            for i, t in enumerate(traj):
                if t is not None and t <= overall / 0.9:
                    reach = i
                    break
        out.append(ArmResult(name, len(arms[name]), traj, best, reach))
    return out


def agent_runner(**options: Any) -> Runner:
    """`argus.agent.loop.optimize` as a `Runner`, or `AgentUnavailable` naming what is missing: the loop itself,
    or a parameter through which it takes the entries to plan from (``entries``, ``kb_entries`` or ``knowledge``)."""
    try:
        from argus.agent.loop import optimize
    except ImportError as e:
        raise AgentUnavailable(f"the agent loop is not available (argus.agent.loop.optimize: {e})") from None
    params = inspect.signature(optimize).parameters
    name = next((n for n in ("entries", "kb_entries", "knowledge") if n in params), None)
    if name is None:
        raise AgentUnavailable(
            "argus.agent.loop.optimize takes no knowledge-base selection (no 'entries' / 'kb_entries' / 'knowledge' "
            f"parameter; it takes {', '.join(params)}), so the three curricula cannot be run under the same loop"
        )

    def run(target: str, entries: tuple[Any, ...], budget: int) -> list[float | None]:
        result = optimize(target, budget=budget, **{name: entries}, **options)
        history = getattr(result, "best_ms_by_step", None)
        if history is None:
            raise AgentUnavailable("the optimize result has no per-step best time (best_ms_by_step)")
        return list(history)

    return run
