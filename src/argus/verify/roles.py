"""Warp roles: which producer iteration a consumer iteration sees, and the mbarrier protocol that
makes it so.

Roles run concurrently; the data one role reads of a buffer another role writes is ordered only by
mbarriers. The verifier recognizes the two shapes warp-specialized kernels use and pairs them:

* **pipelined** (`Pairing.kind == "loop"`): the producer writes the buffer with TMA copies inside a
  pipelined loop ``for i, s in T.pipeline(n, stages=S)``, signalling ``full[idx(i)]``; the consumer
  reads it inside a pipelined loop of the same extent and stages. Consumer iteration ``j`` then sees
  the producer's writes up to iteration ``j``;
* **once** (`kind == "once"`): the producer writes the buffer outside any loop, signalling one
  mbarrier; the consumer reads it after waiting for that barrier's first phase, and sees everything
  the producer wrote.

The pairing is an assumption that `check_protocol` proves for all iterations (Z3): every TMA
copy's bytes are announced on its barrier (`MBARRIER_TX`); the consumer waits on the very barrier the
copy signals, with the parity of the phase that copy completes (`MBARRIER_PHASE`), before reading
(`PIPELINE_STALE_READ`); the producer refills a stage only after waiting for the consumer to release
it, with the right parity, and the consumer releases it after its last read, or a fixed number of iterations
``d < S`` later (`PIPELINE_OVERWRITE`; `_check_release`).
Barrier ``b`` of an array of ``N`` is used by iterations ``i`` with ``i % N == b``, so iteration
``i`` completes its phase number ``i // N``.

**Pipelines that run across tiles** (a persistent kernel): the pipelined loops may sit inside one loop of the
role (the tile loop, ``for it in T.serial(n)``) and under ``T.if_`` guards, the same in both roles, and declare
where their stage rotation stands, ``T.pipeline(k_tiles, stages=S, start=it * k_tiles)``. Iteration ``k`` of
tile ``it`` is then *global* iteration ``g = start + k``, and ``g`` takes the place of ``i`` above (barrier
``g % N``, phase ``g // N``). Consumer iteration ``(it, k)`` sees the producer's writes up to its iteration
``(it, k)``: the roles' tile loops are paired by their variable. Before anything else, `check_protocol` proves
that this numbering is the one the hardware sees, for every block, tile and size: both roles run the same
iterations with the same ``start`` (the loops' extents, the guards and the starts agree); ``g`` counts the
iterations that ran before (``start`` is 0 on the first tile that runs, the guard holding for tile ``it``
implies it held for ``it - 1``, and ``start(it) = start(it - 1) + extent(it - 1)``); and no wait or arrival on
the pipeline's barriers happens outside the paired loops. What it cannot prove is `UNKNOWN_WARP_ROLES`, never
verified.

**Lagged, peeled pipelines** (`kind == "lagged"`; FlashAttention-3's intra-warpgroup overlap, `flash_attention`'s
OVERLAP): the consumer's pipelined loop has the producer's stages but not its extent or start, reads a stage one
or more iterations late, and has peeled reads before and after it (a branch around an MMA in flight would make
ptxas serialize the MMAs). Each consumer wait on the full barrier, read and release stands for a producer
iteration ``g'`` (`Pairing.origins`), numbered in program order; `_check_lagged` proves the waits, stages, parities
and releases for every iteration, and the model lets a read see the producer's write of its ``g'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from argus.ir.expr import Expr
from argus.ir.nodes import (
    Broadcast,
    Buffer,
    Copy,
    Fill,
    For,
    Gemm,
    If,
    LoopKind,
    Map,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Reduce,
    Role,
    Stmt,
    TileRef,
    WgmmaWait,
)
from argus.ir.tags import AssertTag, AssertTagEq, Tag
from argus.verify import smt
from argus.verify.program import Program, Site, barrier_element, user_name, walk_all


@dataclass(eq=False)
class Pairing:
    """How consumer role `consumer` sees `buffer`, written by role `producer`."""

    kind: str  # "loop" or "once"
    buffer: Buffer
    producer: Role
    consumer: Role
    loop_p: For | None = None
    loop_c: For | None = None
    writes: list[Site] = field(default_factory=list)  # the producer's TMA copies into the buffer
    reads: list[Site] = field(default_factory=list)  # the consumer's reads of it
    # the roles' loops around loop_p / loop_c (outermost first), paired one for one: same iteration in both roles
    outer_p: tuple[For, ...] = ()
    outer_c: tuple[For, ...] = ()
    # the T.if_ guards (statement, branch taken) between the role and loop_p / loop_c
    guards_p: tuple[tuple[If, bool], ...] = ()
    guards_c: tuple[tuple[If, bool], ...] = ()
    # kind "lagged": the producer iteration each consumer site stands for (`Origin`), by id of its statement: the
    # waits on the full barrier and the arrivals (what iteration they wait for / release), the reads (the data they
    # read: that of their dominating wait). Chosen by sampling (`_origin`); `check_protocol` proves them.
    origins: dict[int, Origin] = field(default_factory=dict)
    read_origins: dict[int, Origin] = field(default_factory=dict)

    @property
    def across_tiles(self) -> bool:
        """The pipeline runs inside other loops or guards, or continues a rotation (``start``): the global
        iteration numbering must be proved before the protocol."""
        if self.kind != "loop":  # "lagged" pairs a producer loop of start 0 in neither loops nor guards
            return False
        starts = (self.loop_p.start, self.loop_c.start)  # type: ignore[union-attr]
        return bool(self.outer_p or self.outer_c or self.guards_p or self.guards_c) or any(
            not (isinstance(x, int) and x == 0) for x in starts
        )

    def loop_map(self) -> list[tuple[For, For]]:
        """(producer loop, consumer loop) pairs whose variables take the same value: the tile loops, then the
        pipelined loops."""
        return list(zip(self.outer_p, self.outer_c, strict=True)) + [(self.loop_p, self.loop_c)]  # type: ignore[list-item]


def writes_of(s: Stmt) -> list[Buffer]:
    if isinstance(s, Copy | Fill | Map | Reduce):
        return [s.dst.buffer]
    if isinstance(s, Gemm):
        return [s.acc.buffer]
    if isinstance(s, Tag):
        return [s.target.buffer]
    return []


def reads_of(s: Stmt) -> list[Buffer]:
    def buf(x: Any) -> Buffer | None:
        if isinstance(x, TileRef):
            return x.buffer
        if isinstance(x, Broadcast):
            return x.ref.buffer
        return None

    refs: list[Any] = []
    if isinstance(s, Copy):
        refs = [s.src]
    elif isinstance(s, Gemm):
        refs = [s.a, s.b]
    elif isinstance(s, Map):
        refs = list(s.srcs)
    elif isinstance(s, Reduce):
        refs = [s.src]
    elif isinstance(s, AssertTagEq):
        refs = [s.a, s.b]
    elif isinstance(s, AssertTag):
        refs = list(s.operands)
    return [b for b in (buf(r) for r in refs) if b is not None]


def _role_loops(site: Site) -> list[For]:
    """The loops around `site` inside its role."""
    out: list[For] = []
    inside = False
    for f in site.frames:
        if isinstance(f.owner, Role):
            inside = True
            continue
        if inside and isinstance(f.owner, For):
            out.append(f.owner)
    return out


def _guards(site: Site, loop: For) -> tuple[tuple[If, bool], ...]:
    """The ``T.if_`` branches between `site`'s role and `loop` (which encloses `site`), outermost first."""
    out: list[tuple[If, bool]] = []
    inside = False
    for f in site.frames:
        if isinstance(f.owner, Role):
            inside = True
            continue
        if f.owner is loop:
            break
        if inside and isinstance(f.owner, If):
            out.append((f.owner, f.branch))
    return tuple(out)


def plan(prog: Program) -> list[Pairing]:
    """The pairings of every group of consecutive roles (structure only; `check_protocol` proves them)."""
    roles = [s for s in prog.sites if isinstance(s.stmt, Role)]
    out: list[Pairing] = []
    for consumer_site in roles:
        consumer: Role = consumer_site.stmt  # type: ignore[assignment]
        siblings = [
            r.stmt for r in roles if r.stmt is not consumer and r.frames[-1].body is consumer_site.frames[-1].body
        ]
        for producer in siblings:
            written: dict[Buffer, list[Site]] = {}
            for s in walk_all(producer.body):  # type: ignore[attr-defined]
                for b in writes_of(s):
                    written.setdefault(b, []).append(prog.site(s))
            for b, wsites in written.items():
                rsites = [prog.site(s) for s in walk_all(consumer.body) if b in reads_of(s)]
                if not rsites:
                    continue
                before = len(out)
                _pair_loops(out, b, producer, consumer, wsites, rsites)  # type: ignore[arg-type]
                if len(out) == before:
                    lagged = _lagged(prog, b, producer, consumer, wsites, rsites)  # type: ignore[arg-type]
                    if lagged is not None:
                        out.append(lagged)
    return out


