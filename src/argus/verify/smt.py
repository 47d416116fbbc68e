"""Z3 encoding: bit-vector integers with Python's semantics, IR expressions, layouts and their inverses.

Every integer of the verifier (coordinates, offsets, thread and loop indices, problem sizes, tag
coordinates) is a 32-bit Z3 bit-vector read as a *signed* number, so that swizzles (XOR) and ordinary
arithmetic live in one sort. Problem sizes are bounded by `MAX_EXTENT` so that nothing the kernels
compute overflows; floor division and modulus follow Python (towards minus infinity), exactly, for
any divisor, and by shifts and masks for powers of two.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator
from typing import Any

import z3

from argus.ir.expr import BinaryOp, BinOp, Const, Element, Expr, Select, Var
from argus.layout import ComposedLayout, Layout, Swizzle
from argus.layout.int_tuple import flatten

#: Width of every integer term.
WIDTH = 32
#: Problem sizes (shape symbols) range over 1 .. MAX_EXTENT.
MAX_EXTENT = 1 << 20
#: Every intermediate value a kernel computes (an origin, an offset, a product of sizes) is taken to lie in
#: ``-VALUE_BOUND .. VALUE_BOUND - 1`` (docs/verify.md section 7, "Bounds"): the divisions' definitions rest on it,
#: and an over-approximation that replaces a term by a free value bounds what it builds from that value by it.
VALUE_BOUND = 1 << 30

_counter = itertools.count()


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Run the enclosed verification on a Z3 state of its own: a fresh default context, variable counter and
    division table, as if it were the process's first. Z3's answer to a query depends on the ids of its terms
    (it orders commutative arguments and bit-blasts by id, and reuses the ids of freed terms), so in a shared
    context a query's cost, and whether it fits its resource budget, depended on what the process had verified
    before: a tag assertion that took 49M units alone exceeded 300M after other test modules. Isolated, the same
    kernel costs the same units in any process. Terms made inside must not be mixed with terms made outside.

    Python's cyclic garbage collector is off inside: a Z3 term is freed (and its id reused) when its Python object
    is, and a collection runs when the process's allocation count says so, so the ids of later terms, and with them
    a query's cost, depended on what the process had allocated before (a split-K contraction query took 7.6M units
    after one trace and more than its 8M budget after another, in CI). Reference counting alone frees terms at the
    same points in every process."""
    global _counter, _DIVISIONS, _ELEMENTS
    saved = (z3.z3._main_ctx, _counter, _DIVISIONS, _ELEMENTS)
    collecting = gc.isenabled()
    gc.disable()
    z3.z3._main_ctx = z3.Context()
    _counter, _DIVISIONS, _ELEMENTS = itertools.count(), {}, {}
    try:
        yield
    finally:
        z3.z3._main_ctx, _counter, _DIVISIONS, _ELEMENTS = saved
        if collecting:
            gc.enable()


class EncodingError(Exception):
    """Something the encoding cannot express (it becomes an `unknown` finding with this reason)."""


def val(x: Any) -> Any:
    """An int as a bit-vector constant; Z3 terms pass through; bools become 0/1."""
    if isinstance(x, bool):
        return z3.BitVecVal(int(x), WIDTH)
    if isinstance(x, int):
        return z3.BitVecVal(x, WIDTH)
    if z3.is_bool(x):
        return z3.If(x, z3.BitVecVal(1, WIDTH), z3.BitVecVal(0, WIDTH))
    if z3.is_bv(x):
        if x.size() != WIDTH:
            return z3.SignExt(WIDTH - x.size(), x) if x.size() < WIDTH else z3.Extract(WIDTH - 1, 0, x)
        return x
    raise EncodingError(f"cannot encode {x!r} as an integer")


def boolean(x: Any) -> Any:
    if isinstance(x, bool):
        return z3.BoolVal(x)
    if isinstance(x, int):
        return z3.BoolVal(x != 0)
    if z3.is_bool(x):
        return x
    return val(x) != 0


def taken(branches: Any, env: dict) -> list[Any]:
    """The conditions under which a statement inside `branches` (a site's ``ifs``: (If, taken) pairs) runs, in
    `env`: each branch's condition, or its negation where the statement is in the else side."""
    out = []
    for branch, side in branches:
        cond = boolean(evaluate(branch.cond, env))
        out.append(cond if side else z3.Not(cond))
    return out


def fresh(prefix: str) -> Any:
    """A fresh bit-vector variable (names stay readable in models: ``prefix!n``)."""
    return z3.BitVec(f"{prefix}!{next(_counter)}", WIDTH)


def in_range(x: Any, lo: Any, hi: Any) -> Any:
    """``lo <= x < hi`` (signed)."""
    return z3.And(val(x) >= val(lo), val(x) < val(hi))


