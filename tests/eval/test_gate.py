"""The gate, stage by stage, on library kernels and on small candidates: what each stage reports, where the gate
stops, and how it degrades when the code generator, the runtime or the verifier is missing."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from argus.eval import gate as gate_module_
from argus.eval.candidates import KernelCandidate, ModuleCandidate, library_candidate
from argus.eval.gate import GateOptions, RotatingInputs, gate_kernel, gate_module, reference_outputs
from argus.eval.results import GateResult, Status
from argus.eval.timing import CpuClock, measure
from argus.eval.tolerance import tolerance_for
from argus.tasks.base import ModuleTask
from argus.tasks.builtin import get_task, task_of_kernel

NO_VERIFY = GateOptions(verify=False)

#: Small sizes (not multiples of the tiles) at which every library kernel runs on the interpreter quickly.
SMALL = {
    "vector_add": {"N": 1000},
    "softmax": {"M": 5, "N": 70},
    "layer_norm": {"M": 5, "N": 70},
    "gemm_mma_sync": {"M": 40, "N": 24, "K": 40},
    "gemm_cp_async": {"M": 40, "N": 24, "K": 40},
    "gemm_persistent": {"M": 40, "N": 24, "K": 40},
    "gemm_warp_specialized": {"M": 64, "N": 64, "K": 64},
    "flash_attention_fwd": {"BH": 1, "S": 40},
}


def test_vector_add_passes_every_stage_and_says_timing_was_skipped() -> None:
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), SMALL["vector_add"])
    stages = {s.stage: s for s in result.stages}
    assert list(stages) == ["static", "compile", "verify", "correct", "profile"]
    assert stages["static"].status == Status.PASSED
    assert stages["compile"].status == Status.PASSED  # NVRTC for sm_90a, no GPU needed
    assert stages["verify"].status == Status.PASSED
    assert stages["correct"].status == Status.PASSED and stages["correct"].details["trials_passed"] >= 5
    assert stages["profile"].status == Status.SKIPPED and stages["profile"].code == "PROFILE_NO_GPU"
    assert result.accepted and result.trusted
    assert "timing skipped" in result.summary()
    again = GateResult.from_json(result.to_json())
    assert again.to_json() == result.to_json()


@pytest.mark.parametrize("kernel", list(SMALL))
def test_every_library_kernel_is_correct_on_the_interpreter(kernel: str) -> None:
    result = gate_kernel(task_of_kernel(kernel), library_candidate(kernel), SMALL[kernel], NO_VERIFY)
    correct = result.stage("correct")
    assert correct is not None and correct.status == Status.PASSED, result.summary()
    assert correct.details["device"] == "cpu"
    compiled = result.stage("compile")
    assert compiled.status == Status.PASSED or compiled.code in ("COMPILE_UNSUPPORTED", "COMPILE_UNAVAILABLE")


def test_poisoned_outputs_catch_a_kernel_that_skips_elements() -> None:
    def half_written(x: torch.Tensor, y: torch.Tensor) -> None:  # the kernel-call convention: outputs in place
        rows = x.shape[0] // 2
        e = (x[:rows] - x[:rows].amax(dim=1, keepdim=True)).exp()  # (torch.softmax is forbidden on this task)
        y[:rows] = e / e.sum(dim=1, keepdim=True)

    result = gate_kernel(get_task("softmax"), KernelCandidate("half", half_written, source=""), {"M": 6, "N": 50})
    correct = result.stage("correct")
    assert correct.status == Status.FAILED and correct.code == "CORRECT_NONFINITE"
    assert correct.details["comparison"]["index"][0] >= 3


def test_static_stage_rejects_library_fallback_before_anything_runs() -> None:
    source = "import torch\ndef k(A, B, C):\n    C.copy_(torch.matmul(A, B))\n"
    ran = []

    def k(a: Any, b: Any, c: Any) -> None:
        ran.append(1)

    result = gate_kernel(get_task("gemm"), KernelCandidate("fallback", k, source=source), {"M": 8, "N": 8, "K": 8})
    assert [s.stage for s in result.stages] == ["static"]
    assert result.failed_stage.code == "STATIC_FORBIDDEN_CALL" and "line 3" in result.failed_stage.reason
    assert ran == []


def test_static_stage_rejects_tf32_toggle_on_an_fp32_task() -> None:
    source = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n"
    result = gate_kernel(
        get_task("softmax"), KernelCandidate("tf32", lambda x, y: None, source=source), {"M": 4, "N": 8}
    )
    assert result.failed_stage.code == "STATIC_PRECISION_TOGGLE"


def test_kernel_for_another_task_fails_its_signature() -> None:
    result = gate_kernel(get_task("vector_add"), library_candidate("softmax"), {"N": 64})
    assert result.failed_stage.stage == "compile" and result.failed_stage.code == "COMPILE_SIGNATURE"


def test_missing_code_generator_and_verifier_degrade_with_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_codegen(candidate: Any) -> Any:
        raise ImportError("No module named 'argus.backend.cuda.codegen'")

    def no_verifier(candidate: Any) -> Any:
        raise ImportError("No module named 'argus.verify'")

    monkeypatch.setattr(gate_module_, "_compile", no_codegen)
    monkeypatch.setattr(gate_module_, "_verify", no_verifier)
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), {"N": 500})
    assert result.stage("compile").status == Status.SKIPPED and result.stage("compile").code == "COMPILE_UNAVAILABLE"
    assert result.stage("verify").status == Status.SKIPPED and result.stage("verify").code == "VERIFY_UNAVAILABLE"
    assert result.accepted  # correctness still ran, on the interpreter


def test_unsupported_construct_is_skipped_not_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    from argus.backend.cuda.codegen import CodegenError

    def unsupported(candidate: Any) -> Any:
        raise CodegenError("CODEGEN_UNSUPPORTED", "mbarrier array bar: not supported by the CUDA code generator yet")

    monkeypatch.setattr(gate_module_, "_compile", unsupported)
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), {"N": 500}, NO_VERIFY)
    assert result.stage("compile").code == "COMPILE_UNSUPPORTED" and "mbarrier" in result.stage("compile").reason
    assert result.accepted


def test_on_a_gpu_a_kernel_the_generator_cannot_compile_is_checked_at_the_cpu_sizes() -> None:
    """On a GPU (device forced here), a DSL kernel the code generator refuses runs on the interpreter: at the task's
    CPU sizes, never at the GPU's benchmark sizes (a 4096^3 GEMM on the interpreter ran past every time limit of
    the agent's GPU run). The real case: the program-order TMA GEMM with 32-wide K tiles, whose 64-byte rows match
    no canonical 128-byte-swizzled wgmma layout."""
    from argus.kernels import get_kernel

    candidate = KernelCandidate("bk32", get_kernel("gemm_tma_wgmma").kernel, {"BM": 128, "BN": 128, "BK": 32})
    task = get_task("gemm_nt")
    result = gate_kernel(task, candidate, {"M": 4096, "N": 4096, "K": 4096}, GateOptions(device="cuda", verify=False))
    assert result.stage("compile").code == "COMPILE_UNSUPPORTED"
    correct = result.stage("correct")
    assert correct.status == Status.PASSED and correct.details["device"] == "cpu"
    assert f"at the task's CPU sizes {dict(task.small_sizes)}" in correct.details["note"]
    assert result.stage("profile").code == "PROFILE_NOT_COMPILED"


def test_on_a_gpu_the_gate_runs_at_the_options_profile_sizes() -> None:
    """With no sizes given, a GPU gate runs at `GateOptions.cost_sizes` (the agent loop and the lineage walk set
    it once, so that every candidate is timed at one size across tasks), not at the task's own benchmark size."""
    from argus.kernels import get_kernel

    candidate = KernelCandidate("bk32", get_kernel("gemm_tma_wgmma").kernel, {"BM": 128, "BN": 128, "BK": 32})
    profile = {"M": 2048, "N": 1024, "K": 512}
    result = gate_kernel(get_task("gemm_nt"), candidate, options=GateOptions(device="cuda", verify=False,
                                                                             cost_sizes=profile))  # fmt: skip
    assert result.sizes == profile


