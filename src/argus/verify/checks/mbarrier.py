"""mbarrier arrive counts (`MBARRIER_ARRIVE_COUNT`).

A phase of an mbarrier completes after `arrive_count` arrivals (and the announced TMA bytes). What an
arrival is follows the lowering: ``T.mbarrier_arrive`` is one arrival of the warp role (or block) that
executes it — the interpreter counts one arrival per execution, and the generated code lets the scope's
first thread arrive once (after a barrier over the scope for a release), or, for an arrival made per warpgroup
(`MbarrierArrive.per_warpgroup`, written by the deferred-release pass, which also multiplies the barrier's count),
the first thread of each warpgroup: that statement counts once per warpgroup of its role.
So the arrivals one phase
of a barrier receives are the ``T.mbarrier_arrive`` statements on it that run once per phase, over all
roles:

* a statement outside loops arrives once (the barrier's one phase); statements outside loops on different fixed
  elements of an array (``q_ready[0]``, ``q_ready[1]``) arrive on different barriers, each counted on its own;
* a release one iteration behind under ``k > 0`` plus the last stage's release after the loop (the deferred-release
  pass's; `roles._check_tails` proves that the two release every iteration exactly once, `Context.tail_releases`)
  counts as one arrival per iteration of that loop;
* a statement in a loop arrives once per iteration of the innermost enclosing loop whose variable picks
  the barrier (``full[s]`` with ``s = k % STAGES``: one arrival per phase of each barrier of the array), or
  of its innermost loop when the index is fixed; loops nested inside that one multiply the count by
  their (static) extents.

A ``T.if_`` *around* the phase loop (a persistent kernel's guard ``t < tiles`` around its pipeline) skips whole
iterations, that is whole phases, not arrivals of a phase, when every arrival statement on the barrier sits in
that one phase loop: such arrivals are counted.

Arrivals outside loops under ``T.if_`` conditions (since 2026-12-04: the attention kernel's second query block of a
pair, ``q_ready[1]``, loaded and awaited only where the pair has one) on fixed elements: for each element, the
arrivals that run are those whose branch conditions hold, so Z3 checks, for every block and size the assumptions
allow, that the arrivals that run number `arrive_count`, or none at all while no wait on the element runs (a barrier
never used). A block where some but not all arrive, or where a wait runs with no arrival, is `violated` with that
block and size; waits inside loops on such an element leave it not counted.

*Arrivals in sequence* (since session 71: a pipeline that loads its first stages before the loop and the stage
``k + STAGES - 1`` under ``T.if_(k + STAGES - 1 < k_tiles)`` inside it, the lineage's TMA rungs). A ring of S
barriers whose arrivals and waits name element ``X % S`` (or, outside loops, a constant element c < S) and whose
waits' phase is ``(X // S) % 2`` numbers each arrival and each wait by X, its *sequence number* (c for the constant
ones: the barrier's first phase): sequence j is phase j // S of barrier j % S. Where every arrival statement is
outside loops or in one loop, Z3 proves, for every block and size the assumptions allow, that no two arrivals that
run (two statements, or one statement in two iterations) have one sequence number (else two arrivals reach one phase:
`violated`, with the two), and that every wait that runs has an arrival that runs with its number (each site's
number a loop index plus a constant, inverted exactly: else the wait's phase never completes, `violated`, a
deadlock); every arrival statement alone makes `arrive_count` arrivals (a phase completed by several statements
together is not this model). A statement whose number is not of that form, or a query Z3 does not decide, leaves the
barrier not counted.

A barrier whose arrivals are mixed (some statements outside loops, some inside), or that are inside a ``T.if_``
within the phase loop (or around phase loops of different statements), or under a loop of symbolic extent nested in
the phase loop, and that is not a ring in sequence, is not counted (no finding: the interpreter's deadlock and
over-arrival checks cover it at run time).
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.expr import BinaryOp, BinOp, Const, Expr, free_vars
from argus.ir.nodes import Buffer, For, If, MbarrierArrive, MbarrierInit, MbarrierWait
from argus.verify import smt
from argus.verify.checks.once import _instance
from argus.verify.context import Context
from argus.verify.program import Site, barrier_element, first_thread, user_name
from argus.verify.report import Counterexample, Element, Finding, ThreadPoint, Verdict


def _phase_loop(site: Site) -> For | None:
    """The innermost loop around `site` whose variable picks the barrier (its innermost loop for a fixed index)."""
    loops = site.loops
    if not loops:
        return None
    index = barrier_element(site.stmt.barrier)  # type: ignore[attr-defined]
    used = free_vars(index) if isinstance(index, Expr) else set()
    return loops[max((i for i, lp in enumerate(loops) if lp.var in used), default=len(loops) - 1)]


def _ifs_inside(site: Site, loop: For | None) -> bool:
    """Is `site` inside a ``T.if_`` that is itself inside `loop` (every ``T.if_`` when `loop` is None)?"""
    inside = loop is None
    for f in site.frames:
        if f.owner is loop:
            inside = True
        elif inside and isinstance(f.owner, If):
            return True
    return False


def _per_phase(site: Site, outer_ifs_ok: bool = False) -> int | None:
    """Arrivals one phase of the barrier receives from the arrive statement at `site` (None: not counted).
    `outer_ifs_ok`: branches around the phase loop are allowed (every arrival on the barrier is in that loop)."""
    loops = site.loops
    phase = _phase_loop(site)
    if _ifs_inside(site, phase if outer_ifs_ok else None):
        return None
    if not loops:
        return 1
    phase_loop = loops.index(phase)  # type: ignore[arg-type]
    count = 1
    for lp in loops[phase_loop + 1 :]:
        if not isinstance(lp.extent, int):
            return None
        count *= lp.extent
    return count


def _arrivals(site: Site) -> int:
    """Arrivals one execution of the arrive statement at `site` makes: one, or one per warpgroup of its role for an
    arrival made per warpgroup (`MbarrierArrive.per_warpgroup`)."""
    each = site.stmt.per_warpgroup and site.role is not None  # type: ignore[attr-defined]
    return len(site.role.warpgroups) if each else 1  # type: ignore[union-attr]


def _violation(init_site: Site, buf: Buffer, first: Site, msg: str, total: int, element: int, **where: Any) -> Finding:
    """The `MBARRIER_ARRIVE_COUNT` finding of barrier `buf` (element `element`) receiving `total` arrivals a phase,
    its counterexample at `first`'s role and at the block and sizes of `where` (``block``, ``shapes``)."""
    init = init_site.stmt
    cex = Counterexample(
        code="MBARRIER_ARRIVE_COUNT",
        message=msg,
        op_loc=init.loc,
        program_point=f"{init.loc}",
        thread=ThreadPoint(first_thread(first.role), first.role.name if first.role else None),
        element=Element(user_name(buf), "mbarrier", element, (element,)),
        variables={"arrive_count": init.arrive_count, "arrivals_per_phase": total},  # type: ignore[attr-defined]
        **where,
    )
    details = {"arrive_count": init.arrive_count, "arrivals_per_phase": total}  # type: ignore[attr-defined]
    return Finding("MBARRIER_ARRIVE_COUNT", Verdict.VIOLATED, msg, loc=init.loc, counterexample=cex, details=details)


