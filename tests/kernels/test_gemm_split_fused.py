"""Split-K summed in the GEMM kernel (issue #20, `gemm_split_fused`, `GemmConfig.FUSE`): the units of a tile store
their f32 slices, meet at a group barrier on the tile's counter and each sum BM / SPLITS rows of every slice into C,
in one launch instead of the split plan's two. Correct on the interpreter through exactly the plan a GPU call
launches (one and two consumer warpgroups, three on 192-row tiles, clusters, TMA-stored and direct slices, f32 by
split precision, odd sizes; the same sums as the two launches'); the plan fuses wherever it can and says why not
elsewhere; compiled to HGMMA, TMA and the barrier's atomic add; verified: every unit reads a slice only after the
slice's writer has arrived at the tile's counter (`checks/global_reads.py`; seeded mistakes in
`tests/verify/test_global_reads.py`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from argus.atoms.target import DEFAULT_TARGET
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue

#: the interpreter's GPU: 8 SMs, so that small problems take several units per block
SMALL = replace(DEFAULT_TARGET, sms=8)


def _operands(problem: mm.GemmProblem, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((problem.M, problem.K))
    b = rng.uniform(-1, 1, (problem.K, problem.N))
    return (round_to(bf16, a), round_to(bf16, b)) if problem.dtype == "bf16" else (a, b)


@pytest.mark.parametrize(
    ("shape", "majors", "config"),
    [
        # 3 x 2 tiles of 64 x 64, 4 splits: 24 units, a block each (one wave), K = 640 (10 K-blocks: 3, 3, 3, 1)
        ((130, 72, 640), ("K", "N"), mm.GemmConfig(64, 64, 1, 2, SPLITS=4)),
        # two consumer warpgroups in 2-block clusters (an odd count of row tiles: the pair's second tile is empty)
        ((300, 136, 704), ("K", "K"), mm.GemmConfig(128, 64, 2, 2, SPLITS=2, CLUSTER=2)),
        # the slices through TMA stores, M-major A
        ((70, 136, 520), ("M", "N"), mm.GemmConfig(64, 64, 1, 3, SPLITS=2, EPILOGUE="tma")),
        # three consumer warpgroups on 192-row tiles
        ((200, 136, 384), ("K", "K"), mm.GemmConfig(192, 128, 3, 2, SPLITS=2)),
        # a split that gets no K-block (3 K-blocks in 4 splits of 1): its slice is zeros
        ((64, 64, 192), ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=4)),
        # 3 splits of a 64-row tile: the first 2 units sum 32 rows each, the third only arrives
        ((130, 72, 640), ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=3)),
        # 6 splits of a 128-row tile on two consumer warpgroups in clusters: 4 reducers of 32 rows
        ((260, 64, 1536), ("K", "K"), mm.GemmConfig(128, 64, 2, 2, SPLITS=6, CLUSTER=2)),
        # 16 splits of a 64 x 64 tile: 4 rows a unit would not fill 128 threads' vectors; 8 reducers of 8 rows
        ((64, 64, 2048), ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=16)),
    ],
)
def test_a_fused_split_is_correct_on_the_interpreter(shape, majors, config) -> None:
    problem = mm.GemmProblem(*shape, "bf16", "bf16", *majors)
    plan = mm.plan(problem, replace(config, FUSE=True))
    assert [k.name for k in plan.kernels(SMALL)][-1] == "gemm_split_fused"
    assert "gemm_split_reduce" not in [k.name for k in plan.kernels(SMALL)]
    a, b = _operands(problem, sum(shape))
    c = plan.run_on_interpreter(a, b, target=SMALL)
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    # C in bf16: one rounding of the f32 sum (NaN, an element never written, fails)
    assert float(np.max(np.abs(c - ref)) / np.max(np.abs(ref))) < 8e-3
    two = mm.plan(problem, replace(config, FUSE=False)).run_on_interpreter(a, b, target=SMALL)
    np.testing.assert_array_equal(c, two)  # the same sums, in the same order, as the reduction kernel's


def test_an_f32_product_fuses_its_split_after_the_split_precision_passes() -> None:
    problem = mm.GemmProblem(136, 72, 300, "f32", "f32", "K", "N")
    plan = mm.plan(problem, mm.GemmConfig(64, 64, 1, 3, SPLITS=2, FUSE=True))
    assert [k.name for k in plan.kernels(SMALL)] == ["split_bf16x3", "split_bf16x3", "gemm_split_fused"]
    a, b = _operands(problem, 5)
    c = plan.run_on_interpreter(a, b, target=SMALL)
    assert np.max(np.abs(c - a @ b)) / np.max(np.abs(a @ b)) < 1e-5


def test_the_plan_fuses_a_split_wherever_it_can() -> None:
    split = mm.plan(mm.GemmProblem(1024, 1024, 16384, "bf16", "bf16", "K", "K"))
    assert split.config.SPLITS > 1 and split.config.FUSE is True, split.config
    assert split.config.label.endswith(" fused") and [k.name for k in split.kernels()] == ["gemm_split_fused"]
    unsplit = mm.plan(mm.GemmProblem(4096, 4096, 4096, "bf16", "bf16", "K", "K"))
    assert unsplit.config.FUSE is None and unsplit.config == mm.choose(unsplit.problem)
    # the choice is a configuration of the model's: the plan adds the fusion, which the model does not rank
    assert mm.choose(split.problem) == replace(split.config, FUSE=None)
    explicit = mm.plan(split.problem, replace(split.config, FUSE=False))
    assert [k.name for k in explicit.kernels()] == ["gemm_warp_specialized_persistent", "gemm_split_reduce"]


def test_the_plan_fuses_only_where_the_gemm_is_the_call_s_first_launch() -> None:
    # K = 964: A and B copied to padded buffers first, after which the cooperative launch waits for the copies in full
    padded = mm.plan(mm.GemmProblem(83, 880, 964, "bf16", "bf16", "K", "K"))
    assert padded.needs_padding and padded.config.SPLITS > 1 and not padded.config.FUSE
    assert mm.plan(padded.problem, replace(padded.config, FUSE=True)).config.FUSE  # asked for, it runs
    f32 = mm.plan(mm.GemmProblem(1024, 1024, 16384, "f32", "f32", "K", "K"))  # after the split-precision passes
    assert f32.config.SPLITS > 1 and not f32.config.FUSE


def test_the_switch_turns_the_fusion_off(monkeypatch) -> None:
    monkeypatch.setattr(mm, "FUSE_SPLITS", False)
    mm._plan_cached.cache_clear()
    try:
        plan = mm.plan(mm.GemmProblem(1024, 1024, 16384, "bf16", "bf16", "K", "K"))
        assert plan.config.SPLITS > 1 and not plan.config.FUSE
    finally:
        monkeypatch.undo()
        mm._plan_cached.cache_clear()


@pytest.mark.parametrize(
    ("problem", "config", "epilogue", "reason"),
    [
        (mm.GemmProblem(4096, 4096, 4096), mm.GemmConfig(128, 256, 2, 4, SPLITS=4), None, "more than one wave"),
        (mm.GemmProblem(512, 512, 65536), mm.GemmConfig(128, 128, 2, 4, SPLITS=32), None, "more than one wave"),
        (mm.GemmProblem(512, 512, 8192), mm.GemmConfig(128, 128, 2, 4), None, "SPLITS > 1"),
        (mm.GemmProblem(512, 512, 8192), mm.GemmConfig(128, 128, 2, 4, SPLITS=2), "epilogue", "epilogue"),
    ],
)
def test_what_cannot_be_fused_is_refused_with_the_reason(problem, config, epilogue, reason) -> None:
    ep = Epilogue.of("out = acc + bias", bias="columns") if epilogue else None
    with pytest.raises(mm.GemmError, match=reason):
        mm.plan(problem, replace(config, FUSE=True), epilogue=ep)
    if config.SPLITS > 1:  # the plan's own decision: not fused, the two launches
        assert not mm.plan(problem, config, epilogue=ep).config.FUSE


@pytest.mark.parametrize(
    ("config", "reducers"),
    [
        (mm.GemmConfig(128, 256, 2, 4, SPLITS=16), 16),  # 8 rows x 256 columns: one vector for each of 256 threads
        (mm.GemmConfig(128, 256, 2, 4, SPLITS=3), 2),  # 3 does not divide 128
        (mm.GemmConfig(128, 256, 2, 4, SPLITS=12), 8),
        (mm.GemmConfig(128, 128, 2, 3, SPLITS=32), 16),  # 4 rows x 128 = 512 elements: too few for 256 threads
        (mm.GemmConfig(192, 128, 3, 4, SPLITS=6), 4),  # 32 rows x 128 is not a vector for each of 384 threads
        (mm.GemmConfig(192, 128, 3, 4, SPLITS=5), 4),
        (mm.GemmConfig(64, 4, 1, 4, SPLITS=2), None),  # 256 elements: not a vector for each of 128 threads
    ],
)
def test_the_reducers_of_a_tile_divide_its_rows_into_whole_vectors(config, reducers) -> None:
    assert config.reducers() == reducers
    if reducers is None:
        problem = mm.GemmProblem(64, 64, 8192, "bf16", "bf16", "K", "K")
        assert "4-element vectors" in mm.fuse_refusal(problem, replace(config, FUSE=True))


def test_the_plan_fuses_partial_reducers_only_when_switched_on(monkeypatch) -> None:
    # 768x768x3072: the model's 64x256 split3 (3 does not divide 64: two units sum the tile, the third only arrives)
    problem = mm.GemmProblem(768, 768, 3072, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem)
    assert plan.config.SPLITS == 3 and plan.config.reducers() == 2 and not plan.config.FUSE, plan.config
    assert dict(mm.plan(problem, replace(plan.config, FUSE=True)).main_params())["REDUCERS"] == 2
    monkeypatch.setattr(mm, "FUSE_PARTIAL", True)
    mm._plan_cached.cache_clear()
    try:
        assert mm.plan(problem).config.FUSE
    finally:
        monkeypatch.undo()
        mm._plan_cached.cache_clear()


def test_a_swap_ab_split_is_not_fused() -> None:
    problem = mm.GemmProblem(32, 4096, 14336, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem)
    assert plan.config.SWAP and plan.config.SPLITS > 1 and not plan.config.FUSE
    with pytest.raises(mm.GemmError, match="swap-AB"):
        mm.plan(problem, replace(plan.config, FUSE=True))


def test_the_fused_kernel_compiles_to_hgmma_tma_and_the_barrier() -> None:
    plan = mm.plan(mm.GemmProblem(512, 512, 65536, "bf16", "bf16", "K", "K"))
    assert plan.config.FUSE and plan.config.CLUSTER == 2 and plan.config.EPILOGUE == "tma", plan.config
    (kernel,) = plan.kernels()
    compiled = compile_kernel(kernel, dependent=mm.DEPENDENT_LAUNCHES)
    mix = compiled.instruction_mix(modifiers=True)
    assert sum(v for k, v in mix.items() if k.startswith("HGMMA")) > 0
    assert sum(v for k, v in mix.items() if k.startswith("UTMALDG")) > 0
    assert sum(v for k, v in mix.items() if k.startswith("UTMASTG")) > 0  # the slices through TMA stores
    assert mix["ATOMG.E.ADD.STRONG.GPU"] == 1 and mix["LDG.E.STRONG.GPU"] == 1, mix
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    # the TMA stores of the slices complete (and are fenced) before the arrival
    source = compiled.generated.source
    wait = source.index("argus::tma_store_wait_all();  // this thread's TMA stores have written global memory")
    assert wait < source.index("argus::group_barrier(F") and "fence.proxy.async.global" in source[wait:]


def test_the_fused_kernel_is_verified() -> None:
    from argus.verify import Verdict, verify

    plan = mm.plan(mm.GemmProblem(1024, 1024, 16384, "bf16", "bf16", "K", "K"))
    result = verify(plan.kernels()[0])
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    # whole: the slices' coverage and exactly-once too, over the grid of a tile's shares (BM / SPLITS rows) that the
    # units of a tile take together (before session 62 only for kernels in clusters)
    assert [c.check for c in result.checks if c.not_checked] == [], result.render_text()
    reads = [c for c in result.checks if c.check == "reads of other blocks' stores"]
    assert [(c.target, c.verdict.value, c.not_checked) for c in reads] == [("W", "verified", False)], reads
    arrivals = [c for c in result.checks if c.check == "group barrier arrivals"]
    assert [c.verdict.value for c in arrivals] == ["verified"], arrivals


def test_the_fused_kernel_in_clusters_is_verified_whole() -> None:
    # 2-block clusters: each block reads its unit and rank off one number, so the tile-order checks apply (before
    # session 61 the cross-block reads, the coverage and exactly-once of W and C were not checked)
    from argus.verify import Verdict, verify

    problem = mm.GemmProblem(512, 512, 8192, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem, mm.GemmConfig(128, 256, 2, 4, SPLITS=2, EPILOGUE="tma", CLUSTER=2, FUSE=True))
    result = verify(plan.kernels()[0])
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    assert [c.check for c in result.checks if c.not_checked] == [], result.render_text()
    reads = [c for c in result.checks if c.check == "reads of other blocks' stores"]
    assert [(c.target, c.verdict.value) for c in reads] == [("W", "verified")], reads
