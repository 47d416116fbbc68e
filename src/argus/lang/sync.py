"""Synchronisation: ``__syncthreads`` and named barriers, the async-proxy fence, ``cp.async`` groups, mbarriers
(``T.alloc_mbarrier``, ``T.mbarrier_arrive``, ``T.mbarrier_wait``), the warpgroups' turns (``T.turn_wait``,
``T.turn_pass``), and barriers among blocks of the grid (``T.group_barrier``)."""

from __future__ import annotations

from typing import Any

from argus.atoms.common import WARPGROUP_SIZE as WARPGROUP_THREADS
from argus.ir import types as irtypes
from argus.ir.expr import Expr, as_expr, free_vars
from argus.ir.nodes import (
    Alloc,
    AsyncCommit,
    AsyncWait,
    Barrier,
    BarrierKind,
    Buffer,
    Fence,
    FenceKind,
    For,
    GroupBarrier,
    If,
    Let,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Space,
    Stmt,
    TileRef,
    TurnKind,
    WarpgroupTurn,
    WgmmaWait,
    walk,
    whole,
)
from argus.lang.errors import DSLError, caller_loc
from argus.lang.fragment import Fragment
from argus.lang.tiles import GlobalTensor, simplify_origin
from argus.lang.trace import current


def fence_proxy_async() -> None:
    """``fence.proxy.async``: make this thread's ordinary shared-memory writes visible to the async
    proxy (TMA stores, wgmma operand reads) — needed before wgmma reads what registers stored."""
    current("T.fence_proxy_async").emit(Fence(FenceKind.PROXY_ASYNC, loc=caller_loc()))


def async_commit() -> None:
    """``cp.async.commit_group``."""
    current("T.async_commit").emit(AsyncCommit(loc=caller_loc()))


def async_wait(pending: int = 0) -> None:
    """``cp.async.wait_group pending``: wait until at most `pending` groups are still in flight."""
    current("T.async_wait").emit(AsyncWait(pending, loc=caller_loc()))


def barrier(barrier_id: int = 0, threads: int | None = None) -> None:
    """``__syncthreads()``; with a `barrier_id` > 0, the named barrier ``bar.sync id, threads``
    (for example between the consumer warpgroups of a warp-specialized kernel)."""
    st = current("T.barrier")
    loc = caller_loc()
    if barrier_id == 0 and threads is None:
        st.emit(Barrier(loc=loc))
        return
    if not 1 <= barrier_id <= 15 or threads is None or threads % 32 or not 32 <= threads <= (st.threads or 0):
        raise DSLError(
            "DSL_NAMED_BARRIER",
            f"named barrier {barrier_id} for {threads} threads is not valid",
            requirement=f"an id in 1..15 and a multiple of 32 threads up to {st.threads}",
            actual=(barrier_id, threads),
            loc=loc,
        )
    st.emit(Barrier(BarrierKind.NAMED, barrier_id, threads, loc=loc))


class MbarrierRef:
    def __init__(self, ref: TileRef) -> None:
        self.ref = ref


