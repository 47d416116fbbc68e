"""What a finding blames: the statement that made its fact false, not only where the failure surfaced.

The checks find a failure at a use site (the copy whose stride is misaligned, the read of a stale stage, the
allocation that is largest); the mistake is often elsewhere. This module owns the search for it, called by the
checks with what they already know, and returns a `argus.verify.report.Blame`:

* **assumptions** (`assumption_blame`): the ``T.assume`` declarations in effect on the symbols of the failing
  condition (their lines; or that there is none), and the assumption that makes the proof go through: candidate
  facts ``S % d == 0`` for each size symbol ``S`` of the condition (and all of them together), smallest ``d``
  first, each confirmed by Z3 (the violation with the fact added is unsat, and the fact is consistent with the
  kernel's assumptions). A declared assumption on that symbol is then too weak, and blamed at its line;
* **declarations** (`smem_blame`, `register_blame`): every shared allocation with its bytes (the carve of
  `argus.atoms.smem.SharedCarve`, so alignment padding counts) and the allocation at which the running total
  crosses the budget, or ``blocks_per_sm`` (the ``T.grid`` line) when the block would fit alone on the SM;
  likewise the fragment allocation at which the registers live at the peak cross the budget;
* **misplaced statements** (`stale_read_blame`): for a ``cp.async`` read before its copy landed, the latest
  ``T.async_wait`` before the read when the copy's group was committed there but the wait leaves it pending
  (a wait count too loose), else the ``T.async_commit`` that closes the copy's group only after that wait (a
  hoisted or misplaced commit), or the copy itself when no commit follows it;
* **unknowns** (`pin_blame`): which problem size, pinned to a small value, lets a solver-undecided query be
  decided (each free symbol pinned in turn, within a small resource budget).

A fix is stated only when Z3 proved it (assumptions) or it is arithmetic on the same numbers the check used
(budgets); otherwise the blame says what is in effect and no fix.
"""

from __future__ import annotations

from typing import Any

import z3

from argus.atoms.smem import SharedCarve
from argus.ir.expr import SourceLoc, Var, free_vars
from argus.verify import smt
from argus.verify.report import Blame, Verdict

#: Candidate divisors for an alignment assumption ``S % d == 0``, smallest first.
DIVISORS = (2, 4, 8, 16, 32, 64, 128)
#: Z3's budget for one query of the search for a fix or a pin (the search is advice: it may give up).
SEARCH_RLIMIT = 5_000_000


def _symbols(ctx: Any, terms: list[Any]) -> list[Var]:
    """The kernel's size symbols that occur in the z3 `terms`, in the kernel's order."""
    names: set[str] = set()
    seen: set[int] = set()
    todo = list(terms)
    while todo:
        t = todo.pop()
        if not z3.is_expr(t) or t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            names.add(t.decl().name())
        todo.extend(t.children())
    return [v for v in ctx.kernel.shape_vars if v.name in names and v.name not in ctx.pinned]


def declared(ctx: Any, symbols: list[Var]) -> list[tuple[SourceLoc | None, Any]]:
    """The ``T.assume`` declarations (location, condition) that constrain any of `symbols`."""
    k = ctx.kernel
    locs = tuple(getattr(k, "assumption_locs", ())) or (None,) * len(k.assumptions)
    names = {v.name for v in symbols}
    out = []
    for cond, loc in zip(k.assumptions, locs, strict=False):
        if loc is not None and names & {v.name for v in free_vars(cond)}:
            out.append((loc, cond))
    return out


def _quiet_solve(ctx: Any, constraints: list[Any], violation: Any) -> Verdict:
    saved = ctx.rlimit
    ctx.rlimit = min(saved, SEARCH_RLIMIT)
    try:
        return ctx.solve(constraints, violation).verdict
    finally:
        ctx.rlimit = saved