def _is_pow2(b: int) -> bool:
    return b > 0 and b & (b - 1) == 0


#: Definitions of the quotient/remainder variables `floordiv` and `mod` introduce (by the id of the
#: dividend and the divisor): ``a == q * b + r, 0 <= r < b``. A solver must assert the definitions
#: of the variables its formula mentions (`definitions`).
_DIVISIONS: dict[tuple[int, int], tuple[Any, Any, Any]] = {}


def _divmod_const(a: Any, b: int) -> tuple[Any, Any]:
    """Floor quotient and remainder of `a` by a positive constant that is not a power of two, as fresh
    variables (multiplication by a constant bit-blasts far smaller than a divider)."""
    a = val(a)
    key = (a.get_id(), b)
    got = _DIVISIONS.get(key)
    if got is None or not got[0].eq(a):
        q, r = fresh("q"), fresh("r")
        # bit-vector multiplication wraps: without bounds on q, any r would do (b is invertible
        # modulo 2**32 when odd). Every dividend is below 2**30 in magnitude (bounded extents), so the
        # bounds below keep q * b exact and make (q, r) unique.
        bound = (1 << (WIDTH - 3)) // b + 1
        got = (a, (q, r), z3.And(a == q * b + r, r >= 0, r < b, q >= -bound, q <= bound))
        _DIVISIONS[key] = got
    return got[1]


def division_variables() -> list[tuple[Any, Any, Any]]:
    """(dividend, quotient, remainder) of every division by a constant introduced so far (`_divmod_const`): the
    quotient and remainder are functions of the dividend (the divisor is a constant)."""
    return [(a, q, r) for a, (q, r), _ in _DIVISIONS.values()]


def remainder_dividend(t: Any, b: int) -> Any:
    """The dividend `a` when `t` is the remainder of ``a % b`` (`_divmod_const`'s variable), else None: two such
    remainders are equal when their dividends are, a fact a solver proves without the divisions."""
    if not (z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED):
        return None
    for (_, divisor), (a, (_q, r), _cons) in _DIVISIONS.items():
        if divisor == b and r.eq(t):
            return a
    return None


def definitions(terms: list[Any]) -> list[Any]:
    """The defining constraints of the quotient/remainder variables that occur in `terms`."""
    if not _DIVISIONS:
        return []
    from z3 import z3util

    names: set[str] = set()
    seen: set[int] = set()
    todo = list(terms)
    while todo:
        t = todo.pop()
        if not z3.is_expr(t) or t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            names.add(str(t))
        else:
            todo.extend(t.children())
    out = []
    pending = True
    done: set[int] = set()
    while pending:
        pending = False
        for key, (_a, (q, r), cons) in list(_DIVISIONS.items()):
            if key in done:
                continue
            if str(q) in names or str(r) in names:
                done.add(key)
                out.append(cons)
                for v in z3util.get_vars(cons):
                    if str(v) not in names:
                        names.add(str(v))
                        pending = True
    return out


def floordiv(a: Any, b: Any) -> Any:
    """Python's ``a // b``."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if isinstance(b, int):
        if b == 1:
            return val(a)
        if _is_pow2(b):
            return val(a) >> (b.bit_length() - 1)  # arithmetic shift: floor for negatives too
        if b > 0:
            return _divmod_const(a, b)[0]
    a, b = val(a), val(b)
    q = a / b  # truncating
    return z3.If(z3.And(a % b != 0, (a < 0) != (b < 0)), q - 1, q)


def mod(a: Any, b: Any) -> Any:
    """Python's ``a % b``."""
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    if isinstance(b, int) and _is_pow2(b):
        return val(a) & (b - 1)
    if isinstance(b, int) and b > 0:
        return _divmod_const(a, b)[1]
    # Z3's bvsmod is Python's % (the remainder takes the divisor's sign; ``a % 0`` is `a`, as ``a - 0 * q``): one
    # operation whose bit-blasting states ``|r| < |b|`` directly, where ``a - b * (a // b)`` left a solver to
    # rediscover it through a divider and a multiplier (`T.tile_order`'s ``within % min(tiles_m - first, group)``)
    return val(a) % val(b)


def minimum(a: Any, b: Any) -> Any:
    a, b = val(a), val(b)
    return z3.If(a <= b, a, b)


def maximum(a: Any, b: Any) -> Any:
    a, b = val(a), val(b)
    return z3.If(a >= b, a, b)


