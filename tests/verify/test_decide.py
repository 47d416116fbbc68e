"""Deciding a write's cover while a history is read (`Query.decide`): sound (a cover is taken as certain only when
the query's facts imply it), and what makes a persistent warp-specialized kernel's stage assertion one small query."""

from __future__ import annotations

import z3

from argus.ir.rewrite import inline_lets
from argus.kernels.grouped import grouped_gemm_persistent
from argus.verify import Verdict, smt, verify
from argus.verify.context import Context
from argus.verify.model import Query, analyze


def _analysis(**params: int):  # noqa: ANN202
    return analyze(inline_lets(grouped_gemm_persistent.trace(BLOCKS=3, SEARCH=2, **params)))


def _query() -> Query:
    return Query(_analysis(STAGES=3))


def test_a_cover_is_decided_only_under_the_facts_given() -> None:
    q = _query()
    x = z3.BitVec("x", smt.WIDTH)
    within = x & 3 == x
    assert q.decide(within, z3.BoolVal(True)) is None  # no facts yet: nothing is decided early
    q.assume([smt.in_range(x, 0, 4)])
    assert q.decide(within, z3.BoolVal(True)) is True
    assert q.decide(x == 5, z3.BoolVal(True)) is False
    assert q.decide(x == 2, z3.BoolVal(True)) is None  # true for some x, false for others: left to the query
    assert q.decide(x == 2, x >= 2) is None  # x = 3 too: the guard does not imply it
    assert q.decide(x == 2, x * 2 == 4) is True  # where the value is used (the guard), it holds
    assert q.decide(True, z3.BoolVal(True)) is True and q.decide(False, z3.BoolVal(True)) is False


def test_the_stage_assertion_reads_the_one_write_that_covers_it() -> None:
    """The consumer's assertion that A's stage holds rows row0.. of K-block k: the producer's copy in the paired
    iteration covers every element of the stage, so the read stops there: no older write (and no look-back past the
    pipeline's first iteration, whose tag the verifier could not know) enters the query. Before, those older writes
    were conditions of one 54-95 s query (the library configuration) that could exceed its budget."""
    ctx = Context(_analysis(STAGES=4))
    from argus.verify.checks.asserts import _check_assertion

    site = ctx.analysis.asserts[0]  # the assertion on sA[s]
    seen: list[Query] = []
    original = ctx.query

    def keep(lookback=None):  # noqa: ANN001, ANN202
        q = original(lookback)
        seen.append(q)
        return q

    ctx.query = keep  # type: ignore[method-assign]
    findings, verdict = _check_assertion(ctx, site, 1)
    assert verdict == Verdict.VERIFIED and not findings
    (q,) = seen
    assert q.facts and not q.havoc  # nothing undetermined was read: the covering write ended the read


def test_the_grouped_kernels_verify_at_the_library_configuration() -> None:
    """132 blocks, 4 stages (the deferred-release form), eight search steps: what the GPU runs."""
    report = verify(grouped_gemm_persistent.trace())
    assert report.verdict == Verdict.VERIFIED, report.render_text()
    proved = {c.target for c in report.checks if c.check == "tag assertion" and c.verdict == Verdict.VERIFIED}
    assert len(proved) == 2