def _pair_loops(out: list[Pairing], b: Buffer, producer: Role, consumer: Role, wsites: list, rsites: list) -> None:
    """The "once" and "loop" pairings of `b` (appended to `out` when the structure matches)."""
    if not all(isinstance(w.stmt, Copy) and w.stmt.atom == "tma" for w in wsites):
        return
    wloops = {tuple(_role_loops(w)) for w in wsites}
    rloops = {tuple(_role_loops(r)) for r in rsites}
    if wloops == {()}:
        out.append(Pairing("once", b, producer, consumer, writes=wsites, reads=rsites))  # type: ignore[arg-type]
    elif len(wloops) == 1 and len(next(iter(wloops))) == 1 and len(rloops) == 1:
        lp = next(iter(wloops))[0]
        rl = next(iter(rloops))
        if len(rl) == 1 and _same_pipeline(lp, rl[0]):
            pair = Pairing("loop", b, producer, consumer, lp, rl[0], wsites, rsites)  # type: ignore[arg-type]
            pair.guards_p, pair.guards_c = _guards(wsites[0], lp), _guards(rsites[0], rl[0])
            out.append(pair)
    elif len(wloops) == 1 and len(rloops) == 1:
        # pipelines inside tile loops: the same nest of loops in both roles, pipelined innermost
        wl, rl = next(iter(wloops)), next(iter(rloops))
        if len(wl) == len(rl) and _same_pipeline(wl[-1], rl[-1], extents=False):
            if all(a.kind == c.kind != LoopKind.PIPELINED for a, c in zip(wl[:-1], rl[:-1], strict=True)):
                pair = Pairing("loop", b, producer, consumer, wl[-1], rl[-1], wsites, rsites)  # type: ignore[arg-type]
                pair.outer_p, pair.outer_c = tuple(wl[:-1]), tuple(rl[:-1])
                pair.guards_p, pair.guards_c = _guards(wsites[0], wl[-1]), _guards(rsites[0], rl[-1])
                out.append(pair)


def _same_pipeline(a: For, b: For, extents: bool = True) -> bool:
    """Two pipelined loops of the same stages (and extents, compared as text: the tile-loop case proves them
    equal in `check_protocol` instead, their text naming each role's own loop variables)."""
    return (
        a.kind == LoopKind.PIPELINED
        and b.kind == LoopKind.PIPELINED
        and a.stages == b.stages
        and (not extents or str(a.extent) == str(b.extent))
    )


#: The producer's global iteration a consumer site stands for, relative to the consumer's pipelined loop ``for k, s in
#: T.pipeline(n, stages=S, start=b)``: ``("loop", d)``, ``b + k - d`` (a site in the loop, d iterations behind its
#: own); ``("before", m)``, ``b - m`` (a peeled site before the loop); ``("after", m)``, ``b + n - m`` (after it).
Origin = tuple[str, int]


def _lagged(
    prog: Program, b: Buffer, producer: Role, consumer: Role, wsites: list[Site], rsites: list[Site]
) -> Pairing | None:
    """A **lagged** pairing (FlashAttention-3's intra-warpgroup overlap): the producer fills `b` in one pipelined
    loop of start 0, in no other loop or guard, on one full barrier; the consumer reads it in one pipelined loop of
    the same stages (in no other loop or guard) and in peeled code before and after that loop, outside any loop.
    Each consumer read stands for the producer iteration its dominating wait on the full barrier waits for, each
    consumer arrival for the iteration it releases (`Pairing.origins`, chosen here by sampling; `check_protocol`
    proves them, `_check_lagged`). None when the structure is not this."""
    if not all(isinstance(w.stmt, Copy) and w.stmt.atom == "tma" and w.stmt.mbarrier is not None for w in wsites):
        return None
    wloops = {tuple(_role_loops(w)) for w in wsites}
    if len(wloops) != 1 or len(next(iter(wloops))) != 1:
        return None
    lp = next(iter(wloops))[0]
    if lp.kind != LoopKind.PIPELINED or not (isinstance(lp.start, int) and lp.start == 0):
        return None
    if any(_guards(w, lp) or _guards_within(w, lp) for w in wsites):  # every iteration writes, unconditionally
        return None
    if len({id(w.stmt.mbarrier.buffer) for w in wsites}) != 1:  # type: ignore[attr-defined]
        return None
    rloops = {tuple(_role_loops(r)) for r in rsites}
    inner = [rl for rl in rloops if rl]
    if len(inner) != 1 or len(inner[0]) != 1 or not rloops <= {(), inner[0]}:
        return None
    lc = inner[0][0]
    if lc.kind != LoopKind.PIPELINED or lc.stages != lp.stages:
        return None
    if any(_guards(r, lc) for r in rsites if lc in r.loops):  # the loop itself under no guard
        return None
    pair = Pairing("lagged", b, producer, consumer, lp, lc, wsites, rsites)
    full = wsites[0].stmt.mbarrier.buffer  # type: ignore[attr-defined]
    for st in walk_all(consumer.body):
        if isinstance(st, MbarrierWait | MbarrierArrive):
            site = prog.site(st)
            if not (isinstance(st, MbarrierWait) and st.barrier.buffer is not full):
                origin = _origin(prog, pair, site)
                if origin is not None:
                    pair.origins[id(st)] = origin
    for r in rsites:
        body = lc.body if lc in r.loops else consumer.body
        wait = _dominating(body, r, lambda s: isinstance(s, MbarrierWait) and s.barrier.buffer is full)
        if wait is not None and id(wait) in pair.origins:
            pair.read_origins[id(r.stmt)] = pair.origins[id(wait)]
    return pair


def _candidates(prog: Program, pair: Pairing, site: Site) -> list[Origin]:
    """The origins `site` may have: in the loop, a lag below the stage count; before or after it, up to that many
    iterations before its start or end."""
    loop = pair.loop_c
    stages = loop.stages  # type: ignore[union-attr]
    if loop in site.loops:
        return [("loop", d) for d in range(stages)] if _role_loops(site) == [loop] else []
    if _role_loops(site):
        return []
    where = "before" if site.index < prog.site(loop).index else "after"  # type: ignore[arg-type]
    return [(where, m) for m in range(1, stages + 1)]


def _term(e: Any, env: dict) -> Any:
    """`e` (an IR expression or a constant) as a Z3 term in `env`."""
    return smt.val(smt.evaluate(e, env)) if isinstance(e, Expr) else smt.val(e)


def global_iteration(pair: Pairing, origin: Origin, env: dict, value=None) -> Any:
    """The producer iteration `origin` names, in the consumer's environment `env` (Z3 terms; `value`: an evaluator
    for concrete environments)."""
    ev = value or _term
    loop = pair.loop_c
    where, m = origin
    start = ev(loop.start, env)  # type: ignore[union-attr]
    if where == "loop":
        return start + env[loop.var] - m  # type: ignore[union-attr]
    if where == "before":
        return start - m
    return start + ev(loop.extent, env) - m  # type: ignore[union-attr]


def _origin(prog: Program, pair: Pairing, site: Site) -> Origin | None:
    """The candidate origin whose iteration lands on the barrier `site` waits on or arrives on, at sampled sizes,
    blocks and iterations (a choice only: `_check_lagged` proves what it claims)."""
    from argus.ir.expr import evaluate

    def ev(e: Any, env: dict) -> int:
        return int(evaluate(e, env)) if isinstance(e, Expr) else int(e)

    stages = pair.loop_c.stages  # type: ignore[union-attr]
    sizes = (4096, 1000, 777, 12345, 130, 65)
    samples = []
    for n in range(len(sizes)):
        env: dict = {v: sizes[(n + i) % len(sizes)] for i, v in enumerate(prog.kernel.shape_vars)}
        env.update({v: (n + i) % 3 for i, v in enumerate(prog.kernel.block_vars)})
        for k in range(2 * stages + 1):
            env = dict(env)
            env[pair.loop_c.var] = k  # type: ignore[union-attr]
            samples.append(env)
    index = barrier_element(site.stmt.barrier)  # type: ignore[attr-defined]
    for cand in _candidates(prog, pair, site):
        try:
            if all(ev(index, e) % stages == global_iteration(pair, cand, e, ev) % stages for e in samples):
                return cand
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return None
    return None


# --- the protocol ----------------------------------------------------------------------------------------


def _latest(body: tuple[Stmt, ...], before: Stmt | None, match) -> Stmt | None:
    """The last statement matching `match` in `body` (recursing into nothing) before `before`."""
    found = None
    for s in body:
        if s is before:
            break
        if match(s):
            found = s
    return found


def _dominating(body: tuple[Stmt, ...], site: Site, match) -> Stmt | None:
    """The last statement matching `match` that runs before `site` on every path to it, in `body` or in a body
    nested in it that holds `site` (at each level, before the statement that leads to `site`; the innermost such
    statement): a statement earlier in a straight-line body that encloses `site` has run whenever `site` runs (a
    role's work under a guard and ``T.let`` bindings, as `argus.kernels.attention_varlen` has it)."""
    found = None
    inside = False
    for f in site.frames:
        inside = inside or f.body is body
        if inside:
            found = _latest(f.body, f.body[f.pos], match) or found
    return found


def _top(body: tuple[Stmt, ...], site: Site) -> Stmt:
    """The statement of `body` that contains `site`."""
    for f in site.frames:
        if f.body is body:
            return f.body[f.pos]
    raise KeyError(site)


