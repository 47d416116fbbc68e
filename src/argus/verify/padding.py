"""Padding: the value classes of the out-of-bounds elements of partial tiles, and how operations transform them.

A global window is masked element by element: an element outside the tensor reads as the copy's `pad`. Such an
element is *padding*: its value means nothing, and it is harmless only while it is dropped (a store drops it, by the
same masking) or enters a reduction as that reduction's identity. The verifier tracks, per element, one of the
classes below (the `mask` term of a tag, `model.SymTag.mask`), through every operation, by the transfer functions of
this module:

* ``REAL``: computed from in-bounds data (assumed finite: the transfer functions use ``x * 0 = 0`` for real `x`);
* ``CONST``: a constant that depends on no data (a `T.fill`, a scalar, `T.index`, the constant branch of a
  `T.where`): never padding, but not data either, so a row of constants and padding is a row of padding;
* ``PAD_ZERO``, ``PAD_NEG_INF``, ``PAD_POS_INF``: padding whose value is exactly 0, -inf, +inf;
* ``PAD_OTHER``: padding of any other (unknown) value.

Elementwise operations combine classes through an abstract number per operand (an exact float, ``FIN``: some
finite number, ``ANY``: any value, inf and NaN included): padding in, padding out, its class the abstract result
(``exp2(-inf) = 0``, ``-inf - x = -inf`` for finite x, ``max(-inf, x) = x``, ``0 * x = 0`` for finite x, anything
unknown is ``PAD_OTHER``); no padding in: ``REAL`` if any operand is real, else ``CONST``. An in-place fold into an
accumulator (`accumulation_step`: ``T.copy(acc + x, acc)``, ``T.copy(T.maximum(acc, x), acc)``) of a term that is
padding of the op's identity leaves the element unchanged, so it keeps the accumulator's class (a lane that held
only a constant, its fill, becomes padding of the identity: it has seen no column). `T.where(c, a, b)` is
``If(c, class(a), class(b))`` with `c` evaluated symbolically at the element (`fragment_value`: `T.index`, scalar
expressions, comparisons, arithmetic), so a mask written ``col < N + 1`` keeps the padding of column ``N``.
Reductions and MMAs are in `model.Query` (they need the histories); the check is `checks.oob`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import z3

from argus.ir.expr import Const, Expr
from argus.ir.nodes import Broadcast, Copy, Fill, Map, MapOp, Reduce, ReduceOp, Space, TileRef
from argus.ir.tags import Tag
from argus.verify import smt

# The classes (the values of a tag's mask term). 5 was the old "derived from padding" code; it is no longer produced.
REAL, PAD_ZERO, PAD_NEG_INF, PAD_POS_INF, PAD_OTHER = range(5)
CONST = 6
PADS = (PAD_ZERO, PAD_NEG_INF, PAD_POS_INF, PAD_OTHER)
CLASSES = (REAL, PAD_ZERO, PAD_NEG_INF, PAD_POS_INF, PAD_OTHER, CONST)
TEXT = {PAD_ZERO: "0", PAD_NEG_INF: "-inf", PAD_POS_INF: "+inf", PAD_OTHER: "unknown"}
#: the padding class a reduction may combine without changing its result
IDENTITY = {ReduceOp.MAX: PAD_NEG_INF, ReduceOp.MIN: PAD_POS_INF, ReduceOp.SUM: PAD_ZERO}

INF = float("inf")
FIN = "fin"  # some finite number
ANY = "any"  # any value (inf, NaN included)

Num = float | str


def pad_class(pad: float) -> int:
    """The class of a copy's fill value."""
    if pad == 0.0:
        return PAD_ZERO
    if pad == -INF:
        return PAD_NEG_INF
    if pad == INF:
        return PAD_POS_INF
    return PAD_OTHER


def bv(x: int) -> Any:
    return smt.val(x)


def is_pad(c: Any) -> Any:
    return z3.Or(*[c == p for p in PADS])


