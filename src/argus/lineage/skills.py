"""Skills: every accepted step of a lineage, reversed, as a knowledge-base entry (`argus.kb.schema`, ``source =
"mined"``) — the forward step "add this mechanism", where it applies (locus), the conditions under which it was
valid (preconditions in the five categories, each with its reason, each checked to hold on the kernel the step
starts from), its measured effect with the context (shape, GPU or cost model), before/after DSL, and evidence
(fingerprints, gate records, the mechanism check).

Preconditions are probed: the forward step is applied where a condition fails (an older architecture, a wait
or fence or barrier left out, a tile the atom cannot tile, a size the copies cannot take, a stage count over
the shared-memory budget) and the result goes through the verifier or the gate. A failure that the kernel
before the step does not have under the same perturbation is the step's own: it becomes a "failure avoided"
(a `[[risks]]` row, and `provenance.lineage.failures_avoided` with the code and counterexample); one that the
kernel before the step shares is recorded as inherited, not as the step's.

Skills are TOML files (one per skill, named by id) in a directory: `skills_dir()` (``$ARGUS_SKILLS_DIR``, else
``$ARGUS_CACHE_DIR/skills``, else ``~/.cache/argus/skills``) or one given. `argus.kb.with_skills` loads them
beside the curated entries for retrieval.
"""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import textwrap
from dataclasses import dataclass, field
from typing import Any

from argus.lineage.variants import DerivedKernel, Variant, rewrite_body


@dataclass(frozen=True)
class Probe:
    """Apply the forward step where a precondition fails. `kind`: ``arch`` (compile the generated code for
    `arg`), ``registers`` (set the named warp roles' register budgets to `arg`; then verify), ``drop`` (remove IR
    statements of the classes named in `arg`, optionally only those whose text holds `match`; then verify),
    ``params`` (trace and gate with `arg` overriding parameters), ``sizes`` (gate at `arg`). `attribute`: also
    run it on the kernel before the step, to tell the step's failures from inherited ones."""

    category: str
    kind: str
    arg: Any
    what: str
    match: str = ""
    attribute: bool = True


@dataclass(frozen=True)
class SkillSpec:
    """What a forward step is, per (mechanism, level): the kb category, locus, intent, what improves and which
    bound, five precondition predicates (feature, op, value, category, reason), risk codes, example snippets
    (for steps whose kernels share a source), the policy transform if any, and the probes."""

    slug: str
    title: str
    category: str
    locus: dict[str, Any]
    intent: str
    improves: tuple[str, ...]
    bound: str
    preconditions: tuple[tuple[str, str, Any, str, str], ...]
    risks: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    probes: tuple[Probe, ...] = ()
    example: tuple[str, str] | None = None
    policy: tuple[str, tuple[Any, ...]] | None = None
    keywords: tuple[str, ...] = field(default_factory=tuple)


_BF16 = ("dtypes.mma_operands", "subset", ["bf16", "f16"], "dtypes")
_HOPPER = ["sm_90a"]
_AMPERE_UP = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"]

