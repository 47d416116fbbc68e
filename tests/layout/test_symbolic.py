"""Layouts, swizzles and composed layouts evaluated on Z3 terms give the same function as on ints,
and the solver can prove facts about them (what the verifier builds on)."""

from __future__ import annotations

import random

import z3

from argus.layout import Layout, Swizzle, composition, flatten, is_symbolic, size
from tests.layout.gen import random_layout


def concrete(term, var, value) -> int:
    sub = z3.substitute(term, (var, z3.BitVecVal(value, var.size()) if z3.is_bv(var) else z3.IntVal(value)))
    out = z3.simplify(sub)
    return out.as_long()


def test_layout_on_z3_ints_and_bitvectors_matches_integer_evaluation() -> None:
    rng = random.Random(20)
    x_int = z3.Int("x")
    x_bv = z3.BitVec("x", 32)
    for _ in range(150):
        a = random_layout(rng, max_size=1024)
        t_int, t_bv = a(x_int), a(x_bv)
        assert is_symbolic(t_int) or all(a(i) == t_int for i in range(size(a)))
        for i in rng.sample(range(size(a)), min(size(a), 12)):
            if is_symbolic(t_int):
                assert concrete(t_int, x_int, i) == a(i), (a, i)
            if is_symbolic(t_bv):
                assert concrete(t_bv, x_bv, i) == a(i), (a, i)


def test_hierarchical_symbolic_coordinates() -> None:
    a = Layout(((2, 4), (4, 2)), ((1, 8), (2, 32)))
    m0, m1, n = z3.BitVecs("m0 m1 n", 16)
    term = a((m0, m1), n)
    s = z3.Solver()
    for v0 in range(2):
        for v1 in range(4):
            for vn in range(8):
                val = z3.simplify(
                    z3.substitute(
                        term, (m0, z3.BitVecVal(v0, 16)), (m1, z3.BitVecVal(v1, 16)), (n, z3.BitVecVal(vn, 16))
                    )
                )
                assert val.as_long() == a((v0, v1), vn)
    assert s.check() == z3.sat


def test_swizzle_and_composed_layout_on_z3() -> None:
    sw = Swizzle(3, 3, 3)  # a 128-byte swizzle of 16-bit elements
    cl = composition(sw, Layout((8, 64), (64, 1)))
    x_bv = z3.BitVec("x", 32)
    x_int = z3.Int("x")
    assert z3.is_bv(sw(x_bv)) and z3.is_int(sw(x_int))
    r, c = z3.BitVecs("r c", 32)
    term = cl(r, c)
    rng = random.Random(21)
    for _ in range(60):
        i = rng.randrange(0, 4096)
        assert concrete(sw(x_bv), x_bv, i) == sw(i)
        assert concrete(sw(x_int), x_int, i) == sw(i)
        rv, cv = rng.randrange(8), rng.randrange(64)
        got = z3.simplify(z3.substitute(term, (r, z3.BitVecVal(rv, 32)), (c, z3.BitVecVal(cv, 32)))).as_long()
        assert got == cl(rv, cv)


def test_solver_proves_swizzled_tile_is_injective() -> None:
    """The kind of query the verifier asks: no two elements of a swizzled 8x64 bf16 tile share
    an offset. Z3 must prove it (unsat), and find a collision once the tile is made too tall."""
    sw = Swizzle(3, 3, 3)  # a 128-byte swizzle of 16-bit elements
    for rows, expect in [(8, z3.unsat), (16, z3.unsat)]:
        cl = composition(sw, Layout((rows, 64), (64, 1)))
        r1, c1, r2, c2 = z3.BitVecs("r1 c1 r2 c2", 32)
        s = z3.Solver()
        s.add(z3.ULT(r1, rows), z3.ULT(r2, rows), z3.ULT(c1, 64), z3.ULT(c2, 64))
        s.add(z3.Or(r1 != r2, c1 != c2), cl(r1, c1) == cl(r2, c2))
        assert s.check() == expect
    # a broken layout: row stride 32 on 64-wide rows makes rows overlap; Z3 finds a witness
    bad = composition(sw, Layout((8, 64), (32, 1)))
    r1, c1, r2, c2 = z3.BitVecs("r1 c1 r2 c2", 32)
    s = z3.Solver()
    s.add(z3.ULT(r1, 8), z3.ULT(r2, 8), z3.ULT(c1, 64), z3.ULT(c2, 64))
    s.add(z3.Or(r1 != r2, c1 != c2), bad(r1, c1) == bad(r2, c2))
    assert s.check() == z3.sat
    m = s.model()
    w = [m.eval(v).as_long() for v in (r1, c1, r2, c2)]
    assert (w[0], w[1]) != (w[2], w[3]) and bad(w[0], w[1]) == bad(w[2], w[3])


def test_symbolic_terms_stay_small_for_power_of_two_layouts() -> None:
    # a flat power-of-two layout gives shifts and masks, not a blow-up
    a = Layout((4, 8, 2), (16, 1, 8))
    t = z3.simplify(a(z3.BitVec("x", 32)))
    assert len(str(t)) < 200
    assert flatten(a.shape) == (4, 8, 2)


def test_injectivity_counterexample() -> None:
    from argus.layout.symbolic import injectivity_counterexample

    sw = Swizzle(3, 3, 3)  # a 128-byte swizzle of 16-bit elements
    assert injectivity_counterexample(composition(sw, Layout((8, 64), (64, 1)))) is None
    assert injectivity_counterexample(Layout(((2, 4), 8), ((1, 2), 8))) is None
    bad = composition(sw, Layout((8, 64), (32, 1)))
    c1, c2, offset = injectivity_counterexample(bad)
    assert c1 != c2 and bad(c1) == bad(c2) == offset
    broadcast = Layout((4, 8), (0, 1))
    c1, c2, offset = injectivity_counterexample(broadcast)
    assert c1[1] == c2[1] and c1[0] != c2[0] and broadcast(c1) == broadcast(c2) == offset