def _count(buf: Buffer) -> int:
    return int(buf.static_shape[0])


def _box_bytes(c: Copy) -> int:
    n = 1
    for e in c.dst.shape:
        n *= int(e)
    return n * c.dst.buffer.dtype.bits // 8


def check_protocol(ctx: Any, pairings: list[Pairing]) -> tuple[list, set[int]]:
    """Findings about the mbarrier protocol, and the ids of the pairings it proves."""
    from argus.verify.report import Counterexample, Finding, Verdict

    prog: Program = ctx.analysis.program
    findings: list[Finding] = []
    proved: set[int] = set()

    def violation(
        code: str,
        site: Site,
        msg: str,
        model: Any = None,
        loops: dict | None = None,
        accesses: tuple = (),
        variables: dict | None = None,
    ) -> None:
        """A protocol violation; structural ones (no model) hold for every block and iteration, and
        are shown at block 0, iteration 0."""
        from argus.verify.program import loop_name
        from argus.verify.report import ThreadPoint

        if loops is None and model is None:
            loops = {loop_name(lp): 0 for lp in site.loops}
        first = prog.role_threads(site.role)[0] if site.role is not None else 0
        cex = Counterexample(
            code=code,
            message=msg,
            op_loc=site.loc,
            program_point=str(site.loc),
            block=ctx.block_values(model) if model is not None else {v.name: 0 for v in ctx.kernel.block_vars},
            shapes=ctx.shape_values(model) if model is not None else {},
            thread=ThreadPoint(first, site.role.name if site.role else None),
            loops=loops or {},
            accesses=accesses,
            variables=variables or {},
        )
        findings.append(Finding(code, Verdict.VIOLATED, msg, loc=site.loc, counterexample=cex))

    def access(site: Site, kind: str) -> Any:
        return _access(prog, site, kind, p.buffer)

    def always(var_terms: list[tuple[For, Any]] | list[Any], claim: Any) -> Any:
        """None when `claim` holds for every iteration, else the model of a counterexample. `var_terms`:
        (loop, term) pairs whose ranges bound the iterations, or ready-made constraints."""
        cons = [ctx.loop_range(x[0], x[1], ctx.base_env) if isinstance(x, tuple) else x for x in var_terms]
        out = ctx.solve(cons, z3.Not(claim))
        if out.verdict == Verdict.VERIFIED:
            return None
        return out.model if out.model is not None else "unknown"

    for p in pairings:
        ok = True
        it = _Iteration.of(ctx, p) if p.kind == "loop" else None
        if it is not None and p.across_tiles:
            why = _check_numbering(ctx, p, it, always)
            if why is not None:
                findings.append(
                    Finding(
                        "UNKNOWN_WARP_ROLES",
                        Verdict.UNKNOWN,
                        f"the pipeline on {user_name(p.buffer)} runs inside other loops or guards, and its global "
                        "iteration numbering could not be proved",
                        loc=w_loc(p),
                        reason=why,
                        pin="give both roles the same tile loop and guards, and T.pipeline(..., start=it * extent)",
                    )
                )
                continue
        # (1) every TMA copy's bytes are announced on the barrier it signals, in the same iteration
        arrive_bytes: dict[tuple, int] = {}
        copy_bytes: dict[tuple, int] = {}
        body_p = p.loop_p.body if p.loop_p is not None else p.producer.body
        for s in body_p:
            if isinstance(s, MbarrierArrive) and s.expect_bytes:
                key = (id(s.barrier.buffer), str(barrier_element(s.barrier)))
                arrive_bytes[key] = arrive_bytes.get(key, 0) + s.expect_bytes
            if isinstance(s, Copy) and s.atom == "tma" and s.mbarrier is not None:
                key = (id(s.mbarrier.buffer), str(barrier_element(s.mbarrier)))
                copy_bytes[key] = copy_bytes.get(key, 0) + _box_bytes(s)
        for w in p.writes:
            c: Copy = w.stmt  # type: ignore[assignment]
            key = (id(c.mbarrier.buffer), str(barrier_element(c.mbarrier)))  # type: ignore[union-attr]
            if arrive_bytes.get(key, 0) != copy_bytes.get(key, 0):
                msg = (
                    f"the TMA copies completing on {user_name(c.mbarrier.buffer)}[{barrier_element(c.mbarrier)}] move "  # type: ignore[union-attr]
                    f"{copy_bytes.get(key, 0)} bytes per phase, but {arrive_bytes.get(key, 0)} are announced with "
                    "expect_bytes: the phase completes early (readers see data that has not landed) or never"
                )
                violation(
                    "MBARRIER_TX",
                    w,
                    msg,
                    variables={
                        "bytes of the TMA boxes": copy_bytes.get(key, 0),
                        "expect_bytes announced": arrive_bytes.get(key, 0),
                    },
                )
                ok = False
                break
        if p.kind == "lagged":  # the peeled, lagged shape: each consumer site's producer iteration
            ok = _check_lagged(ctx, p, violation, always, findings) and ok
            if ok:
                proved.add(id(p))
            continue
        # (2) the consumer waits on the barrier the data lands on, for the phase it completes
        full = p.writes[0].stmt.mbarrier  # type: ignore[attr-defined]
        n = _count(full.buffer)

        def waits_on(s: Stmt, bars: Buffer = full.buffer) -> bool:
            return isinstance(s, MbarrierWait) and s.barrier.buffer is bars

        for r in p.reads:
            # pipelined: a wait in the same iteration, before the read; once: a wait before it in the
            # consumer's body (before its loop, for reads inside one), or in a guard or binding around both
            body_c = p.loop_c.body if p.loop_c is not None else p.consumer.body
            wait = _dominating(body_c, r, waits_on)
            if wait is None:
                violation(
                    "PIPELINE_STALE_READ",
                    r,
                    f"{user_name(p.buffer)} is filled by TMA copies completing on {user_name(full.buffer)}, but this "
                    "read does not wait on that mbarrier first: it may read data that has not landed",
                    accesses=(access(p.writes[0], "write"), access(r, "read")),
                )
                ok = False
                continue
            wsite = prog.site(wait)
            if p.kind == "loop":
                assert it is not None
                env_c, env_p, g = it.env_c, it.env_p, it.g
                lands = smt.val(smt.evaluate(barrier_element(full), env_p))
                waits = smt.val(smt.evaluate(barrier_element(wait.barrier), env_c))
                parity = smt.mod(smt.evaluate(wait.phase, env_c), 2)
                counter = "the global iteration g" if it.offset else "iteration i"
                rotation = always(it.cons_c, lands == smt.mod(g, n))
                if rotation is not None:
                    findings.append(
                        Finding(
                            "UNKNOWN_WARP_ROLES",
                            Verdict.UNKNOWN,
                            f"{user_name(full.buffer)} is not used round-robin by the iterations",
                            loc=w_loc(p),
                            reason=f"the verifier pairs {counter} with barrier {counter.split()[-1]} % N",
                        )
                    )
                    ok = False
                    continue
                wrong = always(it.cons_c, waits == lands)
                if wrong is not None:
                    violation(
                        "MBARRIER_PHASE",
                        wsite,
                        f"iteration waits on {user_name(full.buffer)}[{barrier_element(wait.barrier)}], but its data "
                        f"lands on {user_name(full.buffer)}[{barrier_element(full)}]",
                        _model(wrong),
                        it.loops(wrong),
                        variables=it.variables(wrong),
                    )
                    ok = False
                    continue
                wrong = always(it.cons_c, parity == smt.mod(smt.floordiv(g, n), 2))
                if wrong is not None:
                    what = (
                        f"global iteration g = ({_start_text(p.loop_c)}) + k (the pipeline's start plus k) completes "
                        f"phase g // {n} of its barrier"
                        if it.offset
                        else f"iteration k's data completes phase k // {n} of its barrier"
                    )
                    violation(
                        "MBARRIER_PHASE",
                        wsite,
                        f"the wait on {user_name(full.buffer)} uses the wrong parity: {what}, so the wait returns for "
                        "the phase before and the data has not landed",
                        _model(wrong),
                        it.loops(wrong),
                        variables={**it.variables(wrong), **_parity_values(wrong, parity, g, n)},
                    )
                    ok = False
                    continue
            else:
                parity = smt.mod(smt.evaluate(wait.phase, dict(ctx.base_env)), 2)
                wrong = always([], parity == 0)
                if wrong is not None:
                    violation(
                        "MBARRIER_PHASE",
                        wsite,
                        f"the wait on {user_name(full.buffer)} must be for its first phase (parity 0)",
                        _model(wrong),
                    )
                    ok = False
        # (3) a stage is refilled only after the consumer released it
        if p.kind == "loop" and ok:
            assert it is not None
            ok = _check_release(ctx, p, it, violation, always, findings) and ok
        if ok:
            proved.add(id(p))
    return findings, proved


