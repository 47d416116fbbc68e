"""`argus tour`: the README's first command."""

from __future__ import annotations

import typer

from argus.tour import run_tour


def tour() -> None:
    """A short tour of what argus can do today (layouts, swizzles, Z3 proofs) and what is not built yet."""
    raise typer.Exit(run_tour())
