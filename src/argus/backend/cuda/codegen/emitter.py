"""IR -> CUDA C++: the emitter. One rule per IR statement kind, top to bottom in `Emitter.RULES`.

The generated code does what the interpreter (`argus.interp.machine`) does, thread by thread:

* a **fragment** is a per-thread register array ``T name[values]``; value ``v`` of thread ``t`` is tile
  element ``tv(t, v)``, and every access names it with a compile-time index, so the array stays in
  registers. Where a thread's elements lie is computed from the TV layout (`placement`): a base
  coordinate per dimension as a layout of ``tid`` plus a constant per value (`addressing`);
* a **global window** is addressed through the tensor's strides; elements outside the tensor are masked
  (loads give the pad value, stores are dropped), per run of consecutive elements, which moves as one
  16-, 8- or 4-byte vector when it is entirely in bounds and aligned (`memory`);
* **shared memory** is one ``extern __shared__`` buffer carved into the kernel's buffers (128-byte
  aligned, 1024 for swizzled ones; `analysis`, `frame`), each addressed through its `argus.layout` layout,
  swizzle included;
* copies between global and shared memory are spread over the block's threads in vectors
  (``cp.async`` for ``atom="cp.async"``, committed and waited on by ``AsyncCommit``/``AsyncWait``);
* ``atom="ldmatrix"`` copies become ``ldmatrix.x4/.x2/.x1`` (``.trans`` where the fragment reads the
  shared tile transposed), their row addresses derived from the fragment and shared layouts (`memory`);
* ``Gemm`` with ``mma.sync`` reads operand registers in the atom's own convention (`mma_tv`), as the
  interpreter does; with the per-thread FMA atom, each thread runs unrolled ``__fmaf_rn`` loops over its
  registers in that same convention (`mma`); reductions combine a thread's values, then XOR shuffles over
  ``shuffle_lanes`` (`pointwise`);
* **warp roles** become ``if (warpgroup in role) { setmaxnreg.{inc,dec}; ... }``; inside a role the thread
  index is relative to the role's first thread (its fragments are spread over the role's threads; `hopper`);
* **mbarriers** are 64-bit words carved from shared memory: initialised by thread 0, then
  ``fence.mbarrier_init`` and ``__syncthreads``; an arrive is made once per role (as the IR counts it) by
  the role's thread 0 (``mbarrier.arrive.expect_tx`` with ``expect_bytes``), after a named barrier over
  the role when it is a release (no ``expect_bytes``: every thread of the role must be done with the
  stage); a wait is a ``try_wait.parity`` loop in every thread (`sync`);
* **TMA loads** (``atom="tma"``) are issued by the scope's thread 0 with a ``CUtensorMap`` per (tensor,
  box, swizzle) passed as a ``const __grid_constant__`` parameter (`TensorMapParam`); the swizzle is the
  one under which the destination's layout equals TMA's box layout, proven by enumeration (`tma`); **TMA
  stores** (``atom="tma.store"``) go through a staging buffer, one box per warpgroup and chunk (`epilogue`);
* ``Gemm`` with a ``wgmma`` atom and both operands in shared memory: ``wgmma.fence``, one
  ``wgmma.mma_async`` per k16 step with matrix descriptors fitted (and checked by enumeration) to the
  buffers' layouts, ``commit_group``, ``wait_group 0``; accumulators are the fragment's registers in the
  atom's C order; ``fence.proxy.async`` plus a role barrier first when an operand buffer is written by
  ordinary stores somewhere in the kernel (`mma`).

The rules are functions ``rule(cx, statement)`` of the modules named above; what they share is the
`context.Context` of one kernel's emission. Nodes not lowered yet raise `CodegenError`
``CODEGEN_UNSUPPORTED`` at their DSL line.
"""

from __future__ import annotations

from argus.backend.cuda.codegen import control, hopper, memory, mma, pointwise, sync
from argus.backend.cuda.codegen.analysis import NamedBarriers, analyse
from argus.backend.cuda.codegen.cexpr import Names
from argus.backend.cuda.codegen.context import Context, Rule, Switches, where
from argus.backend.cuda.codegen.frame import assemble
from argus.backend.cuda.codegen.source import GeneratedSource
from argus.ir.nodes import (
    Alloc,
    AsyncCommit,
    AsyncWait,
    Barrier,
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
    WarpgroupTurn,
    WgmmaWait,
)


