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

import time
from dataclasses import dataclass
from typing import Any

import z3

from argus.ir.expr import Expr, Var, free_vars
from argus.ir.nodes import Copy, Fill, Gemm, Space, TileRef
from argus.verify import smt
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
    findings = [_check(ctx, tensors[key], sites, _LOADED) for key, sites in loads.items()]
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
    finding = _check_tensor(ctx, buffer, sites, kind)
    if isinstance(finding, str):
        ctx.record_not_checked(kind.check, user_name(buffer), finding, start)
        return None
    ctx.record(kind.check, user_name(buffer), Verdict.VERIFIED if finding is None else finding.verdict, start)
    return finding


def _check_tensor(ctx: Context, buffer: Any, sites: list[tuple[Site, TileRef]], kind: _Kind) -> Finding | str | None:
    """None when every element is covered, a finding when one is not (or Z3 cannot tell), and the reason when the
    windows have no form the check reads."""
    for site, ref in sites:
        if ref.bound is not None:
            return f"the window stored at {site.loc} has a bound, which this check does not read"
    env = dict(ctx.base_env)
    dims = [smt.evaluate(d, env) if isinstance(d, Expr) else smt.val(d) for d in buffer.shape]
    element = [z3.BitVec(f"coverage.{user_name(buffer)}.{d}", smt.WIDTH) for d in range(len(dims))]
    boxes = []
    for site, ref in sites:
        box = _box(ctx, site, ref, element)
        if isinstance(box, str):
            return f"{box} ({site.loc})"
        boxes.append(box)
    inside = [smt.in_range(e, 0, n) for e, n in zip(element, dims, strict=True)]
    out = ctx.solve(inside, z3.And(*[z3.Not(b) for b in boxes]))
    if out.verdict == Verdict.VERIFIED:
        return None
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
    msg = (
        f"element {coord} of {user_name(buffer)} ({extents}) {kind.verb} (the {kind.what} at "
        f"{', '.join(str(s.loc) for s, _ in sites)})"
    )
    cex = Counterexample(
        code=kind.code,
        message=msg,
        op_loc=first.loc,
        program_point=str(first.loc),
        block={},
        shapes=ctx.shape_values(m),
        thread=None,  # a fact about the whole launch: no thread did it
        loops={},
        accesses=(),
        variables={"element": str(coord), f"{user_name(buffer)} extents": extents},
    )
    return Finding(kind.code, Verdict.VIOLATED, msg, loc=first.loc, counterexample=cex)


def _box(ctx: Context, site: Site, ref: TileRef, element: list[Any]) -> Any:
    """The condition that `element` lies in one of the windows `ref` takes at `site`, or why the windows have no
    form the check reads."""
    if site.ifs:
        return "an access under T.if_"
    ranges: dict[Var, Any] = {}
    for v, g in zip(ctx.kernel.block_vars, ctx.kernel.grid, strict=True):
        ranges[v] = smt.evaluate(g, ctx.base_env) if isinstance(g, Expr) else smt.val(g)
    shapes = set(ctx.kernel.shape_vars)
    for lp in site.loops:
        if isinstance(lp.extent, Expr):
            if not free_vars(lp.extent) <= shapes:  # e.g. a causal loop: its range differs from block to block
                return f"the extent {lp.extent} of loop {lp.var.name} depends on more than the sizes"
            ranges[lp.var] = smt.evaluate(lp.extent, ctx.base_env)
        else:
            ranges[lp.var] = smt.val(lp.extent)
    used: set[Var] = set()
    conds = []
    for d, (origin, extent) in enumerate(zip(ref.origin, ref.extent, strict=True)):
        vs = [v for v in ranges if depends_on(origin, v)]
        if isinstance(origin, Expr) and _other_vars(origin, set(ranges), ctx):
            return f"dimension {d}'s origin {origin} depends on values other than the block and loop indices"
        if len(vs) > 1:
            return f"dimension {d}'s origin {origin} mixes {', '.join(v.name for v in vs)}"
        e = element[d]
        ext = smt.val(extent)
        if not vs:
            o = smt.evaluate(origin, ctx.base_env) if isinstance(origin, Expr) else smt.val(origin)
            conds.append(z3.And(e >= o, e - o < ext))
            continue
        v = vs[0]
        if v in used:
            return f"{v.name} appears in two dimensions of the window"
        used.add(v)
        o0, s = _affine(ctx, origin, v, ranges[v])
        if o0 is None:
            return f"dimension {d}'s origin {origin} is not affine in {v.name}"
        conds.append(_progression(ctx, e, o0, s, ranges[v], ext))
    return z3.And(*conds) if conds else z3.BoolVal(True)


def _progression(ctx: Context, e: Any, o0: Any, s: Any, r: Any, ext: Any) -> Any:
    """The condition that `e` lies in one of the windows ``[o0 + v * s, o0 + v * s + ext)`` for ``v`` in
    ``[0, r)``, whatever the sign of ``s``.

    The windows of a falling origin (``s < 0``) are those of a rising one read backwards: ``v' = r - 1 - v`` starts
    them at ``lo + v' * |s|`` with ``lo = o0 + (r - 1) * s``, the origin of the last iteration. With ``lo`` and
    ``|s|`` the windows are a rising progression: they cover ``[lo, lo + (r - 1) * |s| + ext)`` when they overlap or
    touch (``ext >= |s|``), else the elements whose offset from ``lo`` divided by ``|s|`` is below ``r`` with
    remainder below ``ext``. The sign of ``s``, and whether the windows touch, are decided once for every size where
    they can be, and left to Z3 (as a case split) where they depend on the sizes."""
    if _always(ctx, [], s >= 0):
        lo, step = o0, s
    elif _always(ctx, [], s <= 0):
        lo, step = o0 + (r - 1) * s, -s
    else:
        lo, step = z3.If(s >= 0, o0, o0 + (r - 1) * s), z3.If(s >= 0, s, -s)
    rel = e - lo
    touching = z3.And(e >= lo, r >= 1, rel < (r - 1) * step + ext)
    if _always(ctx, [], ext >= step):
        return touching
    q = smt.floordiv(rel, step)
    apart = z3.And(e >= lo, step > 0, q < r, rel - q * step < ext)
    return z3.Or(z3.And(ext >= step, touching), apart)


def _other_vars(origin: Expr, known: set[Var], ctx: Context) -> bool:
    shapes = set(ctx.kernel.shape_vars)
    return any(v not in known and v not in shapes for v in free_vars(origin))


def _affine(ctx: Context, origin: Expr, v: Var, r: Any) -> tuple[Any, Any]:
    """``(o0, s)`` with ``origin == o0 + v * s`` for every ``v`` in ``[0, r)`` and every size, else (None, None)."""
    t = z3.BitVec(f"coverage.{v.name}", smt.WIDTH)
    o = smt.val(smt.evaluate(origin, {**ctx.base_env, v: t}))
    o0 = smt.val(smt.evaluate(origin, {**ctx.base_env, v: smt.val(0)}))
    o1 = smt.val(smt.evaluate(origin, {**ctx.base_env, v: smt.val(1)}))
    s = o1 - o0
    if not _always(ctx, [smt.in_range(t, 0, r)], o == o0 + t * s):
        return None, None
    return o0, s


def _always(ctx: Context, cons: list[Any], claim: Any) -> bool:
    return ctx.solve(cons, z3.Not(claim)).verdict == Verdict.VERIFIED
