"""Every element of an output is written (`COVERAGE_OUTPUT`), and every element of a matrix-multiply operand is
loaded (`COVERAGE_CONTRACTION`).

A kernel that stores one tile per block proves nothing about the elements no block stores: a softmax whose row
tile is narrower than the row, an epilogue that stores ``C.tile((bn, bm))`` for ``C.tile((bm, bn))``, a grid of
``M // BM`` blocks for ``cdiv(M, BM)`` rows. Each leaves elements of the output as they were, and every other
check still holds.

For each global tensor the kernel writes, the check takes the sites that store into it. Along every dimension,
a site's window origin must be one of:

* independent of blocks and loops (an expression of the sizes): the site covers ``[o, o + extent)``;
* ``o0 + v * s`` in exactly one block index or loop variable ``v`` of range ``[0, R)`` that no other dimension of
  the window uses (proved for every ``v`` and size), with ``s`` of either sign: the windows start at
  ``lo + u * |s|`` for ``u < R``, where ``lo`` is the lowest origin (``o0``, or ``o0 + (R - 1) * s`` when the
  origin falls as ``v`` rises, e.g. ``Y.tile((3 - i, b))``), and the site covers ``[lo, lo + (R - 1) * |s| +
  extent)`` when ``extent >= |s|``, else the elements whose offset from ``lo`` divided by ``|s|`` is below ``R``
  with remainder below ``extent``.

A site's windows then cover a box, and Z3 looks for a problem size and an element of the tensor inside no box
(the union over all the sites that store into it). Found: a violation naming the element and the sizes. A site
whose windows do not have that form (an origin mixing two indices, a store under ``T.if_``, an index the
persistent tile order computes) leaves the tensor *not checked* (a record, no finding; `docs/verify.md` §7):
covering is an existential fact, and the check does not guess.

Loops are assumed to run (§7), and a store inside a loop whose variable is not in the origin covers the same box
in every iteration.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from argus.ir.expr import BinaryOp, BinOp, Const, Element, Expr, Var, VarKind, binary, free_vars, maximum
from argus.ir.nodes import Broadcast, Copy, Fill, Gemm, If, Map, MapOp, Reduce, ReduceOp, Space, TileRef
from argus.ir.rewrite import substitute
from argus.verify import smt
from argus.verify.checks import tiles
from argus.verify.context import Context
from argus.verify.program import Site, depends_on, user_name
from argus.verify.report import Counterexample, Finding, Verdict


def check_output_coverage(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    stores: dict[int, list[tuple[Site, TileRef]]] = {}
    tensors = {}
    for site in prog.sites:
        s = site.stmt
        if isinstance(s, Copy | Fill) and isinstance(s.dst, TileRef) and s.dst.buffer.space == Space.GLOBAL:
            stores.setdefault(id(s.dst.buffer), []).append((site, s.dst))
            tensors[id(s.dst.buffer)] = s.dst.buffer
    findings = [_check(ctx, tensors[key], sites, _STORED) for key, sites in stores.items()]
    return [f for f in findings if f is not None]


def check_contraction_coverage(ctx: Context) -> list[Finding]:
    """`COVERAGE_CONTRACTION`: every element of a global tensor that feeds a ``T.gemm`` operand (through copies into
    shared memory or registers) is loaded by some block and iteration. Each element of a matrix-multiply operand
    contributes to some output, so one that is never loaded is a term missing from a sum: a ``K // BK`` loop that
    drops the tail of K, a grid short of the last row tile. (The windows must have the form of §`check_output_coverage`;
    others are not checked.)"""
    prog = ctx.analysis.program
    feeding: set[int] = set()
    for site in prog.sites:
        if isinstance(site.stmt, Gemm):
            feeding |= {id(site.stmt.a.buffer), id(site.stmt.b.buffer)}
    copies = [site for site in prog.sites if isinstance(site.stmt, Copy) and isinstance(site.stmt.src, TileRef)]
    grew = True
    while grew:  # the buffers a gemm operand is copied from, transitively
        grew = False
        for site in copies:
            c: Copy = site.stmt  # type: ignore[assignment]
            if id(c.dst.buffer) in feeding and id(c.src.buffer) not in feeding:
                feeding.add(id(c.src.buffer))
                grew = True
    loads: dict[int, list[tuple[Site, TileRef]]] = {}
    tensors = {}
    for site in copies:
        src = site.stmt.src  # type: ignore[attr-defined]
        if src.buffer.space == Space.GLOBAL and id(src.buffer) in feeding:
            loads.setdefault(id(src.buffer), []).append((site, src))
            tensors[id(src.buffer)] = src.buffer
    start = time.perf_counter()
    for tensor in _reduction_contractions(prog.sites, feeding):
        ctx.record_not_checked(
            _LOADED.check,
            user_name(tensor),
            "its data is multiplied with another tensor's and summed without T.gemm (T.reduce_sum or an "
            "accumulation): a contraction whose loads this check does not read, so a dropped K tail there is not "
            "found",
            start,
        )
    findings = []
    for key, sites in loads.items():
        if any(site.ifs or tiles.hard_dims(ref) for site, ref in sites):
            ctx.tiled_loads.append((tensors[key], sites))  # after output coverage: `check_tiled_contraction_coverage`
            continue
        findings.append(_check(ctx, tensors[key], sites, _LOADED))
    return [f for f in findings if f is not None]


def _reduction_contractions(sites: list[Site], feeding: set[int]) -> list[Any]:
    """The global tensors (other than `feeding`'s, the ``T.gemm`` operands' sources) whose loaded data meets another
    global tensor's in a product (``MUL``, ``FMA``) that is then summed: by a ``T.reduce_sum``, or by an addition
    whose result flows back into one of its own operands (an accumulation over a loop, ``acc = acc + w * v``). A
    GEMV's or a direct convolution's contraction: its coverage is not read by `check_contraction_coverage`, which
    records it as not checked rather than saying nothing (`docs/verify.md` §7). Data flow is followed by buffer
    through copies, elementwise statements and reductions (views share their buffer)."""

    def buffers(operands: Any) -> list[Any]:
        return [
            (x.ref if isinstance(x, Broadcast) else x).buffer for x in operands if isinstance(x, TileRef | Broadcast)
        ]

    edges: list[tuple[list[Any], Any, Any]] = []  # (source buffers, destination buffer, statement)
    for site in sites:
        st = site.stmt
        if isinstance(st, Copy) and isinstance(st.src, TileRef):
            edges.append(([st.src.buffer], st.dst.buffer, st))
        elif isinstance(st, Map):
            edges.append((buffers(st.srcs), st.dst.buffer, st))
        elif isinstance(st, Reduce):
            edges.append(([st.src.buffer], st.dst.buffer, st))
    origins: dict[int, set[int]] = {}  # buffer -> the global tensors whose loaded data it holds
    tensors: dict[int, Any] = {}
    product: dict[int, set[int]] = {}  # buffer -> the tensors of a product of two tensors' data it holds
    reaches: dict[int, set[int]] = {}  # buffer -> the buffers its values flow into
    for srcs, dst, _ in edges:
        for b in srcs:
            reaches.setdefault(id(b), set()).add(id(dst))
            if b.space == Space.GLOBAL:
                origins.setdefault(id(b), set()).add(id(b))
                tensors[id(b)] = b
    grew = True
    while grew:
        grew = False
        for srcs, dst, st in edges:
            held = set().union(*(origins.get(id(b), set()) for b in srcs)) if srcs else set()
            made = set().union(*(product.get(id(b), set()) for b in srcs)) if srcs else set()
            if isinstance(st, Map) and st.op in (MapOp.MUL, MapOp.FMA) and len(srcs) >= 2:
                a, b = (origins.get(id(x), set()) for x in srcs[:2])
                if a and b and (a | b) - (a & b):  # two tensors' data multiplied (not a tensor times itself)
                    made |= a | b
            if dst.space == Space.GLOBAL:
                continue
            for table, new in ((origins, held), (product, made)):
                old = table.setdefault(id(dst), set())
                if not new <= old:
                    old |= new
                    grew = True
    closure: dict[int, set[int]] = {}

    def downstream(b: int) -> set[int]:  # the buffers b's values reach, itself included
        if b not in closure:
            seen, todo = {b}, [b]
            while todo:
                for n in reaches.get(todo.pop(), ()):
                    if n not in seen:
                        seen.add(n)
                        todo.append(n)
            closure[b] = seen
        return closure[b]

    summed: set[int] = set()
    for srcs, dst, st in edges:
        made = set().union(*(product.get(id(b), set()) for b in srcs)) if srcs else set()
        if isinstance(st, Reduce) and st.op == ReduceOp.SUM:
            summed |= made
        elif isinstance(st, Map) and st.op in (MapOp.ADD, MapOp.FMA) and made:
            if any(id(b) in downstream(id(dst)) for b in srcs):  # the sum flows back into an operand: accumulation
                summed |= made
    return [tensors[t] for t in sorted(summed, key=lambda t: tensors[t].name) if t not in feeding]


def check_tiled_contraction_coverage(ctx: Context) -> list[Finding]:
    """`COVERAGE_CONTRACTION` for the operands whose loads are guarded or placed by a tile order (a persistent
    kernel's), after output coverage (and the exactly-once checks: `engine`): such a load's tiled dimensions are
    covered where they follow the cells of a store that output coverage proved to cover its grid (`tiles.project`),
    and its other dimensions as any load's (the K-blocks of its loop). Others are not checked, with the reason."""
    findings = [_check(ctx, buffer, sites, _LOADED) for buffer, sites in ctx.tiled_loads]
    return [f for f in findings if f is not None]


@dataclass(frozen=True)
class _Kind:
    code: str
    check: str  # the record's name
    verb: str  # what no window does to the element
    what: str  # the accesses, for the message


_STORED = _Kind(
    "COVERAGE_OUTPUT", "output coverage", "is never written: no block stores a window that holds it", "stores"
)
_LOADED = _Kind(
    "COVERAGE_CONTRACTION",
    "contraction coverage",
    "is never loaded, yet it feeds a T.gemm: its products are missing from every sum it belongs to",
    "loads",
)


def _check(ctx: Context, buffer: Any, sites: list[tuple[Site, TileRef]], kind: _Kind) -> Finding | None:
    start = time.perf_counter()
    part = next((p for p in ctx.kernel.partial_outputs if p.tensor is buffer), None) if kind is _STORED else None
    if part is not None and part.below is None:  # T.writes_part: the rest is another kernel's
        ctx.record_not_checked(
            kind.check, user_name(buffer), f"declared written in part (T.writes_part): {part.why}", start
        )
        return None
    finding = _check_tensor(ctx, buffer, sites, kind, part.below if part is not None else None)
    if isinstance(finding, str):
        ctx.record_not_checked(kind.check, user_name(buffer), finding, start)
        return None
    ctx.record(kind.check, user_name(buffer), Verdict.VERIFIED if finding is None else finding.verdict, start)
    return finding


def _check_tensor(
    ctx: Context, buffer: Any, sites: list[tuple[Site, TileRef]], kind: _Kind, below: Any = None
) -> Finding | str | None:
    """None when every element (below the limits `below` where the kernel declares them, `T.writes_part`) is
    covered, a finding when one is not (or Z3 cannot tell), and the reason when the windows have no form the check
    reads."""
    for site, ref in sites:
        if ref.bound is not None and kind is not _STORED:
            return f"the window loaded at {site.loc} has a bound, which this check does not read"
        if ref.im2col is not None or ref.gather is not None:  # its rows are not origin + r: not a window's elements
            how = "an im2col" if ref.im2col is not None else "a gathered"
            return f"{how} window at {site.loc}, which this check does not read"
    env = dict(ctx.base_env)
    dims = [smt.evaluate(d, env) if isinstance(d, Expr) else smt.val(d) for d in buffer.shape]
    element = [z3.BitVec(f"coverage.{user_name(buffer)}.{d}", smt.WIDTH) for d in range(len(dims))]
    boxes = []
    if kind is _STORED:
        sites = _one_store_per_branch_pair(ctx, _one_store_per_run(sites))
    scope: list[Any] = []  # a load's data-relative limits (`tiles.Projection.limits`): the part that feeds a sum
    for site, ref in sites:
        box = (
            _box(ctx, site, ref, element, buffer)
            if kind is _STORED
            else _load_box(ctx, buffer, site, ref, element, scope)
        )
        if isinstance(box, _Unread):  # a tile-ordered store not proved to cover its grid: look for what it misses
            return _unstored(ctx, buffer, sites, kind, box, below) or f"{box.why} ({site.loc})"
        if isinstance(box, str):
            return f"{box} ({site.loc})"
        boxes.append(box)
    inside = [smt.in_range(e, 0, n) for e, n in zip(element, dims, strict=True)] + scope
    for e, limit in zip(element, below or (), strict=False):  # the part the kernel declares it writes
        if limit is not None:
            inside.append(e < smt.val(smt.evaluate(limit, ctx.base_env) if isinstance(limit, Expr) else limit))
    out = ctx.solve(inside, z3.And(*[z3.Not(b) for b in boxes]))
    if out.verdict == Verdict.VERIFIED:
        return None
    proofs_only = any(id(site) in ctx.proof_only_walks for site, _ in sites)  # a miss there decides nothing
    if out.verdict == Verdict.UNKNOWN and proofs_only:
        return f"not proved: the solver did not decide the readings at the ends of a block index ({out.reason})"
    first = sites[0][0]
    if out.verdict == Verdict.UNKNOWN:
        return Finding(
            out.code or "UNKNOWN_SOLVER",
            Verdict.UNKNOWN,
            f"whether every element of {user_name(buffer)} is covered ({kind.check}) could not be decided",
            loc=first.loc,
            reason=out.reason,
        )
    m = out.model
    coord = tuple(smt.model_int(m, e) for e in element)
    extents = " x ".join(str(smt.model_int(m, d)) for d in dims)
    if proofs_only:
        return (
            "not proved: the windows move with a block index that also bounds their loop, read at the ends of its "
            f"range; there they miss element {coord} (at {ctx.shape_values(m)}), which decides nothing (its middle "
            "values may load it, or the kernel skip it on purpose: a triangular operand's zeros)"
        )
    if any(id(site) in ctx.longest_walks for site, _ in sites):  # ends of indices stood for every instance
        confirmed = _confirm_uncovered(ctx, sites, element, coord, m)
        if confirmed is not None:
            return f"element {coord} at {ctx.shape_values(m)}, missed at the ends of the varying indices: {confirmed}"
        how = "; confirmed with every block and loop index exact: no instance's windows hold it"
        return _uncovered(buffer, sites, kind, ctx.shape_values(m), coord, extents, how)
    return _uncovered(buffer, sites, kind, ctx.shape_values(m), coord, extents)


def _confirm_uncovered(
    ctx: Context, sites: list[tuple[Site, TileRef]], element: list[Any], coord: tuple[int, ...], model: Any
) -> str | None:
    """None when, at the sizes of `model`, no site's window holds element `coord` for any values of the block and
    loop indices (each loop's range read at the indices around it, each branch's condition at them): the element
    found with the ends of the indices standing for every instance (`_ends`) is then missed indeed. Else the
    reason the finding cannot be given: some block's shorter loop holds it after all (an extent longest in the middle
    of its indices' range), or the query could not be decided."""
    pins = [t == smt.model_int(model, t) for t in ctx.shape_terms.values()]
    pins += [e == c for e, c in zip(element, coord, strict=True)]
    held = []
    try:
        for n, (site, ref) in enumerate(sites):
            env = dict(ctx.base_env)
            cons = []
            for v, g in zip(ctx.kernel.block_vars, ctx.kernel.grid, strict=True):
                t = z3.BitVec(f"coverage.confirm{n}.{v.name}", smt.WIDTH)
                cons.append(smt.in_range(t, 0, smt.evaluate(g, env) if isinstance(g, Expr) else smt.val(g)))
                env[v] = t
            for lp in site.loops:
                t = z3.BitVec(f"coverage.confirm{n}.{lp.var.name}", smt.WIDTH)
                cons.append(ctx.loop_range(lp, t, env))
                env[lp.var] = t
            cons += smt.taken(site.ifs, env)
            for e, origin, extent in zip(element, ref.origin, ref.extent, strict=True):
                o = smt.val(smt.evaluate(origin, env) if isinstance(origin, Expr) else smt.val(origin))
                x = smt.val(smt.evaluate(extent, env) if isinstance(extent, Expr) else smt.val(extent))
                cons.append(_window(e, o, x))
            held.append(z3.And(*cons))
    except smt.EncodingError as e:
        return f"the windows could not be encoded with every index exact ({e})"
    out = ctx.solve(pins, z3.Or(*held))
    if out.verdict == Verdict.VERIFIED:
        return None
    if out.verdict == Verdict.UNKNOWN:
        return f"whether another block's loop holds it could not be decided ({out.reason})"
    return "an instance between the ends holds it, so the ends do not stand for the union"


def _one_store_per_run(sites: list[tuple[Site, TileRef]]) -> list[tuple[Site, TileRef]]:
    """`sites` with each *run* of stores replaced by the one store it is: stores in the same loops and branches, one
    after another in the same body (a Python loop unrolled by the trace: ``for h in range(BH): T.copy(rows,
    Y.window((n, bh * BH + h, ...)))``), whose windows have the same extents and origins but in one dimension, where
    they are one origin plus distinct constants whose windows touch or overlap (``c[i + 1] <= c[i] + extent``). Every
    instance that runs one of them runs all of them, so together they store one window from the least constant to
    past the greatest: the first's origin, the extent spanning them."""
    keys = tiles._Keys()
    groups: dict[Any, list[tuple[int, tuple[Site, TileRef], int]]] = {}
    for site, ref in sites:
        if ref.bound is not None or ref.im2col is not None or ref.gather is not None or not site.frames:
            continue
        owners = tuple((id(f.owner), f.branch) for f in site.frames[:-1]) + (id(site.frames[-1].body),)
        for d, origin in enumerate(ref.origin):
            base, c = _plus_constant(origin)
            others = tuple(keys(o) for i, o in enumerate(ref.origin) if i != d)
            key = (owners, d, keys(base), others, tuple(ref.extent))
            groups.setdefault(key, []).append((c, (site, ref), d))
    merged: dict[int, TileRef | None] = {}  # a run's first store -> the run's window; its others -> None
    for group in sorted(groups.values(), key=len, reverse=True):
        members = sorted((g for g in group if id(g[1][0]) not in merged), key=lambda g: g[0])
        if len(members) < 2 or len({c for c, _, _ in members}) < len(members):
            continue
        d = members[0][2]
        extent = members[0][1][1].extent[d]
        if any(b[0] > a[0] + extent for a, b in zip(members, members[1:], strict=False)):
            continue  # a gap between two of them: not one window
        ref = members[0][1][1]
        span = members[-1][0] + extent - members[0][0]
        merged.update({id(m[1][0]): None for m in members[1:]})
        merged[id(members[0][1][0])] = dataclasses.replace(
            ref, extent=tuple(span if i == d else e for i, e in enumerate(ref.extent))
        )
    out = []
    for site, ref in sites:
        if id(site) not in merged:
            out.append((site, ref))
        elif merged[id(site)] is not None:
            out.append((site, merged[id(site)]))
    return out


def _plus_constant(e: Any) -> tuple[Any, int]:
    """``(base, c)`` with ``e == base + c`` by its form (``x + 3``, ``x - 1``, ``x``; an integer is ``0 + c``)."""
    if isinstance(e, int):
        return 0, e
    if isinstance(e, BinOp) and isinstance(e.rhs, Const) and isinstance(e.rhs.value, int):
        if e.op == BinaryOp.ADD:
            return e.lhs, e.rhs.value
        if e.op == BinaryOp.SUB:
            return e.lhs, -e.rhs.value
    return e, 0


def _one_store_per_branch_pair(ctx: Context, sites: list[tuple[Site, TileRef]]) -> list[tuple[Site, TileRef]]:
    """`sites` with each pair of stores that is one store split by a branch replaced by that one store: the same
    window origins and extents in the same loops, under the same branches but the last, whose conditions are
    complementary (``c`` and not ``c``; ``x <= y`` and ``x > y``), and where one window has a bound the other does
    not, the other's window proved inside that bound under its condition (a tile staged through TMA where every row
    is the expert's, the bounded direct store of the expert's last, partial tile: `grouped.store_expert_tile`). The
    pair then stores exactly the bounded window under the branches they share, whichever way the last one goes."""
    out = list(sites)
    merged = True
    while merged:
        merged = False
        for (i, a), (j, b) in itertools.combinations(enumerate(out), 2):
            one = _one_store(ctx, a, b)
            if one is not None:
                out = [x for k, x in enumerate(out) if k not in (i, j)] + [one]
                merged = True
                break
    return out


def _complementary(a: Any, b: Any, keys: Any) -> bool:
    """Whether conditions `a` and `b` are each other's negation by their form: ``x <= y`` and ``y < x``, ``x == y``
    and ``x != y`` (``x > y`` is ``y < x`` in the IR)."""
    if not (isinstance(a, BinOp) and isinstance(b, BinOp)):
        return False
    same = keys(a.lhs) == keys(b.lhs) and keys(a.rhs) == keys(b.rhs)
    swapped = keys(a.lhs) == keys(b.rhs) and keys(a.rhs) == keys(b.lhs)
    ops = {a.op, b.op}
    if ops == {BinaryOp.LE, BinaryOp.LT}:
        return swapped
    if ops == {BinaryOp.EQ, BinaryOp.NE}:
        return same or swapped
    return False


def _one_store(ctx: Context, a: tuple[Site, TileRef], b: tuple[Site, TileRef]) -> tuple[Site, TileRef] | None:
    """The one store that the pair `a`, `b` is (`_one_store_per_branch_pair`), or None."""
    (sa, ra), (sb, rb) = a, b
    if len(sa.frames) != len(sb.frames) or len(ra.extent) != len(rb.extent) or not sa.ifs:
        return None
    if any(x.owner is not y.owner or x.branch != y.branch for x, y in zip(sa.frames[:-1], sb.frames[:-1], strict=True)):
        return None  # the same loops and branches around both, but the last
    last_a, last_b = sa.frames[-1], sb.frames[-1]
    if not (isinstance(last_a.owner, If) and isinstance(last_b.owner, If)):
        return None
    keys = tiles._Keys()  # structural comparison: an Expr's == builds a condition
    if any(keys(x) != keys(y) for x, y in zip(ra.extent, rb.extent, strict=True)):
        return None
    ca, cb = last_a.owner.cond, last_b.owner.cond
    if ca is cb:
        complementary = last_a.branch != last_b.branch
    else:
        complementary = last_a.branch == last_b.branch and _complementary(ca, cb, keys)
    if not complementary or any(keys(x) != keys(y) for x, y in zip(ra.origin, rb.origin, strict=True)):
        return None
    bounded_a = ra.bound is not None and any(x is not None for x in ra.bound)
    bounded_b = rb.bound is not None and any(x is not None for x in rb.bound)
    if bounded_a and bounded_b and any(keys(x) != keys(y) for x, y in zip(ra.bound, rb.bound, strict=True)):
        return None
    if bounded_a != bounded_b:  # the unbounded window must lie inside the other's bound, under its own branch
        (inner, _), (_, outer_ref) = (b, a) if bounded_a else (a, b)
        if not _inside_bound(ctx, inner, outer_ref):
            return None
    kept, ref = (sa, ra) if bounded_a else (sb, rb)
    return Site(kept.stmt, kept.index, kept.end, kept.frames[:-1], kept.role), ref


def _inside_bound(ctx: Context, site: Site, bounded: TileRef) -> bool:
    """Whether, under `site`'s branch conditions, its window ends at or before `bounded`'s bound in every dimension
    that has one (the windows' origins and extents are the same)."""
    try:
        env, cons = ctx.loop_env(site)
        for branch, taken in site.ifs:
            cond = smt.boolean(smt.evaluate(branch.cond, env))
            cons.append(cond if taken else z3.Not(cond))
        past = []
        for origin, extent, bound in zip(bounded.origin, bounded.extent, bounded.bound, strict=True):
            if bound is None:
                continue
            o = smt.evaluate(origin, env) if isinstance(origin, Expr) else smt.val(origin)
            limit = smt.evaluate(bound, env) if isinstance(bound, Expr) else smt.val(bound)
            past.append(smt.val(o) + smt.val(extent) > smt.val(limit))
    except smt.EncodingError:
        return False
    return ctx.solve(cons, z3.Or(*past)).verdict == Verdict.VERIFIED


def _uncovered(
    buffer: Any,
    sites: list[tuple[Site, TileRef]],
    kind: _Kind,
    shapes: dict[str, int],
    coord: tuple[int, ...],
    extents: str,
    how: str = "",
) -> Finding:
    """The finding for element `coord` of `buffer` that no site covers, at the sizes `shapes` (`how`: how it was
    found, appended to the list of sites)."""
    first = sites[0][0]
    msg = (
        f"element {coord} of {user_name(buffer)} ({extents}) {kind.verb} (the {kind.what} at "
        f"{', '.join(str(s.loc) for s, _ in sites)}{how})"
    )
    cex = Counterexample(
        code=kind.code,
        message=msg,
        op_loc=first.loc,
        program_point=str(first.loc),
        block={},
        shapes=shapes,
        thread=None,  # a fact about the whole launch: no thread did it
        loops={},
        accesses=(),
        variables={"element": str(coord), f"{user_name(buffer)} extents": extents},
    )
    return Finding(kind.code, Verdict.VIOLATED, msg, loc=first.loc, counterexample=cex)


def _box(ctx: Context, site: Site, ref: TileRef, element: list[Any], buffer: Any = None) -> Any:
    """The condition that `element` lies in one of the windows `ref` takes at `site`, or why the windows have no
    form the check reads. A store whose origins come from a tile order (or that is under ``T.if_``) is read
    through `_tile_box` when `buffer` is given (stores only)."""
    bounded = ref.bound is not None and any(b is not None for b in ref.bound)
    if buffer is not None and (site.ifs or tiles.hard_dims(ref) or bounded):
        return _tile_box(ctx, buffer, site, ref, element)
    if bounded:
        return f"the window at {site.loc} has a bound, which this check does not read"
    return _dims_box(ctx, site, ref, element, set(), set(), site.ifs)


def _load_box(ctx: Context, buffer: Any, site: Site, ref: TileRef, element: list[Any], scope: list[Any]) -> Any:
    """`_box` for a load: where it is guarded or placed by a tile order, the windows `tiles.project` proves it
    takes at the cells of a covered store (every element of a tiled dimension at its offset in the cell, every value
    of the other indices); else `_box`. Where the store's cells are segments of the data (an expert's rows), the
    elements past the last segment feed no sum: their limit goes to `scope`, which bounds the elements asked for."""
    if not (site.ifs or tiles.hard_dims(ref)):
        return _box(ctx, site, ref, element)
    split = tiles.split(ctx.kernel, site, ref)
    if split is None:
        return _box(ctx, site, ref, element)
    got = tiles.project(ctx.kernel, buffer, site, ref, split, ctx.tile_covers)
    if isinstance(got, tiles.Missing):
        if not site.ifs and _digit_divisions(ctx, ref):  # a block index read as digits by a size (`_digits`)
            box = _box(ctx, site, ref, element)
            if not isinstance(box, str):
                return box
        return f"an access under T.if_ or placed by a tile order, not projected on a covered store: {got.why}"
    runs = {v for v, _ in got.slabs.values()}
    box = _dims_box(ctx, site, ref, element, {*got.cells, *got.slabs, *got.selected}, {*got.number_vars, *runs})
    if isinstance(box, str):
        return box
    conds = []
    for d, (cell, delta, span) in got.cells.items():
        extent = ref.extent[d]
        limit = smt.val(smt.evaluate(span, ctx.base_env))
        if isinstance(delta, Expr):  # the store's cells shifted by an expression of the sizes
            rel = element[d] - smt.val(smt.evaluate(delta, ctx.base_env))
            conds += [rel >= 0, rel < limit, smt.mod(rel, cell) < min(extent, cell)]
            continue
        conds.append(element[d] < limit)
        if delta == 0 and extent >= cell:
            continue  # the whole cell
        within = smt.mod(element[d], cell)
        conds.append(z3.And(within >= delta, within < delta + extent))
    for d, (_, span) in got.slabs.items():
        conds.append(element[d] < smt.val(smt.evaluate(span, ctx.base_env)))
    for d, limit in got.limits.items():
        scope.append(element[d] < smt.val(smt.evaluate(limit, ctx.base_env)))
    for d, ends in got.selected.items():  # a segment's index: only those with a row feed a sum
        g = Var(f"coverage.segment{d}", VarKind.LOOP)
        env = {**ctx.base_env, g: element[d]}
        end = smt.val(smt.evaluate(Element(ends, (g,), ends.dtype), env))
        before = smt.val(smt.evaluate(Element(ends, (maximum(g - 1, 0),), ends.dtype), env))
        scope.append(end > z3.If(element[d] > 0, before, smt.val(0)))
    return z3.And(box, *conds)


def _tile_box(ctx: Context, buffer: Any, site: Site, ref: TileRef, element: list[Any]) -> Any:
    """The windows of a store placed by a tile number (`checks/tiles.py`, `tiles.cover`): where the tile order's
    lemma (distinct tile numbers, windows sharing no element) and `tiles.cover`'s two facts (numbers below the
    grid's cell count give cells; each is stored by an instance that runs) are proved, the site covers every cell
    of the tiled dimensions, whatever the element there, and the other dimensions as `_dims_box` reads them over
    the indices the tile number does not read."""
    split = tiles.split(ctx.kernel, site, ref)
    if split is None and ref.bound is not None and any(b is not None for b in ref.bound):
        return f"the window stored at {site.loc} has a bound, and no tile number places it"
    if split is None:
        return (
            "an access under T.if_"
            if not tiles.hard_dims(ref)
            else "its window origins divide by a size, and no tile number of the block and loop indices gives them"
        )
    got = tiles.cover(ctx.kernel, buffer, site, ref, split)
    if isinstance(got, tiles.Missing):
        return _Unread(got.why, got.sizes)
    dims = list(got.tiled)
    key = (id(site), id(site), id(buffer)) if dims == sorted(split.origins) else (id(site), id(buffer), tuple(dims))
    if got.rounded:  # the lemma over the cover's rounded grid (a cluster's tiles past the end kept apart too)
        if key not in ctx.tile_lemmas:  # the tensor's own first, which the exactly-once check reads (`once.py`)
            ctx.tile_lemmas[key] = tiles.prove(ctx.kernel, buffer, dims, (split, ref), (split, ref))
        key = (*key, "rounded", tuple(sorted(got.rounded)))
    if key not in ctx.tile_lemmas:
        ctx.tile_lemmas[key] = tiles.prove(ctx.kernel, buffer, dims, (split, ref), (split, ref), got.rounded or None)
    lemma = ctx.tile_lemmas[key]
    if not lemma.proved:
        why = f"that the tile order gives distinct cells for distinct tile numbers was not proved: {lemma.why}"
        return _Unread(why, lemma.sizes)
    box = _dims_box(ctx, site, ref, element, set(dims), set(got.number_vars))
    if not isinstance(box, str):
        ctx.tile_covers.append(tiles.Covered(buffer, site, ref, got.split or split, got))
    if isinstance(box, str) or not got.limits:
        return box
    # a segmented dimension: its cells are every segment's rows, from 0 to the last segment's end
    limits = [element[d] < smt.val(smt.evaluate(limit, ctx.base_env)) for d, limit in got.limits.items()]
    return z3.And(box, *limits)


def _dims_box(
    ctx: Context, site: Site, ref: TileRef, element: list[Any], skip: set[int], taken: set[Var], guards: Any = ()
) -> Any:
    """`_box`'s condition over the dimensions not in `skip`, with the indices in `taken` (a tile number's) read by
    none of them.

    A dimension reads at most one index, which no other dimension reads, as an arithmetic progression, besides any
    number of *enumerated* indices of a constant range (`_enumerated`): a K loop ``k`` over a tap and a channel block
    (``k // CB`` in one dimension, ``(k % CB) * BK`` in another), a split index beside it, a loop ``o`` over a
    tile's rows in ``bh * BH + o``. The windows of the dimensions that read enumerated indices are the union over
    every value of those indices of the box at that value (a disjunction; the other dimensions read other indices,
    so the union of the products is the product of the unions). A grid axis read as quotient and remainder by one
    constant is read as two indices first (`_digits`).

    Loops whose extent reads block or outer loop indices, and the branches `guards` (a load's ``T.if_`` conditions,
    (If, side) pairs), are read at the ends of those indices' ranges (`_ends`): the box is the union, over every
    combination of ends at which the branches are taken, of the box with each such loop at its extent there."""
    ranges: dict[Var, Any] = {}
    for v, g in zip(ctx.kernel.block_vars, ctx.kernel.grid, strict=True):
        if v not in taken:
            ranges[v] = smt.evaluate(g, ctx.base_env) if isinstance(g, Expr) else smt.val(g)
    shapes = set(ctx.kernel.shape_vars)
    varying: list[Any] = []  # loops whose range differs from block to block (a causal loop)
    for lp in site.loops:
        if lp.var in taken:
            continue
        if isinstance(lp.extent, Expr):
            if not free_vars(lp.extent) <= shapes:
                varying.append(lp)
                continue
            ranges[lp.var] = smt.evaluate(lp.extent, ctx.base_env)
        else:
            ranges[lp.var] = smt.val(lp.extent)
    guards = _narrowed(ctx, guards, ranges, {lp.var for lp in site.loops} - taken)
    if not varying and not guards:
        return _dims_box_at(ctx, ref, element, skip, taken, ranges)
    readings = _ends(ctx, ref, skip, ranges, varying, guards)
    if isinstance(readings, str):
        return readings
    ctx.longest_walks.add(id(site))  # a model of a missed element is confirmed exactly (`_confirm_uncovered`)
    if any(not isinstance(x, int) for _, _, fixed in readings for x in fixed.values()):
        ctx.proof_only_walks.add(id(site))  # an index that places the windows, read at its ends: proofs only
    boxes = []
    for runs, at, fixed in readings:
        here, left = ref, {**ranges, **at}
        if fixed:  # indices read at every value (or at the ends of their range): the origins at that value
            values = {v: Const(x) if isinstance(x, int) else x for v, x in fixed.items()}
            here = dataclasses.replace(
                ref, origin=tuple(substitute(o, values) if isinstance(o, Expr) else o for o in ref.origin)
            )
            left = {v: r for v, r in left.items() if v not in fixed}
        box = _dims_box_at(ctx, here, element, skip, taken, left)
        if isinstance(box, str):
            return box
        boxes.append(z3.And(runs, box))
    return z3.Or(*boxes)


def _narrowed(ctx: Context, guards: Any, ranges: dict[Var, Any], loops: set[Var]) -> list[Any]:
    """`guards` without those that only bound a loop's index from above, each such bound taken into the index's range
    in `ranges` (in place): ``T.if_(k + c < n)`` around a load in a loop ``k < extent`` (a software pipeline's
    prefetch of K-block ``k + c``, which stops at the end) runs exactly the iterations ``k < min(extent, n - c)``, so
    the load's windows are the progression over that range, whatever index places them. The then-side of ``<`` or
    ``<=`` with the loop's index (plus a constant) on the left and the sizes alone on the right; anything else is kept
    for `_ends`."""
    shapes = set(ctx.kernel.shape_vars)
    kept = []
    for branch, side in guards:
        cond = branch.cond
        bound = None
        if side and isinstance(cond, BinOp) and cond.op in (BinaryOp.LT, BinaryOp.LE) and free_vars(cond.rhs) <= shapes:
            lhs, c = cond.lhs, 0
            if isinstance(lhs, BinOp) and lhs.op == BinaryOp.ADD and isinstance(lhs.rhs, Const):
                lhs, c = lhs.lhs, int(lhs.rhs.value)
            if isinstance(lhs, Var) and lhs in loops and lhs in ranges:
                try:
                    limit = smt.val(smt.evaluate(cond.rhs, ctx.base_env)) - c + (1 if cond.op == BinaryOp.LE else 0)
                except smt.EncodingError:
                    limit = None
                if limit is not None:
                    bound = (lhs, limit)
        if bound is None:
            kept.append((branch, side))
            continue
        v, limit = bound
        ranges[v] = smt.maximum(smt.minimum(ranges[v], limit), 0)
    return kept


_MOST_READINGS = 256  # the most combinations of index values `_ends` reads the varying extents and branches at
_MOST_EVERY_VALUE = 64  # the largest constant range of an index `_ends` reads at every value


def _ends(
    ctx: Context, ref: TileRef, skip: set[int], ranges: dict[Var, Any], varying: list[Any], guards: Any
) -> list[tuple[Any, dict[Var, Any], dict[Var, Any]]] | str:
    """The readings of a site whose loops' extents (`varying`) or branches (`guards`) read block indices or outer
    loop indices: ``(runs, at, fixed)`` for every combination of values of those indices read, `runs` the condition
    that the instance at those values exists and takes the branches, `at` each varying loop's range there and
    `fixed` the indices read at every value (below); or why the site cannot be read so.

    An index of a constant range up to `_MOST_EVERY_VALUE` (a decode split of the keys: the split's first key tile
    and its count both read it) is read at every value: exact, and it may place the window (the origins are read at
    each value). Any other index is read at the two ends of its range. A loop's windows are a progression from one
    origin, so an instance whose loop is longer loads every window a shorter one loads at the same iteration
    numbers: where the extents are monotone in each such index (the causal loops: ``min(tiles, bm + 1)``), the union
    over the instances is the instance at an end's, and otherwise it contains the readings (never more than some
    instance loads). That needs those indices to place no window (an origin that reads one moves the windows with
    the loop's length). A block index that places the window too (a causal split of the keys: the split's share
    moves with the query block, which bounds its loop) is read at the two ends of its range as well, the origins
    placed at each end: each reading is an instance that exists, so the readings never hold more than the instances
    load (a proof over them holds for every instance), but the ends need not stand for the union, and an element no
    instance loads may be one the kernel skips on purpose (a triangular operand's zeros): such a site proves or is
    not checked, never a finding (`Context.proof_only_walks`). Elsewhere a model of an element no reading holds is
    confirmed with every index exact (`_confirm_uncovered`): a missed element is reported only where no instance
    loads it."""
    shapes = set(ctx.kernel.shape_vars)
    own = {lp.var for lp in varying}
    read: set[Var] = set()
    for lp in varying:
        read |= free_vars(lp.extent) - shapes
    for branch, _ in guards:
        read |= free_vars(branch.cond) - shapes
    every: dict[Var, int] = {}  # index -> its constant range: read at every value
    ends: list[Var] = []
    placing: dict[Var, Expr] = {}  # a block index that places the window -> its last value, read at both ends
    grid = dict(zip(ctx.kernel.block_vars, ctx.kernel.grid, strict=True))
    for v in sorted(read, key=lambda v: v.name):
        loop = next((lp for lp in varying if v in free_vars(lp.extent)), None)
        what = f"the extent {lp.extent} of loop {lp.var.name}" if (lp := loop) else "the condition of a T.if_ around it"
        if v in own or v not in ranges:
            return f"{what} reads {v.name}, an index whose range is not the same for every instance"
        places = [d for d, o in enumerate(ref.origin) if isinstance(o, Expr) and depends_on(o, v)]
        known = z3.simplify(ranges[v])
        if z3.is_bv_value(known) and 0 < known.as_signed_long() <= _MOST_EVERY_VALUE and not set(places) & skip:
            every[v] = known.as_signed_long()
        elif places and v in grid and not set(places) & skip:
            extent = grid[v]
            placing[v] = binary(BinaryOp.SUB, extent, Const(1)) if isinstance(extent, Expr) else Const(extent - 1)
        elif places:
            return f"{what} reads {v.name}, which also places the window"
        else:
            ends.append(v)
    combos = 2 ** (len(ends) + len(placing))
    for n in every.values():
        combos *= n
    if combos > _MOST_READINGS:
        return f"the varying loops and branches read {len(read)} indices, {combos} combinations: too many to read"
    out = []
    try:
        for values in itertools.product(*(range(n) for n in every.values())):
            for placed in itertools.product((False, True), repeat=len(placing)):
                fixed: dict[Var, Any] = dict(zip(every, values, strict=True))
                fixed |= {v: last if end else Const(0) for (v, last), end in zip(placing.items(), placed, strict=True)}
                for last in itertools.product((False, True), repeat=len(ends)):
                    at = {v: ranges[v] - 1 if end else smt.val(0) for v, end in zip(ends, last, strict=True)}
                    env = {**ctx.base_env, **at, **{v: _value(ctx, x) for v, x in fixed.items()}}
                    runs = [ranges[v] >= 1 for v in (*ends, *placing)] + smt.taken(guards, env)
                    extents = {lp.var: smt.val(smt.evaluate(lp.extent, env)) for lp in varying}
                    out.append((z3.And(*runs), extents, fixed))
    except smt.EncodingError as e:
        return f"the varying loops or branches could not be read at their indices' values: {e}"
    return out


def _value(ctx: Context, x: Any) -> Any:
    """An index's value as `_ends` fixes it (a constant, or an IR expression of the sizes) as a term."""
    return smt.val(x) if isinstance(x, int) else smt.val(smt.evaluate(x, ctx.base_env))


def _dims_box_at(
    ctx: Context, ref: TileRef, element: list[Any], skip: set[int], taken: set[Var], ranges: dict[Var, Any]
) -> Any:
    """`_dims_box` with every index's range given (`ranges`)."""
    ref, ranges = _digits(ctx, ref, skip, ranges)
    reads: dict[int, list[Var]] = {}
    for d, origin in enumerate(ref.origin):
        if d in skip:
            continue
        if any(depends_on(origin, v) for v in taken):
            return f"dimension {d}'s origin {origin} reads an index of the tile number, which does not place it"
        if isinstance(origin, Expr) and _other_vars(origin, set(ranges), ctx):
            return f"dimension {d}'s origin {_short(origin)} depends on values other than the block and loop indices"
        reads[d] = [v for v in ranges if depends_on(origin, v)]
    enumerated = _enumerated(ctx, ref, reads, ranges)
    if isinstance(enumerated, str):
        return enumerated
    # affinity is proved once, over the enumerated indices as free values in their ranges; each value's windows are
    # then read off the origin with the indices replaced by constants (folded: no division of a free value is left)
    free = {v: z3.BitVec(f"coverage.enumerated.{v.name}", smt.WIDTH) for v in enumerated}
    env = {**ctx.base_env, **free}
    within = [smt.in_range(t, 0, smt.val(enumerated[v])) for v, t in free.items()]
    used: set[Var] = set()
    conds: list[Any] = []
    per_value: dict[int, Var | None] = {}  # an enumerated dimension -> the index it reads as a progression
    for d, vs in reads.items():
        origin, extent = ref.origin[d], ref.extent[d]
        rest = [v for v in vs if v not in enumerated]
        if len(rest) > 1:
            return f"dimension {d}'s origin {origin} mixes {', '.join(v.name for v in rest)}"
        if rest and rest[0] in used:
            return f"{rest[0].name} appears in two dimensions of the window"
        used |= set(rest)
        if len(rest) < len(vs):
            if rest and _affine(ctx, origin, rest[0], ranges[rest[0]], env, within)[0] is None:
                return f"dimension {d}'s origin {origin} is not affine in {rest[0].name}"
            per_value[d] = rest[0] if rest else None
            continue
        e, ext = element[d], smt.val(extent)
        if not rest:
            o = smt.evaluate(origin, ctx.base_env) if isinstance(origin, Expr) else smt.val(origin)
            conds.append(_window(e, o, ext))
            continue
        o0, step = _affine(ctx, origin, rest[0], ranges[rest[0]])
        if o0 is None:
            return f"dimension {d}'s origin {origin} is not affine in {rest[0].name}"
        conds.append(_progression(ctx, e, o0, step, ranges[rest[0]], ext))
    if per_value:
        boxes = []
        for values in itertools.product(*(range(n) for n in enumerated.values())):
            at = {v: Const(x) for v, x in zip(enumerated, values, strict=True)}
            box = []
            for d, v in per_value.items():
                origin, e, ext = substitute(ref.origin[d], at), element[d], smt.val(ref.extent[d])
                if v is None:
                    box.append(_window(e, smt.val(smt.evaluate(origin, ctx.base_env)), ext))
                    continue
                o0 = smt.val(smt.evaluate(origin, {**ctx.base_env, v: smt.val(0)}))
                step = smt.val(smt.evaluate(origin, {**ctx.base_env, v: smt.val(1)})) - o0
                box.append(_progression(ctx, e, o0, step, ranges[v], ext))
            boxes.append(z3.And(*box))
        conds.append(z3.Or(*boxes))
    return z3.And(*conds) if conds else z3.BoolVal(True)


def _window(e: Any, o: Any, ext: Any) -> Any:
    """`e` lies in the window ``[o, o + ext)``."""
    return z3.And(e >= o, e - o < ext)


def _digits(ctx: Context, ref: TileRef, skip: set[int], ranges: dict[Var, Any]) -> tuple[TileRef, dict[Var, Any]]:
    """`ref` and `ranges` with each index ``v`` of a symbolic range ``R`` that the origins read as ``v // c`` and
    ``v % c`` (one divisor ``c``: a constant ``c > 1``, or a size ``c >= 1``; a grid axis of (image, split) pairs,
    ``n = z // S``, ``split = z % S``; a grid axis of (batch, KV head) pairs, ``b = by // HK``, ``h = by % HK``)
    read as two indices: ``q = v // c`` over ``[0, R / c)`` and ``r = v % c`` over ``[0, c)``, ``v`` itself as
    ``q * c + r``. Only where ``R`` is a multiple of ``c`` (proved, for every size the assumptions allow): then the
    pairs ``(q, r)`` are exactly the values of ``v``. A quotient read again as digits (``by // GROUP // HK`` and
    ``by // GROUP % HK``: packed query heads over (batch, KV head) pairs) is split in turn."""
    pending = list(ranges)
    while pending:
        v = pending.pop(0)
        divisors: dict[Any, Any] = {}
        for d, origin in enumerate(ref.origin):
            if d not in skip and isinstance(origin, Expr):
                _divisors(origin, v, divisors)
        if len(divisors) != 1 or z3.is_bv_value(z3.simplify(ranges[v])):
            continue
        (c,) = divisors.values()
        if isinstance(c, int):
            if c <= 1:
                continue
            cv, cname = smt.val(c), str(c)
        else:  # a size: at least 1 wherever the assumptions hold, else the digits are not the index's values
            cv, cname = smt.val(smt.evaluate(c, ctx.base_env)), c.name
            if not _always(ctx, [], cv >= 1):
                continue
        if not _always(ctx, [], smt.mod(ranges[v], cv) == 0):
            continue
        q, r = Var(f"{v.name}//{cname}", v.kind, v.dtype), Var(f"{v.name}%{cname}", v.kind, v.dtype)
        origins = tuple(
            _split_digits(o, v, c, q, r) if d not in skip and isinstance(o, Expr) else o
            for d, o in enumerate(ref.origin)
        )
        if any(o is None for o in origins):
            continue
        ref = dataclasses.replace(ref, origin=origins)
        ranges = {
            **{u: x for u, x in ranges.items() if u is not v},
            q: smt.floordiv(ranges[v], c if isinstance(c, int) else cv),
            r: cv,
        }
        pending.append(q)
    return ref, ranges


def _divisor(e: Any) -> Any:
    """The divisor `_digits` reads in ``x // e`` or ``x % e``: a constant's value, a size (a shape variable) itself;
    None for anything else."""
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var) and e.kind == VarKind.SHAPE:
        return e
    return None


