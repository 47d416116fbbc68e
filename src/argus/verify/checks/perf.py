"""Performance warnings: shared-memory bank conflicts (`PERF_BANK_CONFLICT`) and uncoalesced global
accesses (`PERF_UNCOALESCED`). Warnings only, never errors.

Both are counted exactly, by enumerating the threads of every warp at representative values of the
loop variables (every stage a loop variable selects, up to `SAMPLES`), block 0 and problem sizes
large enough that no tile is partial and allowed by the kernel's assumptions (`representative_sizes`).
An instruction is a group of one thread's values: the largest power-of-two run (at most 16 bytes) that is
contiguous and aligned for every thread, as a vectorizing lowering would emit; `ldmatrix` reads 16-byte rows,
eight rows (one 8x8 matrix) per phase.

* Bank conflicts: shared memory has 32 banks of 4 bytes; a warp's access of ``w``-byte vectors is
  served in phases of ``128 / w`` threads, and a phase needs as many wavefronts as the largest number
  of distinct 4-byte words it touches in one bank. Degree = wavefronts / phases.
* Coalescing: degree = 32-byte sectors a warp's instruction touches / sectors its bytes need. A fragment's
  stores are counted as the code generator emits them: widened to 16-byte runs by a lane exchange where
  `argus.atoms.copy.lane_exchange` finds one (the ``wgmma``/``mma.sync`` accumulator with a 16-bit output).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from argus.atoms.copy import lane_exchange
from argus.ir.expr import Expr, evaluate
from argus.ir.nodes import Copy, Space
from argus.verify.access import Access, accesses
from argus.verify.context import Context
from argus.verify.program import shared_layout, user_name
from argus.verify.report import Finding, Verdict

SAMPLES = 4
REPRESENTATIVE_EXTENT = 1 << 14


def representative_sizes(ctx: Context) -> dict[Any, int]:
    """The problem sizes the counts use: every shape symbol at least `REPRESENTATIVE_EXTENT` (no tile is partial)
    and a multiple of as large a power of two as the kernel's assumptions allow together (Z3 picks them, so that
    ``Q % 192 == 0 and Q // 3 >= C`` gets Q = 3 * 2^14, C = 2^14); the plain extent for every symbol when no such
    sizes are found within the solver's budget."""
    import z3

    from argus.verify import smt

    plain = {v: REPRESENTATIVE_EXTENT for v in ctx.kernel.shape_vars}
    terms = ctx.shape_terms
    if not terms:
        return plain
    solver = z3.SolverFor("QF_BV")
    solver.set("rlimit", 5_000_000)
    solver.add(*ctx.base_constraints, *smt.definitions(ctx.base_constraints))
    solver.add(*[z3.And(t >= REPRESENTATIVE_EXTENT, t <= 64 * REPRESENTATIVE_EXTENT) for t in terms.values()])
    for bits in (14, 10, 7, 4, 0):
        solver.push()
        solver.add(*[t & ((1 << bits) - 1) == 0 for t in terms.values()])
        if solver.check() == z3.sat:
            model = solver.model()
            return {v: smt.model_int(model, t) for v, t in terms.items()}
        solver.pop()
    return plain


def _int(e: Any, env: dict) -> int:
    if isinstance(e, int):
        return e
    return int(evaluate(e, env))


def _bcoords(acc: Access, win: tuple[int, ...], env: dict) -> tuple[int, ...]:
    from argus.verify.program import kept

    by_dim = dict(zip(kept(acc.ref), win, strict=True))
    return tuple(_int(o, env) + by_dim.get(d, 0) for d, o in enumerate(acc.ref.origin))


def _envs(ctx: Context, acc: Access, sizes: dict[Any, int]) -> list[dict]:
    """Representative environments: block 0, the problem `sizes` (`representative_sizes`), and every combination of
    up to `SAMPLES` values of the loop variables the access's window depends on (0 for the others)."""
    from argus.ir.expr import free_vars

    k = ctx.kernel
    base: dict = dict(sizes)
    base.update({v: 0 for v in k.block_vars})
    deps: set = set()
    for o in acc.ref.origin:
        if isinstance(o, Expr):
            deps |= free_vars(o)
    loops = [lp for lp in acc.site.loops if lp.var in deps]
    for lp in acc.site.loops:
        base[lp.var] = 0
    out = []
    for values in itertools.product(*[range(SAMPLES) for _ in loops]):
        env = dict(base)
        env.update(zip([lp.var for lp in loops], values, strict=True))
        out.append(env)
    return out


