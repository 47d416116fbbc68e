"""Worker processes contain crashes, hangs and exceptions: each fails its own job with the reason, the worker is
replaced, and the run continues."""

from __future__ import annotations

import time

import pytest

from argus.eval.isolation import Job, WorkerPool, describe_exit

HELPERS = "tests.eval.workers"


def job(key: str, fn: str, **kwargs: object) -> Job:
    return Job(key, f"{HELPERS}:{fn}", kwargs)


def test_crash_segfault_hang_and_exception_are_contained() -> None:
    jobs = [
        job("before", "square", x=3),
        job("exit", "crash", status=3),
        job("segv", "segfault"),
        job("hang", "hang", seconds=600),
        job("raise", "fail", message="candidate blew up"),
        job("after", "square", x=4),
    ]
    start = time.monotonic()
    with WorkerPool(workers=2, timeout_s=3.0, preload=()) as pool:
        outcomes = {o.key: o for o in pool.run(jobs)}
        replaced = pool.replaced
    assert time.monotonic() - start < 60
    assert set(outcomes) == {j.key for j in jobs}
    assert outcomes["before"].ok and outcomes["before"].value == 9
    assert outcomes["after"].ok and outcomes["after"].value == 16
    assert outcomes["exit"].code == "WORKER_CRASHED" and "exited with status 3" in outcomes["exit"].reason
    assert outcomes["segv"].code == "WORKER_CRASHED" and "SIGSEGV" in outcomes["segv"].reason
    assert outcomes["hang"].code == "WORKER_TIMEOUT" and outcomes["hang"].seconds >= 3.0
    assert outcomes["raise"].code == "WORKER_EXCEPTION" and "candidate blew up" in outcomes["raise"].reason
    assert "ValueError" in outcomes["raise"].details["traceback"]
    assert replaced == 3  # the two crashes and the hang; an exception keeps its worker


def test_a_cuda_error_retires_the_worker() -> None:
    with WorkerPool(workers=1, timeout_s=30.0, preload=()) as pool:
        first = next(pool.run([job("pid1", "pid")]))
        bad = next(pool.run([job("ima", "illegal_memory_access")]))
        second = next(pool.run([job("pid2", "pid")]))
        assert pool.replaced == 1
    assert bad.code == "WORKER_EXCEPTION" and "illegal memory access" in bad.reason
    assert first.value != second.value  # a fresh process (and CUDA context) after the error


def test_workers_are_pinned_to_their_gpu() -> None:
    jobs = [Job(f"env{i}", "os:getenv", {"key": "CUDA_VISIBLE_DEVICES"}) for i in range(4)]
    with WorkerPool(devices=[0, 1], timeout_s=30.0, preload=()) as pool:
        seen = {o.value for o in pool.run(jobs)}
    assert seen <= {"0", "1"} and seen


def test_bad_target_is_an_exception_not_a_hang() -> None:
    with WorkerPool(workers=1, timeout_s=30.0, preload=()) as pool:
        (outcome,) = list(pool.run([Job("bad", "no_colon_here")]))
    assert outcome.code == "WORKER_EXCEPTION" and "module:function" in outcome.reason


@pytest.mark.parametrize(("code", "text"), [(-11, "SIGSEGV"), (-9, "SIGKILL"), (3, "status 3"), (None, "running")])
def test_exit_status_is_described(code: int | None, text: str) -> None:
    assert text in describe_exit(code)


def test_worker_gpu_is_translated_through_the_parents_visible_devices() -> None:
    from argus.eval.isolation import visible_device

    assert visible_device(1, parent="2,3") == "3"
    assert visible_device(0, parent=" 5 , 7") == "5"
    assert visible_device(1, parent="") == "1"
    with pytest.raises(ValueError, match="not among"):
        visible_device(2, parent="2,3")


def test_a_harness_exception_is_an_error_and_a_cuda_error_a_failure() -> None:
    from argus.eval.isolation import Outcome, failure_status
    from argus.eval.results import Status

    oom = Outcome("k", False, code="WORKER_EXCEPTION", reason="OutOfMemoryError: CUDA out of memory.")
    assert failure_status(oom) is Status.ERROR
    fault = Outcome("k", False, code="WORKER_EXCEPTION", reason="RuntimeError: CUDA error: an illegal memory access")
    assert failure_status(fault) is Status.FAILED
    assert failure_status(Outcome("k", False, code="WORKER_TIMEOUT", reason="hung")) is Status.FAILED
