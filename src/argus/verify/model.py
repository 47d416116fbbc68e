"""Tag propagation by abstract interpretation over the IR.

The abstract state maps every buffer to its *history*: the writes that may have produced its
current contents, newest first, with loop structure (`LoopHead`: "earlier iterations of the loop I
am in, then what came before it"; `LoopDone`: "all iterations of a loop that has finished").
Nothing is evaluated while the state is built; a check asks for the tag of one element, at one
program point, for symbolic block, thread, value and loop variables, and `Resolver.read` composes
the layouts of the writes that may have produced it into a Z3 term:

* the element's location is a register slot ``(thread, value)`` for a fragment, a physical offset
  for shared memory, global coordinates for a tensor;
* a write covers the location when the element of its destination window that lands there exists:
  for shared memory the write's layout (swizzle included) is *inverted* at the offset (the writer
  coordinate whose offset equals it) and checked to map back to it;
* the tag of what was written is read from the write's source at the same window coordinate, in
  the state just before the write, recursively: copies carry tags through windows, views and
  swizzles; elementwise operations keep their operand's tag; reductions drop the reduced coordinate;
  an MMA gives its accumulator element the A row and B column it was computed from;
* loops are read at a generic iteration ``k`` with ``k`` symbolic: an element not written yet in
  iteration ``k`` comes from iteration ``k-1`` (if ``k >= 1``) or from before the loop, up to a
  look-back bound beyond which the tag is unknown (and any finding relying on it is `unknown`).

Writes take effect when issued: that asynchronous copies land later is the pipeline checks' concern.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import z3

from argus.atoms import get_atom
from argus.atoms.copy import ldmatrix_transposes, matrix_transpose
from argus.atoms.mma import Arithmetic, group_origin, group_subtile, slot_count, slot_element
from argus.ir.expr import Expr, free_vars
from argus.ir.nodes import (
    Alloc,
    AsyncCommit,
    AsyncWait,
    Barrier,
    Broadcast,
    Buffer,
    Copy,
    Fence,
    Fill,
    For,
    Gemm,
    GroupBarrier,
    If,
    Kernel,
    Map,
    MapOp,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Reduce,
    Role,
    Space,
    Stmt,
    TileRef,
    WarpgroupTurn,
    WgmmaWait,
)
from argus.ir.tags import AssertTag, AssertTagEq, Tag, TagExpr, TagPlaceholder
from argus.layout import Layout
from argus.verify import padding, smt
from argus.verify.program import (
    Program,
    Site,
    absolute_thread,
    buffer_coords,
    colmajor,
    decompose,
    kept,
    shared_layout,
    user_name,
    window_of,
    window_shape,
)

UNINIT = "<uninitialized>"
HAVOC = "<unknown>"

# mask codes of a tag: the padding class of the element (`argus.verify.padding`); MASK_DERIVED is no longer produced
MASK_NONE, MASK_PAD_ZERO, MASK_PAD_NEG_INF, MASK_PAD_POS_INF, MASK_PAD_OTHER, MASK_DERIVED = range(6)
MASK_CONST = padding.CONST
pad_code = padding.pad_class


class Names:
    """Tag names <-> small integers (the name is part of the SMT term of a tag)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.consts: set[int] = set()
        self.id(UNINIT)
        self.id(HAVOC)

    def id(self, name: str, const: bool = False) -> int:
        if name not in self.ids:
            self.ids[name] = len(self.ids) + 1
        if const:
            self.consts.add(self.ids[name])
        return self.ids[name]

    def name(self, i: int) -> str:
        for k, v in self.ids.items():
            if v == i:
                return k
        return f"<tag {i}>"


@dataclass(frozen=True)
class SymTag:
    """A tag as Z3 terms: name id, arity, `R` coordinates (unused ones are 0) and the mask code."""

    name: Any
    arity: Any
    coords: tuple[Any, ...]
    mask: Any

    @staticmethod
    def ite(c: Any, a: SymTag, b: SymTag) -> SymTag:
        if c is True or (z3.is_bool(c) and z3.is_true(c)):
            return a
        if c is False or (z3.is_bool(c) and z3.is_false(c)):
            return b
        return SymTag(
            z3.If(c, a.name, b.name),
            z3.If(c, a.arity, b.arity),
            tuple(z3.If(c, x, y) for x, y in zip(a.coords, b.coords, strict=True)),
            z3.If(c, a.mask, b.mask),
        )

    def coord(self, i: int) -> Any:
        """Coordinate `i` (negative: from the end, by the symbolic arity)."""
        if i >= 0:
            return self.coords[i] if i < len(self.coords) else smt.val(0)
        term = smt.val(0)
        for a in range(1, len(self.coords) + 1):
            j = a + i
            if 0 <= j < len(self.coords):
                term = z3.If(self.arity == a, self.coords[j], term)
        return term

    def with_mask(self, mask: Any) -> SymTag:
        return SymTag(self.name, self.arity, self.coords, mask)

    def derived(self) -> SymTag:
        return self.with_mask(z3.If(self.mask == MASK_NONE, smt.val(MASK_NONE), smt.val(MASK_DERIVED)))


# --- histories ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Init:
    """A global tensor's contents at launch: tag ``(name, *coords)``."""

    buffer: Buffer


@dataclass(frozen=True, eq=False)
class Write:
    """`site` wrote (part of) `buffer`; `pre` is the abstract state just before it."""

    site: Site
    buffer: Buffer
    pre: dict


@dataclass(eq=False)
class LoopInfo:
    loop: For
    site: Site
    pre: dict
    body_end: dict = field(default_factory=dict)
    unchanged: set = field(default_factory=set)  # buffers the body never writes


@dataclass(frozen=True, eq=False)
class LoopHead:
    info: LoopInfo


@dataclass(frozen=True, eq=False)
class LoopDone:
    info: LoopInfo


@dataclass(frozen=True, eq=False)
class Branch:
    site: Site
    then: tuple
    orelse: tuple


@dataclass(frozen=True, eq=False)
class Havoc:
    """A statement the verifier does not model (or another warp role) may have written the buffer."""

    site: Site
    reason: str
    code: str = "UNKNOWN_STATEMENT"


@dataclass(frozen=True, eq=False)
class Paired:
    """Written by another warp role and read here as `roles.Pairing` says: consumer iteration ``j``
    sees the producer's writes up to its iteration ``j`` (or, for a buffer written once, all of them)."""

    pairing: Any
    producer_end: tuple = ()  # the producer's history of the buffer at the end of its body ("once")
    #: a "lagged" pairing's read statement: it sees the producer's writes up to the iteration its origin names
    #: (`roles.Pairing.read_origins`), one item per read statement
    read: Any = None


Item = Init | Write | LoopHead | LoopDone | Branch | Havoc | Paired


@dataclass(eq=False)
class Analysis:
    """The result of the abstract interpretation of a kernel."""

    kernel: Kernel
    program: Program
    names: Names
    rank: int  # R: coordinates per tag
    pre: dict[int, dict]  # site index -> state just before the statement
    unknown: list[tuple[Site, str, str]]  # (site, code, reason) for statements not modelled
    asserts: list[Site]
    gemms: list[Site]
    pairings: list = field(default_factory=list)
    loops: dict = field(default_factory=dict)  # id(For) -> LoopInfo

    def state_before(self, site: Site) -> dict:
        return self.pre[site.index]


#: Statements with no effect on the values buffers hold. A `WarpgroupTurn` orders only when MMAs are issued, never an
#: access the mbarriers and waits do not order already: ignoring it can only make a race look possible, not hide one.
_NO_EFFECT = (
    Barrier,
    AsyncCommit,
    AsyncWait,
    Fence,
    MbarrierInit,
    MbarrierArrive,
    MbarrierWait,
    WgmmaWait,
    WarpgroupTurn,
)