def _divisors(e: Any, v: Var, out: dict[Any, Any]) -> None:
    """The divisors (`_divisor`) of every ``v // c`` and ``v % c`` in `e`, keyed so that one size is one key."""
    if isinstance(e, BinOp):
        if e.lhs is v and e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD):
            c = _divisor(e.rhs)
            if c is not None:
                out[_divisor_key(c)] = c
                return
        _divisors(e.lhs, v, out)
        _divisors(e.rhs, v, out)


def _divisor_key(c: Any) -> tuple[str, Any]:
    """A divisor (`_divisor`) as a key: one size is one key whichever node names it, a constant its value."""
    return ("size", c.name) if isinstance(c, Var) else ("const", c)


def _digit_divisions(ctx: Context, ref: TileRef) -> bool:
    """Whether every origin of `ref` that divides by a non-constant (`tiles.hard_dims`) divides a block index (or its
    quotient by a constant) by a size, and nothing else by a non-constant: windows `_digits` reads (a (B, S, HK, D)
    cache's ``by // HK`` and ``by % HK``), which `_box` can then read without a tile order's projection."""
    blocks = ctx.kernel.block_vars

    def digit_of_block(e: Any) -> bool:  # a block index, or a quotient of one by a constant
        if isinstance(e, BinOp) and e.op == BinaryOp.FLOORDIV and isinstance(e.rhs, Const):
            return digit_of_block(e.lhs)
        return any(e is b for b in blocks)

    def plain(e: Any) -> bool:
        if isinstance(e, BinOp):
            if e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD) and not isinstance(e.rhs, Const):
                return digit_of_block(e.lhs) and _divisor(e.rhs) is not None
            return plain(e.lhs) and plain(e.rhs)
        return isinstance(e, Var | Const)

    hard = tiles.hard_dims(ref)
    return bool(hard) and all(plain(ref.origin[d]) for d in hard)


