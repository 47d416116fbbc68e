"""Shared-memory races between barriers (`RACE_WRITE_WRITE`, `RACE_READ_WRITE`, `PIPELINE_OVERWRITE`).

Two accesses race when two *different* threads touch the same physical shared-memory offset, at
least one writes, and no barrier separates them. Which pairs of dynamic instances can share a
barrier interval is decided from the program's structure, for all iterations at once:

* same iterations of all common loops: no block barrier lies between the two statements;
* iteration ``j`` and a later iteration ``j'`` of a common loop: no barrier after the earlier
  statement or before the later one in the loop body, and ``j' = j + 1`` as soon as the body has a
  barrier at all.

A barrier inside a branch that holds neither statement separates them where it runs, when its condition is the
same for every thread (then the block runs it or skips it together: `T.if_(j > 0)`); under a condition of the
thread it separates nothing. Loops are assumed to run at least once. Then one Z3 query per pair and relation
asks for threads, values and iterations with equal offsets. A read–write race on a stage of a multi-stage
buffer selected by a loop variable is reported as `PIPELINE_OVERWRITE` (the stage is refilled while it is
being consumed). Asynchronous copies count at their issue here; that they land later is `checks.pipeline`'s
concern. Accesses in different warp roles are ordered by mbarriers, which this check does not model: they are
reported `unknown`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from argus.ir.expr import free_vars
from argus.ir.nodes import Barrier, BarrierKind, For, Gemm, If, Space, WgmmaWait
from argus.verify import smt
from argus.verify.access import Access, accesses, staged
from argus.verify.context import Context
from argus.verify.program import Program, Site, buffer_coords, shared_layout, user_name
from argus.verify.report import Access as AccessReport
from argus.verify.report import Counterexample, Element, Finding, ThreadPoint, Verdict, undecided


@dataclass
class Relation:
    """How the iterations of two statements' instances relate in one scenario."""

    describe: str
    constrain: Callable[[dict, dict], list[Any]]


def is_barrier(s: Any) -> bool:
    """A block barrier, or a named barrier (which separates the threads of the role it is in)."""
    return isinstance(s, Barrier) and s.kind in (BarrierKind.BLOCK, BarrierKind.NAMED)


def _separating(prog: Program, lo: int, hi: int, a: Site, b: Site, match: Callable[[Any], bool] = is_barrier) -> bool:
    """A barrier strictly between pre-order positions lo and hi that surely runs (not in a branch
    that does not contain both sites)."""
    return _barriers(prog, lo, hi, a, b, match)[0]


def _barriers(
    prog: Program, lo: int, hi: int, a: Site, b: Site, match: Callable[[Any], bool], loops: tuple = ()
) -> tuple[bool, list[tuple[Site, list]]]:
    """(whether a barrier strictly between pre-order positions lo and hi surely runs, the barriers there that run where
    branch conditions hold). A conditional one is kept when every branch around it that does not hold both sites
    has a condition of the sizes, the block and `loops` only (the same for every thread: the block runs the
    barrier or skips it together) and its loops are among `loops` (its condition is evaluated at a known
    iteration): ``(barrier site, [(If, taken), ...])``. A barrier under a branch that depends on the thread
    separates nothing."""
    common_ifs = {id(x) for x, _ in a.ifs} & {id(x) for x, _ in b.ifs}
    uniform = {id(v) for v in (*prog.kernel.shape_vars, *prog.kernel.block_vars, *(lp.var for lp in loops))}
    conditional: list[tuple[Site, list]] = []
    for site in prog.sites[lo + 1 : hi]:
        if not match(site.stmt):
            continue
        if site.role is not None and site.role is not a.role:
            continue
        own = [(x, taken) for x, taken in site.ifs if id(x) not in common_ifs]
        if not own:
            return True, []
        inside = len(site.loops) <= len(loops) and all(x is y for x, y in zip(site.loops, loops, strict=False))
        if inside and all(id(v) in uniform for x, _ in own for v in free_vars(x.cond)):
            conditional.append((site, own))
    return False, conditional


