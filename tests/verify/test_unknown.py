# ruff: noqa: UP037
"""What the verifier cannot decide is `unknown` with a reason, never `verified`."""

from __future__ import annotations

import dataclasses

import argus
import argus.lang as T
from argus.ir.nodes import Stmt
from argus.kernels import get_kernel
from argus.layout import Layout
from argus.verify import Verdict, verify


@dataclasses.dataclass(frozen=True, eq=False)
class FutureStmt(Stmt):
    """A statement kind the verifier has never heard of (as the DSL grows)."""


def test_unknown_statement_kind_makes_the_kernel_unknown() -> None:
    kernel = get_kernel("gemm_mma_sync").kernel.trace()
    body = (FutureStmt(),) + tuple(kernel.body)
    result = verify(dataclasses.replace(kernel, body=body))
    assert result.verdict == Verdict.UNKNOWN
    finding = next(f for f in result.unknowns if f.code == "UNKNOWN_STATEMENT")
    assert "FutureStmt" in finding.reason and finding.pin


def test_unknown_statement_havocs_what_it_may_have_written() -> None:
    kernel = get_kernel("gemm_mma_sync").kernel.trace()
    loop = next(s for s in kernel.body if hasattr(s, "body"))
    # inside the loop, right before the gemm: every fragment and shared buffer may have changed
    inner = list(loop.body)
    inner.insert(len(inner) - 2, FutureStmt())
    body = tuple(dataclasses.replace(loop, body=tuple(inner)) if s is loop else s for s in kernel.body)
    result = verify(dataclasses.replace(kernel, body=body), checks=("mma",))
    assert result.verdict == Verdict.UNKNOWN
    assert not result.errors


def _replicated_store(guarded: bool):
    replicated = Layout(((64, 2), 1), ((1, 0), 0))  # threads t and t + 64 hold element t % 64

    @argus.kernel
    def store(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):  # noqa: F821
        with T.grid(T.cdiv(N, 64), threads=128) as (bx,):  # noqa: F821
            x = T.alloc_fragment((64,), T.f32, tv=replicated)
            s = T.alloc_shared((64,), T.f32)
            T.copy(X.tile(bx, 64), x)
            if guarded:
                with T.if_(T.thread_id() < 64):
                    T.copy(x, s)
            else:
                T.copy(x, s)
            T.barrier()
            T.copy(s, Y.tile(bx, 64))

    return store.trace()


def test_branch_conditions_restrict_who_accesses() -> None:
    assert verify(_replicated_store(False), checks=("races",)).codes() == ["RACE_WRITE_WRITE"]
    assert verify(_replicated_store(True), checks=("races",)).verdict == Verdict.VERIFIED


def test_else_branch_condition_is_negated() -> None:
    from argus.ir.nodes import If

    kernel = _replicated_store(True)
    branch = next(st for st in kernel.body if isinstance(st, If))
    # the same store, in the else branch of the opposite condition
    flipped = dataclasses.replace(branch, cond=branch.cond.rhs <= branch.cond.lhs, then=(), orelse=branch.then)
    body = tuple(flipped if st is branch else st for st in kernel.body)
    assert verify(dataclasses.replace(kernel, body=body), checks=("races",)).verdict == Verdict.VERIFIED
    unguarded = dataclasses.replace(branch, cond=branch.cond.lhs >= 0)  # every thread stores
    body = tuple(unguarded if st is branch else st for st in kernel.body)
    assert verify(dataclasses.replace(kernel, body=body), checks=("races",)).codes() == ["RACE_WRITE_WRITE"]


def test_an_exactly_once_query_the_solver_does_not_decide_is_unknown_not_unchecked() -> None:
    """With no budget, the exactly-once queries are attempted proofs that did not complete: ``unknown`` records
    with `UNKNOWN_SOLVER` findings at the loads that make the verdict unknown, not entries of `not_checked` (what a
    check does not cover at all: here the persistent kernel's guarded windows). A store whose window proves it by
    its form (`once._injective`: ``C.tile((bm, bn), ...)``) needs no query, so it is proved with no budget at all."""
    for name, sites in (("gemm_smem_tiled", 2), ("gemm_persistent", 2)):
        result = verify(get_kernel(name), checks=("coverage",), rlimit=1)
        assert result.verdict == Verdict.UNKNOWN
        loads = [c for c in result.checks if c.check == "contraction accumulated once"]
        assert len(loads) == 2 and all(c.verdict == Verdict.UNKNOWN for c in loads), result.checks
        once = [f for f in result.unknowns if "could not decide within its budget" in f.message]
        assert len(once) == sites and all(f.code == "UNKNOWN_SOLVER" and f.loc for f in once), result.render_text()
        assert all("not checked: " in c.target for c in result.not_checked)
        assert not [c for c in result.not_checked if c.check.endswith("once")]
    store = [c for c in verify(get_kernel("gemm_smem_tiled"), checks=("coverage",), rlimit=1).checks]
    assert [c.verdict for c in store if c.check == "output written once"] == [Verdict.VERIFIED]