def _split_digits(e: Any, v: Var, c: Any, q: Var, r: Var) -> Any:
    """`e` with ``v // c`` as `q`, ``v % c`` as `r`, and any other ``v`` as ``q * c + r`` (`c` a constant's value or
    a size); None where `v` is under a node other than arithmetic."""
    if e is v:
        return binary(BinaryOp.ADD, binary(BinaryOp.MUL, q, Const(c) if isinstance(c, int) else c), r)
    if isinstance(e, BinOp):
        if e.lhs is v and _divisor(e.rhs) is not None and _divisor_key(_divisor(e.rhs)) == _divisor_key(c):
            if e.op == BinaryOp.FLOORDIV:
                return q
            if e.op == BinaryOp.MOD:
                return r
        lhs, rhs = _split_digits(e.lhs, v, c, q, r), _split_digits(e.rhs, v, c, q, r)
        if lhs is None or rhs is None:
            return None
        return e if lhs is e.lhs and rhs is e.rhs else binary(e.op, lhs, rhs)
    if isinstance(e, Expr) and not isinstance(e, Var | Const) and depends_on(e, v):
        return None
    return e


_MOST_ENUMERATED = 1024  # the most values of the enumerated indices together (`_enumerated`)


def _short(e: Any, most: int = 100) -> str:
    """`e` printed, cut to `most` characters (a search over data prints as a long chain of selects)."""
    text = str(e)
    return text if len(text) <= most else text[: most - 5] + " ... "


