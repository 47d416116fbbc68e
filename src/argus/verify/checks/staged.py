"""Staged TMA stores' chunk buffers (`PIPELINE_STORE_OVERWRITE`).

A staged store, ``T.copy(frag, C.tile(...), atom="tma.store", staging=sC)``, is expanded by the code generator as
`argus.atoms.tma` defines it, and this check proves that expansion's buffer protocol (the interpreter and the other
checks take the copy as one store of the fragment into the tile). The tile goes out in chunks of
`store_chunk_columns` columns; each warpgroup writes its 64 rows of chunk ``c`` into chunk buffer
``staged_store_buffer(c)`` of the staging buffer, and its issuing thread then commits one bulk async-group, a TMA
store that reads those rows of that buffer until it completes. Before the warpgroup writes chunk ``c``, the thread
runs ``cp.async.bulk.wait_group.read n`` with ``n = staged_store_wait(c)``: every group but its newest ``n`` has
finished reading. The write is safe when none of those ``n`` groups reads the chunk buffer it writes.

A thread's groups come from its own warpgroup's stores only (each warpgroup stores its own rows through its own
issuing thread, which the code generator checks on the fragment's layout), in program order. The newest ``n`` at
chunk ``c`` are chunks ``c - 1, ..., c - n`` of the same store, and where ``n > c`` the last chunks of the staged
store the thread ran before: any staged store of the same warp role (a store site in the role's program, in the same
or an earlier loop iteration; counted for every site, which over-approximates the sites that can come first). A group
of another staging buffer never conflicts. A conflict is reported `violated` where it is certain: within one store,
or from the same store site one iteration earlier of the innermost loop around it, when that site is the loop's only
staged store and Z3 finds sizes and blocks for which two consecutive iterations both run it; any other possible
conflict is `unknown`. The staging buffer must be the staged stores' alone (the tracer requires it; IR from
elsewhere is checked): any other access of it is `unknown` too. The shared-memory carve gives every buffer its own
bytes (`argus.atoms.smem.SharedCarve`), so no other buffer aliases a staging buffer.
"""

from __future__ import annotations

import time
from typing import Any

import z3

from argus.atoms.tma import staged_store_buffer, staged_store_wait, store_chunk_columns
from argus.ir.nodes import Copy, For
from argus.verify import smt
from argus.verify.access import accesses
from argus.verify.context import Context
from argus.verify.program import Program, Site, loop_name, user_name
from argus.verify.report import Counterexample, Finding, Verdict


def _chunks(s: Copy) -> int:
    """The chunks a staged store writes: its tile's columns over `store_chunk_columns`."""
    return int(s.dst.extent[-1]) // store_chunk_columns(s.dst.buffer.dtype)


def _buffer(s: Copy, chunk: int) -> tuple[int, int]:
    """(staging buffer, chunk buffer) chunk `chunk` of `s` is written into and then read by its TMA store."""
    return id(s.staging.buffer), staged_store_buffer(chunk)  # type: ignore[union-attr]


def _staged_sites(prog: Program) -> list[Site]:
    return [x for x in prog.sites if isinstance(x.stmt, Copy) and x.stmt.atom == "tma.store"]


def _history(sites: list[Site], role: Any, depth: int) -> list[list[tuple[Site, int]]]:
    """Every sequence of the `depth` newest groups (site, chunk), newest first, that staged stores of `role` could have
    left before a store starts: each store the thread ran before is any site of the role."""
    if depth <= 0:
        return [[]]
    out: list[list[tuple[Site, int]]] = []
    for t in (x for x in sites if x.role is role):
        n = _chunks(t.stmt)  # type: ignore[arg-type]
        last = [(t, c) for c in range(n - 1, max(n - depth, 0) - 1, -1)]
        for rest in _history(sites, role, depth - len(last)):
            out.append(last + rest)
    return out