def number_of(cls: int) -> Num:
    """The abstract number of an element of class `cls` (a fragment's constant may be anything, -inf fills too)."""
    return {REAL: FIN, PAD_ZERO: 0.0, PAD_NEG_INF: -INF, PAD_POS_INF: INF, PAD_OTHER: ANY, CONST: ANY}[cls]


def class_of_number(x: Num) -> int:
    """The padding class of an abstract number."""
    if isinstance(x, float):
        if x == 0.0:
            return PAD_ZERO
        if x == -INF:
            return PAD_NEG_INF
        if x == INF:
            return PAD_POS_INF
    return PAD_OTHER


def _exact(x: float) -> Num:
    return ANY if math.isnan(x) else x


def _add(a: Num, b: Num) -> Num:
    if ANY in (a, b):
        return ANY
    if isinstance(a, float) and isinstance(b, float):
        return _exact(a + b)
    inf = a if isinstance(a, float) and math.isinf(a) else b if isinstance(b, float) and math.isinf(b) else None
    return inf if inf is not None else FIN  # inf + finite = inf; finite + finite is finite


def _neg(a: Num) -> Num:
    return -a if isinstance(a, float) else a


def _mul(a: Num, b: Num) -> Num:
    if ANY in (a, b):
        return ANY
    if isinstance(a, float) and isinstance(b, float):
        return _exact(a * b)
    known = a if isinstance(a, float) else b
    if not isinstance(known, float):
        return FIN
    if known == 0.0:
        return 0.0  # 0 * finite
    if math.isinf(known):
        return ANY  # inf * (a finite number of unknown sign, maybe 0)
    return FIN


def _div(a: Num, b: Num) -> Num:
    if ANY in (a, b):
        return ANY
    if isinstance(a, float) and isinstance(b, float):
        if b == 0.0:
            return ANY
        return _exact(a / b)
    if isinstance(b, float) and b != 0.0 and not math.isinf(b):
        return _mul(a, 1.0 / b)
    return ANY  # a finite divisor may be 0


def _max(a: Num, b: Num, sign: float) -> Num:
    if isinstance(a, float) and isinstance(b, float):
        return max(a, b) if sign > 0 else min(a, b)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, float) and x == -sign * INF:
            return y  # max(-inf, y) = y
        if isinstance(x, float) and x == sign * INF:
            return x  # max(+inf, y) = +inf
    return ANY if ANY in (a, b) else FIN


def _unary(fn: Callable[[float], float], at_inf: Num, at_neg_inf: Num, fin: Num) -> Callable[[Num], Num]:
    def apply(a: Num) -> Num:
        if a == ANY:
            return ANY
        if a == FIN:
            return fin
        assert isinstance(a, float)
        if a == INF:
            return at_inf
        if a == -INF:
            return at_neg_inf
        try:
            return _exact(fn(a))
        except (OverflowError, ValueError, ZeroDivisionError):
            return ANY

    return apply


def _cmp(fn: Callable[[float, float], bool]) -> Callable[[Num, Num], Num]:
    def apply(a: Num, b: Num) -> Num:
        if isinstance(a, float) and isinstance(b, float):
            return 1.0 if fn(a, b) else 0.0
        return FIN  # 0 or 1

    return apply