def _enumerated(ctx: Context, ref: TileRef, reads: dict[int, list[Var]], ranges: dict[Var, Any]) -> Any:
    """The indices `_dims_box` enumerates, with their (constant) ranges: those of a constant range that a dimension
    reads beside another index (a row ``bh * BH + o`` of a loop over the tile's rows), that two dimensions read
    (``k // CB`` and ``(k % CB) * BK``), or that a dimension reads other than as ``o0 + v * s``. Empty where no
    index needs it; the reason where the values are too many."""
    const: dict[Var, int] = {}
    for v, r in ranges.items():
        r = z3.simplify(r)
        if z3.is_bv_value(r):
            const[v] = max(r.as_signed_long(), 0)
    want: set[Var] = set()
    count = {v: sum(v in vs for vs in reads.values()) for v in ranges}
    for d, vs in reads.items():
        for v in vs:
            if v in const and (len(vs) > 1 or count[v] > 1 or _affine(ctx, ref.origin[d], v, ranges[v])[0] is None):
                want.add(v)
    total = 1
    for v in want:
        total *= max(const[v], 1)
    if total > _MOST_ENUMERATED:
        names = ", ".join(sorted(v.name for v in want))
        return f"the indices {names} take {total} values together, more than the {_MOST_ENUMERATED} enumerated"
    return {v: const[v] for v in sorted(want, key=lambda v: v.name)}


