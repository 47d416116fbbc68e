"""Curricula compared on one task and budget: no knowledge base, the curated entries only, curated entries plus
mined skills (KLineage, `argus.lineage.skills`). Each arm runs the same optimizer (a `Runner`) from the same start
kernel with the same budget; the report gives each arm's final quality (best profile time, from the gate: GPU timing
or the cost model's estimate) and the steps it took to reach 90 % of the best quality any arm reached.

The runner is a small interface: ``runner(target, entries, budget) -> list[float | None]``, the best time (ms)
after each step (None before any accepted candidate). `agent_runner` is the agent's loop (`argus.agent.loop.optimize`
told which entries to plan from) as a runner; its trajectories also say which entry named each step's action
(`Trajectory.actions`), so a report shows where mined skills took part.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from argus.agent.loop import optimize
from argus.agent.store import RunStore
from argus.kb import entries as shipped_entries
from argus.kb import with_skills
from argus.lineage.skills import skills_dir

Runner = Callable[[str, tuple[Any, ...], int], Sequence[float | None]]


class Trajectory(list):
    """A runner's best times after each step, with `actions`: one {step, action, entry_id, mined} per gated
    candidate (step 0: the start), when the runner knows them."""

    actions: list[dict[str, Any]]

    def __init__(self, times: Sequence[float | None], actions: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(times)
        self.actions = list(actions)


@dataclass
class ArmResult:
    curriculum: str
    entries: int
    trajectory: list[float | None]
    best_ms: float | None
    steps_to_90: int | None
    actions: list[dict[str, Any]] | None = None  # what the runner says each step did (`Trajectory.actions`)

    @property
    def mined_actions(self) -> list[dict[str, Any]]:
        """The steps whose action a mined skill named (a lineage move or a policy action)."""
        return [a for a in self.actions or () if a.get("mined")]

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


def curricula(skills: str | pathlib.Path | None = None) -> dict[str, tuple[Any, ...]]:
    """The three entry sets: ``none`` (empty), ``curated`` (the shipped entries), ``curated+mined`` (plus the
    skills of `skills`, default `argus.lineage.skills.skills_dir()`)."""
    return {
        "none": (),
        "curated": tuple(shipped_entries()),
        "curated+mined": tuple(with_skills(skills if skills is not None else skills_dir())),
    }


def compare(target: str, budget: int, runner: Runner, arms: dict[str, tuple[Any, ...]]) -> list[ArmResult]:
    """Run every arm; quality is speed (1 / best ms); `steps_to_90` is the first step (0: the start kernel) at which
    an arm's best time is within 1/0.9 of the best time of all arms (None if never)."""
    raw = {name: runner(target, entries, budget) for name, entries in arms.items()}
    runs = {name: [t if t is None else float(t) for t in traj] for name, traj in raw.items()}
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
        actions = getattr(raw[name], "actions", None)
        out.append(ArmResult(name, len(arms[name]), traj, best, reach, list(actions) if actions is not None else None))
    return out


def agent_runner(**options: Any) -> Runner:
    """`argus.agent.loop.optimize` as a `Runner`: each arm's entries are the loop's ``entries`` (the knowledge base it
    plans from); `options` are passed on (``store``, ``isolate``, ``seed``, ...)."""

    def run(target: str, entries: tuple[Any, ...], budget: Any) -> list[float | None]:
        result = optimize(target, budget=budget, entries=entries, **options)
        return Trajectory(result.best_ms_by_step, _actions(result, entries))

    return run


