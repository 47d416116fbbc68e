"""`verify_kernel` answers a kernel it verified before in this process with the same options from its memo, and
only then: the key is the kernel's wire form (every field of every node, shared objects numbered), so a kernel that
differs in one constant, in which variables are the same object, or in its options is verified anew; a caller that
changes its answer does not change the memo's."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from argus.verify import engine
from tests.verify.kernels_memo import tiled_copy

_copy = tiled_copy


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kernels `verify_kernel` verified (not answered from the memo), with an empty memo to start from."""
    monkeypatch.setattr(engine, "_MEMO", type(engine._MEMO)())
    calls: list[str] = []
    inner = engine._verify_kernel

    def verify_counted(kernel: Any, *args: Any) -> Any:
        calls.append(kernel.name)
        return inner(kernel, *args)

    monkeypatch.setattr(engine, "_verify_kernel", verify_counted)
    return calls


def test_the_same_kernel_is_verified_once_and_answered_alike(counted: list[str]) -> None:
    first = engine.verify_kernel(_copy())
    second = engine.verify_kernel(_copy())  # traced again: other objects, the same program
    assert counted == ["copy"]
    assert second.verdict == first.verdict and [f.code for f in second.findings] == [f.code for f in first.findings]
    assert [(c.check, c.target, c.verdict) for c in second.checks] == [
        (c.check, c.target, c.verdict) for c in first.checks
    ]


def test_a_different_program_or_options_are_verified_anew(counted: list[str]) -> None:
    good = engine.verify_kernel(_copy())
    bad = engine.verify_kernel(_copy(bias=1))  # stores one tile further: the first tile of Y is never written
    assert len(counted) == 2
    assert good.verdict.value == "verified"
    assert bad.verdict.value == "violated" and "COVERAGE_OUTPUT" in {f.code for f in bad.findings}
    engine.verify_kernel(_copy(), checks=("coverage",))
    engine.verify_kernel(_copy(), shapes={"M": 256})
    engine.verify_kernel(_copy(), rlimit=engine.SOLVER_RLIMIT // 2)
    assert len(counted) == 5


def test_a_caller_changing_the_answer_does_not_change_the_memo(counted: list[str]) -> None:
    first = engine.verify_kernel(_copy())
    first.params["B"] = -1
    again = engine.verify_kernel(_copy())
    assert counted == ["copy"] and again.params["B"] == 128


def test_two_variables_of_one_name_are_not_one_variable() -> None:
    from argus.ir.expr import Var, VarKind

    kernel = _copy()
    twin = Var(kernel.block_vars[0].name, VarKind.BLOCK)
    options = (engine.CHECKS, 4, 1, 1, None)
    renamed = dataclasses.replace(kernel, block_vars=(twin,))  # the grid's index is another object
    assert engine._memo_key(kernel, *options) != engine._memo_key(renamed, *options)
    assert engine._memo_key(kernel, *options) == engine._memo_key(_copy(), *options)