def _progression(ctx: Context, e: Any, o0: Any, s: Any, r: Any, ext: Any) -> Any:
    """The condition that `e` lies in one of the windows ``[o0 + v * s, o0 + v * s + ext)`` for ``v`` in
    ``[0, r)``, whatever the sign of ``s``.

    The windows of a falling origin (``s < 0``) are those of a rising one read backwards: ``v' = r - 1 - v`` starts
    them at ``lo + v' * |s|`` with ``lo = o0 + (r - 1) * s``, the origin of the last iteration. With ``lo`` and
    ``|s|`` the windows are a rising progression: they cover ``[lo, lo + (r - 1) * |s| + ext)`` when they overlap or
    touch (``ext >= |s|``), else the elements whose offset from ``lo`` divided by ``|s|`` is below ``r`` with
    remainder below ``ext``. The sign of ``s``, and whether the windows touch, are decided once for every size where
    they can be, and left to Z3 (as a case split) where they depend on the sizes."""
    if _at_least_zero(ctx, s):
        lo, step = o0, s
    elif _at_least_zero(ctx, -s):
        lo, step = o0 + (r - 1) * s, -s
    else:
        lo, step = z3.If(s >= 0, o0, o0 + (r - 1) * s), z3.If(s >= 0, s, -s)
    rel = e - lo
    touching = z3.And(e >= lo, r >= 1, rel < (r - 1) * step + ext)
    if _at_least_zero(ctx, ext - step):
        return touching
    q = smt.floordiv(rel, step)
    apart = z3.And(e >= lo, step > 0, q < r, rel - q * step < ext)
    return z3.Or(z3.And(ext >= step, touching), apart)