def _actions(result: Any, entries: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Each gated candidate's step, action and the entry that named it (read from the run store: the arm each
    candidate records); empty when the store cannot be read."""
    mined = {e.id for e in entries if getattr(getattr(e, "provenance", None), "source", None) == "mined"}
    try:
        candidates = RunStore(result.store).read_run(result.run_id).candidates
    except Exception:  # noqa: BLE001 - the annotation is optional; the times are what the comparison needs
        return []
    out = []
    for c in sorted(candidates, key=lambda c: c.step):
        arm = (c.params or {}).get("arm") or {}
        entry_id = arm.get("entry_id")
        out.append({"step": c.step, "action": c.action, "entry_id": entry_id, "mined": entry_id in mined})
    return out


# ---------------------------------------------------------------------------------------------------------------
# a sweep of problems: the curricula and cross-problem priors compared over several held-out problems


#: the sweep's arms: (curriculum whose entries it plans from, whether it learns across the sweep's problems)
SWEEP_ARMS = {
    "none": ("none", False),
    "curated": ("curated", False),
    "curated+mined": ("curated+mined", False),
    "curated+mined+priors": ("curated+mined", True),
}


@dataclass(frozen=True)
class Problem:
    """One problem of a sweep: a start kernel (library name or ``FILE.py:function``) at problem sizes (None: its
    task's first benchmark sizes)."""

    target: str
    sizes: dict[str, int] | None = None

    @property
    def label(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in sorted((self.sizes or {}).items()))
        return f"{self.target}[{dims}]" if dims else self.target


@dataclass
class SweepReport:
    """Per problem, each arm's `ArmResult` (steps to 90 % against the best any arm reached on that problem); per arm,
    the geometric means over the problems: of its best time over the problem's best (`quality`: 1.0 is the best on
    every problem) and of the candidates it needed to come within 90 % of that best, counted from 1 (`candidates`,
    over the problems where it did), with the problems where it never did (`never`)."""

    problems: list[Problem]
    results: dict[str, list[ArmResult]]  # problem label -> one result per arm

    def summary(self) -> dict[str, dict[str, Any]]:
        import math

        def geo(xs: list[float]) -> float | None:
            return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None

        out: dict[str, dict[str, Any]] = {}
        arms = [r.curriculum for r in next(iter(self.results.values()), [])]
        for arm in arms:
            ratios, steps, never = [], [], 0
            for rows in self.results.values():
                best = min((r.best_ms for r in rows if r.best_ms is not None), default=None)
                mine = next(r for r in rows if r.curriculum == arm)
                if best is not None and mine.best_ms is not None:
                    ratios.append(mine.best_ms / best)
                if mine.steps_to_90 is None:
                    never += 1
                else:
                    steps.append(mine.steps_to_90 + 1)
            out[arm] = {"quality": geo(ratios), "candidates": geo(steps), "never": never, "problems": len(self.results)}
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "problems": [{"target": p.target, "sizes": p.sizes, "label": p.label} for p in self.problems],
            "results": {k: [r.to_json() for r in v] for k, v in self.results.items()},
            "summary": self.summary(),
        }


SweepRunner = Callable[[str, Problem, tuple[Any, ...], Any], Sequence[float | None]]


def compare_sweep(
    problems: Sequence[Problem],
    budget: Any,
    runner: SweepRunner,
    arms: dict[str, tuple[Any, ...]],
    order: Sequence[str] | None = None,
) -> SweepReport:
    """Run every arm on every problem, the problems in order (an arm that learns across problems learns from its own
    earlier ones only: `runner(arm, problem, entries, budget)` keeps one store per arm), and compare each problem's
    arms as `compare` does."""
    names = list(order or arms)
    results: dict[str, list[ArmResult]] = {}
    raw: dict[str, dict[str, Sequence[float | None]]] = {p.label: {} for p in problems}
    for name in names:  # arm by arm, so that an arm's problems run in order in its own store
        for p in problems:
            raw[p.label][name] = runner(name, p, arms[name], budget)
    for p in problems:
        by_arm = raw[p.label]
        results[p.label] = compare(p.label, budget, lambda t, e, b, by_arm=by_arm: by_arm[e], {n: n for n in names})
        for r in results[p.label]:
            r.entries = len(arms[r.curriculum])
    return SweepReport(list(problems), results)


def sweep_runner(store_dir: str | pathlib.Path, learns: dict[str, bool], **options: Any) -> SweepRunner:
    """`argus.agent.loop.optimize` as a `SweepRunner`: one run store per arm in `store_dir` (``ARM.db``), the
    problem's sizes as the gate's sizes (`GateOptions.cost_sizes`: the cost model's on a CPU, the timing's on a
    GPU), and cross-problem priors (`optimize(priors=True)`) for the arms `learns` marks."""
    from argus.eval.gate import GateOptions

    store_dir = pathlib.Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)

    def run(arm: str, problem: Problem, entries: tuple[Any, ...], budget: Any) -> list[float | None]:
        gate = GateOptions(trials=5, baselines=(), cost_sizes=dict(problem.sizes)) if problem.sizes else None
        store = store_dir / f"{arm.replace('+', '_')}.db"
        result = optimize(problem.target, budget=budget, entries=entries, store=store, gate_options=gate,
                          priors=learns.get(arm, False), **options)  # fmt: skip
        return Trajectory(result.best_ms_by_step, _actions(result, entries))

    return run


def sweep_curricula(skills: str | pathlib.Path | None = None) -> tuple[dict[str, tuple[Any, ...]], dict[str, bool]]:
    """The sweep's four arms (`SWEEP_ARMS`): their entries and which learn across problems."""
    base = curricula(skills)
    return {k: base[c] for k, (c, _) in SWEEP_ARMS.items()}, {k: learns for k, (_, learns) in SWEEP_ARMS.items()}
