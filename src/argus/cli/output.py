"""How every `argus` command prints tables and documents: one policy for tables, ``--json`` and ``--markdown``.

Tables. An identifier (a kernel name, a knowledge-base id, a run or candidate id, a shape such as
``M=100,N=72,K=80`` that a user copies into another command) is printed whole: never wrapped, truncated or
ellipsized. Other cells wrap and fold. `print_table` picks one of three forms:

* ``table`` — stdout is a terminal and the table fits its width (``$COLUMNS``): a `rich` table whose identifier
  columns never wrap and whose other columns wrap. Columns marked optional are left out, last first, until it fits;
  a note under the table names them (``--json`` has every field).
* ``records`` — a terminal too narrow for even that: one record per row, its first identifier unindented, then
  ``  header: value`` lines, nothing cut (the terminal wraps long values).
* ``tsv`` — stdout is not a terminal (a pipe, a file): a header line, then one line per row, cells separated by a
  tab, never cut, no colour or borders, no title (``cut -f1``, ``awk -F'\\t'``, ``column -t -s $'\\t'``, grep).

`rich`'s own detection decides what a terminal is, so ``TTY_COMPATIBLE=1`` / ``FORCE_COLOR`` force the terminal
forms and ``TTY_COMPATIBLE=0`` the piped one.

Documents. ``--json`` alone writes the JSON document to stdout (and nothing else goes to stdout); ``--json FILE``
writes the same document to FILE and the command prints its usual report. ``--markdown`` and ``--markdown FILE``
work the same way. A command takes these optional values by being declared with ``cls=OptionalValueCommand``
(the typer in use drops click's ``is_flag=False, flag_value=...``): ``--json`` followed by nothing or by another
option means stdout; followed by a word, the word is the file, unless the command would then miss a required
argument (``argus verify --json softmax`` prints softmax's result). ``--json -`` is stdout too; ``--json=FILE``
always names a file. Each command's help states its document's schema; listings are JSON arrays of objects with
fixed keys.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any, Literal

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer._click.exceptions import UsageError  # the parser's errors (typer vendors click)
from typer.core import TyperCommand

STDOUT = "-"
ELLIPSIS = "…"

#: The options whose value may be left out (meaning `STDOUT`).
OPTIONAL_VALUE_OPTIONS = ("--json", "--markdown")


@dataclass(frozen=True)
class Column:
    """A table column. `identifier`: each cell printed whole, never wrapped or truncated. `optional`: the whole
    column is left out (last first) when the table does not fit the terminal. `min_width`: the narrowest a wrapping
    column may get."""

    header: str
    identifier: bool = False
    optional: bool = False
    justify: Literal["left", "right"] = "left"
    min_width: int = 12


def stdout_console() -> Console:
    """A console on stdout, made when called, so that the width (``$COLUMNS``) and stdout of that moment apply."""
    return Console(soft_wrap=True)


def _clean(cell: Any) -> str:
    return " ".join(str(cell).replace("\t", " ").splitlines())


def tsv_lines(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The piped form: the header line and one tab-separated line per row (tabs and newlines in cells become
    spaces)."""
    return ["\t".join(c.header for c in columns)] + ["\t".join(_clean(cell) for cell in row) for row in rows]


