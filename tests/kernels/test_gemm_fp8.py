"""FP8 GEMMs (issue #20): e4m3 and e5m2 operands on ``wgmma``'s k32 form through the persistent Hopper GEMM, scaled as
``torch._scaled_mm`` scales (per tensor or per row and column, plus a bias) in the fused epilogue. On the CPU: the
interpreter runs exactly the plans a GPU call launches (every mechanism: one and two consumer warpgroups, split-K,
TMA-store epilogue, K not a multiple of 16 padded), the kernels verify and compile to ``QGMMA`` and TMA without
spills, and what cannot run is refused with the reason. On a GPU: `scaled_mm` matches ``torch._scaled_mm``."""

from __future__ import annotations

import numpy as np
import pytest

from argus.atoms.common import SHARED_MEMORY_BUDGET
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import dtype_from_name, round_to
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue
from argus.verify import verify_kernel


def _fp8(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return round_to(dtype_from_name(dtype), rng.standard_normal(shape))


@pytest.mark.parametrize(
    ("dtype", "shape", "config"),
    [
        # one consumer warpgroup, 64x64 tiles, three K-blocks of 128, partial tiles in M and N
        ("e4m3", (100, 72, 384), mm.GemmConfig(64, 64, 1, 2, BK=128)),
        # two consumer warpgroups and split-K: 8 K-blocks in 2 splits, an f32 workspace reduced
        ("e4m3", (130, 136, 1024), mm.GemmConfig(128, 128, 2, 2, SPLITS=2, BK=128)),
        # TMA-store epilogue; K = 200 is not a K-block multiple (TMA's zeros past K)
        ("e5m2", (70, 64, 200), mm.GemmConfig(64, 64, 1, 3, EPILOGUE="tma", BK=128)),
        # K = 333 is not a multiple of 16 bytes: the operands are zero-padded to 336 first
        ("e5m2", (5, 64, 333), mm.GemmConfig(64, 128, 1, 4, BK=128)),
    ],
)
def test_every_mechanism_multiplies_fp8_on_the_interpreter(dtype, shape, config) -> None:
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    a, b = _fp8(dtype, (m, k), rng), _fp8(dtype, (k, n), rng)
    plan = mm.plan(mm.GemmProblem(m, n, k, dtype, "f32"), config)
    assert plan.needs_padding == (k % 16 != 0)
    c = plan.run_on_interpreter(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # FP8 products are exact in f32; the interpreter sums in float64, so only the f32 store rounds
    assert np.max(np.abs(c - ref)) <= 1e-6 * np.max(np.abs(ref))


def test_the_heuristic_plans_fp8_on_k_blocks_of_128_and_they_run() -> None:
    rng = np.random.default_rng(3)
    for m, n, k in ((5, 64, 333), (200, 40, 1024)):
        problem = mm.GemmProblem(m, n, k, "e4m3", "bf16")
        plan = mm.plan(problem)
        assert plan.config.BK == 128 and not plan.is_gemv, plan.config
        a, b = _fp8("e4m3", (m, k), rng), _fp8("e4m3", (k, n), rng)
        c = plan.run_on_interpreter(a, b)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        assert np.max(np.abs(c - ref)) <= 2**-8 * np.max(np.abs(ref))  # C in bf16
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (1, 4096, 4096), (512, 512, 65536)):
        config = mm.choose(mm.GemmProblem(*shape, "e4m3", "bf16"))
        assert config.BK == 128 and mm.shared_bytes(config, mm.GemmProblem(*shape, "e4m3")) <= SHARED_MEMORY_BUDGET


@pytest.mark.parametrize("split", [False, True])
def test_scales_and_bias_apply_to_the_accumulator(split: bool) -> None:
    # per-tensor scale of A (one element, read on the device), per-column scale of B and a bf16 bias
    m, n, k = 100, 72, 384
    rng = np.random.default_rng(7)
    a, b = _fp8("e4m3", (m, k), rng), _fp8("e4m3", (k, n), rng)
    sa, sb = np.array([0.375]), rng.uniform(0.5, 2.0, n)
    bias = round_to(dtype_from_name("bf16"), rng.standard_normal(n))
    ep = Epilogue.of("acc * scale_a * scale_b + bias", scale_a="scalar", scale_b="columns", bias=("columns", "bf16"))
    config = mm.GemmConfig(64, 64, 1, 2, SPLITS=3 if split else 1, BK=128)
    plan = mm.plan(mm.GemmProblem(m, n, k, "e4m3", "f32"), config, epilogue=ep)
    c = plan.run_on_interpreter(a, b, operands={"scale_a": sa, "scale_b": sb, "bias": bias})
    ref = (a.astype(np.float64) @ b.astype(np.float64)) * 0.375 * sb + bias
    assert np.max(np.abs(c - ref)) <= 1e-6 * np.max(np.abs(ref))


def test_the_fp8_kernels_verify_and_compile_to_qgmma() -> None:
    ep = Epilogue.of("acc * scale_a * scale_b", scale_a="scalar", scale_b="scalar")
    problem = mm.GemmProblem(4096, 4096, 4096, "e4m3", "bf16")
    for config in (
        mm.GemmConfig(128, 256, 2, 4, EPILOGUE="tma", BK=128),
        mm.GemmConfig(64, 128, 1, 8, SPLITS=4, BK=128),
    ):
        plan = mm.plan(problem, config, epilogue=ep)
        for kernel in (plan.main_kernel(), plan.reduce_kernel()):
            if kernel is None:
                continue
            report = verify_kernel(kernel)
            assert not report.findings, report.findings
            verdicts = {(c.check, c.target): c.verdict.value for c in report.checks}
            assert all(v == "verified" for (check, _), v in verdicts.items() if check == "tag assertion")
            assert all(v == "verified" for (check, _), v in verdicts.items() if check.startswith("wgmma"))
            compiled = compile_kernel(kernel)
            assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
            mix = compiled.instruction_mix(modifiers=True)
            if kernel is plan.main_kernel():
                # 128 / 32 = four k32 instructions per K-block, FP8 operands, f32 accumulators
                qgmma = {op: count for op, count in mix.items() if op.startswith("QGMMA")}
                assert qgmma and all(".E4M3.E4M3" in op and ".F32" in op for op in qgmma), qgmma
                assert sum(qgmma.values()) == 4, qgmma
                assert mix.get("UTMALDG", 0) > 0 or any(op.startswith("UTMALDG") for op in mix), mix


def test_fp8_problems_that_cannot_run_are_refused_with_the_reason() -> None:
    for majors in (("M", "K"), ("K", "N"), ("M", "N")):
        with pytest.raises(mm.GemmError, match="K-major"):
            mm.GemmProblem(64, 64, 64, "e4m3", "bf16", *majors)
    with pytest.raises(mm.GemmError, match="BK = 64"):
        mm.plan(mm.GemmProblem(64, 64, 256, "e4m3", "bf16"), mm.GemmConfig(64, 64, 1, 2))
    with pytest.raises(mm.GemmError, match="output dtype"):
        mm.GemmProblem(64, 64, 64, "e4m3", "e4m3")


def test_scaled_mm_reads_its_scales_like_torch() -> None:
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 128).to(torch.float8_e4m3fn)
    w = torch.randn(96, 128).to(torch.float8_e4m3fn)
    assert mm.problem_of(a, w.t()) == mm.GemmProblem(64, 96, 128, "e4m3", "bf16", "K", "K")
    with pytest.raises(mm.GemmError, match="K-major"):
        mm.problem_of(a, w.t().contiguous())  # B row-major (K, N): wgmma cannot transpose FP8
    ep, tensors = mm.scaled_operands(a, w.t(), torch.tensor(0.5), torch.ones(1, 96))
    assert [(o.name, o.kind) for o in ep.operands] == [("scale_a", "scalar"), ("scale_b", "columns")]
    assert tensors["scale_a"].shape == (1,) and tensors["scale_b"].shape == (96,)
    ep, _ = mm.scaled_operands(a, w.t(), torch.ones(64, 1), torch.tensor([2.0]), torch.zeros(96))
    assert [o.kind for o in ep.operands] == ["rows", "scalar", "columns"] and ep.statements[0].endswith("+ bias")
    for bad, match in (
        (torch.ones(3), "one element"),
        (torch.tensor(1.0, dtype=torch.float64), "float32"),
        (torch.ones(64, 2), "one element"),
    ):
        with pytest.raises(mm.GemmError, match=match):
            mm.scaled_operands(a, w.t(), bad, torch.tensor(1.0))
    with pytest.raises(mm.GemmError, match="bias"):
        mm.scaled_operands(a, w.t(), torch.tensor(1.0), torch.tensor(1.0), torch.zeros(95))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["e4m3", "e5m2"])