def _path(ctx: Context, site: Site) -> Any:
    """The condition under which `site` (outside loops) runs: its branches' conditions, taken or not."""
    conds = []
    for branch, taken in site.ifs:
        c = smt.boolean(smt.evaluate(branch.cond, ctx.base_env))
        conds.append(c if taken else z3.Not(c))
    return z3.And(*conds) if conds else z3.BoolVal(True)


def _conditional_arrivals(ctx: Context, buf: Buffer, init_site: Site, sites: list[Site]) -> tuple[Any, Any]:
    """(verdict, finding) for a barrier whose arrivals are outside loops on fixed elements, some under branches:
    per element, the arrivals that run number `arrive_count`, or none while no wait on it runs. (None, None) where
    a wait on such an element is inside a loop (not counted); a finding with the block and sizes where it fails."""
    init = init_site.stmt
    elements = _fixed_elements(sites)
    assert elements is not None
    waits = _waits(ctx, buf)
    wait_elements = _fixed_elements(waits)
    if wait_elements is None:
        return None, None
    for element in sorted(set(elements)):
        mine = [(x, _arrivals(x)) for x, e in zip(sites, elements, strict=True) if e == element]
        count = z3.Sum([z3.If(_path(ctx, x), smt.val(c), smt.val(0)) for x, c in mine])
        waited = z3.Or(*[_path(ctx, w) for w, e in zip(waits, wait_elements, strict=True) if e == element], False)
        wrong = z3.And(count != init.arrive_count, z3.Or(count != 0, waited))  # type: ignore[attr-defined]
        out = ctx.solve([], wrong)
        if out.verdict == Verdict.VERIFIED:
            continue
        if out.verdict == Verdict.UNKNOWN:
            return Verdict.UNKNOWN, None
        model = out.model
        got = smt.model_int(model, count)
        name = f"{user_name(buf)}[{element}]"
        effect = (
            "a wait on it runs and the phase never completes: it deadlocks"
            if got < init.arrive_count  # type: ignore[attr-defined]
            else "the extra arrivals complete the next phase early"
        )
        msg = (
            f"{name} is initialised with arrive_count={init.arrive_count}, but in this block {got} of its "  # type: ignore[attr-defined]
            f"arrivals under conditions run: {effect}"
        )
        where = {"block": ctx.block_values(model), "shapes": ctx.shape_values(model)}
        return Verdict.VIOLATED, _violation(init_site, buf, mine[0][0], msg, got, element, **where)
    return Verdict.VERIFIED, None


