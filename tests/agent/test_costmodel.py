"""The static cost model (`argus.eval.costmodel`): orderings and the sign of each mechanism's effect, never
absolute times (it is an estimate)."""

from __future__ import annotations

import dataclasses

import pytest

from argus.eval.costmodel import GPUS, CostModelError, estimate, estimate_findings, gpu_spec
from argus.kernels import get_kernel
from argus.kernels.registry import lineage

BIG = {"M": 4096, "N": 4096, "K": 4096}


def _est(name: str, sizes=BIG, findings=True, **params):
    entry = get_kernel(name)
    p = {**entry.params, **params}
    f = estimate_findings(entry.kernel, p) if findings else None
    return estimate(entry.kernel, sizes, params=p, findings=f)


def test_the_gemm_lineage_gets_faster_rung_by_rung_up_to_tensor_cores():
    rungs = [step.kernel for step in lineage("gemm")]
    times = {name: _est(name).ms for name in rungs}
    ordered = list(times.values())
    # every rung up to TMA + wgmma is strictly faster than the one before it
    upto = rungs.index("gemm_tma_wgmma")
    for before, after in zip(rungs[:upto], rungs[1 : upto + 1], strict=True):
        assert times[after] < times[before], (before, after, times)
    # warp specialization is not slower than the same pipeline without it
    assert times["gemm_warp_specialized"] <= times["gemm_tma_wgmma"]
    assert max(ordered) == times["gemm_naive"]
    assert min(times[r] for r in rungs[: rungs.index("gemm_warp_specialized") + 1]) == times["gemm_warp_specialized"]


def test_the_persistent_rungs_are_estimated_at_their_block_count():
    """The last two rungs run one block per SM (132) at their library parameters, and the estimate is not slower
    than the 2-D grid they replace, nor the TMA-store epilogue than the direct one (the cost model gives the staged
    store no value of its own: it does not model the store pattern). At 3 blocks (3 of 132 SMs busy) the estimate
    says so."""
    rungs = [step.kernel for step in lineage("gemm")]
    assert rungs[-3:] == ["gemm_warp_specialized", "gemm_warp_specialized_persistent", "gemm_tma_store_epilogue"]
    grid = _est("gemm_warp_specialized").ms
    assert _est("gemm_warp_specialized_persistent", BLOCKS=3).ms > 10 * grid
    persistent = _est("gemm_warp_specialized_persistent").ms
    staged = _est("gemm_tma_store_epilogue").ms
    assert persistent <= grid and staged <= persistent


def test_the_bound_and_the_instruction_kinds():
    naive, wgmma = _est("gemm_naive"), _est("gemm_warp_specialized")
    assert naive.counts["flops"]["fma"] == pytest.approx(2 * 4096**3)
    assert naive.counts["flops"]["tensor_wgmma"] == 0
    assert wgmma.counts["flops"]["tensor_wgmma"] == pytest.approx(2 * 4096**3)
    assert wgmma.bound_class in ("compute", "memory") and naive.terms_ms["fma"] > wgmma.terms_ms["tensor"]
    # the same FLOPs on mma.sync take twice the tensor time of wgmma (half the peak)
    mma = _est("gemm_cp_async_swizzled")

    def per_flop(e):  # the tensor time at full waves, per FLOP
        return e.terms_ms["tensor"] * e.occupancy["wave_efficiency"] / e.flops

    assert per_flop(mma) == pytest.approx(2 * per_flop(wgmma), rel=1e-3)
    assert set(naive.profile) == {"bound", "compute_fraction", "memory_fraction", "occupancy"}


def test_bank_conflicts_and_uncoalesced_access_cost_time():
    conflicted = _est("gemm_mma_sync")  # the verifier finds 4- and 8-way conflicts on sA and sB
    assert {p["buffer"] for p in conflicted.penalties} >= {"sA", "sB"}
    blind = _est("gemm_mma_sync", findings=False)
    assert conflicted.terms_ms["smem"] > blind.terms_ms["smem"] and conflicted.ms > blind.ms
    tiled = _est("gemm_smem_tiled")  # uncoalesced A and C
    assert any(p["code"] == "PERF_UNCOALESCED" for p in tiled.penalties)
    assert tiled.terms_ms["l2"] > _est("gemm_smem_tiled", findings=False).terms_ms["l2"]


def test_more_pipeline_stages_overlap_more():
    two, four = _est("gemm_cp_async_swizzled", STAGES=2), _est("gemm_cp_async_swizzled", STAGES=4)
    assert four.pipeline["concurrency"] > two.pipeline["concurrency"]
    assert four.terms_ms["latency"] < two.terms_ms["latency"]
    assert four.ms < two.ms
    # synchronous copies: one tile in flight, whatever the stage count says
    assert _est("gemm_mma_sync").pipeline["stages"] == 1


