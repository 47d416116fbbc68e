"""The interpreter computes the memory a run needs before it allocates anything and refuses a size over its budget
(``INTERP_MEMORY_BUDGET``: the bytes needed, the budget, how to raise it or use smaller sizes), instead of trying
to allocate hundreds of GiB; normal sizes still run."""

from __future__ import annotations

import time

import numpy as np
import pytest
from typer.testing import CliRunner

from argus.cli.main import app
from argus.interp import MAX_BYTES_ENV, InterpError, check_memory, memory_budget, memory_needed, run_kernel
from argus.interp.machine import DEFAULT_MAX_BYTES, parse_bytes
from argus.kernels.elementwise import vector_add
from argus.kernels.registry import check_on_interpreter, get_kernel

HUGE = {"M": 131072, "N": 131072, "K": 131072}


@pytest.fixture(autouse=True)
def _no_budget_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_BYTES_ENV, raising=False)


def traced(name: str):
    entry = get_kernel(name)
    return entry, entry.kernel.trace(**entry.params)


@pytest.mark.parametrize("name", ["gemm_naive", "gemm_warp_specialized"])
def test_a_huge_gemm_is_refused_at_once_with_the_bytes_it_needs(name: str) -> None:
    _, kernel = traced(name)
    n = HUGE["M"]
    needed = memory_needed(kernel, HUGE, arguments=True)
    assert needed["tensors"] == 3 * n * n * 8  # A (M, K), B, C (M, N): a float64 working copy of each
    assert needed["arguments"] == 3 * n * n * 8
    start = time.monotonic()
    with pytest.raises(InterpError) as error:
        check_memory(kernel, HUGE)
    assert time.monotonic() - start < 2
    e = error.value
    assert e.code == "INTERP_MEMORY_BUDGET"
    assert e.actual == f"{needed['total']} bytes" and str(needed["total"]) in e.message
    budget = memory_budget()
    assert str(budget) in e.message and budget <= DEFAULT_MAX_BYTES
    assert "--shape" in e.hint and MAX_BYTES_ENV in e.hint


def test_run_kernel_refuses_before_copying_the_tensors() -> None:
    """Zero-stride views stand for arrays of 128 GiB each without using that memory: the interpreter must refuse
    before its float64 working copies."""
    _, kernel = traced("gemm_naive")
    n = HUGE["M"]
    arrays = {name: np.broadcast_to(np.zeros(1), (n, n)) for name in ("A", "B", "C")}
    start = time.monotonic()
    with pytest.raises(InterpError) as error:
        run_kernel(kernel, arrays)
    assert error.value.code == "INTERP_MEMORY_BUDGET" and time.monotonic() - start < 2
    assert "M=131072" in error.value.message


def test_the_budget_is_exact_and_set_by_keyword_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _, kernel = traced("vector_add")
    a, b, c = np.arange(3000.0), np.ones(3000), np.zeros(3000)
    needed = memory_needed(kernel, {"N": 3000})["total"]
    with pytest.raises(InterpError, match="INTERP_MEMORY_BUDGET"):
        run_kernel(kernel, {"A": a, "B": b, "C": c}, max_bytes=needed - 1)
    assert not c.any()  # refused before anything ran
    run_kernel(kernel, {"A": a, "B": b, "C": c}, max_bytes=needed)
    assert np.array_equal(c, a + 1)
    monkeypatch.setenv(MAX_BYTES_ENV, str(needed - 1))
    with pytest.raises(InterpError, match="INTERP_MEMORY_BUDGET"):
        vector_add(a, b, np.zeros(3000), device="cpu")  # the DSL's call path: the same check
    assert memory_budget(needed) == needed  # the keyword wins over the environment
    monkeypatch.setenv(MAX_BYTES_ENV, "1G")
    out = np.zeros(3000)
    vector_add(a, b, out, device="cpu")
    assert np.array_equal(out, a + 1)


@pytest.mark.parametrize(
    ("text", "value"), [("4096", 4096), ("512M", 512 * 2**20), ("16GiB", 16 * 2**30), ("1.5 g", 3 * 2**29)]
)
def test_budget_sizes_are_read_with_binary_units(text: str, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["", "lots", "-5G", "0", "12 parsecs"])
def test_an_unreadable_budget_is_a_typed_error(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_BYTES_ENV, text or "   x")
    with pytest.raises(InterpError) as error:
        memory_budget()
    assert error.value.code == "INTERP_MEMORY_BUDGET_SETTING" and MAX_BYTES_ENV in error.value.hint


def test_a_missing_size_is_named() -> None:
    _, kernel = traced("gemm_naive")
    with pytest.raises(InterpError) as error:
        check_memory(kernel, {"M": 128})
    assert error.value.code == "INTERP_MISSING_SIZE" and "M=128,K=128,N=128" in error.value.hint


def test_normal_sizes_still_run_under_the_default_budget() -> None:
    for name in ("gemm_naive", "softmax"):
        entry, kernel = traced(name)
        for shape in (entry.default_shape, entry.partial_shape):
            assert check_memory(kernel, shape) < 2**20  # well under a MiB at interpreter sizes
            assert check_on_interpreter(entry, shape) <= entry.tolerance


def test_argus_interpret_reports_the_budget_not_a_traceback() -> None:
    runner = CliRunner(env={"COLUMNS": "250", MAX_BYTES_ENV: "64K"})
    refused = runner.invoke(app, ["interpret", "vector_add", "--shape", "N=100000"])
    assert refused.exit_code == 2, refused.output
    assert "INTERP_MEMORY_BUDGET" in refused.output and "Traceback" not in refused.output
    assert "N=100000" in refused.output and MAX_BYTES_ENV in refused.output
    ran = CliRunner(env={"COLUMNS": "250", MAX_BYTES_ENV: "64M"}).invoke(app, ["interpret", "vector_add"])
    assert ran.exit_code == 0 and "match" in ran.output, ran.output
