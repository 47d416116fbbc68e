"""The tile-order lemma: a store's tile coordinates, computed from one *tile number* by divisions by problem sizes
(`T.tile_order`'s grouped, row- and column-major orders), never give one tile for two tile numbers.

The exactly-once check of an output (`checks/once.py`) asks whether two store instances (two blocks, or two
iterations of a persistent loop) write one element. Asked directly, Z3 must see through the tile order's divisions
by symbolic sizes (bit-vector dividers of the block and loop indices), and it does not within any useful budget. The
question splits in two:

* **The lemma, once per store site.** The window origins of the dimensions that divide by a size are functions of a
  tile number ``t`` (an expression of the block and loop indices that itself divides by no size: ``bx + it *
  BLOCKS``) and of the sizes alone. Stated over a free ``τ`` for ``t``: for all sizes the kernel allows and all
  ``τ1 != τ2``, both non-negative and both satisfying the store's branch conditions that read only ``τ`` (the
  ``t < tiles`` guard of a persistent loop), the two windows share no element of the tensor in those dimensions.
  It is proved over the integers, with every quotient and remainder a fresh integer bound by its definition
  (``a == q * b + r``, ``0 <= r < b`` for a positive divisor): no block, loop or thread index, no bit-vector divider;
  Z3's nonlinear arithmetic decides it in a fraction of a second for the library's orders.
* **The query, per pair of store instances, over tile numbers.** By the lemma, two instances that write one element
  have equal tile numbers, so "two instances write one element" becomes "two distinct instances have one tile number
  (and overlap in the other dimensions)", linear in the block and loop indices.

**Orders over data (an expert's tiles).** The MoE grouped kernels place tile number ``u`` through data: the expert
``g`` whose cumulative row-tile count ``tiles[g]`` first exceeds ``t = u // tiles_n`` (a binary search, one
``T.let`` per step), then the grouped order over that expert's ``tiles[g] - tiles[g-1]`` row tiles, rows from
``offs[g-1]``, bounded by ``offs[g]``. Stated in one query, the search's data and the order's divisions by a
data-dependent count are not decided. `select` abstracts the *selector* (the smallest expression of the tile number
that reads data and leaves every other read at an index of the sizes and the selector: ``g``) by a free value, and
the lemma is proved in three parts, each over the kernel's own expressions:

1. *The selector's facts*, per tile number (`_Lemma.selector_facts`): guesses (`candidates`: each element read at an
   index inside its tensor; each argument of the search against each term of the data the windows read) proved
   together, with the selector defined as the search the site computes and the data as the kernel declares it
   (``T.assume_values``, instantiated on the element terms, as in `argus.verify.values`); a guess a model falsifies
   is dropped (Houdini). For the library: ``0 <= g < E``, ``tiles[g-1] <= t < tiles[g]``.
2. *The pair with one selector* (two tile numbers of one expert): the tile order over the expert's count, with the
   facts of (1) for each number, as for sizes.
3. *The pair with two selectors* (different experts): linear, the windows' bounds and the declared order of the data
   (``offs[g_a] <= offs[g_b - 1]``) keep them apart.

(2) and (3) are the two cases of one pair query (``g_a == g_b`` and ``g_a != g_b``), both unsat for a proof. A
selector that is a free value with proved facts over-approximates the search: a proof holds for the kernel; a model
does not (the caller pins its sizes and tile numbers on its exact encoding for a witness).

The integers stand for the verifier's 32-bit values under its stated bound (problem sizes up to 2^20, every
intermediate value below 2^30, `docs/verify.md` §7): there the two agree. Where no tile number is found, or the lemma
is not proved (unknown, or false: a tile order that maps two numbers to one tile), the caller falls back to the direct
query and its witness search; the lemma is never assumed.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

import z3

from argus.ir.expr import (
    FOLD,
    BinaryOp,
    BinOp,
    Const,
    Element,
    Expr,
    Select,
    Var,
    VarKind,
    binary,
    cdiv,
    elements,
    free_vars,
    maximum,
)
from argus.ir.nodes import Buffer, Kernel, TileRef
from argus.ir.types import boolean
from argus.verify import smt
from argus.verify.program import Site
from argus.verify.values import applications, instances

#: Z3's budget (deterministic units) for one lemma; the library's orders take well under a tenth of it.
LEMMA_RLIMIT = 5_000_000


@dataclass(frozen=True)
class Split:
    """A store site's window origins as a function of its tile number (and, where they read tensor data through an
    index computed from it, of a *selector*: `select`)."""

    number: Expr  # the tile number t, as the site computes it from its block and loop indices
    tau: Var  # the free tile number standing for t
    origins: dict[int, Expr | int]  # dimension -> its origin with tau for t, where that reads only tau and the sizes
    guards: tuple[tuple[Expr, bool], ...]  # the site's branch conditions that read only tau and the sizes
    bounds: dict[int, Expr | int] = field(default_factory=dict)  # dimension -> the window's bound there (TileRef.bound)
    selector: Var | None = None  # a free value standing for `chosen` (an expert found by a search over the data)
    chosen: Expr | None = None  # the selector as the site computes it from tau (and the data it searches)
    facts: tuple[Expr, ...] = ()  # facts of tau and the selector, each proved for the site (`selector_facts`)


def hard_dims(ref: TileRef) -> set[int]:
    """The dimensions whose window origin divides by a non-constant (a problem size, a tile count)."""
    return {d for d, o in enumerate(ref.origin) if _hard(o)}


def _hard(e: Any) -> bool:
    """Whether `e` divides (quotient or remainder) by a non-constant."""
    if isinstance(e, BinOp):
        if e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD) and not isinstance(e.rhs, Const):
            return True
        return _hard(e.lhs) or _hard(e.rhs)
    if isinstance(e, Select):
        return _hard(e.cond) or _hard(e.if_true) or _hard(e.if_false)
    if isinstance(e, Element):
        return any(_hard(i) for i in e.index)
    return False


class _Keys:
    """Structural keys of expressions (the IR compares by identity; one subexpression built twice is one here)."""

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.keep: list[Any] = []  # keeps the keyed nodes alive, so that their ids stay theirs

    def __call__(self, e: Any) -> Any:
        if not isinstance(e, Expr):
            return ("int", e)
        k = self.memo.get(id(e))
        if k is None:
            if isinstance(e, Const):
                k = ("const", e.value)
            elif isinstance(e, Var):
                k = ("var", id(e))
            elif isinstance(e, BinOp):
                k = ("bin", e.op, self(e.lhs), self(e.rhs))
            elif isinstance(e, Select):
                k = ("sel", self(e.cond), self(e.if_true), self(e.if_false))
            elif isinstance(e, Element):
                k = ("element", id(e.buffer), *(self(i) for i in e.index))
            else:
                k = ("other", id(e))
            self.memo[id(e)] = k
            self.keep.append(e)
        return k


def _subexprs(e: Any, out: dict[int, Expr]) -> None:
    if not isinstance(e, Expr) or id(e) in out:
        return
    out[id(e)] = e
    if isinstance(e, BinOp):
        _subexprs(e.lhs, out)
        _subexprs(e.rhs, out)
    elif isinstance(e, Select):
        for c in (e.cond, e.if_true, e.if_false):
            _subexprs(c, out)
    elif isinstance(e, Element):
        for i in e.index:
            _subexprs(i, out)


def _children(e: Any) -> tuple[Any, ...]:
    if isinstance(e, BinOp):
        return (e.lhs, e.rhs)
    if isinstance(e, Select):
        return (e.cond, e.if_true, e.if_false)
    if isinstance(e, Element):
        return tuple(e.index)
    return ()


def _size(e: Any, memo: dict[int, int]) -> int:
    if not isinstance(e, Expr):
        return 1
    if id(e) not in memo:
        memo[id(e)] = 1 + sum(_size(c, memo) for c in _children(e))
    return memo[id(e)]


def _replace(e: Any, key: Any, by: Var, keys: _Keys, memo: dict[int, Any]) -> Any:
    """`e` with every subexpression whose structural key is `key` replaced by `by`."""
    if not isinstance(e, Expr):
        return e
    if id(e) in memo:
        return memo[id(e)]
    if keys(e) == key:
        out: Any = by
    elif isinstance(e, BinOp):
        lhs, rhs = _replace(e.lhs, key, by, keys, memo), _replace(e.rhs, key, by, keys, memo)
        out = e if lhs is e.lhs and rhs is e.rhs else BinOp(e.op, lhs, rhs, e.dtype)
    elif isinstance(e, Select):
        parts = [_replace(c, key, by, keys, memo) for c in (e.cond, e.if_true, e.if_false)]
        same = all(p is c for p, c in zip(parts, (e.cond, e.if_true, e.if_false), strict=True))
        out = e if same else Select(*parts, dtype=e.dtype)
    elif isinstance(e, Element):
        index = tuple(_replace(i, key, by, keys, memo) for i in e.index)
        out = e if all(a is b for a, b in zip(index, e.index, strict=True)) else Element(e.buffer, index, e.dtype)
    else:
        out = e
    memo[id(e)] = out
    return out


def split(kernel: Kernel, site: Site, ref: TileRef, number: Expr | None = None) -> Split | None:
    """The site's tile number and the origins that are functions of it and the sizes alone, or None when no
    expression of the block and loop indices that divides by no size leaves every dividing origin (`hard_dims`) free
    of the indices. The smallest such expression is taken: it leaves the most origins and branch conditions free.
    `number`: that expression only (a group barrier's counter, `checks/global_reads.py`), where it is one of the
    dividing origins' subexpressions."""
    indices = set(kernel.block_vars) | {lp.var for lp in site.loops}
    allowed = set(kernel.shape_vars)
    hard = hard_dims(ref)
    if not hard:
        return None
    found: dict[int, Expr] = {}
    for d in hard:
        _subexprs(ref.origin[d], found)
    keys = _Keys()
    sizes_memo: dict[int, int] = {}
    candidates: dict[Any, Expr] = {}
    for e in found.values():
        if free_vars(e) & indices and not _hard(e):
            candidates.setdefault(keys(e), e)
    if number is not None:
        candidates = {k: e for k, e in candidates.items() if k == keys(number)}
    tau = Var("tile_number", VarKind.LOOP)
    free = allowed | {tau}
    for key, number in sorted(candidates.items(), key=lambda kv: _size(kv[1], sizes_memo)):
        memo: dict[int, Any] = {}
        origins = {d: _replace(o, key, tau, keys, memo) for d, o in enumerate(ref.origin)}
        origins = {d: o for d, o in origins.items() if not isinstance(o, Expr) or free_vars(o) <= free}
        if not hard <= set(origins):
            continue
        guards = []
        for branch, taken in site.ifs:
            cond = _replace(branch.cond, key, tau, keys, memo)
            if isinstance(cond, Expr) and free_vars(cond) <= free:
                guards.append((cond, taken))
        bounds: dict[int, Expr | int] = {}
        for d, b in enumerate(ref.bound or ()):
            got = _replace(b, key, tau, keys, memo) if b is not None else None
            if got is not None and (not isinstance(got, Expr) or free_vars(got) <= free):
                bounds[d] = got
        out = Split(number, tau, origins, tuple(guards), bounds)
        if not any(_searched(e, tau) for e in _exprs(out, hard)):
            return out
        return select(out, hard, keys)
    return None


def _exprs(split: Split, dims: set[int]) -> list[Any]:
    """The split's expressions that the lemma reads: the origins of `dims`, the bounds, the guards."""
    return [split.origins[d] for d in dims] + list(split.bounds.values()) + [c for c, _ in split.guards]


def _searched(e: Any, tau: Var) -> bool:
    """Whether `e` reads tensor data at an index computed from the tile number `tau`."""
    return any(tau in free_vars(i) for read in elements(e) for i in read.index)


def select(split: Split, dims: set[int], keys: _Keys) -> Split | None:
    """The split with its *selector* abstracted, or None: where the origins (the bounds, the guards) read tensor data at
    an index computed from the tile number (an expert ``g`` found by a search over the cumulative tile counts, and
    ``offs[g]``), the smallest expression of the tile number that reads data and leaves every remaining read at an
    index of the sizes and the selector alone (``g``) becomes a free value. What the lemma may use of it are the facts
    `selector_facts` proves for the expression the site computes; the rest of the search is not looked at again."""
    exprs = _exprs(split, dims)
    tau = split.tau
    found: dict[int, Expr] = {}
    for read in (r for e in exprs for r in elements(e)):
        for i in read.index:
            _subexprs(i, found)
    sizes_memo: dict[int, int] = {}
    candidates = sorted(
        (e for e in found.values() if tau in free_vars(e) and elements(e)), key=lambda e: _size(e, sizes_memo)
    )
    gamma = Var("selector", VarKind.LOOP)
    for chosen in candidates:
        memo: dict[int, Any] = {}
        key = keys(chosen)
        got = [_replace(e, key, gamma, keys, memo) for e in exprs]
        reads = [r for e in got for r in elements(e)]
        if any(tau in free_vars(i) or elements(i) for r in reads for i in r.index):
            continue
        return dataclasses.replace(
            split,
            origins={d: _replace(o, key, gamma, keys, memo) for d, o in split.origins.items()},
            guards=tuple((_replace(c, key, gamma, keys, memo), taken) for c, taken in split.guards),
            bounds={d: _replace(b, key, gamma, keys, memo) for d, b in split.bounds.items()},
            selector=gamma,
            chosen=chosen,
        )
    return None


# --- the integer encoding ------------------------------------------------------------------------------------------


class _Ints:
    """IR expressions as Z3 integers; each quotient and remainder a fresh integer with its definition (`cons`); each
    element of tensor data (`Element`) an uninterpreted function of its index, one per tensor (`data`, shared by the
    encoders of one query)."""

    def __init__(
        self,
        env: dict[Var, Any],
        prefix: str,
        shared: _Ints | None = None,
        local: frozenset[Var] = frozenset(),
        uf: Any = None,
        data: dict[int, tuple[Any, Any]] | None = None,
        fold: bool = False,
    ) -> None:
        self.env = env
        # a quotient or remainder of two constants as its value (`_coefficients`: a tile number's digits, ``bx // 2``
        # and ``bx % 2`` at bx = 1); elsewhere each one a term of its own, as the queries' facts are stated
        self.fold = fold
        self.uf = uf  # when given, the product of two non-constants is this uninterpreted function of them
        self.ac = shared.ac if shared is not None else False  # products with a uf in one order and grouping
        self.shared = shared  # encodes what does not read `local` (the sizes' terms, one variable for both copies)
        self.local = local
        self.data: dict[int, tuple[Any, Any]] = (shared.data if shared is not None else {}) if data is None else data
        self.cons: list[Any] = []
        self.prefix = prefix
        self.memo: dict[int, Any] = {}
        self.keep: list[Any] = []
        self.count = itertools.count()

    def int_(self, e: Any) -> Any:
        t = self(e)
        if z3.is_bool(t):
            return z3.If(t, z3.IntVal(1), z3.IntVal(0))
        return t

    def bool_(self, e: Any) -> Any:
        t = self(e)
        return t if z3.is_bool(t) else t != 0

    def __call__(self, e: Any) -> Any:
        if isinstance(e, bool):
            return z3.BoolVal(e)
        if isinstance(e, int):
            return z3.IntVal(e)
        if id(e) in self.memo:
            return self.memo[id(e)]
        if self.shared is not None and isinstance(e, Expr) and not free_vars(e) & self.local:
            return self.shared(e)
        out = self._encode(e)
        self.memo[id(e)] = out
        self.keep.append(e)
        return out

    def _encode(self, e: Any) -> Any:
        if isinstance(e, Const):
            if isinstance(e.value, bool):
                return z3.BoolVal(e.value)
            if isinstance(e.value, int):
                return z3.IntVal(e.value)
            raise smt.EncodingError(f"the floating-point constant {e.value} has no integer encoding")
        if isinstance(e, Var):
            if e not in self.env:
                raise smt.EncodingError(f"variable {e.name} is not bound in the tile-order lemma")
            return self.env[e]
        if isinstance(e, Select):
            c = self.bool_(e.cond)
            x, y = self(e.if_true), self(e.if_false)
            if z3.is_bool(x) != z3.is_bool(y):
                x, y = self.int_(e.if_true), self.int_(e.if_false)
            return z3.If(c, x, y)
        if isinstance(e, Element):
            got = self.data.get(id(e.buffer))
            if got is None:
                sorts = [z3.IntSort()] * (len(e.index) + 1)
                got = (e.buffer, z3.Function(f"data.{e.buffer.name}", *sorts))
                self.data[id(e.buffer)] = got
            return got[1](*[self.int_(i) for i in e.index])
        if not isinstance(e, BinOp):
            raise smt.EncodingError(f"cannot encode {e!r} in the tile-order lemma")
        op = e.op
        if op in (BinaryOp.AND, BinaryOp.OR):
            a, b = self(e.lhs), self(e.rhs)
            if z3.is_bool(a) or z3.is_bool(b):
                return (z3.And if op == BinaryOp.AND else z3.Or)(self.bool_(e.lhs), self.bool_(e.rhs))
            raise smt.EncodingError("bitwise and/or in the tile-order lemma")
        if op in (BinaryOp.EQ, BinaryOp.NE):
            a, b = self(e.lhs), self(e.rhs)
            if z3.is_bool(a) != z3.is_bool(b):
                a, b = self.int_(e.lhs), self.int_(e.rhs)
            return a == b if op == BinaryOp.EQ else a != b
        a, b = self.int_(e.lhs), self.int_(e.rhs)
        if op == BinaryOp.ADD:
            return a + b
        if op == BinaryOp.SUB:
            return a - b
        if op == BinaryOp.MUL:
            return self._mul(a, b)
        if op in (BinaryOp.FLOORDIV, BinaryOp.MOD):
            q, r = self._divmod(e, a, b)
            return q if op == BinaryOp.FLOORDIV else r
        if op == BinaryOp.MIN:
            return z3.If(a <= b, a, b)
        if op == BinaryOp.MAX:
            return z3.If(a >= b, a, b)
        if op == BinaryOp.LT:
            return a < b
        if op == BinaryOp.LE:
            return a <= b
        raise smt.EncodingError(f"operator {op} in the tile-order lemma")

    def _mul(self, a: Any, b: Any) -> Any:
        if self.uf is None or z3.is_int_value(a) or z3.is_int_value(b):
            return a * b
        if not self.ac:
            return self.uf(a, b)
        # one term per product of the same factor terms in any order and grouping (multiplication is associative and
        # commutative: ``tiles_n * tiles_m`` and ``(L * tiles_m) * tiles_n``, as the kernel wrote them). Factors
        # that are equal but different terms no longer line up by position (congruence may see less): `cover`'s
        # queries only, where the products to meet are built of the same terms
        factors = sorted(self._factors(a) + self._factors(b), key=str)
        out = factors[0]
        for f in factors[1:]:
            out = self.uf(out, f)
        return out

    def _factors(self, t: Any) -> list[Any]:
        if z3.is_app(t) and t.decl() == self.uf:
            return self._factors(t.arg(0)) + self._factors(t.arg(1))
        return [t]

    def _divmod(self, e: BinOp, a: Any, b: Any) -> tuple[Any, Any]:
        # two constants, where folding is asked for: Python's floor division
        if self.fold and z3.is_int_value(a) and z3.is_int_value(b) and b.as_long() != 0:
            q, r = divmod(a.as_long(), b.as_long())
            return z3.IntVal(q), z3.IntVal(r)
        # one pair per (dividend, divisor) as terms: ``t // d`` and ``t % d`` share their quotient and remainder
        key = ("divmod", a.get_id(), b.get_id())
        got = self.memo.get(key)  # type: ignore[call-overload]
        if got is None:
            n = next(self.count)
            q, r = z3.Int(f"{self.prefix}.q{n}"), z3.Int(f"{self.prefix}.r{n}")
            # Python's floor division: the remainder takes the divisor's sign; by zero nothing is said of q
            self.cons += [
                a == self._mul(q, b) + r,
                z3.Implies(b > 0, z3.And(r >= 0, r < b)),
                z3.Implies(b < 0, z3.And(r <= 0, r > b)),
            ]
            got = (q, r)
            self.memo[key] = got  # type: ignore[index]
        return got


#: Z3's budget for one fact about one tile number (a clamp that never clamps), in nonlinear arithmetic; the library's
#: hardest (the grouped order's last group: ``within // rows < tiles_n``) takes under 1M.
FACT_RLIMIT = 5_000_000
#: The budget of the same fact tried first with products as free functions (linear consequences of known facts).
QUICK_RLIMIT = 300_000
#: The budget of one round of the selector's facts (`_Lemma.selector_facts`): the search, its data and the candidates.
SELECT_RLIMIT = 20_000_000


def allows(kernel: Kernel, env: dict[Var, int]) -> bool:
    """Whether integer sizes `env` satisfy every assumption of `kernel` (False where one cannot be evaluated)."""
    try:
        return all(bool(_value(a, env, {})) for a in kernel.assumptions)
    except (ZeroDivisionError, KeyError, TypeError):
        return False


def _value(e: Any, env: dict[Any, Any], memo: dict[int, Any]) -> Any:
    """`e` at integer values of its variables (shared subterms once); a tensor element (`Element`) read from the
    array `env` holds under its buffer, where it holds one; KeyError for an operator it does not know, a tensor it
    has no data of, or an index outside the data."""
    if not isinstance(e, Expr):
        return e
    if id(e) in memo:
        return memo[id(e)]
    if isinstance(e, Const):
        out = e.value
    elif isinstance(e, Var):
        out = env[e]
    elif isinstance(e, BinOp):
        out = FOLD[e.op](_value(e.lhs, env, memo), _value(e.rhs, env, memo))
    elif isinstance(e, Select):
        out = _value(e.if_true if _value(e.cond, env, memo) else e.if_false, env, memo)
    elif isinstance(e, Element) and e.buffer in env:
        data = env[e.buffer]
        index = tuple(int(_value(i, env, memo)) for i in e.index)
        if any(not 0 <= i < n for i, n in zip(index, data.shape, strict=True)):
            raise KeyError(f"{e.buffer.name}{list(index)} is outside its data")
        out = int(data[index])
    else:
        raise KeyError(type(e).__name__)
    memo[id(e)] = out
    return out


class _Lemma:
    """The sizes (integers, with the kernel's bounds and assumptions) and one site's tile number, for the facts about
    one tile number that the lemma is proved from."""

    def __init__(self, kernel: Kernel, uf: Any = None) -> None:
        self.uf = uf
        self.kernel = kernel
        self.quick: _Lemma | None = None
        self.sizes = {v: z3.Int(v.name) for v in kernel.shape_vars}
        self.ints = _Ints(dict(self.sizes), "lemma", uf=uf)
        self.cons: list[Any] = []
        for t in self.sizes.values():
            self.cons += [t >= 1, t <= smt.MAX_EXTENT]
        for assumption in kernel.assumptions:
            try:
                self.cons.append(self.ints.bool_(assumption))
            except smt.EncodingError:
                pass  # an assumption the integers do not express is left out: a weaker hypothesis

    def number(self, split: Split, name: str) -> tuple[Any, _Ints, list[Any]]:
        """A tile number of `split` as an integer, its encoder, and its hypotheses (non-negative, the guards, the
        selector's proved facts)."""
        t = z3.Int(f"tile_number.{name}")
        env = {**self.sizes, split.tau: t}
        local = {split.tau}
        if split.selector is not None:
            env[split.selector] = z3.Int(f"selector.{name}")
            local.add(split.selector)
        enc = _Ints(env, f"lemma.{name}", self.ints, frozenset(local), self.uf)
        hyp = [t >= 0]
        for cond, taken in split.guards:
            c = enc.bool_(cond)
            hyp.append(c if taken else z3.Not(c))
        hyp += [enc.bool_(f) for f in split.facts]
        return t, enc, hyp

    def closed(self, terms: list[Any], *encs: _Ints, mentioned: list[Any] | None = None) -> list[Any]:
        """`terms` with the definitions of their quotients and remainders and the instances of what the kernel
        declares of its tensors' data (`T.assume_values`) on the elements they (and `mentioned`, terms not asserted)
        read, as `argus.verify.values` does for the bit-vector queries: the range per element, the order per pair of
        elements of one tensor."""
        ranges = []
        for va in self.kernel.value_assumptions:
            got = self.ints.data.get(id(va.tensor))
            if got is not None:
                lo = None if va.lo is None else self.ints.int_(va.lo)
                hi = None if va.hi is None else self.ints.int_(va.hi)
                dims = [self.ints.int_(d) for d in va.tensor.shape]
                ranges.append((va, got[1], lo, hi, dims))
        body = [*terms, *self.ints.cons, *(c for enc in encs for c in enc.cons)]
        out = list(body)
        for va, function, lo, hi, dims in ranges:
            apps = applications(function, [*body, *(mentioned or ())])

            def inside(app: Any, dims: list[Any] = dims) -> Any:
                return z3.And(*[z3.And(app.arg(i) >= 0, app.arg(i) < n) for i, n in enumerate(dims)])

            out += instances(apps, lo, hi, va.nondecreasing, inside)
        return out

    def refuted(self, split: Split, cond: Expr) -> bool:
        """Whether `cond` is false at one of a few sample sizes and tile numbers that the kernel and the site allow
        (a quick answer for a ``min`` that picks either side, such as the last group's row count)."""
        names = list(self.sizes)
        for values in itertools.product((1, 129, 1000, 4097), repeat=min(len(names), 3)):
            env: dict[Var, Any] = {v: values[i % len(values)] for i, v in enumerate(names)}
            try:
                if not all(bool(_value(a, env, {})) for a in self.kernel.assumptions):
                    continue
                for t in (0, 1, 9, 100, 1000):
                    env[split.tau] = t
                    memo: dict[int, Any] = {}
                    if not all(bool(_value(c, env, memo)) == taken for c, taken in split.guards):
                        continue
                    if not bool(_value(cond, env, memo)):
                        return True
            except (ZeroDivisionError, KeyError, TypeError):
                continue
        return False

    def holds(self, split: Split, cond: Expr, known: list[Expr]) -> bool:
        """Whether `cond` (of the split's tile number and the sizes) holds for every tile number the site has, given
        the facts already proved of it (`known`)."""
        if self.refuted(split, cond):
            return False
        if self.uf is None:
            # first with products as free functions (what follows from the known facts linearly, at once)
            if self.quick is None:
                self.quick = _Lemma(self.kernel, z3.Function("lemma.mul", z3.IntSort(), z3.IntSort(), z3.IntSort()))
            if self.quick.proves(split, cond, known, QUICK_RLIMIT):
                return True
        return self.proves(split, cond, known, FACT_RLIMIT)

    def proves(self, split: Split, cond: Expr, known: list[Expr], rlimit: int) -> bool:
        _, enc, hyp = self.number(split, "fact")
        c = enc.bool_(cond)
        facts = [enc.bool_(k) for k in known]
        s = z3.Solver()
        s.set("rlimit", rlimit)
        s.add(*self.closed([*self.cons, *hyp, *facts, z3.Not(c)], enc))
        return s.check() == z3.unsat

    def selector_facts(self, split: Split, candidates: list[Expr]) -> tuple[Expr, ...]:
        """The `candidates` (conditions of the tile number and the selector) that hold for every tile number of the
        site with the selector the site computes (`Split.chosen`, the search itself, over the data as the kernel
        declares it): a greatest subset proved together (Houdini: a model of the negated conjunction drops the
        candidates it falsifies, until the rest is proved)."""
        if split.selector is None or split.chosen is None:
            return ()
        _, enc, hyp = self.number(split, "select")
        definition = enc.env[split.selector] == enc.int_(split.chosen)
        conds = [enc.bool_(c) for c in candidates]
        s = z3.Solver()
        s.set("rlimit", SELECT_RLIMIT)
        s.add(*self.closed([*self.cons, *hyp, definition], enc, mentioned=conds))
        alive = list(range(len(conds)))
        while alive:
            s.push()
            s.add(z3.Not(z3.And(*[conds[i] for i in alive])))
            r = s.check()
            if r == z3.unsat:
                s.pop()
                break
            if r != z3.sat:
                s.pop()
                return ()
            m = s.model()
            keep = [i for i in alive if z3.is_true(m.eval(conds[i], model_completion=True))]
            s.pop()
            if len(keep) == len(alive):  # cannot happen (the model falsifies one); stop rather than loop
                return ()
            alive = keep
        return tuple(candidates[i] for i in alive)

    def settle(self, split: Split, e: Any, memo: dict[int, Any], known: list[Expr]) -> Any:
        """`e` with every ``min``/``max`` that always picks one side replaced by that side (a clamp of a tile
        coordinate into the grid that never clamps): equal to `e` for every tile number of the site. Inner terms
        first, and each division of a non-negative term by a positive one adds to `known` that its quotient and
        remainder are non-negative and the quotient at most the dividend (facts the outer terms are proved with)."""
        if not isinstance(e, Expr) or id(e) in memo:
            return memo.get(id(e), e)
        out: Any = e
        if isinstance(e, BinOp):
            lhs, rhs = self.settle(split, e.lhs, memo, known), self.settle(split, e.rhs, memo, known)
            out = e if lhs is e.lhs and rhs is e.rhs else BinOp(e.op, lhs, rhs, e.dtype)
            reads = split.tau in free_vars(out)
            if e.op in (BinaryOp.MIN, BinaryOp.MAX) and reads:
                smaller = e.op == BinaryOp.MIN
                if self.holds(split, BinOp(BinaryOp.LE, lhs, rhs), known):
                    out = lhs if smaller else rhs
                elif self.holds(split, BinOp(BinaryOp.LE, rhs, lhs), known):
                    out = rhs if smaller else lhs
            elif e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD) and reads and not isinstance(rhs, Const):
                positive = BinOp(BinaryOp.LT, Const(0), rhs)
                if self.holds(split, positive, known) and self.holds(split, BinOp(BinaryOp.LE, Const(0), lhs), known):
                    q, r = BinOp(BinaryOp.FLOORDIV, lhs, rhs), BinOp(BinaryOp.MOD, lhs, rhs)
                    zero = Const(0)
                    known += [positive, BinOp(BinaryOp.LE, zero, q), BinOp(BinaryOp.LE, q, lhs)]
                    known += [BinOp(BinaryOp.LE, zero, r), BinOp(BinaryOp.LE, r, lhs)]
        memo[id(e)] = out
        return out


