"""Mined skills in the agent's arms: the one mapping between rung mechanisms (`LineageStep.mechanism`) and mined
steps (``mechanism@level``; `argus.lineage.mechanisms.RUNGS`), checked against the library's ladders and real mined
skills; the lineage move named by the best-scoring applicable entry (a mined skill, the curated entry, or nothing when
the selection is empty); one arm per move and per policy action; and admission of a skill by replaying its move on
another rung."""

from __future__ import annotations

import dataclasses

import pytest

from argus.agent.arms import available_arms, parse_target, rung_entries, skill_step, task_for
from argus.kb import entries, get_entry, kernel_features, load_entries, retrieve
from argus.kernels.registry import lineage, lineages
from argus.lineage import MECHANISMS, library_variant, state, walk
from argus.lineage.mechanisms import RUNGS, rung_of_step
from argus.lineage.operators import features_of
from argus.lineage.skills import SPECS, admit, held_out_moves, mine_skills, write_admission, write_skills

SIZES = {"gemm": {"M": 40, "N": 24, "K": 40}}
TILING = "mined-smem-tiling-gemm-smem-tiled"
MMA = "mined-mma-sync-gemm-mma-sync"


@pytest.fixture(scope="module")
def skills_dir(tmp_path_factory):
    """The two skills of the short walk gemm_mma_sync -> gemm_smem_tiled -> gemm_naive (no probes: fast)."""
    directory = tmp_path_factory.mktemp("skills")
    write_skills(mine_skills(walk("gemm_mma_sync", sizes=SIZES), probe=False, sizes=SIZES), directory)
    return directory


@pytest.fixture(scope="module")
def skills(skills_dir):
    return {e.id: e for e in load_entries(skills_dir)}


def with_effect(entry, **effect):
    """`entry` with its recorded effect changed (e.g. a GPU measurement instead of the cost model's estimate)."""
    lin = dict(entry.provenance.lineage)
    lin["effect"] = {**lin["effect"], **effect}
    return dataclasses.replace(entry, provenance=dataclasses.replace(entry.provenance, lineage=lin))


def lineage_arms(arms):
    return [a for a in arms if a.kind == "lineage"]


# --- the mapping ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", lineages())
def test_rung_steps_are_what_each_rung_adds_to_the_one_before(family):
    """Read off the kernels' features: the mechanisms whose level rises from one rung to the next are exactly
    the steps the mapping names for the next rung's mechanism, at those levels."""
    ladder = lineage(family)
    assert RUNGS[ladder[0].mechanism].steps == ()  # the first rung adds nothing
    previous = state(features_of(library_variant(ladder[0].kernel)))
    for rung in ladder[1:]:
        levels = state(features_of(library_variant(rung.kernel)))
        rose = {f"{m}@{levels[m]}" for m in levels if levels[m] > previous[m]}
        assert rose == set(RUNGS[rung.mechanism].steps), (rung.kernel, rung.mechanism, rose)
        assert all(levels[m] - previous[m] == 1 for m in levels if levels[m] > previous[m]), rung.kernel
        assert RUNGS[rung.mechanism].entry is not None
        previous = levels


def test_every_step_names_a_mechanism_level_and_every_mined_kind_has_its_rung():
    for rung in RUNGS.values():
        for step in rung.steps:
            mechanism, _, level = step.partition("@")
            assert mechanism in MECHANISMS and 1 <= int(level) < len(MECHANISMS[mechanism].levels), (rung, step)
    # every step the miner can turn into a skill belongs to one rung, except the output cast (no rung adds it)
    for step in SPECS:
        rung = rung_of_step(step)
        assert (rung is None) == (step == "output_cast@1"), (step, rung)


def test_mined_skills_name_the_rung_their_forward_step_climbs(skills):
    assert set(skills) == {TILING, MMA}
    rung_of_kernel = {r.kernel: r.mechanism for r in lineage("gemm")}
    for entry in skills.values():
        step = skill_step(entry)
        after = entry.provenance.lineage["kernel_after"]
        assert rung_of_step(step) == rung_of_kernel[after], (entry.id, step, after)
    assert skill_step(get_entry("shared-memory-staging")) is None  # curated: no mined step
    pool = list(entries()) + list(skills.values())
    assert rung_entries("smem_tiling", pool) == ["shared-memory-staging", TILING]
    assert rung_entries("mma_sync", list(skills.values())) == [MMA]  # no curated entry in this selection
    assert rung_entries("smem_tiling", None) == ["shared-memory-staging"]


# --- the lineage move in the arms ----------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["gemm_naive", "gemm_smem_tiled", "gemm_mma_sync", "gemm_cp_async"])
def test_curated_only_names_the_move_by_the_curated_entry_as_before(kernel):
    ref = parse_target(kernel)
    default = available_arms(ref)
    curated = available_arms(ref, entries=entries())
    assert [(a.id, a.entry_id, a.prior) for a in curated] == [(a.id, a.entry_id, a.prior) for a in default]
    (move,) = lineage_arms(curated)
    step = next(r for r in lineage("gemm") if r.kernel == move.kernel)
    assert move.entry_id == RUNGS[step.mechanism].entry
    assert available_arms(ref, entries=()) == []  # no knowledge base: nothing, not even the lineage move


