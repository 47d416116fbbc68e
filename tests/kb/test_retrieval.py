"""Retrieval on real kernels: preconditions decide applicability, profile and verifier signals the
order, and every match says why."""

from __future__ import annotations

import pytest

from argus.kb import get_entry, kernel_features, match_entry, retrieve
from argus.kernels import get_kernel
from argus.verify import verify


def ids(matches) -> list[str]:
    return [m.entry.id for m in matches]


@pytest.fixture(scope="module")
def mma_sync():
    entry = get_kernel("gemm_mma_sync")
    return entry, kernel_features(entry), verify(entry)


def test_a_bank_conflict_warning_ranks_the_swizzle_first(mma_sync) -> None:
    _, features, findings = mma_sync
    with_warning = retrieve(features, findings=findings, k=None)
    assert ids(with_warning)[0] == "swizzle-shared-128b"
    swizzle = with_warning[0]
    assert any(r.startswith("signal") and "bank_conflict_degree" in r for r in swizzle.reasons)
    # padding fixes the same warning but is the lesser fix on Hopper
    assert ids(with_warning).index("pad-shared-rows") > 0
    without = {m.entry.id: m for m in retrieve(features, k=None)}
    assert swizzle.score > without["swizzle-shared-128b"].score
    assert ids(retrieve(features, k=None)).index("swizzle-shared-128b") > 0  # the warning is what lifts it


def test_swizzle_locus_points_at_the_shared_buffers(mma_sync) -> None:
    _, features, _ = mma_sync
    m = match_entry(get_entry("swizzle-shared-128b"), features)
    lines = [s.text.strip() for s in m.sites]
    assert [line.split("(")[0] for line in lines] == ["sA = T.alloc_shared", "sB = T.alloc_shared"]


def test_a_kernel_without_pipelining_gets_pipelining(mma_sync) -> None:
    _, features, _ = mma_sync
    top = ids(retrieve(features, k=4))
    assert "cp-async-pipeline" in top
    everything = {m.entry.id: m for m in retrieve(features, k=None)}
    assert everything["tma-loads"].applicable
    assert "pipeline-stages" not in everything  # there is no pipeline to deepen
    # once pipelined, cp.async pipelining no longer applies and the stage count becomes the knob
    piped = {m.entry.id: m for m in retrieve(get_kernel("gemm_cp_async"), k=None, include_inapplicable=True)}
    assert not piped["cp-async-pipeline"].applicable
    assert any(
        r.startswith("fails: pipeline.kind eq 'none' (found 'cp.async')") for r in piped["cp-async-pipeline"].reasons
    )
    assert piped["pipeline-stages"].applicable and piped["pipeline-stages"].transform_ready


def test_mma_sync_on_hopper_is_pointed_at_wgmma(mma_sync) -> None:
    _, features, _ = mma_sync
    assert "wgmma-instead-of-mma-sync" in ids(retrieve(features, k=3))
    older = kernel_features(get_kernel("gemm_mma_sync"), arch="sm_80")
    m = match_entry(get_entry("wgmma-instead-of-mma-sync"), older)
    assert not m.applicable and any("hardware.wgmma" in r for r in m.reasons)


def test_an_fp32_elementwise_kernel_gets_no_tensor_core_entry() -> None:
    add = get_kernel("vector_add")
    found = ids(retrieve(add, k=None))
    assert found and not {"wgmma-instead-of-mma-sync", "tensor-cores-instead-of-fma", "ldmatrix-fragments"} & set(found)
    assert "vectorized-global-access" in found
    everything = {m.entry.id: m for m in retrieve(add, k=None, include_inapplicable=True)}
    wgmma = everything["wgmma-instead-of-mma-sync"]
    assert not wgmma.applicable and wgmma.reasons[0].startswith("no place to apply it: the kernel has no gemm")


def test_inapplicable_entries_come_last_with_their_reason() -> None:
    ranked = retrieve(get_kernel("softmax"), k=None, include_inapplicable=True)
    flags = [m.applicable for m in ranked]
    assert flags == sorted(flags, reverse=True) and not all(flags) and any(flags)
    exp2 = next(m for m in ranked if m.entry.id == "exp2-folded-scale")
    assert not exp2.applicable and exp2.failed[0].feature == "ops.exp"  # softmax already uses exp2


def test_attention_matches(mma_sync) -> None:
    attention = {m.entry.id: m for m in retrieve(get_kernel("flash_attention_fwd"), k=None, include_inapplicable=True)}
    assert not attention["causal-block-skipping"].applicable  # not a causal kernel
    assert not attention["online-softmax"].applicable  # already online
    assert attention["softmax-mma-overlap"].applicable and attention["wgmma-register-a"].applicable
    assert not attention["warp-specialization"].applicable  # already specialized


def test_profile_bound_reorders() -> None:
    gemm = get_kernel("gemm_warp_specialized")
    memory = ids(retrieve(gemm, profile={"bound": "memory"}, k=None))
    compute = ids(retrieve(gemm, profile={"bound": "compute"}, k=None))
    assert memory.index("epilogue-fusion") < memory.index("pingpong-consumers")
    assert compute.index("pingpong-consumers") < compute.index("epilogue-fusion")
    m = {x.entry.id: x for x in retrieve(gemm, profile={"bound": "compute"}, k=None)}["pingpong-consumers"]
    assert "the kernel is compute-bound and this relieves the compute bound" in m.reasons


def test_unknown_preconditions_rank_lower_but_do_not_exclude() -> None:
    gemm = get_kernel("gemm_warp_specialized")
    unknown = {m.entry.id: m for m in retrieve(gemm, k=None)}["grouped-gemm-scheduling"]
    assert unknown.applicable and [p.feature for p in unknown.unknown] == ["shape.groups"]
    known = {m.entry.id: m for m in retrieve(kernel_features(gemm, shapes={"G": 8}), k=None)}
    assert known["grouped-gemm-scheduling"].score > unknown.score
    one = {m.entry.id: m for m in retrieve(kernel_features(gemm, shapes={"G": 1}), k=None, include_inapplicable=True)}
    assert not one["grouped-gemm-scheduling"].applicable


def test_k_limits_and_findings_add_to_given_features(mma_sync) -> None:
    _, features, findings = mma_sync
    assert len(retrieve(features, k=3)) == 3
    assert ids(retrieve(features, findings=findings, k=1)) == ["swizzle-shared-128b"]
    as_json = [f.to_json() for f in findings.findings]
    assert ids(retrieve(features, findings=as_json, k=1)) == ["swizzle-shared-128b"]


def test_matches_serialize_for_the_agent(mma_sync) -> None:
    _, features, findings = mma_sync
    data = retrieve(features, findings=findings, k=1)[0].to_json()
    assert data["id"] == "swizzle-shared-128b" and data["applicable"] and data["reasons"]
    assert len(data["sites"]) == 2 and all(site.startswith("gemm.py:") for site in data["sites"])
