"""Swap-AB plans of the Hopper GEMM (`argus.kernels.matmul.swapped`, `GemmConfig.SWAP`, the kernel's ``C_MAJOR="M"``):
for a product with few rows of A, the kernel computes C^T = B^T A^T (the weight's rows fill the 64- or 128-row tiles,
A's rows are wgmma's narrow N) and stores each tile through the transposed view of its window into the user's C.

Tiers: the problem transform and which problems have swap-AB plans; the plan's refusals; the interpreter against
numpy through exactly the plan's kernels (both B layouts, padding along K and N, split-K into a transposed workspace);
the verifier's verdict; NVRTC compile for sm_90a (HGMMA at N = 8, no spills); a GPU run against torch (skipped
without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.kernels import matmul as mm
from argus.kernels.gemm import gemm_warp_specialized_persistent
from argus.lang import DSLError
from argus.verify import Verdict, verify


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)


def _swap(m: int, bm: int, splits: int = 1, stages: int = 4) -> mm.GemmConfig:
    return mm.GemmConfig(bm, mm._up(m, 8), 1 if bm == 64 else 2, stages, splits, "direct", SWAP=True)


# --- the transform and the plans that have it ---------------------------------------------------------------------


def test_swapped_exchanges_the_operands_roles_and_stores_c_transposed() -> None:
    p = mm.GemmProblem(8, 4096, 1024, b_major="K")  # x @ w.T: w stored (N, K)
    q = mm.swapped(p)
    assert (q.M, q.N, q.K, q.a_major, q.b_major, q.c_major) == (4096, 8, 1024, "K", "K", "M")
    assert q.c_columns == 4096 and p.c_columns == 4096  # C's rows in memory: the user's N either way
    r = mm.swapped(mm.GemmProblem(8, 4096, 1024, b_major="N"))  # B (K, N) row-major: B^T is M-major
    assert (r.a_major, r.b_major) == ("M", "K")
    assert mm.swapped(q) == p


def test_swap_tiles_apply_to_few_rows_of_a_row_major_16_bit_a_only() -> None:
    assert mm.swap_tiles(mm.GemmProblem(96, 7168, 7168, b_major="K")) == ((128, 96, 2), (64, 96, 1))
    assert mm.swap_tiles(mm.GemmProblem(3, 4096, 4096)) == ((128, 8, 2), (64, 8, 1))
    assert mm.swap_tiles(mm.GemmProblem(mm.SWAP_MAX_M + 1, 4096, 4096)) == ()
    assert mm.swap_tiles(mm.GemmProblem(8, 4096, 4096, a_major="M")) == ((128, 64, 2), (64, 64, 1))  # 64-col panels
    assert mm.swap_tiles(mm.GemmProblem(8, 4096, 4096, dtype="f32", out="f32")) == ()
    assert mm.swap_tiles(mm.GemmProblem(8, 4096, 4096, batch=2)) == ()
    found = mm.candidates_for(mm.GemmProblem(8, 8192, 8192, b_major="K"))
    assert any(c.SWAP for c in found) and not any(
        c.SWAP for c in mm.candidates_for(mm.GemmProblem(8, 8192, 8192, b_major="K"), swap=False)
    )
    # a swap configuration's store is direct and its split workspace is stored transposed too
    assert all(c.EPILOGUE == "direct" and c.TAIL == 1 for c in found if c.SWAP)


def test_swap_plans_refuse_what_they_cannot_run() -> None:
    with pytest.raises(mm.GemmError, match="bf16 and f16"):
        mm.plan(mm.GemmProblem(8, 256, 256, dtype="f32", out="f32"), _swap(8, 64))
    with pytest.raises(mm.GemmError, match="unbatched"):
        mm.GemmProblem(256, 8, 256, batch=2, c_major="M")
    with pytest.raises(mm.GemmError, match="multiple of 4"):  # the transposed workspace's rows are C's: N here
        mm.plan(mm.GemmProblem(8, 130, 512), _swap(8, 64, splits=2))
    with pytest.raises(DSLError, match="C_MAJOR"):
        gemm_warp_specialized_persistent.trace(C_MAJOR="K")
    with pytest.raises(DSLError, match="transposed C"):
        gemm_warp_specialized_persistent.trace(C_MAJOR="M", EPILOGUE="tma")


@pytest.mark.parametrize(
    ("m", "n", "k", "bm", "splits"),
    # one wave of 132 SMs: the most units, then the fewest splits: 64-row tiles (8192/64 = 128 and 7168/64 = 112
    # unsplit; 4096/64 x 2) where 128-row ones need twice the splits; 11008/128 = 86 tiles unsplit (172 of 64 rows
    # are more than a wave); 48x1024x65536: 16 tiles of 64 x 8 splits
    [
        (8, 8192, 8192, 64, 1),
        (4, 11008, 4096, 128, 1),
        (32, 4096, 14336, 64, 2),
        (96, 7168, 7168, 64, 1),
        (48, 1024, 65536, 64, 8),
    ],
)
def test_choose_takes_the_one_wave_swap_plan_for_few_rows(m: int, n: int, k: int, bm: int, splits: int) -> None:
    config = mm.choose(mm.GemmProblem(m, n, k, b_major="K"))
    consumers = bm // 64
    assert config.SWAP and (config.BM, config.BN, config.CONSUMERS, config.SPLITS) == (
        bm,
        mm._up(m, 8),
        consumers,
        splits,
    )


def test_choose_takes_the_unsplit_swap_tile_of_the_fewest_waves_for_a_tall_weight() -> None:
    # 28672 weight rows: 224 tiles of 128 (2 waves) or 448 of 64 (4): more than one wave even unsplit
    config = mm.choose(mm.GemmProblem(8, 28672, 8192, b_major="K"))
    assert config.SWAP and (config.BM, config.SPLITS) == (128, 1), config.label


def test_choose_takes_swap_ab_in_panels_for_a_transposed_a() -> None:
    config = mm.choose(mm.GemmProblem(8, 8192, 8192, a_major="M", b_major="K"))
    assert config.SWAP and (config.BM, config.BN, config.SPLITS) == (64, 64, 1)


def test_choose_leaves_the_rest_to_the_model() -> None:
    assert not mm.choose(mm.GemmProblem(8, 4096, 4096), swap=False).SWAP
    assert not mm.choose(mm.GemmProblem(512, 4096, 4096)).SWAP
    assert mm.swap_choice(mm.GemmProblem(mm.SWAP_PREFER_M + 8, 4096, 4096), []) is None  # past the preference


# --- interpreter --------------------------------------------------------------------------------------------------

CASES = [
    # (M, N, K, B layout, BM, splits): partial tiles along the weight's rows, K not a multiple of 64 or of 8 (padded)
    (5, 200, 136, "K", 64, 1, "K"),
    (13, 150, 100, "N", 64, 2, "K"),  # B (K, N) row-major: B^T M-major, N padded to 152
    (40, 132, 257, "K", 128, 3, "K"),  # split-K into a workspace stored transposed, then the reduction
    (1, 72, 64, "N", 128, 1, "K"),
    (6, 300, 200, "K", 128, 1, "M"),  # A a transposed view: A^T is an N-major B operand, in a 64-column panel
    (20, 136, 520, "N", 128, 2, "M"),
]


@pytest.mark.parametrize(("m", "n", "k", "b_major", "bm", "splits", "a_major"), CASES)
def test_swap_plans_match_numpy_on_the_interpreter(
    m: int, n: int, k: int, b_major: str, bm: int, splits: int, a_major: str
) -> None:
    rng = np.random.default_rng(m * 7 + n)
    problem = mm.GemmProblem(m, n, k, "bf16", "f32", a_major=a_major, b_major=b_major)
    config = _swap(m, bm, splits) if a_major == "K" else mm.GemmConfig(bm, 64, 2, 4, splits, "direct", SWAP=True)
    plan = mm.plan(problem, config)
    assert plan.swap_ab and plan.padded.c_major == "M"
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.uniform(-1, 1, (k, n)))
    c = plan.run_on_interpreter(a, b)
    assert c.shape == (m, n)
    assert np.abs(c - a @ b).max() < 1e-4 * max(1.0, np.abs(a @ b).max())


def test_a_tile_stored_untransposed_is_wrong_on_the_interpreter() -> None:
    """The transposed store is what makes the result right: the same kernel storing C (M, N) row-major into the
    (N, M) buffer gives another matrix (guards the test above against comparing a transposed result with itself)."""
    rng = np.random.default_rng(3)
    m, n, k = 8, 64, 64
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.standard_normal((k, n)))
    from argus.interp import run_kernel

    plain = gemm_warp_specialized_persistent.trace(BM=64, BN=8, CONSUMERS=1, STAGES=2, OUT="f32", BLOCKS=2)
    c = np.full((n, m), np.nan)  # C^T's kernel problem (M' = n rows), stored row-major
    run_kernel(plain, {"A": b.T.copy(), "B": a, "C": c})
    assert not np.allclose(c.reshape(m, n), a @ b)
    assert np.allclose(c, (a @ b).T, atol=1e-4)


# --- verifier and compiler ----------------------------------------------------------------------------------------


def test_the_swap_kernel_is_verified_and_compiles_to_narrow_hgmma_without_spills() -> None:
    traced = gemm_warp_specialized_persistent.trace(BM=128, BN=8, CONSUMERS=2, STAGES=8, OUT="bf16", C_MAJOR="M")
    assert verify(traced).verdict == Verdict.VERIFIED
    compiled = compile_kernel(traced)
    mix = compiled.instruction_mix()
    for opcode in ("UTMALDG", "HGMMA"):
        assert mix.get(opcode, 0) > 0, (opcode, mix)
    assert compiled.instruction_mix(modifiers=True)["HGMMA.64x8x16.F32.BF16"] > 0, mix  # wgmma at N = 8
    r = compiled.resources
    assert r.spill_stores == 0 and r.spill_loads == 0, r


# --- GPU ----------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_swap_plans_match_torch_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for m, n, k, bm, splits in ((8, 8192, 8192, 64, 1), (96, 7168, 7168, 64, 1), (32, 4096, 14336, 128, 2),
                                (3, 1000, 1000, 64, 1), (17, 4096, 4104, 128, 4)):  # fmt: skip
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        w = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        c = mm.matmul(a, w.T, config=_swap(m, bm, splits, stages=8))
        ref = a.float() @ w.float().T
        assert c.shape == (m, n) and c.is_contiguous()
        assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2, (m, n, k)
        # A a transposed view (layout TT): the plan's own choice, swap-AB in 64-column panels
        at = a.T.contiguous().T
        c = mm.matmul(at, w.T)
        assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2, ("TT", m, n, k)
