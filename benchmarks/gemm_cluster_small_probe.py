"""Would a 2-block cluster with a TMA multicast of the shared operand tile close the small GEMMs' gap to cuBLAS?

Usage (from the repository root)::

    PYTHONPATH=src python benchmarks/gemm_cluster_small_probe.py --compile-only [--source-dir DIR]   # no GPU
    PYTHONPATH=src python benchmarks/gemm_cluster_small_probe.py [--rounds 200] [--json F] [--source-dir DIR]

The question of issue #20 at the small and mid products (1000^3, 1024^3, 768x1536x1024, 1536x1536x2048,
256x7168x2048, 512x4096x4096; M x N x K), where the planner's plan is 0.83-0.89x cuBLAS and cuBLAS runs 2-block
clusters (benchmarks/results/2026-12-04-gemm-128x64/). A diagnostic, not a kernel (like `gemm_cluster_probe.py`,
which does the same to the 128x256 expert at M % 2048 == 0): for each shape, the kernel `argus.kernels.matmul`'s
heuristic plan builds (`matmul.plan(problem)`: A (M, K) and B (N, K) row-major, C = A @ B^T, bf16; its
`gemm_warp_specialized_persistent` configuration, e.g. 64x128x128 4 stages 1 consumer) is generated
(`argus.backend.cuda.codegen.generate`) and its CUDA text edited into a 2-block cluster:

* ``__cluster_dims__(2, 1, 1)``: blocks 2c and 2c + 1 (cluster ranks 0 and 1) form cluster c. A block walks units
  ``bx + it * BLOCKS`` (one tile each, no split); with BLOCKS even, the two blocks of a cluster hold the tiles u and
  u + 1 (u even) at every pass ``it``. Each variant runs at the planner's BLOCKS (132) and, where the tiles are
  fewer (every shape here: 72-128 tiles, one pass), at BLOCKS = the tile count (`--blocks`): a block past the tiles
  only initialises its barriers and passes the two cluster barriers, but its cluster still takes a cluster slot,
  and 2-block clusters of one block per SM may not all be resident at once (``cuOccupancyMaxActiveClusters``, printed
  on the GPU);
* which operand the pair shares follows from the tile order. ``B multicast`` keeps the planner's grouped order
  (GROUP rows of tiles walked column by column): tiles u and u + 1 are (bm, bn) and (bm + 1, bn), the same B tile,
  wherever every group has an even number of rows of tiles (GROUP even and tiles_m even). ``A multicast`` is the
  cluster along the other dimension: the same kernel generated with ``ORDER="row_major"`` (the DSL's order, the only
  change to the planner's parameters; with one pass every tile is resident at once, so the order only changes which
  blocks read the same lines of L2 together), where tiles u and u + 1 are (bm, bn) and (bm, bn + 1), the same A
  tile, wherever tiles_n is even. Pairing is not assumed: `pairing_refusal` walks every block's units through the DSL's
  own `tile_order` (the function the kernel's tile coordinates are generated from) and refuses a variant, with the
  reason printed, where a cluster's two blocks ever hold tiles with different shared-operand coordinates, or where
  one has a unit at some pass and its peer none (an odd number of tiles, or odd BLOCKS): the peer would wait forever
  for the other's multicast halves and releases. There is no fallback to a block loading the whole tile itself (it
  would change the barrier counts per pair at run time); such a shape is skipped. The edited kernel still takes M, N
  and K at run time, but its pairing holds only for the shape it was checked at: each variant runs at that shape
  alone;
* each block loads half of the shared operand's box (K-major, one box of (64, R) elements per 128-byte K-span: R =
  BN for B, BM for A; two spans per stage at BK = 128): rank r loads rows ``[row0 + r * R / 2, + R / 2)`` with a
  (64, R / 2) box (the tensor map's box halved), multicast into the same stage of both blocks at byte offset
  ``r * R / 2 * 128`` (``.multicast::cluster``, CTA mask 0b11). R / 2 must be a multiple of 8 rows, so that each half
  starts on a 1024-byte boundary and the 128-byte swizzle lands it exactly where the whole box would have put it.
  The other operand is loaded by each block alone, as before;
* each block's ``full`` barrier is unchanged: one arrival (its producer's ``arrive.expect_tx`` of the whole stage's
  bytes, (BM + BN) * BK * 2), the bytes completing from its own loads and its peer's multicast halves. A peer's half
  may land before the producer's arrival in the same phase: the phase cannot complete without that arrival;
* each block's ``empty`` barriers count 2 x CONSUMERS arrivals (the generated count, CONSUMERS, doubled): every
  consumer warpgroup releases a stage on its own block's barrier and, through ``mapa`` and a remote
  ``mbarrier.arrive.shared::cluster`` (the default CTA-scope release, as in `gemm_cluster_probe.py`), on its peer's.
  A producer therefore refills (multicasts into) stage s only once the consumers of both blocks have released it;
  as both blocks walk the same number of units of the same K-blocks, they use the same stage and phase at every
  pipeline iteration;
* a cluster barrier (every thread of both blocks) after the barriers' initialisation, so that no multicast or remote
  arrival reaches an uninitialised peer barrier (``barrier.cluster.arrive.relaxed`` / ``wait.acquire``: the
  initialising thread's ``fence.mbarrier_init.release.cluster`` orders the init), and one before exit, so that no
  remote arrival reaches an exited block (``arrive.release`` / ``wait.acquire``). The only fences the edits add
  (``MEMBAR.ALL.GPU`` in SASS) are the exit barrier's: the remote arrival in the K loop compiles to
  ``SYNCS.ARRIVE.TRANS64.RED`` with none.

L2 -> SM traffic per stage and block drops by half the shared tile: at 64x256x64, from 40 KB to 24 KB (B shared)
or 36 KB (A shared). Refused (skipped with the reason): plans that are not one unsplit main kernel reading the
operands where they are (GEMV, split-K, split tail, swap-AB, padding or pitch copies, batches), MN-major operands,
shapes the pairing check refuses, a generated source an edit does not find its anchor in (the edit names it).

``--compile-only`` needs no GPU (nor torch): it generates, edits and compiles (NVRTC, sm_90a) every variant and
prints a table of registers, spills, the cluster shape ptxas recorded and the SASS TMA loads (multicast ones
counted apart); it exits 1 if one does not compile. ``--source-dir`` writes the planner's source and every edited
one (``diff`` them). On a GPU, every shape's planner kernel and cluster variants are each launched once under a
watchdog (`--hang-seconds`: a protocol deadlock is reported, and the process exits, instead of hanging), then checked
against the f32 product and timed interleaved with cuBLAS (`gemm_parity.probe_against_cublas`: relative max error <=
1e-2; rounds of one launch each, L2 flushed, CUDA events, order rotating); the script exits 1 if one is wrong. All
kernels are generated without programmatic dependent launch (plain launches: the planner's own calls use it)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_cluster_probe import max_active_clusters  # noqa: E402
from gemm_parity import probe_against_cublas  # noqa: E402
from gemm_variants import environment  # noqa: E402

from argus.backend.cuda.codegen import generate  # noqa: E402
from argus.backend.cuda.codegen.source import CompiledKernel, GeneratedSource  # noqa: E402
from argus.backend.cuda.errors import CompileError  # noqa: E402
from argus.backend.cuda.toolchain import CompiledModule, compile_cuda  # noqa: E402
from argus.kernels import gemm  # noqa: E402
from argus.kernels import matmul as mm  # noqa: E402
from argus.lang.control import tile_order  # noqa: E402

#: The small and mid products of issue #20 where cuBLAS runs 2-block clusters (M, N, K).
SHAPES = [
    (1000, 1000, 1000),
    (1024, 1024, 1024),
    (768, 1536, 1024),
    (1536, 1536, 2048),
    (256, 7168, 2048),
    (512, 4096, 4096),
]
#: The cluster variants: operand multicast -> (tile order it is generated with, its name in the tables). ``None``:
#: the planner's order.
VARIANTS = {"B": (None, "B multicast, grouped"), "A": ("row_major", "A multicast, row-major")}
#: The 128-byte swizzle repeats every 8 rows of 128 bytes: a half box must start on such a boundary.
SWIZZLE_ROWS = 8
#: Columns (elements) of one TMA box of a 16-bit K-major operand: one 128-byte swizzle span.
SPAN = 64

HELPERS = r"""
// ---- gemm_cluster_small_probe.py: the 2-block cluster's helpers (cluster ranks 0 and 1) ----
__device__ __forceinline__ unsigned probe_cta_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
// every thread of both blocks, after the barriers' init: the init's fence.mbarrier_init.release.cluster (before the
// initialising thread's arrival) already orders the init, so the arrival is relaxed (no MEMBAR.ALL.GPU)
__device__ __forceinline__ void probe_cluster_sync_after_init() {
  asm volatile("barrier.cluster.arrive.relaxed;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// every thread of both blocks, before exit: this block's remote arrivals on the peer's barriers are performed before
// the peer exits (a release arrival; not .aligned: the call follows the roles' divergent branches)
__device__ __forceinline__ void probe_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// a stage released in both blocks: an arrival on this block's barrier and on the one at the same offset in the peer
__device__ __forceinline__ void probe_release_in_pair(unsigned barrier) {
  argus::mbarrier_arrive(barrier);
  asm volatile(
      "{\n .reg .b32 peer;\n mapa.shared::cluster.u32 peer, %0, %1;\n"
      " mbarrier.arrive.shared::cluster.b64 _, [peer];\n}\n" ::"r"(barrier), "r"(probe_cta_rank() ^ 1u)
      : "memory");
}
// this block's half of a (64, 2 * HALF_ROWS) box whose first row is c1: rows [c1 + rank * HALF_ROWS, + HALF_ROWS),
// written at dst + rank * HALF_BYTES in both blocks, its bytes completing on the barrier at `mbarrier` in each
__device__ __forceinline__ void probe_tma_load_half_multicast(unsigned dst, const argus::TensorMap* map, int c0, int c1,
                                                              unsigned mbarrier) {
  const unsigned rank = probe_cta_rank();
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst + rank * HALF_BYTES), "l"(map), "r"(c0),
      "r"(c1 + static_cast<int>(rank) * HALF_ROWS), "r"(mbarrier), "h"(static_cast<unsigned short>(0b11))
      : "memory");
}
"""
#: The generated lines the edits anchor on (`argus.backend.cuda.codegen`'s wording).
INIT_SYNC = "__syncthreads();  // every thread sees the initialised barriers"
ENTRY = re.compile(r'extern "C" __global__ void __launch_bounds__\(\d+, 1\) ')
EMPTY_INIT = re.compile(r"argus::mbarrier_init\(argus::smem_u32\(&empty\[i\]\), (\d+)\);")
EMPTY_RELEASE = re.compile(r"argus::mbarrier_arrive\((argus::smem_u32\(&empty\[[^;]*\]\))\);")
EXPECT_TX = re.compile(r"argus::mbarrier_arrive_expect_tx\(argus::smem_u32\(&full\[[^;]*\]\), (\d+)\);")


class ProbeRefusal(Exception):
    """A variant the probe cannot build correctly: the reason, in the kernel's terms."""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def planner_kernel(shape: tuple[int, int, int]) -> tuple[mm.GemmPlan, dict]:
    """The heuristic's plan for the bf16 product A (M, K) @ B (N, K)^T and its main kernel's parameters; a
    `ProbeRefusal` where the plan is not one unsplit `gemm_warp_specialized_persistent` on the operands as given."""
    problem = mm.GemmProblem(*shape, dtype="bf16", out="bf16", a_major="K", b_major="K")
    plan = mm.plan(problem)
    if plan.is_gemv:
        raise ProbeRefusal(f"the plan is a GEMV ({plan.config.label})")
    c = plan.config
    why = [
        ("split-K", c.SPLITS > 1),
        ("a split tail", c.TAIL > 1),
        ("swap-AB", c.SWAP),
        ("operands copied (padding or pitch)", plan.needs_padding),
    ]
    found = [name for name, present in why if present]
    if found or len(plan.kernels()) != 1:
        found = found or [f"{len(plan.kernels())} kernels"]
        raise ProbeRefusal(f"the plan ({c.label}) is not one kernel on the operands as given: {', '.join(found)}")
    params = dict(plan.main_params())
    if (params["A_MAJOR"], params["B_MAJOR"], params.get("C_MAJOR", "N")) != ("K", "K", "N") or params.get("BATCH"):
        raise ProbeRefusal(f"the probe edits K-major, unbatched kernels only: {params}")
    return plan, params