SPECS: dict[tuple[str, int], SkillSpec] = {
    ("output_cast", 1): SkillSpec(
        "output-cast",
        "Convert the f32 accumulators to the output's narrower dtype in the epilogue",
        "epilogue",
        {
            "op": "copy",
            "src": "fragment",
            "dst": "global",
            "description": "the epilogue's store of the accumulator tile",
        },
        "Round the f32 accumulators to bf16 in registers and store half the bytes, instead of writing f32 and "
        "converting in a second pass: the conversion is fused into the epilogue.",
        ("bytes stored by the epilogue", "no separate conversion pass"),
        "memory",
        (
            ("dtypes.accumulator", "has", "f32", "dtypes", "f32 accumulators, rounded once to bf16 at the store"),
            ("dtypes.outputs", "eq", ["f32"], "layout", "the output is still written in the accumulator's dtype"),
            (
                "copy.global_store_sources",
                "has",
                "fragment",
                "storage",
                "the epilogue stores from registers, where the conversion happens",
            ),
            ("ops.gemm", "eq", True, "pipeline", "the cast follows the main loop's last MMA"),
            ("hardware.arch", "in", _AMPERE_UP, "hardware", "cvt to bf16 exists on sm_80 and later"),
        ),
        (("a bf16 output that the consumer's tolerance does not accept", (), ("gate.correct",)),),
        (),
        ('C: T.Tensor[("M", "N"), T.f32]\n', 'C: T.Tensor[("M", "N"), "OUT"]  # OUT = "bf16"\n'),
        None,
        ("epilogue", "bf16 output", "conversion"),
    ),
    ("epilogue", 1): SkillSpec(
        "tma-store-epilogue",
        "Store the output tile through shared-memory staging and TMA stores",
        "epilogue",
        {
            "op": "copy",
            "src": "fragment",
            "dst": "global",
            "description": "the epilogue's store of the wgmma accumulator tile",
        },
        "Each consumer warpgroup writes its rows of the accumulator, converted to C's dtype, into one of two "
        "128-byte-swizzled chunk buffers (128 bytes of columns each), fences the async proxy, syncs on a named "
        "barrier, and one thread hands the chunk to a TMA store: C leaves in whole lines, and the stores drain while "
        "the warpgroup goes on to the block's next tile (`T.copy(acc, C.tile(...), atom='tma.store', staging=sC)`).",
        ("store efficiency (whole lines, not the fragment's scattered runs)", "epilogue overlapped by the next tile"),
        "memory",
        (
            (
                "dtypes.outputs",
                "subset",
                ["bf16", "f16", "f32"],
                "dtypes",
                "C in 2- or 4-byte elements: a chunk is 64 or 32 columns of 128 bytes",
            ),
            (
                "mma.kind",
                "eq",
                "wgmma",
                "layout",
                "the staged store takes a wgmma accumulator: each consumer warpgroup holds 64 whole rows of the tile",
            ),
            (
                "smem.bytes",
                "le",
                199680,
                "storage",
                "two staging chunks of BM x 128 bytes (32 KB at BM = 128) must fit beside the pipeline's stages",
            ),
            (
                "grid.persistent",
                "eq",
                True,
                "pipeline",
                "a persistent block overlaps the stores of one tile with the next tile's main loop (validated there)",
            ),
            ("hardware.tma", "eq", True, "hardware", "TMA stores exist on sm_90 and later"),
        ),
        (
            (
                "C's rows not 16-byte aligned for an allowed N (the tensor map cannot describe them)",
                ("ALIGN_TMA",),
                ("verify",),
            ),
            ("a staging buffer rewritten before the TMA store that read it finished", (), ("gate.correct",)),
        ),  # fmt: skip
        (
            Probe("hardware", "arch", "sm_80", "compile for sm_80 (no TMA)"),
            Probe("layout", "sizes", {"N": 74}, "an N whose rows of C are not 16-byte aligned"),
        ),
        (
            "T.copy(acc, C.tile((bm, bn), (BM, BN)))\n",
            "sC = T.alloc_shared((2, BM, 128 // C.dtype.itemsize), C.dtype, swizzle=128)\n"
            'T.copy(acc, C.tile((bm, bn), (BM, BN)), atom="tma.store", staging=sC)\n',
        ),
        None,
        ("TMA store", "epilogue", "UTMASTG", "staging"),
    ),
    ("tile_order", 1): SkillSpec(
        "tile-order",
        "Walk a persistent grid's tiles in grouped order",
        "scheduling",
        {"op": "kernel", "description": "the persistent grid's map from tile index to tile coordinates"},
        "Map tile t to (bm, bn) GROUP rows of M-tiles at a time, walked column by column (`T.tile_order(..., "
        "'grouped', GROUP)`), so that the blocks resident together share A and B panels in L2.",
        ("L2 reuse of A and B panels",),
        "memory",
        (
            (*_BF16[:3], "dtypes", "validated with bf16 operands (the order does not depend on them)"),
            ("ops.gemm", "eq", True, "layout", "a 2-D grid of output tiles whose rows share A and columns share B"),
            ("grid.tile_order", "in", ["row_major", "column_major"], "storage", "tiles are walked in a plain order"),
            ("grid.persistent", "eq", True, "pipeline", "a persistent grid chooses its own tile order"),
            ("hardware.sms", "ge", 2, "hardware", "several SMs whose resident blocks share the L2"),
        ),
        (("a grouped order that skips or repeats a tile (the last group's rows)", ("TAG_ASSERT",), ("verify",)),),
        (),
        ('ORDER = "row_major"\n', 'ORDER = "grouped"  # GROUP = 8 rows of M-tiles at a time\n'),
        ("tile_order", ("grouped",)),
        ("tile order", "rasterization", "grouped", "L2"),
    ),
    ("persistent", 1): SkillSpec(
        "persistent-grid",
        "Run a persistent grid: one block per SM walking the output tiles",
        "scheduling",
        {"op": "kernel", "description": "the launch grid"},
        "Launch BLOCKS blocks (one per SM) that loop over the output tiles, with the warp roles' mbarrier pipeline "
        "running on across a block's tiles (`T.pipeline(..., start=it * k_tiles)`): the producer fills the next "
        "tile's stages while the consumers finish this one and store C.",
        ("prologue paid once per block", "next tile's loads overlapping this tile's epilogue"),
        "latency",
        (
            (*_BF16[:3], "dtypes", "validated with bf16 wgmma operands"),
            ("ops.gemm", "eq", True, "layout", "a tiled MMA kernel whose blocks each own an output tile"),
            ("pipeline.mbarriers", "ge", 1, "storage", "stages complete on mbarriers whose phases run on across tiles"),
            ("roles.warp_specialized", "eq", True, "pipeline", "a producer runs ahead into the next tile's stages"),
            ("hardware.tma", "eq", True, "hardware", "validated with TMA and wgmma on sm_90a"),
        ),
        (("barrier phases restarted per tile instead of carried on", ("MBARRIER_PHASE",), ("verify",)),),
        (),
        None,
        None,
        ("persistent", "tile scheduler", "grid"),
    ),
    ("register_split", 1): SkillSpec(
        "register-split",
        "Rebalance registers between warp roles with setmaxnreg",
        "warp-specialization",
        {"op": "kernel", "description": "a kernel with producer and consumer warp roles"},
        "Give the consumer warpgroups (which hold the f32 accumulators) more registers and the TMA producer fewer "
        "with setmaxnreg, so the consumers can hold a larger accumulator tile without spilling.",
        ("registers available to the MMA warpgroups", "larger accumulator tiles without spills"),
        "compute",
        (
            (*_BF16[:3], "dtypes", "validated with bf16 tensor-core operands and f32 accumulators in the consumers"),
            ("roles.consumer_warpgroups", "ge", 1, "layout", "the accumulator tile is split over consumer warpgroups"),
            (
                "mma.accumulator_registers",
                "ge",
                32,
                "storage",
                "the consumers' accumulators are what the registers hold",
            ),
            ("roles.warp_specialized", "eq", True, "pipeline", "setmaxnreg moves registers between roles: roles first"),
            ("hardware.arch", "in", _HOPPER, "hardware", "setmaxnreg exists on sm_90a only"),
        ),
        (("a budget below what the consumers' fragments need", ("BUDGET_REGISTERS",), ("verify", "gate.compile")),),
        (
            Probe("hardware", "arch", "sm_90", "compile for sm_90 (no 'a' features)"),
            Probe(
                "storage",
                "registers",
                {"consumer": 56},
                "a consumer budget of 56 registers, below its 64 accumulator registers",
                attribute=False,
            ),
        ),
        (
            'with T.role("producer", warpgroups=(0,)):\n    pass\n'
            'with T.role("consumer", warpgroups=(1, 2)):\n    pass\n',
            'with T.role("producer", warpgroups=(0,), registers=40):\n    pass\n'
            'with T.role("consumer", warpgroups=(1, 2), registers=232):\n    pass\n',
        ),
        None,
        ("setmaxnreg", "register split", "warp roles"),
    ),
    ("warp_specialization", 1): SkillSpec(
        "warp-specialization",
        "Split a TMA + wgmma main loop into a producer warpgroup and consumer warpgroups",
        "warp-specialization",
        {"op": "loop", "loop": "pipelined", "description": "the pipelined main loop over K tiles"},
        "One warpgroup issues the TMA loads, the others run wgmma; full/empty mbarriers hand stages between them, "
        "so loads for later stages are issued while the consumers compute, without a block barrier per iteration.",
        ("overlap of TMA issue with MMA", "no block-wide barrier in the main loop"),
        "latency",
        (
            (*_BF16[:3], "dtypes", "validated with bf16 wgmma operands"),
            (
                "mma.a_source",
                "eq",
                "shared",
                "layout",
                "consumers read both operands from shared memory (no registers from the producer)",
            ),
            (
                "pipeline.mbarriers",
                "ge",
                1,
                "storage",
                "stages complete on mbarriers; the split adds one 'empty' barrier per stage",
            ),
            (
                "copy.global_loads",
                "has",
                "tma",
                "pipeline",
                "one thread of the producer moves whole tiles only with TMA",
            ),
            ("hardware.tma", "eq", True, "hardware", "TMA and wgmma exist on sm_90 and later"),
        ),
        (
            ("a stage refilled before every consumer released it", ("PIPELINE_OVERWRITE",), ("verify",)),
            ("an 'empty' barrier expecting the wrong number of arrivals", ("MBARRIER_ARRIVE_COUNT",), ("verify",)),
        ),
        (
            Probe(
                "pipeline", "drop", ("MbarrierWait",), "the producer does not wait for the consumers' release", "empty"
            ),
        ),
        None,
        None,
        ("warp specialization", "producer", "consumer", "mbarrier"),
    ),
    ("pipeline", 1): SkillSpec(
        "pipelining",
        "Pipeline the main loop over several shared-memory stages",
        "pipelining",
        {"op": "loop", "description": "the main loop over K tiles"},
        "Keep STAGES-1 tiles in flight: the asynchronous copies of later K tiles land in their own stages while the "
        "current stage is multiplied, hiding global-memory latency behind the MMAs.",
        ("global-memory latency hidden behind the MMA",),
        "latency",
        (
            (*_BF16[:3], "dtypes", "validated with bf16 operands; a stage holds (BM + BN) x BK x 2 bytes"),
            (
                "loops.kinds",
                "intersects",
                ["serial", "pipelined"],
                "layout",
                "a loop over K tiles whose iterations read different tiles",
            ),
            (
                "smem.staged",
                "eq",
                True,
                "storage",
                "the operand tiles live in shared memory; each stage adds one more copy",
            ),
            (
                "pipeline.async_copies",
                "eq",
                True,
                "pipeline",
                "only asynchronous copies (cp.async, TMA) run ahead of the compute",
            ),
            (
                "hardware.smem_per_block",
                "ge",
                49152,
                "hardware",
                "STAGES x stage bytes must fit the shared memory per block",
            ),
        ),
        (
            ("a stage read before its copy landed", ("PIPELINE_STALE_READ",), ("verify",)),
            ("a stage overwritten before it was consumed", ("PIPELINE_OVERWRITE",), ("verify",)),
            ("more stages than shared memory holds", ("BUDGET_SMEM",), ("verify", "gate.compile")),
        ),
        (Probe("storage", "params", {"STAGES": 8}, "eight stages of the step's tile", attribute=False),),
        (
            "for k, s in T.pipeline(k_tiles, stages=1):\n    pass\n",
            "for k, s in T.pipeline(k_tiles, stages=3):\n    pass\n",
        ),
        ("stages", (2, 3, 4)),
        ("pipeline", "stages", "multistage", "latency hiding"),
    ),
    ("global_copy", 2): SkillSpec(
        "tma-loads",
        "Load the operand tiles with TMA instead of cp.async",
        "async-copy",
        {
            "op": "copy",
            "src": "global",
            "dst": "shared",
            "atom": "cp.async",
            "description": "tile copies from global into shared memory",
        },
        "One thread issues cp.async.bulk.tensor per tile with a tensor map; the copy lands swizzled and completes "
        "on an mbarrier (expect_tx), freeing the other threads' issue slots and registers.",
        ("issue slots and registers of the copying threads",),
        "latency",
        (
            (*_BF16[:3], "dtypes", "tensor maps of bf16/f16 tiles, validated with bf16"),
            ("mma.a_source", "eq", "shared", "layout", "the consumer (wgmma) reads the swizzled tile TMA writes"),
            ("smem.swizzle", "in", [32, 64, 128], "storage", "the shared tile uses a swizzle a tensor map can encode"),
            ("pipeline.kind", "eq", "cp.async", "pipeline", "copies are already asynchronous and waited on before use"),
            ("hardware.tma", "eq", True, "hardware", "TMA exists on sm_90 and later"),
        ),
        (
            (
                "a row stride that is not a multiple of 16 bytes for an allowed size",
                ("ALIGN_TMA",),
                ("verify", "gate.correct"),
            ),
            ("expect_tx bytes that differ from the boxes' bytes", ("MBARRIER_TX",), ("verify",)),
            ("the tile read before its bytes arrived", ("PIPELINE_STALE_READ",), ("verify", "gate.correct")),
        ),
        (
            Probe("hardware", "arch", "sm_80", "compile for sm_80 (no TMA)"),
            Probe("layout", "sizes", {"K": 138}, "a K whose rows are not 16-byte aligned"),
            Probe("pipeline", "drop", ("MbarrierWait",), "the tile read without waiting on its mbarrier"),
        ),
        None,
        None,
        ("TMA", "cp.async.bulk.tensor", "tensor map"),
    ),
    ("mma", 2): SkillSpec(
        "wgmma",
        "Multiply with warpgroup MMAs (wgmma) from swizzled shared memory instead of ldmatrix + mma.sync",
        "tensor-core",
        {"op": "gemm", "atom": "mma", "description": "the main loop's matrix multiply"},
        "Replace ldmatrix + mma.sync by wgmma.mma_async reading both operands from 128-byte-swizzled shared "
        "memory (B K-major): a warpgroup of 128 threads issues m64nNk16, doubling tensor-core throughput on Hopper "
        "and freeing the registers the operand fragments took.",
        ("tensor-core throughput", "registers of operand fragments"),
        "compute",
        (
            (
                *_BF16[:3],
                "dtypes",
                "wgmma takes bf16/f16 (and tf32/fp8) operands; validated with bf16 and f32 accumulators",
            ),
            (
                "copy.shared_to_register",
                "has",
                "ldmatrix",
                "layout",
                "operands already sit in shared memory in a tensor-core layout; wgmma wants B K-major "
                "(the task's B becomes (N, K))",
            ),
            ("smem.swizzle", "ge", 32, "storage", "wgmma reads canonical swizzled layouts (128-byte here)"),
            (
                "pipeline.async_copies",
                "eq",
                True,
                "pipeline",
                "the tiles arrive by asynchronous copies that a fence.proxy.async makes visible to wgmma",
            ),
            ("hardware.wgmma", "eq", True, "hardware", "wgmma exists on sm_90a only"),
        ),
        (("generic-proxy writes read by wgmma without fence.proxy.async", ("FENCE_PROXY_ASYNC",), ("verify",)),),
        (
            Probe("hardware", "arch", "sm_80", "compile for sm_80 (no wgmma)"),
            Probe("pipeline", "drop", ("Fence",), "no fence.proxy.async between the copies and wgmma"),
            Probe("layout", "params", {"BM": 64}, "a 64-row tile over two consumer warpgroups (32 rows each)"),
        ),
        None,
        None,
        ("wgmma", "warpgroup", "HGMMA"),
    ),
    ("swizzle", 1): SkillSpec(
        "swizzle",
        "XOR-swizzle the shared-memory operand tiles",
        "shared-memory",
        {"op": "alloc", "space": "shared", "description": "the shared-memory operand tiles"},
        "Permute each row's 16-byte chunks by the 64/128-byte XOR swizzle so the eight rows an ldmatrix phase reads "
        "fall in eight different bank groups: the verifier's bank-conflict warnings on the tiles disappear.",
        ("shared-memory bandwidth (no bank conflicts)",),
        "memory",
        (
            (*_BF16[:3], "dtypes", "16-byte chunks of 2-byte elements: 8 elements per chunk"),
            (
                "copy.shared_to_register",
                "has",
                "ldmatrix",
                "layout",
                "ldmatrix reads 8 rows of 16 bytes per phase: the access the swizzle spreads",
            ),
            ("smem.buffers", "ge", 1, "storage", "tiles in shared memory whose rows are 32, 64 or 128 bytes"),
            (
                "copy.global_loads",
                "has",
                "cp.async",
                "pipeline",
                "16-byte cp.async writes keep their vectors under the swizzle",
            ),
            ("hardware.smem_per_block", "ge", 16384, "hardware", "32 banks of 4 bytes (every NVIDIA GPU since Kepler)"),
        ),
        (("a swizzle whose span does not match the rows: conflicts remain", ("PERF_BANK_CONFLICT",), ("verify",)),),
        (),
        None,
        None,
        ("swizzle", "bank conflicts", "ldmatrix"),
    ),
    ("global_copy", 1): SkillSpec(
        "cp-async-loads",
        "Copy the operand tiles with cp.async",
        "async-copy",
        {"op": "copy", "src": "global", "dst": "shared", "description": "tile copies from global into shared memory"},
        "Replace register-staged loads by cp.async 16-byte copies straight into shared memory, committed as a group "
        "and waited on before the tile is read: the prerequisite of a multi-stage pipeline.",
        ("registers and instructions of the copy", "enables pipelining"),
        "latency",
        (
            (*_BF16[:3], "dtypes", "16-byte vectors of 2-byte elements; cp.async cannot convert dtypes"),
            (
                "dtypes.inputs",
                "subset",
                ["bf16", "f16", "f32"],
                "layout",
                "rows must start 16-byte aligned: the kernel declares T.assume('K % 8 == 0 and N % 8 == 0')",
            ),
            ("copy.global_load_targets", "has", "shared", "storage", "the tiles go to shared memory"),
            (
                "pipeline.stages",
                "eq",
                1,
                "pipeline",
                "one stage: the copy is waited on (async_wait) before the barrier",
            ),
            ("hardware.arch", "in", _AMPERE_UP, "hardware", "cp.async exists on sm_80 and later"),
        ),
        (
            ("the tile read before the copy completed", ("PIPELINE_STALE_READ",), ("verify",)),
            ("unaligned 16-byte vectors for some allowed size", ("ALIGN_VECTOR",), ("verify", "gate.correct")),
        ),
        (
            Probe("layout", "sizes", {"K": 83}, "K = 83: rows not 16-byte aligned"),
            Probe("pipeline", "drop", ("AsyncWait",), "no cp.async.wait_group before the barrier"),
        ),
        None,
        None,
        ("cp.async", "LDGSTS", "async copy"),
    ),
    ("mma", 1): SkillSpec(
        "mma-sync",
        "Multiply on tensor cores: ldmatrix + mma.sync instead of per-thread FMAs",
        "tensor-core",
        {"op": "gemm", "atom": "fma", "description": "the block tile's matrix multiply"},
        "Load operand fragments from shared memory with ldmatrix and multiply with mma.sync.m16n8k16 on 2x2 warps "
        "(f32 accumulators): the tensor cores replace the CUDA-core FMAs.",
        ("math throughput (tensor cores)",),
        "compute",
        (
            (*_BF16[:3], "dtypes", "mma.sync m16n8k16 takes bf16/f16 operands (f32 accumulators)"),
            (
                "kernel.threads",
                "ge",
                128,
                "layout",
                "whole warps arranged 2x2 over the accumulator tile; tiles multiples of 16x8x16",
            ),
            ("smem.buffers", "ge", 1, "storage", "ldmatrix reads operand tiles from shared memory"),
            ("mma.kind", "eq", "fma", "pipeline", "the multiply is still on CUDA cores, in a loop over shared tiles"),
            ("hardware.arch", "in", _AMPERE_UP, "hardware", "bf16 mma.sync exists on sm_80 and later"),
        ),
        (("operand fragments from different K blocks", ("MMA_K_MISMATCH",), ("verify", "gate.correct")),),
        (Probe("hardware", "arch", "sm_75", "compile for sm_75 (no bf16 mma.sync)"),),
        None,
        None,
        ("mma.sync", "tensor cores", "ldmatrix", "HMMA"),
    ),
    ("smem_tiling", 1): SkillSpec(
        "smem-tiling",
        "Stage block tiles of A and B in shared memory",
        "shared-memory",
        {
            "op": "copy",
            "src": "global",
            "dst": "fragment",
            "description": "operand loads from global memory into registers",
        },
        "Copy a (BM, BK) tile of A and a (BK, BN) tile of B into shared memory once per block, synchronize, and let "
        "each thread compute a register micro-tile from them: each element is fetched from global memory once per "
        "block instead of once per thread.",
        ("global-memory traffic (reuse across the block)",),
        "memory",
        (
            (*_BF16[:3], "dtypes", "validated with bf16 operands and f32 accumulation"),
            ("kernel.threads", "ge", 32, "layout", "threads of a block share the tiles; each owns a micro-tile"),
            (
                "smem.bytes",
                "eq",
                0,
                "storage",
                "no shared memory used yet: (BM + BN) x BK x 2 bytes must fit per block",
            ),
            (
                "loops.kinds",
                "has",
                "serial",
                "pipeline",
                "a loop over K blocks: barriers before and after each tile's use",
            ),
            ("hardware.smem_per_block", "ge", 16384, "hardware", "the tiles must fit the shared memory per block"),
        ),
        (("a tile read before every thread wrote it, or overwritten while read", ("RACE_READ_WRITE",), ("verify",)),),
        (Probe("pipeline", "drop", ("Barrier",), "no barrier between writing and reading the tiles"),),
        None,
        None,
        ("shared memory", "tiling", "reuse"),
    ),
}