def cancel_multiples(lemma: _Lemma, split: Split, e: Any, memo: dict[int, Any], keys: _Keys | None = None) -> Any:
    """`e` with each quotient and remainder of a multiple of the divisor taken off (``(a - b * c) // c`` -> ``a // c
    - b``, ``(a - b * c) % c`` -> ``a % c``; a tile number made local to its segment, ``u - first * tiles_n``, then
    divided by the column count ``tiles_n``) where ``c > 0``, ``b >= 0`` and ``a - b * c >= 0`` hold for every tile
    number of the site (then floor and truncating division agree, and the two sides are equal). The solver handles
    the right side linearly in ``a // c``; the left side's product of two non-constants it did not decide."""
    keys = keys or _Keys()
    if not isinstance(e, Expr) or id(e) in memo:
        return memo.get(id(e), e)
    out: Any = e
    if isinstance(e, BinOp):
        lhs, rhs = cancel_multiples(lemma, split, e.lhs, memo, keys), cancel_multiples(lemma, split, e.rhs, memo, keys)
        out = e if lhs is e.lhs and rhs is e.rhs else BinOp(e.op, lhs, rhs, e.dtype)
        multiple = _multiple_taken(lhs, rhs, keys) if e.op in (BinaryOp.FLOORDIV, BinaryOp.MOD) else None
        if multiple is not None and not isinstance(rhs, Const):
            a, b = multiple
            zero = Const(0)
            conds = (BinOp(BinaryOp.LT, zero, rhs, boolean), BinOp(BinaryOp.LE, zero, b, boolean),
                     BinOp(BinaryOp.LE, zero, lhs, boolean))  # fmt: skip
            if all(lemma.holds(split, c, []) for c in conds):
                quotient = BinOp(e.op, a, rhs, e.dtype)
                out = BinOp(BinaryOp.SUB, quotient, b, e.dtype) if e.op == BinaryOp.FLOORDIV else quotient
    elif isinstance(e, Select):
        parts = [cancel_multiples(lemma, split, x, memo, keys) for x in (e.cond, e.if_true, e.if_false)]
        same = all(x is y for x, y in zip(parts, (e.cond, e.if_true, e.if_false), strict=True))
        out = e if same else Select(*parts, dtype=e.dtype)
    memo[id(e)] = out
    return out