class Mbarriers:
    """An array of mbarriers (`T.alloc_mbarrier`); ``bars[s]`` is barrier `s`."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer

    def __getitem__(self, index: Any) -> MbarrierRef:
        return MbarrierRef(TileRef(self.buffer, simplify_origin((as_expr(index),)), (1,), dropped=(0,)))


def alloc_mbarrier(count: int, arrive_count: int = 1, cluster: bool = False) -> Mbarriers:
    """`count` mbarriers, each completing a phase after `arrive_count` arrivals (one per arriving
    warp role) and all the TMA bytes announced for that phase.

    `cluster` (in a grid of 2-block clusters, ``T.grid(..., cluster=2)``): the barriers are the pair's. Every
    arrival on one is made on this block's barrier and on the peer block's at the same index, so a phase completes
    once both blocks have made their `arrive_count` arrivals: what a stage that both blocks' multicast loads fill
    waits on before it is refilled (each block's consumers release it in both). No TMA bytes are announced on it."""
    st = current("T.alloc_mbarrier")
    loc = caller_loc()
    if not isinstance(count, int) or count < 1 or not isinstance(arrive_count, int) or arrive_count < 1:
        raise DSLError("DSL_MBARRIER", f"T.alloc_mbarrier needs positive int counts, got {count}, {arrive_count}")
    if cluster and st.cluster == 1:
        raise DSLError(
            "DSL_CLUSTER",
            "T.alloc_mbarrier(..., cluster=True) outside a grid of clusters (T.grid(..., cluster=2))",
            loc=loc,
        )
    buffer = Buffer(st.value_name("bar"), Space.MBARRIER, irtypes.u32, (count,), loc=loc)
    st.carve.place(buffer)
    st.emit(Alloc(buffer, loc=loc))
    if cluster:
        st.cluster_barriers.add(id(buffer))
    st.emit(MbarrierInit(whole(buffer), arrive_count, cluster=bool(cluster), loc=loc))
    return Mbarriers(buffer)


def mbarrier_arrive(bar: MbarrierRef, expect_bytes: int = 0, per_warpgroup: bool = False) -> None:
    """Arrive on `bar` (once for the warp role); with `expect_bytes`, announce that many bytes of
    TMA traffic for the current phase (``mbarrier.arrive.expect_tx``).

    `per_warpgroup`: each warpgroup of the role arrives for itself, as soon as its own threads get here (one
    elected thread per warpgroup, no barrier across the role first): ``len(warpgroups)`` arrivals, so the barrier's
    `arrive_count` counts them. A release then waits for no other warpgroup, and the warpgroups run free of each
    other (a role-wide barrier before every release keeps them in lockstep)."""
    st = current("T.mbarrier_arrive")
    loc = caller_loc()
    if not isinstance(bar, MbarrierRef):
        raise DSLError("DSL_MBARRIER", "T.mbarrier_arrive takes an element of T.alloc_mbarrier")
    if expect_bytes and id(bar.ref.buffer) in st.cluster_barriers:
        raise DSLError(
            "DSL_CLUSTER",
            "T.mbarrier_arrive: a cluster barrier (T.alloc_mbarrier(..., cluster=True)) takes arrivals, not TMA bytes: "
            "each block's bytes complete on its own barriers",
            loc=loc,
        )
    if per_warpgroup and expect_bytes:
        raise DSLError(
            "DSL_MBARRIER",
            "T.mbarrier_arrive: an arrival per warpgroup cannot announce TMA bytes",
            "announce the bytes in a single arrival (per_warpgroup=False)",
            loc=loc,
        )
    st.emit(MbarrierArrive(bar.ref, int(expect_bytes), per_warpgroup=bool(per_warpgroup), loc=loc))


def wgmma_wait(pending: int = 0, after: Any = None) -> None:
    """``wgmma.wait_group pending``: wait until at most `pending` of the warpgroup's ``wgmma`` groups (issued by
    ``T.gemm(..., wait_group=P)``) are in flight; 0 completes every MMA issued before it.

    `after` (a register fragment) keeps the wait behind that fragment's computation in the emitted code. The wait
    names no register, so ptxas may schedule it anywhere after the previous wait, and does hoist it: work written
    between an MMA's issue and its wait, meant to run while the MMA does (a softmax), then runs after it. Name the
    last value that work computes. It changes no semantics (the interpreter and the verifier see the same wait)."""
    if not isinstance(pending, int) or pending < 0:
        raise DSLError("DSL_MBARRIER", f"T.wgmma_wait takes a non-negative int, got {pending!r}")
    if after is not None and (not isinstance(after, Fragment) or after.dtype != irtypes.f32):
        raise DSLError(
            "DSL_MBARRIER",
            "T.wgmma_wait(after=...) takes an f32 register fragment, got "
            f"{getattr(after, 'dtype', type(after).__name__)}",
        )
    current("T.wgmma_wait").emit(WgmmaWait(pending, after=None if after is None else after.ref, loc=caller_loc()))


def mbarrier_wait(bar: MbarrierRef, phase: Any) -> None:
    """Wait until the phase of `bar` with parity `phase` (0 or 1) has completed."""
    st = current("T.mbarrier_wait")
    if not isinstance(bar, MbarrierRef):
        raise DSLError("DSL_MBARRIER", "T.mbarrier_wait takes an element of T.alloc_mbarrier")
    st.emit(MbarrierWait(bar.ref, as_expr(phase), loc=caller_loc()))


# --- barriers among blocks of the grid -------------------------------------------------------------------------------


def group_barrier(counters: Any, index: Any, rank: Any, count: int) -> None:
    """A barrier among the `count` blocks that arrive at counter ``counters[index]`` (a 1-d ``i32`` tensor, zeros
    when first used; the kernel must not read it otherwise): every thread of the executing scope (the warp role, or
    the block) waits here until all `count` blocks have arrived, and what those blocks' threads stored to global
    memory before it is then visible to the loads after it. `rank` (0 .. count - 1) names the arriving block
    among the `count`: rank 0 adds ``2^31 - (count - 1)`` to the counter, the others 1, so the counter's top bit
    flips exactly when the last arrives and is left at the next generation (no reset between launches).

    What it is for: blocks that exchange partial results through global memory in one launch, e.g. the `count`
    splits of one output tile of a split-K GEMM summing each other's partial products (`argus.kernels.gemm`,
    REDUCE ``"fused"``) instead of a second kernel. Progress needs the `count` blocks to run at once: the grid
    must fit on the device (one wave), which is the caller's to ensure; the interpreter runs every block of such a
    kernel together and reports a barrier that never completes (``INTERP_DEADLOCK``). The verifier checks the
    arrivals (each rank once per counter: ``RACE_GROUP_RANK``; the counter inside the tensor: ``OOB_GROUP_COUNTER``)
    and orders the stores before it against the other blocks' loads after it (``RACE_GLOBAL`` otherwise); that the
    `count` blocks run at once is not proved (docs/verify.md)."""
    st = current("T.group_barrier")
    loc = caller_loc()
    buf = counters.buffer if isinstance(counters, GlobalTensor) else None
    if buf is None or buf.rank != 1 or buf.dtype != irtypes.i32:
        raise DSLError(
            "DSL_GROUP_BARRIER",
            "T.group_barrier counts arrivals in an element of a 1-d i32 tensor parameter",
            requirement="a T.Tensor[(n,), T.i32] argument",
            actual=getattr(getattr(counters, "buffer", None), "name", type(counters).__name__),
            loc=loc,
        )
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < 2**31:
        raise DSLError("DSL_GROUP_BARRIER", f"T.group_barrier: count must be a positive int, got {count!r}", loc=loc)
    for what, v in (("index", index), ("rank", rank)):
        if isinstance(v, bool | float) or not isinstance(v, int | Expr):
            raise DSLError(
                "DSL_GROUP_BARRIER", f"T.group_barrier: {what} must be an integer expression", actual=repr(v), loc=loc
            )
        if isinstance(v, int) and (v < 0 or (what == "rank" and v >= count)):
            raise DSLError("DSL_GROUP_BARRIER", f"T.group_barrier: {what} {v} out of range (count {count})", loc=loc)
        if isinstance(v, Expr) and st.thread_var in free_vars(v):
            raise DSLError(
                "DSL_GROUP_BARRIER",
                f"T.group_barrier: the {what} depends on the thread; a block arrives as one",
                loc=loc,
            )
    ref = TileRef(buf, simplify_origin((as_expr(index),)), (1,), dropped=(0,))
    st.emit(GroupBarrier(ref, as_expr(rank), int(count), loc=loc))


# --- turns among the warpgroups of a role (ping-pong) ---------------------------------------------------------------


def turn_wait() -> None:
    """Take the role's turn: wait until the previous warpgroup of the role (in a ring: warpgroup 0 first) passes it
    (``bar.sync`` on this warpgroup's turn barrier). What a warpgroup issues while it holds the turn (its MMAs) goes
    to the tensor cores before the next warpgroup's, whose softmax runs meanwhile: FlashAttention-3's ping-pong.

    Scheduling only: it orders no data access (the verifier and the interpreter ignore it). The tracer proves the
    protocol: every warpgroup takes and passes the turn alternately, starting with `T.turn_wait` and ending with
    `T.turn_pass`, the same number of times (loop bodies and branches leave it as they found it, and their extents
    and conditions do not depend on the thread), so no warpgroup waits for a pass that never comes."""
    _turn(TurnKind.WAIT, "T.turn_wait")


def turn_pass() -> None:
    """Hand the turn to the next warpgroup of the role (``bar.arrive`` on its turn barrier); see `turn_wait`."""
    _turn(TurnKind.PASS, "T.turn_pass")


def _turn(kind: TurnKind, what: str) -> None:
    st = current(what)
    loc = caller_loc()
    if st.role is None or st.role[1] // WARPGROUP_THREADS < 2:
        raise DSLError(
            "DSL_TURN",
            f"{what}: turns are taken among the warpgroups of one warp role",
            "call it inside T.role(..., warpgroups=(w1, w2, ...)) with two or more warpgroups",
            loc=loc,
        )
    st.emit(WarpgroupTurn(kind, loc=loc))


def check_turns(body: tuple[Stmt, ...], role: str, thread: Any) -> None:
    """Raise `DSLError` ``DSL_TURN`` unless every warpgroup of the role takes and passes its turn alternately, the
    same number of times, beginning by taking it and ending having passed it (`turn_wait`)."""
    if not any(isinstance(s, WarpgroupTurn) for s in walk(body)):
        return

    def fail(why: str, s: Any) -> DSLError:
        return DSLError(
            "DSL_TURN",
            f"the turns of role {role!r} could deadlock: {why}",
            "take the turn with T.turn_wait() and hand it on with T.turn_pass(), alternately, in code every "
            "warpgroup of the role runs the same number of times",
            loc=getattr(s, "loc", None),
        )

    def run(stmts: tuple[Stmt, ...], held: bool) -> bool:
        for s in stmts:
            if isinstance(s, WarpgroupTurn):
                if s.kind == TurnKind.WAIT and held:
                    raise fail("T.turn_wait while the warpgroup holds the turn", s)
                if s.kind == TurnKind.PASS and not held:
                    raise fail("T.turn_pass of a turn the warpgroup does not hold", s)
                held = s.kind == TurnKind.WAIT
                continue
            if not any(isinstance(x, WarpgroupTurn) for x in walk((s,))):
                continue
            if isinstance(s, For):
                if thread in free_vars(as_expr(s.extent)):
                    raise fail("a loop whose trip count depends on the thread takes turns", s)
                if run(s.body, held) != held:
                    raise fail("a loop body that takes turns does not leave the turn as it found it", s)
            elif isinstance(s, If):
                if thread in free_vars(as_expr(s.cond)):
                    raise fail("a branch on the thread takes turns", s)
                if run(s.then, held) != held or run(s.orelse, held) != held:
                    raise fail("a branch that takes turns does not leave the turn as it found it", s)
            elif isinstance(s, Let):
                held = run(s.body, held)
        return held

    if run(body, False):
        raise fail("the role ends holding the turn (end with T.turn_pass)", body[-1] if body else None)
