"""K-blocks of two swizzle spans (``BK = 128`` of a 16-bit type): each K-major operand stage in two 128-byte panels
of K, each loaded by its own TMA box (a box's inner extent may not exceed the 128-byte swizzle span), wgmma's eight
k16 steps crossing from one panel to the next. What this is for: a stage that reads 256 contiguous bytes of each
row instead of 128 (the streaming GEMMs of few rows read the weight at 2.6-2.8 TB/s; docs/gemm.md, "Swap-AB").

Tiers: the interpreter through the plan (plain and swap-AB, split-K, K past a panel's end); the verifier's verdict; a
seeded mistake (both boxes of a stage loaded from the same K panel) caught by the stage's tag assertion; NVRTC for
sm_90a (two UTMALDG per operand and stage, no spills); refusals."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.kernels import gemm
from argus.kernels import matmul as mm
from argus.kernels.gemm import gemm_warp_specialized_persistent
from argus.verify import Verdict, verify


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)


@pytest.mark.parametrize(
    ("m", "n", "k", "config"),
    [
        (70, 90, 300, mm.GemmConfig(64, 64, 1, 3, BK=128)),  # K = 2.3 blocks: the last block's second panel past K
        (8, 200, 520, mm.GemmConfig(128, 8, 2, 4, BK=128, SWAP=True)),
        (16, 132, 1040, mm.GemmConfig(128, 16, 2, 4, SPLITS=2, BK=128, SWAP=True)),
    ],
)
def test_wide_k_blocks_match_numpy_on_the_interpreter(m: int, n: int, k: int, config: mm.GemmConfig) -> None:
    rng = np.random.default_rng(m + k)
    plan = mm.plan(mm.GemmProblem(m, n, k, "bf16", "f32", b_major="K"), config)
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.uniform(-1, 1, (k, n)))
    c = plan.run_on_interpreter(a, b)
    assert np.abs(c - a @ b).max() < 1e-4 * max(1.0, np.abs(a @ b).max())


def test_a_wide_k_block_is_verified_and_compiles_to_two_boxes_per_operand_without_spills() -> None:
    traced = gemm_warp_specialized_persistent.trace(BM=128, BN=8, BK=128, CONSUMERS=2, STAGES=4, OUT="bf16",
                                                    C_MAJOR="M")  # fmt: skip
    assert verify(traced).verdict == Verdict.VERIFIED
    compiled = compile_kernel(traced)
    mix = compiled.instruction_mix(modifiers=True)
    assert compiled.instruction_mix()["UTMALDG"] == 4, mix  # (A, B) x two panels of K
    assert mix["HGMMA.64x8x16.F32.BF16"] == 8, mix  # eight k16 steps per K-block, per consumer
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0


def test_both_boxes_from_one_panel_are_caught_by_the_contraction_s_coverage(monkeypatch: pytest.MonkeyPatch) -> None:
    real = gemm.load_operand

    def one_panel(tensor, major, stage, mn, k, bmn, bk, bar, batch=None, multicast=False):  # noqa: ANN001, ANN202, PLR0913
        panel = 128 // tensor.dtype.itemsize
        if major != "K" or bk <= panel:
            return real(tensor, major, stage, mn, k, bmn, bk, bar, batch, multicast)
        for j in range(bk // panel):  # the mistake: panel 0 of the block twice
            gemm.T.copy(tensor.tile((mn, k * (bk // panel)), (bmn, panel)), stage.window((0, panel * j), (bmn, panel)),
                        atom="tma", mbarrier=bar)  # fmt: skip
        return None

    monkeypatch.setattr(gemm, "load_operand", gemm.T.macro(one_panel))
    traced = gemm_warp_specialized_persistent.trace(BM=64, BN=64, BK=128, CONSUMERS=1, STAGES=2, OUT="f32")
    result = verify(traced)
    assert result.verdict == Verdict.VIOLATED
    # the stage still holds K-block k's elements (its tag assertion holds), but half of them twice (the product sums
    # some K twice) and the other half never (since session 51 the persistent kernel's tile-ordered loads are checked
    # for coverage too: the second panel of every K-block is missing from every sum)
    errors = [e.code for e in result.errors]
    assert set(errors) == {"COVERAGE_CONTRACTION_TWICE", "COVERAGE_CONTRACTION"}, errors
    missing = [e for e in result.errors if e.code == "COVERAGE_CONTRACTION"]
    for e in missing:  # the element never loaded lies in the second 64-column panel of its 128-wide K-block
        k = int(e.counterexample.variables["element"].strip("()").split(",")[1])
        assert k % 128 >= 64, e.message


def test_only_16_bit_operands_take_a_wide_k_block() -> None:
    with pytest.raises(mm.GemmError, match="or 128"):
        mm.plan(mm.GemmProblem(64, 64, 256), mm.GemmConfig(64, 64, 1, 2, BK=256))
    with pytest.raises(mm.GemmError, match="BK = 64"):
        mm.plan(mm.GemmProblem(64, 64, 256, "e4m3", "bf16"), mm.GemmConfig(64, 64, 1, 2, BK=64))


@pytest.mark.parametrize(
    ("shape", "dtype", "bk"),
    [
        ((1024, 1024, 1024), "bf16", 128),  # 64x128: four stages of 128 fit
        ((96, 7168, 7168), "bf16", 128),  # swap-AB 128x96 tiles
        ((8, 8192, 8192), "f16", 128),
        ((4096, 4096, 4096), "bf16", 64),  # 128x256: two stages of 128 only (measured slower)
        ((512, 512, 65536), "bf16", 128),  # 128x128 in 8 splits in clusters (narrow_split): three stages of 128
        ((64, 64, 192), "bf16", 64),  # three K-blocks: a wide block would be half empty
        ((1024, 1024, 1024), "f32", 64),  # f32's split precision keeps its chain in K-blocks of 64
    ],
)
def test_the_planner_takes_a_wide_k_block_where_three_stages_still_fit(
    shape: tuple[int, int, int], dtype: str, bk: int
) -> None:
    problem = mm.GemmProblem(*shape, dtype)
    chosen = mm.choose(problem)
    assert chosen.BK == bk, chosen.label
    plan = mm.plan(problem, chosen)  # the plan accepts what the planner proposes
    if bk == 128:
        assert chosen.STAGES >= mm.WIDE_K_MIN_STAGES
        assert mm.shared_bytes(chosen, plan.padded) <= mm.SHARED_MEMORY_BUDGET
    for config in mm.candidates_for(problem):  # every candidate: wide only with three stages or more
        assert config.BK == 64 or config.STAGES >= mm.WIDE_K_MIN_STAGES, config.label


def test_a_128x128_tile_takes_three_wide_stages_and_a_128x256_tile_stays_narrow() -> None:
    by_tile = {(c.BM, c.BN, c.SPLITS): c for c in mm.candidates_for(mm.GemmProblem(12000, 512, 1024))}
    assert (by_tile[128, 128, 1].BK, by_tile[128, 128, 1].STAGES) == (128, 3)
    assert (by_tile[128, 256, 1].BK, by_tile[128, 256, 1].STAGES) == (64, 4)
