"""The optimization loop with the embedded defaults (bandit planner, transform coder, the cost model on the CPU),
the bandit, the arms, resume after a killed run, and `argus optimize`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.agent.arms import Arm, KernelRef, available_arms, kernel_source, parse_target, task_for
from argus.agent.coder import CoderError, TransformCoder
from argus.agent.loop import Budget, optimize, reward_of
from argus.agent.planner import BanditPlanner, PlanContext
from argus.agent.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def test_the_loop_improves_the_naive_gemm_under_the_cost_model(tmp_path: Path):
    events = []
    result = optimize(
        "gemm_naive", budget=Budget(candidates=2), store=tmp_path / "runs.db", isolate=False, on_step=events.append
    )
    assert result.status == "finished" and result.metric == "cost_model"
    assert result.stop_reason == "budget: 2 candidates"
    assert result.best is not None and result.best["ms"] < result.start_ms and result.speedup > 1.5
    steps = [row["step"] for row in result.trajectory]
    assert steps == [0, 1, 2]
    assert result.trajectory[1]["action"] == "lineage:gemm_smem_tiled"  # the next rung's entry ranks first
    # every reward is ln(t_start / t), the starting kernel's 0
    for row in result.trajectory:
        if row["status"] == "accepted":
            assert row["reward"] == pytest.approx(__import__("math").log(result.start_ms / row["ms"]))
    kinds = [e.kind for e in events]
    assert kinds[0] == "gating" and kinds[-1] == "done" and kinds.count("finished") == 3
    with RunStore(tmp_path / "runs.db") as store:
        state = store.read_run(result.run_id)
        assert state.run["status"] == "finished" and len(state.done) == 3
        assert all(c.gate.get("profile", {}).get("code") == "PROFILE_NO_GPU" for c in state.done)
        assert [t["label"] for t in store.timings(result.run_id)] == ["estimate"] * 3


def test_policy_transforms_on_a_file_kernel(tmp_path: Path):
    """A FILE.py:function target has no lineage: the arms are the policy transforms it declares."""
    path = tmp_path / "my_gemm.py"
    path.write_text(kernel_source(KernelRef(library="gemm_mma_sync")))
    target = f"{path}:gemm_mma_sync"
    ref = parse_target(target)
    arms = available_arms(ref)
    assert arms and {a.kind for a in arms} == {"policy"}
    assert task_for(ref.load(), ref.params).name == "gemm"
    result = optimize(target, budget=2, store=tmp_path / "runs.db", isolate=False)
    chosen = [row["action"] for row in result.trajectory[1:]]
    assert all(a.startswith("tile-shape:tile_shape=") for a in chosen)
    assert len(set(chosen)) == 2 and all(row["status"] == "accepted" for row in result.trajectory)
    assert {row["kernel"] for row in result.trajectory} == {target}


def test_the_bandit_is_deterministic_and_learns():
    arms = [Arm("policy", "e", "stages", v, prior=p) for v, p in ((2, 1.0), (3, 2.5), (4, 2.5), (5, 0.5))]
    ctx = PlanContext(step=1, arms=arms, kernel="k", params={})

    def sequence(seed: int, rewards: dict[int, float]) -> list[int]:
        bandit, out = BanditPlanner(seed), []
        for _ in range(8):
            arm = bandit.choose(ctx).arm
            out.append(arm.value)
            bandit.update(arm.id, rewards[arm.value])
        return out

    rewards = {2: 0.1, 3: -1.5, 4: 0.8, 5: 0.0}
    thompson = [BanditPlanner(s, method="thompson") for s in (3, 3)]
    draws = []
    for bandit in thompson:
        picks = []
        for _ in range(30):
            arm = bandit.choose(ctx).arm
            picks.append(arm.value)
            bandit.update(arm.id, rewards[arm.value])
        draws.append(picks)
    assert draws[0] == draws[1] and draws[0][-10:].count(4) > draws[0][-10:].count(3)
    first = sequence(0, rewards)
    assert first == sequence(0, rewards)  # same seed, same choices
    assert first[0] in (3, 4)  # untried: the highest prior first
    assert first.count(4) > first.count(3)  # the arm that pays is pulled more than the one that failed
    assert first[-3:].count(3) == 0


def test_rewards_and_penalties():
    accepted = {"verdict": "accepted", "stages": [{"stage": "profile", "status": "skipped",
                                                   "details": {"cost_model": {"ms": 1.0}}}]}  # fmt: skip
    reward, details = reward_of(accepted, start_ms=4.0)
    assert reward == pytest.approx(__import__("math").log(4.0)) and details["metric"] == "cost_model"
    rejected = {"verdict": "rejected", "stages": [{"stage": "verify", "status": "failed", "code": "VERIFY_VIOLATED"}]}
    assert reward_of(rejected, 4.0) == (-1.0, {"penalty": "verify", "code": "VERIFY_VIOLATED"})
    assert reward_of({"verdict": "error", "stages": []}, 4.0)[0] < 0
    # on a GPU the measured median is the time, and the measured fractions of the ceilings feed retrieval
    from argus.agent.loop import _estimate_profile, gate_time

    fractions = {"compute": 0.6, "memory": 0.1, "roofline": 0.6}
    details = {"timing": {"median_ms": 0.5}, "fraction_of_ceiling": fractions}
    timed = {"verdict": "accepted", "stages": [{"stage": "profile", "status": "passed", "details": details}]}
    assert gate_time(timed) == (0.5, "gpu") and reward_of(timed, 1.0)[1]["metric"] == "gpu"
    assert _estimate_profile(timed) == {"compute": 0.6, "memory": 0.1, "roofline": 0.6}
    assert _estimate_profile(accepted) is None  # an estimate without its profile facts


def test_the_transform_coder():
    coder = TransformCoder()
    base = parse_target("gemm_cp_async")
    m = coder.materialize(Arm("policy", "pipeline-stages", "stages", 3), base)
    assert m.ref.params["STAGES"] == 3 and m.ref.library == "gemm_cp_async" and not m.generated
    m = coder.materialize(Arm("lineage", "swizzle-shared-128b", kernel="gemm_cp_async_swizzled"), base)
    assert m.ref.library == "gemm_cp_async_swizzled"
    with pytest.raises(CoderError) as err:
        coder.materialize(Arm("rewrite", "tma-loads"), base)
    assert err.value.code == "CODER_NO_TRANSFORM"
    with pytest.raises(CoderError) as err:
        coder.materialize(Arm("policy", "pipeline-stages", "stages", 0), base)
    assert err.value.code == "CODER_KB_TRANSFORM_VALUE"


def test_a_lineage_move_keeps_what_the_run_tuned():
    """The next rung keeps the policies tuned on the rung the run leaves (#26: a forward move keeps everything tuned
    so far), the tile shape only where the rung fits its budgets with it; untuned policies take the rung's own."""
    from argus.agent.coder import carry_tuned
    from argus.kernels.registry import get_kernel

    coder = TransformCoder()
    base = parse_target("gemm_cp_async")
    tuned = coder.materialize(Arm("policy", "pipeline-stages", "stages", 4), base).ref
    arm = Arm("lineage", "swizzle-shared-128b", kernel="gemm_cp_async_swizzled")
    m = coder.materialize(arm, tuned)
    assert m.ref.params == {"STAGES": 4} and m.notes == {"carried": ["stages"]}
    assert coder.materialize(arm, base).ref.params == {} and coder.materialize(arm, base).notes == {}
    nxt = get_kernel("gemm_cp_async_swizzled")
    small = {"BM": 64, "BN": 128, "BK": 32, "STAGES": 3}
    assert carry_tuned(base.with_params(small), nxt) == (small, ("tile_shape", "stages"))
    # a 256 x 256 tile in 4 stages is 256 KiB of shared memory: the rung keeps its own tile and the tuned stages
    big = {"BM": 256, "BN": 256, "BK": 64, "STAGES": 4}
    assert carry_tuned(base.with_params(big), nxt) == ({"STAGES": 4}, ("stages",))


