"""The synchronisation rules: barriers, fences, ``cp.async`` groups and mbarriers, and the named barriers the
generator hands out.

* `barrier` — ``__syncthreads`` for a block barrier, ``bar.sync id, threads`` for a named one;
* `async_commit` / `async_wait` — ``cp.async`` commit and wait groups (`prelude`);
* `fence` — ``fence.proxy.async`` or ``wgmma.fence``;
* mbarriers are 64-bit words carved from shared memory: initialised by thread 0 (`mbarrier_init`), then
  ``fence.mbarrier_init`` and ``__syncthreads``; an arrive is made once per scope (as the IR counts it) by the
  scope's thread 0 (``mbarrier.arrive.expect_tx`` with ``expect_bytes``), after a barrier over the scope when it
  is a release (no ``expect_bytes``: every thread of the scope must be done with the stage), or by thread 0 of
  each warpgroup with no barrier for a release made per warpgroup (`MbarrierArrive.per_warpgroup`, whose barrier
  the deferred-release pass of `argus.ir.passes` initialised with a count multiplied by the warpgroups); a wait is
  a ``try_wait.parity`` loop in every thread (`mbarrier_wait`);
* `wgmma_wait` — ``wgmma.wait_group`` (`WgmmaWait`);
* `scope_barrier` — the C text that synchronizes the current scope's threads (the role's named barrier, or the
  block's);
* `NamedBarriers` — hardware barrier ids for warp roles (upwards, above the kernel's own) and staged TMA
  stores (downwards, from the top).
"""

from __future__ import annotations

import numpy as np

from argus.backend.cuda.codegen.analysis import NAMED_BARRIERS, NamedBarriers  # noqa: F401 - read here by name too
from argus.backend.cuda.codegen.context import WARPGROUP, Context
from argus.ir.nodes import (
    AsyncCommit,
    AsyncWait,
    Barrier,
    BarrierKind,
    Fence,
    FenceKind,
    GroupBarrier,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Space,
    TileRef,
    WgmmaWait,
)


def scope_barrier(cx: Context) -> str:
    """C text that synchronizes the threads of the current scope (the role's, or the block's)."""
    role = cx.scope.role
    if role is None:
        return "__syncthreads();"
    return (
        f'asm volatile("bar.sync %0, %1;\\n" :: "r"({cx.scope.role_barrier}), "r"({cx.threads}) : "memory");'
        f"  // role {role.name}'s threads"
    )


def barrier(cx: Context, s: Barrier) -> None:
    if s.kind == BarrierKind.BLOCK:
        cx.line("__syncthreads();")
        return
    threads = s.threads if s.threads is not None else cx.kernel.threads
    cx.line(f'asm volatile("bar.sync %0, %1;\\n" :: "r"({s.barrier_id}), "r"({threads}) : "memory");')


def async_commit(cx: Context, s: AsyncCommit) -> None:
    cx.use("cp_async")
    cx.line("argus::cp_async_commit();")


def async_wait(cx: Context, s: AsyncWait) -> None:
    cx.use("cp_async")
    cx.line(f"argus::cp_async_wait<{int(s.pending)}>();")


def fence(cx: Context, s: Fence) -> None:
    if s.kind == FenceKind.PROXY_ASYNC:
        cx.line('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')
    elif s.kind == FenceKind.WGMMA:
        cx.line('asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");')
    else:
        raise cx.error(f"fence {s.kind}")


# --- barriers among blocks ------------------------------------------------------------------------------------------


def group_barrier(cx: Context, s: GroupBarrier) -> None:
    """`T.group_barrier`: every thread of the scope completes its TMA stores (they write global memory through the
    async proxy, ordered before the arrival by the proxy fence), the scope synchronizes, its thread 0 arrives and
    waits (`prelude` ``group_barrier``), and the scope synchronizes again, so that no thread reads before the wait."""
    cx.use("group_barrier")
    counter = cx.buffer_name(s.counter.buffer)
    index = cx.expr(s.counter.origin[0])
    rank = cx.expr(s.rank)
    if cx.needs.tma_stores:
        cx.use("tma_store")
        cx.line("argus::tma_store_wait_all();  // this thread's TMA stores have written global memory")
        cx.line('asm volatile("fence.proxy.async.global;\\n" ::: "memory");')
    sync = scope_barrier(cx) if cx.scope.role is not None else "__syncthreads();  // the block's threads"
    if cx.threads > 1:
        cx.line(sync + " (every thread's stores are issued before the arrival)")
    cx.line(
        f"if ({cx.tid} == 0) argus::group_barrier({counter} + ({index}), ({rank}) == 0, {int(s.count)}u);"
        f"  // rank {s.rank} of the {s.count} blocks that arrive at {s.counter.buffer.name}[{s.counter.origin[0]}]"
    )
    if cx.threads > 1:
        cx.line(sync + " (no thread reads before the group has arrived)")


