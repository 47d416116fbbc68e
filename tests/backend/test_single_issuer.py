"""A warp role whose every effect is its thread 0's (a TMA producer) can run in its first warp only; other roles run in
all their warps (`argus.backend.cuda.codegen.hopper.single_issuer`). Off by default (measured slower on an H200)."""

from __future__ import annotations

import pytest

from argus.backend.cuda.codegen import compile_kernel, generate
from argus.backend.cuda.codegen.emitter import Emitter
from argus.backend.cuda.codegen.hopper import single_issuer
from argus.ir.nodes import Role, walk
from argus.kernels.gemm import gemm_warp_specialized
from argus.kernels.registry import GEMM_HOPPER_PARAMS
from tests.backend.kernels_single_issuer import two_barriers

NOTE = "one warp runs it"


def _roles(kernel) -> dict[str, Role]:
    return {s.name: s for s in walk(kernel.body) if isinstance(s, Role)}


def test_the_tma_producer_is_a_single_issuer_and_the_consumers_are_not() -> None:
    roles = _roles(gemm_warp_specialized.trace(**GEMM_HOPPER_PARAMS))
    assert single_issuer(roles["producer"].body)
    assert not single_issuer(roles["consumer"].body)  # wgmma, fills and stores: every thread's


def test_a_producer_that_also_arrives_without_bytes_runs_in_every_warp(monkeypatch) -> None:
    """An arrival without bytes is preceded by a barrier of all the role's threads: one warp alone would hang."""
    monkeypatch.setattr(Emitter, "single_warp_issuers", True)
    roles = _roles(two_barriers.trace())
    assert not single_issuer(roles["producer"].body)
    assert NOTE not in generate(two_barriers.trace()).source


@pytest.mark.parametrize("single", [True, False])
def test_the_expert_producer_runs_in_one_warp_when_asked(single: bool, monkeypatch) -> None:
    monkeypatch.setattr(Emitter, "single_warp_issuers", single)
    kernel = gemm_warp_specialized.trace(**GEMM_HOPPER_PARAMS)
    source = generate(kernel).source
    assert (NOTE in source) == single
    assert source.count(NOTE) <= 1  # the producer only
    compiled = compile_kernel(kernel, cache=False)
    assert compiled.resources.spill_stores == 0
    assert compiled.instruction_mix()["UTMALDG"] >= 2
