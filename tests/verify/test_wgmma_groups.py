# ruff: noqa: F821  (the DSL binds shape symbols named in annotations)
"""`MMA_IN_FLIGHT` with two asynchronous MMAs in one loop body (the intra-warpgroup overlap of attention): wgmma
groups complete in issue order, so a later wgmma's ``wait_group=1`` completes the earlier group and leaves its own
running. The check counts that (no false positive on the overlapped attention kernel) and still reports a use of an
accumulator whose group is not yet complete."""

from dataclasses import replace

import pytest

import argus
import argus.lang as T
from argus.kernels import sdpa as S
from argus.verify import verify_kernel


def _two_groups(second_wait: int, read_second_early: bool):  # noqa: ANN202
    @argus.kernel
    def two_groups(
        A: T.Tensor[("M", "K"), T.bf16],
        B: T.Tensor[("N", "K"), T.bf16],
        C: T.Tensor[("M", "N"), T.f32],
        BM: int = 128,
        BN: int = 128,
        BK: int = 64,
        STAGES: int = 2,
    ):
        T.assume("K % 8 == 0")
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
            sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
            sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
            full = T.alloc_mbarrier(STAGES, arrive_count=1)
            empty = T.alloc_mbarrier(STAGES, arrive_count=2)
            with T.role("producer", warpgroups=(0,), registers=40):
                for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                    T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                    T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                    T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                    T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
            with T.role("consumer", warpgroups=(1, 2), registers=232):
                first = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                second = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                total = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                T.fill(second, 0.0)
                T.fill(total, 0.0)
                for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                    T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                    T.fill(first, 0.0)
                    T.gemm(sA[s], sB[s].T, first, wait_group=1)  # issued
                    T.gemm(sA[s], sB[s].T, second, wait_group=second_wait)  # with 1: completes `first`
                    if read_second_early:
                        T.copy(total + second, total)  # `second` still running
                    T.copy(total + first, total)  # reads `first`
                    T.wgmma_wait(0)
                    T.mbarrier_arrive(empty[s], per_warpgroup=True)
                T.copy(total + second, C.tile((bm, bn), (BM, BN)))

    return two_groups


def _in_flight(kernel) -> list:  # noqa: ANN001
    return [f for f in verify_kernel(kernel.trace()).findings if f.code == "MMA_IN_FLIGHT"]


def test_the_later_wait_completes_the_earlier_group() -> None:
    assert _in_flight(_two_groups(1, False)) == []


@pytest.mark.parametrize(("second_wait", "early", "what"), [(2, False, "first"), (1, True, "second")])
def test_an_accumulator_used_before_its_group_completes_is_reported(second_wait: int, early: bool, what: str) -> None:
    (finding,) = _in_flight(_two_groups(second_wait, early))
    assert finding.message.startswith(what) and "T.copy(total + " in finding.loc.text


def test_the_overlapped_attention_has_no_mma_in_flight_finding() -> None:
    problem = S.AttentionProblem(4, 16, 16, 4096, 4096, 128, 128)
    kernel = S.plan(problem, replace(S.choose(problem), OVERLAP=True)).kernel()
    report = verify_kernel(kernel)
    assert not [f for f in report.findings if f.code == "MMA_IN_FLIGHT"]
    assert not [c for c in report.checks if c.verdict.value == "violated"]


def _across_the_back_edge(touch_before_wait: bool, touch_after_issue: bool, wait_after_loop: bool):  # noqa: ANN202
    """One asynchronous MMA per iteration, completed by the ``T.wgmma_wait(0)`` at the top of the next iteration
    (block-scaled FP8's promotion: the previous K-block's product is moved out and promoted while this one's MMAs
    run), with a seeded touch of the accumulator where the MMAs still run."""

    @argus.kernel
    def back_edge(
        A: T.Tensor[("M", "K"), T.bf16],
        B: T.Tensor[("N", "K"), T.bf16],
        C: T.Tensor[("M", "N"), T.f32],
        BM: int = 128,
        BN: int = 128,
        BK: int = 64,
        STAGES: int = 4,
    ):
        T.assume("K % 8 == 0")
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
            sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
            sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
            full = T.alloc_mbarrier(STAGES, arrive_count=1)
            empty = T.alloc_mbarrier(STAGES, arrive_count=2)
            with T.role("producer", warpgroups=(0,), registers=40):
                for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                    T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                    T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                    T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                    T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
            with T.role("consumer", warpgroups=(1, 2), registers=232):
                part = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                prev = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                total = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                T.fill(part, 0.0)
                T.fill(total, 0.0)
                for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                    T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                    if touch_before_wait:
                        T.copy(part, prev)  # the previous iteration's MMAs still write `part`
                    T.wgmma_wait(0)
                    with T.if_(k > 0):
                        T.mbarrier_arrive(empty[(k - 1) % STAGES], per_warpgroup=True)
                    T.copy(part, prev)
                    T.fill(part, 0.0)
                    T.gemm(sA[s], sB[s].T, part, wait_group=1)  # runs on into the next iteration
                    T.copy(total + prev, total)
                    if touch_after_issue:
                        T.copy(total + part, total)  # still running
                if wait_after_loop:
                    T.wgmma_wait(0)
                T.copy(total + part, C.tile((bm, bn), (BM, BN)))

    return back_edge


def test_a_wait_at_the_top_of_the_next_iteration_completes_the_mmas() -> None:
    assert _in_flight(_across_the_back_edge(False, False, True)) == []


@pytest.mark.parametrize(
    ("before", "after", "wait_after_loop", "said"),
    [
        (True, False, True, "across the loop's back edge"),
        (False, True, True, "across the loop's back edge"),
        (False, False, False, "not waited for"),
    ],
)
def test_a_use_before_the_next_iteration_s_wait_is_reported(
    before: bool, after: bool, wait_after_loop: bool, said: str
) -> None:
    (finding,) = _in_flight(_across_the_back_edge(before, after, wait_after_loop))
    assert said in finding.message, finding.message
