"""A static cost model: an *estimate* of a kernel's run time on a named GPU, from its traced IR at given problem
sizes, for the gate's profile stage on a machine without a GPU (and for anyone who wants a quick, explainable
ranking of candidates before spending GPU time).

It is a roofline with a handful of Hopper-specific corrections, not a simulator. Everything it assumes is listed
here and in `GPUSpec`; the numbers it returns are labelled estimates everywhere they are shown.

What it counts, per block, by walking the IR with the trip count of every loop (evaluated at `sizes`, and averaged
over sampled blocks, `_sampled_counts`: a block's loops may depend on where it is, as a causal attention block's key
tiles or a persistent block's share of the tiles do):

* **FLOPs by instruction kind** — each `Gemm` is ``2 * BM * BN * BK`` FLOPs on the unit its atom names:
  ``wgmma`` (dense bf16 tensor-core peak), ``mma.sync`` (about half of it on Hopper), or the per-thread FMA atom
  (CUDA-core f32 FMAs); `Map`/`Reduce` elements count one FLOP each on the CUDA cores (``exp``, ``tanh``
  and the other special functions of `_HEAVY_MAP_OPS`: four).
* **Global bytes with tile reuse** — a copy from or to global memory moves its tile's bytes once per execution
  (a block reads each tile once, whatever the threads do with it; what the L1 catches of replicated
  per-thread loads is assumed caught), multiplied by the verifier's ``PERF_UNCOALESCED`` degree for that copy
  (sectors touched / sectors needed). These bytes cross L2. DRAM sees the tensors' unique bytes once, times a
  re-read factor when the operands exceed L2 and the tile order is not grouped (``(A + B) / L2``, at most the
  ratio of the bytes the blocks request to the unique bytes: a streaming kernel reads each byte once).
* **Shared-memory bytes** — writes of a tile into shared memory, and reads into fragments counted per thread
  (``values per thread x threads``: an operand read by several warps is read several times), multiplied by the
  verifier's ``PERF_BANK_CONFLICT`` degree for that access; ``wgmma`` reading its operands from shared memory
  reads A once and B once per warpgroup of 64 rows.
* **Occupancy and waves** — resident blocks per SM from threads, blocks and registers per SM (the target's: the
  fragments' registers per thread plus `GPUSpec.base_registers`; warp roles with ``setmaxnreg`` count their
  thread-weighted average) and shared memory; blocks are spread over the SMs in waves, and a last
  partial wave leaves SMs idle (the resource times are divided by the wave efficiency).
* **Pipelining** — the copy and compute times overlap as ``max(T) + (sum(T) - max(T)) / c``: the concurrency
  ``c`` is resident blocks x stages in flight (a main loop with asynchronous copies ``cp.async``/TMA and
  ``S`` stages keeps ``S`` tiles in flight; synchronous copies, one) x 2 when warp roles split producer and
  consumer (a producer warpgroup issues loads while the consumers compute). Exposed memory latency per main-loop
  iteration is ``latency / S`` per block, hidden by the other resident blocks: the kernel takes at least
  ``waves x iterations x latency / S``.
* **Launch overhead** — a fixed `GPUSpec.launch_us` per launch.

The estimate's **bound** is the largest term (``tensor``, ``fma``, ``smem``, ``l2``, ``dram``, ``latency``,
``launch``), also given as ``compute`` / ``memory`` / ``latency`` for the knowledge base's profile features
(`Estimate.profile`).

Not modelled (the estimate is blind to them): instruction issue limits and register spills; L1 hits other than
broadcasts; partial tiles at the edges (tiles are counted full); clock throttling; TMA multicast and clusters;
epilogue overlap; the exact latency of barriers. Use it to *order* candidates; only a GPU measures them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus.atoms.common import WARPGROUP_SIZE
from argus.atoms.target import DEFAULT_TARGET, H200
from argus.diagnostics import ArgusError


class CostModelError(ArgusError):
    """The cost model cannot estimate this kernel (code ``COSTMODEL_*``)."""


@dataclass(frozen=True)
class GPUSpec:
    """The figures of one GPU the cost model uses (peaks are the vendor's dense figures; ``*_efficiency`` is the
    fraction of a peak a well-written kernel sustains, from published measurements)."""

    name: str
    sms: int = DEFAULT_TARGET.sms
    clock_ghz: float = 1.83
    wgmma_tflops: float = DEFAULT_TARGET.dense_tensor_tflops  # dense bf16, wgmma
    mma_sync_tflops: float = 494.7  # mma.sync on Hopper: about half of wgmma's rate
    fma_tflops: float = 66.9  # f32 FMA on CUDA cores (2 FLOPs per FMA)
    hbm_gbs: float = DEFAULT_TARGET.hbm_gbs
    l2_gbs: float = DEFAULT_TARGET.l2_gbs  # L2 -> SM bandwidth, all SMs together
    l2_bytes: int = 50 * 1024 * 1024
    smem_bytes_per_clock: int = 128  # per SM
    smem_per_sm: int = DEFAULT_TARGET.shared_memory_per_sm
    registers_per_sm: int = DEFAULT_TARGET.register_file
    threads_per_sm: int = DEFAULT_TARGET.max_threads_per_sm
    blocks_per_sm: int = DEFAULT_TARGET.max_blocks_per_sm
    base_registers: int = 24  # registers a thread needs beyond its fragments (indices, addresses)
    latency_ns: float = 600.0  # a global load's latency under load
    launch_us: float = 4.0
    tensor_efficiency: float = 0.8  # cuBLAS reaches ~750-790 of 989 TFLOP/s on an H100 SXM
    fma_efficiency: float = 0.75
    hbm_efficiency: float = 0.9

    @property
    def smem_gbs(self) -> float:
        """Shared-memory bandwidth of all SMs together, GB/s."""
        return self.smem_bytes_per_clock * self.clock_ghz * self.sms

    def to_json(self) -> dict[str, Any]:
        import dataclasses

        return dataclasses.asdict(self)


#: The GPUs the cost model knows, by name (``H100-SXM`` is the default).
GPUS: dict[str, GPUSpec] = {
    "H100-SXM": GPUSpec("H100-SXM"),
    "H200": GPUSpec("H200", hbm_gbs=H200.hbm_gbs),
    "H100-PCIe": GPUSpec(
        "H100-PCIe",
        sms=114,
        clock_ghz=1.755,
        wgmma_tflops=756.5,
        mma_sync_tflops=378.0,
        fma_tflops=51.2,
        hbm_gbs=2000.0,
        l2_gbs=9000.0,
        launch_us=4.0,
    ),
}
DEFAULT_GPU = "H100-SXM"


def gpu_spec(gpu: str | GPUSpec | None = None) -> GPUSpec:
    """The `GPUSpec` named `gpu` (default ``H100-SXM``); a `GPUSpec` is returned as is."""
    if isinstance(gpu, GPUSpec):
        return gpu
    name = gpu or DEFAULT_GPU
    if name not in GPUS:
        raise CostModelError(
            "COSTMODEL_GPU", f"the cost model knows no GPU named {name!r}", f"one of: {', '.join(GPUS)}"
        )
    return GPUS[name]


@dataclass
class Estimate:
    """The cost model's estimate for one kernel at one problem size.

    Attributes:
        kernel, sizes, gpu: what was estimated, where.
        ms: the estimated time in milliseconds (an estimate, never a measurement).
        bound: the largest term (``tensor``, ``fma``, ``smem``, ``l2``, ``dram``, ``latency``, ``launch``).
        terms_ms: each term's time in ms (resource times already divided by the wave efficiency).
        counts: what was counted (FLOPs by kind, bytes by level, blocks, iterations, ...).
        occupancy: resident blocks per SM, what limits them, waves and the wave efficiency.
        pipeline: stages in flight, warp specialization, the concurrency that overlaps copy and compute.
        penalties: the verifier's degrees applied (bank conflicts, uncoalescing), per access.
        flops: the useful FLOPs (tensor + FMA); tflops: flops / time.
    """

    kernel: str
    sizes: dict[str, int]
    gpu: str
    ms: float
    bound: str
    terms_ms: dict[str, float]
    counts: dict[str, Any]
    occupancy: dict[str, Any]
    pipeline: dict[str, Any]
    penalties: list[dict[str, Any]] = field(default_factory=list)
    flops: float = 0.0

    @property
    def tflops(self) -> float:
        return self.flops / (self.ms * 1e-3) / 1e12 if self.ms > 0 else 0.0

    @property
    def bound_class(self) -> str:
        """``compute``, ``memory`` or ``latency``."""
        return {"tensor": "compute", "fma": "compute", "smem": "memory", "l2": "memory", "dram": "memory"}.get(
            self.bound, "latency"
        )

    @property
    def profile(self) -> dict[str, Any]:
        """The profile facts `argus.kb.kernel_features(profile=...)` reads."""
        total = max(self.ms, 1e-12)
        compute = max(self.terms_ms.get("tensor", 0.0), self.terms_ms.get("fma", 0.0))
        memory = max(self.terms_ms.get(k, 0.0) for k in ("smem", "l2", "dram"))
        return {
            "bound": self.bound_class,
            "compute_fraction": min(1.0, compute / total),
            "memory_fraction": min(1.0, memory / total),
            "occupancy": self.occupancy["blocks_per_sm"]
            * self.occupancy["threads"]
            / DEFAULT_TARGET.max_threads_per_sm,
        }

    def summary(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.sizes.items())
        return (
            f"estimate {self.ms:.4g} ms on {self.gpu} at {dims} ({self.tflops:.1f} TFLOP/s, {self.bound}-bound; "
            "static cost model, not a measurement)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": "cost_model",
            "estimate": True,
            "kernel": self.kernel,
            "sizes": dict(self.sizes),
            "gpu": self.gpu,
            "ms": self.ms,
            "tflops": self.tflops,
            "bound": self.bound,
            "bound_class": self.bound_class,
            "terms_ms": dict(self.terms_ms),
            "counts": dict(self.counts),
            "occupancy": dict(self.occupancy),
            "pipeline": dict(self.pipeline),
            "penalties": list(self.penalties),
            "profile": self.profile,
        }


# ---------------------------------------------------------------------------------------------------------------
# counting


def _atom_kind(atom: str) -> str:
    if atom.startswith("wgmma"):
        return "tensor_wgmma"
    if atom.startswith("mma"):
        return "tensor_mma_sync"
    return "fma"


def _eval(expr: Any, env: dict[Any, int]) -> int:
    from argus.ir.expr import Expr, evaluate

    if isinstance(expr, int):
        return expr
    if isinstance(expr, Expr):
        return int(evaluate(expr, env))
    return int(expr)


def _bytes(ref: Any) -> int:
    return math.prod(ref.shape) * ref.dtype.bits // 8


def _finding_index(findings: Any) -> tuple[dict[tuple[str, int | None], float], dict[str, float]]:
    """(code, buffer, line) -> degree from the verifier's PERF_* findings (objects, a Result, or their JSON)."""
    if findings is None:
        return {}, {}
    if hasattr(findings, "findings"):
        findings = findings.findings
    if isinstance(findings, Mapping) and "findings" in findings:
        findings = findings["findings"]
    by_site: dict[tuple[str, int | None], float] = {}
    by_buffer: dict[str, float] = {}
    for f in findings:
        if isinstance(f, Mapping):
            code, details, loc = f.get("code"), f.get("details") or {}, f.get("loc")
            line = loc.get("line") if isinstance(loc, Mapping) else None
        else:
            code, details, loc = getattr(f, "code", None), getattr(f, "details", {}) or {}, getattr(f, "loc", None)
            line = getattr(loc, "line", None)
        if code not in ("PERF_BANK_CONFLICT", "PERF_UNCOALESCED"):
            continue
        degree = float(details.get("degree", 1.0) or 1.0)
        key = f"{code}:{details.get('buffer')}"
        by_site[(key, line)] = max(by_site.get((key, line), 1.0), degree)
        by_buffer[key] = max(by_buffer.get(key, 1.0), degree)
    return by_site, by_buffer


