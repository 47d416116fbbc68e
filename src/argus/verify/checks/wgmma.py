"""Asynchronous MMAs and their accumulators (`MMA_IN_FLIGHT`).

A `Gemm` issued with ``pending > 0`` (``T.gemm(..., wait_group=P)``, or the deferred-release pass of
`argus.ir.passes`) goes on writing its accumulator after the statement, until a wgmma wait leaves fewer groups in
flight. The check proves, by structure, that nothing but another ``wgmma`` on the same accumulator (which the
hardware orders after the MMAs in flight) touches the accumulator while such MMAs may run:

* inside the loop that issues them, no other statement reads or writes the accumulator (each iteration leaves a
  group in flight across the loop's back edge);
* after the loop, a `WgmmaWait` of 0 in the body that holds the loop, outside any branch, comes before the first
  statement that touches the accumulator there; with no such wait, any use of the accumulator elsewhere in the role
  (after the loop, or before it in the next iteration of an enclosing loop) is reported.

An asynchronous MMA outside a loop needs the same wait after it, in its own body. The check is structural: each
finding holds for every block and iteration (block 0, the first iteration is shown).
"""

from __future__ import annotations

from argus.atoms import MmaAtom, get_atom
from argus.ir.nodes import Buffer, For, Gemm, Role, Stmt, WgmmaWait
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


def _first_touch(stmts: tuple[Stmt, ...], acc: Buffer) -> Stmt | None:
    for s in walk_all(stmts):
        if _touches(s, acc):
            return s
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
        line = s.loc.line if s.loc else "?"
        holder: Stmt = site.loops[-1] if site.loops else s
        if isinstance(holder, For):
            use = _first_touch(holder.body, acc)
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
