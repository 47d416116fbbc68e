"""GEMM autotuning (issue #20): the persistent cache of measured configurations (`argus.kernels.gemm_tuning`) is
keyed by GPU, dtype, layout and shape bucket, survives a broken file, and gives a configuration only where it is one
of the asked problem's own candidates; `matmul` and a solution's `LibraryGemm` take it on that GPU; `argus tune`
(`argus.agent.tune.tune_gemm`) refuses what it cannot measure with the reason. On a GPU, a tuned configuration is
measured, recorded, and then served to `matmul.prepare`."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from argus.agent.errors import AgentError
from argus.kernels import gemm_tuning
from argus.kernels import matmul as mm

GPU = "NVIDIA H200 (sm_90)"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tuned"


def test_the_key_is_dtype_layout_and_quarter_octave_buckets() -> None:
    p = mm.GemmProblem(4096, 4096, 4096)
    assert gemm_tuning.key(p) == gemm_tuning.key(mm.GemmProblem(4500, 4096, 4096))  # 2^(1/4) = 1.19 per bucket
    assert gemm_tuning.key(p) != gemm_tuning.key(mm.GemmProblem(5000, 4096, 4096))
    assert gemm_tuning.key(p) != gemm_tuning.key(replace(p, b_major="N"))  # NT vs NN
    assert gemm_tuning.key(p) != gemm_tuning.key(replace(p, dtype="f16", out="f16"))
    assert gemm_tuning.key(p) != gemm_tuning.key(replace(p, batch=2))
    assert [gemm_tuning.bucket(x) for x in (1, 2, 3, 4)] == [0, 4, 6, 8]


def test_a_recorded_configuration_is_served_to_its_key_on_its_gpu_only(cache: Path) -> None:
    problem = mm.GemmProblem(3072, 1536, 6144)
    tuned = mm.GemmConfig(128, 256, 2, 4, TAIL=6, EPILOGUE="tma")
    assert tuned in mm.candidates_for(problem) and tuned != mm.choose(problem)
    path = gemm_tuning.record(problem, GPU, {"config": tuned, "ms": 0.09})
    assert path == cache / "gemm.json" and json.loads(path.read_text())[GPU][gemm_tuning.key(problem)]["ms"] == 0.09
    assert gemm_tuning.lookup(problem, GPU) == tuned
    assert gemm_tuning.lookup(mm.GemmProblem(3300, 1536, 6144), GPU) == tuned  # same bucket, still a candidate
    assert gemm_tuning.lookup(problem, "NVIDIA H100 80GB HBM3 (sm_90)") is None
    assert gemm_tuning.lookup(mm.GemmProblem(1024, 1536, 6144), GPU) is None  # another bucket


def test_a_configuration_that_is_not_the_problem_s_candidate_is_ignored(cache: Path) -> None:
    problem = mm.GemmProblem(3072, 1536, 6144)
    # one pipeline stage more than fits (the candidates hold the deepest that fits), and a tail at a shape whose
    # tiles are whole waves: neither is one of the problem's candidates, so the model's choice stands
    for config in (mm.GemmConfig(128, 256, 2, 5), mm.GemmConfig(128, 256, 2, 4, TAIL=2)):
        gemm_tuning.record(problem, GPU, {"config": config})
        assert gemm_tuning.lookup(problem, GPU) is None, config
    whole = mm.GemmProblem(4224, 1024, 2048)  # 33 x 4 = 132 tiles of 128 x 256: one whole wave
    gemm_tuning.record(whole, GPU, {"config": mm.GemmConfig(128, 256, 2, 4, TAIL=2, EPILOGUE="tma")})
    assert gemm_tuning.lookup(whole, GPU) is None
    # a configuration written by a version with other fields
    gemm_tuning.record(problem, GPU, {"config": {**asdict(mm.choose(problem)), "WARP_SPECIALIZED": True}})
    assert gemm_tuning.lookup(problem, GPU) is None


def test_a_broken_cache_file_is_read_as_empty_and_replaced(cache: Path) -> None:
    cache.mkdir(parents=True)
    (cache / "gemm.json").write_text("{not json")
    problem = mm.GemmProblem(2048, 2048, 2048)
    assert gemm_tuning.read() == {} and gemm_tuning.lookup(problem, GPU) is None
    config = mm.choose(problem)
    gemm_tuning.record(problem, GPU, {"config": config})
    assert gemm_tuning.lookup(problem, GPU) == config


def test_matmul_and_a_solution_s_gemm_take_the_tuned_configuration_on_that_gpu(cache: Path, monkeypatch) -> None:
    problem = mm.GemmProblem(3072, 1536, 6144)
    tuned = mm.GemmConfig(128, 256, 2, 4, TAIL=6, EPILOGUE="tma")
    gemm_tuning.record(problem, GPU, {"config": tuned})
    monkeypatch.setattr(gemm_tuning, "gpu_name", lambda device=None: GPU)
    assert mm.tuned_config(problem, "cuda:0") == tuned
    monkeypatch.setattr(mm, "_cuda_available", lambda: True)
    call = mm.LibraryGemm("matmul_0", problem)
    assert call.plan().config == tuned
    assert [k.name for k in call.kernels()][-2:] == ["gemm_persistent_split_tail", "gemm_tail_reduce"]
    monkeypatch.setattr(gemm_tuning, "gpu_name", lambda device=None: "another GPU")
    assert mm.tuned_config(problem, "cuda:0") is None and call.plan().config == mm.choose(problem)


def test_each_configuration_is_verified_and_compiled_or_left_out_with_the_reason() -> None:
    from argus.agent import tune

    problem = mm.GemmProblem(3072, 1536, 6144)
    good = mm.GemmConfig(128, 256, 2, 4, TAIL=8, EPILOGUE="tma")
    bad = mm.GemmConfig(128, 256, 2, 4, BK=32)  # a K-block the 16-bit GEMM does not run on
    got = tune._verified_and_compiled(problem, [good, bad], verify=True)
    assert got[good.label] is None
    assert "GemmError" in got[bad.label] and "K-blocks of 64" in got[bad.label]


def test_tune_parallel_2_verifies_with_the_default_verdicts(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`argus tune --parallel 2`: the configurations are verified and compiled as gate jobs in a local pool of two
    worker processes (`LocalExecutor`), with the verdicts of the default path (one process per configuration). The
    correctness check and the timing need a GPU: here they are replaced by a stand-in that runs the real
    verification stage with what the command passed and reports it."""
    from typer.testing import CliRunner

    from argus.agent import tune
    from argus.cli.main import app

    problem = mm.GemmProblem(3072, 1536, 6144)
    good = mm.GemmConfig(128, 256, 2, 4, TAIL=8, EPILOGUE="tma")
    bad = mm.GemmConfig(128, 256, 2, 4, BK=32)
    default = tune._verified_and_compiled(problem, [good, bad], verify=True)
    assert default[good.label] is None and "K-blocks of 64" in default[bad.label]
    seen = []

    def verification_only(got: mm.GemmProblem, **kwargs: object) -> tune.TunedGemm:
        assert got == problem and kwargs["executor"] is None and kwargs["parallel"] == 2
        ready = tune._verified_and_compiled(got, [good, bad], True, executor=None, parallel=kwargs["parallel"])
        seen.append(ready)
        left_out = {k: v for k, v in ready.items() if v}
        return tune.TunedGemm({**asdict(got), "layout": got.layout}, GPU, good.label, {}, 1.0, good.label, 1.0,
                              {good.label: 1.0}, left_out, 1, str(cache))  # fmt: skip

    monkeypatch.setattr(tune, "check_tunable", lambda problem, budget: None)
    monkeypatch.setattr(tune, "tune_gemm", verification_only)
    monkeypatch.delenv("ARGUS_RAY_ADDRESS", raising=False)
    result = CliRunner().invoke(app, ["tune", "3072,1536,6144", "--parallel", "2"])
    assert result.exit_code == 0, result.output
    assert seen == [default]  # the same verdicts, reason for reason
    refused = CliRunner().invoke(app, ["tune", "3072,1536,6144", "--parallel", "0"])
    assert refused.exit_code == 2  # K is at least 1