def _access(prog: Program, site: Site, kind: str, buffer: Buffer, loop: For | None = None, value: int = 0) -> Any:
    """An access of `site` to element (0, ..., 0) of its window into `buffer`, at iteration 0 of every loop
    (iteration `value` of `loop`)."""
    from argus.ir.expr import evaluate
    from argus.verify.program import loop_name, shared_layout
    from argus.verify.report import Access, Element, ThreadPoint

    ref = next(r for r in _refs(site.stmt) if r.buffer is buffer)
    env: dict = {v: 0 for v in prog.kernel.block_vars}
    env.update({lp.var: (value if lp is loop else 0) for lp in site.loops})
    env.update({v: 1 << 14 for v in prog.kernel.shape_vars})
    coord = tuple(int(evaluate(o, env)) if isinstance(o, Expr) else int(o) for o in ref.origin)
    layout = shared_layout(ref)
    offset = int(layout(coord if len(coord) > 1 else coord[0]))
    first = prog.role_threads(site.role)[0] if site.role is not None else 0
    return Access(
        kind,
        f"copy ({site.stmt.atom})" if isinstance(site.stmt, Copy) else type(site.stmt).__name__.lower(),
        site.loc,
        ThreadPoint(first, site.role.name if site.role else None),
        {loop_name(lp): (value if lp is loop else 0) for lp in site.loops},
        Element(user_name(buffer), "shared", offset, coord),
    )


def _refs(s: Stmt) -> list[TileRef]:
    out = []
    for v in vars(s).values():
        for x in v if isinstance(v, tuple) else (v,):
            if isinstance(x, TileRef):
                out.append(x)
            elif isinstance(x, Broadcast):
                out.append(x.ref)
    return out


def w_loc(p: Pairing):
    return p.writes[0].loc


def _model(m: Any) -> Any:
    return None if isinstance(m, str) else m


def _loops(m: Any, lp: For, t: Any) -> dict:
    if isinstance(m, str) or m is None:
        return {}
    from argus.verify.program import loop_name

    return {loop_name(lp): smt.model_int(m, t)}


def _arrivals(body: tuple[Stmt, ...], guards: tuple[tuple[If, bool], ...] = (), top: Stmt | None = None) -> list:
    """The `T.mbarrier_arrive` statements of a loop body, each with the ``T.if_`` branches around it and the
    body's top-level statement that holds it: ``(arrive, guards, top)``."""
    out: list = []
    for s in body:
        here = top if top is not None else s
        if isinstance(s, MbarrierArrive):
            out.append((s, guards, here))
        elif isinstance(s, If):
            out += _arrivals(s.then, (*guards, (s, True)), here)
            out += _arrivals(s.orelse, (*guards, (s, False)), here)
    return out


def _no_release(
    ctx: Any, p: Pairing, first_write: Site, last_read: Site, early: Any, other: Any, violation, findings: list
) -> bool:
    """No arrival the producer waits on releases the stages in a modelled way: a violation where there is a
    witness (no release at all: the refill of iteration S overwrites what iteration 0 reads; a release before
    the last read: the same, once the consumer has arrived), else unknown (arrivals the verifier cannot pair)."""
    from argus.verify.report import Finding, Verdict

    prog = ctx.analysis.program
    accesses = (
        _access(prog, first_write, "write", p.buffer, p.loop_p, p.loop_p.stages),
        _access(prog, last_read, "read", p.buffer, p.loop_c, 0),
    )
    stages = p.loop_c.stages
    if other is not None and early is None:
        findings.append(
            Finding(
                "UNKNOWN_WARP_ROLES",
                Verdict.UNKNOWN,
                f"the consumer arrives on {user_name(other.barrier.buffer)}, which the producer waits on before "
                f"refilling {user_name(p.buffer)}, but not in a release pattern the verifier proves",
                loc=other.loc,
                reason=(
                    f"proved patterns: iteration g arrives on {user_name(other.barrier.buffer)}[(g - d) % {stages}] "
                    f"exactly when g >= d, for a lag 0 <= d < {stages} (d = 0: after the iteration's last read)"
                ),
                pin="release stage s after the read (T.mbarrier_arrive(empty[s])), or one iteration behind "
                "(with T.if_(k > 0): T.mbarrier_arrive(empty[(k - 1) % STAGES]))",
            )
        )
        return False
    if early is not None:
        violation(
            "PIPELINE_OVERWRITE",
            prog.site(early),
            f"the consumer releases the stage on {user_name(early.barrier.buffer)} before its last read of "
            f"{user_name(p.buffer)} (line {last_read.loc.line if last_read.loc else '?'}): once it has arrived, the "
            f"producer's refill of iteration {stages} may overwrite the stage iteration 0 is still reading",
            accesses=accesses,
        )
        return False
    violation(
        "PIPELINE_OVERWRITE",
        first_write,
        f"the producer refills {user_name(p.buffer)} without waiting for the consumer to release the stage (no "
        f"mbarrier it waits on here is arrived on by the consumer after its last read): its refill of iteration "
        f"{stages} may overwrite the stage iteration 0 is still reading",
        accesses=accesses,
    )
    return False