def assumption_blame(ctx: Any, constraints: list[Any], violation: Any, model: Any, what: str) -> Blame | None:
    """The blame for a violation that needs a problem size the assumptions allow: the assumptions in effect on
    its symbols and, where one is found and proved, the assumption that excludes every violating size. None when
    the violation does not depend on the sizes (it happens for every allowed size, block and iteration)."""
    symbols = _symbols(ctx, [violation])
    if not symbols or _quiet_solve(ctx, constraints, z3.Not(violation)) != Verdict.VIOLATED:
        return None
    in_effect = declared(ctx, symbols)
    values = {v.name: smt.model_int(model, ctx.shape_terms[v]) for v in symbols} if model is not None else {}
    witness = ", ".join(f"{k}={v}" for k, v in values.items())
    related = tuple((loc, _stmt(loc)) for loc, _ in in_effect)
    fix, fixed = _search_fix(ctx, constraints, violation, symbols)
    names = " and ".join(v.name for v in symbols)
    if fix is None:
        why = f"the assumptions on {names} allow {witness}, for which {what}; no divisibility fact on them excludes it"
        return Blame(None, why if in_effect else f"no T.assume on {names}: " + why, None, related)
    fixed_names = {v.name for v in fixed}
    # a declared divisibility fact on a symbol of the fix is the assumption that is too weak
    weak = [(loc, c) for loc, c in in_effect if fixed_names & _mod_symbols(c)]
    text = f'declare T.assume("{fix}")'
    if weak:
        loc = weak[-1][0]
        why = f"this assumption is too weak: it allows {witness}, for which {what}; {fix} is needed"
        return Blame(loc, why, text + " instead", related)
    return Blame(None, f"no T.assume on {' and '.join(sorted(fixed_names))}: {witness} is allowed, for which {what}",
                 text, related)  # fmt: skip


def _mod_symbols(e: Any) -> set[str]:
    """The size symbols that occur under a ``%`` in the condition `e`."""
    from argus.ir.expr import BinaryOp, BinOp

    out: set[str] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, BinOp):
            if x.op == BinaryOp.MOD:
                out |= {v.name for v in free_vars(x.lhs)}
            todo += [x.lhs, x.rhs]
    return out


def _search_fix(ctx: Any, constraints: list[Any], violation: Any, symbols: list[Var]) -> tuple[str | None, list[Var]]:
    """The weakest candidate ``S % d == 0`` (one symbol, else all of them) proved to exclude the violation."""
    groups = [[v] for v in symbols] + ([list(symbols)] if len(symbols) > 1 else [])
    for d in DIVISORS:
        for group in groups:
            fact = z3.And(*[smt.mod(ctx.shape_terms[v], d) == 0 for v in group])
            if _quiet_solve(ctx, constraints + [fact], violation) != Verdict.VERIFIED:
                continue
            if _quiet_solve(ctx, [], fact) != Verdict.VIOLATED:  # vacuous: no size satisfies it and the rest
                continue
            return " and ".join(f"{v.name} % {d} == 0" for v in group), group
    return None, []


def _stmt(loc: SourceLoc | None) -> str:
    """The statement at `loc`, without a trailing comment."""
    if loc is None or not loc.text:
        return "<no statement>"
    return loc.text.split("  #")[0].strip()


# --- declarations -------------------------------------------------------------------------------------------


def smem_blame(kernel: Any, rows: list[tuple[str, int, Any]], budget: int, blocks: int, single: int) -> Blame:
    """`rows`: (name, bytes, site) of the shared allocations in carve order; `budget` the per-block budget with
    `blocks` blocks per SM, `single` the budget of one block alone."""
    carve = SharedCarve()
    related: list[tuple[SourceLoc | None, str]] = []
    crossing = None
    before = 0
    for name, nbytes, site in rows:
        start = carve.total
        carve.place(site.stmt.buffer)
        related.append((site.loc, f"{name}: {nbytes} B (total {carve.total} B)"))
        if crossing is None and carve.total > budget:
            crossing, before = (name, nbytes, site), start
    total = carve.total
    grid_loc = getattr(kernel, "grid_loc", None)
    if blocks > 1 and total <= single:
        why = (
            f"blocks_per_sm={blocks} divides the SM's shared memory: each block may use {budget} B, and this one "
            f"needs {total} B (alone on the SM it may use {single} B)"
        )
        fix = f"blocks_per_sm={max(1, single // max(total, 1))}, or free {total - budget} B"
        return Blame(grid_loc, why, fix, tuple(related))
    assert crossing is not None
    name, nbytes, site = crossing
    why = f"{name} ({nbytes} B) takes the block from {before} B to past the budget of {budget} B"
    return Blame(site.loc, why, f"free at least {total - budget} B (all allocations: {total} B)", tuple(related))


