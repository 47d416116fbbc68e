"""The deferred-release pass: consumer loops that keep one ``wgmma`` group in flight.

A pipelined consumer loop written ::

    for k in T.pipeline(n, stages=S):                  # S >= DEFERRED_RELEASE_MIN_STAGES, in a warp role
        T.mbarrier_wait(full[s], phase)
        T.gemm(sA[s], sB[s], acc)                      # wgmma, both operands from shared memory (one or more
                                                       # such statements: a SwiGLU GEMM's gate and up)
        T.mbarrier_arrive(empty[s])                    # the only arrival on `empty` in the kernel

waits for its MMAs to finish before it releases the stage, so the tensor cores idle while the next stage's barrier is
checked. The pass rewrites it into the loop the hardware should run (and that the code generator renders) ::

    for k in T.pipeline(n, stages=S):
        T.mbarrier_wait(full[s], phase)
        gemm(sA[s], sB[s], acc) wait_group=1           # issue k's MMAs; wait for those of k - 1 only
                                                       # (n statements: wait_group=n each)
        if k > 0:
            let k = k - 1:                             # the stage of iteration k - 1 (same expression as written)
                mbarrier.arrive empty[s] per_warpgroup # its MMAs have finished reading it
    wgmma.wait_group 0                                 # the last iteration's MMAs
    if n > 0:
        let k = n - 1:
            mbarrier.arrive empty[s] per_warpgroup     # release the last stage

and multiplies the arrive count of `empty` by the role's warpgroups (`MbarrierInit.warpgroups`): each warpgroup
releases a stage for itself once its own MMAs (``wgmma.wait_group`` is per warpgroup) have finished reading it, and
the phase completes when all of them have, so no barrier among the role's threads is needed.

Only loops of at least `DEFERRED_RELEASE_MIN_STAGES` stages: releasing a stage one iteration later leaves the
producer S-2 tiles of look-ahead instead of S-1, which starves a 3-stage pipeline (measured on an H200: 128x128
tiles, 3 stages, 4096^3 went from 0.66x to 0.51x cuBLAS with it; 128x256 tiles, 4 stages, from 0.79x to 0.84x;
benchmarks/results/2026-11-21-gemm-h200.md).
"""

from __future__ import annotations

import dataclasses

from argus.atoms import MmaAtom, get_atom
from argus.ir.expr import Const, Expr
from argus.ir.nodes import (
    For,
    Gemm,
    If,
    Kernel,
    Let,
    LoopKind,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Role,
    Space,
    Stmt,
    WgmmaWait,
    walk,
)
from argus.ir.tags import AssertTag, AssertTagEq, Tag

#: The `Stmt.made_by` of the statements this pass inserts or moves.
DEFERRED_RELEASE = "deferred release"

#: The fewest pipeline stages for which a consumer loop keeps one wgmma group in flight (see the module docstring).
DEFERRED_RELEASE_MIN_STAGES = 4

#: Statements that do nothing at run time (annotations for the verifier): they may sit anywhere in the loop.
_ANNOTATIONS = (Tag, AssertTag, AssertTagEq)