# --- probes ------------------------------------------------------------------------------------------------


def _ir_classes(names: tuple[str, ...]) -> tuple[type, ...]:
    import argus.ir.nodes as nodes

    return tuple(getattr(nodes, n) for n in names)


def run_probe(variant: Variant, probe: Probe, sizes: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """Apply `probe` to `variant`: {outcome: failed | passed | not_applicable, stage, code, detail}."""
    from argus.verify import verify

    if probe.kind == "arch":
        from argus.backend.cuda.codegen import generate
        from argus.backend.cuda.toolchain import compile_cuda

        try:
            gen = generate(variant.trace())
            compile_cuda(gen.source, gen.program_name, arch=probe.arg)
        except ImportError as e:
            return {"outcome": "not_applicable", "detail": f"no toolchain: {e}"}
        except Exception as e:  # noqa: BLE001 - the compiler's refusal is the probe's result
            return _failed("gate.compile", getattr(e, "code", "COMPILE_FAILED"), str(e))
        return {"outcome": "passed", "stage": "gate.compile", "detail": f"compiles for {probe.arg}"}
    if probe.kind == "drop":
        classes = _ir_classes(tuple(probe.arg))
        dropped: list[int] = []

        def rewrite(kernel: Any) -> Any:
            def keep(s: Any) -> Any:
                if isinstance(s, classes) and (not probe.match or probe.match in repr(s)):
                    dropped.append(1)
                    return None
                return s

            return rewrite_body(kernel, keep)

        derived = DerivedKernel(variant.kernel, rewrite, "probe_drop_" + "_".join(probe.arg))
        try:
            derived.trace(**variant.params)
        except Exception as e:  # noqa: BLE001
            return _failed("gate.compile", getattr(e, "code", "COMPILE_TRACE"), str(e))
        if not dropped:
            return {"outcome": "not_applicable", "detail": f"no {'/'.join(probe.arg)} statement to leave out"}
        result = verify(derived, **variant.params)
        verdict = str(getattr(result.verdict, "value", result.verdict))
        if verdict == "violated":
            first = result.errors[0]
            return _failed("verify", first.code, first.render_text())
        return {"outcome": "passed", "stage": "verify", "detail": f"verifier: {verdict}"}
    if probe.kind == "registers":
        import dataclasses

        from argus.ir.nodes import Role

        budgets = dict(probe.arg)

        def resplit(kernel: Any) -> Any:
            return rewrite_body(
                kernel,
                lambda s: (
                    dataclasses.replace(s, registers=budgets[s.name])
                    if isinstance(s, Role) and s.name in budgets
                    else s
                ),
            )

        derived = DerivedKernel(variant.kernel, resplit, "probe_registers")
        if not any(isinstance(s, Role) for s in _walk(derived.trace(**variant.params).body)):
            return {"outcome": "not_applicable", "detail": "no warp roles"}
        result = verify(derived, **variant.params)
        verdict = str(getattr(result.verdict, "value", result.verdict))
        if verdict == "violated":
            first = result.errors[0]
            return _failed("verify", first.code, first.render_text())
        return {"outcome": "passed", "stage": "verify", "detail": f"verifier: {verdict}"}
    if probe.kind in ("params", "sizes"):
        from argus.eval import KernelCandidate, gate_kernel
        from argus.lineage.walk import default_gate_options
        from argus.tasks import get_task

        params = {**variant.params, **(probe.arg if probe.kind == "params" else {})}
        if probe.kind == "params" and not set(probe.arg) <= set(variant.kernel.defaults):
            return {"outcome": "not_applicable", "detail": f"the kernel has no parameter {sorted(probe.arg)}"}
        task = get_task(variant.task)
        gate_sizes = dict((sizes or {}).get(variant.task) or task.small_sizes)
        if probe.kind == "sizes":
            gate_sizes.update(probe.arg)
        result = gate_kernel(
            task,
            KernelCandidate(variant.name, variant.kernel, params),
            sizes=gate_sizes,
            options=default_gate_options(),
        )
        failed = next(
            (s for s in result.stages if str(getattr(s.status, "value", s.status)) in ("failed", "error")), None
        )
        if failed is None:
            return {"outcome": "passed", "stage": "gate", "detail": result.summary()}
        report = (failed.details or {}).get("report") or {}
        errors = (
            [f for f in report.get("findings", []) if f.get("severity") == "error"] if isinstance(report, dict) else []
        )
        code = errors[0].get("code") if errors else failed.code
        return _failed(f"gate.{failed.stage}", code, failed.reason)
    raise ValueError(f"unknown probe kind {probe.kind!r}")


def _walk(body: Any) -> Any:
    from argus.ir.nodes import walk

    return walk(body)


def _failed(stage: str, code: Any, text: str) -> dict[str, Any]:
    lines = [ln for ln in str(text).splitlines() if ln.strip()]
    return {"outcome": "failed", "stage": stage, "code": str(code), "detail": " | ".join(lines[:6])[:600]}


# --- skills ------------------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return "-".join(p for p in "".join(c if c.isalnum() else "-" for c in text.lower()).split("-") if p)


def _source(variant: Variant) -> str | None:
    kernel = variant.kernel
    if isinstance(kernel, DerivedKernel):
        return None  # a rewritten IR has no source of its own
    try:
        return textwrap.dedent(inspect.getsource(kernel.fn))
    except (OSError, TypeError, AttributeError):
        return None


def skill_from_step(
    lineage: Any, index: int, *, probe: bool = True, sizes: dict[str, dict[str, int]] | None = None
) -> dict[str, Any]:
    """The kb entry (as TOML-ready data) of step `index` (1-based) of `lineage`, reversed. Raises `LineageError`
    ``LINEAGE_SKILL`` when a declared precondition does not hold on the kernel the forward step starts from."""
    from argus.kb.schema import Predicate
    from argus.lineage.errors import LineageError
    from argus.lineage.operators import features_of

    step = lineage.steps[index - 1]
    expert_side: Variant = lineage.variants[index - 1]  # the step's `before`: the forward step's result
    simple_side: Variant = lineage.variants[index]  # the step's `after`: where the forward step starts
    mech, level = step.operator["mechanism"], step.operator["level"]
    spec = SPECS[(mech, level)]
    feats = features_of(simple_side)
    preconditions = []
    for feature, op, value, category, reason in spec.preconditions:
        pred = Predicate(feature, op, value, reason, category)
        if pred.evaluate(feats) is not True:
            raise LineageError(
                "LINEAGE_SKILL",
                f"precondition {feature} {op} {value!r} of skill {spec.slug} does not hold on {simple_side.name} "
                f"(it has {feats.get(feature)!r})",
            )
        preconditions.append({"category": category, "feature": feature, "op": op, "value": value, "reason": reason})
    failures, inherited, probes_run = [], [], []
    for p in spec.probes if probe else ():
        after = run_probe(expert_side, p, sizes)
        before = run_probe(simple_side, p, sizes) if p.attribute else {"outcome": "not_run"}
        record = {"category": p.category, "probe": p.what, "kind": p.kind, "forward": after, "without_step": before}
        probes_run.append(record)
        if after["outcome"] != "failed":
            continue
        row = {
            "category": p.category,
            "probe": p.what,
            "stage": after["stage"],
            "code": after["code"],
            "counterexample": after["detail"],
        }
        (failures if before["outcome"] != "failed" else inherited).append(row)
    risks = [
        {"risk": text, **({"codes": list(codes)} if codes else {}), "caught_by": list(caught)}
        for text, codes, caught in spec.risks
    ]
    from argus.verify.catalog import CATALOG

    for f in failures:
        codes = [f["code"]] if f["code"] in CATALOG else []
        stage = (
            f["stage"] if f["stage"] in ("verify", "gate.compile", "gate.correct", "gate.profile") else "gate.compile"
        )
        risks.append(
            {
                "risk": f"failure avoided ({f['category']}): {f['probe']} -> {f['stage']} {f['code']}",
                **({"codes": codes} if codes else {}),
                "caught_by": [stage],
            }
        )
    before_warn = step.gate.get("verifier_warnings", {})  # the simpler kernel's (the forward step's start)
    after_warn = (lineage.steps[index - 2].gate if index > 1 else lineage.expert_gate).get("verifier_warnings", {})
    signals = []
    removed_warnings = {c: n for c, n in before_warn.items() if n > after_warn.get(c, 0)}
    if "PERF_BANK_CONFLICT" in removed_warnings:
        signals.append(
            {
                "feature": "verify.bank_conflict_degree",
                "op": "gt",
                "value": 1.0,
                "weight": 3.0,
                "scale": True,
                "reason": f"the verifier's bank-conflict warnings ({removed_warnings['PERF_BANK_CONFLICT']} on "
                f"{simple_side.name}) are what this step removed",
            }
        )
    if "PERF_UNCOALESCED" in removed_warnings:
        signals.append(
            {
                "feature": "verify.uncoalesced_degree",
                "op": "gt",
                "value": 1.0,
                "weight": 2.0,
                "scale": True,
                "reason": "the verifier's uncoalesced-access warnings are what this step removed",
            }
        )
    eff = step.effect
    speedup = (1.0 / (eff["after_ms"] / eff["before_ms"])) if eff.get("slowdown") else None
    context = (
        f"{eff.get('source')} on {eff.get('gpu')} at "
        + ",".join(f"{k}={v}" for k, v in (eff.get("sizes") or {}).items())
        if eff.get("source") not in (None, "none")
        else "not profiled"
    )
    if speedup is not None:
        magnitude = f"{eff['slowdown']:.2f}x faster ({eff['after_ms']:.4g} -> {eff['before_ms']:.4g} ms; {context}" + (
            "; an estimate, not a GPU measurement)" if eff.get("estimate") else ")"
        )
    else:
        magnitude = f"not measured ({eff.get('why', 'no profile')})"
    before_src, after_src = _source(simple_side), _source(expert_side)
    if spec.example is not None and (before_src is None or after_src is None or before_src == after_src):
        example = {
            "before": spec.example[0],
            "after": spec.example[1],
            "note": "sketch of the change: both kernels of the step share their source",
        }
    elif before_src and after_src and before_src != after_src:
        example = {
            "before": before_src,
            "after": after_src,
            "note": f"the two lineage kernels of the step: {simple_side.name} -> {expert_side.name}",
        }
    else:
        example = {"before": "pass  # not available\n", "after": "pass  # not available (rewritten IR)\n"}
    transform = (
        {
            "kind": "policy",
            "policy": spec.policy[0],
            "candidates": list(spec.policy[1]),
            "reason": f"the step set the declared policy {spec.policy[0]}; the forward step sets it back",
        }
        if spec.policy is not None and step.operator["kind"] == "policy"
        else {
            "kind": "none",
            "reason": f"a {step.operator['kind']} step ({step.operator['id']} reversed): materialized by the lineage "
            f"edge {simple_side.name} -> {expert_side.name}, not by an executable rewrite",
        }
    )
    skill_id = f"mined-{spec.slug}-{_slug(expert_side.library or expert_side.name)}"
    return {
        "schema": 1,
        "id": skill_id,
        "title": f"{spec.title} (mined from {lineage.expert})",
        "intent": spec.intent
        + f" Mined from step {index} of the {lineage.expert} lineage ({step.operator['id']}, reversed).",
        "category": spec.category,
        "keywords": list(spec.keywords) + ["mined", "klineage"],
        "locus": dict(spec.locus),
        "preconditions": preconditions,
        **({"signals": signals} if signals else {}),
        "effect": {
            "improves": list(spec.improves),
            "magnitude": magnitude,
            "when": f"{simple_side.name} -> {expert_side.name} on task {lineage.task}; gate at "
            + ",".join(f"{k}={v}" for k, v in (step.gate.get("sizes") or {}).items()),
            "bound": spec.bound,
        },
        "risks": risks,
        "transform": transform,
        "example": example,
        "provenance": {
            "source": "mined",
            "author": "argus.lineage",
            "lineage": {
                "kernel": lineage.expert,
                "task": lineage.task,
                "step": index,
                "operator": step.operator["id"],
                "mechanism": f"{mech}@{level}",
                "measured": magnitude,
                "effect": {k: v for k, v in eff.items() if v is not None},
                "kernel_before": simple_side.name,
                "kernel_after": expert_side.name,
                "fingerprint_before": step.after["fingerprint"],
                "fingerprint_after": step.before["fingerprint"],
                "mechanism_check": step.check["reason"],
                "verifier_warnings_before": before_warn,
                "verifier_warnings_after": after_warn,
                "gate_before": step.gate["summary"],
                "gate_after": (lineage.steps[index - 2].gate if index > 1 else lineage.expert_gate)["summary"],
                "failures_avoided": failures,
                "inherited_failures": inherited,
                "probes": [
                    {
                        "category": r["category"],
                        "probe": r["probe"],
                        "forward": r["forward"]["outcome"],
                        "without_step": r["without_step"]["outcome"],
                    }
                    for r in probes_run
                ],
            },
        },
    }


def mine_skills(
    lineage: Any, *, probe: bool = True, sizes: dict[str, dict[str, int]] | None = None
) -> list[dict[str, Any]]:
    """One skill per accepted step of `lineage` (which must carry its live variants: a `Lineage` from `walk`)."""
    return [skill_from_step(lineage, i, probe=probe, sizes=sizes) for i in range(1, len(lineage.steps) + 1)]


# --- files -------------------------------------------------------------------------------------------------


def skills_dir() -> pathlib.Path:
    """``$ARGUS_SKILLS_DIR``, else ``$ARGUS_CACHE_DIR/skills``, else ``~/.cache/argus/skills``."""
    if os.environ.get("ARGUS_SKILLS_DIR"):
        return pathlib.Path(os.environ["ARGUS_SKILLS_DIR"])
    base = os.environ.get("ARGUS_CACHE_DIR")
    return (pathlib.Path(base) if base else pathlib.Path.home() / ".cache" / "argus") / "skills"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v) if not isinstance(v, float) or v == v else '"nan"'
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    return json.dumps(str(v))


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def to_toml(data: dict[str, Any]) -> str:
    """`data` (scalars, lists, tables, arrays of tables, as a skill has) as TOML text."""
    lines: list[str] = []

    def table(prefix: str, t: dict[str, Any]) -> None:
        scalars = {k: v for k, v in t.items() if not isinstance(v, dict) and not _is_table_array(v)}
        for k, v in scalars.items():
            if v is not None:
                lines.append(f"{_key(k)} = {_toml_value(v)}")
        for k, v in t.items():
            if isinstance(v, dict):
                lines.append("")
                lines.append(f"[{prefix}{_key(k)}]")
                table(f"{prefix}{_key(k)}.", v)
        for k, v in t.items():
            if _is_table_array(v):
                for item in v:
                    lines.append("")
                    lines.append(f"[[{prefix}{_key(k)}]]")
                    table(f"{prefix}{_key(k)}.", item)

    table("", data)
    return "\n".join(lines) + "\n"


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def write_skills(skills: list[dict[str, Any]], directory: str | pathlib.Path | None = None) -> list[pathlib.Path]:
    """Write each skill as ``<id>.toml`` in `directory` (default `skills_dir()`), after checking it against the kb
    schema (`argus.kb.parse_entry`: a `SchemaError` names the field). Returns the paths."""
    import tomllib

    from argus.kb.schema import parse_entry

    directory = pathlib.Path(directory) if directory is not None else skills_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for skill in skills:
        text = to_toml(skill)
        parse_entry(tomllib.loads(text), f"{skill['id']}.toml", expected_id=skill["id"])
        path = directory / f"{skill['id']}.toml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def load_skills(directory: str | pathlib.Path | None = None) -> tuple[Any, ...]:
    """The mined skills of `directory` (default `skills_dir()`) as kb `Entry` objects (schema-checked); empty when
    the directory does not exist."""
    from argus.kb.store import load_entries

    directory = pathlib.Path(directory) if directory is not None else skills_dir()
    if not directory.is_dir():
        return ()
    return load_entries(directory)


