"""KLineage on the CPU: the expert GEMM walked backward to the naive kernel, every step checked (mechanism check
on IR and generated code, then the gate), the skills it yields (schema, five precondition categories, failures
avoided recorded from probes), the mechanism check's rejections, and loading skills beside curated entries."""

from __future__ import annotations

import pytest

from argus.kb import kernel_features, load_entries, retrieve, with_skills
from argus.kb.schema import PRECONDITION_CATEGORIES
from argus.lineage import check, library_variant, walk
from argus.lineage.skills import mine_skills, write_skills

SIZES = {
    "gemm_nt_bf16": {"M": 136, "N": 72, "K": 136},
    "gemm_nt": {"M": 136, "N": 72, "K": 136},
    "gemm": {"M": 100, "N": 72, "K": 80},
}


@pytest.fixture(scope="module")
def lineage():
    return walk("gemm_hopper", sizes=SIZES)  # the library's expert GEMM entry (gemm_warp_specialized, bf16 C)


@pytest.fixture(scope="module")
def skills_dir(lineage, tmp_path_factory):
    directory = tmp_path_factory.mktemp("skills")
    write_skills(mine_skills(lineage, sizes=SIZES), directory)
    return directory


def test_walk_reaches_the_naive_kernel_through_gated_single_mechanism_steps(lineage, tmp_path):
    assert lineage.reached_naive, lineage.stopped
    assert len(lineage.steps) >= 6
    assert lineage.kernels[0]["library"] == "gemm_hopper"
    assert lineage.kernels[-1]["library"] == "gemm_naive"
    for step in lineage.steps:
        assert step.gate["verdict"] == "accepted", step.gate["summary"]
        assert [s["stage"] for s in step.gate["stages"]][:4] == ["static", "compile", "verify", "correct"]
        assert step.check["ok"] and len(step.check["removed"]) == 1 and not step.check["added"]
        assert step.check["code"].get("checked") is True and not step.check["code"]["problems"]
        assert step.before["fingerprint"] != step.after["fingerprint"]
    mechanisms = [s.operator["mechanism"] for s in lineage.steps]
    assert mechanisms[0] == "output_cast" and lineage.steps[0].after["task"] == "gemm_nt"  # bf16 C -> f32 C
    # a candidate that fails the gate is recorded and the next one is tried (a tile the predecessor cannot hold)
    for r in lineage.rejections:
        assert r["stage"] in ("mechanism", "gate.compile", "gate.verify", "gate.correct") and r["reason"]
    # dependents before prerequisites: the register split before the warp roles, roles before TMA, wgmma before swizzle
    assert (
        mechanisms.index("register_split") < mechanisms.index("warp_specialization") < mechanisms.index("global_copy")
    )
    assert mechanisms.index("mma") < mechanisms.index("swizzle") < mechanisms.index("smem_tiling")
    written = lineage.write(tmp_path / "gemm.lineage.json")
    import json

    data = json.loads(written.read_text())
    assert data["stopped"]["reason"] == "naive" and len(data["steps"]) == len(lineage.steps)
    assert "gemm_naive" in lineage.table()


def test_profile_effect_is_recorded_and_labelled(lineage):
    for step in lineage.steps:
        effect = step.effect
        assert effect["source"] in ("cost model", "gpu")
        assert effect["after_ms"] > 0 and effect["before_ms"] > 0
    # the naive kernel is slower than the expert one by the cost model's estimate
    assert lineage.steps[-1].effect["after_ms"] > lineage.expert_gate["profile"]["ms"]


def test_skills_pass_the_schema_with_all_five_precondition_categories(lineage, skills_dir):
    loaded = load_entries(skills_dir)
    assert len(loaded) == len(lineage.steps)
    for entry in loaded:
        assert entry.provenance.source == "mined"
        assert {p.category for p in entry.preconditions} == set(PRECONDITION_CATEGORIES), entry.id
        lin = entry.provenance.lineage
        assert lin["fingerprint_before"] != lin["fingerprint_after"]
        assert lin["kernel"] == "gemm_hopper"


