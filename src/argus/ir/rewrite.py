"""Rewriting IR by substitution: `substitute` (variables in an expression), `substitute_stmts` (in statements) and
`inline_lets` (a kernel without `Let` bindings: each body with its variable replaced by the bound value).

A reader that models loops, branches and roles but not bindings (the verifier) takes the kernel with its bindings
inlined: the same program, each statement of a `Let` body now stating its index expressions in terms of the
variables around it (``empty[(k - 1) % S]`` for ``let k = k - 1: empty[k % S]``). Statements that need no change
stay the same objects; `Buffer` objects are never rebuilt (they are identities)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from argus.ir.expr import BinOp, Expr, Select, Var, binary
from argus.ir.nodes import Broadcast, Buffer, Gather, Im2col, Kernel, Let, Stmt, TileRef


def substitute(e: Any, mapping: Mapping[Var, Expr | int], memo: dict[int, Any] | None = None) -> Any:
    """`e` with every variable in `mapping` replaced by its value (`e` itself when none occurs). `memo` (by node
    identity) keeps a shared sub-expression shared: a chain of `T.let` bindings each reading the previous one
    several times (a binary search) is a DAG, linear in size, that a tree walk would expand exponentially."""
    if memo is None:
        memo = {}
    if isinstance(e, Var):
        return mapping.get(e, e)
    if not isinstance(e, Expr):
        return e
    key = id(e)
    got = memo.get(key)
    if got is not None and got[0] is e:
        return got[1]
    out = _substitute(e, mapping, memo)
    memo[key] = (e, out)  # the node is kept alive with its entry, so its id is not reused
    return out


def _substitute(e: Expr, mapping: Mapping[Var, Expr | int], memo: dict[int, Any]) -> Any:
    if isinstance(e, BinOp):
        lhs, rhs = substitute(e.lhs, mapping, memo), substitute(e.rhs, mapping, memo)
        if lhs is e.lhs and rhs is e.rhs:
            return e
        from argus.ir.expr import as_expr

        return binary(e.op, as_expr(lhs), as_expr(rhs))
    if isinstance(e, Select):
        parts = [substitute(x, mapping, memo) for x in (e.cond, e.if_true, e.if_false)]
        if all(a is b for a, b in zip(parts, (e.cond, e.if_true, e.if_false), strict=True)):
            return e
        return dataclasses.replace(e, cond=parts[0], if_true=parts[1], if_false=parts[2])
    if dataclasses.is_dataclass(e):
        return _fields(e, mapping, memo)
    return e


def _value(x: Any, mapping: Mapping[Var, Expr | int], memo: dict[int, Any]) -> Any:
    if isinstance(x, Buffer):
        return x
    if isinstance(x, Expr):
        return substitute(x, mapping, memo)
    if isinstance(x, tuple):
        items = tuple(_value(v, mapping, memo) for v in x)
        return x if all(a is b for a, b in zip(items, x, strict=True)) else items
    if isinstance(x, Stmt | TileRef | Broadcast | Im2col | Gather):
        return _fields(x, mapping, memo)
    return x


def _fields(x: Any, mapping: Mapping[Var, Expr | int], memo: dict[int, Any]) -> Any:
    changes = {}
    for f in dataclasses.fields(x):
        old = getattr(x, f.name)
        new = _value(old, mapping, memo)
        if new is not old:
            changes[f.name] = new
    return dataclasses.replace(x, **changes) if changes else x


def substitute_stmts(stmts: tuple[Stmt, ...], mapping: Mapping[Var, Expr | int]) -> tuple[Stmt, ...]:
    """The statements with the variables of `mapping` replaced in every expression they hold (nested ones too)."""
    return _value(stmts, mapping, {})  # type: ignore[no-any-return]


def _inline(stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    changed = False
    for s in stmts:
        if isinstance(s, Let):
            out.extend(substitute_stmts(_inline(s.body), {s.var: s.value}))
            changed = True
            continue
        changes = {}
        for f in dataclasses.fields(s):
            v = getattr(s, f.name)
            if isinstance(v, tuple) and v and all(isinstance(x, Stmt) for x in v):
                new = _inline(v)
                if new is not v:
                    changes[f.name] = new
        if changes:
            s = dataclasses.replace(s, **changes)
            changed = True
        out.append(s)
    return tuple(out) if changed else stmts


def inline_lets(kernel: Kernel) -> Kernel:
    """`kernel` with every `Let` replaced by its body, the bound variable substituted by its value (the kernel
    itself when it has none)."""
    body = _inline(kernel.body)
    return kernel if body is kernel.body else dataclasses.replace(kernel, body=body)
