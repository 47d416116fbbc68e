"""The ``correct`` stage against reward hacks: each test is a cheating candidate that the stage must reject (and,
where it helps, a demonstration that the hack works against a naive harness), plus the honest candidate that
must pass."""

from __future__ import annotations

import dataclasses
import gc

import pytest
import torch

from argus.eval.correctness import Reference, check_correctness, task_reference
from argus.eval.guards import PrecisionState
from argus.eval.results import Status
from argus.tasks.builtin import get_task

SIZES = {"M": 8, "N": 300}


def softmax_reference(sizes: dict[str, int] = SIZES) -> Reference:
    # the task forbids aten::_softmax to kernels; these candidates are allowed PyTorch, except where a test says
    return dataclasses.replace(task_reference(get_task("softmax"), sizes), forbidden_ops=())


def honest(inputs: list[torch.Tensor]) -> torch.Tensor:
    return torch.softmax(inputs[0], dim=1)


def test_honest_candidate_passes_on_every_distribution() -> None:
    result = check_correctness(softmax_reference(), honest)
    assert result.status == Status.PASSED, result.reason
    assert result.details["trials_passed"] == 6
    kinds = {t["distribution"] for t in result.details["trials"]}
    assert kinds == {"native", "normal", "uniform", "large", "small", "outliers"}
    assert result.details["max_rel_norm"] < 1e-5