def _at_least_zero(ctx: Context, x: Any) -> bool:
    """Whether `x` is non-negative for every size: read off where it simplifies to a constant (an enumerated value's
    step), else proved."""
    known = z3.simplify(x)
    if z3.is_bv_value(known):
        return known.as_signed_long() >= 0
    return _always(ctx, [], x >= 0)


def _other_vars(origin: Expr, known: set[Var], ctx: Context) -> bool:
    shapes = set(ctx.kernel.shape_vars)
    return any(v not in known and v not in shapes for v in free_vars(origin))


def _affine(
    ctx: Context, origin: Expr, v: Var, r: Any, env: dict[Any, Any] | None = None, cons: list[Any] | None = None
) -> tuple[Any, Any]:
    """``(o0, s)`` with ``origin == o0 + v * s`` for every ``v`` in ``[0, r)`` and every size (and every value of
    `env`'s other free terms allowed by `cons`), else (None, None)."""
    env = ctx.base_env if env is None else env
    t = z3.BitVec(f"coverage.{v.name}", smt.WIDTH)
    o = smt.val(smt.evaluate(origin, {**env, v: t}))
    o0 = smt.val(smt.evaluate(origin, {**env, v: smt.val(0)}))
    o1 = smt.val(smt.evaluate(origin, {**env, v: smt.val(1)}))
    s = o1 - o0
    if not _always(ctx, [*(cons or []), smt.in_range(t, 0, r)], o == o0 + t * s):
        return None, None
    return o0, s


