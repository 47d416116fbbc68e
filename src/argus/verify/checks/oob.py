"""Masked elements in reductions (`OOB_MASKED_REDUCTION`) and shared-memory views past their buffer
(`OOB_SHARED`, at the end of this module).

Global windows are masked: out-of-bounds elements of a partial tile read as the copy's `pad`. That
is only harmless if the fill value is the identity of what consumes it. The tags remember, per
element, whether it is such a fill value and which one; for every reduction, for every thread and
result value, any element the thread combines that is a fill value other than the reduction's
identity (0 in a maximum, say) is a violation, with the copy that produced it in the chain.
"""

from __future__ import annotations

import time

import z3

from argus.ir.nodes import Reduce, ReduceOp, Space
from argus.verify import smt
from argus.verify.context import Context
from argus.verify.model import (
    MASK_PAD_NEG_INF,
    MASK_PAD_OTHER,
    MASK_PAD_POS_INF,
    MASK_PAD_ZERO,
    decompose,
    tag_value,
)
from argus.verify.program import absolute_thread, user_name
from argus.verify.report import Counterexample, Element, Finding, ThreadPoint, Verdict, undecided

_IDENTITY = {ReduceOp.MAX: MASK_PAD_NEG_INF, ReduceOp.MIN: MASK_PAD_POS_INF, ReduceOp.SUM: MASK_PAD_ZERO}
_PAD_TEXT = {MASK_PAD_ZERO: "0", MASK_PAD_NEG_INF: "-inf", MASK_PAD_POS_INF: "+inf", MASK_PAD_OTHER: "another value"}