def test_resume_after_a_killed_run_repeats_nothing(tmp_path: Path):
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, "-m", "tests.agent.optimize_script", str(db), "gemm_naive", "3", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 9, done.stderr
    with RunStore(db) as store:
        (run,) = store.runs()
        state = store.read_run(run["id"])
        assert [c.step for c in state.in_flight] == [2] and len(state.done) == 2
        before = {c.id: (c.step, c.action, c.fingerprint, c.attempts) for c in state.done}
    result = optimize(None, resume=run["id"], store=db, isolate=False)
    assert result.status == "finished" and result.stop_reason == "budget: 3 candidates"
    with RunStore(db) as store:
        state = store.read_run(run["id"])
        steps = [c.step for c in state.candidates]
        assert steps == [0, 1, 2, 3]  # each step once: nothing planned twice, nothing lost
        assert len({c.fingerprint for c in state.candidates}) == 4
        for c in state.candidates:
            if c.id in before:
                assert (c.step, c.action, c.fingerprint, c.attempts) == before[c.id]  # not gated again
        (interrupted,) = [c for c in state.candidates if c.step == 2]
        assert interrupted.attempts == 2 and interrupted.status == "accepted"
        assert state.run["status"] == "finished"


def test_argus_optimize_command(tmp_path: Path):
    from argus.cli.main import app

    runner = CliRunner()
    db, png = tmp_path / "runs.db", tmp_path / "speed.png"
    out = runner.invoke(app, ["optimize", "gemm_naive", "--budget", "1", "--store", str(db), "--plot", str(png),
                              "--no-isolate", "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "lineage:gemm_smem_tiled" in out.output and "cost model" in out.output and "best: step 1" in out.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    run_id = __import__("json").loads((tmp_path / "r.json").read_text())["run_id"]
    shown = runner.invoke(app, ["runs", "show", run_id, "--store", str(db)])
    assert shown.exit_code == 0 and f"best: {run_id}-0001 (step 1" in shown.output
    again = runner.invoke(app, ["optimize", "--resume", run_id, "--store", str(db), "--no-isolate"])
    assert again.exit_code == 0 and "stopped: budget: 1 candidates" in again.output  # the run's own budget
    more = runner.invoke(app, ["optimize", "--resume", run_id, "--store", str(db), "--budget", "2", "--no-isolate"])
    assert more.exit_code == 0 and "step 2/2: lineage:gemm_mma_sync" in more.output  # extended by one candidate
    bad = runner.invoke(app, ["optimize", "gemm_nonexistent", "--store", str(db)])
    assert bad.exit_code == 2 and "KERNEL_UNKNOWN" in bad.output
    llm = runner.invoke(app, ["optimize", "gemm_naive", "--planner", "llm", "--store", str(db)])
    assert llm.exit_code == 2 and "LLM_CONFIG_MISSING" in llm.output


def test_the_tour_step_runs_the_loop_with_the_embedded_defaults():
    from rich.console import Console

    from argus.tour import _optimize_step

    console = Console(record=True, width=200)
    assert _optimize_step(console, budget=1)
    text = console.export_text()
    assert "step 1: lineage:gemm_smem_tiled" in text and "not a measurement" in text


def test_an_entry_selection_replaces_the_shipped_entries(tmp_path: Path):
    """The curricula of argus.lineage: the loop plans only from the entries it is given."""
    from argus.kb import entries, get_entry

    ref = parse_target("gemm_cp_async")
    only_stages = available_arms(ref, entries=[get_entry("pipeline-stages")])
    assert only_stages and {a.entry_id for a in only_stages} == {"pipeline-stages"}  # no tile shapes, no lineage
    everything = available_arms(ref, entries=entries())
    assert {a.id for a in everything} == {a.id for a in available_arms(ref)}
    assert "lineage:gemm_cp_async_swizzled" in {a.id for a in everything}
    assert available_arms(ref, entries=()) == []
    result = optimize("gemm_naive", budget=1, store=tmp_path / "r.db", isolate=False, entries=())
    assert result.stop_reason == "no untried action left on any accepted kernel"
    assert result.best_ms_by_step == [result.start_ms]


def test_a_kernel_whose_arms_are_spent_hands_over_to_the_next_best(tmp_path: Path, monkeypatch):
    """The loop plans on the fastest accepted kernel that still has an untried arm: when the best kernel's arms are
    spent, the run goes on from the next best instead of stopping (a fake gate times each candidate from its
    parameters, so that the search space is known exactly)."""
    import argus.agent.gatejob as gatejob
    from argus.kb import get_entry

    def fake_gate(ref, task, options, name, generated=False):
        p = {"BM": 64, "BN": 64, "BK": 32, "STAGES": 2, **ref.get("params", {})}
        ms = 1.0 / p["STAGES"] + (0.0 if (p["BM"], p["BN"]) == (64, 64) else 0.2)  # more stages and 64x64 win
        profile = {"stage": "profile", "status": "passed", "details": {"timing": {"median_ms": ms}}}
        return {"verdict": "accepted", "stages": [profile]}

    monkeypatch.setattr(gatejob, "gate_candidate", fake_gate)
    pool = [get_entry("pipeline-stages"), get_entry("tile-shape")]
    ref = parse_target("gemm_cp_async")
    first = {a.id for a in available_arms(ref, entries=pool)}
    result = optimize("gemm_cp_async", budget=200, store=tmp_path / "r.db", isolate=False, entries=pool)
    assert result.stop_reason == "no untried action left on any accepted kernel"
    gated = [row["params"] for row in result.trajectory]
    assert len(gated) == len({tuple(sorted(p.items())) for p in gated})  # nothing gated twice
    # the tile shapes were tried at several pipeline depths, not only at the best kernel's: the run went on from
    # kernels other than the best (planning on the best alone gates 10 candidates here, and stops)
    assert len(gated) - 1 > 2 * len(first)
    with RunStore(tmp_path / "r.db") as store:
        parents = {c.parent_id for c in store.read_run(result.run_id).done if c.parent_id is not None}
    assert len(parents) >= 3


def test_resume_takes_over_a_held_run_only_with_force(tmp_path: Path):
    """A run whose writer is gone but looks alive (here: a writer of this process that never released it, as a
    process on another machine looks) is refused without `force` and taken over with it."""
    from argus.agent.store import StoreError

    first = optimize("gemm_naive", budget=0, store=tmp_path / "r.db", isolate=False)
    holder = RunStore(tmp_path / "r.db")
    holder.open_run(first.run_id)  # holds the lease and never lets go
    with pytest.raises(StoreError) as info:
        optimize(None, resume=first.run_id, budget=1, store=tmp_path / "r.db", isolate=False)
    assert info.value.code == "RUN_LOCKED"
    again = optimize(None, resume=first.run_id, budget=1, store=tmp_path / "r.db", isolate=False, force=True)
    assert again.run_id == first.run_id and [row["step"] for row in again.trajectory] == [0, 1]
    holder.close()
