"""Operand layouts of the Hopper GEMMs (`A_MAJOR`, `B_MAJOR`): A given as (M, K) or (K, M), B as (N, K) or (K, N),
on `gemm_warp_specialized` and the persistent kernel. An MN-major operand is staged in 64-element panels, loaded by one
TMA box per panel on the stage's mbarrier, and read by wgmma transposed (docs/gemm.md, "Operand layouts").

Tiers: interpreter against numpy with partial tiles (a panel entirely past N included); the verifier's verdict for
the expert configuration; NVRTC compile for sm_90a (HGMMA with the transpose flags, one UTMALDG per box, no
spills); seeded bugs (a wrong box coordinate, a wrong transpose, a layout TMA and wgmma cannot use) caught;
refusals; and GPU runs against torch (skipped without a GPU)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from tests.kernels.kernels_layouts_seeded import gemm_nn_reversed_panels, gemm_nn_seeded

from argus.backend.cuda.codegen import compile_kernel, generate
from argus.diagnostics import ArgusError
from argus.interp import run_kernel
from argus.kernels import get_kernel
from argus.kernels.gemm import gemm_warp_specialized, gemm_warp_specialized_persistent
from argus.lang import DSLError
from argus.lineage.variants import task_for
from argus.runtime import ArgumentError, load
from argus.tasks import get_task
from argus.verify import Verdict, verify

KERNELS = [gemm_warp_specialized, gemm_warp_specialized_persistent]
NEW_LAYOUTS = [("K", "N"), ("M", "K"), ("M", "N")]  # (A_MAJOR, B_MAJOR); ("K", "K") is the default "TN"
EXPERT = {"BN": 256, "STAGES": 4, "OUT": "bf16"}


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)


def _operands(a_major: str, b_major: str, m: int, n: int, k: int, seed: int = 0):
    """(A, B) as the math has them ((M, K), (K, N)) and as the kernel takes them."""
    rng = np.random.default_rng(seed)
    a, b = _bf16(rng.standard_normal((m, k))), _bf16(rng.uniform(-1, 1, (k, n)))
    return a, b, (a if a_major == "K" else a.T.copy()), (b.T.copy() if b_major == "K" else b)


def _extra(kernel) -> dict:
    return {"BLOCKS": 3} if kernel is gemm_warp_specialized_persistent else {}


# --- DSL: a panel layout needs whole panels (the atoms tier checks the layout itself: tests/atoms/test_smem.py)


def test_a_panel_layout_needs_whole_panels() -> None:
    with pytest.raises(DSLError) as e:
        gemm_warp_specialized.trace(B_MAJOR="N", BN=96)
    assert e.value.code == "DSL_TILE_SHAPE" and "multiple of 64" in str(e.value)


# --- interpreter ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a_major", "b_major"), NEW_LAYOUTS)
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_new_layouts_on_the_interpreter_with_partial_tiles(kernel, a_major: str, b_major: str) -> None:
    # partial M (200 = 128 + 72) and N tiles; N = 136 leaves the second N tile's second 64-column panel entirely
    # out of bounds (a box TMA fills with zeros and still counts in full); 3 K-blocks, the last partial; the
    # persistent kernel's 3 blocks walk 2 x 2 tiles
    m, n, k = 200, 136, 136
    a, b, a_in, b_in = _operands(a_major, b_major, m, n, k)
    c = np.full((m, n), np.nan)
    run_kernel(kernel.trace(A_MAJOR=a_major, B_MAJOR=b_major, **_extra(kernel)), {"A": a_in, "B": b_in, "C": c})
    want = a @ b
    assert not np.isnan(c).any()
    assert float(np.abs(c - want).max()) <= 1e-5 * float(np.abs(want).max())


def test_the_expert_tiles_with_both_operands_mn_major_under_both_role_schedules() -> None:
    m, n, k = 136, 264, 72  # BN = 256: four panels of B, the second N tile has one partial panel and three empty
    a, b, a_in, b_in = _operands("M", "N", m, n, k, seed=3)
    for schedule in ("listed", "reversed"):
        c = np.full((m, n), np.nan)
        kernel = gemm_warp_specialized.trace(A_MAJOR="M", B_MAJOR="N", **{**EXPERT, "OUT": "f32"})
        run_kernel(kernel, {"A": a_in, "B": b_in, "C": c}, schedule=schedule)
        assert float(np.abs(c - a @ b).max()) <= 1e-5 * float(np.abs(a @ b).max()), schedule


# --- verifier -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a_major", "b_major"), NEW_LAYOUTS)
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_the_expert_configuration_verifies_in_every_layout(kernel, a_major: str, b_major: str) -> None:
    result = verify(kernel.trace(A_MAJOR=a_major, B_MAJOR=b_major, **EXPERT))
    assert result.verdict == Verdict.VERIFIED and not result.errors, result.render_text()
    # the K-block assertions of both operands, the MMA alignment and the atoms' layouts were each proved
    outcomes = {(r.check, r.verdict) for r in result.checks}
    for check in ("tag assertion", "mma", "wgmma operand layout", "TMA box layout", "TMA alignment"):
        assert (check, Verdict.VERIFIED) in outcomes, outcomes
    assert sum(r.check == "tag assertion" for r in result.checks) == 2


# --- code generation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a_major", "b_major"), NEW_LAYOUTS)
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_new_layouts_compile_to_transposed_hgmma_and_one_tma_load_per_box(kernel, a_major: str, b_major: str) -> None:
    traced = kernel.trace(A_MAJOR=a_major, B_MAJOR=b_major, **EXPERT)
    source = generate(traced).source
    trans = (int(a_major != "K"), int(b_major != "K"))
    assert re.search(rf"wgmma_m64n256k16_f32_bf16_bf16<{trans[0]}, {trans[1]}>", source)
    if b_major == "N":  # four (64, 64) boxes of B; its descriptor strides one 64 x 64 panel (8 KB) and 8 K-rows
        assert "B: MN-major, 128-byte swizzle, LBO 8192, SBO 1024" in source
    if a_major == "M":  # each warpgroup's 64 rows of A are one panel: LBO unused
        assert "A: MN-major, 128-byte swizzle, LBO 16, SBO 1024" in source
    compiled = compile_kernel(traced, cache=False)
    mix = compiled.instruction_mix(modifiers=True)
    assert mix["HGMMA.64x256x16.F32.BF16"] == 4
    boxes = (1 if a_major == "K" else 2) + (1 if b_major == "K" else 4)
    assert mix["UTMALDG.2D"] == boxes
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0


def test_the_default_layout_generates_the_code_it_always_did() -> None:
    """A_MAJOR = B_MAJOR = "K" is today's TN kernel: the explicit defaults trace to the same code."""
    for kernel in KERNELS:
        default = generate(kernel.trace(**EXPERT)).source
        explicit = generate(kernel.trace(**EXPERT, A_MAJOR="K", B_MAJOR="K")).source
        assert default == explicit
        assert "<0, 0>" in default and "MN-major" not in default


