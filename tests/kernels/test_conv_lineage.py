"""The convolution lineage (`argus.kernels.conv_lineage`, lineage ``"conv"``): nine rungs of a channels-last
convolution as implicit GEMMs, each adding one mechanism (the GEMM ladder's nine; the TMA + wgmma rung split for the
walk by its bridge `conv_cp_async_wgmma`), every one matching torch's
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

RUNGS = (
    "conv_naive",
    "conv_smem_tiled",
    "conv_mma_sync",
    "conv_cp_async",
    "conv_swizzle",
    "conv_tma_wgmma",
    "conv_warp_specialized",
    "conv_warp_specialized_persistent",
    "conv_tma_store_epilogue",
)
#: the rungs on wgmma, and the bridge that splits rung 6 (wgmma fed by cp.async)
WGMMA = ("conv_tma_wgmma", "conv_cp_async_wgmma")

#: (label, N, C, H, W, F, (KH, KW), SH, (PH, PW), (LH, LW)): odd sizes; the cp.async rung needs C and F multiples of 8
CASES = [
    ("3x3 pad 1, partial tiles", 1, 24, 5, 9, 24, (3, 3), 1, (1, 1), (1, 1)),
    ("5x3 row stride 2, dilated rows, uneven padding", 2, 16, 11, 7, 16, (5, 3), 2, (2, 0), (2, 1)),
    ("1x1", 1, 40, 3, 70, 72, (1, 1), 1, (0, 0), (1, 1)),
]


def _trace(name: str, **params: object):  # noqa: ANN202
    """A rung of the lineage at its registered parameters, then `params`, or the bridge `name`, traced."""
    from argus.lineage.bridges import BRIDGES

    if name in BRIDGES:
        return BRIDGES[name][0].trace(**params)
    entry = get_kernel(name)
    return entry.kernel.trace(**{**entry.params, **params})


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
    kernel = _trace(name, KH=kh, KW=kw, SH=sh, PH=ph, PW=pw, LH=lh, LW=lw, C=c)
    run_kernel(kernel, {"X": x.numpy(), "WT": wt.numpy(), "Y": y})
    return float(np.abs(y - want.numpy()).max() / max(1.0, float(want.abs().max())))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("name", (*RUNGS, "conv_cp_async_wgmma"))
def test_each_rung_matches_torch_on_the_interpreter(name: str, case: tuple) -> None:
    assert _run(name, case) <= 1e-6


def test_the_lineage_is_the_gemm_ladders_nine_rungs_on_its_own_task() -> None:
    assert "conv" in lineages()
    steps = lineage("conv")
    assert [(s.kernel, s.mechanism) for s in steps] == [
        ("conv_naive", "naive_fma"),
        ("conv_smem_tiled", "smem_tiling"),
        ("conv_mma_sync", "mma_sync"),
        ("conv_cp_async", "cp_async_pipeline"),
        ("conv_swizzle", "smem_swizzle"),
        ("conv_tma_wgmma", "tma_wgmma"),
        ("conv_warp_specialized", "warp_specialization"),
        ("conv_warp_specialized_persistent", "persistent_grid"),
        ("conv_tma_store_epilogue", "tma_store"),
    ]
    assert [s.mechanism for s in steps] == [s.mechanism for s in lineage("gemm")]
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
    assert (mma, staged) == (name in ("conv_mma_sync", "conv_cp_async", "conv_swizzle"),) * 2
    hopper = name in ("conv_tma_wgmma", "conv_warp_specialized", "conv_warp_specialized_persistent")
    hopper = hopper or name == "conv_tma_store_epilogue"
    assert (mix.get("HGMMA", 0) > 0) == (mix.get("UTMALDG", 0) > 0) == hopper, mix
    assert (mix.get("USETMAXREG", 0) == 2) == (hopper and name != "conv_tma_wgmma"), mix
    assert (mix.get("UTMASTG", 0) > 0) == (name == "conv_tma_store_epilogue"), mix
    assert (mix.get("LDGSTS", 0) > 0) == (name in ("conv_cp_async", "conv_swizzle"))
    # the swizzle rung's ldmatrix reads and cp.async writes are free of bank conflicts; the rungs below it are not
    conflicts = {f.code for f in result.findings} & {"PERF_BANK_CONFLICT"}
    if name in ("conv_mma_sync", "conv_cp_async", "conv_swizzle") or hopper:
        assert bool(conflicts) == (name in ("conv_mma_sync", "conv_cp_async")), [f.message for f in result.findings]
    assert (mix.get("FFMA", 0) > 0) == (name in ("conv_naive", "conv_smem_tiled"))


def test_a_parameter_outside_the_kernel_s_reach_is_refused() -> None:
    from argus.lang.errors import DSLError

    with pytest.raises(DSLError, match="C must be a multiple of 8"):
        conv_lineage.conv_cp_async.trace(C=12)
    with pytest.raises(DSLError, match="positive int"):
        conv_lineage.conv_naive.trace(C=0)
    with pytest.raises(DSLError, match="64 output positions"):
        conv_lineage.conv_tma_wgmma.trace(BW=128)
    with pytest.raises(DSLError, match="whole 32-byte swizzle spans"):
        conv_lineage.conv_swizzle.trace(BK=8)


def _outputs(case: tuple, seed: int, runs: dict, images: int | None = None, filters: int | None = None) -> dict:
    """Each of `runs` (label -> (kernel name, extra parameters)) run on the interpreter on the same draw of the case's
    input and weight (`images` and `filters` in place of the case's N and F), its output NaN-filled first."""
    _, n, c, h, w, f, (kh, kw), sh, (ph, pw), (lh, lw) = case
    n, f = images or n, filters or f
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, h, w, c, generator=gen).bfloat16().double().numpy()
    wt = torch.randn(kh * kw, c, f, generator=gen).bfloat16().double().numpy()
    params = {"KH": kh, "KW": kw, "SH": sh, "PH": ph, "PW": pw, "LH": lh, "LW": lw, "C": c}
    shape = (n, (h + 2 * ph - lh * (kh - 1) - 1) // sh + 1, w + 2 * pw - lw * (kw - 1), f)
    out = {}
    for label, (name, extra) in runs.items():
        y = np.full(shape, np.nan, np.float32)
        run_kernel(_trace(name, **params, **extra), {"X": x, "WT": wt, "Y": y})
        out[label] = y
    return out


@pytest.mark.parametrize(("stages", "case"), [(2, CASES[1]), (3, CASES[2])], ids=["2 stages", "3 stages 1x1"])
def test_the_swizzle_rung_computes_the_cp_async_rung_s_numbers(stages: int, case: tuple) -> None:
    """The swizzle moves where the staged elements lie, not what is multiplied: rung 4's output bit for bit."""
    runs = {name: (name, {"STAGES": stages}) for name in ("conv_cp_async", "conv_swizzle")}
    out = _outputs(case, 3, runs)
    assert not np.isnan(out["conv_swizzle"]).any()
    np.testing.assert_array_equal(out["conv_swizzle"], out["conv_cp_async"])


@pytest.mark.parametrize(("name", "case"), [(n, c) for n in WGMMA for c in CASES[1:]], ids=lambda v: str(v)[:24])
def test_the_wgmma_rung_and_its_bridge_compute_the_swizzle_rung_s_sums(name: str, case: tuple) -> None:
    """wgmma sums the same products as mma.sync in another order: rung 5's output within f32 rounding."""
    assert _run(name, case) <= 1e-6
    out = _outputs(case, 9, {k: (k, {}) for k in (name, "conv_swizzle")})
    assert not np.isnan(out[name]).any()
    assert np.abs(out[name] - out["conv_swizzle"]).max() <= 1e-5 * max(1.0, float(np.abs(out[name]).max()))


def test_the_wgmma_rung_s_bridge_verifies_and_compiles_to_hgmma_fed_by_cp_async() -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify

    kernel = _trace("conv_cp_async_wgmma")
    result = verify(kernel)
    assert result.verdict.value == "verified" and not result.findings, [f.message for f in result.findings]
    mix = compile_kernel(kernel).instruction_mix()
    assert mix.get("HGMMA", 0) > 0 and mix.get("LDGSTS", 0) > 0 and not mix.get("UTMALDG", 0), mix
    assert not mix.get("HMMA", 0) and not mix.get("LDSM", 0), mix


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_warp_specialized_rung_computes_the_tma_rung_s_numbers(case: tuple) -> None:
    """Warp roles change who loads and when, not the math: rung 6's output bit for bit."""
    out = _outputs(case, 13, {k: (k, {}) for k in ("conv_tma_wgmma", "conv_warp_specialized")})
    assert not np.isnan(out["conv_warp_specialized"]).any()
    np.testing.assert_array_equal(out["conv_warp_specialized"], out["conv_tma_wgmma"])


@pytest.mark.parametrize(("order", "blocks"), [("grouped", 3), ("row_major", 5)])
def test_the_persistent_rungs_walk_several_units_a_block_and_compute_rung_7_s_numbers(order: str, blocks: int) -> None:
    """A few persistent blocks, so that each walks several units and its mbarrier ring runs on across them (a step's
    stage and phase counted from the block's first unit), in either tile order, with the direct and the TMA-store
    epilogue (partial tiles clipped by the stores): rung 7's output bit for bit. Two images of 5 rows, 72 filters:
    2 x 5 x 1 column tile x 2 channel tiles = 20 units."""
    persistent = {"BLOCKS": blocks, "ORDER": order}
    runs = {
        "conv_warp_specialized": ("conv_warp_specialized", {}),
        "conv_warp_specialized_persistent": ("conv_warp_specialized_persistent", persistent),
        "conv_tma_store_epilogue": ("conv_tma_store_epilogue", {**persistent, "EPILOGUE": "tma"}),
    }
    out = _outputs(CASES[0], 17, runs, images=2, filters=72)
    for name in ("conv_warp_specialized_persistent", "conv_tma_store_epilogue"):
        assert not np.isnan(out[name]).any(), name
        np.testing.assert_array_equal(out[name], out["conv_warp_specialized"])


def test_klineage_walks_the_top_rung_back_to_the_naive_one() -> None:
    from argus.lineage import walk

    walked = walk("conv_tma_store_epilogue")
    assert walked.reached_naive, walked.stopped
    mechanisms = [s.operator["mechanism"] for s in walked.steps]
    assert mechanisms == [
        *("epilogue", "tile_order", "persistent", "register_split", "warp_specialization", "pipeline"),
        *("global_copy", "mma", "swizzle", "global_copy", "mma", "smem_tiling"),
    ]
    libraries = [k["library"] for k in walked.kernels]
    assert libraries[3] == "conv_warp_specialized", libraries
    assert libraries[6:9] == ["conv_tma_wgmma", "conv_cp_async_wgmma", "conv_swizzle"], libraries
    for step in walked.steps:
        assert step.gate["verdict"] == "accepted", step.gate["summary"]
        assert step.check["ok"] and len(step.check["removed"]) == 1 and not step.check["added"]
    assert walked.kernels[-1]["library"] == "conv_naive"
