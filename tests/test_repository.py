"""The repository's promises: the README's two commands exist, and `.ci/run` runs the test one."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_commands() -> dict[str, str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_command", ROOT / ".ci" / "readme_command.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.readme_commands(ROOT / "README.md")


def test_readme_has_the_two_fresh_machine_commands() -> None:
    commands = readme_commands()
    assert set(commands) == {"main", "tests"}
    assert commands["main"].endswith("argus tour") and "pip install" in commands["main"]
    assert commands["tests"].endswith("python -m pytest") and ".[dev]" in commands["tests"]


def test_ci_runs_the_readme_commands() -> None:
    """`.ci/run` reads both commands from the README and runs them (the main job in a fresh clone)."""
    import subprocess
    import sys

    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci and "git clone" in ci
    for name, command in readme_commands().items():
        printed = subprocess.run([sys.executable, str(ROOT / ".ci" / "readme_command.py"), name],
                                 capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        assert printed == command
        assert f"readme_command.py {name}" in ci


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