def pairing_refusal(params: dict, shape: tuple[int, int, int], operand: str) -> str | None:
    """Why the blocks 2c and 2c + 1 of the kernel with `params` do not hold tiles with the same `operand` tile at
    every pass on `shape`, or None where they do. Walks every block's units (``bx + it * BLOCKS``) through the DSL's
    `tile_order`, the expression the generated tile coordinates come from."""
    m, n, _ = shape
    blocks, order, group = params["BLOCKS"], params["ORDER"], params["GROUP"]
    if blocks % 2:
        return f"BLOCKS = {blocks} is odd: block {blocks - 1} has no cluster peer"
    tiles = (_cdiv(m, params["BM"]), _cdiv(n, params["BN"]))
    units = tiles[0] * tiles[1]
    axis = 1 if operand == "B" else 0  # B is shared where bn agrees, A where bm agrees

    def tile(u: int) -> tuple[int, int]:
        bm, bn = tile_order(u, tiles, order, group, clamp=True)
        return int(bm.value), int(bn.value)

    for it in range(_cdiv(units, blocks)):
        for first in range(0, blocks, 2):
            u = first + it * blocks
            if (u < units) != (u + 1 < units):
                return (
                    f"{units} tiles ({tiles[0]} x {tiles[1]}) on {blocks} blocks: block {first} holds tile {u} at pass "
                    f"{it}, its peer {first + 1} none (it would wait for halves and releases that never come)"
                )
            if u < units and tile(u)[axis] != tile(u + 1)[axis]:
                return (
                    f"order {order!r} (group {group}) over {tiles[0]} x {tiles[1]} tiles: blocks {first} and "
                    f"{first + 1} hold tiles {tile(u)} and {tile(u + 1)} at pass {it}, which share no {operand} tile"
                )
    return None