def evaluate(e: Expr | int, env: dict[Any, Any], leaf: Any = None, memo: dict[int, Any] | None = None) -> Any:
    """The Z3 term of IR expression `e`, variables bound by `env` (Var -> term). `leaf(e)` may
    give the term of leaves this module does not know (tag placeholders); it returns None to decline.
    Comparisons and logic give Z3 booleans, arithmetic gives bit-vectors. A sub-expression shared within `e` (a
    chain of inlined `T.let` bindings that each read the previous one several times) is encoded once (`memo`, by
    node identity, for this call)."""
    if isinstance(e, int):
        return val(e)
    if memo is None:
        memo = {}
    if isinstance(e, BinOp | Select | Element):
        got = memo.get(id(e))
        if got is not None and got[0] is e:
            return got[1]
        out = _evaluate(e, env, leaf, memo)
        memo[id(e)] = (e, out)
        return out
    return _evaluate(e, env, leaf, memo)


def _evaluate(e: Expr, env: dict[Any, Any], leaf: Any, memo: dict[int, Any]) -> Any:
    if leaf is not None:
        got = leaf(e)
        if got is not None:
            return got
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return z3.BoolVal(e.value)
        if isinstance(e.value, int):
            return val(e.value)
        raise EncodingError(f"the floating-point constant {e.value} has no integer encoding")
    if isinstance(e, Var):
        if e not in env:
            raise EncodingError(f"variable {e.name} ({e.kind}) is not bound here")
        return env[e]
    if isinstance(e, BinOp):
        a = evaluate(e.lhs, env, leaf, memo)
        b = evaluate(e.rhs, env, leaf, memo)
        op = e.op
        if op in (BinaryOp.AND, BinaryOp.OR):
            if z3.is_bool(a) or z3.is_bool(b):
                return (z3.And if op == BinaryOp.AND else z3.Or)(boolean(a), boolean(b))
            return val(a) & val(b) if op == BinaryOp.AND else val(a) | val(b)
        if op == BinaryOp.EQ:
            return boolean(a) == boolean(b) if z3.is_bool(a) and z3.is_bool(b) else val(a) == val(b)
        if op == BinaryOp.NE:
            return boolean(a) != boolean(b) if z3.is_bool(a) and z3.is_bool(b) else val(a) != val(b)
        a_i = _const_int(e.lhs)
        b_i = _const_int(e.rhs)
        if op == BinaryOp.ADD:
            return val(a) + val(b)
        if op == BinaryOp.SUB:
            return val(a) - val(b)
        if op == BinaryOp.MUL:
            return val(a) * val(b)
        if op == BinaryOp.FLOORDIV:
            return floordiv(a if a_i is None else a_i, b if b_i is None else b_i)
        if op == BinaryOp.MOD:
            return mod(a if a_i is None else a_i, b if b_i is None else b_i)
        if op == BinaryOp.MIN:
            return minimum(a, b)
        if op == BinaryOp.MAX:
            return maximum(a, b)
        if op == BinaryOp.LT:
            return val(a) < val(b)
        if op == BinaryOp.LE:
            return val(a) <= val(b)
        if op == BinaryOp.XOR:
            return val(a) ^ val(b)
        if op == BinaryOp.SHL:
            return val(a) << val(b)
        if op == BinaryOp.SHR:
            return val(a) >> val(b)
        raise EncodingError(f"operator {op} is not encoded")
    if isinstance(e, Select):
        c = boolean(evaluate(e.cond, env, leaf, memo))
        x, y = evaluate(e.if_true, env, leaf, memo), evaluate(e.if_false, env, leaf, memo)
        if z3.is_bool(x) and z3.is_bool(y):
            return z3.If(c, x, y)
        return z3.If(c, val(x), val(y))
    if isinstance(e, Element):
        return element(e.buffer, tuple(evaluate(i, env, leaf, memo) for i in e.index))
    raise EncodingError(f"cannot encode the expression {e!r}")


def element(buffer: Any, index: tuple[Any, ...]) -> Any:
    """The value of element `index` of global tensor `buffer` (``offs[g]``): an uninterpreted function of the index,
    one per tensor (in the isolated Z3 context of the query), so that the same index read twice is the same value
    and nothing else is assumed of the data: a proof over it holds for every content of the tensor."""
    key = id(buffer)
    got = _ELEMENTS.get(key)
    if got is None or got[0] is not buffer:
        sort = z3.BitVecSort(WIDTH)
        got = (buffer, z3.Function(f"{buffer.name}!data!{next(_counter)}", *([sort] * len(index)), sort))
        _ELEMENTS[key] = got
    return got[1](*[val(i) for i in index])


#: The uninterpreted function standing for each tensor read element by element (`element`), by id of the buffer.
_ELEMENTS: dict[int, tuple[Any, Any]] = {}


def element_function(buffer: Any) -> Any:
    """The uninterpreted function `element` reads `buffer` through in this Z3 context, or None where nothing read
    it yet."""
    got = _ELEMENTS.get(id(buffer))
    return got[1] if got is not None and got[0] is buffer else None


