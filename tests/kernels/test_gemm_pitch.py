"""Copies into zero-padded operands (issue #20): `pad_copy` (a DSL kernel) copies an operand TMA cannot address (rows
not whole 16-byte units apart), or one whose rows are 16 bytes past a multiple of `PITCH_BYTES` (TMA reads those
1.3-1.6x slower: benchmarks/results/2026-12-02-gemm-tiles, call 6) where the plan chooses the copy
(`GemmConfig.PITCH`). The copies are launches of the plan: verified with it, run on the interpreter through it, and
on the GPU they read the operands anew at every relaunch."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.interp import run_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import matmul as mm
from argus.kernels.gemm import pad_copy
from argus.verify import Verdict, verify


@pytest.mark.parametrize(("vec", "batch"), [(8, False), (1, False), (8, True)])
def test_pad_copy_is_verified_and_compiles_to_16_byte_accesses(vec: int, batch: bool) -> None:
    traced = pad_copy.trace(DT="bf16", VEC=vec, BR=4, BC=64 * vec, BATCH=batch)
    assert verify(traced).verdict == Verdict.VERIFIED
    compiled = compile_kernel(traced)
    mix = compiled.instruction_mix(modifiers=True)
    assert (mix.get("LDG.E.128.CONSTANT", 0) > 0) == (vec == 8), mix
    assert compiled.resources.spill_stores == 0


@pytest.mark.parametrize(("r", "c", "rp", "p", "vec"), [(64, 67, 64, 80, 1), (5, 96, 8, 128, 8), (3, 8, 3, 8, 8)])
def test_pad_copy_copies_and_zero_fills_on_the_interpreter(r: int, c: int, rp: int, p: int, vec: int) -> None:
    x = (np.arange(r * c, dtype=np.float64).reshape(r, c) % 97) + 1  # exact in bf16
    y = np.full((rp, p), np.nan)
    run_kernel(pad_copy.trace(DT="bf16", VEC=vec, BR=4, BC=64 * vec), {"X": x, "Y": y})
    want = np.zeros((rp, p))
    want[:r, :c] = x
    assert np.array_equal(y, want)


def test_rows_16_bytes_past_a_whole_pitch_are_copied_where_the_model_says_it_pays() -> None:
    big = mm.GemmProblem(6000, 6000, 3000, "bf16", "bf16")  # 6000-byte rows: 16 past a multiple of 32
    assert mm.misaligned_pitch(big) and mm.pitch_refusal(big) is None
    # in 2-block clusters sharing B the rows are read as they are (0.87 -> 0.97x cuBLAS on an H200, session 54)
    chosen = mm.choose(big)
    assert chosen.CLUSTER == 2 and not chosen.PITCH
    assert not mm.plan(big).pads
    mm.CLUSTERS = False  # without clusters: the copy to whole pitches (measured 0.65 -> 0.75x cuBLAS on an H100)
    mm.choose.cache_clear()
    try:
        chosen = mm.choose(big)
        assert chosen.PITCH
        plan = mm.plan(big, chosen)
        assert plan.padded.K == 3008 and [s.operand for s in plan.pads] == [0, 1]
        assert [k.name for k in plan.kernels()][:2] == ["pad_copy", "pad_copy"]
    finally:
        mm.CLUSTERS = True
        mm.choose.cache_clear()
    # small: the copy costs more than it saves
    assert not mm.choose(mm.GemmProblem(1024, 1024, 1000, "bf16", "bf16")).PITCH
    # whole pitches, f32 (its split pass pads), or copied anyway: no such plan
    assert mm.pitch_refusal(mm.GemmProblem(4096, 4096, 4000)) is not None
    assert mm.pitch_refusal(mm.GemmProblem(4096, 4096, 3000, "f32", "f32")) is not None
    assert mm.pitch_refusal(mm.GemmProblem(4096, 4096, 4097)) is not None
    with pytest.raises(mm.GemmError, match="no copy to whole pitches"):
        mm.plan(mm.GemmProblem(64, 64, 4096), mm.GemmConfig(64, 64, 1, 3, PITCH=True))


@pytest.mark.parametrize(
    ("shape", "majors"),
    [((100, 130, 72), ("K", "K")), ((72, 136, 200), ("M", "N")), ((100, 72, 136), ("K", "N"))],
)
def test_a_pitch_plan_is_correct_on_the_interpreter(shape, majors) -> None:
    m, n, k = shape
    problem = mm.GemmProblem(m, n, k, "bf16", "f32", *majors)
    assert mm.misaligned_pitch(problem)
    plan = mm.plan(problem, mm.GemmConfig(64, 128, 1, 3, PITCH=True))
    assert plan.needs_padding and plan.pads
    rng = np.random.default_rng(k)
    a = np.asarray(round_to(bf16, rng.standard_normal((m, k))), np.float64)
    b = np.asarray(round_to(bf16, rng.uniform(-1, 1, (k, n))), np.float64)
    c = plan.run_on_interpreter(a, b)
    assert np.abs(c - a @ b).max() < 1e-4 * max(1.0, np.abs(a @ b).max())


def test_a_swap_ab_plan_is_not_padded() -> None:
    plan = mm.plan(mm.GemmProblem(64, 8192, 3008, "bf16", "bf16"))
    assert plan.swap_ab and not plan.needs_padding and plan.pads == []


@pytest.mark.gpu
def test_a_padded_call_reads_its_operands_anew_at_every_relaunch() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    a = torch.randn(300, 3000, device="cuda").to(torch.bfloat16)
    b = torch.randn(3000, 520, device="cuda").to(torch.bfloat16)
    c, launches = mm.prepare(a, b, config=mm.GemmConfig(128, 128, 2, 3, PITCH=True))
    assert not launches.copies
    a.mul_(2)
    for launch in launches:
        launch.launch()
    torch.cuda.synchronize()
    want = a.float() @ b.float()
    assert float((c.float() - want).abs().max() / want.abs().max()) < 1e-2