def test_verifier_violation_rejects_and_its_crash_is_a_harness_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Finding:
        def render_text(self) -> str:
            return "error[RACE_WRITE_WRITE]: possible write-write race on sA[4092]\n  thread 5 ..."

    class Violated:
        verdict = "violated"
        errors = [Finding()]

        def to_json(self) -> dict[str, Any]:
            return {"verdict": "violated"}

    monkeypatch.setattr(gate_module_, "_verify", lambda candidate: Violated())
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), {"N": 500})
    assert result.failed_stage.code == "VERIFY_VIOLATED" and "sA[4092]" in result.failed_stage.reason
    assert result.stage("correct") is None  # the gate stops at the first failure

    def crashes(candidate: Any) -> Any:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(gate_module_, "_verify", crashes)
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), {"N": 500})
    assert result.stage("verify").status == Status.ERROR and "solver exploded" in result.stage("verify").reason
    assert result.stage("correct").status == Status.PASSED


# ---- PyTorch module candidates ---------------------------------------------------------------------------------


class Affine(torch.nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


class Adder(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def affine_task() -> ModuleTask:
    return ModuleTask("affine", Affine, lambda: [torch.rand(4, 16)], lambda: [16])


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_module_identity_is_accepted() -> None:
    result = gate_module(affine_task(), ModuleCandidate("identity", module_class=Affine))
    assert result.accepted, result.summary()
    assert result.stage("verify").code == "VERIFY_NOT_APPLICABLE"


def test_module_calling_an_argus_kernel_is_verified_and_interpreted(tmp_path: Path) -> None:
    task = ModuleTask("add", Adder, lambda: [torch.rand(1000), torch.rand(1000)], lambda: [])
    path = _write(
        tmp_path,
        "argus_solution.py",
        """
        import torch
        from argus.kernels.elementwise import vector_add

        class ModelNew(torch.nn.Module):
            def forward(self, a, b):
                c = torch.empty_like(a)
                vector_add(a, b, c, device="cpu")  # the interpreter; on a GPU, the compiled kernel
                return c
        """,
    )
    result = gate_module(task, ModuleCandidate("argus", path=path))
    assert result.accepted, result.summary()
    verify = result.stage("verify")
    assert verify.status == Status.PASSED and "vector_add" in verify.reason


def test_module_candidate_file_failures(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.py", "raise RuntimeError('no such extension')\n")
    result = gate_module(affine_task(), ModuleCandidate("broken", path=broken))
    assert result.failed_stage.code == "COMPILE_IMPORT" and "no such extension" in result.failed_stage.reason
    empty = _write(tmp_path, "empty.py", "import torch\n")
    assert gate_module(affine_task(), ModuleCandidate("empty", path=empty)).failed_stage.code == "COMPILE_MISSING"


def test_module_that_toggles_tf32_when_constructed_is_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "sneaky.py",
        """
        import torch

        class ModelNew(torch.nn.Module):
            def __init__(self, features):
                super().__init__()
                setattr(torch.backends.cuda.matmul, "allow_" + "tf32", True)  # hidden from the static scan
                self.linear = torch.nn.Linear(features, features)

            def forward(self, x):
                return torch.relu(self.linear(x))
        """,
    )
    result = gate_module(affine_task(), ModuleCandidate("sneaky", path=path))
    assert result.failed_stage.stage == "compile" and result.failed_stage.code == "CORRECT_PRECISION_FLAGS"
    assert torch.backends.cuda.matmul.allow_tf32 is False


def test_module_with_other_weights_is_rejected(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "other.py",
        """
        import torch

        class ModelNew(torch.nn.Module):
            def __init__(self, features):
                super().__init__()
                torch.manual_seed(1234)  # not the reference's weights
                self.linear = torch.nn.Linear(features, features)

            def forward(self, x):
                return torch.relu(self.linear(x))
        """,
    )
    assert gate_module(affine_task(), ModuleCandidate("other", path=path)).failed_stage.code == "CORRECT_MISMATCH"


# ---- timing on changing inputs (the profile stage's defence, exercised with a host clock) -----------------------


def _rotating(outputs: list[torch.Tensor] | None = None) -> RotatingInputs:
    pool = [[torch.randn(4, 8, generator=torch.Generator().manual_seed(s))] for s in (1, 2)]
    expected = [[torch.softmax(p[0].double(), dim=1)] for p in pool]
    return RotatingInputs(pool, expected, tolerance_for(torch.float32), outputs)


def test_rotating_inputs_catch_a_result_cached_by_address() -> None:
    cache: dict[int, torch.Tensor] = {}

    def by_address(x: torch.Tensor) -> torch.Tensor:
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = torch.softmax(x, dim=1)
        return cache[x.data_ptr()]

    for reps in (4, 5):  # whichever draw the timing ends on
        cache.clear()
        rot = _rotating()

        def call(rot: RotatingInputs = rot) -> None:
            rot.record(by_address(*rot.buffers))

        measure(call, CpuClock(), reps=reps, warmup=1, before_rep=rot.before_rep)
        assert rot.check_after(call) is not None
    honest = _rotating()

    def honest_call() -> None:
        honest.record(torch.softmax(honest.buffers[0], 1))

    measure(honest_call, CpuClock(), reps=5, before_rep=honest.before_rep)
    assert honest.check_after(honest_call) is None


def test_rotating_inputs_catch_a_kernel_that_stops_writing_when_timed() -> None:
    out = torch.empty(4, 8)
    calls = []

    def lazy_kernel(x: torch.Tensor, y: torch.Tensor) -> None:
        calls.append(1)
        if len(calls) <= 2:  # right while correctness is checked, idle afterwards
            y.copy_(torch.softmax(x, dim=1))

    rot = _rotating([out])
    measure(lambda: lazy_kernel(rot.buffers[0], out), CpuClock(), reps=4, warmup=1, before_rep=rot.before_rep)
    reason = rot.check_after(lambda: lazy_kernel(rot.buffers[0], out))
    assert reason is not None and "NaN" in reason


def test_graph_replay_static_output_is_poisoned_and_checked() -> None:
    rot = _rotating()
    static = rot.record(torch.softmax(rot.buffers[0], 1))  # what a capture returns: the graph's static output

    def replay() -> None:  # an honest replay rewrites the static output from the (refreshed) input buffer
        static.copy_(torch.softmax(rot.buffers[0], 1))

    measure(replay, CpuClock(), reps=3, warmup=1, before_rep=rot.before_rep)
    assert rot.check() is None
    lazy = _rotating()
    lazy.record(torch.softmax(lazy.buffers[0], 1))
    measure(lambda: None, CpuClock(), reps=3, warmup=1, before_rep=lazy.before_rep)  # replays that do nothing
    reason = lazy.check()
    assert reason is not None and "NaN" in reason


def test_rotating_inputs_use_the_noise_floor_for_outputs_dominated_by_rounding() -> None:
    def centered_mean(x: torch.Tensor) -> torch.Tensor:  # mathematically zero; in float32, rounding noise
        c = x - x.mean(dim=1, keepdim=True)
        return (c / c.std(dim=1, keepdim=True)).mean(dim=1)

    pool = [[torch.rand(4, 4096, generator=torch.Generator().manual_seed(s))] for s in (1, 2)]
    tol = tolerance_for(torch.float32)
    expected, noise = reference_outputs(lambda x: centered_mean(*x), lambda x: centered_mean(*x), pool, tol)
    assert all(z is not None for draw in noise for z in draw)

    def honest_call(rot: RotatingInputs) -> None:
        rot.record(centered_mean(rot.buffers[0].flip(1)))  # another summation order: other rounding noise

    with_floor = RotatingInputs(pool, expected, tol, noise=noise)
    measure(lambda: honest_call(with_floor), CpuClock(), reps=3, before_rep=with_floor.before_rep)
    assert with_floor.check_after(lambda: honest_call(with_floor)) is None
    without = RotatingInputs(pool, expected, tol)
    measure(lambda: honest_call(without), CpuClock(), reps=3, before_rep=without.before_rep)
    assert without.check() is not None


def test_timed_calls_of_a_random_task_see_the_reference_s_random_draws() -> None:
    def dropout(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, p=0.5, training=True)

    pool = [[torch.randn(4, 64, generator=torch.Generator().manual_seed(s))] for s in (1, 2)]
    tol = tolerance_for(torch.float32)
    seeds = [11, 12]
    expected, noise = reference_outputs(lambda x: dropout(*x), lambda x: dropout(*x), pool, tol, seeds)
    rot = RotatingInputs(pool, expected, tol, noise=noise, seeds=seeds)

    def call() -> None:
        rot.record(dropout(rot.buffers[0]))

    measure(call, CpuClock(), reps=3, before_rep=rot.before_rep)
    assert rot.check_after(call) is None
    unseeded = RotatingInputs(pool, expected, tol, noise=noise)
    measure(lambda: unseeded.record(dropout(unseeded.buffers[0])), CpuClock(), reps=3, before_rep=unseeded.before_rep)
    assert unseeded.check() is not None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
def test_gpu_profile_reports_timing_ceilings_and_baselines() -> None:
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), {"N": 1 << 22})
    profile = result.stage("profile")
    assert profile.status == Status.PASSED, result.summary()
    d = profile.details
    assert d["timing"]["median_ms"] > 0 and d["timing"]["l2_flush"]
    assert d["ceilings"]["copy_gbps"] > 100
    assert "eager" in d["speedup"]
    assert d["telemetry"]["before"].get("source") in ("pynvml", "nvidia-smi", None)
    # the baselines were timed interleaved with the kernel, in this process
    assert d["timing_method"] == "interleaved" and d["interleaved"]["rounds"] == d["timing"]["reps"] == 100
    assert d["interleaved"]["contenders"][0] == "candidate" and "eager" in d["interleaved"]["ratios"]
    assert d["speedup"]["eager"] == pytest.approx(d["interleaved"]["ratios"]["eager"]["ratio_of_medians"])
    sequential = gate_kernel(
        get_task("vector_add"), library_candidate("vector_add"), {"N": 1 << 22}, GateOptions(timing="sequential")
    ).stage("profile")
    assert sequential.details["timing_method"] == "sequential" and sequential.details["interleaved"] is None
    assert "eager" in sequential.details["speedup"]


