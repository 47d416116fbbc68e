"""The convolution lineage (`argus.kernels.conv_lineage`, lineage ``"conv"``): four rungs of a channels-last
convolution as implicit GEMMs, each adding one mechanism (the GEMM ladder's first four), every one matching torch's
`conv2d` on the interpreter at odd shapes (strides, padding, dilation, partial tiles, channels that do not fill a
K step), verified, compiled for sm_90a with its mechanism in the SASS; walked back from the top rung to the naive
one by KLineage, one gated mechanism a step."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from argus.interp import run_kernel
from argus.kernels import conv_lineage
from argus.kernels.registry import get_kernel, lineage, lineages
from argus.tasks.builtin import get_task, task_of_kernel

RUNGS = ("conv_naive", "conv_smem_tiled", "conv_mma_sync", "conv_cp_async")

#: (label, N, C, H, W, F, (KH, KW), SH, (PH, PW), (LH, LW)): odd sizes; the cp.async rung needs C and F multiples of 8
CASES = [
    ("3x3 pad 1, partial tiles", 1, 24, 5, 9, 24, (3, 3), 1, (1, 1), (1, 1)),
    ("5x3 row stride 2, dilated rows, uneven padding", 2, 16, 11, 7, 16, (5, 3), 2, (2, 0), (2, 1)),
    ("1x1", 1, 40, 3, 70, 72, (1, 1), 1, (0, 0), (1, 1)),
]


def _run(name: str, case: tuple) -> float:
    _, n, c, h, w, f, (kh, kw), sh, (ph, pw), (lh, lw) = case
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(n, h, w, c, generator=gen).bfloat16().double()
    weight = torch.randn(f, c, kh, kw, generator=gen).bfloat16().double()
    want = torch.nn.functional.conv2d(
        x.permute(0, 3, 1, 2), weight, stride=(sh, 1), padding=(ph, pw), dilation=(lh, lw)
    ).permute(0, 2, 3, 1)
    wt = weight.permute(2, 3, 1, 0).reshape(kh * kw, c, f)
    y = np.zeros(tuple(want.shape), np.float32)
    kernel = getattr(conv_lineage, name).trace(KH=kh, KW=kw, SH=sh, PH=ph, PW=pw, LH=lh, LW=lw, C=c)
    run_kernel(kernel, {"X": x.numpy(), "WT": wt.numpy(), "Y": y})
    return float(np.abs(y - want.numpy()).max() / max(1.0, float(want.abs().max())))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("name", RUNGS)
def test_each_rung_matches_torch_on_the_interpreter(name: str, case: tuple) -> None:
    assert _run(name, case) <= 1e-6


def test_the_lineage_is_the_gemm_ladders_first_four_rungs_on_its_own_task() -> None:
    assert "conv" in lineages()
    steps = lineage("conv")
    assert [(s.kernel, s.mechanism) for s in steps] == [
        ("conv_naive", "naive_fma"),
        ("conv_smem_tiled", "smem_tiling"),
        ("conv_mma_sync", "mma_sync"),
        ("conv_cp_async", "cp_async_pipeline"),
    ]
    assert [s.mechanism for s in steps] == [s.mechanism for s in lineage("gemm")[:4]]
    task = get_task("conv2d_nhwc")
    assert all(task_of_kernel(r).name == "conv2d_nhwc" for r in RUNGS)
    x, wt = task.sample(task.small_sizes, seed=0)
    want = torch.nn.functional.conv2d(
        x.double().permute(0, 3, 1, 2), wt.double().reshape(3, 3, 64, -1).permute(3, 2, 0, 1), padding=1
    ).permute(0, 2, 3, 1)
    assert torch.allclose(task.reference(x.double(), wt.double()), want)


@pytest.mark.parametrize("name", RUNGS)
def test_each_rung_is_verified_and_compiles_with_its_mechanism(name: str) -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify

    entry = get_kernel(name)
    result = verify(entry)
    assert result.verdict.value == "verified", [e.code for e in result.errors] + [u.code for u in result.unknowns]
    mix = compile_kernel(entry.kernel.trace(**entry.params)).instruction_mix()
    mma, staged = mix.get("HMMA", 0) > 0, mix.get("LDSM", 0) > 0
    assert (mma, staged) == (name in ("conv_mma_sync", "conv_cp_async"),) * 2
    assert (mix.get("LDGSTS", 0) > 0) == (name == "conv_cp_async")
    assert (mix.get("FFMA", 0) > 0) == (name in ("conv_naive", "conv_smem_tiled"))


def test_a_parameter_outside_the_kernel_s_reach_is_refused() -> None:
    from argus.lang.errors import DSLError

    with pytest.raises(DSLError, match="C must be a multiple of 8"):
        conv_lineage.conv_cp_async.trace(C=12)
    with pytest.raises(DSLError, match="positive int"):
        conv_lineage.conv_naive.trace(C=0)


def test_klineage_walks_the_top_rung_back_to_the_naive_one() -> None:
    from argus.lineage import walk

    walked = walk("conv_cp_async")
    assert walked.reached_naive, walked.stopped
    assert [s.operator["mechanism"] for s in walked.steps] == ["pipeline", "global_copy", "mma", "smem_tiling"]
    for step in walked.steps:
        assert step.gate["verdict"] == "accepted", step.gate["summary"]
        assert step.check["ok"] and len(step.check["removed"]) == 1 and not step.check["added"]
    assert walked.kernels[-1]["library"] == "conv_naive"
