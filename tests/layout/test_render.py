"""Tests of `argus.layout.render`: golden text grids, TV grids, and PNG pictures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, make_layout
from argus.layout.render import (
    PALETTE,
    GridImage,
    draw_layout_png,
    draw_tv_layout_png,
    format_layout,
    format_tv_layout,
)

# --- helpers ---------------------------------------------------------------------------------


def grid_cells(text: str) -> list[list[str]]:
    """The cell strings of a rendered grid, row by row (read back from the text, not recomputed)."""
    rows = []
    for line in text.splitlines()[2:]:
        if "|" not in line:
            continue
        label, _, rest = line.partition("|")
        assert label.strip().isdigit(), line
        assert int(label) == len(rows), line
        rows.append([cell.strip() for cell in rest.split("|")[:-1]])
    return rows


def column_header(text: str) -> list[int]:
    return [int(x) for x in text.splitlines()[1].split()]


# --- golden text -----------------------------------------------------------------------------

ROW_MAJOR_4x8 = """\
(4,8):(8,1)
       0    1    2    3    4    5    6    7
    +----+----+----+----+----+----+----+----+
 0  |  0 |  1 |  2 |  3 |  4 |  5 |  6 |  7 |
    +----+----+----+----+----+----+----+----+
 1  |  8 |  9 | 10 | 11 | 12 | 13 | 14 | 15 |
    +----+----+----+----+----+----+----+----+
 2  | 16 | 17 | 18 | 19 | 20 | 21 | 22 | 23 |
    +----+----+----+----+----+----+----+----+
 3  | 24 | 25 | 26 | 27 | 28 | 29 | 30 | 31 |
    +----+----+----+----+----+----+----+----+"""

# Row i = (i0, i1) with i = i0 + 2*i1 gives i0*1 + i1*4; column j = (j0, j1) with j = j0 + 2*j1 gives j0*2 + j1*8.
HIERARCHICAL = """\
((2,2),(2,4)):((1,4),(2,8))
       0    1    2    3    4    5    6    7
    +----+----+----+----+----+----+----+----+
 0  |  0 |  2 |  8 | 10 | 16 | 18 | 24 | 26 |
    +----+----+----+----+----+----+----+----+
 1  |  1 |  3 |  9 | 11 | 17 | 19 | 25 | 27 |
    +----+----+----+----+----+----+----+----+
 2  |  4 |  6 | 12 | 14 | 20 | 22 | 28 | 30 |
    +----+----+----+----+----+----+----+----+
 3  |  5 |  7 | 13 | 15 | 21 | 23 | 29 | 31 |
    +----+----+----+----+----+----+----+----+"""

# Sw<3,0,3> XORs bits 3..5 (the row) into bits 0..2 (the column): L(i, j) = 8*i + (j ^ i).
SWIZZLED = """\
Sw<3,0,3> o 0 o (8,8):(8,1)
       0    1    2    3    4    5    6    7
    +----+----+----+----+----+----+----+----+
 0  |  0 |  1 |  2 |  3 |  4 |  5 |  6 |  7 |
    +----+----+----+----+----+----+----+----+
 1  |  9 |  8 | 11 | 10 | 13 | 12 | 15 | 14 |
    +----+----+----+----+----+----+----+----+
 2  | 18 | 19 | 16 | 17 | 22 | 23 | 20 | 21 |
    +----+----+----+----+----+----+----+----+
 3  | 27 | 26 | 25 | 24 | 31 | 30 | 29 | 28 |
    +----+----+----+----+----+----+----+----+
 4  | 36 | 37 | 38 | 39 | 32 | 33 | 34 | 35 |
    +----+----+----+----+----+----+----+----+
 5  | 45 | 44 | 47 | 46 | 41 | 40 | 43 | 42 |
    +----+----+----+----+----+----+----+----+
 6  | 54 | 55 | 52 | 53 | 50 | 51 | 48 | 49 |
    +----+----+----+----+----+----+----+----+
 7  | 63 | 62 | 61 | 60 | 59 | 58 | 57 | 56 |
    +----+----+----+----+----+----+----+----+"""

RANK1_NEGATIVE = """\
8:-1
       0    1    2    3    4    5    6    7
    +----+----+----+----+----+----+----+----+
 0  |  0 | -1 | -2 | -3 | -4 | -5 | -6 | -7 |
    +----+----+----+----+----+----+----+----+"""

# The SM80 16x8 accumulator: thread t = (t0, t1), value v = (v0, v1);
# idx = 32*t0 + t1 + 16*v0 + 8*v1, so m = t1 + 8*v1 and n = 2*t0 + v0 on a 16x8 tile (column-major).
MMA_TV = """\
((4,8),(2,2)):((32,1),(16,8)) on tile (16,8)
          0       1       2       3       4       5       6       7
    +-------+-------+-------+-------+-------+-------+-------+-------+
 0  |  T0V0 |  T0V1 |  T1V0 |  T1V1 |  T2V0 |  T2V1 |  T3V0 |  T3V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 1  |  T4V0 |  T4V1 |  T5V0 |  T5V1 |  T6V0 |  T6V1 |  T7V0 |  T7V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 2  |  T8V0 |  T8V1 |  T9V0 |  T9V1 | T10V0 | T10V1 | T11V0 | T11V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 3  | T12V0 | T12V1 | T13V0 | T13V1 | T14V0 | T14V1 | T15V0 | T15V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 4  | T16V0 | T16V1 | T17V0 | T17V1 | T18V0 | T18V1 | T19V0 | T19V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 5  | T20V0 | T20V1 | T21V0 | T21V1 | T22V0 | T22V1 | T23V0 | T23V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 6  | T24V0 | T24V1 | T25V0 | T25V1 | T26V0 | T26V1 | T27V0 | T27V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 7  | T28V0 | T28V1 | T29V0 | T29V1 | T30V0 | T30V1 | T31V0 | T31V1 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 8  |  T0V2 |  T0V3 |  T1V2 |  T1V3 |  T2V2 |  T2V3 |  T3V2 |  T3V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
 9  |  T4V2 |  T4V3 |  T5V2 |  T5V3 |  T6V2 |  T6V3 |  T7V2 |  T7V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
