"""What the code generator knows of a kernel before it emits a line: `analyse` walks the IR once.

It names every tensor, shape symbol, block index, buffer and loop variable (before any rule chooses a
block-local name, so that those never take an IR object's name), and returns the `KernelFacts` the rules
read: the shared-memory carve (`argus.atoms.smem.SharedCarve`, the one the tracer and the verifier
check), the tensors the kernel writes, the shared buffers written by ordinary stores (``wgmma`` must fence
them into the async proxy), and the fragments declared at the top because they are used outside the scope of
their allocation. The named barriers the generator hands out during emission are planned here too
(`NamedBarriers`): a plan the rules of `hopper`, `sync` and `epilogue` read, kept below them so that no two modules
of the generator import each other. (Consumer loops that keep a ``wgmma`` group in flight are not planned here: the
deferred-release pass of `argus.ir.passes` writes them into the IR, and the rules render what it wrote.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from argus.atoms.smem import SharedCarve
from argus.atoms.target import DEFAULT_TARGET
from argus.backend.cuda.codegen.cexpr import Names
from argus.backend.cuda.codegen.errors import CodegenError
from argus.ir.nodes import (
    Alloc,
    Barrier,
    Broadcast,
    Buffer,
    Copy,
    Fill,
    For,
    GroupBarrier,
    Kernel,
    Let,
    Role,
    Space,
    Stmt,
    TileRef,
    WarpgroupTurn,
    walk,
)


@dataclass(frozen=True)
class KernelFacts:
    """Facts of the whole kernel, fixed before emission.

    Attributes:
        shared: byte offset in ``argus_smem`` of each shared buffer and mbarrier array, in allocation order.
        shared_bytes: dynamic shared memory of the block (the carve's total).
        written: tensors the kernel stores to (their pointers are not ``const``).
        generic_shared_writes: shared buffers written by ordinary (non-TMA) copies and fills.
        hoisted: fragments used outside the scope of their allocation, in allocation order: declared at the top.
    """

    shared: Mapping[Buffer, int]
    shared_bytes: int
    written: frozenset[Buffer]
    generic_shared_writes: frozenset[Buffer]
    hoisted: tuple[Buffer, ...]


def analyse(kernel: Kernel, names: Names) -> KernelFacts:
    """Name the kernel's objects in `names` (tensors, shape symbols, block indices, then buffers and loop
    variables in program order) and return its `KernelFacts`."""
    for t in kernel.tensors:
        names.name(t, t.name)
    for v in kernel.shape_vars:
        names.name(v, v.name)
    for axis, v in zip("xyz", kernel.block_vars, strict=False):
        names.name(v, v.name or f"b{axis}")
    carve = SharedCarve()
    shared: dict[Buffer, int] = {}
    written: set[Buffer] = set()
    generic_shared_writes: set[Buffer] = set()
    alloc_scope: dict[Buffer, tuple] = {}
    uses: dict[Buffer, list[tuple]] = {}
    order: dict[Buffer, int] = {}

    def visit(stmts: tuple[Stmt, ...], scope: tuple) -> None:
        for s in stmts:
            if isinstance(s, For | Let):
                names.name(s.var, s.var.name)
            if isinstance(s, Alloc):
                b = s.buffer
                names.name(b, b.name)
                order[b] = len(order)
                if b.space in (Space.SHARED, Space.MBARRIER):
                    if b.space != Space.MBARRIER and b.layout is None:
                        raise CodegenError("CODEGEN_INVALID", f"shared buffer {b.name} has no layout", loc=s.loc)
                    shared[b] = carve.place(b)
                elif b.space == Space.FRAGMENT:
                    alloc_scope[b] = scope
            for b in _stmt_refs(s):
                uses.setdefault(b, []).append(scope)
            if isinstance(s, Copy | Fill) and s.dst.buffer.space == Space.GLOBAL:
                written.add(s.dst.buffer)
            if isinstance(s, GroupBarrier):  # the counters are added to atomically
                written.add(s.counter.buffer)
            if isinstance(s, Copy | Fill) and s.dst.buffer.space == Space.SHARED and getattr(s, "atom", "") != "tma":
                generic_shared_writes.add(s.dst.buffer)
            for label, child in _children(s):
                visit(child, scope + ((id(s), label),))

    visit(kernel.body, ())
    hoisted = [b for b, scope in alloc_scope.items() if any(used[: len(scope)] != scope for used in uses.get(b, []))]
    return KernelFacts(
        shared=shared,
        shared_bytes=carve.total if shared else 0,
        written=frozenset(written),
        generic_shared_writes=frozenset(generic_shared_writes),
        hoisted=tuple(sorted(hoisted, key=lambda b: order.get(b, 0))),
    )


def _refs(value: Any) -> Iterator[Buffer]:
    """The buffers a statement field refers to (not looking into nested statements)."""
    if isinstance(value, TileRef):
        yield value.buffer
    elif isinstance(value, Broadcast):
        yield value.ref.buffer
    elif isinstance(value, tuple | list):
        for item in value:
            if not isinstance(item, Stmt):
                yield from _refs(item)


def _stmt_refs(s: Stmt) -> list[Buffer]:
    out: list[Buffer] = []
    if isinstance(s, Alloc):
        return out
    for f in dataclasses.fields(s):
        out.extend(_refs(getattr(s, f.name)))
    return out


def _children(s: Stmt) -> list[tuple[str, tuple[Stmt, ...]]]:
    """Nested statement lists of a compound statement, each with a scope label."""
    out = []
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if isinstance(value, tuple) and value and all(isinstance(x, Stmt) for x in value):
            out.append((f.name, value))
    return out


# --- plans the rules read while they emit -----------------------------------------------------------------------

#: Hardware named barriers (0 is ``__syncthreads``'s).
NAMED_BARRIERS = DEFAULT_TARGET.named_barriers


def takes_turns(role: Role) -> bool:
    """Whether `role`'s warpgroups take turns (`WarpgroupTurn` in its body)."""
    return any(isinstance(s, WarpgroupTurn) for s in walk(role.body))


