"""The 192-row and 192-column tiles (issue #20, wave quantization at mid-size shapes): 192 rows on three consumer
warpgroups (`gemm_warp_specialized_persistent` with CONSUMERS=3; the block of four warpgroups compiles at 128
registers a thread, so the 64 x 256 accumulator of a 192 x 256 tile does not fit and is not offered), 192 columns
(wgmma's n192) on two. Correct on the interpreter through the plan a GPU call launches (TMA and direct stores,
split-K, the split tail and its reduction at 192 columns), verified, compiled without spills; the planner offers them
where the previous tiles quantize badly; the epilogue tiles leave the three-warpgroup tile out (its registers)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from argus.atoms.target import DEFAULT_TARGET
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import matmul as mm
from argus.kernels.gemm import gemm_tail_reduce, gemm_warp_specialized_persistent, tail_reduce_rows
from argus.verify import Verdict, verify

#: the interpreter's GPU: 4 SMs, so that small problems have whole waves and a tail
SMALL = replace(DEFAULT_TARGET, sms=4)


def _operands(m: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return round_to(bf16, rng.standard_normal((m, k))), round_to(bf16, rng.uniform(-1, 1, (k, n)))


@pytest.mark.parametrize(
    ("shape", "config", "target"),
    [
        # 192 rows on three consumer warpgroups, TMA stores; M past one tile, N not a multiple of the tile
        ((200, 300, 136), mm.GemmConfig(192, 128, 3, 4, EPILOGUE="tma"), DEFAULT_TARGET),
        # 192 columns (wgmma n192), two consumers, TMA stores in three 64-column chunks
        ((130, 400, 136), mm.GemmConfig(128, 192, 2, 4, EPILOGUE="tma"), DEFAULT_TARGET),
        # 192 x 192 on three consumers, split-K in two
        ((250, 200, 520), mm.GemmConfig(192, 192, 3, 3, SPLITS=2), DEFAULT_TARGET),
        # a split tail at 192 columns: 2 x 3 tiles on 4 SMs, 4 whole, 2 in the tail split 3 ways
        ((200, 520, 330), mm.GemmConfig(128, 192, 2, 3, TAIL=3), SMALL),
        # a split tail at 192 x 192 on three consumers: 2 x 3 tiles, 4 whole, 2 split 2 ways
        ((300, 400, 260), mm.GemmConfig(192, 192, 3, 3, TAIL=2), SMALL),
    ],
)
def test_the_wide_tiles_are_correct_on_the_interpreter(shape, config, target) -> None:
    m, n, k = shape
    plan = mm.plan(mm.GemmProblem(m, n, k, "bf16", "f32", b_major="K"), config)
    if config.TAIL > 1:
        assert [x.name for x in plan.kernels(target)][-2:] == ["gemm_persistent_split_tail", "gemm_tail_reduce"]
    a, b = _operands(m, n, k, sum(shape))
    c = plan.run_on_interpreter(a, b, target=target)
    want = a @ b
    assert np.abs(c - want).max() < 1e-4 * max(1.0, np.abs(want).max())


def test_a_tail_reduction_of_192_columns_takes_rows_that_divide_the_tile() -> None:
    assert tail_reduce_rows(128, 128) == 8 and tail_reduce_rows(64, 256) == 4
    assert tail_reduce_rows(128, 192) == 4 and tail_reduce_rows(192, 192) == 4  # 1024 // 192 = 5 divides neither
    assert tail_reduce_rows(192, 128) == 8
    traced = gemm_tail_reduce.trace(TAIL=2, BM=192, BN=192, BLOCKS=132, OUT="bf16")
    assert verify(traced).verdict == Verdict.VERIFIED


@pytest.mark.parametrize(("bm", "bn", "consumers", "hgmma"), [(192, 128, 3, "64x128x16"), (128, 192, 2, "64x192x16")])
def test_the_wide_tiles_are_verified_and_compile_without_spills(bm: int, bn: int, consumers: int, hgmma: str) -> None:
    params = mm.GemmConfig(bm, bn, consumers, 3, EPILOGUE="tma").kernel_params(mm.GemmProblem(4096, 4096, 4096))
    traced = gemm_warp_specialized_persistent.trace(**params)
    assert verify(traced).verdict == Verdict.VERIFIED
    compiled = compile_kernel(traced)
    mix = compiled.instruction_mix(modifiers=True)
    assert mix[f"HGMMA.{hgmma}.F32.BF16"] == 4, mix  # four k16 steps per 64-element K-block, per consumer
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0


def test_three_consumer_warpgroups_get_the_register_file_s_share() -> None:
    params = mm.GemmConfig(192, 128, 3, 4).kernel_params(mm.GemmProblem(4096, 4096, 4096))
    # (65536 / 128 - 40 for the producer) / 3, rounded down to setmaxnreg's multiple of 8
    assert params["CONSUMERS"] == 3 and params["CONSUMER_REGS"] == 152
    assert "CONSUMER_REGS" not in mm.GemmConfig(128, 256, 2, 4).kernel_params(mm.GemmProblem(4096, 4096, 4096))
    assert all(consumers <= 2 for _, _, consumers in mm.EPILOGUE_TILES)  # a second tile would not fit 152


#: the planner's tiles before these (what `benchmarks/gemm_shapes.py --previous-tiles` plans with)
PREVIOUS = ((128, 256, 2), (128, 128, 2), (64, 256, 1), (64, 128, 1), (64, 64, 1))


def _busy(shape: tuple[int, int, int], config: mm.GemmConfig) -> float:
    """The share of the SMs' wave slots a configuration's units fill (units over whole waves of units)."""
    units = -(-shape[0] // config.BM) * -(-shape[1] // config.BN) * config.SPLITS
    return units / (-(-units // DEFAULT_TARGET.sms) * DEFAULT_TARGET.sms)


@pytest.mark.parametrize("shape", [(1536, 1536, 1536), (3072, 3072, 768), (20480, 256, 4096), (768, 6144, 2048)])
def test_the_planner_fills_the_sms_better_where_the_previous_tiles_quantized_badly(shape) -> None:
    # measured on an H100 (benchmarks/results/2026-12-02-gemm-tiles): the previous choice 0.71, 0.82, 0.73 and 0.71x
    # cuBLAS there, with 55, 73, 61 and 73 % of its wave slots busy
    problem = mm.GemmProblem(*shape, "bf16", "bf16")
    saved = mm.WAVE_FIT
    try:
        mm.WAVE_FIT = False  # the planner then: no tiles narrowed to fill waves either
        previous = mm.choose.__wrapped__(problem, tiles=PREVIOUS, swap=False)
    finally:
        mm.WAVE_FIT = saved
    chosen = mm.choose(problem)
    assert previous.TAIL == 1 and chosen.TAIL == 1
    assert (chosen.BM, chosen.BN, chosen.CONSUMERS) not in PREVIOUS
    assert _busy(shape, chosen) > _busy(shape, previous) + 0.1, (chosen.label, previous.label)


# --- tiles narrowed to N ------------------------------------------------------------------------------------------


def test_tiles_are_narrowed_to_the_columns_where_the_last_column_tile_would_be_mostly_empty() -> None:
    few = mm.fitted_tiles(mm.GemmProblem(3488, 272, 2216), mm.TILES)
    # two column tiles of 272 / 2 = 136, rounded up to the lane exchange's 32 (16-byte stores): 160
    assert (128, 160, 2) in few and (192, 160, 3) in few and (64, 160, 1) in few
    assert all(bn % 32 == 0 for _, bn, _ in few)
    # one column tile (N = 72 on 128 columns): N rounded up to 32 too
    assert (128, 96, 2) in mm.fitted_tiles(mm.GemmProblem(30000, 72, 4096), mm.TILES)
    # B N-major: its stages are loaded in 64-column panels
    assert all(bn % 64 == 0 for _, bn, _ in mm.fitted_tiles(mm.GemmProblem(3488, 272, 2216, b_major="N"), mm.TILES))
    # N a multiple of the tiles, or the last tile nearly full: nothing
    assert mm.fitted_tiles(mm.GemmProblem(4096, 4096, 4096), mm.TILES) == ()
    assert mm.fitted_tiles(mm.GemmProblem(4096, 1000, 4096), ((128, 256, 2),)) == ()
    labels = {(c.BM, c.BN) for c in mm.candidates(mm.GemmProblem(3488, 272, 2216))}
    assert (128, 160) in labels


def test_tiles_are_narrowed_to_fill_the_sms_in_the_waves_they_take() -> None:
    # 768 x 1536 on 64x256 tiles: 12 x 6 = 72 tiles for 132 SMs; 11 column tiles per row of tiles fit one wave:
    # 1536 / 11 = 140 columns, rounded up to 32 (the lane exchange's 16-byte stores): 64x160, 12 x 10 = 120 tiles
    problem = mm.GemmProblem(768, 1536, 1024)
    waved = mm.wave_tiles(problem, mm.TILES)
    assert (64, 160, 1) in waved and all(bn % 32 == 0 for _, bn, _ in waved)
    for bm, bn, consumers in waved:  # each keeps the waves of a tile it narrows, with more tiles in them
        (wider,) = [t for t in mm.TILES if t[0] == bm and t[2] == consumers and t[1] > bn][-1:]
        rows = -(-768 // bm)
        assert -(-rows * -(-1536 // bn) // 132) == -(-rows * -(-1536 // wider[1]) // 132)
        assert rows * -(-1536 // bn) > rows * -(-1536 // wider[1])
    # B N-major: whole 64-column panels
    assert all(bn % 64 == 0 for _, bn, _ in mm.wave_tiles(mm.GemmProblem(768, 1536, 1024, b_major="N"), mm.TILES))
    # full waves already (4096^3 on 128x256: 512 tiles, the last wave's 116 of 132 cannot take a narrower tile): none
    assert (128, 256, 2) not in {t[:1] + t[1:] for t in mm.wave_tiles(mm.GemmProblem(4096, 4096, 4096), mm.TILES)}
    assert mm.wave_tiles(mm.GemmProblem(4096, 4096, 4096), ((128, 256, 2),)) == ()
    # the planner picks the narrowed tile where the model says it pays (measured: 0.83 -> 0.92x cuBLAS on an H200,
    # benchmarks/results/2026-12-04-gemm-cluster-small/, call 4), and is back to the unnarrowed one without them
    assert (mm.choose(problem).BM, mm.choose(problem).BN) == (64, 160)
    saved = mm.WAVE_FIT
    try:
        mm.WAVE_FIT = False
        assert (mm.choose.__wrapped__(problem).BM, mm.choose.__wrapped__(problem).BN) == (64, 256)
    finally:
        mm.WAVE_FIT = saved


def test_a_narrowed_tile_s_efficiency_lies_between_its_measured_neighbours() -> None:
    assert mm.mma_efficiency(128, 160) == mm.MMA_EFFICIENCY[(128, 160)]
    assert mm.MMA_EFFICIENCY[(128, 128)] < mm.mma_efficiency(128, 144) < mm.MMA_EFFICIENCY[(128, 160)]
    between = (mm.MMA_EFFICIENCY[(64, 160)] + mm.MMA_EFFICIENCY[(64, 224)]) / 2
    assert mm.mma_efficiency(64, 192) == pytest.approx(between)
    # narrower than every measured width (a swap-AB tile): in proportion to the width
    assert mm.mma_efficiency(128, 64) == pytest.approx(mm.MMA_EFFICIENCY[(128, 128)] / 2)


@pytest.mark.parametrize(
    ("shape", "config"),
    [
        ((150, 272, 136), mm.GemmConfig(128, 160, 2, 3)),  # two column tiles of 160: the second 112 past N
        ((100, 72, 300), mm.GemmConfig(128, 96, 2, 4)),  # one column tile of 96 (wgmma n96), 24 columns past N
        ((200, 272, 520), mm.GemmConfig(192, 160, 3, 3, SPLITS=2)),  # three consumers, split-K
        ((70, 272, 136), mm.GemmConfig(64, 160, 1, 4)),  # one consumer
    ],
)
def test_narrowed_tiles_are_correct_on_the_interpreter(shape, config) -> None:
    m, n, k = shape
    problem = mm.GemmProblem(m, n, k, "bf16", "f32", b_major="K")
    assert any((c.BM, c.BN, c.CONSUMERS) == (config.BM, config.BN, config.CONSUMERS) for c in mm.candidates(problem))
    plan = mm.plan(problem, config)
    a, b = _operands(m, n, k, sum(shape))
    c = plan.run_on_interpreter(a, b)
    want = a @ b
    assert np.abs(c - want).max() < 1e-4 * max(1.0, np.abs(want).max())


def test_a_narrowed_tile_stores_in_16_byte_vectors_and_a_tail_needs_whole_warps() -> None:
    plan = mm.plan(mm.GemmProblem(4096, 272, 1024, "bf16", "bf16"), mm.GemmConfig(128, 160, 2, 4))
    compiled = compile_kernel(plan.kernels()[0])
    mix = compiled.instruction_mix(modifiers=True)
    assert mix.get("STG.E.128", 0) > 0 and mix.get("HGMMA.64x160x16.F32.BF16") == 4, mix
    assert compiled.resources.spill_stores == 0
    # a split tail's reduction runs rows of BN / 4 threads: whole warps only where BN is a multiple of 32 (a tile of
    # 72 columns: a configuration given by the caller)
    problem = mm.GemmProblem(30000, 72, 4096)
    whole = mm.GemmConfig(128, 72, 2, 4)
    assert mm.tail_candidates(problem, whole, 64, DEFAULT_TARGET) == []


def test_a_fused_epilogue_plans_three_consumers_only_up_to_128_columns() -> None:
    from argus.kernels.epilogue import Epilogue

    chain = Epilogue.of("T.maximum(acc * scale + bias, 0.0) + rowb", bias="columns", rowb="rows", scale="scalar")
    tiles = mm.plan_tiles(chain)
    assert (192, 128, 3) in tiles and (192, 192, 3) not in tiles and (128, 192, 2) in tiles
    # where the plain product takes 192 x 192
    plan = mm.plan(mm.GemmProblem(768, 6144, 2048, "bf16", "bf16"), epilogue=chain)
    assert plan.config.CONSUMERS < 3 or plan.config.BN <= 128, plan.config.label
    compiled = compile_kernel(mm.plan(mm.GemmProblem(4096, 4096, 4096), mm.GemmConfig(192, 128, 3, 4), epilogue=chain)
                              .kernels()[0])  # fmt: skip
    assert compiled.resources.spill_stores == 0
