# ruff: noqa: F821, UP037
"""The DSL's tag functions trace into IR nodes at the user's line, and reject what they cannot mean."""

from __future__ import annotations

import pytest

import argus
import argus.lang as T
from argus.ir.expr import BinaryOp, BinOp
from argus.ir.nodes import walk
from argus.ir.tags import AssertTag, AssertTagEq, Tag, TagNameIs, TagPlaceholder
from argus.lang.errors import DSLError
from argus.lang.tags import assert_tag, assert_tag_eq, tag


def _kernel(body):
    @argus.kernel
    def k(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32]):
        with T.grid(T.cdiv(M, 16), threads=128) as (bm,):
            x = T.alloc_fragment((16, 32), T.f32)
            T.copy(X.tile((bm, 0), (16, 32)), x)
            body(X, x, bm)
            T.copy(x, Y.tile((bm, 0), (16, 32)))

    return k


def test_tag_and_assertions_trace_to_ir() -> None:
    def body(X, x, bm):
        tag(X, lambda m, n: (m // 16, n), "Xrow")
        assert_tag(lambda a: (a[0] == bm) & (a.name == "Xrow"), x)
        assert_tag_eq(x, x)

    kernel = _kernel(body).trace()
    stmts = list(walk(kernel.body))
    t = next(s for s in stmts if isinstance(s, Tag))
    assert t.name == "Xrow" and len(t.coords) == 2 and t.loc.line > 0
    assert isinstance(t.coords[1], TagPlaceholder) and t.coords[1].kind == "coord"
    a = next(s for s in stmts if isinstance(s, AssertTag))
    assert isinstance(a.pred, BinOp) and a.pred.op == BinaryOp.AND
    assert isinstance(a.pred.rhs, TagNameIs) and "assert_tag" in a.text
    assert any(isinstance(s, AssertTagEq) for s in stmts)


def test_predicate_must_compare_tags() -> None:
    def body(X, x, bm):
        assert_tag(lambda a: 3, x)

    with pytest.raises(DSLError) as err:
        _kernel(body).trace()
    assert err.value.code == "DSL_TAG_PREDICATE"


def test_assertion_operands_must_have_one_shape() -> None:
    def body(X, x, bm):
        y = T.alloc_fragment((16, 64), T.f32)
        assert_tag_eq(x, y)

    with pytest.raises(DSLError) as err:
        _kernel(body).trace()
    assert err.value.code == "DSL_SHAPE_MISMATCH"


def test_tag_coordinates_are_integers() -> None:
    def body(X, x, bm):
        tag(x, lambda m, n: m < n, "bad")

    with pytest.raises(DSLError) as err:
        _kernel(body).trace()
    assert err.value.code == "DSL_TAG_FUNCTION"