def test_forward_steps_where_preconditions_fail_are_caught_and_recorded(skills_dir):
    by_id = {e.id: e for e in load_entries(skills_dir)}

    def avoided(prefix):
        entry = next(e for i, e in by_id.items() if i.startswith(prefix))
        return {(f["category"], f["stage"], f["code"]) for f in entry.provenance.lineage["failures_avoided"]}, entry

    wgmma, entry = avoided("mined-wgmma-")
    assert ("pipeline", "verify", "FENCE_PROXY_ASYNC") in wgmma  # wgmma reading cp.async writes without a fence
    assert ("hardware", "gate.compile", "COMPILE_NVRTC") in wgmma  # wgmma on sm_80
    assert ("layout", "gate.compile", "COMPILE_TRACE") in wgmma  # a tile wgmma cannot tile
    assert any("FENCE_PROXY_ASYNC" in r.codes for r in entry.risks)
    cp_async, _ = avoided("mined-cp-async-loads-")
    assert ("pipeline", "verify", "PIPELINE_STALE_READ") in cp_async
    assert any(stage == "gate.correct" for _, stage, _ in cp_async)  # K = 83 refused by the kernel's assumption
    tiling, _ = avoided("mined-smem-tiling-")
    assert ("pipeline", "verify", "RACE_READ_WRITE") in tiling
    tma, _ = avoided("mined-tma-loads-")
    assert ("pipeline", "verify", "PIPELINE_STALE_READ") in tma  # the tile read without waiting on its mbarrier
    _, swizzle = avoided("mined-swizzle-")
    assert any(s.feature == "verify.bank_conflict_degree" for s in swizzle.signals)  # the warnings it removed
    assert swizzle.provenance.lineage["verifier_warnings_before"].get("PERF_BANK_CONFLICT", 0) > 0
    registers, _ = avoided("mined-register-split-")
    assert ("storage", "verify", "BUDGET_REGISTERS") in registers  # a consumer budget below its accumulators
    pipelining, _ = avoided("mined-pipelining-")
    assert ("storage", "gate.compile", "COMPILE_TRACE") in pipelining  # eight stages over the shared-memory budget


def test_mechanism_check_rejects_two_mechanisms_or_none():
    expert, merged = library_variant("gemm_warp_specialized"), library_variant("gemm_tma_wgmma")
    two = check(expert, merged, "warp_specialization", 1, code=False)
    assert not two.ok and "removes 2 mechanisms" in two.reason  # roles and the register split at once
    both = check(
        library_variant("gemm_tma_wgmma"), library_variant("gemm_cp_async_swizzled"), "global_copy", 2, code=False
    )
    assert not both.ok and "global_copy" in both.reason and "mma" in both.reason  # the rung without its bridge
    none = check(expert, library_variant("gemm_warp_specialized"), "pipeline", 1, code=False)
    assert not none.ok and "removes no mechanism" in none.reason
    bridge = library_variant("gemm_cp_async_wgmma", {"STAGES": 1})
    mma_sync = library_variant("gemm_cp_async_swizzled", {"STAGES": 1})
    layout = check(bridge, mma_sync, "mma", 2, code=False)  # B's layout changes: only the wgmma edge may
    assert not layout.ok and "interface" in layout.reason and "B" in layout.reason
    assert check(bridge, mma_sync, "mma", 2, code=False, allowed=("B",)).ok
    wrong = check(
        library_variant("gemm_cp_async_swizzled"), library_variant("gemm_cp_async"), "pipeline", 1, code=False
    )
    assert not wrong.ok and "swizzle" in wrong.reason


def test_skills_load_beside_curated_entries_and_are_retrieved(skills_dir):
    pool = with_skills(skills_dir)
    ids = {e.id for e in pool}
    assert "tma-loads" in ids and any(i.startswith("mined-wgmma-") for i in ids)
    target = library_variant("gemm_cp_async_swizzled", {"STAGES": 1})
    matches = retrieve(kernel_features(target.trace()), entries=pool, k=None)
    assert any(m.entry.id.startswith("mined-wgmma-") for m in matches)
    assert not any(m.entry.id.startswith("mined-smem-tiling-") for m in matches)  # it already has shared tiles


