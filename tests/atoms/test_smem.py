"""Canonical shared-memory layouts of wgmma operands against the PTX ISA's "Canonical Layouts" table."""

from __future__ import annotations

import itertools

import pytest

from argus.atoms import (
    DESCRIPTOR_SWIZZLE_ENCODING,
    SWIZZLE_REPEAT_BYTES,
    AtomError,
    Major,
    canonical_smem_layout,
    check_swizzle_base,
    descriptor_offsets,
    swizzle_atom,
    tma_load,
)
from argus.ir.types import bf16, e4m3, f16, f32
from argus.layout import Layout, Swizzle

SWIZZLES = (0, 32, 64, 128)
#: PTX writes the swizzle on byte offsets: Swizzle<B,4,3> (PTX ISA, "Canonical Layouts", last column).
PTX_BYTE_SWIZZLE = {0: Swizzle(0, 4, 3), 32: Swizzle(1, 4, 3), 64: Swizzle(2, 4, 3), 128: Swizzle(3, 4, 3)}


def _ptx_canonical(major: str, swizzle: int, t: int, m: int, k: int, lbo: int, sbo: int) -> Layout:
    """The PTX ISA's canonical layout table, transcribed (elements; m, k are the repeat counts)."""
    c = max(1, swizzle // 16)
    if major == "K":
        if swizzle == 0:
            return Layout(((8, m), (t, 2 * k)), ((t, sbo), (1, lbo)))  # ((8,m),(T,2k)):((1T,SBO),(1,LBO))
        return Layout(((8, m), (t, 2 * k)), ((c * t, sbo), (1, t)))  # ((8,m),(T,2k)):((cT,SBO),(1,T))
    if swizzle == 0:
        return Layout(((t, 1, m), (8, k)), ((1, t, sbo), (t, lbo)))  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
    return Layout(((t, c, m), (8, k)), ((1, t, lbo), (c * t, sbo)))  # ((T,c,m),(8,k)):((1,T,LBO),(cT,SBO))


def _cases():
    for dtype, major, swizzle in itertools.product((bf16, f16, f32, e4m3), ("K", "MN"), SWIZZLES):
        if major == "MN" and dtype.bits != 16:
            continue
        yield dtype, major, swizzle


@pytest.mark.parametrize("dtype, major, swizzle", list(_cases()))
def test_swizzle_atom_is_a_bijection(dtype, major, swizzle):
    atom = swizzle_atom(dtype, major, swizzle)
    t = 128 // dtype.bits
    row = max(1, swizzle // 16) * t
    assert atom.shape == ((8, row) if major == "K" else (row, 8))
    size = 8 * row
    rows, cols = atom.shape
    image = sorted(atom(i, j) for i in range(rows) for j in range(cols))
    assert image == list(range(size)), "not a bijection onto one swizzle pattern"
    assert size * dtype.bits // 8 == 8 * max(16, swizzle)  # 8 rows of the swizzle width


@pytest.mark.parametrize("dtype, major, swizzle", list(_cases()))
def test_canonical_layout_matches_ptx_table(dtype, major, swizzle):
    """Every coordinate of our tile lands where the PTX canonical layout, with our LBO/SBO, puts it
    (the PTX swizzle applied to byte offsets)."""
    t = 128 // dtype.bits
    row = max(1, swizzle // 16) * t
    nbytes = dtype.itemsize
    if major == "K":
        k_extent = max(2 * t, row)  # whole swizzle rows; at least the 2 chunks of the PTX table's (T, 2k)
        shapes = [(64, k_extent), (128, k_extent)] + ([(64, 8 * t)] if swizzle == 0 else [])
    else:
        shapes = [(row, 16), (2 * row, 32)]
    for mn, k in shapes:
        ours = canonical_smem_layout(dtype, major, swizzle, mn, k)
        lbo, sbo = descriptor_offsets(dtype, major, swizzle, mn, k)
        assert sbo % nbytes == 0 and (lbo is None or lbo % nbytes == 0)
        if major == "K":
            m_rep, k_rep = mn // 8, k // (2 * t)
        else:
            m_rep, k_rep = mn // row, k // 8
        ptx = _ptx_canonical(major, swizzle, t, m_rep, k_rep, (lbo or 0) // nbytes, sbo // nbytes)
        for i, j in itertools.product(range(mn), range(k)):
            assert ours(i, j) * nbytes == PTX_BYTE_SWIZZLE[swizzle](ptx((i, j)) * nbytes), (mn, k, i, j)


@pytest.mark.parametrize("dtype, major, swizzle", list(_cases()))
@pytest.mark.parametrize("atoms_mn, atoms_k", [(1, 1), (2, 1), (1, 3), (4, 2)])
def test_canonical_tile_is_a_bijection(dtype, major, swizzle, atoms_mn, atoms_k):
    t = 128 // dtype.bits
    row = max(1, swizzle // 16) * t
    mn, k = (8 * atoms_mn, row * atoms_k) if major == "K" else (row * atoms_mn, 8 * atoms_k)
    layout = canonical_smem_layout(dtype, major, swizzle, mn, k)
    assert sorted(layout(i, j) for i in range(mn) for j in range(k)) == list(range(mn * k))


@pytest.mark.parametrize(
    "dtype, major, swizzle, mn, k, exact",
    [
        # "Exact layout" of the PTX ISA's examples (Canonical Layouts, Examples), without the swizzle.
        (f32, "K", 0, 16, 16, Layout(((8, 2), (4, 4)), ((4, 32), (1, 64)))),
        (bf16, "MN", 0, 16, 16, Layout(((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128)))),
        (bf16, "MN", 32, 32, 16, Layout(((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256)))),
        (bf16, "MN", 64, 64, 16, Layout(((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512)))),
    ],
)
def test_ptx_examples(dtype, major, swizzle, mn, k, exact):
    ours = canonical_smem_layout(dtype, major, swizzle, mn, k)
    for i, j in itertools.product(range(mn), range(k)):
        assert ours.outer((i, j)) == exact((i, j))


@pytest.mark.parametrize(
    "dtype, major, swizzle, mn, k, lbo, sbo",
    [
        # (LBO, SBO) in bytes from the PTX ISA's examples
        (f32, "K", 0, 16, 16, 64 * 4, 32 * 4),
        (f32, "K", 32, 16, 8, None, 64 * 4),
        (bf16, "MN", 0, 16, 16, 128 * 2, 64 * 2),
        (bf16, "MN", 32, 32, 16, 128 * 2, 256 * 2),
        (bf16, "MN", 64, 64, 16, 256 * 2, 512 * 2),
        # CUTLASS's usual 128-byte-swizzled K-major bf16 tile: 8 rows of 128 bytes per SBO step
        (bf16, "K", 128, 128, 64, None, 1024),
    ],
)
def test_descriptor_offsets(dtype, major, swizzle, mn, k, lbo, sbo):
    assert descriptor_offsets(dtype, major, swizzle, mn, k) == (lbo, sbo)


def test_tma_box_lands_in_the_canonical_k_major_layout():
    """A TMA box of (one swizzle row) x rows with swizzle W writes exactly the K-major canonical tile
    wgmma reads (same swizzle): the two facts agree."""
    load = tma_load(2)
    for dtype, swizzle in itertools.product((bf16, f32), (0, 32, 64, 128)):
        row = max(16, swizzle) // dtype.itemsize
        box = (row, 64)
        tma = load.smem_layout(dtype, box, swizzle)
        wg = canonical_smem_layout(dtype, Major.K, swizzle, 64, row) if swizzle else None
        for k, mn in itertools.product(range(row), range(64)):
            if wg is not None:
                assert tma(k, mn) == wg(mn, k)
        assert sorted(tma(k, mn) for k in range(row) for mn in range(64)) == list(range(64 * row))


@pytest.mark.parametrize(
    "args, code",
    [
        ((bf16, "K", 128, 60, 64), "ATOM_SMEM_TILE"),
        ((bf16, "K", 128, 64, 32), "ATOM_SMEM_TILE"),  # K shorter than one 128-byte row
        ((bf16, "MN", 64, 16, 16), "ATOM_SMEM_TILE"),
        ((bf16, "MN", 0, 16, 12), "ATOM_SMEM_TILE"),
        ((f32, "MN", 0, 16, 16), "ATOM_SMEM_MAJOR"),
        ((bf16, "X", 0, 16, 16), "ATOM_SMEM_MAJOR"),
        ((bf16, "K", 16, 64, 64), "ATOM_SWIZZLE_MODE"),
    ],
)
def test_canonical_layout_errors(args, code):
    with pytest.raises(AtomError) as err:
        canonical_smem_layout(*args)
    assert err.value.code == code
    assert err.value.actual is not None


def test_major_spellings():
    assert canonical_smem_layout(bf16, "m", 0, 8, 8) == canonical_smem_layout(bf16, Major.MN, 0, 8, 8)
    assert canonical_smem_layout(bf16, "n", 0, 8, 8) == canonical_smem_layout(bf16, "MN", 0, 8, 8)


def test_check_swizzle_base():
    for swizzle, repeat in SWIZZLE_REPEAT_BYTES.items():
        assert check_swizzle_base(3 * repeat, swizzle) == []
        problems = check_swizzle_base(repeat + 128, swizzle)
        assert [p.code for p in problems] == ["ATOM_SMEM_SWIZZLE_ALIGN"]
        assert str(repeat) in problems[0].requirement
    assert check_swizzle_base(16, 0) == []


def test_descriptor_swizzle_encoding_is_ptxs():
    assert DESCRIPTOR_SWIZZLE_ENCODING == {0: 0, 128: 1, 64: 2, 32: 3}


# --- panels: tiles wider than the swizzle span, for MN-major operands loaded box by box -------------------------


@pytest.mark.parametrize(("dtype", "swizzle"), [(bf16, 128), (f16, 64), (bf16, 32)])
@pytest.mark.parametrize(("rows", "panels"), [(16, 1), (64, 4), (32, 2)])
def test_panel_layout_is_tma_boxes_and_the_mn_major_canonical_layout(dtype, swizzle, rows, panels):
    import numpy as np

    from argus.atoms.smem import match_canonical, panel_layout, tma_box_swizzle

    p = swizzle // dtype.itemsize  # elements per panel row
    cols = p * panels
    layout = panel_layout((2, rows, cols), dtype, swizzle)
    grid = np.array([[[layout((s, r, c)) for c in range(cols)] for r in range(rows)] for s in range(2)])
    assert sorted(grid.ravel().tolist()) == list(range(2 * rows * cols))  # a bijection
    for j in range(panels):  # every panel is exactly the box TMA writes, in both stages
        box = grid[:, :, j * p : (j + 1) * p].reshape(2, -1)
        assert tma_box_swizzle(box - box[:, :1], (rows, p), dtype.bits) == swizzle
    # read with rows along K (k16 steps) and columns along MN: MN-major, LBO one panel, SBO 8 rows of one atom
    pre = layout.outer
    subs = [
        np.array([[pre((s, step * 16 + kk, mn)) for mn in range(cols) for kk in range(16)] for s in range(2)])
        for step in range(rows // 16)
    ]
    lbo = rows * swizzle if panels > 1 else 16
    assert match_canonical(subs, cols, 16, dtype, swizzle) == (Major.MN, lbo, 8 * swizzle)


def test_panel_layout_errors():
    from argus.atoms.smem import panel_layout

    for args in (((64, 96), bf16, 128), ((64, 128), bf16, 0), ((128,), bf16, 128)):
        with pytest.raises(AtomError) as e:
            panel_layout(*args)
        assert e.value.code == "ATOM_SMEM_TILE"


def test_a_box_inside_one_period_matches_several_modes_and_the_preferred_one_wins():
    """8 rows of 32 bytes land alike under the 32- and the 128-byte swizzle (both XOR offset bit 7 into bit 4; the
    wider one's other bits are 0 inside 256 bytes): without a preference the widest is named, with one the buffer's
    own mode (the hardware anchors the pattern at the absolute address, so the choice matters where the box starts
    inside a wider period). A box of a whole 128-byte period matches its own mode only."""
    import numpy as np

    from argus.atoms.smem import _swizzled, tma_box_swizzle
    from argus.atoms.swizzle import hopper_swizzle

    small = _swizzled(hopper_swizzle(32, 16), np.arange(8 * 16))[None, :]  # 8 rows x 16 bf16
    assert tma_box_swizzle(small, (8, 16), 16) == 128
    assert tma_box_swizzle(small, (8, 16), 16, prefer=32) == 32
    assert tma_box_swizzle(small, (8, 16), 16, prefer=64) == 64  # also the same offsets inside 256 bytes
    large = _swizzled(hopper_swizzle(128, 16), np.arange(8 * 64))[None, :]
    assert tma_box_swizzle(large, (8, 64), 16, prefer=32) == 128  # 32 does not match: the next that does
