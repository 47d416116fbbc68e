"""Reads of global memory another block of the launch writes (`checks/global_reads.py`): a block that loads what
another stores is `RACE_GLOBAL` unless a group barrier between the store and the load has both blocks at one counter;
a group barrier whose arrivals could exceed its count is `RACE_GROUP_RANK`, one whose counter lies past its tensor
`OOB_GROUP_COUNTER`. Each with a counterexample (the element, the two blocks). Before this check a kernel whose
block read its neighbour's row with no barrier at all verified. Kernels that read only what they store themselves get
no finding (the ring's X, the library's GEMMs)."""

from __future__ import annotations

import pytest

import argus.lang as T
from argus.kernels import matmul as mm
from argus.verify import Verdict, verify
from tests.interp import kernels_group_barrier as K


def _codes(result) -> set[str]:
    return {f.code for f in result.errors}


def test_a_group_that_meets_at_one_counter_is_proved() -> None:
    result = verify(K.ring_variants.trace())
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    reads = {c.target: c.verdict.value for c in result.checks if c.check == "reads of other blocks' stores"}
    assert reads == {"X": "verified", "Y": "verified"}, reads


def test_a_read_of_a_neighbour_s_store_with_no_barrier_is_a_race() -> None:
    result = verify(K.ring_variants.trace(MISTAKE="barrier before the store"))
    assert _codes(result) == {"RACE_GLOBAL"}, result.render_text()
    (finding,) = result.errors
    cex = finding.counterexample
    writer = int(cex.variables["writer block"].split("=")[1])
    assert cex.block["b"] != writer and "no group barrier" in finding.message
    assert [a.kind for a in cex.accesses] == ["write", "read"] and cex.accesses[0].element.buffer == "Y"


def test_a_barrier_whose_counters_split_the_group_is_a_race() -> None:
    result = verify(K.ring_variants.trace(MISTAKE="split counters"))
    assert "RACE_GLOBAL" in _codes(result), result.render_text()
    race = next(f for f in result.errors if f.code == "RACE_GLOBAL")
    assert "different counters" in race.message


@pytest.mark.parametrize(
    ("mistake", "code"), [("rank twice", "RACE_GROUP_RANK"), ("counter past the end", "OOB_GROUP_COUNTER")]
)
def test_arrivals_that_break_the_count_or_the_tensor_are_found(mistake: str, code: str) -> None:
    result = verify(K.ring_variants.trace(MISTAKE=mistake))
    assert code in _codes(result), result.render_text()


#: seeded mistakes in the fused split-K GEMM: the barrier's arguments as the kernel passes them, changed at trace time
MISTAKES = {
    "no barrier": None,
    "one rank": lambda counters, index, rank, count: (counters, index, 0, count),
    "a counter per unit": lambda counters, index, rank, count: (counters, index * count + rank, 0, count),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_the_fused_split_k_s_seeded_mistakes_are_caught(mistake: str, monkeypatch) -> None:
    real = T.group_barrier
    change = MISTAKES[mistake]
    monkeypatch.setattr(T, "group_barrier", (lambda *a: None) if change is None else (lambda *a: real(*change(*a))))
    for cache in ("_cache", "_passed_cache"):  # a trace of its own, kept out of the kernel's caches
        monkeypatch.setattr(mm.gemm.gemm_split_fused, cache, {})
    problem = mm.GemmProblem(1024, 1024, 16384, "bf16", "bf16", "K", "K")
    # direct stores of the slices: without the barrier the DSL itself refuses a load of a TMA store's destination
    # two units a tile: each mistake is caught as at four, in half the verifier's time
    plan = mm.plan(problem, mm.GemmConfig(128, 256, 2, 4, SPLITS=2, EPILOGUE="direct", FUSE=True))
    kernel = mm.gemm.gemm_split_fused.trace(**dict(plan.main_params()))
    monkeypatch.undo()
    result = verify(kernel)
    expected = {
        "no barrier": {"RACE_GLOBAL"},
        "one rank": {"RACE_GROUP_RANK"},
        "a counter per unit": {"RACE_GLOBAL", "OOB_GROUP_COUNTER"},
    }
    assert expected[mistake] <= _codes(result), result.render_text()
