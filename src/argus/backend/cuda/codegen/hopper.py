"""The Hopper rules of the emitter: warp roles, mbarriers, TMA loads and ``wgmma`` on shared-memory operands.

`HopperRules` is mixed into `argus.backend.cuda.codegen.emitter.Emitter`; each public method is one rule of
``Emitter.RULES``. What each construct becomes (and why it has the interpreter's semantics) is in the
emitter's module docstring; the facts the rules rely on are proven here by enumeration over the same
`argus.layout` objects the interpreter evaluates:

* a TMA box lands where the destination's layout says (`tma_swizzle`): TMA writes the box densely in
  row-major order of the tensor's dimensions, swizzled by ``hopper_swizzle(W)``, so the destination
  window's layout, relative to its first element, must be exactly that for one ``W``;
* a ``wgmma`` operand sub-tile (one warpgroup's rows, one k16 step) is one of PTX's canonical layouts
  (`argus.atoms.smem`) with a leading and a stride byte offset (`DescriptorPlan`), for every stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from argus.atoms import MmaAtom
from argus.atoms.common import register_pool, register_split, setmaxnreg_ok
from argus.atoms.smem import Major, match_canonical, swizzle_mode_of, tma_box_swizzle
from argus.atoms.swizzle import DESCRIPTOR_SWIZZLE_ENCODING, SWIZZLE_REPEAT_BYTES
from argus.atoms.target import DEFAULT_TARGET
from argus.atoms.tma import STORE_ROWS_PER_WARPGROUP, TMA_SMEM_ALIGNMENT, store_chunk_columns, tma_load
from argus.backend.cuda.codegen import prelude
from argus.backend.cuda.codegen.cexpr import add, convert, layout_at_coords, mul, paren
from argus.backend.cuda.codegen.source import TensorMapParam
from argus.ir.nodes import (
    Barrier,
    Buffer,
    Copy,
    For,
    Gemm,
    LoopKind,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Role,
    Space,
    Stmt,
    TileRef,
    walk,
)
from argus.layout import ComposedLayout, Layout, Swizzle

if TYPE_CHECKING:
    from argus.backend.cuda.codegen.emitter import Emitter

#: Threads in a warpgroup.
WARPGROUP = 128
#: Hardware named barriers (0 is ``__syncthreads``'s).
NAMED_BARRIERS = DEFAULT_TARGET.named_barriers


def apply_swizzle(sw: Swizzle, x: np.ndarray) -> np.ndarray:
    """`Swizzle.__call__` on an array of offsets."""
    bits = x & sw.yyy_mask
    return x ^ (bits >> sw.shift if sw.shift >= 0 else bits << -sw.shift)


@dataclass(frozen=True)
class DescriptorPlan:
    """How one ``wgmma`` operand is described: swizzle mode (bytes), major-ness, LBO and SBO (bytes), and the
    pre-swizzle element offset of each sub-tile's first element as C text (`start`: group expression, k step
    -> C)."""

    swizzle: int
    major: Major
    lbo: int
    sbo: int

    @property
    def mode(self) -> int:
        return DESCRIPTOR_SWIZZLE_ENCODING[self.swizzle]

    @property
    def trans(self) -> int:
        return 1 if self.major is Major.MN else 0


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


class HopperRules:
    """Rules for `Role`, the mbarrier statements, TMA copies and ``wgmma`` (mixed into `Emitter`)."""

    #: Run a one-warpgroup role whose effects are all its thread 0's (`single_issuer`: a TMA producer) in its first
    #: warp only, the other three skipping the body after setmaxnreg instead of polling the same mbarriers. Off by
    #: default: measured on an H200 (session 4, `benchmarks/gemm_parity.py`, interleaved with cuBLAS) the persistent
    #: expert was 4 % slower with it at every one of the seven benchmark shapes (geomean 0.952x cuBLAS against
    #: 0.991x with all four warps running the loop), on both GPUs of the machine.
    single_warp_issuers = False
    #: Thread 0 prefetches every TMA descriptor at kernel start (``prefetch.tensormap``); a switch so that
    #: `benchmarks/gemm_parity.py` can measure it against its absence in one run.
    prefetch_tensormaps = True

    # --- warp roles ------------------------------------------------------------------------------------
    def role_block(self: Emitter, s: Role) -> None:
        if self.role is not None:
            raise self.error(f"warp role {s.name!r} nested inside role {self.role.name!r}")
        groups = sorted(s.warpgroups)
        if not groups or groups != list(range(groups[0], groups[-1] + 1)):
            raise self.error(f"warp role {s.name!r} over warpgroups {tuple(s.warpgroups)} that are not consecutive")
        first, threads = WARPGROUP * groups[0], WARPGROUP * len(groups)
        if first + threads > self.kernel.threads:
            raise self.invalid(f"role {s.name!r} names warpgroups past the block's {self.kernel.threads} threads")
        tid = self.tid
        cond = f"{tid} < {first + threads}" if first == 0 else f"{tid} >= {first} && {tid} < {first + threads}"
        with self.block(f"if ({cond}) {{  // role {s.name}: warpgroups {tuple(groups)}"):
            if s.registers is not None:
                self.line(self._setmaxnreg(s))
            role_tid = self.local(re.sub(r"\W", "_", s.name) + "_tid")
            self.line(
                f"const int {role_tid} = {tid if first == 0 else f'{tid} - {first}'};  // thread index in the role"
            )
            saved = (self.tid, self.threads, self.role, self.role_barrier)
            self.tid, self.threads, self.role = role_tid, threads, s
            self.role_barrier = self._next_named_barrier()
            try:
                if self.single_warp_issuers and len(groups) == 1 and single_issuer(s.body):
                    note = "every effect of this role is its thread 0's: one warp runs it, the others rest"
                    with self.block(f"if ({role_tid} < 32) {{  // {note}"):
                        self.body(s.body)
                else:
                    self.body(s.body)
            finally:
                self.tid, self.threads, self.role, self.role_barrier = saved

    def deferred_releases(self: Emitter) -> dict[int, DeferredRelease]:
        if self._deferred is None:
            self._deferred = plan_deferred_releases(self.kernel.body)
        return self._deferred

    def release_loop(self: Emitter, s: For, plan: DeferredRelease) -> None:
        """A loop of `plan_deferred_releases`: MMAs of iteration k in flight while stage k-1 is released."""
        var = self.names.name(s.var, s.var.name)
        extent = self.expr(s.extent)
        self.line(
            f"// pipelined loop ({s.stages} stages): one wgmma group stays in flight; stage k-1 is released once "
            "the MMAs of iteration k are issued"
        )
        saved = self.deferring
        self.deferring = plan
        try:
            with self.block(f"for (int {var} = 0; {var} < {extent}; ++{var}) {{"):
                self.body(tuple(st for st in s.body if st is not plan.arrive))
                with self.block(f"if ({var} > 0) {{"):
                    self.line(f"const int {var}_released = {var} - 1;")
                    with self.block():
                        self.line(f"const int {var} = {var}_released;  // the arrival of iteration {var} - 1")
                        self._release(plan)
        finally:
            self.deferring = saved
        self.line("argus::wgmma_wait<0>();  // the last iteration's MMAs")
        with self.block(f"if ({extent} > 0) {{"):
            self.line(f"const int {var} = {extent} - 1;  // the arrival of the last iteration")
            self._release(plan)

    def _release(self: Emitter, plan: DeferredRelease) -> None:
        address = self._mbarrier_address(plan.arrive.barrier)
        self.line(
            f"if ({self.tid} % {WARPGROUP} == 0) argus::mbarrier_arrive({address});  "
            "// this warpgroup's MMAs have finished reading the stage"
        )

    def _setmaxnreg(self: Emitter, s: Role) -> str:
        registers = int(s.registers)
        if not setmaxnreg_ok(registers):
            raise self.invalid(f"role {s.name!r}: setmaxnreg takes a multiple of 8 in 24..256, got {registers}")
        roles = [(len(r.warpgroups), r.registers) for r in walk(self.kernel.body) if isinstance(r, Role)]
        blocks = self.kernel.blocks_per_sm  # entry: __launch_bounds__(threads, blocks)
        total, entry = register_split(self.kernel.threads, roles, blocks)
        pool = register_pool(self.kernel.threads, blocks)
        if total > pool:
            raise self.invalid(f"the warp roles' register budgets need {total} registers, the block has {pool}")
        self.register_roles = True
        op = "dec" if registers < entry else "inc"
        return (
            f'asm volatile("setmaxnreg.{op}.sync.aligned.u32 {registers};\\n" ::: "memory");  // from {entry} at entry'
        )

    def _next_named_barrier(self: Emitter) -> int:
        if not hasattr(self, "_named_barrier_base"):
            used = [b.barrier_id for b in walk(self.kernel.body) if isinstance(b, Barrier)]
            self._named_barrier_base = max([0, *used]) + 1
        self.roles_seen += 1
        barrier_id = self._named_barrier_base + self.roles_seen - 1
        if barrier_id >= NAMED_BARRIERS:
            raise self.error(f"more than {NAMED_BARRIERS - 1} named barriers (one per warp role)")
        return barrier_id

    def scope_barrier(self: Emitter) -> str:
        """C text that synchronizes the threads of the current scope (the role's, or the block's)."""
        if self.role is None:
            return "__syncthreads();"
        return (
            f'asm volatile("bar.sync %0, %1;\\n" :: "r"({self.role_barrier}), "r"({self.threads}) : "memory");'
            f"  // role {self.role.name}'s threads"
        )

    # --- mbarriers ---------------------------------------------------------------------------------------
    def _mbarrier_address(self: Emitter, ref: TileRef) -> str:
        if ref.buffer.space != Space.MBARRIER:
            raise self.invalid(f"{ref.buffer.name} is not an mbarrier array")
        self.use("mbarrier")
        index = self.expr(ref.origin[0]) if ref.origin else "0"
        return f"argus::smem_u32(&{self.buffer_name(ref.buffer)}[{index}])"

    def mbarrier_init(self: Emitter, s: MbarrierInit) -> None:
        if self.role is not None:
            raise self.error("mbarrier initialisation inside a warp role", "initialise mbarriers before the roles")
        self.use("mbarrier")
        b = s.barriers.buffer
        name = self.buffer_name(b)
        count = int(np.prod(b.static_shape))
        arrivals, why = int(s.arrive_count), ""
        per_group = {d.warpgroups for d in self.deferred_releases().values() if d.arrive.barrier.buffer is b}
        if per_group:
            (groups,) = per_group
            arrivals *= groups
            why = f"  // {s.arrive_count} x {groups}: each warpgroup of the releasing role arrives for itself"
        with self.block(f"if ({self.tid} == 0) {{"):
            i = self.local("i")
            self.line(
                f"for (int {i} = 0; {i} < {count}; ++{i}) argus::mbarrier_init(argus::smem_u32(&{name}[{i}]), "
                f"{arrivals});{why}"
            )
            self.locals.discard(i)
            self.line("argus::mbarrier_init_fence();")
        self.line("__syncthreads();  // every thread sees the initialised barriers")

    def mbarrier_arrive(self: Emitter, s: MbarrierArrive) -> None:
        address = self._mbarrier_address(s.barrier)
        if s.expect_bytes:
            self.line(
                f"if ({self.tid} == 0) argus::mbarrier_arrive_expect_tx({address}, {int(s.expect_bytes)});  "
                "// one arrival for the scope, plus the bytes TMA will deliver"
            )
            return
        if self.threads > 1:
            self.line(self.scope_barrier() + "  (all of them are done with what the arrival releases)")
        self.line(f"if ({self.tid} == 0) argus::mbarrier_arrive({address});  // one arrival for the scope")

    def mbarrier_wait(self: Emitter, s: MbarrierWait) -> None:
        address = self._mbarrier_address(s.barrier)
        self.line(f"argus::mbarrier_wait({address}, static_cast<unsigned>({self.expr(s.phase)}) & 1u);")

    # --- TMA -----------------------------------------------------------------------------------------------
    def _tma_copy(self: Emitter, s: Copy) -> None:
        from argus.backend.cuda.codegen.emitter import _Window

        src, dst = s.src, s.dst
        if src.space != Space.GLOBAL or dst.space != Space.SHARED:
            raise self.error(
                f"TMA copy from {src.space.value} to {dst.space.value} memory", "only TMA loads are lowered"
            )
        if s.mbarrier is None:
            raise self.invalid("a TMA load needs an mbarrier to complete on (mbarrier=...)")
        if src.perm is not None or dst.perm is not None or getattr(dst, "layout", None) is not None:
            raise self.error("TMA copy through a transposed or re-laid-out view")
        tensor = src.buffer
        rank = len(tensor.shape)
        if rank not in (2, 3):
            raise self.error(f"TMA copy of a {rank}-d tensor", "TMA lowering covers 2-d and 3-d tensors")
        if tensor.strides is not None:
            from argus.backend.cuda.codegen.emitter import _row_major

            if tuple(map(str, tensor.strides)) != tuple(map(str, _row_major(tensor.shape))):
                raise self.error(f"TMA copy of {tensor.name} with strides that are not row-major")
        if tuple(src.shape) != tuple(dst.shape):
            raise self.invalid(f"copy between windows of shapes {src.shape} and {dst.shape}")
        box_tensor = tuple(int(e) for e in src.extent)  # tensor order; squeezed dimensions have extent 1
        box = tuple(reversed(box_tensor))  # TMA order: dimension 0 innermost
        window = _Window(self, dst)
        shape = tuple(dst.shape)
        coords = np.indices(shape).reshape(len(shape), -1).T  # (N, rank): every window element
        offsets = window.offsets_of(coords)
        bases = window.offsets_of(np.zeros((1, len(shape)), dtype=np.int64))
        if offsets is None or bases is None:
            raise self.error(
                f"TMA copy into {dst.buffer.name}: its position is not static enough to prove the box layout"
            )
        swizzle = tma_box_swizzle(offsets - bases, shape, dst.dtype.bits)  # coords are row-major: TMA's box order
        if swizzle is None:
            raise self.error(
                f"TMA copy into {dst.buffer.name} with layout {dst.buffer.layout}",
                "TMA writes its box row-major with a Hopper swizzle (none, 32, 64 or 128 bytes): give the shared "
                "buffer such a layout (T.alloc_shared(..., swizzle=128) with a 128-byte inner row)",
            )
        atom = tma_load(rank)
        itemsize = dst.dtype.itemsize
        for base in np.unique(bases):
            address = self.shared[dst.buffer] + int(base) * itemsize
            problems = atom.diagnose(
                dtype=dst.dtype,
                global_shape=box,
                global_strides=[16] * (rank - 1),
                box=box,
                swizzle=swizzle,
                smem_address=address,
            )
            if problems:
                p = problems[0]
                raise self.invalid(f"TMA copy into {dst.buffer.name}: [{p.code}] {p.message} ({p.actual})")
        if self.shared[dst.buffer] % max(TMA_SMEM_ALIGNMENT, SWIZZLE_REPEAT_BYTES.get(swizzle, 0)):
            raise self.invalid(f"shared buffer {dst.buffer.name} is not aligned for TMA")
        self.require_alignment(tensor, 16)
        tmap = self._tensor_map(tensor, box, swizzle)
        self.use("tma")
        origin = [self.expr(o) for o in reversed(src.origin)]
        target = window.pointer(window.buffer_coords(["0"] * len(shape)))
        self.line(
            f"if ({self.tid} == 0) argus::tma_load_{rank}d(argus::smem_u32({target}), &{tmap.name}, "
            f"{', '.join(origin)}, {self._mbarrier_address(s.mbarrier)});  // box {list(box)} (TMA order), "
            f"{swizzle}-byte swizzle"
        )

    def _tensor_map(self: Emitter, tensor: Buffer, box: tuple[int, ...], swizzle: int) -> TensorMapParam:
        """The kernel's tensor map of `tensor` with `box` (TMA order) and `swizzle`, made a parameter on first use."""
        key = (tensor, box, swizzle)
        if key not in self.tensor_maps:
            name = self.local(f"tmap_{self.buffer_name(tensor)}")
            self.names._taken.add(name)
            self.tensor_maps[key] = TensorMapParam(name, tensor.name, box, swizzle, tensor.dtype)
        return self.tensor_maps[key]

    def _store_barriers(self: Emitter, count: int) -> int:
        """`count` consecutive named barriers for a staged TMA store, taken from the top of the 16 so that they
        stay clear of the warp roles' (`_next_named_barrier`); the first id."""
        used = [b.barrier_id for b in walk(self.kernel.body) if isinstance(b, Barrier)]
        roles = sum(1 for r in walk(self.kernel.body) if isinstance(r, Role))
        first = getattr(self, "_store_barrier_top", NAMED_BARRIERS) - count
        if first < max([0, *used]) + 1 + roles:
            raise self.error(f"more than {NAMED_BARRIERS - 1} named barriers (warp roles and staged TMA stores)")
        self._store_barrier_top = first
        return first

    def _tma_store(self: Emitter, s: Copy) -> None:
        """``atom="tma.store"``: a ``wgmma`` accumulator -> a global tile, through `s.staging` and TMA stores.

        The tile goes out in chunks of 128 bytes of columns (`store_chunk_columns`), alternating between the
        staging buffer's two chunk buffers. Each warpgroup stores its own 64 rows of a chunk on its own: its
        first thread waits until the store that last read the buffer has (``wait_group.read 1``: the other
        buffer's may still be in flight), a named barrier of the warpgroup releases its threads to write their
        values (swizzled like the buffer's layout, pairs of adjacent columns as one word), ``fence.proxy.async``
        and the barrier again, then that thread issues the box's TMA store and commits it. Nothing waits for the
        store to reach global memory except `tma_store_wait_all` at the end of the kernel. Each precondition is
        checked by enumerating the fragment's thread-value layout."""
        from argus.backend.cuda.codegen import placement as pl
        from argus.backend.cuda.codegen.emitter import _row_major, _Window

        frag_ref, dst, staging = s.src, s.dst, s.staging
        if staging is None or frag_ref.space != Space.FRAGMENT or dst.space != Space.GLOBAL:
            raise self.invalid("a tma.store copies a fragment into a global tile through a staging buffer")
        if not frag_ref.is_whole() or dst.perm is not None or getattr(dst, "layout", None) is not None:
            raise self.error("tma.store of part of a fragment or into a transposed view")
        frag, tensor = frag_ref.buffer, dst.buffer
        if tensor.rank != 2 or (
            tensor.strides is not None and tuple(map(str, tensor.strides)) != tuple(map(str, _row_major(tensor.shape)))
        ):
            raise self.error(f"tma.store into {tensor.name}", "a staged TMA store writes a row-major 2-d tensor")
        p = pl.placement(frag)
        rows, cols = p.shape
        width, wg_rows = store_chunk_columns(tensor.dtype), STORE_ROWS_PER_WARPGROUP
        groups = p.threads // WARPGROUP
        thread = np.arange(p.threads)
        whole_rows = (
            p.threads == self.threads
            and p.threads % WARPGROUP == 0
            and rows == wg_rows * groups
            and np.array_equal(
                p.coords[:, :, 0] // wg_rows, np.broadcast_to((thread // WARPGROUP)[:, None], (p.threads, p.values))
            )
        )
        chunk_of = p.coords[:, :, 1] // width
        if not whole_rows or not p.separable or not np.all(chunk_of == chunk_of[:1]) or cols % width:
            raise self.error(
                f"tma.store of fragment {frag.name} ({rows}x{cols} over {p.threads} threads)",
                f"each warpgroup of the scope must hold {wg_rows} whole rows, and each value must fall in the same "
                f"{width}-column chunk in every thread (a wgmma accumulator)",
            )
        assert p.base is not None
        sbuf = staging.buffer
        if self.shared[sbuf] % SWIZZLE_REPEAT_BYTES[128]:
            raise self.invalid(f"staging buffer {sbuf.name} is not aligned to the 128-byte swizzle's repeat")
        # each (buffer, warpgroup) box of the staging buffer is laid out as TMA reads a 128-byte-swizzled box
        box_coords = np.indices((wg_rows, width)).reshape(2, -1)  # row-major: TMA's box order
        for b in range(2):
            for g in range(groups):
                coords = [np.full_like(box_coords[0], b), box_coords[0] + g * wg_rows, box_coords[1]]
                offsets = pl.layout_offsets(sbuf.layout, coords)
                base = int(offsets[0])
                if base % (SWIZZLE_REPEAT_BYTES[128] // sbuf.dtype.itemsize) or (
                    tma_box_swizzle(offsets - base, (wg_rows, width), sbuf.dtype.bits) != 128
                ):
                    raise self.invalid(f"staging buffer {sbuf.name} is not laid out as 128-byte-swizzled TMA boxes")
        tmap = self._tensor_map(tensor, (width, wg_rows), 128)
        self.require_alignment(tensor, 16)
        self.use("tma_store")
        self.use("swizzle")
        self.tma_stores = True
        barrier0 = self._store_barriers(groups)
        # pairs of adjacent columns that start at an even column in every thread go out as one word
        src_c, dst_c = self.dtype_c(frag.dtype), self.dtype_c(tensor.dtype)
        pair = {"bf16": ("__nv_bfloat162", "__floats2bfloat162_rn"), "f16": ("__half2", "__floats2half2_rn")}
        pair["f32"] = ("float2", "make_float2")
        runs: list[list[tuple[int, int]]] = [[] for _ in range(cols // width)]
        v = 0
        while v < p.values:
            n = 1
            if (
                tensor.dtype.name in pair
                and v + 1 < p.values
                and np.array_equal(p.coords[:, v + 1], p.coords[:, v] + np.array([0, 1]))
                and np.all(p.coords[:, v, 1] % 2 == 0)
            ):
                n = 2
            runs[int(chunk_of[0, v])].append((v, n))
            v += n
        # Each value's staging offset is the swizzle of its plain offset u(t, v) = u0(t) + d(v). Where d(v) shares no
        # bit with any thread's u0(t), the sum is an XOR and the (XOR-linear) swizzle splits: S(u) = S(u0) ^ S(d(v)),
        # so a thread computes S(u0) once and each store XORs in a constant (proven for every thread and value).
        outer = sbuf.layout.outer if isinstance(sbuf.layout, ComposedLayout) else sbuf.layout
        sw = sbuf.layout.inner if isinstance(sbuf.layout, ComposedLayout) else None
        rows_t, cols_t = p.coords[:, 0, 0], p.coords[:, 0, 1]
        u0 = pl.layout_offsets(outer, [np.zeros_like(rows_t), rows_t, cols_t])
        deltas: dict[tuple[int, int], int] = {}
        split = isinstance(sw, Swizzle)
        for c, chunk in enumerate(runs):
            for v, _ in chunk:
                u = pl.layout_offsets(
                    outer, [np.full_like(rows_t, c % 2), p.coords[:, v, 0], p.coords[:, v, 1] - c * width]
                )
                d = u - u0
                split = split and bool(np.all(d == d[0]) and np.all((u0 & int(d[0])) == 0))
                deltas[(c, v)] = int(d[0])
        if split:
            assert isinstance(sw, Swizzle)
            split = all(
                np.array_equal(
                    apply_swizzle(sw, u0 + d), apply_swizzle(sw, u0) ^ int(apply_swizzle(sw, np.array([d]))[0])
                )
                for d in deltas.values()
            )
        window = _Window(self, staging)
        name = self.buffer_name(frag)
        with self.block(
            f"{{  // {frag.name} -> {tensor.name} through {sbuf.name}: {len(runs)} chunks of {width} columns, "
            f"TMA stores of {wg_rows} rows per warpgroup"
        ):
            wg = self.local("warpgroup")
            self.line(f"const int {wg} = {self.tid} / {WARPGROUP};")
            tile_row, tile_col = self.local("tile_row"), self.local("tile_col")
            self.line(
                f"const int {tile_row} = {add(self.expr(dst.origin[0]), f'{wg_rows} * {wg}')};  // the warpgroup's rows"
            )
            self.line(f"const int {tile_col} = {self.expr(dst.origin[1])};")
            elected = f"{self.tid} % {WARPGROUP} == 0"
            barrier = f"argus::named_barrier({add(str(barrier0), wg)}, {WARPGROUP});"
            row, col = self._base_coords(p.base, comment="  // the thread's first value in the tile")
            staged = ""
            if split:
                staged = self.local("staged")
                self.line(
                    f"const int {staged} = {window.shared_offset(['0', row, col])};  // its swizzled staging offset: "
                    "every other value's is this XOR a constant"
                )
            buffer_name = self.buffer_name(sbuf)
            for c, chunk in enumerate(runs):
                b = c % 2
                self.line(f"// chunk {c}: tile columns [{c * width}, {(c + 1) * width}), staging buffer {b}")
                self.line(
                    f"if ({elected}) argus::tma_store_wait_read<1>();  // the last store from buffer {b} has read it"
                )
                self.line(barrier)
                for v, n in chunk:
                    if split:
                        assert isinstance(sw, Swizzle)
                        xor = int(apply_swizzle(sw, np.array([deltas[(c, v)]]))[0])
                        ptr = f"{buffer_name} + ({staged} ^ {xor})" if xor else f"{buffer_name} + {staged}"
                    else:
                        r = add(row, int(p.offsets[v, 0]))
                        k = add(col, int(p.offsets[v, 1]) - c * width)
                        ptr = window.pointer([str(b), r, k])
                    if n == 2:
                        pc, make = pair[tensor.dtype.name]
                        a0 = convert(f"{name}[{v}]", src_c, "float")
                        a1 = convert(f"{name}[{v + 1}]", src_c, "float")
                        self.line(f"*reinterpret_cast<{pc}*>({ptr}) = {make}({a0}, {a1});")
                    else:
                        self.line(f"*({ptr}) = {convert(f'{name}[{v}]', src_c, dst_c)};")
                self.line("argus::fence_proxy_async_shared();  // the writes, before the TMA unit reads them")
                self.line(barrier)
                source = window.pointer([str(b), f"{wg_rows} * {wg}", "0"])
                with self.block(f"if ({elected}) {{"):
                    self.line(
                        f"argus::tma_store_2d(&{tmap.name}, argus::smem_u32({source}), {add(tile_col, c * width)}, "
                        f"{tile_row});  // box [{width}, {wg_rows}] (TMA order)"
                    )
                    self.line("argus::tma_store_commit();")

    # --- wgmma -----------------------------------------------------------------------------------------
    def _wgmma(self: Emitter, s: Gemm, atom: MmaAtom) -> None:
        from argus.backend.cuda.codegen.emitter import _Window

        if s.a.space != Space.SHARED or s.b.space != Space.SHARED:
            raise self.error(f"{atom.name} with an operand in registers", "keep A and B in shared memory")
        if s.acc.space != Space.FRAGMENT or not s.acc.is_whole():
            raise self.error(f"{atom.name} accumulating into something other than a whole fragment")
        acc = s.acc.buffer
        if acc.dtype.bits != 32 or atom.acc_dtype != acc.dtype:
            raise self.error(f"{atom.name} with a {acc.dtype.name} accumulator", "accumulate in f32")
        am, an, ak = atom.shape
        gm, gn = s.groups
        m, k = s.a.shape
        kb, n = s.b.shape
        if kb != k or s.acc.shape != (m, n):
            raise self.invalid(f"gemm shapes {s.a.shape} @ {s.b.shape} -> {s.acc.shape}")
        sub_m, sub_n = m // gm, n // gn
        if (sub_m, sub_n) != (am, an) or k % ak:
            raise self.error(
                f"{atom.name} over a {m}x{n}x{k} tile in {gm}x{gn} warpgroups (one m{am}n{an} atom per warpgroup "
                f"and k a multiple of {ak} are lowered)"
            )
        if gm * gn * atom.thread_count != self.threads:
            raise self.invalid(f"{atom.name} over {gm}x{gn} warpgroups, but the scope has {self.threads} threads")
        if acc.values_per_thread != atom.values_per_thread("C"):
            raise self.invalid(
                f"{acc.name} holds {acc.values_per_thread} values per thread; {atom.name} writes "
                f"{atom.values_per_thread('C')}"
            )
        k_steps = k // ak
        wa, wb = _Window(self, s.a), _Window(self, s.b)
        plan_a = self._descriptor_plan(wa, "A", mn_dim=0, k_dim=1, sub=sub_m, groups=gm, k_steps=k_steps, ak=ak)
        plan_b = self._descriptor_plan(wb, "B", mn_dim=1, k_dim=0, sub=sub_n, groups=gn, k_steps=k_steps, ak=ak)
        helper = prelude.wgmma_function_name(atom)
        self.extra_snippets[helper] = prelude.wgmma_snippet(atom)
        self.use("wgmma")
        self.use("smem_address")
        for ref in (s.a, s.b):
            if ref.buffer in self.generic_shared_writes:
                self.line(f"// {ref.buffer.name} is written by ordinary stores: make them visible to the async proxy")
                self.line('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");')
                self.line(self.scope_barrier())
                break
        with self.block():
            wg = "0"
            if gm * gn > 1:
                wg = self.local("warpgroup")
                self.line(f"const int {wg} = {self.tid} / {WARPGROUP};")
            g_m = wg if gn == 1 else f"{paren(wg)} % {gm}"
            g_n = wg if gm == 1 else f"{paren(wg)} / {gm}"
            g_m = "0" if gm == 1 else g_m
            g_n = "0" if gn == 1 else g_n
            starts = {}
            for name, w, plan, g, sub, mn_dim in (("a", wa, plan_a, g_m, sub_m, 0), ("b", wb, plan_b, g_n, sub_n, 1)):
                var = self.local(f"{name}_base")
                win = ["0", "0"]
                win[mn_dim] = mul(g, sub) if g != "0" else "0"
                pre = self._pre_swizzle_c(w, win)
                base = self.buffer_name(w.buffer)
                self.line(
                    f"const unsigned {var} = argus::smem_u32({base}) + {w.buffer.dtype.itemsize} * {paren(pre)};  "
                    f"// {name.upper()}: {plan.major}-major, {plan.swizzle}-byte swizzle, "
                    f"LBO {plan.lbo}, SBO {plan.sbo}"
                )
                starts[name] = (var, plan, w)
            self.line("argus::wgmma_fence();")
            fname = self.buffer_name(acc)
            for kk in range(k_steps):
                descs = []
                for name in ("a", "b"):
                    var, plan, w = starts[name]
                    step = self._k_step_bytes(w, name, kk * ak)
                    address = add(var, step) if step else var
                    descs.append(f"argus::wgmma_descriptor({address}, {plan.lbo}, {plan.sbo}, {plan.mode})")
                self.line(f"argus::{helper}<{plan_a.trans}, {plan_b.trans}>({fname}, {descs[0]}, {descs[1]});")
            self.line("argus::wgmma_commit();")
            pending = 1 if self.deferring is not None and self.deferring.gemm is s else 0
            self.line(f"argus::wgmma_wait<{pending}>();" + ("  // the previous iteration's MMAs" if pending else ""))

    def _pre_swizzle_c(self: Emitter, w: Any, window_coords: list[str]) -> str:
        layout = w.layout
        coords = w.buffer_coords(window_coords)
        if isinstance(layout, ComposedLayout):
            text = layout_at_coords(layout.outer, coords)
            return add(text, layout.offset) if layout.offset else text
        return layout_at_coords(layout, coords)

    def _k_step_bytes(self: Emitter, w: Any, operand: str, k0: int) -> int:
        """The byte offset (pre-swizzle) of k step `k0` from the sub-tile's k = 0 (static: checked by the plan)."""
        return self._k_steps[(id(w), k0)]

    def _descriptor_plan(
        self: Emitter, w: Any, operand: str, *, mn_dim: int, k_dim: int, sub: int, groups: int, k_steps: int, ak: int
    ) -> DescriptorPlan:
        buf: Buffer = w.buffer
        layout = w.layout
        if isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle):
            outer, sw, offset = layout.outer, layout.inner, layout.offset
        elif isinstance(layout, Layout):
            outer, sw, offset = layout, None, 0
        else:
            raise self.error(f"wgmma operand {buf.name} with layout {layout}")
        width = swizzle_mode_of(sw, buf.dtype.bits)
        if width is None:
            raise self.error(f"wgmma operand {buf.name}: its swizzle {sw} is not a Hopper swizzle mode")
        if width and self.shared[buf] % SWIZZLE_REPEAT_BYTES[width]:
            raise self.invalid(f"{buf.name} does not start where its swizzle pattern starts")
        itemsize = buf.dtype.itemsize
        mn, kk = np.meshgrid(np.arange(sub), np.arange(ak), indexing="ij")
        mn, kk = mn.ravel(), kk.ravel()
        pres = []
        for g in range(groups):
            for step in range(k_steps):
                coords = np.zeros((mn.size, 2), dtype=np.int64)
                coords[:, mn_dim] = g * sub + mn
                coords[:, k_dim] = step * ak + kk
                pre = w.offsets_of(coords, layout=outer)
                if pre is None:
                    raise self.error(f"wgmma operand {buf.name}: its position is not static enough to prove its layout")
                pres.append(pre + offset)
        match = match_canonical(pres, sub, ak, buf.dtype, width)  # the same for every group, k step and stage
        plan = None if match is None else DescriptorPlan(width, *match)
        if plan is None:
            raise self.error(
                f"wgmma operand {operand} ({buf.name}, layout {layout}): no canonical wgmma shared-memory layout "
                "matches it",
                "allocate the operand K-major (or MN-major for 16-bit types) with a Hopper swizzle and a tile that "
                "is a whole number of swizzle atoms (argus.atoms.smem.canonical_smem_layout)",
            )
        for value, what in ((plan.lbo, "LBO"), (plan.sbo, "SBO")):
            if value % 16 or value >= 1 << 18:
                raise self.error(f"wgmma operand {buf.name}: {what} of {value} bytes cannot be encoded")
        # the start of each k step relative to k step 0 must be the same constant in every stage and group
        if not hasattr(self, "_k_steps"):
            self._k_steps = {}
        for step in range(k_steps):
            deltas = set()
            for g in range(groups):
                p0, p = pres[g * k_steps], pres[g * k_steps + step]
                deltas |= set((p[:, 0] - p0[:, 0]).tolist())
            for g in range(groups):
                start = pres[g * k_steps + step][:, 0]
                if np.any((self.shared[buf] + start * itemsize) % 16):
                    raise self.invalid(f"wgmma operand {buf.name}: a sub-tile does not start 16-byte aligned")
            if len(deltas) != 1:
                raise self.error(f"wgmma operand {buf.name}: the k steps are not at a fixed distance")
            self._k_steps[(id(w), step * ak)] = deltas.pop() * itemsize
        return plan
