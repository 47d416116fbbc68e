"""Interleaved timing through the gate's profile stage and `argus bench`, on a simulated device whose clock drifts
(no GPU): the stage times the candidate and its baselines together and reports the true ratio where timing them one
after the other is biased; baselines that cannot run are skipped with the reason; the bench rows, JSON, table and
markdown say which timing method gave their numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from argus.eval import bench as bench_module
from argus.eval import gate as gate_
from argus.eval.bench import BenchReport, row_from_gate, run_bench
from argus.eval.gate import CANDIDATE, GateOptions, profile_stage, time_with_baselines
from argus.eval.results import GateResult, StageResult, Status
from argus.eval.timing import ContenderError, measure, measure_interleaved
from tests.eval.test_bench import app
from tests.eval.test_timing import DriftingGPU, SimulatedGPU

KERNEL_MS, CUBLAS_MS = 2.0, 2.2  # the true speedup of the kernel over cuBLAS: 1.1
TRUE = CUBLAS_MS / KERNEL_MS


def _throttle(t_ms: float) -> float:
    return 1.0 + 0.4 * min(t_ms / 1500.0, 1.0)


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> DriftingGPU:
    """The profile stage on a drifting simulated device: CUDA timing, telemetry, ceilings and the device index
    replaced by their simulated counterparts."""
    import argus.eval.ceilings
    import argus.eval.device
    import argus.eval.timing

    gpu = DriftingGPU(_throttle)

    def interleaved(contenders: Any, *, device: Any = None, graph: Any = None, **kw: Any) -> Any:
        return measure_interleaved(contenders, gpu, **kw)

    def sequential(fn: Any, *, device: Any = None, graph: Any = None, graph_fn: Any = None, **kw: Any) -> Any:
        return measure(fn, gpu, **kw)

    monkeypatch.setattr(argus.eval.timing, "time_interleaved_cuda", interleaved)
    monkeypatch.setattr(argus.eval.timing, "time_cuda", sequential)
    monkeypatch.setattr(argus.eval.device, "gpu_info", lambda index: {"uuid": None})
    monkeypatch.setattr(argus.eval.device, "gpu_telemetry", lambda index, uuid=None: {"source": None})
    monkeypatch.setattr(argus.eval.ceilings, "ceilings_for_device", lambda index: {"bf16_gemm_tflops": 800.0})
    monkeypatch.setattr(gate_, "_device_index", lambda device: 0)
    return gpu


def _profile(gpu: SimulatedGPU, options: GateOptions, **kw: Any) -> StageResult:
    stage, _ = profile_stage(
        lambda: gpu.run(KERNEL_MS),
        before_rep=lambda i: None,
        validate=lambda: None,
        flops=2 * 4096**3,
        moved_bytes=None,
        options=options,
        device="cpu",  # no device synchronization outside the simulated clock
        **{"baselines": {}, **kw},
    )
    return stage


def test_profile_stage_times_candidate_and_baselines_interleaved(simulated: DriftingGPU) -> None:
    def no_backend() -> None:
        raise RuntimeError("No available kernel. Aborting execution.")

    calls = {
        "cublas": lambda: simulated.run(CUBLAS_MS),
        "compile": "torch.compile is checked and timed on a GPU only",
        "sdpa-cudnn": no_backend,
    }
    stage = _profile(simulated, GateOptions(reps=200, warmup=5), baseline_calls=calls)
    assert stage.status == Status.PASSED, stage.reason
    d = stage.details
    assert d["timing_method"] == "interleaved"
    assert d["interleaved"]["method"] == "interleaved" and d["interleaved"]["rounds"] == 200
    assert d["interleaved"]["order"] == "rotating" and d["interleaved"]["contenders"] == [CANDIDATE, "cublas"]
    assert d["speedup"]["cublas"] == pytest.approx(TRUE, rel=0.01)
    ratio = d["interleaved"]["ratios"]["cublas"]
    assert ratio["ratio_of_medians"] == pytest.approx(d["speedup"]["cublas"])
    assert ratio["q1"] <= ratio["median"] <= ratio["q3"] and ratio["median"] == pytest.approx(TRUE, rel=0.01)
    assert list(d["baselines"]) == ["cublas", "compile", "sdpa-cudnn"]
    assert (
        d["baselines"]["cublas"]["timing"]["reps"] == 200
        and len(d["baselines"]["cublas"]["round_ratio"]["samples"]) == 200
    )
    assert d["baselines"]["compile"] == {"skipped": "torch.compile is checked and timed on a GPU only"}
    assert d["baselines"]["sdpa-cudnn"]["skipped"].startswith("does not run here: RuntimeError: No available kernel")
    assert "interleaved with cublas over 200 rounds" in stage.reason
    assert "interleaved" in d["timing"]["notes"][0]
    json.dumps(stage.to_json())


def test_sequential_profile_is_biased_by_the_drift_and_says_so(simulated: DriftingGPU) -> None:
    options = GateOptions(reps=200, warmup=5, timing="sequential")
    baseline = measure(lambda: simulated.run(CUBLAS_MS), simulated, reps=200, warmup=5)  # timed first, in its own job
    stage = _profile(simulated, options, baselines={"cublas": {"timing": baseline.to_json()}})
    d = stage.details
    assert d["timing_method"] == "sequential" and d["interleaved"] is None
    assert d["speedup"]["cublas"] < TRUE * 0.9  # the kernel ran on a hotter, slower GPU than its baseline
    # sequential by option even when the gate could time the baselines itself
    stage = _profile(simulated, options, baseline_calls={"cublas": lambda: simulated.run(CUBLAS_MS)})
    assert stage.details["timing_method"] == "sequential" and stage.details["speedup"] == {}


def test_a_baseline_that_fails_while_timed_is_dropped_and_the_rest_retimed() -> None:
    gpu = SimulatedGPU()
    log: list[str] = []
    state = {"n": 0}

    def flaky() -> None:
        state["n"] += 1
        if state["n"] == 5:  # runs its first call, then fails during the warm-up
            raise RuntimeError("cuDNN went away")
        gpu.run(1.0)

    def candidate() -> None:
        log.append("candidate")
        gpu.run(2.0)

    def eager() -> None:
        log.append("eager")
        gpu.run(3.0)

    def timer(contenders: Any, **kw: Any) -> Any:
        log.clear()
        return measure_interleaved(contenders, gpu, **kw)

    timing, baselines, summary = time_with_baselines(
        candidate,
        {"flaky": flaky, "eager": eager},
        before_rep=None,
        graph_fn=None,
        options=GateOptions(reps=7, warmup=3),
        timer=timer,
    )
    assert baselines["flaky"]["skipped"] == "raised while timed: RuntimeError: cuDNN went away"
    assert summary["contenders"] == [CANDIDATE, "eager"] and summary["rounds"] == 7
    assert baselines["eager"]["timing"]["median_ms"] == pytest.approx(3.0) and timing.median_ms == pytest.approx(2.0)
    assert summary["ratios"]["eager"]["ratio_of_medians"] == pytest.approx(1.5)
    assert log[-1] == "candidate"  # the gate checks the outputs of the last call: it is the candidate's

    def broken() -> None:
        raise ValueError("illegal instruction")

    with pytest.raises(ContenderError) as info:
        time_with_baselines(
            broken, {"eager": eager}, before_rep=None, graph_fn=None, options=GateOptions(reps=3), timer=timer
        )
    assert info.value.name == CANDIDATE


def test_a_candidate_that_raises_under_interleaved_timing_is_rejected(simulated: DriftingGPU) -> None:
    def broken() -> None:
        raise RuntimeError("launch failed")

    stage, _ = profile_stage(
        broken,
        before_rep=lambda i: None,
        validate=lambda: None,
        flops=None,
        moved_bytes=None,
        baselines={},
        options=GateOptions(reps=5),
        device="cpu",
        baseline_calls={"cublas": lambda: simulated.run(CUBLAS_MS)},
    )
    assert stage.status == Status.FAILED and stage.code == "PROFILE_FAILED"
    assert stage.reason == "RuntimeError: launch failed"


def _gate(
    simulated: DriftingGPU,
    kernel: str = "gemm_hopper_persistent",
    options: GateOptions | None = None,
    baselines: dict[str, Any] | None = None,
) -> GateResult:
    """A gate result whose profile stage ran on the simulated device: interleaved with cuBLAS, or (`baselines`
    given) against those times, as `gate_kernel` does."""
    options = options or GateOptions(reps=100, warmup=5)
    gate = GateResult(kernel, "gemm_nt_bf16", {"M": 4096, "N": 4096, "K": 4096})
    gate.stages.append(StageResult("correct", Status.PASSED, details={"max_rel_norm": 1e-3, "trials_passed": 6}))
    calls = {"cublas": lambda: simulated.run(CUBLAS_MS)} if baselines is None else None
    gate.stages.append(_profile(simulated, options, baselines=baselines or {}, baseline_calls=calls))
    return gate


def test_bench_row_and_report_say_interleaved_with_rounds_ratio_and_quartiles(simulated: DriftingGPU) -> None:
    row = row_from_gate(_gate(simulated))
    assert row.timing_method == "interleaved" and row.rounds == 100
    assert row.ratios["cublas"] == pytest.approx(TRUE, rel=0.01)
    q = row.round_ratios["cublas"]
    assert set(q) == {"median", "q1", "q3"} and q["q1"] <= q["median"] <= q["q3"]
    assert row.baseline_ms["cublas"] == pytest.approx(row.ratios["cublas"] * row.time_ms)
    timing = {"method": "interleaved", "rounds": 100, "order": "rotating", "l2_flush": True, "warmup": 5}
    env = {"gpu": {"name": "NVIDIA H200"}, "torch": "2.x"}
    report = BenchReport("gemm_hopper_persistent", "gemm_nt_bf16", True, [row], {}, [], env, timing)
    data = json.loads(json.dumps(report.to_json()))
    assert data["timing"]["method"] == "interleaved" and data["timing"]["rounds"] == 100
    assert data["rows"][0]["timing_method"] == "interleaved" and data["rows"][0]["round_ratios"]["cublas"]["q3"]
    md = report.to_markdown()
    assert "timing: interleaved" in md and "100 rounds" in md and "order rotating" in md
    assert "| x cublas [q1, q3] |" in md
    line = next(ln for ln in md.splitlines() if ln.startswith("| gemm_hopper_persistent"))
    assert f"{row.ratios['cublas']:.3f}x [{q['q1']:.3f}, {q['q3']:.3f}]" in line
    sequential = BenchReport("g", "gemm", True, [], {}, [], env, {**timing, "method": "sequential"})
    assert sequential.timing_line().startswith("timing: sequential")
    assert BenchReport("g", "gemm", False, [], {}, [], {}, {"method": None}).timing_line().startswith("timing: skipped")


@pytest.mark.parametrize("timing", ["interleaved", "sequential"])
def test_run_bench_on_a_gpu_times_baselines_in_each_kernel_s_gate_when_interleaved(
    timing: str, simulated: DriftingGPU, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argus.eval.device

    jobs: list[tuple[str, dict[str, Any]]] = []
    returned: dict[str, Any] = {}

    def baselines_job(**kw: Any) -> dict[str, Any]:
        jobs.append(("baselines", kw))
        if kw["time"]:
            timings = {"cublas": {"timing": measure(lambda: simulated.run(CUBLAS_MS), simulated, reps=100).to_json()}}
        else:
            timings = {"cublas": {"interleaved": "timed with each kernel"}}
        returned["timings"] = timings
        return {"checks": {"cublas": {"correct": True}}, "timings": timings}

    def gate_job(**kw: Any) -> dict[str, Any]:
        jobs.append(("gate", kw))
        assert kw["sizes"]["M"] == 512
        options = GateOptions.from_dict({**kw["options"], "warmup": 5})
        return _gate(simulated, kw["kernel"], options, kw["baselines"]).to_json()

    monkeypatch.setattr(bench_module, "baselines_job", baselines_job)
    monkeypatch.setattr(bench_module, "gate_library_kernel_job", gate_job)
    monkeypatch.setattr(argus.eval.device, "environment", lambda device: {"device": device})
    report = run_bench(
        "gemm_hopper_persistent",
        shapes=[{"M": 512}],
        options=GateOptions(device="cuda", reps=100, timing=timing),
        isolate=False,
    )
    (_, base), (_, gate) = jobs
    assert base["time"] is (timing == "sequential")
    if timing == "interleaved":
        assert gate["baselines"] is None  # the gate times them beside the kernel
        assert gate["options"]["timing"] == "interleaved"
    else:
        assert gate["baselines"] == returned["timings"]
    assert report.timing["method"] == timing and report.timing["rounds"] == 100
    assert report.timing["order"] == ("rotating" if timing == "interleaved" else None)
    (row,) = report.rows
    assert row.timing_method == timing and row.rounds == 100
    if timing == "interleaved":  # the true speedup, with its quartiles
        assert row.ratios["cublas"] == pytest.approx(TRUE, rel=0.01) and row.round_ratios["cublas"]["q1"] is not None
    else:  # biased by the drift, and no per-round ratios to give
        assert row.ratios["cublas"] < TRUE * 0.95 and row.round_ratios == {}


def test_bench_command_timing_option(tmp_path: Any) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["bench", "vector_add", "--timing", "fast", "--no-isolate"])
    assert bad.exit_code == 2 and "interleaved" in bad.output
    out_json, out_md = tmp_path / "b.json", tmp_path / "b.md"
    ok = runner.invoke(
        app,
        [
            "bench",
            "vector_add",
            "--shapes",
            "N=333",
            "--no-isolate",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert "timing: skipped (no CUDA GPU here)" in ok.output
    assert json.loads(out_json.read_text())["timing"] == {"method": None, "skipped": "no CUDA GPU here"}
    md = out_md.read_text()
    assert md.startswith("### argus bench vector_add") and "| vector_add | N=333 | accepted |" in md