def test_policy_and_grid_operators_on_the_persistent_gemm():
    from argus.lineage.mechanisms import state
    from argus.lineage.operators import features_of, get_operator

    start = library_variant("gemm_persistent")
    levels = state(features_of(start))
    assert levels["persistent"] == 1 and levels["tile_order"] == 1
    plain = get_operator("plain-grid")
    assert plain.applies(start, levels)  # applicable, but blocked while the tile order needs the persistent grid
    from argus.lineage.mechanisms import blockers

    assert blockers(levels, "persistent", 0) == ["tile_order (reordered)"]
    order = get_operator("default-tile-order")
    (candidate, note), *_ = order.candidates(start)
    assert candidate.params["ORDER"] == "row_major" and "tile_order" in note
    assert check(start, candidate, "tile_order", 1).ok
    (grid, _), *_ = plain.candidates(candidate)
    assert grid.library == "gemm_mma_sync"
    verdict = check(candidate, grid, "persistent", 1)
    assert verdict.ok, verdict.reason
    assert not check(start, grid, "persistent", 1, code=False).ok  # the tile order would go with it


# --- the lineage's last two rungs: the TMA-store epilogue, then the persistent grid's tile order and grid --------


@pytest.fixture(scope="module")
def last_rungs():
    return walk("gemm_tma_store_epilogue", max_steps=3)  # the ladder's top rung (3 blocks, f32 C), three steps down


def test_the_tma_store_epilogue_and_the_persistent_grid_are_peeled_one_step_each(last_rungs):
    assert [s.operator["id"] for s in last_rungs.steps] == ["tma-store-to-direct", "default-tile-order", "plain-grid"]
    assert [s.operator["mechanism"] for s in last_rungs.steps] == ["epilogue", "tile_order", "persistent"]
    for step in last_rungs.steps:
        assert step.gate["verdict"] == "accepted", step.gate["summary"]
        assert step.check["ok"] and len(step.check["removed"]) == 1 and not step.check["added"], step.check
        assert step.check["code"].get("checked") is True and not step.check["code"]["problems"]
    epilogue = last_rungs.steps[0]
    assert epilogue.before["params"]["EPILOGUE"] == "tma" and epilogue.after["params"]["EPILOGUE"] == "direct"
    # the parameter alone changed, and the code check looked for the TMA stores before and not after
    changed = {k for k in epilogue.before["params"] if epilogue.before["params"][k] != epilogue.after["params"].get(k)}
    assert changed == {"EPILOGUE"}
    assert any(s.startswith("epilogue@1: source") and "UTMASTG" in s for s in epilogue.check["code"]["looked_for"])
    assert epilogue.check["removed"] == ["epilogue (tma store -> direct)"]
    assert last_rungs.kernels[-1]["library"] == "gemm_warp_specialized"  # the warp-specialized rung before them


def test_the_epilogue_operator_applies_only_to_a_kernel_storing_through_tma():
    from argus.lineage.mechanisms import MECHANISMS, blockers, state
    from argus.lineage.operators import features_of, get_operator

    op = get_operator("tma-store-to-direct")
    staged = library_variant("gemm_tma_store_epilogue")
    levels = state(features_of(staged))
    assert levels["epilogue"] == 1 and op.applies(staged, levels)
    direct = library_variant("gemm_warp_specialized_persistent")
    assert state(features_of(direct))["epilogue"] == 0 and not op.applies(direct, state(features_of(direct)))
    plain = library_variant("gemm_warp_specialized")  # no EPILOGUE parameter: nothing to set
    assert not op.candidates(plain)
    assert blockers(levels, "mma", 1) == ["epilogue (tma store)"]  # the staged store takes a wgmma accumulator
    assert MECHANISMS["epilogue"].markers[1].sass_any == ("UTMASTG",)
    # the persistent rung with the TMA store is not the 2-D grid: removing both at once is refused
    both = check(staged, plain, "persistent", 1, code=False)
    assert not both.ok and "epilogue" in both.reason


def test_the_last_rungs_steps_are_mined_into_skills(last_rungs, tmp_path):
    write_skills(mine_skills(last_rungs, sizes=SIZES), tmp_path)
    loaded = {e.provenance.lineage["mechanism"]: e for e in load_entries(tmp_path)}
    assert set(loaded) == {"epilogue@1", "tile_order@1", "persistent@1"}
    for entry in loaded.values():
        assert {p.category for p in entry.preconditions} == set(PRECONDITION_CATEGORIES), entry.id
        assert entry.provenance.lineage["kernel"] == "gemm_tma_store_epilogue"
    staged = loaded["epilogue@1"]
    avoided = {(f["category"], f["stage"]) for f in staged.provenance.lineage["failures_avoided"]}
    assert ("layout", "gate.correct") in avoided  # N = 74: C's rows not 16-byte aligned, refused by the assumption
    assert staged.id.startswith("mined-tma-store-epilogue-")
