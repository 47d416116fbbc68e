"""User tag assertions (`TAG_ASSERT`): `T.assert_tag_eq(a, b)` and `T.assert_tag(pred, *xs)`.

The assertion ranges over every element of its first operand — for a fragment, every thread and
value (the other fragment operands are read in the *same* thread, as elementwise operations read
them); for shared or global memory, every element of the window — for every block, loop iteration
and allowed problem size. The other operands are read at the same window coordinate (broadcast
operands without their broadcast axes). The predicate is an IR expression over the tags (see
`argus.ir.tags`); its negation is handed to Z3.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.ir.expr import free_vars
from argus.ir.nodes import Broadcast, Space, TileRef
from argus.ir.tags import AssertTagEq, TagExpr, TagNameIs, TagPlaceholder
from argus.verify import smt
from argus.verify import values as data_values
from argus.verify.context import Context
from argus.verify.model import decompose, tag_eq, tag_value
from argus.verify.program import Site, absolute_thread, buffer_coords, user_name, window_shape
from argus.verify.report import Counterexample, Element, Finding, ThreadPoint, Verdict, undecided

#: How many elements of declared tensors a counterexample's message lists (all are in its variables).
WITNESS_SHOWN = 12


def _ref(x: Any) -> TileRef:
    return x.ref if isinstance(x, Broadcast) else x


def check_assertion(ctx: Context, site: Site) -> list[Finding]:
    """Check one assertion, looking back as few loop iterations as decide it (up to `ctx.lookback`), as the
    MMA check does: a proof or a violation at a shorter look-back is final (a violation never rests on a tag
    beyond the bound), and deep look-backs through nested loops (a persistent kernel's tile loop around its
    pipeline) make much larger queries."""
    start = time.perf_counter()
    findings: list[Finding] = []
    verdict = Verdict.VERIFIED
    for lookback in range(1, ctx.lookback + 1):
        findings, verdict = _check_assertion(ctx, site, lookback)
        if not any(f.code == "UNKNOWN_LOOKBACK" for f in findings):
            break
    ctx.record("tag assertion", str(site.stmt.loc), verdict, start)
    return findings


def _check_assertion(ctx: Context, site: Site, lookback: int) -> tuple[list[Finding], Verdict]:
    s = site.stmt
    operands = (s.a, s.b) if isinstance(s, AssertTagEq) else s.operands
    first = operands[0]
    pre = ctx.analysis.state_before(site)
    env, cons = ctx.loop_env(site)
    q = ctx.query(lookback)
    guard = z3.BoolVal(True)
    fbuf = first.buffer
    thread = None
    if fbuf.space == Space.FRAGMENT:
        t, v = smt.fresh("t"), smt.fresh("v")
        cons += [smt.in_range(t, 0, fbuf.threads), smt.in_range(v, 0, fbuf.values_per_thread)]
        window = decompose(smt.val(fbuf.tv((t, v))), fbuf.static_shape)
        thread = absolute_thread(fbuf, t, site.role)
        env[ctx.kernel.thread_var] = thread
    else:
        shape = window_shape(first)
        window = tuple(smt.fresh(f"c{i}") for i in range(len(shape)))
        cons += [smt.in_range(c, 0, e) for c, e in zip(window, shape, strict=True)]
        v = None
    for branch, taken in site.ifs:  # the assertion holds where it runs: inside its branches (a tile loop's guard)
        if not free_vars(branch.cond) <= set(env):
            continue  # a condition on the thread, for a shared or global operand: not used (weaker, still sound)
        cond = smt.boolean(smt.evaluate(branch.cond, env))
        cons.append(cond if taken else z3.Not(cond))
    q.assume([*ctx.base_constraints, *cons])  # all of them go to `ctx.solve` below
    if fbuf.space == Space.FRAGMENT:
        tags = [q.read(fbuf, pre.get(fbuf, ()), (t, v), env, guard)]
    else:
        tags = [q.src_at(first, window, env, guard, pre, site)]
    for op in operands[1:]:
        same = t if fbuf.space == Space.FRAGMENT and _ref(op).buffer.space == Space.FRAGMENT else None
        tags.append(q.src_at(op, window, env, guard, pre, site, same_thread=same))

    if isinstance(s, AssertTagEq):
        violation = z3.Not(tag_eq(tags[0], tags[1]))
        what = "T.assert_tag_eq"
    else:

        def leaf(e: Any) -> Any:
            if isinstance(e, TagPlaceholder):
                if e.kind == "coord":
                    return smt.val(window[e.index])
                return tags[e.operand].coord(e.index)
            if isinstance(e, TagNameIs):
                return tags[e.operand].name == q.names.id(e.name)
            if isinstance(e, TagExpr):
                return smt.evaluate(e.expr, env, leaf)
            return None

        try:
            violation = z3.Not(smt.boolean(smt.evaluate(s.pred, env, leaf)))
        except smt.EncodingError as err:
            return [
                Finding(
                    "UNKNOWN_STATEMENT", Verdict.UNKNOWN, "the assertion cannot be encoded", loc=s.loc, reason=str(err)
                )
            ], Verdict.UNKNOWN
        what = "T.assert_tag"
    out = ctx.solve(cons, violation, q)
    findings: list[Finding] = []
    if out.verdict == Verdict.VIOLATED:
        m = out.model
        coord = tuple(smt.model_int(m, c) for c in window)
        if fbuf.space == Space.FRAGMENT:
            element = Element(user_name(fbuf), "fragment", None, coord, smt.model_int(m, v))
        else:
            b = buffer_coords(first, window, env)
            element = Element(user_name(fbuf), fbuf.space.value, None, tuple(smt.model_int(m, x) for x in b))
        values = [tag_value(q, m, tg) for tg in tags]
        names = [user_name(_ref(op).buffer) for op in operands]
        listing = ", ".join(f"{n} has {tv}" for n, tv in zip(names, values, strict=True))
        msg = f"{what} fails at element {coord} of {user_name(fbuf)}: {listing}"
        # the content of the declared tensors the tags and the path read (a gather's index, the routing's offsets)
        data = data_values.witness_data(ctx.kernel, m, [*cons, violation], ctx.base_env)
        if data:
            shown = list(data.items())
            more = f", and {len(shown) - WITNESS_SHOWN} more" if len(shown) > WITNESS_SHOWN else ""
            msg += f" (with {', '.join(f'{k} = {v}' for k, v in shown[:WITNESS_SHOWN])}{more})"
        cex = Counterexample(
            code="TAG_ASSERT",
            message=msg,
            op_loc=s.loc,
            assertion_loc=s.loc,
            program_point=str(s.loc),
            block=ctx.block_values(m),
            shapes=ctx.shape_values(m),
            thread=ThreadPoint(smt.model_int(m, thread), site.role.name if site.role else None)
            if thread is not None
            else None,
            loops=ctx.loop_values(m, site, env),
            element=element,
            expected=values[1] if len(values) > 1 else None,
            actual=values[0],
            chain=ctx.chain(m, q.steps),
            variables={k: str(v) for k, v in data.items()},
        )
        findings.append(Finding("TAG_ASSERT", Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex))
    elif out.verdict == Verdict.UNKNOWN:
        findings.append(undecided(out, f"{what} could not be decided", loc=s.loc, pin=True))
    return findings, out.verdict
