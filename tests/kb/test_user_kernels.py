"""Retrieval and transforms on kernels written for these tests (`kernels_kb.py`): an exp-based
softmax gets the exp2 entry, a causal online softmax gets block skipping, and the swizzle entry's
transform, applied to a GEMM that declares its swizzle, removes the bank conflicts the verifier
reported."""

from __future__ import annotations

from argus.kb import apply, get_entry, kernel_features, match_entry, retrieve
from argus.verify import verify
from tests.kb.kernels_kb import causal_row_logsumexp, gemm_swizzle_policy, softmax_exp


def test_exp_softmax_gets_exp2_with_the_scale_folded() -> None:
    ranked = retrieve(softmax_exp, k=None)
    assert ranked[0].entry.id == "exp2-folded-scale"
    [site] = ranked[0].sites
    assert "T.exp(" in site.text  # the locus is the exp itself


def test_causal_online_softmax_gets_block_skipping() -> None:
    features = kernel_features(causal_row_logsumexp)
    assert features["ops.causal_mask"] and features["ops.online_softmax"]
    m = match_entry(get_entry("causal-block-skipping"), features)
    assert m.applicable and [s.text.strip().split()[0] for s in m.sites] == ["for"]
    assert not match_entry(get_entry("online-softmax"), features).applicable  # already online


def test_the_swizzle_transform_removes_the_bank_conflicts() -> None:
    before = verify(gemm_swizzle_policy)
    degrees = [f.details["degree"] for f in before.findings if f.code == "PERF_BANK_CONFLICT"]
    assert degrees and max(degrees) > 1
    top = retrieve(gemm_swizzle_policy, findings=before, k=1)[0]
    assert top.entry.id == "swizzle-shared-128b" and top.transform_ready
    params = apply(top.entry, gemm_swizzle_policy, value=128)
    assert params == {"SWIZZLE": 128}
    after = verify(gemm_swizzle_policy, **params)
    assert not [f for f in after.findings if f.code == "PERF_BANK_CONFLICT"]
    assert not after.errors
    assert kernel_features(gemm_swizzle_policy, **params)["smem.swizzle"] == 128
    # the entry no longer applies: the tiles are swizzled
    swizzled = kernel_features(gemm_swizzle_policy, **params)
    assert not match_entry(get_entry("swizzle-shared-128b"), swizzled).applicable