def _multiple_taken(lhs: Any, c: Any, keys: _Keys) -> tuple[Expr, Expr] | None:
    """(a, b) where `lhs` is ``a - b * c`` or ``a - c * b``; else None."""
    if not (isinstance(lhs, BinOp) and lhs.op == BinaryOp.SUB and isinstance(lhs.rhs, BinOp)):
        return None
    product = lhs.rhs
    if product.op != BinaryOp.MUL:
        return None
    if keys(product.rhs) == keys(c):
        return lhs.lhs, product.lhs
    if keys(product.lhs) == keys(c):
        return lhs.lhs, product.rhs
    return None


def candidates(split: Split, dims: set[int]) -> list[Expr]:
    """What `selector_facts` tries to prove of a split with a selector: every element read at an index inside its
    tensor (the declared order then applies to it), and each *argument* of the search (an expression of the tile
    number that reads no data, ``t = u // tiles_n``) against each term of the data that the origins, bounds and
    guards read (``tiles[g - 1] <= t``, ``t < tiles[g]``). Only guesses: each is proved or dropped."""
    if split.chosen is None:
        return []
    keys = _Keys()
    out: dict[Any, Expr] = {}

    def add(e: Expr) -> None:
        out.setdefault(keys(e), e)

    exprs = _exprs(split, dims)
    for read in (r for e in exprs for r in elements(e)):
        for i, n in zip(read.index, read.buffer.shape, strict=True):
            add(BinOp(BinaryOp.LE, Const(0), i, boolean))
            add(BinOp(BinaryOp.LT, i, n if isinstance(n, Expr) else Const(n), boolean))
    arguments: dict[Any, Expr] = {}
    terms: dict[Any, Expr] = {}
    seen: set[int] = set()

    def walk(e: Any, into: dict[Any, Expr], arguments_only: bool) -> None:
        if not isinstance(e, Expr) or id(e) in seen:
            return
        seen.add(id(e))
        reads, moves = bool(elements(e)), split.tau in free_vars(e)
        if arguments_only and moves and not reads:
            into.setdefault(keys(e), e)
            return
        if not arguments_only and reads and not moves and e.dtype != boolean:
            into.setdefault(keys(e), e)
        for c in _children(e):
            walk(c, into, arguments_only)

    walk(split.chosen, arguments, True)
    seen.clear()
    for e in exprs:
        walk(e, terms, False)
    # the searched tensors at the selector and the one before it (the segment's cumulative bounds ``tiles[g - 1] <=
    # t < tiles[g]``), also where the origins read neither (a row-major order does not read the segment's count)
    gamma = split.selector
    for read in elements(split.chosen):
        if len(read.index) == 1 and gamma is not None:
            before = Select(BinOp(BinaryOp.LT, Const(0), gamma, boolean), Element(read.buffer, (maximum(gamma - 1, 0),),
                            read.dtype), Const(0), read.dtype)  # fmt: skip
            for term in (Element(read.buffer, (gamma,), read.dtype), before):
                terms.setdefault(keys(term), term)
    for x in arguments.values():
        for y in terms.values():
            add(BinOp(BinaryOp.LE, y, x, boolean))
            add(BinOp(BinaryOp.LT, x, y, boolean))
    return list(out.values())