def _skipped(conditional: list[tuple[Site, list]], env: dict) -> list[Any]:
    """The conditions under which none of the `conditional` barriers (`_barriers`) runs, in iteration `env`."""
    return [z3.Not(z3.And(*smt.taken(own, env))) for _, own in conditional]


def common_loops(a: Site, b: Site) -> list[For]:
    out = []
    for x, y in zip(a.loops, b.loops, strict=False):
        if x is not y:
            break
        out.append(x)
    return out


def unordered(prog: Program, a: Site, b: Site, match: Callable[[Any], bool] = is_barrier) -> list[Relation]:
    """The ways an instance of `a` and one of `b` can share a barrier interval."""
    rels: list[Relation] = []
    common = common_loops(a, b)
    lo, hi = (a, b) if a.index <= b.index else (b, a)
    sure, between = _barriers(prog, lo.index, hi.index, a, b, match, tuple(common))
    if a is b or not sure:

        def same(e1: dict, e2: dict, common=common, between=between) -> list[Any]:
            # a barrier between them in a branch every thread takes alike separates them where it runs
            return [*(e1[lp.var] == e2[lp.var] for lp in common), *_skipped([] if a is b else between, e1)]

        rels.append(Relation("the same iteration", same))
    for d, loop in enumerate(common):
        lsite = prog.site(loop)
        body = tuple(common[: d + 1])
        pairs = [(a, b, True)] if a is b else [(a, b, True), (b, a, False)]
        for early, late, a_is_early in pairs:
            sure_after, after = _barriers(prog, early.index, lsite.end + 1, early, late, match, body)
            if sure_after:
                continue
            sure_before, before = _barriers(prog, lsite.index, late.index, early, late, match, body)
            if sure_before:
                continue
            any_barrier = _separating(prog, lsite.index, lsite.end + 1, early, late, match)

            def rel(
                e1: dict, e2: dict, d=d, loop=loop, a_is_early=a_is_early, any_barrier=any_barrier, after=after,
                before=before,
            ) -> list[Any]:  # fmt: skip
                ea, eb = (e1, e2) if a_is_early else (e2, e1)
                cons = [ea[lp.var] == eb[lp.var] for lp in common[:d]]
                j, j2 = smt.val(ea[loop.var]), smt.val(eb[loop.var])
                cons.append(j2 == j + 1 if any_barrier else j < j2)
                # the conditional barriers after the earlier one (at its iteration) and before the later one (at
                # its own) do not run
                return [*cons, *_skipped(after, ea), *_skipped(before, eb)]

            rels.append(
                Relation(
                    f"consecutive iterations of {loop.var.name}"
                    if any_barrier
                    else f"different iterations of {loop.var.name}",
                    rel,
                )
            )
    return rels


def offset_of(acc: Access, t: Any, v: Any, env: dict) -> tuple[Any, Any]:
    """(physical offset, valid) of value `v` of thread slot `t`."""
    win, valid = acc.window(t, v)
    b = buffer_coords(acc.ref, win, env)
    return smt.apply_layout(shared_layout(acc.ref), b), valid


def thread_env(ctx: Context, acc: Access, t: Any, env: dict) -> dict:
    env = dict(env)
    env[ctx.kernel.thread_var] = acc.absolute(ctx.analysis.program, t)
    return env


def instance(ctx: Context, acc: Access, suffix: str) -> tuple[dict, list[Any], Any, Any, Any, Any]:
    """Fresh loop variables, thread slot and value for one instance of `acc`: (env, constraints,
    thread slot, value, offset, absolute thread)."""
    env, cons = ctx.loop_env(acc.site, suffix=suffix)
    t, v = smt.fresh(f"t{suffix}"), smt.fresh(f"v{suffix}")
    cons += [smt.in_range(t, 0, acc.threads), smt.in_range(v, 0, acc.values)]
    env = thread_env(ctx, acc, t, env)
    off, valid = offset_of(acc, t, v, env)
    if valid is not True:
        cons.append(valid)
    cons += smt.taken(acc.site.ifs, env)  # the instance runs only where its branches are taken
    return env, cons, t, v, off, acc.absolute(ctx.analysis.program, t)


