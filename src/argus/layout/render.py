"""Text and PNG pictures of layouts.

Owns `format_layout` (CuTe's ``print_layout``: the value ``L(i, j)`` of every coordinate of a
rank-2 layout, in a grid), `format_tv_layout` (which thread and value own each element of an
``M x N`` tile, as CuTe's ``print_latex_tv`` draws it), and their PNG counterparts
`draw_layout_png` and `draw_tv_layout_png`, which need Pillow (``pip install 'argus-kernels[viz]'``)
and import it only when called.

A layout given as a string is parsed with `parse_layout` first. Grids are indexed the way CuTe
indexes them: row ``i`` ranges over mode 0 and column ``j`` over mode 1, each mode evaluated with a
single integer (a hierarchical mode splits it column-major); a rank-1 layout is one row.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus.layout.errors import LayoutError
from argus.layout.int_tuple import product
from argus.layout.layout import Layout
from argus.layout.parse import parse_layout
from argus.layout.swizzle import ComposedLayout

__all__ = [
    "PALETTE",
    "GridImage",
    "draw_layout_png",
    "draw_tv_layout_png",
    "format_layout",
    "format_tv_layout",
]

#: Fill colours of PNG cells, indexed by ``value % 8`` (layouts) or ``thread % 8`` (TV layouts):
#: the eight pastel colours of CuTe's LaTeX pictures.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (175, 175, 255),
    (175, 255, 175),
    (255, 255, 175),
    (255, 175, 175),
    (210, 210, 255),
    (210, 255, 210),
    (255, 255, 210),
    (255, 210, 210),
)

#: PNG pictures larger than this many cells are refused (a picture that size is unreadable anyway).
MAX_PNG_CELLS = 256 * 256

_AnyLayout = Layout | ComposedLayout


# --- evaluation --------------------------------------------------------------------------------


def _as_layout(layout: Any, what: str) -> _AnyLayout:
    if isinstance(layout, str):
        return parse_layout(layout)
    if isinstance(layout, (Layout, ComposedLayout)):
        return layout
    raise LayoutError(
        "LAYOUT_BAD_OPERAND", f"{what} must be a Layout, a ComposedLayout or a layout string, got {layout!r}"
    )


def _grid_values(layout: _AnyLayout) -> tuple[int, int, Callable[[int, int], int]]:
    """(rows, columns, cell function) of a rank-1 or rank-2 layout, for pictures."""
    r = len(layout)
    if r > 2:
        raise LayoutError(
            "LAYOUT_RENDER_RANK",
            f"cannot draw {layout} as a grid: it has rank {r}, a picture shows rank 1 or 2",
            "group the modes into two, e.g. make_layout(make_layout(L[0], L[1]), L[2]), or draw a slice "
            "L(None, None, 0)",
        )
    shape = layout.shape
    if r == 2:
        return product(shape[0]), product(shape[1]), lambda i, j: layout(i, j)
    return 1, product(shape), lambda i, j: layout(j)


def _tv_shape(tile_shape: Any) -> tuple[int, int]:
    try:
        if len(tile_shape) != 2:
            raise TypeError
        m, n = (operator.index(x) for x in tile_shape)
    except TypeError:
        raise LayoutError(
            "LAYOUT_BAD_SHAPE", f"tile shape {tile_shape!r} must be a pair of positive integers (M, N)"
        ) from None
    if isinstance(m, bool) or isinstance(n, bool) or m < 1 or n < 1:
        raise LayoutError("LAYOUT_BAD_SHAPE", f"tile shape {tile_shape!r} must be a pair of positive integers (M, N)")
    return m, n


@dataclass(frozen=True)
class _TVCells:
    """Owners of each element of an ``M x N`` tile under a TV layout."""

    first: list[list[tuple[int, int] | None]]  # [m][n] -> (thread, value) of the first owner
    count: list[list[int]]  # [m][n] -> number of owners

    @property
    def broadcast(self) -> int:
        return sum(1 for row in self.count for c in row if c > 1)


def _tv_cells(tv: _AnyLayout, tile_shape: Any) -> _TVCells:
    m_extent, n_extent = _tv_shape(tile_shape)
    if len(tv) != 2:
        raise LayoutError(
            "LAYOUT_RENDER_RANK",
            f"{tv} is not a thread-value layout: it has rank {len(tv)}, a TV layout has two modes (thread, value)",
            "group the thread modes into mode 0 and the value modes into mode 1, e.g. make_layout(thr, val)",
        )
    threads, values = product(tv.shape[0]), product(tv.shape[1])
    first: list[list[tuple[int, int] | None]] = [[None] * n_extent for _ in range(m_extent)]
    count = [[0] * n_extent for _ in range(m_extent)]
    tile = m_extent * n_extent
    for t in range(threads):
        for v in range(values):
            idx = tv(t, v)
            if not 0 <= idx < tile:
                raise LayoutError(
                    "LAYOUT_TV_OUT_OF_TILE",
                    f"TV layout {tv} maps thread {t}, value {v} to index {idx}, outside the "
                    f"{m_extent}x{n_extent} tile [0, {tile})",
                    "the tile must hold every index the layout produces; check the tile shape (M, N)",
                )
            m, n = idx % m_extent, idx // m_extent
            if first[m][n] is None:
                first[m][n] = (t, v)
            count[m][n] += 1
    return _TVCells(first, count)


# --- text --------------------------------------------------------------------------------------


def _text_grid(title: str, cells: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> str:
    """`title`, then the cells framed CuTe-style with column indices above and row indices left."""
    rows = len(cells)
    cols = len(cells[0]) if rows else 0
    width = max([len(str(cols - 1))] + [len(c) for row in cells for c in row])
    label = max(2, len(str(rows - 1)))
    pad = " " * (label + 2)
    rule = pad + ("+" + "-" * (width + 2)) * cols + "+"
    lines = [title, pad + "".join(f"  {j:>{width}} " for j in range(cols)).rstrip()]
    for i, row in enumerate(cells):
        lines.append(rule)
        lines.append(f"{i:>{label}}  " + "".join(f"| {c:>{width}} " for c in row) + "|")
    lines.append(rule)
    lines.extend(notes)
    return "\n".join(lines)


def format_layout(layout: Layout | ComposedLayout | str) -> str:
    """CuTe's ``print_layout``: the layout's string, then a grid whose cell (i, j) holds ``L(i, j)``.

    Rows range over mode 0 and columns over mode 1 (each mode of any depth, evaluated with one
    integer); a rank-1 layout is one row. Composed (swizzled) layouts are evaluated through their
    call. Cells are as wide as the widest value. Raises `LayoutError` ``LAYOUT_RENDER_RANK`` for
    rank > 2. No trailing newline.
    """
    layout = _as_layout(layout, "format_layout's operand")
    rows, cols, value = _grid_values(layout)
    cells = [[str(value(i, j)) for j in range(cols)] for i in range(rows)]
    return _text_grid(str(layout), cells)


def _tv_label(owner: tuple[int, int] | None) -> str:
    return "." if owner is None else f"T{owner[0]}V{owner[1]}"


def format_tv_layout(tv_layout: Layout | ComposedLayout | str, tile_shape: tuple[int, int]) -> str:
    """Which thread and value own each element of an ``M x N`` tile, CuTe's ``print_latex_tv`` as text.

    `tv_layout` maps (thread, value) to an index of the tile, column-major: ``m = idx % M``,
    ``n = idx // M``; mode 0 is the thread mode and mode 1 the value mode (each may be
    hierarchical). Cell (m, n) shows ``T{t}V{v}`` of its first owner (by thread, then value), or
    ``.`` when nobody owns it; when some cells have several owners a note under the grid counts
    them. Raises `LayoutError`: ``LAYOUT_TV_OUT_OF_TILE`` when an index lies outside
    ``[0, M*N)``, ``LAYOUT_RENDER_RANK`` when the layout is not of rank 2, ``LAYOUT_BAD_SHAPE``
    for a bad `tile_shape`.
    """
    tv = _as_layout(tv_layout, "format_tv_layout's operand")
    m_extent, n_extent = _tv_shape(tile_shape)
    owners = _tv_cells(tv, (m_extent, n_extent))
    cells = [[_tv_label(owner) for owner in row] for row in owners.first]
    notes = []
    if owners.broadcast:
        notes.append(
            f"note: {owners.broadcast} of {m_extent * n_extent} cells have several owners (broadcast); "
            "each shows its first owner"
        )
    return _text_grid(f"{tv} on tile ({m_extent},{n_extent})", cells, notes)


# --- PNG ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GridImage:
    """Where a PNG picture of a grid was written and where its cells are.

    Cell (row, col) covers the pixels ``cell_box(row, col)``: ``(left, top, right, bottom)`` with
    `right` and `bottom` exclusive.
    """

    path: Path
    width: int
    height: int
    rows: int
    cols: int
    origin: tuple[int, int]
    cell_size: tuple[int, int]

    def cell_box(self, row: int, col: int) -> tuple[int, int, int, int]:
        """Pixel box ``(left, top, right, bottom)`` of cell (row, col); right and bottom exclusive."""
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise LayoutError(
                "LAYOUT_BAD_COORDINATE", f"cell ({row}, {col}) is outside the {self.rows}x{self.cols} grid"
            )
        x = self.origin[0] + col * self.cell_size[0]
        y = self.origin[1] + row * self.cell_size[1]
        return x, y, x + self.cell_size[0], y + self.cell_size[1]

    def cell_center(self, row: int, col: int) -> tuple[int, int]:
        """The pixel at the centre of cell (row, col)."""
        left, top, right, bottom = self.cell_box(row, col)
        return (left + right) // 2, (top + bottom) // 2


def _pillow() -> tuple[Any, Any, Any]:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise LayoutError(
            "LAYOUT_NEEDS_PILLOW",
            "drawing a layout as PNG needs Pillow, which is not installed",
            "pip install 'argus-kernels[viz]'",
        ) from None
    return Image, ImageDraw, ImageFont


def _font(image_font: Any, size: int) -> Any:
    try:
        return image_font.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has no size argument and only a small bitmap font
        return image_font.load_default()


def _draw_grid(
    title: str,
    labels: Sequence[Sequence[str]],
    fills: Sequence[Sequence[tuple[int, int, int]]],
    path: str | os.PathLike[str],
) -> GridImage:
    """Draw `labels` in cells filled with `fills`, indices along the top and left, `title` above."""
    image_mod, draw_mod, font_mod = _pillow()
    rows = len(labels)
    cols = len(labels[0]) if rows else 0
    if rows * cols > MAX_PNG_CELLS:
        raise LayoutError(
            "LAYOUT_RENDER_SIZE",
            f"{title} has {rows}x{cols} cells, more than the {MAX_PNG_CELLS} a PNG picture draws",
            "draw a slice or a tile of the layout instead (e.g. L(None, 0), or zipped_divide by a tile)",
        )
    font = _font(font_mod, 14)
    title_font = _font(font_mod, 16)
    measure = draw_mod.Draw(image_mod.new("RGB", (1, 1)))

    def text_size(text: str, f: Any) -> tuple[int, int]:
        left, top, right, bottom = measure.textbbox((0, 0), text, font=f)
        return right - left, bottom - top

    pad, margin = 6, 10
    widest = max([text_size(s, font)[0] for row in labels for s in row] + [text_size(str(cols - 1), font)[0]])
    line_height = max(text_size("0123456789TV.-", font)[1], 1)
    cell_w = max(widest + 2 * pad, line_height + 2 * pad)
    cell_h = line_height + 2 * pad
    row_label_w = text_size(str(max(rows - 1, 0)), font)[0] + 2 * pad
    title_w, title_h = text_size(title, title_font)
    x0 = margin + row_label_w
    y0 = margin + title_h + pad + cell_h  # title, then the column-index row
    width = max(x0 + cols * cell_w + margin, title_w + 2 * margin)
    height = y0 + rows * cell_h + margin

    image = image_mod.new("RGB", (width, height), (255, 255, 255))
    draw = draw_mod.Draw(image)

    def centred(text: str, box: tuple[int, int, int, int], f: Any) -> None:
        left, top, right, bottom = draw.textbbox((0, 0), text, font=f)
        x = (box[0] + box[2] - (right - left)) // 2 - left
        y = (box[1] + box[3] - (bottom - top)) // 2 - top
        draw.text((x, y), text, fill=(0, 0, 0), font=f)

    draw.text((margin, margin), title, fill=(0, 0, 0), font=title_font)
    for j in range(cols):
        centred(str(j), (x0 + j * cell_w, y0 - cell_h, x0 + (j + 1) * cell_w, y0), font)
    for i in range(rows):
        centred(str(i), (margin, y0 + i * cell_h, x0, y0 + (i + 1) * cell_h), font)
        for j in range(cols):
            box = (x0 + j * cell_w, y0 + i * cell_h, x0 + (j + 1) * cell_w, y0 + (i + 1) * cell_h)
            draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=fills[i][j], outline=(0, 0, 0))
            centred(labels[i][j], box, font)
    out = Path(path)
    image.save(out, format="PNG")
    return GridImage(out, width, height, rows, cols, (x0, y0), (cell_w, cell_h))


def draw_layout_png(layout: Layout | ComposedLayout | str, path: str | os.PathLike[str]) -> GridImage:
    """Write a PNG picture of `layout` to `path`: the grid of `format_layout`, each cell filled with
    ``PALETTE[L(i, j) % 8]`` and labelled with its value, indices along the top and left, the
    layout's string as the title. Returns where the cells were drawn.

    Raises `LayoutError` ``LAYOUT_NEEDS_PILLOW`` without Pillow, ``LAYOUT_RENDER_RANK`` for
    rank > 2, ``LAYOUT_RENDER_SIZE`` beyond `MAX_PNG_CELLS` cells.
    """
    layout = _as_layout(layout, "draw_layout_png's operand")
    rows, cols, value = _grid_values(layout)
    values = [[value(i, j) for j in range(cols)] for i in range(rows)]
    labels = [[str(v) for v in row] for row in values]
    fills = [[PALETTE[v % len(PALETTE)] for v in row] for row in values]
    return _draw_grid(str(layout), labels, fills, path)


def draw_tv_layout_png(
    tv_layout: Layout | ComposedLayout | str, tile_shape: tuple[int, int], path: str | os.PathLike[str]
) -> GridImage:
    """Write a PNG picture of a thread-value layout over an ``M x N`` tile to `path`, as
    `format_tv_layout` lays it out: each cell labelled ``T{t}V{v}`` and filled with
    ``PALETTE[t % 8]`` of its first owner (white when nobody owns it). Returns where the cells
    were drawn.

    Raises what `format_tv_layout` raises, and ``LAYOUT_NEEDS_PILLOW`` without Pillow.
    """
    tv = _as_layout(tv_layout, "draw_tv_layout_png's operand")
    m_extent, n_extent = _tv_shape(tile_shape)
    owners = _tv_cells(tv, (m_extent, n_extent))
    labels = [[_tv_label(owner) for owner in row] for row in owners.first]
    fills = [
        [(255, 255, 255) if owner is None else PALETTE[owner[0] % len(PALETTE)] for owner in row]
        for row in owners.first
    ]
    return _draw_grid(f"{tv} on tile ({m_extent},{n_extent})", labels, fills, path)
