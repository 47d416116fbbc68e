"""`argus verify NAME|FILE.py:function [--json [FILE]] [--shape ...]`: run the verifier on a kernel.

``--json`` alone prints the result as JSON instead of the text report; ``--json FILE`` writes it to FILE and
prints the report (`argus.cli.output`). The document: ``{"kernel", "params", "verdict", "seconds", "findings",
"not_checked", "checks"}`` (`argus.verify.report.Result.to_json`; ``not_checked``: the checks not made, which a
`verified` verdict does not cover).

Exit status: 0 when everything is verified (warnings allowed), 1 on a violation, 2 when something
could not be decided (or the kernel could not be loaded or traced).
"""

from __future__ import annotations

import typer
from rich.console import Console

from argus.cli.errors import user_error
from argus.cli.output import STDOUT, emit_json, json_option
from argus.diagnostics import ArgusError

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

EXIT = {"verified": 0, "violated": 1, "unknown": 2}


def verify(
    name: str = typer.Argument(..., help="a library kernel, or FILE.py:NAME naming an @argus.kernel or LibraryKernel"),
    json_file: str | None = json_option(
        '{"kernel", "params", "verdict", "seconds", "findings", "not_checked", "checks"} (for programs and the agent)'
    ),
    shape: str = typer.Option("", "--shape", help="pin problem sizes, e.g. K=256 (default: every size allowed)"),
) -> None:
    """Prove the kernel's data-flow invariants and built-in checks; exit 0 verified, 1 violated, 2 unknown."""
    from argus.kernels.registry import LibraryKernel, load, parse_shape
    from argus.verify import verify as run_verifier

    try:
        entry = load(name)
        pinned = parse_shape(shape)
        if not isinstance(entry, LibraryKernel) and not hasattr(entry, "trace"):
            raise typer.BadParameter(f"{name} is neither a library kernel nor an @argus.kernel")
        result = run_verifier(entry, shapes=pinned)
    except ArgusError as e:
        user_error(e)
    written = emit_json(result.to_json(), json_file) if json_file is not None else None
    if json_file != STDOUT:
        out.print(result.render_text(tables=True), markup=False, highlight=False)
    if written is not None:
        err.print(f"wrote {written}", markup=False, highlight=False)
    raise typer.Exit(EXIT[result.verdict.value])
