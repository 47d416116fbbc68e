"""The generated ModelNew's `_launch` on CUDA tensors (no GPU needed: the tensors and the compiled kernel are stand-ins
that record what they are asked): operands longer than the kernels' largest extent run in contiguous chunks."""

from __future__ import annotations

import argus.runtime
import argus.runtime.arguments
from argus.frontend.emit import LAUNCH


class _Flat:
    """A flat CUDA tensor as `_launch` uses one: contiguous, viewed flat, sliced."""

    is_cuda = True

    def __init__(self, n: int, start: int = 0) -> None:
        self.n, self.start = n, start

    def contiguous(self) -> _Flat:
        return self

    def view(self, *shape: int) -> _Flat:
        return self

    def numel(self) -> int:
        return self.n

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n,)

    def __getitem__(self, s: slice) -> _Flat:
        stop = min(s.stop, self.n)
        return _Flat(stop - s.start, self.start + s.start)


class _Kernel:
    name = "pointwise_0"


def _launches(monkeypatch, sizes: list[int], limit: int) -> list[list[tuple[int, int]]]:
    calls: list[list[tuple[int, int]]] = []
    monkeypatch.setattr(argus.runtime.arguments, "MAX_EXTENT", limit)
    monkeypatch.setattr(
        argus.runtime,
        "build",
        lambda kernel, **params: lambda *ts: calls.append([(t.start, t.n) for t in ts]),
        raising=False,
    )
    namespace: dict = {}
    exec(LAUNCH, namespace)
    namespace["_launch"](_Kernel(), [_Flat(n) for n in sizes], BLOCK=1024)
    return calls


def test_operands_of_one_length_run_in_chunks_below_the_largest_extent(monkeypatch) -> None:
    calls = _launches(monkeypatch, [20, 20], limit=8)
    assert calls == [[(0, 8), (0, 8)], [(8, 8), (8, 8)], [(16, 4), (16, 4)]]


def test_a_short_operand_runs_in_one_launch(monkeypatch) -> None:
    assert _launches(monkeypatch, [5, 5], limit=8) == [[(0, 5), (0, 5)]]


def test_operands_of_different_lengths_are_not_split(monkeypatch) -> None:
    """Only elementwise kernels (every operand the same length) may be split: anything else is launched whole, and
    the runtime refuses an extent over its limit (RUNTIME_ARG_RANGE)."""
    assert _launches(monkeypatch, [20, 4], limit=8) == [[(0, 20), (0, 4)]]