def register_blame(
    kernel: Any, live: list[tuple[str, int, Any]], budget: int, uncapped: int | None, blocks: int
) -> Blame:
    """`live`: (name, registers, allocation site) of the fragments live at the peak, in allocation order."""
    related = tuple((site.loc, f"{name}: {regs} registers per thread") for name, regs, site in live)
    total = sum(r for _, r, _ in live)
    if uncapped is not None and total <= uncapped:
        why = (
            f"blocks_per_sm={blocks} caps every thread at {budget} registers (__launch_bounds__); the fragments live "
            f"here need {total}"
        )
        return Blame(getattr(kernel, "grid_loc", None), why, f"blocks_per_sm=1, or free {total - budget}", related)
    acc = 0
    for name, regs, site in live:
        if acc + regs > budget:
            why = f"{name} ({regs} registers) takes the live fragments from {acc} to past the budget of {budget}"
            return Blame(site.loc, why, f"free at least {total - budget} registers per thread", related)
        acc += regs
    return Blame(None, f"{total} registers live, budget {budget}", None, related)


# --- misplaced cp.async statements ----------------------------------------------------------------------------


def stale_read_blame(ctx: Any, model: Any, w: Any, r: Any, ew: dict, er: dict, group: Any, same: bool) -> Blame | None:
    """For a stale read of a ``cp.async`` copy (`w` at `ew`, `r` at `er`, in `model`): the wait, commit or copy
    that is misplaced. `same`: the reader issued the copy itself (else the wait before the latest barrier counts)."""
    from argus.ir.nodes import AsyncCommit, AsyncWait
    from argus.verify.checks.races import common_loops, is_barrier
    from argus.verify.program import count_before, latest_before

    prog = ctx.analysis.program

    def active(alternatives: list) -> tuple[Any, dict] | None:
        for guard, site, env in alternatives:
            if smt.model_bool(model, guard):
                return site, env
        return None

    def is_wait(s: Any) -> bool:
        return isinstance(s, AsyncWait)

    point = (r.site, er)
    if not same:
        bar = active(latest_before(prog, r.site, er, is_barrier))
        if bar is None:
            own = active(latest_before(prog, r.site, er, is_wait))
            why = "no T.barrier between the wait and the read: it lands this thread's copies, not the other threads'"
            if own is None:
                why = "no T.async_wait and T.barrier before this read: other threads' cp.async copies are not visible"
            return Blame((own[0] if own else r.site).loc, why, "T.barrier() after the T.async_wait, before the read")
        point = bar
    commit = _closing_commit(prog, w.site)
    if commit is None:
        why = "no T.async_commit follows this copy: its group is never closed, so no T.async_wait waits for it"
        return Blame(w.site.loc, why, "T.async_commit() after the copies of a stage")
    if commit.index < w.site.index and w.site.loops and w.site.loops[-1] in commit.loops:
        why = (
            "this commit comes before the copies of its loop body, so each iteration's copies are closed only by the "
            "next iteration's commit: their group is one later than the T.async_wait's count assumes"
        )
        return Blame(commit.loc, why, "T.async_commit() right after the copies it should close")
    wait = active(latest_before(prog, point[0], point[1], is_wait))
    if wait is None:
        if point[0] is r.site:  # the wait belongs before the barrier that precedes the read, if there is one
            point = active(latest_before(prog, r.site, er, is_barrier)) or point
        where = "this barrier" if point[0] is not r.site else "this read"
        fix = "T.async_wait(n) (n: the groups committed after the copy's) then T.barrier() before the read"
        return Blame(point[0].loc, f"no T.async_wait before {where} after the copy was committed", fix)
    wsite, wenv = wait
    g = smt.model_int(model, group)
    committed = smt.model_int(model, count_before(wsite, wenv, lambda s: isinstance(s, AsyncCommit)))
    if g >= committed:
        why = (
            f"this commit closes the copy's group (group {g}) only after the T.async_wait at line "
            f"{wsite.loc.line if wsite.loc else '?'}, which therefore cannot wait for it"
        )
        return Blame(commit.loc, why, "T.async_commit() between the copies and the wait")
    pending = wsite.stmt.pending
    same_iteration = all(
        smt.model_int(model, ew[lp.var]) == smt.model_int(model, er[lp.var]) for lp in common_loops(w.site, r.site)
    )
    if committed - g - 1 == 0 and same_iteration and w.site.index < r.site.index:
        why = (
            "this copy fills the stage that the same iteration reads: only waiting for every group (T.async_wait(0)) "
            "would land it, which leaves nothing in flight; the copy's tile or stage (the prefetch distance) is wrong"
        )
        return Blame(w.site.loc, why, None)
    why = (
        f"T.async_wait({pending}) leaves the newest {pending} group(s) pending; {committed} are committed here and "
        f"the copy's group {g} is one of them, so it may not have landed"
    )
    return Blame(wsite.loc, why, f"T.async_wait({committed - g - 1}) here (the groups committed after the copy's)")


