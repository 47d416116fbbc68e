"""MMA operand alignment (`MMA_K_MISMATCH`, `MMA_ROW_MISMATCH`, `MMA_COL_MISMATCH`).

For every `Gemm`, for every block, loop iteration, thread group, accumulator register slot and
contraction step ``k`` of the atom, read the operands the way the instruction does (the atom's
register convention, `argus.atoms.mma.slot_element`, which the interpreter's MMA reads by too): accumulator
slot ``(lane, v)`` of group ``g`` is sub-tile element ``(i, j)``; the instruction multiplies the A
register it reads as ``(i, k)`` with the B register it reads as ``(k, j)``. Then

* K: the contraction coordinate of A's tag equals that of B's tag (which tag coordinate follows the
  tile's K axis is tracked statically from the writes, `model.axis_map`);
* ROW: A's tag agrees, apart from the contraction coordinate, with the tag the A operand tile holds
  at (row of the accumulator element, k) — the accumulator element is the one the accumulator's own
  thread–value layout says that register holds;
* COL: likewise for B and the accumulator's column.

And across the contraction: every product the instruction accumulates into one accumulator element reads the same
row of A and the same column of B at the tag level. Where the writes that produced an operand say which tag
coordinate follows its free axis (A's rows, B's columns: `model.axis_map`), the elements an instruction reads as
(i, k1) and (i, k2) (B: (k1, j) and (k2, j)) agree on that coordinate, unless either is zero padding. The layout
checks above compare positions, not data: a shared tile written through one layout and read through another that
keeps the contraction index (a swizzle applied on one side only, which permutes a row's 16-byte chunks) passes them
and the K check, and sums into one element of O = P V several columns of V (`MMA_COL_MIXED`; A's rows,
`MMA_ROW_MIXED`).
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.atoms import get_atom
from argus.atoms.mma import group_origin, group_subtile, slot_count
from argus.ir.expr import free_vars
from argus.ir.nodes import Gemm, Space
from argus.verify import smt
from argus.verify.context import Context
from argus.verify.model import (
    CONST_AXIS,
    MASK_NONE,
    Write,
    axis_map,
    decompose,
    hardware_element,
    operand_hw,
    tag_value,
)
from argus.verify.program import Site, absolute_thread, kept, user_name
from argus.verify.report import Counterexample, Element, Finding, TagValue, ThreadPoint, Verdict, undecided


def _logical(ref: Any, operand: str, slot: Any, g: Any, at: int, gm: Any, gn: Any, element: Any, s: Gemm) -> Any:
    """The operand tile row (A) or column (B) that the instruction of group `g` reads as sub-tile
    `element`: for a fragment, what the fragment's own layout says the register it reads holds; for
    shared memory, the group's sub-tile origin plus the element."""
    full = (s.acc.shape[0], ref.shape[1]) if operand == "A" else (ref.shape[0], s.acc.shape[1])
    sub = group_subtile(operand, full, s.groups)
    if ref.buffer.space == Space.FRAGMENT:
        lane, v = slot
        t = smt.val(lane) + smt.val(g) * at
        coord = decompose(smt.val(ref.buffer.tv((t, v))), ref.buffer.static_shape)
        return coord[0] if operand == "A" else coord[1]
    row, col = group_origin(operand, sub, smt.val(gm), smt.val(gn))
    if operand == "A":
        return row + smt.val(element[0])
    return col + smt.val(element[1])


def _has_havoc(buffer: Any, items: tuple, seen: set | None = None) -> bool:
    """True when the history may contain contents the verifier does not model (another role's writes)."""
    from argus.verify.model import Branch, Havoc, LoopDone, LoopHead

    seen = set() if seen is None else seen
    for it in items:
        if isinstance(it, Havoc):
            return True
        if isinstance(it, (LoopHead, LoopDone)) and id(it.info) not in seen:
            seen.add(id(it.info))
            for part in (it.info.body_end.get(buffer, ()), it.info.pre.get(buffer, ())):
                if _has_havoc(buffer, part, seen):
                    return True
        if isinstance(it, Branch) and (_has_havoc(buffer, it.then, seen) or _has_havoc(buffer, it.orelse, seen)):
            return True
    return False


def _axis(amap: tuple | None, ref: Any, window_axis: int) -> int | None | str:
    if amap is None:
        return None
    pos = amap[kept(ref)[window_axis]]
    if pos == CONST_AXIS:
        return "const"
    return pos