def _always(ctx: Context, cons: list[Any], claim: Any) -> bool:
    return ctx.solve(cons, z3.Not(claim)).verdict == Verdict.VERIFIED


# --- an element no store writes, where the tile order's cover is not proved ----------------------------------------


@dataclass(frozen=True)
class _Unread:
    """A tile-ordered store whose cover (`tiles.cover`, the lemma) was not proved, and the sizes of the model that
    refuted it, if any."""

    why: str
    sizes: dict[Var, int] | None


#: The most instances of one store site enumerated at one set of sizes, and the most elements of the tensor marked.
ENUMERATE_INSTANCES = 50_000
ENUMERATE_ELEMENTS = 1 << 24
#: The most instances enumerated for one tensor over all the sizes tried (a few seconds of evaluation).
ENUMERATE_TOTAL = 100_000
#: How many sets of sample sizes (drawn from `SAMPLE_VALUES`, allowed by the assumptions) are enumerated.
ENUMERATE_SAMPLES = 12


def _unstored(
    ctx: Context, buffer: Any, sites: list[tuple[Site, TileRef]], kind: _Kind, why: _Unread, below: Any = None
) -> Finding | None:
    """A `COVERAGE_OUTPUT` finding where the cover of a tile-ordered store is not proved: at the sizes of the
    refuting model and at sample sizes, every store instance is evaluated (the kernel's own expressions: blocks, loop
    iterations, branch conditions, origins and bounds), and the first element no window holds is then confirmed on
    the verifier's encoding, one query per site that no instance of it stores the element at those sizes. None
    when no such element is found (the tensor stays *not checked*)."""
    kernel = ctx.kernel
    tries: list[dict[Var, int]] = [why.sizes] if why.sizes else []
    tries += _samples(kernel)
    budget = [ENUMERATE_TOTAL]
    for sizes in tries:
        for data in _contents(kernel, sizes):
            coord = _first_unstored(kernel, buffer, sites, {**sizes, **data}, budget, below)
            if coord is None:
                continue
            pins = [ctx.shape_terms[v] == n for v, n in sizes.items()]
            for tensor, values in data.items():  # every element of the data pinned: the witness's content
                pins += [smt.element(tensor, (i,)) == int(x) for i, x in enumerate(values)]
            if all(_never_stores(ctx, site, ref, coord, pins) for site, ref in sites):
                return _witness(buffer, sites, kind, sizes, data, coord)
    return None


#: Segment sizes (fractions of the rows) the generated contents of a segmented kernel's ends take (`_contents`):
#: balanced, one segment taking most, empty segments first and between.
ROUTINGS = ((1, 1, 1, 1), (5, 1, 1, 1), (0, 3, 0, 2))
#: One more routing: segments one row short of a whole tile, whole, one row over (cycling; the ends capped at the
#: upper limit), where a store split at the segment's last tile (full tiles one way, the partial one another) goes
#: wrong by one row.
RESIDUES = (-1, 0, 1)