def _sub(pattern: re.Pattern | str, repl, text: str, what: str, count: int | None = None) -> str:  # noqa: ANN001
    """`text` with `pattern` replaced; a `ProbeRefusal` naming `what` unless it matched (exactly `count` times)."""
    out, found = re.subn(pattern, repl, text)
    if found == 0 or (count is not None and found != count):
        raise ProbeRefusal(f"edit {what!r}: {found} matches of {getattr(pattern, 'pattern', pattern)!r}")
    return out


def cluster_multicast(generated: GeneratedSource, operand: str) -> GeneratedSource:
    """`generated` (a `gemm_warp_specialized_persistent` source) edited into the 2-block cluster that multicasts
    `operand`'s tile (the module docstring's protocol), with that operand's tensor-map box halved. The caller has
    checked the pairing (`pairing_refusal`); a `ProbeRefusal` where the source is not what the edits expect."""
    params = dict(generated.params)
    src = generated.source
    rows = params["BN"] if operand == "B" else params["BM"]
    tmap = next(m for m in generated.tensor_maps if m.tensor == operand)
    if tmap.box != (SPAN, rows) or tmap.swizzle != 128 or tmap.dtype.bits != 16:
        raise ProbeRefusal(f"{operand}'s tensor map is {tmap.box} at {tmap.swizzle}-byte swizzle, not ({SPAN}, {rows})")
    half_rows = rows // 2
    if rows % 2 or half_rows % SWIZZLE_ROWS:
        raise ProbeRefusal(f"half of {operand}'s {rows} rows does not start on a {SWIZZLE_ROWS}-row swizzle period")
    half_bytes = half_rows * SPAN * tmap.dtype.bits // 8
    body = src[ENTRY.search(src).start() :] if ENTRY.search(src) else ""
    if re.search(r"\breturn\b", body):
        raise ProbeRefusal("the kernel returns early: a block's threads would miss the exit's cluster barrier")
    if "fence.mbarrier_init.release.cluster" not in src:
        raise ProbeRefusal("the barriers' init fence is not cluster-scope")
    # each block's full barrier keeps its one arrival and the whole stage's bytes (half of `operand` from the peer)
    stage_bytes = (params["BM"] + params["BN"]) * params["BK"] * tmap.dtype.bits // 8
    if sorted(set(EXPECT_TX.findall(src))) != [str(stage_bytes)]:
        raise ProbeRefusal(f"the full barriers do not expect the whole stage's {stage_bytes} bytes once per stage")

    helpers = HELPERS.replace("HALF_ROWS", str(half_rows)).replace("HALF_BYTES", f"{half_bytes}u")
    src = _sub(ENTRY, lambda m: helpers + "\n" + m.group(0) + "__cluster_dims__(2, 1, 1) ", src, "cluster dims", 1)
    # the empty barriers: every consumer warpgroup of both blocks arrives once per phase
    consumers = params["CONSUMERS"]
    init = EMPTY_INIT.search(src)
    if init is None or int(init.group(1)) != consumers:
        raise ProbeRefusal(f"the empty barriers are not initialised with one arrival per consumer ({consumers})")
    src = _sub(
        EMPTY_INIT,
        f"argus::mbarrier_init(argus::smem_u32(&empty[i]), {2 * consumers});  /* probe: {consumers} consumer "
        "warpgroup(s) x 2 blocks */",
        src,
        "empty barrier count",
        1,
    )
    last = src.rfind(INIT_SYNC)
    if last < 0 or last < src.find("&empty[i]"):
        raise ProbeRefusal("no block barrier after the empty barriers' initialisation")
    src = (
        src[:last]
        + "__syncthreads();\n  probe_cluster_sync_after_init();  // probe: the peer's barriers are initialised"
        + src[last + len(INIT_SYNC) :]
    )
    src = _sub(EMPTY_RELEASE, r"probe_release_in_pair(\1);", src, "stage release")
    src = _sub(
        rf"argus::tma_load_2d\((argus::smem_u32\(s{operand} [^;]*?, &tmap_{operand}, )",
        r"probe_tma_load_half_multicast(\1",
        src,
        f"{operand} loads",
        params["BK"] // SPAN,
    )
    # nothing of the old protocol left: every use of `empty` is its init, a wait or a release in both blocks
    for line in src.splitlines():
        if "&empty[" in line and not any(
            x in line for x in ("mbarrier_init(", "mbarrier_wait(", "probe_release_in_pair(")
        ):
            raise ProbeRefusal(f"a use of the empty barriers the edits do not know: {line.strip()[:100]}")
        if re.search(rf"argus::tma_load_\dd\([^;]*&tmap_{operand},", line):
            raise ProbeRefusal(f"a load of {operand} left unhalved: {line.strip()[:100]}")
    end = src.rstrip().rindex("}")
    src = src[:end] + "  probe_cluster_sync();  // probe: no remote arrival reaches an exited block\n" + src[end:]
    maps = tuple(
        dataclasses.replace(m, box=(SPAN, half_rows)) if m.tensor == operand else m for m in generated.tensor_maps
    )
    return dataclasses.replace(generated, source=src, tensor_maps=maps)


