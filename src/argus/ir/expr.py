"""Scalar expressions of the IR: runtime values, one per thread (indices, shape symbols, loop
variables) and the arithmetic on them.

Expressions are frozen dataclasses. Python operators on them build new expressions, folding
constants, so that the tracer can write ``bm * BM + i`` with `bm` a block index and get an IR
term. Shape symbols (``M``, ``N``, ``K``) are `Var`s of kind `VarKind.SHAPE`; the kernel's
declared assumptions about them live on the kernel, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from argus.ir.types import DType, boolean, f32, i32


@dataclass(frozen=True)
class SourceLoc:
    """Where a node came from in the user's DSL source: file, 1-based line and column, and the
    text of that line (so an error can print it with a caret without reading the file again)."""

    file: str
    line: int
    col: int = 0
    text: str = ""

    def __str__(self) -> str:
        import os

        return f"{os.path.basename(self.file)}:{self.line}"


class VarKind(StrEnum):
    SHAPE = "shape"  # a symbolic extent of a global tensor (M, N, K)
    BLOCK = "block"  # a block index (blockIdx) or a persistent tile index
    THREAD = "thread"  # the thread index within the block
    LOOP = "loop"  # a loop induction variable
    LET = "let"  # a value bound once by ``T.let`` (uniform over the block; any sign)


class BinaryOp(StrEnum):
    ADD = "+"
    SUB = "-"
    MUL = "*"
    FLOORDIV = "//"
    MOD = "%"
    MIN = "min"
    MAX = "max"
    LT = "<"
    LE = "<="
    EQ = "=="
    NE = "!="
    AND = "and"
    OR = "or"
    XOR = "^"
    SHL = "<<"
    SHR = ">>"


COMPARISONS = {BinaryOp.LT, BinaryOp.LE, BinaryOp.EQ, BinaryOp.NE}
LOGICAL = {BinaryOp.AND, BinaryOp.OR}


class Expr:
    """Base of scalar expressions: Python arithmetic builds IR terms with constants folded."""

    dtype: DType

    def _bin(self, op: BinaryOp, other: Any, reverse: bool = False) -> Expr:
        other_e = as_expr(other)
        lhs, rhs = (other_e, self) if reverse else (self, other_e)
        return binary(op, lhs, rhs)

    def __add__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.ADD, o)

    def __radd__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.ADD, o, True)

    def __sub__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.SUB, o)

    def __rsub__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.SUB, o, True)

    def __mul__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.MUL, o)

    def __rmul__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.MUL, o, True)

    def __floordiv__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.FLOORDIV, o)

    def __rfloordiv__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.FLOORDIV, o, True)

    def __mod__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.MOD, o)

    def __rmod__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.MOD, o, True)

    def __lt__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.LT, o)

    def __le__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.LE, o)

    def __gt__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.LT, o, True)

    def __ge__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.LE, o, True)

    def __xor__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.XOR, o)

    def __lshift__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.SHL, o)

    def __rshift__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.SHR, o)

    def __and__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.AND, o)

    def __or__(self, o: Any) -> Expr:
        return self._bin(BinaryOp.OR, o)

    def __bool__(self) -> bool:
        raise TypeError(
            "an argus expression has no Python truth value while tracing: it is only known when the kernel "
            "runs; use T.if_(cond) for a runtime branch, or compare Python ints for a trace-time one"
        )

    def __index__(self) -> int:
        raise TypeError("an argus expression is not a Python int while tracing; use it inside T.* operations")


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int | float | bool
    dtype: DType = i32

    def __str__(self) -> str:
        return str(self.value).lower() if isinstance(self.value, bool) else str(self.value)


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A named runtime scalar. Identity is by object: two `Var`s with the same name are different
    variables (the printer disambiguates them)."""

    name: str
    kind: VarKind
    dtype: DType = i32

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: BinaryOp
    lhs: Expr
    rhs: Expr
    dtype: DType = i32

    def __str__(self) -> str:
        if self.op in (BinaryOp.MIN, BinaryOp.MAX):
            return f"{self.op.value}({self.lhs}, {self.rhs})"
        return f"({self.lhs} {self.op.value} {self.rhs})"


@dataclass(frozen=True, eq=False)
class Select(Expr):
    cond: Expr
    if_true: Expr
    if_false: Expr
    dtype: DType = i32

    def __str__(self) -> str:
        return f"select({self.cond}, {self.if_true}, {self.if_false})"


@dataclass(frozen=True, eq=False)
class Element(Expr):
    """The value of one element of a global integer tensor that the kernel only reads (``offs[g]``): data, not
    a size or an index the kernel computes, known only when the kernel runs. `buffer` is the tensor (an
    `argus.ir.nodes.Buffer`), `index` one coordinate per dimension. The interpreter reads the element (an index
    outside the tensor is an error); the generated code loads it; the verifier encodes it as an uninterpreted
    function of the index (the same index gives the same value; nothing else is known of it)."""

    buffer: Any
    index: tuple[Expr, ...]
    dtype: DType = i32

    def __str__(self) -> str:
        return f"{self.buffer.name}[{', '.join(str(i) for i in self.index)}]"


class _ElementReader:
    """The key under which an environment passed to `evaluate` holds the reader of `Element` values: a function
    ``(buffer, index values) -> value`` (the interpreter's global memory)."""

    def __repr__(self) -> str:
        return "READ_ELEMENT"


READ_ELEMENT: Any = _ElementReader()


