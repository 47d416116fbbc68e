"""Parser for the fragment tables in ``data/``: the PTX ISA's fragment figures written as text.

Each non-comment line is one row of the matrix; each whitespace-separated cell is
``T<thread>:<letter><index>`` (``T5:a3``: thread 5 holds element a3 there) or, for ``ldmatrix``,
``T<lane>:r<register>.<half>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"

_CELL = re.compile(r"T(\d+):([a-z])(\d+)(?:\.(\d))?")


@dataclass(frozen=True)
class Cell:
    row: int
    col: int
    thread: int
    letter: str
    index: int
    half: int | None


def read_table(name: str) -> tuple[list[Cell], int, int]:
    """The cells of table `name`, and its number of rows and columns."""
    cells: list[Cell] = []
    rows = 0
    cols = None
    for line in (DATA / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        if cols is None:
            cols = len(tokens)
        if len(tokens) != cols:
            raise ValueError(f"{name}: row {rows} has {len(tokens)} cells, expected {cols}")
        for col, token in enumerate(tokens):
            match = _CELL.fullmatch(token)
            if match is None:
                raise ValueError(f"{name}: row {rows}, column {col}: cannot parse cell {token!r}")
            thread, letter, index, half = match.groups()
            cells.append(Cell(rows, col, int(thread), letter, int(index), None if half is None else int(half)))
        rows += 1
    return cells, rows, cols or 0