def test_the_move_is_named_by_a_mined_skill_when_it_scores_best(skills):
    ref = parse_target("gemm_naive")
    estimated = skills[TILING]  # 2.57x faster by the cost model's estimate: counted at half weight
    measured = with_effect(estimated, source="gpu", estimate=False, slowdown=8.0)  # 8x, measured on a GPU
    curated = list(entries())
    shape = dict(task_for(ref.load(), ref.params).bench_sizes[0])  # what the arms rank mined skills at
    features = kernel_features(ref.load())
    scores = {
        name: {m.entry.id: m.score for m in retrieve(features, k=None, entries=curated + [skill], shape=shape)}
        for name, skill in (("estimated", estimated), ("measured", measured))
    }
    assert scores["estimated"][TILING] < scores["estimated"]["shared-memory-staging"]
    assert scores["measured"][TILING] > scores["measured"]["shared-memory-staging"]

    (move,) = lineage_arms(available_arms(ref, entries=curated + [estimated]))
    assert move.entry_id == "shared-memory-staging" and move.kernel == "gemm_smem_tiled"
    assert move.prior == pytest.approx(scores["estimated"]["shared-memory-staging"])
    arms = available_arms(ref, entries=curated + [measured])
    (move,) = lineage_arms(arms)  # one arm for the move, not one per entry describing it
    assert move.entry_id == TILING and move.id == "lineage:gemm_smem_tiled"
    assert move.prior == pytest.approx(scores["measured"][TILING])
    assert arms[0] == move  # best prior first
    # curated + mined without the curated entry for the move: the skill names it
    without = [e for e in curated if e.id != "shared-memory-staging"] + [estimated]
    (move,) = lineage_arms(available_arms(ref, entries=without))
    assert move.entry_id == TILING


def test_only_a_skill_that_applies_and_belongs_to_the_rung_names_the_move(skills):
    boosted = [with_effect(s, source="gpu", estimate=False, slowdown=8.0) for s in skills.values()]
    rung_entries_ = {r.entry for r in RUNGS.values()}
    pool = [e for e in entries() if e.id not in rung_entries_] + boosted  # no curated rung entries
    moves = {k: lineage_arms(available_arms(parse_target(k), entries=pool)) for k in ("gemm_naive", "gemm_smem_tiled")}
    assert [(a.kernel, a.entry_id) for a in moves["gemm_naive"]] == [("gemm_smem_tiled", TILING)]
    # gemm_smem_tiled's next rung adds mma.sync: its skill names it; the tiling skill is of another rung
    assert [(a.kernel, a.entry_id) for a in moves["gemm_smem_tiled"]] == [("gemm_mma_sync", MMA)]
    # gemm_mma_sync's next rung adds cp.async + pipelining: no entry of this selection describes it, no move
    assert lineage_arms(available_arms(parse_target("gemm_mma_sync"), entries=pool)) == []
    # with the curated entries, the curated one names it (the mma.sync skill is of another rung)
    pool = list(entries()) + boosted
    (move,) = lineage_arms(available_arms(parse_target("gemm_mma_sync"), entries=pool))
    assert move.kernel == "gemm_cp_async" and move.entry_id == "cp-async-pipeline"


def test_the_entries_of_the_move_are_not_offered_again_as_rewrites(skills):
    pool = list(entries()) + [skills[TILING]]
    arms = available_arms(parse_target("gemm_naive"), entries=pool, rewrites=True, rewrite_limit=50)
    rewrites = {a.entry_id for a in arms if a.kind == "rewrite"}
    assert rewrites and not rewrites & {"shared-memory-staging", TILING}


def test_a_policy_action_two_entries_propose_is_one_arm():
    curated = get_entry("pipeline-stages")
    lin = {"kernel": "gemm_hopper", "step": 4, "measured": "1.91x faster", "mechanism": "pipeline@1",
           "effect": {"source": "gpu", "estimate": False, "slowdown": 4.0}}  # fmt: skip
    mined = dataclasses.replace(
        curated,
        id="mined-pipelining-test",
        provenance=dataclasses.replace(curated.provenance, source="mined", references=(), lineage=lin),
    )
    ref = parse_target("gemm_cp_async")
    arms = [a for a in available_arms(ref, entries=list(entries()) + [mined]) if a.kind == "policy"]
    keys = [(a.policy, a.value) for a in arms]
    assert len(keys) == len(set(keys))
    stages = [a for a in arms if a.policy == "stages"]
    assert stages and all(a.entry_id == "mined-pipelining-test" for a in stages)  # the better-scoring entry
    alone = [a for a in available_arms(ref, entries=entries()) if a.policy == "stages"]
    assert sorted(a.value for a in alone) == sorted(a.value for a in stages)


