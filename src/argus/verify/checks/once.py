"""Exactly once: no element of an output is written by two blocks (`COVERAGE_OUTPUT_TWICE`), no element of a
matrix-multiply operand enters one accumulation twice (`COVERAGE_CONTRACTION_TWICE`), and an accumulator that
computes several output tiles is reset before each tile's first MMA (`MMA_ACC_NOT_RESET`).

`checks/coverage.py` proves that every element is written (loaded) *at least* once; this module proves *at most*
once where that matters. Unlike coverage, these are universal facts over pairs of instances ("no two instances
touch one element"), so the window origins may be any expression of the sizes, block indices and loop variables
(a persistent kernel's `T.tile_order` included) and a store under ``T.if_`` counts only where its condition holds.
What the check cannot read (an origin or a condition that depends on the thread or on values loaded at run time, a
tile order whose divisions the tile-order lemma does not settle, with no witness at the sample sizes) leaves the
tensor *not checked*: a record, never a finding (`docs/verify.md` §7). Any other query the solver does not decide
within its budget is an `UNKNOWN_SOLVER` finding: an attempted proof that did not complete makes the verdict
unknown.

* **Output, between blocks.** Two store instances (any sites, any iterations) of two different blocks whose windows
  share an element inside the tensor: the element's final value is whichever block stored last.
* **Tile orders.** Where a window origin divides by a problem size (a persistent kernel's `T.tile_order`), the pair
  query goes through the tile-order lemma (`checks/tiles.py`): distinct tile numbers give windows that share no
  element in the dividing dimensions (proved once per store site), so two instances writing one element have one
  tile number, a linear question. An unproved lemma is never assumed (a sampled collision is the witness). An order
  placed through tensor data (the MoE grouped kernels' expert search) is proved the same way, with the search's facts
  proved first (`checks/tiles.py`, "orders over data"); where that lemma has a model, its sizes and tile numbers are
  tried on the exact encoding for a witness.
* **Output, within a block.** A store site whose window moves with a loop variable (its origin depends on it) must
  not write one element in two iterations that differ in such a variable (``Y.tile((bm, j // 2))``: iterations 2i
  and 2i + 1 write one tile, the first value is lost). A window that does not move with a loop is an overwrite by
  the same threads in program order, the last value wins and is the one meant: the accumulator stored after every
  K step (a wasteful, correct epilogue) is *not* a finding. Two different sites of one block writing one element
  are ordered by program order for the same thread, and a race for different threads, which is the race check's
  domain (it covers shared memory only; global write-write races within a block are not checked, §7).
* **Contraction.** For each ``T.gemm`` and each operand, the global loads feeding that operand (through copies and
  elementwise ops) are paired within one block and one *accumulation*: the iterations of the loops around the
  ``T.gemm`` that reset the accumulator (they enclose a ``T.fill`` of it) or store it as a new tile (a tile loop,
  below) are the same in both instances; the others (the K loop) are free. Two different instances that load one
  element inside the tensor put its products into one sum twice. A window past the end of the tensor reads padding
  (zero), which is harmless and not counted. A producer role's loads are paired with the consumer's loops through
  the proved `roles.Pairing` (its tile loop is the consumer's).
* **Reset.** A loop ``L`` around a ``T.gemm`` is a *tile loop* when it also holds a store of the accumulator (or of
  a value computed from it) to global memory whose window moves with ``L``: each iteration produces a different
  tile. Before the first MMA of each iteration the accumulator must be rewritten whole (``T.fill``, a copy into
  it). Proved from the structure (a reset that runs whenever the ``T.gemm`` does, before it in the iteration, or
  after it at the end of the iteration), else by Z3 over the guards; a witness is an iteration ``it >= 1`` where the
  ``T.gemm`` ran in ``it - 1`` and runs again in ``it`` with no reset in between.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import z3

from argus.ir.expr import Expr, Var, free_vars
from argus.ir.nodes import Broadcast, Buffer, Copy, Fill, For, Gemm, Map, Reduce, Space, TileRef
from argus.verify import smt, values
from argus.verify.checks import tiles
from argus.verify.context import Context, Outcome
from argus.verify.program import Site, Unsupported, buffer_coords, depends_on, first_thread, loop_name, user_name
from argus.verify.report import Access, Counterexample, Element, Finding, ThreadPoint, Verdict, undecided

#: The Z3 budget of one exactly-once query (deterministic units). A persistent kernel's grouped tile order is not
#: decided by one query through its divisions by symbolic sizes but through its lemma (`checks/tiles.py`: proved once
#: per store site over the integers, then one linear query over tile numbers); the contraction queries over such an
#: order abstract what the block and tile share. The library's proofs take at most 2.6M units (gemm_tma_wgmma's
#: contraction query); the accumulator-reset witness of a persistent kernel (corpus `once_persistent_fill_hoisted`)
#: was missed at 3M in one process history (Z3's search depends on the terms built before): 8M keeps it caught.
ONCE_RLIMIT = 8_000_000
#: The budget of a query whose windows divide by a problem size where the tile-order lemma did not decide it (a
#: direct query through the divisions): a finding comes quickly where there is one; a proof is not expected.
HARD_RLIMIT = 1_500_000
#: The budget of a query over two stores through windows bounded by tensor data (an expert's row end, ``offs[g]``),
#: whose declared contents (``T.assume_values``) enter it as instances over the data terms (`argus.verify.values`).
DATA_RLIMIT = 60_000_000
#: The budget a contraction query's abstraction (`_contraction_once`) gets when `ONCE_RLIMIT` left it undecided, before
#: the exact query is tried (and an output-written-once query, before it is unknown). Z3 5.x needs 30.5M units for
#: the abstraction of the persistent implicit-GEMM convolution's two X loads (3x3, 56x56, two consumers, channels
#: last) asked alone (8.3M more after the 8M attempt; about 2 s), which Z3 4.15 proves within 8M: a proof that needs
#: more search gets it before the answer is unknown, and only a query left undecided pays for it.
ESCALATED_RLIMIT = 64_000_000
#: Problem sizes (every size symbol at once) at which such a query then looks for a witness.
WITNESS_SIZES = (1000, 333)


# --- shared pieces -----------------------------------------------------------------------------------------------


def _solve(ctx: Context, cons: list[Any], violation: Any, rlimit: int = ONCE_RLIMIT) -> Outcome:
    saved = ctx.rlimit
    ctx.rlimit = min(saved, rlimit)
    try:
        return ctx.solve(cons, violation)
    finally:
        ctx.rlimit = saved


def _unreadable(ctx: Context, site: Site, exprs: list[Any]) -> str | None:
    """Why `exprs` (origins, conditions, extents at `site`) cannot be encoded per block and iteration, else None."""
    known = set(ctx.kernel.shape_vars) | set(ctx.kernel.block_vars) | {lp.var for lp in site.loops}
    for e in exprs:
        if not isinstance(e, Expr):
            continue
        other = [v for v in free_vars(e) if v not in known]
        if other:
            what = "the thread index" if ctx.kernel.thread_var in other else f"run-time value {other[0].name}"
            return f"{e} depends on {what}"
    return None


def _site_exprs(site: Site, ref: TileRef) -> list[Any]:
    out: list[Any] = list(ref.origin)
    out += [branch.cond for branch, _ in site.ifs]
    out += [lp.extent for lp in site.loops]
    return out


def _blocks(ctx: Context, suffix: str) -> tuple[dict, list[Any], dict[Var, Any]]:
    """The base environment with a second, independent block (its indices in the grid)."""
    env = dict(ctx.base_env)
    cons = []
    terms = {}
    for v, g in zip(ctx.kernel.block_vars, ctx.kernel.grid, strict=True):
        t = z3.BitVec(f"{v.name}{suffix}", smt.WIDTH)
        ext = smt.evaluate(g, ctx.base_env) if isinstance(g, Expr) else smt.val(g)
        cons.append(smt.in_range(t, 0, ext))
        env[v] = t
        terms[v] = t
    return env, cons, terms


def _instance(
    ctx: Context, site: Site, env: dict, suffix: str, fixed: dict[Var, Any] | None = None
) -> tuple[dict, list[Any]]:
    """`env` extended with the loop variables of one instance of `site` (fresh, in range, unless `fixed` gives
    the term) and the conditions of its branches."""
    env = dict(env)
    cons: list[Any] = []
    for lp in site.loops:
        if fixed is not None and lp.var in fixed:
            env[lp.var] = fixed[lp.var]
        else:
            t = z3.BitVec(f"once.{lp.var.name}{suffix}", smt.WIDTH)
            ctx.loop_terms.append(t)
            env[lp.var] = t
        cons.append(ctx.loop_range(lp, env[lp.var], env))
    for branch, taken in site.ifs:
        cond = smt.boolean(smt.evaluate(branch.cond, env))
        cons.append(cond if taken else z3.Not(cond))
    return env, cons


def _origins(ref: TileRef, env: dict) -> list[Any]:
    if ref.im2col is not None:  # its rows are a traversal, not origin + extent (argus.verify.program.buffer_coords)
        raise Unsupported(f"which elements of {ref.buffer.name} an im2col load's window holds")
    if ref.gather is not None:  # its rows are an index's values (argus.verify.program.buffer_coords)
        raise Unsupported(f"which elements of {ref.buffer.name} a gathered load's window holds")
    return [smt.val(smt.evaluate(o, env) if isinstance(o, Expr) else o) for o in ref.origin]


def _inside(ref: TileRef, element: list[Any], env: dict, origins: list[Any] | None = None) -> Any:
    """`element` lies in the window; for a window with a bound (`TileRef.bound`), also below the bound (elements at
    or past it are masked: not written, not read)."""
    conds = []
    for e, origin, ext in zip(element, _origins(ref, env) if origins is None else origins, ref.extent, strict=True):
        conds.append(z3.And(e >= origin, e - origin < ext))
    for e, limit in zip(element, ref.bound or (), strict=False):
        if limit is not None:
            conds.append(e < smt.val(smt.evaluate(limit, env) if isinstance(limit, Expr) else limit))
    return z3.And(*conds)


def _element(ctx: Context, buffer: Buffer, name: str) -> tuple[list[Any], list[Any], list[Any]]:
    dims = [smt.evaluate(d, ctx.base_env) if isinstance(d, Expr) else smt.val(d) for d in buffer.shape]
    element = [z3.BitVec(f"{name}.{user_name(buffer)}.{d}", smt.WIDTH) for d in range(len(dims))]
    return element, dims, [smt.in_range(e, 0, n) for e, n in zip(element, dims, strict=True)]


def _loops(m: Any, site: Site, env: dict) -> dict[str, int]:
    return {loop_name(lp): smt.model_int(m, env[lp.var]) for lp in site.loops if lp.var in env}


def _text(d: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


_HARD = {
    z3.Z3_OP_BSDIV,
    z3.Z3_OP_BUDIV,
    z3.Z3_OP_BSREM,
    z3.Z3_OP_BUREM,
    z3.Z3_OP_BSMOD,
    z3.Z3_OP_BSDIV_I,
    z3.Z3_OP_BUDIV_I,
    z3.Z3_OP_BSREM_I,
    z3.Z3_OP_BUREM_I,
    z3.Z3_OP_BSMOD_I,
}


def _abstract(terms: list[Any], fixed: list[Any]) -> list[Any] | None:
    """`terms` with every outermost division (quotient or remainder) by a non-constant that depends only on `fixed`
    constants replaced by one fresh constant (the same subterm by the same constant), or None when there is none."""
    fixed_ids = {t.get_id() for t in fixed}
    consts: dict[int, bool] = {}  # term id -> depends only on fixed constants (and numerals)

    def only_fixed(t: Any) -> bool:
        k = t.get_id()
        if k not in consts:
            if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                consts[k] = k in fixed_ids
            else:
                consts[k] = all(only_fixed(c) for c in t.children())
        return consts[k]

    # the quotient and remainder of a division by a constant are functions of their dividend: fixed with it
    # (``tiles_n = cdiv(N, BN)`` is such a quotient, and a tile order divides by it)
    grew = True
    while grew:
        grew = False
        for a, q, r in smt.division_variables():
            if q.get_id() not in fixed_ids and only_fixed(a):
                fixed_ids |= {q.get_id(), r.get_id()}
                consts.clear()
                grew = True

    subs: dict[int, tuple[Any, Any]] = {}

    def heavy(t: Any) -> bool:
        divides = z3.is_app(t) and t.decl().kind() in _HARD and not z3.is_bv_value(t.children()[1])
        # a product of two non-constants (``tiles_m * tiles_n``) bit-blasts to a multiplier just as large
        product = z3.is_app(t) and t.decl().kind() == z3.Z3_OP_BMUL and not any(map(z3.is_bv_value, t.children()))
        return divides or product

    seen: set[int] = set()  # a term is a DAG (inlined T.let chains share subterms): visit each node once

    def collect(t: Any) -> None:
        if t.get_id() in subs or t.get_id() in seen:
            return
        seen.add(t.get_id())
        if heavy(t) and only_fixed(t):
            subs[t.get_id()] = (t, smt.fresh("once.abstract"))
            return
        for c in t.children():
            collect(c)

    for t in terms:
        collect(t)
    if not subs:
        return None
    pairs = list(subs.values())
    return [z3.substitute(t, *pairs) for t in terms]


def _divides_by_size(terms: list[Any]) -> bool:
    """Whether a term divides (quotient or remainder) by a non-constant."""
    seen: set[int] = set()
    todo = list(terms)
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t) and t.decl().kind() in _HARD and not z3.is_bv_value(t.children()[1]):
            return True
        todo.extend(t.children())
    return False


def _reads(s: Any) -> list[Buffer]:
    if isinstance(s, Copy | Reduce):
        return [s.src.buffer]
    if isinstance(s, Map):
        return [(x.ref if isinstance(x, Broadcast) else x).buffer for x in s.srcs if isinstance(x, TileRef | Broadcast)]
    return []


def _within(outer: Site, site: Site) -> bool:
    return outer.index < site.index <= outer.end


# --- output written once -----------------------------------------------------------------------------------------


def check_output_once(ctx: Context) -> list[Finding]:
    """`COVERAGE_OUTPUT_TWICE`: no element of a global tensor is stored by two different blocks, nor twice by one
    store site whose window moves with a loop (module docstring)."""
    stores: dict[int, list[tuple[Site, TileRef]]] = {}
    tensors: dict[int, Buffer] = {}
    for site in ctx.analysis.program.sites:
        s = site.stmt
        if isinstance(s, Copy | Fill) and isinstance(s.dst, TileRef) and s.dst.buffer.space == Space.GLOBAL:
            stores.setdefault(id(s.dst.buffer), []).append((site, s.dst))
            tensors[id(s.dst.buffer)] = s.dst.buffer
    findings = []
    for key, sites in stores.items():
        start = time.perf_counter()
        buffer = tensors[key]
        out = _output_once(ctx, buffer, sites)
        if isinstance(out, str):
            ctx.record_not_checked("output written once", user_name(buffer), out, start)
            continue
        ctx.record("output written once", user_name(buffer), Verdict.VERIFIED if out is None else out.verdict, start)
        if out is not None:
            findings.append(out)
    return findings


def _output_once(ctx: Context, buffer: Buffer, sites: list[tuple[Site, TileRef]]) -> Finding | str | None:
    for site, ref in sites:
        # A bound read from tensor data (an expert's row end, offs[g]) separates two stores only through what the data
        # is: without a declaration of it (T.assume_values) every content is possible, and a witness would be one the
        # kernel's callers never pass; the check is not made then (no finding).
        unknown_data = values.undeclared(ctx.kernel, [b for b in ref.bound or () if b is not None])
        if unknown_data:
            return (
                f"the window stored at {site.loc} has a bound read from {', '.join(unknown_data)}, whose contents the "
                "kernel does not declare (T.assume_values)"
            )
    for site, ref in sites:
        why = _unreadable(ctx, site, _site_exprs(site, ref))
        if why is not None:
            return f"{why} ({site.loc})"
    for i, (sa, ra) in enumerate(sites):
        for sb, rb in sites[i:]:
            if sb is not sa and _apart(ra, rb):
                continue
            if sb is sa and _injective(ctx, sa, ra):
                continue
            out = _output_pair(ctx, buffer, sa, ra, sb, rb)
            if out is not None:
                return out
    return None


def _apart(ra: TileRef, rb: TileRef) -> bool:
    """Whether two store sites' windows never share an element, by their form: in some dimension, the origins are
    one expression plus different constants (or two constants) whose ranges ``[o, o + extent)`` are disjoint for
    every instance (an unrolled loop's sites, one column of an im2col matrix each: 35 sites were 630 queries, 50 s).
    """
    keys = tiles._Keys()
    for oa, ob, ea, eb in zip(ra.origin, rb.origin, ra.extent, rb.extent, strict=True):
        if not (isinstance(ea, int) and isinstance(eb, int)):
            continue
        (base_a, ca), (base_b, cb) = _offset(oa), _offset(ob)
        if keys(base_a) == keys(base_b) and (ca + ea <= cb or cb + eb <= ca):
            return True
    return False


def _injective(ctx: Context, site: Site, ref: TileRef) -> bool:
    """Whether two instances of one store site (two blocks, or two iterations of a loop its window moves with)
    never share an element, by the window's form: every block index and every such loop variable ``v`` is the
    whole origin of some dimension, as ``v * E`` (or ``v``, E = 1) plus a constant, with the window's extent there
    at most E. Two instances differ in some ``v``, so their windows are apart in its dimension (``COLS.tile((c, kd,
    offset, n, od, bh, bw), ...)``: one query per store site of an im2col, 0.3-0.7 s each, none needed)."""
    if ref.im2col is not None or ref.gather is not None:
        return False
    moving = [lp.var for lp in site.loops if any(depends_on(o, lp.var) for o in ref.origin)]
    spaced: dict[int, int] = {}  # id of a variable -> the least E of a dimension whose origin it alone moves
    for origin, extent in zip(ref.origin, ref.extent, strict=True):
        var, scale = _scaled_var(_offset(origin)[0])
        if var is not None and isinstance(extent, int) and 0 < extent <= scale:
            spaced[id(var)] = scale
    return all(id(v) in spaced for v in (*ctx.kernel.block_vars, *moving))


def _scaled_var(e: Any) -> tuple[Var | None, int]:
    """`e` as (v, E) with ``e = v * E`` for a variable v and a positive integer E; (None, 0) otherwise."""
    from argus.ir.expr import BinaryOp, BinOp, Const

    if isinstance(e, Var):
        return e, 1
    if isinstance(e, BinOp) and e.op == BinaryOp.MUL:
        for v, k in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(v, Var) and isinstance(k, Const) and isinstance(k.value, int) and k.value > 0:
                return v, k.value
    return None, 0


def _offset(e: Any) -> tuple[Any, int]:
    """`e` as (base, constant) with ``e = base + constant`` (base 0 for a constant)."""
    from argus.ir.expr import BinaryOp, BinOp, Const

    if isinstance(e, int):
        return 0, e
    if isinstance(e, Const) and isinstance(e.value, int):
        return 0, e.value
    if isinstance(e, BinOp) and e.op in (BinaryOp.ADD, BinaryOp.SUB) and isinstance(e.rhs, Const):
        if isinstance(e.rhs.value, int):
            return e.lhs, e.rhs.value if e.op == BinaryOp.ADD else -e.rhs.value
    return e, 0


def _output_pair(ctx: Context, buffer: Buffer, sa: Site, ra: TileRef, sb: Site, rb: TileRef) -> Finding | str | None:
    env_a, cons_a = _instance(ctx, sa, ctx.base_env, ".a")
    benv, bcons, bterms = _blocks(ctx, ".b")
    env_b, cons_b = _instance(ctx, sb, benv, ".b")
    element, dims, inside = _element(ctx, buffer, "once")
    blocks_differ = z3.Or(*[ctx.block_terms[v] != t for v, t in bterms.items()]) if bterms else z3.BoolVal(False)
    twice = blocks_differ
    moving: list[For] = []
    if sa is sb:
        moving = [lp for lp in sa.loops if any(depends_on(o, lp.var) for o in ra.origin)]
        if moving:
            same_block = z3.And(*[ctx.block_terms[v] == t for v, t in bterms.items()])
            moved = z3.Or(*[env_a[lp.var] != env_b[lp.var] for lp in moving])
            twice = z3.Or(blocks_differ, z3.And(same_block, moved))
    cons = [*bcons, *cons_a, *cons_b, *inside, _inside(ra, element, env_a), _inside(rb, element, env_b)]
    hard = _divides_by_size(cons)
    lemma = ""
    by_number: Outcome | None = None
    if hard:
        # a tile order: decided through its lemma (distinct tile numbers, distinct tiles) and the tile numbers
        base = [*bcons, *cons_a, *cons_b, *inside]
        by_number, lemma = _by_tile_number(ctx, buffer, (sa, ra, env_a), (sb, rb, env_b), base, element, twice)
        if by_number is not None and by_number.verdict == Verdict.VERIFIED:
            return None
    # a bound read from declared data: the query carries the declaration's instances (`values.facts`), pairwise
    # orders of the data terms, which take more units than the windows alone (the corpus's grouped rows: 10-20M)
    budget = DATA_RLIMIT if _data_bounded(ra, rb) else ONCE_RLIMIT
    out = by_number if by_number is not None else _solve(ctx, cons, twice, HARD_RLIMIT if hard else budget)
    if out.verdict == Verdict.UNKNOWN and by_number is None and not hard and budget < ESCALATED_RLIMIT:
        # as the contraction queries: a proof that needs more search gets it before the answer is unknown (causal
        # attention launched longest first, its query block ``cdiv(SQ, BM) - 1 - by``: 8-20M units, 4-7 s)
        out = _solve(ctx, cons, twice, ESCALATED_RLIMIT)
    if out.verdict == Verdict.VERIFIED:
        return None
    if out.verdict == Verdict.UNKNOWN and hard:
        # with the sizes fixed, the divisions are by constants: look for a witness at a few sizes (sound: a model
        # found there is one), though no proof for all sizes
        for size in WITNESS_SIZES:
            pins = [t == size for v, t in ctx.shape_terms.items() if v.name not in ctx.pinned]
            at = _solve(ctx, [*cons, *pins], twice, 2 * HARD_RLIMIT)
            if at.verdict == Verdict.VIOLATED:
                out = at
                break
    if out.verdict == Verdict.UNKNOWN:
        if hard:  # a tile order the lemma does not take (outside the check's scope, like a window it cannot read)
            return (
                "a window origin divides by a problem size (a tile order): that no two blocks or iterations map to "
                f"one tile was not decided ({lemma}; the direct query: {out.reason})"
            )
        # an attempted proof that did not complete: unknown, never "not checked"
        why = f"{user_name(buffer)}: the solver could not decide within its budget whether two stores overlap"
        return undecided(out, why, loc=sb.loc, pin=True)
    m = out.model
    coord = tuple(smt.model_int(m, e) for e in element)
    extents = " x ".join(str(smt.model_int(m, d)) for d in dims)
    block_a = ctx.block_values(m)
    block_b = {v.name: smt.model_int(m, t) for v, t in bterms.items()}
    loops_a, loops_b = _loops(m, sa, env_a), _loops(m, sb, env_b)
    name = user_name(buffer)

    def where(block: dict[str, int], loops: dict[str, int], site: Site) -> str:
        it = f", {_text(loops)}" if loops else ""
        return f"block ({_text(block)}){it} at line {site.loc.line if site.loc else '?'}"

    same = block_a == block_b
    first = where(block_a, loops_a, sa)
    second = where(block_b, loops_b, sb)
    if same:
        why = "one block writes it in two iterations of a loop its window moves with: the first value is lost"
    else:
        why = "two blocks write it, and the value left is whichever store lands last"
    msg = f"element {coord} of {name} ({extents}) is stored twice, by {first} and by {second}: {why}"
    data = values.witness_data(ctx.kernel, m, [*cons, twice], ctx.base_env)
    if data:  # the content of the tensors the windows' bounds read (one the kernel's declarations allow)
        msg += f" (with {', '.join(f'{k} = {v}' for k, v in data.items())})"
    cex = Counterexample(
        code="COVERAGE_OUTPUT_TWICE",
        message=msg,
        op_loc=sb.loc,
        program_point=str(sb.loc),
        block=block_a,
        shapes=ctx.shape_values(m),
        thread=None,  # a fact about blocks and iterations: every thread holding the element's value stores it
        loops=loops_a,
        accesses=(
            Access("write", "store", sa.loc, None, loops_a, Element(name, "global", None, coord)),
            Access("write", "store", sb.loc, None, loops_b, Element(name, "global", None, coord)),
        ),
        variables={
            "element": str(coord),
            f"{name} extents": extents,
            "first block": _text(block_a),
            "second block": _text(block_b),
            **{k: str(v) for k, v in data.items()},
        },
    )
    return Finding("COVERAGE_OUTPUT_TWICE", Verdict.VIOLATED, msg, loc=sb.loc, counterexample=cex)


def _data_bounded(*refs: TileRef) -> bool:
    """Whether one of the windows has a bound read from tensor data."""
    return any(isinstance(b, Expr) and values.reads_data(b) for ref in refs for b in ref.bound or ())


def _by_tile_number(
    ctx: Context,
    buffer: Buffer,
    a: tuple[Site, TileRef, dict],
    b: tuple[Site, TileRef, dict],
    base: list[Any],
    element: list[Any],
    twice: Any,
) -> tuple[Outcome | None, str]:
    """Two store instances writing one element, decided over their tile numbers (`checks/tiles.py`): with the
    lemma that distinct tile numbers give windows sharing no element in the dimensions that divide by a size, the
    instances must have one tile number (a linear query). The outcome: verified (proved), violated (a witness, checked
    against the exact windows), or None with the reason the caller falls back to the direct query."""
    (sa, ra, env_a), (sb, rb, env_b) = a, b
    split_a = tiles.split(ctx.kernel, sa, ra)
    split_b = split_a if sb is sa and rb is ra else tiles.split(ctx.kernel, sb, rb)
    if split_a is None or split_b is None:
        return None, "no tile number of the block and loop indices gives the dividing window origins"
    dims = sorted(set(split_a.origins) & set(split_b.origins))
    if not tiles.hard_dims(ra) | tiles.hard_dims(rb) <= set(dims):
        return None, "the two stores' dividing window origins are not functions of their tile numbers"
    key = (id(sa), id(sb), id(buffer))
    if key not in ctx.tile_lemmas:
        ctx.tile_lemmas[key] = tiles.prove(ctx.kernel, buffer, dims, (split_a, ra), (split_b, rb))
    lemma: tiles.Lemma = ctx.tile_lemmas[key]
    if not lemma.proved:
        why = f"that the tile order gives distinct tiles for distinct tile numbers was not proved: {lemma.why}"
        ta = smt.val(smt.evaluate(split_a.number, env_a))
        tb = smt.val(smt.evaluate(split_b.number, env_b))
        exact = [*base, _inside(ra, element, env_a), _inside(rb, element, env_b)]
        hits = []
        hit = tiles.collision(ctx.kernel, buffer, dims, (split_a, ra), (split_b, rb))
        if hit is not None:  # two tile numbers give one tile at sample sizes
            hits.append(hit)
        if lemma.sizes is not None and lemma.numbers is not None and split_a.selector is not None:
            # the lemma's model over free selectors (experts): a witness where the kernel's own search, at its sizes
            # and tile numbers, reaches it for some data the declarations allow (checked on the exact encoding)
            hits.append((lemma.sizes, *lemma.numbers))
        for sizes, n1, n2 in hits:
            # the instances that have those tile numbers, if the launch has them
            pins = [ctx.shape_terms[v] == n for v, n in sizes.items()]
            witness = _solve(ctx, [*exact, *pins, ta == n1, tb == n2], twice)
            if witness.verdict == Verdict.VIOLATED:
                return witness, "two tile numbers give one tile"
        if hit is not None:
            sizes, n1, n2 = hit
            why += f" (tile numbers {n1} and {n2} give one tile at {_text({v.name: n for v, n in sizes.items()})})"
        return None, why
    moving = [lp.var for lp in sa.loops if any(depends_on(o, lp.var) for o in ra.origin)] if sa is sb else []
    pair = (sa, ra, split_a), (sb, rb, split_b)
    proved, why, _ = tiles.one_number_only(ctx.kernel, buffer, dims, *pair, moving)
    if proved:
        return Outcome(Verdict.VERIFIED), "proved by the tile order's lemma"
    if why != "two instances may have one tile number":
        return None, why
    ta = smt.val(smt.evaluate(split_a.number, env_a))
    tb = smt.val(smt.evaluate(split_b.number, env_b))
    # one tile number for two instances: a real witness once the exact windows share an element inside the tensor
    # (the integers' witness, its sizes, blocks and iterations pinned; else the verifier's encoding at any sizes)
    exact = [*base, _inside(ra, element, env_a), _inside(rb, element, env_b), ta == tb]
    _, _, values = tiles.one_number_only(ctx.kernel, buffer, dims, *pair, moving, exact=True)
    tries: list[list[Any]] = [[]]
    if values is not None:
        pins = [ctx.shape_terms[v] == n for v, n in values["a"].items() if v in ctx.shape_terms]
        pins += [smt.val(env_a[v]) == n for v, n in values["a"].items() if v not in ctx.shape_terms and v in env_a]
        pins += [smt.val(env_b[v]) == n for v, n in values["b"].items() if v not in ctx.shape_terms and v in env_b]
        tries.insert(0, pins)
    for pins in tries:
        witness = _solve(ctx, [*exact, *pins], twice, HARD_RLIMIT)
        if witness.verdict == Verdict.VIOLATED:
            return witness, "two instances have one tile number"
    return None, f"two instances may have one tile number, and no element both write was found ({witness.reason})"


# --- the accumulator's tiles ---------------------------------------------------------------------------------


def _acc_stores(ctx: Context, loop_site: Site, acc: Buffer) -> list[tuple[Site, TileRef]]:
    """The global stores inside `loop_site` of the accumulator or of values computed from it there."""
    derived = {id(acc)}
    inner = [s for s in ctx.analysis.program.sites if _within(loop_site, s)]
    grew = True
    while grew:
        grew = False
        for site in inner:
            s = site.stmt
            if isinstance(s, Copy | Map | Reduce) and any(id(b) in derived for b in _reads(s)):
                if id(s.dst.buffer) not in derived and s.dst.buffer.space != Space.GLOBAL:
                    derived.add(id(s.dst.buffer))
                    grew = True
    return [
        (site, site.stmt.dst)  # type: ignore[attr-defined]
        for site in inner
        if isinstance(site.stmt, Copy)
        and site.stmt.dst.buffer.space == Space.GLOBAL
        and id(site.stmt.src.buffer) in derived
    ]


def tile_loops(ctx: Context, gemm: Site) -> list[For]:
    """The loops around `gemm` that are tile loops: each iteration stores its accumulator (or a value computed from
    it) to a window of global memory that moves with the loop's variable."""
    prog = ctx.analysis.program
    acc = gemm.stmt.acc.buffer  # type: ignore[attr-defined]
    out = []
    for lp in gemm.loops:
        site = prog.site(lp)
        if any(any(depends_on(o, lp.var) for o in ref.origin) for _, ref in _acc_stores(ctx, site, acc)):
            out.append(lp)
    return out


def _writes_acc(site: Site, acc: Buffer) -> bool:
    s = site.stmt
    return isinstance(s, Copy | Fill | Map | Reduce) and s.dst.buffer is acc


def _is_reset(site: Site, acc: Buffer, sites: list[Site] | None = None) -> bool:
    """A write of the accumulator that does not read it (a fill, a copy or elementwise op from other data), nor a
    temporary computed from it: ``T.copy(o * alpha[:, None], o)`` is a Map into a temporary and a copy back, which
    rescales the accumulator (online softmax) and does not start a new one. A temporary is followed where one site
    writes it (`sites`: the program's), so what it holds is that site's value."""
    s = site.stmt
    if not _writes_acc(site, acc):
        return False
    if isinstance(s, Reduce) and s.accumulate:
        return False
    return not _derives_from(s, acc, sites or [])


def _derives_from(s: Any, acc: Buffer, sites: list[Site]) -> bool:
    """Whether statement `s` reads `acc`, or a buffer that one site alone writes from `acc` (transitively)."""
    seen: set[int] = set()
    todo = list(_reads(s))
    while todo:
        b = todo.pop()
        if b is acc:
            return True
        if id(b) in seen or b.space == Space.GLOBAL:
            continue
        seen.add(id(b))
        writers = [t for t in sites if isinstance(t.stmt, Copy | Map | Reduce) and t.stmt.dst.buffer is b]
        if len(writers) == 1:
            todo.extend(_reads(writers[0].stmt))
    return False


# --- contraction accumulated once ---------------------------------------------------------------------------


def check_contraction_once(ctx: Context, proved: set[int] | None = None) -> list[Finding]:
    """`COVERAGE_CONTRACTION_TWICE`: within one block and one accumulation of a ``T.gemm``, no element of a global
    tensor feeding an operand is loaded by two different instances (module docstring). `proved`: the ids of the
    role pairings the mbarrier protocol proved (a producer's loops are paired with the consumer's only then)."""
    findings = []
    prog = ctx.analysis.program
    for gemm in ctx.analysis.gemms:
        g: Gemm = gemm.stmt  # type: ignore[assignment]
        acc = g.acc.buffer
        outer = {id(lp) for lp in _accumulation_outer(ctx, gemm)}
        for operand, free in ((g.a, 0), (g.b, 1)):
            for loads in _feeding_loads(prog.sites, operand.buffer).values():
                start = time.perf_counter()
                out = _contraction_once(ctx, gemm, outer, loads, proved or set(), (operand, free))
                label = (
                    f"{user_name(loads[0][1].buffer)} into {user_name(acc)} (line {gemm.loc.line if gemm.loc else '?'})"
                )
                if isinstance(out, str):
                    ctx.record_not_checked("contraction accumulated once", label, out, start)
                    continue
                verdict = Verdict.VERIFIED if out is None else out.verdict
                ctx.record("contraction accumulated once", label, verdict, start)
                if out is not None:
                    findings.append(out)
    return findings


def _upstream(sites: list[Site], feeding: set[int]) -> set[int]:
    """`feeding` (buffer ids) with every on-chip buffer whose data reaches one of them through copies and elementwise
    ops, transitively."""
    feeding = set(feeding)
    grew = True
    while grew:
        grew = False
        for site in sites:
            s = site.stmt
            if isinstance(s, Copy | Map) and id(s.dst.buffer) in feeding:
                for b in _reads(s):
                    if b.space != Space.GLOBAL and id(b) not in feeding:
                        feeding.add(id(b))
                        grew = True
    return feeding


def _accumulation_outer(ctx: Context, gemm: Site) -> list[For]:
    """The loops around `gemm` that one accumulation stays inside: those that reset the accumulator (they enclose a
    reset of it) and its tile loops."""
    prog = ctx.analysis.program
    acc = gemm.stmt.acc.buffer  # type: ignore[attr-defined]
    resets = [s for s in prog.sites if _is_reset(s, acc, prog.sites)]
    tiles_ = tile_loops(ctx, gemm)
    return [lp for lp in gemm.loops if any(lp in r.loops for r in resets) or lp in tiles_]


def _feeding_loads(sites: list[Site], buffer: Buffer) -> dict[int, list[tuple[Site, TileRef]]]:
    """The copies from global memory whose data reaches `buffer` through copies and elementwise ops, by tensor."""
    feeding = _upstream(sites, {id(buffer)})
    out: dict[int, list[tuple[Site, TileRef]]] = {}
    for site in sites:
        s = site.stmt
        if isinstance(s, Copy) and id(s.dst.buffer) in feeding and s.src.buffer.space == Space.GLOBAL:
            out.setdefault(id(s.src.buffer), []).append((site, s.src))
    return out


def _paired_loops(ctx: Context, load: Site, gemm: Site, proved: set[int]) -> dict[int, tuple[For, Any]]:
    """Loops of a producer's `load` paired (by a proved pairing) with loops of the consumer holding `gemm`: for each,
    the consumer's loop and the producer iteration as a function of the consumer's (the same value, or for a "lagged"
    pairing the iteration whose data the gemm reads, `roles.global_iteration`)."""
    from argus.verify.roles import global_iteration

    out: dict[int, tuple[For, Any]] = {}
    for p in ctx.analysis.pairings:
        if id(p) not in proved or p.producer is not load.role or p.consumer is not gemm.role:
            continue
        if p.kind == "loop":
            for lp_p, lp_c in p.loop_map():
                if lp_p is not None and lp_c is not None:
                    out.setdefault(id(lp_p), (lp_c, lambda t: t))
        elif p.kind == "lagged" and load in p.writes:
            origin = p.read_origins.get(id(gemm.stmt))
            if origin is not None and origin[0] == "loop":

                def producer_iteration(t: Any, p: Any = p, origin: Any = origin) -> Any:
                    env = dict(ctx.base_env)
                    env[p.loop_c.var] = t
                    return smt.val(global_iteration(p, origin, env))

                out.setdefault(id(p.loop_p), (p.loop_c, producer_iteration))
    return out


def _holds(ref: TileRef, element: list[Any], env: dict, suffix: str) -> tuple[list[Any], list[Any], list[Any]]:
    """(coordinate terms, window coordinates, constraints) of a load's window holding `element`: the window
    coordinates (in the window's order) at which it holds it, under the constraints, and the terms the contraction
    query's abstraction bounds (a plain window's origins; an im2col window's element coordinates). A plain window
    holds the elements origin + w; an im2col window's row r holds the pixel of its traversal at position + r
    (`program.buffer_coords`, the model `argus.atoms.tma.im2col_rows` checked on the hardware), so its coordinates
    are fresh values the element equals the traversal at. A row whose pixel lies in the padding holds no element (the
    element is inside the tensor). A gathered window (`argus.ir.nodes.Gather`) likewise: row r holds the index's
    value at position + r (`program.buffer_coords`)."""
    if ref.im2col is None and ref.gather is None:
        origins = _origins(ref, env)
        window = [element[d] - origins[d] for d in ref.kept]
        return origins, window, [_inside(ref, element, env, origins)]
    if ref.bound is not None:
        raise Unsupported(f"a bounded im2col or gathered window of {ref.buffer.name}")
    window = [z3.BitVec(f"once.{user_name(ref.buffer)}.window{i}{suffix}", smt.WIDTH) for i in range(len(ref.shape))]
    coords = buffer_coords(ref, tuple(window), env)
    cons = [smt.in_range(w, 0, n) for w, n in zip(window, ref.shape, strict=True)]
    cons += [e == smt.val(c) for e, c in zip(element, coords, strict=True)]
    return list(coords), window, cons


def _operand_row(site: Site, window: list[Any], env: dict, operand: tuple, sites: list[Site]) -> Any:
    """Where a load that writes the T.gemm's operand buffer puts the element at `window` (its window coordinates,
    `_holds`): its coordinate along the operand's free axis (A's rows, B's columns), or None where that is not read
    off the copies. The load writes the operand itself, or a buffer that one copy site moves into the operand with the
    free axis at a constant offset (a shared stage read into an mma.sync fragment by ldmatrix: row m of the stage is
    row m of the fragment)."""
    ref, free = operand
    dst: TileRef = site.stmt.dst  # type: ignore[attr-defined]
    if len(ref.kept) != 2 or dst.layout is not None:
        return None
    axis = ref.kept[free]  # the buffer dimension that is the operand's free axis
    shift: Any = 0
    if dst.buffer is not ref.buffer:
        moves = [
            t.stmt
            for t in sites
            if isinstance(t.stmt, Copy) and t.stmt.src.buffer is dst.buffer and t.stmt.dst.buffer is ref.buffer
        ]
        if len(moves) != 1:
            return None
        move: Copy = moves[0]
        if move.src.layout is not None or move.dst.layout is not None or axis not in move.dst.kept:
            return None
        staged = move.src.kept[move.dst.kept.index(axis)]  # the staged buffer's dimension copied along the axis
        offsets = (move.dst.origin[axis], move.src.origin[staged])
        if not all(isinstance(o, int) for o in offsets):  # an offset that moves with a loop: not read off here
            return None
        shift, axis = offsets[0] - offsets[1], staged
    at = _origins(dst, env)[axis]
    if axis not in dst.dropped:
        # the source's window coordinate copied along it (a copy's windows correspond dimension by dimension)
        at = at + window[dst.kept.index(axis)]
    # no term for a zero shift: the query stays the one it was before the stage was followed (Z3's search depends on
    # the terms it is given, and an added ``+ 0`` left two library proofs undecided)
    return at + shift if shift else at


def _contraction_once(
    ctx: Context,
    gemm: Site,
    outer: set[int],
    loads: list[tuple[Site, TileRef]],
    proved: set[int],
    operand: tuple[TileRef, int],
) -> Finding | str | None:
    for site, ref in loads:
        why = _unreadable(ctx, site, _site_exprs(site, ref))
        if why is not None:
            return f"{why} ({site.loc})"
    # one term per loop that stays the same across the accumulation (the gemm's reset and tile loops)
    shared: dict[int, Any] = {}
    plans: list[tuple[Site, TileRef, dict[Var, Any], list[For]]] = []
    shared_cons: list[Any] = []
    env0 = dict(ctx.base_env)
    for lp in gemm.loops:
        if id(lp) in outer:
            t = z3.BitVec(f"once.{lp.var.name}.tile", smt.WIDTH)
            ctx.loop_terms.append(t)
            shared[id(lp)] = t
    for site, ref in loads:
        fixed = _accumulation_loops(ctx, site, gemm, shared, proved)
        if isinstance(fixed, str):
            return fixed
        plans.append((site, ref, fixed, [lp for lp in site.loops if lp.var not in fixed]))
    for i, (sa, ra, fa, free_a) in enumerate(plans):
        for sb, rb, fb, _ in plans[i:]:
            if sa is sb and not free_a:
                continue
            env_a, cons_a = _instance(ctx, sa, env0, ".a", fa)
            env_b, cons_b = _instance(ctx, sb, env0, ".b", fb)
            apart = z3.BoolVal(True) if sa is not sb else z3.Or(*[env_a[lp.var] != env_b[lp.var] for lp in free_a])
            paired = set(_paired_loops(ctx, sa, gemm, proved)) & set(_paired_loops(ctx, sb, gemm, proved))
            distinct = z3.And(apart, _consumed_between(gemm, sa, env_a, sb, env_b, paired))
            element, dims, inside = _element(ctx, ra.buffer, "once")
            (oa, wa, holds_a), (ob, wb, holds_b) = _holds(ra, element, env_a, ".a"), _holds(rb, element, env_b, ".b")
            cons = [*shared_cons, *cons_a, *cons_b, *inside, *holds_a, *holds_b]
            # An element loaded into two different rows of A (columns of B) meets different elements of the other
            # operand: two products, each summed once (an implicit-GEMM convolution loads one input element for
            # several output positions, one per tap). Twice into one row is the same product twice.
            row_a, row_b = (
                _operand_row(s, w, e, operand, ctx.analysis.program.sites)
                for s, w, e in ((sa, wa, env_a), (sb, wb, env_b))
            )
            if row_a is not None and row_b is not None:
                cons.append(row_a == row_b)
            # Terms built only from what both instances share (the block, the tile loop, the sizes) cannot separate
            # them; a persistent tile order's divisions by symbolic sizes are such terms. Abstracting each by a free
            # value is a cheap over-approximation: unsat is a proof, and only a model of it is checked exactly. The
            # over-approximation also leaves out that the first load was consumed before the second (`apart` for
            # `distinct`): that condition reads the stage index, whose definition multiplies the tile loop's
            # variable by the K-block count.
            # The abstracted values are free 32-bit numbers, so an origin built from one could wrap around and make a
            # window hold every element; the origins are bounded as every intermediate value of a kernel is
            # (`smt.VALUE_BOUND`), which keeps the over-approximation one of the exact query.
            fixed_terms = [*ctx.block_terms.values(), *ctx.shape_terms.values(), *shared.values()]
            bounded = [smt.in_range(o, -smt.VALUE_BOUND, smt.VALUE_BOUND) for o in (*oa, *ob)]
            abstract = _abstract([*cons, *bounded], fixed_terms)
            if abstract is not None:
                first = _solve(ctx, abstract, apart)
                if first.verdict == Verdict.UNKNOWN:
                    first = _solve(ctx, abstract, apart, ESCALATED_RLIMIT)
                if first.verdict == Verdict.VERIFIED:
                    continue
            out = _solve(ctx, cons, distinct)
            if out.verdict == Verdict.VERIFIED:
                continue
            if out.verdict == Verdict.UNKNOWN:  # an attempted proof that did not complete: unknown
                why = (
                    f"{user_name(ra.buffer)}: the solver could not decide within its budget whether two loads feeding "
                    f"the T.gemm at line {gemm.loc.line if gemm.loc else '?'} overlap"
                )
                return undecided(out, why, loc=sb.loc, pin=True)
            return _contraction_finding(ctx, gemm, out.model, ra.buffer, element, dims, (sa, env_a), (sb, env_b))
    return None


def _consumed_between(
    gemm: Site, sa: Site, env_a: dict, sb: Site, env_b: dict, paired: set[int] | frozenset = frozenset()
) -> Any:
    """The condition that the second load does not just overwrite the first one's data before the T.gemm read it:
    they write different places, or they run in different iterations of a loop around the T.gemm, or of a producer's
    loop that a proved pairing ties to one around it (`paired`: ids of such loops, `_paired_loops`; the consumer reads
    the stage at the first one's iteration before the producer may load it again), or the T.gemm sits between them in
    program order (two loads into one place in one iteration, the first unread, are a wasted load, not a double
    accumulation). Before session 63 the producer's paired loops were missing here: two loads of one element into
    the same stage in different iterations of a warp-specialized pipeline counted as an overwrite, and a double
    accumulation through the same stage slot (a paged table listing one page twice) was never reported."""
    da: TileRef = sa.stmt.dst  # type: ignore[attr-defined]
    db: TileRef = sb.stmt.dst  # type: ignore[attr-defined]
    if da.buffer is not db.buffer or da.extent != db.extent:
        return z3.BoolVal(True)
    places = [o1 != o2 for o1, o2 in zip(_origins(da, env_a), _origins(db, env_b), strict=True)]
    loops = [lp for lp in gemm.loops if lp in sa.loops and lp in sb.loops]
    loops += [lp for lp in sa.loops if lp in sb.loops and id(lp) in paired and lp not in loops]
    iterations = [env_a[lp.var] != env_b[lp.var] for lp in loops]
    between = min(sa.index, sb.index) < gemm.index < max(sa.index, sb.index)
    return z3.Or(*places, *iterations, z3.BoolVal(between))


def _contraction_finding(
    ctx: Context,
    gemm: Site,
    m: Any,
    tensor: Buffer,
    element: list[Any],
    dims: list[Any],
    a: tuple[Site, dict],
    b: tuple[Site, dict],
) -> Finding:
    acc = user_name(gemm.stmt.acc.buffer)  # type: ignore[attr-defined]
    block = ctx.block_values(m)

    def message(coord: tuple, name: str, extents: str, at_a: str, at_b: str) -> str:
        return (
            f"element {coord} of {name} ({extents}) is loaded twice for one accumulation of {acc} in block "
            f"({_text(block)}), at {at_a} and at {at_b}, and both feed the T.gemm at line "
            f"{gemm.loc.line if gemm.loc else '?'}: its products enter the sum twice"
        )

    return _twice_finding(ctx, gemm, m, (tensor, element, dims), a, b, message, {})


def _twice_finding(
    ctx: Context,
    gemm: Site,
    m: Any,
    loaded: tuple[Buffer, list[Any], list[Any]],
    a: tuple[Site, dict],
    b: tuple[Site, dict],
    message: Any,
    extra: dict[str, str],
) -> Finding:
    """`COVERAGE_CONTRACTION_TWICE` for element `loaded` (tensor, element terms, extents) held by the loads `a` and
    `b` (site and environment) in model `m`; `message(coord, name, extents, at_a, at_b)` words it, `extra` adds
    variables to the counterexample."""
    (sa, env_a), (sb, env_b) = a, b
    tensor, element, dims = loaded
    coord = tuple(smt.model_int(m, e) for e in element)
    extents = " x ".join(str(smt.model_int(m, d)) for d in dims)
    loops_a, loops_b = _loops(m, sa, env_a), _loops(m, sb, env_b)
    name = user_name(tensor)

    def where(loops: dict[str, int], site: Site) -> str:
        it = f" ({_text(loops)})" if loops else ""
        return f"line {site.loc.line if site.loc else '?'}{it}"

    msg = message(coord, name, extents, where(loops_a, sa), where(loops_b, sb))
    cex = Counterexample(
        code="COVERAGE_CONTRACTION_TWICE",
        message=msg,
        op_loc=sb.loc,
        program_point=str(gemm.loc),
        block=ctx.block_values(m),
        shapes=ctx.shape_values(m),
        thread=None,  # the whole block loads the window
        loops=loops_b,
        accesses=(
            Access("read", "load", sa.loc, None, loops_a, Element(name, "global", None, coord)),
            Access("read", "load", sb.loc, None, loops_b, Element(name, "global", None, coord)),
        ),
        variables={"element": str(coord), f"{name} extents": extents, **extra},
    )
    return Finding("COVERAGE_CONTRACTION_TWICE", Verdict.VIOLATED, msg, loc=sb.loc, counterexample=cex)


# --- contraction accumulated once across the slices of a declared partial sum ------------------------------


def check_contraction_across_slices(ctx: Context, proved: set[int] | None = None) -> list[Finding]:
    """`COVERAGE_CONTRACTION_TWICE` across the slices of an output declared a partial sum (``T.partial_sums(W, axis,
    why)``: a later kernel adds the slices): two blocks that store the accumulations of one ``T.gemm`` into two
    different slices of W at the same other coordinates must not load one element of an operand into both (a split
    of K, or of attention's keys, whose shares overlap: the overlapped K-block is counted twice in the sum). Each pair
    of loads feeding an operand (through copies and elementwise ops), one in each block, is one query: an element
    inside the tensor held by both windows, into the same row of A (column of B). Where the accumulator holds one tile
    per iteration of a tile loop (a persistent kernel's units), each block's loads are those of the iteration that
    stores (its tile loop's iteration shared by the store and the loads; a producer's loops through the proved
    pairing, `proved`). Where the stored value does not come from one accumulator, the tensor is not checked."""
    findings = []
    prog = ctx.analysis.program
    for part in ctx.kernel.partial_sums:
        name = f"{user_name(part.tensor)} along axis {part.axis}"
        stores = [site for site in prog.sites if isinstance(site.stmt, Copy) and site.stmt.dst.buffer is part.tensor]
        if not stores:
            ctx.record_not_checked("contraction accumulated once across slices", name, "no store into it", 0.0)
        for store in stores:
            start = time.perf_counter()
            label = f"{name} (line {store.loc.line if store.loc else '?'})"
            out = _across_slices(ctx, store, part.axis, proved or set())
            if isinstance(out, str):
                ctx.record_not_checked("contraction accumulated once across slices", label, out, start)
                continue
            verdict = Verdict.VERIFIED if out is None else out.verdict
            ctx.record("contraction accumulated once across slices", label, verdict, start)
            if out is not None:
                findings.append(out)
    return findings


def _stored_gemm(ctx: Context, store: Site) -> Site | str:
    """The ``T.gemm`` whose accumulator the value `store` writes is computed from (through copies and elementwise
    ops of fragments and shared buffers), or why there is not exactly one."""
    sources = _upstream(ctx.analysis.program.sites, {id(b) for b in _reads(store.stmt) if b.space != Space.GLOBAL})
    gemms = [g for g in ctx.analysis.gemms if id(g.stmt.acc.buffer) in sources]  # type: ignore[attr-defined]
    accs = {id(g.stmt.acc.buffer) for g in gemms}  # type: ignore[attr-defined]
    if not accs:
        return "the stored value is computed from no T.gemm's accumulator"
    if len(accs) > 1:
        return "the stored value is computed from several T.gemm accumulators"
    if len(gemms) != 1:
        return "several T.gemm statements accumulate into the stored accumulator"
    return gemms[0]


@dataclass
class _Side:
    """One of the two blocks `_across_slices` pairs: its environment (block indices), their ranges, and one term per
    loop of the accumulation (reset and tile loops) that its store and its loads share."""

    env: dict
    cons: list[Any]
    shared: dict[int, Any]
    suffix: str


def _across_slices(ctx: Context, store: Site, axis: int, proved: set[int]) -> Finding | str | None:
    prog = ctx.analysis.program
    gemm = _stored_gemm(ctx, store)
    if isinstance(gemm, str):
        return gemm
    g: Gemm = gemm.stmt  # type: ignore[assignment]
    outer = _accumulation_outer(ctx, gemm)
    if any(lp not in store.loops for lp in outer):
        return "the store is outside a loop of the accumulation (a reset or tile loop around the T.gemm)"
    dst: TileRef = store.stmt.dst  # type: ignore[attr-defined]
    why = _unreadable(ctx, store, _site_exprs(store, dst))
    if why is not None:
        return f"{why} ({store.loc})"
    loads = []
    for operand, free in ((g.a, 0), (g.b, 1)):
        for group in _feeding_loads(prog.sites, operand.buffer).values():
            for site, ref in group:
                why = _unreadable(ctx, site, _site_exprs(site, ref))
                if why is not None:
                    return f"{why} ({site.loc})"
            loads.append(((operand, free), group))
    env_b, cons_b, _ = _blocks(ctx, ".slice")
    sides = []
    for env, cons, suffix in ((ctx.base_env, [], ".a"), (env_b, cons_b, ".b")):
        shared: dict[int, Any] = {}
        env = dict(env)
        for lp in outer:  # the accumulation's iteration: one term, in range at the terms of the loops around it
            t = z3.BitVec(f"slices.{lp.var.name}.tile{suffix}", smt.WIDTH)
            ctx.loop_terms.append(t)
            cons = [*cons, ctx.loop_range(lp, t, env)]
            shared[id(lp)] = t
            env[lp.var] = t
        sides.append(_Side(env, cons, shared, suffix))
    try:
        fixed_a = {lp.var: sides[0].shared[id(lp)] for lp in outer}
        fixed_b = {lp.var: sides[1].shared[id(lp)] for lp in outer}
        env_sa, cons_sa = _instance(ctx, store, sides[0].env, ".sa", fixed_a)
        env_sb, cons_sb = _instance(ctx, store, sides[1].env, ".sb", fixed_b)
        oa, ob = _origins(dst, env_sa), _origins(dst, env_sb)
        slices = [*sides[0].cons, *sides[1].cons, *cons_sa, *cons_sb, oa[axis] != ob[axis]]
        slices += [x == y for d, (x, y) in enumerate(zip(oa, ob, strict=True)) if d != axis]
        plans = []
        for operand, group in loads:
            per_side = []
            for side in sides:
                placed = []
                for site, ref in group:
                    fixed = _accumulation_loops(ctx, site, gemm, side.shared, proved)
                    if isinstance(fixed, str):
                        return fixed
                    placed.append((site, ref, fixed))
                per_side.append(placed)
            plans.append((operand, per_side))
        # one query over every pair of slices first, on a small budget; where it is not decided, the two slices'
        # indices pinned pair by pair (`_slice_pairs`: linear in ``z * share``)
        stored = (sides, oa, ob, dst, axis)
        first = _across_slices_query(ctx, gemm, plans, slices, stored, FIRST_SLICES_RLIMIT)
        if first is None or first.verdict == Verdict.VIOLATED:
            return first
        pairs = _slice_pairs(ctx, dst, axis, oa, ob)
        if not pairs:  # nothing to pin: the same queries on the whole budget (undecided there: unknown)
            return _across_slices_query(ctx, gemm, plans, slices, stored, ONCE_RLIMIT)
        for pins in pairs:
            found = _across_slices_query(ctx, gemm, plans, [*slices, *pins], stored, ONCE_RLIMIT)
            if found is not None:
                return found
    except Unsupported as e:
        return str(e)
    return None


def _accumulation_loops(
    ctx: Context, site: Site, gemm: Site, shared: dict[int, Any], proved: set[int]
) -> dict[Var, Any] | str:
    """The terms of `site`'s loops that are the accumulation's (`shared`: the T.gemm's reset and tile loops, or a
    producer's loops paired with them), or why a load in another role cannot be tied to the accumulation."""
    paired = _paired_loops(ctx, site, gemm, proved) if site.role is not gemm.role else {}
    fixed: dict[Var, Any] = {}
    for lp in site.loops:
        twin, same = (lp, None) if lp in gemm.loops else paired.get(id(lp), (None, None))
        if twin is not None and id(twin) in shared:
            fixed[lp.var] = shared[id(twin)] if same is None else same(shared[id(twin)])
        elif twin is None and site.role is not gemm.role and shared:
            return (
                f"the load at {site.loc} runs in another role, in loop {loop_name(lp)} that no proved pairing ties to "
                "the accumulator's tile"
            )
    return fixed


def _within_bounds(terms: list[Any]) -> list[Any]:
    """Each of `terms`, and every sum and product inside them, in ``-VALUE_BOUND .. VALUE_BOUND - 1``, computed without
    wrapping around (a kernel's values stay below 2^30: docs/verify.md §7, "Bounds")."""
    out, seen = [], set()
    todo = [t for t in terms if z3.is_bv(t)]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        kids = [c for c in t.children() if z3.is_bv(c)]
        if z3.is_app_of(t, z3.Z3_OP_BMUL) and len(kids) == 2:
            out += [z3.BVMulNoOverflow(*kids, True), z3.BVMulNoUnderflow(*kids)]
        if z3.is_app_of(t, z3.Z3_OP_BADD) and len(kids) == 2:
            out += [z3.BVAddNoOverflow(*kids, True), z3.BVAddNoUnderflow(*kids)]
        if z3.is_app_of(t, z3.Z3_OP_BMUL) or z3.is_app_of(t, z3.Z3_OP_BADD):
            out.append(smt.in_range(t, -smt.VALUE_BOUND, smt.VALUE_BOUND))
        todo.extend(kids)
    return out + [smt.in_range(t, -smt.VALUE_BOUND, smt.VALUE_BOUND) for t in terms if z3.is_bv(t)]


#: the most pairs of slices `_slice_pairs` enumerates
_MOST_SLICE_PAIRS = 256
#: the budget of the first, unpinned query over every pair of slices (`_across_slices`)
FIRST_SLICES_RLIMIT = 1_000_000


def _slice_pairs(ctx: Context, dst: TileRef, axis: int, oa: Any, ob: Any) -> list[list[Any]]:
    """The two stores' slice indices pinned to every pair of different values, the first below the second (every
    two loads are asked both ways round), where the slices are a constant count (a grid of 4 splits, or a size the
    kernel pins: ``T.assume("S == 4")``); the queries are then linear in what multiplies them (``z * share`` with a
    symbolic share). Empty where the count is not a constant or has too many pairs."""
    count = _constant(ctx, dst.buffer.shape[axis])
    if count is None or count * (count - 1) // 2 > _MOST_SLICE_PAIRS:
        return []
    return [[oa[axis] == i, ob[axis] == j] for i in range(count) for j in range(i + 1, count)]


def _constant(ctx: Context, extent: Any) -> int | None:
    """`extent` (a dimension of a tensor) where it is the same for every size the assumptions allow, else None."""
    term = smt.val(smt.evaluate(extent, ctx.base_env) if isinstance(extent, Expr) else extent)
    known = z3.simplify(term)
    if z3.is_bv_value(known):
        return known.as_signed_long()
    s = z3.SolverFor("QF_BV")
    s.set("timeout", 2000)
    s.add(*ctx.base_constraints)
    s.add(*smt.definitions(ctx.base_constraints))
    if s.check() != z3.sat:
        return None
    value = smt.model_int(s.model(), term)
    s.add(term != value)
    return value if s.check() == z3.unsat else None


def _across_slices_query(
    ctx: Context, gemm: Site, plans: list[Any], slices: list[Any], stored: tuple, rlimit: int
) -> Finding | None:
    """`_across_slices`' queries under `slices` (two blocks storing into two slices at the same other coordinates,
    their slices pinned where `_slice_pairs` pins them): the finding for an element both load, or an undecided one."""
    prog = ctx.analysis.program
    sides, oa, ob, dst, axis = stored
    fixed_terms = [*ctx.block_terms.values(), *ctx.shape_terms.values()]
    fixed_terms += [t for side in sides for t in side.shared.values()]
    fixed_terms += [sides[1].env[v] for v in ctx.kernel.block_vars]
    for operand, (placed_a, placed_b) in plans:
        for sa, ra, fa in placed_a:
            for sb, rb, fb in placed_b:
                env_a, cons_a = _instance(ctx, sa, sides[0].env, ".a", fa)
                env_b, cons_b = _instance(ctx, sb, sides[1].env, ".b", fb)
                element, dims, inside = _element(ctx, ra.buffer, "slices")
                (wo_a, wa, holds_a), (wo_b, wb, holds_b) = (
                    _holds(ra, element, env_a, ".a"),
                    _holds(rb, element, env_b, ".b"),
                )
                cons = [*slices, *cons_a, *cons_b, *inside, *holds_a, *holds_b]
                # every value the origins compute stays below smt.VALUE_BOUND (docs/verify.md §7, "Bounds"): a split
                # index times a share that wraps around 32 bits is no witness
                cons += _within_bounds([*wo_a, *wo_b, *oa, *ob])
                rows = [_operand_row(s, w, e, operand, prog.sites) for s, w, e in ((sa, wa, env_a), (sb, wb, env_b))]
                if rows[0] is not None and rows[1] is not None:
                    cons.append(rows[0] == rows[1])
                # the first round: a tile order's divisions by symbolic sizes abstracted by free values first (as
                # within a block); a pinned round asks the exact query, with a larger budget where it is undecided
                if rlimit == FIRST_SLICES_RLIMIT and any(side.shared for side in sides):
                    bounded = [smt.in_range(o, -smt.VALUE_BOUND, smt.VALUE_BOUND) for o in (*wo_a, *wo_b, *oa, *ob)]
                    abstract = _abstract([*cons, *bounded], fixed_terms)
                    if (
                        abstract is not None
                        and _solve(ctx, abstract, z3.BoolVal(True), rlimit).verdict == Verdict.VERIFIED
                    ):
                        continue
                out = _solve(ctx, cons, z3.BoolVal(True), rlimit)
                if out.verdict == Verdict.UNKNOWN and rlimit != FIRST_SLICES_RLIMIT:
                    out = _solve(ctx, cons, z3.BoolVal(True), ESCALATED_RLIMIT)
                if out.verdict == Verdict.VERIFIED:
                    continue
                if out.verdict == Verdict.UNKNOWN:
                    why = (
                        f"{user_name(ra.buffer)}: the solver could not decide within its budget whether two slices of "
                        f"{user_name(dst.buffer)} load one element for the T.gemm at line "
                        f"{gemm.loc.line if gemm.loc else '?'}"
                    )
                    return undecided(out, why, loc=sb.loc, pin=True)
                loaded = (ra.buffer, element, dims)
                stored_in = (dst.buffer, axis, oa[axis], ob[axis], sides[1].env)
                return _slices_finding(ctx, gemm, out.model, loaded, (sa, env_a), (sb, env_b), stored_in)
    return None


def _slices_finding(
    ctx: Context,
    gemm: Site,
    m: Any,
    loaded: tuple[Buffer, list[Any], list[Any]],
    a: tuple[Site, dict],
    b: tuple[Site, dict],
    stored: tuple[Buffer, int, Any, Any, dict],
) -> Finding:
    out, axis, slice_a, slice_b, env_b0 = stored
    block_a = ctx.block_values(m)
    block_b = {v.name: smt.model_int(m, env_b0[v]) for v in ctx.kernel.block_vars}

    def message(coord: tuple, name: str, extents: str, at_a: str, at_b: str) -> str:
        return (
            f"element {coord} of {name} ({extents}) is loaded by block ({_text(block_a)}) at {at_a} and by block "
            f"({_text(block_b)}) at {at_b}, which store their accumulations into slices {smt.model_int(m, slice_a)} "
            f"and {smt.model_int(m, slice_b)} of {user_name(out)} along axis {axis} (declared partial sums: "
            "T.partial_sums): its products enter the sum twice"
        )

    return _twice_finding(ctx, gemm, m, loaded, a, b, message, {"other block": _text(block_b)})


# --- accumulator reset per tile ----------------------------------------------------------------------------


def check_accumulator_reset(ctx: Context) -> list[Finding]:
    """`MMA_ACC_NOT_RESET`: in every tile loop around a ``T.gemm`` (module docstring), the accumulator is rewritten
    whole before the first MMA of each tile."""
    findings = []
    for gemm in ctx.analysis.gemms:
        for lp in tile_loops(ctx, gemm):
            start = time.perf_counter()
            acc = gemm.stmt.acc.buffer  # type: ignore[attr-defined]
            label = f"{user_name(acc)} in loop {loop_name(lp)} (line {gemm.loc.line if gemm.loc else '?'})"
            out = _reset(ctx, gemm, lp)
            if isinstance(out, str):
                ctx.record_not_checked("accumulator reset per tile", label, out, start)
                continue
            ctx.record("accumulator reset per tile", label, Verdict.VERIFIED if out is None else out.verdict, start)
            if out is not None:
                findings.append(out)
                break
    return findings


def _inner(site: Site, lp: For) -> tuple[tuple[For, ...], tuple[Any, ...]]:
    """`site`'s loops and branches inside loop `lp`."""
    frames = site.frames
    pos = next(i for i, f in enumerate(frames) if f.owner is lp)
    inner = frames[pos + 1 :]
    loops = tuple(f.owner for f in inner if isinstance(f.owner, For))
    ifs = tuple((id(f.owner), f.branch) for f in inner if f.owner is not None and not isinstance(f.owner, For))
    return loops, ifs  # type: ignore[return-value]


def _reset(ctx: Context, gemm: Site, lp: For) -> Finding | str | None:
    prog = ctx.analysis.program
    acc = gemm.stmt.acc.buffer  # type: ignore[attr-defined]
    loop_site = prog.site(lp)
    g_loops, g_ifs = _inner(gemm, lp)
    before: list[Site] = []
    after: list[Site] = []
    for site in prog.sites:
        if not _within(loop_site, site) or not _writes_acc(site, acc):
            continue
        if not _is_reset(site, acc, prog.sites):
            continue
        if not site.stmt.dst.is_whole():  # type: ignore[attr-defined]
            return f"the accumulator is rewritten in part at {site.loc}"
        r_loops, r_ifs = _inner(site, lp)
        if site.index < gemm.index and g_loops[: len(r_loops)] == r_loops:
            if set(r_ifs) <= set(g_ifs):
                return None  # runs before the gemm in every iteration that runs the gemm
            before.append(site)
        elif site.index > gemm.end and not r_loops:
            if set(r_ifs) <= set(g_ifs):
                return None  # runs after the gemm in every iteration that ran it
            after.append(site)
        else:
            return f"the reset at {site.loc} is neither before the T.gemm in its loops nor after the tile's loops"
    for site in [gemm, *before, *after]:
        why = _unreadable(ctx, site, [b.cond for b, _ in site.ifs] + [x.extent for x in site.loops])
        if why is not None:
            return f"{why} ({site.loc})"
    # two consecutive tiles, it - 1 and it, that both run the gemm (its first instance: inner loops at 0)
    it = z3.BitVec(f"once.{lp.var.name}.tile", smt.WIDTH)
    ctx.loop_terms.append(it)
    env_prev: dict[Any, Any] = dict(ctx.base_env)
    env_now: dict[Any, Any] = dict(ctx.base_env)
    cons: list[Any] = []
    for x in gemm.loops:
        if x is lp:
            env_prev[x.var], env_now[x.var] = it - 1, it
            cons += [it >= 1, ctx.loop_range(x, it, env_now)]
        elif x in g_loops:
            env_prev[x.var], env_now[x.var] = smt.val(0), smt.val(0)
            cons += [ctx.loop_range(x, smt.val(0), env_prev), ctx.loop_range(x, smt.val(0), env_now)]
        else:  # loops around the tile loop: the same iteration for both tiles
            t = z3.BitVec(f"once.{x.var.name}", smt.WIDTH)
            ctx.loop_terms.append(t)
            env_prev[x.var] = env_now[x.var] = t
            cons.append(ctx.loop_range(x, t, env_now))

    def runs(site: Site, env: dict) -> Any:
        conds = []
        for x in site.loops:
            if x.var not in env:
                env = {**env, x.var: smt.val(0)}
        for branch, taken in site.ifs:
            c = smt.boolean(smt.evaluate(branch.cond, env))
            conds.append(c if taken else z3.Not(c))
        return z3.And(*conds) if conds else z3.BoolVal(True)

    cons += [runs(gemm, env_prev), runs(gemm, env_now)]
    cons += [z3.Not(runs(s, env_now)) for s in before] + [z3.Not(runs(s, env_prev)) for s in after]
    out = _solve(ctx, cons, z3.BoolVal(True))
    if out.verdict == Verdict.UNKNOWN:  # an attempted proof that did not complete: unknown
        why = f"the solver could not decide within its budget whether {user_name(gemm.stmt.acc.buffer)} is reset"
        return undecided(out, f"{why} before each tile's first MMA", loc=gemm.loc, pin=True)
    if out.verdict == Verdict.VIOLATED:
        return _reset_finding(ctx, gemm, lp, out.model, env_prev, env_now, before + after)
    if before or after:
        return "the resets are conditional; only consecutive tiles were checked"
    # no reset at all: the gemm never runs in two consecutive tiles; that it never runs in two tiles at all is the
    # proof (a guard that skips a tile would otherwise carry products over the gap)
    j = z3.BitVec(f"once.{lp.var.name}.earlier", smt.WIDTH)
    env_j = {**env_prev, lp.var: j}
    out = _solve(ctx, [*cons[:-2], smt.in_range(j, 0, it), runs(gemm, env_j), runs(gemm, env_now)], z3.BoolVal(True))
    if out.verdict == Verdict.VERIFIED:
        return None
    return "the T.gemm runs in two tiles that are not consecutive, with no reset in between; not decided"


def _reset_finding(
    ctx: Context, gemm: Site, lp: For, m: Any, env_prev: dict, env_now: dict, resets: list[Site]
) -> Finding:
    acc = gemm.stmt.acc.buffer  # type: ignore[attr-defined]
    name = user_name(acc)
    loops_prev = {loop_name(x): smt.model_int(m, smt.val(env_prev[x.var])) for x in gemm.loops}
    loops_now = {loop_name(x): smt.model_int(m, smt.val(env_now[x.var])) for x in gemm.loops}
    thread = ThreadPoint(first_thread(gemm.role), gemm.role.name if gemm.role else None)
    coord = None
    if acc.tv is not None:
        try:
            coord_index = int(acc.tv(0, 0))
            shape = tuple(int(d) for d in acc.shape)
            coord = (coord_index % shape[0], coord_index // shape[0]) if len(shape) == 2 else None
        except Exception:  # noqa: BLE001 - the coordinate only decorates the report
            coord = None
    element = Element(name, "fragment", 0, coord, 0)
    tile = loop_name(lp)
    fills = [
        s
        for s in ctx.analysis.program.sites
        if _is_reset(s, acc, ctx.analysis.program.sites) and not _within(ctx.analysis.program.site(lp), s)
    ]
    where = f"; its reset at line {fills[0].loc.line} runs once, before the loop" if fills and fills[0].loc else ""
    if resets:
        where = f"; the reset at line {resets[0].loc.line if resets[0].loc else '?'} does not run in that iteration"
    msg = (
        f"the T.gemm accumulates tile {tile}={loops_now[tile]} into {name}, which still holds the products of tile "
        f"{tile}={loops_prev[tile]}: nothing rewrites {name} between them{where}"
    )
    cex = Counterexample(
        code="MMA_ACC_NOT_RESET",
        message=msg,
        op_loc=gemm.loc,
        program_point=str(gemm.loc),
        block=ctx.block_values(m),
        shapes=ctx.shape_values(m),
        thread=thread,
        loops=loops_now,
        element=element,
        accesses=(
            Access("write", "mma (accumulate)", gemm.loc, thread, loops_prev, element),
            Access("read", "mma (accumulate)", gemm.loc, thread, loops_now, element),
        ),
    )
    return Finding("MMA_ACC_NOT_RESET", Verdict.VIOLATED, msg, loc=gemm.loc, counterexample=cex)
