"""The GEMM lineage as a check on retrieval: on each rung, the entry for the mechanism the next rung
adds ranks among the first five (with the verifier's findings fed in), and the entry for the
mechanism a rung already has no longer applies to it."""

from __future__ import annotations

import pytest

from argus.kb import retrieve
from argus.kernels.registry import get_kernel, lineage
from argus.lineage.mechanisms import RUNGS
from argus.verify import verify

#: Lineage rung -> the curated entry that adds it (the vocabulary's, `argus.lineage.mechanisms.RUNGS`).
ENTRY_FOR = {r.id: r.entry for r in RUNGS.values() if r.entry is not None}


@pytest.fixture(scope="module")
def ranked():
    out = {}
    for step in lineage("gemm"):
        entry = get_kernel(step.kernel)
        out[step.kernel] = retrieve(entry, findings=verify(entry), k=None, include_inapplicable=True)
    return out


def test_the_next_rung_is_among_the_first_five(ranked) -> None:
    steps = lineage("gemm")
    checked = 0
    for here, nxt in zip(steps, steps[1:], strict=False):
        if nxt.mechanism not in ENTRY_FOR:
            continue
        matches = ranked[here.kernel]
        top = [m.entry.id for m in matches if m.applicable][:5]
        assert ENTRY_FOR[nxt.mechanism] in top, f"{here.kernel}: {ENTRY_FOR[nxt.mechanism]} not in {top}"
        checked += 1
    assert checked == len(lineage("gemm")) - 1


def test_a_rung_does_not_get_what_it_already_has(ranked) -> None:
    checked = 0
    for step in lineage("gemm"):
        if step.mechanism not in ENTRY_FOR:
            continue
        match = next(m for m in ranked[step.kernel] if m.entry.id == ENTRY_FOR[step.mechanism])
        assert not match.applicable, f"{step.kernel} already has {step.mechanism}"
        checked += 1
    assert checked == len(lineage("gemm")) - 1
