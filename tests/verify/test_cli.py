"""`argus verify`: exit 0 verified, 1 violated, 2 unknown; --json prints the result as data."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from argus.cli.output import OptionalValueCommand
from argus.cli.verify_cmd import verify

app = typer.Typer()
app.command("verify", cls=OptionalValueCommand)(verify)  # as argus.cli.main registers it: --json alone is stdout


@app.callback()
def _root() -> None:
    """test app"""


def _run(*args: str):
    return CliRunner().invoke(app, ["verify", *args])


def test_verified_library_kernel_exits_0() -> None:
    r = _run("gemm_cp_async")
    assert r.exit_code == 0, r.output
    assert "gemm_cp_async(" in r.output and ": verified" in r.output


def test_violation_exits_1_with_text_and_tables() -> None:
    r = _run("tests/verify/corpus/kernels_race_replicated_store.py:KERNEL")
    assert r.exit_code == 1, r.output
    assert "error[RACE_WRITE_WRITE]: possible write-write race on sA[" in r.output
    assert "~~~~ threads ~~~~" in r.output


def test_json_output() -> None:
    r = _run("tests/verify/corpus/kernels_mma_off_by_one_tile.py:KERNEL", "--json")
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["verdict"] == "violated"
    assert any(f["code"] == "MMA_K_MISMATCH" and f["counterexample"]["thread"] for f in data["findings"])


def test_unknown_exits_2() -> None:
    r = _run("tests/verify/corpus/kernels_unknown_roles_sync_producer.py:KERNEL")
    assert r.exit_code == 2, r.output
    assert "unknown[UNKNOWN_WARP_ROLES]" in r.output


def test_hopper_gemm_verifies() -> None:
    r = _run("gemm_warp_specialized")
    assert r.exit_code == 0, r.output


def test_pinned_shape_and_bad_name() -> None:
    assert _run("vector_add", "--shape", "N=4096").exit_code == 0
    r = _run("no_such_kernel")
    assert r.exit_code == 2 and "KERNEL_UNKNOWN" in r.output
