"""Barriers that do not synchronize the threads that execute them (`RACE_BARRIER_THREADS`).

The race and pipeline checks take a barrier to separate the threads of the scope it is in (the block, or
the warp role). That holds only if the hardware barrier waits for exactly those threads:

* ``T.barrier()`` is ``__syncthreads()`` (``bar.sync 0`` over the whole block): inside a warp role of a
  kernel with other roles, the other roles' threads never arrive, and the block hangs;
* ``T.barrier(id, threads=n)`` is ``bar.sync id, n``: it releases when `n` threads have arrived. The threads
  that execute a barrier with that id are those of every scope (role or block) with a statement using it;
  with fewer than `n` the barrier never completes, with more it releases early and the threads are not
  synchronized (and later uses of the id mix generations).

Barriers inside a ``T.if_`` are not checked (the branch's threads are not known).
"""

from __future__ import annotations

import time

from argus.ir.nodes import Barrier, BarrierKind, Role
from argus.verify.context import Context
from argus.verify.program import Site, first_thread
from argus.verify.report import Counterexample, Finding, ThreadPoint, Verdict


def check_barrier_threads(ctx: Context) -> list[Finding]:
    prog = ctx.analysis.program
    roles = [s.stmt for s in prog.sites if isinstance(s.stmt, Role)]
    named: dict[int, list[Site]] = {}
    block: list[Site] = []
    for site in prog.sites:
        s = site.stmt
        if not isinstance(s, Barrier) or site.ifs:
            continue
        if s.kind == BarrierKind.BLOCK:
            block.append(site)
        else:
            named.setdefault(s.barrier_id, []).append(site)
    findings: list[Finding] = []
    for site in block:
        start = time.perf_counter()
        role = site.role
        covers_block = role is None or len(prog.role_threads(role)) == ctx.kernel.threads
        if not covers_block and roles:
            assert role is not None
            others = [r.name for r in roles if r is not role]
            msg = (
                f"T.barrier() is __syncthreads() over the block's {ctx.kernel.threads} threads, but only role "
                f"{role.name!r}'s {len(prog.role_threads(role))} threads execute it (not {', '.join(others)}): "
                "the block hangs; use a named barrier over the role, T.barrier(id, threads=...)"
            )
            findings.append(_finding(ctx, site, msg, ctx.kernel.threads, len(prog.role_threads(role))))
        ctx.record("barrier threads", str(site.loc), Verdict.VIOLATED if findings else Verdict.VERIFIED, start)
    for barrier_id, sites in named.items():
        start = time.perf_counter()
        scopes: dict[int, Role | None] = {}
        for site in sites:
            scopes[id(site.role)] = site.role
        executing = set()
        for role in scopes.values():
            executing |= set(prog.role_threads(role))
        verdict = Verdict.VERIFIED
        for site in sites:
            s = site.stmt
            assert isinstance(s, Barrier)
            wanted = s.threads if s.threads is not None else ctx.kernel.threads
            if wanted == len(executing):
                continue
            where = ", ".join(sorted({r.name if r is not None else "the block" for r in scopes.values()}))
            effect = (
                "it never completes (a hang)"
                if wanted > len(executing)
                else "it releases before all of them arrive, so they are not synchronized"
            )
            msg = (
                f"named barrier {barrier_id} counts {wanted} threads, but {len(executing)} execute it ({where}): "
                f"{effect}"
            )
            findings.append(_finding(ctx, site, msg, wanted, len(executing)))
            verdict = Verdict.VIOLATED
        ctx.record("barrier threads", f"named barrier {barrier_id}", verdict, start)
    return findings


def _finding(ctx: Context, site: Site, msg: str, wanted: int, executing: int) -> Finding:
    role = site.role
    first = first_thread(role)
    cex = Counterexample(
        code="RACE_BARRIER_THREADS",
        message=msg,
        op_loc=site.loc,
        program_point=str(site.loc),
        block={v.name: 0 for v in ctx.kernel.block_vars},  # any block: the same in every one
        thread=ThreadPoint(first, role.name if role is not None else None),
        variables={"barrier_threads": wanted, "executing_threads": executing},
    )
    details = {"barrier_threads": wanted, "executing_threads": executing}
    return Finding("RACE_BARRIER_THREADS", Verdict.VIOLATED, msg, loc=site.loc, counterexample=cex, details=details)
