"""Kernel features: the facts that knowledge-base preconditions and signals test.

`kernel_features(target, **params)` traces a kernel (a library kernel, an ``@argus.kernel`` or an
already traced `Kernel`) and reads off its IR what an expert looks at before choosing an
optimization: data types, the MMA atom, the copy atoms on each path, shared memory (bytes,
swizzle, padding), the pipeline (kind, stages, mbarriers), warp roles and their register budgets,
the grid (persistent, tile order), loops, reductions and masks, the declared policies and their
current values. Profile facts (memory- or compute-bound, fraction of the ceiling, occupancy) and
the verifier's findings (bank-conflict degree, uncoalesced accesses, codes) come in as data.

Every feature is declared once in `FEATURES` with its type; a precondition that names a feature
not listed there is a schema error. A feature that could not be determined (no profile given) is
absent from the `Features` and a predicate over it evaluates to "unknown", never to true or false.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from argus.atoms.common import SHARED_MEMORY_BUDGET, SMS, WARPGROUP_SIZE
from argus.atoms.swizzle import swizzle_width
from argus.ir.expr import Expr, elements, free_vars
from argus.ir.nodes import (
    Alloc,
    AsyncWait,
    Copy,
    For,
    Gemm,
    If,
    Kernel,
    Let,
    LoopKind,
    Map,
    MapOp,
    MbarrierWait,
    Reduce,
    Role,
    Space,
    Stmt,
    WarpgroupTurn,
    WgmmaWait,
)
from argus.kb.errors import KBError
from argus.layout import ComposedLayout

#: Types a feature may have. "set" is a frozenset of strings, "tuple" a tuple of ints.
FEATURE_TYPES = ("bool", "int", "float", "str", "set", "tuple")


@dataclass(frozen=True)
class FeatureSpec:
    name: str
    type: str
    description: str
    source: str = "ir"  # "ir", "profile", "verify", "hardware", "shape"


_SPECS: tuple[FeatureSpec, ...] = (
    # --- kernel ----------------------------------------------------------------------------------
    FeatureSpec("kernel.name", "str", "the kernel's name"),
    FeatureSpec("kernel.threads", "int", "threads per block"),
    FeatureSpec("kernel.warpgroups", "int", "warpgroups (128 threads) per block, rounded up"),
    FeatureSpec("kernel.grid_dims", "int", "dimensions of the launch grid"),
    # --- data types ------------------------------------------------------------------------------
    FeatureSpec("dtypes.inputs", "set", "data types of the global tensors the kernel reads"),
    FeatureSpec("dtypes.outputs", "set", "data types of the global tensors the kernel writes"),
    FeatureSpec("dtypes.all", "set", "every data type of a buffer of the kernel"),
    FeatureSpec("dtypes.mma_operands", "set", "data types of the A/B operands of the kernel's MMAs"),
    FeatureSpec("dtypes.accumulator", "set", "data types of the MMA accumulators"),
    FeatureSpec(
        "dtypes.tensor_core_inputs", "bool", "the kernel reads 16-bit or 8-bit floats (types tensor cores take)"
    ),
    # --- operations ------------------------------------------------------------------------------
    FeatureSpec("ops.gemm", "bool", "the kernel multiplies matrices (T.gemm)"),
    FeatureSpec("ops.gemm_count", "int", "T.gemm statements in the kernel"),
    FeatureSpec("ops.chained_gemm", "bool", "one MMA's result feeds another MMA (e.g. P @ V after Q @ K^T)"),
    FeatureSpec("ops.reduce", "bool", "the kernel reduces along an axis (T.reduce_*)"),
    FeatureSpec("ops.reductions", "set", "reduction operators used: sum, max, min"),
    FeatureSpec("ops.shuffle_reduction", "bool", "a reduction combines lanes with warp shuffles"),
    FeatureSpec("ops.exp", "bool", "the kernel calls exp (base e)"),
    FeatureSpec("ops.exp2", "bool", "the kernel calls exp2"),
    FeatureSpec("ops.masked", "bool", "elementwise masks (T.where / comparisons) appear"),
    FeatureSpec("ops.causal_mask", "bool", "a mask compares a row coordinate with a column coordinate"),
    FeatureSpec("ops.online_softmax", "bool", "a loop keeps a running row max and rescales with exp/exp2"),
    FeatureSpec("ops.elementwise_only", "bool", "no MMA and no reduction: a pure elementwise kernel"),
    FeatureSpec("ops.map_ops", "set", "elementwise operators used (add, mul, exp2, ...)"),
    # --- MMA ---------------------------------------------------------------------------------------
    FeatureSpec("mma.kind", "str", "MMA instruction family: none, fma (CUDA cores), mma.sync or wgmma"),
    FeatureSpec("mma.atoms", "set", "full names of the MMA atoms used"),
    FeatureSpec("mma.a_source", "str", "where the A operand of the main MMA is read: none, register or shared"),
    FeatureSpec(
        "mma.register_operand",
        "bool",
        "an asynchronous MMA (wgmma) reads its A operand from registers (attention's P kept in registers for P V)",
    ),
    FeatureSpec(
        "mma.overlapped",
        "bool",
        "a warpgroup's wgmma stays in flight while the same warpgroup computes: a wait pinned behind a fragment's "
        "computation (FlashAttention-3's intra-warpgroup overlap of the softmax with P V)",
    ),
    FeatureSpec("mma.n", "int", "N of the widest MMA instruction (wgmma: 8..256; mma.sync: 8)"),
    FeatureSpec("mma.accumulator_registers", "int", "32-bit registers per thread of the largest accumulator"),
    # --- copies --------------------------------------------------------------------------------------
    FeatureSpec("copy.atoms", "set", "every copy atom used (auto, cp.async, tma, ldmatrix, ...)"),
    FeatureSpec("copy.global_loads", "set", "atoms of the copies that read global memory"),
    FeatureSpec("copy.global_stores", "set", "atoms of the copies that write global memory"),
    FeatureSpec("copy.global_load_targets", "set", "spaces global loads write: shared, fragment"),
    FeatureSpec("copy.global_store_sources", "set", "spaces global stores read: shared, fragment"),
    FeatureSpec("copy.shared_to_register", "set", "atoms of the copies from shared memory into fragments"),
    # --- shared memory -------------------------------------------------------------------------
    FeatureSpec("smem.bytes", "int", "shared memory per block (physical extents and mbarriers)"),
    FeatureSpec("smem.buffers", "int", "shared-memory buffers (mbarrier arrays excluded)"),
    FeatureSpec("smem.staged", "bool", "global tiles are staged through shared memory"),
    FeatureSpec("smem.swizzle", "int", "the widest swizzle of a shared buffer in bytes (0: none)"),
    FeatureSpec("smem.unswizzled_buffers", "int", "shared buffers of 16-bit elements with neither swizzle nor padding"),
    FeatureSpec("smem.padded", "bool", "a shared buffer's rows are padded (cosize larger than size)"),
    # --- pipeline ------------------------------------------------------------------------------
    FeatureSpec("pipeline.kind", "str", "none, cp.async (wait_group) or mbarrier (TMA + mbarriers)"),
    FeatureSpec("pipeline.stages", "int", "stages of the main pipeline (1: not pipelined)"),
    FeatureSpec("pipeline.mbarriers", "int", "mbarrier objects per block"),
    FeatureSpec("pipeline.async_copies", "bool", "the kernel issues asynchronous copies (cp.async or TMA)"),
    # --- loops -----------------------------------------------------------------------------------
    FeatureSpec("loops.count", "int", "DSL loops (T.serial, T.unroll, T.pipeline)"),
    FeatureSpec("loops.kinds", "set", "loop kinds present: serial, unrolled, pipelined"),
    FeatureSpec("loops.max_depth", "int", "deepest loop nest"),
    FeatureSpec("loops.mma_loop", "bool", "an MMA sits inside a loop (a K loop or a KV loop)"),
    FeatureSpec("loops.static_trip_counts", "bool", "every loop's trip count is known at trace time"),
    # --- warp roles ------------------------------------------------------------------------------
    FeatureSpec("roles.names", "set", "names of the warp roles"),
    FeatureSpec("roles.count", "int", "warp roles (0: no warp specialization)"),
    FeatureSpec("roles.warp_specialized", "bool", "producer and consumer run in different warpgroups"),
    FeatureSpec("roles.consumer_warpgroups", "int", "warpgroups of the role(s) that run the MMAs"),
    FeatureSpec("roles.register_split", "tuple", "setmaxnreg budgets of the roles in order"),
    FeatureSpec("roles.setmaxnreg", "bool", "a role sets its register budget with setmaxnreg"),
    FeatureSpec(
        "roles.turns",
        "bool",
        "the consumer warpgroups take turns issuing their MMAs (ping-pong: named barriers in a ring)",
    ),
    # --- grid ------------------------------------------------------------------------------------
    FeatureSpec("grid.persistent", "bool", "a persistent grid: fewer blocks than tiles, each block walks tiles"),
    FeatureSpec("grid.tile_order", "str", "order in which tiles are visited: none, row_major, column_major, grouped"),
    FeatureSpec("grid.blocks", "int", "blocks of a persistent grid (0 when the grid is not persistent)"),
    FeatureSpec(
        "grid.work_search",
        "bool",
        "a block finds its work in device-side metadata: a tensor element is read at an index read from the device "
        "(the grouped GEMM's search of its units' experts in the cumulative tile counts)",
    ),
    # --- policies --------------------------------------------------------------------------------
    FeatureSpec("policies.declared", "set", "policies the kernel declares as parameters (a planner can change)"),
    FeatureSpec("policies.present", "set", "policies with a value in the trace (declared or read off the IR)"),
    FeatureSpec("policies.stages", "int", "the stages policy's current value"),
    FeatureSpec("policies.tile_shape", "tuple", "the tile_shape policy's current value"),
    FeatureSpec("policies.tile_order", "str", "the tile_order policy's current value"),
    FeatureSpec("policies.swizzle", "int", "the swizzle policy's current value"),
    FeatureSpec("policies.unroll", "int", "the unroll policy's current value"),
    # --- hardware --------------------------------------------------------------------------------
    FeatureSpec("hardware.arch", "str", "the target architecture (sm_90a for H100/H200)", "hardware"),
    FeatureSpec("hardware.sms", "int", "streaming multiprocessors of the target GPU", "hardware"),
    FeatureSpec("hardware.tma", "bool", "the target has the Tensor Memory Accelerator", "hardware"),
    FeatureSpec("hardware.wgmma", "bool", "the target has warpgroup MMA (wgmma)", "hardware"),
    FeatureSpec("hardware.smem_per_block", "int", "shared memory one block may use, in bytes", "hardware"),
    # --- problem shape (optional: pass shapes=...) -----------------------------------------------
    FeatureSpec("shape.values", "set", "NAME=VALUE of every problem size given", "shape"),
    FeatureSpec("shape.output_tiles", "int", "output tiles of the problem (tile grid size)", "shape"),
    FeatureSpec("shape.waves", "float", "output tiles per SM: below 1 the GPU is not filled", "shape"),
    FeatureSpec(
        "shape.wave_efficiency", "float", "tiles / (full waves x SMs): below 1 the last wave idles SMs", "shape"
    ),
    FeatureSpec("shape.k_tiles", "int", "iterations of the main MMA loop (K / BK)", "shape"),
    FeatureSpec(
        "shape.groups", "int", "independent problems of one launch (grouped GEMM, MoE experts): shapes G=", "shape"
    ),
    # --- profile (optional: pass profile=...) ----------------------------------------------------
    FeatureSpec("profile.bound", "str", "what bounds the kernel: memory, compute or latency", "profile"),
    FeatureSpec("profile.fraction_of_ceiling", "float", "achieved fraction of the bounding ceiling", "profile"),
    FeatureSpec("profile.compute_fraction", "float", "achieved TFLOP/s over the measured peak", "profile"),
    FeatureSpec("profile.memory_fraction", "float", "achieved GB/s over the measured copy bandwidth", "profile"),
    FeatureSpec("profile.occupancy", "float", "achieved occupancy (active warps / maximum)", "profile"),
    # --- verifier (optional: pass findings=...) -----------------------------------------------------
    FeatureSpec("verify.codes", "set", "codes of the verifier's findings", "verify"),
    FeatureSpec("verify.bank_conflict_degree", "float", "worst shared-memory bank-conflict degree (1: none)", "verify"),
    FeatureSpec(
        "verify.uncoalesced_degree", "float", "worst sectors-touched / sectors-needed (1: coalesced)", "verify"
    ),
    FeatureSpec("verify.errors", "int", "violated invariants (errors)", "verify"),
)

FEATURES: dict[str, FeatureSpec] = {s.name: s for s in _SPECS}

#: Profile keys `kernel_features` accepts, and the feature each becomes.
PROFILE_KEYS = {
    "bound": "profile.bound",
    "fraction_of_ceiling": "profile.fraction_of_ceiling",
    "roofline": "profile.fraction_of_ceiling",
    "compute_fraction": "profile.compute_fraction",
    "compute": "profile.compute_fraction",
    "memory_fraction": "profile.memory_fraction",
    "memory": "profile.memory_fraction",
    "occupancy": "profile.occupancy",
}

#: What the hardware features are on each target we know.
HARDWARE = {
    "sm_90a": {"hardware.tma": True, "hardware.wgmma": True, "hardware.smem_per_block": SHARED_MEMORY_BUDGET},
    "sm_90": {"hardware.tma": True, "hardware.wgmma": False, "hardware.smem_per_block": SHARED_MEMORY_BUDGET},
    "sm_80": {"hardware.tma": False, "hardware.wgmma": False, "hardware.smem_per_block": 163 * 1024},
}


@dataclass(frozen=True)
class Features(Mapping[str, Any]):
    """The features of one kernel: a read-only mapping from feature name to value (absent when
    unknown), plus the traced kernel (for locus matching) and the source it came from."""

    values: dict[str, Any]
    kernel: Kernel | None = None
    function: Any = None  # the @argus.kernel, when known (transforms need it)
    params: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in sorted(self.values.items()):
            out[k] = sorted(v) if isinstance(v, frozenset) else list(v) if isinstance(v, tuple) else v
        return out


# --- tracing ----------------------------------------------------------------------------------------


def resolve(target: Any, params: dict[str, Any]) -> tuple[Kernel, Any, dict[str, Any]]:
    """(traced kernel, the @argus.kernel or None, the parameters used) for a `LibraryKernel`, an
    ``@argus.kernel`` or a traced `Kernel`."""
    from argus.kernels.registry import LibraryKernel

    if isinstance(target, Kernel):
        if params:
            raise KBError("KB_FEATURES_PARAMS", f"kernel {target.name} is already traced; parameters {params} unused")
        return target, None, dict(target.params)
    if isinstance(target, LibraryKernel):
        used = {**target.params, **params}
        return target.kernel.trace(**used), target.kernel, used
    if hasattr(target, "trace") and hasattr(target, "policy_params"):
        return target.trace(**params), target, dict(params)
    raise KBError(
        "KB_FEATURES_TARGET",
        f"cannot read features of {target!r}",
        "pass a library kernel (argus.kernels.get_kernel), an @argus.kernel or a traced Kernel",
    )


def _children(s: Stmt) -> tuple[Stmt, ...]:
    if isinstance(s, For | Role | Let):
        return s.body
    if isinstance(s, If):
        return s.then + s.orelse
    return ()


def walk_with_loops(body: tuple[Stmt, ...], loops: tuple[For, ...] = ()) -> Iterator[tuple[Stmt, tuple[For, ...]]]:
    """Every statement with the loops that enclose it (outermost first)."""
    for s in body:
        yield s, loops
        inner = loops + (s,) if isinstance(s, For) else loops
        yield from walk_with_loops(_children(s), inner)


def _atom_kind(atom: str) -> str:
    """The family of an MMA atom name: wgmma, mma.sync, or fma (the per-thread CUDA-core atom)."""
    if atom.startswith("wgmma"):
        return "wgmma"
    if atom.startswith("mma"):
        return "mma.sync"
    if atom.startswith("fma"):
        return "fma"
    return atom


def _registers(buffer: Any) -> int:
    from argus.verify.checks.budget import registers_of

    try:
        return registers_of(buffer)
    except TypeError:
        return 0


def _is_padded(buffer: Any) -> bool:
    layout = buffer.layout
    if layout is None or isinstance(layout, ComposedLayout):
        return False
    return layout.cosize() > math.prod(buffer.static_shape)


def _work_search(body: tuple[Stmt, ...]) -> bool:
    """Whether a `T.let` binding reads a tensor element at an index that depends on an element read before it (a
    search in device-side metadata: `grid.work_search`)."""
    bound: set[Any] = set()  # the bindings whose value depends on an element read
    for s, _ in walk_with_loops(body):
        if not isinstance(s, Let) or not isinstance(s.value, Expr):
            continue
        reads = elements(s.value)
        for e in reads:
            for i in e.index:
                if isinstance(i, Expr) and (elements(i) or free_vars(i) & bound):
                    return True
        if reads or free_vars(s.value) & bound:
            bound.add(s.var)
    return False


def ir_features(kernel: Kernel) -> dict[str, Any]:
    """The features the IR alone determines (of the program with its `T.let` bindings inlined, as the verifier
    reads it: a binding's body holds statements like any other)."""
    from argus.ir.rewrite import inline_lets
    from argus.verify.checks.budget import shared_bytes

    work_search = _work_search(kernel.body)
    kernel = inline_lets(kernel)
    stmts = list(walk_with_loops(kernel.body))
    tensors_read: set[str] = set()
    tensors_written: set[str] = set()
    copy_atoms: set[str] = set()
    loads: set[str] = set()
    stores: set[str] = set()
    load_targets: set[str] = set()
    store_sources: set[str] = set()
    smem_to_reg: set[str] = set()
    gemms: list[tuple[Gemm, tuple[For, ...]]] = []
    reductions: set[str] = set()
    shuffle = False
    map_ops: set[str] = set()
    coord_axes: set[int] = set()
    smem_total = 0
    smem_buffers = 0
    mbarriers = 0
    swizzle = 0
    unswizzled = 0
    padded = False
    async_copies = False
    cp_async = False
    loops: list[tuple[For, tuple[For, ...]]] = []
    roles: list[Role] = []
    all_dtypes: set[str] = {t.dtype.name for t in kernel.tensors}
    accumulators: list[Any] = []
    mbarrier_waits = 0
    pinned_waits = 0
    turns = False
    reduce_max_in_loop = False
    exp_in_loop = False

    for s, enclosing in stmts:
        if isinstance(s, Alloc):
            b = s.buffer
            all_dtypes.add(b.dtype.name)
            if b.space == Space.SHARED:
                smem_total += shared_bytes(b)
                smem_buffers += 1
                if isinstance(b.layout, ComposedLayout):
                    swizzle = max(swizzle, swizzle_width(b.layout.inner.bits))
                elif _is_padded(b):
                    padded = True
                elif b.dtype.bits == 16 and b.rank >= 2:
                    unswizzled += 1
            elif b.space == Space.MBARRIER:
                smem_total += shared_bytes(b)
                mbarriers += int(b.static_shape[0]) if b.shape else 1
        elif isinstance(s, Copy):
            copy_atoms.add(s.atom)
            src, dst = s.src.buffer.space, s.dst.buffer.space
            if src == Space.GLOBAL:
                tensors_read.add(s.src.buffer.name)
                loads.add(s.atom)
                load_targets.add(dst.value)
            if dst == Space.GLOBAL:
                tensors_written.add(s.dst.buffer.name)
                stores.add(s.atom)
                store_sources.add(src.value)
            if src == Space.SHARED and dst == Space.FRAGMENT:
                smem_to_reg.add(s.atom)
            if s.atom in ("cp.async", "tma") or s.atom.startswith("tma"):
                async_copies = True
                cp_async = cp_async or s.atom == "cp.async"
        elif isinstance(s, Gemm):
            gemms.append((s, enclosing))
            accumulators.append(s.acc.buffer)
        elif isinstance(s, Reduce):
            reductions.add(s.op.value)
            shuffle = shuffle or bool(s.shuffle_lanes)
            if s.op.value == "max" and enclosing:
                reduce_max_in_loop = True
        elif isinstance(s, Map):
            map_ops.add(s.op.value)
            if s.op == MapOp.COORD:
                axis = s.srcs[0]
                value = getattr(axis, "value", None)
                if isinstance(value, int):
                    coord_axes.add(value)
            if s.op in (MapOp.EXP, MapOp.EXP2, MapOp.EXP2_FMA) and enclosing:
                exp_in_loop = True
        elif isinstance(s, For):
            loops.append((s, enclosing))
        elif isinstance(s, Role):
            roles.append(s)
        elif isinstance(s, MbarrierWait):
            mbarrier_waits += 1
        elif isinstance(s, WgmmaWait):
            pinned_waits += s.after is not None
        elif isinstance(s, WarpgroupTurn):
            turns = True
        elif isinstance(s, AsyncWait):
            cp_async = True

    mma_atoms = {g.atom for g, _ in gemms}
    kinds = {_atom_kind(a) for a in mma_atoms}
    mma_kind = next((k for k in ("wgmma", "mma.sync", "fma") if k in kinds), "none")
    main = next((g for g, _ in gemms if _atom_kind(g.atom) == mma_kind), None)
    a_source = "none" if main is None else ("shared" if main.a.buffer.space == Space.SHARED else "register")
    mma_n = 0
    for a in mma_atoms:
        if a.startswith("wgmma.m64n"):
            mma_n = max(mma_n, int(a.split("n", 1)[1].split("k", 1)[0]))
        elif a.startswith("mma."):
            mma_n = max(mma_n, 8)
    # A chained MMA: an MMA's A operand is written from registers (computed, e.g. P = softmax(S) before P @ V)
    computed = {s.dst.buffer for s, _ in stmts if isinstance(s, Copy) and s.src.buffer.space == Space.FRAGMENT}
    chained = len(gemms) >= 2 and any(g.a.buffer in computed for g, _ in gemms)

    stages = max((lp.stages for lp, _ in loops if lp.kind == LoopKind.PIPELINED), default=1)
    if kernel.policies.stages:
        stages = max(stages, kernel.policies.stages)
    pipeline_kind = "mbarrier" if mbarriers and async_copies else "cp.async" if cp_async else "none"
    if pipeline_kind == "none":
        stages = 1
    consumer_wgs = 0
    for r in roles:
        if any(isinstance(x, Gemm) for x, _ in walk_with_loops(r.body)):
            consumer_wgs += len(r.warpgroups)
    if not roles:
        consumer_wgs = -(-kernel.threads // WARPGROUP_SIZE) if gemms else 0
    pol = kernel.policies
    present = {name for name in pol.__dataclass_fields__ if getattr(pol, name) is not None}
    out: dict[str, Any] = {
        "kernel.name": kernel.name,
        "kernel.threads": kernel.threads,
        "kernel.warpgroups": -(-kernel.threads // WARPGROUP_SIZE),
        "kernel.grid_dims": len(kernel.grid),
        "dtypes.inputs": frozenset(t.dtype.name for t in kernel.tensors if t.name in tensors_read),
        "dtypes.outputs": frozenset(t.dtype.name for t in kernel.tensors if t.name in tensors_written),
        "dtypes.all": frozenset(all_dtypes),
        "dtypes.mma_operands": frozenset({g.a.dtype.name for g, _ in gemms} | {g.b.dtype.name for g, _ in gemms}),
        "dtypes.accumulator": frozenset(g.acc.dtype.name for g, _ in gemms),
        "dtypes.tensor_core_inputs": any(
            t.dtype.name in ("bf16", "f16", "e4m3", "e5m2") for t in kernel.tensors if t.name in tensors_read
        ),
        "ops.gemm": bool(gemms),
        "ops.gemm_count": len(gemms),
        "ops.chained_gemm": bool(chained),
        "ops.reduce": bool(reductions),
        "ops.reductions": frozenset(reductions),
        "ops.shuffle_reduction": shuffle,
        "ops.exp": "exp" in map_ops,
        "ops.exp2": "exp2" in map_ops,
        "ops.masked": bool({"select", "lt"} & map_ops),
        "ops.causal_mask": {0, 1} <= coord_axes and bool({"select", "lt"} & map_ops),
        "ops.online_softmax": reduce_max_in_loop and exp_in_loop,
        "ops.elementwise_only": not gemms and not reductions,
        "ops.map_ops": frozenset(map_ops),
        "mma.kind": mma_kind,
        "mma.atoms": frozenset(mma_atoms),
        "mma.a_source": a_source,
        "mma.register_operand": any(
            _atom_kind(g.atom) == "wgmma" and g.a.buffer.space == Space.FRAGMENT for g, _ in gemms
        ),
        "mma.overlapped": pinned_waits > 0,
        "mma.n": mma_n,
        "mma.accumulator_registers": max((_registers(b) for b in accumulators), default=0),
        "copy.atoms": frozenset(copy_atoms),
        "copy.global_loads": frozenset(loads),
        "copy.global_stores": frozenset(stores),
        "copy.global_load_targets": frozenset(load_targets),
        "copy.global_store_sources": frozenset(store_sources),
        "copy.shared_to_register": frozenset(smem_to_reg),
        "smem.bytes": smem_total,
        "smem.buffers": smem_buffers,
        "smem.staged": Space.SHARED.value in load_targets,
        "smem.swizzle": swizzle,
        "smem.unswizzled_buffers": unswizzled,
        "smem.padded": padded,
        "pipeline.kind": pipeline_kind,
        "pipeline.stages": stages,
        "pipeline.mbarriers": mbarriers,
        "pipeline.async_copies": async_copies,
        "loops.count": len(loops),
        "loops.kinds": frozenset(lp.kind.value for lp, _ in loops),
        "loops.max_depth": max((len(enc) + 1 for _, enc in loops), default=0),
        "loops.mma_loop": any(enc for _, enc in gemms),
        "loops.static_trip_counts": all(isinstance(lp.extent, int) for lp, _ in loops),
        "roles.names": frozenset(r.name for r in roles),
        "roles.count": len(roles),
        "roles.warp_specialized": len({r.warpgroups for r in roles}) >= 2,
        "roles.consumer_warpgroups": consumer_wgs,
        "roles.register_split": tuple(r.registers or 0 for r in roles),
        "roles.setmaxnreg": any(r.registers for r in roles),
        "roles.turns": turns,
        "grid.persistent": bool(pol.persistent),
        "grid.tile_order": pol.tile_order.value if pol.tile_order is not None else "none",
        "grid.blocks": int(kernel.grid[0]) if pol.persistent and isinstance(kernel.grid[0], int) else 0,
        "grid.work_search": work_search,
        "policies.present": frozenset(present),
    }
    if pol.stages is not None:
        out["policies.stages"] = pol.stages
    if pol.tile_shape is not None:
        out["policies.tile_shape"] = tuple(pol.tile_shape)
    if pol.tile_order is not None:
        out["policies.tile_order"] = pol.tile_order.value
    if pol.swizzle is not None:
        out["policies.swizzle"] = pol.swizzle
    if pol.unroll is not None:
        out["policies.unroll"] = pol.unroll
    return out


# --- profile and verifier data ----------------------------------------------------------------------


def profile_features(profile: Any) -> dict[str, Any]:
    """Profile facts from a dict (or an object with those attributes): ``bound`` ("memory",
    "compute" or "latency"), ``fraction_of_ceiling`` (alias ``roofline``), ``compute_fraction``
    (alias ``compute``), ``memory_fraction`` (alias ``memory``), ``occupancy``. Fractions are in
    [0, 1]. Without ``bound``, the larger of the compute and memory fractions decides it."""
    if profile is None:
        return {}
    data = (
        dict(profile)
        if isinstance(profile, Mapping)
        else {k: getattr(profile, k) for k in PROFILE_KEYS if hasattr(profile, k)}
    )
    unknown = set(data) - set(PROFILE_KEYS)
    if unknown:
        raise KBError(
            "KB_PROFILE",
            f"unknown profile key {sorted(unknown)[0]!r}",
            requirement=f"keys among {', '.join(PROFILE_KEYS)}",
        )
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        name = PROFILE_KEYS[key]
        if name == "profile.bound":
            if value not in ("memory", "compute", "latency"):
                raise KBError("KB_PROFILE", f"profile bound {value!r}", requirement="memory, compute or latency")
            out[name] = str(value)
        else:
            if not isinstance(value, int | float) or not 0 <= float(value) <= 1.5:
                raise KBError("KB_PROFILE", f"profile {key} = {value!r}", requirement="a fraction between 0 and 1")
            out[name] = float(value)
    if "profile.bound" not in out and ("profile.compute_fraction" in out or "profile.memory_fraction" in out):
        c, m = out.get("profile.compute_fraction", 0.0), out.get("profile.memory_fraction", 0.0)
        out["profile.bound"] = "compute" if c >= m else "memory"
    if "profile.fraction_of_ceiling" not in out and (
        "profile.compute_fraction" in out or "profile.memory_fraction" in out
    ):
        out["profile.fraction_of_ceiling"] = max(
            out.get("profile.compute_fraction", 0.0), out.get("profile.memory_fraction", 0.0)
        )
    return out


def _finding_dicts(findings: Any) -> list[dict[str, Any]]:
    if findings is None:
        return []
    if hasattr(findings, "findings"):  # an argus.verify Result
        findings = findings.findings
    out = []
    for f in findings:
        if isinstance(f, Mapping):
            out.append({"code": f["code"], "details": dict(f.get("details") or {}), "verdict": f.get("verdict")})
        elif hasattr(f, "code"):
            verdict = getattr(f, "verdict", None)
            out.append({"code": f.code, "details": dict(getattr(f, "details", {}) or {}), "verdict": verdict})
        else:
            raise KBError(
                "KB_FINDINGS", f"cannot read a verifier finding from {f!r}", "pass Finding objects or their JSON"
            )
    return out


def verify_features(findings: Any) -> dict[str, Any]:
    """Facts from the verifier's findings (a `Result`, `Finding`s, or their JSON): the codes, the
    worst bank-conflict and coalescing degrees, and the number of errors."""
    from argus.verify.catalog import CATALOG, Severity

    items = _finding_dicts(findings)
    if findings is None:
        return {}
    codes = set()
    bank, coalesce, errors = 1.0, 1.0, 0
    for f in items:
        code = f["code"]
        if code not in CATALOG:
            raise KBError("KB_FINDINGS", f"finding with unknown verifier code {code!r}")
        codes.add(code)
        degree = float(f["details"].get("degree", 1.0) or 1.0)
        if code == "PERF_BANK_CONFLICT":
            bank = max(bank, degree)
        elif code == "PERF_UNCOALESCED":
            coalesce = max(coalesce, degree)
        elif CATALOG[code].severity == Severity.ERROR and str(f.get("verdict", "violated")) == "violated":
            errors += 1
    return {
        "verify.codes": frozenset(codes),
        "verify.bank_conflict_degree": bank,
        "verify.uncoalesced_degree": coalesce,
        "verify.errors": errors,
    }


def _group_extent(kernel: Kernel) -> str | None:
    """The size symbol that counts a grouped kernel's groups: the extent of a 1-d integer tensor (the groups' offsets)
    that is also the leading extent of a 3-d floating-point operand (one matrix per group: a MoE layer's experts,
    ``B (E, K, N)`` beside ``offs (E,)``); None for any other kernel."""
    vectors = {str(t.shape[0]) for t in kernel.tensors if len(t.shape) == 1 and t.dtype.name in ("i32", "i64")}
    for t in kernel.tensors:
        if len(t.shape) == 3 and t.dtype.name not in ("i32", "i64") and str(t.shape[0]) in vectors:
            return str(t.shape[0])
    return None


def shape_features(kernel: Kernel, shapes: Mapping[str, int] | None, sms: int) -> dict[str, Any]:
    """Problem-size facts, when sizes are given: output tiles, waves (tiles per SM), K iterations."""
    if not shapes:
        return {}
    out: dict[str, Any] = {"shape.values": frozenset(f"{k}={v}" for k, v in shapes.items())}
    groups = "G" if "G" in shapes else _group_extent(kernel)
    if groups is not None and groups in shapes:
        out["shape.groups"] = int(shapes[groups])
    tile = kernel.policies.tile_shape
    if tile is not None and len(tile) >= 2 and "M" in shapes and "N" in shapes:
        tiles = -(-shapes["M"] // tile[0]) * -(-shapes["N"] // tile[1])
        out["shape.output_tiles"] = tiles
        out["shape.waves"] = tiles / sms
        out["shape.wave_efficiency"] = tiles / (-(-tiles // sms) * sms)
        if len(tile) >= 3 and "K" in shapes:
            out["shape.k_tiles"] = -(-shapes["K"] // tile[2])
    return out


def kernel_features(
    target: Any,
    *,
    profile: Any = None,
    findings: Any = None,
    shapes: Mapping[str, int] | None = None,
    arch: str = "sm_90a",
    sms: int = SMS,
    **params: Any,
) -> Features:
    """The features of `target` (a `LibraryKernel`, an ``@argus.kernel`` or a traced `Kernel`)
    traced with `params`: IR facts always; profile, verifier and problem-size facts when
    `profile`, `findings` (a verify `Result`, `Finding`s or their JSON) and `shapes` are given.
    `arch` and `sms` describe the target GPU (default: `argus.atoms.target.DEFAULT_TARGET`)."""
    if arch not in HARDWARE:
        raise KBError("KB_FEATURES_ARCH", f"unknown target {arch!r}", requirement=f"one of {', '.join(HARDWARE)}")
    kernel, function, used = resolve(target, params)
    values = ir_features(kernel)
    declared = frozenset(function.policy_params) if function is not None else frozenset()
    values["policies.declared"] = declared
    values["hardware.arch"] = arch
    values["hardware.sms"] = sms
    values.update(HARDWARE[arch])
    values.update(shape_features(kernel, shapes, sms))
    values.update(profile_features(profile))
    values.update(verify_features(findings))
    return Features(values, kernel, function, used)


def check_value(spec: FeatureSpec, value: Any) -> bool:
    """True when `value` has the type `spec` declares (used by the tests and by `Features` users)."""
    return {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "set": lambda v: isinstance(v, frozenset) and all(isinstance(x, str) for x in v),
        "tuple": lambda v: isinstance(v, tuple) and all(isinstance(x, int) for x in v),
    }[spec.type](value)