def analyze(kernel: Kernel) -> Analysis:
    """Build the histories of every buffer at every program point."""
    prog = Program.build(kernel)
    names = Names()
    rank = 2
    for t in kernel.tensors:
        names.id(t.name)
        rank = max(rank, len(t.shape))
    pre: dict[int, dict] = {}
    unknown: list[tuple[Site, str, str]] = []
    asserts: list[Site] = []
    gemms: list[Site] = []
    loops: dict = {}
    from argus.verify.roles import plan

    pairings = plan(prog)

    def push(state: dict, buffer: Buffer, site: Site, replace: bool) -> dict:
        new = dict(state)
        w = Write(site, buffer, state)
        new[buffer] = (w,) if replace else (w,) + state.get(buffer, ())
        return new

    #: id(read statement) -> (buffer, item): the reads of "lagged" pairings, while their consumer role runs paired
    lagged_reads: dict[int, list[tuple[Buffer, Paired]]] = {}

    def run(body: tuple[Stmt, ...], state: dict) -> dict:
        nonlocal rank
        i = 0
        while i < len(body):
            if isinstance(body[i], Role):  # consecutive roles run concurrently
                j = i
                while j < len(body) and isinstance(body[j], Role):
                    j += 1
                state = run_roles(body[i:j], state)
                i = j
                continue
            s = body[i]
            i += 1
            site = prog.site(s)
            if id(s) in lagged_reads:  # this read sees the producer iteration its origin names, nothing before
                state = dict(state)
                for b, item in lagged_reads[id(s)]:
                    state[b] = (item,)
            pre[site.index] = state
            if isinstance(s, Alloc):
                if s.buffer.space in (Space.SHARED, Space.FRAGMENT):
                    state = dict(state)
                    state[s.buffer] = ()
            elif isinstance(s, Copy):
                if s.dst.buffer.space == Space.GLOBAL and s.src.buffer.space == Space.GLOBAL:
                    unknown.append((site, "UNKNOWN_STATEMENT", "global-to-global copies are not modelled"))
                why = _unmodelled_copy(s)
                if why and not any(u[0] is site for u in unknown):
                    unknown.append((site, "UNKNOWN_STATEMENT", why))
                state = push(state, s.dst.buffer, site, replace=s.dst.buffer.space == Space.FRAGMENT)
            elif isinstance(s, Fill):
                state = push(state, s.dst.buffer, site, replace=s.dst.buffer.space == Space.FRAGMENT)
                names.id(f"fill {s.value}", const=True)
            elif isinstance(s, Map):
                state = push(state, s.dst.buffer, site, replace=True)
                names.id("coord", const=True)
                names.id("scalar", const=True)
            elif isinstance(s, Reduce):
                state = push(state, s.dst.buffer, site, replace=not s.accumulate)
            elif isinstance(s, Gemm):
                if site not in gemms:
                    gemms.append(site)
                state = push(state, s.acc.buffer, site, replace=True)
            elif isinstance(s, Tag):
                names.id(s.name)
                rank = max(rank, len(s.coords))
                state = push(state, s.target.buffer, site, replace=False)
            elif isinstance(s, (AssertTag, AssertTagEq)):
                if site not in asserts:
                    asserts.append(site)
            elif isinstance(s, For):
                info = LoopInfo(s, site, state)
                loops[id(s)] = info
                inside = {b: (LoopHead(info),) for b in state}
                end = run(s.body, inside)
                info.body_end = end
                info.unchanged = {id(b) for b, items in end.items() if b in inside and items is inside[b]}
                new = dict(state)
                for b in end:
                    if id(b) in info.unchanged:
                        continue
                    new[b] = (LoopDone(info),)
                state = new
            elif isinstance(s, If):
                then = run(s.then, dict(state))
                other = run(s.orelse, dict(state))
                new = dict(state)
                for b in set(then) | set(other):
                    t_items, o_items = then.get(b, ()), other.get(b, ())
                    if t_items is state.get(b) and o_items is state.get(b):
                        continue
                    new[b] = (Branch(site, t_items, o_items),)
                state = new
            elif isinstance(s, GroupBarrier):
                # after the barrier a global tensor holds what the blocks that met there stored: read by position, as
                # a second kernel reads it (`checks/global_reads.py` proves that each such read is ordered after the
                # store it sees); shared memory and registers are untouched
                state = {b: ((Init(b),) if b.space == Space.GLOBAL else items) for b, items in state.items()}
            elif isinstance(s, _NO_EFFECT):
                pass
            else:
                reason = f"{type(s).__name__} is not modelled by the verifier"
                if not any(u[0] is site for u in unknown):
                    unknown.append((site, "UNKNOWN_STATEMENT", reason))
                new = dict(state)
                for b in list(new):
                    if b.space in (Space.SHARED, Space.FRAGMENT):
                        new[b] = (Havoc(site, reason),) + new[b]
                state = new
        return state

    def run_roles(roles: tuple[Stmt, ...], state: dict) -> dict:
        """Warp roles run concurrently, synchronized by mbarriers. What one role reads of a buffer another
        role writes is paired by `roles.plan` (proved by `roles.check_protocol`), or unknown."""
        writes = {id(r): _written(r.body) for r in roles}  # type: ignore[attr-defined]
        ends: dict[int, dict] = {}

        def run_role(r: Stmt, paired: bool) -> dict:
            site = prog.site(r)
            pre[site.index] = state
            inside = dict(state)
            for other in roles:
                if other is r:
                    continue
                for b in writes[id(other)]:
                    p = next((p for p in pairings if p.consumer is r and p.producer is other and p.buffer is b), None)
                    if paired and p is not None:
                        end = ends.get(id(other), {}).get(b, ()) if p.kind == "once" else ()
                        inside[b] = (Paired(p, end),)
                        continue
                    reason = (
                        f"{user_name(b)} is written in warp role {other.name!r} ({other.loc}) and read in role "  # type: ignore[attr-defined]
                        f"{r.name!r} without a producer/consumer pipeline the verifier recognizes"  # type: ignore[attr-defined]
                    )
                    inside[b] = (Havoc(prog.site(other), reason, "UNKNOWN_WARP_ROLES"),) + inside.get(b, ())
            if paired:
                for p in pairings:
                    if p.consumer is r and p.kind == "lagged":
                        for rs in p.reads:
                            lagged_reads.setdefault(id(rs.stmt), []).append((p.buffer, Paired(p, read=rs.stmt)))
            try:
                return run(r.body, inside)  # type: ignore[attr-defined]
            finally:
                lagged_reads.clear()

        for r in roles:
            ends[id(r)] = run_role(r, paired=False)
        for r in roles:
            if any(p.consumer is r for p in pairings):
                ends[id(r)] = run_role(r, paired=True)
        out = dict(state)
        for r in roles:
            end = ends[id(r)]
            for b in writes[id(r)]:
                if b in end:
                    out[b] = end[b]
            for b, items in end.items():
                if b not in state:
                    out[b] = items
        return out

    init = {t: (Init(t),) for t in kernel.tensors}
    run(kernel.body, init)
    return Analysis(kernel, prog, names, rank, pre, unknown, asserts, gemms, pairings, loops)