# --- seeded bugs --------------------------------------------------------------------------------------------


def _interpreter_error(bug: str, bn: int) -> float:
    a, b, a_in, b_in = _operands("K", "N", 136, 200, 136, seed=1)
    c = np.zeros((136, 200))
    run_kernel(gemm_nn_seeded.trace(BUG=bug, BN=bn), {"A": a_in, "B": b_in, "C": c})
    return float(np.abs(c - a @ b).max()) / float(np.abs(a @ b).max())


def test_the_seeded_kernel_without_a_bug_is_correct_and_verified() -> None:
    assert verify(gemm_nn_seeded.trace()).verdict == Verdict.VERIFIED
    assert _interpreter_error("none", 128) < 1e-5


@pytest.mark.parametrize(
    ("bug", "bn", "codes", "wrong_numbers"),
    [
        ("box", 128, {"TAG_ASSERT"}, True),
        ("transpose", 64, {"MMA_K_MISMATCH"}, True),
        ("layout", 128, {"LAYOUT_TMA_BOX", "LAYOUT_WGMMA_OPERAND"}, False),
    ],
)
def test_seeded_bugs_are_caught(bug: str, bn: int, codes: set, wrong_numbers: bool) -> None:
    result = verify(gemm_nn_seeded.trace(BUG=bug, BN=bn))
    assert result.verdict == Verdict.VIOLATED
    assert codes <= {f.code for f in result.errors}, result.render_text()
    assert (_interpreter_error(bug, bn) > 1e-2) is wrong_numbers  # the layout bug is invisible to the interpreter
    if bug == "layout":
        with pytest.raises(ArgusError):
            generate(gemm_nn_seeded.trace(BUG=bug, BN=bn))


def test_panels_stored_backwards_are_no_wgmma_operand() -> None:
    """Each panel is a valid TMA box and the interpreter computes the right product, but the panels' distance along
    N is negative: the descriptor's LBO is unsigned, so the verifier and the code generator refuse it (the matcher
    once took such a layout with LBO clamped to 16 bytes)."""
    result = verify(gemm_nn_reversed_panels.trace())
    assert {f.code for f in result.errors} == {"LAYOUT_WGMMA_OPERAND"}, result.render_text()
    with pytest.raises(ArgusError) as e:
        generate(gemm_nn_reversed_panels.trace())
    assert "no canonical wgmma shared-memory layout" in str(e.value)