def check_staged_stores(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    sites = _staged_sites(prog)
    if not sites:
        return []
    findings: list[Finding] = []
    staging = {id(x.stmt.staging.buffer): x for x in sites}  # type: ignore[attr-defined]
    for acc in accesses(prog):  # the staging buffers are the staged stores' alone
        if id(acc.ref.buffer) in staging:
            findings.append(
                Finding(
                    "UNKNOWN_STATEMENT",
                    Verdict.UNKNOWN,
                    f"{user_name(acc.ref.buffer)} is the staging buffer of a staged TMA store and is also accessed "
                    f"here: the verifier models it as the staged stores' alone",
                    loc=acc.site.loc,
                    reason="a staging buffer accessed outside the tma.store copies that own it",
                )
            )
            return findings
    for site in sites:
        start = time.perf_counter()
        s: Copy = site.stmt  # type: ignore[assignment]
        n_chunks = _chunks(s)
        verdict = Verdict.VERIFIED
        for c in range(n_chunks):
            pending = staged_store_wait(c)
            written = _buffer(s, c)
            # the newest `pending` groups: this store's earlier chunks, newest first, then what came before it
            own = [(site, k) for k in range(c - 1, max(c - pending, 0) - 1, -1)]
            for k in (k for _, k in own if _buffer(s, k) == written):
                findings.append(_within(ctx, site, c, k, pending))
                verdict = Verdict.VIOLATED
            if verdict == Verdict.VIOLATED or pending <= len(own):
                continue
            for history in _history(sites, site.role, pending - len(own)):
                clash = next(((t, k) for t, k in history if _buffer(t.stmt, k) == written), None)  # type: ignore[arg-type]
                if clash is None:
                    continue
                finding = _across(ctx, prog, sites, site, c, clash, pending)
                findings.append(finding)
                verdict = finding.verdict
                break
            if verdict != Verdict.VERIFIED:
                break
        ctx.record("staged store buffers", str(site.loc), verdict, start)
    return findings


def _message(site: Site, c: int, other: str, pending: int) -> str:
    s: Copy = site.stmt  # type: ignore[assignment]
    b = staged_store_buffer(c)
    return (
        f"chunk {c} of the staged TMA store into {user_name(s.dst.buffer)} is written into chunk buffer {b} of "
        f"{user_name(s.staging.buffer)} while {other}, which reads chunk buffer {b}, may still be reading it: the wait "
        f"before the chunk (cp.async.bulk.wait_group.read {pending}) leaves the thread's newest {pending} TMA "
        "store(s) in flight"
    )


def _within(ctx: Context, site: Site, c: int, k: int, pending: int) -> Finding:
    msg = _message(site, c, f"chunk {k}'s TMA store of the same tile", pending)
    cex = Counterexample(
        code="PIPELINE_STORE_OVERWRITE",
        message=msg,
        op_loc=site.loc,
        program_point=str(site.loc),
        variables={"chunk": c, "chunk still being stored": k, "wait_group.read": pending},
    )
    return Finding("PIPELINE_STORE_OVERWRITE", Verdict.VIOLATED, msg, loc=site.loc, counterexample=cex)


def _across(
    ctx: Context, prog: Program, sites: list[Site], site: Site, c: int, clash: tuple[Site, int], pending: int
) -> Finding:
    """The finding for chunk `c` of `site`, whose pending groups may include `clash` (site, chunk) of an earlier
    store: violated when that is the same site one iteration earlier of the innermost loop around it (the loop's
    only staged store) and two consecutive iterations can both run it; else unknown."""
    t, k = clash
    other = f"chunk {k}'s TMA store of the previous staged store ({t.loc})"
    loop = site.loops[-1] if site.loops else None
    alone = loop is not None and [x for x in sites if loop in x.loops] == [site]
    if t is site and alone:
        assert loop is not None
        model = _consecutive(ctx, site, loop)
        if model is not None:
            env_vars = {
                f"{loop_name(loop)} (the previous store)": model[1],
                f"{loop_name(loop)} (this store)": model[1] + 1,
            }
            msg = _message(site, c, other.replace("previous staged store", "previous iteration's store"), pending)
            cex = Counterexample(
                code="PIPELINE_STORE_OVERWRITE",
                message=msg,
                op_loc=site.loc,
                program_point=str(site.loc),
                block=ctx.block_values(model[0]),
                shapes=ctx.shape_values(model[0]),
                variables={**env_vars, "chunk": c, "chunk still being stored": k, "wait_group.read": pending},
            )
            return Finding("PIPELINE_STORE_OVERWRITE", Verdict.VIOLATED, msg, loc=site.loc, counterexample=cex)
    reason = (
        f"{_message(site, c, other, pending)}, if that store is the thread's last before this one; the verifier does "
        "not order staged stores of different sites or loops"
    )
    return Finding(
        "UNKNOWN_STATEMENT",
        Verdict.UNKNOWN,
        "the staged TMA store's chunk buffers could not be proved free",
        loc=site.loc,
        reason=reason,
    )


def _consecutive(ctx: Context, site: Site, loop: For) -> tuple[Any, int] | None:
    """(a model, the earlier iteration) in which iterations ``i`` and ``i + 1`` of `loop` both run `site` (the loops
    around it in range, its branches taken), or None where Z3 finds none."""
    cons: list[Any] = []
    envs = []
    for suffix in ("#a", "#b"):
        env, c = ctx.loop_env(site, suffix=f"{suffix}staged")
        cons += c
        for branch, taken in site.ifs:
            cond = smt.boolean(smt.evaluate(branch.cond, env))
            cons.append(cond if taken else z3.Not(cond))
        envs.append(env)
    a, b = envs
    for lp in site.loops:  # the outer loops in the same iteration, `loop` one apart
        cons.append(b[lp.var] == (a[lp.var] + 1 if lp is loop else a[lp.var]))
    out = ctx.solve(cons, z3.BoolVal(True))
    if out.verdict != Verdict.VIOLATED:
        return None
    return out.model, smt.model_int(out.model, a[loop.var])