_UNARY: dict[MapOp, Callable[[Num], Num]] = {
    MapOp.NEG: _neg,
    MapOp.CAST: lambda a: a,
    MapOp.EXP2: _unary(lambda x: 2.0**x, INF, 0.0, FIN),
    MapOp.EXP: _unary(math.exp, INF, 0.0, FIN),
    MapOp.LOG2: _unary(lambda x: -INF if x == 0 else math.log2(x), INF, ANY, ANY),
    MapOp.LOG: _unary(lambda x: -INF if x == 0 else math.log(x), INF, ANY, ANY),
    MapOp.SQRT: _unary(math.sqrt, INF, ANY, ANY),
    MapOp.RSQRT: _unary(lambda x: INF if x == 0 else 1.0 / math.sqrt(x), 0.0, ANY, ANY),
    MapOp.ABS: _unary(abs, INF, INF, FIN),
    MapOp.TANH: _unary(math.tanh, 1.0, -1.0, FIN),
    MapOp.ERF: _unary(math.erf, 1.0, -1.0, FIN),
    MapOp.SIGMOID: _unary(lambda x: 1.0 / (1.0 + math.exp(-x)), 1.0, 0.0, FIN),
}
_BINARY: dict[MapOp, Callable[[Num, Num], Num]] = {
    MapOp.ADD: _add,
    MapOp.SUB: lambda a, b: _add(a, _neg(b)),
    MapOp.MUL: _mul,
    MapOp.DIV: _div,
    MapOp.MAX: lambda a, b: _max(a, b, 1.0),
    MapOp.MIN: lambda a, b: _max(a, b, -1.0),
    MapOp.LT: _cmp(lambda a, b: a < b),
    MapOp.LE: _cmp(lambda a, b: a <= b),
    MapOp.EQ: _cmp(lambda a, b: a == b),
    MapOp.NE: _cmp(lambda a, b: a != b),
}


def transfer(op: MapOp, numbers: list[Num]) -> Num:
    """The abstract result of elementwise `op` on abstract numbers (ANY for what the table does not know)."""
    if op == MapOp.FMA:
        return _add(_mul(numbers[0], numbers[1]), numbers[2])
    if op == MapOp.EXP2_FMA:  # 2^x (the second operand picks the unit that evaluates it)
        return _UNARY[MapOp.EXP2](numbers[0])
    if op in _UNARY and len(numbers) == 1:
        return _UNARY[op](numbers[0])
    if op in _BINARY and len(numbers) == 2:
        return _BINARY[op](numbers[0], numbers[1])
    return ANY


def scalar_number(e: Any) -> Num:
    """The abstract number of a scalar operand: a literal's value, else some finite number (sizes, indices)."""
    if isinstance(e, Const) and isinstance(e.value, int | float) and not isinstance(e.value, bool):
        return float(e.value)
    if isinstance(e, int | float) and not isinstance(e, bool):
        return float(e)
    return FIN


def combine(op: MapOp, operands: list[Any]) -> Any:
    """The class term of ``op(operands)``: each operand a class term (a fragment's element) or a scalar `Expr`.
    Enumerates the classes each fragment operand may have (one when its term simplifies to a numeral)."""
    slots: list[list[tuple[Any, int | None, Num]]] = []  # per operand: (condition, class, number)
    for x in operands:
        if isinstance(x, Expr | int | float):
            slots.append([(z3.BoolVal(True), None, scalar_number(x))])
            continue
        s = z3.simplify(x)
        if z3.is_bv_value(s):
            c = s.as_long()
            cs = [c] if c in CLASSES else [PAD_OTHER]
            slots.append([(z3.BoolVal(True), cs[0], number_of(cs[0]))])
        else:
            slots.append([(x == bv(c), c, number_of(c)) for c in CLASSES])

    def leaf(choice: list[tuple[Any, int | None, Num]]) -> int:
        classes = [c for _, c, _ in choice]
        if any(c in PADS for c in classes):
            return class_of_number(transfer(op, [n for _, _, n in choice]))
        return REAL if REAL in classes else CONST

    def build(i: int, choice: list) -> Any:
        if i == len(slots):
            return bv(leaf(choice))
        options = slots[i]
        term = build(i + 1, choice + [options[-1]])
        for cond, c, n in reversed(options[:-1]):
            term = z3.If(cond, build(i + 1, choice + [(cond, c, n)]), term)
        return term

    return build(0, [])


