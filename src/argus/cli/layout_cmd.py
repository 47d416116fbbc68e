"""`argus layout`: inspect CuTe layouts from the command line.

Owns the `layout` command group (`show`). It only parses arguments and prints; the work is done by
`argus.layout.parse` and `argus.layout.render`, which library users call directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from argus.layout.errors import LayoutError
from argus.layout.parse import parse_layout, parse_tile_shape
from argus.layout.render import draw_layout_png, draw_tv_layout_png, format_layout, format_tv_layout

app = typer.Typer(
    name="layout",
    help="Inspect CuTe layouts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _layout() -> None:
    """Inspect CuTe layouts."""


def _fail(message: str, code: int) -> typer.Exit:
    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False)
    return typer.Exit(code)


@app.command()
def show(
    layout: Annotated[
        str, typer.Argument(help="A layout as CuTe prints it, e.g. '(4,8):(8,1)' or 'Sw<3,4,3> o 0 o (8,64):(64,1)'.")
    ],
    tv: Annotated[
        str | None,
        typer.Option(
            "--tv",
            metavar="M,N",
            help="Read LAYOUT as a thread-value layout over an M x N tile (M,N or (M,N)) and show which thread "
            "and value own each element.",
        ),
    ] = None,
    png: Annotated[
        Path | None, typer.Option("--png", metavar="FILE", help="Also draw the picture into this PNG file.")
    ] = None,
) -> None:
    """Print LAYOUT as a grid of its values (or, with --tv, of the owning thread and value)."""
    try:
        parsed = parse_layout(layout)
        if tv is None:
            typer.echo(format_layout(parsed))
            if png is not None:
                draw_layout_png(parsed, png)
        else:
            tile = parse_tile_shape(tv)
            typer.echo(format_tv_layout(parsed, tile))
            if png is not None:
                draw_tv_layout_png(parsed, tile, png)
    except LayoutError as e:
        raise _fail(f"error: {e}", 2) from None
    except OSError as e:
        raise _fail(f"error: cannot write {png}: {e.strerror or e}", 1) from None
    if png is not None:
        typer.echo(f"wrote {png}")
