"""The split tail (issue #20, wave quantization): a GEMM whose tiles take more than one wave and whose last wave is
partial runs the whole waves' tiles whole (`gemm_warp_specialized_persistent` with PART="whole"), the last wave's
tiles split along K (`gemm_persistent_split_tail`, f32 partial products into a workspace of one slot per split and
tail tile) and sums them (`gemm_tail_reduce`, through the fused epilogue when there is one). Correct on the
interpreter at small and odd shapes through exactly the plan a GPU call launches (every layout, one and two consumer
warpgroups, TMA and direct stores, f32 by split precision, a fused epilogue, a tail with no whole wave before it);
every kernel verified; compiled to HGMMA and TMA; the heuristic picks a tail where the last wave is mostly idle and
not where it is full; what cannot be split is refused with the reason."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from argus.atoms.target import DEFAULT_TARGET
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue
from argus.kernels.gemm import gemm_persistent_split_tail, gemm_tail_reduce, gemm_warp_specialized_persistent
from argus.lang.errors import DSLError

#: the interpreter's GPU: 4 SMs, so that small problems have whole waves and a tail
SMALL = replace(DEFAULT_TARGET, sms=4)


def _operands(problem: mm.GemmProblem, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    dtype = bf16 if problem.dtype == "bf16" else None
    a = rng.standard_normal((problem.M, problem.K))
    b = rng.uniform(-1, 1, (problem.K, problem.N))
    return (round_to(dtype, a), round_to(dtype, b)) if dtype else (a, b)


@pytest.mark.parametrize(
    ("shape", "majors", "config", "whole_rest"),
    [
        # 3 x 5 tiles on 4 blocks: 12 whole, 3 in the tail, each split 3 ways (5 K-blocks: splits of 2, 2, 1)
        ((136, 264, 300), ("K", "K"), mm.GemmConfig(64, 64, 1, 3, TAIL=3), (12, 3)),
        # M-major A padded to 72 rows, N-major B; TMA stores for the whole tiles
        ((70, 136, 520), ("M", "N"), mm.GemmConfig(64, 64, 1, 3, TAIL=2, EPILOGUE="tma"), (4, 2)),
        # two consumer warpgroups, the NN layout; 4 K-blocks in 4 splits of one
        ((130, 260, 200), ("K", "N"), mm.GemmConfig(128, 128, 2, 3, TAIL=4), (4, 2)),
        # a split that gets no K-block (5 K-blocks, 4 splits of 2: split 3 multiplies TMA's zeros past K)
        ((260, 72, 320), ("K", "K"), mm.GemmConfig(64, 64, 1, 2, TAIL=4), (8, 2)),
        # one tile: no whole wave, the tail is the whole product (no launch of the whole waves' kernel)
        ((40, 40, 300), ("K", "K"), mm.GemmConfig(64, 64, 1, 3, TAIL=2), (0, 1)),
    ],
)
def test_a_split_tail_is_correct_on_the_interpreter(shape, majors, config, whole_rest) -> None:
    problem = mm.GemmProblem(*shape, "bf16", "f32", *majors)
    plan = mm.plan(problem, config)
    assert config.tail_tiles(plan.padded, SMALL) == whole_rest
    names = [k.name for k in plan.kernels(SMALL)]
    assert names[-2:] == ["gemm_persistent_split_tail", "gemm_tail_reduce"]
    assert ("gemm_warp_specialized_persistent" in names) == (whole_rest[0] > 0)
    a, b = _operands(problem, sum(shape))
    c = plan.run_on_interpreter(a, b, target=SMALL)
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    assert c.shape == ref.shape
    assert float(np.max(np.abs(c - ref)) / np.max(np.abs(ref))) < 1e-6  # NaN (an element never written) fails


def test_a_split_tail_applies_the_fused_epilogue_to_both_halves() -> None:
    ep = Epilogue.of("out = T.maximum(acc * scale + bias, 0.0) + res", bias="columns", scale="scalar", res="tile")
    problem = mm.GemmProblem(136, 264, 300, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem, mm.GemmConfig(64, 64, 1, 3, TAIL=3), epilogue=ep)
    names = [k.name for k in plan.kernels(SMALL)]
    # K = 300 (600-byte rows, not whole 16-byte units): A and B copied into zero-padded buffers first
    assert names == ["pad_copy", "pad_copy", f"gemm_fused_{ep.key}", "gemm_persistent_split_tail",
                     f"gemm_tail_reduce_fused_{ep.key}"]  # fmt: skip
    rng = np.random.default_rng(3)
    a, b = _operands(problem, 3)
    ops = {"bias": rng.standard_normal(264), "scale": np.array([0.5]), "res": rng.standard_normal((136, 264))}
    c = plan.run_on_interpreter(a, b, target=SMALL, operands=ops)
    ref = np.maximum(np.asarray(a, np.float64) @ np.asarray(b, np.float64) * 0.5 + ops["bias"], 0.0) + ops["res"]
    assert float(np.max(np.abs(c - ref)) / np.max(np.abs(ref))) < 5e-3  # C in bf16


def test_an_f32_product_splits_its_tail_after_the_split_precision_passes() -> None:
    problem = mm.GemmProblem(136, 264, 100, "f32", "f32", "K", "N")
    plan = mm.plan(problem, mm.GemmConfig(64, 64, 1, 3, TAIL=2))
    assert [k.name for k in plan.kernels(SMALL)][-2:] == ["gemm_persistent_split_tail", "gemm_tail_reduce"]
    a, b = _operands(problem, 5)
    c = plan.run_on_interpreter(a, b, target=SMALL)
    assert np.max(np.abs(c - a @ b)) / np.max(np.abs(a @ b)) < 1e-5


def test_a_tail_where_the_last_wave_is_whole_is_refused_with_the_reason() -> None:
    problem = mm.GemmProblem(128, 128, 256, "bf16", "bf16", "K", "K")  # 2 x 2 tiles on 4 blocks: one whole wave
    plan = mm.plan(problem, mm.GemmConfig(64, 64, 1, 3, TAIL=2))
    with pytest.raises(mm.GemmError, match="no tail to split"):
        plan.run_on_interpreter(np.zeros((128, 256)), np.zeros((256, 128)), target=SMALL)


def test_the_kernels_refuse_what_a_split_tail_cannot_do() -> None:
    with pytest.raises(DSLError, match="PART must be"):
        gemm_warp_specialized_persistent.trace(PART="tail")
    with pytest.raises(DSLError, match="excludes SPLITS > 1 and BATCH"):
        gemm_warp_specialized_persistent.trace(PART="whole", SPLITS=2)
    with pytest.raises(DSLError, match="TAIL >= 2"):
        gemm_persistent_split_tail.trace(TAIL=1)
    with pytest.raises(DSLError, match="a multiple of 4"):
        gemm_tail_reduce.trace(BM=128, BN=254)


def test_the_split_tail_s_kernels_are_verified() -> None:
    from argus.verify import verify_kernel

    problem = mm.GemmProblem(3072, 1536, 6144, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem, mm.GemmConfig(128, 256, 2, 4, TAIL=8, EPILOGUE="tma"))
    whole, tail, reduce = plan.kernels()
    for kernel in (whole, tail, reduce):
        report = verify_kernel(kernel)
        assert not report.findings, (kernel.name, report.findings)
    tail_report = verify_kernel(tail)
    tags = [c.verdict.value for c in tail_report.checks if c.check == "tag assertion"]
    assert tags == ["verified", "verified"]  # the stage holds K-block split * k_split + k of the tail tile
    reduce_report = verify_kernel(reduce)
    assert [c.verdict.value for c in reduce_report.checks if c.check == "tag assertion"] == ["verified"] * 7


def test_the_split_tail_compiles_to_hgmma_and_tma() -> None:
    problem = mm.GemmProblem(3072, 1536, 6144, "bf16", "bf16", "K", "K")
    plan = mm.plan(problem, mm.GemmConfig(128, 256, 2, 4, TAIL=8, EPILOGUE="tma"))
    whole, tail, reduce = (compile_kernel(k) for k in plan.kernels())
    for compiled in (whole, tail):
        mix = compiled.instruction_mix()
        assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0, mix
        assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    assert whole.instruction_mix().get("UTMASTG", 0) > 0
    assert reduce.resources.spill_stores == 0


def test_the_heuristic_splits_a_tail_where_the_last_wave_idles() -> None:
    # 24 x 6 = 144 tiles of 128 x 256 on 132 SMs: one whole wave and 12 tiles, which a split spreads over the SMs
    # (among every tile shape the planner takes 192 x 192 there: 16 x 8 = 128 tiles, one wave)
    quantized = mm.GemmProblem(3072, 1536, 6144, "bf16", "bf16", "K", "K")
    config = mm.choose(quantized, tiles=((128, 256, 2),))
    assert config.TAIL > 1 and config.SPLITS == 1, config
    assert mm.estimate(quantized, config) < mm.estimate(quantized, replace(config, TAIL=1))
    # whole waves, or a last wave nearly full: nothing to gain
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048)):
        assert mm.choose(mm.GemmProblem(*shape)).TAIL == 1, shape
    # the candidates: only tails of more than one wave with a partial last one, unbatched, N % 4 == 0
    for problem in (quantized, mm.GemmProblem(3072, 1538, 6144), mm.GemmProblem(3072, 1536, 6144, batch=2)):
        tails = [c for c in mm.candidates(problem) if c.TAIL > 1]
        for c in tails:
            whole, rest = c.tail_tiles(problem)
            assert whole > 0 and 0 < rest and rest * c.TAIL <= 2 * DEFAULT_TARGET.sms
        assert bool(tails) == (problem is quantized)


def test_a_tail_ahead_of_its_own_unsplit_tile_by_the_margin_is_taken_within_the_tie(monkeypatch) -> None:
    """`TAIL_TWIN_MARGIN`: FP8 8192x8192x28672 (the model's tail3 0.5 % ahead of its unsplit twin, within `TIE`,
    measured 1.1 % faster) takes the tail; 8192x28672x8192, whose tail is ahead by less, keeps the unsplit tile; a
    configuration that takes a cluster keeps it (a tail cannot run in one)."""
    long_k = mm.GemmProblem(8192, 8192, 28672, "e4m3", "bf16")
    config = mm.choose(long_k)
    assert config.TAIL == 3 and replace(config, TAIL=1).label == "128x256x128 s4 c2 tma", config.label
    assert mm.choose(mm.GemmProblem(8192, 28672, 8192, "e4m3", "bf16")).TAIL == 1
    monkeypatch.setattr(mm, "TAIL_TWIN_MARGIN", 0.01)  # more than the model's lead: the unsplit tile again
    mm.choose.cache_clear()
    assert mm.choose(long_k).TAIL == 1
    mm.choose.cache_clear()
    monkeypatch.setattr(mm, "TAIL_TWIN_MARGIN", 0.0)  # any lead, but a clustered choice stays clustered
    clustered = mm.choose(mm.GemmProblem(8192, 8192, 8192))
    assert clustered.CLUSTER == 2 and clustered.TAIL == 1
    mm.choose.cache_clear()


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NT", "NN", "TN"])
def test_a_split_tail_matches_torch_on_the_gpu(layout: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    # wave-quantized shapes (one whole wave and a few tiles; 7.27 waves; a tail with no whole wave before it) and
    # the heuristic's tail against the same configuration without it
    for m, n, k, tail in ((3072, 1536, 6144, 8), (6144, 5120, 3072, 3), (1000, 1000, 4096, 2)):
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
        if layout[0] == "T":
            a = a.T.contiguous().T
        if layout[1] == "T":
            b = b.T.contiguous().T
        problem = mm.problem_of(a, b)
        base = mm.choose(problem)
        # (a split tail runs unclustered: `cluster_refusal`)
        config = replace(base, TAIL=tail, SPLITS=1, CLUSTER=1, EPILOGUE=base.EPILOGUE if base.SPLITS == 1 else "direct")
        c, launches = mm.prepare(a, b, config=config)
        for launch in launches:
            launch.launch()
        ref = a.float() @ b.float()
        assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2, (layout, m, n, k, config.label)
