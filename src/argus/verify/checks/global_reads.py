"""Reads of global memory that another block of the same launch writes (`RACE_GLOBAL`), and the group barriers that
order them (`RACE_GROUP_RANK`, `OOB_GROUP_COUNTER`).

The blocks of a grid run at once and in any order. A block that loads an element of a tensor which another block of
the same launch stores reads the old value or the new one, whichever the timing gives. The one order the DSL gives
between blocks is `T.group_barrier`: the `count` blocks that arrive at one counter wait for each other, and what each
stored before its arrival is visible to the others' loads after it.

* **Reads of other blocks' stores.** For every load and every store of one global tensor (any two sites), two
  different blocks, any iterations, whose windows share an element inside the tensor. Such a pair is ordered only by
  a group barrier site that runs after the store and before the load in program order, in the iterations of the
  loops it shares with both (its loops enclose both sites, its branches are theirs, and it is in their warp role),
  and whose counter is the same one in the writer's instance and in the reader's: the reader passes it only once
  every block arriving at that counter has arrived, the writer among them, after its store. A pair with no such
  barrier, or whose two blocks may arrive at different counters, is a `RACE_GLOBAL` with the element, the two blocks
  and their iterations. Where the windows divide by a problem size (a persistent kernel's tile order), the query goes
  through the tile-order lemma (`checks/tiles.py`): instances that share an element have one tile number, so a
  counter computed from the tile number is the same in both by congruence.
* **At most `count` arrivals at a counter.** That a completed generation holds every arrival at its counter needs
  no more than `count` of them per launch: every instance of a group barrier arrives with a rank in 0 .. count - 1
  (`RACE_GROUP_RANK`), no two instances (two blocks, or one block in two iterations) arrive at one counter with
  one rank (`RACE_GROUP_RANK`), and the counter lies inside its tensor (`OOB_GROUP_COUNTER`). With fewer than
  `count` arrivals the barrier never completes: progress, which the verifier does not prove (the kernel's plan runs
  one wave of blocks; the interpreter reports a barrier that never completes, `INTERP_DEADLOCK`).

What is not checked (`docs/verify.md` §7): reads of what other threads of the same block stored (global memory within
a block), windows the check cannot read (an origin that depends on the thread or on loaded data, gathered and im2col
windows): those tensors are recorded *not checked*.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.expr import Expr, free_vars
from argus.ir.nodes import Buffer, Copy, Fill, GroupBarrier, Space, TileRef
from argus.verify import smt
from argus.verify.checks import tiles
from argus.verify.checks.once import (
    HARD_RLIMIT,
    ONCE_RLIMIT,
    WITNESS_SIZES,
    _blocks,
    _divides_by_size,
    _element,
    _inside,
    _instance,
    _loops,
    _origins,
    _site_exprs,
    _solve,
    _text,
    _unreadable,
)
from argus.verify.context import Context, Outcome
from argus.verify.program import Site, Unsupported, user_name
from argus.verify.report import Access, Counterexample, Element, Finding, ThreadPoint, Verdict, undecided


def check_global_reads(ctx: Context) -> list[Finding]:
    """`RACE_GLOBAL`, `RACE_GROUP_RANK`, `OOB_GROUP_COUNTER` (module docstring)."""
    sites = ctx.analysis.program.sites
    barriers = [site for site in sites if isinstance(site.stmt, GroupBarrier)]
    findings: list[Finding] = []
    for site in barriers:
        start = time.perf_counter()
        out = _arrivals(ctx, site)
        target = f"{user_name(site.stmt.counter.buffer)} at line {site.loc.line if site.loc else '?'}"
        if isinstance(out, str):
            ctx.record_not_checked("group barrier arrivals", target, out, start)
            continue
        ctx.record("group barrier arrivals", target, Verdict.VERIFIED if out is None else out.verdict, start)
        if out is not None:
            findings.append(out)
    stores: dict[int, list[tuple[Site, TileRef]]] = {}
    loads: dict[int, list[tuple[Site, TileRef]]] = {}
    tensors: dict[int, Buffer] = {}
    for site in sites:
        s = site.stmt
        if isinstance(s, Copy | Fill) and isinstance(s.dst, TileRef) and s.dst.buffer.space == Space.GLOBAL:
            stores.setdefault(id(s.dst.buffer), []).append((site, s.dst))
            tensors[id(s.dst.buffer)] = s.dst.buffer
        if isinstance(s, Copy) and isinstance(s.src, TileRef) and s.src.buffer.space == Space.GLOBAL:
            loads.setdefault(id(s.src.buffer), []).append((site, s.src))
    for key in [k for k in loads if k in stores]:
        start = time.perf_counter()
        buffer = tensors[key]
        out = _reads(ctx, buffer, loads[key], stores[key], barriers)
        if isinstance(out, str):
            ctx.record_not_checked("reads of other blocks' stores", user_name(buffer), out, start)
            continue
        verdict = Verdict.VERIFIED if out is None else out.verdict
        ctx.record("reads of other blocks' stores", user_name(buffer), verdict, start)
        if out is not None:
            findings.append(out)
    return findings


# --- the arrivals at each counter --------------------------------------------------------------------------------


def _index(site: Site, env: dict) -> Any:
    return smt.val(smt.evaluate(site.stmt.counter.origin[0], env))


def _arrivals(ctx: Context, site: Site) -> Finding | str | None:
    """The ranks of `site`'s arrivals lie in 0 .. count - 1, its counters inside the tensor, and no two of its
    instances arrive at one counter with one rank."""
    s: GroupBarrier = site.stmt
    why = _unreadable(ctx, site, [*_site_exprs(site, s.counter), s.rank])
    if why is not None:
        return f"{why} ({site.loc})"
    env, cons = _instance(ctx, site, ctx.base_env, ".g")
    rank = smt.val(smt.evaluate(s.rank, env))
    index = _index(site, env)
    extent = smt.val(smt.evaluate(s.counter.buffer.shape[0], ctx.base_env))
    checks = (
        ("RACE_GROUP_RANK", z3.Not(smt.in_range(rank, 0, s.count)), "arrives with a rank outside 0 .. count - 1"),
        ("OOB_GROUP_COUNTER", z3.Not(smt.in_range(index, 0, extent)), "arrives at a counter outside the tensor"),
    )
    for code, violation, what in checks:
        out = _solve(ctx, cons, violation)
        if out.verdict == Verdict.UNKNOWN:
            return undecided(out, f"{user_name(s.counter.buffer)}: whether an arrival {what}", loc=site.loc, pin=True)
        if out.verdict == Verdict.VIOLATED:
            m = out.model
            msg = (
                f"block ({_text(ctx.block_values(m))}){_iterations(_loops(m, site, env))} {what}: counter "
                f"{user_name(s.counter.buffer)}[{smt.model_int(m, index)}] (of {smt.model_int(m, extent)}), rank "
                f"{smt.model_int(m, rank)} of {s.count}"
            )
            return _finding(code, msg, site, m, ctx, _loops(m, site, env))
    # two instances, one counter, one rank: more than `count` arrivals could meet at the counter in one launch
    benv, bcons, bterms = _blocks(ctx, ".h")
    env_b, cons_b = _instance(ctx, site, benv, ".h")
    same_block = z3.And(*[ctx.block_terms[v] == t for v, t in bterms.items()]) if bterms else z3.BoolVal(True)
    same_iteration = z3.And(*[env[lp.var] == env_b[lp.var] for lp in site.loops]) if site.loops else z3.BoolVal(True)
    twice = z3.And(
        z3.Not(z3.And(same_block, same_iteration)),
        index == _index(site, env_b),
        rank == smt.val(smt.evaluate(s.rank, env_b)),
    )
    out = _solve(ctx, [*cons, *bcons, *cons_b], twice)
    if out.verdict == Verdict.UNKNOWN:
        why = f"{user_name(s.counter.buffer)}: whether two arrivals share a counter and a rank"
        return undecided(out, why, loc=site.loc, pin=True)
    if out.verdict == Verdict.VIOLATED:
        m = out.model
        other = {v.name: smt.model_int(m, t) for v, t in bterms.items()}
        msg = (
            f"block ({_text(ctx.block_values(m))}){_iterations(_loops(m, site, env))} and block ({_text(other)})"
            f"{_iterations(_loops(m, site, env_b))} both arrive at {user_name(s.counter.buffer)}"
            f"[{smt.model_int(m, index)}] with rank {smt.model_int(m, rank)}: a generation could complete before "
            f"every block of the group has arrived"
        )
        return _finding("RACE_GROUP_RANK", msg, site, m, ctx, _loops(m, site, env))
    return None


def _iterations(loops: dict[str, int]) -> str:
    return f" in iteration {_text(loops)}" if loops else ""


def _finding(code: str, msg: str, site: Site, m: Any, ctx: Context, loops: dict[str, int]) -> Finding:
    cex = Counterexample(
        code=code,
        message=msg,
        op_loc=site.loc,
        program_point=str(site.loc),
        block=ctx.block_values(m),
        shapes=ctx.shape_values(m),
        # the block's arrival is made by its scope's first thread
        thread=ThreadPoint(0, site.role.name if site.role is not None else None),
        loops=loops,
        accesses=(),
        variables={},
    )
    return Finding(code, Verdict.VIOLATED, msg, loc=site.loc, counterexample=cex)


# --- loads of what other blocks store ----------------------------------------------------------------------------


def _ordering(store: Site, load: Site, barriers: list[Site]) -> list[Site]:
    """The group barriers that order `store` before `load` when both blocks arrive at one counter: after the store
    and before the load in program order, inside loops that enclose both, under branches that hold both, in their
    warp role."""
    out = []
    for g in barriers:
        if not store.index < g.index < load.index:
            continue
        depth = len(g.loops)
        if g.loops != store.loops[:depth] or g.loops != load.loops[:depth]:
            continue
        branches = {(id(x), taken) for x, taken in g.ifs}
        if not branches <= {(id(x), t) for x, t in store.ifs} or not branches <= {(id(x), t) for x, t in load.ifs}:
            continue
        if g.role is not store.role or g.role is not load.role:
            continue
        out.append(g)
    return out


def _reads(
    ctx: Context,
    buffer: Buffer,
    loads: list[tuple[Site, TileRef]],
    stores: list[tuple[Site, TileRef]],
    barriers: list[Site],
) -> Finding | str | None:
    for site, ref in [*loads, *stores]:
        why = _unreadable(ctx, site, _site_exprs(site, ref))
        if why is not None:
            return f"{why} ({site.loc})"
        if ref.gather is not None or ref.im2col is not None:
            return f"which elements the window at {site.loc} holds (a gathered or im2col window)"
    for load, rl in loads:
        for store, rs in stores:
            out = _pair(ctx, buffer, (load, rl), (store, rs), _ordering(store, load, barriers))
            if out is not None:
                return out
    return None


def _pair(
    ctx: Context,
    buffer: Buffer,
    read: tuple[Site, TileRef],
    write: tuple[Site, TileRef],
    ordering: list[Site],
) -> Finding | str | None:
    (load, rl), (store, rs) = read, write
    env_r, cons_r = _instance(ctx, load, ctx.base_env, ".r")
    benv, bcons, bterms = _blocks(ctx, ".w")
    env_w, cons_w = _instance(ctx, store, benv, ".w")
    element, dims, inside = _element(ctx, buffer, "gread")
    blocks_differ = z3.Or(*[ctx.block_terms[v] != t for v, t in bterms.items()]) if bterms else z3.BoolVal(False)
    # unordered: every barrier between them has the two blocks at different counters
    violation = z3.And(blocks_differ, *[_index(g, env_r) != _index(g, env_w) for g in ordering])
    try:
        cons = [*bcons, *cons_r, *cons_w, *inside, _inside(rl, element, env_r), _inside(rs, element, env_w)]
    except Unsupported as err:
        return str(err)
    hard = _divides_by_size(cons)
    lemma = ""
    if hard:
        numbers = _one_tile_number(ctx, buffer, (load, rl, env_r), (store, rs, env_w))
        if isinstance(numbers, str):  # the load's window inside the reader's own store window, whose tiles the lemma
            lemma = numbers  # separates: the writer's store and the reader's share the element, so one counter
            for g in ordering:
                got = _through_own_store(ctx, buffer, (load, rl, env_r, cons_r), (store, rs, env_w), element, g)
                if not isinstance(got, str):
                    numbers = got
                    break
                lemma += f"; {got}"
        if not isinstance(numbers, str):  # instances that share an element have one tile number (implied: sound)
            out = _solve(ctx, [*cons, numbers], violation)
            if out.verdict != Verdict.UNKNOWN:
                return _verdict(ctx, buffer, out, read, write, env_r, env_w, bterms, element, dims, ordering)
    out = _solve(ctx, cons, violation, HARD_RLIMIT if hard else ONCE_RLIMIT)
    if out.verdict == Verdict.UNKNOWN and hard:
        # with the sizes the windows divide by fixed, the divisions are by constants: a witness at a few sizes (sound:
        # a model found there is one), though no proof for all sizes
        exprs = [*rl.origin, *rs.origin, *[g.stmt.counter.origin[0] for g in ordering]]
        names = {v.name for e in exprs if isinstance(e, Expr) for v in free_vars(e)}
        for size in WITNESS_SIZES:
            pins = [t == size for v, t in ctx.shape_terms.items() if v.name in names and v.name not in ctx.pinned]
            at = _solve(ctx, [*cons, *pins], violation, 2 * HARD_RLIMIT)
            if at.verdict == Verdict.VIOLATED:
                return _verdict(ctx, buffer, at, read, write, env_r, env_w, bterms, element, dims, ordering)
        return (
            f"a window origin divides by a problem size (a tile order): whether a block reads what another stores "
            f"was not decided ({lemma or 'with the tile-order lemma'}; the direct query: {out.reason})"
        )
    return _verdict(ctx, buffer, out, read, write, env_r, env_w, bterms, element, dims, ordering)


def _one_tile_number(ctx: Context, buffer: Buffer, a: tuple[Site, TileRef, dict], b: tuple[Site, TileRef, dict]) -> Any:
    """``t_a == t_b``: the fact that two instances of the sites whose windows share an element have one tile number
    (the tile-order lemma, `checks/tiles.py`, proved for the two sites); or why it is not available."""
    (sa, ra, env_a), (sb, rb, env_b) = a, b
    split_a, split_b = tiles.split(ctx.kernel, sa, ra), tiles.split(ctx.kernel, sb, rb)
    if split_a is None or split_b is None:
        return "no tile number of the block and loop indices gives the dividing window origins"
    dims = sorted(set(split_a.origins) & set(split_b.origins))
    if not tiles.hard_dims(ra) | tiles.hard_dims(rb) <= set(dims):
        return "the two windows' dividing origins are not functions of their tile numbers"
    key = (id(sa), id(sb), id(buffer))
    if key not in ctx.tile_lemmas:
        ctx.tile_lemmas[key] = tiles.prove(ctx.kernel, buffer, dims, (split_a, ra), (split_b, rb))
    lemma: tiles.Lemma = ctx.tile_lemmas[key]
    if not lemma.proved:
        return f"that the tile order gives distinct tiles for distinct tile numbers was not proved: {lemma.why}"
    return smt.val(smt.evaluate(split_a.number, env_a)) == smt.val(smt.evaluate(split_b.number, env_b))


def _through_own_store(
    ctx: Context,
    buffer: Buffer,
    read: tuple[Site, TileRef, dict, list[Any]],
    write: tuple[Site, TileRef, dict],
    element: list[Any],
    barrier: Site,
) -> Any:
    """``c_r == c_w``, the counters of `barrier` in the reader's and the writer's instance, by way of the store site's
    own window in the reader's instance: where the store runs whenever the load does, in the iterations the load is
    in (its loops enclose the load, its branches are the load's), the store's window origins in the dimensions that
    divide by a size are functions of the counter (the counter as the store's tile number, `tiles.split`), every
    element the load reads lies in the reader's own store window there (one query), and the tile-order lemma of the
    store site with itself over those dimensions (`checks/tiles.py`: distinct counters, disjoint windows) holds, the
    writer's store and the reader's own share the element, so their counters are one; or why not."""
    (load, rl, env_r, cons_r), (store, rs, env_w) = read, write
    depth = len(store.loops)
    if store.loops != load.loops[:depth]:
        return "the store's loops do not enclose the load"
    if not {(id(x), t) for x, t in store.ifs} <= {(id(x), t) for x, t in load.ifs}:
        return "the store does not run wherever the load does"
    counter = barrier.stmt.counter.origin[0]
    split = tiles.split(ctx.kernel, store, rs, number=counter) if not isinstance(counter, int) else None
    if split is None:
        return "the store's dividing window origins are not functions of the group barrier's counter"
    dims = sorted(tiles.hard_dims(rs) | tiles.hard_dims(rl))
    if not set(dims) <= set(split.origins):
        return "the windows' dividing origins are not functions of the group barrier's counter"
    key = (id(store), id(barrier), id(buffer))
    if key not in ctx.tile_lemmas:
        ctx.tile_lemmas[key] = tiles.prove(ctx.kernel, buffer, dims, (split, rs), (split, rs))
    lemma: tiles.Lemma = ctx.tile_lemmas[key]
    if not lemma.proved:
        return f"that distinct counters give the store disjoint windows was not proved: {lemma.why}"
    inside = _inside(rl, element, env_r)
    origins = _origins(rs, env_r)
    own = [z3.And(element[d] >= origins[d], element[d] - origins[d] < rs.extent[d]) for d in dims]
    out = _solve(ctx, [*cons_r, inside], z3.Not(z3.And(*own)))
    if out.verdict != Verdict.VERIFIED:
        return f"that the load's window lies inside the reader's own store window was not proved ({out.verdict.value})"
    return _index(barrier, env_r) == _index(barrier, env_w)


def _verdict(
    ctx: Context,
    buffer: Buffer,
    out: Outcome,
    read: tuple[Site, TileRef],
    write: tuple[Site, TileRef],
    env_r: dict,
    env_w: dict,
    bterms: dict,
    element: list[Any],
    dims: list[Any],
    ordering: list[Site],
) -> Finding | None:
    (load, _), (store, _) = read, write
    if out.verdict == Verdict.VERIFIED:
        return None
    name = user_name(buffer)
    if out.verdict == Verdict.UNKNOWN:
        return undecided(out, f"{name}: whether a block reads what another stores", loc=load.loc, pin=True)
    m = out.model
    coord = tuple(smt.model_int(m, e) for e in element)
    extents = " x ".join(str(smt.model_int(m, d)) for d in dims)
    reader = ctx.block_values(m)
    writer = {v.name: smt.model_int(m, t) for v, t in bterms.items()}
    loops_r, loops_w = _loops(m, load, env_r), _loops(m, store, env_w)
    line = lambda site: site.loc.line if site.loc else "?"  # noqa: E731 - a one-line helper
    if ordering:
        counters = ", ".join(
            f"line {line(g)}: {smt.model_int(m, _index(g, env_r))} and {smt.model_int(m, _index(g, env_w))}"
            for g in ordering
        )
        how = f"the group barriers between them put the two blocks at different counters ({counters})"
    else:
        how = "no group barrier orders the store before the load (blocks run in any order)"
    msg = (
        f"block ({_text(reader)}){_iterations(loops_r)} loads element {coord} of {name} ({extents}) at line "
        f"{line(load)}, which block ({_text(writer)}){_iterations(loops_w)} stores at line {line(store)} in the same "
        f"launch: {how}, so the load may see the value before the store"
    )
    cex = Counterexample(
        code="RACE_GLOBAL",
        message=msg,
        op_loc=load.loc,
        program_point=str(load.loc),
        block=reader,
        shapes=ctx.shape_values(m),
        thread=None,
        loops=loops_r,
        accesses=(
            Access("write", "store", store.loc, None, loops_w, Element(name, "global", None, coord)),
            Access("read", "load", load.loc, None, loops_r, Element(name, "global", None, coord)),
        ),
        variables={"element": str(coord), f"{name} extents": extents, "writer block": _text(writer)},
    )
    return Finding("RACE_GLOBAL", Verdict.VIOLATED, msg, loc=load.loc, counterexample=cex)