class NamedBarriers:
    """The named barriers the generator takes beyond those the kernel's `Barrier` statements use.

    Warp roles get one each, in emission order, from the lowest id above the kernel's own (`for_role`), and a role
    that takes turns (`WarpgroupTurn`) one more per warpgroup, right after the roles' (`for_turns`); staged TMA
    stores take blocks of consecutive ids from the top down (`for_stores`), so they never meet. Mutable state:
    `roles_given` (advanced by `for_role`), `turns_given` (by `for_turns`) and `stores_top` (lowered by
    `for_stores`)."""

    def __init__(self, kernel: Kernel) -> None:
        used = [b.barrier_id for b in walk(kernel.body) if isinstance(b, Barrier)]
        #: the lowest id above those the kernel's own barriers use
        self.first_free = max([0, *used]) + 1
        roles = [r for r in walk(kernel.body) if isinstance(r, Role)]
        #: warp roles in the kernel: each takes one id above `first_free`
        self.roles = len(roles)
        self.roles_given = 0
        #: the turn barriers: one per warpgroup of each role that takes turns, after the roles' ids
        self.turns = sum(len(r.warpgroups) for r in roles if takes_turns(r))
        self.turns_given = 0
        self.stores_top = NAMED_BARRIERS

    def for_role(self) -> int | None:
        """The next role's barrier id, or None when the hardware has no more."""
        self.roles_given += 1
        barrier_id = self.first_free + self.roles_given - 1
        return barrier_id if barrier_id < NAMED_BARRIERS else None

    def for_turns(self, warpgroups: int) -> int | None:
        """The first of a turn-taking role's `warpgroups` consecutive turn barriers, or None when the hardware has no
        more."""
        first = self.first_free + self.roles + self.turns_given
        self.turns_given += warpgroups
        return first if first + warpgroups <= NAMED_BARRIERS else None

    def for_stores(self, count: int) -> int | None:
        """The first of `count` consecutive ids for a staged TMA store, or None when they would meet the roles'."""
        first = self.stores_top - count
        if first < self.first_free + self.roles + self.turns:
            return None
        self.stores_top = first
        return first