@dataclass(frozen=True)
class Lemma:
    """The tile-order lemma's answer for a pair of store sites: proved, or why not; when the pair query had a model,
    its sizes and two tile numbers (where the caller looks for a witness on its exact encoding: with a selector the
    model is over free experts and proves nothing by itself)."""

    proved: bool
    why: str
    sizes: dict[Var, int] | None = None
    numbers: tuple[int, int] | None = None


def prove(
    kernel: Kernel,
    buffer: Buffer,
    dims: list[int],
    a: tuple[Split, TileRef],
    b: tuple[Split, TileRef],
    limits: dict[int, Expr] | None = None,
) -> Lemma:
    """Whether, for all sizes the kernel allows, two distinct tile numbers of the two sites (`a`, `b`) never give
    windows that share an element of `buffer` in dimensions `dims` (whose origins both splits give; below their
    bounds, where the windows have one); with a reason when not proved. `limits`: a dimension's elements counted up
    to that limit instead of the tensor's extent (a cover's rounded grid, `Cover.rounded`: windows past the tensor's
    end kept apart too).

    First the facts about one tile number, in nonlinear integer arithmetic: each clamp that never clamps is dropped
    (``min(max(m, 0), tiles_m - 1)`` is ``m`` for every tile number the site has), and each division of a
    non-negative term by a positive one gets its bounds (`_Lemma.settle`).
    Then the pair, with those facts and every product of two non-constants an uninterpreted function (an
    over-approximation: a proof with it is a proof with multiplication): what is left is linear arithmetic and
    congruence (equal quotients and divisors give equal products).

    With selectors (`select`), before all of that the selector's facts (`_Lemma.selector_facts`), which every fact
    and the pair then assume per tile number; and the pair is two queries, one selector for both tile numbers and
    two different ones (module docstring)."""
    (sa, ra), (sb, rb) = a, b
    try:
        facts = _Lemma(kernel)
        if sa.selector is not None or sb.selector is not None:
            # the selector's facts first (per tile number, the search with its data); then the pair over free selectors
            same = sb is sa
            sa = _with_facts(facts, sa, set(dims))
            sb = sa if same else _with_facts(facts, sb, set(dims))
        origins = []
        known: list[list[Expr]] = []
        for split in (sa, sb):
            if split is sa and sb is sa and origins:
                origins.append(origins[0])
                known.append(known[0])
                continue
            memo: dict[int, Any] = {}
            facts_of: list[Expr] = []
            got = {d: facts.settle(split, split.origins[d], memo, facts_of) for d in dims}
            origins.append(got)
            known.append(facts_of)
        lemma = _Lemma(kernel, z3.Function("lemma.mul", z3.IntSort(), z3.IntSort(), z3.IntSort()))
        t1, one, hyp1 = lemma.number(sa, "a")
        t2, two, hyp2 = lemma.number(sb, "b")
        cons = [*lemma.cons, *hyp1, *hyp2, t1 != t2]
        cons += [one.bool_(k) for k in known[0]] + [two.bool_(k) for k in known[1]]
        for d in dims:
            element = z3.Int(f"lemma.element.{d}")
            end = (limits or {}).get(d, buffer.shape[d])
            cons += [element >= 0, element < lemma.ints.int_(end)]
            for enc, got, split, ref in ((one, origins[0], sa, ra), (two, origins[1], sb, rb)):
                origin = enc.int_(got[d])
                cons += [element >= origin, element < origin + ref.extent[d]]
                if d in split.bounds:  # a bounded window (rows before an expert's end) holds no element past it
                    cons.append(element < enc.int_(split.bounds[d]))
        # with selectors (experts), two cases: one expert (its tile order, as for sizes) and two (their data apart)
        cases: list[tuple[str, list[Any]]] = [("", [])]
        if sa.selector is not None and sb.selector is not None:
            ga, gb = one.env[sa.selector], two.env[sb.selector]
            cases = [(" with one selector", [ga == gb]), (" with two selectors", [ga != gb])]
        queries = [(why, lemma.closed([*cons, *case], one, two)) for why, case in cases]
    except smt.EncodingError as err:
        return Lemma(False, f"the tile order could not be stated over the integers ({err})")
    for why, query in queries:
        s = z3.Solver()
        s.set("rlimit", LEMMA_RLIMIT)
        s.add(*query)
        r = s.check()
        if r == z3.sat:
            m = _small(s, [*lemma.sizes.values(), t1, t2])
            sizes = {v: m.eval(t, model_completion=True).as_long() for v, t in lemma.sizes.items()}
            numbers = (m.eval(t1, model_completion=True).as_long(), m.eval(t2, model_completion=True).as_long())
            values = ", ".join(f"{v.name}={n}" for v, n in sizes.items())
            return Lemma(
                False,
                f"not proved{why}; with products as free functions, tile numbers {numbers[0]} and {numbers[1]} may "
                f"give one tile at {values}",
                sizes,
                numbers,
            )
        if r != z3.unsat:
            return Lemma(False, f"not decided{why} within the solver's budget (Z3: {s.reason_unknown()})")
    return Lemma(True, "proved")


