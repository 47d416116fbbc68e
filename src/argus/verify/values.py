"""Value assumptions on tensor data (``T.assume_values``) as facts of a query.

The verifier reads an element of a tensor as an uninterpreted function of its index (`smt.element`): the same index
gives the same value and nothing else is known. A kernel may declare what the data is (`ir.nodes.ValueAssumption`):
each element in ``lo .. hi``, the tensor nondecreasing. Such a fact is a quantified statement over the indices;
stated as one it would leave the queries' decidable fragment. Instead `facts` instantiates it on the element terms
a query mentions, and on those only: the range once per term, the order once per pair of terms of one tensor (``i <=
j -> f(i) <= f(j)``), each under the condition that its indices lie inside the tensor (a read outside it is not the
tensor's data; the interpreter refuses it, `INTERP_ELEMENT_OOB`). The query stays quantifier-free.

Sound both ways: every instance holds for every content the declaration allows, so a query proved with them holds for
that data (and, by the declaration, only that data is claimed); a model of a query with them is a content that
satisfies the declaration on every element the model's terms read, and the remaining elements can be filled in
(between their neighbours, within the range) without changing the read ones, so a witness is a real one whenever the
declaration is satisfiable at the model's sizes.
"""

from __future__ import annotations

import itertools
from typing import Any

import z3

from argus.ir.expr import Expr, elements
from argus.ir.nodes import Kernel, ValueAssumption
from argus.verify import smt


def applications(function: Any, terms: list[Any]) -> list[Any]:
    """Every distinct application of the uninterpreted `function` inside `terms` (each shared subterm visited once),
    in the order first met."""
    decl = function if isinstance(function, z3.FuncDeclRef) else None
    found: dict[int, Any] = {}
    seen: set[int] = set()
    todo = [t for t in terms if z3.is_expr(t)]
    while todo:
        t = todo.pop()
        k = t.get_id()
        if k in seen:
            continue
        seen.add(k)
        if z3.is_app(t) and decl is not None and t.decl().eq(decl):
            found.setdefault(k, t)
        todo.extend(t.children())
    return [found[k] for k in sorted(found)]


def _bound(value: Expr | int, env: dict[Any, Any]) -> Any:
    return smt.val(smt.evaluate(value, env) if isinstance(value, Expr) else value)


def facts_of(va: ValueAssumption, env: dict[Any, Any], terms: list[Any]) -> list[Any]:
    """The instances of one declaration on the element terms of its tensor inside `terms` (`env` binds the sizes)."""
    function = smt.element_function(va.tensor)
    if function is None:
        return []
    apps = applications(function, terms)
    if not apps:
        return []
    dims = [_bound(d, env) for d in va.tensor.shape]

    def inside(app: Any) -> Any:
        return z3.And(*[smt.in_range(app.arg(i), 0, n) for i, n in enumerate(dims)])

    lo = None if va.lo is None else _bound(va.lo, env)
    hi = None if va.hi is None else _bound(va.hi, env)
    return instances(apps, lo, hi, va.nondecreasing, inside)


def instances(apps: list[Any], lo: Any, hi: Any, nondecreasing: bool, inside: Any) -> list[Any]:
    """The instances of one declaration on the element terms `apps` of its tensor: each term within `lo .. hi` (None:
    unbounded there), and with `nondecreasing` each pair ordered as its indices are, every instance under the
    condition `inside(term)` that its indices lie inside the tensor. Shared by the bit-vector queries (`facts_of`)
    and the integer encoding of the tile-order lemmas (`argus.verify.checks.tiles`)."""
    out: list[Any] = []
    for app in apps:
        limits = ([app >= lo] if lo is not None else []) + ([app <= hi] if hi is not None else [])
        if limits:
            out.append(z3.Implies(inside(app), z3.And(*limits)))
    if nondecreasing:
        for a, b in itertools.combinations(apps, 2):
            i, j = a.arg(0), b.arg(0)
            both = z3.And(inside(a), inside(b))
            out.append(z3.Implies(z3.And(both, i <= j), a <= b))
            out.append(z3.Implies(z3.And(both, j <= i), b <= a))
    return out


def undeclared(kernel: Kernel, exprs: list[Any]) -> list[str]:
    """The names of the tensors whose elements `exprs` read and about whose contents `kernel` declares nothing."""
    declared = {id(va.tensor) for va in kernel.value_assumptions}
    names: list[str] = []
    for e in exprs:
        for read in elements(e):
            if id(read.buffer) not in declared and read.buffer.name not in names:
                names.append(read.buffer.name)
    return names


def facts(kernel: Kernel, env: dict[Any, Any], terms: list[Any]) -> list[Any]:
    """The instances of every ``T.assume_values`` declaration of `kernel` on the element terms inside `terms`."""
    out: list[Any] = []
    for va in kernel.value_assumptions:
        out += facts_of(va, env, terms)
    return out


def reads_data(e: Expr) -> bool:
    """Whether `e` reads an element of a tensor."""
    return bool(elements(e))


def witness_data(kernel: Kernel, model: Any, terms: list[Any], env: dict | None = None) -> dict[str, int]:
    """The values a model gives the elements of declared tensors read inside `terms` (``{"offs[1]": 7}``), in index
    order: the content of the data in a counterexample. With `env` (the sizes' terms), an element read at an index
    past its tensor's extent (a kernel that reads out of bounds: its value is not data, and no declaration holds of
    it) is named so, ``"offs[1] (past its end)"``."""
    out: dict[tuple[str, tuple[int, ...]], int] = {}
    outside: set[tuple[str, tuple[int, ...]]] = set()
    for va in kernel.value_assumptions:
        function = smt.element_function(va.tensor)
        if function is None:
            continue
        extents = None
        if env is not None:
            shape = va.tensor.shape
            extents = [smt.model_int(model, smt.evaluate(d, env)) if isinstance(d, Expr) else d for d in shape]
        for app in applications(function, terms):
            index = tuple(smt.model_int(model, app.arg(i)) for i in range(app.num_args()))
            out[(va.tensor.name, index)] = smt.model_int(model, app)
            if extents is not None and any(not 0 <= i < n for i, n in zip(index, extents, strict=True)):
                outside.add((va.tensor.name, index))
    return {
        f"{name}[{', '.join(map(str, index))}]" + (" (past its end)" if (name, index) in outside else ""): v
        for (name, index), v in sorted(out.items())
    }
