"""Resource budgets (`BUDGET_SMEM`, `BUDGET_REGISTERS`): exact sums, no solver needed.

* Shared memory: every shared buffer's *physical* extent (its layout's cosize, so padding and
  swizzle footprints count) times its element size, plus 8 bytes per mbarrier, against the 227 KiB
  a Hopper block may use.
* Registers: the fragments live at each program point, in 32-bit registers per thread, against 255 or the warp
  role's ``setmaxnreg`` budget (with several blocks per SM, code outside a ``setmaxnreg`` role against the launch
  bounds' count; a role's ``setmaxnreg`` budget holds in its code even above that count, ptxas allocating up to it,
  except at its warpgroup MMAs, which ptxas compiles within the launch bounds' count).
  A fragment is live from the first statement that writes it to its last use;
  one used inside a loop it was allocated outside of is live for the whole loop, unless every iteration
  overwrites all of it before any use (a ``T.fill`` or whole copy that comes first in the iteration and
  encloses the uses: the value is not carried to the next iteration, e.g. a persistent kernel's accumulator,
  reset per tile). An elementwise statement or copy whose fragment operands die there (their last use, or the
  next statement that refers to one, in the same block, overwrites it whole) may write its result over them
  element by element: there it counts the larger of the result and those operands, not both (``T.copy(o *
  alpha[:, None], o)`` rescales o in place). A fragment holding only its elements' coordinates (``T.index``), or
  integer values computed elementwise from such fragments and values the same for every element (a mask's integer
  comparison of the key and row coordinates with a limit), counts nothing: the compiler folds those values
  (functions of the thread and element index) into the instructions that use them (float arithmetic on them it
  does not: `_coordinate_fragments`). Addresses and indices need registers too, so this is a lower bound on what
  the fragments as written take: exceeding it means the compiler must spill.
"""

from __future__ import annotations

import time
from typing import Any

from argus.atoms.common import MAX_THREAD_REGISTERS as MAX_REGISTERS
from argus.atoms.common import shared_budget
from argus.atoms.smem import SharedCarve
from argus.ir.nodes import Alloc, Broadcast, Buffer, Copy, Fill, Gemm, Map, MapOp, Reduce, Space, TileRef
from argus.verify.blame import register_blame, smem_blame
from argus.verify.context import Context
from argus.verify.program import Site, user_name
from argus.verify.report import Finding, Verdict


def shared_bytes(buffer: Buffer) -> int:
    """The bytes of a shared buffer or mbarrier array (`argus.atoms.smem.SharedCarve.footprint`)."""
    return SharedCarve.footprint(buffer)[0]


def check_shared_budget(ctx: Context) -> list[Finding]:
    """The block's shared memory as the generated code carves it (alignment padding included) against the budget."""
    start = time.perf_counter()
    rows = []
    carve = SharedCarve()
    for site in ctx.analysis.program.sites:
        s = site.stmt
        shared = isinstance(s, Alloc) and s.buffer.space not in (Space.FRAGMENT, Space.GLOBAL)
        if shared and s.buffer not in carve.offsets:
            carve.place(s.buffer)
            rows.append((user_name(s.buffer), shared_bytes(s.buffer), site))
    total = carve.total
    findings = []
    blocks = getattr(ctx.analysis.kernel, "blocks_per_sm", 1)
    budget = shared_budget(blocks)
    if total > budget:
        biggest = max(rows, key=lambda r: r[1])
        parts = ", ".join(f"{n} {b} B" for n, b, _ in rows)
        per = "a Hopper block may use" if blocks == 1 else f"with {blocks} blocks per SM a Hopper block may use"
        msg = f"the block needs {total} bytes of shared memory ({parts}); {per} {budget}"
        findings.append(
            Finding(
                "BUDGET_SMEM",
                Verdict.VIOLATED,
                msg,
                loc=biggest[2].loc,
                details={
                    "total_bytes": total,
                    "budget_bytes": budget,
                    "blocks_per_sm": blocks,
                    "buffers": {n: b for n, b, _ in rows},
                },
                blame=smem_blame(ctx.analysis.kernel, rows, budget, blocks, shared_budget(1)),
            )
        )
    ctx.record("shared-memory budget", f"{total} B", Verdict.VIOLATED if findings else Verdict.VERIFIED, start)
    return findings