def _addresses(ctx: Context, acc: Access, env: dict, elem_bytes: int) -> np.ndarray:
    """(threads, values) byte addresses, -1 where the value does not exist or is masked."""
    from argus.verify.access import np_layout
    from argus.verify.program import kept

    t, v = np.meshgrid(np.arange(acc.threads), np.arange(acc.values), indexing="ij")
    env = dict(env)
    env[ctx.kernel.thread_var] = acc.absolute(ctx.analysis.program, t)
    win, valid = acc.window(t, v)
    by_dim = dict(zip(kept(acc.ref), win, strict=True))
    buf = acc.ref.buffer
    coords = []
    for d, o in enumerate(acc.ref.origin):
        origin = np.asarray(evaluate(o, env)) if isinstance(o, Expr) else o
        coords.append(origin + by_dim[d] if d in by_dim else origin + 0 * t)
    valid = np.asarray(valid, dtype=bool) & np.ones(t.shape, dtype=bool)
    if buf.space == Space.SHARED:
        offsets = np_layout(shared_layout(acc.ref), tuple(coords) if len(coords) > 1 else coords[0])
        return np.where(valid, np.asarray(offsets) * elem_bytes, -1)
    shape = [_int(s, env) for s in buf.shape]
    flat = np.zeros(t.shape, dtype=np.int64)
    for c, s in zip(coords, shape, strict=True):
        valid &= (c >= 0) & (c < s)
        flat = flat * s + c
    return np.where(valid, flat * elem_bytes, -1)


