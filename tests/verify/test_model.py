"""The pieces under the checks: bit-vector arithmetic with Python's semantics, layout inversion,
the MMA hardware view (the verifier's and the interpreter's readings of `argus.atoms.mma.slot_element`), and tag
propagation on small kernels."""

from __future__ import annotations

import itertools

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.atoms import mma_sync_m16n8k16, wgmma
from argus.atoms.mma import slot_count
from argus.atoms.swizzle import hopper_swizzle
from argus.interp.machine import _Machine
from argus.ir.types import bf16, f32
from argus.layout import ComposedLayout, Layout
from argus.verify import smt
from argus.verify.model import hardware_element


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**20), 2**20), st.integers(1, 1000))
def test_floordiv_and_mod_are_pythons(a: int, b: int) -> None:
    x = z3.BitVec("x", smt.WIDTH)
    s = z3.Solver()
    s.add(x == a)
    q, r = smt.floordiv(x, b), smt.mod(x, b)
    s.add(*smt.definitions([q, r]))
    assert s.check() == z3.sat
    m = s.model()
    assert smt.model_int(m, q) == a // b and smt.model_int(m, r) == a % b
    s.add(z3.Or(q != a // b, r != a % b))  # and the values are forced, not merely possible
    assert s.check() == z3.unsat


def test_a_remainders_dividend_is_known_by_its_variable() -> None:
    with smt.isolated():
        x, y = z3.BitVecs("x y", smt.WIDTH)
        r = smt.mod(x + y - 1, 5)
        assert smt.remainder_dividend(r, 5).eq(x + y - 1)
        assert smt.remainder_dividend(r, 3) is None  # another divisor
        assert smt.remainder_dividend(smt.mod(x, 4), 4) is None  # a power of two: a mask, no division
        assert smt.remainder_dividend(x, 5) is None  # a variable, not a remainder


@pytest.mark.parametrize(
    "layout",
    [
        Layout((64, 32), (32, 1)),
        Layout((64, 32), (40, 1)),  # padded rows
        Layout((3, 64, 64), (4096, 64, 1)),
        ComposedLayout(hopper_swizzle(128, 16), 0, Layout((2, 64, 64), (4096, 64, 1))),
        ComposedLayout(hopper_swizzle(64, 16), 0, Layout((64, 32), (32, 1))),
    ],
    ids=str,
)
def test_invert_finds_the_writer_coordinate(layout) -> None:
    """Proved for every offset: in the image exactly when ok, and then layout(coord) == offset."""
    assert smt.invertible(layout)
    o = z3.BitVec("o", smt.WIDTH)
    coord, ok = smt.invert(layout, o)
    image = z3.Or(*[o == layout(i) for i in range(layout.size())]) if layout.size() <= 4096 else None
    s = z3.Solver()
    s.add(ok, smt.apply_layout(layout, coord) != o)
    assert s.check() == z3.unsat
    if image is not None:
        s = z3.Solver()
        s.add(o >= 0, o < 1 << 16, ok != image)
        assert s.check() == z3.unsat


def test_interleaved_layout_is_not_invertible() -> None:
    assert not smt.invertible(Layout((8, 2), (1, 4)))


@pytest.mark.parametrize(
    ("atom", "operand", "sub"),
    [
        (mma_sync_m16n8k16(bf16, bf16, f32), "A", (32, 32)),
        (mma_sync_m16n8k16(bf16, bf16, f32), "B", (32, 32)),
        (mma_sync_m16n8k16(bf16, bf16, f32), "C", (32, 32)),
        (wgmma(64, bf16, acc_dtype=f32), "C", (64, 64)),
    ],
    ids=["mma.sync A", "mma.sync B", "mma.sync C", "wgmma C"],
)
def test_hardware_view_matches_the_interpreter(atom, operand, sub) -> None:
    rows, cols, _ = _Machine._hardware_slots(atom, operand, sub)
    values = slot_count(atom, operand, sub)
    assert rows.shape == (atom.thread_count, values)
    for lane, v in itertools.product(range(atom.thread_count), range(values)):
        assert hardware_element(atom, operand, sub, lane, v) == (rows[lane, v], cols[lane, v])
    # and the symbolic form agrees with the integer one
    lane_t, v_t = z3.BitVec("lane", smt.WIDTH), z3.BitVec("v", smt.WIDTH)
    r, c = hardware_element(atom, operand, sub, lane_t, v_t)
    s = z3.Solver()
    s.add(lane_t == 5, v_t == values - 1)
    assert s.check() == z3.sat
    assert (smt.model_int(s.model(), r), smt.model_int(s.model(), c)) == (rows[5, values - 1], cols[5, values - 1])


def test_loop_lookback_decides_a_three_stage_pipeline_only_when_it_looks_far_enough() -> None:
    import importlib

    from argus.verify import verify

    module = importlib.import_module("tests.verify.corpus.kernels_pipeline_three_stages_ok")
    short = verify(module.KERNEL, checks=("mma",), lookback=1)
    assert [f.code for f in short.findings] == ["UNKNOWN_LOOKBACK"] and short.verdict.value == "unknown"
    assert verify(module.KERNEL, checks=("mma",)).verdict.value == "verified"


def test_the_default_lookback_reaches_a_deep_ring_s_loads() -> None:
    """`default_lookback`: 4, or a pipelined loop's stages minus one up to `LOOKBACK_MOST`. `gemv_rows_tma`'s 8-stage
    ring reads a stage 7 iterations after its load: its tag assertions are `UNKNOWN_LOOKBACK` at 4 and proved at the
    default."""
    from argus.kernels.gemv import gemv_rows_tma
    from argus.verify import verify
    from argus.verify.engine import LOOKBACK_MOST, default_lookback

    def ring(stages: int):  # noqa: ANN202
        # whole column tiles, the vector not staged: the same ring at a third of the verifier's time (110 s, not 343 s,
        # on a CI core)
        return gemv_rows_tma.trace(BN=16, SPLITS=1, STAGES=stages, THREADS=128, PARTIAL=False, VSTAGE=False, OUT="bf16")

    assert [default_lookback(ring(s)) for s in (2, 5, 6, 8, 16)] == [4, 4, 5, 7, LOOKBACK_MOST]
    kernel = ring(6)
    short = verify(kernel, lookback=4)
    assert short.verdict.value == "unknown" and {f.code for f in short.unknowns} == {"UNKNOWN_LOOKBACK"}
    assert verify(kernel).verdict.value == "verified"


def test_the_state_before_a_loop_is_read_once_for_every_iteration_looked_back_through(monkeypatch) -> None:
    """Twelve unrolled copies of a serial loop, each adding to one running sum: reading the sum read the state
    before each copy's loop once per iteration it looked back through (and once for the loop not run), which is
    exponential in the copies (over 3^12 reads; the batch norms `argus solve` writes ran for hours). Read once, the
    reads grow with the copies."""
    import importlib

    from argus.verify import model, verify

    reads = [0]
    read = model.Query._read

    def counted(self, *args):
        reads[0] += 1
        return read(self, *args)

    monkeypatch.setattr(model.Query, "_read", counted)
    module = importlib.import_module("tests.verify.corpus.kernels_oob_unrolled_serial_sum_ok")
    assert verify(module.KERNEL, checks=("oob",)).verdict.value == "verified"
    assert 0 < reads[0] < 2000


def test_a_query_past_its_encoding_budget_is_unknown_not_wrong(monkeypatch) -> None:
    """`MAX_READS`: past the budget every read is an unknown tag, so the answer is `unknown` with the reason,
    never a violation invented or a proof claimed, and the query stops growing."""
    import importlib

    from argus.verify import model, verify

    monkeypatch.setattr(model, "MAX_READS", 5)
    ok = importlib.import_module("tests.verify.corpus.kernels_oob_unrolled_serial_sum_ok")
    starved = verify(ok.KERNEL, checks=("oob",))
    assert starved.verdict.value == "unknown" and not starved.errors
    assert any(f.code == "UNKNOWN_SOLVER" and "MAX_READS" in (f.reason or f.message) for f in starved.findings)
    bug = importlib.import_module("tests.verify.corpus.kernels_oob_unrolled_serial_sum_unmasked")
    assert verify(bug.KERNEL, checks=("oob",)).verdict.value == "unknown"  # the padded lane is past the budget
