"""The verifier on the GEMM lineage: the swizzle rung removes the bank conflicts the verifier reports on the
rung before it, and FMA GEMMs built wrong are caught by the MMA checks with a counterexample. (Every rung
verifies with no error in tests/verify/test_library.py, as every library kernel.)"""

from __future__ import annotations

import pytest

from argus.kernels import get_kernel
from argus.verify import Verdict, verify
from tests.interp import kernels_lineage_broken as broken


def _bank_conflicts(name: str) -> set[str]:
    result = verify(get_kernel(name))
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    return {f.details["buffer"] for f in result.warnings if f.code == "PERF_BANK_CONFLICT"}


def test_swizzle_removes_the_bank_conflicts_of_cp_async() -> None:
    assert _bank_conflicts("gemm_cp_async") == {"sA", "sB"}  # ldmatrix reads 4- and 8-way conflicted rows
    assert _bank_conflicts("gemm_cp_async_swizzled") == set()


def test_the_correct_fma_gemm_verifies() -> None:
    assert verify(broken.fma_gemm().trace()).verdict == Verdict.VERIFIED


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (broken.raked_rows_a, "MMA_ROW_MISMATCH"),
        (broken.raked_columns_accumulator, "MMA_COL_MISMATCH"),
        (broken.next_k_block_of_b, "MMA_K_MISMATCH"),
    ],
    ids=["A fragment raked", "accumulator raked", "next K-block of B"],
)
def test_broken_fma_gemm_is_caught(make, code) -> None:
    """(Each gives wrong numbers on the interpreter, tests/interp/test_lineage.py.)"""
    result = verify(make().trace())
    assert result.verdict == Verdict.VIOLATED
    finding = next(f for f in result.errors if f.code == code)
    cex = finding.counterexample
    assert cex is not None and cex.thread is not None and cex.element is not None
    assert "T.gemm" in cex.op_loc.text
    assert f"[{code}]" in finding.render_text()


@pytest.mark.parametrize("name", ["gemm_naive", "gemm_smem_tiled", "gemm_cp_async_swizzled", "gemm_tma_wgmma"])
def test_the_rungs_carry_their_k_block_invariants(name: str) -> None:
    """Each rung states which K-block its operands hold at iteration k (T.assert_tag in its source), proved by
    tests/verify/test_library.py."""
    from argus.ir.nodes import walk
    from argus.ir.tags import AssertTag

    entry = get_kernel(name)
    asserts = [s for s in walk(entry.kernel.trace(**entry.params).body) if isinstance(s, AssertTag)]
    assert len(asserts) == 2 and all(a.loc.file.endswith("gemm.py") for a in asserts)
