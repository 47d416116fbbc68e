"""The walk's record of a gate result: a GPU timing's effect context names the GPU and the sizes (the profile stage
itself does not; the gate result's environment and sizes do)."""

from __future__ import annotations

from argus.eval.results import GateResult, StageResult, Status
from argus.lineage.walk import gate_record


def _timed(ms: float) -> GateResult:
    result = GateResult("k", "gemm_nt", {"M": 4096, "N": 4096, "K": 4096},
                        environment={"gpu": {"name": "NVIDIA H200", "sms": 132}})  # fmt: skip
    timing = {"median_ms": ms, "method": "cuda-events"}
    result.stages.append(StageResult("profile", Status.PASSED, None, f"median {ms} ms", {"timing": timing}))
    return result


def test_a_gpu_profile_names_the_gpu_and_the_sizes() -> None:
    profile = gate_record(_timed(0.2159))["profile"]
    assert profile["source"] == "gpu" and profile["estimate"] is False and profile["ms"] == 0.2159
    assert profile["gpu"] == "NVIDIA H200"
    assert profile["sizes"] == {"M": 4096, "N": 4096, "K": 4096}


def test_a_stage_without_numbers_says_why() -> None:
    result = GateResult("k", "gemm_nt", {})
    result.stages.append(StageResult("profile", Status.SKIPPED, "PROFILE_NOT_COMPILED", "not compiled"))
    assert gate_record(result)["profile"] == {"source": "none", "why": "PROFILE_NOT_COMPILED: not compiled"}
