"""IR nodes of data-flow invariants: `Tag` (set the tags of a buffer's elements), `AssertTagEq` and
`AssertTag` (relational constraints on tags at a program point), and the expression leaves that
tag functions and assertion predicates are written with.

A *tag* is a name and a tuple of integers attached to every element of a buffer; tags flow with
the data (see `docs/verify.md`). The DSL (`argus.lang.tags`) runs the user's tag function or
predicate once at trace time on placeholder leaves, so what the IR stores is an ordinary boolean or
integer `Expr` over:

* `TagPlaceholder(operand, index, "coord")` — coordinate `index` of the element in the window of
  operand `operand` (the element the tag belongs to);
* `TagPlaceholder(operand, index, "tag")` — coordinate `index` of that element's tag (negative
  indices count from the end);
* `TagNameIs(operand, name)` — true when the element's tag is called `name`;

plus the kernel's own variables (loop variables, block indices, shape symbols) and constants.
These leaves build IR with Python operators like every `Expr`, and also with ``==`` and ``!=``
(plain IR expressions compare by identity), so ``lambda a: a[1] // 32 == k`` is an IR equation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from argus.ir.expr import BinaryOp, Expr, as_expr, binary
from argus.ir.nodes import Broadcast, Stmt, TileRef
from argus.ir.types import DType, boolean, i32


def _unwrap(e: Any) -> Expr:
    e = as_expr(e)
    return e.expr if isinstance(e, TagExpr) else e


class _BuildsTagExpr(Expr):
    """Operators on tag leaves (and on expressions containing them) build `TagExpr`s, ``==``/``!=`` included."""

    def _inner(self) -> Expr:
        return self  # pragma: no cover - overridden

    def _bin(self, op: BinaryOp, other: Any, reverse: bool = False) -> Expr:
        other_e = _unwrap(other)
        me = self._inner()
        lhs, rhs = (other_e, me) if reverse else (me, other_e)
        return TagExpr(binary(op, lhs, rhs))

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return self._bin(BinaryOp.EQ, other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return self._bin(BinaryOp.NE, other)

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class TagPlaceholder(_BuildsTagExpr):
    """A tag-function or predicate argument: element coordinate (``kind="coord"``) or tag coordinate
    (``kind="tag"``) number `index` of operand `operand`."""

    operand: int
    index: int
    kind: str = "tag"
    dtype: DType = i32

    def _inner(self) -> Expr:
        return self

    def __str__(self) -> str:
        return f"{'coord' if self.kind == 'coord' else 'tag'}{self.operand}[{self.index}]"

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class TagNameIs(_BuildsTagExpr):
    """True when the tag of operand `operand`'s element is named `name`."""

    operand: int
    name: str
    dtype: DType = boolean

    def _inner(self) -> Expr:
        return self

    def __str__(self) -> str:
        return f"(tag{self.operand}.name == {self.name!r})"

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class TagExpr(_BuildsTagExpr):
    """An expression over tag leaves (a wrapper whose only job is to make ``==`` build IR)."""

    expr: Expr
    dtype: DType = i32

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", self.expr.dtype)

    def _inner(self) -> Expr:
        return self.expr

    def __str__(self) -> str:
        return str(self.expr)

    __hash__ = object.__hash__


def strip(e: Expr) -> Expr:
    """`e` without `TagExpr` wrappers at the top (the IR stored in the nodes)."""
    while isinstance(e, TagExpr):
        e = e.expr
    return e


Operand = TileRef | Broadcast


@dataclass(frozen=True, eq=False)
class Tag(Stmt):
    """From here on, the element at window coordinate ``c`` of `target` carries the tag
    ``(name, *coords)``, where `coords` are expressions over ``TagPlaceholder(0, i, "coord")`` (the
    element's coordinates) and the kernel's variables. A global tensor may be tagged as a whole
    (its extents may then be symbolic).

    With `exclude` (``T.exclude``), the tags are unchanged and `name`, `coords` are unused: the elements where
    `exclude` (a condition over the same placeholders) holds are marked as data that must not contribute, like the
    padding of an element outside a tensor: the verifier then proves that no reduction, MMA or store takes them in
    (``OOB_*``)."""

    target: TileRef
    name: str
    coords: tuple[Expr, ...]
    exclude: Expr | None = None


@dataclass(frozen=True, eq=False)
class AssertTagEq(Stmt):
    """At this point, for every element of `a` (and every thread holding it, for a fragment), the
    element of `b` at the same window coordinate (held by the same thread) carries the same tag."""

    a: Operand
    b: Operand


@dataclass(frozen=True, eq=False)
class AssertTag(Stmt):
    """At this point, `pred` (a boolean expression over tag leaves of `operands`) holds for every
    element of the first operand's window, the other operands being read at the same window
    coordinate (by the same thread, for fragments). `text` is the predicate as the user wrote it."""

    pred: Expr
    operands: tuple[Operand, ...]
    text: str = ""


__all__ = ["AssertTag", "AssertTagEq", "Tag", "TagExpr", "TagNameIs", "TagPlaceholder", "strip"]
