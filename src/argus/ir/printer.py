"""A readable text form of the IR: one line per statement, indented by nesting, each ending with
the DSL line it came from. `argus ir NAME` prints this; golden tests pin it."""

from __future__ import annotations

from argus.ir.expr import Expr
from argus.ir.nodes import (
    Alloc,
    AsyncCommit,
    AsyncWait,
    Barrier,
    BarrierKind,
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
    Let,
    Map,
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
from argus.ir.tags import AssertTag, AssertTagEq, Tag


def _dims(shape) -> str:
    return ", ".join(str(s) for s in shape)


def format_buffer(b: Buffer) -> str:
    if b.space == Space.MBARRIER:
        return f"{b.name}: mbarrier[{_dims(b.shape)}]"
    text = f"{b.name}: {b.space.value} {b.dtype.name}[{_dims(b.shape)}]"
    if b.space == Space.GLOBAL and b.strides is not None:
        text += f" strides ({_dims(b.strides)})"
    if b.space == Space.SHARED and b.layout is not None:
        text += f" layout {b.layout}"
    if b.space == Space.FRAGMENT and b.tv is not None:
        text += f" tv {b.tv} over {b.threads} threads"
        if b.atom:
            text += f" ({b.atom})"
    return text


def format_ref(r: TileRef | Broadcast | Expr) -> str:
    if isinstance(r, Broadcast):
        return f"broadcast({format_ref(r.ref)}, axes={r.axes})"
    if isinstance(r, Expr):
        return str(r)
    if r.is_whole():
        return r.buffer.name
    parts = []
    for d, (o, e) in enumerate(zip(r.origin, r.extent, strict=True)):
        parts.append(str(o) if d in r.dropped else (f"{o}:+{e}" if not (isinstance(o, int) and o == 0) else f":{e}"))
    if r.buffer.space == Space.MBARRIER and r.dropped:
        return f"{r.buffer.name}[{parts[0]}]"
    text = f"{r.buffer.name}[{', '.join(parts)}]"
    if r.perm is not None and list(r.perm) != sorted(r.perm):
        text += ".T" if len(r.perm) == 2 else f".permute{tuple(r.perm)}"
    if r.layout is not None:
        text += f" as {r.layout}"
    if r.bound is not None:
        text += " below (" + ", ".join("_" if b is None else str(b) for b in r.bound) + ")"
    if r.im2col is not None:
        i = r.im2col
        text += (
            f" im2col(lower={list(i.lower)}, upper={list(i.upper)}, strides={list(i.strides)}, "
            f"offsets=[{', '.join(str(o) for o in i.offsets)}])"
        )
    if r.gather is not None:
        text += f" rows {r.gather.index.name}[{r.gather.position} + row]"
    return text


def _line(s: Stmt) -> str:
    if isinstance(s, Alloc):
        return f"alloc {format_buffer(s.buffer)}"
    if isinstance(s, Copy):
        text = f"copy {format_ref(s.src)} -> {format_ref(s.dst)} atom={s.atom}"
        text += f" pad={s.pad}" if s.pad != 0.0 else ""
        text += f" staging={format_ref(s.staging)}" if s.staging is not None else ""
        text += " multicast" if s.multicast else ""
        return text + (f" mbarrier={format_ref(s.mbarrier)}" if s.mbarrier is not None else "")
    if isinstance(s, Fill):
        return f"fill {format_ref(s.dst)} = {s.value}"
    if isinstance(s, Map):
        return f"{format_ref(s.dst)} = {s.op.value}({', '.join(format_ref(x) for x in s.srcs)})"
    if isinstance(s, Reduce):
        acc = " accumulate" if s.accumulate else ""
        lanes = f" shuffle={list(s.shuffle_lanes)}" if s.shuffle_lanes else ""
        return f"{format_ref(s.dst)} = reduce_{s.op.value}({format_ref(s.src)}, axis={s.axis}){acc}{lanes}"
    if isinstance(s, Gemm):
        pending = f" wait_group={s.pending}" if s.pending else ""
        return f"gemm {format_ref(s.acc)} += {format_ref(s.a)} @ {format_ref(s.b)} atom={s.atom}{pending}"
    if isinstance(s, Barrier):
        if s.kind == BarrierKind.BLOCK:
            return "barrier"
        return f"barrier named id={s.barrier_id} threads={s.threads}"
    if isinstance(s, AsyncCommit):
        return "cp.async.commit_group"
    if isinstance(s, AsyncWait):
        return f"cp.async.wait_group {s.pending}"
    if isinstance(s, MbarrierInit):
        groups = f" ({s.arrive_count // s.warpgroups} x {s.warpgroups} warpgroups)" if s.warpgroups != 1 else ""
        pair = " cluster" if s.cluster else ""
        return f"mbarrier.init {format_ref(s.barriers)} count={s.arrive_count}{groups}{pair}"
    if isinstance(s, MbarrierArrive):
        tx = f" expect_tx={s.expect_bytes}" if s.expect_bytes else ""
        each = " per_warpgroup" if s.per_warpgroup else ""
        return f"mbarrier.arrive {format_ref(s.barrier)}{tx}{each}"
    if isinstance(s, MbarrierWait):
        return f"mbarrier.wait {format_ref(s.barrier)} phase={s.phase}"
    if isinstance(s, Fence):
        return f"fence {s.kind.value}"
    if isinstance(s, WgmmaWait):
        return f"wgmma.wait_group {s.pending}" + (f" after {format_ref(s.after)}" if s.after is not None else "")
    if isinstance(s, WarpgroupTurn):
        return f"turn {s.kind.value}"
    if isinstance(s, GroupBarrier):
        return f"group_barrier {format_ref(s.counter)} rank={s.rank} count={s.count}"
    if isinstance(s, Tag):
        return f"tag {format_ref(s.target)} = {s.name}({', '.join(str(c) for c in s.coords)})"
    if isinstance(s, AssertTagEq):
        return f"assert_tag_eq {format_ref(s.a)} == {format_ref(s.b)}"
    if isinstance(s, AssertTag):
        operands = ", ".join(format_ref(o) for o in s.operands)
        return f"assert_tag {s.text or s.pred} over {operands}"
    raise TypeError(f"no printer rule for {type(s).__name__}")


def _where(s: Stmt) -> str:
    """The statement's DSL line, and the pass that inserted or moved it."""
    made = f" [{s.made_by}]" if s.made_by else ""
    return f"  # {s.loc}{made}" if s.loc is not None else (f"  # [{s.made_by}]" if s.made_by else "")


def format_stmts(stmts: tuple[Stmt, ...], indent: int = 1) -> list[str]:
    pad = "  " * indent
    out: list[str] = []
    for s in stmts:
        if isinstance(s, For):
            stages = f", stages={s.stages}" if s.stages > 1 else ""
            if not (isinstance(s.start, int) and s.start == 0):
                stages += f", start={s.start}"
            out.append(f"{pad}for {s.var} in range({s.extent}) [{s.kind.value}{stages}]:{_where(s)}")
            out += format_stmts(s.body, indent + 1)
        elif isinstance(s, If):
            out.append(f"{pad}if {s.cond}:{_where(s)}")
            out += format_stmts(s.then, indent + 1)
            if s.orelse:
                out.append(f"{pad}else:")
                out += format_stmts(s.orelse, indent + 1)
        elif isinstance(s, Let):
            out.append(f"{pad}let {s.var} = {s.value}:{_where(s)}")
            out += format_stmts(s.body, indent + 1)
        elif isinstance(s, Role):
            regs = f", registers={s.registers}" if s.registers is not None else ""
            out.append(f"{pad}role {s.name} warpgroups={list(s.warpgroups)}{regs}:{_where(s)}")
            out += format_stmts(s.body, indent + 1)
        else:
            out.append(f"{pad}{_line(s)}{_where(s)}")
    return out


def format_kernel(k: Kernel) -> str:
    """The whole kernel as text."""
    lines = [f"kernel {k.name}(" + ", ".join(format_buffer(t) for t in k.tensors) + ")"]
    if k.params:
        lines.append("  params " + ", ".join(f"{n}={v}" for n, v in k.params))
    if k.assumptions:
        lines.append("  assume " + ", ".join(str(a) for a in k.assumptions))
    for va in k.value_assumptions:
        lines.append(f"  assume values {va.describe()}")
    for part in k.partial_outputs:
        limits = "" if part.below is None else " below (" + ", ".join(str(b) for b in part.below) + ")"
        lines.append(f"  writes part of {part.tensor.name}{limits}: {part.why}")
    for sums in k.partial_sums:
        lines.append(f"  partial sums {sums.tensor.name} along axis {sums.axis}: {sums.why}")
    blocks = ", ".join(str(v) for v in k.block_vars)
    resident = f", {k.blocks_per_sm} blocks per SM" if k.blocks_per_sm != 1 else ""  # launch bounds: in the fingerprint
    resident += f", clusters of {k.cluster}" if k.cluster != 1 else ""
    lines.append(f"  grid ({_dims(k.grid)}) as ({blocks}), threads {k.threads} as {k.thread_var}{resident}")
    lines += format_stmts(k.body)
    return "\n".join(lines)
