"""TMA loads read in program order, outside warp roles (`PIPELINE_STALE_READ`, `MBARRIER_PHASE`).

Warp-specialized pipelines are proved by the mbarrier protocol (`argus.verify.roles`). A kernel may also issue
TMA loads and read their destination in program order (one thread issues, every thread waits on the stage's
mbarrier, then reads: ``gemm_tma_wgmma``). Writes take effect when issued in the data-flow model, so for such a
kernel something must show that the read waited for the load. For every read of a shared buffer that a TMA copy
outside any role writes, and every instance of that copy before the read at the same offset:

* the latest ``T.mbarrier_wait`` on the copy's mbarrier array before the read (structurally, for all
  iterations: `program.latest_before`) must exist, come after the copy was issued, and wait on the same
  mbarrier element the copy completes on — otherwise the read may see the stage before the bytes land
  (`PIPELINE_STALE_READ`, a counterexample);
* when the read sits in a ``T.pipeline(n, stages=S)`` loop over ``k`` and the wait is on element ``k % S``, the
  wait's parity must be ``(k // S) % 2``: the stage's (k // S)-th completion (`MBARRIER_PHASE`). This is the
  parity of the load of tile k when every element receives one expect-tx arrival per tile it is given, in tile
  order — the round-robin use of the stages that ``T.pipeline`` stands for; arrival counts per phase are
  `check_arrive_counts`'s job.

A wait whose parity cannot be related to a pipelined loop this way is reported ``UNKNOWN_MBARRIER_ORDER``
rather than verified.

The other direction (`PIPELINE_OVERWRITE`): a TMA load issued into a stage while another thread may still be
reading that stage from an earlier point — no barrier between the read and the issue (`races.unordered`, the
read first in program order) — overwrites data in use. The race check leaves TMA accesses to these checks.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.nodes import LoopKind, MbarrierWait, Space
from argus.verify import smt
from argus.verify.access import accesses
from argus.verify.checks.pipeline import before
from argus.verify.checks.races import access_report, common_loops, in_flight_scenarios, instance, unordered
from argus.verify.context import Context
from argus.verify.program import Unsupported, barrier_element, latest_before, user_name
from argus.verify.report import Counterexample, Finding, ThreadPoint, Verdict, undecided


def _index(ref: Any, env: dict) -> Any:
    return smt.evaluate(barrier_element(ref), env)


def _waits_on(bars: Any) -> Any:
    return lambda s: isinstance(s, MbarrierWait) and s.barrier.buffer is bars


def check_tma_program_order(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    findings: list[Finding] = []
    acc = [a for a in accesses(prog) if a.ref.buffer.space == Space.SHARED]
    writes = [a for a in acc if a.kind == "write" and a.mode == "tma" and a.site.role is None]
    reads = [a for a in acc if a.kind == "read" and a.site.role is None]
    for r in reads:
        for w in writes:
            if r.ref.buffer is not w.ref.buffer or w.site.stmt.mbarrier is None:
                continue
            start = time.perf_counter()
            bars = w.site.stmt.mbarrier.buffer
            er, cr, tr, vr, offr, _ = instance(ctx, r, "_r")
            ew, cw, tw, vw, offw, _ = instance(ctx, w, "_w")
            try:
                waits = latest_before(prog, r.site, er, _waits_on(bars))
                element_w = _index(w.site.stmt.mbarrier, ew)
                covered = []
                for guard, q, qenv in waits:
                    after_copy = [c for _, c in before(w.site, q, ew, qenv)]
                    issued_before_wait = z3.Or(*[z3.And(*c) if c else z3.BoolVal(True) for c in after_copy])
                    same_element = smt.val(_index(q.stmt.barrier, qenv)) == smt.val(element_w)
                    covered.append(z3.And(guard, issued_before_wait, same_element))
                ok = z3.Or(*covered) if covered else z3.BoolVal(False)
            except (Unsupported, smt.EncodingError) as e:
                findings.append(
                    Finding(
                        "UNKNOWN_MBARRIER_ORDER",
                        Verdict.UNKNOWN,
                        f"cannot relate the read at {r.site.loc} to the mbarrier wait of the TMA load",
                        loc=r.site.loc,
                        reason=str(e),
                    )
                )
                continue
            verdict = Verdict.VERIFIED
            for describe, order in before(w.site, r.site, ew, er):
                out = ctx.solve(cr + cw + order, z3.And(offr == offw, z3.Not(ok)))
                if out.verdict == Verdict.UNKNOWN:
                    findings.append(undecided(out, "TMA read-order check undecided", loc=r.site.loc))
                    verdict = Verdict.UNKNOWN
                    continue
                if out.verdict != Verdict.VIOLATED:
                    continue
                m = out.model
                rw = access_report(ctx, m, w, ew, tw, vw, offw)
                rr = access_report(ctx, m, r, er, tr, vr, offr)
                if not common_loops(w.site, r.site):
                    describe = "earlier, outside the reading loop"
                msg = (
                    f"read of {user_name(r.ref.buffer)}[{rr.element.index}] may see it before the TMA load that "  # type: ignore[union-attr]
                    f"writes it landed: no wait on {user_name(bars)}[{smt.model_int(m, element_w)}] (the element the "
                    f"load completes on) comes between the load (issued {describe}) and the read"
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
                )
                findings.append(
                    Finding("PIPELINE_STALE_READ", Verdict.VIOLATED, msg, loc=r.site.loc, counterexample=cex)
                )
                verdict = Verdict.VIOLATED
                break
            ctx.record("TMA read order", f"{r.site.loc} / {w.site.loc}", verdict, start)
    findings += _check_parities(ctx, writes)
    findings += _check_overwrites(ctx, reads, writes)
    return findings


def _check_overwrites(ctx: Context, reads: list[Any], writes: list[Any]) -> list[Finding]:
    """`PIPELINE_OVERWRITE` (module docstring). A read of an asynchronous wgmma (``wait_group P``) goes on after its
    statement (`races.in_flight`), so it is also checked as it is in flight: a TMA load into the same offset issued
    after the read's MMA and before the statement that retires it (the same statement P iterations later,
    `races.retirement`) overwrites it, whatever barriers lie between (they order the issue, not the asynchronous
    read); and one after the retirement needs a barrier after it, as a plain read does (`races.retired_instance`).
    Where the retirement cannot be placed the check is `unknown`."""
    prog = ctx.analysis.program
    findings: list[Finding] = []
    for w in writes:
        for r in reads:
            if r.ref.buffer is not w.ref.buffer or r.mode == "tma":
                continue
            start = time.perf_counter()
            # (what, the iterations' relation, the read's instance, the statement the write must follow or None)
            scenarios: list[tuple] = [
                (rel.describe, rel.constrain, instance, r.site) for rel in unordered(prog, r.site, w.site)
            ]
            extra, unknown = in_flight_scenarios(prog, r, w)
            if unknown is not None:
                findings.append(unknown)
                ctx.record("TMA overwrite", f"{w.site.loc} / {r.site.loc}", Verdict.UNKNOWN, start)
                continue
            scenarios += extra
            verdict = Verdict.VERIFIED
            for describe, constrain, make, after in scenarios:
                er, cr, tr, vr, offr, absr = make(ctx, r, "_r")
                ew, cw, tw, vw, offw, absw = instance(ctx, w, "_w")
                cons = cr + cw + constrain(er, ew)
                ordered = after is not None
                if ordered:  # a read in program order (or its retirement): the write after it, by another thread
                    orders = [z3.And(*o) if o else z3.BoolVal(True) for _, o in before(after, w.site, er, ew)]
                    if not orders:
                        continue
                    cons += [z3.Or(*orders), smt.val(absr) != smt.val(absw)]
                out = ctx.solve(cons, offr == offw)
                if out.verdict == Verdict.UNKNOWN:
                    findings.append(undecided(out, "TMA overwrite check undecided", loc=w.site.loc))
                    verdict = Verdict.UNKNOWN
                    continue
                if out.verdict != Verdict.VIOLATED:
                    continue
                m = out.model
                rr = access_report(ctx, m, r, er, tr, vr, offr)
                rw = access_report(ctx, m, w, ew, tw, vw, offw)
                what = "no barrier between the read and the load" if ordered else "the read is asynchronous"
                msg = (
                    f"TMA load into {user_name(w.ref.buffer)}[{rw.element.index}] while another thread may still be "  # type: ignore[union-attr]
                    f"reading it: {what} ({describe})"
                )
                cex = Counterexample(
                    code="PIPELINE_OVERWRITE",
                    message=msg,
                    op_loc=w.site.loc,
                    program_point=str(w.site.loc),
                    block=ctx.block_values(m),
                    shapes=ctx.shape_values(m),
                    element=rw.element,
                    accesses=(rr, rw),
                )
                findings.append(
                    Finding("PIPELINE_OVERWRITE", Verdict.VIOLATED, msg, loc=w.site.loc, counterexample=cex)
                )
                verdict = Verdict.VIOLATED
                break
            ctx.record("TMA overwrite", f"{w.site.loc} / {r.site.loc}", verdict, start)
    return findings


def _check_parities(ctx: Context, writes: list[Any]) -> list[Finding]:
    """Waits outside roles on a TMA load's mbarrier array: parity (k // S) % 2 on element k % S of a pipeline."""
    prog = ctx.analysis.program
    arrays = {id(w.site.stmt.mbarrier.buffer) for w in writes if w.site.stmt.mbarrier is not None}
    findings: list[Finding] = []
    for q in prog.sites:
        s = q.stmt
        if not isinstance(s, MbarrierWait) or q.role is not None or id(s.barrier.buffer) not in arrays:
            continue
        start = time.perf_counter()
        env, cons = ctx.loop_env(q, suffix="_q")
        pipes = [lp for lp in q.loops if lp.kind == LoopKind.PIPELINED]
        if not q.loops:
            findings += _check_straight_line(ctx, q, start)
            continue
        if not pipes:
            findings.append(
                Finding(
                    "UNKNOWN_MBARRIER_ORDER",
                    Verdict.UNKNOWN,
                    f"the parity of the mbarrier wait at {q.loc} is not related to a T.pipeline loop",
                    loc=q.loc,
                    reason="outside warp roles, waits on TMA barriers are checked inside T.pipeline loops only",
                )
            )
            continue
        loop = pipes[-1]
        step = _numbered_step(ctx, q, loop, env, cons)
        if step is None:
            # every earlier run of the pipeline (an enclosing loop's earlier iterations, or a `start`) used the same
            # barriers, and those runs are not numbered as one rotation: the phase of tile k is not counted here
            findings.append(
                Finding(
                    "UNKNOWN_MBARRIER_ORDER",
                    Verdict.UNKNOWN,
                    f"the parity of the mbarrier wait at {q.loc} depends on the iterations of the pipeline before this "
                    "run of it (an enclosing loop or T.pipeline's start)",
                    loc=q.loc,
                    reason="outside warp roles, waits are related to k % S for a pipeline that runs the rotation once",
                )
            )
            ctx.record("TMA wait parity", str(q.loc), Verdict.UNKNOWN, start)
            continue
        k, stages = step, loop.stages
        element = smt.val(_index(s.barrier, env))
        parity = smt.val(smt.evaluate(s.phase, env))
        # the wait is on element k % S; its parity must be the stage's (k // S)-th completion
        on_stage = element == smt.mod(k, stages)
        want = smt.mod(smt.floordiv(k, stages), 2)
        out = ctx.solve(cons, z3.And(on_stage, smt.mod(parity, 2) != want))
        other = ctx.solve(cons, z3.Not(on_stage))
        verdict = Verdict.VERIFIED
        if out.verdict == Verdict.VIOLATED:
            m = out.model
            kv = smt.model_int(m, k)  # the step in the barriers' rotation (the iteration itself for one run)
            here = {lp.var.name: smt.model_int(m, smt.val(env[lp.var])) for lp in q.loops}
            at = ", ".join(f"{name}={value}" for name, value in here.items())
            msg = (
                f"mbarrier wait on {user_name(s.barrier.buffer)}[{smt.model_int(m, element)}] at iteration "
                f"{at} waits for parity {smt.model_int(m, parity) % 2}, but the load of step {kv} "
                f"completes the stage's phase {kv // stages} (parity {(kv // stages) % 2})"
            )
            cex = Counterexample(
                code="MBARRIER_PHASE",
                message=msg,
                op_loc=q.loc,
                program_point=str(q.loc),
                block=ctx.block_values(m),
                shapes=ctx.shape_values(m),
                thread=ThreadPoint(0, None),  # every thread of the block waits there
                loops=here,
            )
            findings.append(Finding("MBARRIER_PHASE", Verdict.VIOLATED, msg, loc=q.loc, counterexample=cex))
            verdict = Verdict.VIOLATED
        elif other.verdict != Verdict.VERIFIED:
            findings.append(
                Finding(
                    "UNKNOWN_MBARRIER_ORDER",
                    Verdict.UNKNOWN,
                    f"the mbarrier wait at {q.loc} is not (provably) on stage {loop.var.name} % {stages}",
                    loc=q.loc,
                    reason="its parity cannot be related to the pipeline's tile order",
                )
            )
            verdict = Verdict.UNKNOWN
        ctx.record("TMA wait parity", str(q.loc), verdict, start)
    return findings