# --- resolution ----------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One operation on the way of a value, recorded while a tag is resolved; kept in the
    counterexample when its `guard` holds in the model."""

    guard: Any
    site: Site
    op: str
    describe: Any  # model -> str
    loops: dict[str, Any]


#: Z3's budget for deciding one write's cover while a history is read (`Query.decide`): a fraction of a second; a
#: cover not decided within it stays a condition of the query.
DECIDE_RLIMIT = 2_000_000


#: The histories one query may read (`Query._read` calls) before every further read is an unknown tag: the encoding's
#: budget, as Z3's resource limit is the solver's. The library's kernels read at most a few hundred a query; a read
#: past the budget makes a violation that needs it `unknown` (code UNKNOWN_SOLVER), never a wrong answer, and a
#: kernel whose encoding would grow without end (as a chain of loops once did, `LoopDone`) answers in bounded time.
MAX_READS = 20_000


class Query:
    """Side conditions, recorded steps and unknown-markers of one SMT query."""

    def __init__(self, analysis: Analysis, lookback: int = 3) -> None:
        self.analysis = analysis
        self.lookback = lookback
        self.reads = 0  # `_read` calls so far (`MAX_READS`)
        # the look-back budget of the read being answered: reads of other buffers that it starts (through a
        # write's source) inherit it, so a chain through loop-carried values (m_new = max(m, ...); m = m_new)
        # stops after `lookback` iterations instead of recursing without end
        self._budget: dict | None = None
        self.side: list[Any] = []
        self.steps: list[Step] = []
        self.havoc: list[tuple[Any, str, str]] = []  # (guard, code, reason)
        # shared-memory offsets this query computed from buffer coordinates, by the offset term's id: a write through
        # the same layout covers the offset at those coordinates (no inversion of the layout, see `dst_window`)
        self._offsets: dict[int, list[tuple[Any, Any, tuple[Any, ...]]]] = {}
        # padding classes (`argus.verify.padding`): computed only when a check asks for them (`masks`), with the
        # representatives chosen for reductions and MMAs (kept consistent across the reads of one query) and the
        # `T.where` masks met on the way (for the message)
        self.masks = False
        self.reps: dict[int, list[tuple[tuple, tuple]]] = {}
        self.selects: list[tuple[Any, Site, tuple, Any]] = []
        # facts every model of the final query satisfies (the launch, the loops' ranges, the element's coordinates),
        # given by the check (`assume`): with them a write's cover is decided while the history is read (`decide`),
        # so a write that certainly covers the element ends the read there instead of putting every older write
        # into the query under a condition the solver would have to decide among all the others
        self.facts: list[Any] | None = None
        self._decided: dict[tuple[int, int], tuple[Any, Any, bool | None]] = {}
        # the value index chosen for an element read from a thread of a fragment whose layout gives each of its
        # threads' elements one value (`src_at`), by (buffer, element index term, thread term): the choice is
        # determined, so every read of that element by that thread shares it (one variable, not one a read path)
        self._values: dict[tuple[int, int, int], tuple[Any, Any, Any]] = {}

    def assume(self, facts: list[Any]) -> None:
        """Take `facts` as true in every model this query is solved over: the check must pass them (or stronger
        constraints) to `Context.solve`. Until called, no cover is decided early."""
        self.facts = [*(self.facts or []), *facts]

    # --- helpers ----------------------------------------------------------------------------------------
    @property
    def names(self) -> Names:
        return self.analysis.names

    @property
    def rank(self) -> int:
        return self.analysis.rank

    def const(self, name: str) -> SymTag:
        mask = smt.val(MASK_CONST if self.masks else MASK_NONE)
        return SymTag(smt.val(self.names.id(name, const=True)), smt.val(0), (smt.val(0),) * self.rank, mask)

    def named(self, name: str, coords: tuple[Any, ...], mask: Any = MASK_NONE) -> SymTag:
        coords = tuple(smt.val(c) for c in coords)
        if len(coords) > self.rank:
            raise smt.EncodingError(f"tag {name} has {len(coords)} coordinates, more than {self.rank}")
        pad = (smt.val(0),) * (self.rank - len(coords))
        return SymTag(smt.val(self.names.id(name)), smt.val(len(coords)), coords + pad, smt.val(mask))

    def havoc_tag(self, guard: Any, code: str, reason: str, any_class: bool = False) -> SymTag:
        """A tag the verifier could not determine: a violation that needs it is `code`, unknown. Its padding class
        is real data unless `any_class`: an element older than the look-back is another iteration of the same
        loop body, whose padding the check sees where it lands at an iteration within reach (the loop's extent is
        a free size), while an element past the encoding's budget (`MAX_READS`) may be anything."""
        self.havoc.append((guard, code, reason))
        return SymTag(
            smt.fresh("havoc_name"),
            smt.fresh("havoc_arity"),
            tuple(smt.fresh("havoc_c") for _ in range(self.rank)),
            smt.fresh("havoc_mask") if any_class and self.masks else smt.val(MASK_NONE),
        )

    def require(self, guard: Any, cond: Any) -> None:
        self.side.append(z3.Implies(guard, cond))

    def is_const(self, tag: SymTag) -> Any:
        ids = sorted(self.names.consts)
        return z3.Or(*[tag.name == i for i in ids]) if ids else z3.BoolVal(False)

    def is_data(self, tag: SymTag) -> Any:
        """A tag with coordinates, of real data (not a constant, not uninitialized)."""
        return z3.And(z3.Not(self.is_const(tag)), tag.name != self.names.id(UNINIT))

    def step(self, guard: Any, site: Site, op: str, describe: Any, env: dict) -> None:
        from argus.verify.program import loop_name

        loops = {loop_name(lp): env[lp.var] for lp in site.loops if lp.var in env}
        self.steps.append(Step(guard, site, op, describe, loops))

    # --- reading --------------------------------------------------------------------------------------------
    def read(self, buffer: Buffer, items: tuple, loc: Any, env: dict, guard: Any, budget: dict | None = None) -> SymTag:
        """The tag of `buffer`'s element at `loc` given its history `items` (newest first)."""
        if budget is None:
            budget = self._budget if self._budget is not None else {}
        saved, self._budget = self._budget, budget
        try:
            return self._read(buffer, items, loc, env, guard, budget)
        finally:
            self._budget = saved

    def _read(self, buffer: Buffer, items: tuple, loc: Any, env: dict, guard: Any, budget: dict) -> SymTag:
        if not items:
            return self.named(UNINIT, ())
        self.reads += 1
        if self.reads > MAX_READS:
            return self.havoc_tag(
                guard,
                "UNKNOWN_SOLVER",
                f"the query's encoding outgrew its budget: more than {MAX_READS} reads of buffer histories "
                f"(argus.verify.model.MAX_READS), the last of {user_name(buffer)}",
                any_class=True,
            )
        head, rest = items[0], items[1:]
        if isinstance(head, Init):
            return self.named(buffer.name, tuple(loc))
        if isinstance(head, Write):
            if isinstance(head.site.stmt, Tag) and head.site.stmt.exclude is not None:
                return self._excluded(head, buffer, rest, loc, env, guard, budget)
            if self.facts is not None and self.decide(self.cover(head, loc, env), guard) is False:
                return self.read(buffer, rest, loc, env, guard, budget)  # this write never lands on the element
            cover, tag = self.write_at(head, loc, env, guard)
            if cover is not True and self.decide(cover, guard) is True:
                cover = True
            if self.masks and isinstance(head.site.stmt, Tag) and buffer.space != Space.GLOBAL:
                # a tag names the value, it does not change it: the element keeps the padding class it had
                g = guard if cover is True else z3.And(guard, cover)
                tag = tag.with_mask(self.read(buffer, rest, loc, env, g, budget).mask)
            if cover is True:
                return tag
            older = self.read(buffer, rest, loc, env, z3.And(guard, z3.Not(cover)), budget)
            return SymTag.ite(cover, tag, older)
        if isinstance(head, LoopHead):
            info = head.info
            var = info.loop.var
            if id(buffer) in info.unchanged:
                return self.read(buffer, info.pre.get(buffer, ()), loc, env, guard, budget)
            left = budget.get(id(info), self.lookback)
            k = env[var]
            more = smt.val(k) >= 1
            outer = {v: t for v, t in env.items() if v is not var}
            # the element as the loop found it: the same at every iteration this read looks back through, so it is
            # read once, under the guard of the first (outermost) of them, which every later one's guard implies
            # (guards only grow down a read); read again at each, a chain of loops, each looked back through, read
            # it (lookback + 1)^depth times (a serial loop in each copy of an unrolled one: minutes, then hours)
            key = ("before", id(info), id(buffer), _ids(loc), _ids(outer.values()))
            if key in budget:
                before = budget[key][1]
            else:
                before = self.read(buffer, info.pre.get(buffer, ()), loc, outer, guard, budget)
            if left <= 0:
                prev = self.havoc_tag(
                    z3.And(guard, more),
                    "UNKNOWN_LOOKBACK",
                    f"{user_name(buffer)}'s element may have been written more than {self.lookback} iterations of loop "
                    f"{var.name} ago",
                )
            else:
                prev_env = dict(env)
                prev_env[var] = smt.val(k) - 1
                nb = dict(budget)
                nb[id(info)] = left - 1
                nb[key] = ((loc, outer), before)  # the terms kept with it: a freed term's id is reused
                prev = self.read(buffer, info.body_end.get(buffer, ()), loc, prev_env, z3.And(guard, more), nb)
            return SymTag.ite(more, prev, before)
        if isinstance(head, LoopDone):
            info = head.info
            var = info.loop.var
            ext = (
                smt.evaluate(info.loop.extent, env) if isinstance(info.loop.extent, Expr) else smt.val(info.loop.extent)
            )
            ran = smt.val(ext) >= 1
            last_env = dict(env)
            last_env[var] = smt.val(ext) - 1
            # the element as the loop found it, read once for the loop not run and every iteration the body's
            # reads look back through (`LoopHead`)
            outer = {v: t for v, t in env.items() if v is not var}
            before = self.read(buffer, info.pre.get(buffer, ()), loc, outer, guard, budget)
            nb = dict(budget)
            nb[id(info)] = self.lookback
            nb[("before", id(info), id(buffer), _ids(loc), _ids(outer.values()))] = ((loc, outer), before)
            last = self.read(buffer, info.body_end.get(buffer, ()), loc, last_env, z3.And(guard, ran), nb)
            return SymTag.ite(ran, last, before)
        if isinstance(head, Branch):
            cond_e = head.site.stmt.cond  # type: ignore[attr-defined]
            if self.analysis.kernel.thread_var in free_vars(cond_e) and self.analysis.kernel.thread_var not in env:
                return self.havoc_tag(guard, "UNKNOWN_BRANCH", f"the branch at {head.site.loc} depends on the thread")
            c = smt.boolean(smt.evaluate(cond_e, env))
            t = self.read(buffer, head.then, loc, env, z3.And(guard, c), budget)
            o = self.read(buffer, head.orelse, loc, env, z3.And(guard, z3.Not(c)), budget)
            return SymTag.ite(c, t, o)
        if isinstance(head, Havoc):
            return self.havoc_tag(guard, head.code, head.reason)
        if isinstance(head, Paired):
            p = head.pairing
            if p.kind == "once":
                return self.read(buffer, head.producer_end, loc, env, guard, budget)
            if p.kind == "lagged":
                from argus.verify.roles import global_iteration

                origin = p.read_origins.get(id(head.read))
                if origin is None or (origin[0] == "loop" and p.loop_c.var not in env):
                    return self.havoc_tag(
                        guard,
                        "UNKNOWN_WARP_ROLES",
                        f"the producer iteration whose data this read of {user_name(buffer)} sees is not known",
                    )
                info = self.analysis.loops[id(p.loop_p)]
                penv = dict(env)
                penv[p.loop_p.var] = global_iteration(p, origin, env)  # the producer's loop starts at 0
                nb = dict(budget)
                nb[id(info)] = self.lookback
                return self.read(buffer, info.body_end.get(buffer, ()), loc, penv, guard, nb)
            if any(lc.var not in env for _, lc in p.loop_map()):
                return self.havoc_tag(
                    guard, "UNKNOWN_WARP_ROLES", f"{user_name(buffer)} is read outside the consumer's pipelined loop"
                )
            info = self.analysis.loops[id(p.loop_p)]
            penv = dict(env)
            for lp, lc in p.loop_map():  # the tile loops' iteration and the pipeline's: the same in both roles
                penv[lp.var] = env[lc.var]
            nb = dict(budget)
            nb[id(info)] = self.lookback
            return self.read(buffer, info.body_end.get(buffer, ()), loc, penv, guard, nb)
        raise TypeError(f"unknown history item {head!r}")

    # --- where a write lands, and what it wrote -----------------------------------------------------------
    def dst_window(self, ref: TileRef, loc: Any, env: dict, site: Site) -> tuple[Any, tuple[Any, ...], dict]:
        """(cover, window coordinate, env) of the destination element of a write at `loc`."""
        buf = ref.buffer
        if buf.space == Space.FRAGMENT:
            t, v = loc
            env = dict(env)
            env[self.analysis.kernel.thread_var] = absolute_thread(buf, t, site.role)
            idx = buf.tv((t, v)) if not isinstance(t, int) else buf.tv(t, v)
            coord = decompose(smt.val(idx), buf.static_shape)
            if ref.is_whole():
                return True, coord, env
            win, inside = window_of(ref, coord, env)
            return inside, win, env
        if buf.space == Space.SHARED:
            layout = shared_layout(ref)
            if not smt.invertible(layout):
                raise smt.EncodingError(f"UNKNOWN_LAYOUT_INVERSE: the layout {layout} of {user_name(buf)} interleaves")
            known = self._same_layout_coords(layout, loc)
            bcoords, ok = known if known is not None else smt.invert(layout, loc)
            win, inside = window_of(ref, bcoords, env)
            return z3.And(ok, inside), win, env
        win, inside = window_of(ref, tuple(loc), env)
        return inside, win, env

    def _same_layout_coords(self, layout: Any, loc: Any) -> tuple[tuple[Any, ...], Any] | None:
        """(coordinates, in domain) of `loc` when this query computed `loc` as ``layout(coordinates)`` itself (a read
        through the same layout as the write). `layout` is injective (`smt.invertible`), so those are the only
        coordinates it maps to `loc`: the same answer as `smt.invert`, without making the solver undo a swizzle."""
        if not z3.is_expr(loc):
            return None
        for term, seen, coords in self._offsets.get(loc.get_id(), ()):  # the term is kept: its id is not reused
            if seen == layout and term.eq(loc):
                return coords, z3.And(*smt.domain(layout, coords))
        return None

    def src_at(
        self,
        ref: Any,
        window: tuple[Any, ...],
        env: dict,
        guard: Any,
        pre: dict,
        site: Site,
        same_thread: Any = None,
        pad: float = 0.0,
        like: tuple[Buffer, Any] | None = None,
    ) -> SymTag:
        """The tag of the element of operand `ref` at `window` coordinate, in state `pre`. A fragment
        operand is read from thread `same_thread` when given (elementwise semantics), else from any
        thread that holds it. `like`: (the destination fragment, the destination element's (thread, value)) of an
        elementwise write; an operand laid out as the destination is read at that same (thread, value)."""
        if isinstance(ref, Broadcast):
            window = tuple(c for i, c in enumerate(window) if i not in ref.axes)
            ref, like = ref.ref, None
        buf = ref.buffer
        items = pre.get(buf, ())
        if like is not None and same_thread is not None and ref.is_whole() and _same_fragment_layout(buf, like[0]):
            return self.read(buf, items, like[1], env, guard)  # the element's value index is the destination's
        if buf.space == Space.GLOBAL:
            g = buffer_coords(ref, window, env)
            tag = self.read(buf, items, g, env, guard)
            shape = [smt.evaluate(s, env) if isinstance(s, Expr) else smt.val(s) for s in buf.shape]
            inb = z3.And(*[smt.in_range(c, 0, s) for c, s in zip(g, shape, strict=True)])
            for c, b in zip(g, ref.bound or (), strict=False):  # a bounded window reads pad at and past its bound
                if b is not None:
                    inb = z3.And(inb, smt.val(c) < smt.val(smt.evaluate(b, env) if isinstance(b, Expr) else b))
            return tag.with_mask(z3.If(inb, tag.mask, smt.val(pad_code(pad))))
        if buf.space == Space.SHARED:
            b = buffer_coords(ref, window, env)
            layout = shared_layout(ref)
            off = smt.apply_layout(layout, b)
            self._offsets.setdefault(off.get_id(), []).append((off, layout, tuple(smt.val(c) for c in b)))
            return self.read(buf, items, off, env, guard)
        if buf.space == Space.FRAGMENT:
            if not ref.is_whole():
                raise smt.EncodingError(f"windows of fragment {user_name(buf)} are not modelled")
            idx = colmajor(tuple(smt.val(c) for c in window), buf.static_shape)
            vals = buf.values_per_thread
            if same_thread is not None and _one_value_per_element(buf):
                thread = smt.val(same_thread)
                key = (id(buf), idx.get_id(), thread.get_id())
                if key not in self._values:  # the terms are kept with it: a freed term's id is reused
                    self._values[key] = (idx, thread, smt.fresh(f"{user_name(buf)}_v"))
                v = self._values[key][2]
            else:
                v = smt.fresh(f"{user_name(buf)}_v")
            if same_thread is not None:
                t = same_thread
            else:
                t = smt.fresh(f"{user_name(buf)}_t")
                self.require(guard, smt.in_range(t, 0, buf.threads))
            self.require(guard, z3.And(smt.in_range(v, 0, vals), smt.val(buf.tv((t, v))) == idx))
            return self.read(buf, items, (t, v), env, guard)
        raise smt.EncodingError(f"reading {buf.space} buffer {user_name(buf)} is not modelled")

    def cover(self, w: Write, loc: Any, env: dict) -> Any:
        """Whether write `w` lands on the element at `loc` (`write_at`'s cover, without reading what it wrote)."""
        s = w.site.stmt
        if isinstance(s, (Reduce, Gemm)):
            return True
        ref = s.target if isinstance(s, Tag) else s.dst
        cover = self.dst_window(ref, loc, env, w.site)[0]
        if isinstance(s, Tag) and s.target.buffer.space == Space.GLOBAL and s.target.is_whole():
            return True
        return cover

    def decide(self, cond: Any, guard: Any) -> bool | None:
        """True when `cond` holds wherever `guard` does, False when it holds nowhere there, under the query's facts
        (`assume`); None when not decided within a small budget (then the query keeps the condition). Sound for a
        value read under `guard`: where `guard` is false the value is never used."""
        if cond is True or cond is False or self.facts is None:
            return cond if isinstance(cond, bool) else None
        key = (cond.get_id(), guard.get_id() if z3.is_expr(guard) else -1)
        if key in self._decided:
            return self._decided[key][2]
        answer: bool | None = None
        simple = z3.simplify(cond)
        if z3.is_true(simple):
            answer = True
        elif z3.is_false(simple):
            answer = False
        else:
            for claim, value in ((z3.Not(cond), True), (cond, False)):
                s = z3.SolverFor("QF_BV")
                s.set("rlimit", DECIDE_RLIMIT)
                terms = [*self.facts, guard, claim]
                s.add(*terms, *smt.definitions(terms))
                if s.check() == z3.unsat:
                    answer = value
                    break
        self._decided[key] = (cond, guard, answer)  # the terms are kept: a freed term's id is reused
        return answer

    def write_at(self, w: Write, loc: Any, env: dict, guard: Any) -> tuple[Any, SymTag]:
        s = w.site.stmt
        site = w.site
        if isinstance(s, Copy):
            cover, win, wenv = self.dst_window(s.dst, loc, env, site)
            if s.atom.startswith("ldmatrix") and s.dst.buffer.space == Space.FRAGMENT and _ldmatrix_transposes(s):
                win = matrix_transpose(*win)  # the forced variant delivers every 8x8 block transposed
            g = guard if cover is True else z3.And(guard, cover)
            same = like = None
            if s.dst.buffer.space == Space.FRAGMENT and s.src.buffer.space == Space.FRAGMENT:
                same = loc[0]
                like = (s.dst.buffer, loc) if s.dst.is_whole() else None
            self.step(g, site, f"copy ({s.atom})", _describe_copy(s, loc, win), wenv)
            tag = self.src_at(s.src, win, wenv, g, w.pre, site, same_thread=same, pad=s.pad, like=like)
            return cover, tag
        if isinstance(s, Fill):
            cover, win, wenv = self.dst_window(s.dst, loc, env, site)
            return cover, self.const(f"fill {s.value}")
        if isinstance(s, Map):
            cover, win, wenv = self.dst_window(s.dst, loc, env, site)
            operand = _map_operand(s)
            if operand is None:
                return cover, self.const("coord" if s.op == MapOp.COORD else "scalar")
            self.step(guard, site, f"elementwise {s.op.value}", _describe_copy(s, loc, win), wenv)
            like = (s.dst.buffer, loc) if s.dst.buffer.space == Space.FRAGMENT and s.dst.is_whole() else None
            tag = self.src_at(operand, win, wenv, guard, w.pre, site, same_thread=loc[0], like=like)
            if self.masks:
                return cover, tag.with_mask(padding.map_class(self, w, win, wenv, guard, loc, operand, tag))
            return cover, tag.derived()
        if isinstance(s, Reduce):
            return True, self.reduce_at(w, s, loc, env, guard)
        if isinstance(s, Gemm):
            return True, self.gemm_at(w, s, loc, env, guard)
        if isinstance(s, Tag):
            cover, win, wenv = self.dst_window(s.target, loc, env, site)
            if s.target.buffer.space == Space.GLOBAL and s.target.is_whole():
                cover = True  # a tag function of a whole tensor is total: padding elements are tagged too

            leaf = _coordinate_leaf(win, wenv)
            coords = tuple(smt.val(smt.evaluate(c, wenv, leaf)) for c in s.coords)
            self.step(guard if cover is True else z3.And(guard, cover), site, f"tag {s.name!r}", None, wenv)
            return cover, self.named(s.name, coords)
        raise smt.EncodingError(f"{type(s).__name__} writes are not modelled")

    def _excluded(self, head: Write, buffer: Buffer, rest: tuple, loc: Any, env: dict, guard: Any, budget: dict):
        """The element through a `T.exclude` (a `Tag` with `exclude`): its tag unchanged; where the condition holds
        at the element, its padding class becomes `padding.PAD_OTHER` (a value that must not contribute)."""
        s = head.site.stmt
        older = self.read(buffer, rest, loc, env, guard, budget)
        if not self.masks:
            return older
        cover, win, wenv = self.dst_window(s.target, loc, env, head.site)
        inside = smt.boolean(smt.evaluate(s.exclude, wenv, _coordinate_leaf(win, wenv)))
        if cover is not True:
            inside = z3.And(cover, inside)
        self.step(z3.And(guard, inside), head.site, "excluded (T.exclude)", None, wenv)
        return older.with_mask(z3.If(inside, padding.bv(padding.PAD_OTHER), older.mask))

    def reduce_at(self, w: Write, s: Reduce, loc: Any, env: dict, guard: Any) -> SymTag:
        t, j = loc
        dst, src = s.dst.buffer, s.src.buffer
        key = smt.val(dst.tv((t, j)))  # the kept coordinate of this result value
        keep_axis = 1 - s.axis
        wenv = dict(env)
        wenv[self.analysis.kernel.thread_var] = absolute_thread(dst, t, w.site.role)
        self.step(guard, w.site, f"reduce_{s.op.value}", None, wenv)
        if self.masks:  # the class of the result follows a representative element of the whole row
            ts, v = padding.representative(self, w.site, (key,), env, ("t", "v"))
            src_coord = decompose(smt.val(src.tv((ts, v))), src.static_shape)
            self.require(
                guard,
                z3.And(
                    smt.in_range(ts, 0, src.threads),
                    smt.in_range(v, 0, src.values_per_thread),
                    src_coord[keep_axis] == key,
                ),
            )
            renv = dict(env)
            renv[self.analysis.kernel.thread_var] = absolute_thread(src, ts, w.site.role)
            tag = self.read(src, w.pre.get(src, ()), (ts, v), renv, guard)
        else:
            v = smt.fresh(f"{user_name(src)}_v")
            src_coord = decompose(smt.val(src.tv((t, v))), src.static_shape)
            self.require(guard, z3.And(smt.in_range(v, 0, src.values_per_thread), src_coord[keep_axis] == key))
            tag = self.read(src, w.pre.get(src, ()), (t, v), wenv, guard)
        drop = axis_map(self.analysis, src, w.pre.get(src, ()))
        pos = drop[s.axis] if drop is not None and drop[s.axis] is not None else None
        if self.masks:
            return drop_coord(tag, pos, self.rank).with_mask(padding.reduce_class(self, w, s, loc, env, guard, tag))
        return drop_coord(tag, pos, self.rank).derived()

    def gemm_operands(self, w: Write, s: Gemm, loc: Any, k: Any, env: dict, guard: Any) -> tuple[SymTag, SymTag]:
        """The A and B elements of contraction index `k` (of the tile) of the product the MMA of write `w` adds
        into accumulator slot ``loc = (t, v)``, as its instruction reads them."""
        t, v = loc
        atom = get_atom(s.atom)
        at = atom.thread_count
        g = z3.UDiv(smt.val(t), at)
        lane = z3.URem(smt.val(t), at)
        gm_count, _ = s.groups
        gm, gn = z3.URem(g, gm_count), z3.UDiv(g, gm_count)
        sub_c = group_subtile("C", (s.acc.shape[0], s.acc.shape[1]), s.groups)
        i, j = hardware_element(atom, "C", sub_c, lane, v)
        ta = operand_hw(self, w, s, "A", atom, (gm, gn), g, (i, k), env, guard)
        tb = operand_hw(self, w, s, "B", atom, (gm, gn), g, (k, j), env, guard)
        return ta, tb

    def gemm_at(self, w: Write, s: Gemm, loc: Any, env: dict, guard: Any) -> SymTag:
        """The accumulator slot ``(t, v)`` after an MMA: tag (A row, B column) of the products it sums."""
        t, v = loc
        wenv = dict(env)
        k = smt.val(0)
        if self.masks:  # the class of the element follows a representative product (`padding.mma_class`)
            (k,) = padding.representative(self, w.site, (smt.val(t), smt.val(v)), env, ("k",))
            self.require(guard, smt.in_range(k, 0, s.a.shape[1]))
        ta, tb = self.gemm_operands(w, s, loc, k, wenv, guard)
        amap_a = axis_map(self.analysis, s.a.buffer, w.pre.get(s.a.buffer, ()))
        amap_b = axis_map(self.analysis, s.b.buffer, w.pre.get(s.b.buffer, ()))
        ra = _axis_pos(amap_a, s.a, 0, default=-2)
        cb = _axis_pos(amap_b, s.b, 1, default=-1)
        name = gemm_name(self.analysis, s, w.pre)
        self.step(guard, w.site, "mma", None, wenv)
        row = ta.coord(ra)
        col = tb.coord(cb)
        if self.masks:
            # a product of the contraction's tail (padding 0 in both operands: no term) represents the sum only
            # where index 0's is one too: the sum's terms are then every index but the tail's (and where every
            # index is the tail, index 0 gives it). The choices still include every term, so the true class is
            # among them; without this a head dim short of the MMA's K step (attention at D = 40 or 72) made
            # every score possibly "no term" and the softmax's checks undecided
            self.require(guard, z3.Or(z3.Not(padding.no_term(ta.mask, tb.mask)), k == smt.val(0)))
            return self.named(name, (row, col), padding.mma_class(ta.mask, tb.mask))
        return self.named(name, (row, col))


