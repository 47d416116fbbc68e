"""`argus kernels list`, `argus interpret`, `argus ir`."""

from __future__ import annotations

import textwrap

from typer.testing import CliRunner

from argus.cli.main import app

runner = CliRunner()


def test_kernels_list() -> None:
    result = runner.invoke(app, ["kernels", "list"])
    assert result.exit_code == 0
    for name in ("vector_add", "softmax", "layer_norm", "gemm_mma_sync", "gemm_cp_async"):
        assert name in result.output


def test_interpret_matches_and_exits_zero() -> None:
    result = runner.invoke(app, ["interpret", "softmax", "--shape", "M=6,N=100"])
    assert result.exit_code == 0, result.output
    assert "match" in result.output and "M=6, N=100" in result.output


def test_interpret_mismatch_exits_one(tmp_path) -> None:
    path = tmp_path / "mykernels.py"
    path.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from argus.kernels import get_kernel
            from dataclasses import replace

            good = get_kernel("vector_add")
            wrong = replace(good, name="vector_add_wrong_reference", reference=lambda a: {"C": a["A"] - a["B"]})
            """
        )
    )
    result = runner.invoke(app, ["interpret", f"{path}:wrong"])
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output
    ok = runner.invoke(app, ["interpret", f"{path}:good", "--shape", "N=777"])
    assert ok.exit_code == 0, ok.output


def test_interpret_bad_input_exits_two() -> None:
    result = runner.invoke(app, ["interpret", "sofmax"])
    assert result.exit_code == 2 and "did you mean 'softmax'" in result.output
    result = runner.invoke(app, ["interpret", "softmax", "--shape", "M=x"])
    assert result.exit_code == 2 and "KERNEL_BAD_SHAPE" in result.output


def test_ir_prints_the_kernel() -> None:
    result = runner.invoke(app, ["ir", "gemm_cp_async"])
    assert result.exit_code == 0, result.output
    assert "kernel gemm_cp_async(" in result.output
    assert "cp.async.wait_group 1" in result.output and "gemm" in result.output


def test_help_of_each_command() -> None:
    for cmd in (["kernels", "--help"], ["kernels", "list", "--help"], ["interpret", "--help"], ["ir", "--help"]):
        result = runner.invoke(app, cmd)
        assert result.exit_code == 0 and "Usage" in result.output


def test_compile_reports_resources_and_sass() -> None:
    result = runner.invoke(app, ["compile", "gemm_cp_async"])
    assert result.exit_code == 0, result.output
    assert "HMMA" in result.output and "LDSM" in result.output and "LDGSTS" in result.output
    cuda = runner.invoke(app, ["compile", "vector_add", "--cuda"])
    assert cuda.exit_code == 0 and "__global__" in cuda.output and "elementwise.py:" in cuda.output


def test_compile_bad_name_exits_two() -> None:
    result = runner.invoke(app, ["compile", "gemm_warp_specialised"])
    assert result.exit_code == 2 and "did you mean 'gemm_warp_specialized'" in result.output