def select(cond: Any, a: Any, b: Any) -> Any:
    """The class of ``T.where(cond, a, b)``: `cond` a Z3 boolean, `a` and `b` class terms or scalars (constants)."""
    ca = bv(CONST) if isinstance(a, Expr | int | float) else a
    cb = bv(CONST) if isinstance(b, Expr | int | float) else b
    return z3.If(cond, ca, cb)


def no_term(ca: Any, cb: Any) -> Any:
    """Whether the product of an A element of class `ca` and a B element of class `cb` is the contraction's tail:
    padding 0 in both operands (0 * 0, no term at all)."""
    return z3.And(ca == bv(PAD_ZERO), cb == bv(PAD_ZERO))


def mma_class(ca: Any, cb: Any) -> Any:
    """The class of an accumulator element from the classes of the A and B elements of one product (a
    representative contraction index, `representative`): a product with padding of one operand (a row of A or a
    column of B past its tensor) makes the element padding (of unknown value: the sum is not tracked); padding 0
    in both operands is the contraction's tail (0 * 0, no term at all), a constant, not padding."""
    prod = z3.If(no_term(ca, cb), bv(CONST), combine(MapOp.MUL, [ca, cb]))
    return z3.If(is_pad(prod), bv(PAD_OTHER), prod)


def bad_product(ca: Any, cb: Any) -> Any:
    """Whether the product of an A element of class `ca` and a B element of class `cb` adds something other than
    nothing or real data to an accumulator (`checks.oob`, `OOB_MASKED_MMA`): an infinite padding times anything
    (``inf * x``, ``inf * 0 = NaN``), or padding of unknown value times anything but padding 0 (taken as finite:
    ``x * 0 = 0``, as real data is). Padding 0 times a finite value is no term at all: the contraction's tail."""
    inf = z3.Or(*[c == bv(p) for c in (ca, cb) for p in (PAD_NEG_INF, PAD_POS_INF)])
    other = z3.Or(z3.And(ca == bv(PAD_OTHER), cb != bv(PAD_ZERO)), z3.And(cb == bv(PAD_OTHER), ca != bv(PAD_ZERO)))
    return z3.Or(inf, other)


def reduce_class(q: Any, w: Any, s: Any, loc: Any, env: dict, guard: Any, tag: Any) -> Any:
    """The class of a reduction's result from the class of a representative element of its row: padding when the
    representative is (the whole row is padding, or the solver chose a padding element of a mixed row: over
    approximate, never unsound), else real or constant. The reduction itself is checked by `checks.oob`."""
    c = tag.mask
    new = z3.If(is_pad(c), bv(PAD_OTHER), c)
    if not s.accumulate:
        return new
    old = q.read(s.dst.buffer, w.pre.get(s.dst.buffer, ()), loc, env, guard).mask
    return z3.If(is_pad(old), bv(PAD_OTHER), z3.If(z3.And(old == bv(REAL), new == bv(CONST)), bv(REAL), new))


def representative(q: Any, site: Any, key: tuple, env: dict, names: tuple[str, ...]) -> tuple:
    """Fresh variables that pick the representative element of a reduction's row or an MMA's contraction, the same
    for every read of one query that reads the same result (same `key` and iterations of the loops around `site`):
    the consistency axioms of an uninterpreted function, written out (the solver's logic is QF_BV)."""
    args = tuple(smt.val(a) for a in key) + tuple(smt.val(env[lp.var]) for lp in site.loops if lp.var in env)
    known = q.reps.setdefault(site.index, [])
    ids = tuple(a.get_id() for a in args)
    for a0, r0 in known:  # the same terms (another read path to the same result): the same representative
        if tuple(a.get_id() for a in a0) == ids:
            return r0
    fresh = tuple(smt.fresh(f"rep_{n}") for n in names)
    for a0, r0 in known:
        if len(a0) == len(args):
            same = z3.And(*[x == y for x, y in zip(a0, args, strict=True)])
            q.side.append(z3.Implies(same, z3.And(*[x == y for x, y in zip(r0, fresh, strict=True)])))
    known.append((args, fresh))
    return fresh


