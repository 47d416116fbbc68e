"""Defining properties of the layout algebra, checked by enumeration on fixed examples, on
thousands of seeded random layouts, and with hypothesis (which shrinks a failure to its seed)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.layout import (
    Layout,
    LayoutError,
    blocked_product,
    coalesce,
    compatible,
    complement,
    composition,
    cosize,
    crd2idx,
    filter,
    flat_divide,
    flatten,
    idx2crd,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    make_ordered_layout,
    max_common_vector,
    raked_product,
    right_inverse,
    size,
    slice_and_offset,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from argus.layout.int_tuple import depth, prefix_product, product, shape_div, suffix_product
from tests.layout.gen import POW2, injective_layout, layouts, random_layout

# --- checks of the defining properties ----------------------------------------------------------


def check_coalesce(layout: Layout) -> Layout:
    r = coalesce(layout)
    assert size(r) == size(layout)
    assert depth(r.shape) <= 1
    for i in range(size(layout)):
        assert r(i) == layout(i), (layout, r, i)
    # no two adjacent modes could merge further, and no size-1 mode survives (unless it is all)
    shapes, strides = flatten(r.shape), flatten(r.stride)
    if len(shapes) > 1:
        assert 1 not in shapes
        for k in range(len(shapes) - 1):
            assert shapes[k] * strides[k] != strides[k + 1], r
    return r


def check_composition(a: Layout, b: Layout) -> Layout:
    r = composition(a, b)
    assert size(r) == size(b), (a, b, r)
    assert compatible(b.shape, r.shape) or compatible(flatten(b.shape), flatten(r.shape)) or depth(b.shape) == 0
    extended = coalesce(a)  # past size(a), a layout extends along the last mode of its coalesced form
    # Left-distributivity (CuTe's definition for a multi-mode right operand): mode i of R is a o b_i.
    # R(c) is the sum over b's leaf modes k of a(stride_k * c_k).
    for c in range(size(b)):
        assert r(c) == distributed(a, b, c), (a, b, r, c)
    # The full functional property, where b's modes do not carry into each other inside a.
    if is_injective(b):
        for c in range(size(b)):
            assert r(c) == extended(b(c)), (a, b, r, c)
            if b(c) < size(a):
                assert r(c) == a(b(c)), (a, b, r, c)
    return r


def distributed(a: Layout, b: Layout, c: int) -> int:
    """(a o b)(c) by left-distributivity: the sum over b's leaf modes k of a(stride_k * c_k),
    with a extended along the last mode of its coalesced form."""
    extended = coalesce(a)
    leaf_crd = flatten(idx2crd(c, b.shape))
    return sum(extended(d * ck) for d, ck in zip(flatten(b.stride), leaf_crd, strict=True))


def is_injective(layout: Layout) -> bool:
    images = [layout(i) for i in range(size(layout))]
    return len(set(images)) == len(images)


def check_complement(layout: Layout, cotarget: int) -> Layout:
    r = complement(layout, cotarget)
    values = [r(i) for i in range(size(r))]
    assert values == sorted(values) and len(set(values)) == len(values), (layout, r)
    image_a = {layout(i) for i in range(size(layout))}
    assert image_a & set(values) == {0}, (layout, r)
    f = filter(layout)
    joint = make_layout(f, r)
    images = sorted(joint(i) for i in range(size(joint)))
    assert images == list(range(size(joint))), (layout, r)
    assert size(joint) >= cotarget
    return r


def check_right_inverse(layout: Layout) -> Layout:
    r = right_inverse(layout)
    for i in range(size(r)):
        assert layout(r(i)) == i, (layout, r, i)
    # maximal: the image of `layout` does not contain size(r) (else r could be longer) unless
    # the contiguous run is broken by a gap in strides
    images = {layout(i) for i in range(size(layout))}
    assert set(range(size(r))) <= images
    return r


def check_left_inverse(layout: Layout) -> Layout:
    r = left_inverse(layout)
    for i in range(size(layout)):
        assert r(layout(i)) == i, (layout, r, i)
    return r


# --- fixed examples from the CuTe documentation --------------------------------------------------


def test_printing_and_evaluation() -> None:
    a = Layout((4, 8), (8, 1))
    assert str(a) == "(4,8):(8,1)"
    assert str(Layout(8)) == "8:1"
    assert str(Layout((2, (2, 4)))) == "(2,(2,4)):(1,(2,4))"
    assert a(1, 2) == 10 and a((1, 2)) == 10
    assert a(5) == 9  # index 5 is coordinate (1, 1)
    b = Layout(((2, 2), (2, 4)), ((1, 4), (2, 8)))
    assert b((1, 0), (1, 2)) == 1 + 2 + 16
    assert b(1, (1, 2)) == 1 + 2 + 16  # weakly congruent coordinate
    assert size(b) == 32 and cosize(b) == 32
    assert len(b) == 2 and str(b[1]) == "(2,4):(2,8)"


def test_default_stride_is_column_major() -> None:
    assert Layout((4, 8)) == Layout((4, 8), (1, 4))
    assert Layout((2, (3, 4))).stride == (1, (2, 6))
    assert make_ordered_layout((4, 8), (1, 0)) == Layout((4, 8), (8, 1))


def test_slicing_with_none() -> None:
    a = Layout((4, 8), (8, 1))
    assert a(2, None) == Layout(8, 1)
    assert a(None, 3) == Layout(4, 8)
    row, offset = slice_and_offset((2, None), a)
    assert offset == 16 and all(a(2, j) == offset + row(j) for j in range(8))
    h = Layout(((2, 3), 4), ((1, 8), 2))
    s, off = slice_and_offset(((None, 1), None), h)
    assert s == Layout((2, 4), (1, 2)) and off == 8
    for i, j in itertools.product(range(2), range(4)):
        assert h((i, 1), j) == off + s(i, j)


def test_cute_doc_examples() -> None:
    # composition: (6,2):(8,2) o (4,3):(3,1) == ((2,2),3):((24,2),8) (CuTe's layout algebra doc)
    assert composition(Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1))) == Layout(((2, 2), 3), ((24, 2), 8))
    # composition with a by-mode tiler
    a = Layout((12, (4, 8)), (59, (13, 1)))
    r = composition(a, (Layout(3, 4), Layout(8, 2)))
    assert r == Layout((3, (2, 4)), (236, (26, 1)))
    # complement examples
    assert complement(Layout(4, 1), 24) == Layout(6, 4)
    assert complement(Layout(6, 4), 24) == Layout(4, 1)
    assert complement(Layout((4, 6), (1, 4)), 24) == Layout(1, 0)
    assert complement(Layout(4, 2), 24) == Layout((2, 3), (1, 8))
    assert complement(Layout((2, 4), (1, 6)), 24) == Layout(3, 2)
    assert complement(Layout((2, 2), (1, 6)), 24) == Layout((3, 2), (2, 12))
    # logical_divide of a 1-D layout (the doc's example)
    assert logical_divide(Layout((4, 2, 3), (2, 1, 8)), Layout(4, 2)) == Layout(((2, 2), (2, 3)), ((4, 1), (2, 8)))
    # 2-D divide by a tiler
    a2 = Layout((9, (4, 8)), (59, (13, 1)))
    tiler = (Layout(3, 3), Layout((2, 4), (1, 8)))
    assert logical_divide(a2, tiler) == Layout(((3, 3), ((2, 4), (2, 2))), ((177, 59), ((13, 2), (26, 1))))
    # logical_product of a 1-D layout (the doc's example)
    assert logical_product(Layout((2, 2), (4, 1)), Layout(6, 1)) == Layout(((2, 2), (2, 3)), ((4, 1), (2, 8)))
    assert logical_product(Layout((2, 2), (4, 1)), Layout((4, 2), (2, 1))) == Layout(((2, 2), (4, 2)), ((4, 1), (8, 2)))
    # blocked and raked products of a 2x5 block over a 3x4 tiler (the doc's picture)
    block = Layout((2, 5), (5, 1))
    tiler4 = Layout((3, 4), (1, 3))
    assert blocked_product(block, tiler4) == Layout(((2, 3), (5, 4)), ((5, 10), (1, 30)))
    assert raked_product(block, tiler4) == Layout(((3, 2), (4, 5)), ((10, 5), (30, 1)))


def test_divide_and_product_variants_agree_with_logical() -> None:
    a = Layout((12, 32), (32, 1))
    tiler = (3, 8)
    ld = logical_divide(a, tiler)
    z = zipped_divide(a, tiler)
    t = tiled_divide(a, tiler)
    f = flat_divide(a, tiler)
    assert str(z) == "((3,8),(4,4)):((32,1),(96,8))"
    assert str(t) == "((3,8),4,4):((32,1),96,8)"
    assert str(f) == "(3,8,4,4):(32,1,96,8)"
    for t0, t1, r0, r1 in itertools.product(range(3), range(8), range(4), range(4)):
        v = ld((t0, r0), (t1, r1))
        assert z((t0, t1), (r0, r1)) == v
        assert t((t0, t1), r0, r1) == v
        assert f(t0, t1, r0, r1) == v
    block = Layout((2, 2), (1, 2))
    lp = logical_product(block, (Layout(3), Layout(2)))
    zp = zipped_product(block, (Layout(3), Layout(2)))
    tp = tiled_product(block, (Layout(3), Layout(2)))
    assert rank_of(zp) == 2 and rank_of(tp) == 3
    for b0, b1, r0, r1 in itertools.product(range(2), range(2), range(3), range(2)):
        v = lp((b0, r0), (b1, r1))
        assert zp((b0, b1), (r0, r1)) == v
        assert tp((b0, b1), r0, r1) == v


def rank_of(layout: Layout) -> int:
    return len(layout)


def test_int_tuple_helpers() -> None:
    assert prefix_product((4, (2, 3))) == (1, (4, 8))
    assert suffix_product((4, (2, 3))) == ((6), (3, 1))
    assert shape_div((6, 2), 2) == (3, 2)
    assert shape_div((6, 2), 12) == (1, 1)
    assert shape_div(6, 12) == 1
    with pytest.raises(LayoutError) as e:
        shape_div(6, 4)
    assert e.value.code == "LAYOUT_DIVISIBILITY"
    for shape in [8, (4, 8), ((2, 2), (3, 4)), (2, (3, (2, 2)))]:
        for i in range(product(shape)):
            assert crd2idx(idx2crd(i, shape), shape) == i


# --- errors ---------------------------------------------------------------------------------------


def test_layout_error_names_operands_and_condition() -> None:
    with pytest.raises(LayoutError) as e:
        composition(Layout((8, 4), (1, 16)), Layout(3, 3))
    assert e.value.code == "LAYOUT_STRIDE_DIVISIBILITY"
    assert "stride 3 does not divide shape 8" in str(e.value)
    assert "composition((8,4):(1,16), 3:3)" in str(e.value)
    with pytest.raises(LayoutError) as e:
        composition(Layout((4, 4), (1, 8)), Layout(6, 1))
    assert e.value.code == "LAYOUT_SHAPE_DIVISIBILITY" and "(4,4):(1,8)" in str(e.value)
    with pytest.raises(LayoutError) as e:
        complement(Layout((2, 2), (3, 2)), 16)
    assert e.value.code == "LAYOUT_NOT_COMPLEMENTABLE" and "(2,2):(3,2)" in str(e.value)
    with pytest.raises(LayoutError) as e:
        Layout((4, 8), (1,))
    assert e.value.code == "LAYOUT_INCONGRUENT" and "(4,8)" in str(e.value)
    with pytest.raises(LayoutError) as e:
        Layout((4, 0))
    assert e.value.code == "LAYOUT_BAD_SHAPE"
    with pytest.raises(LayoutError) as e:
        Layout((4, 8))((1, 2, 3))
    assert e.value.code == "LAYOUT_BAD_COORDINATE"
    with pytest.raises(LayoutError):
        Layout(4.5)  # type: ignore[arg-type]
    with pytest.raises(LayoutError) as e:
        logical_divide(Layout(8), (2, 2))
    assert e.value.code == "LAYOUT_BAD_TILER"


def test_no_bare_asserts_in_the_layout_package() -> None:
    import pathlib

    import argus.layout

    root = pathlib.Path(argus.layout.__file__).parent
    for path in root.glob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not line.strip().startswith("assert "), f"{path.name}:{n} uses a bare assert"


# --- seeded random sweeps ---------------------------------------------------------------------------


def test_coalesce_random() -> None:
    rng = random.Random(1)
    for _ in range(1500):
        check_coalesce(random_layout(rng))


def test_coalesce_with_profile_keeps_modes() -> None:
    rng = random.Random(2)
    for _ in range(300):
        a = random_layout(rng, max_rank=3)
        if len(a) < 2:
            continue
        r = coalesce(a, (1,) * len(a))
        assert len(r) == len(a)
        for i in range(len(a)):
            assert r[i] == coalesce(a[i])
        for i in range(size(a)):
            assert r(i) == a(i)


def test_filter_random() -> None:
    rng = random.Random(3)
    for _ in range(800):
        a = random_layout(rng)
        r = filter(a)
        assert {r(i) for i in range(size(r))} == {a(i) for i in range(size(a))}
        assert size(r) == 1 or 0 not in flatten(r.stride)


def _admissible_pair(rng: random.Random) -> tuple[Layout, Layout]:
    a = random_layout(rng, extents=POW2 + [3, 6], max_size=1024)
    b = random_layout(rng, extents=POW2, max_rank=2, zero_strides=rng.random() < 0.2, max_size=256)
    return a, b


def test_composition_random() -> None:
    rng = random.Random(4)
    done = errors = 0
    while done < 1500:
        a, b = _admissible_pair(rng)
        try:
            check_composition(a, b)
            done += 1
        except LayoutError:
            errors += 1
    assert errors > 0  # the generator also produces inadmissible pairs, which must be rejected


def test_complement_random() -> None:
    rng = random.Random(5)
    for _ in range(1500):
        a = injective_layout(rng, max_size=512)
        cotarget = rng.choice([1, size(a), cosize(a), 2 * cosize(a), cosize(a) + 3, 1024])
        check_complement(a, cotarget)


def test_inverses_random() -> None:
    rng = random.Random(6)
    for _ in range(1500):
        check_right_inverse(random_layout(rng))
        check_left_inverse(injective_layout(rng))


def test_right_inverse_of_a_compact_layout_is_a_two_sided_inverse() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = injective_layout(rng, gaps=False)
        r = right_inverse(a)
        assert size(r) == size(a)
        for i in range(size(a)):
            assert a(r(i)) == i and r(a(i)) == i


def test_logical_divide_random() -> None:
    rng = random.Random(8)
    done = 0
    while done < 1000:
        a = random_layout(rng, extents=POW2, max_size=1024)
        tiler = injective_layout(rng, extents=POW2, max_rank=2, max_size=64)
        try:
            r = logical_divide(a, tiler)
        except LayoutError:
            continue
        full = make_layout(tiler, complement(tiler, size(a)))
        extended = coalesce(a)
        for i in range(size(full)):
            assert r(i) == extended(full(i))
        if sorted(full(i) for i in range(size(full))) == list(range(size(a))):
            # tile x rest covers exactly the layout: the same values, permuted
            assert sorted(r(i) for i in range(size(a))) == sorted(a(i) for i in range(size(a)))
        done += 1


def test_logical_product_random() -> None:
    rng = random.Random(9)
    done = 0
    while done < 1000:
        block = injective_layout(rng, extents=POW2 + [3], max_size=64)
        tiler = random_layout(rng, extents=POW2 + [3], max_rank=2, max_size=64)
        try:
            r = logical_product(block, tiler)
        except LayoutError:
            continue
        assert r[0] == block
        rest = complement(block, size(block) * cosize(tiler))
        placed = [distributed(rest, tiler, t) for t in range(size(tiler))]
        if is_injective(tiler):
            assert placed == [coalesce(rest)(tiler(t)) for t in range(size(tiler))]
        for c in range(size(block)):
            for t in range(size(tiler)):
                assert r(c, t) == block(c) + placed[t]
        done += 1


def test_blocked_and_raked_products_random() -> None:
    rng = random.Random(10)
    done = 0
    while done < 300:
        block = injective_layout(rng, extents=[1, 2, 3, 4], max_rank=2, max_depth=1, max_size=64)
        tiler = injective_layout(rng, extents=[1, 2, 3, 4], max_rank=2, max_depth=1, max_size=64)
        if len(block) != 2 or len(tiler) != 2:
            continue
        try:
            p = logical_product(block, tiler)
        except LayoutError:
            continue
        bp = blocked_product(block, tiler)
        rp = raked_product(block, tiler)
        (s0, s1), (t0, t1) = (size(block[0]), size(block[1])), (size(tiler[0]), size(tiler[1]))
        for b0, b1, r0, r1 in itertools.product(range(s0), range(s1), range(t0), range(t1)):
            v = p((b0, b1), (r0, r1))
            assert bp(b0 + s0 * r0, b1 + s1 * r1) == v
            assert rp(r0 + t0 * b0, r1 + t1 * b1) == v
        done += 1


def test_max_common_vector() -> None:
    row = Layout((4, 8), (8, 1))
    col = Layout((4, 8), (1, 4))
    assert max_common_vector(row, row) == 32
    assert max_common_vector(col, row) == 1
    assert max_common_vector(Layout((4, 8), (1, 8)), Layout((4, 8), (1, 4))) == 4
    rng = random.Random(11)
    for _ in range(500):
        a = injective_layout(rng, max_size=256)
        b = make_ordered_layout(a.shape, _random_order(rng, a.shape))
        n = max_common_vector(a, b)
        r = right_inverse(b)
        for i in range(n):
            assert a(r(i)) == i
        assert n == size(r) or a(r(n)) != n


def _random_order(rng: random.Random, shape) -> tuple:
    k = len(flatten(shape))
    order = list(range(k))
    rng.shuffle(order)
    from tests.layout.gen import _rebuild

    return _rebuild(shape, iter(order))


# --- hypothesis -------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(layouts())
def test_hyp_coalesce(a: Layout) -> None:
    check_coalesce(a)


@settings(max_examples=200, deadline=None)
@given(layouts(extents=POW2 + [3, 6], max_size=1024), layouts(max_rank=2, extents=POW2, max_size=256))
def test_hyp_composition(a: Layout, b: Layout) -> None:
    try:
        check_composition(a, b)
    except LayoutError:
        return


@settings(max_examples=200, deadline=None)
@given(layouts(injective=True, max_size=512), st.integers(1, 2048))
def test_hyp_complement(a: Layout, cotarget: int) -> None:
    check_complement(a, cotarget)


@settings(max_examples=200, deadline=None)
@given(layouts(injective=True))
def test_hyp_inverses(a: Layout) -> None:
    check_right_inverse(a)
    check_left_inverse(a)