# --- admission on a held-out kernel ------------------------------------------------------------------------

#: A speedup counts as one (the same sign as the mined one) only above 1 + this: the cost model's 1.00x is no gain.
SPEEDUP_TOLERANCE = 0.01


def _lineage_record(skill: Any) -> dict[str, Any]:
    """A skill's ``provenance.lineage`` (an `Entry` or the TOML-ready dict `skill_from_step` makes)."""
    if isinstance(skill, dict):
        return dict(skill.get("provenance", {}).get("lineage", {}))
    return dict(skill.provenance.lineage)


def _library_of(name: str) -> str:
    """``gemm_hopper[BN=256,STAGES=4]{no_register_split}`` -> ``gemm_hopper``."""
    return name.split("[", 1)[0].split("{", 1)[0]


def _kernel_names(names: list[str]) -> set[str]:
    """The `@argus.kernel` function names behind library kernels (``gemm_hopper`` is ``gemm_wgmma_tma``)."""
    from argus.kernels.registry import get_kernel

    out = set()
    for name in names:
        try:
            out.add(getattr(get_kernel(name).kernel, "name", name))
        except Exception:  # noqa: BLE001 - a bridge or a file kernel: its own name
            out.add(name)
    return out


def held_out_moves(skill: Any) -> list[dict[str, Any]]:
    """Every lineage move (`argus.kernels.registry.lineages()`: a rung and the next one) whose rung adds the skill's
    mechanism (`argus.agent.arms.RUNG_STEPS`), as {family, kernel (where the move starts), kernel_after, held_out,
    steps (all that the rung adds)}; ``held_out`` is False for the family the skill was mined from (its kernels are
    among the family's rungs). Held-out moves first."""
    from argus.agent.arms import RUNG_STEPS
    from argus.kernels.registry import lineage, lineages

    record = _lineage_record(skill)
    step = record.get("mechanism")
    own = _kernel_names([_library_of(str(record.get(k, ""))) for k in ("kernel", "kernel_before", "kernel_after")])
    moves = []
    for family in lineages():
        ladder = lineage(family)
        held_out = not (own & _kernel_names([r.kernel for r in ladder]))
        for start, rung in zip(ladder, ladder[1:], strict=False):
            steps = RUNG_STEPS.get(rung.mechanism, ())
            if step in steps:
                moves.append({"family": family, "kernel": start.kernel, "kernel_after": rung.kernel,
                              "held_out": held_out, "steps": steps})  # fmt: skip
    return sorted(moves, key=lambda m: not m["held_out"])