def test_scaled_mm_matches_torch_on_the_gpu(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    fp8 = mm.torch_dtype(dtype)
    # (1000, 1008, 1000): K not a multiple of 16, so the operands are zero-padded first
    shapes = (
        (4096, 4096, 4096),
        (1, 4096, 4096),
        (1000, 1000, 1008),
        (1000, 1008, 1000),
        (2049, 3072, 4096),
        (512, 512, 16384),
    )
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda").to(fp8)
        w = torch.randn(n, k, device="cuda").to(fp8)
        sa, sb = torch.tensor(0.25, device="cuda"), torch.tensor(3.0, device="cuda")
        ref = (a.float() @ w.float().t()) * 0.75
        c = mm.scaled_mm(a, w.t(), sa, sb)
        assert c.shape == (m, n) and c.dtype == torch.bfloat16
        err = float((c.float() - ref).abs().max() / ref.abs().max())
        # the FP8 products accumulate in wgmma's accumulator over all of K, as cuBLAS's fast accumulation does: the
        # error grows with K (about 1e-2 at K = 16384), so it is held to what cuBLAS's own fast mode gives
        bound = 1e-2 if k <= 4096 else 2e-2
        if dtype == "e4m3" and m % 16 == n % 16 == 0:  # torch takes e4m3 x e4m3 (not e5m2 x e5m2), sizes % 16
            fast = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True)
            bound = max(1e-2, 1.25 * float((fast.float() - ref).abs().max() / ref.abs().max()))
        assert err < bound, (dtype, m, n, k, err, bound)
        rows, cols = torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5
        bias = torch.randn(n, device="cuda").to(torch.bfloat16)
        c = mm.scaled_mm(a, w.t(), rows, cols, bias=bias, out_dtype=torch.float32)
        ref = (a.float() @ w.float().t()) * rows * cols + bias.float()
        err = float((c - ref).abs().max() / ref.abs().max())
        assert c.dtype == torch.float32 and err < bound, (dtype, m, n, k, err, bound)  # accumulation, as above


