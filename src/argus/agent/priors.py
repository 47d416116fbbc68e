"""Cross-problem priors: what earlier optimization runs in the run store learned, handed to the planner of a new
problem of the same family and shape class so that it starts from what worked (issue #26; docs/agent.md,
"Learning across problems").

Every gated candidate of a run is one observation of its action: the *advantage* the bandit learns from (its
reward less its parent's for an accepted candidate, the penalty of a failed one; `argus.agent.loop.advantage`).
A run's **problem class** is its family (`argus.eval.calibration.family_of` of the target's kernel name) and shape
class (`shape_class`: each size symbol of the task's sizes as ``S`` (< 256), ``M`` (< 4096) or ``L``). `learn`
averages each action's advantages over the other runs, weighting observations of the same class 1 and of the same
family in another class `OTHER_CLASS_WEIGHT` (other families: 0), and returns one `Learned` per action.

`warm_start` gives them to a bandit as a shift of each action's prior (`BanditPlanner.learned`, added to the
retrieval prior rescaled to [0, 1], which counts as one virtual pull): ``LEARNED_WEIGHT * c * tanh(mean /
REWARD_SCALE)`` with the confidence ``c = weight / (weight + OTHER_CLASS_WEIGHT)`` (one observation of another shape
class: 0.5; one of the same class: 0.8). (A pseudo-count of 1 was measured first: on an H200 sweep of three GEMM
shapes, each its own class, it left one other-class observation a shift of at most 0.2, and the second and third
problems repeated the first's three tile shapes that had not paid.) An action that
paid elsewhere starts ahead of the knowledge base's order, one that failed starts behind; the run's own rewards take
over as it pulls. (Virtual *pulls* were tried first: they lower an action's exploration bonus, so UCB tried every
untried action before the one that had paid.) What was learned is recorded in the run's config (``priors``), so a
resumed run replays the same start whatever the store gained since. The LLM planner sees the same table in its
prompt (`PlanContext.learned`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OTHER_CLASS_WEIGHT = 0.25  # an observation of the same family in another shape class counts a quarter
LEARNED_WEIGHT = 1.0  # the largest shift of a prior: the whole range of the rescaled retrieval priors
REWARD_SCALE = 0.25  # a mean advantage of this size (ln 1.28x) shifts a prior by tanh(1) = 0.76 of the weight


@dataclass(frozen=True)
class Learned:
    """What earlier runs say of one action: the weighted mean advantage, the weight of the observations behind it
    (same-class observations count 1), and how many runs they came from."""

    mean: float
    weight: float
    runs: int

    def to_json(self) -> list[float]:
        return [round(self.mean, 6), round(self.weight, 6), self.runs]

    @classmethod
    def from_json(cls, data: Any) -> Learned:
        mean, weight, runs = data
        return cls(float(mean), float(weight), int(runs))


def shape_class(sizes: Mapping[str, Any] | None) -> str:
    """The size symbols bucketed: ``S`` below 256, ``M`` below 4096, ``L`` from there (e.g. ``K:L,M:S,N:L``);
    non-integer sizes are left out; ``-`` for none."""
    parts = []
    for name in sorted(sizes or {}):
        v = (sizes or {})[name]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            continue
        parts.append(f"{name}:{'S' if v < 256 else ('M' if v < 4096 else 'L')}")
    return ",".join(parts) or "-"


def problem_class(target: str, sizes: Mapping[str, Any] | None) -> tuple[str, str]:
    """(family, shape class) of an optimization target (a library kernel's name or ``FILE.py:function``) at
    `sizes`."""
    from argus.eval.calibration import family_of

    name = str(target).rsplit(":", 1)[-1] if ":" in str(target) else str(target)
    return family_of(name), shape_class(sizes)


def _run_class(run: Mapping[str, Any]) -> tuple[str, str] | None:
    config = run.get("config") or {}
    target = config.get("target") or run.get("target")
    if not target:
        return None
    sizes = (config.get("gate") or {}).get("cost_sizes")
    return problem_class(str(target), sizes)


def learn(store: Any, family: str, shape: str, exclude: set[str] | None = None) -> dict[str, Learned]:
    """Each action's learned advantage over the runs in `store` (an `argus.agent.store.RunStore`) other than
    `exclude`, for a problem of `family` and shape class `shape` (see the module docstring)."""
    sums: dict[str, float] = {}
    weights: dict[str, float] = {}
    runs_of: dict[str, set[str]] = {}
    for run in store.runs():
        if exclude and run["id"] in exclude:
            continue
        got = _run_class(run)
        if got is None or got[0] != family:
            continue
        w = 1.0 if got[1] == shape else OTHER_CLASS_WEIGHT
        for arm_id, advantage in _observations(store.read_run(run["id"])):
            sums[arm_id] = sums.get(arm_id, 0.0) + w * advantage
            weights[arm_id] = weights.get(arm_id, 0.0) + w
            runs_of.setdefault(arm_id, set()).add(run["id"])
    return {a: Learned(sums[a] / weights[a], weights[a], len(runs_of[a])) for a in sorted(sums) if weights[a] > 0}


def _observations(state: Any) -> list[tuple[str, float]]:
    """(action id, advantage) of every gated candidate of a run (an `argus.agent.store.RunState`) but its start."""
    from argus.agent.loop import advantage

    by_id = {c.id: c for c in state.candidates}
    out = []
    for c in state.candidates:
        arm = (c.params or {}).get("arm") if isinstance(c.params, dict) else None
        if not arm or c.reward is None or arm.get("kind") == "start":
            continue
        parent = by_id.get(c.parent_id) if c.parent_id else None
        out.append((str(arm["id"]), advantage(c.status, c.reward, parent.reward if parent is not None else None)))
    return out


def shift(got: Learned) -> float:
    """How far an action's prior moves for what was learned of it (see the module docstring)."""
    return LEARNED_WEIGHT * got.weight / (got.weight + OTHER_CLASS_WEIGHT) * math.tanh(got.mean / REWARD_SCALE)


def warm_start(planner: Any, learned: Mapping[str, Learned]) -> None:
    """Give `learned` to a bandit (`argus.agent.planner.BanditPlanner`, or an LLM planner's fallback bandit) as
    prior shifts (`shift`). A planner without a bandit is left as it is."""
    bandit = planner if hasattr(planner, "learned") else getattr(planner, "fallback", None)
    if bandit is None or not hasattr(bandit, "learned"):
        return
    for arm_id, got in learned.items():
        bandit.learned[arm_id] = shift(got)