def _closing_commit(prog: Any, wsite: Any) -> Any:
    """The commit that closes the group of the copy at `wsite`: the next commit in program order after it in its
    own loop body, else the first one of that body (the next iteration's), else the next one after the loop."""
    from argus.ir.nodes import AsyncCommit

    commits = [s for s in prog.sites if isinstance(s.stmt, AsyncCommit)]
    loops = list(wsite.loops)
    after = [s for s in commits if s.index > wsite.index and list(s.loops)[: len(loops)] == loops]
    if after:
        return after[0]
    while loops:
        inner = loops[-1]
        body = [s for s in commits if inner in s.loops]
        if body:
            return body[0]
        loops.pop()
        later = [s for s in commits if s.index > wsite.index and list(s.loops)[: len(loops)] == loops]
        if later:
            return later[0]
    return None


# --- unknowns ---------------------------------------------------------------------------------------------------


#: At most this many solver-undecided queries of one kernel are searched for a deciding pin, each trying at most
#: `PIN_SYMBOLS` size symbols at `PIN_VALUES`; each try gets the kernel's own resource budget, capped at `PIN_RLIMIT`.
PIN_SEARCHES = 3
PIN_SYMBOLS = 4
PIN_VALUES = (128,)
PIN_RLIMIT = 50_000_000


def pin_blame(ctx: Any, constraints: list[Any], violation: Any, q: Any = None) -> Blame | None:
    """For a query the solver could not decide: the size symbols of the query that, pinned to a small value (with
    ``--shape``), let the same query be decided within the same budget (each pinned alone). None once the kernel's
    `PIN_SEARCHES` searches are spent."""
    if ctx.pin_searches >= PIN_SEARCHES:
        return None
    ctx.pin_searches += 1
    symbols = _symbols(ctx, [violation, *constraints, *(q.side if q is not None else [])])
    decided: list[tuple[str, int, Verdict]] = []
    saved = ctx.rlimit
    ctx.rlimit = min(saved, PIN_RLIMIT)
    try:
        for v in symbols[:PIN_SYMBOLS]:
            for n in PIN_VALUES:
                pinned = ctx.shape_terms[v] == n
                if ctx.solve([], pinned).verdict != Verdict.VIOLATED:  # the assumptions exclude that size
                    continue
                got = ctx.solve([*constraints, pinned], violation, q)
                if got.verdict != Verdict.UNKNOWN:
                    decided.append((v.name, n, got.verdict))
                    break
    finally:
        ctx.rlimit = saved
    names = ", ".join(v.name for v in symbols) or "none"
    if not decided:
        why = f"the query's free size symbols are {names}; pinning one of them alone ({PIN_VALUES}) does not decide it"
        return Blame(None, why)
    found = ", ".join(f"{name}={n} ({verdict.value})" for name, n, verdict in decided)
    name, n, _ = decided[0]
    why = f"the query's free size symbols are {names}; pinned alone, these decide it: {found}"
    return Blame(None, why, f"verify with --shape {name}={n} (a proof for that size only)")


def lookback_blame(ctx: Any, finding: Any, rerun: Any, most: int = 8) -> Blame | None:
    """For an ``UNKNOWN_LOOKBACK`` finding: the loop it looked back along and the smallest look-back (up to `most`)
    with which `rerun(lookback)` (the same check, run again) no longer reports it at the same place."""
    import re

    from argus.ir.nodes import For

    m = re.search(r"iterations of loop (\w+)", finding.reason or "")
    loop = None
    if m:
        loops = [s for s in ctx.analysis.program.sites if isinstance(s.stmt, For) and s.stmt.var.name == m.group(1)]
        loop = loops[0] if loops else None
    loc = loop.loc if loop is not None else None
    for n in range(ctx.lookback + 1, most + 1):
        found = rerun(n)
        if not [f for f in found if f.code == finding.code and f.loc == finding.loc]:
            what = f"loop {m.group(1)}" if m else "the loop"
            violated = [f.code for f in found if f.verdict == Verdict.VIOLATED and f.loc == finding.loc]
            verdict = f"violated ({', '.join(violated)})" if violated else "proved"
            why = (
                f"the value was written more than {ctx.lookback} iteration(s) of {what} back; with a look-back of {n} "
                f"the same check is decided: {verdict}"
            )
            return Blame(loc, why, f"verify with lookback={n}")
    why = f"still undecided with a look-back of {most}: the value may come from any earlier iteration"
    return Blame(loc, why, None)
