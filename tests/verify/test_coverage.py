"""The windows of one store site along one dimension (`argus.verify.checks.coverage._progression`): for every sign
of the origin's step, every iteration count and window extent, the condition holds for exactly the elements some
iteration's window holds, whether the step's sign is known for every size (decided once) or depends on the sizes
(left to Z3)."""

import itertools

import pytest
import z3

from argus.verify import smt
from argus.verify.checks.coverage import _progression
from argus.verify.context import Context
from argus.verify.model import analyze
from tests.verify.corpus.kernels_coverage_output_reversed_loop import KERNEL

ELEMENTS = range(-14, 30)


@pytest.fixture(scope="module")
def ctx():
    with smt.isolated():
        yield Context(analyze(KERNEL.trace()))


def _covered(o0: int, s: int, r: int, ext: int) -> set[int]:
    return {o0 + v * s + x for v in range(r) for x in range(ext)}


def _holds(cond, e, e_value: int, pins: list) -> bool:
    got = z3.simplify(z3.substitute(cond, (e, smt.val(e_value)), *pins))
    assert z3.is_true(got) or z3.is_false(got), got
    return z3.is_true(got)


@pytest.mark.parametrize("symbolic", [False, True], ids=["sign-known", "sign-by-size"])
def test_progression_is_exactly_the_union_of_the_windows(ctx, symbolic):
    e = z3.BitVec("coverage.test.e", smt.WIDTH)
    s_term, r_term = z3.BitVec("coverage.test.s", smt.WIDTH), z3.BitVec("coverage.test.r", smt.WIDTH)
    for o0, s, r, ext in itertools.product((-3, 5), range(-4, 5), range(5), (1, 3, 5)):
        if symbolic:  # free terms: neither the sign of the step nor the windows' overlap is known up front
            cond = _progression(ctx, e, smt.val(o0), s_term, r_term, smt.val(ext))
            pins = [(s_term, smt.val(s)), (r_term, smt.val(r))]
        else:
            cond = _progression(ctx, e, smt.val(o0), smt.val(s), smt.val(r), smt.val(ext))
            pins = []
        want = _covered(o0, s, r, ext)
        got = {x for x in ELEMENTS if _holds(cond, e, x, pins)}
        assert got == want & set(ELEMENTS), (o0, s, r, ext)
