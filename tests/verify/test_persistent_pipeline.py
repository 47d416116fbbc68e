"""The mbarrier pipeline of a persistent warp-specialized GEMM, whose stage rotation runs across the tiles of a
block (`T.pipeline(k_tiles, stages=S, start=it * k_tiles)` inside each role's tile loop): the library kernel
verifies (its K-block assertions, the barrier phases of the global iteration, the arrive counts), and seeded bugs
are caught with counterexamples, or left undecided where the numbering cannot be proved, never verified."""

from __future__ import annotations

import pytest

from argus.kernels.gemm import gemm_warp_specialized_persistent
from argus.verify import Verdict, verify
from tests.verify.kernels_persistent import persistent_variant

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _errors(result) -> set[str]:
    return {f.code for f in result.errors}


@pytest.fixture(scope="module")
def expert_result():
    return verify(gemm_warp_specialized_persistent, BN=256, STAGES=4, OUT="bf16")


def test_the_persistent_kernel_verifies(expert_result) -> None:
    r = expert_result
    assert r.verdict == Verdict.VERIFIED, r.render_text()
    assert not r.errors and not r.unknowns
    # its two K-block assertions, the MMA and both barriers' arrive counts were checked, not skipped
    records = {(c.check, c.target): c.verdict for c in r.checks}
    assert sum(1 for (check, _), v in records.items() if check == "tag assertion" and v == Verdict.VERIFIED) == 2
    assert records[("mbarrier arrive count", "full: 1 per phase")] == Verdict.VERIFIED
    # empty: released one iteration behind by each of the two consumer warpgroups (the deferred-release pass)
    assert records[("mbarrier arrive count", "empty: 2 per phase")] == Verdict.VERIFIED
    # every operand element is loaded (the producer's tile-ordered loads follow C's proved cells; K-blocks whole)
    assert records[("contraction coverage", "A")] == Verdict.VERIFIED
    assert records[("contraction coverage", "B")] == Verdict.VERIFIED


@pytest.mark.parametrize("stages", [3, 4])
def test_the_clean_variant_verifies_at_three_and_four_stages(stages: int) -> None:
    r = verify(persistent_variant, STAGES=stages)
    assert r.verdict == Verdict.VERIFIED, r.render_text()


def test_a_k_loop_that_drops_the_tail_of_k_is_caught() -> None:
    r = verify(persistent_variant, BUG="floor_k", checks=("coverage",))
    assert r.verdict == Verdict.VIOLATED
    found = {f.counterexample.variables["element"]: f for f in r.errors if f.code == "COVERAGE_CONTRACTION"}
    assert len(found) == 2  # A and B
    for f in found.values():
        cex = f.counterexample
        k = int(cex.variables["element"].strip("()").split(",")[1])
        assert k >= cex.shapes["K"] // 64 * 64  # a K element past the last whole K-block, never loaded


def test_consumer_phase_from_the_tile_local_k_is_caught() -> None:
    r = verify(persistent_variant, BUG="consumer_local_phase")
    assert r.verdict == Verdict.VIOLATED
    (f,) = [f for f in r.errors if f.code == "MBARRIER_PHASE"]
    cex = f.counterexample
    assert cex is not None and f.loc.line > 0
    # the counterexample is a tile after the first, where k and the global iteration disagree on the parity
    it, k = cex.loops["it"], cex.loops["k"]
    shapes = cex.shapes
    k_tiles = -(-shapes["K"] // 64)
    g = cex.variables["global iteration g"]
    assert it >= 1 and g == it * k_tiles + k
    assert (k // 3) % 2 != (g // 3) % 2
    assert cex.variables["parity waited for"] == (k // 3) % 2
    assert "global iteration" in f.message


def test_producer_release_phase_from_the_tile_local_k_is_caught() -> None:
    r = verify(persistent_variant, BUG="producer_local_phase")
    assert r.verdict == Verdict.VIOLATED
    (f,) = [f for f in r.errors if f.code == "MBARRIER_PHASE"]
    assert f.counterexample is not None and f.counterexample.loops["it"] >= 1
    assert "release" in f.message


def test_a_producer_loading_the_next_tile_is_caught() -> None:
    r = verify(persistent_variant, BUG="producer_next_tile")
    assert r.verdict == Verdict.VIOLATED
    assert "TAG_ASSERT" in _errors(r)
    cex = next(f.counterexample for f in r.errors if f.code == "TAG_ASSERT")
    assert cex is not None and cex.actual is not None


@pytest.mark.parametrize("bug", ["no_start", "consumer_guard"])
def test_an_unprovable_numbering_is_unknown_never_verified(bug: str) -> None:
    # no start: every tile restarts the rotation at stage 0 and phase 0 (right only when k_tiles is a multiple of
    # 2 x STAGES); a guard that differs between the roles: they may not run the same tiles
    r = verify(persistent_variant, BUG=bug)
    assert r.verdict != Verdict.VERIFIED
    codes = {f.code for f in r.findings}
    assert "UNKNOWN_WARP_ROLES" in codes, r.render_text()


def test_pipeline_start_defaults_to_the_plain_rotation() -> None:
    from argus.ir.nodes import For, LoopKind, walk

    body = gemm_warp_specialized_persistent.trace().body
    pipes = [s for s in walk(body) if isinstance(s, For) and s.kind == LoopKind.PIPELINED]
    assert len(pipes) == 2 and all(str(p.start).startswith("(i") for p in pipes)
    from argus.kernels.gemm import gemm_warp_specialized

    plain = [s for s in walk(gemm_warp_specialized.trace().body) if isinstance(s, For) and s.kind == LoopKind.PIPELINED]
    assert plain and all(p.start == 0 for p in plain)


def test_a_program_order_pipeline_run_twice_is_not_verified() -> None:
    from tests.verify.kernels_persistent import program_order_two_passes

    r = verify(program_order_two_passes)
    assert r.verdict != Verdict.VERIFIED
    assert "UNKNOWN_MBARRIER_ORDER" in {f.code for f in r.findings}, r.render_text()