def _across_contraction(
    ctx: Context,
    s: Gemm,
    w: Write,
    atom: Any,
    gpos: tuple[Any, Any],
    g: Any,
    ij: tuple[Any, Any],
    env: dict,
    lookback: int,
    amaps: tuple[Any, Any],
    kaxes: tuple[Any, Any],
) -> list[tuple[str, Any, tuple[Any, Any], tuple[Any, Any], Any]]:
    """The queries that the products accumulated into accumulator element `ij` read one row of A and one column of B
    at the tag level: (code, violation, (k1, tag at k1), (k2, tag at k2), query), one per operand whose free axis a
    tag coordinate follows (other than the contraction's). Each has a query of its own: the K check's stays as it
    was (Z3's search depends on the terms a query holds)."""
    out = []
    for op, code, amap, kax, free in (
        ("A", "MMA_ROW_MIXED", amaps[0], kaxes[0], 0),
        ("B", "MMA_COL_MIXED", amaps[1], kaxes[1], 1),
    ):
        ref = s.a if op == "A" else s.b
        coord = _axis(amap, ref, free)
        if not isinstance(coord, int) or isinstance(kax, str) or coord == kax:
            continue
        q = ctx.query(lookback)
        k1, k2 = smt.fresh("k"), smt.fresh("k")
        q.require(z3.BoolVal(True), z3.And(smt.in_range(k1, 0, s.a.shape[1]), smt.in_range(k2, 0, s.a.shape[1])))
        tags = []
        for kk in (k1, k2):
            element = (ij[0], kk) if op == "A" else (kk, ij[1])
            tags.append(operand_hw(q, w, s, op, atom, gpos, g, element, env, z3.BoolVal(True)))
        t1, t2 = tags
        violation = z3.And(
            q.is_data(t1),
            t1.name == t2.name,
            t1.arity == t2.arity,
            z3.UGT(t1.arity, coord),
            t1.mask == MASK_NONE,
            t2.mask == MASK_NONE,
            t1.coords[coord] != t2.coords[coord],
        )
        out.append((code, violation, (k1, t1), (k2, t2), q))
    return out


def check_gemm(ctx: Context, site: Site) -> list[Finding]:
    """Check one `Gemm`, looking back as few loop iterations as decide it (up to `ctx.lookback`)."""
    start = time.perf_counter()
    findings: list[Finding] = []
    for lookback in range(1, ctx.lookback + 1):
        findings = _check_gemm(ctx, site, lookback)
        if not any(f.code == "UNKNOWN_LOOKBACK" for f in findings):
            break
    verdict = (
        Verdict.VIOLATED
        if any(f.verdict == Verdict.VIOLATED for f in findings)
        else (Verdict.UNKNOWN if findings else Verdict.VERIFIED)
    )
    ctx.record("mma", str(site.loc), verdict, start)
    return findings