def _numbered_step(ctx: Context, q: Any, loop: Any, env: dict, cons: list[Any]) -> Any:
    """The wait's step in its barriers' rotation, as a term: the pipeline's own ``k`` where it runs the rotation
    once (no enclosing loop, start 0); ``start + k`` where its runs are numbered as one rotation — the pipeline sits
    directly (under no branch) in the body of one enclosing serial loop ``o`` from 0, every run has the same trip
    count ``E`` (free of ``o``), ``start == o * E`` (proved), and no wait on the same barrier array lies outside the
    pipeline: then the runs before this one waited ``o * E`` times, in the same round-robin order, and the step
    counts every wait since the kernel began (a block that walks its output tiles one after another, the rotation
    running on across them). None where neither holds."""
    from argus.ir.nodes import For, If

    at = q.loops.index(loop)
    if at == 0 and isinstance(loop.start, int) and loop.start == 0:
        return smt.val(env[loop.var])
    if at != 1 or q.role is not None:
        return None
    outer = q.loops[0]
    if outer.kind == LoopKind.PIPELINED or not (isinstance(outer.start, int) and outer.start == 0):
        return None
    frames = q.frames
    first = next(i for i, f in enumerate(frames) if f.owner is outer)
    last = next(i for i, f in enumerate(frames) if f.owner is loop)
    if any(isinstance(f.owner, If) for f in frames[first + 1 : last]):
        return None  # a branch between them: some runs may not happen
    extent = loop.extent
    if not isinstance(extent, int):
        from argus.ir.expr import free_vars

        if outer.var in free_vars(extent):
            return None
    bars = q.stmt.barrier.buffer
    for other in ctx.analysis.program.sites:
        w = other.stmt
        if isinstance(w, MbarrierWait) and w.barrier.buffer is bars and other.role is None:
            if loop not in [lp for lp in other.loops if isinstance(lp, For)]:
                return None  # a wait on these barriers outside the pipeline: the runs are not the only users
    start = smt.val(smt.evaluate(loop.start, env)) if not isinstance(loop.start, int) else smt.val(loop.start)
    runs = smt.val(env[outer.var]) * (smt.val(smt.evaluate(extent, env)) if not isinstance(extent, int) else extent)
    if ctx.solve(cons, start != runs).verdict != Verdict.VERIFIED:
        return None
    return start + smt.val(env[loop.var])


