"""Cross-problem priors (`argus.agent.priors`): what earlier runs in the store learned, by family and shape class,
given to the next problem's planner, recorded in its run and replayed on resume."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from argus.agent import priors as P
from argus.agent.arms import Arm, KernelRef, kernel_source
from argus.agent.loop import optimize
from argus.agent.planner import BanditPlanner, PlanContext, planner_prompt
from argus.agent.store import RunStore
from argus.eval import GateOptions


def test_problem_classes():
    assert P.shape_class({"M": 64, "N": 4096, "K": 1000}) == "K:M,M:S,N:L"
    assert P.shape_class({"B": True, "X": "a", "S": 255}) == "S:S"  # flags and strings are not sizes
    assert P.shape_class(None) == "-"
    assert P.problem_class("gemm_naive", {"M": 4096}) == ("gemm", "M:L")
    assert P.problem_class("/tmp/k.py:flash_attention_fwd", {"SQ": 100}) == ("attention", "SQ:S")
    assert P.problem_class("x.py:my_kernel", {}) == ("other", "-")


def _run(store: RunStore, target: str, sizes: dict, steps: list[tuple[str, str, float]]) -> str:
    """A finished run of `target` at `sizes`: a start (reward 0), then (arm id, status, reward) children of it."""
    writer = store.start_run(target, planner="bandit", coder="transform",
                             config={"target": target, "gate": {"cost_sizes": sizes}})  # fmt: skip
    start = writer.add_candidate(0, action="start", params={"arm": {"kind": "start", "id": "start"}})
    writer.start_gate(start)
    writer.finish_candidate(start, "accepted", reward=0.0)
    for i, (arm, status, reward) in enumerate(steps, 1):
        cid = writer.add_candidate(i, parent=start, action=arm, params={"arm": {"kind": "policy", "id": arm}},
                                   fingerprint=f"{arm}-{i}")  # fmt: skip
        writer.start_gate(cid)
        writer.finish_candidate(cid, status, reward=reward)
    writer.finish("finished", {})
    return writer.run_id


def test_learn_weights_by_class_and_family(tmp_path: Path):
    with RunStore(tmp_path / "r.db") as store:
        same = _run(store, "gemm_naive", {"M": 4096, "N": 4096, "K": 4096},
                    [("a", "accepted", 0.4), ("b", "rejected", -1.0), ("a", "accepted", 0.2)])  # fmt: skip
        _run(store, "gemm_mma_sync", {"M": 64, "N": 4096, "K": 4096}, [("a", "accepted", -0.6)])  # another class
        _run(store, "softmax_rows", {"M": 4096, "N": 4096, "K": 4096}, [("a", "accepted", 5.0)])  # another family
        got = P.learn(store, "gemm", "K:L,M:L,N:L")
        # a: (0.4 + 0.2) same class, -0.6 at a quarter's weight: (0.6 - 0.15) / 2.25
        assert got["a"].mean == pytest.approx(0.45 / 2.25) and got["a"].weight == pytest.approx(2.25)
        assert got["a"].runs == 2
        assert got["b"] == P.Learned(-1.0, 1.0, 1)
        assert P.learn(store, "gemm", "K:L,M:L,N:L", exclude={same})["a"] == P.Learned(-0.6, 0.25, 1)
        assert P.learn(store, "conv", "-") == {}
        assert P.Learned.from_json(got["a"].to_json()) == P.Learned(round(0.2, 6), 2.25, 2)


def test_warm_start_moves_the_bandit_to_what_paid():
    arms = [Arm("policy", "x", prior=5.0), Arm("policy", "y", prior=1.0), Arm("policy", "z", prior=3.0)]
    ctx = PlanContext(step=1, arms=arms, kernel="k", params={})
    assert BanditPlanner(0).choose(ctx).arm.id == arms[0].id  # the retrieval prior decides alone
    warmed = BanditPlanner(0)
    P.warm_start(warmed, {arms[0].id: P.Learned(-0.8, 4.0, 2), arms[1].id: P.Learned(0.6, 4.0, 2)})
    assert warmed.learned[arms[1].id] == pytest.approx(4.0 / (4.0 + P.OTHER_CLASS_WEIGHT) * math.tanh(0.6 / 0.25))
    assert warmed.learned[arms[0].id] < 0
    choice = warmed.choose(ctx)
    assert choice.arm.id == arms[1].id and "learned on earlier problems +0.93" in choice.rationale
    values = warmed.values(arms)  # what failed elsewhere comes last, after the untried
    assert sorted(values, key=values.get, reverse=True) == [arms[1].id, arms[2].id, arms[0].id]
    assert P.shift(P.Learned(0.0, 9.0, 3)) == 0.0 and P.shift(P.Learned(0.3, 1.0, 1)) < P.shift(P.Learned(0.3, 3, 1))
    # one observation of another shape class moves a prior by half the most a sure one does
    assert P.shift(P.Learned(10.0, P.OTHER_CLASS_WEIGHT, 1)) == pytest.approx(0.5 * P.LEARNED_WEIGHT)
    learned = {arms[1].id: P.Learned(0.6, 4.0, 2)}
    text = planner_prompt(PlanContext(step=1, arms=arms, kernel="k", params={}, learned=learned))[1]["content"]
    assert "earlier problems of the same family and shape class" in text and "+0.600 over 4 observations" in text


def test_a_second_problem_starts_from_the_first_ones_rewards(tmp_path: Path):
    path = tmp_path / "my_gemm.py"
    path.write_text(kernel_source(KernelRef(library="gemm_mma_sync")))
    target = f"{path}:gemm_mma_sync"
    db = tmp_path / "runs.db"
    first = optimize(target, budget=3, store=db, isolate=False)
    assert first.priors is None
    other = GateOptions(trials=5, baselines=(), cost_sizes={"M": 2048, "N": 4096, "K": 4096})  # another class
    second = optimize(target, budget=1, store=db, isolate=False, priors=True, gate_options=other)
    assert second.priors["family"] == "gemm" and second.priors["shape"] == "K:L,M:M,N:L"
    learned = {k: P.Learned.from_json(v) for k, v in second.priors["arms"].items()}
    tried = {row["action"]: row["reward"] for row in first.trajectory[1:]}
    assert set(learned) == set(tried)
    for got in learned.values():  # another shape class: a quarter's weight each
        assert got.weight == pytest.approx(P.OTHER_CLASS_WEIGHT) and got.runs == 1
    # the first step takes what paid most on the first problem (every other arm has a retrieval prior only)
    best = max(tried, key=lambda a: tried[a])
    assert learned[best].mean > 0
    assert first.trajectory[1]["action"] != best  # the retrieval order alone starts elsewhere
    assert second.trajectory[1]["action"] == best
    with RunStore(db) as store:
        assert store.read_run(second.run_id).run["config"]["priors"] == second.priors
    resumed = optimize(None, resume=second.run_id, budget=2, store=db, isolate=False)
    assert resumed.priors == second.priors  # replayed from the run's config, not learned again
