"""The repository's promises: the README's two commands exist, and `.ci/run` runs the test one."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_readme_has_the_two_fresh_machine_commands() -> None:
    commands = readme_commands()
    assert any(c.endswith("argus tour") and "pip install" in c for c in commands)
    assert any(c.endswith("python -m pytest") and ".[dev]" in c for c in commands)


def test_ci_runs_the_readme_test_command() -> None:
    test_command = next(c for c in readme_commands() if c.endswith("python -m pytest"))
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci
    assert "set -euo pipefail" in ci


def test_version_is_consistent() -> None:
    import argus

    assert re.fullmatch(r"\d+\.\d+\.\d+", argus.__version__)


def test_ruff_is_clean() -> None:
    import subprocess
    import sys

    # through this interpreter, not PATH: a fresh virtual environment's bin/ is not on PATH unless activated
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "src", "tests"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