def _waits(ctx: Context, buf: Buffer) -> list[Site]:
    """The `T.mbarrier_wait` sites on barrier array `buf`."""
    return [
        x
        for x in ctx.analysis.program.sites
        if isinstance(x.stmt, MbarrierWait) and x.stmt.barrier.buffer is buf  # type: ignore[attr-defined]
    ]


def _fixed_elements(sites: list[Site]) -> list[int] | None:
    """The barrier element each arrival at `sites` names, where all are outside loops at constant indices; else None."""
    out = []
    for site in sites:
        index = barrier_element(site.stmt.barrier)  # type: ignore[attr-defined]
        if site.loops or (isinstance(index, Expr) and not isinstance(index, Const)):
            return None
        out.append(int(index.value) if isinstance(index, Const) else int(index))
    return out


def _sequence(site: Site, size: int) -> Any:
    """The sequence number of the arrival or wait at `site` on a ring of `size` barriers (module docstring): X for
    element ``X % size``, a constant element c < size outside loops; None otherwise."""
    index = barrier_element(site.stmt.barrier)  # type: ignore[attr-defined]
    if isinstance(index, int) or isinstance(index, Const):
        value = index if isinstance(index, int) else index.value
        return Const(value) if not site.loops and 0 <= value < size else None
    if (
        isinstance(index, BinOp)
        and index.op == BinaryOp.MOD
        and isinstance(index.rhs, Const)
        and index.rhs.value == size
    ):
        return index.lhs
    return None


def _shift(ctx: Context, site: Site, seq: Any) -> tuple[Any, bool] | None:
    """(c, exact) for the arrival at `site` with sequence number `seq`: c its number at loop index 0 (0 outside
    loops), `exact` whether Z3 proved the number *is* the index plus c for every index in range (then the instance at
    index ``target - c`` is the only one that can have number `target`). None for a site in more than one loop."""
    if len(site.loops) > 1:
        return None
    if not site.loops:
        return smt.val(0), True
    (loop,) = site.loops
    at_zero = dict(ctx.base_env)
    at_zero[loop.var] = smt.val(0)
    shift = smt.evaluate(seq, at_zero)
    free = z3.BitVec(f"seq.{loop.var.name}", smt.WIDTH)
    anywhere = dict(ctx.base_env)
    anywhere[loop.var] = free
    shifted = ctx.solve([ctx.loop_range(loop, free, anywhere)], smt.evaluate(seq, anywhere) != free + shift)
    return shift, shifted.verdict == Verdict.VERIFIED


def _runs_at(ctx: Context, site: Site, seq: Any, shift: Any, target: Any, suffix: str) -> Any:
    """The condition that the instance of `site` with sequence number `target` runs: its loop index ``target -
    shift`` (`_shift`), in range, its branches taken, its number `target`."""
    fixed = {site.loops[0].var: target - shift} if site.loops else None
    env, cons = _instance(ctx, site, ctx.base_env, suffix, fixed=fixed)
    return z3.And(*cons, smt.evaluate(seq, env) == target)


