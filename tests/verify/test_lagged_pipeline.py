"""A lagged, peeled pipeline (FlashAttention-3's intra-warpgroup overlap): the consumer reads K of tile j and V of
tile j - 1 in one iteration of its pipelined loop, tile 0's K before the loop and the last V after it. The correct
kernel and the attention kernel's OVERLAP configuration verify (each read proved to see the producer iteration its
wait is for); seeded bugs are caught with counterexamples, never verified."""

from __future__ import annotations

from dataclasses import replace

import pytest

from argus.verify import Verdict, verify, verify_kernel
from tests.verify.kernels_lagged import lagged_variant

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("bug", ["", "two_in_flight"])
def test_the_clean_lagged_kernel_verifies(bug: str) -> None:
    r = verify(lagged_variant, BUG=bug)
    assert r.verdict == Verdict.VERIFIED, r.render_text()
    assert not r.findings
    tags = [c for c in r.checks if c.check == "tag assertion"]
    assert len(tags) == 4 and all(c.verdict == Verdict.VERIFIED for c in tags)


@pytest.mark.parametrize(
    ("bug", "code", "line_text"),
    [
        ("v_parity", "MBARRIER_PHASE", "T.mbarrier_wait(full_v[prev]"),
        ("v_stage", "PIPELINE_STALE_READ", "sV[read]"),
        ("early_release", "PIPELINE_OVERWRITE", "T.mbarrier_arrive(empty_v[prev])"),
        ("epilogue_stage", "PIPELINE_STALE_READ", "sV[read]"),
        ("k_release_early", "PIPELINE_OVERWRITE", "T.mbarrier_arrive(empty[s])"),
        ("epilogue_no_wait", "PIPELINE_STALE_READ", "sV[read]"),
        ("two_in_flight_loose", "PIPELINE_OVERWRITE", "T.mbarrier_arrive(empty[s])"),
    ],
)
def test_seeded_bugs_are_caught(bug: str, code: str, line_text: str) -> None:
    r = verify(lagged_variant, BUG=bug)
    assert r.verdict == Verdict.VIOLATED, r.render_text()
    found = [f for f in r.errors if f.code == code]
    assert found, r.render_text()
    assert any(line_text in (f.loc.text or "") for f in found), [f.loc for f in found]


def test_the_wrong_parity_counterexample_is_an_iteration_where_the_parities_differ() -> None:
    r = verify(lagged_variant, BUG="v_parity")
    (f,) = [f for f in r.errors if f.code == "MBARRIER_PHASE"]
    cex = f.counterexample
    assert cex is not None
    g = cex.variables["producer iteration g'"]
    assert cex.variables["parity waited for"] != (g // 2) % 2


def test_the_overlapped_attention_kernel_verifies() -> None:
    from argus.kernels import sdpa as S

    p = S.AttentionProblem(4, 16, 16, 4096, 4096, 128, 128, False)
    r = verify_kernel(S.plan(p, replace(S.choose(p), OVERLAP=True)).kernel())
    assert not r.findings, r.findings
    tags = [c for c in r.checks if c.check == "tag assertion"]
    assert len(tags) == 6 and all(c.verdict == Verdict.VERIFIED for c in tags)
    assert not [c for c in r.checks if c.verdict != Verdict.VERIFIED]
