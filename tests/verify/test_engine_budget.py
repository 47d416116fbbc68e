"""The solver's budget is in Z3's deterministic resource units, so a verdict does not depend on how loaded the
machine is: a budget too small for a query gives ``unknown`` (``UNKNOWN_SOLVER``), never a wrong answer."""

from __future__ import annotations

from argus.kernels import get_kernel
from argus.verify import verify


def test_a_tiny_resource_budget_is_unknown_not_wrong() -> None:
    starved = verify(get_kernel("gemm_cp_async"), rlimit=2_000)
    assert starved.verdict.value == "unknown"
    assert any(f.code == "UNKNOWN_SOLVER" and "resource" in (f.reason or f.message) for f in starved.findings)
    assert not starved.errors  # no violation invented


def test_the_default_budget_decides_the_library_kernel() -> None:
    assert verify(get_kernel("gemm_cp_async")).verdict.value == "verified"
