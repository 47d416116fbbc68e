"""Entry point of the `argus` command: the top-level app and its subcommand groups."""

from __future__ import annotations

import typer

from argus._version import __version__
from argus.agent import optimize_cmd, runs_cmd
from argus.cli import compile_cmd, eval_cmd, kb_cmd, kernels_cmd, layout_cmd, tour_cmd, verify_cmd
from argus.lineage import cli as lineage_cli

app = typer.Typer(
    name="argus",
    help="argus: verified, agent-driven GPU kernel optimization for NVIDIA Hopper.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(layout_cmd.app, name="layout")
app.add_typer(kernels_cmd.app, name="kernels")
app.add_typer(kb_cmd.app, name="kb")
app.add_typer(runs_cmd.app, name="runs")
app.add_typer(lineage_cli.app, name="lineage")
app.add_typer(lineage_cli.skills_app, name="skills")
app.command("interpret")(kernels_cmd.interpret)
app.command("ir")(kernels_cmd.ir)
app.command("compile")(compile_cmd.compile_kernel_cli)
app.command("verify")(verify_cmd.verify)
app.command("bench")(eval_cmd.bench)
app.command("kernelbench")(eval_cmd.kernelbench)
app.command("tour")(tour_cmd.tour)
app.command("optimize")(optimize_cmd.optimize)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"argus {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """argus: verified, agent-driven GPU kernel optimization for NVIDIA Hopper."""


def main() -> None:
    app()