def _contents(kernel: Any, sizes: dict[Var, int]) -> list[dict[Any, Any]]:
    """Contents of the tensors the kernel reads as data, each keeping every declaration (`T.assume_values`), for the
    enumeration (`_first_unstored`): ``{}`` where the kernel declares no segments; else, for every 1-d tensor of
    segment ends that another tensor counts the tiles of (``tiles = tile_counts(offs, BM)``), nondecreasing from 0 to
    its upper limit split as each of `ROUTINGS`, and the counts computed from them. Other declared tensors are left
    without data (a read of one stops the enumeration)."""
    counted = [va for va in kernel.value_assumptions if va.counts_of is not None]
    if not counted:
        return [{}]
    out: list[dict[Any, Any]] = []
    for routing in (*ROUTINGS, None):
        data: dict[Any, Any] = {}
        try:
            for va in counted:
                ends = next(v for v in kernel.value_assumptions if v.tensor is va.counts_of and v.hi is not None)
                n = int(tiles._value(va.counts_of.shape[0], sizes, {}))
                rows = int(tiles._value(ends.hi, sizes, {}))
                if routing is None:  # RESIDUES: tile - 1, tile, tile + 1 rows, ...
                    lengths = [max(va.tile + RESIDUES[i % len(RESIDUES)], 0) for i in range(n)]
                    cuts = np.minimum(np.cumsum(lengths), rows).astype(np.int64)
                else:
                    weights = [routing[i % len(routing)] for i in range(n)]
                    cuts = np.floor(np.cumsum(weights) * rows / max(sum(weights), 1)).astype(np.int64)
                    cuts[-1] = rows if sum(weights) else 0
                counts = np.cumsum(-(-np.diff(np.concatenate([[0], cuts])) // va.tile))
                data[va.counts_of], data[va.tensor] = cuts, counts
        except (StopIteration, KeyError, ZeroDivisionError, TypeError, ValueError):
            continue
        if _keeps(kernel, sizes, data):
            out.append(data)
    return out


def _keeps(kernel: Any, sizes: dict[Var, int], data: dict[Any, Any]) -> bool:
    """Whether generated `data` keeps the ranges and orders the kernel declares of those tensors."""
    for va in kernel.value_assumptions:
        values = data.get(va.tensor)
        if values is None:
            continue
        try:
            lo = None if va.lo is None else int(tiles._value(va.lo, sizes, {}))
            hi = None if va.hi is None else int(tiles._value(va.hi, sizes, {}))
        except (KeyError, ZeroDivisionError, TypeError):
            return False
        if (lo is not None and np.any(values < lo)) or (hi is not None and np.any(values > hi)):
            return False
        if va.nondecreasing and np.any(np.diff(values) < 0):
            return False
    return True


def _witness(
    buffer: Any,
    sites: list[tuple[Site, TileRef]],
    kind: _Kind,
    sizes: dict[Var, int],
    data: dict[Any, Any],
    coord: tuple[int, ...],
) -> Finding:
    extents = " x ".join(str(tiles._value(d, sizes, {})) for d in buffer.shape)
    how = "; every instance of each evaluated at these sizes, and confirmed for each store"
    if data:
        how += " (with " + ", ".join(f"{t.name} = {list(map(int, v))}" for t, v in data.items()) + ")"
    return _uncovered(buffer, sites, kind, {v.name: n for v, n in sizes.items()}, coord, extents, how)


#: The values each size takes in the samples (multiples of the usual tiles and alignments, and odd ones), and how
#: many draws are made (every size one value first, then each size drawn on its own, from a fixed seed).
SAMPLE_VALUES = (1, 3, 64, 100, 128, 333, 1000, 1024)
SAMPLE_DRAWS = 300


def _samples(kernel: Any) -> list[dict[Var, int]]:
    """Up to `ENUMERATE_SAMPLES` sets of sizes the kernel's assumptions allow, drawn from `SAMPLE_VALUES` (a bounded
    number of draws: a kernel with many sizes has too many combinations to walk)."""
    names = list(kernel.shape_vars)
    rng = random.Random(0)
    draws = [dict.fromkeys(names, v) for v in SAMPLE_VALUES]
    draws += [{n: rng.choice(SAMPLE_VALUES) for n in names} for _ in range(SAMPLE_DRAWS)]
    out: list[dict[Var, int]] = []
    for env in draws:
        if env not in out and tiles.allows(kernel, env):
            out.append(env)
            if len(out) >= ENUMERATE_SAMPLES:
                break
    return out


def _first_unstored(
    kernel: Any,
    buffer: Any,
    sites: list[tuple[Site, TileRef]],
    sizes: dict[Var, int],
    budget: list[int],
    below: Any = None,
) -> tuple[int, ...] | None:
    """The first element of `buffer` that no instance of `sites` stores at `sizes`, by enumerating them; None when
    every element is stored or the enumeration is out of reach (too many instances or elements, an expression that
    reads data or the thread)."""
    try:
        shape = [int(tiles._value(d, sizes, {})) for d in buffer.shape]
        if any(n <= 0 for n in shape) or int(np.prod(shape)) > ENUMERATE_ELEMENTS:
            return None
        stored = np.zeros(shape, dtype=bool)
        for site, ref in sites:
            count = 0
            for env in _instances(kernel, site, sizes):
                count += 1
                budget[0] -= 1
                if count > ENUMERATE_INSTANCES or budget[0] < 0:
                    return None
                memo: dict[int, Any] = {}
                if not all(bool(tiles._value(b.cond, env, memo)) == taken for b, taken in site.ifs):
                    continue
                window = []
                for d, (origin, ext) in enumerate(zip(ref.origin, ref.extent, strict=True)):
                    o = int(tiles._value(origin, env, memo))
                    hi = o + ext
                    if ref.bound is not None and ref.bound[d] is not None:
                        hi = min(hi, int(tiles._value(ref.bound[d], env, memo)))
                    window.append(slice(max(o, 0), max(min(hi, shape[d]), 0)))
                stored[tuple(window)] = True
    except (ZeroDivisionError, KeyError, TypeError, ValueError):
        return None
    required = np.ones(shape, dtype=bool)  # the part the kernel declares it writes (T.writes_part's limits)
    try:
        for d, limit in enumerate(below or ()):
            if limit is not None:
                cut = [slice(None)] * len(shape)
                cut[d] = slice(max(int(tiles._value(limit, sizes, {})), 0), None)
                required[tuple(cut)] = False
    except (ZeroDivisionError, KeyError, TypeError, ValueError):
        return None
    missing = np.argwhere(~stored & required)
    return tuple(int(i) for i in missing[0]) if len(missing) else None


def _instances(kernel: Any, site: Site, sizes: dict[Var, int]) -> Any:
    """Every (block, loop iteration) environment of `site` at `sizes`, loops outermost first."""
    grid = [range(int(tiles._value(g, sizes, {}))) for g in kernel.grid]
    loops = site.loops

    def inner(env: dict[Var, Any], i: int) -> Any:
        if i == len(loops):
            yield env
            return
        lp = loops[i]
        for v in range(int(tiles._value(lp.extent, env, {}))):
            yield from inner({**env, lp.var: v}, i + 1)

    for block in itertools.product(*grid):
        yield from inner({**sizes, **dict(zip(kernel.block_vars, block, strict=True))}, 0)


def _never_stores(ctx: Context, site: Site, ref: TileRef, coord: tuple[int, ...], pins: list[Any]) -> bool:
    """Whether, on the verifier's encoding at the pinned sizes, no instance of `site` stores element `coord`."""
    env, cons = ctx.loop_env(site, suffix=".unstored")
    for branch, taken in site.ifs:
        c = smt.boolean(smt.evaluate(branch.cond, env))
        cons.append(c if taken else z3.Not(c))
    inside = []
    for d, (origin, ext) in enumerate(zip(ref.origin, ref.extent, strict=True)):
        o = smt.val(smt.evaluate(origin, env)) if isinstance(origin, Expr) else smt.val(origin)
        e = smt.val(coord[d])
        inside.append(_window(e, o, ext))
        if ref.bound is not None and ref.bound[d] is not None:
            b = ref.bound[d]
            inside.append(e < (smt.val(smt.evaluate(b, env)) if isinstance(b, Expr) else smt.val(b)))
    return ctx.solve([*pins, *cons], z3.And(*inside)).verdict == Verdict.VERIFIED