def _axis_pos(amap: tuple | None, ref: TileRef, window_axis: int, default: int) -> int:
    if amap is None:
        return default
    d = kept(ref)[window_axis]
    pos = amap[d] if d < len(amap) else None
    return default if pos is None or pos == CONST_AXIS else pos


def drop_coord(tag: SymTag, pos: int | None, rank: int) -> SymTag:
    """The tag without coordinate `pos` (None: the last one)."""
    coords = list(tag.coords)
    if pos is None:
        new = [z3.If(tag.arity - 1 == i, smt.val(0), coords[i]) for i in range(rank)]
    else:
        new = coords[:pos] + coords[pos + 1 :] + [smt.val(0)]
    arity = z3.If(tag.arity >= 1, tag.arity - 1, tag.arity)
    return SymTag(tag.name, arity, tuple(new), tag.mask)


def _unmodelled_copy(s: Copy) -> str | None:
    """Why a copy is outside the model: a fragment source whose layout does not hold every element of
    the tile (its holders are chosen freely), or a window of a fragment."""
    import numpy as np

    from argus.verify.access import np_layout

    for ref in (s.src, s.dst):
        if ref.buffer.space == Space.FRAGMENT and not ref.is_whole():
            return f"copies of part of fragment {user_name(ref.buffer)} are not modelled"
    src = s.src.buffer
    if src.space == Space.FRAGMENT and s.dst.buffer.space != Space.FRAGMENT:
        t, v = np.meshgrid(np.arange(src.threads), np.arange(src.values_per_thread), indexing="ij")
        held = np.unique(np.asarray(np_layout(src.tv, (t, v))))
        size = int(np.prod(src.static_shape))
        if len(held) != size or held.min() < 0 or held.max() >= size:
            return f"the layout of fragment {user_name(src)} does not hold every element of its tile exactly"
    return None


