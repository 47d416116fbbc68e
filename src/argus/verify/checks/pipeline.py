"""Reads of asynchronous copies before they landed (`PIPELINE_STALE_READ`).

A ``cp.async`` copy issued by thread ``w`` joins the group that ``w``'s next commit closes; its group
number is the number of commits ``w`` executed before it (`program.count_before`, symbolic in the
loop variables). A ``cp.async.wait_group n`` at a point where ``c`` groups were committed has landed
groups ``0 .. c-n-1``. A read of the copy's destination by thread ``r`` is stale unless

* ``r == w`` and the latest wait before the read landed the copy's group, or
* ``r != w`` and the latest wait before the latest barrier before the read landed it.

"Latest" is found structurally for all iterations at once (`program.latest_before`): in the loop
body before the point, else at the end of the previous iteration, else before the loop. One query
per (read, asynchronous write) pair asks for an instance of the write before the read, at the same
offset, whose group has not landed.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.nodes import AsyncCommit, AsyncWait, Space
from argus.verify import smt
from argus.verify.access import accesses
from argus.verify.blame import stale_read_blame
from argus.verify.checks.races import access_report, common_loops, instance, is_barrier
from argus.verify.context import Context
from argus.verify.program import Site, Unsupported, count_before, latest_before, user_name
from argus.verify.report import Counterexample, Finding, Verdict, undecided


def _is_commit(s: Any) -> bool:
    return isinstance(s, AsyncCommit)


def _is_wait(s: Any) -> bool:
    return isinstance(s, AsyncWait)


def landed(ctx: Context, site: Site, env: dict) -> Any:
    """How many cp.async groups of this thread have landed when it reaches `site` at `env`."""
    prog = ctx.analysis.program
    term = smt.val(0)
    for guard, q, qenv in reversed(latest_before(prog, site, env, _is_wait)):
        c = count_before(q, qenv, _is_commit) - q.stmt.pending  # type: ignore[attr-defined]
        term = z3.If(guard, c, term)
    return term


def visible(ctx: Context, site: Site, env: dict) -> Any:
    """How many of *another* thread's cp.async groups are visible at `site`: those landed at that
    thread's latest wait before the latest barrier before `site`."""
    prog = ctx.analysis.program
    term = smt.val(0)
    for guard, b, benv in reversed(latest_before(prog, site, env, is_barrier)):
        term = z3.If(guard, landed(ctx, b, benv), term)
    return term


def before(w: Site, r: Site, ew: dict, er: dict) -> list[tuple[str, list[Any]]]:
    """Scenarios in which the instance of `w` at `ew` executes before that of `r` at `er`."""
    common = common_loops(w, r)
    out: list[tuple[str, list[Any]]] = []
    if w.index < r.index:
        out.append(("earlier in the same iteration", [ew[lp.var] == er[lp.var] for lp in common]))
    for d, loop in enumerate(common):
        cons = [ew[lp.var] == er[lp.var] for lp in common[:d]]
        cons.append(smt.val(ew[loop.var]) < smt.val(er[loop.var]))
        out.append((f"an earlier iteration of {loop.var.name}", cons))
    return out


def check_stale_reads(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    findings: list[Finding] = []
    acc = [a for a in accesses(prog) if a.ref.buffer.space == Space.SHARED]
    reads = [a for a in acc if a.kind == "read"]
    writes = [a for a in acc if a.kind == "write" and a.mode == "cp.async"]
    for r in reads:
        for w in writes:
            if r.ref.buffer is not w.ref.buffer:
                continue
            start = time.perf_counter()
            er, cr, tr, vr, offr, absr = instance(ctx, r, "_r")
            ew, cw, tw, vw, offw, absw = instance(ctx, w, "_w")
            try:
                group = count_before(w.site, ew, _is_commit)
                stale = z3.If(
                    smt.val(absr) == smt.val(absw),
                    group >= landed(ctx, r.site, er),
                    group >= visible(ctx, r.site, er),
                )
            except (Unsupported, smt.EncodingError) as e:
                findings.append(
                    Finding(
                        "UNKNOWN_STATEMENT",
                        Verdict.UNKNOWN,
                        f"cannot count cp.async groups for {r.site.loc}",
                        loc=r.site.loc,
                        reason=str(e),
                    )
                )
                continue
            verdict = Verdict.VERIFIED
            for describe, order in before(w.site, r.site, ew, er):
                out = ctx.solve(cr + cw + order, z3.And(offr == offw, stale))
                if out.verdict == Verdict.UNKNOWN:
                    findings.append(undecided(out, "stale-read check undecided", loc=r.site.loc))
                    verdict = Verdict.UNKNOWN
                    continue
                if out.verdict != Verdict.VIOLATED:
                    continue
                m = out.model
                rw = access_report(ctx, m, w, ew, tw, vw, offw)
                rr = access_report(ctx, m, r, er, tr, vr, offr)
                g = smt.model_int(m, group)
                same = rw.thread.thread == rr.thread.thread  # type: ignore[union-attr]
                need = smt.model_int(m, landed(ctx, r.site, er) if same else visible(ctx, r.site, er))
                msg = (
                    f"read of {user_name(r.ref.buffer)}[{rr.element.index}] before the cp.async copy that writes it "  # type: ignore[union-attr]
                    f"landed: the copy is in group {g}, and only groups below {max(need, 0)} are "
                    f"{'complete' if same else 'complete and made visible by a barrier'} at the read "
                    f"(the copy was issued {describe})"
                )
                cex = Counterexample(
                    code="PIPELINE_STALE_READ",
                    message=msg,
                    op_loc=r.site.loc,
                    program_point=str(r.site.loc),
                    block=ctx.block_values(m),
                    shapes=ctx.shape_values(m),
                    element=rr.element,
                    accesses=(rw, rr),
                    variables={"copy's group": g, "groups landed at the read": max(need, 0)},
                )
                blame = stale_read_blame(ctx, m, w, r, ew, er, group, same)
                findings.append(
                    Finding(
                        "PIPELINE_STALE_READ", Verdict.VIOLATED, msg, loc=r.site.loc, counterexample=cex, blame=blame
                    )
                )
                verdict = Verdict.VIOLATED
                break
            ctx.record("stale read", f"{r.site.loc} / {w.site.loc}", verdict, start)
    return findings
