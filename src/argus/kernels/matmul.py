"""GEMM for any shape: a configuration chosen by shape, without tuning, and `matmul`, the call a user makes.

``argus.kernels.matmul.matmul(a, b)`` computes ``a @ b`` for bf16, f16 or f32 CUDA tensors a (M, K) and b (K, N),
in any of the four layouts (each operand row-major or a transposed view: NN, NT, TN, TT), with the persistent
warp-specialized Hopper GEMM (`argus.kernels.gemm.gemm_warp_specialized_persistent`). Its configuration comes from
`choose`: a small analytic model (`estimate`) ranks the candidate configurations (`candidates`) for the problem and
the target GPU, and the cheapest wins. The mechanisms it chooses between:

* **tile shape**: 128x256 and 128x128 (two consumer warpgroups of 64 rows each) for large problems; 64x256, 64x128
  and 64x64 (one consumer warpgroup) for small M, where a 128-row tile would compute mostly padding;
* **split-K**: SPLITS > 1 when the output has too few tiles to fill the GPU (large K, small M x N): each (tile,
  split) unit multiplies a K-range into an f32 workspace slice, and `gemm_split_reduce` sums the slices (a second,
  verified kernel: deterministic, no atomics);
* **split tail**: TAIL > 1 when the tiles take more than one wave and the last is partial: the whole waves' tiles
  run whole (`argus.kernels.gemm.gemm_warp_specialized_persistent` with PART="whole"), the last wave's tiles split
  TAIL ways along K (`gemm_persistent_split_tail`, f32 partial products in a workspace of one slot per split and
  tail tile) and `gemm_tail_reduce` sums them into C (three launches; docs/gemm.md);
* **pipeline depth**: as many stages as the shared memory holds (at most `MAX_STAGES`);
* **epilogue**: TMA stores through shared memory where C's rows are 16-byte aligned and there is no split, else
  direct stores.

Where TMA cannot address an operand (its contiguous extent, K for a K-major operand, not a multiple of 8 elements),
the plan copies the operands into zero-padded buffers first (`padded_extent`, `pad_copy` launches): correct, and
costs one extra pass over A and B; a main loop that reads such operands directly is not built yet. Where the rows
are 16 bytes past a multiple of `PITCH_BYTES` (read 1.3-1.6x slower), a configuration may copy them too
(`GemmConfig.PITCH`), where the model says the copy pays.

f32 inputs run at f32 accuracy on bf16 tensor cores by split precision (`kernel_problem`): `split_bf16x3` writes
each operand's hi and lo bf16 parts in one pass, and one bf16 GEMM over a K three times as long sums
A_hi B_hi + A_hi B_lo + A_lo B_hi in f32 (the dropped A_lo B_lo and the rounding of lo are below 2^-16 of |A| |B|
per product). A TF32 ``wgmma`` atom, the other route, is not built.

**GEMV-class products** (at most `GEMV_ROWS` rows of A, a decode batch; or one column of B, a matrix-vector
product) are bound by streaming the matrix, not by the tensor cores: for f32 inputs (`GEMV_DTYPES`) `gemv_config`
plans them on `argus.kernels.gemv` (CUDA-core FMAs in f32, 16-byte loads of the matrix as it lies in memory,
split-K over enough blocks to keep the memory busy) and `gemm_split_reduce`, multiplied in f32 (no split
precision). bf16 and f16 stay on the tensor cores (measured faster there, so far).

`GemmPlan` is what a call runs: the configuration, the kernels' parameters, and on the CPU `run_on_interpreter`,
which is how the tests check every mechanism at small and odd shapes. Nothing here needs a GPU except `matmul`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from argus.atoms.common import (
    MAX_GRID_Y,
    SHARED_MEMORY_BUDGET,
    WARPGROUP_SIZE,
)
from argus.atoms.common import consumer_registers as atoms_consumer_registers
from argus.atoms.target import DEFAULT_TARGET, Target
from argus.atoms.tma import store_chunk_columns
from argus.ir.types import dtype_from_name
from argus.kernels import gemm, gemv
from argus.kernels.epilogue import Epilogue, EpilogueError, fused_kernels

#: Input dtypes `matmul` takes (f32 by split precision, `kernel_problem`; the FP8 types on ``wgmma``'s k32 form,
#: `FP8_INPUTS`), and the output dtypes it writes.
FP8_INPUTS = ("e4m3", "e5m2")
#: f32 tensors multiplied at TF32 precision (``matmul(..., precision="tf32")``, as ``torch.backends.cuda.matmul.
#: allow_tf32``): one ``wgmma.m64nNk8.f32.tf32.tf32`` pass over the f32 operands as they are stored (no split; the
#: tensor core reads the top 10 of their 23 mantissa bits, `argus.atoms.mma.tf32_operand`), both operands K-major.
TF32 = "tf32"
INPUTS = ("bf16", "f16", "f32", TF32, *FP8_INPUTS)
#: The precisions `matmul` takes for f32 inputs: "bf16x3" (the default: f32 accuracy by split precision) and "tf32".
F32_PRECISIONS = ("bf16x3", TF32)


def dtype_of(name: str) -> Any:
    """The `DType` of a dtype name of this planner: a TF32 problem's operands are f32 tensors."""
    return dtype_from_name("f32" if name == TF32 else name)


def kernel_input(name: str) -> str:
    """The input dtype parameter (``IN``) of the kernels that run a problem of input dtype `name`."""
    return "f32" if name == TF32 else name


OUTPUTS = ("bf16", "f16", "f32")
#: The K-block of every configuration: 64 16-bit elements, one 128-byte swizzle span.
BK = 64
#: The deepest pipeline the heuristic asks for (deeper gains nothing measurable once the loads are covered).
MAX_STAGES = 8
#: Split counts the heuristic considers.
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
#: The longest run of K (elements of the split-precision K' = 3P) one unit accumulates in the tensor cores for an
#: f32 problem. ``wgmma`` adds each k16 step's products into its f32 accumulator with the smaller terms' bits past
#: the accumulator's precision dropped, so the error grows with the run (measured on an H200, uniform [0, 1)
#: inputs: 4.2e-5 of the largest element at K' = 12288, 8.7e-5 at 24576, 2.8e-4 at 16384 x 3 per split x 32 splits
#: of K = 524288; KernelBench's fp32 tolerance is 1e-4): longer K is split (`SPLITS`), each split's partial
#: product summed in f32 by `gemm_split_reduce`.
F32_CHAIN = 3 * 4096
#: Split counts beyond `SPLITS` that the f32 chain may need (K up to millions).
CHAIN_SPLITS = (48, 64, 96, 128, 192, 256, 384, 512)
#: The fewest K-blocks a split may get: below this the pipeline never fills.
MIN_K_BLOCKS_PER_SPLIT = 4
#: A 16-bit GEMM's tile takes K-blocks of two swizzle spans (BK = 128: two TMA boxes per operand and stage, half
#: the stages and barrier round trips per byte) where that still leaves it this many stages. Measured on an H200
#: (benchmarks/results/2026-12-01-wide-k/): with four stages the wide block was faster at every tile and shape
#: timed (1024^3 64x128: 0.751 -> 0.934x cuBLAS; swap tiles at M = 8-96: +3-14 %), with three (128x128 tiles) in 7
#: of 8 pairs (+1-15 %, one -0.2 %), with two slower (128x256 at 4096^3: 0.993 -> 0.892x; 64x256: -9 %).
WIDE_K_MIN_STAGES = 3
#: (BM, BN, consumer warpgroups): the tile shapes the code generator lowers (one m64 wgmma row per warpgroup).
TILES = (
    (128, 256, 2),
    (128, 192, 2),
    (192, 192, 3),
    (192, 128, 3),
    (128, 128, 2),
    (64, 256, 1),
    (64, 128, 1),
    (64, 64, 1),
)
#: The tile shapes for an epilogue that holds a second tile-sized value (a residual, or a value used twice:
#: `Epilogue.holds_tiles`): it takes as many registers as the accumulator, and at BN = 256 the consumers spill
#: (ptxas: 588 spill stores for ``acc + res`` at 128x256, none at 128x128; chains over per-row and per-column
#: vectors fit at every tile).
EPILOGUE_TILES = tuple(t for t in TILES if t[1] <= 128 and t[2] <= 2)
#: The tile shapes for any other fused epilogue: three consumer warpgroups (128 registers a thread) only up to 128
#: columns (192x192 with ``relu(acc * scale + bias) + row``: ptxas spills 140 bytes, 192x128 none).
FUSED_TILES = tuple(t for t in TILES if t[2] <= 2 or t[1] <= 128)
#: TMA reads an operand's rows at full rate where they are a multiple of this many bytes apart. Measured on an H100
#: (benchmarks/results/2026-12-02-gemm-tiles/, calls 6-7), bf16 with K the contiguous extent: K = 3000 (6000-byte
#: rows, 16 bytes past a multiple of 32) 0.64x cuBLAS, K = 3008 0.96x; 5816 0.67x, 5824 0.98x; 3592 0.69x, 3648
#: 0.94x; 3464 0.60x, 3520 0.90x; 1000 0.80x, 1024 0.94x; K = 4000 (8000 bytes) as fast as 4032 (0.955x, 0.952x),
#: K = 6000 (12000 bytes: 32 past a multiple of 64) 0.99x.
PITCH_BYTES = 32
#: What the model multiplies a plan's main kernel time by where an operand's rows are 16 bytes but not `PITCH_BYTES`
#: apart (the rows above ran 1.27-1.66x longer than their neighbours a few K-blocks longer).
MISALIGNED_PITCH_FACTOR = 1.45
#: Whether the planner offers `GemmConfig.PITCH` plans (a switch for A/B measurements: `benchmarks/gemm_shapes.py
#: --unpitched`).
PITCH_COPIES = True
#: The share of the device memory's bandwidth a padding copy sustains (one `pad_copy` launch per operand: read once,
#: written padded, 16-byte accesses), and its launch, seconds.
COPY_EFFICIENCY = 0.75
COPY_LAUNCH_S = 4e-6
#: `fitted_tiles` narrows a tile to the problem's columns where its last column tile leaves more than this share of N
#: empty.
FIT_WASTE = 0.1
#: Whether the planner offers tiles narrowed to fill the SMs in the waves a tile takes (`wave_tiles`; a switch for A/B
#: measurements: `benchmarks/gemm_shapes.py --unwaved`).
WAVE_FIT = True
#: Fraction of the tensor-core peak a block of each tile shape sustains in its main loop (wider wgmma reads less
#: shared memory per FLOP; one consumer warpgroup cannot hide its own waits as two do); a width between two listed
#: ones is interpolated, a narrower one scaled (`mma_efficiency`). The five tiles before session 43 measured on an
#: H200 at 4096^3 (64x64: 2048^3); 128x192, 128x160 and the 192-row tiles fitted in session 43 to the first choice
#: among measured candidates (the geometric-mean regret of the model's pick: 52 problems of
#: benchmarks/results/2026-12-02-gemm-tiles 1.047 -> 1.035, the recorded calibration rows' 54 with M > 96 unchanged
#: at 1.022; docs/gemm.md, "Configuration by shape").
MMA_EFFICIENCY = {
    (128, 256): 0.76,
    (128, 192): 0.68,
    (128, 160): 0.6,
    (128, 128): 0.48,
    (192, 192): 0.62,
    (192, 128): 0.62,
    (64, 256): 0.58,
    (64, 224): 0.48,
    (64, 160): 0.41,
    (64, 128): 0.32,
    (64, 64): 0.17,
}
#: The most rows of A a swap-AB plan takes (`swap_tiles`): there the rows of A are wgmma's N extent (8 to 256 in steps
#: of 8), and the weight's rows fill 128-row tiles instead of a 64-row tile of A mostly past M.
SWAP_MAX_M = 128
#: Up to this many rows of A, `choose` takes the swap-AB plan of one wave (`swap_choice`) over the model's ranking:
#: measured on an H200 (benchmarks/results/2026-12-01-gemm-swap), it was the fastest plan at every skinny shape with
#: M <= 96 (0.86-1.01x cuBLAS, 1-13 % over the plain tiles), tied at M = 64 and 128; the model's memory terms rank
#: the families within 2 % of each other, so its order among them is noise.
SWAP_PREFER_M = 96
#: The most splits the one-wave swap-AB plan uses; a product that needs more to fill the SMs is left to the model.
SWAP_MAX_SPLITS = 8
#: Fraction of the memory bandwidth a streaming GEMM sustains (H200, the decode shapes: 2.4-2.9 TB/s of 4.8).
HBM_EFFICIENCY = 0.6
#: Latency of a TMA load from device memory under load, seconds: one SM streams at most its pipeline's bytes in
#: flight per this (fitted to the decode shapes' per-SM rates, 13-38 GB/s).
HBM_LATENCY_S = 4e-6
#: Fixed costs, seconds: the persistent kernel's launch and prologue (fitted at 1024^3), and the split's
#: reduction kernel's launch.
LAUNCH_S = 5e-6
REDUCE_LAUNCH_S = 3e-6
#: The exponent of the soft maximum of the busiest SM's time and the memory floor (large: a hard maximum).
CONTENTION = 3.0
#: The share of a TMA-store epilogue's time that the next unit's main loop does not hide.
EPILOGUE_OVERLAP = 0.25
#: Configurations whose estimates are within this fraction of the best count as equal: the simpler one wins
#: (unsplit over split, then the larger tile).
TIE = 0.02
#: 2-block clusters sharing B (`GemmConfig.CLUSTER`): where `cluster_choice` takes them. Measured on an H200
#: (benchmarks/results/2026-12-04-gemm-cluster/, calls 1-2, interleaved with cuBLAS, each configuration with and
#: without): rows 16 bytes past a multiple of 32 (`misaligned_pitch`) read half as much of B through L2 and ran
#: 1.09-1.31x faster than without the cluster and than the copies to whole pitches, at all 10 such shapes
#: (6000x6000x3000 0.87 -> 0.97x cuBLAS, 3000^3 0.71 -> 0.93, 13664x2600x3592 0.76 -> 0.94, 1000^3 0.87 -> 0.95);
#: split-K of at least `CLUSTER_MIN_SPLITS` splits, bound by L2 traffic, 1.08-1.12x (512x512x65536 0.79 -> 0.88x,
#: 256x256x131072 0.72 -> 0.79), fewer splits 0.99-1.00x; 128-row tiles on two consumers over at least
#: `CLUSTER_MIN_WAVES` waves of tiles 1.002-1.011x at 16 of 17 shapes; one-wave and three-consumer plans and swap-AB
#: 0.74-0.99x (1024^3 0.993 -> 0.926x, 20480x256x4096 on 192x128 0.80 -> 0.77).
CLUSTER_MIN_SPLITS = 16
CLUSTER_MIN_WAVES = 2
#: A split-K plan fused in the GEMM kernel (`GemmConfig.FUSE`) on 128-row tiles of two consumer warpgroups, split at
#: least this many ways, runs in 2-block clusters, still fused, where its units still fit one wave (`fused_cluster`).
#: Measured on an H100 (benchmarks/results/2026-12-06-gemm-cluster8/, call 1, held-out shapes, interleaved with
#: cuBLAS): at all 4 such fused shapes +2.8 to +8.0 % (1024x512x49152 0.862 -> 0.954x cuBLAS, 192x1472x49152
#: 0.886 -> 0.950, 832x384x49152 0.880 -> 0.931, 512x576x24576 0.848 -> 0.872); clustering the *unfused* split plans
#: of those tiles was mixed (-33 % to +15 %: not taken). Call 2, ten new held-out shapes the rule clusters: faster at
#: all ten, +1.8 to +20 % (416x960x65536 0.970 -> 1.164x, 448x576x90112 0.868 -> 1.045x, 512x544x72704 0.688 -> 0.793).
FUSED_CLUSTERS = True
FUSED_CLUSTER_MIN_SPLITS = 8
#: The least K for the clusters of `CLUSTER_MIN_WAVES` (call 3: K = 192 ran 0.96x without; K >= 1536 gained) and of
#: misaligned rows (K <= 312 ran 0.96-0.99x without; K >= 440 gained).
CLUSTER_MIN_K = 1024
CLUSTER_MIN_K_MISALIGNED = 384
#: The most of a clustered plan's tile slots that may be empty (an odd count of row tiles: `cluster_waves`).
CLUSTER_MAX_IDLE = 1 / 8
#: Whether `choose` takes 2-block clusters where `cluster_choice` would (a switch for A/B measurements:
#: `benchmarks/gemm_shapes.py --unclustered`).
CLUSTERS = True
#: Whether a split-K plan of a small output over a long K takes 128 x 128 tiles in 2-block clusters, split within one
#: wave, fused (`narrow_split`): cuBLAS's decomposition there. Measured on an H100 (benchmarks/results/
#: 2026-12-05-gemm-l2-split/, call 1, interleaved with cuBLAS): 512x512x65536 0.916 -> 0.947x, 512x512x32768
#: 0.839 -> 0.986x, 256x512x65536 0.911 -> 0.941x (128x128x128, 3 stages; with K-blocks of 64, 6 stages: 0.943,
#: 0.984, 0.930); 256x256x131072 keeps its plan (128x128 split 32 in
#: clusters already). Where the output has more tiles it lost (1024x1024x16384 0.980 -> 0.934-0.951x with split 2,
#: 768x512x65536 0.851 -> 0.816x with split 4): `NARROW_MAX_TILES`. At eight shapes drawn at random in its domain
#: (call 3, session 63, H100) it won at all of them, 1.01-1.13x against the rule off.
CLUSTER_NARROW_SPLITS = True
#: `narrow_split`'s domain: the model's choice splits K at least this many ways, over at most this many 128 x 128
#: tiles of output.
NARROW_MIN_SPLITS = 8
NARROW_MAX_TILES = 16
#: Whether, among tied configurations, fewer splits win over more (before session 44: 512x512x65536 took 64x256 in 8
#: splits, 1.6 % behind the model's best, 128x256 in 16, which measured 5-20 % faster every time both were timed).
#: Off: only unsplit over split counts as simpler (both split ones have a workspace and a reduction launch); between
#: split ones the model's faster wins.
TIE_FEWEST_SPLITS = False
#: A split tail ranked ahead of its own unsplit twin (the same tile, stages and epilogue) by more than this fraction
#: is taken although within `TIE`, where the twin stays out of clusters (a tail cannot run in one). Measured on an H100
#: (benchmarks/results/2026-12-05-gemm-ncu/, calls 2 and 4): FP8 8192x8192x28672, the model's tail3 0.5 % ahead of
#: the unsplit 128x256x128 (27.6 waves of cuBLAS's 144x128 tiles against 15.5 of these, the last half idle), measured
#: 1.0-1.1 % faster (1.006 -> 1.017x `torch._scaled_mm`); the rule's three other changes among 364 shapes 0.4-0.9 %
#: faster than their twins (call 4); 8192x28672x8192, whose tail is ahead by less, keeps its unsplit tile.
TAIL_TWIN_MARGIN = 0.005
#: The most rows of A (a decode batch) the GEMV kernels take; above, the tensor-core GEMM. A GEMV does 2 R FLOPs per
#: matrix element it streams, on the CUDA cores (f32 FMA): at 8 rows that is well under what they sustain at the
#: memory's rate, at 16 it is near it.
GEMV_ROWS = 8
#: Blocks of 128 threads per SM a GEMV launch aims at (split-K makes up the difference): each thread keeps one
#: 16-byte load per row of its K-block in flight, and this many blocks cover the memory's latency.
GEMV_BLOCKS_PER_SM = 4
#: The fewest K-blocks a GEMV split may get.
GEMV_MIN_K_BLOCKS = 4
#: The most splits a GEMV takes (its f32 workspace is S x R x N).
GEMV_MAX_SPLITS = 64
#: The input dtypes the plan takes to the GEMV kernels. f32: they multiply in f32 (exact where the tensor-core plan
#: splits each operand in three bf16 parts) and ran 2.2-4.9x faster than that plan on an H200, 1.092x strict-fp32
#: cuBLAS in geometric mean (benchmarks/results/2026-11-29-gemv/, run 8). bf16 and f16 stay on the tensor cores:
#: there the GEMV kernels ran at 0.25-0.85x the tensor-core plan (13-35 % of the memory's bandwidth: registers and
#: too few loads in flight per thread), and `gemv_config(..., dtypes=INPUTS)` plans them only on request.
GEMV_DTYPES = ("f32", TF32)
#: The most rows of A the ``rows`` GEMV kernel takes (``x @ W.T``) in a plan without an epilogue: with 8 it ran slower
#: than the tensor cores in f32 (benchmarks/results/2026-11-29-gemv/). With a fused epilogue (`gemv_epilogue_config`)
#: it takes all `GEMV_ROWS`: there the tensor-core plan's split precision failed the gate (a GRU's input projection
#: at eight rows), and accuracy comes first.
GEMV_ROWS_KERNEL_ROWS = 4