class _Chain(torch.nn.Module):
    """Four fp32 matrix products with tanh: enough work to time."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n, n) / n**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = torch.tanh(x @ self.w)
        return x


class _ChainOnSideStream(_Chain):
    """The same work, launched on a stream of its own: the timing events on the current stream see none of it."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.stream = torch.cuda.Stream()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            return super().forward(x)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
def test_gpu_side_stream_work_is_flagged() -> None:
    task = ModuleTask("chain", _Chain, lambda: [torch.rand(2048, 2048)], lambda: [2048])
    options = GateOptions(baselines=("eager",), reps=30)
    honest = gate_module(task, ModuleCandidate("honest", module_class=_Chain), options)
    assert honest.accepted and honest.trusted, honest.summary()
    sneaky = gate_module(task, ModuleCandidate("side-stream", module_class=_ChainOnSideStream), options)
    assert sneaky.accepted  # the answer is right: the harness synchronizes the device before reading it
    assert "FLAG_UNSYNCED_WORK" in [f.code for f in sneaky.flags] and not sneaky.trusted, sneaky.summary()


def test_gate_options_travel_to_workers_as_plain_data() -> None:
    import json

    from argus.eval.flags import Thresholds

    options = GateOptions(trials=7, baselines=("eager",), thresholds=Thresholds(max_speedup=3.0), forbidden=("x.*",))
    data = json.loads(json.dumps(options.to_dict()))
    assert GateOptions.from_dict(data) == options