def test_tuning_refuses_what_it_cannot_measure_with_the_reason() -> None:
    from argus.agent.tune import tune_gemm

    with pytest.raises(AgentError, match="FP8 GEMMs have no tuned configurations"):
        tune_gemm(mm.GemmProblem(4096, 4096, 4096, "e4m3", "bf16"))
    with pytest.raises(AgentError, match="GEMV-class kernel"):
        tune_gemm(mm.GemmProblem(4, 4096, 4096, "f32", "f32", "K", "N"))
    with pytest.raises(AgentError, match="a budget is at least one"):
        tune_gemm(mm.GemmProblem(256, 256, 256), budget=0)
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if not gpu:
        with pytest.raises(AgentError, match="no CUDA GPU here"):
            tune_gemm(mm.GemmProblem(256, 256, 256))


def test_the_command_reports_a_user_error_without_a_trace(cache: Path) -> None:
    from typer.testing import CliRunner

    from argus.cli.main import app

    bad = CliRunner().invoke(app, ["tune", "1,2"])
    assert bad.exit_code == 2 and "a shape is M,N,K" in bad.output
    layout = CliRunner().invoke(app, ["tune", "64,64,64", "--layout", "XY"])
    assert layout.exit_code == 2 and "--layout is one of" in layout.output
    fp8 = CliRunner().invoke(app, ["tune", "256,256,256", "--dtype", "e4m3", "--out-dtype", "bf16"])
    assert fp8.exit_code == 2 and "AGENT_TUNE" in fp8.output


@pytest.mark.gpu
def test_a_tuned_configuration_is_measured_recorded_and_served(cache: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.agent.tune import tune_gemm

    problem = mm.GemmProblem(768, 768, 3072)
    got = tune_gemm(problem, budget=3, rounds=5, verify=False)  # the verification is the library's, tested on the CPU
    assert got.heuristic == mm.choose(problem).label and got.heuristic in got.timed
    assert got.ms == min(got.timed.values()) and got.speedup >= 1.0
    assert len(got.timed) + len(got.skipped) == 3
    entry = json.loads((cache / "gemm.json").read_text())[got.gpu][gemm_tuning.key(problem)]
    assert entry["heuristic"] == got.heuristic and entry["verified"] is False
    a = torch.randn(768, 3072, device="cuda").to(torch.bfloat16)
    b = torch.randn(768, 3072, device="cuda").to(torch.bfloat16).t()
    c, launches = mm.prepare(a, b)
    assert mm.tuned_config(problem, a.device).label == got.config
    for launch in launches:
        launch.launch()
    ref = a.float() @ b.float()
    assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2