def _ids(terms: Any) -> tuple:
    """A key of a term or a sequence of terms (z3 expressions or Python integers): an element's location is a
    tuple of coordinates, or one offset (shared memory)."""
    if z3.is_expr(terms) or isinstance(terms, int):
        terms = (terms,)
    return tuple(x.get_id() if z3.is_expr(x) else ("int", x) for x in terms)


def _same_fragment_layout(a: Buffer, b: Buffer) -> bool:
    """Whether fragments `a` and `b` hold the same elements at the same (thread, value): one shape, one layout."""
    return (
        a.space == b.space == Space.FRAGMENT
        and a.threads == b.threads
        and a.shape == b.shape
        and a.tv is not None
        and a.tv == b.tv
    )


def _one_value_per_element(buf: Buffer) -> bool:
    """Whether fragment `buf`'s layout holds each element once (no replicas): a thread's value index of an element
    is then determined by it."""
    numel = 1
    for e in buf.static_shape:
        numel *= e
    return buf.tv is not None and buf.tv.size() == numel and _bijective(buf.tv)


@functools.lru_cache(maxsize=256)
def _bijective(layout: Layout) -> bool:
    """Whether `layout` maps its domain one-to-one onto ``0 .. size - 1`` (counted: fragments are small)."""
    return len({layout(i) for i in range(layout.size())}) == layout.size() == layout.cosize()