def _small(s: z3.Solver, terms: list[Any]) -> Any:
    """A model of the satisfiable `s` with small values of `terms` where there is one (a witness to read), else
    its model."""
    first = s.model()
    for bound in (64, 1024):
        s.push()
        s.add(*[t <= bound for t in terms])
        if s.check() == z3.sat:
            m = s.model()
            s.pop()
            return m
        s.pop()
    return first


def _with_facts(lemma: _Lemma, split: Split, dims: set[int]) -> Split:
    if split.selector is None:
        return split
    return dataclasses.replace(split, facts=lemma.selector_facts(split, candidates(split, dims)))


def one_number_only(
    kernel: Kernel,
    buffer: Buffer,
    dims: list[int],
    a: tuple[Site, TileRef, Split],
    b: tuple[Site, TileRef, Split],
    moving: list[Var],
    exact: bool = False,
) -> tuple[bool, str, dict[str, dict[Var, int]] | None]:
    """The query that follows the lemma, over the integers: no two distinct instances of the two store sites (two
    blocks, or one block in two iterations of the loops `moving` when the sites are one) have one tile number, both
    tile numbers non-negative, and windows that share an element in the dimensions outside the lemma's `dims`.
    Products of two non-constants are an uninterpreted function (an over-approximation: the tile number ``bx + it *
    BLOCKS`` is linear). True when proved; else the reason.

    With `exact`, a witness search instead: real multiplication, the windows meeting in every dimension; the values
    of the sizes and of each instance's block and loop indices when found (to be confirmed on the verifier's own
    encoding)."""
    (sa, ra, pa), (sb, rb, pb) = a, b
    mul = None if exact else z3.Function("once.mul", z3.IntSort(), z3.IntSort(), z3.IntSort())
    lemma = _Lemma(kernel, mul)
    cons = list(lemma.cons)
    encs = []
    data: dict[int, tuple[Any, Any]] = {}  # one function per tensor for both instances (a guard reading tiles[E-1])
    try:
        for name, site in (("a", sa), ("b", sb)):
            env: dict[Var, Any] = dict(lemma.sizes)
            for v in kernel.block_vars:
                env[v] = z3.Int(f"once.{v.name}.{name}")
            for lp in site.loops:
                env[lp.var] = z3.Int(f"once.{lp.var.name}.{name}")
            enc = _Ints(env, f"once.{name}", uf=mul, data=data)
            for v, g in zip(kernel.block_vars, kernel.grid, strict=True):
                cons += [env[v] >= 0, env[v] < enc.int_(g)]
            for lp in site.loops:
                cons += [env[lp.var] >= 0, env[lp.var] < enc.int_(lp.extent)]
            for branch, taken in site.ifs:
                c = enc.bool_(branch.cond)
                cons.append(c if taken else z3.Not(c))
            encs.append((enc, env))
        (ea, env_a), (eb, env_b) = encs
        ta, tb = ea.int_(pa.number), eb.int_(pb.number)
        for d in range(len(buffer.shape)):
            if d in dims and not exact:
                continue
            element = z3.Int(f"once.element.{d}")
            cons += [element >= 0, element < lemma.ints.int_(buffer.shape[d])]
            for enc, ref in ((ea, ra), (eb, rb)):
                origin = enc.int_(ref.origin[d])
                cons += [element >= origin, element < origin + ref.extent[d]]
        differ = z3.Or(*[env_a[v] != env_b[v] for v in kernel.block_vars]) if kernel.block_vars else z3.BoolVal(False)
        if sa is sb and moving:
            same = z3.And(*[env_a[v] == env_b[v] for v in kernel.block_vars])
            differ = z3.Or(differ, z3.And(same, z3.Or(*[env_a[v] != env_b[v] for v in moving])))
        cons += lemma.ints.cons + ea.cons + eb.cons
    except smt.EncodingError as err:
        return False, f"the stores could not be stated over the integers ({err})", None
    s = z3.Solver()
    s.set("rlimit", LEMMA_RLIMIT)
    s.add(*cons)
    if not exact:
        s.push()
        s.add(z3.Or(ta < 0, tb < 0))
        r = s.check()
        if r != z3.unsat:
            return False, "the lemma holds for non-negative tile numbers, and these were not proved to be", None
        s.pop()
    s.add(differ, ta == tb)
    r = s.check()
    if r == z3.unsat:
        return True, "proved", None
    if r == z3.sat:
        m = s.model()
        values = {
            name: {v: m.eval(t, model_completion=True).as_long() for v, t in env.items()}
            for name, env in (("a", env_a), ("b", env_b))
        }
        return False, "two instances may have one tile number", values
    return False, f"whether two instances have one tile number was not decided (Z3: {s.reason_unknown()})", None


#: Sample values of every problem size, and the tile numbers tried at each, when a lemma is not proved.
SAMPLE_SIZES = (1, 100, 333, 897, 1000)
SAMPLE_NUMBERS = 400
#: The most sets of sample sizes tried, in `itertools.product` order (every set for up to four sizes; a kernel with
#: ten sizes has ten million sets, which the search must not walk).
SAMPLE_SETS = 625


def collision(
    kernel: Kernel, buffer: Buffer, dims: list[int], a: tuple[Split, TileRef], b: tuple[Split, TileRef]
) -> tuple[dict[Var, int], int, int] | None:
    """Sizes and two distinct tile numbers of the sites whose windows start at one place inside `buffer` in `dims`,
    found by evaluating the origins at sample sizes (a lemma that is false usually fails at small ones), or None."""
    (sa, ra), (sb, rb) = a, b
    names = list(kernel.shape_vars)
    for values in itertools.islice(itertools.product(SAMPLE_SIZES, repeat=len(names)), SAMPLE_SETS):
        env: dict[Var, Any] = dict(zip(names, values, strict=True))
        try:
            if not allows(kernel, env):
                continue
            shape = [_value(buffer.shape[d], env, {}) for d in dims]
            seen: dict[tuple[int, ...], int] = {}
            for split, ref, first in ((sa, ra, True), (sb, rb, False)):
                for t in range(SAMPLE_NUMBERS):
                    memo: dict[int, Any] = {}
                    point = {**env, split.tau: t}
                    if not all(bool(_value(c, point, memo)) == taken for c, taken in split.guards):
                        continue
                    at = tuple(_value(split.origins[d], point, memo) for d in dims)
                    if not all(o < n and o + ref.extent[d] > 0 for o, n, d in zip(at, shape, dims, strict=True)):
                        continue
                    if first:
                        if at in seen and sa is sb:
                            return env, seen[at], t
                        seen.setdefault(at, t)
                    elif at in seen and seen[at] != t:
                        return env, seen[at], t
                if sa is sb:
                    break
        except (ZeroDivisionError, KeyError, TypeError):
            continue
    return None


# --- coverage through the tile order -------------------------------------------------------------------------------

#: Z3's budget for each of the two facts of a tile-ordered store's coverage (`cover`).
COVER_RLIMIT = 20_000_000


@dataclass(frozen=True)
class Cover:
    """What `cover` proved of a store site: its windows at the tile numbers ``0 .. G - 1`` are the cells of the grid
    of the `tiled` dimensions (cell ``k`` of dimension ``d``: ``[k * extent, (k + 1) * extent)`` for ``k < cdiv(n,
    extent)``, ``G`` the product of those counts), each taken by an instance of the site whose branch conditions
    hold, whatever the `free` indices (those the tile number does not read)."""

    tiled: tuple[int, ...]
    number_vars: frozenset[Var]
    # a segmented dimension's (`cover` with a selector) exclusive upper limit on the cells' union: ``offs[E - 1]``
    limits: dict[int, Expr] = field(default_factory=dict)
    # a segmented dimension's count of cells, all segments' (``tiles[E - 1]``): `_cells`'s overrides
    counts: dict[int, Expr] = field(default_factory=dict)
    # the split with its selector's proved facts (a segmented store's; what `project` assumes of the selector)
    split: Split | None = None
    # dimensions whose cells are counted rounded up to the kernel's cluster (`cover`'s rounded grid: the last
    # cluster's tiles past the tensor's end): each one's element limit, ``count * extent``, over which the tile-order
    # lemma is proved for this cover (`prove`'s `limits`) instead of the tensor's extent
    rounded: dict[int, Expr] = field(default_factory=dict)


def tiled_dims(split: Split) -> list[int]:
    """The dimensions whose window origin moves with the tile number."""
    return sorted(d for d, o in split.origins.items() if isinstance(o, Expr) and split.tau in free_vars(o))