def _vector(addr: np.ndarray, elem_bytes: int) -> int:
    """Values per instruction: the largest power of two run that is contiguous and aligned for all."""
    best = 1
    n = 2
    values = addr.shape[1]
    while n * elem_bytes <= 16 and values % n == 0:
        groups = addr.reshape(addr.shape[0], values // n, n)
        first = groups[:, :, :1]
        ok = np.all((groups == -1) | (groups == first + np.arange(n) * elem_bytes)) and np.all(
            (first == -1) | (first % (n * elem_bytes) == 0)
        )
        if not ok:
            break
        best = n
        n *= 2
    return best


def _bank_degree(chunks: list[tuple[int, int]]) -> int:
    """Wavefronts for one phase: chunks are (byte address, bytes)."""
    banks: dict[int, set] = {}
    for addr, nbytes in chunks:
        for word in range(addr // 4, (addr + nbytes + 3) // 4):
            banks.setdefault(word % 32, set()).add(word)
    return max((len(w) for w in banks.values()), default=1)


def bank_conflicts(addr: np.ndarray, elem_bytes: int, ldmatrix: bool) -> tuple[float, int]:
    """(worst degree over warps and instructions, instruction index) for a shared access."""
    worst, where = 1.0, 0
    threads = addr.shape[0]
    for w0 in range(0, threads, 32):
        warp = addr[w0 : w0 + 32]
        if ldmatrix and warp.shape[1] % 8 == 0:
            for i in range(warp.shape[1] // 8):
                waves = 0
                for j in range(4):
                    vals = warp[:, 8 * i + 2 * j : 8 * i + 2 * j + 2].ravel()
                    rows = sorted({int(a) // 16 * 16 for a in vals if a >= 0})
                    waves += _bank_degree([(r, 16) for r in rows]) if rows else 0
                degree = waves / 4
                if degree > worst:
                    worst, where = degree, i
            continue
        n = _vector(warp, elem_bytes)
        width = n * elem_bytes
        per_phase = max(1, 128 // max(width, 4)) if width >= 4 else 32
        for i in range(warp.shape[1] // n):
            starts = warp[:, i * n]
            phases = [starts[p : p + per_phase] for p in range(0, len(starts), per_phase)]
            waves = sum(_bank_degree([(int(a), width) for a in ph if a >= 0]) for ph in phases)
            degree = waves / len(phases)
            if degree > worst:
                worst, where = degree, i
    return worst, where


def as_stored(acc: Access, addr: np.ndarray, elem_bytes: int) -> np.ndarray:
    """A fragment's stores to global memory as the code generator emits them: where neighbouring lanes can
    exchange their short runs so that each thread stores 16-byte runs (`argus.atoms.copy.lane_exchange`, the
    plan the lowering uses), the addresses each thread stores after the exchange; otherwise `addr` unchanged."""
    if acc.kind != "write" or acc.dist != "fragment" or np.any(addr < 0) or np.any(addr % elem_bytes):
        return addr
    plan = lane_exchange(addr // elem_bytes, elem_bytes)
    return addr if plan is None else plan.regroup(addr)


def uncoalesced(addr: np.ndarray, elem_bytes: int) -> tuple[float, int]:
    worst, where = 1.0, 0
    for w0 in range(0, addr.shape[0], 32):
        warp = addr[w0 : w0 + 32]
        n = _vector(warp, elem_bytes)
        for i in range(warp.shape[1] // n):
            block = warp[:, i * n : (i + 1) * n].ravel()
            block = block[block >= 0]
            if block.size == 0:
                continue
            sectors = len({int(a) // 32 for a in block})
            need = -(-len(set(block.tolist())) * elem_bytes // 32)
            degree = sectors / max(1, need)
            if degree > worst:
                worst, where = degree, i
    return worst, where


def check_performance(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    seen: set = set()
    sizes: dict[Any, int] | None = None  # one Z3 search for the kernel, when an access needs them
    for acc in accesses(ctx.analysis.program):
        if acc.mode == "tma" or acc.dist == "group":
            continue  # descriptor-based: no per-thread addresses
        if isinstance(acc.site.stmt, Copy) and acc.site.stmt.atom == "tma.store":
            continue  # the threads write a swizzled staging buffer; TMA stores whole 128-byte rows
        start = time.perf_counter()
        buf = acc.ref.buffer
        elem = buf.dtype.bits // 8
        ldm = isinstance(acc.site.stmt, Copy) and acc.site.stmt.atom in ("ldmatrix", "stmatrix")
        worst = (1.0, 0)
        try:
            if sizes is None:
                sizes = representative_sizes(ctx)
            for env in _envs(ctx, acc, sizes):
                addr = _addresses(ctx, acc, env, elem)
                if buf.space == Space.SHARED:
                    got = bank_conflicts(addr, elem, ldm)
                else:
                    got = uncoalesced(as_stored(acc, addr, elem), elem)
                worst = max(worst, got)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            why = f"the addresses could not be enumerated: {type(err).__name__} {err}".strip()
            ctx.record_not_checked("performance", str(acc.site.loc), why, start)
            continue
        degree, instr = worst
        code = "PERF_BANK_CONFLICT" if buf.space == Space.SHARED else "PERF_UNCOALESCED"
        key = (code, acc.site.index, buf.name)
        if degree > 1.0 and key not in seen:
            seen.add(key)
            if code == "PERF_BANK_CONFLICT":
                msg = (
                    f"{acc.kind} of shared {user_name(buf)} by {acc.op} is served in {degree:g}x the wavefronts of a "
                    f"conflict-free access ({degree:g}-way bank conflict)"
                )
            else:
                msg = (
                    f"{acc.kind} of global {user_name(buf)} by {acc.op} touches {degree:g}x the 32-byte sectors its "
                    f"bytes need"
                )
            findings.append(
                Finding(
                    code,
                    Verdict.VIOLATED,
                    msg,
                    loc=acc.site.loc,
                    details={"degree": degree, "instruction": instr, "buffer": user_name(buf)},
                )
            )
        ctx.record("performance", str(acc.site.loc), Verdict.VIOLATED if degree > 1.0 else Verdict.VERIFIED, start)
    return findings