def in_flight(acc: Access) -> int:
    """The wgmma groups `acc` leaves in flight after its statement: a read of an asynchronous `Gemm`'s shared operand
    (``wait_group P``, `Gemm.pending`) goes on after the statement, until a later wait retires it; 0 otherwise."""
    if acc.kind != "read" or not isinstance(acc.site.stmt, Gemm):
        return 0
    return int(acc.site.stmt.pending or 0)


def retirement(prog: Program, acc: Access) -> tuple[Site, int] | str:
    """Where the reads of asynchronous `acc` (`in_flight`: wait_group P) retire, as (the statement, d): the group its
    MMA issues at iteration j of its innermost loop is retired when that statement runs at iteration j + d. The
    candidates are the MMA's own wait (the same statement, d = P: P newer groups issued by then) and every
    ``wgmma.wait_group q`` at the top of the loop's body (d = q after the MMA in the body, q + 1 before it); the
    first in program order wins. This needs the MMA to be the only one of its loop's body, outside branches there,
    and a wait of 0 after the loop (which retires the last iterations' reads); otherwise why not (a string: the
    caller reports the check unknown)."""
    loops = acc.site.loops
    if not loops:
        return "it is outside a loop"
    loop = prog.site(loops[-1])
    inside = [x for x in prog.sites[loop.index + 1 : loop.end + 1] if isinstance(x.stmt, Gemm)]
    if len(inside) != 1:
        return f"its loop issues {len(inside)} MMAs an iteration"
    depth = [f.owner for f in acc.site.frames].index(loops[-1])
    if any(isinstance(f.owner, If) for f in acc.site.frames[depth + 1 :]):
        return "it sits in a branch of its loop"
    after = [x for x in prog.sites[loop.end + 1 :] if isinstance(x.stmt, WgmmaWait) and x.stmt.pending == 0]
    if not after:
        return "no wgmma wait of 0 follows its loop"
    best = (in_flight(acc), acc.site.index, acc.site)
    for x in prog.sites[loop.index + 1 : loop.end + 1]:
        top = len(x.frames) == depth + 1 and x.frames[depth].owner is loops[-1]
        if top and isinstance(x.stmt, WgmmaWait):
            d = int(x.stmt.pending) + (0 if x.index > acc.site.index else 1)
            best = min(best, (d, x.index, x), key=lambda c: (c[0], c[1]))
    return best[2], best[0]


def retired_instance(
    ctx: Context, acc: Access, suffix: str, where: tuple[Site, int]
) -> tuple[dict, list[Any], Any, Any, Any, Any]:
    """As `instance`, for the *retirement* of asynchronous read `acc` (`retirement`: `where`, the statement that
    retires it and d): the loop variables are those of the iteration at which that statement retires the read, the
    offset the one read d iterations earlier. Ordering the retirement against a write (`unordered` on the
    retiring statement) asks whether the write may come before the read has finished."""
    loop = acc.site.loops[-1]
    site, d = where
    env, cons = ctx.loop_env(site, suffix=suffix)
    t, v = smt.fresh(f"t{suffix}"), smt.fresh(f"v{suffix}")
    cons += [smt.in_range(t, 0, acc.threads), smt.in_range(v, 0, acc.values)]
    env = thread_env(ctx, acc, t, env)
    early = dict(env)
    early[loop.var] = smt.val(env[loop.var]) - d
    cons.append(smt.val(early[loop.var]) >= 0)  # the read was issued (the loop starts at 0)
    off, valid = offset_of(acc, t, v, early)
    if valid is not True:
        cons.append(valid)
    cons += smt.taken(acc.site.ifs, env)  # outside the loop (`retirement`): the same at both iterations
    return env, cons, t, v, off, acc.absolute(ctx.analysis.program, t)