def cover(kernel: Kernel, buffer: Buffer, site: Site, ref: TileRef, split: Split) -> Cover | Missing:
    """The two facts that, with the tile-order lemma for the site with itself over `tiled_dims` (`prove`: distinct
    tile numbers give windows sharing no element), make the site's windows cover the grid of those dimensions; or
    why they are not proved.

    1. *The grid*: every tile number ``τ < G`` (``G`` the product of the tiled dimensions' tile counts ``cdiv(n,
       extent)``) that satisfies the site's conditions of ``τ`` alone gives origins that are cell origins:
       non-negative multiples of the extent below ``cdiv(n, extent) * extent``.
    2. *The instances*: the tile number ``Σ c_v · v + c0`` of the block and loop indices (constant coefficients, each
       a multiple of the one below: ``bx + it * BLOCKS``) is inverted digit by digit, ``v = (τ - c0) // c_v %
       (c_next / c_v)``; for every ``τ < G`` and every value of the indices it does not read (in their ranges),
       those values lie in their ranges (a loop's extent evaluated at them), give ``τ`` back, and satisfy every
       branch condition of the site. So each ``τ < G`` is stored, by an instance that runs.

    The lemma makes ``τ -> cell`` one-to-one on ``0 .. G - 1`` (two numbers giving one cell would share its first
    element, which lies inside the tensor), and a one-to-one map of G numbers into G cells is onto: every cell is
    stored.

    Where those facts fail on the tensor's grid, one dimension's cells are counted rounded up to a multiple of the
    kernel's cluster c (1 without clusters) times a share m (`Cover.rounded`): a cluster's blocks take c tiles of it
    together, the last cluster's past the tensor's end where the count is not a multiple (``cdiv(tiles_m, 2) * 2``
    row tiles of 2-block clusters); or tiles of m cells each (a fused split-K's units take BM / SPLITS rows of a
    BM-row tile each, the last tile's shares past the end; `_cover_rounded`). The same two facts over that grid, with
    the lemma proved over it (`prove`'s `limits`: distinct numbers give distinct cells of the rounded grid, past the end
    included, not only windows sharing no element of the tensor), make ``τ -> cell`` one-to-one onto the rounded
    grid, which holds the tensor's.

    A window bounded by data through a selector (an expert's rows below ``offs[g]``) has cells relative to the data:
    each segment's (`_segments`, `_cover_segment_grid`), G their count ``tiles[E - 1]`` times the other
    dimensions'."""
    tiled = tiled_dims(split)
    if not tiled:
        return Missing("no window origin moves with the tile number")
    index_vars = set(kernel.block_vars) | {lp.var for lp in site.loops}
    number_vars = free_vars(split.number) & index_vars
    bounded = split.selector is not None or ref.bound is not None and any(b is not None for b in ref.bound)
    try:
        if bounded:
            segments = _segments(kernel, ref, split, tiled)
            if isinstance(segments, Missing):
                return segments
            split, d0, counts_of, last = segments
            grid = _cover_segment_grid(kernel, buffer, ref, split, tiled, d0, counts_of, last)
            overrides = {d0: last}
        else:
            grid = _cover_grid(kernel, buffer, ref, split, tiled)
            overrides = {}
            if grid is not None:
                grid, overrides = _cover_rounded(kernel, buffer, ref, split, tiled, grid)
        if grid is not None:
            return grid
        inverse = _cover_instances(kernel, buffer, site, ref, split, tiled, number_vars, overrides)
        if inverse is not None:
            return inverse
    except smt.EncodingError as err:
        return Missing(f"the tile order could not be stated over the integers ({err})")
    limits: dict[int, Expr] = {}
    if bounded:  # the cells' union: every segment's rows, up to the last one's end
        offs = split.bounds[d0].buffer  # type: ignore[union-attr]
        limits = {d0: Element(offs, (offs.shape[0] - 1,), offs.dtype)}
        return Cover(tuple(tiled), frozenset(number_vars), limits, overrides, split)
    rounded = {d: count * ref.extent[d] for d, count in overrides.items()}
    return Cover(tuple(tiled), frozenset(number_vars), limits, overrides, rounded=rounded)


@dataclass(frozen=True)
class Covered:
    """A store site whose windows cover its grid (`cover` and the lemma proved): what a load placed by the same
    tile numbers is projected on (`project`)."""

    buffer: Buffer
    site: Site
    ref: TileRef
    split: Split
    cover: Cover


@dataclass(frozen=True)
class Projection:
    """What `project` proved of a load site: per tiled dimension of the load, the covered store's cell extent and
    the load window's constant offset in that cell (the window at tile number ``τ`` starts ``offset`` past the
    store's cell origin at ``τ``)."""

    #: load dimension -> (cell extent, offset, span): the windows cover the elements below the span (the store's
    #: cells' ``cdiv(n', E) * E``) at that offset in their cell
    cells: dict[int, tuple[int, int, Expr | int]]
    number_vars: frozenset[Var]
    #: load dimension -> (the loop whose runs, one per index cell of the store, load consecutive windows; the span
    #: ``count * R * extent`` they cover from 0): split-K's K
    slabs: dict[int, tuple[Var, Expr | int]] = field(default_factory=dict)
    #: load dimension -> the data-relative end of what the kernel contracts there (a segmented store's cells: the
    #: routed rows, below ``offs[E - 1]``); the elements past it feed no sum, and are not asked to be loaded
    limits: dict[int, Expr] = field(default_factory=dict)
    #: load dimension whose origin is the selector (B's expert) -> the segments' ends ``offs``: every segment with a
    #: row is taken there (an empty one's feeds no sum, and is not asked to be loaded)
    selected: dict[int, Buffer] = field(default_factory=dict)


def project(kernel: Kernel, buffer: Buffer, site: Site, ref: TileRef, split: Split, stores: list[Covered]) -> Any:
    """A load placed by a tile number (a persistent kernel's operand tile) against a store whose windows cover its
    grid (`Covered`): a `Projection` when, for one such store and every tile number ``τ`` below its grid's count G,

    1. each tiled dimension ``d`` of the load has a dimension ``d'`` of the store (one each) where the load's origin
       is the store's plus a constant ``δ`` (``0 <= δ < E``, E the store's extent there);
    2. ``τ`` is loaded by an instance of the site whose branch conditions hold, whatever the indices the tile number
       does not read (`_cover_instances` with the store's G).

    Then every element ``e`` of dimension ``d`` below the cells' span ``cdiv(n', E) * E``, with ``δ <= e % E < δ +
    extent``, is loaded at every value of the other indices: its cell ``e // E`` is below the store's count, the store's
    windows at the numbers below G are every cell (cover and lemma), at such a ``τ`` the load's window is that cell's
    origin plus ``δ``, and an instance loads it. A `Missing` when no store gives both facts.

    A dimension whose origin reads the tile number and one loop ``v`` of the site (split-K's K: ``(k + split *
    k_split) * BK``) is a *slab* where, for another dimension ``d'`` of the store of extent 1 (the split index ``c``)
    and every ``τ < G`` and ``v < R`` (R the loop's extent), the origin is ``(c(τ) * R + v) * extent``: the runs of
    the loop at the count's values of ``c`` load consecutive windows, every element below ``count(d') * R *
    extent``. (The spans are the caller's to compare with the tensor: an element past one is a finding.)"""
    tiled = tiled_dims(split)
    bounded = ref.bound is not None and any(b is not None for b in ref.bound)
    if not tiled or bounded:
        return Missing("the load is not placed by a tile number alone")
    index_vars = set(kernel.block_vars) | {lp.var for lp in site.loops}
    number_vars = free_vars(split.number) & index_vars
    why = "no store with a proved cover places its tiles by the same numbers"
    own = split
    for store in stores:
        split = own
        if split.selector is not None or store.split.selector is not None:
            split = _selected_alike(own, store)
            if split is None:
                why = "no covered store finds its segment (the selector) as the load does"
                continue
        try:
            got = _projected_cells(kernel, buffer, ref, split, tiled, store)
            if isinstance(got, Missing):
                why = got.why
                continue
            cells, used = got
            selected = _selected_dims(split, store, tiled)
            slabs = _slabs(kernel, buffer, site, ref, split, store, {*tiled, *selected}, used, number_vars)
            if isinstance(slabs, Missing):
                why = slabs.why
                continue

            def total_of(lemma: _Lemma, store: Covered = store) -> Any:
                return _cells(lemma, store.buffer, store.ref, list(store.cover.tiled), store.cover.counts)[1]

            inverse = _cover_instances(kernel, buffer, site, ref, split, tiled, number_vars, {}, total_of)
        except smt.EncodingError as err:
            return Missing(f"the tile order could not be stated over the integers ({err})")
        if inverse is None:
            limits = {d: span for d, (_, _, span) in cells.items() if isinstance(span, Element)}
            return Projection(cells, frozenset(number_vars), slabs, limits, selected)
        why = inverse.why
    return Missing(why)


def _projected_cells(
    kernel: Kernel, buffer: Buffer, ref: TileRef, split: Split, tiled: list[int], store: Covered
) -> tuple[dict[int, tuple[int, int, Expr | int]], set[int]] | Missing:
    """`project`'s fact 1 for one store: the load dimensions' cell extents and offsets (and the store dimensions
    they take), or why not."""
    cells: dict[int, tuple[int, int, Expr | int]] = {}
    used: set[int] = set()
    for d in tiled:
        extent = ref.extent[d]
        for d2 in store.cover.tiled:
            cell = store.ref.extent[d2]
            if d2 in used or not isinstance(cell, int) or not isinstance(extent, int):
                continue
            if d2 in store.cover.limits and extent < cell:
                continue  # a segment's cells start anywhere: only a load of the whole cell covers it
            delta = _cell_offset(kernel, buffer, split, d, store, d2, cell)
            if d2 in store.cover.limits and isinstance(delta, int) and delta == 0:
                cells[d] = (cell, 0, store.cover.limits[d2])  # every segment's rows, to the last one's end
                used.add(d2)
                break
            if delta is not None and d2 not in store.cover.limits:
                n = store.buffer.shape[d2]
                cells[d] = (cell, delta, n if cell == 1 else cdiv(n, cell) * cell)
                used.add(d2)
                break
        else:
            return Missing(f"dimension {d} of the load is no dimension of a covered store's cells at a constant offset")
    return cells, used


def _slabs(  # noqa: PLR0913 - the site's parts
    kernel: Kernel,
    buffer: Buffer,
    site: Site,
    ref: TileRef,
    split: Split,
    store: Covered,
    tiled: set[int],
    used: set[int],
    number_vars: set[Var],
) -> dict[int, tuple[Var, Expr | int]] | Missing:
    """`project`'s slabs (its docstring): each load dimension outside `tiled` whose origin reads the tile number,
    with the loop it runs over; or why one is not a slab."""
    keys = _Keys()
    key = keys(split.number)
    sizes = set(kernel.shape_vars)
    loops = {lp.var: lp for lp in site.loops if lp.var not in number_vars}
    out: dict[int, tuple[Var, Expr | int]] = {}
    for d, origin in enumerate(ref.origin):
        if d in tiled or not isinstance(origin, Expr) or not free_vars(origin) & number_vars:
            continue
        o = _replace(origin, key, split.tau, keys, {})
        rest = free_vars(o) - sizes - {split.tau}
        extent = ref.extent[d]
        if len(rest) != 1 or next(iter(rest)) not in loops or not isinstance(extent, int):
            return Missing(f"dimension {d}'s origin {origin} reads the tile number and is no slab of one loop")
        v = next(iter(rest))
        lp = loops[v]
        if isinstance(lp.extent, Expr) and not free_vars(lp.extent) <= sizes:
            return Missing(f"dimension {d}'s loop {v.name} has an extent that depends on more than the sizes")
        for d2 in store.cover.tiled:
            if d2 in used or store.ref.extent[d2] != 1:
                continue
            if _slab_holds(kernel, split, o, v, lp.extent, extent, store, d2):
                out[d] = (v, store.buffer.shape[d2] * lp.extent * extent)
                used.add(d2)
                break
        else:
            return Missing(f"dimension {d}'s origin {origin} is no slab of the loop {v.name} over a store's index")
    return out