def _ldmatrix_transposes(s: Copy) -> bool:
    """True when a forced ``ldmatrix`` variant disagrees with the one the shared layout needs
    (`argus.atoms.copy.ldmatrix_transposes`), the window's position read with every loop variable at 0."""
    from argus.ir.expr import evaluate

    operand = getattr(s.dst.buffer, "operand", None)
    if operand not in ("A", "B"):
        return False
    src = s.src

    def offset(coord: tuple[int, int]) -> int:
        env: dict = {}
        for o in src.origin:
            if isinstance(o, Expr):
                env.update({v: 0 for v in free_vars(o)})
        point = [int(evaluate(o, env)) if isinstance(o, Expr) else int(o) for o in src.origin]
        for axis, step in zip(kept(src), coord, strict=False):
            point[axis] += step
        return shared_layout(src)(tuple(point) if len(point) > 1 else point[0])

    return ldmatrix_transposes(s.atom, operand, offset)


def _written(body: tuple[Stmt, ...]) -> set:
    from argus.verify.program import walk_all

    out = set()
    for s in walk_all(body):
        if isinstance(s, Copy | Fill | Map):
            out.add(s.dst.buffer)
        elif isinstance(s, Reduce):
            out.add(s.dst.buffer)
        elif isinstance(s, Gemm):
            out.add(s.acc.buffer)
        elif isinstance(s, Tag):
            out.add(s.target.buffer)
    return out