#: The 16-bit input dtypes whose matrix-vector products (A (M, K) row-major times one column) and single-row products
#: (one row of A times a weight stored (N, K), ``x @ W.T``) the plan takes to `gemv_rows_tma`. On an H200
#: (benchmarks/results/2026-11-30-gemv-tma/): matrix-vector 0.93-0.96x cuBLAS where the tensor-core plan (a 64-row
#: tile with one real column) ran at 0.48-0.64x; one row 0.94-0.96x against the tensor-core plan's 0.85-0.92x in the
#: same run (call 3). Decode products of 2-8 rows stay on the tensor cores: there the kernel ran at 0.26-0.77x (the
#: f32 FMAs and V's loads grow with the rows).
GEMV_TMA_DTYPES: tuple[str, ...] = ("bf16", "f16")
#: `gemv_rows_tma`'s rows per block, shared-memory stages, threads, lanes per row, per-lane partial sums, and the waves
#: of blocks its split-K aims at: the fastest variant at every one-row and matrix-vector shape of call 3 (LANES = 1,
#: a thread summing whole rows alone, ran 1.3-3x slower in call 2: its sum of a row's 64 products is one chain of
#: dependent FMAs)
GEMV_TMA_BN = 64
GEMV_TMA_STAGES = 4
GEMV_TMA_THREADS = 256
GEMV_TMA_LANES = 8
GEMV_TMA_PARTIAL = True
GEMV_TMA_WAVES = 0.5
#: One launch instead of a split and its reduction (`gemv_tma_one_launch`), where the matrix has at least one row
#: tile of `GEMV_TMA_ONE_BN` rows per SM and all of them are resident at once: 16 rows a block on 128 threads, V's
#: K-blocks in the stages (VSTAGE), a ring of `GEMV_TMA_ONE_STAGES`. Measured on an H100
#: (benchmarks/results/2026-12-05-gemm-ncu/, calls 3-4), one row times a weight (N, K), against the split plan and
#: cuBLAS in one process, at 8 stages: 1x4096x4096 0.973 -> 1.041x cuBLAS, 1x14336x4096 0.945 -> 0.999x,
#: 1x8192x8192 0.947 -> 0.977x, 1x4096x14336 0.969 -> 0.983x. 16 stages ran up to 5 % faster where two blocks share
#: an SM (1x4096x4096 1.067-1.096x) but a ring that deep is `UNKNOWN_LOOKBACK` to the verifier within its look-back
#: (8, `argus.verify.engine.LOOKBACK_MOST`; minutes past it): not planned. Two waves of blocks lose (1x28672x4096 at 16
#: rows, 1792 blocks: 0.723x, where the split plan's one launch of 64-row blocks runs 0.964x). Without VSTAGE the
#: same plans ran at 0.45-0.88x: each of the 64-224 iterations waited for V's chunk from L2.
GEMV_TMA_ONE_LAUNCH = True
GEMV_TMA_ONE_BN = 16
GEMV_TMA_ONE_THREADS = 128
GEMV_TMA_ONE_STAGES = 8


@dataclass(frozen=True)
class GemvConfig:
    """A GEMV-class plan (`argus.kernels.gemv`): KERNEL ``"columns"`` (the matrix row-major (K, cols)) or ``"rows"``
    (the matrix as (cols, K) row-major), SWAP when the small side is B (one column: ``C^T = B^T A^T``), ROWS the rows
    of the small side, and the kernel's BK, BN and SPLITS."""

    KERNEL: str
    SWAP: bool
    ROWS: int
    SPLITS: int
    BK: int
    BN: int
    UNROLL: int = 4
    #: ``rows_tma`` only: the shared-memory stages of its TMA ring, and its block's threads
    STAGES: int = 0
    THREADS: int = 128
    LANES: int = 1
    PARTIAL: bool = False
    #: ``rows_tma`` only: V's K-blocks loaded into the ring's stages with the matrix's (`gemv_rows_tma`'s VSTAGE)
    VSTAGE: bool = False
    #: the result goes through the split-K reduction even with one split: a fused epilogue is applied there
    #: (`gemv_epilogue_config`)
    REDUCE: bool = False

    @property
    def label(self) -> str:
        swap = " swap" if self.SWAP else ""
        if self.KERNEL == "rows_tma":
            return (f"gemv-{self.KERNEL}{swap} rows{self.ROWS} {self.BN}x{self.BK} s{self.STAGES} t{self.THREADS} "
                    f"l{self.LANES}{' partial' if self.PARTIAL else ''}{' vstage' if self.VSTAGE else ''} "
                    f"split{self.SPLITS}")  # fmt: skip
        reduce = " reduce" if self.REDUCE else ""
        return f"gemv-{self.KERNEL}{swap} rows{self.ROWS} {self.BK}x{self.BN} u{self.UNROLL} split{self.SPLITS}{reduce}"

    def kernel_params(self, problem: GemmProblem) -> dict[str, Any]:
        out = "f32" if self.SPLITS > 1 or self.REDUCE else problem.out  # one split: the result, no reduction
        if self.KERNEL == "rows_tma":
            params = {"ROWS": self.ROWS, "BN": self.BN, "SPLITS": self.SPLITS, "STAGES": self.STAGES,
                      "THREADS": self.THREADS, "LANES": self.LANES, "PARTIAL": self.PARTIAL,
                      "IN": kernel_input(problem.dtype), "OUT": out}  # fmt: skip
            return params | ({"VSTAGE": True} if self.VSTAGE else {})  # absent when off: the same traced kernel
        return {
            "ROWS": self.ROWS,
            "BK": self.BK,
            "BN": self.BN,
            "SPLITS": self.SPLITS,
            "UNROLL": self.UNROLL,
            "IN": kernel_input(problem.dtype),
            "OUT": out,
        }

    def reduce_params(self, problem: GemmProblem) -> dict[str, Any] | None:
        """`gemm_split_reduce`'s parameters, or None with one split (the GEMV kernel writes the result) unless the
        reduction applies an epilogue (REDUCE)."""
        if self.SPLITS == 1 and not self.REDUCE:
            return None
        return {"SPLITS": self.SPLITS, "BN": REDUCE_BN, "OUT": problem.out}