def _slab_holds(  # noqa: PLR0913 - the slab's parts
    kernel: Kernel,
    split: Split,
    origin: Expr,
    v: Var,
    runs: Any,
    extent: int,
    store: Covered,
    d2: int,
) -> bool:
    """For every size, tile number ``τ < G`` and ``v`` in its loop's range R: `origin` is ``(c(τ) * R + v) *
    extent`` with ``c`` the store's origin in `d2` (an index)."""
    for lemma in _lemmas(kernel):
        counts, total = _cells(lemma, store.buffer, store.ref, list(store.cover.tiled), store.cover.counts)
        t, j = z3.Int("tile_number.slab"), z3.Int(f"slab.{v.name}")
        enc, hyp = _store_number(lemma, split, store, t, "slab", {v: j})
        r_ = lemma.ints.int_(runs)
        hyp += [t < total, j >= 0, j < r_]
        c = enc.int_(store.split.origins[d2])
        claim = enc.int_(origin) == (lemma.ints._mul(c, r_) + j) * extent
        r, _ = _solved(lemma.closed([*lemma.cons, *hyp, z3.Not(claim)], enc), lemma)
        if r == z3.unsat:
            return True
    return False


def _cell_offset(kernel: Kernel, buffer: Buffer, split: Split, d: int, store: Covered, d2: int, cell: int) -> Any:
    """The offset ``δ`` (a constant ``0 <= δ < cell``, or an expression of the sizes: the load's cells are the
    store's shifted by it) such that, for every size and tile number ``τ`` below the store's grid count
    (meeting the store's conditions of ``τ``), the load's origin in `d` is the store's in `d2` plus ``δ``, and the
    load tensor's extent in `d` is within the store's cells there; None where that is not proved. Both origins
    are encoded by one encoder (one tile number: a quotient the two spell alike is one term), ``δ`` read off their
    difference (simplified, else at a model), then proved."""
    sizes = frozenset(kernel.shape_vars)
    delta = _offset_of(split.origins[d], split.tau, store.split.origins[d2], store.split.tau, sizes)
    for lemma in _lemmas(kernel):
        counts, total = _cells(lemma, store.buffer, store.ref, list(store.cover.tiled), store.cover.counts)
        t = z3.Int("tile_number.project")
        enc, hyp = _store_number(lemma, split, store, t, "project")
        hyp.append(t < total)
        o_load, o_store = enc.int_(split.origins[d]), enc.int_(store.split.origins[d2])
        if delta is None:
            diff = z3.simplify(o_load - o_store)
            if z3.is_int_value(diff):
                delta = diff.as_long()
            elif lemma.uf is None:  # a model's difference, with real products
                s = z3.Solver()
                s.set("rlimit", COVER_RLIMIT)
                s.add(*lemma.closed([*lemma.cons, *hyp], enc))
                if s.check() != z3.sat:
                    return None
                delta = s.model().eval(o_load - o_store, model_completion=True).as_long()
            else:
                continue
        if isinstance(delta, int) and not 0 <= delta < cell:
            return None
        claim = o_load == o_store + (delta if isinstance(delta, int) else lemma.ints.int_(delta))
        r, _ = _solved(lemma.closed([*lemma.cons, *hyp, z3.Not(claim)], enc), lemma)
        if r == z3.unsat:
            return delta
    return None


def _store_number(
    lemma: _Lemma, split: Split, store: Covered, t: Any, name: str, more: dict[Var, Any] | None = None
) -> tuple[_Ints, list[Any]]:
    """One encoder for a load's and a covered store's expressions at one tile number `t` (and one selector, the
    store's, where it has one: `_selected_alike` made the load's the same), and the hypotheses: ``t >= 0``, the
    store's conditions of the tile number, its selector's proved facts."""
    env = {**lemma.sizes, split.tau: t, store.split.tau: t, **(more or {})}
    local = {split.tau, store.split.tau, *(more or {})}
    facts: tuple[Expr, ...] = ()
    if store.split.selector is not None:
        env[store.split.selector] = z3.Int(f"selector.{name}")
        local.add(store.split.selector)
        facts = store.split.facts  # a segmented store's split carries them (`Cover.split`, `Covered.split`)
    enc = _Ints(env, f"lemma.{name}", lemma.ints, frozenset(local), lemma.uf)
    hyp = [t >= 0]
    for cond, taken in store.split.guards:
        c = enc.bool_(cond)
        hyp.append(c if taken else z3.Not(c))
    hyp += [enc.bool_(f) for f in facts]
    return enc, hyp


def _selected_dims(split: Split, store: Covered, tiled: list[int]) -> dict[int, Buffer]:
    """The load's dimensions whose origin is the selector itself (the expert of B's box), with the segments' ends
    of the store: where the store's cells are segments of the data (`cover` proved every routed row cell is a tile
    number's, in the segment its selector names, and the tile numbers one-to-one onto the cells), every segment with a
    row has a cell, so some tile number below G selects it, at every cell of the other tiled dimensions; its
    projected load takes that segment's index there."""
    if split.selector is None or not store.cover.limits:
        return {}
    (end,) = store.cover.limits.values()
    return {d: end.buffer for d, o in split.origins.items() if o is split.selector and d not in tiled}


def _selected_alike(split: Split, store: Covered) -> Split | None:
    """The load's split with its selector read as the store's, where both find it by the same expression of their
    tile numbers (the same search over the same data: then the selectors are one value at one tile number), and the
    store's cells are segments, whose split carries the selector's proved facts (`Cover.split`); None otherwise."""
    if split.selector is None or store.split.selector is None or not store.cover.limits:
        return None
    keys = _Keys()
    chosen = _replace(split.chosen, keys(split.tau), store.split.tau, keys, {})
    if keys(chosen) != keys(store.split.chosen):
        return None
    key, by = keys(split.selector), store.split.selector
    return dataclasses.replace(
        split,
        origins={d: _replace(o, key, by, keys, {}) for d, o in split.origins.items()},
        guards=tuple((_replace(c, key, by, keys, {}), taken) for c, taken in split.guards),
        bounds={d: _replace(b, key, by, keys, {}) for d, b in split.bounds.items()},
        selector=by,
        chosen=store.split.chosen,
        facts=store.split.facts,
    )


def _offset_of(load: Any, tau: Var, store: Any, store_tau: Var, sizes: frozenset[Var] = frozenset()) -> Any:
    """The offset `c` with ``load == store + c`` read off the expressions (the load's with its tile number written
    as the store's; terms added at the top that are constants, or expressions of the `sizes` alone: SwiGLU's up
    columns ``N + bn * BN``), or None where the rest is not the store's expression. An int where every term is a
    constant, else an expression of the sizes."""
    keys = _Keys()
    load = _replace(load, keys(tau), store_tau, keys, {})
    c: Any = 0
    terms: list[Expr] = []
    while isinstance(load, BinOp) and load.op == BinaryOp.ADD:
        if isinstance(load.rhs, Const) and isinstance(load.rhs.value, int):
            c, load = c + load.rhs.value, load.lhs
        elif isinstance(load.lhs, Const) and isinstance(load.lhs.value, int):
            c, load = c + load.lhs.value, load.rhs
        elif sizes and isinstance(load.lhs, Expr) and free_vars(load.lhs) <= sizes and not elements(load.lhs):
            terms, load = [*terms, load.lhs], load.rhs
        elif sizes and isinstance(load.rhs, Expr) and free_vars(load.rhs) <= sizes and not elements(load.rhs):
            terms, load = [*terms, load.rhs], load.lhs
        else:
            break
    if keys(load) != keys(store):
        return None
    for term in terms:
        c = binary(BinaryOp.ADD, term, Const(c)) if isinstance(c, int) else binary(BinaryOp.ADD, c, term)
    return c


def _segments(kernel: Kernel, ref: TileRef, split: Split, tiled: list[int]) -> Any:
    """For a window bounded by data through a selector (an expert ``g`` and ``offs[g]``): the split with the
    selector's proved facts, the bounded dimension, the declaration that counts its cells (``tiles =
    tile_counts(offs, extent)``) and the cell count of all segments (``tiles[E - 1]``); or why the cells are not
    stated. What the cells are rests on the declarations: ``offs`` nondecreasing from 0 (the segments' rows follow
    each other from row 0), ``tiles`` its cumulative cell counts (their sum)."""
    if split.selector is None:
        return Missing("the window has a bound, and no selector (a segment found from the tile number) places it")
    dims = [d for d, b in split.bounds.items() if b is not None]
    if len(dims) != 1 or dims[0] not in tiled:
        return Missing("the window's bound is not on one dimension that moves with the tile number")
    (d0,) = dims
    bound = split.bounds[d0]
    if not (isinstance(bound, Element) and len(bound.index) == 1 and bound.index[0] is split.selector):
        return Missing(f"the window's bound {bound} is not a segment's end (offs[g] for the selector g)")
    offs = bound.buffer
    ordered = any(
        va.tensor is offs and va.nondecreasing and isinstance(va.lo, int | Const) and _const(va.lo) == 0
        for va in kernel.value_assumptions
    )
    counts = next((va for va in kernel.value_assumptions if va.counts_of is offs and va.tile == ref.extent[d0]), None)
    if not ordered or counts is None or offs.rank != 1:
        return Missing(
            f"the segments' ends {offs.name} are not declared nondecreasing from 0 with their cell counts "
            f"(T.assume_values(tiles, tile_counts=({offs.name}, {ref.extent[d0]})))"
        )
    split = _with_facts(_Lemma(kernel), split, set(tiled))
    last = Element(counts.tensor, (offs.shape[0] - 1,), counts.tensor.dtype)
    return split, d0, counts.tensor, last


def _const(x: Any) -> Any:
    return x.value if isinstance(x, Const) else x


