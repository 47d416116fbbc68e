# ruff: noqa: F821  (the DSL binds shape symbols named in annotations)
"""The arrive-count check (`checks/mbarrier.py`) never records a count it did not make as verified: arrivals inside
and outside a loop with no protocol proof are *not checked* (listed, the verdict not covering them); the overlapped
attention loop's releases, proved by the lagged pipeline's protocol check, are counted."""

from dataclasses import replace

import argus
import argus.lang as T
from argus.kernels import sdpa as S
from argus.verify import verify_kernel


@argus.kernel
def arrivals_in_and_out_of_a_loop(X: T.Tensor[("N",), T.f32]):
    with T.grid(1, threads=128):
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0])
        for _ in T.serial(N):
            T.mbarrier_arrive(bar[0])


@argus.kernel
def arrivals_on_two_elements(X: T.Tensor[("N",), T.f32], SAME: bool = False):
    with T.grid(1, threads=128):
        bar = T.alloc_mbarrier(2, arrive_count=1)
        T.mbarrier_arrive(bar[0])
        T.mbarrier_arrive(bar[0] if SAME else bar[1])


@argus.kernel
def arrivals_under_a_branch(X: T.Tensor[("N",), T.f32], WAIT: str = "same"):
    """bar[1] arrived on in even blocks only (a pair's second query block, which the middle block of an odd count
    lacks); WAIT: where the block waits on it: under the same condition, always, or under another condition."""
    with T.grid(T.cdiv(N, 64), threads=128) as (bx,):
        bar = T.alloc_mbarrier(2, arrive_count=1)
        T.mbarrier_arrive(bar[0])
        with T.if_(T.eq(bx % 2, 0)):
            T.mbarrier_arrive(bar[1])
        T.mbarrier_wait(bar[0], phase=0)
        if WAIT == "always":
            T.mbarrier_wait(bar[1], phase=0)
        else:
            with T.if_(T.eq(bx % 2, 0) if WAIT == "same" else bx < 2):
                T.mbarrier_wait(bar[1], phase=0)


def _arrive_records(report):  # noqa: ANN001, ANN202
    return [c for c in report.checks if c.check == "mbarrier arrive count"]


def test_arrivals_nobody_counted_are_not_checked_not_verified() -> None:
    report = verify_kernel(arrivals_in_and_out_of_a_loop.trace())
    (record,) = _arrive_records(report)
    assert record.not_checked and record.verdict.value == "unknown", record
    assert record in report.not_checked and "not checked" in report.render_text()


def test_the_overlapped_loops_releases_are_counted() -> None:
    problem = S.AttentionProblem(4, 16, 16, 4096, 4096, 128, 128)
    report = verify_kernel(S.plan(problem, replace(S.choose(problem), OVERLAP=True)).kernel())
    records = _arrive_records(report)
    assert records and all(not c.not_checked and c.verdict.value == "verified" for c in records), records
    assert {"empty: 2 per phase", "empty_v: 2 per phase"} <= {c.target for c in records}


def test_arrivals_on_different_elements_of_an_array_are_counted_per_element() -> None:
    # bar[0] and bar[1] are two barriers: one arrival each is each one's count (summed, they read as two a phase)
    report = verify_kernel(arrivals_on_two_elements.trace())
    assert not [f for f in report.findings if f.code == "MBARRIER_ARRIVE_COUNT"]
    assert [(c.target, c.verdict.value) for c in _arrive_records(report)] == [("bar: 1 per phase", "verified")]
    # two arrivals on bar[0] still complete its phase early
    twice = verify_kernel(arrivals_on_two_elements.trace(SAME=True))
    assert [f.code for f in twice.findings if f.code == "MBARRIER_ARRIVE_COUNT"] == ["MBARRIER_ARRIVE_COUNT"]


def test_arrivals_under_a_branch_are_counted_where_they_run() -> None:
    # the arrivals that run are those whose branches are taken: one in even blocks, none in odd ones, where nothing
    # waits on bar[1] either (since 2026-12-04; the attention kernel's q_ready[1] of query-block pairs was not checked)
    report = verify_kernel(arrivals_under_a_branch.trace())
    assert [(c.target, c.verdict.value, c.not_checked) for c in _arrive_records(report)] == [
        ("bar: under conditions", "verified", False)
    ]
    for wait in ("always", "other"):  # block 1 waits on bar[1], which nobody arrives on there: a hang
        report = verify_kernel(arrivals_under_a_branch.trace(WAIT=wait))
        (found,) = [f for f in report.findings if f.code == "MBARRIER_ARRIVE_COUNT"]
        assert found.verdict.value == "violated" and found.counterexample.block["bx"] % 2 == 1, found.message
        assert "bar[1]" in found.message and "deadlocks" in found.message