# --- block-scaled FP8 (argus.kernels.gemm_fp8): scales per row and 128-element K-block of A, per 128 x 128 block of B


def _block_reference(a, b, scale_a, scale_b) -> np.ndarray:  # noqa: ANN001
    m, k = a.shape
    out = np.zeros((m, b.shape[1]))
    for kb in range(-(-k // 128)):
        rows = slice(128 * kb, min(k, 128 * kb + 128))
        part = a[:, rows].astype(np.float64) @ b[rows].astype(np.float64)
        out += part * scale_a[:, kb][:, None] * np.repeat(scale_b[kb], 128)[: b.shape[1]][None, :]
    return out


@pytest.mark.parametrize(
    ("shape", "config"),
    [
        # two consumer warpgroups of 64 rows, partial row and column tiles, K = 400 (a short last K-block)
        ((150, 136, 400), mm.BlockScaledConfig(128, 2, 3)),
        # one consumer warpgroup of 64 rows (a decode batch), three blocks walking 2 x 2 tiles
        ((70, 256, 256), mm.BlockScaledConfig(64, 1, 2)),
        # three consumer warpgroups of 64 rows (192-row tiles), a partial second row tile
        ((200, 136, 384), mm.BlockScaledConfig(192, 3, 2)),
    ],
)
def test_block_scaled_fp8_is_correct_on_the_interpreter(shape, config) -> None:
    m, n, k = shape
    rng = np.random.default_rng(n + k)
    a, b = _fp8("e4m3", (m, k), rng), _fp8("e4m3", (k, n), rng)
    kb, nb = -(-k // 128), -(-n // 128)
    scale_a, scale_b = rng.uniform(0.25, 4.0, (m, kb)), rng.uniform(0.25, 4.0, (kb, nb))
    c = mm.block_scaled_on_interpreter(a, b, scale_a, scale_b, config, blocks=3)
    ref = _block_reference(a, b, scale_a, scale_b)
    assert np.max(np.abs(c - ref)) <= 1e-6 * np.max(np.abs(ref))


def test_block_scaled_fp8_verifies_and_a_scale_of_the_wrong_rows_is_caught(tmp_path) -> None:
    from argus.eval.candidates import import_file
    from argus.kernels.gemm_fp8 import gemm_fp8_block_scaled
    from argus.kernels.source import module_source

    report = verify_kernel(gemm_fp8_block_scaled.trace())
    assert not report.findings, report.findings
    tags = [c for c in report.checks if c.check == "tag assertion"]
    assert len(tags) == 3 and all(c.verdict.value == "verified" for c in tags)
    compiled = compile_kernel(gemm_fp8_block_scaled)
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    qgmma = {op: n for op, n in compiled.instruction_mix(modifiers=True).items() if op.startswith("QGMMA")}
    assert qgmma and sum(qgmma.values()) == 4 and all(".E4M3.E4M3" in op for op in qgmma), qgmma
    # seeded bug: the row scales of the next row tile
    text = module_source(gemm_fp8_block_scaled)
    good = "T.copy(SA.tile((k, bm), (None, BM)), sa)"
    assert text.count(good) == 1
    path = tmp_path / "broken_block_scaled.py"
    path.write_text(text.replace(good, "T.copy(SA.tile((k, bm + 1), (None, BM)), sa)"))
    broken = getattr(import_file(path, "broken_block_scaled"), gemm_fp8_block_scaled.name)
    found = verify_kernel(broken.trace())
    assert any(f.code == "TAG_ASSERT" for f in found.findings), [f.code for f in found.findings]


def test_block_scaled_fp8_refuses_what_it_cannot_run() -> None:
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 256).to(torch.float8_e4m3fn)
    w = torch.randn(128, 256).to(torch.float8_e4m3fn)
    with pytest.raises(mm.GemmError, match=r"scale_a \(64, 2\)"):
        mm.block_scales(a, w.t(), torch.ones(64, 3), torch.ones(2, 1), torch)
    with pytest.raises(mm.GemmError, match="float32"):
        mm.block_scales(a, w.t(), torch.ones(64, 2, dtype=torch.float64), torch.ones(2, 1), torch)
    with pytest.raises(mm.GemmError, match="K a multiple of 16"):
        mm.block_scaled_mm(a[:, :250].contiguous(), w[:, :250].contiguous().t(), torch.ones(64, 2), torch.ones(2, 1))
    assert mm.block_scaled_config(16, 4096).BM == 64
    assert mm.block_scaled_config(4096, 4096) == mm.BlockScaledConfig(192, 3, 5)  # 22 x 32 tiles: every SM busy
    assert mm.block_scaled_config(1024, 1024).CONSUMERS == 2  # 6 x 8 tiles of 192 rows would leave SMs idle


@pytest.mark.gpu
def test_block_scaled_mm_matches_the_reference_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for m, n, k in ((4096, 4096, 4096), (16, 7168, 2048), (1000, 1000, 1008), (512, 512, 16384)):
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        kb, nb = -(-k // 128), -(-n // 128)
        scale_a = (torch.rand(kb, m, device="cuda") + 0.5).t()  # column-major, as torch takes it
        scale_b = torch.rand(kb, nb, device="cuda") + 0.5
        c = mm.block_scaled_mm(a, w.t(), scale_a, scale_b)
        sa = scale_a.repeat_interleave(128, dim=1)[:, :k]
        sb = scale_b.repeat_interleave(128, dim=0)[:k].repeat_interleave(128, dim=1)[:, :n]
        ref = torch.zeros(m, n, device="cuda", dtype=torch.float64)
        for j in range(kb):  # each K-block's product times its scales, summed in float64
            rows = slice(128 * j, min(k, 128 * j + 128))
            part = a[:, rows].double() @ w[:, rows].double().t()
            ref += part * sa[:, rows][:, :1].double() * sb[rows][:1].double()
        err = float((c.double() - ref).abs().max() / ref.abs().max())
        assert c.dtype == torch.bfloat16 and err < 8e-3, (m, n, k, err)  # bf16 C; the sum over K in f32
