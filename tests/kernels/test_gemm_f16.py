"""The Hopper GEMMs with fp16 operands (`IN="f16"`): `gemm_warp_specialized` and the persistent kernel keep f16 in
shared memory and multiply with the f16 wgmma (f32 accumulation), for f32, bf16 and f16 outputs; the interpreter, the
verifier and the code generator agree; operands of another dtype are refused with the atom's error."""

from __future__ import annotations

import numpy as np
import pytest

from argus.atoms.errors import AtomError
from argus.backend.cuda.codegen import compile_kernel
from argus.interp import run_kernel
from argus.kernels.gemm import gemm_warp_specialized, gemm_warp_specialized_persistent
from argus.verify import Verdict, verify


def _f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float64)


def _bf16(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)


CASES = [
    (gemm_warp_specialized, {"IN": "f16", "BN": 64}),
    (gemm_warp_specialized, {"IN": "f16", "BN": 64, "OUT": "f16"}),
    (gemm_warp_specialized_persistent, {"IN": "f16", "BN": 64, "BLOCKS": 3}),
    (gemm_warp_specialized_persistent, {"IN": "f16", "BN": 64, "BLOCKS": 3, "OUT": "bf16"}),
]


@pytest.mark.parametrize(("kernel", "params"), CASES, ids=lambda x: getattr(x, "name", None) or str(x))
def test_f16_operands_on_the_interpreter_with_partial_tiles(kernel, params: dict) -> None:
    m, n, k = 128 + 72, 2 * 64 + 40, 80  # partial M, N and K tiles
    rng = np.random.default_rng(5)
    a, b = _f16(rng.standard_normal((m, k))), _f16(rng.uniform(-1, 1, (n, k)))
    c = np.full((m, n), np.nan)
    run_kernel(kernel.trace(**params), {"A": a, "B": b, "C": c})
    want = a @ b.T
    scale = float(np.abs(want).max())
    out = params.get("OUT", "f32")
    tolerance = {"f32": 1e-5, "f16": 2e-3, "bf16": 8e-3}[out]
    assert not np.isnan(c).any()
    assert float(np.abs(c - want).max()) <= tolerance * scale
    if out == "f32":  # f16 operands really stay f16: rounded to bf16 on the way they would be off by ~1e-3
        off = float(np.abs(_bf16(a) @ _bf16(b).T - want).max())
        assert off > 100 * float(np.abs(c - want).max())


def test_the_persistent_expert_configuration_verifies_with_f16_operands() -> None:
    result = verify(gemm_warp_specialized_persistent.trace(IN="f16", BN=256, STAGES=4, OUT="f16", GROUP=16))
    assert result.verdict == Verdict.VERIFIED and not result.errors, result.render_text()


@pytest.mark.parametrize("kernel", [gemm_warp_specialized, gemm_warp_specialized_persistent], ids=lambda k: k.name)
def test_f16_operands_compile_to_the_f16_wgmma(kernel) -> None:
    compiled = compile_kernel(kernel.trace(IN="f16", BN=256, STAGES=4, OUT="f16"), cache=False)
    mix = compiled.instruction_mix(modifiers=True)
    assert mix["HGMMA.64x256x16.F32"] == 4 and mix["HGMMA.64x256x16.F32.BF16"] == 0
    assert mix["STG.E.128"] == 16  # f16 C through the lane exchange, as bf16
    assert compiled.resources.spill_stores == 0


def test_operands_that_are_not_floats_the_tensor_cores_take_are_refused() -> None:
    # (f32 operands are wgmma's TF32 form since session 33: tests/kernels/test_gemm_tf32.py)
    with pytest.raises(AtomError) as e:
        gemm_warp_specialized.trace(IN="i32")
    assert e.value.code == "ATOM_MMA_DTYPE" and "bf16, f16" in str(e.value) and "TF32" in e.value.hint