@dataclasses.dataclass(frozen=True)
class Variant:
    """One contender at one shape: the planner's kernel or a cluster variant of it (`generated` None where refused,
    with the `refusal`)."""

    shape: tuple[int, int, int]
    config: str
    name: str
    blocks: int
    generated: GeneratedSource | None = None
    refusal: str | None = None

    @property
    def slug(self) -> str:
        return "x".join(map(str, self.shape)) + "_" + re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_")


def variants_for(shape: tuple[int, int, int], operands: list[str], block_choices: list[str]) -> list[Variant]:
    """The planner's kernel at `shape` and its cluster variants (multicasting each of `operands`, at each of
    `block_choices`: ``planner`` the plan's BLOCKS, ``tiles`` the tile count where it is below, or a number); an
    empty list where the plan is refused (printed)."""
    try:
        plan, params = planner_kernel(shape)
    except ProbeRefusal as why:
        print(f"skip {'x'.join(map(str, shape))}: {why}")
        return []
    label = plan.config.label
    # the kernel the planner builds, unchanged (its trace is `plan.main_kernel()`'s)
    out = [Variant(shape, label, "planner", params["BLOCKS"], generate(plan.main_kernel()))]
    tiles = _cdiv(shape[0], params["BM"]) * _cdiv(shape[1], params["BN"])
    counts = []
    for choice in block_choices:
        count = {"planner": params["BLOCKS"], "tiles": min(tiles, params["BLOCKS"])}.get(choice) or int(choice)
        if count not in counts:
            counts.append(count)
    for operand in operands:
        order, title = VARIANTS[operand]
        for count in counts:
            p = {**params, "BLOCKS": count, **({"ORDER": order} if order else {})}
            name = f"{title}, {count} blocks"
            why = pairing_refusal(p, shape, operand)
            if why is None:
                try:
                    edited = cluster_multicast(generate(gemm.gemm_warp_specialized_persistent.trace(**p)), operand)
                    out.append(Variant(shape, label, name, count, edited))
                    continue
                except ProbeRefusal as err:
                    why = str(err)
            out.append(Variant(shape, label, name, count, refusal=why))
    return out


