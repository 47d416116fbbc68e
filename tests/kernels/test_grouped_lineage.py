"""The MoE grouped GEMM's lineages (``"grouped"`` and ``"grouped_swiglu"``, docs/moe.md "The lineage"): four rungs
each, on the `grouped_gemm` and `grouped_swiglu` tasks, from every expert's dense GEMM in one grid to the persistent
kernel with TMA stores, each adding one mechanism; every rung equal to its expert kernel on the interpreter at uneven
groups (empty experts, tiles straddling experts, rows past the last expert), verified, compiled with its mechanism;
the mechanism each adds read off the kernel; and KLineage's walk from the expert back to the per-expert grid, one
gated mechanism a step."""

from __future__ import annotations

import numpy as np
import pytest

from argus.interp.machine import interpret
from argus.ir.types import bf16, round_to
from argus.kb.features import kernel_features
from argus.kernels import grouped
from argus.kernels.grouped import search_steps
from argus.kernels.moe import tile_counts
from argus.kernels.registry import get_kernel, lineage
from argus.kernels.workloads import grouped_product, grouped_swiglu_product
from argus.lineage.mechanisms import state
from argus.tasks import task_of_kernel

RUNGS = ("grouped_gemm_expert_grid", "grouped_gemm_units", "grouped_gemm_persistent", "grouped_gemm_tma_store")
SWIGLU_RUNGS = (
    "grouped_gemm_swiglu_expert_grid",
    "grouped_gemm_swiglu_units",
    "grouped_gemm_swiglu",
    "grouped_gemm_swiglu_tma_store",
)
FAMILIES = {"grouped": (RUNGS, "grouped_gemm"), "grouped_swiglu": (SWIGLU_RUNGS, "grouped_swiglu")}