def _in_sequence(ctx: Context, buf: Buffer, init_site: Site, sites: list[Site]) -> tuple[Any, Any]:
    """(verdict, finding) for a ring of barriers whose arrivals run in sequence (module docstring), or (None, None)
    where the arrivals or waits are not of that form."""
    init = init_site.stmt
    size = buf.shape[0] if buf.shape and isinstance(buf.shape[0], int) else None
    waits = _waits(ctx, buf)
    if size is None or not waits or any(len(x.loops) > 1 for x in sites + waits):
        return None, None
    arrive_seq = [_sequence(x, size) for x in sites]
    wait_seq = [_sequence(x, size) for x in waits]
    if any(q is None for q in arrive_seq + wait_seq):
        return None, None
    for w, seq in zip(waits, wait_seq, strict=True):  # the wait's parity is its sequence number's phase's
        env, cons = _instance(ctx, w, ctx.base_env, ".wp")
        parity = smt.evaluate(w.stmt.phase, env)  # type: ignore[attr-defined]
        want = z3.URem(z3.UDiv(smt.evaluate(seq, env), smt.val(size)), smt.val(2))
        if ctx.solve(cons, parity != want).verdict != Verdict.VERIFIED:
            return None, None
    name = user_name(buf)
    if any(_arrivals(x) != init.arrive_count for x in sites):  # type: ignore[attr-defined]
        return None, None  # a phase completed by several statements' arrivals together: not this model
    # no two arrivals that run have one sequence number
    for i, (a, qa) in enumerate(zip(sites, arrive_seq, strict=True)):
        for b, qb in list(zip(sites, arrive_seq, strict=True))[i:]:
            if a is b and not a.loops:
                continue
            env_a, cons_a = _instance(ctx, a, ctx.base_env, ".sa")
            env_b, cons_b = _instance(ctx, b, ctx.base_env, ".sb")
            same = smt.evaluate(qa, env_a) == smt.evaluate(qb, env_b)
            if a is b:
                same = z3.And(same, z3.Or(*[env_a[lp.var] != env_b[lp.var] for lp in a.loops]))
            out = ctx.solve([*cons_a, *cons_b], same)
            if out.verdict == Verdict.UNKNOWN:
                return Verdict.UNKNOWN, None
            if out.verdict == Verdict.VIOLATED:
                j = smt.model_int(out.model, smt.evaluate(qa, env_a))
                msg = (
                    f"{name} receives two arrivals in phase {j // size} of {name}[{j % size}] (sequence number {j}: "
                    f"the arrivals at lines {a.loc.line if a.loc else '?'} and {b.loc.line if b.loc else '?'}), "
                    f"initialised with arrive_count={init.arrive_count}: the extra arrival completes the next phase "  # type: ignore[attr-defined]
                    "early, before its data"
                )
                where = {"block": ctx.block_values(out.model), "shapes": ctx.shape_values(out.model)}
                return Verdict.VIOLATED, _violation(init_site, buf, a, msg, 2 * _arrivals(a), j % size, **where)
    # every wait that runs has an arrival that runs with its sequence number
    shifts = [_shift(ctx, a, qa) for a, qa in zip(sites, arrive_seq, strict=True)]
    if any(sh is None for sh in shifts):
        return None, None
    exact = all(sh[1] for sh in shifts)  # type: ignore[index]
    for w, qw in zip(waits, wait_seq, strict=True):
        env_w, cons_w = _instance(ctx, w, ctx.base_env, ".sw")
        target = smt.evaluate(qw, env_w)
        runs = [
            _runs_at(ctx, a, qa, sh[0], target, f".sr{n}")  # type: ignore[index]
            for n, (a, qa, sh) in enumerate(zip(sites, arrive_seq, shifts, strict=True))
        ]
        out = ctx.solve(cons_w, z3.Not(z3.Or(*runs)))
        if out.verdict == Verdict.UNKNOWN or (out.verdict == Verdict.VIOLATED and not exact):
            return Verdict.UNKNOWN, None  # a miss of a number that is not an index's shift may be another instance
        if out.verdict == Verdict.VIOLATED:
            j = smt.model_int(out.model, target)
            msg = (
                f"the wait at line {w.loc.line if w.loc else '?'} on {name}[{j % size}] waits for its phase "
                f"{j // size} (sequence number {j}), which no arrival reaches: it never completes, the block "
                "deadlocks"
            )
            where = {"block": ctx.block_values(out.model), "shapes": ctx.shape_values(out.model)}
            return Verdict.VIOLATED, _violation(init_site, buf, w, msg, 0, j % size, **where)
    return Verdict.VERIFIED, None


