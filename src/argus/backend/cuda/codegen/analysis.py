"""What the code generator knows of a kernel before it emits a line: `analyse` walks the IR once.

It names every tensor, shape symbol, block index, buffer and loop variable (before any rule chooses a
block-local name, so that those never take an IR object's name), and returns the `KernelFacts` the rules
read: the shared-memory carve (`argus.atoms.smem.SharedCarve`, the one the tracer and the verifier
check), the tensors the kernel writes, the shared buffers written by ordinary stores (``wgmma`` must fence
them into the async proxy), the fragments declared at the top because they are used outside the scope of
their allocation, and the loops lowered with a deferred release (`hopper.plan_deferred_releases`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from argus.atoms.smem import SharedCarve
from argus.backend.cuda.codegen.cexpr import Names
from argus.backend.cuda.codegen.errors import CodegenError
from argus.ir.nodes import Alloc, Broadcast, Buffer, Copy, Fill, For, Kernel, Space, Stmt, TileRef

if TYPE_CHECKING:
    from argus.backend.cuda.codegen.hopper import DeferredRelease


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