def _run(name: str, offs: list[int], rows: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(len(offs) * 1000 + rows)
    experts = len(offs)
    a = round_to(bf16, rng.standard_normal((rows, k)))
    b = round_to(bf16, rng.standard_normal((experts, k, n)))
    ends = np.asarray(offs, dtype=np.int64)
    entry = get_kernel(name)
    params = {**entry.params, "STAGES": 3}
    if "SEARCH" in entry.kernel.defaults:
        params["SEARCH"] = search_steps(experts)
    if "BLOCKS" in params:
        params["BLOCKS"] = 3  # several units a block
    tiles = tile_counts(ends, params["BM"])
    if "swiglu" not in name:
        c = np.full((rows, n), 12345.0)  # poison: rows no expert owns keep it
        interpret(entry.kernel, a, b, ends, tiles, c, **params)
        return c, grouped_product(a, b, ends)
    scale = rng.uniform(0.0, 1.0, rows)
    c = np.full((rows, n // 2), 12345.0)
    interpret(entry.kernel, a, b, ends, tiles, scale, c, **params)
    return c, grouped_swiglu_product(a, b, ends, None, scale)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_ladder_adds_one_mechanism_per_rung_on_its_task(family: str) -> None:
    rungs, task = FAMILIES[family]
    assert [(s.kernel, s.mechanism) for s in lineage(family)] == list(
        zip(rungs, ("expert_grid", "grouped_units", "persistent_grid", "tma_store"), strict=True)
    )
    assert all(task_of_kernel(r).name == task for r in rungs)
    levels = [state(kernel_features(get_kernel(r))) for r in rungs]
    added = [
        sorted(m for m in after if after[m] > before[m]) for before, after in zip(levels, levels[1:], strict=False)
    ]
    assert added == [["grouped_units"], ["persistent", "tile_order"], ["epilogue"]]
    assert all(not any(after[m] < before[m] for m in after) for before, after in zip(levels, levels[1:], strict=False))


@pytest.mark.parametrize(
    ("offs", "rows"),
    [
        ([0, 70, 70, 250, 290], 300),  # empty first and third experts, groups straddling row tiles, rows past the end
        ([1, 2, 3, 3, 131, 260, 261, 300], 300),  # tiny groups, skew, eight experts (SEARCH = 3)
    ],
)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_rung_computes_what_the_expert_kernel_computes(family: str, offs: list[int], rows: int) -> None:
    rungs, _ = FAMILIES[family]
    outputs = {name: _run(name, offs, rows, 128, 256) for name in rungs}
    c, ref = outputs[rungs[-1]]
    last = offs[-1]
    assert np.abs(c[:last] - ref[:last]).max() / np.abs(ref[:last]).max() < 1e-2  # bf16 output
    for name, (other, _) in outputs.items():
        assert np.array_equal(other, c), name  # the same tiles, the same sums: equal element for element
        assert np.all(other[last:] == 12345.0), name  # rows past offs[E-1] belong to no expert: never written


@pytest.mark.parametrize("family", FAMILIES)
def test_the_per_expert_grid_reads_its_expert_from_the_grid_and_the_units_search_for_it(family: str) -> None:
    rungs, _ = FAMILIES[family]
    features = {r: kernel_features(get_kernel(r)) for r in rungs}
    assert [features[r]["grid.work_search"] for r in rungs] == [False, True, True, True]
    assert [features[r]["grid.persistent"] for r in rungs] == [False, False, True, True]
    assert [features[r]["kernel.grid_dims"] for r in rungs] == [3, 1, 1, 1]  # (column tile, row tile, expert)


@pytest.mark.parametrize("name", RUNGS[:2] + SWIGLU_RUNGS[:2])
def test_the_lower_rungs_verify_and_compile_with_tma_and_wgmma(name: str) -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify

    entry = get_kernel(name)
    result = verify(entry)
    assert result.verdict.value == "verified", [e.code for e in result.errors] + [u.code for u in result.unknowns]
    mix = compile_kernel(entry.kernel.trace(**entry.params)).instruction_mix()
    assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0 and mix.get("UTMASTG", 0) == 0


def test_a_rung_refuses_a_tile_order_it_does_not_have() -> None:
    from argus.lang import DSLError

    for kernel in (grouped.grouped_gemm_persistent, grouped.grouped_gemm_swiglu):
        with pytest.raises(DSLError, match="ORDER is 'grouped' or 'row_major'"):
            kernel.trace(ORDER="column_major")


def test_klineage_walks_the_expert_back_and_its_units_skill_is_admitted_on_the_swiglu_family() -> None:
    """The walk peels the four rungs; the skill mined from the units step is replayed on the held-out SwiGLU family's
    move (expert grid -> units) and admitted: both gates pass, the move adds exactly its mechanism, and it is faster
    there too (on the CPU by the cost model's estimates, which the record says)."""
    from argus.lineage import walk
    from argus.lineage.skills import admit, held_out_moves, mine_skills

    walked = walk("grouped_gemm_tma_store", max_steps=4)
    assert [s.operator["mechanism"] for s in walked.steps] == ["epilogue", "tile_order", "persistent", "grouped_units"]
    for step in walked.steps:
        assert step.gate["verdict"] == "accepted", step.gate["summary"]
        assert step.check["ok"] and len(step.check["removed"]) == 1 and not step.check["added"]
    assert [k["library"] for k in walked.kernels[-2:]] == ["grouped_gemm_units", "grouped_gemm_expert_grid"]
    assert walked.kernels[1]["name"] == "grouped_gemm_tma_store[EPILOGUE=direct]"
    (skill,) = [k for k in mine_skills(walked) if k["id"].startswith("mined-grouped-units")]
    moves = [m for m in held_out_moves(skill) if m["family"] == "grouped_swiglu"]
    assert [(m["kernel"], m["kernel_after"], m["held_out"]) for m in moves] == [
        ("grouped_gemm_swiglu_expert_grid", "grouped_gemm_swiglu_units", True)
    ]
    record = admit(skill, "grouped_gemm_swiglu_expert_grid")
    assert record["admitted"], record["reason"]
    assert record["mechanism_check"] == "grouped_units 0 -> 1: the move adds the skill's mechanism"
    assert "not a measurement" in record["gate_before"] and not record["failed_preconditions"]
