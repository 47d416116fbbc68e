"""Control flow: `For` loops (``#pragma unroll`` for unrolled ones; a pipelined consumer loop planned for a deferred
release goes to `hopper.release_loop`) and `If` branches. The statements inside are emitted by their own rules
(`Context.body`)."""

from __future__ import annotations

from argus.backend.cuda.codegen.context import Context
from argus.backend.cuda.codegen.hopper import release_loop
from argus.ir.nodes import For, If, LoopKind


def loop(cx: Context, s: For) -> None:
    plan = cx.facts.deferred.get(id(s)) if s.kind == LoopKind.PIPELINED else None
    if plan is not None:
        release_loop(cx, s, plan)
        return
    var = cx.names.name(s.var, s.var.name)
    extent = cx.expr(s.extent)
    if s.kind == LoopKind.UNROLLED:
        cx.line("#pragma unroll")
    elif s.kind == LoopKind.PIPELINED:
        cx.line(f"// pipelined loop ({s.stages} stages), emitted as written: the pipelining pass has not run")
    with cx.block(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{"):
        cx.body(s.body)


def branch(cx: Context, s: If) -> None:
    with cx.block(f"if ({cx.expr(s.cond)}) {{", "}" if not s.orelse else "} else {"):
        cx.body(s.then)
    if s.orelse:
        cx.open(None)  # the else branch, after the "} else {" that closed the then branch
        cx.body(s.orelse)
        cx.close()
