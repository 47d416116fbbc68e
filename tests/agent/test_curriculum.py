"""The curriculum comparison (`argus.agent.curriculum`): each arm's final quality and the steps it took to come within
90 % of the best any arm reached. (The agent runner, with mined skills naming steps, is tested in
`tests/lineage/test_skill_arms.py`.)"""

from __future__ import annotations

from argus.agent.curriculum import compare


def test_curriculum_comparison_reports_quality_and_steps_to_90_percent():
    trajectories = {0: [None, 4.0, 3.0], 1: [2.0, 1.5, 1.5], 2: [1.2, 1.0, 1.0]}

    def runner(target, entries, budget):
        return trajectories[len(entries)][:budget]

    arms = {"none": (), "curated": (1,), "curated+mined": (1, 2)}
    results = {r.curriculum: r for r in compare("gemm_mma_sync", 3, runner, arms)}
    assert results["curated+mined"].best_ms == 1.0 and results["curated+mined"].steps_to_90 == 1
    assert results["curated"].steps_to_90 is None and results["none"].best_ms == 3.0
