"""Retrieval ranks mined skills by measured gain (a GPU measurement fully, the cost model's estimate at a discount)
and by shape proximity (the skill's effect context vs the task's benchmark shape); curated entries score as before."""

from __future__ import annotations

import dataclasses
import math

import pytest

from argus.kb import entries, get_entry, kernel_features, match_entry, retrieve
from argus.kb.retrieval import ESTIMATE_TRUST, GAIN_CAP, GAIN_WEIGHT, SHAPE_WEIGHT, shape_proximity, skill_gain
from argus.kernels import get_kernel

SHAPE = {"M": 4096, "N": 4096, "K": 4096}


@pytest.fixture(scope="module")
def features():
    return kernel_features(get_kernel("gemm_naive"))


def skill(ratio=None, *, source="gpu", estimate=False, sizes=None, skill_id="mined-test-skill", **lineage):
    """The curated shared-memory-staging entry as if mined, with the given recorded effect."""
    base = get_entry("shared-memory-staging")
    effect = {"source": source, "estimate": estimate, "sizes": dict(sizes or SHAPE)}
    if ratio is not None:
        effect["slowdown"] = ratio
    lin = {"kernel": "gemm_hopper", "step": 10, "measured": "test", "mechanism": "smem_tiling@1", "effect": effect}
    lin.update(lineage)
    provenance = dataclasses.replace(base.provenance, source="mined", references=(), lineage=lin)
    return dataclasses.replace(base, id=skill_id, provenance=provenance)


def score(entry, features, shape=None):
    return match_entry(entry, features, shape=shape).score


def test_measured_gain_counts_per_doubling_and_a_gpu_measurement_counts_fully(features):
    none = score(skill(1.0), features)
    gpu = score(skill(4.0), features)
    estimated = score(skill(4.0, source="cost model", estimate=True), features)
    slower = score(skill(0.5), features)
    assert gpu - none == pytest.approx(2 * GAIN_WEIGHT)
    assert estimated - none == pytest.approx(2 * GAIN_WEIGHT * ESTIMATE_TRUST)
    assert slower - none == pytest.approx(-GAIN_WEIGHT)
    assert score(skill(2.0**10), features) - none == pytest.approx(GAIN_CAP * GAIN_WEIGHT)  # bounded
    assert score(skill(None), features) == pytest.approx(none)  # not measured: no gain term
    assert skill_gain(skill(None)) is None and skill_gain(get_entry("shared-memory-staging")) is None
    reasons = match_entry(skill(4.0, source="cost model", estimate=True), features).reasons
    assert any(r.startswith("measured gain (+1.00): 4.00x faster") and "an estimate" in r for r in reasons)


def test_measured_gain_changes_the_ranking(features):
    estimated = skill(3.0, source="cost model", estimate=True, skill_id="mined-estimated")  # 0.5 x log2(3) = 0.79
    measured = skill(2.0, skill_id="mined-measured")  # 1.0 x log2(2) = 1.0
    ranked = [m.entry.id for m in retrieve(features, k=None, entries=[estimated, measured])]
    assert ranked == ["mined-measured", "mined-estimated"]
    estimated = skill(5.0, source="cost model", estimate=True, skill_id="mined-estimated")  # 1.16
    ranked = [m.entry.id for m in retrieve(features, k=None, entries=[estimated, measured])]
    assert ranked == ["mined-estimated", "mined-measured"]


def test_shape_proximity_adds_more_the_closer_the_skill_was_measured(features):
    far = {"M": 1024, "N": 1024, "K": 1024}
    assert shape_proximity(SHAPE, SHAPE) == 1.0
    assert shape_proximity({"M": 2048, "N": 2048, "K": 2048}, SHAPE) == pytest.approx(0.5)
    assert shape_proximity({"M": 8192, "N": 4096}, SHAPE) == pytest.approx(2**-0.5)  # the sizes both name
    assert shape_proximity({"G": 8}, SHAPE) is None
    base = score(skill(1.0), features)  # no shape given: no proximity term
    same = score(skill(1.0), features, SHAPE)
    assert same - base == pytest.approx(SHAPE_WEIGHT)
    assert score(skill(1.0, sizes=far), features, SHAPE) - base == pytest.approx(SHAPE_WEIGHT * 0.25)
    ranked = retrieve(features, k=None, entries=[skill(1.0, sizes=far, skill_id="mined-far"), skill(1.0)], shape=SHAPE)
    assert [m.entry.id for m in ranked] == ["mined-test-skill", "mined-far"]
    # the shape can also come from the features (kernel_features(shapes=...))
    shaped = kernel_features(get_kernel("gemm_naive"), shapes=SHAPE)
    assert score(skill(1.0), shaped) - score(skill(1.0), shaped, {"M": 1, "N": 1, "K": 1}) > 0
    assert math.isclose(score(skill(1.0), shaped), score(skill(1.0), shaped, SHAPE))


def test_curated_entries_score_as_before(features):
    plain = {m.entry.id: m.score for m in retrieve(features, k=None, include_inapplicable=True)}
    shaped = {m.entry.id: m.score for m in retrieve(features, k=None, include_inapplicable=True, shape=SHAPE)}
    assert plain == shaped and len(plain) == len(entries())
    assert not any("measured gain" in r for m in retrieve(features, k=None) for r in m.reasons)