def map_class(q: Any, w: Any, win: tuple, env: dict, guard: Any, loc: Any, operand: Any, tag: Any) -> Any:
    """The class of the element at window coordinate `win` written by the elementwise `Map` of write `w`, from its
    operands' classes (`operand`'s is `tag.mask`, already read) read by the same thread."""
    s = w.site.stmt
    t = loc[0]

    def cls(x: Any) -> Any:
        if x is operand:
            return tag.mask
        if isinstance(x, TileRef | Broadcast):
            return q.src_at(x, win, env, guard, w.pre, w.site, same_thread=t).mask
        return x

    step = accumulation_step(w.site)
    if step is not None:
        i, identity = step  # srcs[i] is the accumulator, the other operand the term folded into it
        classes = [cls(x) for x in s.srcs]
        acc, incoming = classes[i], classes[1 - i]
        # identity padding folded in leaves the element unchanged; a lane that held only a constant (its fill) and
        # has seen no column yet stays padding (of the identity: the value a correct fill has), so a later operation
        # that puts something else there (``acc + b[:, None]`` after the loop) is still caught at the reduction
        kept = z3.If(acc == bv(CONST), bv(identity), acc)
        return z3.If(incoming == bv(identity), kept, combine(s.op, classes))
    if s.op == MapOp.SELECT:
        cond_ref, a, b = s.srcs
        ca, cb = cls(a), cls(b)
        value = operand_value(q, cond_ref, win, env, guard, w.pre, t)
        if value is None:
            cond = z3.Bool(f"where_cond!{w.site.index}_{len(q.selects)}")
            q.havoc.append(
                (
                    z3.And(guard, select(True, ca, cb) != select(False, ca, cb)),
                    "UNKNOWN_STATEMENT",
                    f"the condition of T.where at {s.loc} is not an expression of T.index, scalars and comparisons: "
                    "which elements it masks is not known",
                )
            )
        else:
            cond = value != 0
        out = select(cond, ca, cb)
        q.selects.append((guard, w.site, win, out, _defining_site(cond_ref, w.pre)))
        return out
    return combine(s.op, [cls(x) for x in s.srcs])


#: the elementwise ops that fold a term into an accumulator, with the padding class that leaves it unchanged
#: (``acc + 0``, ``0 + acc``, ``acc - 0``, ``max(acc, -inf)``, ``min(acc, +inf)``) and the operand positions the
#: accumulator may take (a difference only subtracts from it)
_FOLDS: dict[MapOp, tuple[int, tuple[int, ...]]] = {
    MapOp.ADD: (PAD_ZERO, (0, 1)),
    MapOp.SUB: (PAD_ZERO, (0,)),
    MapOp.MAX: (PAD_NEG_INF, (0, 1)),
    MapOp.MIN: (PAD_POS_INF, (0, 1)),
}


def accumulation_step(site: Any) -> tuple[int, int] | None:
    """(position of the accumulator among the operands, identity class) when the `Map` at `site` folds a term
    into an accumulator in place: a binary add, subtract, maximum or minimum of a whole fragment `acc` and another
    fragment operand whose result is `acc` itself, or a whole temporary that a later statement of the same body
    copies whole into `acc`, nothing writing it in between (the DSL's ``T.copy(acc + x, acc)``,
    ``T.copy(T.maximum(acc, x), acc)``, and folds in interleaved order: `_copied_back`). None otherwise.

    Where the term is padding of the op's identity class, such a step leaves `acc`'s element unchanged, so the
    element keeps `acc`'s class (`map_class`): the padding adds nothing. The lanes of an accumulator are the
    kernel's own, not columns of the tensor, so the value it held before (a fill, a partial result) is not the
    padding's doing; a lane that held only a constant (the fill) has seen no column and stays padding of the
    identity, so what a later statement puts there (``acc + b[:, None]`` after the loop) is still judged. An
    elementwise result written anywhere else gets the class of its padding operands (``x + b`` over a padded `x`
    puts `b` where no column is: padding of unknown value)."""
    from argus.ir.nodes import Buffer

    s = site.stmt
    fold = _FOLDS.get(s.op) if isinstance(s, Map) else None
    if fold is None or len(s.srcs) != 2 or not s.dst.is_whole() or s.dst.buffer.space != Space.FRAGMENT:
        return None
    identity, positions = fold

    def whole(x: Any) -> Buffer | None:
        ok = isinstance(x, TileRef) and x.is_whole() and x.buffer.space == Space.FRAGMENT
        return x.buffer if ok and tuple(x.buffer.static_shape) == tuple(s.dst.buffer.static_shape) else None

    if not isinstance(s.srcs[0], TileRef | Broadcast) or not isinstance(s.srcs[1], TileRef | Broadcast):
        return None  # a scalar term: `combine` already knows its value
    target = s.dst.buffer
    if not any(whole(s.srcs[i]) is target for i in positions):
        target = _copied_back(site, target, whole) or target
    for i in positions:
        if whole(s.srcs[i]) is target:
            return i, identity
    return None