def record_lines(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The narrow-terminal form: per row, the first identifier cell unindented, then ``  header: value``."""
    key = next((i for i, c in enumerate(columns) if c.identifier), 0)
    lines = []
    for row in rows:
        lines.append(str(row[key]))
        lines += [f"  {c.header}: {cell}" for i, (c, cell) in enumerate(zip(columns, row, strict=True)) if i != key]
    return lines


def _rich_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Any]],
    keep: Sequence[int],
    title: str | None,
    caption: str | None,
) -> Table:
    table = Table(
        title=title, caption=caption, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left"
    )
    for i in keep:
        c = columns[i]
        if c.identifier:
            table.add_column(c.header, justify=c.justify, no_wrap=True, overflow="ellipsis")
        else:
            table.add_column(c.header, justify=c.justify, overflow="fold")
    for row in rows:
        table.add_row(*[Text(str(row[i])) for i in keep])
    return table


def _fits(columns: Sequence[Column], rows: Sequence[Sequence[Any]], keep: Sequence[int], width: int) -> bool:
    """Whether the identifier columns at full width (header included) and the others at their `min_width` (or less,
    when their cells and the longest word of their header are narrower) fit in `width`; rich's table adds 2 cells
    of padding per column but none at the two edges, and 1 between columns."""
    need = 3 * len(keep) - 3
    for i in keep:
        c = columns[i]
        cells = max((cell_len(line) for r in rows for line in str(r[i]).splitlines()), default=0)
        if c.identifier:
            need += max(cells, cell_len(c.header))
        else:
            need += min(max(cells, *(cell_len(word) for word in c.header.split())), c.min_width)
    return need <= width


def _intact(text: str, columns: Sequence[Column], rows: Sequence[Sequence[Any]], keep: Sequence[int]) -> bool:
    """No ellipsis that the cells did not have, and every identifier cell whole."""
    cells = [str(r[i]) for r in rows for i in keep]
    if text.count(ELLIPSIS) != sum(c.count(ELLIPSIS) for c in cells):
        return False
    return all(str(r[i]) in text for r in rows for i in keep if columns[i].identifier)


def print_table(
    columns: Sequence[Column],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
    console: Console | None = None,
) -> Literal["table", "records", "tsv"]:
    """Print `rows` under `columns` in the form the module docstring describes; return the form used. Every
    identifier cell appears whole in the output and no ``…`` is added, whatever the width."""
    console = console or stdout_console()
    rows = [list(r) for r in rows]
    if not console.is_terminal:
        console.file.write("".join(line + "\n" for line in tsv_lines(columns, rows)))  # not rich: it expands tabs
        console.file.flush()
        return "tsv"
    width = console.width
    keep = list(range(len(columns)))
    droppable = [i for i, c in enumerate(columns) if c.optional]
    while True:
        if _fits(columns, rows, keep, width):
            left_out = [columns[i].header for i in range(len(columns)) if i not in keep]
            note = (
                f"left out to fit {width} columns: {', '.join(left_out)} (--json has every field)" if left_out else None
            )
            note = textwrap.fill(note, width) if note else None  # rich does not wrap a caption wider than the table
            full_caption = "\n".join(x for x in (caption, note) if x) or None
            table = _rich_table(columns, rows, keep, title, full_caption)
            probe = Console(width=width, file=StringIO(), color_system=None, soft_wrap=False)
            probe.print(table)
            if _intact(probe.file.getvalue(), columns, rows, keep):  # type: ignore[attr-defined]
                console.print(table)
                return "table"
        if not droppable:
            break
        keep.remove(droppable.pop())
    for line in ([title] if title else []) + record_lines(columns, rows) + ([caption] if caption else []):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return "records"


def markdown_table(columns: Sequence[Column], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table (``|`` in cells escaped, newlines as ``<br>``), right-justified columns
    aligned right; ends with a newline."""

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\r\n", "\n").replace("\n", "<br>")

    lines = ["| " + " | ".join(cell(c.header) for c in columns) + " |"]
    lines.append("|" + "|".join("---:" if c.justify == "right" else "---" for c in columns) + "|")
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_stdout(dest: str | None) -> bool:
    """Whether a ``--json`` / ``--markdown`` value means standard output."""
    return dest == STDOUT


def emit_text(text: str, dest: str) -> Path | None:
    """`text` to stdout when `dest` is ``-``, else written to the file `dest` (a newline added when missing);
    returns the file's path, or None for stdout."""
    text = text if text.endswith("\n") else text + "\n"
    if dest == STDOUT:
        typer.echo(text, nl=False)
        return None
    path = Path(dest).expanduser()
    path.write_text(text)
    return path


def emit_json(obj: Any, dest: str) -> Path | None:
    """The JSON document `obj` (indented 2, keys in the order given) to stdout when `dest` is ``-``, else to the
    file `dest`; returns the file's path, or None for stdout. Values JSON cannot hold are written as ``str()``."""
    return emit_text(json.dumps(obj, indent=2, default=str), dest)


def json_option(schema: str) -> Any:
    """The ``--json [FILE]`` option; `schema` says what the document holds (it goes into the help)."""
    return typer.Option(
        None,
        "--json",
        metavar="[FILE]",
        help=f"JSON to stdout (alone) or to FILE: {schema}",
        show_default=False,
    )


def markdown_option(what: str = "the table") -> Any:
    """The ``--markdown [FILE]`` option."""
    return typer.Option(
        None,
        "--markdown",
        metavar="[FILE]",
        help=f"{what} as markdown, to stdout (alone) or to FILE",
        show_default=False,
    )


def check_one_stdout(**dests: str | None) -> None:
    """Refuse two documents on stdout at once (``--json --markdown``)."""
    on_stdout = [f"--{name}" for name, dest in dests.items() if dest == STDOUT]
    if len(on_stdout) > 1:
        raise typer.BadParameter(f"{' and '.join(on_stdout)} both write to stdout: give one of them a FILE")


class OptionalValueCommand(TyperCommand):
    """A command whose ``--json`` and ``--markdown`` options take an optional value (see the module docstring):
    before parsing, a bare ``--json`` becomes ``--json=-``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._fill_optional_values(ctx, list(args)))

    def _fill_optional_values(self, ctx: Any, args: list[str]) -> list[str]:
        names = {opt for p in self.params for opt in getattr(p, "opts", ()) if opt in OPTIONAL_VALUE_OPTIONS}
        out: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                return out + args[i:]
            if arg in names:
                following = args[i + 1] if i + 1 < len(args) else None
                bare = following is None or (following.startswith("-") and following != STDOUT)
                if not bare:  # a word: the file, unless taking it leaves a required argument without a value
                    rest = args[i + 2 :]
                    bare = self._misses_argument(ctx, [*out, arg, following, *rest]) and not self._misses_argument(
                        ctx, [*out, f"{arg}={STDOUT}", following, *rest]
                    )
                if bare:
                    out.append(f"{arg}={STDOUT}")
                    i += 1
                    continue
            out.append(arg)
            i += 1
        return out

    def _misses_argument(self, ctx: Any, args: list[str]) -> bool:
        try:
            opts, _, _ = self.make_parser(ctx).parse_args(args=list(args))
        except UsageError:
            return False  # the real parse reports it
        required = [p for p in self.params if p.param_type_name == "argument" and p.required]
        return any(opts.get(p.name) in (None, ()) for p in required)