def sass_loads(module: CompiledModule, entry: str) -> tuple[int, int]:
    """(TMA tile loads, of which multicast) in the SASS of `entry`."""
    mix = module.instruction_mix(entry, modifiers=True)
    loads = sum(n for op, n in mix.items() if op.startswith("UTMALDG"))
    return loads, sum(n for op, n in mix.items() if op.startswith("UTMALDG") and "MULTICAST" in op)


def compile_all(variants: list[Variant]) -> tuple[dict[str, CompiledModule], bool]:
    """Every buildable variant compiled for sm_90a (module by slug); prints the table; whether one failed."""
    print("\n| M×N×K | planner's config | variant | blocks | registers | spills (st/ld bytes) | cluster | "
          "SASS TMA loads (multicast) | result |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    modules, failed = {}, False
    for v in variants:
        head = f"| {'×'.join(map(str, v.shape))} | {v.config} | {v.name} | {v.blocks} |"
        if v.generated is None:
            print(f"{head} | | | | skipped: {v.refusal} |")
            continue
        g = v.generated
        started = time.perf_counter()
        try:
            module = compile_cuda(g.source, g.program_name)
        except CompileError as err:
            failed = True
            print(f"{head} | | | | COMPILE ERROR: {' '.join(str(err).split())[:600]} |")
            continue
        r = module.resources[g.entry]
        loads, multicast = sass_loads(module, g.entry)
        cluster = "x".join(map(str, r.cluster_dims)) if r.cluster_dims else "-"
        print(
            f"{head} {r.registers} | {r.spill_stores}/{r.spill_loads} | {cluster} | {loads} ({multicast}) | "
            f"compiled ({time.perf_counter() - started:.1f} s) |",
            flush=True,
        )
        modules[v.slug] = module
    return modules, failed


def finishes_within(torch, kernel, shape: tuple[int, int, int], seconds: float) -> bool:  # noqa: ANN001
    """Whether one launch of `kernel` on random operands of `shape` completes within `seconds` (a deadlocked cluster
    protocol never does; the GPU is then unusable by this process)."""
    m, n, k = shape
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    done = torch.cuda.Event()
    kernel.prepare(a, b, c).launch()
    done.record()
    deadline = time.monotonic() + seconds
    while not done.query():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def run_on_gpu(args: argparse.Namespace, variants: list[Variant], modules: dict[str, CompiledModule]) -> int:
    """Launch every shape's contenders under the watchdog, then check and time them (`probe_against_cublas`)."""
    import torch

    from argus.runtime import load

    for line in environment(torch):
        print(line)
    rows, failed = [], False
    for shape in dict.fromkeys(v.shape for v in variants):
        built = [v for v in variants if v.shape == shape and v.slug in modules]
        if len(built) < 2:
            print(f"\nskip {'x'.join(map(str, shape))}: no cluster variant built")
            continue
        print(f"\n## {'x'.join(map(str, shape))}: the planner's {built[0].config}")
        loaded = {}
        for v in built:
            kernel = load(CompiledKernel(v.generated, modules[v.slug]))
            if v.name != "planner":
                print(f"{v.name}: at most {max_active_clusters(kernel, v.generated)} clusters of 2 resident at once")
            if not finishes_within(torch, kernel, shape, args.hang_seconds):
                print(f"{v.name} at {shape}: HANG (no completion within {args.hang_seconds} s): a protocol deadlock")
                sys.stdout.flush()
                os._exit(2)  # the context is stuck in the kernel: nothing later can run
            loaded[v.name] = kernel
        shape_rows, wrong = probe_against_cublas(torch, loaded, [shape], args.rounds)
        failed |= wrong
        planner_ms = next(r["ms"] for r in shape_rows if r["kernel"] == "planner")
        for r in shape_rows:
            r.update(config=built[0].config, vs_planner=planner_ms / r["ms"])
        rows += shape_rows
    print("\n| M×N×K | planner's config | variant | ms | x cuBLAS | x planner |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {'×'.join(map(str, r['shape']))} | {r['config']} | {r['kernel']} | {r['ms']:.4f} | {r['ratio']:.3f} | "
            f"{r['vs_planner']:.3f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compile-only", action="store_true", help="generate, edit and compile every variant; no GPU")
    p.add_argument("--source-dir", default="", help="write the planner's and every edited CUDA source here")
    p.add_argument("--shapes", nargs="*", default=None, help="M,N,K triples (default: the six small products)")
    p.add_argument("--operands", default="B,A", help="which operand's tile the cluster multicasts: B, A or both")
    p.add_argument(
        "--blocks", default="planner,tiles", help="BLOCKS of the cluster variants: planner, tiles (the tile count "
        "where it is below the planner's) or numbers, comma-separated"
    )  # fmt: skip
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--hang-seconds", type=float, default=10.0, help="a first launch not done by then is a deadlock")
    p.add_argument("--json", default="")
    args = p.parse_args()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    operands = [o for o in args.operands.split(",") if o]
    if not set(operands) <= set(VARIANTS):
        raise SystemExit(f"--operands takes {', '.join(VARIANTS)}, not {args.operands!r}")
    block_choices = [b for b in args.blocks.split(",") if b]
    if not all(b in ("planner", "tiles") or b.isdigit() for b in block_choices):
        raise SystemExit(f"--blocks takes planner, tiles or numbers, not {args.blocks!r}")
    variants = [v for shape in shapes for v in variants_for(shape, operands, block_choices)]
    if args.source_dir:
        out = Path(args.source_dir)
        out.mkdir(parents=True, exist_ok=True)
        for v in variants:
            if v.generated is not None:
                (out / f"{v.slug}.cu").write_text(v.generated.source)
        print(f"sources in {out}/")
    modules, compile_failed = compile_all(variants)
    if args.compile_only:
        return 1 if compile_failed else 0
    return max(run_on_gpu(args, variants, modules), int(compile_failed))


if __name__ == "__main__":
    raise SystemExit(main())
