"""Generic-proxy writes accessed by the async proxy without a proxy fence (`FENCE_PROXY_ASYNC`).

Shared memory has two proxies on Hopper: ordinary loads and stores (and ``cp.async``) go through the
*generic* proxy; TMA and ``wgmma``'s operand reads go through the *async* proxy. A value written through
the generic proxy is only guaranteed visible to a later async-proxy read (and ordered before a later
async-proxy write: a TMA load into the same tile) if the writing thread executes ``fence.proxy.async`` after
its write and before the synchronisation that hands the buffer over (a barrier or an mbarrier arrival), or
before the access itself when there is none.

The check is structural, then exact:

* for every generic write of a shared buffer (``T.copy`` into shared memory other than TMA, ``T.fill``)
  the program is walked forward from the write, along every path (the rest of the body, the next
  iteration of each enclosing loop, what follows the loop), to the first *event*: a
  ``T.fence_proxy_async()`` (fine), a barrier or mbarrier arrival, or a ``wgmma`` reading the buffer or a
  TMA load writing it (both bad). Fences and barriers inside a ``T.if_`` do not count (they may not run);
  loops are assumed to run at least once, as everywhere in the verifier;
* for a path that reaches a barrier or the read first, one Z3 query asks for a thread and value of the
  write and an element of a later ``wgmma`` read (the same iteration when the read follows the write in the
  body, else the next iteration of the innermost loop around both) at the same physical offset, so a write
  that never reaches what the wgmma reads is not reported.

(The CUDA code generator today also inserts a fence and a barrier before a wgmma whose operand buffer
has ordinary stores anywhere in the kernel; the verifier checks the program as written, so that a kernel
does not depend on that defensive lowering.)
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from argus.ir.nodes import (
    Barrier,
    Buffer,
    Copy,
    Fence,
    FenceKind,
    Fill,
    For,
    Gemm,
    If,
    MbarrierArrive,
    Role,
    Space,
    Stmt,
)
from argus.verify import smt
from argus.verify.access import Access, accesses
from argus.verify.checks.races import access_report, common_loops, instance
from argus.verify.context import Context
from argus.verify.program import Frame, Program, Site, loop_name, user_name, walk_all
from argus.verify.report import Counterexample, Finding, Verdict, undecided


def generic_write(s: Stmt) -> Buffer | None:
    """The shared buffer `s` writes through the generic proxy, or None."""
    if isinstance(s, Copy) and s.dst.buffer.space == Space.SHARED and s.atom != "tma":
        return s.dst.buffer
    if isinstance(s, Fill) and s.dst.buffer.space == Space.SHARED:
        return s.dst.buffer
    return None


def async_reads(s: Stmt) -> tuple[Buffer, ...]:
    """The shared buffers `s` accesses through the async proxy: wgmma operands read from shared memory, and
    the destination a TMA load writes (a generic write followed by a TMA write of the same location needs the
    fence too, or the generic write may land last)."""
    if isinstance(s, Gemm) and "wgmma" in s.atom:
        return tuple(r.buffer for r in (s.a, s.b) if r.buffer.space == Space.SHARED)
    if isinstance(s, Copy) and s.atom == "tma" and s.dst.buffer.space == Space.SHARED:
        return (s.dst.buffer,)
    return ()


class _Event:
    def __init__(self, kind: str, stmt: Stmt | None, wrapped: tuple[For, ...]) -> None:
        self.kind = kind  # "fence", "sync", "read", "end"
        self.stmt = stmt
        self.wrapped = wrapped


def _event_of(s: Stmt, buffer: Buffer) -> str | None:
    if isinstance(s, Fence) and s.kind == FenceKind.PROXY_ASYNC:
        return "fence"
    if isinstance(s, Barrier | MbarrierArrive):
        return "sync"
    if buffer in async_reads(s):
        return "read"
    return None


def _scan_body(body: tuple[Stmt, ...], start: int, buffer: Buffer, origin: Stmt) -> tuple[str, Stmt] | None:
    """The first event in `body[start:]` (descending into loops and roles, which run; branches count only
    for the reads they contain), None when there is none; ``("cycle", origin)`` when the write is met again
    first."""
    for s in body[start:]:
        if s is origin:
            return ("cycle", s)
        kind = _event_of(s, buffer)
        if kind is not None:
            return (kind, s)
        if isinstance(s, For | Role):
            got = _scan_body(s.body, 0, buffer, origin)
            if got is not None:
                return got
        elif isinstance(s, If):
            for inner in walk_all(s.then + s.orelse):
                if _event_of(inner, buffer) == "read":
                    return ("read", inner)
    return None


def first_events(site: Site, buffer: Buffer) -> list[_Event]:
    """The first event after the write at `site` on every path (see the module docstring)."""
    out: list[_Event] = []

    def go(frames: tuple[Frame, ...], start: int, wrapped: tuple[For, ...]) -> None:
        if not frames:
            out.append(_Event("end", None, wrapped))
            return
        f = frames[-1]
        got = _scan_body(f.body, start, buffer, site.stmt)
        if got is not None:
            if got[0] != "cycle":
                out.append(_Event(got[0], got[1], wrapped))
            return
        owner = f.owner
        parent = frames[:-1]
        after = parent[-1].pos + 1 if parent else 0
        if isinstance(owner, For):
            if owner not in wrapped:
                go(frames, 0, wrapped + (owner,))  # the next iteration
        if owner is None:
            out.append(_Event("end", None, wrapped))
            return
        go(parent, after, wrapped)  # what follows the loop, role or branch

    go(site.frames, site.frames[-1].pos + 1, ())
    return out


def check_proxy_fences(ctx: Context) -> list[Finding]:
    prog: Program = ctx.analysis.program
    readers: dict[Buffer, list[Site]] = {}
    for site in prog.sites:
        for b in async_reads(site.stmt):
            readers.setdefault(b, []).append(site)
    if not readers:
        return []
    all_acc = accesses(prog)
    by_site: dict[tuple[int, str], list[Access]] = {}
    for a in all_acc:
        by_site.setdefault((a.site.index, a.kind), []).append(a)
    findings: list[Finding] = []
    for site in prog.sites:
        buf = generic_write(site.stmt)
        if buf is None or buf not in readers:
            continue
        start = time.perf_counter()
        bad = [e for e in first_events(site, buf) if e.kind in ("sync", "read")]
        verdict = Verdict.VERIFIED
        if bad:
            finding = _counterexample(ctx, prog, site, buf, bad, readers[buf], by_site)
            if finding is not None:
                findings.append(finding)
                verdict = finding.verdict
        ctx.record("proxy fence", f"{user_name(buf)}: {site.loc}", verdict, start)
    return findings


def _counterexample(
    ctx: Context,
    prog: Program,
    wsite: Site,
    buf: Buffer,
    bad: list[_Event],
    readers: list[Site],
    by_site: dict[tuple[int, str], list[Access]],
) -> Finding | None:
    writes = [a for a in by_site.get((wsite.index, "write"), []) if a.ref.buffer is buf]
    for event in bad:
        for rsite in readers:
            common = common_loops(wsite, rsite)
            if rsite.index > wsite.index:
                wrap = None  # the read later in the same iterations of the common loops
            elif common:
                wrap = common[-1]  # the read in the next iteration of the innermost loop around both
            else:
                continue  # the read runs before the write and no loop brings it back
            reads = [
                a for kind in ("read", "write") for a in by_site.get((rsite.index, kind), []) if a.ref.buffer is buf
            ]
            for w in writes:
                for r in reads:
                    env1, c1, t1, v1, off1, _ = instance(ctx, w, "_w")
                    env2, c2, t2, v2, off2, _ = instance(ctx, r, "_r")
                    cons = c1 + c2
                    for lp in common:
                        j1, j2 = smt.val(env1[lp.var]), smt.val(env2[lp.var])
                        cons.append(j2 == j1 + 1 if lp is wrap else j2 == j1)
                        if lp is wrap:
                            break
                    out = ctx.solve(cons, off1 == off2)
                    if out.verdict == Verdict.UNKNOWN:
                        return undecided(out, f"proxy-fence check on {user_name(buf)} undecided", loc=wsite.loc)
                    if out.verdict != Verdict.VIOLATED:
                        continue
                    write, read = (w, env1, t1, v1, off1), (r, env2, t2, v2, off2)
                    return _finding(ctx, out.model, wsite, rsite, buf, event, write, read)
    return None


def _finding(ctx: Context, m: Any, wsite: Site, rsite: Site, buf: Buffer, event: _Event, w: tuple, r: tuple) -> Finding:
    tma = isinstance(rsite.stmt, Copy)
    wr = access_report(ctx, m, w[0], w[1], w[2], w[3], w[4])
    rr = access_report(ctx, m, r[0], r[1], r[2], r[3], r[4])
    rr = replace(rr, op="TMA write (async proxy)" if tma else "wgmma operand read (async proxy)")
    name = user_name(buf)
    if event.kind == "sync" and event.stmt is not None:
        what = f"the {type(event.stmt).__name__.lower().replace('mbarrierarrive', 'mbarrier arrival')} at line " + str(
            event.stmt.loc.line if event.stmt.loc else "?"
        )
        where = f"before {what}"
    else:
        where = "before the TMA load overwrites it" if tma else "before the wgmma reads it"
    wrap = ""
    common = common_loops(wsite, rsite)
    if common and rsite.index <= wsite.index:
        wrap = f" (the next iteration of {loop_name(common[-1])})"
    msg = (
        f"{name}[{wr.element.index}] is written with ordinary stores (generic proxy) and "
        f"{'overwritten by a TMA load' if tma else 'read by wgmma'} (async proxy) at {rsite.loc}{wrap}, with no "
        f"T.fence_proxy_async() by the writing thread {where}"
    )
    cex = Counterexample(
        code="FENCE_PROXY_ASYNC",
        message=msg,
        op_loc=wsite.loc,
        program_point=f"{wsite.loc} and {rsite.loc}",
        block=ctx.block_values(m),
        shapes=ctx.shape_values(m),
        thread=wr.thread,
        loops=wr.loops,
        element=wr.element,
        accesses=(wr, rr),
    )
    return Finding("FENCE_PROXY_ASYNC", Verdict.VIOLATED, msg, loc=wsite.loc, counterexample=cex)