class Emitter:
    """Builds the translation unit of one kernel. `generate` is the entry point.

    The class attributes are the generator's switches, read when `generate` starts (benchmarks set them on the
    class for A/B measurements), and the rule table; an instance holds only its kernel."""

    #: Run a one-warpgroup role whose effects are all its thread 0's (`hopper.single_issuer`: a TMA producer) in
    #: its first warp only, the other three skipping the body after setmaxnreg instead of polling the same
    #: mbarriers. Off by default: measured on an H200 (session 4, `benchmarks/gemm_parity.py`, interleaved with
    #: cuBLAS) the persistent expert was 4 % slower with it at every one of the seven benchmark shapes (geomean
    #: 0.952x cuBLAS against 0.991x with all four warps running the loop), on both GPUs of the machine.
    single_warp_issuers = False
    #: Thread 0 prefetches every TMA descriptor at kernel start (``prefetch.tensormap``); a switch so that
    #: `benchmarks/gemm_parity.py` can measure it against its absence in one run.
    prefetch_tensormaps = True
    #: Widen fragment -> global stores by a lane exchange where `argus.atoms.copy.lane_exchange` finds one (off:
    #: the stores as the fragment holds its values, for A/B measurements).
    lane_exchange_stores = True
    #: A ``wgmma``'s warpgroup index (which rows of the tile it multiplies) read as ``__shfl_sync`` of lane 0's
    #: ``tid / 128``, which the compiler knows is the same in every lane of the warp, so that the shared-memory
    #: descriptors built from it may live in uniform registers (the SASS of the attention kernel's plain loop
    #: shrank 5 %). Off: a switch for A/B measurements (`benchmarks/uniform_warpgroup_probe.py`).
    uniform_warpgroup = False
    #: A kernel generated for programmatic dependent launch (``generate(kernel, dependent=True)``) starts with
    #: ``griddepcontrol.wait`` and ``griddepcontrol.launch_dependents`` (prelude ``grid_dependency``), so that a
    #: launch made as a programmatic dependent (`argus.runtime`, ``dependent=True``) starts while the grid before it
    #: finishes and waits for it before touching memory. Only such kernels have them: launched without that
    #: attribute they are no-ops in name only (both 1-d pooling kernels of KernelBench ran 1.9-2x slower with them,
    #: benchmarks/results/2026-11-30-level1-judge/), so a kernel that is not launched as a dependent goes without.

    RULES: tuple[tuple[type, Rule], ...] = (
        (Alloc, memory.alloc),  # fragments become register arrays; shared buffers were carved up front
        (Copy, memory.copy),  # by source and destination space, and atom
        (Fill, memory.fill),
        (Map, pointwise.map_rule),  # elementwise, in registers
        (Reduce, pointwise.reduce),  # in registers, then XOR shuffles
        (Gemm, mma.gemm),  # mma.sync on register operands, per-thread FMA, or wgmma from shared memory
        (For, control.loop),
        (If, control.branch),
        (Let, control.let),  # a binding (a pass's release of an earlier iteration's stage)
        (Barrier, sync.barrier),
        (AsyncCommit, sync.async_commit),
        (AsyncWait, sync.async_wait),
        (Fence, sync.fence),
        (Role, hopper.role_block),  # warp specialization: a branch on the warpgroup, with its register budget
        (MbarrierInit, sync.mbarrier_init),
        (MbarrierArrive, sync.mbarrier_arrive),
        (MbarrierWait, sync.mbarrier_wait),
        (WgmmaWait, sync.wgmma_wait),
        (WarpgroupTurn, hopper.warpgroup_turn),  # ping-pong: bar.sync / bar.arrive on the role's turn barriers
        (GroupBarrier, sync.group_barrier),  # a barrier among blocks: an atomic arrival and an acquire spin
    )

    def __init__(self, kernel: Kernel, *, dependent: bool = False, wide: bool = False) -> None:
        self.kernel = kernel
        self.dependent = dependent
        self.wide = wide  # global offsets in 64 bits (`addressing.Window.offset`)

    def switches(self) -> Switches:
        return Switches(
            single_warp_issuers=self.single_warp_issuers,
            prefetch_tensormaps=self.prefetch_tensormaps,
            lane_exchange_stores=self.lane_exchange_stores,
            uniform_warpgroup=self.uniform_warpgroup,
            grid_dependency=self.dependent,
            wide_offsets=self.wide,
        )

    def generate(self) -> GeneratedSource:
        """Name and analyse the kernel, declare the hoisted fragments, emit the body statement by statement,
        drain the TMA stores, and assemble the translation unit (`frame.assemble`)."""
        k = self.kernel
        names = Names(reserved=("argus_smem",))
        tid = names.name(k.thread_var, "tid")
        # names every buffer and loop variable before any block-local name is chosen
        facts = analyse(k, names)
        cx = Context(k, facts, names, tid, switches=self.switches(), rules=self.RULES, barriers=NamedBarriers(k))
        for b in facts.hoisted:
            cx.line(f"// {where(b.loc)}  {b.name}: fragment {b.dtype.name}{list(b.static_shape)} tv {b.tv} (hoisted)")
            memory.declare_fragment(cx, b)
        cx.body(k.body)
        if cx.needs.tma_stores:
            cx.line(
                "argus::tma_store_wait_all();  // every TMA store has read its shared memory before the block exits"
            )
        return assemble(cx)
