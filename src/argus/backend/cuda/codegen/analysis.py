"""What the code generator knows of a kernel before it emits a line: `analyse` walks the IR once.

It names every tensor, shape symbol, block index, buffer and loop variable (before any rule chooses a
block-local name, so that those never take an IR object's name), and returns the `KernelFacts` the rules
read: the shared-memory carve (`argus.atoms.smem.SharedCarve`, the one the tracer and the verifier
check), the tensors the kernel writes, the shared buffers written by ordinary stores (``wgmma`` must fence
them into the async proxy), the fragments declared at the top because they are used outside the scope of
their allocation, and the loops lowered with a deferred release (`plan_deferred_releases`, here, with the
`DeferredRelease` it returns). The named barriers the generator hands out during emission are planned here too
(`NamedBarriers`): both are plans the rules of `hopper`, `sync` and `epilogue` read, kept below them so that no
two modules of the generator import each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from argus.atoms import MmaAtom
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
    Gemm,
    Kernel,
    LoopKind,
    MbarrierArrive,
    MbarrierWait,
    Role,
    Space,
    Stmt,
    TileRef,
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
        deferred: the consumer loops lowered with one ``wgmma`` group in flight, by ``id(loop)``.
    """

    shared: Mapping[Buffer, int]
    shared_bytes: int
    written: frozenset[Buffer]
    generic_shared_writes: frozenset[Buffer]
    hoisted: tuple[Buffer, ...]
    deferred: Mapping[int, DeferredRelease]


def analyse(kernel: Kernel, names: Names, deferred: Mapping[int, DeferredRelease]) -> KernelFacts:
    """Name the kernel's objects in `names` (tensors, shape symbols, block indices, then buffers and loop
    variables in program order) and return its `KernelFacts` (`deferred` as given)."""
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
            if isinstance(s, For):
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
        deferred=deferred,
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


class NamedBarriers:
    """The named barriers the generator takes beyond those the kernel's `Barrier` statements use.

    Warp roles get one each, in emission order, from the lowest id above the kernel's own (`for_role`); staged
    TMA stores take blocks of consecutive ids from the top down (`for_stores`), so the two never meet. Mutable
    state: `roles_given` (advanced by `for_role`) and `stores_top` (lowered by `for_stores`)."""

    def __init__(self, kernel: Kernel) -> None:
        used = [b.barrier_id for b in walk(kernel.body) if isinstance(b, Barrier)]
        #: the lowest id above those the kernel's own barriers use
        self.first_free = max([0, *used]) + 1
        #: warp roles in the kernel: each takes one id above `first_free`
        self.roles = sum(1 for r in walk(kernel.body) if isinstance(r, Role))
        self.roles_given = 0
        self.stores_top = NAMED_BARRIERS

    def for_role(self) -> int | None:
        """The next role's barrier id, or None when the hardware has no more."""
        self.roles_given += 1
        barrier_id = self.first_free + self.roles_given - 1
        return barrier_id if barrier_id < NAMED_BARRIERS else None

    def for_stores(self, count: int) -> int | None:
        """The first of `count` consecutive ids for a staged TMA store, or None when they would meet the roles'."""
        first = self.stores_top - count
        if first < self.first_free + self.roles:
            return None
        self.stores_top = first
        return first


#: The fewest pipeline stages for which `plan_deferred_releases` keeps a wgmma group in flight (see there).
DEFERRED_RELEASE_MIN_STAGES = 4

#: IR statements that emit no code (annotations for the verifier).
_SILENT = ("Tag", "AssertTag", "AssertTagEq")


@dataclass(frozen=True)
class DeferredRelease:
    """A consumer loop lowered with one ``wgmma`` group in flight (see `plan_deferred_releases`)."""

    loop: For
    wait: MbarrierWait
    gemm: Gemm
    arrive: MbarrierArrive
    warpgroups: int


def plan_deferred_releases(body: tuple[Stmt, ...], role: Role | None = None) -> dict[int, DeferredRelease]:
    """Pipelined consumer loops whose body is, apart from annotations, exactly ``mbarrier_wait(full[s]);
    T.gemm(sA[s], sB[s], acc)`` with ``wgmma`` from shared memory; ``mbarrier_arrive(empty[s])`` inside a warp
    role of whole warpgroups, where nothing else arrives on ``empty``. Written that way, the release waits for
    the MMA to finish, so the tensor cores idle while the next stage's barrier is checked. These loops are
    lowered instead with ``wgmma.wait_group 1``: iteration k issues its MMAs, waits for those of k-1, and only
    then releases stage k-1 (the last stage after the loop) — the same order of events for the shared memory,
    one iteration later, so what the verifier proved of the loop as written still holds. Each warpgroup of the
    role releases for itself (its own MMAs have finished reading), so the barrier's arrival count is multiplied
    by the role's warpgroups (the role's one arrival is complete when all its warpgroups arrived) and no barrier
    among the role's threads is needed. Keyed by ``id(loop)``.

    Only loops of at least `DEFERRED_RELEASE_MIN_STAGES` stages: releasing a stage one iteration later leaves the
    producer S-2 tiles of look-ahead instead of S-1, which starves a 3-stage pipeline (measured on an H200:
    128x128 tiles, 3 stages, 4096^3 went from 0.66x to 0.51x cuBLAS with it; 128x256 tiles, 4 stages, from
    0.79x to 0.84x; benchmarks/results/2026-11-21-gemm-h200.md)."""
    found: dict[int, DeferredRelease] = {}
    arrivals: dict[int, int] = {}  # id(barrier buffer) -> number of MbarrierArrive statements on it

    def visit(stmts: tuple[Stmt, ...], role: Role | None) -> None:
        for st in stmts:
            if isinstance(st, MbarrierArrive):
                key = id(st.barrier.buffer)
                arrivals[key] = arrivals.get(key, 0) + 1
            if isinstance(st, Role):
                visit(st.body, st)
            elif isinstance(st, For):
                if st.kind == LoopKind.PIPELINED and role is not None and st.stages >= DEFERRED_RELEASE_MIN_STAGES:
                    hit = _match_release_loop(st, role)
                    if hit is not None:
                        found[id(st)] = hit
                visit(st.body, role)
            elif hasattr(st, "then"):
                visit(st.then, role)
                visit(getattr(st, "orelse", ()), role)

    visit(body, role)
    return {k: d for k, d in found.items() if arrivals.get(id(d.arrive.barrier.buffer)) == 1}


def _match_release_loop(loop: For, role: Role) -> DeferredRelease | None:
    from argus.atoms import get_atom

    stmts = [st for st in loop.body if type(st).__name__ not in _SILENT]
    if len(stmts) != 3:
        return None
    wait, gemm, arrive = stmts
    if not (isinstance(wait, MbarrierWait) and isinstance(gemm, Gemm) and isinstance(arrive, MbarrierArrive)):
        return None
    if arrive.expect_bytes or arrive.barrier.buffer is wait.barrier.buffer:
        return None
    atom = get_atom(gemm.atom)
    if not (isinstance(atom, MmaAtom) and atom.ptx.startswith("wgmma.")):
        return None
    if gemm.a.space != Space.SHARED or gemm.b.space != Space.SHARED:
        return None
    warpgroups = len(role.warpgroups)
    if gemm.groups[0] * gemm.groups[1] != warpgroups:
        return None
    return DeferredRelease(loop, wait, gemm, arrive, warpgroups)
