"""Policy transforms applied to library kernels: the new parameters trace with the policy at the
value asked for; a kernel without the policy, a bad value, a value that does not trace or does not
fit the budgets, and an entry without a transform each fail with their own code."""

from __future__ import annotations

import pytest

from argus.ir.nodes import TileOrder
from argus.kb import Action, KBError, actions, apply, get_entry
from argus.kernels import get_kernel


def test_stages_on_the_cp_async_gemm() -> None:
    entry = get_kernel("gemm_cp_async")
    params = apply("pipeline-stages", entry, value=3)
    assert params == {"STAGES": 3}
    assert entry.kernel.trace(**params).policies.stages == 3


def test_tile_shape_on_the_hopper_gemm_keeps_other_parameters() -> None:
    entry = get_kernel("gemm_warp_specialized")
    params = apply(get_entry("tile-shape"), entry, params={"STAGES": 4}, value=(128, 256, 64))
    assert params == {"STAGES": 4, "BM": 128, "BN": 256, "BK": 64}
    kernel = entry.kernel.trace(**params)
    assert kernel.policies.tile_shape == (128, 256, 64) and kernel.policies.stages == 4


def test_a_tile_too_big_for_the_pipeline_keeps_the_deepest_pipeline_that_fits() -> None:
    entry = get_kernel("gemm_warp_specialized")
    # 6 stages of 128x256x64 need 288 KiB of shared memory; 4 (192 KiB) is the deepest that fits
    params = apply("tile-shape", entry, params={"STAGES": 6}, value=(128, 256, 64))
    assert params == {"STAGES": 4, "BM": 128, "BN": 256, "BK": 64}
    assert (128, 256, 64) in [a.value for a in actions("tile-shape", entry, params={"STAGES": 6})]
    # a kernel without a stages policy has nothing to lower: the tile stays refused
    with pytest.raises(KBError) as info:
        apply("tile-shape", get_kernel("gemm_mma_sync"), value=(128, 128, 64))
    assert info.value.code == "KB_TRANSFORM_BUDGET"


def test_tile_order_on_the_persistent_gemm_through_an_action() -> None:
    entry = get_kernel("gemm_persistent")
    params = apply(Action("tile-order-grouped", "tile_order", "column_major"), entry)
    assert params == {"BLOCKS": 3, "ORDER": "column_major"}  # the library kernel's BLOCKS is kept
    assert entry.kernel.trace(**params).policies.tile_order == TileOrder.COLUMN_MAJOR


def test_without_a_value_the_first_other_candidate_is_taken() -> None:
    params = apply("pipeline-stages", get_kernel("gemm_cp_async"))
    assert params == {"STAGES": 3}  # candidates 2, 3, ...: 2 is the current value


def test_a_kernel_without_the_policy() -> None:
    with pytest.raises(KBError) as info:
        apply("pipeline-stages", get_kernel("gemm_mma_sync"), value=3)
    assert info.value.code == "KB_TRANSFORM_NO_POLICY"
    assert "gemm_mma_sync does not declare the policy 'stages'" in info.value.message
    assert info.value.actual.startswith("declared policies: ") and "tile_shape" in info.value.actual
    from tests.kb.kernels_kb import softmax_exp

    with pytest.raises(KBError) as info:
        apply("swizzle-shared-128b", softmax_exp, value=128)
    assert info.value.code == "KB_TRANSFORM_NO_POLICY" and info.value.actual == "declared policies: none"


def test_invalid_values() -> None:
    gemm = get_kernel("gemm_cp_async")
    with pytest.raises(KBError) as info:
        apply("pipeline-stages", gemm, value=0)
    assert info.value.code == "KB_TRANSFORM_VALUE" and "stages takes positive integers, found 0" in info.value.message
    with pytest.raises(KBError) as info:
        apply("tile-shape", gemm, value=(64, 64))
    assert info.value.code == "KB_TRANSFORM_VALUE" and "has 3 values (BM, BN, BK)" in info.value.message
    with pytest.raises(KBError) as info:
        apply("tile-order-grouped", get_kernel("gemm_persistent"), value="diagonal")
    assert info.value.code == "KB_TRANSFORM_VALUE"