def defer_releases(kernel: Kernel) -> Kernel:
    """`kernel` with every matching consumer loop rewritten (see the module docstring); the kernel itself when none
    matches. Idempotent: a rewritten loop no longer matches."""
    arrivals: dict[int, int] = {}  # id(barrier buffer) -> MbarrierArrive statements on it, in the whole kernel
    for st in walk(kernel.body):
        if isinstance(st, MbarrierArrive):
            arrivals[id(st.barrier.buffer)] = arrivals.get(id(st.barrier.buffer), 0) + 1
    scaled: dict[int, int] = {}  # id(barrier buffer) -> the warpgroups that now release it, one arrival each

    def loop(st: For, role: Role) -> tuple[Stmt, ...] | None:
        """The statements replacing `st`, or None when it does not match."""
        if st.kind != LoopKind.PIPELINED or st.stages < DEFERRED_RELEASE_MIN_STAGES:
            return None
        live = [x for x in st.body if not isinstance(x, _ANNOTATIONS)]
        if len(live) < 3:
            return None
        wait, gemms, arrive = live[0], live[1:-1], live[-1]
        if not (isinstance(wait, MbarrierWait) and isinstance(arrive, MbarrierArrive)):
            return None
        if arrive.expect_bytes or arrive.per_warpgroup or arrive.barrier.buffer is wait.barrier.buffer:
            return None
        if arrivals.get(id(arrive.barrier.buffer)) != 1:
            return None
        warpgroups = len(role.warpgroups)
        for gemm in gemms:
            if not isinstance(gemm, Gemm) or gemm.pending:
                return None
            atom = get_atom(gemm.atom)
            if not (isinstance(atom, MmaAtom) and atom.ptx.startswith("wgmma.")):
                return None
            if gemm.a.space != Space.SHARED or gemm.b.space != Space.SHARED:
                return None
            if gemm.groups[0] * gemm.groups[1] != warpgroups:
                return None
        scaled[id(arrive.barrier.buffer)] = warpgroups
        made = {"loc": arrive.loc, "made_by": DEFERRED_RELEASE}
        release = MbarrierArrive(arrive.barrier, per_warpgroup=True, **made)  # type: ignore[arg-type]
        behind = If(
            _positive(st.var),
            (Let(st.var, st.var - 1, (release,), note="the arrival of iteration {value}", **made),),  # type: ignore[arg-type]
            **made,  # type: ignore[arg-type]
        )
        # each MMA statement commits one group; after the iteration's last, the iteration's own groups may stay in
        # flight (groups complete in issue order, so those of the iteration before have finished): a statement
        # before the last waits no longer than that either
        in_flight = len(gemms)
        body = []
        for x in st.body:
            if any(x is g for g in gemms):
                body.append(dataclasses.replace(x, pending=in_flight))
            elif x is arrive:
                body.append(behind)
            else:
                body.append(x)
        last = If(
            _positive(st.extent),
            (Let(st.var, _minus_one(st.extent), (release,), note="the arrival of the last iteration", **made),),  # type: ignore[arg-type]
            **made,  # type: ignore[arg-type]
        )
        drain = WgmmaWait(0, note="the last iteration's MMAs", loc=gemms[-1].loc, made_by=DEFERRED_RELEASE)
        return (dataclasses.replace(st, body=tuple(body)), drain, last)

    def visit(stmts: tuple[Stmt, ...], role: Role | None) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        changed = False
        for st in stmts:
            new: tuple[Stmt, ...] = (st,)
            if isinstance(st, Role):
                body = visit(st.body, st)
                new = (st,) if body is st.body else (dataclasses.replace(st, body=body),)
            elif isinstance(st, For):
                lowered = loop(st, role) if role is not None else None
                if lowered is not None:
                    new = lowered
                else:
                    body = visit(st.body, role)
                    new = (st,) if body is st.body else (dataclasses.replace(st, body=body),)
            elif isinstance(st, If):
                then, orelse = visit(st.then, role), visit(st.orelse, role)
                if then is not st.then or orelse is not st.orelse:
                    new = (dataclasses.replace(st, then=then, orelse=orelse),)
            elif isinstance(st, Let):  # a loop under T.let bindings (the grouped GEMM's unit decode)
                body = visit(st.body, role)
                new = (st,) if body is st.body else (dataclasses.replace(st, body=body),)
            changed = changed or new != (st,)
            out.extend(new)
        return tuple(out) if changed else stmts

    body = visit(kernel.body, None)
    if body is kernel.body:
        return kernel

    done: set[int] = set()

    def count(stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        """The barriers' initialisations (in the kernel's top-level statements, where the tracer puts them) with
        the count multiplied by their releasing role's warpgroups."""
        out = []
        for st in stmts:
            groups = scaled.get(id(st.barriers.buffer)) if isinstance(st, MbarrierInit) else None
            if groups is not None and isinstance(st, MbarrierInit) and st.warpgroups == 1:
                st = dataclasses.replace(st, arrive_count=st.arrive_count * groups, warpgroups=groups)
                done.add(id(st.barriers.buffer))
            out.append(st)
        return tuple(out)

    body = count(body)
    if done != set(scaled):  # a barrier initialised elsewhere (or twice): its count cannot follow, keep the loops
        return kernel
    return dataclasses.replace(kernel, body=body)


def _positive(e: Expr | int) -> Expr:
    """``e > 0`` (``0 < e``: the IR has no greater-than)."""
    return Const(0) < e if not isinstance(e, Expr) else e > 0


def _minus_one(e: Expr | int) -> Expr | int:
    return e - 1