#: Statements that write no fragment (`_copied_back` looks past them).
_NO_FRAGMENT_WRITE = ("Alloc", "Let", "Barrier", "AsyncWait", "AsyncCommit", "MbarrierArrive", "MbarrierWait",
                      "WgmmaWait", "Fence", "AssertTag", "AssertTagEq")  # fmt: skip


def _copied_back(site: Any, temp: Any, whole: Any) -> Any:
    """The fragment a whole copy of temporary `temp` (the `Map` at `site`'s result) goes to, later in the same body
    with nothing writing `temp` before it: the DSL's ``T.copy(acc + x, acc)``, and two accumulators folded in
    interleaved order (``a2 = a + x; b2 = max(b, y); T.copy(a2, a); T.copy(b2, b)``). The copy carries the `Map`'s
    value, so the step is a fold into the fragment it lands in. None where a statement in between may write `temp`
    (one that writes it, or a loop or branch, whose body is not looked into)."""
    frame = site.frames[-1]
    for stmt in frame.body[frame.pos + 1 :]:
        if isinstance(stmt, Copy) and stmt.src.buffer is temp:
            return stmt.dst.buffer if stmt.src.is_whole() and whole(stmt.dst) is not None else None
        if type(stmt).__name__ in _NO_FRAGMENT_WRITE:
            continue
        dst = getattr(stmt, "target", None) if isinstance(stmt, Tag) else getattr(stmt, "dst", None)
        if not isinstance(stmt, Copy | Fill | Map | Reduce | Tag) or dst is None or dst.buffer is temp:
            return None
    return None


def _defining_site(ref: Any, pre: dict) -> Any:
    """The statement that computed a `T.where` condition (its mask expression), when one write did."""
    from argus.verify.model import Write

    ref = ref.ref if isinstance(ref, Broadcast) else ref
    items = pre.get(ref.buffer, ()) if isinstance(ref, TileRef) else ()
    return items[0].site if items and isinstance(items[0], Write) else None


# --- values of index fragments (the conditions of T.where) --------------------------------------------------------

_VALUE_OPS: dict[MapOp, Callable[..., Any]] = {
    MapOp.ADD: lambda a, b: a + b,
    MapOp.SUB: lambda a, b: a - b,
    MapOp.MUL: lambda a, b: a * b,
    MapOp.NEG: lambda a: -a,
    MapOp.CAST: lambda a: a,
    MapOp.LT: lambda a, b: smt.val(a < b),
    MapOp.LE: lambda a, b: smt.val(a <= b),
    MapOp.EQ: lambda a, b: smt.val(a == b),
    MapOp.NE: lambda a, b: smt.val(a != b),
    MapOp.AND: lambda a, b: a & b,
    MapOp.OR: lambda a, b: a | b,
    MapOp.XOR: lambda a, b: a ^ b,
    MapOp.MIN: lambda a, b: smt.minimum(a, b),
    MapOp.MAX: lambda a, b: smt.maximum(a, b),
    MapOp.FLOORDIV: lambda a, b: smt.floordiv(a, b),
    MapOp.MOD: lambda a, b: smt.mod(a, b),
}