def _check_gemm(ctx: Context, site: Site, lookback: int) -> list[Finding]:
    s: Gemm = site.stmt  # type: ignore[assignment]
    analysis = ctx.analysis
    pre = analysis.state_before(site)
    atom = get_atom(s.atom)
    at = atom.thread_count
    gm_count, gn_count = s.groups
    env, cons = ctx.loop_env(site)
    for branch, taken in site.ifs:  # the product runs inside its branches (a guard around a warp role's work)
        if free_vars(branch.cond) <= set(env):  # a condition on the thread is not used (weaker, still sound)
            cond = smt.boolean(smt.evaluate(branch.cond, env))
            cons.append(cond if taken else z3.Not(cond))
    q = ctx.query(lookback)
    w = Write(site, s.acc.buffer, pre)

    g = smt.fresh("group")
    cons.append(smt.in_range(g, 0, gm_count * gn_count))
    gm, gn = z3.URem(g, gm_count), z3.UDiv(g, gm_count)
    sub_c = group_subtile("C", (s.acc.shape[0], s.acc.shape[1]), s.groups)
    lane_c, v_c = smt.fresh("lane"), smt.fresh("value")
    cons += [smt.in_range(lane_c, 0, at), smt.in_range(v_c, 0, slot_count(atom, "C", sub_c))]
    i, j = hardware_element(atom, "C", sub_c, lane_c, v_c)
    k = smt.fresh("k")
    cons.append(smt.in_range(k, 0, s.a.shape[1]))

    # the instruction's view: A register read as (i, k), B register read as (k, j)
    lane_a, v_a = smt.fresh("A_lane"), smt.fresh("A_value")
    lane_b, v_b = smt.fresh("B_lane"), smt.fresh("B_value")
    slots = {}
    for op, lane, v, (r, c) in (("A", lane_a, v_a, (i, k)), ("B", lane_b, v_b, (k, j))):
        ref = s.a if op == "A" else s.b
        if ref.buffer.space == Space.FRAGMENT:
            full = (s.acc.shape[0], ref.shape[1]) if op == "A" else (ref.shape[0], s.acc.shape[1])
            sub = group_subtile(op, full, s.groups)
            hr, hc = hardware_element(atom, op, sub, lane, v)
            cons += [smt.in_range(lane, 0, at), smt.in_range(v, 0, slot_count(atom, op, sub)), hr == r, hc == c]
            slots[op] = (lane, v)
    cons_layout = list(cons)
    n0 = len(q.steps)
    ta = operand_hw(q, w, s, "A", atom, (gm, gn), g, (i, k), env, z3.BoolVal(True), slots.get("A"))
    tb = operand_hw(q, w, s, "B", atom, (gm, gn), g, (k, j), env, z3.BoolVal(True), slots.get("B"))
    n2 = len(q.steps)

    # the logical view: the accumulator element the register the instruction writes holds, and the
    # operand rows / columns the registers (or shared-memory positions) it reads hold
    t_c = smt.val(lane_c) + g * at
    acc_buf = s.acc.buffer
    big_i, big_j = decompose(smt.val(acc_buf.tv((t_c, v_c))), acc_buf.static_shape)
    row_a = _logical(s.a, "A", slots.get("A"), g, at, gm, gn, (i, k), s)
    col_b = _logical(s.b, "B", slots.get("B"), g, at, gm, gn, (k, j), s)

    amap_a = axis_map(analysis, s.a.buffer, pre.get(s.a.buffer, ()))
    amap_b = axis_map(analysis, s.b.buffer, pre.get(s.b.buffer, ()))
    ka, kb = _axis(amap_a, s.a, 1), _axis(amap_b, s.b, 0)
    if ka is None and _has_havoc(s.a.buffer, pre.get(s.a.buffer, ())):
        ka = analysis.rank - 1
    if kb is None and _has_havoc(s.b.buffer, pre.get(s.b.buffer, ())):
        kb = 0
    uninit = analysis.names.id("<uninitialized>")

    findings: list[Finding] = []
    checks: list[tuple[str, Any, Any, Any, tuple[int, int], Any]] = []
    if ka == "const" or kb == "const":
        pass  # a constant operand: every product is position-independent
    elif ka is None or kb is None:
        findings.append(
            Finding(
                "UNKNOWN_TAG_AXES",
                Verdict.UNKNOWN,
                f"cannot tell which tag coordinate of the {'A' if ka is None else 'B'} operand follows K",
                loc=s.loc,
                reason="the writes that produced the operand do not agree on how tags follow its axes",
                pin="tag the operand with T.tag(x, fn, name) before the gemm",
            )
        )
    else:
        kviol = z3.Or(
            ta.name == uninit,
            tb.name == uninit,
            z3.And(q.is_data(ta), q.is_data(tb), ta.coords[ka] != tb.coords[kb]),
        )
        checks.append(("MMA_K_MISMATCH", kviol, tb, ta, (n0, n2), q))
    checks.append(("MMA_ROW_MISMATCH", row_a != big_i, big_i, row_a, (n0, n0), None))
    checks.append(("MMA_COL_MISMATCH", col_b != big_j, big_j, col_b, (n0, n0), None))
    across = _across_contraction(ctx, s, w, atom, (gm, gn), g, (i, j), env, lookback, (amap_a, amap_b), (ka, kb))

    for code, violation, (k1, t1), (k2, t2), query in across:
        out = ctx.solve(cons_layout, violation, query)
        if out.verdict == Verdict.VERIFIED:
            continue
        if out.verdict == Verdict.UNKNOWN:
            findings.append(
                undecided(out, f"{code} could not be decided for T.gemm", loc=s.loc, pin=True, details={"check": code})
            )
            continue
        m = out.model
        v1, v2 = tag_value(query, m, t1), tag_value(query, m, t2)
        acc_coord = (smt.model_int(m, big_i), smt.model_int(m, big_j))
        kk1, kk2 = smt.model_int(m, k1), smt.model_int(m, k2)
        what = "rows of the A operand" if code == "MMA_ROW_MIXED" else "columns of the B operand"
        msg = (
            f"the instruction accumulates into the register holding accumulator element {acc_coord} products with "
            f"{v1} at k={kk1} and {v2} at k={kk2} of the tile: two elements of different {what}"
        )
        gi = smt.model_int(m, g)
        thread_abs = smt.model_int(m, absolute_thread(acc_buf, smt.val(gi * at + smt.model_int(m, lane_c)), site.role))
        variables = {"thread group": gi, "k (in the tile)": kk1, "k' (in the tile)": kk2}
        point = (thread_abs, acc_coord, smt.model_int(m, v_c))
        findings.append(_violation(ctx, site, env, m, code, msg, point, (v1, v2), query.steps, variables))

    for code, violation, expected, actual, (lo, hi), query in checks:
        out = ctx.solve(cons if query is not None else cons_layout, violation, query)
        if out.verdict == Verdict.VERIFIED:
            continue
        if out.verdict == Verdict.UNKNOWN:
            findings.append(
                undecided(out, f"{code} could not be decided for T.gemm", loc=s.loc, pin=True, details={"check": code})
            )
            continue
        m = out.model
        gi = smt.model_int(m, g)
        lane = smt.model_int(m, lane_c)
        thread_abs = smt.model_int(m, absolute_thread(acc_buf, smt.val(gi * at + lane), site.role))
        acc_coord = (smt.model_int(m, big_i), smt.model_int(m, big_j))
        kk = smt.model_int(m, k)
        variables = {"thread group": gi, "k (in the tile)": kk}
        for op in ("A", "B"):
            if op in slots:
                la, va = slots[op]
                variables[f"{op} register (thread, value)"] = (
                    f"({smt.model_int(m, absolute_thread((s.a if op == 'A' else s.b).buffer, smt.val(gi * at + smt.model_int(m, la)), site.role))}, "  # noqa: E501
                    f"{smt.model_int(m, va)})"
                )
        if query is not None:
            exp_v, act_v = tag_value(q, m, expected), tag_value(q, m, actual)
        else:
            what = "A row" if code == "MMA_ROW_MISMATCH" else "B column"
            exp_v = TagValue(what, (smt.model_int(m, expected),))
            act_v = TagValue(what, (smt.model_int(m, actual),))
        if code == "MMA_K_MISMATCH":
            msg = (
                f"T.gemm multiplies A element {act_v} by B element {exp_v}: their contraction indices differ "
                f"(accumulator element {acc_coord}, k={kk} of the tile)"
            )
        elif code == "MMA_ROW_MISMATCH":
            msg = (
                f"the instruction accumulates into the register holding accumulator element {acc_coord} a product "
                f"with row {act_v.coords[0]} of the A operand, not row {acc_coord[0]} (k={kk} of the tile)"
            )
        else:
            msg = (
                f"the instruction accumulates into the register holding accumulator element {acc_coord} a product "
                f"with column {act_v.coords[0]} of the B operand, not column {acc_coord[1]} (k={kk} of the tile)"
            )
        point = (thread_abs, acc_coord, smt.model_int(m, v_c))
        findings.append(_violation(ctx, site, env, m, code, msg, point, (exp_v, act_v), q.steps[lo:hi], variables))
    return findings


def _violation(
    ctx: Context,
    site: Site,
    env: dict,
    m: Any,
    code: str,
    msg: str,
    point: tuple[int, tuple[int, int], int],
    values: tuple[TagValue, TagValue],
    steps: list[Any],
    variables: dict[str, Any],
) -> Finding:
    """The finding `code` of the `T.gemm` at `site` in model `m`: `point` is (thread, accumulator element, its
    register value), `values` the expected and actual tags, `steps` the query's history steps to show."""
    s: Gemm = site.stmt  # type: ignore[assignment]
    thread_abs, acc_coord, value = point
    cex = Counterexample(
        code=code,
        message=msg,
        op_loc=s.loc,
        program_point=f"T.gemm at {s.loc}",
        block=ctx.block_values(m),
        shapes=ctx.shape_values(m),
        thread=ThreadPoint(thread_abs, site.role.name if site.role else None),
        loops=ctx.loop_values(m, site, env),
        element=Element(user_name(s.acc.buffer), "fragment", None, acc_coord, value),
        expected=values[0],
        actual=values[1],
        chain=ctx.chain(m, steps),
        variables=variables,
    )
    return Finding(code, Verdict.VIOLATED, msg, loc=s.loc, counterexample=cex)