def _completion_lag(p: Pairing, position: int, reads: list[Site] | None = None) -> int | None:
    """How many iterations behind the consumer's reads of the stage are complete at top-level `position` of its
    loop body: at that point of iteration ``g`` the reads of iterations ``g - lag`` and earlier have finished
    (None: the verifier cannot tell).

    An ordinary read has finished when its statement ends (lag 0 after it, 1 before it). Asynchronous MMAs: the
    body's n ``wgmma`` statements, each at its top level (unconditional) with ``wait_group P`` (`Gemm.pending`),
    commit one group each per iteration, in order: group ``g * n + i`` is statement i's (1-based) of iteration g.
    Groups complete in issue order, so after statement j's wait the groups up to ``g * n + j - P_j`` are complete,
    and after a `WgmmaWait` of 0 every group issued so far; before the body's first MMA statement, what the
    previous iteration's last wait left. The stage's reads of iteration g' are complete once its latest-issued
    reading group is: the lag is ``ceil((i_max - c) / n)`` with ``g * n + c`` the last complete group. One
    statement with ``wait_group 1`` gives the deferred-release loop's lag of 1 after it; a SwiGLU loop's two
    (gate and up, ``wait_group 2`` each) also 1 after the second. `reads`: those of the reads (in the loop) only."""
    body = p.loop_c.body  # type: ignore[union-attr]
    reads = p.reads if reads is None else reads
    tops = [body.index(_top(body, r)) for r in reads]
    asynchronous = [(r, t) for r, t in zip(reads, tops, strict=True) if _is_async(r.stmt)]
    lag = 0
    for r, t in zip(reads, tops, strict=True):
        if not _is_async(r.stmt):
            lag = max(lag, 0 if t < position else 1)
    if not asynchronous:
        return lag
    gemms = [x for x in walk_all(body) if isinstance(x, Gemm)]
    issue = [i for i, x in enumerate(body) if isinstance(x, Gemm)]  # top-level MMA statements, in issue order
    waits = [i for i, x in enumerate(body) if isinstance(x, WgmmaWait)]
    if len(issue) != len(gemms) or any(not body[i].pending for i in issue):  # type: ignore[attr-defined]
        return None  # a conditional or synchronous MMA beside them: the groups are not counted here
    n = len(issue)
    latest = max(issue.index(t) + 1 for _, t in asynchronous)  # the stage's latest-issued reading statement
    # each wait, in iteration g: statement j's own (wait_group P_j) completes the groups up to g * n + j - P_j; a
    # `WgmmaWait` of P after j statements, up to g * n + j - P. Completion only grows: the last complete group at
    # `position` is the largest of the events before it in this iteration and of every event of the previous one
    # (n groups earlier); in the first iteration there is no previous one, and what that claims holds vacuously.
    events = [(i, j - body[i].pending) for j, i in enumerate(issue, start=1)]  # type: ignore[attr-defined]
    events += [(w, sum(1 for i in issue if i < w) - body[w].pending) for w in waits]  # type: ignore[attr-defined]
    c = max([e for at, e in events if at < position] + [e - n for _, e in events])
    return max(lag, -((c - latest) // n))


def _tails(prog: Program, p: Pairing, barrier: Buffer) -> tuple[list, list]:
    """The consumer's arrivals on `barrier` after its pipelined loop, in the body that holds the loop (the
    releases of the last iterations, ``(arrive, guards, top)`` as `_arrivals` gives them, with `top` the statement
    of that body), and every other arrival on it outside the loop (the verifier pairs none of those)."""
    loop_site = prog.site(p.loop_c)  # type: ignore[arg-type]
    frame = loop_site.frames[-1]
    after = frame.body[frame.pos + 1 :]
    tails = [x for x in _arrivals(after) if x[0].barrier.buffer is barrier]
    tail_ids = {id(x[0]) for x in tails}
    stray = [
        st
        for st in walk_all(p.consumer.body)
        if isinstance(st, MbarrierArrive)
        and st.barrier.buffer is barrier
        and id(st) not in tail_ids
        and p.loop_c not in prog.site(st).loops
    ]
    return tails, stray


def _check_release(ctx: Any, p: Pairing, it: _Iteration, violation, always, findings: list) -> bool:
    """The producer waits, before refilling a stage, on a barrier the consumer arrives on once it is done with
    that stage, with the parity of the consumer's release (the first pass through the stages does not wait).

    The consumer may release a stage *d* iterations behind (``0 <= d < S``): iteration ``g`` arrives on
    ``empty[(g - d) % S]`` exactly when ``g >= d`` (``T.if_(k > 0)`` for d = 1, the CUTLASS way of keeping one
    MMA in flight); with d = 0 the arrival must come after the iteration's last read of the stage, with d >= 1
    the reads it releases were all made in earlier iterations. A read is *made* when it has completed: a ``wgmma``
    that waits with ``wait_group P`` is still reading its stage until ``P`` more groups are issued
    (`_completion_lag`), so releasing its own stage (d = 0) after it is an overwrite, and d = 1 needs ``P <= 1``.
    Either way barrier ``b`` receives its arrivals in iteration order, one per pass over the stages, so the
    producer's refill of iteration ``i`` (``i >= S``) waits for the release of iteration ``i - S`` by waiting on
    ``empty[i % S]`` for the parity of phase ``i // S - 1``.

    With d = 1 the last iteration's stage is released after the loop (the deferred-release pass writes this): an
    arrival after the loop, in the body that holds it, on ``empty[(start + n - 1) % S]`` exactly when ``n > 0``,
    once the MMAs have completed (a `WgmmaWait` of 0 between). In a pipeline that runs across tiles the in-loop
    arrival is then guarded by the tile's own iteration ``k >= 1`` (not the global one): the two together release
    every global iteration once, in order. Any other arrival on the barrier outside the loop is not paired
    (unknown)."""
    prog = ctx.analysis.program
    first_write = min(p.writes, key=lambda s: s.index)
    top_w = _top(p.loop_p.body, first_write)
    waits = [s for s in p.loop_p.body[: p.loop_p.body.index(top_w)] if isinstance(s, MbarrierWait)]
    last_read = max(p.reads, key=lambda s: s.index)
    top_r = _top(p.loop_c.body, last_read)
    after_read = p.loop_c.body.index(top_r)
    n_stages = p.loop_c.stages
    env_p, env_c, i = it.env_p, it.env_c, it.g
    j = it.terms[-1]
    early: Any = None  # an arrival on the barrier the producer waits on, placed before the last read
    in_flight: Any = None  # an arrival that releases a stage whose wgmma reads may not have completed: (arrive, d, lag)
    pair = None
    local = False  # the pair's arrival is guarded by the tile's iteration (a tail must release the last one)
    other: Any = None  # an arrival on that barrier, after the read, that releases no stage in a way modelled here
    for w in waits:
        for a, guards, top in _arrivals(p.loop_c.body):
            if w.barrier.buffer is not a.barrier.buffer:
                continue
            n = _count(a.barrier.buffer)
            guard = z3.And(*[_guard(g, env_c) for g in guards]) if guards else z3.BoolVal(True)
            index = smt.val(smt.evaluate(barrier_element(a.barrier), env_c))
            position = p.loop_c.body.index(top)
            lag = _completion_lag(p, position)
            if lag is None:
                other = other or a
                continue
            for d in range(min(n, n_stages)):
                if d == 0 and position <= after_read:
                    early = early or a
                    continue
                releases = z3.And(guard == z3.UGE(i, d), z3.Implies(guard, index == smt.mod(i - d, n)))
                found = always(it.cons_c, releases) is None
                if not found and d == 1 and it.offset:
                    releases = z3.And(guard == z3.UGE(j, d), z3.Implies(guard, index == smt.mod(i - d, n)))
                    found = local = always(it.cons_c, releases) is None
                if found and d < lag:
                    in_flight = in_flight or (a, d, lag)
                    break
                if found:
                    pair = (w, a, d)
                    break
            else:
                if position > after_read or guards:
                    other = other or a
            if pair is not None:
                break
        if pair is not None:
            break
    if pair is None and in_flight is not None:
        a, d, lag = in_flight
        gemm = next(r for r in p.reads if isinstance(r.stmt, Gemm) and r.stmt.pending)
        which = "its own stage" if d == 0 else f"the stage of iteration k - {d}"
        violation(
            "PIPELINE_OVERWRITE",
            prog.site(a),
            f"the consumer releases {which} on {user_name(a.barrier.buffer)} while the wgmma reading it may still be "
            f"in flight: the MMAs at line {gemm.loc.line if gemm.loc else '?'} wait with wait_group "
            f"{gemm.stmt.pending}, so at this arrival the reads of {user_name(p.buffer)} are complete only "  # type: ignore[attr-defined]
            f"{lag} iteration(s) back; once it has arrived, the producer may overwrite the stage the tensor cores are "
            "still reading",
            accesses=(
                _access(prog, first_write, "write", p.buffer, p.loop_p, p.loop_p.stages),
                _access(prog, gemm, "read", p.buffer, p.loop_c, 0),
            ),
            variables={"release_lag_d": d, "iterations_in_flight": lag},
        )
        return False
    if pair is None:
        return _no_release(ctx, p, first_write, last_read, early, other, violation, findings)
    wait, arrive, lag_d = pair
    if not _check_tails(ctx, p, it, arrive, lag_d, local, violation, always, findings):
        return False
    n = _count(wait.barrier.buffer)
    claim = z3.And(
        smt.val(smt.evaluate(barrier_element(wait.barrier), env_p)) == smt.mod(i, n),
        smt.mod(smt.evaluate(wait.phase, env_p), 2) == smt.mod(smt.floordiv(i, n) + 1, 2),
    )
    wrong = always(it.cons_p, claim)
    if wrong is not None:
        site = ctx.analysis.program.site(wait)
        violation(
            "MBARRIER_PHASE",
            site,
            f"the producer's wait on {user_name(wait.barrier.buffer)} before refilling a stage does not wait for "
            "the consumer's release of that stage (barrier index or parity)",
            _model(wrong),
            it.loops(wrong, producer=True),
            variables=it.variables(wrong),
        )
        return False
    return True


def _check_tails(ctx: Any, p: Pairing, it: _Iteration, arrive: Any, d: int, local: bool, violation, always, findings):
    """The arrivals on the release barrier outside the consumer's loop: none, or (d = 1) the release of the last
    iteration after the loop (see `_check_release`); required when the in-loop release is guarded by the tile's own
    iteration (`local`). False (with a finding) when they are not that."""
    from argus.verify.report import Finding, Verdict

    prog = ctx.analysis.program
    barrier = arrive.barrier.buffer
    tails, stray = _tails(prog, p, barrier)

    def unknown(loc: Any, why: str) -> bool:
        findings.append(
            Finding(
                "UNKNOWN_WARP_ROLES",
                Verdict.UNKNOWN,
                f"the consumer arrives on {user_name(barrier)} outside its pipelined loop in a way the verifier does "
                "not pair with the stages it releases",
                loc=loc,
                reason=why,
                pin="release the last stage after the loop only as the deferred-release pass does: "
                "T.wgmma_wait(0), then with T.if_(n > 0): T.mbarrier_arrive(empty[(start + n - 1) % STAGES])",
            )
        )
        return False

    if stray:
        return unknown(stray[0].loc, f"an arrival on {user_name(barrier)} at {stray[0].loc} outside the loop")
    if not tails:
        if local:
            return unknown(
                arrive.loc,
                "the release is guarded by the tile's own iteration, and no arrival after the "
                "loop releases each tile's last stage",
            )
        return True
    if d != 1 or len(tails) != 1:
        return unknown(tails[0][0].loc, f"{len(tails)} arrival(s) after a loop that releases {d} iteration(s) behind")
    tail, guards, top = tails[0]
    n = _count(barrier)
    outer = len(it.terms) - 1
    cons = it.cons_c[:outer] + it.cons_c[outer + 1 :]  # the tile loops and guards: the pipeline may run 0 times
    env = it.env_c
    extent = smt.val(smt.evaluate(p.loop_c.extent, env)) if isinstance(p.loop_c.extent, Expr) else p.loop_c.extent
    start = smt.val(smt.evaluate(p.loop_c.start, env)) if isinstance(p.loop_c.start, Expr) else p.loop_c.start
    guard = z3.And(*[_guard(g, env) for g in guards]) if guards else z3.BoolVal(True)
    index = smt.val(smt.evaluate(barrier_element(tail.barrier), env))
    ran = guard == (smt.val(extent) >= 1)
    claim = z3.And(ran, z3.Implies(guard, index == smt.mod(start + extent - 1, n)))
    # a stage count that is not a power of two makes both sides remainders of divisions by n, of dividends the
    # kernel and this claim spell differently (``(extent - 1) + it * extent`` against ``it * extent + extent - 1``):
    # equal dividends give equal remainders, a linear fact, where the remainders' equality bit-blasts both
    # divisions and the product inside (the solver gave up on the one-consumer 5-stage grouped GEMM)
    dividend = smt.remainder_dividend(index, n)
    same = dividend is not None and always(cons, z3.And(ran, z3.Implies(guard, dividend == start + extent - 1))) is None
    if not same and always(cons, claim) is not None:
        return unknown(
            tail.loc,
            f"the arrival after the loop is not on {user_name(barrier)}[(start + n - 1) % {n}] "
            "exactly when the loop ran",
        )
    frame = prog.site(p.loop_c).frames[-1]
    between = frame.body[frame.pos + 1 : frame.body.index(top)]
    asynchronous = any(isinstance(r.stmt, Gemm) and r.stmt.pending for r in p.reads)
    if asynchronous and not any(isinstance(x, WgmmaWait) and x.pending == 0 for x in between):
        gemm = next(r for r in p.reads if isinstance(r.stmt, Gemm) and r.stmt.pending)
        violation(
            "PIPELINE_OVERWRITE",
            prog.site(tail),
            f"the consumer releases the last stage on {user_name(barrier)} after the loop while the last "
            f"iteration's wgmma may still be reading it (its MMAs at line {gemm.loc.line if gemm.loc else '?'} wait "
            "with wait_group "
            f"{gemm.stmt.pending}, and no wgmma wait of 0 comes between the loop and this arrival)",  # type: ignore[attr-defined]
        )
        return False
    ctx.tail_releases[id(barrier)] = frozenset({id(arrive), id(tail)})
    return True


# --- the global iteration of a pipeline ------------------------------------------------------------------------


@dataclass(eq=False)
class _Iteration:
    """One symbolic iteration shared by both roles of a pipelined pairing: a term per paired loop (the tile
    loops', then the pipeline's ``j``), each role's environment, the constraints that the iteration runs (loop
    ranges and ``T.if_`` guards, in each role's terms) and the global iteration ``g = start + j`` (``j`` itself
    for a pipeline of start 0 outside other loops)."""

    pairing: Pairing
    terms: list[Any]
    env_p: dict
    env_c: dict
    cons_p: list[Any]
    cons_c: list[Any]
    g: Any
    offset: bool  # g is not j itself

    @classmethod
    def of(cls, ctx: Any, p: Pairing) -> _Iteration:
        env_p, env_c = dict(ctx.base_env), dict(ctx.base_env)
        terms: list[Any] = []
        cons_p: list[Any] = []
        cons_c: list[Any] = []
        pairs = p.loop_map()
        for lp, lc in pairs:
            suffix = "#c" if lc is p.loop_c else "#o"
            t = z3.BitVec(f"loop.{lc.var.name}{suffix}", smt.WIDTH)
            ctx.loop_terms.append(t)  # counterexamples prefer early iterations
            terms.append(t)
            cons_p.append(ctx.loop_range(lp, t, env_p))
            cons_c.append(ctx.loop_range(lc, t, env_c))
            env_p[lp.var] = t
            env_c[lc.var] = t
        cons_p += [_guard(g, env_p) for g in p.guards_p]
        cons_c += [_guard(g, env_c) for g in p.guards_c]
        j = terms[-1]
        offset = not (isinstance(p.loop_c.start, int) and p.loop_c.start == 0)  # type: ignore[union-attr]
        # j + start, the order of T.pipeline's stage (j + start) % S: the same dividend, so the same quotient and
        # remainder variables for a stage count that is not a power of two (`smt._divmod_const`)
        g = j + smt.val(smt.evaluate(p.loop_c.start, env_c)) if offset else j  # type: ignore[union-attr]
        return cls(p, terms, env_p, env_c, cons_p, cons_c, g, offset)

    def loops(self, model: Any, producer: bool = False) -> dict:
        """The loop values of a counterexample, by the user's loop names."""
        if isinstance(model, str) or model is None:
            return {}
        from argus.verify.program import loop_name

        loops = [lp if producer else lc for lp, lc in self.pairing.loop_map()]
        return {loop_name(lp): smt.model_int(model, t) for lp, t in zip(loops, self.terms, strict=True)}

    def variables(self, model: Any) -> dict:
        if not self.offset or isinstance(model, str) or model is None:
            return {}
        return {"global iteration g": smt.model_int(model, self.g)}


def _after(prog: Program, loop: Any) -> tuple[Stmt, ...]:
    """The statements after `loop` in the body that holds it."""
    frame = prog.site(loop).frames[-1]
    return frame.body[frame.pos + 1 :]


def _start_text(loop: For) -> str:
    """The `start=` argument of ``T.pipeline`` as the user wrote it (from the loop's source line), else the IR's."""
    text = loop.loc.text if loop.loc is not None and loop.loc.text else ""
    at = text.find("start=")
    if at >= 0:
        depth, out = 0, []
        for ch in text[at + len("start=") :]:
            if ch in "([":
                depth += 1
            elif ch in ")]":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            out.append(ch)
        if "".join(out).strip():
            return "".join(out).strip()
    return str(loop.start)


def _guard(branch: tuple[If, bool], env: dict) -> Any:
    cond = smt.boolean(smt.evaluate(branch[0].cond, env))
    return cond if branch[1] else z3.Not(cond)


def _parity_values(model: Any, parity: Any, g: Any, n: int) -> dict:
    if isinstance(model, str) or model is None:
        return {}
    gv = smt.model_int(model, g)
    return {
        "parity waited for": smt.model_int(model, parity) % 2,
        "parity of the phase the data completes": (gv // n) % 2,
    }


def _check_numbering(ctx: Any, p: Pairing, it: _Iteration, always) -> str | None:
    """None when the global iteration ``g = start + j`` of the pairing is the number of pipeline iterations
    this block ran before, in both roles; else why not (the protocol is then not checked: unknown).

    (a) both roles run the same iterations with the same start: for every tile-loop value, the extents of the
    paired loops agree, the guards agree, and where they hold the starts agree;
    (b) with no tile loop, ``start == 0``; with one, ``start`` is 0 on tile 0, and if tile ``it >= 1`` runs, tile
    ``it - 1`` ran and ``start(it) == start(it - 1) + extent(it - 1)``: by induction over ``it``, ``start(it)``
    counts the iterations of the earlier tiles (the guard holds on a prefix of the tiles);
    (c) the pipeline's barriers are waited on and arrived on only inside the paired loops."""
    prog: Program = ctx.analysis.program
    outer_terms = it.terms[:-1]
    range_c = it.cons_c[: len(outer_terms)]  # the consumer's tile-loop ranges

    ev = _term

    def guard_c(env: dict) -> Any:
        return z3.And(*[_guard(g, env) for g in p.guards_c]) if p.guards_c else z3.BoolVal(True)

    def guard_p(env: dict) -> Any:
        return z3.And(*[_guard(g, env) for g in p.guards_p]) if p.guards_p else z3.BoolVal(True)

    # (a) the same iterations and starts in both roles
    same = [ev(lp.extent, it.env_p) == ev(lc.extent, it.env_c) for lp, lc in p.loop_map()]
    same.append(guard_p(it.env_p) == guard_c(it.env_c))
    same.append(
        z3.Implies(guard_c(it.env_c), ev(p.loop_p.start, it.env_p) == ev(p.loop_c.start, it.env_c))  # type: ignore[union-attr]
    )
    wrong = always(range_c, z3.And(*same))
    if wrong is not None:
        return "the producer's and the consumer's loops around the pipeline (extents, T.if_ guards, start) differ"
    # (c) no other use of the pipeline's barriers
    inside = {id(p.loop_p), id(p.loop_c)}
    bars = {id(w.stmt.mbarrier.buffer) for w in p.writes if isinstance(w.stmt, Copy) and w.stmt.mbarrier}  # type: ignore[attr-defined]
    for loop in (p.loop_p, p.loop_c):
        for st in walk_all(loop.body):  # type: ignore[union-attr]
            if isinstance(st, MbarrierWait | MbarrierArrive):
                bars.add(id(st.barrier.buffer))
    tails = {id(x[0]) for x in _arrivals(_after(prog, p.loop_c))}  # a last stage's release: `_check_tails`
    for site in prog.sites:
        st = site.stmt
        if isinstance(st, MbarrierWait | MbarrierArrive) and id(st.barrier.buffer) in bars and id(st) not in tails:
            if not any(id(lp) in inside for lp in site.loops):
                return f"{user_name(st.barrier.buffer)} is also used at {st.loc}, outside the paired pipelined loops"
    # (b) start counts the iterations before
    start = p.loop_c.start  # type: ignore[union-attr]
    if not outer_terms:
        wrong = always([guard_c(it.env_c)], ev(start, it.env_c) == 0)
        return None if wrong is None else f"the pipeline's start {start} is not 0, and no tile loop runs before it"
    if len(outer_terms) > 1:
        return "pipelines inside more than one loop of the role are not numbered by the verifier"
    tile_loop, o = p.outer_c[0], outer_terms[0]
    prev = dict(it.env_c)
    prev[tile_loop.var] = o - 1
    first = z3.Implies(z3.And(o == 0, guard_c(it.env_c)), ev(start, it.env_c) == 0)
    step = z3.Implies(
        z3.And(o >= 1, guard_c(it.env_c)),
        z3.And(guard_c(prev), ev(start, it.env_c) == ev(start, prev) + ev(p.loop_c.extent, prev)),  # type: ignore[union-attr]
    )
    wrong = always(range_c, z3.And(first, step))
    if wrong is None:
        return None
    if isinstance(wrong, str):
        return "Z3 could not decide whether the pipeline's start counts the earlier tiles' iterations"
    ov = smt.model_int(wrong, o)
    return (
        f"start={start} is not the number of pipeline iterations before tile {tile_loop.var.name} = {ov} "
        f"(block {ctx.block_values(wrong)}, sizes {ctx.shape_values(wrong)}): the first tile must start at 0, and "
        "each tile where the previous one ran and start(it) = start(it - 1) + its extent"
    )


# --- a peeled, lagged pipeline ---------------------------------------------------------------------------------


def _guards_within(site: Site, loop: For) -> tuple[tuple[If, bool], ...]:
    """The ``T.if_`` branches between `loop` (which encloses `site`) and `site`."""
    out: list[tuple[If, bool]] = []
    inside = False
    for f in site.frames:
        if f.owner is loop:
            inside = True
            continue
        if inside and isinstance(f.owner, If):
            out.append((f.owner, f.branch))
    return tuple(out)


def _is_async(s: Stmt) -> bool:
    return isinstance(s, Gemm) and bool(s.pending)


def _check_lagged(ctx: Any, p: Pairing, violation, always, findings: list) -> bool:
    """The protocol of a "lagged" pairing (`_lagged`), for every block, size and iteration. Each consumer site
    stands for a producer iteration ``g'`` (`Pairing.origins`: ``start + k - d`` in the loop, ``start - m`` before
    it, ``start + n - m`` after it); the pairing holds when

    (a) the producer's iteration ``g`` (its loop has start 0) copies into stage ``g % S`` on ``full[g % S]``, and only
        the producer's loop arrives on ``full``; the barrier arrays have S elements;
    (b) the consumer's waits on ``full``, in program order, wait for ``g' = 0, 1, 2, ...`` (each once: the
        numbering below), each on ``full[g' % S]`` with the parity of phase ``g' // S`` (`MBARRIER_PHASE`), and
        only for iterations the producer runs (``0 <= g' < n_p``);
    (c) each read is dominated by such a wait (`PIPELINE_STALE_READ`) and reads stage ``g' % S`` of it;
    (d) a barrier ``empty`` the producer waits on before its copies releases the stages: only the consumer
        arrives on it, its arrivals in program order release ``r = 0, 1, 2, ...``, each on ``empty[r % S]``; no
        arrival releases ``g'`` before a read of ``g'`` has completed (an asynchronous wgmma read completes at its
        wait, `_completion_lag`; `PIPELINE_OVERWRITE`); and the producer's iteration ``g`` waits on
        ``empty[g % S]`` for the parity of phase ``g // S - 1``, the release of ``g - S``, before refilling the
        stage (`MBARRIER_PHASE`).

    Then a read of ``g'`` sees the producer's write of iteration ``g'``: that write completed before the wait
    returned (its bytes are announced on its barrier), and the next write into the stage, iteration ``g' + S``,
    waits for the release of ``g'``, which comes after the read. The numbering in program order is what makes
    "the r-th arrival on empty[r % S]" the one that completes phase ``r // S`` of it, and the waits' phases
    distinct. What is not proved is `UNKNOWN_WARP_ROLES`, never verified."""
    from argus.verify.program import loop_name
    from argus.verify.report import Finding, Verdict

    prog: Program = ctx.analysis.program
    lp, lc = p.loop_p, p.loop_c
    assert lp is not None and lc is not None
    stages = lc.stages
    full = p.writes[0].stmt.mbarrier.buffer  # type: ignore[attr-defined]
    name = user_name(p.buffer)
    loop_index = prog.site(lc).index

    def unknown(loc: Any, why: str) -> bool:
        findings.append(
            Finding(
                "UNKNOWN_WARP_ROLES",
                Verdict.UNKNOWN,
                f"the pipeline on {name}, read in a pipelined loop and in peeled code around it, could not be proved",
                loc=loc,
                reason=why,
                pin="peel whole iterations: wait on full[g % S] for the parity of g // S, read stage g % S, and "
                "release empty[g % S] once, after the last read of iteration g, in iteration order",
            )
        )
        return False

    ev = _term

    def instance(site: Site, origin: Origin, suffix: str) -> tuple[dict, list, Any]:
        """The environment, the constraints that `site` runs, and its producer iteration."""
        env = dict(ctx.base_env)
        cons: list[Any] = []
        if lc in site.loops:
            k = z3.BitVec(f"loop.{lc.var.name}{suffix}", smt.WIDTH)
            ctx.loop_terms.append(k)
            env[lc.var] = k
            cons.append(ctx.loop_range(lc, k, env))
            guards = _guards_within(site, lc)
        else:
            guards = _guards(site, lc)
        cons += [_guard(g, env) for g in guards]
        return env, cons, smt.val(global_iteration(p, origin, env))

    def loops_of(model: Any, *pairs: tuple[Site, dict]) -> dict:
        out: dict = {}
        if isinstance(model, str) or model is None:
            return out
        for site, env in pairs:
            if lc in site.loops:
                out[f"{loop_name(lc)} at line {site.loc.line if site.loc else '?'}"] = smt.model_int(model, env[lc.var])
        return out

    def region(site: Site) -> int:
        return 1 if lc in site.loops else (0 if site.index < loop_index else 2)

    def consecutive(sites: list[Site], what: str) -> str | None:
        """None when `sites` (each with an origin), in program order, stand for 0, 1, 2, ... one after another."""
        inner = [s for s in sites if lc in s.loops]
        if len(inner) > 1 or any(_guards_within(s, lc) for s in inner):
            return f"{what} in the pipelined loop: one per iteration, under no guard, is what the verifier numbers"
        count: Any = smt.val(0)
        for part in (0, 1, 2):
            if part == 1:
                if inner:
                    env, cons, g = instance(inner[0], p.origins[id(inner[0].stmt)], "#n")
                    if always(cons, g == count + env[lc.var]) is not None:
                        return (
                            f"{what} in the loop (line {inner[0].loc.line}) does not continue the count of those before"
                        )
                    ext = ev(lc.extent, ctx.base_env)
                    count = count + z3.If(ext > 0, ext, smt.val(0))
                continue
            claims = []
            for s in sorted((s for s in sites if region(s) == part), key=lambda s: s.index):
                _, cons, g = instance(s, p.origins[id(s.stmt)], "#n")
                ran = z3.And(*cons) if cons else z3.BoolVal(True)
                claims.append(z3.Implies(ran, g == count))
                count = count + z3.If(ran, smt.val(1), smt.val(0))
            if claims and always([], z3.And(*claims)) is not None:
                return f"{what} {'before' if part == 0 else 'after'} the loop do not stand for consecutive iterations"
        return None

    # (a) the producer: iteration g fills stage g % S on full[g % S]; the barriers have S elements
    if _count(full) != stages or int(p.buffer.static_shape[0]) != stages:
        return unknown(w_loc(p), f"{user_name(full)} and {name} need {stages} elements, one per stage")
    g = z3.BitVec(f"loop.{lp.var.name}#p", smt.WIDTH)
    ctx.loop_terms.append(g)
    env_p = dict(ctx.base_env)
    env_p[lp.var] = g
    range_p = ctx.loop_range(lp, g, env_p)
    extent_p = ev(lp.extent, ctx.base_env)
    for w in p.writes:
        c: Copy = w.stmt  # type: ignore[assignment]
        if 0 not in c.dst.dropped and c.dst.extent[0] != 1:
            return unknown(w.loc, f"the copy writes more than one stage of {name}")
        claim = z3.And(
            ev(barrier_element(c.mbarrier), env_p) == smt.mod(g, stages),  # type: ignore[arg-type]
            ev(c.dst.origin[0], env_p) == smt.mod(g, stages),
        )
        if always([range_p], claim) is not None:
            return unknown(w.loc, f"iteration g of the producer does not fill stage g % {stages} on full[g % {stages}]")
    for site in prog.sites:
        st = site.stmt
        if isinstance(st, MbarrierArrive) and st.barrier.buffer is full:
            if site.role is not p.producer or lp not in site.loops:
                return unknown(st.loc, f"{user_name(full)} is also arrived on outside the producer's loop")
    # (b) the consumer's waits on full
    waits = [
        prog.site(st) for st in walk_all(p.consumer.body) if isinstance(st, MbarrierWait) and st.barrier.buffer is full
    ]
    for ws in waits:
        if id(ws.stmt) not in p.origins:
            return unknown(ws.loc, "this wait is not paired with an iteration of the producer")
    why = consecutive(waits, f"the waits on {user_name(full)}")
    if why is not None:
        return unknown(waits[0].loc if waits else w_loc(p), why)
    for ws in waits:
        wait: MbarrierWait = ws.stmt  # type: ignore[assignment]
        env, cons, gw = instance(ws, p.origins[id(wait)], "#w")
        wrong = always(cons, z3.And(gw >= 0, gw < extent_p))
        if wrong is not None:
            return unknown(ws.loc, "this wait may wait for an iteration the producer does not run (deadlock)")
        parity = smt.mod(smt.evaluate(wait.phase, env), 2)
        wrong = always(cons, parity == smt.mod(smt.floordiv(gw, stages), 2))
        if wrong is not None:
            violation(
                "MBARRIER_PHASE",
                ws,
                f"the wait on {user_name(full)} uses the wrong parity: it waits for the data of producer iteration "
                f"g' (its barrier {user_name(full)}[g' % {stages}]), which completes phase g' // {stages}, so the wait "
                "returns for the phase before and the data has not landed",
                _model(wrong),
                loops_of(wrong, (ws, env)),
                variables={
                    "producer iteration g'": smt.model_int(wrong, gw),
                    **_parity_values(wrong, parity, gw, stages),
                }
                if not isinstance(wrong, str)
                else {},
            )
            return False
    # (c) the reads: dominated by a wait, in its stage
    ok = True
    for r in p.reads:
        origin = p.read_origins.get(id(r.stmt))
        if origin is None:
            violation(
                "PIPELINE_STALE_READ",
                r,
                f"{name} is filled by TMA copies completing on {user_name(full)}, but this read is not preceded by a "
                "wait on that mbarrier in the same iteration (or peeled block): it may read data that has not landed",
                accesses=(_access(prog, p.writes[0], "write", p.buffer), _access(prog, r, "read", p.buffer)),
            )
            return False
        env, cons, gr = instance(r, origin, "#r")
        for ref in _refs(r.stmt):
            if ref.buffer is not p.buffer:
                continue
            if 0 not in ref.dropped and ref.extent[0] != 1:
                return unknown(r.loc, f"the read spans more than one stage of {name}")
            wrong = always(cons, ev(ref.origin[0], env) == smt.mod(gr, stages))
            if wrong is not None:
                violation(
                    "PIPELINE_STALE_READ",
                    r,
                    f"this read of {name} is in stage {ref.origin[0]}, but the wait before it is for the data of "
                    f"producer iteration g', which lands in stage g' % {stages}: the stage read may hold another "
                    "iteration's data, or data that has not landed",
                    _model(wrong),
                    loops_of(wrong, (r, env)),
                    variables={"producer iteration g'": smt.model_int(wrong, gr)} if not isinstance(wrong, str) else {},
                )
                ok = False
                break
    if not ok:
        return False
    # (d) the release
    first_write = min(p.writes, key=lambda s: s.index)
    top_w = _top(lp.body, first_write)
    candidates: list[MbarrierWait] = []
    for st in reversed(lp.body[: lp.body.index(top_w)]):  # the nearest wait first
        if isinstance(st, MbarrierWait) and all(st.barrier.buffer is not c.barrier.buffer for c in candidates):
            candidates.append(st)
    failure = None
    for pw in candidates:
        out = _release_lagged(ctx, p, pw, instance, region, consecutive, always, ev, g, env_p, range_p, loops_of)
        if out is None:
            return True
        failure = failure or out
    if failure is None:
        violation(
            "PIPELINE_OVERWRITE",
            first_write,
            f"the producer refills {name} without waiting for the consumer to release the stage (no mbarrier it "
            f"waits on before the copy is arrived on by the consumer): its refill of iteration {stages} may "
            "overwrite the stage iteration 0 is still reading",
        )
        return False
    kind, args = failure
    if kind == "unknown":
        return unknown(*args)
    violation(*args[0], **args[1])
    return False


def _release_lagged(
    ctx: Any, p: Pairing, pw: MbarrierWait, instance, region, consecutive, always, ev, g, env_p, range_p, loops_of
) -> tuple[str, Any] | None:
    """None when `pw`'s barrier releases the stages of the lagged pairing `p` (`_check_lagged` (d)); else
    ("unknown", (loc, why)) or ("violated", (args, kwargs)) for the caller to report."""
    prog: Program = ctx.analysis.program
    lc = p.loop_c
    assert lc is not None
    stages = lc.stages
    empty = pw.barrier.buffer
    ename = user_name(empty)
    arrivals = [
        prog.site(st)
        for st in walk_all(prog.kernel.body)
        if isinstance(st, MbarrierArrive) and st.barrier.buffer is empty
    ]
    if not arrivals:
        return ("unknown", (pw.loc, f"nobody arrives on {ename}"))
    if _count(empty) != stages:
        return ("unknown", (pw.loc, f"{ename} needs {stages} elements, one per stage"))
    for a in arrivals:
        if a.role is not p.consumer or id(a.stmt) not in p.origins:
            return ("unknown", (a.loc, f"this arrival on {ename} is not paired with an iteration it releases"))
    # a phase completes with the release of one iteration by every thread of the consumer: one arrival each, or one
    # per warpgroup (otherwise a phase may complete while a warpgroup still reads)
    inits = [st for st in walk_all(prog.kernel.body) if isinstance(st, MbarrierInit) and st.barriers.buffer is empty]
    per = {len(p.consumer.warpgroups) if a.stmt.per_warpgroup else 1 for a in arrivals}  # type: ignore[attr-defined]
    if len(inits) != 1 or per != {inits[0].arrive_count}:
        return ("unknown", (pw.loc, f"the arrive count of {ename} is not one release by the whole consumer role"))
    for a in arrivals:
        env, cons, ra = instance(a, p.origins[id(a.stmt)], "#a")
        if always(cons, ev(barrier_element(a.stmt.barrier), env) == smt.mod(ra, stages)) is not None:  # type: ignore[attr-defined]
            return ("unknown", (a.loc, f"this arrival on {ename} does not release the iteration its stage holds"))
    why = consecutive(arrivals, f"the arrivals on {ename}")
    if why is not None:
        return ("unknown", (arrivals[0].loc, why))
    # no release of g' before a read of g' completes
    for r in p.reads:
        env_r, cons_r, gr = instance(r, p.read_origins[id(r.stmt)], "#r")
        for a in arrivals:
            env_a, cons_a, ra = instance(a, p.origins[id(a.stmt)], "#a")
            cons = cons_r + cons_a
            ar, rr = region(a), region(r)
            if ar == rr == 1:
                position = lc.body.index(_top(lc.body, a))
                lag = _completion_lag(p, position, [r])
                if lag is None:
                    return ("unknown", (a.loc, f"when the wgmma reads of {user_name(p.buffer)} complete is not known"))
                claim = z3.Implies(gr == ra, env_r[lc.var] + lag <= env_a[lc.var])
            elif ar < rr or (ar == rr and a.index < r.index):
                claim = gr != ra
            elif not _is_async(r.stmt) or _drained(prog, p, r, a):
                continue
            else:
                claim = gr != ra
            wrong = always(cons, claim)
            if wrong is not None:
                pending = (
                    f" (a wgmma with wait_group {r.stmt.pending}, still reading after its statement)"
                    if _is_async(r.stmt)
                    else ""
                )  # type: ignore[attr-defined]
                return (
                    "violated",
                    (
                        (
                            "PIPELINE_OVERWRITE",
                            a,
                            f"the consumer releases the stage of producer iteration g' on {ename} before its read of "
                            f"{user_name(p.buffer)} at line {r.loc.line if r.loc else '?'}{pending} has completed: "
                            f"once it has arrived, the producer's refill of iteration g' + {stages} may overwrite the "
                            "stage while it is read",
                            _model(wrong),
                            loops_of(wrong, (r, env_r), (a, env_a)),
                        ),
                        {
                            "accesses": (
                                _access(prog, p.writes[0], "write", p.buffer, p.loop_p, stages),
                                _access(prog, r, "read", p.buffer),
                            ),
                            "variables": {"producer iteration g'": smt.model_int(wrong, gr)}
                            if not isinstance(wrong, str)
                            else {},
                        },
                    ),
                )
    # the producer's refill of iteration g waits for the release of g - S
    claim = z3.And(
        ev(barrier_element(pw.barrier), env_p) == smt.mod(g, stages),
        smt.mod(smt.evaluate(pw.phase, env_p), 2) == smt.mod(smt.floordiv(g, stages) + 1, 2),
    )
    wrong = always([range_p], claim)
    if wrong is not None:
        return (
            "violated",
            (
                (
                    "MBARRIER_PHASE",
                    prog.site(pw),
                    f"the producer's wait on {ename} before refilling a stage of {user_name(p.buffer)} does not wait "
                    "for the consumer's release of that stage (barrier index or parity)",
                    _model(wrong),
                    _loops(wrong, p.loop_p, g),
                ),
                {},
            ),
        )
    # proved: the arrivals release every iteration once, in order, each phase by the whole role (the count above);
    # the arrive-count check counts them as that (`checks/mbarrier.py`), not as arrivals inside and outside a loop
    ctx.tail_releases[id(empty)] = frozenset(id(a.stmt) for a in arrivals)
    return None


def _drained(prog: Program, p: Pairing, r: Site, a: Site) -> bool:
    """A wgmma wait of 0 (or a synchronous wgmma, which waits for every group) runs after read `r` and before
    arrival `a` whenever `a` runs (in a body enclosing `a`, before it, and after `r` in program order outside the
    loop holding `r`)."""

    def drains(s: Stmt) -> bool:
        return (isinstance(s, WgmmaWait) and s.pending == 0) or (isinstance(s, Gemm) and not s.pending)

    found = _dominating(p.consumer.body, a, drains)
    if found is None:
        return False
    site = prog.site(found)
    return site.index > r.index
