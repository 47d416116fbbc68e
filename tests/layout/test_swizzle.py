"""Swizzles and composed layouts: bijectivity, pycute's swizzle as an oracle (Hopper's modes: tests/atoms)."""

from __future__ import annotations

import itertools
import random

import pytest

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, composition, zipped_divide


def test_swizzle_is_a_bijection_and_an_involution() -> None:
    for b, m, s in [(1, 4, 3), (2, 4, 3), (3, 4, 3), (3, 3, 3), (2, 0, 2), (3, 2, -3), (0, 4, 3), (2, 1, 5)]:
        sw = Swizzle(b, m, s)
        period = sw.size()
        images = [sw(x) for x in range(period)]
        assert sorted(images) == list(range(period)), sw
        assert all(sw(sw(x)) == x for x in range(period))
        # only the zzz bits ever change
        assert all((sw(x) ^ x) & ~sw.zzz_mask == 0 for x in range(4 * period))


def test_bad_swizzle_parameters() -> None:
    with pytest.raises(LayoutError) as e:
        Swizzle(3, 4, 2)
    assert "|S| = 2 is less than B = 3" in str(e.value)
    with pytest.raises(LayoutError):
        Swizzle(-1, 4, 3)


def test_composed_layout_evaluation_slicing_and_modes() -> None:
    sw = Swizzle(3, 3, 3)  # a 128-byte swizzle of 16-bit elements
    tile = Layout((8, 64), (64, 1))  # one 128-byte swizzle atom of bf16, row-major
    cl = composition(sw, tile)
    assert isinstance(cl, ComposedLayout) and str(cl) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    for r, c in itertools.product(range(8), range(64)):
        assert cl(r, c) == sw(tile(r, c))
    assert sorted(cl(i) for i in range(512)) == list(range(512))
    row3 = cl(3, None)
    assert all(row3(c) == cl(3, c) for c in range(64))
    assert cl[1].outer == tile[1]
    # dividing a swizzled tile keeps the swizzle on the outside
    z = zipped_divide(cl, (2, 16))
    assert isinstance(z, ComposedLayout)
    for t0, t1, r0, r1 in itertools.product(range(2), range(16), range(4), range(4)):
        assert z((t0, t1), (r0, r1)) == cl(t0 + 2 * r0, t1 + 16 * r1)


def test_swizzle_matches_pycute() -> None:
    pycute = pytest.importorskip("pycute")
    rng = random.Random(12)
    for _ in range(200):
        b = rng.randint(0, 3)
        m = rng.randint(0, 4)
        s = rng.randint(max(b, 1), 5)
        ours, theirs = Swizzle(b, m, s), pycute.Swizzle(b, m, s)
        for x in range(0, 1 << (b + m + s + 1)):
            assert ours(x) == theirs(x)


def test_composed_cosize_is_the_largest_offset_plus_one() -> None:
    """`ComposedLayout.cosize` (vectorized for a swizzle over integer layouts) equals the maximum of every
    coordinate's offset, evaluated one by one, on random swizzles, offsets and nested shapes with zero strides."""
    rng = random.Random(7)
    for _ in range(300):
        bits = rng.randint(0, 3)
        swizzle = Swizzle(bits, rng.randint(0, 4), rng.choice([3, 4, -3, -4]))
        shape = tuple(rng.choice([1, 2, 3, 4, 8]) for _ in range(rng.randint(1, 4)))
        stride = tuple(rng.choice([0, 1, 2, 8, 16, 64]) for _ in shape)
        if len(shape) > 2 and rng.random() < 0.5:
            shape, stride = (shape[:2], shape[2:]), (stride[:2], stride[2:])
        layout = ComposedLayout(swizzle, rng.choice([0, 5, 64]), Layout(shape, stride))
        n = layout.size()
        assert layout.cosize() == max(layout(i) for i in range(n)) + 1, layout