def _map_operand(s: Map) -> Any:
    if s.op == MapOp.COORD:
        return None
    srcs = list(s.srcs)
    if s.op == MapOp.SELECT:
        srcs = srcs[1:] + srcs[:1]  # where(cond, a, b): the value comes from a (or b)
    for x in srcs:
        if isinstance(x, (TileRef, Broadcast)):
            return x
    return None


def _describe_copy(s: Any, loc: Any, win: tuple[Any, ...]):
    dst = s.dst

    def describe(model: Any) -> str:
        w = tuple(smt.model_int(model, c) for c in win)
        return f"{user_name(dst.buffer)} element {w}"

    return describe


# --- MMA hardware view ---------------------------------------------------------------------------------------


#: The slot rule's divisions on the verifier's bit-vectors: unsigned (coordinates are non-negative), an index of a
#: constant layout made a bit-vector too.
BITVECTOR_ARITHMETIC = Arithmetic(z3.UDiv, z3.URem, smt.val)


def hardware_element(atom: Any, operand: str, sub: tuple[int, int], lane: Any, v: Any) -> tuple[Any, Any]:
    """The (row, col) of the operand sub-tile that register slot (lane, v) of one thread group means
    to the instruction: `argus.atoms.mma.slot_element` (the rule the DSL's fragment layouts and the
    interpreter's MMA use), on ints when both are ints, else on the verifier's bit-vectors."""
    if isinstance(v, int) and isinstance(lane, int):
        return slot_element(atom, operand, sub, lane, v)
    return slot_element(atom, operand, sub, smt.val(lane), smt.val(v), BITVECTOR_ARITHMETIC)


def operand_hw(
    q: Query,
    w: Write,
    s: Gemm,
    operand: str,
    atom: Any,
    gpos: tuple[Any, Any],
    g: Any,
    element: tuple[Any, Any],
    env: dict,
    guard: Any,
    slot: tuple[Any, Any] | None = None,
) -> SymTag:
    """The tag of the A or B element at sub-tile `element` as the instruction of group `g` reads it:
    from the register slot the atom's layout assigns to it (a fragment operand), or from shared
    memory at that element of the group's sub-tile."""
    ref = s.a if operand == "A" else s.b
    full = (s.acc.shape[0], ref.shape[1]) if operand == "A" else (ref.shape[0], s.acc.shape[1])
    sub = group_subtile(operand, full, s.groups)
    at = atom.thread_count
    if ref.buffer.space == Space.FRAGMENT:
        if slot is None:
            lane, v = smt.fresh(f"{operand}_lane"), smt.fresh(f"{operand}_v")
            r, c = hardware_element(atom, operand, sub, lane, v)
            q.require(
                guard,
                z3.And(
                    smt.in_range(lane, 0, at),
                    smt.in_range(v, 0, slot_count(atom, operand, sub)),
                    r == smt.val(element[0]),
                    c == smt.val(element[1]),
                ),
            )
        else:
            lane, v = slot
        t = smt.val(lane) + smt.val(g) * at
        env = dict(env)
        env[q.analysis.kernel.thread_var] = absolute_thread(ref.buffer, t, w.site.role)
        return q.read(ref.buffer, w.pre.get(ref.buffer, ()), (t, v), env, guard)
    r0, c0 = group_origin(operand, sub, smt.val(gpos[0]), smt.val(gpos[1]))
    win = (smt.val(r0) + smt.val(element[0]), smt.val(c0) + smt.val(element[1]))
    return q.src_at(ref, win, env, guard, w.pre, w.site)


# --- static facts about histories: which tag coordinate follows which buffer dimension ---------------------------

CONST_AXIS = -999  # an axis map entry for "constant tags: no coordinate"


def axis_map(analysis: Analysis, buffer: Buffer, items: tuple, _depth: int = 0) -> tuple | None:
    """For each buffer dimension, the tag coordinate that follows it (None: none does;
    `CONST_AXIS`: the tags are constants), agreed by every write that may have produced the
    current contents; None when they disagree or nothing is known."""
    maps = list(_axis_maps(analysis, buffer, items, set(), _depth))
    data = [m for m in maps if m != "const"]
    if not maps:
        return None
    if not data:
        return tuple(CONST_AXIS for _ in buffer.shape)
    first = data[0]
    if any(m != first for m in data[1:]):
        return None
    return first


def _axis_maps(analysis: Analysis, buffer: Buffer, items: tuple, seen: set, depth: int):
    if depth > 40:
        yield None
        return
    for it in items:
        if isinstance(it, Init):
            yield tuple(range(len(buffer.shape)))
        elif isinstance(it, Write):
            if ("w", id(it)) in seen:
                continue
            seen.add(("w", id(it)))
            if isinstance(it.site.stmt, Tag) and it.site.stmt.exclude is not None:
                continue  # T.exclude keeps every tag: the writes before it decide
            yield _write_axis_map(analysis, it, depth)
        elif isinstance(it, (LoopHead, LoopDone)):
            info = it.info
            key = ("l", id(info), id(buffer))
            if key in seen:
                continue
            seen.add(key)
            yield from _axis_maps(analysis, buffer, info.body_end.get(buffer, ()), seen, depth + 1)
            yield from _axis_maps(analysis, buffer, info.pre.get(buffer, ()), seen, depth + 1)
        elif isinstance(it, Branch):
            yield from _axis_maps(analysis, buffer, it.then, seen, depth + 1)
            yield from _axis_maps(analysis, buffer, it.orelse, seen, depth + 1)
        elif isinstance(it, Havoc):
            continue  # unknown contents: whatever uses them is unknown anyway
        elif isinstance(it, Paired):
            yield from _axis_maps(analysis, buffer, _paired_items(analysis, it, buffer), seen, depth + 1)