def _cover_segment_grid(  # noqa: PLR0913 - the site's parts
    kernel: Kernel, buffer: Buffer, ref: TileRef, split: Split, tiled: list[int], d0: int, counts: Buffer, last: Expr
) -> Missing | None:
    """`cover`'s first fact for a segmented dimension `d0`: every tile number below G (the segments' cell count
    ``tiles[E - 1]`` times the other tiled dimensions' counts) gives, with its selector g (`0 <= g < E`), a cell of
    segment g (an origin ``start(g) + k * extent`` below the segment's end ``offs[g]``, ``start(g) = offs[g - 1]``,
    0 for g = 0) and cells in the other dimensions, given the declared relation at g (``tiles[g] - tiles[g - 1] =
    cdiv(offs[g] - start(g), extent)``)."""
    offs = split.bounds[d0].buffer  # type: ignore[union-attr]
    g_var = split.selector
    assert g_var is not None
    ext = ref.extent[d0]
    sizes = None
    for lemma in [_Lemma(kernel)]:  # real products: the order over a segment's count needs them
        t, enc, hyp = lemma.number(split, "segments")
        g = enc.env[g_var]
        before = maximum(g_var - 1, 0)
        start = z3.If(g > 0, enc.int_(Element(offs, (before,), offs.dtype)), 0)
        end = enc.int_(Element(offs, (g_var,), offs.dtype))
        here = enc.int_(Element(counts, (g_var,), counts.dtype))
        earlier = z3.If(g > 0, enc.int_(Element(counts, (before,), counts.dtype)), 0)
        relation = here - earlier == (end - start + ext - 1) / ext
        counts_, total = _cells(lemma, buffer, ref, tiled, {d0: last})
        memo: dict[int, Any] = {}
        origins = {d: cancel_multiples(lemma, split, split.origins[d], memo) for d in tiled}
        o = enc.int_(origins[d0])
        claims = [g >= 0, g < enc.int_(offs.shape[0]), o >= start, (o - start) % ext == 0, o < end]
        for d in tiled:
            if d != d0:
                od, e = enc.int_(origins[d]), ref.extent[d]
                claims += [od >= 0, od < counts_[d] * e, od % e == 0]
        query = lemma.closed([*lemma.cons, *hyp, relation, t < total, z3.Not(z3.And(*claims))], enc)
        r, sizes = _solved(query, lemma)
        if r == z3.unsat:
            return None
    return _missing("gives a cell of its segment", r, sizes)


def _cells(
    lemma: _Lemma, buffer: Buffer, ref: TileRef, tiled: list[int], overrides: dict[int, Expr] | None = None
) -> tuple[dict[int, Any], Any]:
    """Each tiled dimension's count of cells ``cdiv(n, extent)`` (or the expression in `overrides`: a segmented
    dimension's ``tiles[E - 1]``), and their product G."""
    counts = {}
    total: Any = z3.IntVal(1)
    for d in tiled:
        n, e = buffer.shape[d], ref.extent[d]
        # written as the kernel writes T.cdiv (one quotient term for both, where the kernel's is the same)
        counts[d] = lemma.ints.int_((overrides or {}).get(d, n if e == 1 else cdiv(n, e)))
        total = counts[d] if d == tiled[0] else lemma.ints._mul(total, counts[d])
    return counts, total


def _lemmas(kernel: Kernel) -> list[_Lemma]:
    """The encodings a fact is tried in: products of two non-constants as a free function first (what follows
    linearly, and by congruence: the kernel's ``tiles_m * tiles_n`` and the grid's cell count), then as products."""
    quick = _Lemma(kernel, z3.Function("cover.mul", z3.IntSort(), z3.IntSort(), z3.IntSort()))
    quick.ints.ac = True
    return [quick, _Lemma(kernel)]


@dataclass(frozen=True)
class Missing:
    """Why `cover` proved nothing of a site; where the query with real products had a model, its sizes (the caller
    looks there for an element no store writes: the model itself is over integers, not the kernel's encoding)."""

    why: str
    sizes: dict[Var, int] | None = None


def _solved(query: list[Any], lemma: _Lemma) -> tuple[Any, dict[Var, int] | None]:
    """The query's answer and, when it has a model with real products, that model's sizes (small where it can)."""
    s = z3.Solver()
    s.set("rlimit", COVER_RLIMIT)
    s.add(*query)
    r = s.check()
    if r != z3.sat or lemma.uf is not None:
        return r, None
    m = _small(s, list(lemma.sizes.values()))
    return r, {v: m.eval(t, model_completion=True).as_long() for v, t in lemma.sizes.items()}


def _missing(what: str, r: Any, sizes: dict[Var, int] | None) -> Missing:
    verdict = "not decided within the solver's budget" if r == z3.unknown else "not proved"
    return Missing(f"that every tile number below the grid's cell count {what} was {verdict}", sizes)


#: The multiples of a window's extent that `_cover_rounded` tries as the tile a cluster's blocks take together: the
#: window itself, or a share of a larger tile (a fused split-K unit's BM / SPLITS rows of a BM-row tile).
ROUNDED_SHARES = (1, 2, 4, 8, 16, 32)


def _cover_rounded(
    kernel: Kernel, buffer: Buffer, ref: TileRef, split: Split, tiled: list[int], missing: Missing
) -> tuple[Missing | None, dict[int, Expr]]:
    """(1) of `cover` over a grid of one dimension's cells rounded up to the kernel's cluster (c, 1 without one):
    ``cdiv(cdiv(n, e * m), c) * c * m`` cells of extent e, the tiles of m cells that a cluster's c blocks take
    together (`ROUNDED_SHARES`), the last cluster's past the end; the first that is proved, with its counts, else
    `missing` and none."""
    c = kernel.cluster
    for d in (d for d in tiled if ref.extent[d] != 1):
        for m in ROUNDED_SHARES:
            if m == 1 and c == 1:  # the tensor's own grid, already tried
                continue
            rounded = {d: cdiv(cdiv(buffer.shape[d], ref.extent[d] * m), c) * (c * m)}
            if _cover_grid(kernel, buffer, ref, split, tiled, rounded) is None:
                return None, rounded
    return missing, {}


def _cover_grid(
    kernel: Kernel, buffer: Buffer, ref: TileRef, split: Split, tiled: list[int], overrides: dict | None = None
) -> Missing | None:
    sizes = None
    for lemma in _lemmas(kernel):
        counts, total = _cells(lemma, buffer, ref, tiled, overrides)
        t, enc, hyp = lemma.number(split, "cover")
        claims = []
        for d in tiled:
            o, e = enc.int_(split.origins[d]), ref.extent[d]
            claims += [o >= 0, o < counts[d] * e, o % e == 0]
        r, sizes = _solved(lemma.closed([*lemma.cons, *hyp, t < total, z3.Not(z3.And(*claims))], enc), lemma)
        if r == z3.unsat:
            return None
    return _missing("gives a cell's origin", r, sizes)


def _coefficients(number: Expr, nvars: list[Var], sizes: dict[Var, Any]) -> dict[Var, int] | None:
    """The constant coefficient of each variable of the linear `number` (and the constant term under None), or None
    when one is not a constant (linearity itself is proved by the caller's query)."""
    env: dict[Var, Any] = {**sizes, **{v: z3.IntVal(0) for v in nvars}}
    base = z3.simplify(_Ints(env, "cover.coef", fold=True).int_(number))
    if not z3.is_int_value(base):
        return None
    out: dict[Any, int] = {None: base.as_long()}
    for v in nvars:
        got = z3.simplify(_Ints({**env, v: z3.IntVal(1)}, "cover.coef", fold=True).int_(number))
        if not z3.is_int_value(got):
            return None
        out[v] = got.as_long() - out[None]
    return out


def _cover_instances(  # noqa: PLR0913 - the site's parts
    kernel: Kernel,
    buffer: Buffer,
    site: Site,
    ref: TileRef,
    split: Split,
    tiled: list[int],
    number_vars: set[Var],
    overrides: dict[int, Expr],
    total_of: Any = None,
) -> Missing | None:
    nvars = sorted(number_vars, key=lambda v: v.name)
    coef = _coefficients(split.number, nvars, _Lemma(kernel).sizes)
    if coef is None:
        return Missing(
            f"the tile number {split.number} is not linear with constant coefficients in the block and loop indices"
        )
    order = sorted(nvars, key=lambda v: coef[v])
    if any(coef[v] <= 0 for v in order):
        return Missing(f"the tile number {split.number} does not rise with every index it reads")
    if any(coef[b] % coef[a] for a, b in zip(order, order[1:], strict=False)):
        return Missing(f"the tile number {split.number}'s coefficients are not a mixed radix")
    sizes = None
    for lemma in _lemmas(kernel):
        r, sizes = _instances_query(
            kernel, buffer, site, ref, split, tiled, number_vars, order, coef, lemma, overrides, total_of
        )
        if r == z3.unsat:
            return None
    return _missing("is stored by an instance of the site", r, sizes)


def _instances_query(  # noqa: PLR0913 - the site's parts
    kernel: Kernel,
    buffer: Buffer,
    site: Site,
    ref: TileRef,
    split: Split,
    tiled: list[int],
    number_vars: set[Var],
    order: list[Var],
    coef: dict[Any, int],
    lemma: _Lemma,
    overrides: dict[int, Expr],
    total_of: Any = None,
) -> Any:
    # the tile numbers to cover: the site's own grid, or (`project`) a covered store's
    total = total_of(lemma) if total_of is not None else _cells(lemma, buffer, ref, tiled, overrides)[1]
    tau = z3.Int("cover.tau")
    env: dict[Var, Any] = dict(lemma.sizes)
    rest = tau - coef[None]
    for i, v in enumerate(order):  # the digits (the caller checked the coefficients are a mixed radix)
        digit = rest / coef[v]
        env[v] = digit % (coef[order[i + 1]] // coef[v]) if i + 1 < len(order) else digit
    hyp = [*lemma.cons, tau >= 0, tau < total]
    for v in (v for v in kernel.block_vars if v not in number_vars):
        env[v] = z3.Int(f"cover.{v.name}")
    for lp in (lp for lp in site.loops if lp.var not in number_vars):
        env[lp.var] = z3.Int(f"cover.{lp.var.name}")
    local = frozenset({*kernel.block_vars, *(lp.var for lp in site.loops)})
    enc = _Ints(env, "cover.instance", lemma.ints, local, lemma.uf)
    claims = []
    for v, g in zip(kernel.block_vars, kernel.grid, strict=True):
        within = z3.And(env[v] >= 0, env[v] < enc.int_(g))
        (claims if v in number_vars else hyp).append(within)
    for lp in site.loops:
        within = z3.And(env[lp.var] >= 0, env[lp.var] < enc.int_(lp.extent))
        (claims if lp.var in number_vars else hyp).append(within)
    claims.append(enc.int_(split.number) == tau)
    for branch, taken in site.ifs:
        c = enc.bool_(branch.cond)
        claims.append(c if taken else z3.Not(c))
    return _solved(lemma.closed([*hyp, z3.Not(z3.And(*claims))], enc), lemma)
