"""Asynchronous MMAs and their accumulators (`MMA_IN_FLIGHT`).

A `Gemm` issued with ``pending > 0`` (``T.gemm(..., wait_group=P)``, or the deferred-release pass of
`argus.ir.passes`) goes on writing its accumulator after the statement, until a wgmma wait leaves fewer groups in
flight. The check proves, by structure, that nothing but another ``wgmma`` on the same accumulator (which the
hardware orders after the MMAs in flight) touches the accumulator while such MMAs may run:

* inside the loop that issues them, no other statement reads or writes the accumulator (each iteration leaves a
  group in flight across the loop's back edge), unless a statement at the top level of the loop's body completes
  them after the MMA: a wait for at most ``P`` groups in flight (``T.wgmma_wait(P)``, or a later wgmma's own
  ``wait_group=P``) once ``P`` or more groups were issued after theirs. Then only the statements between the MMA
  and that wait may not touch the accumulator (the intra-warpgroup overlap of attention: S of this tile completes
  at the issue of O += P V of the previous tile, which runs on while this tile's softmax does);
* or unless an unconditional ``T.wgmma_wait(0)`` at the top level of the body *before* the MMA completes them in the
  next iteration: the MMAs run on across the back edge, and the statements after the MMA in its iteration and those
  before the wait in the next may not touch the accumulator (block-scaled FP8's promotion of one K-block while the
  next one's MMAs run); at the loop's exit they are still in flight, and the rule after the loop (below) applies;
* a ``.rs`` wgmma reads its A operand from registers until its MMAs complete: writing those registers counts as
  touching the accumulator (reading them does not);
* after the loop, a `WgmmaWait` of 0 in the body that holds the loop, outside any branch, comes before the first
  statement that touches the accumulator there; with no such wait, any use of the accumulator elsewhere in the role
  (after the loop, or before it in the next iteration of an enclosing loop) is reported.

An asynchronous MMA outside a loop needs the same wait after it, in its own body. The check is structural: each
finding holds for every block and iteration (block 0, the first iteration is shown).
"""

from __future__ import annotations

from argus.atoms import MmaAtom, get_atom
from argus.ir.nodes import Buffer, For, Gemm, Role, Space, Stmt, WgmmaWait
from argus.verify.context import Context
from argus.verify.program import Site, first_thread, user_name, walk_all
from argus.verify.report import Counterexample, Finding, ThreadPoint, Verdict
from argus.verify.roles import reads_of, writes_of


def _is_wgmma(s: Stmt) -> bool:
    if not isinstance(s, Gemm):
        return False
    atom = get_atom(s.atom)
    return isinstance(atom, MmaAtom) and atom.ptx.startswith("wgmma.")


def _touches(s: Stmt, acc: Buffer) -> bool:
    """`s` (not looking inside nested statements) reads or writes `acc`, other than as a wgmma accumulating into it."""
    if _is_wgmma(s) and s.acc.buffer is acc:  # type: ignore[attr-defined]
        return False
    return acc in reads_of(s) or acc in writes_of(s)


def _first_touch(stmts: tuple[Stmt, ...], acc: Buffer, a_regs: Buffer | None = None) -> Stmt | None:
    """The first statement of `stmts` that reads or writes the accumulator `acc`, or writes `a_regs` (the registers
    a ``.rs`` wgmma reads its A operand from, which must stay unchanged until its MMAs complete)."""
    for s in walk_all(stmts):
        if _touches(s, acc) or (a_regs is not None and not _is_wgmma(s) and a_regs in writes_of(s)):
            return s
    return None


def _waited_in_body(loop: For, gemm: Stmt) -> tuple[int, int] | None:
    """(i, w): the top-level statement `i` of the loop's body that holds `gemm`, and the first unconditional
    statement `w > i` of the body after it that completes its MMAs, if there is one: then they complete within the
    iteration that issues them (none crosses the back edge or leaves the loop). A wait for at most ``P`` groups in
    flight (``T.wgmma_wait(P)``, or a later wgmma's own ``wait_group=P``) completes them once ``P`` or more wgmma
    groups have been issued after theirs (groups complete in issue order): ``T.gemm(S, wait_group=1)`` followed by
    ``T.gemm(O, wait_group=1)`` completes S at the second statement and leaves O running."""
    for i, top in enumerate(loop.body):
        if any(x is gemm for x in walk_all((top,))):
            later = 0  # wgmma groups issued after the MMA's, at the body's top level
            for w in range(i + 1, len(loop.body)):
                x = loop.body[w]
                if _is_wgmma(x):
                    later += 1
                    if later >= x.pending:  # type: ignore[attr-defined]
                        return i, w
                elif isinstance(x, WgmmaWait) and later >= x.pending:
                    return i, w
                elif any(_is_wgmma(y) for y in walk_all((x,))):
                    return None  # a conditional MMA: the count of groups after it is not known
            return None
    return None


