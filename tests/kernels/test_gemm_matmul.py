"""GEMM for any shape (`argus.kernels.matmul`, issue #20): the persistent Hopper GEMM's new mechanisms (one consumer
warpgroup with 64-row tiles, split-K into an f32 workspace reduced by `gemm_split_reduce`) are correct on the
interpreter at small and odd shapes, through exactly the plan a GPU call launches (every layout, padding where TMA
cannot address an operand); the split's kernels are verified; they compile to HGMMA and TMA; the configuration
heuristic picks configurations that fit and answers the shapes it must; `matmul` reads a torch call's layout and
refuses what it cannot run with a reason. On a GPU, `matmul` matches torch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from argus.atoms.common import SHARED_MEMORY_BUDGET
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import matmul as mm
from argus.kernels.gemm import gemm_split_reduce, gemm_warp_specialized_persistent
from argus.lang.errors import DSLError


def _rel_err(plan: mm.GemmPlan, seed: int = 0) -> float:
    p = plan.problem
    rng = np.random.default_rng(seed)
    a = round_to(bf16, rng.standard_normal((p.M, p.K)))
    b = round_to(bf16, rng.uniform(-1, 1, (p.K, p.N)))
    c = plan.run_on_interpreter(a, b)
    assert c.shape == (p.M, p.N)
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    return float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))  # NaN (an element never written) fails below


@pytest.mark.parametrize(
    ("shape", "majors", "config"),
    [
        # split-K: 5 K-blocks in 3 splits of 2 (the last split's second K-block is past K: TMA reads zeros); 64-row
        # tiles on one consumer warpgroup; 4 blocks walk 2 x 2 x 3 units
        ((100, 72, 300), ("K", "K"), mm.GemmConfig(64, 64, 1, 4, SPLITS=3)),
        # a split that gets no K-block at all (4 K-blocks, 3 splits of 2: split 2 multiplies zeros only)
        ((70, 64, 256), ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=3)),
        # split-K on two consumer warpgroups, B given (K, N) (the NN layout), M-major A (TN)
        ((130, 136, 512), ("M", "N"), mm.GemmConfig(128, 128, 2, 3, SPLITS=2)),
        # K % 8 != 0: the operands are zero-padded to K = 104; NT layout (nn.Linear's weight)
        ((70, 136, 101), ("K", "K"), mm.GemmConfig(64, 128, 1, 3)),
        # M-major A with M % 8 != 0 (padded to 72), N-major B: the TT layout
        ((67, 64, 128), ("M", "K"), mm.GemmConfig(64, 64, 1, 2, EPILOGUE="tma")),
        # two consumer warpgroups, TMA-store epilogue, partial tiles
        ((130, 200, 64), ("K", "N"), mm.GemmConfig(128, 128, 2, 2, EPILOGUE="tma")),
    ],
)
def test_every_mechanism_is_correct_on_the_interpreter(shape, majors, config) -> None:
    problem = mm.GemmProblem(*shape, "bf16", "f32", *majors)
    assert _rel_err(mm.plan(problem, config)) < 1e-6


def test_the_heuristic_s_own_plans_are_correct_on_the_interpreter() -> None:
    # decode-like and odd shapes: whatever the heuristic picks runs correctly (C in bf16: 2^-9 relative)
    for shape in ((5, 64, 333), (1, 136, 1024), (200, 40, 96)):
        problem = mm.GemmProblem(*shape, "bf16", "bf16", "K", "K")
        plan = mm.plan(problem)
        assert _rel_err(plan) < 5e-3, (shape, plan.config)


def test_the_split_kernels_are_verified() -> None:
    from argus.verify import verify_kernel

    reduce = verify_kernel(gemm_split_reduce.trace(SPLITS=4, OUT="bf16"))
    assert not reduce.findings, reduce.findings
    tags = [c for c in reduce.checks if c.check == "tag assertion"]
    assert len(tags) == 3 and all(c.verdict.value == "verified" for c in tags)
    assert {c.verdict.value for c in reduce.checks if c.check in ("output coverage", "output written once")} == {
        "verified"
    }
    main = verify_kernel(gemm_warp_specialized_persistent.trace(BM=128, BN=256, STAGES=4, SPLITS=4))
    assert not main.findings, main.findings
    verdicts = {(c.check, c.target): c.verdict.value for c in main.checks}
    # the stage consumed at iteration k holds K-block split * k_split + k of the unit's tile
    assert [v for (check, _), v in verdicts.items() if check == "tag assertion"] == ["verified", "verified"]
    assert all(v == "verified" for (check, _), v in verdicts.items() if check == "contraction accumulated once")
    # every K-block of A and B is loaded: each split's run of K-blocks, at the split index the unit gives (a slab)
    assert verdicts[("contraction coverage", "A")] == verdicts[("contraction coverage", "B")] == "verified"


def test_split_k_and_one_consumer_compile_to_hgmma_and_tma() -> None:
    split = compile_kernel(gemm_warp_specialized_persistent, BM=128, BN=256, STAGES=4, SPLITS=4)
    small = compile_kernel(
        gemm_warp_specialized_persistent, BM=64, BN=128, STAGES=8, CONSUMERS=1, CONSUMER_REGS=240, OUT="bf16",
        EPILOGUE="tma",
    )  # fmt: skip
    for compiled in (split, small):
        mix = compiled.instruction_mix()
        assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0, mix
        assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    assert "__launch_bounds__(256, 1)" in small.generated.source  # a producer and one consumer warpgroup
    assert small.instruction_mix().get("UTMASTG", 0) > 0
    reduce = compile_kernel(gemm_split_reduce, SPLITS=3, OUT="bf16")
    assert reduce.resources.spill_stores == 0


def test_the_kernel_refuses_what_its_mechanisms_cannot_do() -> None:
    with pytest.raises(DSLError, match="SPLITS must be a positive int"):
        gemm_warp_specialized_persistent.trace(SPLITS=0)
    with pytest.raises(DSLError, match="split-K .* stores f32 partial products"):
        gemm_warp_specialized_persistent.trace(SPLITS=2, OUT="bf16")
    with pytest.raises(DSLError, match="CONSUMERS must be 1 to 3"):
        gemm_warp_specialized_persistent.trace(CONSUMERS=4)


# --- f32 operands: split precision -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "majors", "config"),
    [
        ((70, 72, 300), ("K", "K"), mm.GemmConfig(64, 64, 1, 4, SPLITS=3)),  # split-K over K' = 3 * 320
        ((67, 36, 101), ("M", "N"), None),  # TN: A's and B's contiguous extents padded to 72 and 40 by the splits
        ((33, 40, 70), ("K", "N"), None),  # NN, K not a multiple of 4 (scalar loads in the split)
        ((20, 24, 17), ("M", "K"), None),  # TT
    ],
)
def test_f32_operands_reach_f32_accuracy_through_the_split(shape, majors, config) -> None:
    m, n, k = shape
    plan = mm.plan(mm.GemmProblem(m, n, k, "f32", "f32", *majors), config)
    assert plan.padded.dtype == "bf16" and plan.padded.K == 3 * -(-k // mm.BK) * mm.BK and not plan.needs_padding
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((k, n)).astype(np.float32).astype(np.float64)
    c = plan.run_on_interpreter(a, b)
    ref = a @ b
    err = float(np.max(np.abs(c - ref)) / np.sqrt(np.mean(ref**2)))
    assert err < 4e-5  # KernelBench's fp32 tolerance is 1e-4; one bf16 product (no split) is ~1e-2
    one_product = np.asarray(round_to(bf16, a), np.float64) @ np.asarray(round_to(bf16, b), np.float64)
    assert float(np.max(np.abs(one_product - ref)) / np.sqrt(np.mean(ref**2))) > 1e-3  # the check can tell


@pytest.mark.parametrize(
    ("dtype", "majors"), [("bf16", ("K", "N")), ("bf16", ("M", "K")), ("f32", ("K", "N")), ("f32", ("M", "K"))]
)
def test_a_batched_gemm_is_correct_on_the_interpreter(dtype: str, majors: tuple[str, str]) -> None:
    # bmm: three products, each block walking its matrix's tiles; f32 through batched split passes
    problem = mm.GemmProblem(70, 40, 100, dtype, "f32", *majors, batch=3)
    plan = mm.plan(problem)
    assert plan.config.SPLITS == 1 and len(plan.main_kernel().grid) == 2  # (BLOCKS, L)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 70, 100)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((3, 100, 40)).astype(np.float32).astype(np.float64)
    if dtype == "bf16":
        a, b = np.asarray(round_to(bf16, a), np.float64), np.asarray(round_to(bf16, b), np.float64)
    c = plan.run_on_interpreter(a, b)
    ref = a @ b
    assert c.shape == (3, 70, 40)
    assert float(np.max(np.abs(c - ref)) / np.sqrt(np.mean(ref**2))) < 4e-5


@pytest.mark.parametrize(("out", "config"), [("bf16", mm.GemmConfig(64, 64, 1, 2, EPILOGUE="tma")),
                                            ("f32", mm.GemmConfig(128, 64, 2, 2, EPILOGUE="tma"))])  # fmt: skip
def test_a_batched_gemm_stores_through_tma_boxes_of_its_own_matrix(out: str, config: mm.GemmConfig) -> None:
    # 3-d boxes of C (L, M, N) at a fixed matrix index: partial tiles on both edges, each matrix's own rows
    problem = mm.GemmProblem(70, 72, 100, "bf16", out, "K", "N", batch=3)
    plan = mm.plan(problem, config)
    rng = np.random.default_rng(4)
    a = np.asarray(round_to(bf16, rng.standard_normal((3, 70, 100))), np.float64)
    b = np.asarray(round_to(bf16, rng.standard_normal((3, 100, 72))), np.float64)
    c = plan.run_on_interpreter(a, b)
    ref = a @ b
    scale = np.max(np.abs(ref)) if out == "bf16" else np.sqrt(np.mean(ref**2))  # bf16: C rounded, 2^-9 of its size
    tol = 2.0**-8 if out == "bf16" else 4e-5
    assert c.shape == (3, 70, 72) and float(np.max(np.abs(c - ref)) / scale) < tol


def test_a_batch_larger_than_the_l2_runs_one_tile_per_block_in_matrix_order() -> None:
    config = mm.GemmConfig(128, 256, 2, 4)
    big = mm.GemmProblem(512, 2048, 1024, "bf16", "bf16", "K", "N", batch=128)  # 671 MB of operands
    assert config.kernel_params(big)["BLOCKS"] == 4 * 8  # the matrix's tiles: one each
    small = mm.GemmProblem(4096, 4096, 512, "bf16", "bf16", "K", "N", batch=8)  # 67 MB: persistent, all at once
    assert config.kernel_params(small)["BLOCKS"] == mm.DEFAULT_TARGET.sms // 8
    # and the one-tile grid computes the same product (an L2 of one byte forces it at the interpreter's sizes)
    from argus.atoms.target import Target

    tiny = Target("tiny-l2", sms=4, l2_bytes=1)
    problem = mm.GemmProblem(70, 72, 100, "bf16", "f32", "K", "N", batch=3)
    plan = mm.plan(problem, mm.GemmConfig(64, 64, 1, 2))
    assert dict(plan.main_params(tiny))["BLOCKS"] == 2 * 2
    rng = np.random.default_rng(6)
    a = np.asarray(round_to(bf16, rng.standard_normal((3, 70, 100))), np.float64)
    b = np.asarray(round_to(bf16, rng.standard_normal((3, 100, 72))), np.float64)
    c = plan.run_on_interpreter(a, b, target=tiny)
    assert float(np.max(np.abs(c - a @ b)) / np.sqrt(np.mean((a @ b) ** 2))) < 4e-5


def test_the_flat_batch_grid_walks_every_matrix_s_tiles_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # BATCH_GRID="flat": BLOCKS persistent blocks, unit u = tile u % tiles of matrix u // tiles (not the planner's
    # choice: measured mixed against the per-matrix grid, benchmarks/results/2026-12-01-bmm-tma/ call 5)
    from argus.kernels.gemm import gemm_warp_specialized_persistent
    from argus.verify import Verdict, verify

    traced = gemm_warp_specialized_persistent.trace(BM=128, BN=256, BK=64, CONSUMERS=2, STAGES=4, OUT="bf16",
                                                    BATCH=True, EPILOGUE="tma", BATCH_GRID="flat")  # fmt: skip
    assert verify(traced).verdict == Verdict.VERIFIED
    with pytest.raises(DSLError, match="BATCH_GRID"):
        gemm_warp_specialized_persistent.trace(BATCH=True, BATCH_GRID="rows")
    original = mm.GemmConfig.kernel_params
    flat = {"BLOCKS": 3, "BATCH_GRID": "flat"}
    monkeypatch.setattr(
        mm.GemmConfig, "kernel_params", lambda self, p, t=mm.DEFAULT_TARGET: {**original(self, p, t), **flat}
    )
    plan = mm.plan(
        mm.GemmProblem(70, 72, 100, "bf16", "f32", "K", "N", batch=3), mm.GemmConfig(64, 64, 1, 2, EPILOGUE="tma")
    )
    assert len(plan.main_kernel().grid) == 1  # one persistent row of blocks
    rng = np.random.default_rng(7)
    a = np.asarray(round_to(bf16, rng.standard_normal((3, 70, 100))), np.float64)
    b = np.asarray(round_to(bf16, rng.standard_normal((3, 100, 72))), np.float64)
    c = plan.run_on_interpreter(a, b)
    assert float(np.max(np.abs(c - a @ b)) / np.sqrt(np.mean((a @ b) ** 2))) < 4e-5


def test_a_batched_tma_store_is_verified_and_compiles_to_3d_stores() -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.gemm import gemm_warp_specialized_persistent
    from argus.verify import Verdict, verify

    traced = gemm_warp_specialized_persistent.trace(BM=128, BN=256, BK=64, CONSUMERS=2, STAGES=4, OUT="bf16",
                                                    BATCH=True, EPILOGUE="tma")  # fmt: skip
    assert verify(traced).verdict == Verdict.VERIFIED
    compiled = compile_kernel(traced)
    mix = compiled.instruction_mix()
    assert mix["UTMASTG"] >= 1 and "STG" not in {k.split(".")[0] for k in mix}, mix  # no direct stores of C
    assert compiled.resources.spill_stores == 0


def test_a_batch_of_one_f32_product_runs_as_one_matrix() -> None:
    # a (1, M, K) @ (1, K, N), as a convolution with one group passes it: the split passes take the matrix (a GPU
    # run found them handed the 3-d tensor)
    problem = mm.GemmProblem(32, 24, 40, "f32", "f32", "K", "N", batch=1)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1, 32, 40)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((1, 40, 24)).astype(np.float32).astype(np.float64)
    c = mm.plan(problem).run_on_interpreter(a, b)
    ref = (a @ b)[0]
    assert c.shape == (32, 24)
    assert float(np.max(np.abs(c - ref)) / np.sqrt(np.mean(ref**2))) < 4e-5


def test_a_batched_f32_gemm_past_the_chain_runs_one_product_per_matrix() -> None:
    # the batched GEMM has no split-K, which f32 accuracy needs past the chain: its plan refuses, and a call (a bmm
    # of `argus solve`, `matmul`) runs each matrix's 2-d plan, split along K (random configurations, seed 2, found
    # the refusal on an H100 at K = 4641)
    with pytest.raises(mm.GemmError, match="batched f32 GEMM with K = 8192"):
        mm.plan(mm.GemmProblem(64, 64, 8192, "f32", "f32", batch=2))
    problem = mm.GemmProblem(5, 13, 4641, "f32", "f32", "M", "N", batch=2)
    assert mm.unbatched(problem) and not mm.unbatched(mm.GemmProblem(5, 13, 4096, "f32", "f32", batch=2))
    assert not mm.unbatched(mm.GemmProblem(5, 13, 4641, "bf16", "f32", batch=2))
    torch = pytest.importorskip("torch")
    call = mm.LibraryGemm("bmm", problem, transpose_a=True)
    assert call.kernels()[-1].name == "gemm_split_reduce"  # each matrix's plan splits K
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, 4641, 5, generator=g), torch.randn(2, 4641, 13, generator=g)
    out = call.empty_output(x, y)
    call(x, y, out)
    ref = x.double().transpose(1, 2) @ y.double()
    assert float((out.double() - ref).abs().max() / ref.abs().max()) < 2e-5


@pytest.mark.parametrize(("axis", "operand", "vec"), [(1, "A", 4), (0, "B", 1), (1, "B", 2), (0, "A", 4)])
def test_the_split_writes_hi_and_lo_exactly_and_verifies(axis: int, operand: str, vec: int) -> None:
    from argus.interp import run_kernel
    from argus.kernels.gemm import SPLIT_PATTERNS, split_bf16x3
    from argus.verify import verify_kernel

    kernel = split_bf16x3.trace(AXIS=axis, OPERAND=operand, VEC=vec)
    result = verify_kernel(kernel)
    assert not result.findings and all(c.verdict.value == "verified" for c in result.checks), result.findings
    rng = np.random.default_rng(2)
    r, c = (9, 36) if axis == 1 else (40, 12)
    x = rng.standard_normal((r, c)).astype(np.float32).astype(np.float64)
    p = 64 if axis == 1 else 48
    y = np.full((r, 3, p) if axis == 1 else (3, p, 16), np.nan)
    run_kernel(kernel, {"X": x, "Y": y})
    hi = np.asarray(round_to(bf16, x), np.float64)
    lo = np.asarray(round_to(bf16, (x - hi).astype(np.float32)), np.float64)
    parts = {"hi": hi, "lo": lo}
    for s, name in enumerate(SPLIT_PATTERNS[operand]):
        seg = y[:, s, :] if axis == 1 else y[s]
        assert np.array_equal(seg[:r, :c], parts[name]), (s, name)
        rest = seg.copy()
        rest[:r, :c] = 0
        assert not rest.any()  # zeros past X's end, in both directions


@pytest.mark.parametrize("columns", [4194688, 4194689, 4194690])
def test_a_split_of_millions_of_columns_stays_within_the_grid_and_verifies(columns: int) -> None:
    # a transposed 1-d convolution's column matrix (KernelBench level 1's 74 and 79): B (K, N) with N past 65535 * 64,
    # whose column blocks are the split's grid y: wider blocks keep it within CUDA's 65535
    from argus.kernels.gemm import split_bf16x3
    from argus.verify import verify_kernel

    (step,) = [s for s in mm.split_steps(mm.GemmProblem(64, columns, 96, "f32", "f32", "K", "N")) if s.name == "B"]
    padded = step.y_shape[-1]
    assert -(-padded // step.params.get("BC", 64)) <= mm.MAX_GRID_Y
    assert step.params.get("BR", 16) * step.params.get("BC", 64) // step.params["VEC"] <= 1024
    result = verify_kernel(split_bf16x3.trace(**step.params))
    assert not result.findings and all(c.verdict.value == "verified" for c in result.checks), result.findings


# --- the heuristic ----------------------------------------------------------------------------------------------------

SHAPES = [
    (4096, 4096, 4096), (1, 4096, 4096), (16, 14336, 4096), (64, 8192, 8192), (1024, 1024, 16384),
    (512, 512, 65536), (2049, 3071, 4097), (1000, 1000, 1000), (8192, 28672, 8192), (3, 5, 7), (1, 1, 1),
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES)
def test_the_heuristic_s_configuration_fits_and_is_one_the_kernel_takes(shape) -> None:
    problem = mm.GemmProblem(*shape)
    config = mm.choose(problem)
    if config.CLUSTER > 1:  # a candidate run in 2-block clusters (`mm.cluster_choice`)
        assert mm.cluster_refusal(mm.kernel_problem(problem), config) is None
        config = dataclasses.replace(config, CLUSTER=1)
    assert config in mm.candidates_for(problem)
    padded = mm.plan(problem, config).padded  # the swapped problem for a swap-AB configuration
    tiles = mm.swap_tiles(problem) if config.SWAP else mm.TILES
    assert dataclasses.replace(config, SWAP=False) in mm.candidates(padded, tiles=tiles)
    assert mm.shared_bytes(config, padded) <= SHARED_MEMORY_BUDGET
    if config.SPLITS > 1:
        # f32 slices through TMA stores where C is not transposed and the tile is whole store chunks (`SPLIT_TMA_STORE`)
        tma = mm.SPLIT_TMA_STORE and padded.c_major == "N" and config.BN % 32 == 0
        assert padded.c_columns % 4 == 0 and config.EPILOGUE == ("tma" if tma else "direct")
        k_blocks = -(-padded.K // config.BK)
        assert -(-k_blocks // config.SPLITS) >= mm.MIN_K_BLOCKS_PER_SPLIT
    params = config.kernel_params(padded)
    gemm_warp_specialized_persistent.trace(**params)  # traces: every parameter is one the kernel takes


def test_the_heuristic_answers_the_regimes_it_must() -> None:
    # a large square: the expert's 128x256 tiles, 4 stages, TMA stores, no split
    big = mm.choose(mm.GemmProblem(8192, 8192, 8192))
    assert (big.BM, big.BN, big.STAGES, big.SPLITS, big.EPILOGUE) == (128, 256, 4, 1, "tma")
    # few output tiles and a long K: split-K fills the GPU
    assert mm.choose(mm.GemmProblem(1024, 1024, 16384)).SPLITS > 1
    assert mm.choose(mm.GemmProblem(512, 512, 65536)).SPLITS > 1
    # decode batches: swap-AB (the weight's rows in 64- or 128-row tiles, the batch as wgmma's N), or 64-row tiles
    # of A
    for m in (1, 8, 16, 32, 64):
        config = mm.choose(mm.GemmProblem(m, 8192, 8192))
        assert (config.BM in (64, 128) and config.BN == max(8, m)) if config.SWAP else config.BM == 64, m
    # the estimate grows with the work
    assert mm.estimate(mm.GemmProblem(8192, 8192, 8192), big) > mm.estimate(mm.GemmProblem(4096, 4096, 4096), big)


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (2048, 4096, 8192), (256, 256, 524288), (2048, 1, 1048576)])
def test_an_f32_problem_never_accumulates_more_than_the_chain_in_the_tensor_cores(shape) -> None:
    problem = mm.GemmProblem(*shape, "f32", "f32", "K", "N")
    # a matrix-vector product is planned on the GEMV kernels (f32 FMAs, no tensor cores); its tensor-core plan, an
    # explicit configuration, must keep the bound all the same
    assert mm.plan(problem).is_gemv == (shape[1] == 1)
    plan = mm.plan(problem, mm.choose(problem))
    k_blocks = -(-plan.padded.K // mm.BK)
    assert -(-k_blocks // plan.config.SPLITS) * mm.BK <= mm.F32_CHAIN, plan.config
    # the same shape in bf16 has no such bound: it splits only where the model finds it faster
    assert mm.choose(mm.GemmProblem(*shape[:2], 3 * shape[2], "bf16", "f32", "K", "N")).SPLITS <= plan.config.SPLITS


def test_padding_is_planned_only_where_tma_needs_it() -> None:
    assert mm.padded_extent(mm.GemmProblem(100, 100, 64)) == mm.GemmProblem(100, 100, 64)
    # copied anyway: to rows a whole PITCH_BYTES (32 bytes: 16 bf16) apart, what TMA reads at full rate
    assert mm.padded_extent(mm.GemmProblem(100, 100, 4097)).K == 4112
    # M-major A pads M, N-major B pads N; K-major operands pad K
    p = mm.padded_extent(mm.GemmProblem(67, 13, 64, a_major="M", b_major="N"))
    assert (p.M, p.N, p.K) == (80, 16, 64)
    # rows 16 bytes apart but not 32 (K = 3000): read where they are, unless a configuration copies them (PITCH)
    assert mm.padded_extent(mm.GemmProblem(100, 100, 3000)).K == 3000
    assert mm.padded_extent(mm.GemmProblem(100, 100, 3000), pitch=True).K == 3008


def test_bad_problems_get_a_reason() -> None:
    with pytest.raises(mm.GemmError, match="precision='tf32'"):
        mm.GemmProblem(64, 64, 64, dtype="f8e4m3")
    with pytest.raises(mm.GemmError, match="positive int"):
        mm.GemmProblem(0, 64, 64)
    with pytest.raises(mm.GemmError, match="output dtype"):
        mm.GemmProblem(64, 64, 64, out="f8")


# --- the torch call ---------------------------------------------------------------------------------------------------


def test_matmul_reads_the_layout_of_a_torch_call() -> None:
    torch = pytest.importorskip("torch")
    a = torch.zeros(48, 32, dtype=torch.bfloat16)
    b = torch.zeros(32, 24, dtype=torch.bfloat16)
    assert mm.problem_of(a, b).layout == "NN"
    assert (mm.problem_of(a, b).M, mm.problem_of(a, b).N, mm.problem_of(a, b).K) == (48, 24, 32)
    w = torch.zeros(24, 32, dtype=torch.bfloat16)  # nn.Linear's weight (out, in): x @ w.T
    assert mm.problem_of(a, w.T).layout == "NT" and mm.problem_of(a, w.T).b_major == "K"
    at = torch.zeros(32, 48, dtype=torch.bfloat16)
    assert mm.problem_of(at.T, b).layout == "TN" and mm.problem_of(at.T, w.T).layout == "TT"
    assert mm.problem_of(a, b, torch.float32).out == "f32"
    assert mm.problem_of(a.half(), b.half()).dtype == "f16"
    assert mm.problem_of(a.float(), b.float()).dtype == "f32" and mm.problem_of(a.float(), b.float()).out == "f32"


def test_matmul_refuses_what_it_cannot_run_with_a_reason() -> None:
    torch = pytest.importorskip("torch")
    a = torch.zeros(48, 32, dtype=torch.bfloat16)
    with pytest.raises(mm.GemmError, match="a's columns must equal b's rows"):
        mm.problem_of(a, torch.zeros(31, 8, dtype=torch.bfloat16))
    with pytest.raises(mm.GemmError, match="one dtype"):
        mm.problem_of(a, torch.zeros(32, 8, dtype=torch.float16))
    with pytest.raises(mm.GemmError, match="2-D"):
        mm.problem_of(a[None], torch.zeros(32, 8, dtype=torch.bfloat16))
    batched = mm.problem_of(torch.zeros(3, 48, 32, dtype=torch.bfloat16), torch.zeros(3, 32, 8, dtype=torch.bfloat16))
    assert (batched.batch, batched.M, batched.N, batched.K, batched.layout) == (3, 48, 8, 32, "NN")
    with pytest.raises(mm.GemmError, match="neither row-major"):  # matrices not one after another
        mm.problem_of(
            torch.zeros(3, 48, 64, dtype=torch.bfloat16)[:, :, :32], torch.zeros(3, 32, 8, dtype=torch.bfloat16)
        )
    with pytest.raises(mm.GemmError, match="neither row-major nor a transposed"):
        mm.problem_of(a[:, ::2], torch.zeros(16, 8, dtype=torch.bfloat16))
    four = torch.zeros(2, 3, 5, 32, dtype=torch.bfloat16)
    with pytest.raises(mm.GemmError, match="only when a is contiguous"):
        mm.matmul(four.transpose(1, 2), torch.zeros(32, 8, dtype=torch.bfloat16))
    with pytest.raises(mm.GemmError, match="a batch of both"):
        mm.matmul(four, four.transpose(-1, -2))
    with pytest.raises(mm.GemmError, match="bf16, f16 or f32"):
        mm.problem_of(a.double(), torch.zeros(32, 8, dtype=torch.float64))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_matmul_matches_torch_on_the_gpu(layout: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for m, n, k in ((1, 4096, 4096), (64, 8192, 1024), (1000, 1000, 1000), (2049, 3071, 4097), (512, 512, 16384)):
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
        if layout[0] == "T":
            a = a.T.contiguous().T
        if layout[1] == "T":
            b = b.T.contiguous().T
        c = mm.matmul(a, b)
        ref = a.float() @ b.float()
        assert c.shape == (m, n) and c.dtype == torch.bfloat16
        assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2, (layout, m, n, k)


@pytest.mark.gpu
def test_a_library_gemm_called_again_reads_its_operands_new_values_on_the_gpu() -> None:
    # LibraryGemm relaunches a call's launches on the same tensors; a padded plan (K = 4097: operands copied into
    # zero-padded buffers when prepared) and a GEMV plan (one row) must read the operands' values of each call
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for m, n, k in ((256, 384, 4097), (1, 4096, 1024), (300, 512, 1024)):
        call = mm.LibraryGemm("gemm", mm.GemmProblem(M=m, N=n, K=k, dtype="bf16", out="bf16"))
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        for step in range(3):
            call(a, b, c)
            ref = a.float() @ b.float()
            assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2, (m, n, k, step)
            a.copy_(torch.randn(m, k, device="cuda"))  # new values in the same memory (copy_ from f32: a torch write)
            b.mul_(-1.0)

    def zeros(*shape: int) -> object:
        return torch.zeros(*shape, device="cuda", dtype=torch.bfloat16)

    # K = 4097: copied into padded buffers by `pad_copy` launches, which read a and b anew at every relaunch
    padded = mm.prepare(zeros(256, 4097), zeros(4097, 384))[1]
    assert not padded.copies and [p.kernel.name for p in padded][:2] == ["pad_copy", "pad_copy"]
    assert not mm.prepare(zeros(300, 1024), zeros(1024, 512))[1].copies  # read where they are


@pytest.mark.gpu
def test_a_library_gemm_called_on_another_stream_launches_on_that_stream_on_the_gpu() -> None:
    # the kept launches are bound to the stream they were prepared on: a call on the same tensors from another
    # stream prepares its own (it once replayed the first stream's, racing the caller's stream)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    call = mm.LibraryGemm("gemm", mm.GemmProblem(M=512, N=512, K=512, dtype="bf16", out="bf16"))
    a = torch.randn(512, 512, device="cuda").to(torch.bfloat16)
    b = torch.randn(512, 512, device="cuda").to(torch.bfloat16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.bfloat16)
    call(a, b, c)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call(a, b, c)
    assert len(call._prepared) == 2
    (first, second) = call._prepared.values()
    assert first[1][0].stream != second[1][0].stream == side.cuda_stream
    torch.cuda.current_stream().wait_stream(side)
    ref = a.float() @ b.float()
    assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2


@pytest.mark.gpu
def test_a_tensor_times_a_matrix_is_one_gemm_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    a = torch.randn(4, 3, 100, 256, device="cuda").to(torch.bfloat16)  # KernelBench's 3-d and 4-d tensor x matrix
    b = torch.randn(256, 72, device="cuda").to(torch.bfloat16)
    c = mm.matmul(a, b)
    ref = a.float() @ b.float()
    assert c.shape == (4, 3, 100, 72) and float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2
    with pytest.raises(mm.GemmError, match="contiguous"):
        mm.matmul(a.transpose(1, 2), b)
    with pytest.raises(mm.GemmError, match="a batch of both"):
        mm.matmul(a, a.transpose(-1, -2))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "TT"])
def test_f32_matmul_passes_the_gate_s_fp32_tolerance_on_the_gpu(layout: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.eval.tolerance import compare, input_scale, tolerance_for

    for m, n, k in ((1000, 1000, 1000), (256, 256, 65536), (2048, 1, 4096), (77, 4096, 333)):
        a = torch.rand(m, k, device="cuda") if layout[0] == "N" else torch.rand(k, m, device="cuda").T
        b = torch.rand(k, n, device="cuda") if layout[1] == "N" else torch.rand(n, k, device="cuda").T
        c = mm.matmul(a, b)
        assert c.dtype == torch.float32 and c.shape == (m, n)
        ref = a.double() @ b.double()
        verdict = compare(c, ref, tolerance_for(torch.float32), input_scale=input_scale([a, b]))
        assert verdict.ok, (layout, m, n, k, verdict.reason)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_bmm_matches_torch_on_the_gpu(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.eval.tolerance import compare, input_scale, tolerance_for

    torch_dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    shapes = [(3, 100, 72, 136), (128, 512, 2048, 1024), (2, 1, 4096, 4096)]
    if dtype == "f32":  # past the chain: one product per matrix, each split along K
        shapes += [(4, 200, 13, 4641)]
    for batch, m, n, k in shapes:
        a = torch.rand(batch, m, k, device="cuda").to(torch_dtype)
        b = torch.rand(batch, k, n, device="cuda").to(torch_dtype)
        if k == 4641:  # both operands transposed views (as the random configuration that found it)
            a, b = a.mT.contiguous().mT, b.mT.contiguous().mT
        c = mm.matmul(a, b)
        ref = a.double() @ b.double()
        assert c.shape == (batch, m, n) and c.dtype == torch_dtype
        verdict = compare(c, ref, tolerance_for(torch_dtype), input_scale=input_scale([a, b]))
        assert verdict.ok, (dtype, batch, m, n, k, verdict.reason)


@pytest.mark.gpu
def test_a_parameter_is_split_once_and_again_when_it_changes_on_the_gpu() -> None:
    # f32 split precision splits each operand into bf16 parts first; a module's parameter (`mm.CACHE_PARAMETER_SPLITS`)
    # keeps its parts until torch's version counter says it changed
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    problem = mm.GemmProblem(M=128, N=512, K=1024, dtype="f32", out="f32", a_major="K", b_major="K")
    x = torch.randn(128, 1024, device="cuda")

    def error(c: object, w: object) -> float:
        ref = x.double() @ w.double().T
        return float((c.double() - ref).abs().max() / ref.abs().max())

    for as_parameter in (True, False):
        call = mm.LibraryGemm("linear", problem, transpose_b=True)
        w = torch.randn(512, 1024, device="cuda")
        w = torch.nn.Parameter(w, requires_grad=False) if as_parameter else w
        c = torch.empty(128, 512, device="cuda")
        call(x, w, c)
        assert error(c, w) < 2e-5
        ((_, launches, _),) = call._prepared.values()
        launches.splits[1][1].zero_()  # the weight's parts, as the last split left them: now zeros
        call(x, w, c)
        # a parameter's split is not made again (its parts are the zeros); a plain tensor's is
        assert bool((c == 0).all()) if as_parameter else error(c, w) < 2e-5
        with torch.no_grad():
            w.mul_(-1.0)  # an in-place write: the version counter moves, the parameter is split again
        call(x, w, c)
        assert error(c, w) < 2e-5, (as_parameter, error(c, w))


def test_a_batch_of_one_product_keeps_its_batch_dimension(monkeypatch: pytest.MonkeyPatch) -> None:
    """``matmul`` of a (1, M, K) and b (1, K, N) is (1, M, N), as torch.matmul's: the plan computes one product (a
    batch of one is no batch to it) and its C is (M, N); the random sweep of session 74 found (M, N) returned."""
    torch = pytest.importorskip("torch")
    seen = []

    def fake_prepare(a, b, **_):  # noqa: ANN001, ANN202 (the launch is not what is tested)
        seen.append(mm.problem_of(a, b, None, None))
        return torch.zeros(a.shape[-2], b.shape[-1]), []

    monkeypatch.setattr(mm, "prepare", fake_prepare)
    a, b = torch.zeros(1, 5, 16, dtype=torch.bfloat16), torch.zeros(1, 16, 7, dtype=torch.bfloat16)
    assert tuple(mm.matmul(a, b).shape) == (1, 5, 7) and seen[-1].batch == 1
    assert tuple(mm.matmul(a[0], b[0]).shape) == (5, 7)
