"""Warp specialization on Hopper: warp roles and their register budgets.

* `role_block` — a `Role` becomes ``if (warpgroup in role) { setmaxnreg.{inc,dec}; ... }``; inside it the
  thread index is relative to the role's first thread (its fragments are spread over the role's threads) and
  the role's threads synchronize on a named barrier of their own (`analysis.NamedBarriers`);
* `single_issuer` — whether a role's every effect is its thread 0's (a TMA producer), so that its first warp
  alone can run it (`Emitter.single_warp_issuers`);
* `warpgroup_turn` — `T.turn_wait` / `T.turn_pass` (a `WarpgroupTurn`): ``bar.sync`` on the warpgroup's own turn
  barrier, ``bar.arrive`` on the next one's; a role that takes turns gets one barrier per warpgroup
  (`analysis.NamedBarriers.for_turns`), hands the first turn to warpgroup 0 at its start and collects the ring's
  last pass at its end.
"""

from __future__ import annotations

import re

from argus.atoms.common import register_pool, register_split, setmaxnreg_ok
from argus.backend.cuda.codegen.analysis import takes_turns
from argus.backend.cuda.codegen.context import WARPGROUP, Context
from argus.backend.cuda.codegen.sync import NAMED_BARRIERS
from argus.ir.nodes import (
    Copy,
    For,
    MbarrierArrive,
    MbarrierWait,
    Role,
    Stmt,
    TurnKind,
    WarpgroupTurn,
    walk,
)


def single_issuer(body: tuple[Stmt, ...]) -> bool:
    """True when everything a warp role's body does is issued by its thread 0 — TMA loads and mbarrier arrivals that
    announce bytes (both lowered ``if (tid == 0)``) — apart from control (loops, branches), mbarrier waits and
    invariants: then its first warp alone can run it. (An arrival without bytes is preceded by a barrier of all the
    role's threads, and anything else is done by every thread: such roles are run by all their warps.)"""
    from argus.ir.nodes import If
    from argus.ir.tags import AssertTag, AssertTagEq, Tag

    for s in walk(body):
        if isinstance(s, For | If | MbarrierWait | Tag | AssertTag | AssertTagEq):
            continue
        if isinstance(s, MbarrierArrive) and s.expect_bytes:
            continue
        if isinstance(s, Copy) and s.atom == "tma" and s.mbarrier is not None:
            continue
        return False
    return True


# --- warp roles -----------------------------------------------------------------------------------------------


def role_block(cx: Context, s: Role) -> None:
    """``if (the thread is in the role's warpgroups) { setmaxnreg; the role's thread index; the body }``."""
    if cx.scope.role is not None:
        raise cx.error(f"warp role {s.name!r} nested inside role {cx.scope.role.name!r}")
    groups = sorted(s.warpgroups)
    if not groups or groups != list(range(groups[0], groups[-1] + 1)):
        raise cx.error(f"warp role {s.name!r} over warpgroups {tuple(s.warpgroups)} that are not consecutive")
    first, threads = WARPGROUP * groups[0], WARPGROUP * len(groups)
    if first + threads > cx.kernel.threads:
        raise cx.invalid(f"role {s.name!r} names warpgroups past the block's {cx.kernel.threads} threads")
    tid = cx.tid
    cond = f"{tid} < {first + threads}" if first == 0 else f"{tid} >= {first} && {tid} < {first + threads}"
    with cx.block(f"if ({cond}) {{  // role {s.name}: warpgroups {tuple(groups)}"):
        if s.registers is not None:
            cx.line(_setmaxnreg(cx, s))
        role_tid = cx.local(re.sub(r"\W", "_", s.name) + "_tid")
        cx.line(f"const int {role_tid} = {tid if first == 0 else f'{tid} - {first}'};  // thread index in the role")
        barrier_id = cx.barriers.for_role()
        if barrier_id is None:
            raise cx.error(f"more than {NAMED_BARRIERS - 1} named barriers (one per warp role)")
        turns = -1
        if takes_turns(s):
            turns = cx.barriers.for_turns(len(groups))
            if turns is None:
                raise cx.error(f"more than {NAMED_BARRIERS - 1} named barriers (roles, and turns per warpgroup)")
            cx.line(
                f"if ({role_tid} / {WARPGROUP} == {len(groups) - 1}) {turn_ring(turns, 0, 'arrive')}  "
                "// the first turn goes to warpgroup 0"
            )
        with cx.within(tid=role_tid, threads=threads, role=s, role_barrier=barrier_id, turn_barrier=turns):
            if cx.switches.single_warp_issuers and len(groups) == 1 and single_issuer(s.body):
                note = "every effect of this role is its thread 0's: one warp runs it, the others rest"
                with cx.block(f"if ({role_tid} < 32) {{  // {note}"):
                    cx.body(s.body)
            else:
                cx.body(s.body)
        if turns >= 0:
            cx.line(
                f"if ({role_tid} / {WARPGROUP} == 0) {turn_ring(turns, 0, 'sync')}  "
                "// the ring's last pass: no arrival is left on a barrier"
            )


def turn_ring(first: int, index: str | int, op: str) -> str:
    """``bar.sync`` / ``bar.arrive`` on turn barrier `first + index` for the two warpgroups that meet there (the one
    whose turn it is, and the one passing it)."""
    barrier = f"{first} + {index}" if index != 0 else str(first)
    return f'asm volatile("bar.{op} %0, %1;\\n" :: "r"({barrier}), "n"({2 * WARPGROUP}) : "memory");'


def warpgroup_turn(cx: Context, s: WarpgroupTurn) -> None:
    """`T.turn_wait`: ``bar.sync`` on this warpgroup's turn barrier; `T.turn_pass`: ``bar.arrive`` on the next
    warpgroup's (a ring). Each barrier counts the waiting warpgroup and the passing one: 256 threads."""
    role = cx.scope.role
    if role is None or cx.scope.turn_barrier < 0:
        raise cx.error("a warpgroup turn outside a role that takes turns")
    n = len(role.warpgroups)
    wg = f"{cx.tid} / {WARPGROUP}"
    if s.kind == TurnKind.WAIT:
        cx.line(turn_ring(cx.scope.turn_barrier, wg, "sync") + "  // take this warpgroup's turn")
    else:
        cx.line(turn_ring(cx.scope.turn_barrier, f"({wg} + 1) % {n}", "arrive") + "  // pass the turn on")


def _setmaxnreg(cx: Context, s: Role) -> str:
    """The role's ``setmaxnreg`` (``inc`` or ``dec`` from the count every thread has at entry), its budget checked
    against the block's register pool together with the other roles'."""
    registers = int(s.registers)
    if not setmaxnreg_ok(registers):
        raise cx.invalid(f"role {s.name!r}: setmaxnreg takes a multiple of 8 in 24..256, got {registers}")
    roles = [(len(r.warpgroups), r.registers) for r in walk(cx.kernel.body) if isinstance(r, Role)]
    blocks = cx.kernel.blocks_per_sm  # entry: __launch_bounds__(threads, blocks)
    total, entry = register_split(cx.kernel.threads, roles, blocks)
    pool = register_pool(cx.kernel.threads, blocks)
    if total > pool:
        raise cx.invalid(f"the warp roles' register budgets need {total} registers, the block has {pool}")
    cx.needs.register_roles = True
    op = "dec" if registers < entry else "inc"
    return f'asm volatile("setmaxnreg.{op}.sync.aligned.u32 {registers};\\n" ::: "memory");  // from {entry} at entry'