def in_flight_window(acc: Access, where: tuple[Site, int], w: Site) -> Callable[[dict, dict], list[Any]]:
    """The constraint on (the read's env, `w`'s env): `w` runs after the asynchronous read `acc` was issued and
    before it retires (`retirement`: `where`), in the same iterations of the loops around both; nothing outside the
    read's loop is in flight (the wait after the loop retires it first)."""
    loop = acc.site.loops[-1]
    site, d = where

    def constrain(er: dict, ew: dict) -> list[Any]:
        common = common_loops(acc.site, w)
        if loop not in common:
            return [z3.BoolVal(False)]
        cons = [smt.val(er[lp.var]) == smt.val(ew[lp.var]) for lp in common if lp is not loop]
        jr, jw = smt.val(er[loop.var]), smt.val(ew[loop.var])
        cons.append(z3.Or(jw > jr, z3.And(jw == jr, z3.BoolVal(w.index > acc.site.index))))  # after the issue
        cons.append(z3.Or(jw < jr + d, z3.And(jw == jr + d, z3.BoolVal(w.index < site.index))))  # before retiring
        return cons

    return constrain


def access_report(ctx: Context, m: Any, acc: Access, env: dict, t: Any, v: Any, off: Any) -> AccessReport:
    win, _ = acc.window(t, v)
    coord = tuple(smt.model_int(m, c) for c in buffer_coords(acc.ref, win, env))
    thread = smt.model_int(m, acc.absolute(ctx.analysis.program, t))
    return AccessReport(
        acc.kind,
        acc.op + (" (asynchronous)" if acc.mode != "sync" else ""),
        acc.site.loc,
        ThreadPoint(thread, acc.site.role.name if acc.site.role else None),
        ctx.loop_values(m, acc.site, env),
        Element(user_name(acc.ref.buffer), "shared", smt.model_int(m, off), coord),
    )


def check_races(ctx: Context, ordered: set | None = None) -> list[Finding]:
    """`ordered`: (producer role id, consumer role id, buffer) whose accesses the proved mbarrier
    protocol orders (`roles.check_protocol`)."""
    ordered = ordered or set()
    prog = ctx.analysis.program
    findings: list[Finding] = []
    all_acc = [a for a in accesses(prog) if a.ref.buffer.space == Space.SHARED]
    cross_role_noted: set = set()
    for i, a1 in enumerate(all_acc):
        for a2 in all_acc[i:]:
            if a1.ref.buffer is not a2.ref.buffer or (a1.kind == "read" and a2.kind == "read"):
                continue
            buf = a1.ref.buffer
            start = time.perf_counter()
            if a1.site.role is not a2.site.role and a1.site.role is not None and a2.site.role is not None:
                r1, r2 = id(a1.site.role), id(a2.site.role)
                if (r1, r2, buf) in ordered or (r2, r1, buf) in ordered:
                    ctx.record("race", f"{user_name(buf)}: ordered by the mbarrier protocol", Verdict.VERIFIED, start)
                    continue
                if buf not in cross_role_noted:
                    cross_role_noted.add(buf)
                    findings.append(
                        Finding(
                            "UNKNOWN_WARP_ROLES",
                            Verdict.UNKNOWN,
                            f"accesses to {user_name(buf)} in different warp roles are ordered by mbarriers, "
                            "which the race check does not model",
                            loc=a2.site.loc,
                            reason=f"{a1.site.role.name} ({a1.site.loc}) and {a2.site.role.name} ({a2.site.loc})",
                            pin="run `argus interpret` (both schedules) for this kernel",
                        )
                    )
                continue
            if a1.mode == "tma" or a2.mode == "tma":
                continue  # the TMA unit is one agent; its ordering with readers is the mbarrier protocol's
            code = (
                "RACE_WRITE_WRITE"
                if a1.kind == a2.kind == "write"
                else ("PIPELINE_OVERWRITE" if staged(a1.ref, a1.site) or staged(a2.ref, a2.site) else "RACE_READ_WRITE")
            )
            if in_flight(a2) and not in_flight(a1):
                a1, a2 = a2, a1  # the asynchronous read first (`in_flight_scenarios`)
            found = False
            scenarios = [(rel.describe, rel.constrain, instance, a1.site) for rel in unordered(prog, a1.site, a2.site)]
            extra, unknown = in_flight_scenarios(prog, a1, a2)
            if unknown is not None:
                findings.append(unknown)
            scenarios += extra
            for describe, constrain, make, after in scenarios:
                other_thread = after is not None  # in flight, the MMA's own thread's write races with it too
                env1, c1, t1, v1, off1, abs1 = make(ctx, a1, "_1")
                env2, c2, t2, v2, off2, abs2 = instance(ctx, a2, "_2")
                cons = c1 + c2 + constrain(env1, env2)
                two = smt.val(abs1) != smt.val(abs2)
                out = ctx.solve([*cons, two], off1 == off2)
                if not other_thread and out.verdict == Verdict.VERIFIED:  # an MMA in flight: its own thread too
                    out = ctx.solve(cons, off1 == off2)
                if out.verdict == Verdict.UNKNOWN:
                    findings.append(undecided(out, f"race check on {user_name(buf)} undecided", loc=a2.site.loc))
                    continue
                if out.verdict != Verdict.VIOLATED:
                    continue
                m = out.model
                r1 = access_report(ctx, m, a1, env1, t1, v1, off1)
                r2 = access_report(ctx, m, a2, env2, t2, v2, off2)
                kind = "write-write" if code == "RACE_WRITE_WRITE" else "read-write"
                what = "possible " + kind + f" race on {user_name(buf)}[{r1.element.index}]"  # type: ignore[union-attr]
                if code == "PIPELINE_OVERWRITE":
                    what = (
                        f"stage of {user_name(buf)} overwritten while other threads read it: possible {kind} race on "
                        f"{user_name(buf)}[{r1.element.index}]"
                    )  # type: ignore[union-attr]
                msg = f"{what} ({describe}{', no barrier between' if other_thread else ''})"
                cex = Counterexample(
                    code=code,
                    message=msg,
                    op_loc=a2.site.loc,
                    program_point=f"{a1.site.loc} and {a2.site.loc}",
                    block=ctx.block_values(m),
                    shapes=ctx.shape_values(m),
                    element=r1.element,
                    accesses=(r1, r2),
                )
                findings.append(Finding(code, Verdict.VIOLATED, msg, loc=a2.site.loc, counterexample=cex))
                found = True
                break
            ctx.record(
                "race",
                f"{user_name(buf)}: {a1.site.loc} / {a2.site.loc}",
                Verdict.VIOLATED if found else Verdict.VERIFIED,
                start,
            )
    return findings


