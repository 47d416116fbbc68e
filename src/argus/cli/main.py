"""Entry point of the `argus` command: the top-level app and its subcommand groups."""

from __future__ import annotations

import typer
from typer.core import TyperGroup

from argus._version import __version__
from argus.agent.providers.secrets import scrub_secrets
from argus.cli import (
    calibrate_cmd,
    compile_cmd,
    eval_cmd,
    explain_cmd,
    kb_cmd,
    kernels_cmd,
    layout_cmd,
    lineage_cmd,
    optimize_cmd,
    runs_cmd,
    solve_cmd,
    tour_cmd,
    tune_cmd,
    verify_cmd,
)
from argus.cli.errors import debugging, user_error
from argus.cli.output import OptionalValueCommand
from argus.diagnostics import ArgusError


class ArgusGroup(TyperGroup):
    """The top-level command: a user error (`ArgusError`) raised by any subcommand is reported as its code, message
    and hint, exit status 2 (`argus.cli.errors.user_error`), however the command is invoked (tests call the app
    without `main`)."""

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except ArgusError as e:
            user_error(e)


app = typer.Typer(
    name="argus",
    cls=ArgusGroup,
    help="argus: verified, agent-driven GPU kernel optimization for NVIDIA Hopper.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(layout_cmd.app, name="layout")
app.add_typer(kernels_cmd.app, name="kernels")
app.add_typer(kb_cmd.app, name="kb")
app.add_typer(runs_cmd.app, name="runs")
app.add_typer(lineage_cmd.app, name="lineage")
app.add_typer(lineage_cmd.skills_app, name="skills")
app.command("interpret")(kernels_cmd.interpret)
app.command("ir")(kernels_cmd.ir)
app.command("compile")(compile_cmd.compile_kernel_cli)
app.command("verify", cls=OptionalValueCommand)(verify_cmd.verify)  # --json alone: stdout (argus.cli.output)
app.command("bench", cls=OptionalValueCommand)(eval_cmd.bench)
app.command("kernelbench", cls=OptionalValueCommand)(eval_cmd.kernelbench)
app.command("solve", cls=OptionalValueCommand)(solve_cmd.solve)
app.command("tune", cls=OptionalValueCommand)(tune_cmd.tune)
app.command("tour")(tour_cmd.tour)
app.command("optimize", cls=OptionalValueCommand)(optimize_cmd.optimize)
app.command("explain", cls=OptionalValueCommand)(explain_cmd.explain)
app.command("calibrate", cls=OptionalValueCommand)(calibrate_cmd.calibrate)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"argus {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", help="Show the Python traceback of an error (also anywhere on the line, or ARGUS_DEBUG=1)."
    ),
) -> None:
    """argus: verified, agent-driven GPU kernel optimization for NVIDIA Hopper."""


def main() -> None:
    """Run the command. A user error (any `ArgusError`: a code, a message, a hint) is printed without a traceback
    and exits 2; an unexpected exception says it is argus's bug and exits 3; Ctrl-C exits 130. ``--debug``
    anywhere on the command line (or ``ARGUS_DEBUG=1``) shows the traceback instead."""
    import os
    import sys

    if "--debug" in sys.argv[1:]:
        sys.argv = [a for a in sys.argv if a != "--debug"]
        os.environ["ARGUS_DEBUG"] = "1"
    debug = debugging()
    try:
        app()
    except ArgusError as e:
        if debug:
            raise
        sys.stderr.write(scrub_secrets(str(e)) + "\n")
        sys.exit(2)
    except KeyboardInterrupt:
        if debug:
            raise
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except Exception as e:
        if debug:
            raise
        sys.stderr.write(
            f"internal error: {type(e).__name__}: {e}\n"
            "  this is a bug in argus, not in your input: rerun with --debug for the traceback, and report it\n"
        )
        sys.exit(3)