def admit(
    skill: Any,
    held_out_kernel: str,
    *,
    sizes: dict[str, dict[str, int]] | None = None,
    gate_options: Any = None,
) -> dict[str, Any]:
    """Replay the skill's forward move on `held_out_kernel` (a library rung whose next rung adds the skill's
    mechanism, ideally of another lineage family: `held_out_moves`) and judge it: both kernels are gated (compile,
    verify, correct at `sizes` per task, default the tasks' CPU sizes; profile: GPU timing or the cost model's
    estimate); the mechanism levels before and after are read off their features. The skill is **admitted** when
    both pass the gate, the next rung adds exactly the skill's mechanism level, and the move is faster there as it was
    where it was mined (both speedups above 1 + `SPEEDUP_TOLERANCE`). Returns the admission record (the
    ``provenance.lineage.admission`` table; `write_admission` stores it in the skill). Raises `LineageError`
    ``LINEAGE_ADMIT`` when no move of `held_out_kernel` adds the skill's mechanism."""
    from argus.eval import KernelCandidate, gate_kernel
    from argus.kb.retrieval import match_entry, skill_gain
    from argus.lineage.errors import LineageError
    from argus.lineage.mechanisms import state
    from argus.lineage.operators import features_of, library_variant
    from argus.lineage.walk import default_gate_options, gate_record
    from argus.tasks import get_task

    if isinstance(skill, dict):  # as `mine_skills` makes it: the entry it is once written
        import tomllib

        from argus.kb.schema import parse_entry

        skill = parse_entry(tomllib.loads(to_toml(skill)), f"{skill['id']}.toml")
    record = _lineage_record(skill)
    step = str(record.get("mechanism", ""))
    moves = held_out_moves(skill)
    move = next((m for m in moves if m["kernel"] == held_out_kernel), None)
    if move is None:
        starts = ", ".join(f"{m['kernel']} ({m['family']})" for m in moves) or "none in the registry's lineages"
        raise LineageError(
            "LINEAGE_ADMIT",
            f"no lineage move from {held_out_kernel} adds {step} (the step of skill {_skill_id(skill)}); moves that "
            f"do start at: {starts}",
            "replay it from one of those rungs (argus.lineage.skills.held_out_moves lists them)",
        )
    before, after = library_variant(move["kernel"]), library_variant(move["kernel_after"])
    mechanism, _, level_text = step.partition("@")
    level = int(level_text or 0)
    levels = (state(features_of(before)).get(mechanism), state(features_of(after)).get(mechanism))
    adds = levels == (level - 1, level)
    check = f"{mechanism} {levels[0]} -> {levels[1]}: " + (
        "the move adds the skill's mechanism" if adds else f"not the skill's step ({level - 1} -> {level})"
    )
    options = gate_options if gate_options is not None else default_gate_options()
    gates = {}
    for side, variant in (("before", before), ("after", after)):
        result = gate_kernel(
            get_task(variant.task),
            KernelCandidate(variant.name, variant.kernel, dict(variant.params)),
            sizes=(sizes or {}).get(variant.task),
            options=options,
        )
        gates[side] = gate_record(result)
    accepted = all(g["verdict"] == "accepted" for g in gates.values())
    b, a = gates["before"]["profile"], gates["after"]["profile"]
    speedup = b["ms"] / a["ms"] if isinstance(b.get("ms"), int | float) and a.get("ms") else None
    fit = match_entry(skill, features_of(before))
    gain = skill_gain(skill)
    mined = gain[0] if gain is not None else None
    faster = 1.0 + SPEEDUP_TOLERANCE
    if not accepted:
        side = next(s for s, g in gates.items() if g["verdict"] != "accepted")
        reason = f"{(before if side == 'before' else after).name} failed the gate: {gates[side]['summary']}"
    elif not adds:
        reason = f"the move does not add {step}: {check}"
    elif not isinstance(mined, int | float) or mined <= faster:
        reason = f"the mined effect is no speedup ({_ratio(mined)}): nothing to reproduce"
    elif speedup is None or speedup <= faster:
        reason = f"not faster here ({_ratio(speedup)}; mined {_ratio(mined)})"
    else:
        reason = f"passed the gate and faster here too ({_ratio(speedup)}; mined {_ratio(mined)})"
    admitted = accepted and adds and reason.startswith("passed")
    others = [s for s in move["steps"] if s != step]
    if others:  # a rung of two steps (cp.async + pipelining, TMA + wgmma): the replay times them together
        reason += f"; the rung also adds {', '.join(others)}, timed together with it"
    return {
        "admitted": admitted,
        "kernel": before.name,
        "kernel_after": after.name,
        "family": move["family"],
        "held_out": move["held_out"],
        "rung_steps": list(move["steps"]),
        "reason": reason,
        "mechanism_check": check,
        "applies": fit.applicable,
        "failed_preconditions": [p.text() for p in fit.failed],
        "gate_before": gates["before"]["summary"],
        "gate_after": gates["after"]["summary"],
        "effect": {
            "speedup": speedup,
            "mined_speedup": mined,
            "before_ms": b.get("ms"),
            "after_ms": a.get("ms"),
            "source": a.get("source") or b.get("source"),
            "estimate": bool(a.get("estimate") or b.get("estimate")),
            "gpu": a.get("gpu") or b.get("gpu"),
            "sizes": a.get("sizes") or b.get("sizes"),
        },
    }


def _ratio(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, int | float) else "not measured"


def _skill_id(skill: Any) -> str:
    return str(skill["id"] if isinstance(skill, dict) else skill.id)


def write_admission(skill_id: str, admission: dict[str, Any], directory: str | pathlib.Path | None = None) -> Any:
    """Store `admission` (from `admit`) as the skill's ``provenance.lineage.admission`` in its TOML file in
    `directory` (default `skills_dir()`), schema-checked (`argus.kb.parse_entry`); returns the updated `Entry`.
    `LineageError` ``LINEAGE_ADMIT`` when the directory has no such skill."""
    import tomllib

    from argus.kb.schema import parse_entry
    from argus.lineage.errors import LineageError

    directory = pathlib.Path(directory) if directory is not None else skills_dir()
    path = directory / f"{skill_id}.toml"
    if not path.is_file():
        raise LineageError("LINEAGE_ADMIT", f"no skill {skill_id!r} in {directory}", "`argus skills list` shows them")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data["provenance"]["lineage"]["admission"] = admission
    text = to_toml(data)
    entry = parse_entry(tomllib.loads(text), path.name, expected_id=skill_id)
    path.write_text(text, encoding="utf-8")
    return entry
