"""The tile-order lemma of exactly-once (`argus.verify.checks.tiles`): every order of `T.tile_order`, clamped or not,
is proved one-to-one, so a persistent grid's output is verified written once; an order that maps two tile numbers to
one tile is never proved, and the sample sizes give the witness."""

import pytest

from argus.verify import verify
from argus.verify.report import Verdict
from tests.verify.kernels_tile_orders import persistent_fill


def _once(result):
    return [r for r in result.checks if r.check == "output written once"]


@pytest.mark.parametrize("order", ["row_major", "column_major", "grouped"])
@pytest.mark.parametrize("clamp", [False, True])
def test_every_tile_order_is_proved_written_once(order, clamp):
    result = verify(persistent_fill, ORDER=order, CLAMP=clamp, GROUP=4)
    assert [(r.target, r.verdict) for r in _once(result)] == [("C", Verdict.VERIFIED)], result.render_text()
    assert not any(f.code == "COVERAGE_OUTPUT_TWICE" for f in result.findings)


def test_a_stride_short_of_the_block_count_is_a_witness():
    result = verify(persistent_fill, ORDER="grouped", CLAMP=True, STRIDE=3)
    found = [f for f in result.findings if f.code == "COVERAGE_OUTPUT_TWICE"]
    assert found, result.render_text()
    blocks = (found[0].counterexample.variables["first block"], found[0].counterexample.variables["second block"])
    assert blocks[0] != blocks[1]