def _refs(stmt) -> list[Buffer]:
    out = []
    for v in vars(stmt).values():
        items = v if isinstance(v, tuple) else (v,)
        for x in items:
            if isinstance(x, TileRef):
                out.append(x.buffer)
            elif isinstance(x, Broadcast):
                out.append(x.ref.buffer)
    return out


def registers_of(buffer: Buffer) -> int:
    return -(-buffer.values_per_thread * buffer.dtype.bits // 32)


def _overwrites(stmt: Any) -> Buffer | None:
    """The fragment `stmt` writes whole without reading it (a fill, a whole copy, elementwise or reduction
    result), else None."""
    if isinstance(stmt, (Fill, Copy, Map, Reduce)) and stmt.dst.space == Space.FRAGMENT and stmt.dst.is_whole():
        if isinstance(stmt, Fill) or stmt.dst.buffer not in _reads(stmt):
            return stmt.dst.buffer
    return None


def _reads(stmt: Any) -> list[Buffer]:
    srcs = stmt.srcs if isinstance(stmt, Map) else (stmt.src,) if isinstance(stmt, (Copy, Reduce)) else ()
    return [(x.ref if isinstance(x, Broadcast) else x).buffer for x in srcs if isinstance(x, (TileRef, Broadcast))]


def _encloses(outer: Site, inner: Site) -> bool:
    """Whether `outer` comes first and every block holding it holds `inner` too (it runs whenever `inner` does,
    before it, in the same iteration of every loop around it)."""
    blocks = [(f.owner, f.branch) for f in outer.frames]
    return outer.index < inner.index and blocks == [(f.owner, f.branch) for f in inner.frames[: len(blocks)]]


def _coordinate_fragments(prog: Any) -> set[Buffer]:
    """The fragments that hold only functions of their elements' coordinates: written only by `T.index`, or only by
    elementwise statements whose fragment operands are such fragments of integers (or truth values), their other
    operands values the same for every element (a mask's ``T.index(s, 1, T.i32) - T.index(s, 0, T.i32) <=
    limit``). They count nothing: each value is a function of the thread, the element index and uniform values,
    which the compiler folds into (or recomputes at) the instructions that use it, as ptxas does for the attention
    masks in integers (no spill at 160 registers where S and the tail mask as stored would be 164). Float
    arithmetic on coordinates is not folded (ptxas does not reassociate floats: ``T.index(s, 1) + j * BN < S`` in
    f32 is held per element, and the lineage's warp-specialized attention spills at 96 registers where its
    fragments with that mask take 100), so a fragment computed from float coordinates counts as stored. (A tile
    operand, read from memory, is never such a fragment.)"""
    writers: dict[Buffer, list[Any]] = {}
    for site in prog.sites:
        if isinstance(site.stmt, Fill | Copy | Map | Reduce) and site.stmt.dst.space == Space.FRAGMENT:
            writers.setdefault(site.stmt.dst.buffer, []).append(site.stmt)
    found: set[Buffer] = set()
    while True:
        more = {
            b
            for b, stmts in writers.items()
            if b not in found
            and all(
                isinstance(s, Map)
                and (s.op == MapOp.COORD or all(r in found and not r.dtype.is_float for r in _reads(s)))
                for s in stmts
            )
        }
        if not more:
            return found
        found |= more


def check_register_budget(ctx: Context) -> list[Finding]:
    start = time.perf_counter()
    prog = ctx.analysis.program
    first: dict[Buffer, Site] = {}  # the allocation
    born: dict[Buffer, int] = {}  # the first statement that writes it
    last: dict[Buffer, int] = {}
    kills: dict[Buffer, list[Site]] = {}  # statements that overwrite it whole
    coordinates = _coordinate_fragments(prog)
    for site in prog.sites:
        s = site.stmt
        if isinstance(s, Alloc) and s.buffer.space == Space.FRAGMENT and s.buffer not in coordinates:
            first[s.buffer] = site
            continue
        killed = _overwrites(s)
        if killed in first:
            kills.setdefault(killed, []).append(site)
        for b in _refs(s):
            if b in first:
                begin = end = site.index
                alloc = first[b]
                for lp in site.loops:  # used in a loop that does not contain the allocation: carried around it
                    loop = prog.site(lp)
                    if lp in alloc.loops or killed is b:  # (overwriting it whole reads nothing carried)
                        continue
                    if any(loop.index < k.index <= loop.end and _encloses(k, site) for k in kills.get(b, ())):
                        continue  # ... unless each iteration overwrites it before this use
                    begin, end = min(begin, loop.index), max(end, loop.end)
                born[b] = min(born.get(b, begin), begin)
                last[b] = max(last.get(b, end), end)
    elementwise = {site.index: site.stmt for site in prog.sites if isinstance(site.stmt, Map | Copy)}
    refs: dict[Buffer, list[int]] = {}  # the statements that refer to each fragment, in program order
    for site in prog.sites:
        for b in _refs(site.stmt):
            if b in first and not isinstance(site.stmt, Alloc):
                refs.setdefault(b, []).append(site.index)

    def dies(b: Buffer, site: Site) -> bool:
        """Whether the value of `b` read at `site` is read nowhere after it: its last use, or the next statement
        that refers to it, in the same block (straight-line code after `site`), overwrites it whole."""
        if last[b] == site.index:
            return True
        later = [i for i in refs.get(b, ()) if i > site.index]
        if not later:
            return False
        nxt = prog.sites[later[0]]
        same_block = [(f.owner, f.branch) for f in nxt.frames] == [(f.owner, f.branch) for f in site.frames]
        return same_block and _overwrites(nxt.stmt) is b

    findings = []
    peak_by_role: dict[str, tuple[int, int, list[str]]] = {}
    peak_live: dict[str, list[Buffer]] = {}
    peak_mma_by_role: dict[str, tuple[int, int, list[str]]] = {}  # the peaks at warpgroup MMAs
    peak_mma_live: dict[str, list[Buffer]] = {}
    for site in prog.sites:
        role = site.role
        key = role.name if role is not None else ""
        live = [
            b
            for b, a in first.items()
            if b in born and born[b] <= site.index <= last[b] and (a.role is role or a.role is None)
        ]
        regs = sum(registers_of(b) for b in live)
        stmt = elementwise.get(site.index)
        fresh = stmt is not None and stmt.dst.buffer in live and born[stmt.dst.buffer] == site.index
        if fresh or (stmt is not None and stmt.dst.buffer in live and _overwrites(stmt) is stmt.dst.buffer):
            # written over the operands that die here, element by element: the larger of the two, not both (also
            # where the result overwrites a fragment whose old value is dead: ``T.copy(o * alpha[:, None], o)``)
            srcs = stmt.srcs if isinstance(stmt, Map) else (stmt.src,)
            dying = {
                x.buffer
                for x in srcs
                if isinstance(x, TileRef) and x.buffer in live and x.buffer is not stmt.dst.buffer
                and x.buffer.tv == stmt.dst.buffer.tv and dies(x.buffer, site)
            }  # fmt: skip
            if dying:
                result, operands = registers_of(stmt.dst.buffer), sum(registers_of(b) for b in dying)
                regs -= min(result, operands)
                live = [b for b in live if b is not stmt.dst.buffer] if result <= operands else live
                live = live if result <= operands else [b for b in live if b not in dying]
        if regs > peak_by_role.get(key, (0, 0, []))[0]:
            peak_by_role[key] = (regs, site.index, [f"{user_name(b)} {registers_of(b)}" for b in live])
            peak_live[key] = live
        if isinstance(site.stmt, Gemm) and regs > peak_mma_by_role.get(key, (0, 0, []))[0]:
            peak_mma_by_role[key] = (regs, site.index, [f"{user_name(b)} {registers_of(b)}" for b in live])
            peak_mma_live[key] = live
    kernel = ctx.analysis.kernel
    blocks = getattr(kernel, "blocks_per_sm", 1)
    cap = None
    if blocks > 1:  # the launch bounds' count (below)
        from argus.atoms.common import register_split

        cap = register_split(kernel.threads, [], blocks)[1]
    # With several blocks per SM the launch bounds fix a register count at entry. Code outside a setmaxnreg role
    # is compiled within it. A role that sets its count by setmaxnreg gets that count in its code, above the
    # launch bounds' (sm_90a SASS of attention_warp_specialized at __launch_bounds__(256, 3): 80 at entry,
    # USETMAXREG.TRY_ALLOC 136, the consumer using up to R121, correct on an H200: benchmarks/results/
    # 2026-12-01-attention-ws), except at its warpgroup MMAs: ptxas compiles each within the entry count (a
    # 128-register accumulator under __launch_bounds__(384, 2): "Insufficient registers (80) to compile
    # instruction", whatever setmaxnreg says). So a split role's peak is checked against its budget, and its peak
    # at an MMA against the entry count.
    checks = []
    for key, (regs, index, parts) in peak_by_role.items():
        site = prog.sites[index]
        split = site.role is not None and bool(site.role.registers)
        budget = site.role.registers if split else MAX_REGISTERS
        capped = cap is not None and cap < budget and not split
        checks.append((key, regs, index, parts, peak_live[key], budget, capped, ""))
        if split and cap is not None and cap < budget and key in peak_mma_by_role:
            m_regs, m_index, m_parts = peak_mma_by_role[key]
            checks.append((key, m_regs, m_index, m_parts, peak_mma_live[key], budget, True, " at a warpgroup MMA"))
    for key, regs, index, parts, live, budget, capped, at in checks:
        site = prog.sites[index]
        uncapped = budget if capped else None
        budget = min(budget, cap) if capped else budget
        if regs > budget:
            where = f"warp role {key!r}" if key else "each thread"
            why = (
                f" (the register count of __launch_bounds__({kernel.threads}, {blocks}), within which ptxas compiles "
                + ("every warpgroup MMA, setmaxnreg or not)" if at else "every part of the kernel outside setmaxnreg)")
                if capped
                else ""
            )
            msg = (
                f"{where} needs at least {regs} registers for the fragments live{at or ' here'} ({', '.join(parts)}); "
                f"the budget is {budget}{why}"
            )
            findings.append(
                Finding(
                    "BUDGET_REGISTERS",
                    Verdict.VIOLATED,
                    msg,
                    loc=site.loc,
                    details={"registers": regs, "budget": budget},
                    blame=register_blame(kernel, _live_rows(live, first), budget, uncapped, blocks),
                )
            )
    findings += _register_split(ctx)
    ctx.record(
        "register budget",
        str(max((v[0] for v in peak_by_role.values()), default=0)),
        Verdict.VIOLATED if findings else Verdict.VERIFIED,
        start,
    )
    return findings


def _live_rows(live: list[Buffer], first: dict[Buffer, Site]) -> list[tuple[str, int, Site]]:
    """(name, registers, allocation site) of the `live` fragments, in allocation order."""
    return [(user_name(b), registers_of(b), first[b]) for b in sorted(live, key=lambda b: first[b].index)]


def _register_split(ctx: Context) -> list[Finding]:
    """The warp roles' ``setmaxnreg`` budgets: each a multiple of 8 in 24..256, and all of them together
    (`argus.atoms.common.register_split`, the arithmetic the code generator uses) within the register file —
    ``setmaxnreg.inc`` waits until registers are free, so an over-committed split hangs."""
    from argus.atoms.common import WARPGROUP_SIZE, register_pool, register_split, setmaxnreg_ok
    from argus.ir.nodes import Role, walk

    kernel = ctx.analysis.kernel
    roles = [r for r in walk(kernel.body) if isinstance(r, Role)]
    if not any(r.registers for r in roles):
        return []
    blocks = getattr(kernel, "blocks_per_sm", 1)
    total, entry = register_split(kernel.threads, [(len(r.warpgroups), r.registers) for r in roles], blocks)
    pool = register_pool(kernel.threads, blocks)
    findings = []
    parts = [f"{r.name} {WARPGROUP_SIZE * len(r.warpgroups)} x {r.registers or entry}" for r in roles]
    covered = sum(WARPGROUP_SIZE * len(r.warpgroups) for r in roles)
    if kernel.threads > covered:
        parts.append(f"other threads {kernel.threads - covered} x {entry}")
    for r in roles:
        if r.registers and not setmaxnreg_ok(r.registers):
            findings.append(
                Finding(
                    "BUDGET_REGISTERS",
                    Verdict.VIOLATED,
                    f"warp role {r.name!r} asks setmaxnreg for {r.registers} registers: a multiple of 8 in 24..256",
                    loc=r.loc,
                    details={"registers": r.registers},
                )
            )
    if total > pool:
        worst = max((r for r in roles if r.registers), key=lambda r: r.registers)
        has = (
            f"the register file has {pool}"
            if blocks == 1
            else f"a block holds {pool} ({kernel.threads} threads x {entry} at entry, {blocks} blocks per SM)"
        )
        findings.append(
            Finding(
                "BUDGET_REGISTERS",
                Verdict.VIOLATED,
                f"the warp roles' register budgets need {total} registers ({', '.join(parts)}), {has}: "
                f"setmaxnreg.inc in role {worst.name!r} would wait forever",
                loc=worst.loc,
                details={"registers": total, "budget": pool, "blocks_per_sm": blocks},
            )
        )
    return findings
