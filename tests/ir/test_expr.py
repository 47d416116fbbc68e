"""IR scalar expressions: building, constant folding, printing, evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import z3

from argus.ir.expr import BinOp, Const, SourceLoc, Var, VarKind, as_expr, cdiv, evaluate, free_vars, maximum


def test_building_and_folding() -> None:
    m = Var("M", VarKind.SHAPE)
    bm = Var("bm", VarKind.BLOCK)
    e = bm * 128 + 0
    assert isinstance(e, BinOp) and str(e) == "(bm * 128)"
    assert (bm * 1) is bm and (bm + 0) is bm and (0 + bm) is bm
    assert isinstance(bm * 0, Const) and (bm * 0).value == 0
    assert (as_expr(3) * 4 + 2).value == 14
    assert str(cdiv(m, 128)) == "((M + 127) // 128)"
    assert cdiv(1000, 128) == 8
    assert free_vars(bm * 128 + m) == {bm, m}
    assert str(maximum(m, 1)) == "max(M, 1)"
    assert (bm < m).dtype.name == "bool"


def test_no_python_truth_value_while_tracing() -> None:
    m = Var("M", VarKind.SHAPE)
    with pytest.raises(TypeError, match="T.if_"):
        if m < 4:
            pass
    with pytest.raises(ZeroDivisionError):
        as_expr(4) // 0


def test_evaluate_on_ints_arrays_and_z3() -> None:
    bm = Var("bm", VarKind.BLOCK)
    t = Var("t", VarKind.THREAD)
    e = bm * 128 + t % 32
    assert evaluate(e, {bm: 2, t: 37}) == 261
    threads = np.arange(128)
    assert (evaluate(e, {bm: 1, t: threads}) == 128 + threads % 32).all()
    x = z3.Int("x")
    assert z3.simplify(evaluate(e, {bm: 0, t: x}) == x % 32) is not None
    with pytest.raises(KeyError, match="bm"):
        evaluate(e, {t: 1})


def test_source_loc_prints_file_and_line() -> None:
    assert str(SourceLoc("gemm.py", 12, 4, "T.copy(a, b)")) == "gemm.py:12"


def test_free_vars_walks_a_shared_expression_once() -> None:
    """A chain of `T.let`s substituted into one another shares its sub-expressions: 64 doublings are a DAG of 64
    nodes and a tree of 2**64 (walked as a tree, free_vars never returned; the grouped GEMM's binary search of eight
    steps took tens of millions of visits)."""
    x, n = Var("x", VarKind.BLOCK), Var("N", VarKind.SHAPE)
    e = x + n
    for _ in range(64):
        e = e * 2 + e
    assert free_vars(e) == {x, n}