def check_masked_reductions(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for site in ctx.analysis.program.sites:
        s = site.stmt
        if not isinstance(s, Reduce):
            continue
        start = time.perf_counter()
        src, dst = s.src.buffer, s.dst.buffer
        pre = ctx.analysis.state_before(site)
        env, cons = ctx.loop_env(site)
        q = ctx.query()
        t, j, v = smt.fresh("t"), smt.fresh("j"), smt.fresh("v")
        cons += [
            smt.in_range(t, 0, dst.threads),
            smt.in_range(j, 0, dst.values_per_thread),
            smt.in_range(v, 0, src.values_per_thread),
        ]
        key = smt.val(dst.tv((t, j)))
        coord = decompose(smt.val(src.tv((t, v))), src.static_shape)
        cons.append(coord[1 - s.axis] == key)
        env[ctx.kernel.thread_var] = absolute_thread(src, t, site.role)
        tag = q.read(src, pre.get(src, ()), (t, v), env, z3.BoolVal(True))
        pads = [MASK_PAD_ZERO, MASK_PAD_NEG_INF, MASK_PAD_POS_INF, MASK_PAD_OTHER]
        identity = _IDENTITY[s.op]
        violation = z3.Or(*[tag.mask == p for p in pads if p != identity])
        out = ctx.solve(cons, violation, q)
        if out.verdict == Verdict.VIOLATED:
            m = out.model
            pad = smt.model_int(m, tag.mask)
            c = tuple(smt.model_int(m, x) for x in coord)
            msg = (
                f"T.reduce_{s.op.value} combines element {c} of {user_name(src)}, which lies outside the tensor and "
                f"reads as the fill value {_PAD_TEXT.get(pad, '?')}, not the identity of {s.op.value}"
            )
            cex = Counterexample(
                code="OOB_MASKED_REDUCTION",
                message=msg,
                op_loc=s.loc,
                program_point=str(s.loc),
                block=ctx.block_values(m),
                shapes=ctx.shape_values(m),
                thread=ThreadPoint(
                    smt.model_int(m, absolute_thread(src, t, site.role)), site.role.name if site.role else None
                ),
                loops=ctx.loop_values(m, site, env),
                element=Element(user_name(src), "fragment", None, c, smt.model_int(m, v)),
                actual=tag_value(q, m, tag),
                chain=ctx.chain(m, q.steps),
            )
            findings.append(Finding("OOB_MASKED_REDUCTION", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex))
        elif out.verdict == Verdict.UNKNOWN:
            findings.append(undecided(out, f"masked-reduction check undecided for T.reduce_{s.op.value}", loc=s.loc))
        ctx.record("masked reduction", str(s.loc), out.verdict, start)
    return findings


# --- shared memory through explicit views ---------------------------------------------------------------------


def check_shared_views(ctx: Context) -> list[Finding]:
    """`OOB_SHARED`: an access through an explicit view layout (`Shared.view`) whose offset lies past the
    buffer's allocation (the cosize of the buffer's own layout, which is what the code generator reserves).
    The buffer's own layout cannot overrun (its cosize *is* the allocation); a view only has to cover the
    buffer's shape, so a view with larger strides (padding the buffer was not allocated with) reaches into the
    next buffer. Exact enumeration of every thread, value and stage of each access."""
    import numpy as np

    from argus.verify.access import accesses, np_layout

    findings: list[Finding] = []
    prog = ctx.analysis.program
    for acc in accesses(prog):
        ref = acc.ref
        if ref.buffer.space != Space.SHARED or ref.layout is None:
            continue
        start = time.perf_counter()
        buf = ref.buffer
        allocated = buf.layout.cosize() if hasattr(buf.layout, "cosize") else int(np.prod(buf.static_shape))
        t = np.arange(acc.threads)[:, None]
        v = np.arange(acc.values)[None, :]
        win, valid = acc.window(t, v)
        kept_dims = [d for d in range(len(ref.extent)) if d not in ref.dropped]
        if ref.perm is not None:
            kept_dims = [kept_dims[i] for i in ref.perm]
        stages = [
            range(int(buf.static_shape[d])) if not isinstance(ref.origin[d], int) else [ref.origin[d]]
            for d in ref.dropped
        ]
        found = None
        for stage in np.ndindex(*[len(s) for s in stages]) if stages else [()]:
            coords: list = [None] * len(ref.extent)
            for i, d in enumerate(kept_dims):
                o = ref.origin[d]
                coords[d] = (o if isinstance(o, int) else 0) + win[i]
            for j, d in enumerate(ref.dropped):
                coords[d] = np.full(np.broadcast(t, v).shape, list(stages[j])[stage[j]])
            offsets = np_layout(ref.layout, tuple(coords))
            bad = (offsets >= allocated) & np.asarray(valid, dtype=bool)
            if bad.any():
                ti, vi = (int(x[0]) for x in np.nonzero(bad))
                found = (ti, vi, int(offsets[ti, vi]), tuple(int(c[ti, vi]) for c in coords))
                break
        verdict = Verdict.VERIFIED
        if found is not None:
            ti, vi, offset, coord = found
            name = user_name(buf)
            thread = int(acc.absolute(prog, np.asarray(ti)))
            msg = (
                f"the view of {name} puts element {coord} at offset {offset}, past the {allocated} elements "
                f"allocated for {name}: the {acc.kind} reaches into the memory after it"
            )
            cex = Counterexample(
                code="OOB_SHARED",
                block={v.name: 0 for v in ctx.kernel.block_vars},  # any block: the same in every one
                message=msg,
                op_loc=acc.site.loc,
                program_point=str(acc.site.loc),
                thread=ThreadPoint(thread, acc.site.role.name if acc.site.role else None),
                element=Element(name, "shared", offset, coord, vi if acc.dist == "fragment" else None),
                variables={"allocated_elements": allocated, "offset": offset},
            )
            findings.append(Finding("OOB_SHARED", Verdict.VIOLATED, msg, loc=acc.site.loc, counterexample=cex))
            verdict = Verdict.VIOLATED
        ctx.record("shared view bounds", str(acc.site.loc), verdict, start)
    return _first_per_site(findings)


def _first_per_site(findings: list[Finding]) -> list[Finding]:
    seen: set = set()
    out = []
    for f in findings:
        key = (f.loc.file, f.loc.line) if f.loc else None
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
