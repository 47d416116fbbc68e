"""The staged TMA store's chunk buffers, proved (`argus.verify.checks.staged`, ``PIPELINE_STORE_OVERWRITE``): the code
generator expands ``atom="tma.store"`` as `argus.atoms.tma` says (chunk c into buffer ``c % 2`` after
``cp.async.bulk.wait_group.read staged_store_wait(c)``), and the verifier proves that no TMA store a wait leaves in
flight reads the buffer written after it, for every tile a persistent block stores in turn.

The seeded bug is the protocol session 52 found wrong on an H200 (``read 1`` before every chunk, chunk 0 included):
a tile of an odd count of chunks (64 or 192 columns of bf16) then writes chunk buffer 0 while the previous tile's
last TMA store may still read it. It is the code generator's plan, not the kernel's, so it is seeded by replacing the
plan the check reads; an even count of chunks (128 columns) is safe under it, and is proved so (no false alarm)."""

import collections
from dataclasses import replace

import pytest

import argus.verify.checks.staged as staged
from argus.kernels import matmul as mm
from argus.verify import Verdict, engine, verify


def _kernel(bn: int):  # noqa: ANN202 - the persistent GEMM's kernel with the TMA-store epilogue on 128 x bn tiles
    problem = mm.GemmProblem(1024, 1024, 512)
    config = replace(mm.choose(problem), BM=128, BN=bn, CONSUMERS=2, STAGES=2, BK=64, SPLITS=1, EPILOGUE="tma")
    return mm.plan(problem, config).kernels()[0]


def _seed(monkeypatch: pytest.MonkeyPatch, wait) -> None:  # noqa: ANN001
    """The check reads `wait` as the protocol; the verifier's answers kept for this process are not reused."""
    monkeypatch.setattr(staged, "staged_store_wait", wait)
    monkeypatch.setattr(engine, "_MEMO", collections.OrderedDict())


def _staged(result):  # noqa: ANN001, ANN202
    return [r.verdict for r in result.checks if r.check == "staged store buffers"]


@pytest.mark.parametrize("bn", [64, 128, 192])
def test_the_chunk_buffers_of_every_tile_are_proved_free(bn: int) -> None:
    result = verify(_kernel(bn))
    assert result.verdict == Verdict.VERIFIED, [f.message for f in result.findings if f.verdict != Verdict.VERIFIED]
    assert _staged(result) == [Verdict.VERIFIED]


@pytest.mark.parametrize("bn, chunk_in_flight", [(64, 0), (192, 2)])
def test_waiting_for_all_but_one_store_before_a_tiles_first_chunk_is_caught(
    monkeypatch: pytest.MonkeyPatch, bn: int, chunk_in_flight: int
) -> None:
    _seed(monkeypatch, lambda chunk: 1)  # the rule before session 52
    result = verify(_kernel(bn))
    found = [f for f in result.findings if f.code == "PIPELINE_STORE_OVERWRITE"]
    assert result.verdict == Verdict.VIOLATED and len(found) == 1
    cex = found[0].counterexample
    assert cex is not None
    # the block's tile loop: the store of iteration it + 1 overwrites what iteration it's last chunk still reads
    variables = cex.variables
    assert variables["it (this store)"] == variables["it (the previous store)"] + 1
    assert variables["chunk"] == 0 and variables["chunk still being stored"] == chunk_in_flight
    assert cex.shapes and cex.block  # sizes and a block whose loop runs two tiles


def test_the_same_rule_is_proved_safe_where_every_tile_has_an_even_count_of_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _seed(monkeypatch, lambda chunk: 1)
    result = verify(_kernel(128))  # the previous tile's last chunk read buffer 1: chunk 0 may write buffer 0
    assert _staged(result) == [Verdict.VERIFIED]


def test_a_wait_that_leaves_the_same_tiles_chunk_on_the_buffer_in_flight_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _seed(monkeypatch, lambda chunk: 0 if chunk == 0 else 2)
    result = verify(_kernel(192))  # chunk 2 writes buffer 0 while chunk 0's store may read it
    found = [f for f in result.findings if f.code == "PIPELINE_STORE_OVERWRITE"]
    assert len(found) == 1 and found[0].counterexample is not None
    assert found[0].counterexample.variables == {"chunk": 2, "chunk still being stored": 0, "wait_group.read": 2}