def in_flight_scenarios(prog: Program, r: Access, w: Access) -> tuple[list[tuple], Finding | None]:
    """The extra scenarios of asynchronous read `r` (`in_flight`) against write `w`, as ``(what, the iterations'
    relation, the read's instance, the statement the write must follow or None)``: the read still in flight when `w`
    runs (any thread's write, barriers between or not: they order the MMA's issue, not its reads; no statement to
    follow), and `w` after the read's retirement with no barrier between (`retired_instance`; the retiring statement
    to follow). Or the `UNKNOWN_ASYNC_READ` finding where the retirement cannot be placed (`retirement`). None for a
    read that is not asynchronous, or a write before it outside every loop around it (a prologue's)."""
    if not in_flight(r) or w.kind != "write":
        return [], None
    if not common_loops(r.site, w.site) and w.site.index < r.site.index:
        return [], None  # the write precedes the read outside every loop around it: never in flight
    where = retirement(prog, r)
    if isinstance(where, str):
        return [], Finding(
            "UNKNOWN_ASYNC_READ",
            Verdict.UNKNOWN,
            f"the asynchronous wgmma reading {user_name(r.ref.buffer)} at {r.site.loc} (wait_group {in_flight(r)}) "
            f"may still read it when {w.site.loc} writes it: where its reads retire is not placed ({where})",
            loc=w.site.loc,
            reason="an asynchronous read is placed when it is the only MMA of its loop's body",
        )

    def retired(ctx: Context, acc: Access, suffix: str) -> tuple:
        return retired_instance(ctx, acc, suffix, where)

    out: list[tuple] = [("the wgmma still reading, issued earlier", in_flight_window(r, where, w.site), instance, None)]
    out += [
        (f"{rel.describe}, after the wgmma's retirement", rel.constrain, retired, where[0])
        for rel in unordered(prog, where[0], w.site)
    ]
    return out, None
