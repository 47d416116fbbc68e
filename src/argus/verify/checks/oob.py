"""Padding in reductions (`OOB_MASKED_REDUCTION`) and shared-memory views past their buffer (`OOB_SHARED`, at the
end of this module).

Global windows are masked: out-of-bounds elements of a partial tile read as the copy's `pad`. Such an element is
*padding*, and the tags track its value class through every operation (`argus.verify.padding`: elementwise maps
and `T.where` masks, casts, copies through shared memory, MMAs, reductions). Padding is harmless where it is dropped
(stores are masked the same way) and where it enters a reduction as the reduction's identity (-inf in a maximum,
0 in a sum). For every reduction: two elements of one row, for every thread, value, block, iteration and problem
size the assumptions allow, the first padding of another class, the second real data: then the padding changes a
result that is kept, and that is a violation, with the element, the class, and the `T.where` that let it through
(when one did). A row made only of padding (and constants) is itself padding, and is not checked.

An MMA is a sum too (`OOB_MASKED_MMA`): for every accumulator element that holds real data (some contraction index
where its A row and B column are both real), every product of its contraction is real data or no term at all
(padding 0 times a finite value: the contraction's tail as TMA and the copies fill it); an infinite padding (a
tail padded with -inf) or padding of unknown value times anything else is a violation.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.nodes import Gemm, Reduce, Space
from argus.layout import mode_sizes
from argus.verify import padding, smt
from argus.verify.context import Context
from argus.verify.model import Query, Write, decompose, tag_value
from argus.verify.program import absolute_thread, user_name
from argus.verify.report import Access, Counterexample, Element, Finding, ThreadPoint, Verdict, undecided


def check_masked_reductions(ctx: Context) -> list[Finding]:
    """`OOB_MASKED_REDUCTION`, per `T.reduce_*` (`_check_reduction`)."""
    return _each(ctx, Reduce, "masked reduction", _check_reduction)


def check_masked_mmas(ctx: Context) -> list[Finding]:
    """`OOB_MASKED_MMA`: the padding of a partial tile enters an MMA's contraction only as no term (padding 0
    times a finite value) wherever the accumulator element is real data, per `T.gemm` (`_check_mma`)."""
    return _each(ctx, Gemm, "masked MMA", _check_mma)


def _each(ctx: Context, kind: type, record: str, check: Any) -> list[Finding]:
    """`check(ctx, site, stmt, lookback)` at every statement of `kind`, looking back as few loop iterations as decide
    it (as the MMA-operand check), its verdict recorded as `record`."""
    findings: list[Finding] = []
    for site in ctx.analysis.program.sites:
        s = site.stmt
        if not isinstance(s, kind):
            continue
        start = time.perf_counter()
        found: list[Finding] = []
        verdict = Verdict.VERIFIED
        for lookback in range(1, ctx.lookback + 1):
            found, verdict = check(ctx, site, s, lookback)
            if not any(f.code == "UNKNOWN_LOOKBACK" for f in found):
                break
        findings += found
        ctx.record(record, str(s.loc), verdict, start)
    return findings


def _check_mma(ctx: Context, site: Any, s: Gemm, lookback: int) -> tuple[list[Finding], Verdict]:
    """One accumulator element (every thread, value, block, iteration, size) and two contraction indices of its
    product: at the first a product of padding that is not no term (`padding.bad_product`), at the second a
    product of real A and B elements (so the element is real data: its row of A and column of B exist)."""
    acc = s.acc.buffer
    pre = ctx.analysis.state_before(site)
    env, cons = ctx.loop_env(site)
    cons += smt.taken(site.ifs, env)
    q = ctx.query(lookback)
    q.masks = True
    t, v = smt.fresh("t_acc"), smt.fresh("v_acc")
    cons += [smt.in_range(t, 0, acc.threads), smt.in_range(v, 0, acc.values_per_thread)]
    renv = dict(env)
    renv[ctx.kernel.thread_var] = absolute_thread(acc, t, site.role)
    w = Write(site, acc, pre)
    reads = []
    for name in ("pad", "real"):
        k = smt.fresh(f"k_{name}")
        cons.append(smt.in_range(k, 0, s.a.shape[1]))
        reads.append((k, *q.gemm_operands(w, s, (t, v), k, renv, z3.BoolVal(True))))
    (k1, a1, b1), (_, a2, b2) = reads
    real = z3.And(a2.mask == smt.val(padding.REAL), b2.mask == smt.val(padding.REAL))
    out = ctx.solve(cons, z3.And(padding.bad_product(a1.mask, b1.mask), real), q)
    if out.verdict == Verdict.VIOLATED:
        m = out.model
        ca, cb = smt.model_int(m, a1.mask), smt.model_int(m, b1.mask)
        role = site.role.name if site.role else None
        thread = ThreadPoint(smt.model_int(m, absolute_thread(acc, t, site.role)), role)
        msg = (
            f"T.gemm adds the product of A's element {_text(ca)} and B's element {_text(cb)} at contraction index "
            f"{smt.model_int(m, k1)} of the tile into an element of {user_name(acc)} that holds real data: padding "
            f"enters the contraction as something other than no term (pad the contraction's tail with 0, or mask "
            f"it to 0 before the MMA)"
        )
        cex = Counterexample(
            code="OOB_MASKED_MMA",
            message=msg,
            op_loc=s.loc,
            program_point=str(s.loc),
            block=ctx.block_values(m),
            shapes=ctx.shape_values(m),
            thread=thread,
            loops=ctx.loop_values(m, site, env),
            element=Element(user_name(acc), "fragment", None, (), smt.model_int(m, v)),
            actual=tag_value(q, m, a1),
            chain=ctx.chain(m, q.steps),
        )
        return [Finding("OOB_MASKED_MMA", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex)], out.verdict
    if out.verdict == Verdict.UNKNOWN:
        return [undecided(out, "masked-MMA check undecided for T.gemm", loc=s.loc)], out.verdict
    return [], out.verdict


def _text(cls: int) -> str:
    """A padding class in words."""
    if cls == padding.REAL:
        return "real data"
    return f"padding whose value is {padding.TEXT.get(cls, 'unknown')}"


def _check_reduction(ctx: Context, site: Any, s: Reduce, lookback: int) -> tuple[list[Finding], Verdict]:
    src = s.src.buffer
    pre = ctx.analysis.state_before(site)
    env, cons = ctx.loop_env(site)
    cons += smt.taken(site.ifs, env)
    q = ctx.query(lookback)
    q.masks = True
    keep = 1 - s.axis
    reads = []
    for name in ("pad", "real"):
        t, v = smt.fresh(f"t_{name}"), smt.fresh(f"v_{name}")
        cons += [smt.in_range(t, 0, src.threads), smt.in_range(v, 0, src.values_per_thread)]
        coord = decompose(smt.val(src.tv((t, v))), src.static_shape)
        renv = dict(env)
        renv[ctx.kernel.thread_var] = absolute_thread(src, t, site.role)
        first = len(q.selects)
        tag = q.read(src, pre.get(src, ()), (t, v), renv, z3.BoolVal(True))
        reads.append((t, v, coord, tag, first, len(q.selects)))
    (t1, v1, c1, tag1, sel0, sel1), (_, _, c2, tag2, _, _) = reads
    cons.append(c1[keep] == c2[keep])  # the same row (column, for axis 0)
    identity = padding.IDENTITY[s.op]
    bad = z3.And(padding.is_pad(tag1.mask), tag1.mask != smt.val(identity))
    out = ctx.solve(cons, z3.And(bad, tag2.mask == smt.val(padding.REAL)), q)
    if out.verdict == Verdict.VIOLATED:
        return [_finding(ctx, q, site, s, out.model, (t1, v1, c1, tag1), q.selects[sel0:sel1], env)], out.verdict
    if out.verdict == Verdict.UNKNOWN:
        return [undecided(out, f"masked-reduction check undecided for T.reduce_{s.op.value}", loc=s.loc)], out.verdict
    return [], out.verdict


def _finding(ctx: Context, q: Query, site: Any, s: Reduce, m: Any, read: tuple, selects: list, env: dict) -> Finding:
    t, v, coord, tag = read
    src = s.src.buffer
    cls = smt.model_int(m, tag.mask)
    c = tuple(smt.model_int(m, x) for x in coord)
    thread = ThreadPoint(smt.model_int(m, absolute_thread(src, t, site.role)), site.role.name if site.role else None)
    msg = (
        f"T.reduce_{s.op.value} combines element {c} of {user_name(src)}, padding (of an element outside the tensor, "
        f"or one T.exclude excludes) whose value is {padding.TEXT.get(cls, 'unknown')}, not the identity of "
        f"{s.op.value}, into a row of real data"
    )
    accesses: tuple = ()
    mask = next((x for x in selects if smt.model_bool(m, x[0]) and smt.model_int(m, x[3]) in padding.PADS), None)
    if mask is not None:
        guard, wsite, win, _, csite = mask
        msite = csite if csite is not None else wsite  # the mask's expression, else the T.where
        text = msite.loc.text.split("#")[0].strip() if msite.loc is not None and msite.loc.text else "T.where"
        msg += f"; the mask at {msite.loc} keeps it: {text}"
        if msite.loc is not None and wsite.loc is not None and msite.loc.line != wsite.loc.line:
            msg += f" (used by the T.where at {wsite.loc})"
        w = tuple(smt.model_int(m, x) for x in win)
        elem = Element(user_name(wsite.stmt.dst.buffer), "fragment", None, w)
        accesses = (
            Access("write", "T.where mask", msite.loc, thread, ctx.loop_values(m, msite, env), elem),
            Access("read", f"reduce_{s.op.value}", s.loc, thread, ctx.loop_values(m, site, env),
                   Element(user_name(src), "fragment", None, c, smt.model_int(m, v))),
        )  # fmt: skip
    cex = Counterexample(
        code="OOB_MASKED_REDUCTION",
        message=msg,
        op_loc=s.loc,
        program_point=str(s.loc),
        block=ctx.block_values(m),
        shapes=ctx.shape_values(m),
        thread=thread,
        loops=ctx.loop_values(m, site, env),
        element=Element(user_name(src), "fragment", None, c, smt.model_int(m, v)),
        actual=tag_value(q, m, tag),
        chain=ctx.chain(m, q.steps),
        accesses=accesses,
    )
    return Finding("OOB_MASKED_REDUCTION", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex)


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
        modes = mode_sizes(ref.layout)  # the view's own shape (a view may reshape its buffer)
        stages = [range(modes[d]) if not isinstance(ref.origin[d], int) else [ref.origin[d]] for d in ref.dropped]
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