# --- mbarriers -------------------------------------------------------------------------------------------


def mbarrier_address(cx: Context, ref: TileRef) -> str:
    """The shared-memory address (``unsigned``) of the mbarrier `ref` points at."""
    if ref.buffer.space != Space.MBARRIER:
        raise cx.invalid(f"{ref.buffer.name} is not an mbarrier array")
    cx.use("mbarrier")
    index = cx.expr(ref.origin[0]) if ref.origin else "0"
    return f"argus::smem_u32(&{cx.buffer_name(ref.buffer)}[{index}])"


def mbarrier_init(cx: Context, s: MbarrierInit) -> None:
    """Thread 0 initialises every barrier of the array with the IR's count; a barrier released per warpgroup
    (`MbarrierInit.warpgroups`, set by the deferred-release pass) counts one arrival per warpgroup."""
    if cx.scope.role is not None:
        raise cx.error("mbarrier initialisation inside a warp role", "initialise mbarriers before the roles")
    cx.use("mbarrier")
    b = s.barriers.buffer
    name = cx.buffer_name(b)
    count = int(np.prod(b.static_shape))
    arrivals, why = int(s.arrive_count), ""
    if s.warpgroups != 1:
        groups = int(s.warpgroups)
        why = f"  // {arrivals // groups} x {groups}: each warpgroup of the releasing role arrives for itself"
    if s.cluster:  # the pair's barrier: each block's arrivals are made on both blocks' copies
        if cx.kernel.cluster == 1:
            raise cx.invalid("a cluster mbarrier in a kernel launched without clusters")
        arrivals *= cx.kernel.cluster
        why += f"  // x {cx.kernel.cluster}: both blocks of the cluster arrive on it"
    with cx.block(f"if ({cx.tid} == 0) {{"):
        i = cx.local("i")
        cx.line(
            f"for (int {i} = 0; {i} < {count}; ++{i}) argus::mbarrier_init(argus::smem_u32(&{name}[{i}]), "
            f"{arrivals});{why}"
        )
        cx.forget(i)
        cx.line("argus::mbarrier_init_fence();")
    if cx.kernel.cluster > 1:  # a superset of __syncthreads: the peer's barriers are initialised too
        cx.use("cluster")
        cx.line("argus::cluster_sync_after_init();  // every thread of both blocks sees the initialised barriers")
        return
    cx.line("__syncthreads();  // every thread sees the initialised barriers")


def mbarrier_arrive(cx: Context, s: MbarrierArrive) -> None:
    address = mbarrier_address(cx, s.barrier)
    pair = id(s.barrier.buffer) in cx.cluster_barriers
    if pair:
        if s.expect_bytes:
            raise cx.invalid("TMA bytes announced on a cluster mbarrier")
        cx.use("cluster")
    arrive = (
        f"{{ argus::mbarrier_arrive({address}); argus::mbarrier_arrive_peer({address}); }}"
        if pair
        else f"argus::mbarrier_arrive({address});"
    )
    if s.per_warpgroup:
        if s.expect_bytes:
            raise cx.invalid("an arrival per warpgroup that announces TMA bytes")
        both = " (in both blocks of the cluster)" if pair else ""
        cx.line(
            f"if ({cx.tid} % {WARPGROUP} == 0) {arrive}  // this warpgroup's MMAs have finished reading the stage{both}"
        )
        return
    if s.expect_bytes:
        cx.line(
            f"if ({cx.tid} == 0) argus::mbarrier_arrive_expect_tx({address}, {int(s.expect_bytes)});  "
            "// one arrival for the scope, plus the bytes TMA will deliver"
        )
        return
    if cx.threads > 1:
        cx.line(scope_barrier(cx) + "  (all of them are done with what the arrival releases)")
    cx.line(
        f"if ({cx.tid} == 0) {arrive}  // one arrival for the scope{' (in both blocks of the cluster)' if pair else ''}"
    )


def mbarrier_wait(cx: Context, s: MbarrierWait) -> None:
    address = mbarrier_address(cx, s.barrier)
    cx.line(f"argus::mbarrier_wait({address}, static_cast<unsigned>({cx.expr(s.phase)}) & 1u);")


def wgmma_wait(cx: Context, s: WgmmaWait) -> None:
    cx.use("wgmma")
    note = f"  // {s.note}" if s.note else ""
    if s.after is None:
        cx.line(f"argus::wgmma_wait<{int(s.pending)}>();{note}")
        return
    # behind the computation of `after`'s last value: ptxas would hoist a bare wait up to the previous one
    cx.use("wgmma_wait_after")
    last = f"{cx.buffer_name(s.after.buffer)}[{s.after.buffer.values_per_thread - 1}]"
    cx.line(f"argus::wgmma_wait_after<{int(s.pending)}>({last});  // kept behind {s.after.buffer.name}{note}")