def _waited_at_top(loop: For, gemm: Stmt) -> tuple[int, int] | None:
    """(i, w): the top-level statement `i` of the loop's body that holds `gemm`, and the first statement `w < i` of the
    body that is an unconditional ``T.wgmma_wait(0)``, if there is one: it completes the MMAs of the previous
    iteration (every group in flight), before anything after it in the body runs."""
    for i, top in enumerate(loop.body):
        if any(x is gemm for x in walk_all((top,))):
            return next(
                ((i, w) for w in range(i) if isinstance(loop.body[w], WgmmaWait) and loop.body[w].pending == 0), None
            )
    return None


def check_wgmma_in_flight(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    findings: list[Finding] = []
    seen: set[int] = set()

    def report(use: Stmt, gemm: Site, why: str) -> None:
        site = prog.site(use)
        acc = gemm.stmt.acc.buffer  # type: ignore[attr-defined]
        msg = f"{user_name(acc)} is used while wgmma MMAs that write it may still be in flight: {why}"
        first = first_thread(site.role)
        cex = Counterexample(
            code="MMA_IN_FLIGHT",
            message=msg,
            op_loc=use.loc,
            program_point=str(use.loc),
            block={v.name: 0 for v in ctx.kernel.block_vars},
            thread=ThreadPoint(first, site.role.name if site.role else None),
            variables={"wait_group": gemm.stmt.pending},  # type: ignore[attr-defined]
        )
        findings.append(Finding("MMA_IN_FLIGHT", Verdict.VIOLATED, msg, loc=use.loc, counterexample=cex))

    for site in prog.sites:
        s = site.stmt
        if not (isinstance(s, Gemm) and s.pending) or id(s) in seen:
            continue
        seen.add(id(s))
        acc = s.acc.buffer
        a_regs = s.a.buffer if s.a.space == Space.FRAGMENT else None
        line = s.loc.line if s.loc else "?"
        holder: Stmt = site.loops[-1] if site.loops else s
        if isinstance(holder, For) and (span := _waited_in_body(holder, s)) is not None:
            # completed by a wait in the same iteration: only what runs between the issue and that wait matters
            i, w = span
            rest: list[Stmt] = []  # what follows the MMA in the branches (blocks) that hold it inside the loop body
            for frame in reversed(site.frames):
                if frame.owner is holder:
                    break
                rest += frame.body[frame.pos + 1 :]
            use = _first_touch(tuple(rest) + tuple(holder.body[i + 1 : w]), acc, a_regs)
            if use is not None:
                report(
                    use,
                    site,
                    f"the MMAs issued at line {line} with wait_group {s.pending} complete only at line "
                    f"{holder.body[w].loc.line if holder.body[w].loc else '?'}, after it",
                )
            continue
        top = _waited_at_top(holder, s) if isinstance(holder, For) else None
        if top is not None:
            # in flight across the back edge until the wait at the top of the next iteration
            i, w = top
            rest = []
            for frame in reversed(site.frames):
                if frame.owner is holder:
                    break
                rest += frame.body[frame.pos + 1 :]
            use = _first_touch(tuple(rest) + tuple(holder.body[i + 1 :]) + tuple(holder.body[:w]), acc, a_regs)
            if use is not None:
                wait_line = holder.body[w].loc.line if holder.body[w].loc else "?"
                report(
                    use,
                    site,
                    f"the MMAs issued at line {line} with wait_group {s.pending} run on across the loop's back edge "
                    f"until the wait at line {wait_line}, in the next iteration",
                )
                continue
            # at the loop's exit the last iteration's MMAs are still in flight: the rule after the loop, below
        elif isinstance(holder, For):
            use = _first_touch(holder.body, acc, a_regs)
            if use is not None:
                report(
                    use,
                    site,
                    f"the loop's MMAs (line {line}, wait_group {s.pending}) are still running when it "
                    "runs, in this iteration or the next",
                )
                continue
        frame = prog.site(holder).frames[-1]
        after = frame.body[frame.pos + 1 :]
        waits = [i for i, x in enumerate(after) if isinstance(x, WgmmaWait) and x.pending == 0]
        before_wait = after[: waits[0]] if waits else after
        use = _first_touch(before_wait, acc)
        if use is not None:
            report(
                use,
                site,
                f"the MMAs issued at line {line} with wait_group {s.pending} are not waited for "
                "(T.wgmma_wait(0)) before it",
            )
            continue
        if waits:
            continue
        role: Role | None = site.role
        scope = role.body if role is not None else ctx.kernel.body
        inside = {id(x) for x in walk_all((holder,))}
        use = next((x for x in walk_all(scope) if id(x) not in inside and _touches(x, acc)), None)
        if use is not None:
            report(
                use,
                site,
                f"the MMAs issued at line {line} with wait_group {s.pending} are never waited for "
                "(no T.wgmma_wait(0) after their loop)",
            )
    return findings