10  |  T8V2 |  T8V3 |  T9V2 |  T9V3 | T10V2 | T10V3 | T11V2 | T11V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
11  | T12V2 | T12V3 | T13V2 | T13V3 | T14V2 | T14V3 | T15V2 | T15V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
12  | T16V2 | T16V3 | T17V2 | T17V3 | T18V2 | T18V3 | T19V2 | T19V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
13  | T20V2 | T20V3 | T21V2 | T21V3 | T22V2 | T22V3 | T23V2 | T23V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
14  | T24V2 | T24V3 | T25V2 | T25V3 | T26V2 | T26V3 | T27V2 | T27V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+
15  | T28V2 | T28V3 | T29V2 | T29V3 | T30V2 | T30V3 | T31V2 | T31V3 |
    +-------+-------+-------+-------+-------+-------+-------+-------+"""

# Threads (t0, t1) with t1 of stride 0: threads 0 and 2 (and 1 and 3) own the same elements.
BROADCAST_TV = """\
((2,2),2):((1,0),2) on tile (2,2)
         0      1
    +------+------+
 0  | T0V0 | T0V1 |
    +------+------+
 1  | T1V0 | T1V1 |
    +------+------+
note: 4 of 4 cells have several owners (broadcast); each shows its first owner"""

# Indices 0, 2, 4, 6 of a 4x2 tile: rows 1 and 3 belong to nobody.
SPARSE_TV = """\
(2,2):(2,4) on tile (4,2)
         0      1
    +------+------+
 0  | T0V0 | T0V1 |
    +------+------+
 1  |    . |    . |
    +------+------+
 2  | T1V0 | T1V1 |
    +------+------+
 3  |    . |    . |
    +------+------+"""

MMA = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))


def test_golden_row_major() -> None:
    layout = Layout((4, 8), (8, 1))
    text = format_layout(layout)
    assert text == ROW_MAJOR_4x8
    cells = grid_cells(text)
    assert [[int(c) for c in row] for row in cells] == [[8 * i + j for j in range(8)] for i in range(4)]
    assert [[int(c) for c in row] for row in cells] == [[layout(i, j) for j in range(8)] for i in range(4)]


def test_golden_hierarchical() -> None:
    layout = Layout(((2, 2), (2, 4)), ((1, 4), (2, 8)))
    text = format_layout(layout)
    assert text == HIERARCHICAL
    cells = [[int(c) for c in row] for row in grid_cells(text)]
    by_hand = [[(i % 2) * 1 + (i // 2) * 4 + (j % 2) * 2 + (j // 2) * 8 for j in range(8)] for i in range(4)]
    assert cells == by_hand
    assert cells == [[layout((i % 2, i // 2), (j % 2, j // 2)) for j in range(8)] for i in range(4)]


def test_golden_swizzled() -> None:
    layout = ComposedLayout(Swizzle(3, 0, 3), 0, Layout((8, 8), (8, 1)))
    text = format_layout(layout)
    assert text == SWIZZLED
    cells = [[int(c) for c in row] for row in grid_cells(text)]
    assert cells == [[8 * i + (j ^ i) for j in range(8)] for i in range(8)]
    assert cells == [[layout(i, j) for j in range(8)] for i in range(8)]
    # Each row of a swizzled tile is still a permutation of the unswizzled row.
    assert all(sorted(row) == list(range(8 * i, 8 * i + 8)) for i, row in enumerate(cells))


def test_rank1_layout_is_one_row() -> None:
    text = format_layout(Layout(8, -1))
    assert text == RANK1_NEGATIVE
    assert [int(c) for c in grid_cells(text)[0]] == [-j for j in range(8)]


def test_format_layout_accepts_a_string() -> None:
    assert format_layout("(4,8):(8,1)") == ROW_MAJOR_4x8
    assert format_layout("Sw<3,0,3> o 0 o (8,8):(8,1)") == SWIZZLED


def test_cell_width_adapts_to_the_widest_value() -> None:
    text = format_layout(Layout((2, 3), (1000, 1)))
    assert text.splitlines()[2] == "    +------+------+------+"
    assert text.splitlines()[5] == " 1  | 1000 | 1001 | 1002 |"
    narrow = format_layout(Layout((2, 2), (1, 2)))
    assert narrow.splitlines()[2] == "    +---+---+"


def test_many_rows_widen_the_row_labels() -> None:
    text = format_layout(Layout((128, 1), (1, 0)))
    lines = text.splitlines()
    assert lines[-2].startswith("127  | 127 |")
    assert lines[3].startswith("  0  |   0 |")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.data(),
)
def test_random_rank2_grid_cells_equal_layout_values(rows: list[int], cols: list[int], data: st.DataObject) -> None:
    row_strides = [data.draw(st.integers(-50, 50)) for _ in rows]
    col_strides = [data.draw(st.integers(-50, 50)) for _ in cols]
    layout = make_layout(Layout(tuple(rows), tuple(row_strides)), Layout(tuple(cols), tuple(col_strides)))
    text = format_layout(layout)
    assert text.splitlines()[0] == str(layout)
    cells = grid_cells(text)
    n_rows, n_cols = layout[0].size(), layout[1].size()
    assert column_header(text) == list(range(n_cols))
    assert len(cells) == n_rows

    def by_hand(index: int, shape: list[int], stride: list[int]) -> int:
        total = 0
        for s, d in zip(shape, stride, strict=True):
            total += (index % s) * d
            index //= s
        return total

    for i in range(n_rows):
        assert len(cells[i]) == n_cols
        for j in range(n_cols):
            assert int(cells[i][j]) == by_hand(i, rows, row_strides) + by_hand(j, cols, col_strides)


def test_rank3_is_refused_with_a_hint() -> None:
    with pytest.raises(LayoutError) as info:
        format_layout(Layout((2, 2, 2)))
    assert info.value.code == "LAYOUT_RENDER_RANK"
    assert "rank 3" in info.value.message
    assert info.value.hint and "make_layout" in info.value.hint


def test_non_layout_operand_is_refused() -> None:
    with pytest.raises(LayoutError) as info:
        format_layout(42)  # type: ignore[arg-type]
    assert info.value.code == "LAYOUT_BAD_OPERAND"


# --- TV layouts ------------------------------------------------------------------------------


def test_golden_mma_tv_layout() -> None:
    text = format_tv_layout(MMA, (16, 8))
    assert text == MMA_TV
    cells = grid_cells(text)
    for m in range(16):
        for n in range(8):
            # Inverted by hand from idx = 32*t0 + t1 + 16*v0 + 8*v1 = m + 16*n.
            t = n // 2 + 4 * (m % 8)
            v = n % 2 + 2 * (m // 8)
            assert cells[m][n] == f"T{t}V{v}"
            assert MMA(t, v) == m + 16 * n


def test_mma_tv_layout_does_not_fit_an_8x8_tile() -> None:
    # The layout covers 128 elements; an 8x8 tile has 64, so some index falls outside it.
    with pytest.raises(LayoutError) as info:
        format_tv_layout(MMA, (8, 8))
    assert info.value.code == "LAYOUT_TV_OUT_OF_TILE"
    assert "[0, 64)" in info.value.message


def test_tv_broadcast_shows_first_owner_and_a_note() -> None:
    layout = Layout(((2, 2), 2), ((1, 0), 2))
    text = format_tv_layout(layout, (2, 2))
    assert text == BROADCAST_TV
    assert layout(2, 0) == layout(0, 0)  # thread 2 is a broadcast copy of thread 0


def test_tv_unowned_cells_show_a_dot() -> None:
    text = format_tv_layout("(2,2):(2,4)", (4, 2))
    assert text == SPARSE_TV
    assert "note" not in text


def test_tv_negative_index_is_out_of_tile() -> None:
    with pytest.raises(LayoutError) as info:
        format_tv_layout(Layout((2, 2), (-1, 2)), (4, 4))
    assert info.value.code == "LAYOUT_TV_OUT_OF_TILE"


@pytest.mark.parametrize("tile", [(0, 4), (4,), (4, 4, 4), "4,4", (4, 2.5)])
def test_tv_bad_tile_shape(tile: object) -> None:
    with pytest.raises(LayoutError) as info:
        format_tv_layout(Layout((2, 2)), tile)  # type: ignore[arg-type]
    assert info.value.code == "LAYOUT_BAD_SHAPE"


def test_tv_layout_must_have_rank_two() -> None:
    with pytest.raises(LayoutError) as info:
        format_tv_layout(Layout(8), (8, 1))
    assert info.value.code == "LAYOUT_RENDER_RANK"


# --- PNG -------------------------------------------------------------------------------------


def _fill(path: Path, picture: GridImage, row: int, col: int) -> tuple[int, int, int]:
    """The dominant colour of the middle of a cell (its fill; the label covers less of it)."""
    from PIL import Image

    left, top, right, bottom = picture.cell_box(row, col)
    w, h = right - left, bottom - top
    with Image.open(path) as image:
        middle = image.convert("RGB").crop((left + w // 4, top + h // 4, right - w // 4, bottom - h // 4))
        colours = middle.getcolors(maxcolors=w * h)
    assert colours
    return max(colours)[1]


def test_png_is_written_with_the_grid_size(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    from PIL import Image

    path = tmp_path / "layout.png"
    picture = draw_layout_png(Layout((4, 8), (8, 1)), path)
    assert path.exists()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        assert image.size == (picture.width, picture.height)
    assert (picture.rows, picture.cols) == (4, 8)
    right, bottom = picture.cell_box(3, 7)[2:]
    assert right <= picture.width and bottom <= picture.height


def test_png_size_grows_with_the_grid(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    small = draw_layout_png(Layout((4, 4), (4, 1)), tmp_path / "a.png")
    wider = draw_layout_png(Layout((4, 16), (16, 1)), tmp_path / "b.png")
    taller = draw_layout_png(Layout((16, 4), (4, 1)), tmp_path / "c.png")
    assert wider.width > small.width and wider.height == small.height
    assert taller.height > small.height


def test_png_cells_are_coloured_by_value_mod_8(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    path = tmp_path / "colours.png"
    layout = Layout((2, 8), (8, 1))
    picture = draw_layout_png(layout, path)
    first_row = [_fill(path, picture, 0, j) for j in range(8)]
    assert len(set(first_row)) == 8  # values 0..7: eight different colours
    assert first_row == list(PALETTE)
    for j in range(8):  # values 8..15 repeat the colours of 0..7
        assert _fill(path, picture, 1, j) == first_row[j]


def test_png_of_swizzled_layout_follows_the_swizzled_values(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    path = tmp_path / "swizzled.png"
    layout = ComposedLayout(Swizzle(3, 0, 3), 0, Layout((8, 8), (8, 1)))
    picture = draw_layout_png(layout, path)
    for i in (0, 1, 5):
        for j in range(8):
            assert _fill(path, picture, i, j) == PALETTE[(j ^ i) % 8]


def test_tv_png_is_coloured_by_thread(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    path = tmp_path / "tv.png"
    picture = draw_tv_layout_png(MMA, (16, 8), path)
    assert (picture.rows, picture.cols) == (16, 8)
    assert _fill(path, picture, 0, 0) == _fill(path, picture, 0, 1) == PALETTE[0]  # T0V0, T0V1
    assert _fill(path, picture, 0, 2) == PALETTE[1]  # T1V0
    assert _fill(path, picture, 1, 0) == PALETTE[4]  # T4V0
    assert _fill(path, picture, 2, 0) == PALETTE[0]  # T8V0
    assert len({_fill(path, picture, 0, n) for n in range(0, 8, 2)}) == 4


def test_tv_png_unowned_cells_are_white(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    path = tmp_path / "sparse.png"
    picture = draw_tv_layout_png("(2,2):(2,4)", (4, 2), path)
    assert _fill(path, picture, 1, 0) == (255, 255, 255)
    assert _fill(path, picture, 0, 0) == PALETTE[0]
    assert _fill(path, picture, 2, 0) == PALETTE[1]


def test_png_64x64_stays_readable(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    picture = draw_layout_png(Layout((64, 64), (64, 1)), tmp_path / "big.png")
    assert (picture.rows, picture.cols) == (64, 64)
    cell_w, cell_h = picture.cell_size
    assert cell_h >= 16 and cell_w >= 4 * 7  # room for four digits of a legible font
    assert picture.width < 5000 and picture.height < 3000


def test_png_errors_are_layout_errors(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    with pytest.raises(LayoutError) as info:
        draw_layout_png(Layout((2, 2, 2)), tmp_path / "x.png")
    assert info.value.code == "LAYOUT_RENDER_RANK"
    with pytest.raises(LayoutError) as info:
        draw_tv_layout_png(MMA, (8, 8), tmp_path / "y.png")
    assert info.value.code == "LAYOUT_TV_OUT_OF_TILE"
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "y.png").exists()


def test_png_without_pillow_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(LayoutError) as info:
        draw_layout_png(Layout(4), tmp_path / "none.png")
    assert info.value.code == "LAYOUT_NEEDS_PILLOW"
    assert "pip install 'argus-kernels[viz]'" in str(info.value)
    with pytest.raises(LayoutError):
        draw_tv_layout_png(Layout((2, 2)), (2, 2), tmp_path / "none.png")