def _check_straight_line(ctx: Context, q: Any, start: float) -> list[Finding]:
    """A wait outside every loop, on a constant element with a constant parity: the arrivals on that element
    before it (none in a branch or loop) complete ``arrivals // arrive_count`` phases; the latest, which the
    wait needs, has parity ``(phases - 1) % 2``."""
    from argus.ir.nodes import MbarrierArrive, MbarrierInit

    prog = ctx.analysis.program
    s = q.stmt
    bars = s.barrier.buffer
    element = smt.static_int(barrier_element(s.barrier))
    parity = smt.static_int(s.phase)
    inits = [x.stmt for x in prog.sites if isinstance(x.stmt, MbarrierInit) and x.stmt.barriers.buffer is bars]
    arrivals = [
        x
        for x in prog.sites
        if isinstance(x.stmt, MbarrierArrive) and x.stmt.barrier.buffer is bars and x.index < q.index
    ]
    plain = all(not x.loops and not x.ifs for x in arrivals)
    elements = [smt.static_int(barrier_element(x.stmt.barrier)) for x in arrivals]
    if element is None or parity is None or len(inits) != 1 or not plain or None in elements:
        ctx.record("TMA wait parity", str(q.loc), Verdict.UNKNOWN, start)
        return [
            Finding(
                "UNKNOWN_MBARRIER_ORDER",
                Verdict.UNKNOWN,
                f"the parity of the mbarrier wait at {q.loc} cannot be counted",
                loc=q.loc,
                reason="outside loops: checked for constant elements and parities after unconditional arrivals",
            )
        ]
    phases = sum(e == element for e in elements) // max(1, int(inits[0].arrive_count))
    want = (phases - 1) % 2
    if phases >= 1 and parity % 2 == want:
        ctx.record("TMA wait parity", str(q.loc), Verdict.VERIFIED, start)
        return []
    msg = f"mbarrier wait on {user_name(bars)}[{element}] waits for parity {parity % 2}, but the load it guards " + (
        f"completes the element's phase {phases - 1} (parity {want})" if phases >= 1 else "has no arrival before it"
    )
    cex = Counterexample(
        code="MBARRIER_PHASE",
        message=msg,
        op_loc=q.loc,
        program_point=str(q.loc),
        thread=ThreadPoint(0, None),
        variables={"arrivals before the wait": sum(e == element for e in elements)},
    )
    ctx.record("TMA wait parity", str(q.loc), Verdict.VIOLATED, start)
    return [Finding("MBARRIER_PHASE", Verdict.VIOLATED, msg, loc=q.loc, counterexample=cex)]
