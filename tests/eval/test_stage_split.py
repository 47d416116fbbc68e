"""The stage split (docs/scale-out.md, "The stage split"): a gate's CPU half (static, compile, verify on a worker
that sees no GPU) and its GPU half (the whole gate on one GPU's worker, reusing the CPU half's verification of the
same program), and the worker pool that routes each half to its kind of worker."""

from __future__ import annotations

import dataclasses

from argus.eval import gate as gate_module
from argus.eval.candidates import library_candidate
from argus.eval.executor import LocalExecutor
from argus.eval.gate import GateOptions, gate_kernel, kernel_fingerprint
from argus.eval.isolation import Job, WorkerPool
from argus.eval.results import Status
from argus.tasks.builtin import get_task

SIZES = {"N": 1000}


def test_stop_after_verify_ends_the_gate_after_verification_with_the_program_s_fingerprint() -> None:
    result = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), SIZES,
                         options=GateOptions(stop_after="verify"))  # fmt: skip
    assert [s.stage for s in result.stages] == ["static", "compile", "verify"]
    verify = result.stages[-1]
    assert verify.status == Status.PASSED
    assert verify.details["fingerprint"] == kernel_fingerprint(library_candidate("vector_add"))


def test_a_prepared_verification_is_reused_only_for_the_same_program(monkeypatch) -> None:
    first = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), SIZES,
                        options=GateOptions(stop_after="verify"))  # fmt: skip
    prepared = first.stages[-1].to_json()
    calls: list[str] = []
    real = gate_module._verify

    def counted(candidate):  # noqa: ANN001, ANN202
        calls.append(candidate.name)
        return real(candidate)

    monkeypatch.setattr(gate_module, "_verify", counted)
    reused = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), SIZES,
                         options=GateOptions(prepared_verify=prepared))  # fmt: skip
    stages = {s.stage: s for s in reused.stages}
    assert calls == [] and "reused" in stages["verify"].details and reused.accepted
    # a verification of another program (its fingerprint differs) is ignored: the verifier runs
    forged = dataclasses.replace(first.stages[-1], details={**prepared["details"], "fingerprint": "0" * 64})
    again = gate_kernel(get_task("vector_add"), library_candidate("vector_add"), SIZES,
                        options=GateOptions(prepared_verify=forged.to_json()))  # fmt: skip
    assert len(calls) == 1 and "reused" not in {s.stage: s for s in again.stages}["verify"].details
    # the options travel to a worker as plain data and back
    options = GateOptions(stop_after="verify", prepared_verify=prepared)
    assert GateOptions.from_dict(options.to_dict()) == options


def test_the_fingerprint_tells_programs_apart() -> None:
    a = library_candidate("gemm_mma_sync")
    bn = a.params.get("BN", a.kernel.defaults["BN"])
    same = dataclasses.replace(a, params={**a.params, "BN": bn})  # the default spelled out: the same program
    other = dataclasses.replace(a, params={**a.params, "BN": 128 if bn == 64 else 64})
    assert kernel_fingerprint(a) is not None and kernel_fingerprint(a) == kernel_fingerprint(same)
    assert kernel_fingerprint(a) != kernel_fingerprint(other)


def test_the_fingerprint_covers_the_launch_bounds() -> None:
    """Two programs that differ only in their resident blocks per SM (an IR rewrite, no parameter changed) verify
    differently (the registers every thread gets at entry), so their fingerprints differ: the printed IR names the
    blocks per SM. (A walk once reused one's verification for the other.)"""
    from argus.eval.candidates import KernelCandidate
    from argus.ir.printer import format_kernel
    from argus.kernels.attention_lineage import attention_warp_specialized
    from argus.lineage.variants import DerivedKernel, with_blocks_per_sm

    two = DerivedKernel(attention_warp_specialized, with_blocks_per_sm(2), "blocks_per_sm_2")
    base, rewritten = KernelCandidate("a", attention_warp_specialized, {}), KernelCandidate("b", two, {})
    assert kernel_fingerprint(base) != kernel_fingerprint(rewritten)
    assert "threads 256 as tid, 3 blocks per SM" in format_kernel(attention_warp_specialized.trace())
    assert "threads 256 as tid, 2 blocks per SM" in format_kernel(two.trace())


def test_the_pool_runs_cpu_jobs_on_its_cpu_workers_and_gpu_jobs_on_its_gpu_workers() -> None:
    jobs = [Job(f"cpu{i}", "os:getenv", {"key": "CUDA_VISIBLE_DEVICES"}, "cpu") for i in range(4)]
    jobs += [Job(f"gpu{i}", "os:getenv", {"key": "CUDA_VISIBLE_DEVICES"}, "gpu") for i in range(3)]
    with WorkerPool(devices=[0], cpu_workers=2, timeout_s=60.0, preload=()) as pool:
        seen = {o.key: o.value for o in pool.run(jobs)}
    assert all(seen[f"cpu{i}"] == "" for i in range(4)), seen  # a CPU worker sees no GPU
    assert all(seen[f"gpu{i}"] == "0" for i in range(3)), seen
    # without CPU workers a CPU job runs on any worker, as before
    with WorkerPool(devices=[0], timeout_s=60.0, preload=()) as pool:
        assert next(pool.run([Job("c", "os:getenv", {"key": "CUDA_VISIBLE_DEVICES"}, "cpu")])).value == "0"


def test_the_local_executor_says_how_many_cpu_workers_it_has_and_where_a_job_ran() -> None:
    from argus.eval.executor import GateJob, Resource

    with LocalExecutor(devices=[0], cpu_workers=1, timeout_s=60.0, preload=()) as executor:
        assert executor.cpu_workers() == 1 and executor.describe()["cpu_workers"] == 1
        results = list(executor.run([GateJob("c", "os:getenv", {"key": "CUDA_VISIBLE_DEVICES"}, Resource.CPU)]))
        assert results[0].worker is not None and results[0].worker.gpu is None
        assert executor.place(1).endswith("/cpu 0")
    with LocalExecutor(devices=[0], timeout_s=60.0, preload=()) as executor:
        assert executor.cpu_workers() == 0


def test_a_job_with_an_unknown_resource_is_refused() -> None:
    import pytest

    with WorkerPool(workers=1, timeout_s=10.0, preload=()) as pool, pytest.raises(ValueError, match="resource"):
        pool.submit(Job("x", "os:getcwd", {}, "tpu"))
