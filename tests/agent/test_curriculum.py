"""The curriculum comparison (`argus.agent.curriculum`): each arm's final quality and the steps it took to come within
90 % of the best any arm reached. (The agent runner, with mined skills naming steps, is tested in
`tests/lineage/test_skill_arms.py`.)"""

from __future__ import annotations

import pytest

from argus.agent.curriculum import compare


def test_curriculum_comparison_reports_quality_and_steps_to_90_percent():
    trajectories = {0: [None, 4.0, 3.0], 1: [2.0, 1.5, 1.5], 2: [1.2, 1.0, 1.0]}

    def runner(target, entries, budget):
        return trajectories[len(entries)][:budget]

    arms = {"none": (), "curated": (1,), "curated+mined": (1, 2)}
    results = {r.curriculum: r for r in compare("gemm_mma_sync", 3, runner, arms)}
    assert results["curated+mined"].best_ms == 1.0 and results["curated+mined"].steps_to_90 == 1
    assert results["curated"].steps_to_90 is None and results["none"].best_ms == 3.0


def test_a_sweep_compares_arms_over_problems_in_order():
    import math

    from argus.agent.curriculum import Problem, compare_sweep

    problems = [Problem("k", {"M": 64}), Problem("k", {"M": 4096})]
    calls = []
    times = {  # (arm, problem index) -> best ms after each step
        ("a", 0): [4.0, 2.0, 1.0], ("b", 0): [4.0, 4.0, 2.0],
        ("a", 1): [8.0, 8.0, 8.0], ("b", 1): [8.0, 4.0, 4.0],
    }  # fmt: skip

    def runner(arm, problem, entries, budget):
        calls.append((arm, problem.label))
        return times[(arm, problems.index(problem))]

    report = compare_sweep(problems, 2, runner, {"a": (1, 2), "b": (1,)})
    assert calls == [("a", "k[M=64]"), ("a", "k[M=4096]"), ("b", "k[M=64]"), ("b", "k[M=4096]")]  # arm by arm
    first = {r.curriculum: r for r in report.results["k[M=64]"]}
    assert first["a"].steps_to_90 == 2 and first["b"].steps_to_90 is None and first["a"].entries == 2
    s = report.summary()
    assert s["a"]["quality"] == pytest.approx(math.sqrt(1.0 * 2.0)) == s["b"]["quality"]
    assert s["a"]["candidates"] == pytest.approx(3.0) and s["a"]["never"] == 1  # 8 ms on the second: never
    assert s["b"]["candidates"] == pytest.approx(2.0) and s["b"]["never"] == 1
    assert report.to_json()["problems"][1]["label"] == "k[M=4096]"


def test_argus_lineage_sweep_runs_the_four_arms(tmp_path):
    """Two problems of a file kernel at two sizes, one candidate each: every arm runs, each in its own store, and the
    priors arm's second problem starts from what its first learned."""
    import json

    from typer.testing import CliRunner

    from argus.agent.arms import KernelRef, kernel_source
    from argus.agent.store import RunStore
    from argus.cli.main import app

    path = tmp_path / "my_gemm.py"
    path.write_text(kernel_source(KernelRef(library="gemm_mma_sync")))
    target = f"{path}:gemm_mma_sync"
    out = tmp_path / "sweep.json"
    result = CliRunner().invoke(app, [
        "lineage", "sweep", f"{target}@M=4096,N=4096,K=4096", f"{target}@M=4096,N=4096,K=2048", "--budget", "1",
        "--store-dir", str(tmp_path / "stores"), "--json", str(out),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert set(doc["summary"]) == {"none", "curated", "curated+mined", "curated+mined+priors"}
    assert len(doc["results"]) == 2 and all(len(rows) == 4 for rows in doc["results"].values())
    stores = sorted(p.name for p in (tmp_path / "stores").glob("*.db"))
    assert stores == ["curated.db", "curated_mined.db", "curated_mined_priors.db", "none.db"]
    with RunStore(tmp_path / "stores" / "curated_mined_priors.db") as store:
        runs = store.runs()
        assert [r["config"]["priors"] is not None for r in runs] == [True, True]
        assert runs[0]["config"]["priors"]["arms"] == {}  # nothing learned before the first problem
        assert runs[1]["config"]["priors"]["arms"]  # the second starts from the first's rewards
    with RunStore(tmp_path / "stores" / "curated.db") as store:
        assert all(r["config"]["priors"] is None for r in store.runs())
