"""Seeded bugs written into a traced kernel: `replace_exprs` rewrites every expression a statement tree holds (window
origins, loop extents, tag predicates), so that one wrong index can be planted consistently everywhere it is read."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from argus.ir.expr import BinOp, Var, binary
from argus.ir.nodes import Buffer


def replace_exprs(x: Any, fn: Callable[[Any], Any]) -> Any:
    """`x` (a statement, a tuple of them, an expression) with each expression node for which `fn` returns a value
    replaced by it (`fn` returns None to leave a node and look inside it); unchanged parts are kept as they are."""
    if isinstance(x, BinOp):
        got = fn(x)
        if got is not None:
            return got
        lhs, rhs = replace_exprs(x.lhs, fn), replace_exprs(x.rhs, fn)
        return x if lhs is x.lhs and rhs is x.rhs else binary(x.op, lhs, rhs)
    if isinstance(x, tuple):
        items = tuple(replace_exprs(v, fn) for v in x)
        return x if all(a is b for a, b in zip(items, x, strict=True)) else items
    if dataclasses.is_dataclass(x) and not isinstance(x, Buffer | Var | type):
        changes = {f.name: replace_exprs(getattr(x, f.name), fn) for f in dataclasses.fields(x)}
        changes = {name: v for name, v in changes.items() if v is not getattr(x, name)}
        return dataclasses.replace(x, **changes) if changes else x
    return x
