"""The top-level `argus` command: help, version, the tour, and running as a real process."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from argus import __version__
from argus.cli.main import app

runner = CliRunner()


def test_help_lists_the_subcommands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "tour" in result.output and "layout" in result.output


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"argus {__version__}"


def test_tour_runs_and_is_honest() -> None:
    result = runner.invoke(app, ["tour"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "(4,8):(8,1)" in out
    assert "proved: Sw<3,3,3> o 0 o (8,64):(64,1)" in out
    assert "counterexample for the broken" in out
    assert "matches A @ B on the interpreter" in out
    assert "error[RACE_READ_WRITE]" in out and "with T.barrier(): verified" in out
    assert "HGMMA" in out and "UTMALDG" in out
    assert "Not built yet" in out


def test_unknown_command_fails() -> None:
    result = runner.invoke(app, ["no-such-command"])
    assert result.exit_code != 0


def test_python_dash_m_argus_runs_as_a_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "argus", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"argus {__version__}"