def check_arrive_counts(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    inits: dict[Buffer, Site] = {}
    arrives: dict[Buffer, list[Site]] = {}
    for site in prog.sites:
        s = site.stmt
        if isinstance(s, MbarrierInit):
            inits[s.barriers.buffer] = site
        elif isinstance(s, MbarrierArrive):
            arrives.setdefault(s.barrier.buffer, []).append(site)
    findings: list[Finding] = []
    for buf, init_site in inits.items():
        start = time.perf_counter()
        sites = arrives.get(buf, [])
        init = init_site.stmt
        assert isinstance(init, MbarrierInit)
        if not sites:
            ctx.record("mbarrier arrive count", f"{user_name(buf)}: never arrived on", Verdict.VERIFIED, start)
            continue
        if ctx.tail_releases.get(id(buf)) == frozenset(id(s.stmt) for s in sites):
            # one iteration behind plus the last stage after the loop, proved by the protocol check to release each
            # iteration exactly once: one arrival of the releasing role per phase
            sites = [max(sites, key=lambda s: len(s.loops))]  # the release inside the pipelined loop
            counts: list[int | None] = [1]
        else:
            counts = []
        same_loop = len({id(_phase_loop(s)) for s in sites}) == 1 and _phase_loop(sites[0]) is not None
        counts = counts or [_per_phase(s, outer_ifs_ok=same_loop) for s in sites]
        if any(c is None for c in counts) and _fixed_elements(sites) is not None:  # arrivals under branches
            verdict, finding = _conditional_arrivals(ctx, buf, init_site, sites)
            if finding is not None:
                findings.append(finding)
            if verdict is None:
                ctx.record_not_checked(
                    "mbarrier arrive count", user_name(buf), "arrivals under conditions with a wait in a loop", start
                )
            else:
                ctx.record("mbarrier arrive count", f"{user_name(buf)}: under conditions", verdict, start)
            continue
        # an arrival made per warpgroup (`MbarrierArrive.per_warpgroup`) is one arrival of each warpgroup of its role
        counts = [c * _arrivals(s) if c is not None else c for s, c in zip(sites, counts, strict=True)]
        if any(c is None for c in counts) or len({bool(s.loops) for s in sites}) > 1:
            verdict, finding = _in_sequence(ctx, buf, init_site, sites)
            if finding is not None:
                findings.append(finding)
            if verdict in (Verdict.VERIFIED, Verdict.VIOLATED):  # undecided: not checked, as before
                ctx.record(
                    "mbarrier arrive count", f"{user_name(buf)}: one arrival a phase, in sequence", verdict, start
                )
                continue
            why = "arrivals under conditions, or inside and outside a loop, that no protocol check has counted"
            ctx.record_not_checked("mbarrier arrive count", user_name(buf), why, start)
            continue
        elements = _fixed_elements(sites)
        if elements is not None and len(set(elements)) > 1:
            # arrivals outside loops on fixed, different elements of the array: each element's phase gets its own
            per_element: dict[int, list[tuple[Site, int]]] = {}
            for site, e, c in zip(sites, elements, counts, strict=True):
                per_element.setdefault(e, []).append((site, c))  # type: ignore[arg-type]
            pairs = max(per_element.values(), key=lambda g: abs(sum(c for _, c in g) - init.arrive_count))
            sites, counts = [x for x, _ in pairs], [c for _, c in pairs]
        total = sum(c for c in counts if c is not None)
        if total == init.arrive_count:
            ctx.record("mbarrier arrive count", f"{user_name(buf)}: {total} per phase", Verdict.VERIFIED, start)
            continue
        name = user_name(buf)
        who = ", ".join(
            f"{s.role.name if s.role else 'the block'} at line {s.loc.line if s.loc else '?'}"
            + (f" (x{c})" if c != 1 else "")
            for s, c in zip(sites, counts, strict=True)
        )
        effect = (
            "the phase never completes: every wait on it deadlocks"
            if total < init.arrive_count
            else "the extra arrivals complete the next phase early, before its data or its release"
        )
        msg = (
            f"{name} is initialised with arrive_count={init.arrive_count}, but {total} arrival(s) reach each "
            f"phase ({who}; one per T.mbarrier_arrive of a role): {effect}"
        )
        any_block = {v.name: 0 for v in ctx.kernel.block_vars}  # the same in every one
        findings.append(_violation(init_site, buf, sites[0], msg, total, 0, block=any_block))
        ctx.record("mbarrier arrive count", f"{name}: {total} per phase", Verdict.VIOLATED, start)
    return findings
