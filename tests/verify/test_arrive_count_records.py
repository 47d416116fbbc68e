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
