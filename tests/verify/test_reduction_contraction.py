"""A contraction written without `T.gemm` (a GEMV's products summed by `T.reduce_sum`, or accumulated over a loop)
is outside contraction coverage's reading: the check records its operands as *not checked* rather than saying
nothing, so a verdict over such a kernel does not claim that every K element entered the sum (`docs/verify.md` §7:
the blind hunt's GEMV whose split count drops the K tail verified with no word about it). Kernels whose products are
not summed (an affine transform) or whose sums multiply one tensor by itself (a sum of squares) get no record."""

from __future__ import annotations

import pytest

from argus.verify import Verdict, verify
from tests.verify import kernels_reduction as K


def _contraction_records(result) -> dict[str, str]:
    return {c.target.split(" ")[0]: c.target for c in result.checks if c.check == "contraction coverage"}


@pytest.mark.parametrize("how", ["reduce", "accumulate", "short"])
def test_a_contraction_by_reduction_is_recorded_not_checked(how: str) -> None:
    result = verify(K.gemv_by_reduction.trace(HOW=how))
    # "short" drops K's last block: still not found (the check does not read these loads), but no longer silent
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    records = _contraction_records(result)
    assert set(records) == {"M", "V"}, records
    for target in records.values():
        assert "not checked" in target and "summed without T.gemm" in target, target
    assert any(c.not_checked and c.check == "contraction coverage" for c in result.checks)


def test_products_that_are_not_summed_and_sums_of_squares_get_no_record() -> None:
    result = verify(K.affine_and_squares.trace())
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    assert _contraction_records(result) == {}
