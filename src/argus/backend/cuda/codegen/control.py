"""Control flow: `For` loops (``#pragma unroll`` for unrolled ones), `If` branches and `Let` bindings. The statements
inside are emitted by their own rules (`Context.body`).

A pipelined loop is emitted as the IR has it: the deferred-release pass of `argus.ir.passes` has already rewritten a
consumer loop that keeps one ``wgmma`` group in flight (its `Gemm` waits with ``pending=1``, its release is one
iteration behind under ``if (k > 0)``, the last stage is released after the loop); the comment says which it is."""

from __future__ import annotations

from argus.backend.cuda.codegen.cexpr import paren
from argus.backend.cuda.codegen.context import Context
from argus.ir.expr import BinaryOp, BinOp, Const, Expr, free_vars
from argus.ir.nodes import For, Gemm, If, Let, LoopKind


def loop(cx: Context, s: For) -> None:
    var = cx.names.name(s.var, s.var.name)
    extent = cx.expr(s.extent)
    if s.kind == LoopKind.UNROLLED:
        cx.line("#pragma unroll")
    elif s.kind == LoopKind.PIPELINED and any(isinstance(x, Gemm) and x.pending for x in s.body):
        cx.line(
            f"// pipelined loop ({s.stages} stages): one wgmma group stays in flight; stage k-1 is released once "
            "the MMAs of iteration k are issued"
        )
    elif s.kind == LoopKind.PIPELINED:
        cx.line(f"// pipelined loop ({s.stages} stages), emitted as written: the pipelining pass has not run")
    with cx.block(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{"):
        cx.loop_depth += 1
        try:
            cx.body(s.body)
        finally:
            cx.loop_depth -= 1


def branch(cx: Context, s: If) -> None:
    with cx.block(f"if ({_condition(cx, s)}) {{", "}" if not s.orelse else "} else {"):
        cx.body(s.then)
    if s.orelse:
        cx.open(None)  # the else branch, after the "} else {" that closed the then branch
        cx.body(s.orelse)
        cx.close()


def _condition(cx: Context, s: If) -> str:
    """The branch's condition in C. A pass writes ``x > c`` as the IR's ``c < x`` (the IR has no greater-than);
    its branches are written back as ``x > c``, the way the pass stated them (traced conditions keep their order)."""
    c = s.cond
    if s.made_by and isinstance(c, BinOp) and c.op == BinaryOp.LT and isinstance(c.lhs, Const):
        return f"{cx.expr(c.rhs)} > {cx.expr(c.lhs)}"
    return cx.expr(c)


def let(cx: Context, s: Let) -> None:
    """``const int var = value;`` for the body. A binding that shadows a variable its value reads (``k = k - 1``)
    goes through a temporary, in a block of its own: C's ``const int k = k - 1`` would read the new ``k``."""
    var = cx.names.name(s.var, s.var.name)
    value = _value(cx, s.value)
    note = f"  // {s.note.format(value=value)}" if s.note else ""
    if isinstance(s.value, int) or s.var not in free_vars(s.value):
        cx.line(f"const int {var} = {value};{note}")
        cx.body(s.body)
        return
    temporary = cx.local(f"{var}_released")
    cx.line(f"const int {temporary} = {value};")
    with cx.block():
        cx.line(f"const int {var} = {temporary};{note}")
        cx.body(s.body)


#: Operators of C's additive precedence or tighter, left-associative: ``a op b - c`` needs no parentheses.
_ADDITIVE_OR_TIGHTER = (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.FLOORDIV, BinaryOp.MOD)


def _value(cx: Context, e: Expr | int) -> str:
    """A binding's value in C; ``x - c`` with ``x`` an additive or multiplicative term is written without
    parentheses around ``x`` (``(K + 63) / 64 - 1``), as C's precedence reads it."""
    if isinstance(e, BinOp) and e.op == BinaryOp.SUB and isinstance(e.lhs, BinOp) and e.lhs.op in _ADDITIVE_OR_TIGHTER:
        return f"{cx.expr(e.lhs)} - {paren(cx.expr(e.rhs))}"
    return cx.expr(e)