def elements(e: Any) -> list[Element]:
    """The `Element` reads in `e` (an expression or an int), outermost first, each shared subexpression visited once
    (inlined ``T.let`` chains make an expression a DAG: a tree walk would take exponential time)."""
    out: list[Element] = []
    seen: set[int] = set()

    def visit(x: Any) -> None:
        if not isinstance(x, Expr) or id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, Element):
            out.append(x)
            for i in x.index:
                visit(i)
        elif isinstance(x, BinOp):
            visit(x.lhs)
            visit(x.rhs)
        elif isinstance(x, Select):
            visit(x.cond)
            visit(x.if_true)
            visit(x.if_false)

    visit(e)
    return out


def as_expr(x: Any) -> Expr:
    """An `Expr` for an expression, a Python int/float/bool (a `Const`)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(x, boolean)
    if isinstance(x, int):
        return Const(x, i32)
    if isinstance(x, float):
        return Const(x, f32)
    raise TypeError(f"expected an argus expression or a Python number, got {type(x).__name__} {x!r}")


#: The Python meaning of each binary operator on constants (folding, evaluation).
FOLD = {
    BinaryOp.ADD: lambda a, b: a + b,
    BinaryOp.SUB: lambda a, b: a - b,
    BinaryOp.MUL: lambda a, b: a * b,
    BinaryOp.FLOORDIV: lambda a, b: a // b,
    BinaryOp.MOD: lambda a, b: a % b,
    BinaryOp.MIN: min,
    BinaryOp.MAX: max,
    BinaryOp.LT: lambda a, b: a < b,
    BinaryOp.LE: lambda a, b: a <= b,
    BinaryOp.EQ: lambda a, b: a == b,
    BinaryOp.NE: lambda a, b: a != b,
    BinaryOp.AND: lambda a, b: bool(a and b),
    BinaryOp.OR: lambda a, b: bool(a or b),
    BinaryOp.XOR: lambda a, b: a ^ b,
    BinaryOp.SHL: lambda a, b: a << b,
    BinaryOp.SHR: lambda a, b: a >> b,
}


def _is_const(e: Expr, value: Any) -> bool:
    return isinstance(e, Const) and e.value == value and not isinstance(e.value, bool)


def binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr:
    """Build ``lhs op rhs``, folding constants and the identities ``x+0``, ``x*1``, ``x*0``, ``x//1``."""
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        if op in (BinaryOp.FLOORDIV, BinaryOp.MOD) and rhs.value == 0:
            raise ZeroDivisionError(f"division by zero in {lhs} {op.value} {rhs}")
        value = FOLD[op](lhs.value, rhs.value)
        return as_expr(value)
    if op == BinaryOp.ADD:
        if _is_const(lhs, 0):
            return rhs
        if _is_const(rhs, 0):
            return lhs
    if op == BinaryOp.SUB and _is_const(rhs, 0):
        return lhs
    if op == BinaryOp.MUL:
        if _is_const(lhs, 1):
            return rhs
        if _is_const(rhs, 1):
            return lhs
        if _is_const(lhs, 0) or _is_const(rhs, 0):
            return Const(0, i32)
    if op == BinaryOp.FLOORDIV and _is_const(rhs, 1):
        return lhs
    dtype = boolean if op in COMPARISONS or op in LOGICAL else lhs.dtype
    return BinOp(op, lhs, rhs, dtype)


def minimum(a: Any, b: Any) -> Expr:
    return binary(BinaryOp.MIN, as_expr(a), as_expr(b))


def maximum(a: Any, b: Any) -> Expr:
    return binary(BinaryOp.MAX, as_expr(a), as_expr(b))


def cdiv(a: Any, b: Any) -> Expr | int:
    """``⌈a / b⌉``; plain ints stay ints."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return (as_expr(a) + (as_expr(b) - 1)) // b


def free_vars(e: Expr) -> set[Var]:
    """The variables an expression depends on. Walks the expression as the DAG it is: each shared sub-expression
    once (a chain of `T.let`s substituted into one another shares its sub-expressions; walked as a tree, a binary
    search of eight steps made tens of millions of visits)."""
    out: set[Var] = set()
    seen: set[int] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Var):
            out.add(x)
        elif isinstance(x, BinOp):
            todo += (x.lhs, x.rhs)
        elif isinstance(x, Select):
            todo += (x.cond, x.if_true, x.if_false)
        elif isinstance(x, Element):
            todo.extend(x.index)
    return out


def evaluate(e: Expr, env: dict[Var, Any]) -> Any:
    """Evaluate with the variables bound in `env` (ints, numpy arrays, or Z3 terms all work,
    since only Python operators are used; MIN/MAX/Select need ints or numpy arrays)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        if e not in env:
            raise KeyError(f"variable {e.name} ({e.kind}) is not bound")
        return env[e]
    if isinstance(e, BinOp):
        a, b = evaluate(e.lhs, env), evaluate(e.rhs, env)
        if e.op in (BinaryOp.MIN, BinaryOp.MAX):
            import numpy as np

            return (np.minimum if e.op == BinaryOp.MIN else np.maximum)(a, b)
        if e.op == BinaryOp.AND:
            return a & b
        if e.op == BinaryOp.OR:
            return a | b
        return FOLD[e.op](a, b)
    if isinstance(e, Select):
        import numpy as np

        return np.where(evaluate(e.cond, env), evaluate(e.if_true, env), evaluate(e.if_false, env))
    if isinstance(e, Element):
        reader = env.get(READ_ELEMENT)
        if reader is None:
            raise KeyError(f"{e} reads tensor {e.buffer.name}, whose data is not bound here")
        return reader(e.buffer, tuple(evaluate(i, env) for i in e.index))
    raise TypeError(f"cannot evaluate {e!r}")