def _write_axis_map(analysis: Analysis, w: Write, depth: int) -> Any:
    s = w.site.stmt
    buf = w.buffer
    nd = len(buf.shape)

    def from_window(dst: TileRef, window_map: list) -> tuple:
        out: list = [None] * nd
        for i, d in enumerate(kept(dst)):
            out[d] = window_map[i]
        return tuple(out)

    if isinstance(s, Fill):
        return "const"
    if isinstance(s, Copy):
        src_map = axis_map(analysis, s.src.buffer, w.pre.get(s.src.buffer, ()), depth + 1)
        if src_map is None:
            return None
        win = [src_map[d] for d in kept(s.src)]
        if all(x == CONST_AXIS for x in win) and win:
            return "const"
        return from_window(s.dst, win)
    if isinstance(s, Map):
        op = _map_operand(s)
        if op is None:
            return "const"
        axes = op.axes if isinstance(op, Broadcast) else ()
        ref = op.ref if isinstance(op, Broadcast) else op
        src_map = axis_map(analysis, ref.buffer, w.pre.get(ref.buffer, ()), depth + 1)
        if src_map is None:
            return None
        src_win = [src_map[d] for d in kept(ref)]
        it = iter(src_win)
        win = [None if i in axes else next(it) for i in range(len(s.dst.shape))]
        return from_window(s.dst, win)
    if isinstance(s, Reduce):
        src_map = axis_map(analysis, s.src.buffer, w.pre.get(s.src.buffer, ()), depth + 1)
        if src_map is None:
            return None
        dropped = src_map[s.axis]
        keep = src_map[1 - s.axis]
        if keep is None or keep == CONST_AXIS:
            return (keep,)
        if dropped is not None and dropped != CONST_AXIS and keep > dropped:
            keep -= 1
        return (keep,)
    if isinstance(s, Gemm):
        return (0, 1)
    if isinstance(s, Tag):
        win: list = []
        for i in range(len(window_shape(s.target))):
            pos = None
            for j, c in enumerate(s.coords):
                deps = {p.index for p in _placeholders(c) if p.kind == "coord"}
                if deps == {i}:
                    pos = j
                    break
            win.append(pos)
        return from_window(s.target, win)
    return None


def _coordinate_leaf(win: tuple[Any, ...], wenv: dict) -> Any:
    """The leaf evaluator of a tag function or `T.exclude` condition at window coordinate `win`: an element
    coordinate placeholder is that coordinate, a tag expression is evaluated in `wenv`."""

    def leaf(e: Any) -> Any:
        if isinstance(e, TagPlaceholder) and e.kind == "coord":
            return smt.val(win[e.index])
        if isinstance(e, TagExpr):
            return smt.evaluate(e.expr, wenv, leaf)
        return None

    return leaf


def _placeholders(e: Any):
    from argus.ir.expr import BinOp, Select

    if isinstance(e, TagPlaceholder):
        yield e
    elif isinstance(e, TagExpr):
        yield from _placeholders(e.expr)
    elif isinstance(e, BinOp):
        yield from _placeholders(e.lhs)
        yield from _placeholders(e.rhs)
    elif isinstance(e, Select):
        yield from _placeholders(e.cond)
        yield from _placeholders(e.if_true)
        yield from _placeholders(e.if_false)


def static_names(analysis: Analysis, buffer: Buffer, items: tuple, seen: set | None = None, depth: int = 0) -> set:
    """Tag names the buffer's current contents may carry (data names only)."""
    seen = set() if seen is None else seen
    out: set = set()
    if depth > 40:
        return {HAVOC}
    for it in items:
        if isinstance(it, Init):
            out.add(buffer.name)
        elif isinstance(it, Write):
            if ("w", id(it)) in seen:
                continue
            seen.add(("w", id(it)))
            s = it.site.stmt
            if isinstance(s, Copy):
                out |= static_names(analysis, s.src.buffer, it.pre.get(s.src.buffer, ()), seen, depth + 1)
            elif isinstance(s, Map):
                op = _map_operand(s)
                if op is not None:
                    ref = op.ref if isinstance(op, Broadcast) else op
                    out |= static_names(analysis, ref.buffer, it.pre.get(ref.buffer, ()), seen, depth + 1)
            elif isinstance(s, Reduce):
                out |= static_names(analysis, s.src.buffer, it.pre.get(s.src.buffer, ()), seen, depth + 1)
            elif isinstance(s, Gemm):
                out.add(gemm_name(analysis, s, it.pre))
            elif isinstance(s, Tag):
                out.add(s.name)
        elif isinstance(it, (LoopHead, LoopDone)):
            key = ("l", id(it.info), id(buffer))
            if key in seen:
                continue
            seen.add(key)
            out |= static_names(analysis, buffer, it.info.body_end.get(buffer, ()), seen, depth + 1)
            out |= static_names(analysis, buffer, it.info.pre.get(buffer, ()), seen, depth + 1)
        elif isinstance(it, Branch):
            out |= static_names(analysis, buffer, it.then, seen, depth + 1)
            out |= static_names(analysis, buffer, it.orelse, seen, depth + 1)
        elif isinstance(it, Paired):
            out |= static_names(analysis, buffer, _paired_items(analysis, it, buffer), seen, depth + 1)
    return out


def _paired_items(analysis: Analysis, it: Paired, buffer: Buffer) -> tuple:
    p = it.pairing
    if p.kind == "once":
        return it.producer_end
    info = analysis.loops.get(id(p.loop_p))
    return info.body_end.get(buffer, ()) if info is not None else ()


def gemm_name(analysis: Analysis, s: Gemm, pre: dict) -> str:
    a = static_names(analysis, s.a.buffer, pre.get(s.a.buffer, ()))
    b = static_names(analysis, s.b.buffer, pre.get(s.b.buffer, ()))
    name = f"{'|'.join(sorted(a)) or '?'}@{'|'.join(sorted(b)) or '?'}"
    analysis.names.id(name)
    return name


def tag_value(q: Query, model: Any, tag: SymTag):
    """The concrete tag in a model."""
    from argus.verify.report import TagValue

    name = q.names.name(smt.model_int(model, tag.name))
    arity = max(0, min(q.rank, smt.model_int(model, tag.arity)))
    coords = tuple(smt.model_int(model, c) for c in tag.coords[:arity])
    mask = smt.model_int(model, tag.mask)
    return TagValue(name, coords, mask in (MASK_PAD_ZERO, MASK_PAD_NEG_INF, MASK_PAD_POS_INF, MASK_PAD_OTHER))


def tag_eq(a: SymTag, b: SymTag, skip: set[int] | None = None) -> Any:
    """Equality of name, arity and coordinates (except positions in `skip`); masks are ignored."""
    skip = skip or set()
    parts = [a.name == b.name, a.arity == b.arity]
    parts += [x == y for i, (x, y) in enumerate(zip(a.coords, b.coords, strict=True)) if i not in skip]
    return z3.And(*parts)


def name_is(q: Query, tag: SymTag, name: str) -> Any:
    return tag.name == q.names.id(name)


__all__ = [
    "Analysis",
    "Query",
    "SymTag",
    "analyze",
    "axis_map",
    "hardware_element",
    "tag_value",
]