# --- admission -----------------------------------------------------------------------------------------------


def test_admission_replays_the_move_on_another_rung_and_is_recorded(skills, skills_dir):
    skill = skills[MMA]
    moves = held_out_moves(skill)
    own = {"family": "gemm", "kernel": "gemm_smem_tiled", "kernel_after": "gemm_mma_sync", "held_out": False}
    assert {**own, "steps": ("mma@1",)} in moves
    assert all(m["held_out"] for m in moves if m["family"] != "gemm")  # another family is held out
    move = moves[0]  # a held-out family's move when the registry has one, else the skill's own ladder as a stand-in
    task = library_variant(move["kernel"]).task
    record = admit(skill, move["kernel"], sizes={task: {"M": 40, "N": 24, "K": 40}})
    assert record["admitted"], record["reason"]
    assert record["held_out"] == (move["family"] != "gemm")
    assert record["mechanism_check"].startswith("mma 0 -> 1") and record["applies"]
    assert record["effect"]["speedup"] > 1 and record["effect"]["estimate"] is True  # a CPU: the cost model
    entry = write_admission(MMA, record, skills_dir)
    assert entry.provenance.lineage["admission"]["admitted"] is True
    assert load_entries(skills_dir)  # the directory still loads, schema-checked

    from argus.lineage.errors import LineageError

    with pytest.raises(LineageError, match="no lineage move from gemm_naive adds mma@1"):
        admit(skill, "gemm_naive")


def test_an_admission_record_is_schema_checked_and_a_refused_one_drops_the_gain(skills, skills_dir):
    import tomllib

    from argus.kb import SchemaError, match_entry, parse_entry

    skill = skills[MMA]
    data = tomllib.loads((skills_dir / f"{MMA}.toml").read_text())
    data["provenance"]["lineage"]["admission"] = {"admitted": "yes", "kernel": "gemm_smem_tiled"}
    with pytest.raises(SchemaError) as err:
        parse_entry(data, f"{MMA}.toml")
    wrong = {p.field for p in err.value.problems}
    assert {"provenance.lineage.admission.admitted", "provenance.lineage.admission.reason"} <= wrong

    features = kernel_features(library_variant("gemm_smem_tiled").trace())
    refused = dataclasses.replace(
        skill,
        provenance=dataclasses.replace(
            skill.provenance,
            lineage={**skill.provenance.lineage, "admission": {"admitted": False, "reason": "not faster"}},
        ),
    )
    assert match_entry(refused, features).score < match_entry(skill, features).score
    assert any("admission on a held-out kernel failed" in r for r in match_entry(refused, features).reasons)


def test_skills_admit_command_records_the_verdict(skills_dir):
    from typer.testing import CliRunner

    from argus.cli.main import app

    runner = CliRunner()
    refused = runner.invoke(app, ["skills", "admit", TILING, "--on", "gemm_mma_sync", "--dir", str(skills_dir)])
    assert refused.exit_code == 2 and "LINEAGE_ADMIT" in refused.output and "gemm_naive" in refused.output
    move = held_out_moves(next(e for e in load_entries(skills_dir) if e.id == TILING))[0]
    task = library_variant(move["kernel"]).task
    args = ["skills", "admit", TILING, "--on", move["kernel"], "--dir", str(skills_dir)]
    result = runner.invoke(app, [*args, "--sizes", f"{task}:M=40,N=24,K=40"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"{TILING}: admitted on {move['kernel']} -> {move['kernel_after']}" in result.output
    entry = next(e for e in load_entries(skills_dir) if e.id == TILING)
    assert entry.provenance.lineage["admission"]["kernel_after"] == move["kernel_after"]


def test_the_curriculum_runner_says_which_steps_a_mined_skill_named(skills, tmp_path):
    from argus.agent.curriculum import Trajectory, agent_runner, compare

    boosted = with_effect(skills[TILING], source="gpu", estimate=False, slowdown=8.0)
    runner = agent_runner(isolate=False, store=tmp_path / "runs.db")
    results = {r.curriculum: r for r in compare("gemm_naive", 1, runner, {"none": (), "mined": (boosted,)})}
    assert results["none"].actions == [{"step": 0, "action": "start", "entry_id": "start", "mined": False}]
    assert results["none"].mined_actions == []
    (named,) = results["mined"].mined_actions  # the only move: the tiling skill names it
    assert named == {"step": 1, "action": "lineage:gemm_smem_tiled", "entry_id": TILING, "mined": True}
    assert results["mined"].best_ms < results["none"].best_ms
    # a runner that returns plain lists still works; it just says nothing about the actions
    plain = compare("gemm_naive", 1, lambda target, entries, budget: [1.0, 0.5], {"x": ()})
    assert plain[0].actions is None and plain[0].mined_actions == []
    assert Trajectory([1.0], [{"step": 0}]).actions == [{"step": 0}]
