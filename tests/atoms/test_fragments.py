"""The atoms' thread-value layouts, cell by cell, against the PTX ISA's fragment figures.

Each table in ``data/`` is a figure of the PTX ISA written as text (see its header for the figure);
for every cell the atom's layout must map (thread, value) to exactly that (row, col), and every
(thread, value) of the layout must appear in the table exactly once.
"""

from __future__ import annotations

import itertools

import pytest

from argus.atoms import WGMMA_N_VALUES, ldmatrix, mma_sync_m16n8k16, stmatrix, wgmma
from argus.ir.types import bf16, f16, f32
from argus.layout import Layout

from .fragment_tables import read_table


def _check_table(name: str, layout: Layout, threads: int, shape: tuple[int, int], index_of, value_of) -> None:
    """`index_of(row, col)` is the tile index the atom uses for the figure's cell (row, col);
    `value_of(cell)` the value index the convention gives the cell's element."""
    cells, rows, cols = read_table(name)
    assert (rows, cols) == shape, f"{name}: table is {rows}x{cols}, expected {shape}"
    values = layout.size() // threads
    seen = set()
    for cell in cells:
        value = value_of(cell)
        assert 0 <= cell.thread < threads and 0 <= value < values, f"{name}: cell {cell} out of range"
        got = layout(cell.thread, value)
        assert got == index_of(cell.row, cell.col), (
            f"{name}: T{cell.thread} value {value} maps to tile index {got}, "
            f"but the figure puts it at row {cell.row}, col {cell.col} (index {index_of(cell.row, cell.col)})"
        )
        seen.add((cell.thread, value))
    assert len(seen) == len(cells) == threads * values, f"{name}: some (thread, value) is missing or repeated"


def _ptx_value(cell) -> int:
    return cell.index


def _ldmatrix_value(cell) -> int:
    assert cell.letter == "r" and cell.half in (0, 1)
    return 2 * cell.index + cell.half


# --- mma.sync.m16n8k16 ------------------------------------------------------------------------------


@pytest.mark.parametrize("ab, acc", [(bf16, f32), (f16, f32), (f16, f16)])
def test_mma_m16n8k16_a(ab, acc):
    atom = mma_sync_m16n8k16(ab, ab, acc)
    _check_table("mma_m16n8k16_a.txt", atom.a_layout, 32, (16, 16), lambda r, c: r + 16 * c, _ptx_value)


@pytest.mark.parametrize("ab, acc", [(bf16, f32), (f16, f32), (f16, f16)])
def test_mma_m16n8k16_b(ab, acc):
    # The figure draws B as K x N (rows k, columns n); the atom's B tile is (N, K).
    atom = mma_sync_m16n8k16(ab, ab, acc)
    _check_table("mma_m16n8k16_b.txt", atom.b_layout, 32, (16, 8), lambda k, n: n + 8 * k, _ptx_value)


@pytest.mark.parametrize("ab, acc", [(bf16, f32), (f16, f32), (f16, f16)])
def test_mma_m16n8k16_c(ab, acc):
    atom = mma_sync_m16n8k16(ab, ab, acc)
    _check_table("mma_m16n8k16_c.txt", atom.c_layout, 32, (16, 8), lambda m, n: m + 16 * n, _ptx_value)


def test_mma_table_letters_match_operands():
    for name, letter in (("mma_m16n8k16_a.txt", "a"), ("mma_m16n8k16_b.txt", "b"), ("mma_m16n8k16_c.txt", "c")):
        cells, _, _ = read_table(name)
        assert {c.letter for c in cells} == {letter}


# --- wgmma.m64nNk16 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.parametrize("source", ["shared", "registers"])
@pytest.mark.parametrize("ab, acc", [(bf16, f32), (f16, f32), (f16, f16)])
def test_wgmma_d_table(n, source, ab, acc):
    atom = wgmma(n, ab, ab, acc, a_source=source)
    _check_table(f"wgmma_m64n{n}k16_d.txt", atom.c_layout, 128, (64, n), lambda m, c: m + 64 * c, _ptx_value)


@pytest.mark.parametrize("ab, acc", [(bf16, f32), (f16, f32), (f16, f16)])
def test_wgmma_a_registers_table(ab, acc):
    atom = wgmma(64, ab, ab, acc, a_source="registers")
    _check_table("wgmma_m64nNk16_a.txt", atom.a_layout, 128, (64, 16), lambda m, k: m + 64 * k, _ptx_value)


def _ptx_wgmma_d(thread: int, i: int) -> tuple[int, int]:
    """The figure's rule for D, as its header states it, for any N."""
    warp, lane = divmod(thread, 32)
    row = 16 * warp + (lane >> 2) + (8 if i % 4 >= 2 else 0)
    col = 8 * (i // 4) + 2 * (lane % 4) + (i % 2)
    return row, col


@pytest.mark.parametrize("n", WGMMA_N_VALUES)
def test_wgmma_d_every_n_follows_the_figure_rule(n):
    atom = wgmma(n)
    assert atom.values_per_thread("C") == n // 2  # d0 .. d{N/2-1}
    seen = set()
    for thread, i in itertools.product(range(128), range(n // 2)):
        row, col = _ptx_wgmma_d(thread, i)
        assert atom.coord("C", thread, i) == (row, col), (n, thread, i)
        seen.add((row, col))
    assert len(seen) == 64 * n


def test_wgmma_d_rule_agrees_with_the_tables():
    for n in (8, 16):
        cells, _, _ = read_table(f"wgmma_m64n{n}k16_d.txt")
        for cell in cells:
            assert _ptx_wgmma_d(cell.thread, cell.index) == (cell.row, cell.col)


# --- ldmatrix / stmatrix -------------------------------------------------------------------------


@pytest.mark.parametrize("num", [1, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_destination_fragments(num, trans):
    name = f"ldmatrix_x{num}{'_trans' if trans else ''}.txt"
    rows = 8 * num
    atom = ldmatrix(num, trans)
    assert atom.dst_layout == atom.fragment_layout
    _check_table(name, atom.dst_layout, 32, (rows, 8), lambda r, c: r + rows * c, _ldmatrix_value)


@pytest.mark.parametrize("num", [1, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_source_fragments_are_ldmatrix_destinations(num, trans):
    # stmatrix stores the registers ldmatrix loads, with the same fragment layout (PTX ISA, "stmatrix").
    name = f"ldmatrix_x{num}{'_trans' if trans else ''}.txt"
    rows = 8 * num
    atom = stmatrix(num, trans)
    assert atom.src_layout == atom.fragment_layout
    _check_table(name, atom.src_layout, 32, (rows, 8), lambda r, c: r + rows * c, _ldmatrix_value)


def test_ldmatrix_x2_is_the_first_half_of_x4():
    for trans in (False, True):
        x2, x4 = ldmatrix(2, trans), ldmatrix(4, trans)
        for lane, value in itertools.product(range(32), range(4)):
            r2, c2 = x2.fragment_layout(lane, value) % 16, x2.fragment_layout(lane, value) // 16
            r4, c4 = x4.fragment_layout(lane, value) % 32, x4.fragment_layout(lane, value) // 32
            assert (r2, c2) == (r4, c4)
