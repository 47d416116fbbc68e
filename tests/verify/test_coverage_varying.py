"""Contraction coverage of loops whose length differs from block to block (`coverage._ends`): read at the ends of
the indices their extents read (at every value where the range is a small constant: a split), a missed element
confirmed with every index exact before it is reported, and where the ends do not stand for the union (a loop
longest in the middle block), not checked rather than a false alarm. And the slices of a declared partial sum
(`T.partial_sums`): no operand element in two slices' accumulations (`once.check_contraction_across_slices`)."""

from __future__ import annotations

import pytest

from argus.ir.printer import format_kernel
from argus.ir.serialize import kernel_from_json, kernel_to_json
from argus.lang.errors import DSLError
from argus.verify import Verdict, verify
from tests.verify import kernels_varying as K


def _coverage(result, tensor: str) -> tuple[str, Verdict]:
    (record,) = [c for c in result.checks if c.check == "contraction coverage" and c.target.split(" ")[0] == tensor]
    return record.target, record.verdict


def test_a_triangular_walk_covers_every_key_block_by_its_last_row_tile():
    result = verify(K.tril_gemm)
    assert not result.errors, result.render_text()
    assert _coverage(result, "B") == ("B", Verdict.VERIFIED)
    # A's row tile is the loop's own block index: the windows move with the loop's length; read at the ends of the
    # index they leave A's upper triangle unloaded, which the kernel skips on purpose (its zeros): not checked, and no
    # finding (the ends decide nothing where they miss an element)
    target, _ = _coverage(result, "A")
    assert "not checked" in target and "read at the ends of its range" in target


def test_a_causal_split_s_moving_shares_are_proved_at_the_last_row_tile():
    """The shares move with the row tile, which also bounds the loop: read at the ends of the row tiles (and at every
    split), the last row tile's shares hold every K-block of B, which proves B covered; with floor shares they do
    not, and the check is not checked (the middle row tiles could hold the element), never a pass."""
    result = verify(K.causal_split)
    assert not result.errors, result.render_text()
    assert _coverage(result, "B") == ("B", Verdict.VERIFIED)
    target, _ = _coverage(result, "A")
    assert "not checked" in target  # the upper triangle of A, skipped on purpose
    floor = verify(K.causal_split_floor)
    assert not floor.errors, floor.render_text()
    target, verdict = _coverage(floor, "B")
    assert verdict == Verdict.UNKNOWN and "not checked" in target and "read at the ends of its range" in target


def test_a_triangular_walk_short_of_the_diagonal_misses_the_last_key_block():
    result = verify(K.tril_gemm_short)
    (finding,) = result.errors
    assert finding.code == "COVERAGE_CONTRACTION" and "of B" in finding.message
    assert "confirmed with every block and loop index exact" in finding.message
    row, _ = (int(x) for x in finding.counterexample.variables["element"].strip("()").split(","))
    m = finding.counterexample.shapes["M"]
    assert m - 16 <= row < m  # the last row tile of B: only the last row tile's diagonal block would load it


def test_a_loop_longest_in_the_middle_is_not_checked_rather_than_reported():
    result = verify(K.longest_in_the_middle)
    assert not result.errors, result.render_text()
    for tensor in ("A", "B"):
        target, verdict = _coverage(result, tensor)
        assert verdict == Verdict.UNKNOWN and "an instance between the ends holds it" in target


def test_a_block_index_of_a_constant_range_is_read_at_every_value():
    result = verify(K.longest_in_the_middle_of_three)
    assert not result.errors, result.render_text()
    assert _coverage(result, "A") == ("A", Verdict.VERIFIED)
    assert _coverage(result, "B") == ("B", Verdict.VERIFIED)


def test_a_loop_short_at_every_block_is_reported():
    result = verify(K.short_everywhere)
    codes = sorted((f.code, f.message.split(" of ")[1].split(" ")[0]) for f in result.errors)
    assert codes == [("COVERAGE_CONTRACTION", "A"), ("COVERAGE_CONTRACTION", "B")], result.render_text()
    for f in result.errors:
        assert "(0, 32)" in f.message or "(32," in f.message  # the third K-block: columns 32.. of A, rows 32.. of B


def test_splits_of_a_constant_count_are_read_at_every_split():
    # each split's first K-block and its count both read the split index: read at each of its four values
    result = verify(K.split_k)
    assert not result.errors, result.render_text()
    assert _coverage(result, "A") == ("A", Verdict.VERIFIED)
    assert _coverage(result, "B") == ("B", Verdict.VERIFIED)
    floor = verify(K.split_k_floor)
    assert sorted(f.code for f in floor.errors) == ["COVERAGE_CONTRACTION", "COVERAGE_CONTRACTION"], floor.render_text()
    for f in floor.errors:
        k_blocks = -(-f.counterexample.shapes["K"] // 16)
        assert k_blocks % 4 != 0  # shares of blocks // 4 leave the last blocks to no split


def test_slices_declared_partial_sums_are_proved_apart_and_an_overlap_is_found():
    result = verify(K.split_k)
    (record,) = [c for c in result.checks if c.check == "contraction accumulated once across slices"]
    assert record.verdict == Verdict.VERIFIED and record.target.startswith("W along axis 0")
    overlap = verify(K.split_k_overlap)
    (finding,) = overlap.errors
    assert finding.code == "COVERAGE_CONTRACTION_TWICE" and "slices" in finding.message
    cex = finding.counterexample
    z_a, z_b = cex.block["z"], int(cex.variables["other block"].split("z=")[1])
    assert abs(z_a - z_b) == 1  # one K-block past the share: the next split's first one
    assert cex.block["bm"] == int(cex.variables["other block"].split("bm=")[1].split(",")[0])


@pytest.mark.parametrize("kernel", ["split_k", "split_k_symbolic"])
def test_slices_the_solver_does_not_decide_are_unknown_never_verified(kernel):
    # no budget: the first query is undecided; with four slices the pinned pairs are too, and with a count given at
    # the launch there is nothing to pin and the whole-budget query is (it answered "verified" before)
    result = verify(getattr(K, kernel), checks=("coverage",), rlimit=1)
    (record,) = [c for c in result.checks if c.check == "contraction accumulated once across slices"]
    assert record.verdict == Verdict.UNKNOWN and not record.not_checked, record
    assert result.verdict == Verdict.UNKNOWN


def test_partial_sums_is_checked_as_it_is_declared():
    traced = K.zero_slices(axis=0, why="the next kernel adds them").trace()
    (sums,) = traced.partial_sums
    assert sums.axis == 0 and sums.why == "the next kernel adds them"
    assert "partial sums W along axis 0: the next kernel adds them" in format_kernel(traced)
    (back,) = kernel_from_json(kernel_to_json(traced)).partial_sums  # the gate's worker sends kernels as data
    assert back.axis == 0 and back.why == sums.why and back.tensor.name == "W"
    for bad in ({"axis": 2, "why": "x"}, {"axis": True, "why": "x"}, {"axis": 0, "why": " "}):
        with pytest.raises(DSLError) as e:
            K.zero_slices(**bad).trace()
        assert e.value.code == "DSL_ASSUME", bad