def test_larger_tiles_reuse_global_data_more():
    small = _est("gemm_tma_wgmma", BM=128, BN=64, BK=64)
    big = _est("gemm_tma_wgmma", BM=128, BN=128, BK=64)
    assert big.counts["global_bytes"] < small.counts["global_bytes"]


def test_occupancy_and_the_last_wave():
    full = _est("gemm_warp_specialized", sizes={"M": 128 * 132, "N": 128, "K": 4096})  # exactly one wave
    over = _est("gemm_warp_specialized", sizes={"M": 128 * 133, "N": 128, "K": 4096})  # one block more
    assert full.occupancy["wave_efficiency"] == 1.0 and over.occupancy["waves"] == 2
    assert over.ms / 133 > full.ms / 132  # the second wave's 131 idle SMs cost time per tile
    # fewer blocks than SMs: the idle SMs' share of the GPU is not available
    few = _est("gemm_persistent", sizes=BIG, BLOCKS=3)
    many = _est("gemm_persistent", sizes=BIG, BLOCKS=132)
    assert few.ms > 10 * many.ms
    # a register-hungry kernel fits fewer blocks per SM
    assert _est("gemm_smem_tiled").occupancy["limited_by"] == "registers"


def test_launch_overhead_dominates_a_tiny_problem():
    tiny = _est("vector_add", sizes={"N": 256})
    assert tiny.bound == "launch" and tiny.ms >= GPUS["H100-SXM"].launch_us * 1e-3


def test_a_faster_gpu_is_faster_and_errors_are_typed():
    h100 = _est("vector_add", sizes={"N": 1 << 28})
    entry = get_kernel("vector_add")
    h200 = estimate(entry.kernel, {"N": 1 << 28}, gpu="H200")
    assert h100.bound == "dram" and h200.ms < h100.ms
    # a streaming kernel reads each byte once, however large; a GEMM whose operands exceed L2 re-reads them
    assert h100.counts["dram_bytes"] == 3 * 4 * (1 << 28) and h100.counts["dram_reread"] == 1.0
    assert _est("gemm_warp_specialized").counts["dram_reread"] > 1.0
    slow = dataclasses.replace(gpu_spec(), name="slow", hbm_gbs=1000.0)
    assert estimate(entry.kernel, {"N": 1 << 28}, gpu=slow).ms > h100.ms
    with pytest.raises(CostModelError) as err:
        estimate(entry.kernel, {"M": 3})
    assert err.value.code == "COSTMODEL_SIZES"
    with pytest.raises(CostModelError):
        gpu_spec("B200")


def test_the_gate_says_it_is_an_estimate_without_a_gpu():
    from argus.eval import GateOptions, gate_kernel, library_candidate
    from argus.tasks import get_task

    result = gate_kernel(get_task("gemm"), library_candidate("gemm_mma_sync"), options=GateOptions(device="cpu"))
    profile = result.stage("profile")
    assert result.accepted and profile.code == "PROFILE_NO_GPU" and result.timing is None
    est = profile.details["cost_model"]
    assert est["estimate"] is True and est["sizes"] == {"M": 4096, "N": 4096, "K": 4096} and est["ms"] > 0
    assert "not a measurement" in profile.reason
    assert any(p["buffer"] == "sB" for p in est["penalties"])  # the verify stage's findings were used
    assert "calibrated" not in est  # the calibration was fitted on other kernels, on another GPU
    off = gate_kernel(
        get_task("gemm"), library_candidate("gemm_mma_sync"), options=GateOptions(device="cpu", cost_model=None)
    )
    assert "cost_model" not in off.stage("profile").details


def test_a_causal_kernel_is_estimated_over_its_blocks():
    """A causal block's key loop depends on its query tile: the counts are averaged over sampled blocks, so causal
    attention costs about half the full kernel (block 0 alone, one key tile, made it 4-6x too fast), and the
    longest-first order (block 0 the longest) estimates the same as the plain one."""
    from argus.eval import calibration as C
    from argus.eval.costmodel import _block_samples

    def est(causal: bool, lpt: bool = False) -> float:
        problem = {"batch": 2, "heads": 16, "kv_heads": 16, "sq": 2048, "sk": 2048, "d": 128, "dv": 128,
                   "causal": causal}  # fmt: skip
        config = {"BM": 128, "BN": 128, "STAGES": 2, "CONSUMERS": 2, "P_REGISTERS": True, "LPT": lpt}
        row = C.Row(family="attention", group="g", label="l", ms=1.0, gpu="H200", source="t",
                    plan={"problem": problem, "config": config})  # fmt: skip
        return C.featurize(row)[0]

    full, causal, lpt = est(False), est(True), est(True, lpt=True)
    assert 0.4 < causal / full < 0.75
    assert lpt == pytest.approx(causal, rel=0.1)
    assert _block_samples([3]) == [(0,), (1,), (2,)]
    assert _block_samples([16, 9]) == [(a, b) for a in (0, 4, 8, 11, 15) for b in (0, 2, 4, 6, 8)]
    assert len(_block_samples([100, 100, 100])) == 27