def gemv_config(
    problem: GemmProblem,
    target: Target = DEFAULT_TARGET,
    dtypes: tuple[str, ...] = GEMV_DTYPES,
    rows_kernel_rows: int = GEMV_ROWS_KERNEL_ROWS,
) -> GemvConfig | None:
    """The GEMV plan for `problem`, or None where the tensor-core GEMM takes it: a product of one matrix (no batch)
    in one of `dtypes` with at most `GEMV_ROWS` rows of A, or with one column of B, whose matrix rows are whole
    16-byte vectors (N for a row-major matrix, K for one stored transposed; the GEMM pads the others). A row-major
    (cols, K) matrix (``x @ W.T``) with more than `rows_kernel_rows` rows of A stays on the tensor cores (measured
    slower there past 4). A
    16-bit (`GEMV_TMA_DTYPES`) row-major matrix times a vector, and one 16-bit row times a matrix stored (N, K), go to
    `gemv_rows_tma` whatever `dtypes` says."""
    if problem.batch != 1:
        return None
    vec = 16 // dtype_of(problem.dtype).itemsize
    if problem.dtype in GEMV_TMA_DTYPES and problem.K % vec == 0:
        if problem.N == 1 and problem.M > GEMV_ROWS and problem.a_major == "K":
            # a 16-bit matrix (M, K) row-major times a vector
            return gemv_tma_one_launch(problem, target) or gemv_tma_config(problem, target)
        if problem.M == 1 and problem.N > 1 and problem.b_major == "K":
            # one 16-bit row times a weight stored (N, K)
            return gemv_tma_one_launch(problem, target) or gemv_tma_config(problem, target)
    if problem.dtype not in dtypes:
        return None
    if problem.M <= GEMV_ROWS:
        swap, rows, cols = False, problem.M, problem.N
        kernel = "columns" if problem.b_major == "N" else "rows"  # B stored (K, N), or (N, K)
    elif problem.N == 1:
        swap, rows, cols = True, 1, problem.M
        kernel = "columns" if problem.a_major == "M" else "rows"  # A stored (K, M), or (M, K)
    else:
        return None
    if (cols if kernel == "columns" else problem.K) % vec or (kernel == "rows" and rows > rows_kernel_rows):
        return None
    threads = 128
    # blocks loaded ahead per step (UNROLL): the fastest of 1, 2, 4, 8 on an H200 in f32 (benchmarks/results/
    # 2026-11-29-gemv/, runs 5 and 6); a columns thread loads BK rows per block already, and more rows of V hold more
    # registers (with 4 blocks ahead, 2 rows of V pass the 255 the verifier allows)
    if kernel == "columns":
        bk, bn, unroll = 8, threads * vec, (2 if rows == 1 else 1)
    else:
        bk, bn, unroll = 32 * vec, threads // 32, (4 if rows == 1 else 2)
    tiles = _cdiv(cols, bn)
    k_blocks = _cdiv(problem.K, bk)
    want = _cdiv(GEMV_BLOCKS_PER_SM * target.sms, tiles)
    splits = max(1, min(want, k_blocks // (GEMV_MIN_K_BLOCKS * unroll), GEMV_MAX_SPLITS))
    return GemvConfig(kernel, swap, rows, splits, bk, bn, unroll)


def gemv_epilogue_config(
    problem: GemmProblem, epilogue: Epilogue, target: Target = DEFAULT_TARGET
) -> GemvConfig | None:
    """The GEMV plan for `problem` with the fused `epilogue` applied by the split-K reduction (REDUCE: the reduction
    runs even with one split), or None where the tensor-core GEMM takes it: f32 inputs only (`GEMV_DTYPES`: exact f32
    FMAs where the tensor-core plan splits each operand in three bf16 parts, whose 2^-16 of |A||B| per product a
    recurrent cell's gates amplify past the f32 tolerance: a GRU at two and eight rows), at most `GEMV_ROWS` rows of
    A on either kernel (`GEMV_ROWS_KERNEL_ROWS` does not apply), not the swapped matrix-vector plan (its
    reduction's rows are C's columns), and not a reducing epilogue (its partials come from the GEMM's tiles)."""
    found = gemv_config(problem, target, rows_kernel_rows=GEMV_ROWS)
    if found is None:
        return None
    found = replace(found, REDUCE=True)
    return None if gemv_epilogue_refusal(problem, found, epilogue) else found


def gemv_epilogue_refusal(problem: GemmProblem, config: GemvConfig, epilogue: Epilogue) -> str | None:
    """Why GEMV plan `config` cannot apply `epilogue` (see `gemv_epilogue_config`), or None."""
    if epilogue.reduce is not None:
        return "a reducing epilogue on the GEMV kernels is not built (its partials come from the GEMM's tiles)"
    if config.SWAP:
        return "the swapped (matrix-vector) GEMV's reduction runs over C's columns, not its rows"
    if config.KERNEL not in ("columns", "rows") or problem.dtype not in GEMV_DTYPES:
        return f"{config.KERNEL} kernel on {problem.dtype}: only the f32 `columns` and `rows` GEMV kernels"
    if not config.REDUCE:
        return "the epilogue is applied by the reduction: pass a GemvConfig with REDUCE=True"
    return None


def gemv_tma_config(
    problem: GemmProblem,
    target: Target = DEFAULT_TARGET,
    bn: int = GEMV_TMA_BN,
    stages: int = GEMV_TMA_STAGES,
    threads: int = GEMV_TMA_THREADS,
    waves: float = GEMV_TMA_WAVES,
    lanes: int = GEMV_TMA_LANES,
    partial: bool = GEMV_TMA_PARTIAL,
) -> GemvConfig:
    """The `gemv_rows_tma` plan for a product whose matrix is (cols, K) row-major (``x @ W.T`` with at most
    `GEMV_ROWS` rows of x, or a (M, K) matrix times a vector): BN rows of the matrix per block, STAGES stages of
    128 bytes of K per row, and split-K up to `waves` times as many blocks as the SMs hold at once (by their
    shared memory), each split at least STAGES K-blocks long so that its ring fills."""
    swap = problem.M > GEMV_ROWS
    rows, cols = (1, problem.M) if swap else (problem.M, problem.N)
    if rows > GEMV_ROWS or (swap and problem.N != 1):
        raise GemmError(f"gemv_rows_tma takes at most {GEMV_ROWS} rows of A or one column of B, not {problem}")
    bk = 128 // dtype_of(problem.dtype).itemsize
    per_sm = max(1, min(_ring_blocks_per_sm(stages, bn * 128, threads, target), 8))
    tiles = _cdiv(cols, bn)
    k_blocks = _cdiv(problem.K, bk)
    want = _cdiv(int(waves * per_sm * target.sms), tiles)
    splits = max(1, min(want, k_blocks // stages, GEMV_MAX_SPLITS))
    return GemvConfig("rows_tma", swap, rows, splits, bk, bn, STAGES=stages, THREADS=threads, LANES=lanes,
                      PARTIAL=partial)  # fmt: skip


def _ring_blocks_per_sm(stages: int, stage_bytes: int, threads: int, target: Target) -> int:
    """How many `gemv_rows_tma` blocks of `threads` threads with a ring of `stages` stages of `stage_bytes` an SM
    holds at once (shared memory with the ring's mbarriers and the reserved bytes, threads, blocks)."""
    resident = stages * stage_bytes + 64 + target.shared_memory_reserved_per_block
    return min(target.shared_memory_per_sm // resident, target.max_threads_per_sm // threads, target.max_blocks_per_sm)


def gemv_tma_one_launch(problem: GemmProblem, target: Target = DEFAULT_TARGET) -> GemvConfig | None:
    """The one-launch `gemv_rows_tma` plan (no split, no reduction: the kernel writes C) where the matrix's rows make
    at least one block of `GEMV_TMA_ONE_BN` rows per SM and every block is resident at once (by shared memory,
    threads and blocks per SM), else None (`GEMV_TMA_ONE_LAUNCH` off, too few rows or too many: the plan of
    `gemv_tma_config`). V's K-blocks come in the ring's `GEMV_TMA_ONE_STAGES` stages (VSTAGE)."""
    swap = problem.M > GEMV_ROWS
    rows, cols = (1, problem.M) if swap else (problem.M, problem.N)
    if not GEMV_TMA_ONE_LAUNCH or rows > GEMV_ROWS or (swap and problem.N != 1):
        return None
    bn, threads, stages = GEMV_TMA_ONE_BN, GEMV_TMA_ONE_THREADS, GEMV_TMA_ONE_STAGES
    blocks = _cdiv(cols, bn)
    per_sm = _ring_blocks_per_sm(stages, (bn + rows) * 128, threads, target)  # a stage: the matrix's box and V's
    if not target.sms <= blocks <= per_sm * target.sms:
        return None
    bk = 128 // dtype_of(problem.dtype).itemsize
    return GemvConfig("rows_tma", swap, rows, 1, bk, bn, STAGES=stages, THREADS=threads, LANES=GEMV_TMA_LANES,
                      PARTIAL=True, VSTAGE=True)  # fmt: skip


def mma_efficiency(bm: int, bn: int) -> float:
    """`MMA_EFFICIENCY` of a tile; one between two measured widths with the same rows (a tile narrowed to the
    problem's columns, `fitted_tiles`) interpolated linearly between them; a narrower one (swap-AB's BN: the few rows
    of A) in proportion to its width, from the narrowest measured tile with the same rows (an estimate: memory, not
    the tensor cores, bounds those GEMMs)."""
    if (bm, bn) in MMA_EFFICIENCY:
        return MMA_EFFICIENCY[(bm, bn)]
    widths = sorted(n for m, n in MMA_EFFICIENCY if m == bm)
    below, above = [n for n in widths if n < bn], [n for n in widths if n > bn]
    if below and above:
        lo, hi = below[-1], above[0]
        share = (bn - lo) / (hi - lo)
        return MMA_EFFICIENCY[(bm, lo)] * (1 - share) + MMA_EFFICIENCY[(bm, hi)] * share
    if not below:
        return MMA_EFFICIENCY[(bm, widths[0])] * bn / widths[0]
    return MMA_EFFICIENCY[(bm, widths[-1])]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _up(x: int, m: int) -> int:
    """`x` rounded up to a multiple of `m`."""
    return _cdiv(x, m) * m


class GemmError(ValueError):
    """A GEMM that `matmul` cannot run, with the reason and what to do instead."""


@dataclass(frozen=True)
class GemmProblem:
    """One GEMM: C (M, N) = A (M, K) @ B (K, N); `a_major` / `b_major` say which extent of each operand is
    contiguous in memory (``"K"``, or ``"M"`` / ``"N"``)."""

    M: int
    N: int
    K: int
    dtype: str = "bf16"
    out: str = "bf16"
    a_major: str = "K"
    b_major: str = "K"
    #: independent products of the same shape (``bmm``): A (L, M, K), B (L, K, N), C (L, M, N)
    batch: int = 1
    #: ``"N"``: C (M, N) row-major; ``"M"``: C stored transposed, (N, M) (the kernel problem of a swap-AB plan,
    #: `swapped`)
    c_major: str = "N"

    def __post_init__(self) -> None:
        for name in ("M", "N", "K", "batch"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise GemmError(f"GEMM {name} must be a positive int, got {v!r}")
        if self.dtype not in INPUTS:
            raise GemmError(
                f"GEMM inputs in {self.dtype!r} are not built: the tensor-core GEMM takes {', '.join(INPUTS)} "
                f"(f32 tensors by bf16x3 split precision, or as {TF32!r}: matmul(..., precision='tf32'))"
            )
        if self.out not in OUTPUTS:
            raise GemmError(f"GEMM output dtype {self.out!r}: choose one of {', '.join(OUTPUTS)}")
        if self.a_major not in ("K", "M") or self.b_major not in ("K", "N") or self.c_major not in ("N", "M"):
            raise GemmError(
                f"operand layouts: a_major is 'K' or 'M', b_major 'K' or 'N', c_major 'N' or 'M'; got "
                f"{self.a_major!r}, {self.b_major!r}, {self.c_major!r}"
            )
        if self.c_major == "M" and self.batch > 1:
            raise GemmError("a transposed C (c_major 'M', swap-AB) is built for unbatched GEMMs only")
        if self.dtype == TF32 and (self.a_major, self.b_major) != ("K", "K"):
            raise GemmError(
                f"a TF32 GEMM reads both operands K-major (wgmma transposes 16-bit operands only): A (M, K) row-major "
                f"and B stored (N, K) row-major, b = w.T; got the {self.layout} layout: pass a.contiguous() and "
                "b.t().contiguous().t(), or precision='bf16x3'"
            )
        if self.dtype in FP8_INPUTS and (self.a_major, self.b_major) != ("K", "K"):
            raise GemmError(
                f"an FP8 GEMM reads both operands K-major (wgmma transposes 16-bit operands only): A (M, K) row-major "
                f"and B stored (N, K) row-major, b = w.T (the layout torch._scaled_mm takes); got the {self.layout} "
                "layout: pass a.contiguous() and b.t().contiguous().t()"
            )

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K * self.batch

    @property
    def kernel_itemsize(self) -> int:
        """Bytes of an operand element as the tensor-core kernel reads it: 2 for f32's split-precision bf16 parts."""
        return 2 if self.dtype == "f32" else dtype_of(self.dtype).itemsize

    @property
    def block_k(self) -> int:
        """The K-block of the kernel that runs this problem: one 128-byte swizzle span of its operands' elements (64
        of a 16-bit type, and of f32's split-precision bf16 parts; 128 of FP8)."""
        return 128 // self.kernel_itemsize

    @property
    def alignment(self) -> int:
        """Elements per 16 bytes of an operand as TMA reads it (TMA's row strides are multiples of 16 bytes)."""
        return 16 // self.kernel_itemsize

    @property
    def c_columns(self) -> int:
        """The contiguous extent of C (its rows' length in memory): N, or M where C is stored transposed."""
        return self.N if self.c_major == "N" else self.M

    @property
    def layout(self) -> str:
        """The BLAS name of the layout: N where the operand is stored as the product reads it (A M-by-K row-major,
        B K-by-N row-major), T where it is stored transposed."""
        return ("N" if self.a_major == "K" else "T") + ("N" if self.b_major == "N" else "T")


@dataclass(frozen=True)
class GemmConfig:
    """A configuration of the persistent Hopper GEMM (the kernel's parameters of the same names)."""

    BM: int
    BN: int
    CONSUMERS: int
    STAGES: int
    SPLITS: int = 1
    EPILOGUE: str = "direct"
    GROUP: int = 8
    BK: int = BK
    #: > 1: a split tail (`argus.kernels.gemm.gemm_persistent_split_tail`): the tiles of the whole waves whole, the
    #: last partial wave's tiles split TAIL ways along K
    TAIL: int = 1
    #: swap-AB: the kernel computes C^T = B^T A^T (the weight's rows fill the BM-row tiles, the few rows of A the
    #: BN columns) and stores it transposed into C (`swapped`; docs/gemm.md, "Swap-AB")
    SWAP: bool = False
    #: copy the operands into buffers whose rows are `PITCH_BYTES` apart first (`padded_extent(pitch=True)`): where
    #: a row pitch is a multiple of 16 bytes but not of `PITCH_BYTES`, TMA reads it at a fraction of the rate
    PITCH: bool = False
    #: 2: the blocks run in 2-block clusters that share B (`gemm_warp_specialized_persistent`'s CLUSTER: each B block
    #: read from L2 once for two row tiles, through multicast TMA loads); not with a split tail or a batch
    CLUSTER: int = 1
    #: with SPLITS > 1: the reduction in the GEMM kernel (`argus.kernels.gemm.gemm_split_fused`: a tile's units meet at
    #: a group barrier and `reducers()` of them each sum their rows of every slice), not a second launch; one wave of
    #: units only (`fuse_refusal`). None (the default): the plan decides (True in its `GemmPlan.config` where
    #: `fuse_refusal` allows and `FUSE_SPLITS` is on, else None); True: fused or refused; False: never (A/B)
    FUSE: bool | None = None

    @property
    def label(self) -> str:
        split = f" split{self.SPLITS}" if self.SPLITS > 1 else ""
        tail = f" tail{self.TAIL}" if self.TAIL > 1 else ""
        swap = " swap" if self.SWAP else ""
        pitch = " pitch" if self.PITCH else ""
        cluster = f" cluster{self.CLUSTER}" if self.CLUSTER > 1 else ""
        fuse = " fused" if self.FUSE else ""
        return (
            f"{self.BM}x{self.BN}x{self.BK} s{self.STAGES} c{self.CONSUMERS}{split}{tail} {self.EPILOGUE}{swap}{pitch}"
            f"{cluster}{fuse}"
        )

    def reducers(self) -> int | None:
        """How many units of a tile sum its slices in the fused split-K (`gemm_split_fused`'s REDUCERS): the most,
        at most SPLITS, that divide BM into shares of whole 4-element vectors for every consumer thread (each sums
        BM / reducers rows); None where no count does."""
        return gemm.split_reducers(self.BM, self.BN, self.SPLITS, self.CONSUMERS * 128)

    def tail_tiles(self, problem: GemmProblem, target: Target = DEFAULT_TARGET) -> tuple[int, int]:
        """(tiles of the whole waves, tiles of the tail) of a split tail on `problem` (BLOCKS = the target's SMs)."""
        tiles = _cdiv(problem.M, self.BM) * _cdiv(problem.N, self.BN)
        rest = tiles % target.sms
        return tiles - rest, rest

    def stored(self, problem: GemmProblem) -> str:
        """The dtype the main kernel stores: `problem`'s output, or f32 slices of the workspace with a split."""
        return "f32" if self.SPLITS > 1 else problem.out

    def blocks(self, problem: GemmProblem, target: Target = DEFAULT_TARGET) -> int:
        """The kernel's BLOCKS: one per SM; for a batch, per matrix: about one per SM in all (every matrix's blocks
        at once, persistent), or one per tile where the batch's operands exceed `BATCH_L2_FACTOR` times the L2 (the
        blocks then start in matrix order, so those running at a time share a few matrices in L2)."""
        if problem.batch == 1:
            return target.sms
        operands = problem.batch * (problem.M + problem.N) * problem.K * dtype_of(problem.dtype).itemsize
        if operands > BATCH_L2_FACTOR * target.l2_bytes:
            return _cdiv(problem.M, self.BM) * _cdiv(problem.N, self.BN)
        return max(1, target.sms // problem.batch)

    def kernel_params(self, problem: GemmProblem, target: Target = DEFAULT_TARGET) -> dict[str, Any]:
        """The main kernel's trace parameters for `problem`."""
        params: dict[str, Any] = {
            "BM": self.BM,
            "BN": self.BN,
            "BK": self.BK,
            "STAGES": self.STAGES,
            "CONSUMERS": self.CONSUMERS,
            "IN": kernel_input(problem.dtype),
            "OUT": self.stored(problem),
            "A_MAJOR": problem.a_major,
            "B_MAJOR": problem.b_major,
            "BLOCKS": self.blocks(problem, target),
            "ORDER": "grouped",
            "GROUP": self.GROUP,
            "EPILOGUE": self.EPILOGUE,
            "SPLITS": self.SPLITS,
        }
        if problem.batch > 1:
            params["BATCH"] = True
        if problem.c_major == "M":
            params["C_MAJOR"] = "M"
        if self.CONSUMERS != 2:  # the registers the kernel's default (two consumer warpgroups) does not give
            params.update(CONSUMER_REGS=consumer_registers(self.CONSUMERS))
        if self.TAIL > 1:  # the whole waves' tiles only
            params["PART"] = "whole"
        if self.CLUSTER > 1:
            params["CLUSTER"] = self.CLUSTER
        return params

    def tail_params(self, problem: GemmProblem, target: Target = DEFAULT_TARGET) -> dict[str, Any] | None:
        """`gemm_persistent_split_tail`'s parameters, or None without a split tail."""
        if self.TAIL == 1:
            return None
        params = self.kernel_params(problem, target)
        for name in ("OUT", "EPILOGUE", "SPLITS", "PART"):
            del params[name]
        params["TAIL"] = self.TAIL
        return params

    def reduce_params(self, problem: GemmProblem, target: Target = DEFAULT_TARGET) -> dict[str, Any] | None:
        """`gemm_split_reduce`'s parameters (`gemm_tail_reduce`'s for a split tail), or None without a split."""
        if self.TAIL > 1:  # the tail's tiles walked as the main kernels walk them
            walk = self.kernel_params(problem, target)
            shared = {k: walk[k] for k in ("BM", "BN", "BLOCKS", "ORDER", "GROUP")}
            return {"TAIL": self.TAIL, "OUT": problem.out, **shared}
        if self.SPLITS == 1 or self.FUSE:
            return None
        return {"SPLITS": self.SPLITS, "BN": REDUCE_BN, "OUT": problem.out}


#: A batched GEMM runs one tile per block, in matrix order, where its operands exceed this many times the L2
#: (`GemmConfig.blocks`). Measured on an H200 (benchmarks/results/2026-12-01-bmm-tma/, call 2), bf16: operands of
#: 128-671 MB ran 0.78-0.82x -> 0.89-0.93x torch.bmm with one tile per block (128x512x2048x1024: 0.45x -> 0.88x),
#: of 67-75 MB 0.93-0.97x persistent and 0.80-0.90x one tile per block; f32's split-precision operands (134 MB and
#: up) faster one tile per block at every shape (1.64x -> 2.71x strict-fp32 torch.bmm at KernelBench's size).
BATCH_L2_FACTOR = 2

#: Columns per block of the split-K reduction (4 per thread).
REDUCE_BN = 512
#: ... and of a reducing epilogue's split-K reduction: one warp a row, so that each row's partial is a warp's
#: reduction, and REDUCE_ROWS rows a block (128 threads).
REDUCE_ROW_BN = 128
REDUCE_ROWS = 4
#: A reducing epilogue is planned on every fused tile (`FUSED_TILES`) although at 128 x 256 its index masks spill
#: (ptxas: 136 spill stores for a sigmoid + sum, once per tile, after the main loop): measured on an H100
#: (benchmarks/results/2026-12-06-gemm-reduce/, call 2) against the same plan on tiles of BN <= 128
#: (`EPILOGUE_TILES`, where it does not spill), the wide plans were 1.07-1.51x faster at 9 of 10 shapes (1024x8192x8192
#: f32 logsumexp 1.131 -> 0.919 ms, 4096x32000x4096 bf16 logsumexp 1.741 -> 1.492 ms), 0.98x at one (8x128256x4096,
#: 64x256 against 64x128). Off: the narrower tiles (an A/B switch; the benchmark times both).
REDUCE_WIDE_TILES = True

#: A split plan sums its slices in the GEMM kernel where it can (`GemmConfig.FUSE` None: `fuse_refusal`), instead of a
#: second launch. Measured on an H100 (benchmarks/results/2026-12-05-gemm-fused/, call 2), each plan against its own
#: configuration's two-launch form in the same process: faster at all 14 shapes tried (the split shapes of the issue's
#: suites and ten drawn at random), +0.1 to +19 % (241x248x16960 0.720 -> 0.857x cuBLAS, 404x168x15152 0.750 ->
#: 0.843, 128x4096x4096 0.865 -> 0.904, 512x512x65536 0.908 -> 0.915). Only where the GEMM is the call's first
#: launch: its cooperative launch (`argus.runtime.loaded.COOPERATIVE_LAUNCHES`) after the copies into padded operands
#: cost 1.8 us at 83x880x964 (calls 6-8: 0.87 two launches, 0.80 fused). A switch for A/B measurements.
FUSE_SPLITS = True
#: Whether the plan also fuses where only some of a tile's units sum it (`GemmConfig.reducers` below SPLITS: 3, 6 or
#: 12 splits, 128x128 in 32): off until measured. That form of `gemm_split_fused` (session 61) is correct on the
#: interpreter and verified, but no GPU was lent in the session that built it; an explicit ``FUSE=True`` takes it
#: (`benchmarks/results/2026-12-05-gemm-l2-split/call1.sh` with ``SET=b`` times it against the two launches).
FUSE_PARTIAL = False

#: Split plans store their f32 slices of the workspace through TMA stores (shared-memory staging, 3-D boxes of
#: (S, M, N) at the unit's slice, drained while the block moves on) where the tile's columns are whole store chunks,
#: instead of directly from registers. Measured on an H100 (benchmarks/results/2026-12-05-gemm-ncu/, call 1):
#: 512x512x65536 128x256 split16 in 2-block clusters 0.890 -> 0.909x cuBLAS (its GEMM kernel alone 2.8 % faster:
#: 128 KB of f32 per block), 128x128 split8 unchanged (0.929x). A switch for A/B measurements
#: (`benchmarks/gemm_shapes.py --split-direct`).
SPLIT_TMA_STORE = True

#: `prepare` launches a plan's kernels as programmatic dependents (`argus.runtime.loaded.PreparedLaunch.dependent`):
#: each may start while the one before it finishes, and waits for it before touching memory. A switch for A/B
#: measurements (`benchmarks/gemm_shapes.py --dependent-ab`).
DEPENDENT_LAUNCHES = True


def consumer_registers(consumers: int) -> int:
    """The consumer warpgroups' ``setmaxnreg`` budget: what the register file leaves after the producer's (the
    kernel's PRODUCER_REGS per thread), split over the consumers, rounded down to a multiple of 8 and capped at what
    one thread can address."""
    producer = gemm.gemm_warp_specialized_persistent.defaults["PRODUCER_REGS"]
    return atoms_consumer_registers(WARPGROUP_SIZE * (1 + consumers), consumers, 1, producer)


def operand_pitches(problem: GemmProblem) -> tuple[int, int]:
    """The elements between consecutive rows of A and of B as the kernel reads them (their contiguous extents: K
    for a K-major operand, M for an M-major A, N for an N-major B)."""
    return (problem.K if problem.a_major == "K" else problem.M, problem.K if problem.b_major == "K" else problem.N)


def misaligned_pitch(problem: GemmProblem) -> bool:
    """Whether an operand's rows are a multiple of 16 bytes apart (TMA can address them) but not of `PITCH_BYTES`
    (TMA reads them slower: `MISALIGNED_PITCH_FACTOR`)."""
    size = problem.kernel_itemsize
    pitches = [p * size for p in operand_pitches(problem)]
    if any([p % 16 for p in pitches]):  # copied anyway (`padded_extent`), to whole `PITCH_BYTES`
        return False
    return any([p % PITCH_BYTES for p in pitches])


def padded_extent(problem: GemmProblem, pitch: bool = False) -> GemmProblem:
    """The problem TMA can address: every operand's contiguous extent rounded up to a multiple of 16 bytes (8
    elements of a 16-bit type, 16 of FP8), and to `PITCH_BYTES` wherever one must be copied anyway or with `pitch`
    (the copy then costs the same and the rows are read at full rate). Equal to `problem` when nothing is padded."""
    size = problem.kernel_itemsize
    copied = pitch or any([p * size % 16 for p in operand_pitches(problem)])
    align = PITCH_BYTES // size if copied else problem.alignment
    k = _up(problem.K, align) if "K" in (problem.a_major, problem.b_major) else problem.K
    m = _up(problem.M, align) if problem.a_major == "M" else problem.M
    n = _up(problem.N, align) if problem.b_major == "N" else problem.N
    return replace(problem, M=m, N=n, K=k)


def copy_seconds(problem: GemmProblem, padded: GemmProblem, target: Target = DEFAULT_TARGET) -> float:
    """The time of copying `problem`'s operands into `padded`'s zero-padded buffers (each operand that changes
    read once and written padded, one launch each)."""
    size = dtype_of(problem.dtype).itemsize
    seconds = 0.0
    for (p_rows, p_cols), (q_rows, q_cols) in zip(operand_shapes(problem), operand_shapes(padded), strict=True):
        if (p_rows, p_cols) != (q_rows, q_cols):
            moved = (p_rows * p_cols + q_rows * q_cols) * size * problem.batch
            seconds += moved / (target.hbm_gbs * 1e9 * COPY_EFFICIENCY) + COPY_LAUNCH_S
    return seconds


def operand_shapes(problem: GemmProblem) -> tuple[tuple[int, int], tuple[int, int]]:
    """(rows, columns) of A and of B as stored (the columns contiguous)."""
    a = (problem.M, problem.K) if problem.a_major == "K" else (problem.K, problem.M)
    b = (problem.N, problem.K) if problem.b_major == "K" else (problem.K, problem.N)
    return a, b


def kernel_problem(problem: GemmProblem) -> GemmProblem:
    """The 16-bit GEMM the persistent kernel runs for `problem`: `problem` itself for bf16 and f16 inputs; for f32
    inputs, split precision (`argus.kernels.gemm.split_bf16x3`): a bf16 GEMM over K' = 3P, P = K rounded up to the
    K-block, each operand's hi and lo parts concatenated along K, C in f32 (or the problem's output dtype). An M- or
    N-major operand's contiguous extent is rounded up to 8 there (the split writes the padding)."""
    if problem.dtype != "f32":
        return problem
    m = _up(problem.M, 8) if problem.a_major == "M" else problem.M
    n = _up(problem.N, 8)  # B's rows or columns: TMA's alignment, and split-K's workspace rows (`F32_CHAIN`)
    return replace(problem, M=m, N=n, K=3 * _up(problem.K, BK), dtype="bf16")


def unbatched(problem: GemmProblem) -> bool:
    """Whether a batched problem runs as one 2-d product per matrix (`member`): an f32 batch whose K would
    accumulate more than `F32_CHAIN` in one tensor-core accumulator needs split-K for f32 accuracy, which the
    batched GEMM does not have; each matrix's 2-d plan splits K (a launch or more per matrix)."""
    return problem.batch > 1 and problem.dtype == "f32" and 3 * _up(problem.K, BK) > F32_CHAIN


def member(problem: GemmProblem) -> GemmProblem:
    """One matrix's product of a batched problem (`unbatched`)."""
    return replace(problem, batch=1)


def swapped(problem: GemmProblem) -> GemmProblem:
    """The swap-AB form of `problem`: C^T (N, M) = B^T (N, K) @ A^T (K, M), C^T stored transposed (`c_major`), so
    that the kernel writes the user's C. Each operand keeps its memory: B^T is A's role (K-major where B is stored
    (N, K), the weight of ``x @ w.T``), A^T is B's."""
    return replace(
        problem,
        M=problem.N,
        N=problem.M,
        a_major="K" if problem.b_major == "K" else "M",
        b_major="K" if problem.a_major == "K" else "N",
        c_major="M" if problem.c_major == "N" else "N",
    )


def swap_refusal(problem: GemmProblem) -> str | None:
    """Why `problem` has no swap-AB plan, or None where it may have one."""
    if problem.dtype not in ("bf16", "f16"):
        return f"swap-AB is built for bf16 and f16 inputs, not {problem.dtype}"
    if problem.batch > 1 or problem.c_major != "N":
        return "swap-AB is built for unbatched GEMMs whose C is row-major"
    return None


def swap_tiles(problem: GemmProblem) -> tuple:
    """The tile shapes of `problem`'s swap-AB plans, or () where none applies: a 16-bit unbatched GEMM with at most
    `SWAP_MAX_M` rows of A. BN is M rounded up to wgmma's step of 8 where A is row-major (its rows become B's, read
    K-major), to the 64-column panel where A is a transposed view; BM 128 with two consumer warpgroups, and 64 with
    one: twice the tiles, so one wave without a split where the 128-row tile needs two (with K-blocks of 64 the
    64-row tile was 5-15 % slower at every shape measured; with the wide K-blocks it is what `swap_choice` takes
    there: 96x7168x7168 0.892 -> 0.960x cuBLAS, 64x8192x8192 0.964 -> 1.005x, benchmarks/results/2026-12-01-wide-k/
    call 5)."""
    if swap_refusal(problem) is not None or problem.M > SWAP_MAX_M:
        return ()
    # A stored (K, M) (a transposed view) is an N-major B operand there: staged in whole 64-column panels
    bn = _up(problem.M, 8 if problem.a_major == "K" else 64)
    return ((128, bn, 2), (64, bn, 1))


@dataclass(frozen=True)
class SplitStep:
    """One `split_bf16x3` launch of an f32 plan: operand `name` (``"A"`` or ``"B"``) as stored (`stored`: its
    shape), the split's parameters, and Y's shape (3-D, as the split writes it) and the 2-D view the GEMM reads."""

    name: str
    stored: tuple[int, ...]
    params: dict[str, Any]
    y_shape: tuple[int, ...]
    gemm_shape: tuple[int, ...]


def split_vector(columns: int) -> int:
    """`split_bf16x3`'s VEC for an operand stored with `columns` columns: the widest load (4, 2 or 1 f32) its rows'
    alignment allows."""
    return 4 if columns % 4 == 0 else 2 if columns % 2 == 0 else 1


def split_steps(problem: GemmProblem) -> list[SplitStep]:
    """The split launches of an f32 problem (none for 16-bit inputs)."""
    if problem.dtype != "f32":
        return []
    p = _up(problem.K, BK)
    steps = []
    q = kernel_problem(problem)
    for name, major, other, padded in (("A", problem.a_major, problem.M, q.M), ("B", problem.b_major, problem.N, q.N)):
        if major == "K":  # stored (other, K): split along its columns, rows of zeros up to the padded extent
            stored, axis = (other, problem.K), 1
            y_shape, gemm_shape = (padded, 3, p), (padded, 3 * p)
        else:  # stored (K, other): split along its rows, the columns padded
            stored, axis = (problem.K, other), 0
            y_shape, gemm_shape = (3, p, padded), (3 * p, padded)
        vec = split_vector(stored[1])
        params = {"AXIS": axis, "OPERAND": name, "VEC": vec}
        if axis == 0 and -(-padded // 64) > MAX_GRID_Y:  # the column blocks are the grid's y axis: wider blocks
            bc, br = 64, 16
            while -(-padded // bc) > MAX_GRID_Y:
                bc *= 2
            while br * bc // vec > 1024:
                br //= 2
            params.update({"BC": bc, "BR": br})
        if problem.batch > 1:  # a batch of matrices, split alike
            lead = (problem.batch,)
            stored, y_shape, gemm_shape = (*lead, *stored), (*lead, *y_shape), (*lead, *gemm_shape)
            params["BATCH"] = True
        steps.append(SplitStep(name, stored, params, y_shape, gemm_shape))
    return steps


@dataclass(frozen=True)
class PadStep:
    """One `pad_copy` launch of a plan: operand `operand` (0: A, 1: B) as stored (`stored`: its shape) copied into
    a zero-padded buffer of shape `padded`, with the kernel's parameters."""

    operand: int
    stored: tuple[int, ...]
    padded: tuple[int, ...]
    params: dict[str, Any]


def pad_steps(problem: GemmProblem, padded: GemmProblem) -> list[PadStep]:
    """The copies of `problem`'s operands (16-bit or FP8, as the kernel reads them) into `padded`'s buffers: one per
    operand whose stored shape changes. Each takes the widest access (16 bytes at most) that divides both row
    lengths, and each thread 16 bytes of accesses (several where they are narrower)."""
    steps = []
    lead = (problem.batch,) if problem.batch > 1 else ()
    size = problem.kernel_itemsize
    for i, (stored, wanted) in enumerate(zip(operand_shapes(problem), operand_shapes(padded), strict=True)):
        if stored == wanted:
            continue
        vec = max([v for v in (16, 8, 4, 2, 1) if v * size <= 16 and stored[1] % v == 0 and wanted[1] % v == 0])
        # 256 threads, each 16 bytes of accesses: one 16-byte access, or several narrower ones (rows 2 bytes off any
        # 16-byte boundary: an odd K of bf16); one access a thread left a 512-byte block at 2-byte accesses
        per = max(1, 16 // (vec * size))
        params = {"DT": kernel_input(problem.dtype), "VEC": vec, "BR": 4 * per, "BC": 64 * vec, "PER_THREAD": per}
        if lead:
            params["BATCH"] = True
        steps.append(PadStep(i, (*lead, *stored), (*lead, *wanted), params))
    return steps


def shared_bytes(config: GemmConfig, problem: GemmProblem) -> int:
    """Shared memory a configuration takes: its operand stages, the TMA-store staging buffers, the barriers."""
    in_bytes = dtype_of(problem.dtype).itemsize
    stages = config.STAGES * (config.BM + config.BN) * config.BK * in_bytes
    out = dtype_of(config.stored(problem))
    staging = 2 * config.BM * store_chunk_columns(out) * out.itemsize if config.EPILOGUE == "tma" else 0
    return stages + staging + 2 * config.STAGES * 8 + 1024  # mbarriers, and the alignment pad of the carve


def candidates(
    problem: GemmProblem,
    target: Target = DEFAULT_TARGET,
    *,
    chain: int | None = None,
    tiles: tuple = TILES,
    waves: bool = True,
) -> list[GemmConfig]:
    """Every configuration the heuristic may pick for `problem`: each tile shape with the deepest pipeline that
    fits, each split count that leaves every split `MIN_K_BLOCKS_PER_SPLIT` K-blocks, and the TMA-store epilogue
    where it applies. `chain`: the most K elements one unit may accumulate in the tensor cores (f32 accuracy:
    `F32_CHAIN`); split counts that leave a unit more are left out, larger ones (`CHAIN_SPLITS`) added. `tiles`:
    the tile shapes to consider (default `TILES`); `waves`: also those narrowed to fill the SMs' waves
    (`wave_tiles`)."""
    out = dtype_of(problem.out)
    bk = problem.block_k
    k_tiles = _cdiv(problem.K, bk)
    wide = chain is None and problem.kernel_itemsize == 2  # 16-bit: K-blocks of two spans (`WIDE_K_MIN_STAGES`)
    # TMA stores of C (M, N) row-major (a batch's (L, M, N): 3-D boxes at a fixed matrix index)
    tma_store = problem.N * out.itemsize % 16 == 0 and problem.c_major == "N"
    split_tma = SPLIT_TMA_STORE and problem.c_major == "N"  # a swap-AB plan's transposed slices: direct stores
    split_chunk = store_chunk_columns(dtype_of("f32"))
    counts = SPLITS
    if chain is not None:
        least = _cdiv(k_tiles, max(1, chain // bk))  # the fewest splits that keep every unit within the chain
        counts = tuple(sorted({least, *[s for s in (*SPLITS, *CHAIN_SPLITS) if s >= least]}))
    if problem.batch > 1:  # a batched GEMM does not split K
        if counts[0] > 1:
            raise GemmError(
                f"a batched f32 GEMM with K = {problem.K // 3} would accumulate more than {F32_CHAIN // 3} elements "
                "of K in one tensor-core accumulator (f32 accuracy needs split-K, which the batched GEMM does not "
                "have yet)"
            )
        counts = (1,)
    found = []
    chunk = store_chunk_columns(out)
    fitted = tiles + fitted_tiles(problem, tiles)
    for bm, bn, consumers in fitted + (wave_tiles(problem, fitted, target) if waves else ()):
        for splits in counts:
            if splits > 1 and (_cdiv(k_tiles, splits) < MIN_K_BLOCKS_PER_SPLIT or problem.c_columns % 4):
                continue  # too few K-blocks per split, or workspace rows not in whole 16-byte vectors
            if splits == 1:
                epilogue = "tma" if tma_store and bn % chunk == 0 else "direct"
            else:  # f32 slices of the workspace (S, M, N)
                epilogue = "tma" if split_tma and bn % split_chunk == 0 else "direct"
            config = deepest(GemmConfig(bm, bn, consumers, MAX_STAGES, splits, epilogue, BK=bk), problem)
            if config is None:
                continue
            if wide and _cdiv(k_tiles, splits) >= MIN_K_BLOCKS_PER_SPLIT:  # a short K: half-empty wide blocks
                config = deepest(replace(config, BK=2 * bk, STAGES=MAX_STAGES), problem, WIDE_K_MIN_STAGES) or config
            found.append(config)
            if splits == 1 and counts[0] == 1:
                found.extend(tail_candidates(problem, found[-1], k_tiles, target))
    return found


def fitted_tiles(problem: GemmProblem, tiles: tuple) -> tuple:
    """Tiles of `tiles` narrowed to `problem`'s columns: where N is not close to a multiple of a tile's BN (the last
    column tile more than `FIT_WASTE` of N empty: N = 272 on 256-column tiles computes 512 columns), the same count of
    column tiles made as narrow as N allows, BN rounded up to 32 (the direct store's lane exchange writes 16-byte
    vectors from there; at wgmma's own step of 8 it stores 2-byte elements, and measured slower: 16384x200x1024
    128x200 0.83x cuBLAS, 128x224 0.96x, benchmarks/results/2026-12-02-gemm-tiles/ call 3), to the 64-column panel
    where B is N-major (its stages are loaded in whole panels). None that `tiles` already has."""
    found: list[tuple[int, int, int]] = []
    for bm, bn, consumers in tiles:
        count = _cdiv(problem.N, bn)
        if count * bn - problem.N <= FIT_WASTE * problem.N:
            continue
        step = 64 if problem.b_major == "N" else 32
        fit = _up(_cdiv(problem.N, count), step)
        if fit < bn and (bm, fit, consumers) not in (*tiles, *found):
            found.append((bm, fit, consumers))
    return tuple(found)


def wave_tiles(problem: GemmProblem, tiles: tuple, target: Target = DEFAULT_TARGET) -> tuple:
    """Tiles of `tiles` narrowed to fill the SMs: where a tile's count leaves SMs idle in the waves it takes (768 x
    1536 on 64x256 tiles: 72 tiles, 55 % of an H200's SMs), the narrowest BN that keeps those waves (64x160: 120),
    rounded up to 32 as `fitted_tiles` rounds (64 where B is N-major). The model ranks them against the tile they
    narrow: a narrower wgmma is less efficient (`MMA_EFFICIENCY`). Measured on an H200 (benchmarks/results/
    2026-12-04-gemm-cluster-small/, call 3): 768x1536x1024 0.84 -> 0.95x cuBLAS on 64x160; 640x2560x2048 slower on
    64x224 (0.88 against 0.93x on 64x256, which the efficiencies fitted there keep). None that `tiles` already has."""
    if not WAVE_FIT:
        return ()
    found: list[tuple[int, int, int]] = []
    step = 64 if problem.b_major == "N" else 32
    for bm, bn, consumers in tiles:
        rows = _cdiv(problem.M, bm) * problem.batch
        waves = _cdiv(rows * _cdiv(problem.N, bn), target.sms)
        most = waves * target.sms // rows  # column tiles per row of tiles within those waves
        if most <= _cdiv(problem.N, bn):
            continue
        fit = _up(_cdiv(problem.N, most), step)
        if fit < bn and (bm, fit, consumers) not in (*tiles, *found):
            found.append((bm, fit, consumers))
    return tuple(found)


def deepest(config: GemmConfig, problem: GemmProblem, least: int = 2) -> GemmConfig | None:
    """`config` with the most stages (at most its own, at least `least`) whose shared memory fits
    `SHARED_MEMORY_BUDGET`; None where not even `least` fit."""
    for stages in range(config.STAGES, least - 1, -1):
        deeper = replace(config, STAGES=stages)
        if shared_bytes(deeper, problem) <= SHARED_MEMORY_BUDGET:
            return deeper
    return None


def tail_candidates(problem: GemmProblem, whole: GemmConfig, k_tiles: int, target: Target) -> list[GemmConfig]:
    """The split tails of an unsplit configuration `whole`: where its tiles take more than one wave and the last is
    partial, each split count (`SPLITS`) that leaves every split `MIN_K_BLOCKS_PER_SPLIT` K-blocks and keeps the tail
    within two waves (unbatched, N a multiple of 4: the reduction's 16-byte rows)."""
    whole_tiles, rest = whole.tail_tiles(problem, target)
    if problem.batch > 1 or problem.c_major != "N" or problem.N % 4 or whole_tiles == 0 or rest == 0:
        return []
    if whole.BN % 32:  # the tail reduction's blocks are rows of BN / 4 threads, in whole warps
        return []
    return [
        replace(whole, TAIL=s)
        for s in SPLITS[1:]
        if _cdiv(k_tiles, s) >= MIN_K_BLOCKS_PER_SPLIT and rest * s <= 2 * target.sms
    ]


def estimate(problem: GemmProblem, config: GemmConfig, target: Target = DEFAULT_TARGET) -> float:
    """Seconds `config` is expected to take on `target` (a model for ranking configurations, not a prediction to
    report). The main kernel takes the longer of the time its busiest SM needs (whole waves of units, each unit the
    longer of its tensor-core time and the time to stream its operands, plus its stores where they are not
    overlapped) and the time to move what must cross device memory at least once. A unit's operands come from
    device memory in the share `unique / streamed` (the rest hits in L2), at the rate one SM's pipeline can keep
    in flight (Little's law: the bytes of its stages over `HBM_LATENCY_S`), and from L2 at the SM's share of the
    L2 bandwidth. A split adds the reduction kernel: the workspace read once, C written once, and a launch. A split
    tail runs the whole waves' tiles, then the tail's units (a second launch), then its reduction. A swap-AB
    configuration (`GemmConfig.SWAP`) is estimated on the `swapped` problem it runs. Where an operand's rows are 16
    bytes but not `PITCH_BYTES` apart (`misaligned_pitch`), the main loop takes `MISALIGNED_PITCH_FACTOR` times longer,
    unless the configuration copies the operands to whole pitches first (`GemmConfig.PITCH`: the copies' time added,
    `copy_seconds`)."""
    if config.PITCH:  # the copies into rows `PITCH_BYTES` apart, then the product of the padded operands
        padded = padded_extent(problem, pitch=True)
        return copy_seconds(problem, padded, target) + estimate(padded, replace(config, PITCH=False), target)
    slower = MISALIGNED_PITCH_FACTOR if not config.SWAP and misaligned_pitch(problem) else 1.0
    return _estimate(problem, config, target, slower)


def _estimate(problem: GemmProblem, config: GemmConfig, target: Target, slower: float) -> float:
    """`estimate` of a configuration that reads the operands where they are, its main loop `slower` times longer."""
    if config.SWAP and problem.c_major == "N":
        problem = swapped(problem)
    sms = target.sms
    in_bytes = dtype_of(problem.dtype).itemsize
    out_bytes = dtype_of(problem.out).itemsize
    m, n, k = problem.M, problem.N, problem.K
    splits = config.SPLITS
    tiles = _cdiv(m, config.BM) * _cdiv(n, config.BN) * problem.batch
    peak = (
        target.dense_fp8_tensor_tflops
        if problem.dtype in FP8_INPUTS
        else (target.dense_tf32_tensor_tflops if problem.dtype == TF32 else target.dense_tensor_tflops)
    )
    per_sm_flops = peak * 1e12 / sms * mma_efficiency(config.BM, config.BN)
    per_sm_l2 = target.l2_gbs * 1e9 / sms
    hbm = target.hbm_gbs * 1e9 * HBM_EFFICIENCY
    rows, cols = min(config.BM, m), min(config.BN, n)  # what TMA fetches: nothing past the operands' ends
    operands = (m * k + n * k) * in_bytes * problem.batch
    in_flight = config.STAGES * (rows + cols) * config.BK * in_bytes
    per_sm_hbm = min(per_sm_l2, in_flight / HBM_LATENCY_S)

    def unit_time(k_split: int, units: int, stored: int, overlapped: bool) -> float:
        """One unit of `k_split` K elements among `units` like it, storing `stored` bytes per element of C."""
        unit_bytes = (rows + cols) * k_split * in_bytes
        from_hbm = min(1.0, operands / (units * unit_bytes))
        unit_stream = unit_bytes * (from_hbm / per_sm_hbm + (1 - from_hbm) / per_sm_l2)
        unit_compute = 2 * config.BM * config.BN * k_split / per_sm_flops
        unit_store = rows * cols * stored / per_sm_l2 * (EPILOGUE_OVERLAP if overlapped else 1.0)
        return max(unit_compute, unit_stream) * slower + unit_store

    def main_time(busiest: float, unique: float) -> float:
        # near the memory floor the SMs contend for it: a soft maximum, not a hard one, so that the configuration with
        # more headroom below the floor ranks first
        floor = unique / hbm
        return (busiest**CONTENTION + floor**CONTENTION) ** (1 / CONTENTION) + LAUNCH_S

    k_split = _cdiv(_cdiv(k, config.BK), splits) * config.BK  # K elements per unit
    if config.TAIL > 1:
        whole_tiles, rest = config.tail_tiles(problem, target)
        k_tail = _cdiv(_cdiv(k, config.BK), config.TAIL) * config.BK
        tail_units = rest * config.TAIL
        whole = whole_tiles // sms * unit_time(k, tiles, out_bytes, config.EPILOGUE != "direct")
        tail = _cdiv(tail_units, sms) * unit_time(k_tail, tail_units, 4, False)
        work = rest * config.BM * config.BN * 4 * config.TAIL  # the tail's partial products, written and read
        unique = operands + m * n * out_bytes + work
        reduce = (work + rest * rows * cols * out_bytes) / hbm + REDUCE_LAUNCH_S
        return main_time(whole + tail, unique) + LAUNCH_S + reduce
    units = tiles * splits
    stored = dtype_of(config.stored(problem)).itemsize  # bytes per element of what the main kernel stores
    busiest = _cdiv(units, sms) * unit_time(k_split, units, stored, config.EPILOGUE != "direct")
    main = main_time(busiest, operands + m * n * stored * splits * problem.batch)
    if splits == 1:
        return main
    return main + (m * n * (4 * splits + out_bytes)) / hbm + REDUCE_LAUNCH_S


#: `choose`'s `swap` for a plan with a fused epilogue: swap-AB configurations with a split only (the split-K
#: reduction applies the epilogue, in C's own orientation; the swap kernel's transposed store applies none yet).
SWAP_SPLIT_ONLY = "split"


def candidates_for(
    problem: GemmProblem, target: Target = DEFAULT_TARGET, tiles: tuple = TILES, swap: bool | str = True
) -> list[GemmConfig]:
    """The configurations `choose` ranks for `problem` (the user's problem: f32 goes through `kernel_problem`, and the
    candidates are those of the padded extent, with f32's accumulation chain); with `swap`, also its swap-AB
    configurations (`swap_tiles`; with `SWAP_SPLIT_ONLY`, those with a split only)."""
    chain = F32_CHAIN if problem.dtype == "f32" else None
    found = candidates(padded_extent(kernel_problem(problem)), target, chain=chain, tiles=tiles)
    if pitch_refusal(problem) is None:  # the same product of copies with whole pitches
        pitched = candidates(padded_extent(problem, pitch=True), target, tiles=tiles)
        found += [replace(c, PITCH=True) for c in pitched]
    narrow = swap_tiles(problem) if swap else ()
    if narrow:
        # (not narrowed to fill waves: the swap tiles' width is A's few rows, and the one-wave swap plan was measured)
        swaps = candidates(padded_extent(swapped(problem)), target, tiles=narrow, waves=False)
        found += [replace(c, SWAP=True) for c in swaps if swap != SWAP_SPLIT_ONLY or c.SPLITS > 1]
    return found


def ranked(
    problem: GemmProblem, target: Target = DEFAULT_TARGET, tiles: tuple = TILES, swap: bool | str = True
) -> list[GemmConfig]:
    """`candidates_for(problem)` from the fastest the model expects to the slowest (what tuning measures first)."""
    q = kernel_problem(problem)
    return sorted(candidates_for(problem, target, tiles, swap), key=lambda c: estimate(q, c, target))


@functools.lru_cache(maxsize=1024)
def choose(
    problem: GemmProblem, target: Target = DEFAULT_TARGET, tiles: tuple = TILES, swap: bool | str = True
) -> GemmConfig:
    """The configuration the model ranks first for `problem` among `tiles` (default `TILES`) and, with `swap`, its
    swap-AB tiles; among those within `TIE` of the best, an unsplit one without a split tail over split ones (no
    workspace, one launch; with `TIE_FEWEST_SPLITS`, the fewest splits), then in 2-block clusters where
    `cluster_choice` measured them faster; but the best-ranked split tail of that very configuration where it is
    more than `TAIL_TWIN_MARGIN` ahead and the configuration took no cluster. Remembered per (problem, target,
    tiles, swap): a call site that repeats a shape pays the ranking once."""
    found = candidates_for(problem, target, tiles, swap)
    preferred = swap_choice(problem, found, target) if swap else None
    if preferred is not None:
        return preferred
    sixteen_bit = problem.dtype in ("bf16", "f16")  # the inputs `narrow_split` was measured on
    problem = kernel_problem(problem)
    if not found:
        raise GemmError(f"no GEMM configuration fits {problem}")  # every problem has one; a guard, not a path
    times = {c: estimate(problem, c, target) for c in found}
    best = min(times.values())
    near = [c for c in found if times[c] <= best * (1 + TIE)]

    def simpler(c: GemmConfig) -> tuple:
        return (c.SPLITS if TIE_FEWEST_SPLITS else c.SPLITS > 1, c.TAIL > 1, c.PITCH, times[c], -c.BM * c.BN)

    pick = min(near, key=simpler)
    narrow = narrow_split(problem, pick, found, target) if CLUSTERS and CLUSTER_NARROW_SPLITS and sixteen_bit else None
    chosen = narrow or cluster_choice(problem, pick, target)
    tail = min(found, key=lambda c: times[c])
    if chosen.CLUSTER == 1 and tail.TAIL > 1 and replace(tail, TAIL=1) == chosen:  # the tail of the chosen tile
        if times[tail] * (1 + TAIL_TWIN_MARGIN) < times[chosen]:
            return tail
    return chosen


def cluster_refusal(problem: GemmProblem, config: GemmConfig, target: Target = DEFAULT_TARGET) -> str | None:
    """Why `config` cannot run `problem` (the kernel's problem, `kernel_problem`) in 2-block clusters sharing B, or
    None where it can: one unsplit-tail, unbatched persistent kernel on at least two row tiles (a cluster computes
    row tiles 2 pm and 2 pm + 1)."""
    if config.TAIL > 1:
        return "a split tail's kernels do not run in clusters"
    if problem.batch > 1:
        return "a batched GEMM does not run in clusters"
    q = swapped(problem) if config.SWAP else problem
    if _cdiv(padded_extent(q, pitch=config.PITCH).M, config.BM) < 2:
        return "one row tile: the cluster's second block would have none"
    if config.blocks(problem, target) % 2:
        return "an odd number of blocks"
    return None


def cluster_choice(problem: GemmProblem, config: GemmConfig, target: Target = DEFAULT_TARGET) -> GemmConfig:
    """`config`, in 2-block clusters sharing B where they were measured faster (`CLUSTER_MIN_SPLITS`): rows 16 bytes
    past a multiple of 32 (`misaligned_pitch`: read in clusters, not copied to whole pitches first) over at least
    `CLUSTER_MIN_K_MISALIGNED`, split-K of at least `CLUSTER_MIN_SPLITS` splits, and 128-row tiles on two consumer
    warpgroups over at least `CLUSTER_MIN_WAVES` waves and `CLUSTER_MIN_K`; never where the cluster's units take
    more waves than the blocks' (`cluster_waves`), nor swap-AB, three consumer warpgroups, a split tail, f32's split
    products or FP8 inputs (not measured; `argus tune` measures the twin, `tuning_configs`)."""
    if not CLUSTERS or config.CLUSTER > 1 or config.SWAP or config.CONSUMERS == 3 or config.TAIL > 1:
        return config
    if problem.dtype == "f32" or problem.kernel_itemsize != 2:  # measured on 16-bit inputs only (not FP8)
        return config
    if misaligned_pitch(problem):
        if problem.K < CLUSTER_MIN_K_MISALIGNED:
            return config
        candidate = replace(config, CLUSTER=2, PITCH=False)
    elif config.SPLITS >= CLUSTER_MIN_SPLITS:
        candidate = replace(config, CLUSTER=2)
    else:
        tiles = _cdiv(problem.M, config.BM) * _cdiv(problem.N, config.BN)
        if (config.BM, config.CONSUMERS, config.SPLITS) != (128, 2, 1) or problem.K < CLUSTER_MIN_K:
            return config
        if tiles < CLUSTER_MIN_WAVES * target.sms:
            return config
        candidate = replace(config, CLUSTER=2)
    if cluster_refusal(problem, candidate, target) is not None or not cluster_waves(problem, candidate, target):
        return config
    return candidate


def narrow_split(
    problem: GemmProblem, config: GemmConfig, found: list[GemmConfig], target: Target = DEFAULT_TARGET
) -> GemmConfig | None:
    """For a split-K `config` of at least `NARROW_MIN_SPLITS` splits on a product of at most `NARROW_MAX_TILES` tiles
    of 128 x 128 (a small output over a long K): 128 x 128 tiles on two consumer warpgroups in 2-block clusters, K
    split into the most of `SPLITS` ways that keep the units within one wave, to be fused (the units of a tile
    summing it in the kernel), with the K-block and stages of the model's candidate of that shape. None where that
    cannot run (in clusters, in as few waves, fused with every unit summing a share of its tile) or leaves a split
    fewer than `MIN_K_BLOCKS_PER_SPLIT` K-blocks. cuBLAS's own decomposition of such products (128 x 128, split 8
    in clusters at 512x512x65536). `found`: the candidates `choose` ranked (`candidates_for`: f32's accumulation
    chain respected). Taken by `choose` with `CLUSTER_NARROW_SPLITS` for 16-bit inputs; measured in
    benchmarks/results/2026-12-05-gemm-l2-split/ (call 1)."""
    if config.SPLITS < NARROW_MIN_SPLITS or config.SWAP or config.TAIL > 1 or config.PITCH:
        return None
    q = padded_extent(problem)
    tiles = _cdiv(q.M, 128) * _cdiv(q.N, 128) * problem.batch
    fitting = [s for s in SPLITS if s > 1 and tiles * s <= target.sms]
    if tiles > NARROW_MAX_TILES or not fitting:
        return None
    splits = max(fitting)
    shape = (128, 128, 2, splits, 1, False, False)
    fit = [c for c in found if (c.BM, c.BN, c.CONSUMERS, c.SPLITS, c.TAIL, c.SWAP, c.PITCH) == shape]
    if not fit:
        return None
    narrow = replace(fit[0], CLUSTER=2)  # the model's candidate of that shape (its K-block and stages), clustered
    if cluster_refusal(problem, narrow, target) is not None:
        return None
    fused = replace(narrow, FUSE=True)  # the plan fuses it (FUSE None) wherever its call allows
    if not cluster_waves(problem, narrow, target) or fuse_refusal(problem, fused, None, target) is not None:
        return None
    if fused.reducers() != fused.SPLITS:  # measured fused with every unit summing a share (`FUSE_PARTIAL` is off)
        return None
    if _cdiv(_cdiv(problem.K, narrow.BK), narrow.SPLITS) < MIN_K_BLOCKS_PER_SPLIT:
        return None
    return narrow


def tuning_configs(problem: GemmProblem, budget: int, target: Target = DEFAULT_TARGET) -> list[GemmConfig]:
    """The `budget` configurations `argus tune` measures for `problem`: the model's choice (`choose`), the same
    configuration with the other cluster setting where the kernel can run both (`cluster_refusal`: the rule of
    `cluster_choice` is fitted to measured shapes, tuning measures it at this one), then the model's ranking
    (`ranked`)."""
    heuristic = choose(problem, target)
    first = [heuristic]
    twin = replace(heuristic, CLUSTER=1 if heuristic.CLUSTER > 1 else 2)
    if budget > 1 and cluster_refusal(kernel_problem(problem), twin, target) is None:
        first.append(twin)
    rest = [c for c in ranked(problem, target) if c not in first]
    return (first + rest)[:budget]


def cluster_waves(problem: GemmProblem, config: GemmConfig, target: Target = DEFAULT_TARGET) -> bool:
    """Whether `config` in 2-block clusters (pairs of row tiles on pairs of blocks) runs in no more waves than
    without, and leaves at most `CLUSTER_MAX_IDLE` of its tile slots empty (an odd count of row tiles gives the last
    pair's second block none). Measured (call 3 of benchmarks/results/2026-12-04-gemm-cluster/): 4160x5944x4256 on
    128x256 tiles in 7 waves of pairs against 6 of tiles 0.886 against 1.003x cuBLAS, 1072x7176x840 3 against 2
    waves 0.770 against 0.899, 176x160x1048 on 3 row tiles 0.72 against 0.76."""
    q = padded_extent(problem)
    rows, cols = _cdiv(q.M, config.BM), _cdiv(q.N, config.BN)
    pairs = _cdiv(rows, 2) * cols * config.SPLITS
    blocks = config.blocks(problem, target)
    plain = _cdiv(rows * cols * config.SPLITS, blocks)
    return _cdiv(pairs, blocks // 2) <= plain and (rows % 2 == 0 or 1 / (rows + 1) <= CLUSTER_MAX_IDLE)


def fuse_refusal(problem: GemmProblem, config: GemmConfig, epilogue: Epilogue | None = None,
                 target: Target = DEFAULT_TARGET) -> str | None:  # fmt: skip
    """Why `config` cannot run its split-K reduction in the GEMM kernel (`GemmConfig.FUSE`) on the padded `problem`,
    or None. The units of a tile wait for each other at a group barrier, so every unit needs a block of its own
    running at once: one wave of units (each block one unit, at most one block per SM)."""
    c = config
    if c.SPLITS < 2 or c.TAIL > 1:
        return "it fuses a split-K plan's reduction (SPLITS > 1, no split tail)"
    if c.SWAP or problem.c_major != "N" or problem.batch > 1:
        return "the transposed C of swap-AB and batched products are not fused"
    if epilogue is not None:
        return "a fused epilogue is applied by the reduction kernel only"
    if c.reducers() is None:
        return (
            f"no count of a tile's units divides BM ({c.BM}) into shares of {c.BN} columns that fill the "
            f"{c.CONSUMERS * 128} consumer threads' 4-element vectors: too narrow a tile"
        )
    rows = _up(_cdiv(problem.M, c.BM), c.CLUSTER)
    units = rows * _cdiv(problem.N, c.BN) * c.SPLITS
    blocks = c.blocks(problem, target)
    if units > blocks:
        return f"{units} units on {blocks} blocks: more than one wave (a tile's units must all run at once)"
    return None


def pitch_refusal(problem: GemmProblem) -> str | None:
    """Why `problem` has no `GemmConfig.PITCH` plan, or None where it may have one (16-bit or FP8 operands whose rows
    are 16 bytes but not `PITCH_BYTES` apart)."""
    if not PITCH_COPIES:
        return "switched off (PITCH_COPIES)"
    if problem.dtype == "f32":
        return "an f32 product's split pass writes its own padded operands"
    if not misaligned_pitch(problem):
        return f"the operands' rows are whole {PITCH_BYTES} bytes apart, or copied anyway"
    return None


def swap_choice(problem: GemmProblem, found: list[GemmConfig], target: Target = DEFAULT_TARGET) -> GemmConfig | None:
    """For at most `SWAP_PREFER_M` rows of A: among the swap-AB configurations in `found`, the one whose units fill
    one wave of `target`'s SMs best (the most units, then the fewest splits, at most `SWAP_MAX_SPLITS`, that keep
    tiles x splits within the SMs, and at least half of them busy: 48x1024x65536's 8 tiles x 8 splits ran at 0.74x
    cuBLAS); where even the unsplit tiles outnumber the SMs, the unsplit one of the fewest waves; None where there
    is none (the model chooses)."""
    if problem.M > SWAP_PREFER_M:
        return None
    swaps = [c for c in found if c.SWAP and c.SPLITS <= SWAP_MAX_SPLITS]
    if not swaps:
        return None
    q = swapped(problem)

    def units(c: GemmConfig) -> int:
        return _cdiv(q.M, c.BM) * _cdiv(q.N, c.BN) * c.SPLITS

    one_wave = [c for c in swaps if target.sms // 2 <= units(c) <= target.sms]
    if one_wave:
        return max(one_wave, key=lambda c: (units(c), -c.SPLITS, c.STAGES))
    # more tiles than SMs even unsplit (a tall weight): the unsplit swap tile of the fewest waves (8x28672x8192:
    # 128x8 in 1.7 waves ran 0.993x cuBLAS, the plain 64x256 tiles the model ranked first 0.901x)
    whole = [c for c in swaps if c.SPLITS == 1 and units(c) > target.sms]
    if not whole:
        return None
    return min(whole, key=lambda c: (_cdiv(units(c), target.sms), -units(c), -c.STAGES))


@dataclass(frozen=True)
class GemmPlan:
    """What a GEMM call runs: the user's problem, the 16-bit problem the GEMM kernel runs (`kernel_problem`, padded
    where TMA needs it: `padded`), the configuration, and for f32 inputs the splits that come first
    (`split_steps`). `run_on_interpreter` executes it on the CPU."""

    problem: GemmProblem
    #: the tensor-core GEMM's configuration, or a GEMV plan (`gemv_config`)
    config: GemmConfig | GemvConfig
    #: the fused epilogue (`argus.kernels.epilogue`): applied by the GEMM's store, or by the split-K reduction
    epilogue: Epilogue | None = None
    padded: GemmProblem = field(init=False)

    def __post_init__(self) -> None:
        if self.is_gemv:
            object.__setattr__(self, "padded", self.problem)
            if self.epilogue is not None:
                why = gemv_epilogue_refusal(self.problem, self.config, self.epilogue)
                if why is not None:
                    raise GemmError(f"a fused epilogue on {self.config.label}: {why}; plan it on the tensor-core GEMM")
            return
        if self.swap_ab:
            why = swap_refusal(self.problem)
            if why is None and self.epilogue is not None and self.config.SPLITS == 1:
                why = (
                    "a fused epilogue on an unsplit swap-AB plan is not built (the transposed store applies none; "
                    "with a split the reduction applies it)"
                )
            if why is not None:
                raise GemmError(f"a swap-AB configuration ({self.config.label}) on {self.problem}: {why}")
        if self.config.PITCH:
            why = "a swap-AB plan" if self.swap_ab else pitch_refusal(self.problem)
            if why is not None:
                raise GemmError(f"{self.config.label} on {self.problem}: no copy to whole pitches: {why}")
        view = swapped(self.problem) if self.swap_ab else self.problem
        object.__setattr__(self, "padded", padded_extent(kernel_problem(view), pitch=self.config.PITCH))
        wide = 2 * self.padded.block_k if self.padded.kernel_itemsize == 2 else None
        if self.config.BK not in (self.padded.block_k, wide):
            raise GemmError(
                f"a {self.problem.dtype} GEMM runs on K-blocks of {self.padded.block_k} elements (one 128-byte swizzle "
                f"span){f' or {wide} (two spans, two TMA boxes per operand and stage)' if wide else ''}, not BK = "
                f"{self.config.BK}: pass GemmConfig(..., BK={self.padded.block_k})"
            )
        if self.epilogue is not None and self.problem.batch > 1:
            raise GemmError("a fused epilogue on a batched GEMM is not built (its operands have no batch index)")
        if self.reducing:
            if self.config.TAIL > 1:
                raise GemmError(
                    f"{self.config.label}: a reducing epilogue on a split tail is not built (its pieces' partials); "
                    "use TAIL=1"
                )
            if self.config.SPLITS == 1 and self.config.EPILOGUE != "direct":  # no tile of C is stored at all
                object.__setattr__(self, "config", replace(self.config, EPILOGUE="direct"))
        if self.config.SPLITS > 1 and self.padded.c_columns % 4:
            raise GemmError(
                f"split-K ({self.config.label}) writes f32 workspace rows in whole 16-byte vectors: C's rows "
                f"({self.padded.c_columns} elements) must be a multiple of 4 long; use SPLITS=1"
            )
        if self.config.FUSE is None:  # the plan decides: fused where it can (else FUSE stays None: not fused)
            fused = replace(self.config, FUSE=True)
            # where the GEMM is the call's first launch: after copies into padded operands or the f32 split passes,
            # the cooperative launch waits for them in full (83x880x964: 1.8 us, slower than two launches)
            first = not self.needs_padding and self.problem.dtype != "f32"
            whole = FUSE_PARTIAL or fused.reducers() == fused.SPLITS  # every unit sums a share: measured
            if FUSE_SPLITS and first and whole and fuse_refusal(self.padded, fused, self.epilogue) is None:
                object.__setattr__(self, "config", fused)
        elif self.config.FUSE:
            why = fuse_refusal(self.padded, self.config, self.epilogue)
            if why is not None:
                raise GemmError(f"{self.config.label} on {self.problem}: no reduction in the GEMM kernel: {why}")

    @property
    def is_gemv(self) -> bool:
        return isinstance(self.config, GemvConfig)

    @property
    def swap_ab(self) -> bool:
        """Whether the plan runs the `swapped` problem (`GemmConfig.SWAP`; a GEMV's own SWAP is another thing)."""
        return not self.is_gemv and self.config.SWAP

    @property
    def c_shape(self) -> tuple[int, int]:
        """The shape of C (one matrix) as the GEMM kernel stores it: the padded problem's (M, N), or (N, M) where it
        is stored transposed (swap-AB: then the user's (M, N), padded)."""
        if self.is_gemv:  # (rows of the small side, columns padded to whole 16-byte vectors of f32)
            return (self.config.ROWS, _up(self.problem.M if self.config.SWAP else self.problem.N, 4))
        q = self.padded
        return (q.M, q.N) if q.c_major == "N" else (q.N, q.M)

    @property
    def is_tail(self) -> bool:
        """Whether the plan is a split tail (`GemmConfig.TAIL`)."""
        return not self.is_gemv and self.config.TAIL > 1

    @property
    def needs_padding(self) -> bool:
        """Whether the operands are copied into zero-padded buffers first (16-bit inputs TMA cannot address, or rows
        copied to whole pitches: `GemmConfig.PITCH`)."""
        view = swapped(self.problem) if self.swap_ab else self.problem  # what the kernel reads, unpadded
        return not self.is_gemv and self.problem.dtype != "f32" and self.padded != view

    @property
    def splits(self) -> list[SplitStep]:
        return [] if self.is_gemv else split_steps(self.problem)

    @property
    def pads(self) -> list[PadStep]:
        """The `pad_copy` launches that copy 16-bit or FP8 operands into zero-padded buffers first (none where the
        kernel reads them where they are)."""
        return pad_steps(swapped(self.problem) if self.swap_ab else self.problem, self.padded) if (
            self.needs_padding) else []  # fmt: skip

    def describe(self) -> dict[str, Any]:
        """The plan as data (a benchmark row records it)."""
        if self.is_gemv:
            return {
                "config": self.config.label,
                "params": asdict(self.config),
                "layout": self.problem.layout,
                "padded": False,
                "precision": self.problem.dtype,
            }
        return {
            "config": self.config.label,
            "params": asdict(self.config),
            "layout": self.problem.layout,
            "padded": self.needs_padding,
            "precision": "bf16x3" if self.problem.dtype == "f32" else self.problem.dtype,
            "estimate_us": round(estimate(kernel_problem(self.problem), self.config) * 1e6, 2),
        }

    def main_params(self, target: Target = DEFAULT_TARGET) -> tuple[tuple[str, Any], ...]:
        """The GEMM kernel's trace parameters (without the fused kernel's fixed SPLITS = 1, BATCH = False)."""
        if self.is_gemv:
            return tuple(sorted(self.config.kernel_params(self.problem).items()))
        params = self.config.kernel_params(self.padded, target)
        if self.fused_main:
            del params["SPLITS"]
            if self.reducing:
                params.update(self.reduce_cols())
        if self.config.FUSE:  # gemm_split_fused stores C itself, summed by the tile's first `reducers()` units
            params["OUT"] = self.padded.out
            if self.config.reducers() != self.config.SPLITS:
                params["REDUCERS"] = self.config.reducers()
        return tuple(sorted(params.items()))

    @property
    def fused_main(self) -> bool:
        """Whether the GEMM kernel applies the epilogue (no split; with a split the reduction does, and always on
        the GEMV kernels)."""
        return self.epilogue is not None and not self.is_gemv and self.config.SPLITS == 1

    @property
    def reducing(self) -> bool:
        """Whether the epilogue reduces each row of its result (`Epilogue.reduce`): the call's result is then the
        (M,) vector of the reductions, made from per-tile partials (`partials_shape`) by `finish_kernel`."""
        return self.epilogue is not None and self.epilogue.reduce is not None

    def reduction_columns(self) -> int:
        """The columns of C one partial of a reducing plan covers: the GEMM's tile, or the split-K reduction's."""
        return self.config.BN if self.config.SPLITS == 1 else REDUCE_ROW_BN

    def partials_shape(self) -> tuple[int, int]:
        """A reducing plan's partial results (rows of C as the kernels hold them, one column per `reduction_columns`
        of its columns), which `finish_kernel` combines."""
        rows, cols = self.c_shape
        return rows, _cdiv(cols, self.reduction_columns())

    def reduce_cols(self) -> dict[str, int]:
        """``COLS``: the product's real column count where the kernels' C is padded past it (a reducing epilogue
        masks the padding out of its rows), else nothing (the kernels' N)."""
        return {"COLS": self.problem.N} if self.c_shape[1] != self.problem.N else {}

    def finish_params(self) -> tuple[tuple[str, Any], ...] | None:
        """`gemm_reduce_partials`' parameters for a reducing plan, or None."""
        if not self.reducing:
            return None
        op = self.epilogue.reduce
        params = {"OP": op, "OUT": self.problem.out}
        if op == "mean":
            params["SCALE"] = 1.0 / self.problem.N
        return tuple(sorted(params.items()))

    def finish_kernel(self) -> Any:
        """A reducing plan's last launch: each row's partials combined (`gemm.gemm_reduce_partials`), or None."""
        params = self.finish_params()
        return None if params is None else _traced_finish(params)

    @property
    def main_kind(self) -> str:
        """Which kernel the plan's main launch is (`_loaded`'s kind)."""
        return f"gemv_{self.config.KERNEL}" if self.is_gemv else "main"

    def main_kernel(self, target: Target = DEFAULT_TARGET) -> Any:
        """The GEMM kernel (a split tail's whole waves), or None for a split tail whose tiles are all in the tail."""
        params = self.main_params(target)
        if self.is_gemv:
            return _traced_gemv(self.config.KERNEL, params)
        if self.is_tail and self.config.tail_tiles(self.padded, target)[0] == 0:
            return None
        if self.config.FUSE:
            return _traced_split_fused(params)
        return _traced_fused(self.epilogue, "main", params) if self.fused_main else _traced_main(params)

    def counters(self, target: Target = DEFAULT_TARGET) -> int:
        """How many group-barrier counters a `GemmConfig.FUSE` plan's kernel takes: one per tile, the row tiles
        rounded up to the clusters' pairs."""
        c, q = self.config, self.padded
        rows = _up(_cdiv(q.M, c.BM), c.CLUSTER)
        return rows * _cdiv(q.N, c.BN)

    def tail_kernel(self, target: Target = DEFAULT_TARGET) -> Any:
        """A split tail's `gemm_persistent_split_tail`, or None."""
        params = None if self.is_gemv else self.config.tail_params(self.padded, target)
        return None if params is None else _traced_tail(tuple(sorted(params.items())))

    def reduce_kernel(self, target: Target = DEFAULT_TARGET) -> Any:
        params = self.reduce_params(target)
        if params is None:
            return None
        kind = "tail_reduce" if self.is_tail else "reduce"
        if self.epilogue is not None:
            return _traced_fused(self.epilogue, kind, params)
        return (_traced_tail_reduce if kind == "tail_reduce" else _traced_reduce)(params)

    def reduce_params(self, target: Target = DEFAULT_TARGET) -> tuple[tuple[str, Any], ...] | None:
        config, q = self.config, self.padded
        params = config.reduce_params(q) if self.is_gemv else config.reduce_params(q, target)
        if params is not None and self.reducing:  # each row's partial within one warp, a warp a row
            params.update({"BN": REDUCE_ROW_BN, "ROWS": REDUCE_ROWS, **self.reduce_cols()})
        return None if params is None else tuple(sorted(params.items()))

    def kernels(self, target: Target = DEFAULT_TARGET) -> list[Any]:
        """The traced kernels a call runs, in order: the splits (f32) or the copies into padded operands, the GEMM, a
        split tail's tail kernel, the reduction."""
        found = [_traced_split(tuple(sorted(step.params.items()))) for step in self.splits]
        found += [_traced_pad(tuple(sorted(step.params.items()))) for step in self.pads]
        found += [self.main_kernel(target), self.tail_kernel(target), self.reduce_kernel(target)]
        found += [self.finish_kernel()]
        return [k for k in found if k is not None]

    def epilogue_operands(self, operands: Any, xp: Any) -> dict[str, Any]:
        """The epilogue's tensors by kernel parameter (``epi_<name>``), checked against the problem's shape and
        zero-padded to the kernel's (M, N) where the plan pads C. `operands`: name -> array or tensor."""
        ep = self.epilogue
        if ep is None:
            if operands:
                raise GemmError(f"epilogue operands {sorted(operands)} given without an epilogue")
            return {}
        given = dict(operands or {})
        names = [o.name for o in ep.operands]
        if sorted(given) != sorted(names):
            raise GemmError(f"the epilogue reads {names}; given {sorted(given)}")
        p = self.problem
        rows, cols = self.c_shape  # C as the kernels store it (a swap-AB plan's reduction writes the user's C)
        out = {}
        for o, param in zip(ep.operands, ep.params, strict=True):
            x = given[o.name]
            want = {"columns": (p.N,), "rows": (p.M,), "tile": (p.M, p.N), "scalar": (1,)}[o.kind]
            if tuple(x.shape) != want:
                raise GemmError(f"epilogue operand {o.name!r} ({o.kind}) must have shape {want}, not {tuple(x.shape)}")
            padded = {"columns": (cols,), "rows": (rows,), "tile": (rows, cols), "scalar": (1,)}[o.kind]
            out[param] = x if padded == want else _pad_any(x, padded, xp)
        return out

    def gemv_operands(self, a: Any, b: Any, xp: Any) -> tuple[Any, Any, int]:
        """(V, the matrix as the GEMV kernel takes it, the columns of its output rows) for a (M, K) and b (K, N): V
        (rows, K) row-major (a copy where the small side is not: it is at most `GEMV_ROWS` x K), the matrix as stored
        (no copy): (K, cols) for the ``columns`` kernel, (cols, K) for ``rows``; the output's rows padded to whole
        16-byte vectors of f32 (what the reduction takes; `gemv_result` drops the padding)."""
        g, p = self.config, self.problem
        if a.ndim > 2 or b.ndim > 2:  # a batch of one (a leading extent 1): its matrices, as `stored_operands` takes
            a, b = a.reshape(a.shape[-2:]), b.reshape(b.shape[-2:])  # them (a 1x1 convolution of one image)
        if g.SWAP:  # C^T (1, M) = b^T (1, K) @ a^T (K, M)
            v, mat = b.reshape(1, p.K), (_t(a) if g.KERNEL == "columns" else a)
        else:
            v, mat = a, (b if g.KERNEL == "columns" else _t(b))
        if xp.__name__ == "numpy":
            return xp.ascontiguousarray(v), mat, _up(p.M if g.SWAP else p.N, 4)
        contiguous = v.contiguous()
        row_major = (contiguous.shape[1], 1)  # (torch leaves a row's stride as it was where there is one row)
        if g.VSTAGE and (contiguous.data_ptr() % 16 or tuple(contiguous.stride()) != row_major):
            # VSTAGE loads V by TMA: a 16-byte aligned base and 16-byte row strides (`x.T` of a column has stride
            # (1, 1), a slice may start mid-vector); a copy of at most GEMV_ROWS x K elements
            contiguous = contiguous.clone(memory_format=xp.contiguous_format)
        return contiguous, mat, _up(p.M if g.SWAP else p.N, 4)

    def gemv_result(self, c: Any) -> Any:
        """The product (M, N) from the GEMV's output (the kernel's with one split, else the reduction's): (rows,
        columns padded as `gemv_operands` says)."""
        p = self.problem
        c = c[:, : p.M if self.config.SWAP else p.N]
        return c.reshape(p.M, 1) if self.config.SWAP else c

    def stored_operands(self, a: Any, b: Any) -> tuple[Any, Any]:
        """a (M, K) and b (K, N) as they are stored: A (M, K) or (K, M), B (N, K) or (K, N) (views, no copies); for
        a swap-AB plan, the swapped product's operands b^T and a^T as they are stored."""
        p = self.problem
        if p.batch == 1:  # a batch of one (a leading extent 1): its matrix, as the 2-d kernels take it
            a, b = a.reshape(a.shape[-2:]), b.reshape(b.shape[-2:])
        if self.swap_ab:  # C^T = b^T @ a^T
            a, b, p = _t(b), _t(a), swapped(p)
        return (a if p.a_major == "K" else _t(a)), (_t(b) if p.b_major == "K" else b)

    def operands_for_kernel(self, a: Any, b: Any, xp: Any) -> tuple[Any, Any]:
        """16-bit a (M, K) and b (K, N) (numpy or torch, `xp` their module) as the GEMM kernel takes them: A (M, K)
        or (K, M), B (N, K) or (K, N), zero-padded where needed (copies)."""
        q = self.padded
        a_stored, b_stored = self.stored_operands(a, b)
        lead = (q.batch,) if q.batch > 1 else ()
        a_shape = (*lead, q.M, q.K) if q.a_major == "K" else (*lead, q.K, q.M)
        b_shape = (*lead, q.N, q.K) if q.b_major == "K" else (*lead, q.K, q.N)
        return _pad(a_stored, a_shape, xp), _pad(b_stored, b_shape, xp)

    def run_on_interpreter(
        self, a: Any, b: Any, *, target: Target | None = None, operands: dict[str, Any] | None = None
    ) -> Any:
        """C = a @ b (through the epilogue, whose tensors `operands` gives by name) on the lane-level interpreter
        (numpy float arrays a (M, K), b (K, N); small shapes only), through exactly the kernels and parameters a GPU
        call launches, with a grid of `target`'s SMs (default: 4 blocks, so that every block walks several
        units; a fused split-K plan, whose units wait for each other, gets a block for each of its units)."""
        import numpy as np

        from argus.interp import run_kernel

        target = target or replace(DEFAULT_TARGET, sms=4)
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if self.is_gemv:
            v, mat, padded = self.gemv_operands(a, b, np)
            v, mat = np.array(v), np.array(mat)  # the interpreter writes every tensor back: a read-only view cannot
            g = self.config
            work = np.full((g.SPLITS, g.ROWS, padded), np.nan)
            run_kernel(self.main_kernel(), {"V": v, "Mat" if g.KERNEL == "columns" else "MT": mat, "P": work})
            if self.reduce_kernel() is None:
                return self.gemv_result(work[0])
            out = np.full((g.ROWS, padded), np.nan)
            extra = {k: np.asarray(x, np.float64) for k, x in self.epilogue_operands(operands, np).items()}
            run_kernel(self.reduce_kernel(), {"W": work, "C": out, **extra})
            return self.gemv_result(out)
        if self.problem.dtype == "f32":
            parts = {}
            for step, x in zip(self.splits, self.stored_operands(a, b), strict=True):
                y = np.full(step.y_shape, np.nan)
                run_kernel(_traced_split(tuple(sorted(step.params.items()))), {"X": x, "Y": y})
                parts[step.name] = y.reshape(step.gemm_shape)
            A, B = parts["A"], parts["B"]
        else:  # through the `pad_copy` launches a GPU call makes, where it makes them
            A, B = self.stored_operands(a, b)
            copied = {}
            for step in self.pads:
                x = (A, B)[step.operand]
                y = np.full(step.padded, np.nan)
                run_kernel(_traced_pad(tuple(sorted(step.params.items()))), {"X": np.ascontiguousarray(x), "Y": y})
                copied[step.operand] = y
            A, B = copied.get(0, A), copied.get(1, B)
        q = self.padded
        splits = self.config.SPLITS
        lead = (q.batch,) if q.batch > 1 else ()
        extra = {k: np.asarray(v, np.float64) for k, v in self.epilogue_operands(operands, np).items()}
        C = np.full((*lead, *self.c_shape) if splits == 1 else (splits, *self.c_shape), np.nan)
        W = np.full(self.tail_workspace(target), np.nan) if self.is_tail else None
        if self.config.FUSE:  # one wave: a block for every unit (the kernel assumes it), whatever `target` has
            target = replace(target, sms=max(target.sms, self.counters(target) * self.config.SPLITS))
        main = self.main_kernel(target)
        if self.config.FUSE:  # the workspace, then C, in one launch
            out = np.full(self.c_shape, np.nan)
            run_kernel(main, {"A": A, "B": B, "W": C, "C": out, "F": np.zeros(self.counters(target), np.int32)})
            return out[..., : self.problem.M, : self.problem.N]
        if self.reducing:  # each tile's partials (from the GEMM, or from the split-K reduction), then each row's
            P = np.full(self.partials_shape(), np.nan)
            if splits == 1:
                run_kernel(main, {"A": A, "B": B, "P": P, **extra})
            else:
                run_kernel(main, {"A": A, "B": B, "C": C})
                run_kernel(self.reduce_kernel(), {"W": C, "P": P, **extra})
            out = np.full(self.c_shape[0], np.nan)
            run_kernel(self.finish_kernel(), {"P": P, "O": out})
            return out[: self.problem.M]
        if main is not None:
            run_kernel(main, {"A": A, "B": B, "C": C, **(extra if self.fused_main else {})})
        if W is not None:
            run_kernel(self.tail_kernel(target), {"A": A, "B": B, "W": W})
            run_kernel(self.reduce_kernel(target), {"W": W, "C": C, **extra})
        elif splits > 1:
            out = np.full(self.c_shape, np.nan)
            run_kernel(self.reduce_kernel(), {"W": C, "C": out, **extra})
            C = out
        return C[..., : self.problem.M, : self.problem.N]

    def tail_workspace(self, target: Target = DEFAULT_TARGET) -> tuple[int, int, int, int]:
        """A split tail's workspace shape: (TAIL, tail tiles, BM, BN). A GemmError where the last wave is whole (no
        tail to split: the configuration without TAIL is the same work)."""
        c = self.config
        whole, rest = c.tail_tiles(self.padded, target)
        if rest == 0:
            raise GemmError(
                f"{c.label} on {self.padded.M}x{self.padded.N} has {whole} tiles, whole waves of {target.sms} blocks: "
                "there is no tail to split; use the configuration with TAIL=1"
            )
        return (c.TAIL, rest, c.BM, c.BN)


def _pad(x: Any, shape: tuple[int, ...], xp: Any) -> Any:
    """`x` in a zero-padded buffer of `shape` (its last two extents larger), or `x` when it has that shape."""
    if tuple(x.shape) == shape:
        return x
    if xp.__name__ == "numpy":
        out = xp.zeros(shape, dtype=x.dtype)
        out[..., : x.shape[-2], : x.shape[-1]] = x
        return out
    import torch.nn.functional as F  # noqa: N812 - torch's own name

    # one kernel: x read once, the padded buffer written once (zeros then a copy wrote the padding region twice)
    out = F.pad(x, (0, shape[-1] - x.shape[-1], 0, shape[-2] - x.shape[-2]))
    return out if out.is_contiguous() else out.contiguous()


def _pad_any(x: Any, shape: tuple[int, ...], xp: Any) -> Any:
    """`x` (any rank) in a zero-padded buffer of `shape` (each extent at least x's)."""
    if xp.__name__ == "numpy":
        out = xp.zeros(shape, dtype=x.dtype)
    else:
        out = xp.zeros(shape, dtype=x.dtype, device=x.device)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def _t(x: Any) -> Any:
    """`x` with its last two extents swapped (a view)."""
    return x.swapaxes(-1, -2) if hasattr(x, "swapaxes") else x.transpose(-1, -2)


@functools.lru_cache(maxsize=256)
def _traced_main(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.gemm_warp_specialized_persistent.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_gemv(kernel: str, params: tuple[tuple[str, Any], ...]) -> Any:
    kernels = {"columns": gemv.gemv_columns, "rows": gemv.gemv_rows, "rows_tma": gemv.gemv_rows_tma}
    return kernels[kernel].trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_split_fused(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.gemm_split_fused.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_reduce(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.gemm_split_reduce.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_tail(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.gemm_persistent_split_tail.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_tail_reduce(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.gemm_tail_reduce.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_fused(ep: Epilogue, kind: str, params: tuple[tuple[str, Any], ...]) -> Any:
    main, reduce, tail_reduce = fused_kernels(ep)
    return {"main": main, "reduce": reduce, "tail_reduce": tail_reduce}[kind].trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_finish(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.gemm_reduce_partials.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_split(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.split_bf16x3.trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _traced_pad(params: tuple[tuple[str, Any], ...]) -> Any:
    return gemm.pad_copy.trace(**dict(params))


def plan(
    problem: GemmProblem,
    config: GemmConfig | None = None,
    target: Target = DEFAULT_TARGET,
    epilogue: Epilogue | None = None,
) -> GemmPlan:
    """The plan for `problem` (with the fused `epilogue`): `config`, or the one `choose` picks (among
    `EPILOGUE_TILES` when the epilogue holds a second tile-sized value, `Epilogue.holds_tiles`). Remembered per
    arguments (a plan is immutable; building one took a fifth of a call's host time)."""
    try:
        return _plan_cached(problem, config, target, epilogue)
    except TypeError:  # an argument that cannot be a key (an epilogue holding a list): planned afresh
        return _plan(problem, config, target, epilogue)


@functools.lru_cache(maxsize=256)
def _plan_cached(
    problem: GemmProblem, config: GemmConfig | None, target: Target, epilogue: Epilogue | None
) -> GemmPlan:
    return _plan(problem, config, target, epilogue)


def _plan(problem: GemmProblem, config: GemmConfig | None, target: Target, epilogue: Epilogue | None) -> GemmPlan:
    if config is None:
        small = gemv_config(problem, target) if epilogue is None else gemv_epilogue_config(problem, epilogue, target)
        if small is not None:
            return GemmPlan(problem, small, epilogue)
    swap = True if epilogue is None else SWAP_SPLIT_ONLY
    chosen = config or choose(problem, target, plan_tiles(epilogue), swap)
    if config is None and epilogue is not None and epilogue.reduce is not None and chosen.TAIL > 1:
        chosen = replace(chosen, TAIL=1)  # a reducing epilogue takes no split tail: its whole-wave twin
    found = GemmPlan(problem, chosen, epilogue)
    return fused_cluster(found, target) if config is None else found


def fused_cluster(found: GemmPlan, target: Target = DEFAULT_TARGET) -> GemmPlan:
    """`found`, or where it fuses a split of at least `FUSED_CLUSTER_MIN_SPLITS` on 128-row tiles of two consumer
    warpgroups unclustered, the same in 2-block clusters (still fused: its units still one wave)."""
    c = found.config
    if not FUSED_CLUSTERS or found.is_gemv or not c.FUSE or c.CLUSTER > 1 or c.SWAP:
        return found
    if (c.BM, c.CONSUMERS) != (128, 2) or c.SPLITS < FUSED_CLUSTER_MIN_SPLITS:
        return found
    candidate = replace(c, CLUSTER=2)
    if cluster_refusal(kernel_problem(found.problem), candidate, target) is not None:
        return found
    if fuse_refusal(found.padded, candidate, found.epilogue, target) is not None:
        return found
    return GemmPlan(found.problem, candidate, found.epilogue)


def plan_tiles(epilogue: Epilogue | None) -> tuple:
    """The tile shapes a plan with `epilogue` may use: `EPILOGUE_TILES` when it holds a second tile-sized value,
    `FUSED_TILES` for any other fused epilogue, else `TILES`."""
    if epilogue is None:
        return TILES
    if epilogue.reduce is not None and REDUCE_WIDE_TILES and not replace(epilogue, reduce=None).holds_tiles:
        return FUSED_TILES
    return EPILOGUE_TILES if epilogue.holds_tiles else FUSED_TILES


def tuned_config(problem: GemmProblem, device: Any = None, epilogue: Epilogue | None = None) -> GemmConfig | None:
    """The configuration tuning measured fastest for `problem`'s key on the GPU `device` (`argus.kernels.gemm_tuning`),
    where it is one of `problem`'s own candidates; else None (the model's choice stands). `DEFAULT_TARGET`'s GPU is the
    one tuning plans for."""
    from argus.kernels import gemm_tuning

    try:
        gpu = gemm_tuning.gpu_name(device)
    except Exception:  # noqa: BLE001 - no CUDA here: nothing measured applies
        return None
    found = gemm_tuning.lookup(problem, gpu, tiles=plan_tiles(epilogue), swap=epilogue is None)
    if found is not None and epilogue is not None and epilogue.reduce is not None and found.TAIL > 1:
        return replace(found, TAIL=1)  # a reducing epilogue takes no split tail (as `_plan`): its whole-wave twin
    return found


# ---- the GPU call ----------------------------------------------------------------------------------------------------

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def problem_of(a: Any, b: Any, out_dtype: Any = None, precision: str | None = None) -> GemmProblem:
    """The `GemmProblem` of ``a @ b`` for torch tensors a (M, K) and b (K, N), each row-major or a transposed view of
    a row-major tensor, or a batch of such matrices each (``bmm``: a (L, M, K), b (L, K, N), every matrix's elements
    together); `out_dtype` (a torch dtype) defaults to the inputs'. `precision` (f32 inputs only, `F32_PRECISIONS`):
    ``"bf16x3"`` (default) or ``"tf32"`` (the `TF32` problem)."""
    if not (a.dim() == b.dim() == 2 or (a.dim() == b.dim() == 3 and a.shape[0] == b.shape[0])):
        raise GemmError(
            f"matmul takes 2-D a (M, K) and b (K, N), a batch of both (L, M, K) and (L, K, N), or a contiguous a of "
            f"higher rank times a matrix b; got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    batch = a.shape[0] if a.dim() == 3 else 1
    if a.shape[-1] != b.shape[-2]:
        raise GemmError(f"a is {tuple(a.shape)} and b is {tuple(b.shape)}: a's columns must equal b's rows")
    if a.dtype != b.dtype:
        raise GemmError(f"a is {a.dtype} and b is {b.dtype}: matmul takes two tensors of one dtype")
    dtype = _TORCH_DTYPES.get(str(a.dtype).removeprefix("torch."))
    out = _TORCH_DTYPES.get(str(out_dtype or (torch_dtype("bf16") if dtype in FP8_INPUTS else a.dtype)).split(".")[-1])
    if dtype is None or out is None or out in FP8_INPUTS:
        raise GemmError(
            f"matmul takes bf16, f16, f32, float8_e4m3fn or float8_e5m2 tensors and writes bf16, f16 or f32 (FP8 "
            f"inputs: bf16 by default), got {a.dtype} -> {out_dtype}"
        )
    if precision is not None:
        if dtype != "f32":
            raise GemmError(f"precision={precision!r} applies to f32 inputs; these are {a.dtype}")
        if precision not in F32_PRECISIONS:
            raise GemmError(f"precision={precision!r}: f32 inputs run as {' or '.join(map(repr, F32_PRECISIONS))}")
        dtype = TF32 if precision == TF32 else dtype
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    return GemmProblem(m, n, k, dtype, out, _major(a, "K", "M"), _major(b, "N", "K"), batch)


def _major(x: Any, rows_major: str, cols_major: str) -> str:
    """The name of x's contiguous extent: `rows_major` when x (or each matrix of a batched x) is row-major (its
    columns are contiguous), `cols_major` when it is a transposed view of a row-major tensor (its rows are)."""
    r, c = x.shape[-2], x.shape[-1]
    sr, sc = x.stride(-2), x.stride(-1)
    whole = x.dim() == 2 or x.shape[0] == 1 or x.stride(0) == r * c  # a batch's matrices one after another
    if whole and sc == 1 and (sr == c or r == 1):
        return rows_major
    if whole and sr == 1 and (sc == r or c == 1):
        return cols_major
    raise GemmError(
        f"an operand of shape {tuple(x.shape)} with strides {tuple(x.stride())} is neither row-major nor a transposed "
        "row-major tensor: pass x.contiguous()"
    )


def _loaded(kind: str, params: tuple[tuple[str, Any], ...], epilogue: Epilogue | None = None) -> Any:
    """The plan kernel `kind` compiled and loaded, with the programmatic-dependent-launch prologue when the plan's
    launches are made as dependents (`DEPENDENT_LAUNCHES`, read at each call: an A/B switch)."""
    return _loaded_for(kind, params, epilogue, DEPENDENT_LAUNCHES)


@functools.lru_cache(maxsize=256)
def _loaded_for(kind: str, params: tuple[tuple[str, Any], ...], epilogue: Epilogue | None, dependent: bool) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    if epilogue is not None:
        traced = _traced_fused(epilogue, kind, params)
    elif kind.startswith("gemv_"):
        traced = _traced_gemv(kind.removeprefix("gemv_"), params)
    else:
        kinds = {
            "main": _traced_main,
            "split_fused": _traced_split_fused,
            "reduce": _traced_reduce,
            "split": _traced_split,
            "pad": _traced_pad,
            "block_scaled": _traced_block_scaled,
            "tail": _traced_tail,
            "tail_reduce": _traced_tail_reduce,
            "finish": _traced_finish,
        }
        traced = kinds[kind](params)
    return load(compile_kernel(traced, dependent=dependent))


class Launches(list):
    """The prepared launches of one GEMM call, in order, holding every tensor they address (`keep`: the operands,
    the split passes' outputs, the workspace, C): the launches carry raw addresses only. `copies`: the call copied
    an operand when it was prepared (zero padding, a GEMV's operand layout), so that a relaunch reads the values of
    then, not the operand's current ones (a caller that relaunches for new values must prepare again)."""

    keep: list[Any]
    copies: bool = True
    #: f32 split precision: operand (0: a, 1: b) -> (the index of its split launch, the split's output parts)
    splits: dict[int, tuple[int, Any]]

    def __init__(self, launches: Any = ()) -> None:
        super().__init__(launches)
        self.splits = {}


def prepare(
    a: Any,
    b: Any,
    *,
    out_dtype: Any = None,
    config: GemmConfig | None = None,
    out: Any = None,
    epilogue: Epilogue | None = None,
    operands: dict[str, Any] | None = None,
    precision: str | None = None,
) -> tuple[Any, list[Any]]:
    """(C, the prepared launches that compute it): `matmul` without the launch, for timing loops that relaunch the
    same call (each launch may be repeated; C is overwritten; the launches hold the operands and workspaces they
    address, `Launches.keep`, so they stay valid as long as the list lives). `out`: a contiguous (M, N) tensor of
    the output dtype to write C into, where the plan's C needs no padding (else a fresh C). `epilogue`, `operands`:
    a fused epilogue and its tensors by name; `precision`: of f32 inputs (see `matmul`)."""
    import torch

    problem = problem_of(a, b, out_dtype, precision)
    if unbatched(problem):
        return _prepare_members(problem, a, b, out_dtype, config, epilogue, out, precision)
    the_plan = plan(problem, config, epilogue=epilogue)
    if config is None and not the_plan.is_gemv and a.is_cuda:  # a configuration measured on this GPU, if any
        tuned = tuned_config(problem, a.device, epilogue)
        if tuned is not None:
            the_plan = plan(problem, tuned, epilogue=epilogue)
    extra = the_plan.epilogue_operands(operands, torch)
    for param, x in extra.items():
        want = torch_dtype(next(o.dtype for o in epilogue.operands if f"epi_{o.name}" == param))
        if x.dtype != want or not x.is_contiguous() or x.device != a.device:
            raise GemmError(
                f"epilogue operand {param[4:]!r} must be a contiguous {want} tensor on {a.device}, not a "
                f"{'contiguous' if x.is_contiguous() else 'strided'} {x.dtype} tensor on {x.device}"
            )
    q = the_plan.padded
    launches = Launches()
    if the_plan.is_gemv:
        return _prepare_gemv(the_plan, a, b, out, launches, [extra[p] for p in epilogue.params] if epilogue else [])
    if the_plan.config.FUSE and a.is_cuda and device_sms(a.device) < the_plan.config.blocks(q):
        # a tile's units wait for each other: on a GPU of fewer SMs than the plan's blocks they might never all run
        if config is not None and config.FUSE:
            raise GemmError(
                f"{the_plan.config.label}: {the_plan.config.blocks(q)} blocks that wait for each other on a GPU of "
                f"{device_sms(a.device)} SMs could deadlock; pass FUSE=None or False"
            )
        the_plan = plan(problem, replace(the_plan.config, FUSE=False), epilogue=epilogue)
    if problem.dtype == "f32":  # split precision: each operand's hi and lo parts first (`split_bf16x3`)
        operands = {}
        for i, (step, x) in enumerate(zip(the_plan.splits, the_plan.stored_operands(a, b), strict=True)):
            y = torch.empty(step.y_shape, dtype=torch.bfloat16, device=a.device)
            launches.append(
                _loaded("split", tuple(sorted(step.params.items()))).prepare(x, y, dependent=DEPENDENT_LAUNCHES)
            )
            # which of a and b this split reads (a swap-AB plan splits b^T first)
            launches.splits[1 - i if the_plan.swap_ab else i] = (len(launches) - 1, y)
            operands[step.name] = y.view(step.gemm_shape)
        A, B = operands["A"], operands["B"]
    else:  # A and B as stored, or copied into zero-padded buffers by `pad_copy` launches (which read a and b anew)
        A, B = the_plan.stored_operands(a, b)
        copies = {}
        for step in the_plan.pads:
            x = (A, B)[step.operand]
            source = x if x.is_contiguous() else x.contiguous()  # a strided view: copied here (Launches.copies)
            y = torch.empty(step.padded, dtype=x.dtype, device=a.device)
            params = tuple(sorted(step.params.items()))
            launches.append(_loaded("pad", params).prepare(source, y, dependent=DEPENDENT_LAUNCHES))
            copies[step.operand] = (source, y)
        A, B = copies.get(0, (None, A))[1], copies.get(1, (None, B))[1]
    out_torch = torch_dtype(problem.out)
    if the_plan.reducing:
        held = (a, b, *[src for src, _ in copies.values()]) if problem.dtype != "f32" else (a, b)
        C, launches = _prepare_reducing(the_plan, A, B, extra, out, launches, held)
        launches.copies = _copied_operands(the_plan, a, b, A, B, copies if problem.dtype != "f32" else None)
        return C, launches
    lead = (q.batch,) if q.batch > 1 else ()
    shape = (*lead, *the_plan.c_shape)
    fits = out is not None and tuple(out.shape) == shape and out.dtype == out_torch and out.is_contiguous()
    C = out if fits else torch.empty(shape, dtype=out_torch, device=a.device)
    main_params = the_plan.main_params()
    tensors = [extra[p] for p in epilogue.params] if epilogue is not None else []
    W = counters = None
    if the_plan.is_tail:  # the whole waves (if any), the tail's splits, their reduction
        W = torch.empty(the_plan.tail_workspace(), dtype=torch.float32, device=a.device)
        if the_plan.main_kernel() is not None:
            launches.append(
                _loaded("main", main_params, epilogue).prepare(A, B, C, *tensors, dependent=DEPENDENT_LAUNCHES)
            )
        tail_params = tuple(sorted(the_plan.config.tail_params(q).items()))
        launches.append(_loaded("tail", tail_params).prepare(A, B, W, dependent=DEPENDENT_LAUNCHES))
        launches.append(
            _loaded("tail_reduce", the_plan.reduce_params(), epilogue).prepare(
                W, C, *tensors, dependent=DEPENDENT_LAUNCHES
            )
        )
    elif the_plan.config.SPLITS == 1:
        launches.append(_loaded("main", main_params, epilogue).prepare(A, B, C, *tensors, dependent=DEPENDENT_LAUNCHES))
    elif the_plan.config.FUSE:  # one launch: the slices into W, then each tile's units sum them into C
        W = torch.empty((the_plan.config.SPLITS, *the_plan.c_shape), dtype=torch.float32, device=a.device)
        counters = torch.zeros(the_plan.counters(), dtype=torch.int32, device=a.device)  # reused by every relaunch
        launches.append(_loaded("split_fused", main_params).prepare(A, B, W, C, counters, dependent=DEPENDENT_LAUNCHES))
    else:
        W = torch.empty((the_plan.config.SPLITS, *the_plan.c_shape), dtype=torch.float32, device=a.device)
        launches.append(_loaded("main", main_params).prepare(A, B, W, dependent=DEPENDENT_LAUNCHES))
        reduce_params = tuple(sorted(the_plan.config.reduce_params(q).items()))
        launches.append(
            _loaded("reduce", reduce_params, epilogue).prepare(W, C, *tensors, dependent=DEPENDENT_LAUNCHES)
        )
    if the_plan.c_shape != (problem.M, problem.N):
        C = C[..., : problem.M, : problem.N]
    launches.keep = [a, b, A, B, C, *tensors] + [x for x in (W, counters) if x is not None]
    if problem.dtype != "f32":
        launches.keep += [src for src, _ in copies.values()]
    launches.copies = _copied_operands(the_plan, a, b, A, B, copies if problem.dtype != "f32" else None)
    return C, launches


def _copied_operands(the_plan: GemmPlan, a: Any, b: Any, A: Any, B: Any, copies: dict | None) -> bool:  # noqa: N803
    """`Launches.copies` of a prepared call: f32 (`copies` None): the split passes are launches, which read a and b
    each time; 16-bit: A and B are views of a and b, or the pad launches' buffers (which read a and b each time),
    unless a strided operand was made contiguous when it was prepared (`copies`: operand -> (source, padded))."""
    if copies is None:
        return False
    stored = the_plan.stored_operands(a, b)
    host_copied = any([not shares_storage(copies[i][0], stored[i]) for i in copies])
    views = all(i in copies or shares_storage((A, B)[i], stored[i]) for i in (0, 1))
    return host_copied or not views


class _Copy:
    """A prepared launch that copies `src` into `dst` (a member's product computed into a padded C)."""

    def __init__(self, src: Any, dst: Any) -> None:
        self.src, self.dst = src, dst

    def launch(self) -> None:
        self.dst.copy_(self.src)


def _prepare_members(
    problem: GemmProblem, a: Any, b: Any, out_dtype: Any, config: Any, epilogue: Any, out: Any, precision: Any
) -> tuple[Any, Launches]:
    """`prepare` of a batched problem that runs one 2-d product per matrix (`unbatched`): each matrix's plan (split-K
    for f32 accuracy), its C a slice of one (L, M, N) result (`out` where it is a contiguous tensor of that shape and
    the output dtype)."""
    import torch

    if epilogue is not None:
        raise GemmError("a fused epilogue on a batched GEMM is not built (its operands have no batch index)")
    shape = (problem.batch, problem.M, problem.N)
    dtype = torch_dtype(problem.out)
    fits = out is not None and tuple(out.shape) == shape and out.dtype == dtype and out.is_contiguous()
    C = out if fits else torch.empty(shape, dtype=dtype, device=a.device)
    launches = Launches()
    launches.keep, launches.copies = [a, b, C], False
    for i in range(problem.batch):
        c, part = prepare(a[i], b[i], out_dtype=out_dtype, config=config, out=C[i], precision=precision)
        launches.extend(part)
        if c.data_ptr() != C[i].data_ptr():  # the plan's C was padded: the product is copied into its slice
            launches.append(_Copy(c, C[i]))
        launches.keep += part.keep
        launches.copies |= part.copies
    return C, launches


def _prepare_reducing(
    the_plan: GemmPlan, A: Any, B: Any, extra: dict[str, Any], out: Any, launches: Launches, held: tuple
) -> tuple[Any, Launches]:
    """`prepare`'s launches of a reducing plan (`GemmPlan.reducing`) after its operands' (A and B as the GEMM
    kernel takes them): the GEMM storing each tile's partials (or its split-K slices, whose reduction stores them),
    then `gemm_reduce_partials` writing the (M,) result into `out` (where it is a contiguous (M,) tensor of the
    output dtype) or a fresh tensor."""
    import torch

    problem, ep = the_plan.problem, the_plan.epilogue
    tensors = [extra[p] for p in ep.params]
    device = A.device
    P = torch.empty(the_plan.partials_shape(), dtype=torch.float32, device=device)
    W = None
    if the_plan.config.SPLITS == 1:
        main = _loaded("main", the_plan.main_params(), ep)
        launches.append(main.prepare(A, B, P, *tensors, dependent=DEPENDENT_LAUNCHES))
    else:
        W = torch.empty((the_plan.config.SPLITS, *the_plan.c_shape), dtype=torch.float32, device=device)
        launches.append(_loaded("main", the_plan.main_params()).prepare(A, B, W, dependent=DEPENDENT_LAUNCHES))
        reduce = _loaded("reduce", the_plan.reduce_params(), ep)
        launches.append(reduce.prepare(W, P, *tensors, dependent=DEPENDENT_LAUNCHES))
    rows = the_plan.c_shape[0]
    dtype = torch_dtype(problem.out)
    fits = out is not None and tuple(out.shape) == (rows,) and out.dtype == dtype and out.is_contiguous()
    O = out if fits else torch.empty((rows,), dtype=dtype, device=device)
    launches.append(_loaded("finish", the_plan.finish_params()).prepare(P, O, dependent=DEPENDENT_LAUNCHES))
    launches.keep = [*held, A, B, P, O, *tensors] + ([W] if W is not None else [])
    return (O[: problem.M] if rows != problem.M else O), launches


@functools.lru_cache(maxsize=16)
def device_sms(device: Any) -> int:
    """The SM count of CUDA `device` (a MIG slice's own)."""
    import torch

    return int(torch.cuda.get_device_properties(device).multi_processor_count)


def _copied(x: Any, *sources: Any) -> bool:
    """Whether `x` views none of `sources` (a copy made when the call was prepared)."""
    return not any(shares_storage(x, s) for s in sources)


def shares_storage(x: Any, y: Any) -> bool:
    """Whether torch tensors `x` and `y` view one storage (a view read in place, not a copy)."""
    return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()


def _prepare_gemv(
    the_plan: GemmPlan, a: Any, b: Any, out: Any, launches: Launches, tensors: list[Any]
) -> tuple[Any, Launches]:
    """`prepare` for a GEMV plan: with one split (and no epilogue) the GEMV kernel writes C; else it writes an f32
    workspace (splits, rows, padded columns) and `gemm_split_reduce` sums it into C, through the fused epilogue
    (whose operands, padded to the workspace's columns, are `tensors`) where the plan has one."""
    import torch

    g, p = the_plan.config, the_plan.problem
    v, mat, padded = the_plan.gemv_operands(a, b, torch)
    out_torch = torch_dtype(p.out)
    fits = (
        out is not None
        and padded == (p.M if g.SWAP else p.N)
        and tuple(out.shape) == (p.M, p.N)
        and out.dtype == out_torch
        and out.is_contiguous()
    )
    c = out.view(g.ROWS, padded) if fits else torch.empty((g.ROWS, padded), dtype=out_torch, device=a.device)
    reduce = g.reduce_params(p)
    if reduce is None:  # one split: the GEMV kernel writes C, in its dtype
        launches.append(
            _loaded(the_plan.main_kind, the_plan.main_params()).prepare(
                v, mat, c.view(1, *c.shape), dependent=DEPENDENT_LAUNCHES
            )
        )
        launches.keep = [a, b, v, mat, c]
        launches.copies = _copied(v, a, b) or _copied(mat, a, b)
        return the_plan.gemv_result(c), launches
    work = torch.empty((g.SPLITS, g.ROWS, padded), dtype=torch.float32, device=a.device)
    launches.append(
        _loaded(the_plan.main_kind, the_plan.main_params()).prepare(v, mat, work, dependent=DEPENDENT_LAUNCHES)
    )
    reducer = _loaded("reduce", tuple(sorted(reduce.items())), the_plan.epilogue)
    launches.append(reducer.prepare(work, c, *tensors, dependent=DEPENDENT_LAUNCHES))
    launches.keep = [a, b, v, mat, work, c, *tensors]
    launches.copies = _copied(v, a, b) or _copied(mat, a, b)
    return the_plan.gemv_result(c), launches


def torch_dtype(name: str) -> Any:
    """The torch dtype of a dtype name (``"bf16"``, ``"f16"``, ``"f32"``, ``"e4m3"``, ``"e5m2"``)."""
    import torch

    names = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    names.update(e4m3=torch.float8_e4m3fn, e5m2=torch.float8_e5m2)
    return names[name]


def matmul(
    a: Any,
    b: Any,
    *,
    out_dtype: Any = None,
    config: GemmConfig | None = None,
    epilogue: Epilogue | str | None = None,
    precision: str | None = None,
    reduce: str | None = None,
    dim: int = -1,
    **operands: Any,
) -> Any:
    """``a @ b`` for bf16, f16 or f32 CUDA tensors a (M, K) and b (K, N) (row-major or transposed views), C in
    `out_dtype` (default: the inputs' dtype), on the configuration `choose` picks (or `config`). A contiguous
    a (..., M, K) of any rank times a matrix b is one GEMM over all of a's rows (C (..., M, N)); a (L, M, K) times
    b (L, K, N) is a batched GEMM (``bmm``, C (L, M, N)). f32 inputs run at f32 accuracy on bf16 tensor cores by
    split precision (`kernel_problem`); with ``precision="tf32"`` in one TF32 pass instead (torch's
    ``allow_tf32``: about 8e-4 relative error, the tensor core truncating f32 to TF32 where cuBLAS rounds (2.6x
    cuBLAS TF32's error, at 0.90-1.10x its speed: benchmarks/results/2026-12-01-tf32-gpu); both operands
    K-major). Launches on the current stream and returns without synchronizing, as torch does.

    `epilogue`: a fused epilogue (`argus.kernels.epilogue.Epilogue`, or one expression over ``acc``, the f32
    product, and the keyword `operands`), applied in registers before C is stored:
    ``matmul(x, w.T, epilogue="T.maximum(acc + bias, 0.0)", bias=b)``. With an expression, an operand's kind is
    read off its shape: (N,) a per-column vector, (M,) a per-row one (M != N), (M, N) a tile (a residual; for an
    `a` of higher rank, its leading extents flattened like a's).
    `reduce`: a reduction of the result along `dim` (``"sum"``, ``"mean"``, ``"max"``, ``"min"``,
    ``"logsumexp"``: `argus.kernels.gemm.REDUCTIONS`), fused into the epilogue (each tile's share reduced in
    registers, C never stored): ``matmul(x, w.T, epilogue="T.sigmoid(acc + bias)", reduce="sum", bias=b)`` is
    ``torch.sigmoid(x @ w.T + b).sum(-1)``, shape (M,) (a's leading extents kept); ``dim=0`` reduces each column
    of a 2-d product (the transposed product's rows: a tile operand is read through a transposed copy). An
    `Epilogue` that says ``reduce`` itself needs no `reduce` here."""
    lead = tuple(a.shape[:-1]) if b.dim() == 2 else ()
    ndim = len(lead) + 1 if lead else max(a.dim(), b.dim())  # the product's rank
    if a.dim() > 2 and b.dim() == 2:  # a tensor times a matrix: its rows are the rows of one GEMM
        if not a.is_contiguous():
            raise GemmError(
                f"a {a.dim()}-d a of shape {tuple(a.shape)} times a matrix is one GEMM over a's rows only when a is "
                "contiguous: pass a.contiguous()"
            )
        a = a.reshape(-1, a.shape[-1])
        operands = {k: v.reshape(-1, v.shape[-1]) if v.dim() > 2 else v for k, v in operands.items()}
    if isinstance(epilogue, str):
        epilogue = _epilogue_of(epilogue, a.shape[-2], b.shape[-1], operands)
    if reduce is not None:
        epilogue = (epilogue or Epilogue(("out = acc",), "out")).reducing(reduce)
    if epilogue is not None and epilogue.reduce is not None and dim not in (-1, ndim - 1):
        if dim not in (0, -2) or ndim != 2:
            raise GemmError(
                f"a reducing epilogue reduces the product's rows (dim=-1) or, for a 2-d product, its columns (dim=0), "
                f"not dim={dim} of a {ndim}-d product"
            )
        kinds = {o.name: o.kind for o in epilogue.operands}
        flipped = {k: (v.mT.contiguous() if kinds.get(k) == "tile" else v) for k, v in operands.items()}
        return matmul(b.mT, a.mT, out_dtype=out_dtype, config=config, epilogue=epilogue.transposed(),
                      precision=precision, **flipped)  # fmt: skip
    C, launches = prepare(
        a, b, out_dtype=out_dtype, config=config, epilogue=epilogue, operands=operands, precision=precision
    )
    for launch in launches:
        launch.launch()
    if epilogue is not None and epilogue.reduce is not None:  # the (M,) reductions, a's leading extents kept
        return C.reshape(lead) if len(lead) > 1 else C
    if not lead and ndim == 3 and C.dim() == 2:  # a batch of one product keeps its batch dimension, as torch's
        return C.unsqueeze(0)
    return C.reshape(*lead, C.shape[-1]) if len(lead) > 1 else C


def scaled_operands(a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any = None) -> tuple[Epilogue, dict[str, Any]]:
    """The epilogue and its tensors that scale an FP8 product as ``torch._scaled_mm`` does: ``acc * scale_a *
    scale_b (+ bias)``, each scale an f32 tensor of one element (per tensor: read on the device when the kernel runs,
    no host synchronization), or ``scale_a`` one per row of a ((M, 1) or (M,)) and ``scale_b`` one per column of b
    ((1, N) or (N,)): the row-wise scaling. `bias`: (N,) in bf16, f16 or f32."""
    import torch

    m, n = a.shape[-2], b.shape[-1]
    kinds: dict[str, tuple[str, str]] = {}
    tensors: dict[str, Any] = {}
    for name, s, per, extent in (("scale_a", scale_a, "rows", m), ("scale_b", scale_b, "columns", n)):
        if not isinstance(s, torch.Tensor) or s.dtype != torch.float32:
            raise GemmError(f"{name} must be a float32 tensor, got {getattr(s, 'dtype', type(s).__name__)}")
        if s.device != a.device:
            raise GemmError(f"{name} is on {s.device}, the operands on {a.device}")
        if s.numel() == 1:
            kinds[name], tensors[name] = ("scalar", "f32"), s.reshape(1)
        elif s.numel() == extent and s.dim() <= 2 and max(s.shape) == extent:
            kinds[name], tensors[name] = (per, "f32"), s.reshape(extent).contiguous()
        else:
            want = f"({m}, 1)" if per == "rows" else f"(1, {n})"
            raise GemmError(
                f"{name} of shape {tuple(s.shape)}: give one element (a per-tensor scale) or {want} (one per "
                f"{'row of a' if per == 'rows' else 'column of b'}); per-block scales are not built"
            )
    expression = "acc * scale_a * scale_b"
    if bias is not None:
        dtype = _TORCH_DTYPES.get(str(bias.dtype).removeprefix("torch."))
        if tuple(bias.shape) != (n,) or dtype not in ("bf16", "f16", "f32"):
            raise GemmError(
                f"bias must be an (N,) = ({n},) bf16, f16 or f32 tensor, got {tuple(bias.shape)} {bias.dtype}"
            )
        kinds["bias"], tensors["bias"] = ("columns", dtype), bias.contiguous()
        expression += " + bias"
    return Epilogue.of(expression, **kinds), tensors


def scaled_mm(
    a: Any,
    b: Any,
    scale_a: Any,
    scale_b: Any,
    *,
    bias: Any = None,
    out_dtype: Any = None,
    config: GemmConfig | None = None,
) -> Any:
    """``torch._scaled_mm(a, b, scale_a, scale_b, bias, out_dtype=...)`` on argus's GEMM: FP8 (float8_e4m3fn or
    float8_e5m2) a (M, K) row-major and b (K, N) column-major (``w.t()`` of a row-major (N, K) weight), C = (a @ b)
    * scale_a * scale_b (+ bias) in `out_dtype` (bf16 by default; f16 or f32), the scales and the bias applied to
    the f32 accumulator before C is stored (`scaled_operands`). The products accumulate in ``wgmma``'s FP8
    accumulator over the whole of K (what cuBLAS calls fast accumulation; `docs/gemm.md`, "FP8")."""
    epilogue, tensors = scaled_operands(a, b, scale_a, scale_b, bias)
    C, launches = prepare(a, b, out_dtype=out_dtype, config=config, epilogue=epilogue, operands=tensors)
    for launch in launches:
        launch.launch()
    return C


@dataclass(frozen=True)
class BlockScaledConfig:
    """A configuration of `argus.kernels.gemm_fp8.gemm_fp8_block_scaled` (the kernel's parameters of the same names)."""

    BM: int = 128
    CONSUMERS: int = 2
    STAGES: int = 6
    GROUP: int = 8

    @property
    def label(self) -> str:
        return f"block-scaled {self.BM}x128x128 s{self.STAGES} c{self.CONSUMERS} g{self.GROUP}"

    def kernel_params(self, dtype: str, out: str, target: Target = DEFAULT_TARGET) -> tuple[tuple[str, Any], ...]:
        params = {
            "BM": self.BM,
            "STAGES": self.STAGES,
            "CONSUMERS": self.CONSUMERS,
            "GROUP": self.GROUP,
            "IN": dtype,
            "OUT": out,
            "BLOCKS": target.sms,
        }
        if self.CONSUMERS != 2:
            params.update(CONSUMER_REGS=consumer_registers(self.CONSUMERS))
        return tuple(sorted(params.items()))


def block_scaled_config(m: int, n: int = 0, target: Target = DEFAULT_TARGET) -> BlockScaledConfig:
    """The block-scaled kernel's configuration for an (M, N) output: 64-row tiles on one consumer warpgroup for M <= 64
    (a decode batch); 192-row tiles on three where they still give every SM a tile (measured 1.1-1.2x the 128-row
    tiles at 4096 x 4096 and up, benchmarks/results/2026-11-30-gemm-fp8/, call 7: more rows per B tile, and the
    promotion's two accumulators fit three warpgroups' registers); else 128-row tiles on two. Each with the deepest
    pipeline shared memory holds (stages of (BM + 128) x 128 bytes)."""
    if m <= 64:
        bm, consumers = 64, 1
    elif _cdiv(m, 192) * _cdiv(n, 128) >= target.sms:
        bm, consumers = 192, 3
    else:
        bm, consumers = 128, 2
    stages = min(MAX_STAGES, (SHARED_MEMORY_BUDGET - 2048) // ((bm + 128) * 128))
    return BlockScaledConfig(bm, consumers, stages)


@functools.lru_cache(maxsize=64)
def _traced_block_scaled(params: tuple[tuple[str, Any], ...]) -> Any:
    from argus.kernels.gemm_fp8 import gemm_fp8_block_scaled

    return gemm_fp8_block_scaled.trace(**dict(params))


def block_scales(a: Any, b: Any, scale_a: Any, scale_b: Any, xp: Any) -> tuple[Any, Any]:
    """(SA (KB, M), SB (KB, NB)): the block-scaled kernel's scale tensors from torch's block-wise ``_scaled_mm`` ones,
    scale_a (M, KB) (one per row and 128-element K-block of a) and scale_b (KB, NB) (one per 128 x 128 block of b), KB
    = cdiv(K, 128), NB = cdiv(N, 128), in float32: SA is scale_a transposed (a view where scale_a is stored
    column-major, as torch wants it; else a copy), SB scale_b itself. `xp`: numpy or torch."""
    m, k = a.shape
    n = b.shape[1]
    kb, nb = _cdiv(k, 128), _cdiv(n, 128)
    if tuple(scale_a.shape) != (m, kb) or tuple(scale_b.shape) != (kb, nb):
        raise GemmError(
            f"block-scaled FP8 takes scale_a ({m}, {kb}) (per row and 128-element K-block of a) and scale_b ({kb}, "
            f"{nb}) (per 128 x 128 block of b); got {tuple(scale_a.shape)} and {tuple(scale_b.shape)}"
        )
    if xp.__name__ == "numpy":
        return xp.ascontiguousarray(xp.asarray(scale_a, xp.float64).T), xp.asarray(scale_b, xp.float64)
    import torch

    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s.dtype != torch.float32 or s.device != a.device:
            raise GemmError(f"{name} must be a float32 tensor on {a.device}, not {s.dtype} on {s.device}")
    return scale_a.t().contiguous(), scale_b.contiguous()


def _block_scaled_problem(a: Any, b: Any, out_dtype: Any) -> GemmProblem:
    problem = problem_of(a, b, out_dtype)
    if problem.dtype not in FP8_INPUTS or problem.batch != 1:
        raise GemmError(f"block-scaled GEMMs take 2-D float8_e4m3fn or float8_e5m2 operands, not {a.dtype}")
    per_vector = 16 // dtype_of(problem.out).itemsize
    if problem.K % 16 or problem.N % per_vector:
        raise GemmError(
            f"block-scaled FP8 needs K a multiple of 16 (TMA's 16-byte rows) and N of {per_vector} "
            f"(C's rows in 16-byte vectors); got K = {problem.K}, N = {problem.N}: pad the operands"
        )
    return problem


def block_scaled_on_interpreter(
    a: Any, b: Any, scale_a: Any, scale_b: Any, config: BlockScaledConfig, out: str = "f32", blocks: int = 4
) -> Any:
    """The block-scaled product on the CPU interpreter (numpy a (M, K) and b (K, N) holding FP8 values, scales as
    `block_scales` takes them), through exactly the kernel a GPU call launches, on `blocks` blocks."""
    import numpy as np

    from argus.interp import run_kernel

    sa, sb = block_scales(a, b, scale_a, scale_b, np)
    params = dict(config.kernel_params("e4m3", out, replace(DEFAULT_TARGET, sms=blocks)))
    c = np.full((a.shape[0], b.shape[1]), np.nan)
    run_kernel(
        _traced_block_scaled(tuple(sorted(params.items()))),
        {"A": a, "B": np.ascontiguousarray(b.T), "SA": sa, "SB": sb, "C": c},
    )
    return c


def prepare_block_scaled(
    a: Any, b: Any, scale_a: Any, scale_b: Any, *, out_dtype: Any = None, config: BlockScaledConfig | None = None
) -> tuple[Any, Launches]:
    """(C, the prepared launches), as `prepare` for `block_scaled_mm`: the kernel, after a copy of the scales into its
    layout where they are not in it already."""
    import torch

    problem = _block_scaled_problem(a, b, out_dtype)
    config = config or block_scaled_config(problem.M, problem.N)
    sa, sb = block_scales(a, b, scale_a, scale_b, torch)
    c = torch.empty((problem.M, problem.N), dtype=torch_dtype(problem.out), device=a.device)
    kernel = _loaded("block_scaled", config.kernel_params(problem.dtype, problem.out))
    launches = Launches()
    if sa.data_ptr() != scale_a.data_ptr() or sb.data_ptr() != scale_b.data_ptr():  # copies: refreshed every launch
        launches.append(Copies(((scale_a.t(), sa), (scale_b, sb))))
    launches.append(kernel.prepare(a, b.t(), sa, sb, c))
    launches.keep = [a, b, scale_a, scale_b, sa, sb, c]
    return c, launches


class Copies:
    """A prepared launch of tensor copies (``(source, destination)`` pairs, any strides): where a kernel reads an
    operand in another layout than the caller's (a block-scaled call's scales when scale_a is not column-major, an
    attention call's (B, S, H, D) query as (B, H, S, D)), or writes its result so, the copy is one of the call's
    launches, so that a relaunch (a timing loop, a captured CUDA graph) reads the operands' current values."""

    def __init__(self, pairs: tuple) -> None:
        self.pairs = tuple((src, dst) for src, dst in pairs if src.data_ptr() != dst.data_ptr())

    def launch(self) -> None:
        for src, dst in self.pairs:
            dst.copy_(src)


def block_scaled_mm(
    a: Any, b: Any, scale_a: Any, scale_b: Any, *, out_dtype: Any = None, config: BlockScaledConfig | None = None
) -> Any:
    """``torch._scaled_mm`` with block-wise scales (DeepSeek-V3's recipe): FP8 a (M, K) row-major and b (K, N)
    column-major (``w.t()``), scale_a (M, KB) f32 one per row and 128-element K-block of a, scale_b (KB, NB) f32 one
    per 128 x 128 block of b; C = sum over the K-blocks of each block's product times its scales, in `out_dtype`
    (bf16 by default), on `argus.kernels.gemm_fp8.gemm_fp8_block_scaled` (the products of each K-block promoted into
    an f32 sum in registers). K must be a multiple of 16 and N of 8 (bf16 C)."""
    c, launches = prepare_block_scaled(a, b, scale_a, scale_b, out_dtype=out_dtype, config=config)
    for launch in launches:
        launch.launch()
    return c


def _epilogue_of(expression: str, m: int, n: int, operands: dict[str, Any]) -> Epilogue:
    """The `Epilogue` of one expression, each operand's kind read off its shape (see `matmul`)."""
    kinds: dict[str, tuple[str, str]] = {}
    for name, x in operands.items():
        shape = tuple(x.shape)
        kind = {(n,): "columns", (m,): "rows", (m, n): "tile"}.get(shape)
        if kind is None or (shape == (n,) and m == n):
            raise GemmError(
                f"epilogue operand {name!r} of shape {shape}: give an (N,) = ({n},) per-column vector, an (M,) = "
                f"({m},) per-row vector or an (M, N) tile (with M == N, pass an Epilogue to say which a vector is)"
            )
        kinds[name] = (kind, _TORCH_DTYPES.get(str(x.dtype).removeprefix("torch."), str(x.dtype)))
    try:
        return Epilogue.of(expression, **kinds)
    except EpilogueError as e:
        raise GemmError(str(e)) from None


class LibraryGemm:
    """The GEMM as one step of a generated solution (`argus solve`'s matmul-like groups): ``c = op(a) @ op(b)``,
    op the transpose where the group took one (`transpose_a`, `transpose_b`), on the CPU interpreter for CPU tensors
    (`GemmPlan.run_on_interpreter`: small sizes) and with `matmul` for CUDA tensors. `problem` is the captured
    problem (as the operands arrive untransposed, contiguous): `kernels` are the traced kernels of its plan, which
    the pipeline verifies; a call plans for the tensors it is given."""

    library = True

    def __init__(
        self,
        name: str,
        problem: GemmProblem,
        transpose_a: bool = False,
        transpose_b: bool = False,
        order: tuple[int, int] = (0, 1),
        epilogue: Epilogue | None = None,
        epilogue_order: tuple[int, ...] = (),
        keepdim: bool = False,
    ):
        self.name = name
        #: a reducing epilogue's result keeps the reduced axis (M, 1) rather than (M,)
        self.keepdim = keepdim
        self.problem = problem
        self.transpose_a = transpose_a
        self.transpose_b = transpose_b
        self.order = tuple(order)  # the positions of a and b among the call's inputs (one tensor may be both)
        #: the fused epilogue, and the positions of its operands (in `Epilogue.operands` order) among the inputs:
        #: each given in any shape with its elements in order ((N,) or (1, N) columns, (M, 1) rows, ...)
        self.epilogue = epilogue
        self.epilogue_order = tuple(epilogue_order)
        if len(self.epilogue_order) != len(epilogue.operands if epilogue else ()):
            raise GemmError(f"{name}: one input position per epilogue operand, got {self.epilogue_order}")
        #: prepared launches of recent calls, by the (address, shape, strides, dtype, device) of a, b and c and the
        #: current stream (`launch_signature`): a call on the same tensors and stream again (a model's forward, a
        #: timing loop) skips the binding (argument checks, TMA descriptors: about 0.3 ms of host time), which
        #: depends on nothing else
        self._prepared: dict[tuple, tuple[Any, list[Any]]] = {}

    def __repr__(self) -> str:
        flags = f"transpose_a={self.transpose_a}, transpose_b={self.transpose_b}, order={self.order}"
        if self.epilogue is not None:
            flags += f", epilogue={self.epilogue}, epilogue_order={self.epilogue_order}"
        if self.keepdim:
            flags += ", keepdim=True"
        return f"LibraryGemm({self.name!r}, {self.problem}, {flags})"

    def plan(self) -> GemmPlan:
        """The captured problem's plan: on a machine with a GPU, a configuration tuned for it there
        (`tuned_config`), which the GPU calls will take too; else the model's."""
        problem = member(self.problem) if unbatched(self.problem) else self.problem  # (each matrix's plan)
        default = plan(problem, epilogue=self.epilogue)
        if default.is_gemv or not _cuda_available():
            return default
        tuned = tuned_config(problem, None, self.epilogue)
        return default if tuned is None else plan(problem, tuned, epilogue=self.epilogue)

    def _operands(self, inputs: list[Any], m: int, n: int) -> dict[str, Any]:
        """The epilogue's tensors by name, in the shapes it reads them: (N,), (M,) or (M, N), contiguous."""
        if self.epilogue is None:
            return {}
        shapes = {"columns": (n,), "rows": (m,), "tile": (m, n)}
        found = {}
        for o, i in zip(self.epilogue.operands, self.epilogue_order, strict=True):
            x = inputs[i]
            if x.numel() != math.prod(shapes[o.kind]):
                raise GemmError(
                    f"{self.name}: epilogue operand {o.name!r} ({o.kind}) has {tuple(x.shape)}, not {shapes[o.kind]}"
                )
            found[o.name] = x.contiguous().reshape(shapes[o.kind])
        return found

    def kernels(self) -> list[Any]:
        """The traced kernels the captured problem's plan launches, in order: the splits (f32), the GEMM, the
        split-K reduction."""
        return self.plan().kernels()

    def empty_output(self, *inputs: Any) -> Any:
        """An uninitialized C for these inputs: (rows of op(a), columns of op(b)) in the inputs' dtype."""
        import torch

        a, b = inputs[self.order[0]], inputs[self.order[1]]
        rows = a.shape[-1] if self.transpose_a else a.shape[-2]
        cols = b.shape[-2] if self.transpose_b else b.shape[-1]
        if self.epilogue is not None and self.epilogue.reduce is not None:  # each row reduced: (rows,) or (rows, 1)
            return torch.empty((*a.shape[:-2], rows, *((1,) if self.keepdim else ())), dtype=a.dtype, device=a.device)
        return torch.empty((*a.shape[:-2], rows, cols), dtype=a.dtype, device=a.device)

    def __call__(self, *tensors: Any, device: Any = None) -> None:
        """Compute into the last of `tensors` from the inputs before it (a and b at `order`)."""
        import numpy as np
        import torch

        *inputs, c = tensors
        a, b = inputs[self.order[0]], inputs[self.order[1]]
        a = _gemm_operand(_t(a) if self.transpose_a else a)
        b = _gemm_operand(_t(b) if self.transpose_b else b)
        if a.dim() > 2 and b.dim() == 2:  # a tensor times a matrix (a linear layer on a batch of sequences)
            a = a.reshape(-1, a.shape[-1]) if a.is_contiguous() else a.contiguous().reshape(-1, a.shape[-1])
        operands = self._operands(inputs, a.shape[-2], b.shape[-1])
        if c.is_cuda:
            from argus.runtime.loaded import launch_signature

            # the tensors and the current stream: a prepared launch is bound to the stream it was prepared on
            key = launch_signature((a, b, c, *operands.values()))
            found = self._prepared.pop(key, None) if key is not None else None
            # a parameter's split parts (f32) are made again only when torch's version counter says it changed
            raw = [inputs[self.order[i]] for i in (0, 1)]
            params = [i for i in (0, 1) if CACHE_PARAMETER_SPLITS and isinstance(raw[i], torch.nn.Parameter)]
            versions = {i: (raw[i].data_ptr(), raw[i]._version) for i in params}
            if found is None:
                c2 = c.view(-1, c.shape[-1]) if c.dim() > 2 and b.dim() == 2 else c
                if self.epilogue is not None and self.epilogue.reduce is not None:
                    c2 = c.view(-1)  # the (M,) reductions
                found = (*prepare(a, b, out_dtype=c.dtype, out=c2, epilogue=self.epilogue, operands=operands), {})
            # kept for the next call on the same tensors (most recent last), unless the call copied an operand when
            # it was prepared (zero padding, a GEMV's layout): relaunched, it would read that copy's stale values
            launches = found[1]
            # a parameter's split parts count as the parameter's own (a converted copy of it, held while it lasts)
            held = (a, b, c, *operands.values(), *[launches.splits[i][1] for i in params if i in launches.splits])
            kept = _workspace_bytes(launches, held) <= PREPARED_BYTES
            skip = {launches.splits[i][0] for i in params if i in launches.splits and found[2].get(i) == versions[i]}
            if key is not None and not launches.copies and kept:
                self._prepared[key] = (found[0], launches, {**found[2], **versions})
            while len(self._prepared) > PREPARED_CALLS:
                self._prepared.pop(next(iter(self._prepared)))
            result = found[0]
            for index, launch in enumerate(launches):
                if index not in skip:  # (a parameter whose split parts are those of its current values)
                    launch.launch()
            if result.data_ptr() != c.data_ptr():  # a padded plan: C came out larger, then sliced
                c.copy_(result.reshape(c.shape))
            return
        problem = problem_of(a, b, c.dtype)
        extra = {k: v.double().numpy() for k, v in operands.items()}
        if unbatched(problem):  # one 2-d product per matrix, as a GPU call runs it
            the_plan = plan(member(problem), epilogue=self.epilogue)
            parts = [the_plan.run_on_interpreter(a[i].double().numpy(), b[i].double().numpy(), operands=extra)
                     for i in range(problem.batch)]  # fmt: skip
            c.copy_(torch.from_numpy(np.stack(parts)).to(c.dtype).reshape(c.shape))
            return
        the_plan = plan(problem, epilogue=self.epilogue)
        result = the_plan.run_on_interpreter(a.double().numpy(), b.double().numpy(), operands=extra)
        c.copy_(torch.from_numpy(result).to(c.dtype).reshape(c.shape))


#: A `LibraryGemm` call whose f32 operand is a ``torch.nn.Parameter`` (a module's weight, as `argus solve`'s models
#: pass them) splits it into its bf16 parts (`split_bf16x3`) once, and again only when its data pointer or torch's
#: version counter changes (every in-place torch op on it, ``load_state_dict``, an optimizer step): the split reads
#: 4 and writes 4 bytes per weight element on every call otherwise, which at 128 rows against a 32768 x 32768 weight
#: is most of the call. Writes that bypass the version counter (through ``.data``, or a kernel writing through its raw
#: pointer) are not seen: switch this off for a model updated that way. The parts are held with the call's prepared
#: launches (as much memory as the parameter).
CACHE_PARAMETER_SPLITS = True

#: How many recent calls' prepared launches a `LibraryGemm` keeps (each holds its split and split-K workspaces), and
#: the most workspace one kept call may hold: a larger plan is prepared again on every call (its binding's 0.3 ms is
#: small next to a GEMM that large, and holding its workspace would take memory the caller may need; KernelBench's
#: matrix-vector problem splits a 2048 x 1048576 f32 operand into 12.9 GB of bf16 parts).
PREPARED_CALLS = 2
PREPARED_BYTES = 1 << 30


def _workspace_bytes(launches: Launches, callers: tuple[Any, ...]) -> int:
    """Bytes `launches` hold beyond the caller's own tensors."""
    owned = {t.data_ptr() for t in callers}
    return sum(t.numel() * t.element_size() for t in launches.keep if t.data_ptr() not in owned)


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken CUDA install: no GPU to tune for
        return False


def _gemm_operand(x: Any) -> Any:
    """`x`, or a contiguous copy when it is neither row-major nor a transposed row-major tensor."""
    try:
        _major(x, "K", "M")
    except GemmError:
        return x.contiguous()
    return x


__all__ = [
    "member",
    "unbatched",
    "Copies",
    "GemvConfig",
    "GemmConfig",
    "GemmError",
    "GemmPlan",
    "GemmProblem",
    "LibraryGemm",
    "SplitStep",
    "candidates",
    "candidates_for",
    "choose",
    "device_sms",
    "plan_tiles",
    "ranked",
    "tuned_config",
    "gemv_config",
    "estimate",
    "kernel_problem",
    "matmul",
    "padded_extent",
    "plan",
    "BlockScaledConfig",
    "block_scaled_config",
    "block_scaled_mm",
    "block_scaled_on_interpreter",
    "block_scales",
    "prepare",
    "prepare_block_scaled",
    "problem_of",
    "scaled_mm",
    "scaled_operands",
    "shares_storage",
    "split_steps",
    "torch_dtype",
]