def _const_int(e: Any) -> int | None:
    if isinstance(e, int):
        return e
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def static_int(e: Expr | int) -> int | None:
    """The value of an expression without variables, else None."""
    if isinstance(e, int):
        return e
    try:
        t = z3.simplify(val(evaluate(e, {})))
    except (EncodingError, z3.Z3Exception):
        return None
    return t.as_signed_long() if z3.is_bv_value(t) else None


# --- layouts ------------------------------------------------------------------------------------------------


def apply_layout(layout: Any, coord: Any) -> Any:
    """``layout(coord)`` on bit-vector terms (the layout algebra evaluates on Z3 values itself)."""
    if isinstance(coord, tuple) and len(coord) == 1:
        coord = coord[0]
    return val(layout(coord))


def _leaves(layout: Layout) -> list[tuple[int, int, int, int]]:
    """(mode, position inside the mode's column-major split, extent, stride) of every leaf of a
    layout called with one coordinate per top-level mode."""
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    stride = layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)
    out = []
    for m, (s, d) in enumerate(zip(shape, stride, strict=True)):
        fs, fd = flatten(s), flatten(d)
        fs = fs if isinstance(fs, tuple) else (fs,)
        fd = fd if isinstance(fd, tuple) else (fd,)
        for i, (ls, ld) in enumerate(zip(fs, fd, strict=True)):
            out.append((m, i, int(ls), int(ld)))
    return out


def invertible(layout: Any) -> bool:
    """True when `invert` finds the coordinate of every offset in the image: the layout's leaves,
    ordered by stride, are digits of a mixed radix (each stride at least the span of the smaller ones)."""
    if isinstance(layout, ComposedLayout):
        return isinstance(layout.inner, Swizzle) and invertible(layout.outer)
    leaves = [x for x in _leaves(layout) if x[2] > 1]
    if any(d <= 0 for _, _, _, d in leaves):
        return False
    span = 0
    for _, _, s, d in sorted(leaves, key=lambda x: x[3]):
        if d <= span:
            return False
        span += (s - 1) * d
    return True


def invert(layout: Any, offset: Any) -> tuple[tuple[Any, ...], Any]:
    """(coordinate, ok): one coordinate per top-level mode of `layout` such that, when ``ok`` holds,
    ``layout(coordinate) == offset`` and the coordinate is in the layout's domain; ``ok`` is false
    exactly when `offset` is not in the layout's image (requires `invertible`)."""
    x = val(offset)
    if isinstance(layout, ComposedLayout):
        x = val(layout.inner(x)) - layout.offset  # a swizzle is an involution
        inner_coord, _ = invert(layout.outer, x)
        ok = z3.And(*_domain(layout.outer, inner_coord), apply_layout(layout, inner_coord) == val(offset))
        return inner_coord, ok
    leaves = _leaves(layout)
    order = sorted(range(len(leaves)), key=lambda i: -leaves[i][3])
    leaf_coord: dict[int, Any] = {}
    rem = x
    for i in order:
        _, _, s, d = leaves[i]
        if s == 1 or d == 0:
            leaf_coord[i] = val(0)
            continue
        leaf_coord[i] = z3.UDiv(rem, d) if d > 1 else rem
        rem = z3.URem(rem, d) if d > 1 else val(0)
    nmodes = len(layout.shape) if isinstance(layout.shape, tuple) else 1
    coord: list[Any] = [val(0)] * nmodes
    mult: dict[int, int] = {}
    for i, (m, _, s, _) in enumerate(leaves):
        factor = mult.get(m, 1)
        coord[m] = coord[m] + leaf_coord[i] * factor if factor > 1 else coord[m] + leaf_coord[i]
        mult[m] = factor * s
    coord_t = tuple(coord)
    ok = z3.And(*_domain(layout, coord_t), apply_layout(layout, coord_t) == x, x >= 0)
    return coord_t, ok


def domain(layout: Any, coord: tuple[Any, ...]) -> list[Any]:
    """The conditions that `coord` (one term per top-level mode) lies in the domain of `layout` (of its offset
    layout, for a swizzled one)."""
    return _domain(layout.outer if isinstance(layout, ComposedLayout) else layout, coord)


def _domain(layout: Layout, coord: tuple[Any, ...]) -> list[Any]:
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    from argus.layout.int_tuple import product

    return [in_range(c, 0, product(s)) for c, s in zip(coord, shape, strict=True)]


def check(solver: z3.Solver) -> Any:
    return solver.check()


def model_int(model: Any, term: Any) -> int:
    v = model.eval(val(term), model_completion=True)
    return v.as_signed_long()


def model_bool(model: Any, term: Any) -> bool:
    if isinstance(term, bool):
        return term
    return z3.is_true(model.eval(term, model_completion=True))