class Caching:
    """Computes once, then returns the same answer: caching across calls."""

    def __init__(self) -> None:
        self.cache: dict[tuple[int, ...], torch.Tensor] = {}

    def __call__(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        key = tuple(x.shape)
        if key not in self.cache:
            self.cache[key] = torch.softmax(x, dim=1)
        return self.cache[key].clone()


def test_result_caching_across_calls_is_caught() -> None:
    result = check_correctness(softmax_reference(), Caching())
    assert result.status == Status.FAILED and result.code == "CORRECT_MISMATCH"
    assert result.details["trial"] == 1  # the first call is right; the second sees fresh inputs
    again = check_correctness(softmax_reference(), Caching())
    assert again.details["seed"] == result.details["seed"]  # reproducible


def test_writing_into_inputs_is_caught() -> None:
    def in_place(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        x.copy_(torch.softmax(x, dim=1))
        return x

    result = check_correctness(softmax_reference(), in_place)
    assert result.status == Status.FAILED and result.code == "CORRECT_INPUT_MODIFIED"
    assert result.details["inputs_modified"] == [0]


def scavenger(inputs: list[torch.Tensor]) -> torch.Tensor:
    """Computes nothing: looks through the heap for a tensor that looks like the answer (rows summing to one)."""
    x = inputs[0]
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj.is_floating_point() and obj is not x:
            rows = obj.double().sum(dim=1)
            if bool(torch.isfinite(rows).all()) and torch.allclose(rows, torch.ones_like(rows)):
                return obj.to(torch.float32).clone()
    return torch.zeros_like(x)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # gc.get_objects() meets deprecated torch objects
def test_reusing_the_reference_s_memory_is_caught() -> None:
    # against a naive harness (reference first, kept alive, then the candidate) the scavenger passes
    x = torch.rand(8, 300)
    ref = torch.softmax(x.double(), dim=1)
    assert torch.allclose(scavenger([x.clone()]).double(), ref, atol=1e-6)
    del ref
    # the gate runs the candidate before the reference and poisons what earlier trials leave behind
    result = check_correctness(softmax_reference(), scavenger)
    assert result.status == Status.FAILED and result.code == "CORRECT_MISMATCH"


def test_returning_uninitialised_memory_is_caught() -> None:
    def half_done(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        out = torch.empty_like(x)  # whatever the allocator hands out: scrubbed to NaN, or fresh pages
        out[: x.shape[0] // 2] = torch.softmax(x[: x.shape[0] // 2], dim=1)
        return out

    result = check_correctness(softmax_reference(), half_done)
    assert result.status == Status.FAILED and result.code in ("CORRECT_NONFINITE", "CORRECT_MISMATCH")


def test_all_zero_softmax_output_is_caught() -> None:
    result = check_correctness(softmax_reference({"M": 2, "N": 65536}), lambda inputs: torch.zeros_like(inputs[0]))
    assert result.status == Status.FAILED and result.code == "CORRECT_MISMATCH"
    assert result.details["trial"] == 0


def test_passing_only_by_tolerance_is_caught() -> None:
    # wrong by 0.5 %: within a bf16 tolerance, not within fp32's
    def sloppy(inputs: list[torch.Tensor]) -> torch.Tensor:
        return torch.softmax(inputs[0], dim=1) * 1.005

    result = check_correctness(softmax_reference(), sloppy)
    assert result.status == Status.FAILED and result.code == "CORRECT_MISMATCH"


def test_tf32_toggle_at_run_time_is_caught_and_undone() -> None:
    def toggles(inputs: list[torch.Tensor]) -> torch.Tensor:
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.softmax(inputs[0], dim=1)

    before = PrecisionState.capture()
    result = check_correctness(softmax_reference(), toggles)
    assert result.status == Status.FAILED and result.code == "CORRECT_PRECISION_FLAGS"
    assert "cuda.matmul.allow_tf32" in result.details["changed"]
    assert before.diff(PrecisionState.capture()) == {}  # the harness put the switch back


def test_cpu_matmul_precision_downgrade_is_caught() -> None:
    # on the CPU, oneDNN can run fp32 matmuls in bf16: a real precision downgrade on this machine
    gemm = get_task("gemm")

    def downgraded(inputs: list[torch.Tensor]) -> torch.Tensor:
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        a, b = inputs
        return torch.matmul(a.float(), b.float())

    ref = dataclasses.replace(task_reference(gemm, {"M": 16, "N": 16, "K": 16}), forbidden_ops=())
    result = check_correctness(ref, downgraded)
    assert result.status == Status.FAILED and result.code == "CORRECT_PRECISION_FLAGS"
    assert torch.backends.mkldnn.matmul.fp32_precision == "none"


def test_library_fallback_through_an_obfuscated_name_is_caught_at_run_time() -> None:
    gemm = get_task("gemm")

    def fallback(inputs: list[torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        return getattr(torch, "mat" + "mul")(a.float(), b.float())

    result = check_correctness(task_reference(gemm, {"M": 16, "N": 16, "K": 16}), fallback)
    assert result.status == Status.FAILED and result.code == "CORRECT_FORBIDDEN_OP"
    assert "aten::mm" in result.details["operators"]


def test_exception_and_wrong_dtype() -> None:
    def raises(inputs: list[torch.Tensor]) -> torch.Tensor:
        raise ValueError("kernel exploded")

    result = check_correctness(softmax_reference(), raises)
    assert result.code == "CORRECT_EXCEPTION" and "kernel exploded" in result.reason
    assert "raises" in result.details["traceback"]
    wrong = check_correctness(softmax_reference(), lambda inputs: torch.softmax(inputs[0].double(), dim=1))
    assert wrong.code == "CORRECT_DTYPE"


def _naive_softmax(inputs: list[torch.Tensor]) -> torch.Tensor:
    e = torch.exp(inputs[0])
    return e / e.sum(dim=1, keepdim=True)


def test_distributions_outside_the_task_s_domain_are_discarded_and_replaced() -> None:
    # a reference that overflows on large inputs even in float64: those trials say nothing about a candidate
    ref = Reference(
        "naive_softmax",
        sample=lambda seed: [torch.randn(4, 32, generator=torch.Generator().manual_seed(seed))],
        run_high=_naive_softmax,
        run_native=_naive_softmax,
    )
    result = check_correctness(ref, honest)
    assert result.status == Status.PASSED, result.reason
    assert result.details["trials_passed"] == 6
    rejected = result.details["rejected_distributions"]
    assert [r["distribution"] for r in rejected] == ["large"]
    assert "not finite" in rejected[0]["why"]


def test_inputs_may_change_only_as_the_reference_changes_them() -> None:
    def reference_fn(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        x.mul_(2)  # the task itself writes into its input
        return x + 1

    ref = Reference(
        "in_place_task",
        sample=lambda seed: [torch.randn(16, generator=torch.Generator().manual_seed(seed))],
        run_high=reference_fn,
        run_native=reference_fn,
    )
    assert check_correctness(ref, reference_fn).status == Status.PASSED

    def different(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        out = x * 2 + 1
        x.zero_()
        return out

    failed = check_correctness(ref, different)
    assert failed.code == "CORRECT_INPUT_MODIFIED"


def test_a_float64_reference_that_computes_something_else_defers_to_the_task_s_precision() -> None:
    # e.g. random draws (dropout) that differ by dtype: KernelBench compares with the reference in its precision
    def dtype_dependent(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        return x * (2.0 if x.dtype == torch.float64 else 3.0)

    ref = Reference(
        "dtype_dependent",
        sample=lambda seed: [torch.randn(64, generator=torch.Generator().manual_seed(seed))],
        run_high=dtype_dependent,
        run_native=dtype_dependent,
    )
    result = check_correctness(ref, lambda inputs: inputs[0] * 3.0)
    assert result.status == Status.PASSED, result.reason
    assert {t["reference"] for t in result.details["trials"]} == {"native"}
    assert check_correctness(ref, lambda inputs: inputs[0] * 2.0).code == "CORRECT_MISMATCH"


def test_a_reference_that_only_rounds_worse_accepts_a_more_precise_candidate() -> None:
    """The task's reference in its own precision misses the elementwise tolerance on a few elements (rounding that
    compounds: a bf16 SwiGLU rounds at every step) while its error norm is within it: a candidate matching float64
    passes, one rounding as the reference does passes, a wrong one fails. Before, the gate judged against the
    native run only and rejected the precise candidate (the MoE SwiGLU kernel, docs/moe.md)."""

    def rounds_badly(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        if x.dtype == torch.float64:
            return x * 3.0
        bump = (torch.arange(x.numel()) % 97 == 0).to(x.dtype).reshape(x.shape)
        return x * 3.0 * (1.0 + 0.03 * bump)  # 3 % off on one element in 97

    ref = Reference(
        "rounds_badly",
        sample=lambda seed: [torch.randn(1024, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)],
        run_high=rounds_badly,
        run_native=rounds_badly,
    )
    precise = check_correctness(ref, lambda inputs: (inputs[0].double() * 3.0).to(torch.bfloat16))
    assert precise.status == Status.PASSED, precise.reason
    assert "float64 or native" in {t["reference"] for t in precise.details["trials"]}
    assert check_correctness(ref, lambda inputs: rounds_badly(inputs)).status == Status.PASSED
    wrong = check_correctness(ref, lambda inputs: inputs[0] * 3.1)
    assert wrong.code == "CORRECT_MISMATCH"


def test_a_redrawn_trial_the_task_meets_only_by_chance_is_discarded_not_failed() -> None:
    """An output so ill-conditioned at a redrawn distribution that the task's own precision meets float64 only by
    chance (a float16 KL divergence of nearly equal distributions on `small` inputs: its eager result is off by
    several times the bound on most draws and inside it on some; argus solve's kernels for it were rejected on such
    a draw). Here the task's float16 run is exact on the first small inputs it sees and off by the inputs' rms
    (many times the bound) on any other: a candidate off by 0.3 of it on small inputs used to fail that trial; now
    the judge first runs both references on inputs nudged by two units in the last place
    (`correctness.rounding_luck`), sees the task miss its own tolerance there, and discards the trial. A candidate
    off on every input still fails (on native inputs)."""
    seen: list[torch.Tensor] = []

    def small(x: torch.Tensor) -> bool:
        return float(x.double().pow(2).mean().sqrt()) < 0.1

    def high(inputs: list[torch.Tensor]) -> torch.Tensor:
        return inputs[0].double().sum(0)

    def native(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        exact = x.double().sum(0)
        if small(x) and (not seen or any(torch.equal(x, s) for s in seen[:1])):
            seen.append(x.clone())
            return exact.to(x.dtype)
        return (exact + (1.0 * float(x.double().pow(2).mean().sqrt()) if small(x) else 0.0)).to(x.dtype)

    ref = Reference(
        "lucky_float16",
        sample=lambda seed: [torch.randn(16, 8, generator=torch.Generator().manual_seed(seed)).half()],
        run_high=high,
        run_native=native,
    )

    def off_when_small(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        rms = float(x.double().pow(2).mean().sqrt())
        return (x.double().sum(0) + (0.3 * rms if small(x) else 0.0)).to(x.dtype)

    result = check_correctness(ref, off_when_small, trials=6)
    assert result.status == Status.PASSED, result.reason
    lucky = [r for r in result.details["rejected_distributions"] if "nearby inputs" in r["why"]]
    assert [r["distribution"] for r in lucky] == ["small"], result.details["rejected_distributions"]
    seen.clear()

    def off_always(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        return (x.double().sum(0) + 0.5).to(x.dtype)

    assert check_correctness(ref, off_always, trials=6).code == "CORRECT_MISMATCH"


def test_random_references_are_reproduced_for_the_candidate() -> None:
    def dropout(inputs: list[torch.Tensor]) -> torch.Tensor:
        return torch.nn.functional.dropout(inputs[0], p=0.5, training=True)

    ref = Reference(
        "dropout",
        sample=lambda seed: [torch.randn(256, generator=torch.Generator().manual_seed(seed))],
        run_high=dropout,
        run_native=dropout,
    )
    assert check_correctness(ref, dropout).status == Status.PASSED  # the same seed before each run
    assert check_correctness(ref, lambda inputs: inputs[0] * 2.0).code == "CORRECT_MISMATCH"


def test_the_judge_s_copies_on_the_host_keep_every_defence() -> None:
    """With the judge's copies in host memory (as on a GPU when a trial's tensors are large), the same candidates
    get the same verdicts: honest passes, caching, writing into inputs and returning garbage are caught, and an
    input changed exactly as the reference changes it is allowed."""
    passed = check_correctness(softmax_reference(), honest, host_copies=True)
    assert passed.status == Status.PASSED and passed.details["judge_copies"] == "host"
    assert check_correctness(softmax_reference(), Caching(), host_copies=True).code == "CORRECT_MISMATCH"

    def in_place(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        x.copy_(torch.softmax(x, dim=1))
        return x

    assert check_correctness(softmax_reference(), in_place, host_copies=True).code == "CORRECT_INPUT_MODIFIED"
    zeros = check_correctness(softmax_reference(), lambda inputs: torch.zeros_like(inputs[0]), host_copies=True)
    assert zeros.code == "CORRECT_MISMATCH"

    def reference_fn(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        x.mul_(2)
        return x + 1

    ref = Reference(
        "in_place_task",
        sample=lambda seed: [torch.randn(16, generator=torch.Generator().manual_seed(seed))],
        run_high=reference_fn,
        run_native=reference_fn,
    )
    assert check_correctness(ref, reference_fn, host_copies=True).status == Status.PASSED

    def different(inputs: list[torch.Tensor]) -> torch.Tensor:
        x = inputs[0]
        out = x * 2 + 1
        x.zero_()
        return out

    assert check_correctness(ref, different, host_copies=True).code == "CORRECT_INPUT_MODIFIED"
