"""Blame: a finding names the statement that made its fact false (the assumption, the declaration, the misplaced
commit or wait), and an unknown says what would decide it. The corpus's ``blame_*`` kernels mark the blamed
lines; these tests check the renderings, the proofs behind a proposed fix, and the cases that must not blame."""

from __future__ import annotations

import importlib
import json

from argus.kernels import get_kernel
from argus.verify import Blame, Finding, verify


def _corpus(name: str):
    module = importlib.import_module(f"tests.verify.corpus.kernels_{name}")
    return verify(module.KERNEL, **getattr(module, "PARAMS", {}))


def test_blame_renders_as_text_table_and_json() -> None:
    result = _corpus("blame_tma_weak_assume")
    finding = next(f for f in result.errors if f.code == "ALIGN_TMA")
    blame = finding.blame
    assert blame is not None and blame.loc is not None and 'T.assume("K % 4 == 0' in blame.loc.text
    text = finding.render_text()
    assert f"caused by: kernels_blame_tma_weak_assume.py:{blame.loc.line} T.assume(" in text
    assert 'fix: declare T.assume("K % 8 == 0") instead' in text
    assert "~~~~ blame ~~~~" in result.render_text(tables=True)
    data = json.loads(json.dumps(finding.to_json()))
    assert data["blame"]["line"] == blame.loc.line and data["blame"]["fix"] == blame.fix
    back = Finding.from_json(data)
    assert (back.blame.loc.line, back.blame.why, back.blame.fix) == (blame.loc.line, blame.why, blame.fix)
    assert [loc.line for loc, _ in back.blame.related] == [loc.line for loc, _ in blame.related]
    assert isinstance(back.blame, Blame)
    assert back.render_text() == text


def test_the_proposed_assumption_is_the_one_that_verifies() -> None:
    """Without any T.assume the fix proposed for the TMA stride is K % 8 == 0, and the same kernel with exactly
    that assumption (`hopper_gemm_ok`) verifies."""
    finding = next(f for f in _corpus("align_tma_stride").errors if f.code == "ALIGN_TMA")
    assert finding.blame.loc is None and finding.blame.why.startswith("no T.assume on K")
    assert finding.blame.fix == 'declare T.assume("K % 8 == 0")'
    assert _corpus("hopper_gemm_ok").verdict.value == "verified"


def test_a_violation_for_every_size_blames_no_assumption() -> None:
    """A window starting at column 2 is misaligned for every size: no assumption is to blame."""
    finding = next(f for f in _corpus("align_vector_origin").errors if f.code == "ALIGN_VECTOR")
    assert finding.blame is None


def test_budget_blame_lists_every_allocation_with_its_bytes() -> None:
    result = _corpus("blame_smem_blocks_per_sm")
    finding = next(f for f in result.errors if f.code == "BUDGET_SMEM")
    sizes = {what.split(":")[0]: int(what.split(": ")[1].split(" B")[0]) for _, what in finding.blame.related}
    assert sizes == finding.details["buffers"]
    assert finding.blame.loc.text.strip().startswith("with T.grid(")


def test_budget_blame_names_the_allocation_that_crosses() -> None:
    finding = next(f for f in _corpus("blame_registers_second_tile").errors if f.code == "BUDGET_REGISTERS")
    assert finding.blame.loc.text.strip().startswith("r = T.alloc_fragment(")
    assert finding.loc != finding.blame.loc  # the peak is elsewhere


def test_stale_read_blames_the_wait_or_the_commit() -> None:
    loose = next(f for f in _corpus("pipeline_wait_too_loose").errors if f.code == "PIPELINE_STALE_READ")
    assert loose.blame.loc.text.strip().startswith("T.async_wait(STAGES)")
    hoisted = next(f for f in _corpus("blame_cp_async_hoisted_commit").errors if f.code == "PIPELINE_STALE_READ")
    assert hoisted.blame.loc.text.strip().startswith("T.async_commit()")
    assert hoisted.blame.loc.line < hoisted.counterexample.accesses[0].loc.line  # above the copy it should close


def test_solver_unknown_names_the_pin_that_decides_it() -> None:
    """With a resource budget too small for the stale-read queries, the unknown names the size whose pinning
    decides them, and pinning it does decide them (within the same budget)."""
    budget = 20_000
    starved = verify(get_kernel("gemm_cp_async"), rlimit=budget)
    pinned = [f for f in starved.findings if f.code == "UNKNOWN_SOLVER" and f.blame is not None and f.blame.fix]
    assert pinned, starved.render_text()
    fix = pinned[0].blame.fix
    assert fix.startswith("verify with --shape ")
    name, value = fix.removeprefix("verify with --shape ").split(" ")[0].split("=")
    again = verify(get_kernel("gemm_cp_async"), rlimit=budget, shapes={name: int(value)})
    # that query is decided (another query at the same statement may still need more than the starved budget)
    assert not any(
        f.code == "UNKNOWN_SOLVER" and f.loc == pinned[0].loc and f.message == pinned[0].message for f in again.findings
    )
    assert not again.errors


def test_assumption_locations_follow_the_assumptions() -> None:
    kernel = importlib.import_module("tests.verify.corpus.kernels_blame_tma_weak_assume").KERNEL.trace()
    assert len(kernel.assumption_locs) == len(kernel.assumptions)
    declared = [loc for loc in kernel.assumption_locs if loc is not None]
    assert len(declared) == 1 and "T.assume(" in declared[0].text
    assert kernel.grid_loc is not None and "T.grid(" in kernel.grid_loc.text
