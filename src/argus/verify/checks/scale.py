"""Value invariants of the online softmax: partial sums are combined only under the same running statistic
(`VALUE_SCALE_MISMATCH`).

Provenance tags say *which* elements a value came from; they cannot tell a flash-attention kernel that rescales its
accumulator ``o`` by ``alpha = exp2(m - m_new)`` from one that forgets to: both combine the same rows of the same
tiles. What differs is the value's *scale*: ``p = exp2(x - m_new)`` is ``exp2(x)`` times ``exp2(-m_new)``, and a sum
of such values is only meaningful when every term carries the same factor.

This module tracks that factor for every buffer, by a second abstract interpretation of the IR (no Z3 until a
finding needs a witness):

* a value's *scale* is a product ``exp2(c1*t1 + c2*t2 + ...)`` over *per-axis terms*: values per index of one axis
  of the tile (a row maximum of iteration ``j``, the running maximum at the start of iteration ``j``, a column
  maximum, ...), identified by the statement and loop iteration that produced them and by the axis of the tile they
  are indexed by (``m[:, None]``: per row, axis 0; ``m[None, :]``: per column, axis 1; a vector's own index: its
  axis 0), with exact coefficients (a folded softmax scale or ``exp``'s ``log2(e)`` included); a value with no
  factor has the empty scale, a value known to be 0 (``T.fill(o, 0)``) has every scale;
* ``exp2(e)`` / ``exp(e)`` of an argument that is linear in per-axis terms (``x - m_new[:, None]``, ``(m - m_new) *
  c``, ``T.fma(x, c, -c * m_new[:, None])`` with a constant ``c``) has the scale of those terms; products add
  scales, quotients subtract them (``alpha`` moves ``o`` from the old maximum to the new one: ``exp2(-m) * exp2(m -
  m_new) = exp2(-m_new)``), ``log2`` turns a scale back into per-axis terms; a reduction along axis ``a`` keeps the
  factors on the other axes (moved onto the result's axes), a transposed view swaps axes, and ``T.gemm`` gives its
  accumulator A's factors per row and B's per column;
* a sum (``+``, ``-``, ``max``, ``min``, ``where``, an ``fma``'s addend, ``T.gemm``'s accumulation, an accumulating
  reduction) of two values whose scales differ is `VALUE_SCALE_MISMATCH`, and so is a quotient of two scaled values
  whose scales differ (the final ``o / l``: a normalisation divides values relative to the same statistic).

Loops are interpreted for *all* iterations with the loop-carried values named: at the start of iteration ``j >= 1``
a buffer the body writes holds ``phi(b)``, "what ``b`` held at the end of iteration ``j - 1``", and every row term
of iteration ``j - 1`` that some buffer still holds is renamed to that buffer's ``phi`` (so the maximum ``m_new`` of
iteration ``j - 1``, copied into ``m``, is ``phi(m)`` in iteration ``j``). The head states (iteration 0, then every
state the back edge produces) are iterated to a fixed point, each kept separately with the first iteration it
describes, so the first iteration (``o`` still zero, ``m`` still ``-inf``) does not blur the others. A finding
names that iteration; Z3 then confirms that the loop runs that long for some size the assumptions allow (else there
is no finding) and supplies the sizes, block and iteration of the counterexample.

Soundness: where the scale is not understood and matters (an ``exp2`` of a non-linear function of a statistic, an
MMA operand scaled along the contraction, a value reduced along an axis it is scaled along, a scale that does not
settle within 8 head states or refers to more than 3 iterations back, branches on the thread, scaled values
crossing warp roles), the answer is
`UNKNOWN_VALUE_SCALE`, never verified; a finding on a path through a branch whose condition could not be carried
across the back edge is unknown too. Additive constants (``l + eps``) and comparisons are not checked. Indices are
taken to line up (row ``r`` of ``o`` is combined with row ``r`` of ``alpha``): that is what the tag assertions prove;
axes are checked (a statistic per column combined with one per row is a mismatch).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import z3

from argus.ir.expr import Const, Expr, free_vars
from argus.ir.nodes import (
    Alloc,
    Broadcast,
    Buffer,
    Copy,
    Fill,
    For,
    Gemm,
    If,
    Map,
    MapOp,
    Reduce,
    Role,
    Space,
    Stmt,
    TileRef,
)
from argus.verify import smt
from argus.verify.context import Context
from argus.verify.program import Site, absolute_thread, decompose, first_thread, loop_name, user_name, walk_all
from argus.verify.report import Counterexample, Element, Finding, ThreadPoint, Verdict

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453

#: how many head states a loop may have, and how many iterations back a row term may reach, before the scale
#: of what the loop carries is given up (unknown where it matters)
MAX_HEADS = 8
MAX_AGE = 3
#: states carried side by side at one program point (branches, several head states) before they are merged
MAX_STATES = 32

# kinds of the terms of a linear form and of the factors of a scale: an int ``a`` is a value per index of axis ``a``
# of the tile that holds it (a statistic of row r of a 2-D tile is axis 0, of column c axis 1; a 1-D vector's own
# index is its axis 0); then data that varies along several axes, and a non-linear mix of per-axis values and data
ROW, COL = 0, 1
PAYLOAD, MIXED = "payload", "mixed"


def _per_axis(kind: Any) -> bool:
    """Whether terms of `kind` are values per index of one axis (``kind`` that axis)."""
    return isinstance(kind, int)


def _axis_text(kind: Any) -> str:
    return {ROW: "per row", COL: "per column"}.get(kind, f"per index of axis {kind}")


# --- scales -------------------------------------------------------------------------------------------------------


def _coef(c: float) -> float:
    """A coefficient rounded to 12 significant digits, so that scales compare exactly after cancellation."""
    return 0.0 if abs(c) < 1e-9 else float(f"{c:.12g}")


@dataclass(frozen=True)
class Scale:
    """The factor ``exp2(sum c * t)`` a value carries. `kind`: ``known`` (`factors`: ((axis, term), c) pairs: the
    term is a value per index of that axis of the tile, see `_per_axis`), ``zero``
    (the value is 0: any scale), ``top`` (not understood: `reason`, at `loc`), ``poison`` (derived from a value
    already reported; nothing more is said about it)."""

    kind: str
    factors: frozenset = frozenset()
    reason: str = ""
    loc: Any = None

    @staticmethod
    def of(d: dict) -> Scale:
        return Scale("known", frozenset((t, c) for t, c in ((t, _coef(c)) for t, c in d.items()) if c != 0.0))

    def as_dict(self) -> dict:
        return dict(self.factors)

    @property
    def known(self) -> bool:
        return self.kind == "known"

    @property
    def empty(self) -> bool:
        return self.kind == "known" and not self.factors


PLAIN = Scale("known")
ZERO = Scale("zero")
POISON = Scale("poison")


def _top(reason: str, loc: Any) -> Scale:
    return Scale("top", reason=reason, loc=loc)


def _add(a: dict, b: dict, k: float = 1.0) -> dict:
    out = dict(a)
    for t, c in b.items():
        out[t] = out.get(t, 0.0) + k * c
    return out


def _times(a: Scale, b: Scale, k: float = 1.0) -> Scale:
    """The scale of ``a * b**k``."""
    if a.kind == "poison" or b.kind == "poison":
        return POISON
    if a.kind == "zero" or (b.kind == "zero" and k > 0):
        return ZERO
    if a.kind == "top":
        return a
    if b.kind == "top":
        return b
    if b.kind == "zero":
        return PLAIN  # division by zero: not this check's concern
    return Scale.of(_add(a.as_dict(), b.as_dict(), k))


def _power(a: Scale, k: float) -> Scale:
    if a.kind != "known":
        return a if a.kind != "zero" or k > 0 else PLAIN
    return Scale.of({t: c * k for t, c in a.factors})


def _join(a: Scale, b: Scale, loc: Any, what: str) -> Scale:
    """The scale of a buffer that holds either."""
    if a == b:
        return a
    if a.kind == "poison" or b.kind == "poison":
        return POISON
    if a.kind == "zero":
        return b
    if b.kind == "zero":
        return a
    if a.kind == "top":
        return a
    if b.kind == "top":
        return b
    return _top(f"{what} holds values of two different scales", loc)


# --- values and states --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Val:
    """What a buffer holds, as far as scales go: an identity `term` (None: data from memory, identified by the
    statement that reads it), its linear form `lin` (((kind, term), coefficient) pairs) and its `scale`."""

    term: Any
    lin: frozenset
    scale: Scale
    uninit: bool = False


UNINIT = Val(("uninit",), frozenset(), PLAIN, uninit=True)
MEMORY = Val(None, frozenset(), PLAIN)


@dataclass(frozen=True)
class State:
    """One abstract state: the value of every buffer (by id), the loop iterations it describes (loop site index,
    first iteration), the branch conditions taken in the current iterations, and whether it over-approximates
    (a condition was lost across a back edge: a finding in it has no witness)."""

    vals: tuple  # ((buffer id, Val), ...) in buffer order
    iters: tuple = ()
    path: tuple = ()  # ((cond, taken, loop depth), ...)
    approx: bool = False
    ran: tuple = ()  # ((loop site index, iterations), ...): finished loops that ran at least that many iterations

    def get(self, b: Buffer) -> Val:
        for k, v in self.vals:
            if k == id(b):
                return v
        return MEMORY if b.space == Space.GLOBAL else UNINIT

    def set(self, b: Buffer, v: Val) -> State:
        out = [(k, x) for k, x in self.vals if k != id(b)]
        out.append((id(b), v))
        return replace(self, vals=tuple(out))

    def key(self) -> tuple:
        return (frozenset(self.vals), self.path, self.approx, self.ran)


@dataclass
class Event:
    """A mismatch or an unknown scale found in one state."""

    code: str
    site: Site
    state: State
    message: Any  # (loops by loop index -> iteration) -> str
    dst: Buffer
    reason: str = ""


# --- the check ------------------------------------------------------------------------------------------------------


def check_value_scales(ctx: Context) -> list[Finding]:
    """`VALUE_SCALE_MISMATCH` / `UNKNOWN_VALUE_SCALE` for every sum, accumulation and normalisation of the kernel.
    Kernels without ``exp``/``exp2`` carry no scales and are not walked."""
    kernel = ctx.kernel
    if not any(isinstance(s, Map) and s.op in (MapOp.EXP, MapOp.EXP2, MapOp.EXP2_FMA) for s in walk_all(kernel.body)):
        return []
    start = time.perf_counter()
    walker = _Walker(ctx)
    walker.run_kernel()
    if walker.cross_role:  # a value scaled per row written in one role and read in another: redo with it unknown
        walker = _Walker(ctx, cross_role=walker.cross_role)
        walker.run_kernel()
    findings = walker.findings()
    verdict = Verdict.VERIFIED
    if any(f.verdict == Verdict.VIOLATED for f in findings):
        verdict = Verdict.VIOLATED
    elif findings:
        verdict = Verdict.UNKNOWN
    ctx.record("value scales", kernel.name, verdict, start)
    return findings


class _Walker:
    def __init__(self, ctx: Context, cross_role: dict | None = None) -> None:
        self.ctx = ctx
        self.prog = ctx.analysis.program
        self.events: list[Event] = []
        self.reported: set[tuple[int, str]] = set()
        self.buffers: dict[int, Buffer] = {}
        self.cross_role: dict[int, str] = {}
        self.forced = dict(cross_role or {})  # buffer id -> why its scale is unknown in the roles that read it
        self.role_scales: dict[int, list[tuple[Role, Scale]]] = {}
        self.names: dict[Any, tuple[Site, str]] = {}  # term -> (site, buffer name) that produced it
        self.phi_names: dict[Any, Any] = {}  # phi term -> the end-of-iteration term it renames
        self.loop_depth = 0

    # --- driving ----------------------------------------------------------------------------------------------------
    def run_kernel(self) -> None:
        init = State(tuple((id(t), MEMORY) for t in self.ctx.kernel.tensors))
        for t in self.ctx.kernel.tensors:
            self.buffers[id(t)] = t
        self.run(self.ctx.kernel.body, [init])

    def run(self, body: tuple[Stmt, ...], states: list[State]) -> list[State]:
        i = 0
        while i < len(body):
            if isinstance(body[i], Role):
                j = i
                while j < len(body) and isinstance(body[j], Role):
                    j += 1
                states = self.roles(body[i:j], states)
                i = j
                continue
            s = body[i]
            i += 1
            nxt: list[State] = []
            for st in states:
                nxt += self.stmt(s, st)
            states = _merge(_unique(nxt), s.loc)
        return states

    def stmt(self, s: Stmt, st: State) -> list[State]:
        if isinstance(s, Alloc):
            self.buffers[id(s.buffer)] = s.buffer
            return [st.set(s.buffer, UNINIT)]
        if isinstance(s, For):
            return self.loop(s, st)
        if isinstance(s, If):
            return self.branch(s, st)
        site = self.prog.site(s)
        if isinstance(s, Copy):
            return [self.copy(s, site, st)]
        if isinstance(s, Fill):
            term = self.leaf(site, st)
            self.names[term] = (site, user_name(s.dst.buffer))
            value = s.value.value if isinstance(s.value, Const) else None
            if value == 0:
                v = Val(term, frozenset(), ZERO)
            else:
                v = Val(term, frozenset({((self.kind_of(s.dst), term), 1.0)}), PLAIN)
            return [self.write(s.dst, v, site, st)]
        if isinstance(s, Map):
            return [self.map(s, site, st)]
        if isinstance(s, Reduce):
            return [self.reduce(s, site, st)]
        if isinstance(s, Gemm):
            return [self.gemm(s, site, st)]
        return [st]  # barriers, waits, fences, mbarriers, tags and assertions leave values alone

    # --- terms ------------------------------------------------------------------------------------------------------
    def leaf(self, site: Site, st: State) -> tuple:
        """The value a statement produces in the current iterations of its loops."""
        return ("v", site.index, tuple((self.prog.site(lp).index, 0) for lp in site.loops))

    @staticmethod
    def kind_of(ref: TileRef) -> str:
        return ROW if len(ref.shape) == 1 else PAYLOAD

    def base(self, site: Site, st: State, ref: TileRef, operands: list[Val], buffer: Buffer) -> Val:
        """A value no linear form describes (a non-linear result): a term of its own."""
        term = self.leaf(site, st)
        self.names[term] = (site, user_name(buffer))
        statistic = any(_per_axis(k) or k == MIXED for v in operands for (k, _), _ in v.lin)
        if len(ref.shape) == 1:
            # a per-row value is a running statistic only where one of the kernel's own statistics (a reduction's
            # result) enters it: ``T.minimum(p, 4.6)`` of a vector loaded from memory is data, as the vector is
            # (`resolve`); until 2026-12-05 it was a statistic, and ``x * exp(clamp(p)) + bias`` (SwinV2's logit
            # scale) a false VALUE_SCALE_MISMATCH
            kind = ROW if statistic or not operands else PAYLOAD
        elif statistic:
            kind = MIXED
        else:
            kind = PAYLOAD
        return Val(term, frozenset({((kind, term), 1.0)}), PLAIN)

    # --- statements -------------------------------------------------------------------------------------------------
    def read(self, ref: TileRef, site: Site, st: State, fresh: bool = False) -> Val:
        """What window `ref` holds, its per-axis terms on the window's axes (a buffer's value keeps them on the
        buffer's dimensions: a transposed view swaps them; one on a dimension the window drops is not understood).
        `fresh`: the value gets the identity of this read."""
        v = st.get(ref.buffer)
        if fresh:
            v = replace(v, term=None)
        kept = ref.kept
        if kept != tuple(range(len(ref.buffer.shape))):
            what = f"{user_name(ref.buffer)}, scaled {{axis}} of its buffer, read through a window that drops it"
            v = _moved(v, {d: i for i, d in enumerate(kept)}, what, site.loc)
        return self.resolve(v, site, st, ref)

    def resolve(self, v: Val, site: Site, st: State, ref: TileRef) -> Val:
        """Data from memory gets the identity of the read. What global memory holds is the kernel's input data, never
        one of its running statistics, whatever its shape: a 1-d tile of an elementwise kernel (``exp(x)`` of a
        loaded ``x``) is payload, not a per-row value (statistics are what the kernel's own reductions compute)."""
        if v.term is not None:
            return v
        term = self.leaf(site, st)
        self.names[term] = (site, user_name(ref.buffer))
        kind = PAYLOAD if ref.buffer.space == Space.GLOBAL else self.kind_of(ref)
        return Val(term, frozenset({((kind, term), 1.0)}), v.scale)

    def write(self, ref: TileRef, v: Val, site: Site, st: State) -> State:
        b = ref.buffer
        self.buffers[id(b)] = b
        if ref.kept != tuple(range(len(b.shape))):  # the window's axes are the buffer's dimensions ref.kept
            v = _moved(v, dict(enumerate(ref.kept)), f"{user_name(b)}, scaled {{axis}}", site.loc)
        if site.role is not None and b.space != Space.FRAGMENT:
            self.role_scales.setdefault(id(b), []).append((site.role, v.scale))
        if ref.is_whole() or b.space == Space.FRAGMENT:
            return st.set(b, v)
        old = st.get(b)
        if old.uninit:
            return st.set(b, v)
        term = self.leaf(site, st)
        self.names[term] = (site, user_name(b))
        kind = ROW if len(b.shape) == 1 else PAYLOAD
        scale = _join(old.scale, v.scale, site.loc, user_name(b))
        return st.set(b, Val(term, frozenset({((kind, term), 1.0)}), scale))

    def copy(self, s: Copy, site: Site, st: State) -> State:
        # data from memory is identified by this read; a transposed source swaps the axes of its per-axis terms
        v = self.read(s.src, site, st, fresh=s.src.buffer.space == Space.GLOBAL)
        return self.write(s.dst, v, site, st)

    def operand(self, x: Any, dst: TileRef, site: Site, st: State) -> Val | Expr:
        if isinstance(x, Expr):
            return x
        ref = x.ref if isinstance(x, Broadcast) else x
        v = self.read(ref, site, st)
        if isinstance(x, Broadcast):
            # axis i of the operand is the i-th axis of the destination that is not a broadcast axis: m[:, None]
            # keeps a per-row vector per row, m[None, :] makes it per column (its terms depend on the column index)
            kept = [i for i in range(len(dst.shape)) if i not in x.axes]
            to = dict(enumerate(kept)) if len(kept) == len(ref.shape) else {}
            v = _moved(v, to, f"{user_name(ref.buffer)}, scaled {{axis}}, broadcast to another rank", site.loc)
        return v

    def map(self, s: Map, site: Site, st: State) -> State:
        ops = [self.operand(x, s.dst, site, st) for x in s.srcs]
        vals = [o for o in ops if isinstance(o, Val)]
        op = s.op
        name = user_name(s.dst.buffer)

        def base(scale: Scale) -> Val:
            return replace(self.base(site, st, s.dst, vals, s.dst.buffer), scale=scale)

        def linear(lin: dict, scale: Scale) -> Val:
            term = self.leaf(site, st)
            self.names[term] = (site, name)
            return Val(term, frozenset((k, _coef(c)) for k, c in lin.items() if _coef(c) != 0.0), scale)

        if op == MapOp.COORD:
            v = base(PLAIN)
        elif op == MapOp.CAST:
            v = vals[0] if vals else base(PLAIN)
        elif op in (MapOp.ADD, MapOp.SUB):
            a, b = ops
            scale = self.combine(a, b, site, st, s.dst, "adds")
            lin = _lin(a)
            lin = _add(lin, _lin(b), -1.0 if op == MapOp.SUB else 1.0)
            v = linear(lin, scale)
        elif op == MapOp.NEG:
            v = linear({k: -c for k, c in _lin(ops[0]).items()}, _scale(ops[0]))
        elif op == MapOp.MUL:
            a, b = ops
            if isinstance(a, Expr) or isinstance(b, Expr):
                data, k = (b, a) if isinstance(a, Expr) else (a, b)
                c = _number(k)
                if not isinstance(data, Val):
                    v = base(PLAIN)
                elif c == 0.0:
                    v = Val(self.leaf(site, st), frozenset(), ZERO)
                elif c is not None:
                    v = linear({t: x * c for t, x in data.lin}, data.scale)
                else:
                    v = base(data.scale)
            else:
                v = base(_times(a.scale, b.scale))
        elif op == MapOp.DIV:
            a, b = ops
            if isinstance(b, Expr):
                c = _number(b)
                if isinstance(a, Val) and c:
                    v = linear({t: x / c for t, x in a.lin}, a.scale)
                else:
                    v = base(_scale(a))
            elif isinstance(a, Expr):
                v = base(_power(b.scale, -1.0))
            else:
                self.normalisation(a, b, site, st, s.dst)
                v = base(_times(a.scale, b.scale, -1.0))
        elif op == MapOp.RCP:
            v = base(_power(_scale(ops[0]), -1.0))
        elif op == MapOp.SQRT:
            v = base(_power(_scale(ops[0]), 0.5))
        elif op == MapOp.RSQRT:
            v = base(_power(_scale(ops[0]), -0.5))
        elif op == MapOp.ABS:
            v = base(_scale(ops[0]))
        elif op in (MapOp.MAX, MapOp.MIN):
            a, b = ops
            v = base(self.combine(a, b, site, st, s.dst, f"takes the {op.value} of"))
        elif op == MapOp.SELECT:
            _, a, b = ops
            scale = self.combine(a, b, site, st, s.dst, "selects between")
            if isinstance(a, Val) and isinstance(b, Val):
                v = linear(_lin(a), scale) if a.lin == b.lin else base(scale)
            elif isinstance(a, Val) or isinstance(b, Val):
                data = a if isinstance(a, Val) else b
                v = linear(_lin(data), scale)  # masked elements are a constant: the data's form elsewhere
            else:
                v = base(PLAIN)
        elif op == MapOp.FMA:
            a, b, c = ops
            data, k = (b, a) if isinstance(a, Expr) else (a, b)
            num = _number(k) if isinstance(k, Expr) else None
            if isinstance(data, Val) and num:  # a * k + c with a constant k: linear, as a product and a sum
                scale = self.combine(Val(None, frozenset(), data.scale), c, site, st, s.dst, "adds")
                v = linear(_add({t: x * num for t, x in data.lin}, _lin(c)), scale)
            else:
                prod = _times(_scale(a), _scale(b))
                scale = self.combine(Val(None, frozenset(), prod), c, site, st, s.dst, "adds")
                v = base(scale)
        elif op in (MapOp.EXP2, MapOp.EXP2_FMA, MapOp.EXP):
            v = base(self.exponent(ops[0], LOG2E if op == MapOp.EXP else 1.0, site))
        elif op in (MapOp.LOG2, MapOp.LOG):
            a = ops[0]
            k = 1.0 if op == MapOp.LOG2 else LN2
            payload = base(PLAIN)
            sc = _scale(a)
            if sc.known:
                lin = _add(_lin(payload), {key: c * k for key, c in sc.factors})  # keys: (axis, term)
                v = replace(payload, lin=frozenset((t, _coef(c)) for t, c in lin.items() if _coef(c) != 0.0))
            elif sc.kind == "top":
                v = Val(payload.term, frozenset({((MIXED, payload.term), 1.0)}), PLAIN)
            else:
                v = payload
        elif op in (MapOp.LT, MapOp.LE, MapOp.EQ, MapOp.NE):
            v = base(PLAIN)  # masks
        else:
            scales = [_scale(o) for o in ops]
            if any(x.kind == "poison" for x in scales):
                v = base(POISON)
            elif any(x.kind == "top" for x in scales):
                v = base(next(x for x in scales if x.kind == "top"))
            elif any(x.known and not x.empty for x in scales):
                v = base(_top(f"{op.value} of a value scaled by a running statistic", site.loc))
            else:
                v = base(PLAIN)
        return self.write(s.dst, v, site, st)

    def exponent(self, a: Any, k: float, site: Site) -> Scale:
        if not isinstance(a, Val):
            return PLAIN
        factors: dict = {}
        for (kind, t), c in a.lin:
            if kind == MIXED:
                return _top("exp2 of a value that is not linear in the row statistics it uses", site.loc)
            if _per_axis(kind):  # a factor per index of that axis (per row, per column)
                factors[(kind, t)] = factors.get((kind, t), 0.0) + c * k
        return Scale.of(factors)

    def reduce(self, s: Reduce, site: Site, st: State) -> State:
        src = self.read(s.src, site, st)
        # a factor per index of another axis is common to the reduced elements: it stays, on that axis of the
        # result; a factor per index of the reduced axis differs between them: not understood
        to = {a: a - (a > s.axis) for a in range(len(s.src.shape)) if a != s.axis}
        what = f"a reduction of {user_name(s.src.buffer)} along axis {s.axis}, scaled {{axis}}"
        scale = _moved(Val(None, frozenset(), src.scale), to, what, site.loc).scale
        if s.accumulate:
            old = self.read(s.dst, site, st)
            scale = self.combine(old, Val(None, frozenset(), scale), site, st, s.dst, f"reduce_{s.op.value}s")
        term = self.leaf(site, st)
        self.names[term] = (site, user_name(s.dst.buffer))
        kind = ROW if len(s.dst.shape) == 1 else PAYLOAD
        return self.write(s.dst, Val(term, frozenset({((kind, term), 1.0)}), scale), site, st)

    def gemm(self, s: Gemm, site: Site, st: State) -> State:
        a = self.read(s.a, site, st)  # (M, K) as the atom reads it: a transposed view's axes are swapped
        b = self.read(s.b, site, st)  # (K, N)
        acc = self.read(s.acc, site, st)
        # a factor per row of A is one per row of the product, one per column of B one per column; a factor per
        # index of the contraction differs between the terms of the dot product: not understood
        contraction = "scaled {axis}, the contraction axis"
        a_scale = _moved(
            Val(None, frozenset(), a.scale), {0: 0}, f"A operand {user_name(s.a.buffer)} {contraction}", site.loc
        )
        b_scale = _moved(
            Val(None, frozenset(), b.scale), {1: 1}, f"B operand {user_name(s.b.buffer)} {contraction}", site.loc
        )
        prod = _times(a_scale.scale, b_scale.scale)
        scale = self.combine(acc, Val(None, frozenset(), prod), site, st, s.acc, "accumulates", gemm=True)
        term = self.leaf(site, st)
        self.names[term] = (site, user_name(s.acc.buffer))
        return self.write(s.acc, Val(term, frozenset({((PAYLOAD, term), 1.0)}), scale), site, st)

    # --- the invariant ----------------------------------------------------------------------------------------------
    def combine(self, a: Any, b: Any, site: Site, st: State, dst: TileRef, verb: str, gemm: bool = False) -> Scale:
        """The scale of a sum of `a` and `b` (either may be a scalar: a constant offset is not checked)."""
        if not isinstance(a, Val):
            return _scale(b)
        if not isinstance(b, Val):
            return a.scale
        if a.uninit or b.uninit:  # reading what was never written is not a question of scale
            return b.scale if a.uninit else a.scale
        x, y = a.scale, b.scale
        if x.kind == "poison" or y.kind == "poison":
            return POISON
        if x.kind == "zero":
            return y
        if y.kind == "zero":
            return x
        if x.kind == "top" or y.kind == "top":
            top = x if x.kind == "top" else y
            self.event("UNKNOWN_VALUE_SCALE", site, st, dst, top.reason, lambda _: top.reason)
            return POISON
        if x == y:
            return x

        axes = _shows_axes(dst.buffer, x, y)

        def message(iters: dict) -> str:
            if gemm:
                return (
                    f"{_op_text(site)} accumulates products {self.describe(y, iters, axes)} into "
                    f"{user_name(dst.buffer)}, which holds values {self.describe(x, iters, axes)}: partial results "
                    "scaled by different running statistics are summed (the accumulator was not rescaled by "
                    "exp2(old - new))"
                )
            return (
                f"{_op_text(site)} {verb} a value {self.describe(x, iters, axes)} and one "
                f"{self.describe(y, iters, axes)}: "
                "partial results scaled by different running statistics are combined (the older one was not "
                "rescaled by exp2(old - new))"
            )

        self.event("VALUE_SCALE_MISMATCH", site, st, dst.buffer, "", message)
        return POISON

    def normalisation(self, a: Val, b: Val, site: Site, st: State, dst: TileRef) -> None:
        x, y = a.scale, b.scale
        if "poison" in (x.kind, y.kind) or "zero" in (x.kind, y.kind):
            return
        if x.kind == "top" or y.kind == "top":
            top = x if x.kind == "top" else y
            other = y if top is x else x
            if other.kind == "top" or not other.empty:
                self.event("UNKNOWN_VALUE_SCALE", site, st, dst.buffer, top.reason, lambda _: top.reason)
            return
        if x.empty or y.empty or x == y:
            return

        axes = _shows_axes(dst.buffer, x, y)

        def message(iters: dict) -> str:
            return (
                f"{_op_text(site)} divides a value {self.describe(x, iters, axes)} by one "
                f"{self.describe(y, iters, axes)}: a "
                "normalisation divides values scaled by the same running statistic"
            )

        self.event("VALUE_SCALE_MISMATCH", site, st, dst.buffer, "", message)

    def event(self, code: str, site: Site, st: State, dst: Any, reason: str, message: Any) -> None:
        buffer = dst.buffer if isinstance(dst, TileRef) else dst
        self.events.append(Event(code, site, st, message, buffer, reason))

    # --- descriptions -----------------------------------------------------------------------------------------------
    def describe(self, scale: Scale, iters: dict, axes: bool = False) -> str:
        """`scale` in words; `axes`: name the axis each statistic is taken per (a 2-D value whose statistics are
        not all per row)."""
        if not scale.known:
            return "of unknown scale"
        if not scale.factors:
            return "that no running statistic scales"

        def term(key: tuple) -> str:
            kind, t = key
            return self.term_text(t, iters) + (f" {_axis_text(kind)}" if axes else "")

        parts = []
        for key, c in sorted(scale.factors, key=lambda tc: str(tc[0][1]) + str(tc[0][0])):
            parts.append(f"{_num(c)}*{term(key)}")
        text = " + ".join(parts).replace("+ -", "- ")
        if len(scale.factors) == 1:
            key, c = next(iter(scale.factors))
            if c == -1.0:
                return f"relative to {term(key)}"
            if c < 0:
                return f"relative to {term(key)} (scaled by exp2({text}))"
        return f"scaled by exp2({text})"

    def term_text(self, t: Any, iters: dict, shift: dict | None = None) -> str:
        shift = dict(shift or {})
        if t[0] == "phi":
            shift[t[2]] = shift.get(t[2], 0) - 1 + dict(t[3]).get(t[2], 0)
            origin = self.phi_names.get(t)
            if origin is not None:
                return self.term_text(origin, iters, shift)
            return f"{t[1]} at the start of the iteration"
        site_name = self.names.get(t)
        if site_name is None and t[0] == "v":
            site_name = self.names.get(("v", t[1], tuple((lp, 0) for lp, _ in t[2])))
        if site_name is None:
            return "a value"
        site, name = site_name
        loops = []
        for lp, d in t[2]:
            loop = self.prog.sites[lp].stmt
            here = iters.get(lp)
            at = d + shift.get(lp, 0)
            if here is None:  # after the loop: counted from its last iteration
                last = f"last{at:+d}" if at else "last"
                loops.append(f"{loop_name(loop)}={last}")  # type: ignore[arg-type]
            else:
                loops.append(f"{loop_name(loop)}={here + at}")  # type: ignore[arg-type]
        it = f" of iteration {', '.join(loops)}" if loops else ""
        line = f" (line {site.loc.line})" if site.loc is not None else ""
        return f"{name}{line}{it}"

    # --- control flow -----------------------------------------------------------------------------------------------
    def branch(self, s: If, st: State) -> list[State]:
        on_thread = self.ctx.kernel.thread_var in free_vars(s.cond) if isinstance(s.cond, Expr) else False
        depth = self.loop_depth
        then = self.run(s.then, [replace(st, path=st.path + ((s.cond, True, depth),))])
        other = self.run(s.orelse, [replace(st, path=st.path + ((s.cond, False, depth),))])
        out = then + other
        if on_thread:  # threads of one block take different branches: the buffer-wide values are a guess
            out = [replace(x, approx=True) for x in out]
        return out

    def loop(self, s: For, st: State) -> list[State]:
        idx = self.prog.site(s).index
        written = {id(x.dst.buffer) for x in walk_all(s.body) if isinstance(x, Copy | Fill | Map | Reduce)}
        written |= {id(x.acc.buffer) for x in walk_all(s.body) if isinstance(x, Gemm)}
        carried = [k for k, _ in st.vals if k in written]
        first = replace(st, iters=st.iters + ((idx, 0),))
        heads: dict = {first.key(): first}
        queue = [first]
        ends: list[tuple[State, int]] = []
        widened = False
        self.loop_depth += 1
        try:
            while queue:
                head = queue.pop(0)
                n = dict(head.iters)[idx]
                for end in self.run(s.body, [head]):
                    ends.append((end, n))
                    nxt = self.back_edge(end, st, s, idx, carried, head)
                    if nxt.key() in heads:
                        continue
                    if len(heads) >= MAX_HEADS and not widened:
                        widened = True
                        nxt = self.widen(nxt, carried, s)
                        if nxt.key() in heads:
                            continue
                    elif len(heads) >= MAX_HEADS:
                        continue
                    heads[nxt.key()] = nxt
                    queue.append(nxt)
        finally:
            self.loop_depth -= 1
        out = []
        for end, n in ends:
            inner = tuple(p for p in end.path if p[2] <= self.loop_depth)
            approx = end.approx or len(inner) != len(end.path)
            ran = end.ran + (((idx, n + 1),) if n > 0 else ())
            out.append(replace(end, iters=end.iters[:-1], path=inner, approx=approx, ran=ran))
        return _unique(out)

    def back_edge(self, end: State, pre: State, s: For, idx: int, carried: list[int], head: State) -> State:
        """The state at the start of the next iteration: every buffer the body writes holds its `phi`; row terms
        a buffer still holds are renamed to that buffer's `phi`, the others move one iteration back."""
        values = dict(end.vals)
        canon: dict = {}
        subst: dict = {}
        phis: dict = {}
        for k in carried:
            v = values.get(k, UNINIT)
            name = user_name(self.buffers[k]) if k in self.buffers else str(k)
            key = v.term if v.term is not None and not v.uninit else ("buffer", k)
            if key not in canon:
                outer = tuple((i, 0) for i, _ in head.iters if i != idx)
                canon[key] = ("phi", name, idx, outer + ((idx, 0),))
                if v.term is not None:
                    subst[v.term] = canon[key]
                    self.phi_names.setdefault(canon[key], v.term)
            phis[k] = canon[key]
        vals = []
        for k, v in end.vals:
            if k not in dict(pre.vals):
                continue  # allocated inside the body: allocated again before its next use
            if k not in phis:
                vals.append((k, v))
                continue
            phi = phis[k]
            kind = ROW if len(self.buffers[k].shape) == 1 else PAYLOAD
            lin, scale = frozenset({((kind, phi), 1.0)}), v.scale
            try:  # kept when it is a combination of the values the next iteration starts with (m - m_new)
                shifted = frozenset(((kd, _shift(t, subst, idx)), c) for (kd, t), c in v.lin)
                if shifted and all(t[0] == "phi" and dict(t[3]).get(idx) == 0 for (_, t), _ in shifted):
                    lin = shifted
            except _TooOld:
                pass
            if v.scale.known:
                try:
                    scale = Scale(
                        "known", frozenset(((kd, _shift(t, subst, idx)), c) for (kd, t), c in v.scale.factors)
                    )
                except _TooOld:
                    scale = _top(
                        f"the scale of {phi[1]} refers to a statistic more than {MAX_AGE} iterations back", s.loc
                    )
            vals.append((k, Val(phi, lin, scale, uninit=v.uninit)))
        inner = tuple(p for p in end.path if p[2] < self.loop_depth)
        iters = tuple((i, n + 1 if i == idx else n) for i, n in head.iters)
        # what finished loops inside the body ran says something about an earlier iteration: dropped, approximately
        ran = tuple(r for r in end.ran if r in pre.ran)
        approx = end.approx or len(inner) != len(end.path) or len(ran) != len(end.ran)
        return State(tuple(vals), iters, inner, approx, ran)

    def widen(self, st: State, carried: list[int], s: For) -> State:
        vals = []
        for k, v in st.vals:
            if k in carried and v.scale.kind in ("known", "zero") and not v.scale.empty:
                v = replace(v, scale=_top(f"the scale {user_name(self.buffers[k])} carries does not settle", s.loc))
            vals.append((k, v))
        return replace(st, vals=tuple(vals))

    def roles(self, roles: tuple[Stmt, ...], states: list[State]) -> list[State]:
        """Warp roles run concurrently: a buffer another role writes is data from memory here (its scale unknown
        when that role writes it scaled by a running statistic)."""
        writes = {id(r): _written(r.body) for r in roles}  # type: ignore[attr-defined]
        out: list[State] = []
        for st in states:
            results = [st]
            for r in roles:
                inside = st
                for other in roles:
                    if other is r:
                        continue
                    for k in writes[id(other)]:
                        v = MEMORY
                        if k in self.forced:
                            v = Val(None, frozenset(), _top(self.forced[k], r.loc))
                        inside = inside.set(self.buffers_by_id(k, other), v)
                ends = self.run(r.body, [inside])  # type: ignore[attr-defined]
                combined = []
                for base in results:
                    for e in ends:
                        x = base
                        for k, v in e.vals:
                            if k in writes[id(r)] or k not in dict(st.vals):
                                x = x.set(self.buffers[k], v)
                        combined.append(replace(x, approx=x.approx or e.approx))
                results = _merge(_unique(combined), r.loc)
            out += results
        for k, items in self.role_scales.items():
            for role, sc in items:
                readers = [r for r in roles if r is not role and k in _read(r.body)]  # type: ignore[attr-defined]
                if readers and sc.kind not in ("zero",) and not sc.empty and k not in self.forced:
                    self.cross_role[k] = (
                        f"{user_name(self.buffers[k])} is written in warp role {role.name!r} scaled by a running "
                        "statistic and read in another role: scales are not carried across roles"
                    )
        return _unique(out)

    def buffers_by_id(self, k: int, role: Stmt) -> Buffer:
        if k not in self.buffers:
            for x in walk_all(role.body):  # type: ignore[attr-defined]
                for ref in _refs(x):
                    self.buffers.setdefault(id(ref.buffer), ref.buffer)
        return self.buffers[k]

    # --- findings ---------------------------------------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        done: set = set()
        # witnessed mismatches first: a site with one needs no unknown besides
        events = sorted(self.events, key=lambda e: e.code != "VALUE_SCALE_MISMATCH" or e.state.approx)
        for ev in events:
            if ev.site.index in done:
                continue
            f = self.finding(ev)
            if f is not None:
                done.add(ev.site.index)
                out.append(f)
        return out

    def finding(self, ev: Event) -> Finding | None:
        ctx = self.ctx
        site = ev.site
        env, cons = ctx.loop_env(site, suffix=f".scale{site.index}")
        by_index = {self.prog.site(lp).index: lp for lp in site.loops}
        for idx, n in ev.state.iters:
            if idx in by_index:
                cons.append(z3.UGE(env[by_index[idx].var], n))
        approx = ev.state.approx
        for idx, count in ev.state.ran:
            loop = self.prog.sites[idx].stmt
            ext = loop.extent  # type: ignore[attr-defined]
            cons.append(smt.val(smt.evaluate(ext, env) if isinstance(ext, Expr) else ext) >= count)
        for cond, taken, _ in ev.state.path:
            if ctx.kernel.thread_var in free_vars(cond):
                approx = True
                continue
            c = smt.boolean(smt.evaluate(cond, env))
            cons.append(c if taken else z3.Not(c))
        out = ctx.solve(cons, z3.BoolVal(True))
        if out.verdict == Verdict.VERIFIED:
            return None  # the iteration or path cannot happen
        if ev.code == "UNKNOWN_VALUE_SCALE" or approx or out.verdict == Verdict.UNKNOWN:
            reason = ev.reason or (out.reason or "a path through a branch whose condition is not tracked")
            if ev.code == "VALUE_SCALE_MISMATCH":
                reason = f"possible scale mismatch on a path the check over-approximates ({reason})"
            return Finding(
                "UNKNOWN_VALUE_SCALE",
                Verdict.UNKNOWN,
                f"the scale of the values combined at {site.loc} could not be decided: {reason}",
                loc=site.loc,
                reason=reason,
            )
        m = out.model
        loops = ctx.loop_values(m, site, env)
        iters = {self.prog.site(lp).index: smt.model_int(m, env[lp.var]) for lp in site.loops}
        message = ev.message(iters)
        buf = ev.dst
        thread, element = _witness(buf, site)
        cex = Counterexample(
            code=ev.code,
            message=message,
            op_loc=site.loc,
            program_point=str(site.loc),
            block=ctx.block_values(m),
            shapes=ctx.shape_values(m),
            thread=ThreadPoint(thread, site.role.name if site.role is not None else None),
            loops=loops,
            element=element,
        )
        return Finding(ev.code, Verdict.VIOLATED, message, loc=site.loc, counterexample=cex)


# --- helpers --------------------------------------------------------------------------------------------------------


class _TooOld(Exception):
    pass


def _shift(t: Any, subst: dict, idx: int) -> Any:
    """Term `t` of iteration ``j`` as seen from iteration ``j + 1`` of loop `idx`."""
    if t in subst:
        return subst[t]
    if t[0] == "v":
        deltas = tuple((lp, d - 1 if lp == idx else d) for lp, d in t[2])
        if any(d < -MAX_AGE for _, d in deltas):
            raise _TooOld
        return ("v", t[1], deltas)
    if t[0] == "phi":
        deltas = tuple((lp, d - 1 if lp == idx else d) for lp, d in t[3])
        if any(d < -MAX_AGE for _, d in deltas):
            raise _TooOld
        return ("phi", t[1], t[2], deltas)
    return t


def _shows_axes(buffer: Buffer, *scales: Scale) -> bool:
    """Whether a message about `scales` of a value of `buffer` names the axis of each statistic: a tile whose
    statistics are not all per row."""
    return len(buffer.shape) >= 2 and any(k != ROW for sc in scales if sc.known for (k, _), _ in sc.factors)


def _moved(v: Val, to: dict, what: str, loc: Any) -> Val:
    """`v` in other coordinates: a term per index of axis ``a`` becomes one per index of axis ``to[a]`` (a broadcast
    `m[None, :]` turns the vector's axis 0 into the tile's axis 1; a reduction along axis 0 turns the tile's axis 1
    into the vector's axis 0). A term on an axis `to` does not map varies along a coordinate that is gone (reduced,
    contracted, dropped): in the linear form it is mixed, in the scale it is not understood (`what`, with
    ``{axis}`` naming the axis)."""
    if all(to.get(k) == k for (k, _), _ in v.lin if _per_axis(k)) and (
        not v.scale.known or all(to.get(k) == k for (k, _), _ in v.scale.factors)
    ):
        return v
    lin: dict = {}
    for (k, t), c in v.lin:
        key = (to.get(k, MIXED) if _per_axis(k) else k, t)
        lin[key] = lin.get(key, 0.0) + c
    scale = v.scale
    if scale.known:
        lost = sorted({k for (k, _), _ in scale.factors if k not in to})
        if lost:
            scale = _top(what.format(axis=_axis_text(lost[0])), loc)
        else:
            scale = Scale.of({(to[k], t): c for (k, t), c in scale.factors})
    return Val(v.term, frozenset((k, _coef(c)) for k, c in lin.items() if _coef(c) != 0.0), scale, v.uninit)


def _lin(x: Any) -> dict:
    return dict(x.lin) if isinstance(x, Val) else {}


def _scale(x: Any) -> Scale:
    return x.scale if isinstance(x, Val) else PLAIN


def _number(e: Expr) -> float | None:
    return float(e.value) if isinstance(e, Const) and not isinstance(e.value, bool) else None


def _num(c: float) -> str:
    return str(int(c)) if c == int(c) else f"{c:.6g}"


def _op_text(site: Site) -> str:
    loc = site.loc
    if loc is None or not loc.text:
        return f"the {type(site.stmt).__name__.lower()}"
    return f"`{loc.text.split('#', 1)[0].strip()}`"


def _unique(states: list[State]) -> list[State]:
    seen: dict = {}
    for st in states:
        k = st.key()
        if k not in seen or _earlier(st, seen[k]):
            seen[k] = st
    return list(seen.values())


def _earlier(a: State, b: State) -> bool:
    return sum(n for _, n in a.iters) + sum(n for _, n in a.ran) < sum(n for _, n in b.iters) + sum(n for _, n in b.ran)


def _merge(states: list[State], loc: Any) -> list[State]:
    """At most `MAX_STATES` states: beyond, one state whose buffers hold the join of what the states hold."""
    if len(states) <= MAX_STATES:
        return states
    first = states[0]
    vals: dict = dict(first.vals)
    for st in states[1:]:
        for k, v in st.vals:
            if k not in vals:
                vals[k] = v
            elif vals[k] != v:
                old = vals[k]
                vals[k] = Val(
                    ("join", k, loc.line if loc else 0),
                    frozenset({((MIXED, ("join", k)), 1.0)}),
                    _join(old.scale, v.scale, loc, "a buffer"),
                )
    iters = tuple((i, min(n for st in states for j, n in st.iters if j == i)) for i, _ in first.iters)
    ran = tuple(r for r in first.ran if all(r in st.ran for st in states))
    return [State(tuple(vals.items()), iters, (), True, ran)]


def _refs(s: Stmt) -> list[TileRef]:
    out = []
    for name in ("src", "dst", "a", "b", "acc"):
        r = getattr(s, name, None)
        if isinstance(r, TileRef):
            out.append(r)
    for x in getattr(s, "srcs", ()) or ():
        if isinstance(x, Broadcast):
            out.append(x.ref)
        elif isinstance(x, TileRef):
            out.append(x)
    return out


def _written(body: tuple[Stmt, ...]) -> set[int]:
    out = set()
    for s in walk_all(body):
        if isinstance(s, Copy | Fill | Map | Reduce):
            out.add(id(s.dst.buffer))
        elif isinstance(s, Gemm):
            out.add(id(s.acc.buffer))
    return out


def _read(body: tuple[Stmt, ...]) -> set[int]:
    out = set()
    for s in walk_all(body):
        if isinstance(s, Copy):
            out.add(id(s.src.buffer))
        elif isinstance(s, Gemm):
            out |= {id(s.a.buffer), id(s.b.buffer)}
        elif isinstance(s, Map | Reduce):
            out |= {id(r.buffer) for r in _refs(s) if r is not s.dst}
    return out


def _witness(buf: Buffer, site: Site) -> tuple[int, Element]:
    """A thread and an element of the destination: the first register of the first thread that holds one."""
    if buf.space == Space.FRAGMENT and buf.tv is not None:
        idx = int(buf.tv(0, 0))
        coord = tuple(int(c) for c in decompose(idx, buf.static_shape))
        t = absolute_thread(buf, 0, site.role)
        return int(t) if isinstance(t, int) else 0, Element(user_name(buf), "fragment", coord=coord, value=0)
    first = first_thread(site.role)
    return first, Element(user_name(buf), buf.space.value, index=0, coord=tuple(0 for _ in buf.shape))