# --- refusals and the runtime's argument checks -------------------------------------------------------------


def test_an_unknown_major_is_refused() -> None:
    for kernel, params in itertools.product(KERNELS, ({"A_MAJOR": "N"}, {"B_MAJOR": "M"})):
        with pytest.raises(DSLError) as e:
            kernel.trace(**params)
        assert e.value.code == "DSL_OPERAND_MAJOR" and "K-major" in str(e.value)


def test_shapes_and_assumptions_follow_the_layout() -> None:
    k = gemm_warp_specialized.trace(A_MAJOR="M", B_MAJOR="N")
    shapes = {t.name: tuple(str(d) for d in t.shape) for t in k.tensors}
    assert shapes == {"A": ("K", "M"), "B": ("K", "N"), "C": ("M", "N")}
    # TMA needs the contiguous extents (M and N here, not K) to be 16-byte multiples
    assert [str(a) for a in k.assumptions[3:]] == ["(((M % 8) == 0) and ((N % 8) == 0))"]


def test_the_runtime_refuses_b_in_the_wrong_orientation() -> None:
    class Fake:
        def __init__(self, shape, dtype, pointer):
            self.shape, self.dtype, self._pointer = tuple(shape), dtype, pointer
            self.device = type("D", (), {"type": "cuda", "index": 0, "__str__": lambda s: "cuda:0"})()

        def data_ptr(self):
            return self._pointer

        def stride(self):
            return (self.shape[1], 1)

        def element_size(self):
            return {"torch.bfloat16": 2, "torch.float32": 4}[self.dtype]

    loaded = load(compile_kernel(gemm_warp_specialized.trace(B_MAJOR="N"), cache=False))
    a, c = Fake((256, 192), "torch.bfloat16", 1 << 40), Fake((256, 128), "torch.float32", 3 << 40)
    loaded.bind(a, Fake((192, 128), "torch.bfloat16", 2 << 40), c)  # B as (K, N): fine
    with pytest.raises(ArgumentError) as e:
        loaded.bind(a, Fake((128, 192), "torch.bfloat16", 2 << 40), c)  # B as (N, K)
    assert e.value.code == "RUNTIME_ARG_SHAPE" and e.value.argument == "B"
    assert "looks transposed" in e.value.hint and "(K, N)" in e.value.hint


def test_the_interpreter_refuses_b_in_the_wrong_orientation() -> None:
    from argus.interp import InterpError

    a, c = np.zeros((128, 72)), np.zeros((128, 136))
    with pytest.raises(InterpError) as e:
        gemm_warp_specialized(a, np.zeros((136, 72)), c, device="cpu", B_MAJOR="N")  # B as (N, K)
    assert e.value.code == "INTERP_SHAPE_MISMATCH" and "takes B as (K, N)" in str(e.value)
    assert "looks transposed" in e.value.hint


# --- the library and the task ------------------------------------------------------------------------------


def test_the_n_major_experts_are_library_entries_of_the_task_gemm() -> None:
    task = get_task("gemm")
    for name in ("gemm_hopper_nn", "gemm_hopper_persistent_nn"):
        entry = get_kernel(name)
        assert name in task.kernels
        assert entry.params["B_MAJOR"] == "N" and entry.params["BN"] == 256 and entry.params["OUT"] == "f32"
        assert task_for(entry.kernel, entry.params) == "gemm"


# --- GPU tier -------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize(("a_major", "b_major"), [("K", "K"), *NEW_LAYOUTS])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1000, 1304, 520), (136, 264, 72)], ids=str)
def test_new_layouts_on_the_gpu_match_torch(kernel, a_major: str, b_major: str, shape) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16)
    a_in = a if a_major == "K" else a.T.contiguous()
    b_in = b.T.contiguous() if b_major == "K" else b
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    params = {**EXPERT, "A_MAJOR": a_major, "B_MAJOR": b_major}
    if kernel is gemm_warp_specialized_persistent:
        params.update(BLOCKS=132, ORDER="grouped", GROUP=16)
    load(compile_kernel(kernel.trace(**params)))(a_in, b_in, c)
    torch.cuda.synchronize()
    want = a.double() @ b.double()
    error = float((c.double() - want).abs().max()) / float(want.abs().max())
    assert not torch.isnan(c).any() and error < 1e-2