@dataclass
class _Counts:
    flops: dict[str, float] = field(default_factory=lambda: {"tensor_wgmma": 0.0, "tensor_mma_sync": 0.0, "fma": 0.0})
    global_bytes: float = 0.0
    smem_bytes: float = 0.0
    async_copies: bool = False
    main_iterations: int = 0
    stages: int = 1
    penalties: list[dict[str, Any]] = field(default_factory=list)


def _user_name(buf: Any) -> str:
    try:
        from argus.verify.program import user_name

        return user_name(buf)
    except Exception:  # noqa: BLE001 - naming is best effort
        return buf.name


def _count(kernel: Any, env: dict[Any, int], findings: Any) -> _Counts:
    from argus.ir.nodes import Copy, For, Gemm, If, LoopKind, Map, Reduce, Role, Space
    from argus.ir.rewrite import inline_lets

    kernel = inline_lets(kernel)  # a T.let binding's body counts like any other statements
    by_site, by_buffer = _finding_index(findings)
    counts = _Counts()
    warpgroups = max(1, kernel.threads // WARPGROUP_SIZE)

    def degree(code: str, buf: Any, stmt: Any) -> float:
        key = f"{code}:{_user_name(buf)}"
        line = getattr(stmt.loc, "line", None)
        if (key, line) in by_site:
            d = by_site[(key, line)]
        elif by_site and any(k == key for k, _ in by_site) and line is not None:
            d = 1.0  # findings for this buffer exist, but at other statements
        else:
            d = by_buffer.get(key, 1.0)
        if d > 1.0:
            counts.penalties.append({"code": code, "buffer": _user_name(buf), "line": line, "degree": d})
        return d

    def fragment_bytes(ref: Any) -> int:
        buf = ref.buffer
        if buf.tv is None or buf.threads is None:
            return _bytes(ref)
        whole = math.prod(buf.static_shape)
        part = math.prod(ref.shape) / whole if whole else 1.0
        return int(buf.values_per_thread * buf.threads * part * buf.dtype.bits // 8)

    def visit(stmts: Any, mult: float, in_loop: bool) -> None:
        for s in stmts:
            if isinstance(s, For):
                trips = max(0, _eval(s.extent, env))
                body_has_gemm = any(isinstance(x, Gemm) for x in _walk(s.body))
                if body_has_gemm and not any(isinstance(x, For) and _has_gemm(x) for x in s.body):
                    counts.main_iterations = max(counts.main_iterations, trips)  # the innermost MMA loop
                    if s.kind == LoopKind.PIPELINED:
                        counts.stages = max(counts.stages, s.stages)
                visit(s.body, mult * trips, True)
            elif isinstance(s, Role):
                visit(s.body, mult, in_loop)
            elif isinstance(s, If):
                visit(s.then, mult, in_loop)  # counted as taken: an upper bound
            elif isinstance(s, Copy):
                src, dst = s.src.space, s.dst.space
                if s.atom in ("cp.async", "tma") and in_loop:
                    counts.async_copies = True
                if src == Space.GLOBAL or dst == Space.GLOBAL:
                    ref = s.src if src == Space.GLOBAL else s.dst
                    d = degree("PERF_UNCOALESCED", ref.buffer, s)
                    counts.global_bytes += mult * _bytes(ref) * d
                if dst == Space.SHARED:
                    d = degree("PERF_BANK_CONFLICT", s.dst.buffer, s) if src != Space.GLOBAL or s.atom != "tma" else 1
                    counts.smem_bytes += mult * _bytes(s.dst) * d
                if src == Space.SHARED:
                    d = degree("PERF_BANK_CONFLICT", s.src.buffer, s)
                    moved = fragment_bytes(s.dst) if dst == Space.FRAGMENT else _bytes(s.src)
                    counts.smem_bytes += mult * moved * d
            elif isinstance(s, Gemm):
                bm, bn = s.acc.shape[0], s.acc.shape[1]
                bk = s.a.shape[1] if len(s.a.shape) > 1 else 1
                counts.flops[_atom_kind(s.atom)] += mult * 2.0 * bm * bn * bk
                if s.a.space == Space.SHARED:
                    counts.smem_bytes += mult * _bytes(s.a)
                if s.b.space == Space.SHARED:
                    counts.smem_bytes += mult * _bytes(s.b) * max(1, min(warpgroups, bm // 64))
            elif isinstance(s, Map):
                heavy = str(s.op.value if hasattr(s.op, "value") else s.op) in _HEAVY_MAP_OPS
                counts.flops["fma"] += mult * math.prod(s.dst.shape) * (4 if heavy else 1) / 2
            elif isinstance(s, Reduce):
                counts.flops["fma"] += mult * math.prod(s.src.shape) / 2

    visit(kernel.body, 1.0, False)
    if counts.async_copies and counts.stages == 1:
        counts.stages = int(kernel.policies.stages or 2)
    return counts


#: Elementwise operations that run on the special function units or as libdevice sequences (four FLOPs an element).
_HEAVY_MAP_OPS = frozenset(
    {"exp", "exp2", "log", "log2", "log1p", "expm1", "rsqrt", "sqrt", "tanh", "erf", "pow", "sigmoid", "sin", "cos"}
)


def _block_samples(grid: list[int]) -> list[tuple[int, ...]]:
    """Block coordinates whose counts stand for the grid's: per dimension 0, the quartiles and the last (all of a
    short dimension), three per dimension where the product would pass 64."""

    def picks(extent: int, n: int) -> list[int]:
        if extent <= n:
            return list(range(extent))
        return sorted({round(i * (extent - 1) / (n - 1)) for i in range(n)})

    per = [picks(g, 5) for g in grid]
    if math.prod(len(p) for p in per) > 64:
        per = [picks(g, 3) for g in grid]
    out: list[tuple[int, ...]] = [()]
    for p in per:
        out = [(*o, i) for o in out for i in p]
    return out


def _sampled_counts(kernel: Any, env: dict[Any, int], grid: list[int], findings: Any) -> _Counts:
    """The counts of an average block: `_count` at sampled block coordinates (`_block_samples`), averaged. A block's
    loops may depend on where it is (a causal attention block's key tiles, a persistent block's share of the tiles):
    the counts of block 0 alone made a causal kernel 4-6x too fast (it has one key tile)."""
    samples = _block_samples(grid)
    found = []
    for coords in samples:
        here = dict(env)
        for v, i in zip(kernel.block_vars, coords, strict=False):
            here[v] = i
        found.append(_count(kernel, here, findings))
    if len(found) == 1:
        return found[0]
    n = len(found)
    mean = _Counts()
    mean.flops = {k: sum(c.flops[k] for c in found) / n for k in found[0].flops}
    mean.global_bytes = sum(c.global_bytes for c in found) / n
    mean.smem_bytes = sum(c.smem_bytes for c in found) / n
    mean.async_copies = any(c.async_copies for c in found)
    mean.main_iterations = max(1, round(sum(c.main_iterations for c in found) / n))
    mean.stages = max(c.stages for c in found)
    mean.penalties = found[0].penalties
    return mean


def _walk(stmts: Any):
    from argus.ir.nodes import walk

    return walk(tuple(stmts))


def _has_gemm(loop: Any) -> bool:
    from argus.ir.nodes import Gemm

    return any(isinstance(x, Gemm) for x in _walk(loop.body))


def _registers_per_thread(kernel: Any, spec: GPUSpec) -> int:
    from argus.ir.nodes import Alloc, Role, Space
    from argus.verify.checks.budget import registers_of

    roles = [s for s in kernel.body if isinstance(s, Role)] + [
        s for s in _walk(kernel.body) if isinstance(s, Role) and s not in kernel.body
    ]
    if roles and all(r.registers for r in roles):
        threads = sum(WARPGROUP_SIZE * len(r.warpgroups) for r in roles)
        return -(-sum(r.registers * WARPGROUP_SIZE * len(r.warpgroups) for r in roles) // max(1, threads))
    frags = 0
    for s in _walk(kernel.body):
        if isinstance(s, Alloc) and s.buffer.space == Space.FRAGMENT and s.buffer.tv is not None:
            try:
                frags += registers_of(s.buffer)
            except (TypeError, ValueError):
                continue
    return min(255, frags + spec.base_registers)


def _shared_per_block(kernel: Any) -> int:
    from argus.ir.nodes import Alloc, Space
    from argus.verify.checks.budget import shared_bytes

    return sum(
        shared_bytes(s.buffer)
        for s in _walk(kernel.body)
        if isinstance(s, Alloc) and s.buffer.space in (Space.SHARED, Space.MBARRIER)
    )


# ---------------------------------------------------------------------------------------------------------------
# the estimate


def _traced(target: Any, params: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    from argus.ir.nodes import Kernel

    if isinstance(target, Kernel):
        return target, dict(params or {})
    from argus.kernels.registry import LibraryKernel

    if isinstance(target, LibraryKernel):
        p = dict(target.params if params is None else params)
        return target.kernel.trace(**p), p
    if hasattr(target, "trace"):
        p = dict(params or {})
        return target.trace(**p), p
    raise CostModelError(
        "COSTMODEL_TARGET", f"cannot estimate {target!r}", "pass a library kernel, an @argus.kernel or a traced Kernel"
    )


def estimate(
    target: Any,
    sizes: Mapping[str, int],
    *,
    params: Mapping[str, Any] | None = None,
    gpu: str | GPUSpec | None = None,
    findings: Any = None,
) -> Estimate:
    """The estimated time of `target` (a `LibraryKernel`, an ``@argus.kernel`` traced with `params`, or a traced
    `Kernel`) at problem `sizes` (its shape symbols, e.g. ``{"M": 4096, "N": 4096, "K": 4096}``) on `gpu`.

    `findings`: the verifier's result or findings for the same kernel and parameters; their ``PERF_BANK_CONFLICT``
    and ``PERF_UNCOALESCED`` degrees scale the shared-memory and global traffic of the accesses they name (without
    them, every access is taken as conflict-free and coalesced). Raises `CostModelError` when a size is missing.
    """
    spec = gpu_spec(gpu)
    kernel, _ = _traced(target, params)
    env: dict[Any, int] = {}
    missing = [v.name for v in kernel.shape_vars if v.name not in sizes]
    if missing:
        raise CostModelError(
            "COSTMODEL_SIZES",
            f"no size given for {', '.join(missing)} of {kernel.name}",
            "pass every shape symbol, e.g. sizes={'M': 4096, 'N': 4096, 'K': 4096}",
        )
    for v in kernel.shape_vars:
        env[v] = int(sizes[v.name])
    for v in kernel.block_vars:
        env[v] = 0
    env[kernel.thread_var] = 0
    try:
        grid = [max(1, _eval(g, env)) for g in kernel.grid]
        counts = _sampled_counts(kernel, env, grid, findings)
    except (KeyError, TypeError) as e:
        raise CostModelError("COSTMODEL_UNSUPPORTED", f"cannot evaluate {kernel.name}'s launch or loops: {e}") from None
    blocks = math.prod(grid)

    # occupancy and waves
    regs = _registers_per_thread(kernel, spec)
    smem = _shared_per_block(kernel)
    limits = {
        "threads": spec.threads_per_sm // max(1, kernel.threads),
        "blocks": spec.blocks_per_sm,
        "registers": spec.registers_per_sm // max(1, regs * kernel.threads),
        "shared_memory": spec.smem_per_sm // smem if smem else spec.blocks_per_sm,
    }
    resident = max(1, min(limits.values()))
    limiter = min(limits, key=lambda k: limits[k])
    per_wave = spec.sms * resident
    waves = -(-blocks // per_wave)
    busy_sms = min(spec.sms, -(-blocks // resident))
    wave_eff = blocks / (waves * per_wave) if blocks else 1.0
    # a single partial wave on few SMs can only use the SMs it has
    eff = max(wave_eff, blocks / (waves * busy_sms * resident)) if waves == 1 else wave_eff
    eff = min(1.0, eff) if waves > 1 else min(1.0, busy_sms / spec.sms)

    # resource times (whole kernel, all SMs), seconds
    f = {k: v * blocks for k, v in counts.flops.items()}
    t = {
        "tensor": (
            f["tensor_wgmma"] / (spec.wgmma_tflops * 1e12 * spec.tensor_efficiency)
            + f["tensor_mma_sync"] / (spec.mma_sync_tflops * 1e12 * spec.tensor_efficiency)
        ),
        "fma": f["fma"] / (spec.fma_tflops * 1e12 * spec.fma_efficiency),
        "smem": counts.smem_bytes * blocks / (spec.smem_gbs * 1e9),
        "l2": counts.global_bytes * blocks / (spec.l2_gbs * 1e9),
    }
    t = {k: v / eff for k, v in t.items()}
    unique = sum(math.prod(_eval(d, env) for d in b.shape) * b.dtype.bits // 8 for b in kernel.tensors)
    inputs = sum(math.prod(_eval(d, env) for d in b.shape) * b.dtype.bits // 8 for b in kernel.tensors[:-1])
    grouped = str(getattr(kernel.policies.tile_order, "value", kernel.policies.tile_order)) == "grouped"
    # L2 keeps what blocks share; a tile order that is not grouped re-reads operands larger than L2, but never
    # more often than the blocks request them (a streaming kernel reads each byte once)
    requested = counts.global_bytes * blocks
    reread = 1.0 if grouped else max(1.0, min(inputs / spec.l2_bytes, requested / max(1, unique)))
    t["dram"] = unique * reread / (spec.hbm_gbs * 1e9 * spec.hbm_efficiency)

    # pipelining and latency
    from argus.ir.nodes import Role

    roles = {s.name for s in _walk(kernel.body) if isinstance(s, Role)}
    specialized = len(roles) >= 2
    stages = counts.stages if counts.async_copies else 1
    concurrency = resident * stages * (2 if specialized else 1)
    busy = max(t.values())
    overlap = busy + (sum(t.values()) - busy) / concurrency
    iterations = max(1, counts.main_iterations)
    t["latency"] = waves * iterations * spec.latency_ns * 1e-9 / stages
    t["launch"] = spec.launch_us * 1e-6
    seconds = max(overlap, t["latency"]) + t["launch"]
    terms_ms = {k: v * 1e3 for k, v in t.items()}
    bound = max((k for k in terms_ms if k != "launch"), key=lambda k: terms_ms[k])
    if terms_ms["launch"] > max(v for k, v in terms_ms.items() if k != "launch"):
        bound = "launch"
    useful = f["tensor_wgmma"] + f["tensor_mma_sync"] + f["fma"]
    return Estimate(
        kernel=kernel.name,
        sizes={k: int(v) for k, v in sizes.items()},
        gpu=spec.name,
        ms=seconds * 1e3,
        bound=bound,
        terms_ms=terms_ms,
        counts={
            "flops": f,
            "global_bytes": counts.global_bytes * blocks,
            "smem_bytes": counts.smem_bytes * blocks,
            "dram_bytes": unique * reread,
            "dram_reread": reread,
            "blocks": blocks,
            "grid": grid,
            "main_iterations": iterations,
        },
        occupancy={
            "threads": kernel.threads,
            "registers_per_thread": regs,
            "shared_bytes_per_block": smem,
            "blocks_per_sm": resident,
            "limited_by": limiter,
            "limits": limits,
            "waves": waves,
            "wave_efficiency": wave_eff,
        },
        pipeline={
            "stages": stages,
            "async_copies": counts.async_copies,
            "warp_specialized": specialized,
            "concurrency": concurrency,
        },
        penalties=counts.penalties,
        flops=useful,
    )


def estimate_findings(target: Any, params: Mapping[str, Any] | None = None) -> Any:
    """The verifier's performance findings for `target` (the ``performance`` check only: fast), for `estimate`."""
    from argus.verify import verify_kernel

    kernel, _ = _traced(target, params)
    return verify_kernel(kernel, checks=("perf",)).findings