def test_a_value_that_does_not_trace() -> None:
    with pytest.raises(KBError) as info:
        apply("tile-shape", get_kernel("gemm_warp_specialized"), value=(64, 128, 64))  # 2 warpgroups need 128 rows
    assert info.value.code == "KB_TRANSFORM_TRACE" and "does not trace: [DSL_MMA_TILE]" in info.value.message
    with pytest.raises(KBError) as info:
        apply("pipeline-stages", get_kernel("gemm_warp_specialized"), params={"BN": 256}, value=6)
    assert info.value.code == "KB_TRANSFORM_TRACE" and "DSL_SMEM_BUDGET" in info.value.message


def test_a_value_over_the_register_budget() -> None:
    gemm = get_kernel("gemm_mma_sync")
    with pytest.raises(KBError) as info:
        apply("tile-shape", gemm, value=(128, 128, 64))  # 128 accumulator + 128 operand registers per thread
    assert info.value.code == "KB_TRANSFORM_BUDGET" and "BUDGET_REGISTERS" in info.value.message
    assert apply("tile-shape", gemm, value=(128, 128, 64), check_budgets=False) == {"BM": 128, "BN": 128, "BK": 64}


def test_an_entry_without_a_transform() -> None:
    with pytest.raises(KBError) as info:
        apply("tma-loads", get_kernel("gemm_cp_async"))
    assert info.value.code == "KB_TRANSFORM_NONE" and "structural" in info.value.hint


def test_actions_are_the_candidates_that_apply() -> None:
    hopper = get_kernel("gemm_warp_specialized")
    stages = actions("pipeline-stages", hopper)
    assert [a.value for a in stages] == [2, 4, 5, 6]  # 3 is current; all fit at 128x128x64
    wide = actions("pipeline-stages", hopper, params={"BN": 256})
    assert [a.value for a in wide] == [2, 4]  # 5 and 6 stages of 128x256x64 overflow shared memory
    tiles = [a.value for a in actions("tile-shape", hopper)]
    assert (128, 256, 64) in tiles and (64, 128, 64) not in tiles and (128, 128, 64) not in tiles
    assert actions("pipeline-stages", get_kernel("gemm_mma_sync")) == []  # no such policy
    assert actions("tma-loads", hopper) == []  # no executable transform
    for action in stages:
        assert hopper.kernel.trace(**apply(action, hopper)).policies.stages == action.value


def test_ranked_actions_are_the_planner_arms() -> None:
    from argus.kb import ranked_actions

    arms = ranked_actions(get_kernel("gemm_cp_async"), profile={"bound": "latency"})
    assert [(m.entry.id, a.value) for m, a in arms[:4]] == [("pipeline-stages", v) for v in (3, 4, 5, 6)]
    assert {m.entry.id for m, _ in arms} == {"pipeline-stages", "tile-shape"}
    scores = [m.score for m, _ in arms]
    assert scores == sorted(scores, reverse=True)
    assert ranked_actions(get_kernel("vector_add")) == []  # declares no policy


def test_carried_policies_between_rungs() -> None:
    """The policies two kernels declare by the same parameters, with the source's values; `tuned_from` keeps only
    those a search changed; a policy fixed by the kernel (``persistent``) is not a parameter and is not carried."""
    from argus.kb.transforms import carried_policies, carry_options

    units = get_kernel("grouped_gemm_units")
    persistent = get_kernel("grouped_gemm_persistent")
    tuned = {**persistent.params, "STAGES": 3, "BM": 64}
    carried = carried_policies(persistent.kernel, tuned, units.kernel)
    assert set(carried) == {"tile_shape", "stages"} and carried["stages"] == {"STAGES": 3}
    assert carried["tile_shape"]["BM"] == 64
    only = carried_policies(persistent.kernel, {**persistent.params, "STAGES": 3}, units.kernel,
                            tuned_from=persistent.params)  # fmt: skip
    assert only == {"stages": {"STAGES": 3}}
    options = carry_options(persistent.kernel, tuned, units.kernel, dict(units.params))
    assert [p for _, p in options] == [("tile_shape", "stages"), ("stages",), ()]
    assert options[0][0]["BM"] == 64 and options[1][0]["STAGES"] == 3 and options[2][0] == dict(units.params)
    same = carry_options(persistent.kernel, persistent.params, persistent.kernel, dict(persistent.params))
    assert len(same) == 1 and same[0][1] == ("tile_shape", "stages", "tile_order")  # nothing changes: one option