def operand_value(q: Any, x: Any, win: tuple, env: dict, guard: Any, pre: dict, t: Any, depth: int = 0) -> Any:
    """The integer value (a Z3 bit-vector) of operand `x` at window coordinate `win` read by thread `t`, when it is
    an expression of element coordinates (`T.index`), scalars, integral fills and integer arithmetic and
    comparisons; None otherwise (data, non-integral constants, anything the verifier cannot follow)."""
    if depth > 16:
        return None
    if isinstance(x, Expr | int | float):
        if isinstance(x, Const) and isinstance(x.value, float):
            return smt.val(int(x.value)) if x.value.is_integer() else None
        if isinstance(x, float):
            return smt.val(int(x)) if x.is_integer() else None
        try:
            return smt.val(smt.evaluate(x, env))
        except (smt.EncodingError, TypeError):
            return None
    if isinstance(x, Broadcast):
        win = tuple(c for i, c in enumerate(win) if i not in x.axes)
        x = x.ref
    if not isinstance(x, TileRef) or x.buffer.space != Space.FRAGMENT or not x.is_whole():
        return None
    from argus.verify.program import colmajor

    buf = x.buffer
    idx = colmajor(tuple(smt.val(c) for c in win), buf.static_shape)
    v = smt.fresh(f"{buf.name}_v")
    q.require(guard, z3.And(smt.in_range(v, 0, buf.values_per_thread), smt.val(buf.tv((t, v))) == idx))
    return fragment_value(q, buf, pre.get(buf, ()), (t, v), env, guard, depth + 1)


def fragment_value(q: Any, buf: Any, items: tuple, loc: Any, env: dict, guard: Any, depth: int) -> Any:
    """The integer value of fragment `buf`'s register slot `loc` given its history (see `operand_value`)."""
    from argus.verify.model import LoopHead, Write

    if not items or depth > 16:
        return None
    head = items[0]
    if isinstance(head, LoopHead):
        if id(buf) in head.info.unchanged:
            return fragment_value(q, buf, head.info.pre.get(buf, ()), loc, env, guard, depth + 1)
        return None
    if not isinstance(head, Write):
        return None
    s = head.site.stmt
    if not isinstance(s, Fill | Map | Copy):
        return None
    cover, win, wenv = q.dst_window(s.dst, loc, env, head.site)
    if cover is not True:
        return None
    if isinstance(s, Fill):
        return operand_value(q, s.value, win, wenv, guard, head.pre, loc[0], depth + 1)
    if isinstance(s, Copy):
        if s.src.buffer.space != Space.FRAGMENT:
            return None
        return operand_value(q, s.src, win, wenv, guard, head.pre, loc[0], depth + 1)
    if s.op == MapOp.COORD:
        axis = s.srcs[0]
        axis = axis.value if isinstance(axis, Const) else axis
        return smt.val(win[int(axis)]) if isinstance(axis, int) else None
    fn = _VALUE_OPS.get(s.op)
    if fn is None:
        return None
    values = [operand_value(q, x, win, wenv, guard, head.pre, loc[0], depth + 1) for x in s.srcs]
    if any(v is None for v in values):
        return None
    try:
        return smt.val(fn(*[smt.val(v) for v in values]))
    except (smt.EncodingError, TypeError, z3.Z3Exception):
        return None


__all__ = [
    "CONST",
    "IDENTITY",
    "PADS",
    "PAD_NEG_INF",
    "PAD_OTHER",
    "PAD_POS_INF",
    "PAD_ZERO",
    "REAL",
    "TEXT",
    "combine",
    "is_pad",
    "pad_class",
    "select",
    "transfer",
]
