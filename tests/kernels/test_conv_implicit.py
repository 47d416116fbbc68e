"""Implicit-GEMM convolution (`argus.kernels.conv_implicit`, planned by `argus.kernels.conv`): which convolutions
take it, its tile choice, its result on the CPU interpreter against ``torch.nn.functional`` at small odd shapes
(padding, stride, dilation, asymmetric windows, bias, 1-d, f16, several channel and filter tiles), the pointwise
route through the GEMM library, its verification (the tag assertions prove that every position row of the A stage
holds the input element its tap reads), its SASS, and the same call on a GPU. The planner's other tile, of flattened
positions on `conv_im2col_gemm`, is off here (`_implicit_tiles_only`) and tested in `test_conv_im2col.py`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import argus.kernels.conv as conv_module
from argus.kernels.conv import (
    Conv,
    ImplicitConfig,
    LibraryConv,
    _implicit_on_interpreter,
    _key,
    _traced,
    conv_plan,
    implicit_bk,
    implicit_bn,
    implicit_config,
    implicit_params,
    implicit_refusal,
    implicit_split_time,
    implicit_splits,
    is_pointwise,
    run_on_interpreter,
    split_reduce_params,
    with_stages,
    writes_nchw,
)
from argus.kernels.conv_implicit import conv_implicit_gemm
from argus.kernels.epilogue import Epilogue
from argus.lang.errors import DSLError
from argus.verify import verify


@pytest.fixture(autouse=True)
def _implicit_tiles_only(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202 - a fixture
    """These tests are the implicit kernel's: the planner's flattened-position tile (`FLAT_TILES`, the kernel
    `conv_im2col_gemm`, tested in `test_conv_im2col.py`) is switched off, the plans cached with it dropped."""
    monkeypatch.setattr(conv_module, "FLAT_TILES", False)
    conv_plan.cache_clear()
    yield
    conv_plan.cache_clear()


TORCH = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
#: the relative max error allowed: 16-bit outputs round once; f32 is split precision (bf16x3: 3e-6 to 1.2e-5 measured
#: at KernelBench's sizes, and 1.1e-5 for the GEMM library's f32 1x1 on the GPU; cuDNN's TF32 is at 2.8e-4)
TOLERANCE = {"bf16": 1e-2, "f16": 1e-2, "f32": 1e-4}


def _conv2(n: int, c: int, f: int, h: int, w: int, k: tuple, s: tuple = (1, 1), p: tuple = (0, 0),
           d: tuple = (1, 1), bias: bool = False, dtype: str = "bf16", groups: int = 1) -> Conv:  # fmt: skip
    return Conv(2, n, c, f, groups, (1, h, w), (1, *k), (1, *s), (0, *p), (1, *d), bias, dtype)


def _error(conv: Conv) -> float:
    """The relative max error of the planned convolution on the interpreter against F.conv in float64 (the
    operands drawn in float64 and rounded to the convolution's dtype)."""
    gen = torch.Generator().manual_seed(conv.channels + conv.filters)
    rank = conv.rank
    spatial, window = conv.size[3 - rank :], conv.kernel[3 - rank :]

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(TORCH[conv.dtype]).double()

    x, w = draw(conv.batch, conv.channels, *spatial), draw(conv.filters, conv.channels, *window)
    b = draw(conv.filters) if conv.bias else None
    fn = F.conv1d if rank == 1 else F.conv2d
    r = 3 - rank
    want = fn(x, w, b, conv.stride[r:], conv.padding[r:], conv.dilation[r:]).numpy()
    got = run_on_interpreter(conv, x.numpy(), w.numpy(), None if b is None else b.numpy())
    got = np.asarray(got).reshape(want.shape)
    assert not np.isnan(got).any(), "an output element was never written"
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1.0))


CASES = {
    "3x3 pad 1, bias, two F tiles": _conv2(2, 16, 72, 5, 7, (3, 3), p=(1, 1), bias=True),
    "3x3 stride 2 (column phases), f16": _conv2(1, 64, 16, 7, 10, (3, 3), s=(2, 2), p=(1, 1), dtype="f16"),
    "3x5 stride 2, padding (2, 1), dilation (1, 2)": _conv2(1, 128, 16, 9, 8, (3, 5), s=(2, 2), p=(2, 1), d=(1, 2)),
    "7x7 dilated columns, channels past BK": _conv2(1, 72, 8, 9, 13, (7, 7), p=(3, 3), d=(1, 2)),
    "1x1 with a bias (the implicit kernel)": _conv2(1, 16, 24, 3, 11, (1, 1), bias=True),
    "1x1 stride 2 (a projection)": _conv2(2, 64, 8, 6, 6, (1, 1), s=(2, 2)),
    "5x3, no padding, stride (1, 3)": _conv2(1, 64, 8, 9, 12, (5, 3), s=(1, 3)),
    "1-d, padding 2, bias": Conv(1, 2, 16, 24, 1, (1, 1, 37), (1, 1, 5), (1, 1, 1), (0, 0, 2), (1, 1, 1), True, "bf16"),
    "1x1 without a bias (the pointwise GEMM)": _conv2(2, 24, 16, 3, 5, (1, 1)),
    "f32, 12 channels (split planes, padded channels), bias": _conv2(
        2, 12, 12, 7, 9, (3, 3), p=(1, 1), bias=True, dtype="f32"
    ),
    "f32 1x1 of 3 channels (padded), bias": _conv2(2, 3, 8, 4, 5, (1, 1), bias=True, dtype="f32"),
    "f32 3x3 stride 2, 64 channels": _conv2(1, 64, 8, 6, 8, (3, 3), s=(2, 2), p=(1, 1), dtype="f32"),
    "f32 1-d, dilation 3": Conv(1, 2, 20, 8, 1, (1, 1, 40), (1, 1, 3), (1, 1, 2), (0, 0, 1), (1, 1, 3), False, "f32"),
    "3x3 stride 2 of 24 channels (a channel box past C in a strided row)": _conv2(1, 24, 8, 7, 10, (3, 3), s=(2, 2),
                                                                                   p=(1, 1)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_on_the_interpreter(name: str) -> None:
    conv = CASES[name]
    assert implicit_refusal(conv) is None
    the_plan = conv_plan(conv)
    assert (the_plan.implicit is None) == is_pointwise(conv)
    assert _error(conv) < TOLERANCE[conv.dtype]


def test_the_implicit_path_and_the_gather_path_agree() -> None:
    conv = CASES["3x3 pad 1, bias, two F tiles"]
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 16, 5, 7, generator=gen, dtype=torch.float64).to(torch.bfloat16).double().numpy()
    w = torch.randn(72, 16, 3, 3, generator=gen, dtype=torch.float64).to(torch.bfloat16).double().numpy()
    b = torch.randn(72, generator=gen, dtype=torch.float64).to(torch.bfloat16).double().numpy()
    implicit = run_on_interpreter(conv, x, w, b)
    assert conv_plan(conv, implicit=False).implicit is None
    gathered = run_on_interpreter(conv, x, w, b, implicit=False)
    assert np.abs(np.asarray(implicit) - np.asarray(gathered)).max() <= 1e-2 * np.abs(gathered).max()


@pytest.mark.parametrize(
    ("conv", "why"),
    [
        (_conv2(1, 16, 16, 5, 5, (3, 3), groups=2), "2 groups"),
        (_conv2(1, 12, 16, 5, 5, (3, 3)), "12 channels"),
        (_conv2(1, 16, 6, 5, 5, (3, 3), dtype="f32"), "6 filters"),
        (_conv2(1, 3, 16, 5, 5, (3, 3), dtype="f32"), "f32 with 3 channels"),
        (_conv2(1, 64, 16, 5, 7, (3, 3), s=(2, 2)), "column stride 2 with width 7"),
        (
            Conv(3, 1, 16, 16, 1, (3, 5, 6), (3, 3, 3), (1, 2, 2), (1, 1, 1), (1, 1, 1), False, "bf16"),
            "a 3-d convolution with column stride 2",
        ),
    ],
)
def test_what_the_implicit_kernel_refuses_runs_on_the_gather_path(conv: Conv, why: str) -> None:
    assert why in (implicit_refusal(conv) or "")
    the_plan = conv_plan(conv)
    assert the_plan.implicit is None and not the_plan.pointwise
    assert the_plan.gemm is not None


def test_tile_choice() -> None:
    # 56 columns, a long K loop: 7 tiles of 8 columns by 8 rows waste nothing; one consumer warpgroup, two blocks
    # per SM, one block per tile
    c56 = implicit_config(_conv2(8, 256, 128, 56, 56, (3, 3), p=(1, 1)))
    assert (c56.BH, c56.BW, c56.CONSUMERS, c56.BN, c56.blocks_per_sm, c56.BLOCKS) == (8, 8, 1, 128, 2, 0)
    # the same with 64 channels: 9 K-steps, persistent, on two consumer warpgroups (2 rows of 64, 56 used)
    short = implicit_config(_conv2(8, 64, 128, 56, 56, (3, 3), p=(1, 1)), sms=132)
    assert (short.BH, short.BW, short.CONSUMERS, short.BLOCKS) == (2, 64, 2, 132)
    # a 1x1 of 4 K-steps stays on the least wasteful tile, persistent at two blocks per SM
    pointwise = implicit_config(_conv2(8, 256, 64, 56, 56, (1, 1), bias=True), sms=132)
    assert (pointwise.BH, pointwise.BW, pointwise.BLOCKS) == (8, 8, 264)
    # 28 columns: 4 rows of 32 (28 of them used), two consumer warpgroups
    c28 = implicit_config(_conv2(8, 128, 128, 28, 28, (3, 3), p=(1, 1)))
    assert (c28.BH, c28.BW, c28.CONSUMERS, c28.BLOCKS) == (4, 32, 2, 0)
    # a 1-d convolution: one output row, 128 columns
    c1 = implicit_config(Conv(1, 2, 16, 64, 1, (1, 1, 500), (1, 1, 3), (1, 1, 1), (0, 0, 1), (1, 1, 1), False, "bf16"))
    assert (c1.BH, c1.BW, c1.BN, c1.BK) == (1, 128, 64, 16)
    for cfg in (c56, c28):
        assert 2 <= cfg.STAGES <= 4 and cfg.BK == 64
    assert 2 <= c1.STAGES <= 8  # a K step of 16 channels: stages a quarter as large, up to twice as many


def test_narrow_k_steps_and_output_tiles_for_few_channels() -> None:
    """A K step (`implicit_bk`) holds the channels and no more than needed: 16 for the split planes of 3 or 8 f32
    channels (padded to 8) and for 16, 32 up to 32, 64 from 33 on; f32 outputs of few filters take a narrow
    output-channel tile (`implicit_bn`), 16-bit ones 64 (their epilogue's panels)."""
    for c, bk in ((5, 16), (8, 16), (12, 16), (16, 16), (24, 32), (32, 32), (40, 64), (64, 64), (256, 64)):
        assert implicit_bk(_conv2(1, c, 16, 9, 9, (3, 3), dtype="f32")) == bk, c
    for f, bn in ((8, 16), (16, 16), (24, 32), (48, 64), (64, 64), (96, 128)):
        assert implicit_bn(_conv2(1, 16, f, 9, 9, (3, 3), dtype="f32")) == bn, f
    assert implicit_bn(_conv2(1, 16, 16, 9, 9, (3, 3))) == 64  # bf16
    cfg = implicit_config(_conv2(2, 8, 16, 20, 20, (3, 3), dtype="f32"))
    assert (cfg.BK, cfg.BN) == (16, 16) and "k16" in cfg.label()
    assert implicit_params(_conv2(2, 8, 16, 20, 20, (3, 3), dtype="f32"), cfg, nchw=False)["BK"] == 16


def test_channels_that_do_not_fill_their_k_steps_run_one_block_per_tile() -> None:
    """24 channels in K steps of 32 (40 in steps of 64): the persistent form's contraction-once proof came back
    `unknown` (81-128 s), one block per tile verifies; 32 channels fill their steps and stay persistent."""
    partial = conv_plan(_conv2(2, 24, 64, 9, 9, (3, 3), p=(1, 1)))
    assert partial.implicit is not None and partial.implicit.BK == 32 and partial.implicit.BLOCKS == 0
    result = verify(partial.kernels()[-1])
    assert result.verdict.value == "verified" and not result.unknowns, result.codes()
    full = implicit_config(_conv2(2, 32, 64, 9, 9, (3, 3), p=(1, 1)))
    assert full.BK == 32 and full.BLOCKS > 0


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_box_smaller_than_its_swizzle_period_compiles_with_the_buffer_s_own_mode(dtype: str) -> None:
    """Rows of 8 positions by 16 (or 32) channels are 256 (512) bytes: under the 128-byte swizzle such a box's
    offsets are those of the 32- (64-) byte one, and the code generator took the wider mode, whose pattern is
    anchored at 1024 bytes (CODEGEN_INVALID on the GPU, session 24's call 4); it now takes the buffer's own."""
    from argus.backend.cuda.codegen import compile_kernel

    # K steps of 16 and of 32 channels, on tiles of 8 x 8 positions
    conv = _conv2(2, 12, 16, 19, 21, (3, 3), p=(1, 1), bias=True, dtype="f32")
    if dtype == "bf16":
        conv = _conv2(2, 32, 16, 7, 7, (3, 3), p=(1, 1), bias=True, dtype="bf16")
    plan = conv_plan(conv)
    assert plan.implicit is not None and plan.implicit.BW == 8 and plan.implicit.BK < 64, plan.describe()
    (implicit,) = (k for k in plan.kernels() if k.name == "conv_implicit_gemm")  # (split-K's reduction after it)
    mix = compile_kernel(implicit).instruction_mix()
    assert mix["HGMMA"] > 0 and mix["UTMALDG"] > 0
    # a short K loop runs persistent unless a column tap is off the stride's phase 0 (that proof did not complete)
    projection = implicit_config(_conv2(8, 64, 64, 16, 16, (1, 1), s=(2, 2)), sms=132)
    assert projection.BLOCKS == 264
    phases = implicit_config(_conv2(8, 64, 64, 16, 16, (3, 3), s=(2, 2), p=(1, 1)), sms=132)
    assert phases.BLOCKS == 0


def test_bad_tiles_are_refused() -> None:
    with pytest.raises(DSLError, match="BH x BW"):
        conv_implicit_gemm.trace(BH=3, BW=16)
    with pytest.raises(DSLError, match="BLOCKS_PER_SM"):
        conv_implicit_gemm.trace(BH=2, BW=64, CONSUMERS=2, BLOCKS_PER_SM=2)
    with pytest.raises(DSLError, match="BK"):
        conv_implicit_gemm.trace(BK=24)


VERIFIED = {
    "3x3 56, persistent (2x64, two consumers)": _conv2(8, 64, 128, 56, 56, (3, 3), p=(1, 1), bias=True),
    "1x1/2, persistent (8x8, one consumer; phase 0 only)": _conv2(8, 64, 64, 16, 16, (1, 1), s=(2, 2)),
    "3x3 7 (8x8, one consumer, split 8 ways along K)": _conv2(8, 512, 128, 7, 7, (3, 3), p=(1, 1)),
    "3x3 28 (4x32, two consumers)": _conv2(8, 128, 128, 28, 28, (3, 3), p=(1, 1)),
    "1-d, dilation 2": Conv(1, 2, 64, 64, 1, (1, 1, 300), (1, 1, 3), (1, 1, 1), (0, 0, 2), (1, 1, 2), False, "f16"),
    "f32, 12 channels, persistent (three split planes)": _conv2(
        8, 12, 64, 32, 32, (3, 3), p=(1, 1), bias=True, dtype="f32"
    ),
    # column strides: taps in every column phase, read through the (N, H, W / SW, SW, C) view (level 1's 76, and a
    # ResNet-like 3x3/2 of 32 channels, which the packed view refused and its taps off phase 0 did not verify)
    "1-d f32, stride 3, dilation 4 (taps in every phase: one block per tile)": Conv(
        1, 2, 64, 128, 1, (1, 1, 600), (1, 1, 3), (1, 1, 3), (0, 0, 0), (1, 1, 4), False, "f32"
    ),
    "3x3/2 of 32 channels": _conv2(2, 32, 64, 28, 28, (3, 3), s=(2, 2), p=(1, 1)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(VERIFIED))
def test_planned_configurations_verify(name: str) -> None:
    conv = VERIFIED[name]
    config = conv_plan(conv).implicit
    found = conv_plan(conv).kernels()
    splits = [k for k in found if k.name == "split_bf16x3"]
    kernels = [k for k in found if k.name == "conv_implicit_gemm"]
    reductions = [k for k in found if k.name == "conv_split_reduce"]
    # both layouts a call may take are listed (and verified by argus solve): NCHW where the plan writes it, then NHWC;
    # split along K, the f32 partial sums (channels last) and their reduction
    nchw = writes_nchw(conv, config)
    assert len(found) == len(splits) + len(kernels) + len(reductions)
    assert len(splits) == (2 if conv.dtype == "f32" else 0) and len(kernels) == (2 if nchw else 1)
    assert len(reductions) == int(config.SPLITS > 1)
    for split in splits:
        assert not verify(split).findings
    for reduction in reductions:
        summed = verify(reduction)
        assert not summed.findings, [f.message for f in summed.findings]
        assert all(c.verdict.value == "verified" for c in summed.checks if c.check == "tag assertion")
    kernel = kernels[0]
    result = verify(kernel)
    # the NCHW copy-out (channels first) has performance warnings, each true: a tile row narrower than a 32-byte
    # sector may straddle two (PERF_UNCOALESCED), rows of a width that is not a multiple of the 16-byte vector store
    # narrower vectors (ALIGN_ASSUMPTION), and narrow tiles read the channel-major buffer with 2-way bank conflicts
    allowed = {"PERF_UNCOALESCED", "ALIGN_ASSUMPTION", "PERF_BANK_CONFLICT"}
    assert not [f.message for f in result.findings if f.code not in allowed], result.findings
    assert all(f.severity.value == "warning" for f in result.findings)
    if nchw:
        channels_last = verify(conv_implicit_gemm.trace(**implicit_params(conv, config, nchw=False)))
        assert not channels_last.findings, [f.message for f in channels_last.findings]
    tags = [c for c in result.checks if c.check == "tag assertion"]
    # (split along K, the bias is the reduction's)
    assert len(tags) == 2 + int(conv.bias and config.SPLITS == 1) and all(c.verdict.value == "verified" for c in tags)
    once = [c for c in result.checks if c.check == "contraction accumulated once"]
    assert once and all(c.verdict.value == "verified" for c in once)
    # every output element is written (the tile's rows, one store site each, are one window) and every weight is
    # loaded (the K loop's term, tap and channel block: quotients and remainders of one index, enumerated)
    assert _coverage(result) == {"output coverage Y": "verified", "contraction coverage WT": "verified"}


def _coverage(result: Any) -> dict[str, str]:
    """The coverage checks' verdicts by check and tensor, but X's (an input element need not be read: a stride
    past the window skips pixels), "not checked" where the check could not read the windows."""
    out = {}
    for c in result.checks:
        if "coverage" in c.check and not c.target.startswith("X"):
            out[f"{c.check} {c.target.split()[0]}"] = "not checked" if c.not_checked else c.verdict.value
    return out


def test_sass_has_wgmma_and_tma() -> None:
    from argus.backend.cuda.codegen import compile_kernel

    conv = _conv2(8, 64, 128, 56, 56, (3, 3), p=(1, 1))
    compiled = compile_kernel(conv_plan(conv).kernels()[-1])
    mix = compiled.instruction_mix()
    assert mix["HGMMA"] > 0 and mix["UTMALDG"] > 0
    assert "0 B spill stores" in str(compiled.resources)


def test_params_are_the_kernels() -> None:
    conv = _conv2(8, 64, 128, 56, 56, (3, 5), s=(1, 2), p=(1, 2), d=(2, 1), bias=True, dtype="f16")
    cfg = ImplicitConfig(8, 8, 128, 3, 1, BLOCKS=264)
    params = implicit_params(conv, cfg, nchw=False)
    assert params["KH"] == 3 and params["KW"] == 5 and params["SW"] == 2 and params["PW"] == 2 and params["LH"] == 2
    assert params["BIAS"] is True and params["IN"] == "f16" and params["BLOCKS_PER_SM"] == 2
    assert params["BLOCKS"] == 264 and params["CB"] == 1


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")


@gpu
@pytest.mark.parametrize("channels_last", [True, False])
def test_library_conv_matches_torch_on_the_gpu(channels_last: bool) -> None:
    rows = [
        _conv2(4, 64, 96, 23, 29, (3, 3), p=(1, 1), bias=True),
        _conv2(2, 128, 64, 30, 30, (3, 3), s=(2, 2), p=(1, 1)),
        _conv2(2, 64, 128, 17, 9, (1, 1)),
        Conv(1, 3, 64, 72, 1, (1, 1, 301), (1, 1, 5), (1, 1, 1), (0, 0, 2), (1, 1, 1), True, "f16"),
        _conv2(2, 12, 16, 19, 21, (3, 3), p=(1, 1), bias=True, dtype="f32"),
        _conv2(2, 64, 24, 20, 22, (3, 5), s=(2, 2), p=(1, 2), dtype="f32"),
        _conv2(2, 5, 8, 9, 13, (1, 1), dtype="f32"),  # the pointwise GEMM in f32 (K = 5)
        _conv2(2, 3, 16, 17, 15, (3, 3), p=(1, 1), bias=True, dtype="f32"),  # 3 channels: the gather path
        _conv2(2, 8, 16, 17, 15, (3, 3), p=(1, 1), bias=True, dtype="f32"),  # 8: K steps of 16 channels
    ]
    for conv in rows:
        rank = conv.rank
        dt = TORCH[conv.dtype]
        x = torch.randn(conv.batch, conv.channels, *conv.size[3 - rank :], device="cuda").to(dt)
        w = (torch.randn(conv.filters, conv.channels, *conv.kernel[3 - rank :], device="cuda") / 8).to(dt)
        b = torch.randn(conv.filters, device="cuda").to(dt) if conv.bias else None
        if channels_last and rank == 2:
            x = x.to(memory_format=torch.channels_last)
        call = LibraryConv("conv", conv)
        out = call.empty_output(x, w, *([b] if conv.bias else []))
        call(x, w, *([b] if conv.bias else []), out)
        fn = F.conv1d if rank == 1 else F.conv2d
        r = 3 - rank
        want = fn(x.double(), w.double(), None if b is None else b.double(), conv.stride[r:], conv.padding[r:])
        err = ((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0)).item()
        assert err < TOLERANCE[conv.dtype], (conv, err)


@gpu
def test_a_weight_changed_in_place_or_replaced_is_read_again_on_the_gpu() -> None:
    conv = _conv2(2, 64, 64, 9, 9, (3, 3), p=(1, 1))
    call = LibraryConv("conv", conv)
    x = torch.randn(2, 64, 9, 9, device="cuda").to(torch.bfloat16)
    for _ in range(3):
        w = (torch.randn(64, 64, 3, 3, device="cuda") / 8).to(torch.bfloat16)
        for _ in range(2):
            out = call.empty_output(x, w)
            call(x, w, out)
            want = F.conv2d(x.double(), w.double(), padding=1)
            assert ((out.double() - want).abs().max() / want.abs().max()).item() < 1e-2
            w.mul_(-1.0)  # in place: a new version of the same tensor
        del w


@gpu
@pytest.mark.parametrize("channels_last", [True, False])
def test_a_call_on_the_same_tensors_replays_its_launches_and_reads_them_again_on_the_gpu(channels_last: bool) -> None:
    """The second call on the same tensors replays the first's launches (`LibraryConv._replays`): it reads x, the
    bias and the weight as they are then (changed in place), and split along K keeps its own workspace."""
    conv = _conv2(4, 256, 128, 7, 7, (3, 3), p=(1, 1), bias=True)  # 8 tiles: split along K
    assert conv_plan(conv).implicit.SPLITS > 1 or not conv_module.IMPLICIT_SPLIT
    call = LibraryConv("conv", conv)
    x = torch.randn(4, 256, 7, 7, device="cuda").to(torch.bfloat16)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    w = (torch.randn(128, 256, 3, 3, device="cuda") / 16).to(torch.bfloat16)
    b = torch.randn(128, device="cuda").to(torch.bfloat16)
    out = call.empty_output(x, w, b)
    if channels_last:
        out = out.to(memory_format=torch.channels_last)
    for step in range(4):
        call(x, w, b, out)
        want = F.conv2d(x.double(), w.double(), b.double(), padding=1)
        assert ((out.double() - want).abs().max() / want.abs().max()).item() < 1e-2, step
        # x read in place (channels last) and the output written in place: the launches are the whole call (a new
        # weight version replaces the entry)
        assert len(call._replays) == (1 if channels_last else 0)
        assert not channels_last or next(iter(call._replays.values()))[2] == w._version
        (x, b, w)[step % 3].mul_(-0.5)  # in place: the replay reads x and b again; w's new version is staged again


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_the_nchw_epilogue_on_the_interpreter(dtype: str) -> None:
    """The kernel's channels-first copy-out (NCHW=True) on a 2-d tile of 8 x 8 positions with a tail in both
    directions, against the channels-last one's result transposed (the same accumulators)."""
    from argus.interp import run_kernel

    n, c, f, h, w = 2, 16, 24, 5, 11
    gen = np.random.default_rng(0)
    terms = 3 if dtype == "f32" else 1
    x = gen.standard_normal((terms * n, h, w, c)).astype(np.float32).astype(np.float64)
    wt = gen.standard_normal((terms, f, 9, c)).astype(np.float32).astype(np.float64)
    b = gen.standard_normal(f)
    params = dict(KH=3, KW=3, PH=1, PW=1, BH=8, BW=8, BN=64, STAGES=2, CONSUMERS=1, BLOCKS_PER_SM=2, CB=1, BIAS=True,
                  IN="bf16", OUT=dtype, TERMS=terms)  # fmt: skip
    nhwc = np.full((n, h, w, f), np.nan)
    run_kernel(conv_implicit_gemm.trace(**params, NCHW=False), {"X": x, "WT": wt, "B": b, "Y": nhwc})
    nchw = np.full((n, f, h, w), np.nan)
    run_kernel(conv_implicit_gemm.trace(**params, NCHW=True), {"X": x, "WT": wt, "B": b, "Y": nchw})
    assert not np.isnan(nchw).any()
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_pointwise_plan_runs_a_product_per_image_on_nchw_tensors(dtype: str) -> None:
    conv = _conv2(3, 16, 24, 9, 15, (1, 1), dtype=dtype)
    the_plan = conv_plan(conv)
    assert the_plan.pointwise and the_plan.nchw_gemm is not None
    problem = the_plan.nchw_gemm
    assert (problem.M, problem.N, problem.K, problem.batch) == (24, 135, 16, 3)
    assert "per image" in the_plan.describe()
    # both products are verified: the per-image one (NCHW calls) and the channels-last one
    from argus.kernels.matmul import LibraryGemm

    kernels = the_plan.kernels()
    for problem in (the_plan.gemm, the_plan.nchw_gemm):
        assert all(any(k is j for j in kernels) for k in LibraryGemm("gemm", problem).kernels())
    assert _error(conv) <= TOLERANCE[dtype] / 2


def test_a_pointwise_plan_of_small_images_keeps_the_channels_last_product() -> None:
    conv = _conv2(4, 64, 128, 7, 7, (1, 1))  # 49 positions an image: one short tile row per image
    the_plan = conv_plan(conv)
    assert the_plan.pointwise and the_plan.nchw_gemm is None
    assert "channels last" in the_plan.describe()
    assert _error(conv) <= TOLERANCE["bf16"] / 2


@gpu
@pytest.mark.parametrize("channels_last", [True, False])
def test_a_pointwise_call_relaunched_reads_its_tensors_current_values_on_the_gpu(channels_last: bool) -> None:
    # a call on the same tensors relaunches the first call's launches (no planning, no binding): each call must still
    # read x and w as they are then, in place or replaced, in both products (channels last, and per image on NCHW)
    from argus.kernels import conv as C

    conv = _conv2(2, 64, 64, 16, 16, (1, 1))
    call = LibraryConv("conv", conv)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(2, 64, 16, 16, device="cuda").to(torch.bfloat16).to(memory_format=fmt)
    w = (torch.randn(64, 64, 1, 1, device="cuda") / 8).to(torch.bfloat16).to(memory_format=fmt)
    out = call.empty_output(x, w).to(memory_format=fmt)
    before = len(C._POINTWISE)
    for step in range(4):
        call(x, w, out)
        want = F.conv2d(x.double(), w.double())
        assert ((out.double() - want).abs().max() / want.abs().max()).item() < 1e-2, step
        if step == 0:
            assert len(C._POINTWISE) == before + 1  # remembered: it wrote `out` in place from its operands' memory
        if step % 2 == 0:  # new values, the same tensors
            x.mul_(-0.5)
        else:
            w.mul_(2.0)


def test_a_remembered_call_keeps_its_own_buffers_and_not_the_callers_tensors() -> None:
    import weakref

    from argus.kernels import conv as C

    x, w, out, staged = (torch.zeros(4, 4) for _ in range(4))
    from argus.kernels.matmul import Launches

    launches = Launches(["launch"])
    launches.keep = [x.view(16), w.t(), out, staged]  # views of the caller's tensors, and a buffer of the call's own
    table: dict = {}
    key = C._call_key("pointwise", True, w._version, x, w, out)
    C._remember_call(table, key, launches, (x, w, out))
    assert list(table[key]) == ["launch"] and len(table[key].own) == 1 and table[key].own[0] is staged
    alive = weakref.ref(x)
    del x, launches
    assert alive() is None  # the entry does not hold the caller's input alive
    w.add_(1.0)  # a weight changed in place: another key (its staged form is made again)
    assert C._call_key("pointwise", True, w._version, out, w, out) != C._call_key("pointwise", True, 0, out, w, out)
    for i in range(C._CALLS_MAX + 3):  # the oldest entries dropped
        C._remember_call(table, ("k", i), Launches([]), ())
    assert len(table) == C._CALLS_MAX and key not in table


# --- split-K: each tile's K loop in SPLITS shares, their f32 partial sums summed by conv_split_reduce -----------------


def _split(conv: Conv, splits: int) -> ImplicitConfig:
    """`conv`'s planned tile, one block per tile, split `splits` ways along K."""
    return with_stages(conv, replace(implicit_config(conv), BLOCKS=0, SPLITS=splits))


def test_the_split_model_splits_where_the_tiles_leave_the_gpu_idle() -> None:
    # ResNet-50's 7x7 layer at batch 32: 128 tiles of 8x8 positions for 264 slots, 72 K-steps -> two shares of 36
    late = _conv2(32, 512, 512, 7, 7, (3, 3), p=(1, 1))
    assert implicit_splits(late, implicit_config(late)) == 2
    # at batch 8, 32 tiles: eight shares of 9 (the most splits), one wave
    assert implicit_splits(_conv2(8, 512, 512, 7, 7, (3, 3), p=(1, 1)), implicit_config(late)) == 8
    # two waves of 288 tiles of 54 K-steps: three shares would end the loops sooner (4 waves of 18), but not by the
    # workspace's round trip (7 MB a share, written and read) more: not split (measured: 53.9 us unsplit, 52.1 in 3)
    mid = _conv2(32, 384, 384, 12, 12, (3, 3), p=(1, 1))
    assert implicit_splits(mid, implicit_config(mid)) == 1
    three = implicit_split_time(mid, implicit_config(mid), 3)
    assert implicit_split_time(mid, implicit_config(mid), 1) < conv_module.IMPLICIT_SPLIT_GAIN * three
    # 56x56 at batch 8: hundreds of tiles, no split; a persistent tile is never split
    wide = _conv2(8, 64, 128, 56, 56, (3, 3), p=(1, 1))
    assert implicit_splits(wide, replace(implicit_config(wide), BLOCKS=0)) == 1
    assert implicit_splits(late, replace(implicit_config(late), BLOCKS=264)) == 1
    # only 2-d forward convolutions of 16-bit data split: not 3-d, f32, 1-d or a transposed convolution's phase
    assert implicit_splits(replace(late, dtype="f32"), implicit_config(late)) == 1
    assert implicit_splits(replace(late, rank=1), implicit_config(late)) == 1
    # 9 K-steps cannot be split into shares of at least 6
    short = _conv2(1, 64, 64, 7, 7, (3, 3), p=(1, 1))
    assert implicit_splits(short, implicit_config(short)) == 1
    # on by default since measured: the planned tile is split
    assert implicit_config(late).SPLITS == (2 if conv_module.IMPLICIT_SPLIT else 1)


SPLIT_CASES = {
    "3x3 bias, 3 images of 7x5, two ways": (_conv2(3, 128, 24, 7, 5, (3, 3), p=(1, 1), bias=True), 2),
    "3x3/2 f16, three ways": (_conv2(2, 64, 16, 9, 10, (3, 3), s=(2, 2), p=(1, 1), dtype="f16"), 3),
    "f32 split precision with a bias, three ways": (
        _conv2(2, 16, 12, 6, 7, (3, 3), p=(1, 1), bias=True, dtype="f32"), 3
    ),
    "1-d, four ways": (
        Conv(1, 2, 128, 24, 1, (1, 1, 23), (1, 1, 4), (1, 1, 1), (0, 0, 1), (1, 1, 1), False, "bf16"), 4
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(SPLIT_CASES))
def test_a_split_tile_matches_torch_on_the_interpreter(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    conv, splits = SPLIT_CASES[name]
    config = _split(conv, splits)
    monkeypatch.setattr(conv_module, "implicit_config", lambda c, sms=132: config)
    conv_plan.cache_clear()
    try:
        assert conv_plan(conv).implicit.SPLITS == splits
        kinds = [k.name for k in conv_plan(conv).kernels()]
        assert kinds[-2:] == ["conv_implicit_gemm", "conv_split_reduce"]
        assert _error(conv) < TOLERANCE[conv.dtype]
    finally:
        conv_plan.cache_clear()


def test_a_split_tile_with_a_fused_epilogue_on_the_interpreter() -> None:
    conv, splits = SPLIT_CASES["3x3 bias, 3 images of 7x5, two ways"]
    ep = Epilogue.of("T.maximum(acc * scale, 0.0) + shift", scale="columns", shift="columns")
    gen = torch.Generator().manual_seed(5)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(torch.bfloat16).double()

    x, w, b = draw(3, 128, 7, 5), draw(24, 128, 3, 3), draw(24)
    scale, shift = draw(24), draw(24)
    got = _implicit_on_interpreter(conv, _split(conv, splits), x.numpy(), w.numpy(), b.numpy(), ep,
                                   [scale.numpy(), shift.numpy()])  # fmt: skip
    y = F.conv2d(x, w, b, padding=1).float().double()
    want = (torch.clamp_min(y * scale.view(1, -1, 1, 1), 0.0) + shift.view(1, -1, 1, 1)).reshape(3, 24, -1).numpy()
    got = np.asarray(got)
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_a_split_3d_tile_matches_torch_on_the_interpreter() -> None:
    """The workspace of a 3-d convolution (SPLITS, N, OD, OH, OW, F): 27 K-steps in three shares, the bias in the
    reduction."""
    conv = Conv(3, 1, 64, 16, 1, (4, 5, 6), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), True, "bf16")
    gen = torch.Generator().manual_seed(0)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(torch.bfloat16).double()

    x, w, b = draw(1, 64, 4, 5, 6), draw(16, 64, 3, 3, 3), draw(16)
    want = F.conv3d(x, w, b, padding=1).numpy().reshape(1, 16, -1)
    got = np.asarray(_implicit_on_interpreter(conv, _split(conv, 3), x.numpy(), w.numpy(), b.numpy()))
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_split_parameters_are_checked() -> None:
    with pytest.raises(DSLError, match="split-K"):  # persistent
        conv_implicit_gemm.trace(BH=8, BW=8, CONSUMERS=1, BLOCKS_PER_SM=2, CB=2, SPLITS=2, OUT="f32", BLOCKS=264)
    with pytest.raises(DSLError, match="split-K"):  # a rounded output, not the f32 workspace
        conv_implicit_gemm.trace(BH=8, BW=8, CONSUMERS=1, BLOCKS_PER_SM=2, CB=2, SPLITS=2, OUT="bf16")
    with pytest.raises(DSLError, match="does not divide"):  # 9 taps x 2 channel blocks in 4 shares
        conv_implicit_gemm.trace(BH=8, BW=8, CONSUMERS=1, BLOCKS_PER_SM=2, CB=2, SPLITS=4, OUT="f32")


def test_the_split_kernels_verify_and_compile() -> None:
    from argus.backend.cuda.codegen import compile_kernel

    conv = _conv2(32, 512, 512, 7, 7, (3, 3), p=(1, 1), bias=True)
    config = _split(conv, 2)
    main = _traced("implicit", _key(implicit_params(conv, config, nchw=False)))
    reduce = _traced("split_reduce", _key(split_reduce_params(conv, config)))
    result = verify(main)
    assert not result.findings, [f.message for f in result.findings]
    # each split's partial sum is its own slice of the workspace, each K-step multiplied once within a split
    for check in ("output written once", "contraction accumulated once", "tag assertion"):
        found = [c for c in result.checks if c.check == check]
        assert found and all(c.verdict.value == "verified" for c in found), check
    # the splits' shares together are every K-step: each weight is loaded by some split
    assert _coverage(result) == {"output coverage Y": "verified", "contraction coverage WT": "verified"}
    summed = verify(reduce)
    assert not summed.findings, [f.message for f in summed.findings]
    tags = [c for c in summed.checks if c.check == "tag assertion"]
    assert len(tags) == 2 and all(c.verdict.value == "verified" for c in tags)  # the slices' elements, the bias
    compiled = compile_kernel(main)
    assert compiled.instruction_mix()["HGMMA"] > 0 and "0 B spill stores" in str(compiled.resources)


@pytest.mark.parametrize("dropped", [3, 7])
def test_a_tile_row_never_stored_is_caught(dropped: int) -> None:
    """The seeded bug: one of the epilogue's BH row stores left out (a middle row, or the last): that row of every
    tile is never written, a `COVERAGE_OUTPUT` counterexample whose element lies in the dropped row of its tile."""
    import dataclasses

    from argus.ir.nodes import Copy, Space
    from argus.lineage.variants import map_statements

    kernel = conv_implicit_gemm.trace(BH=8, BW=16)
    stores: list[Any] = []
    map_statements(
        kernel.body, lambda s: stores.append(s) if isinstance(s, Copy) and s.dst.buffer.space == Space.GLOBAL else None
    )
    assert len(stores) == 8  # one per row of the tile
    victim = stores[dropped]
    result = verify(dataclasses.replace(kernel, body=map_statements(kernel.body, lambda s: None if s is victim else s)))
    found = [f for f in result.findings if f.code == "COVERAGE_OUTPUT"]
    assert result.verdict.value == "violated" and found, [f.code for f in result.findings]
    row = int(found[0].counterexample.variables["element"].strip("()").split(",")[1])
    assert row % 8 == dropped


def test_a_split_whose_shares_all_take_the_first_is_caught() -> None:
    """The seeded bug: every split multiplies the first split's K-steps (``kk = k`` for ``k + split * k_split``,
    consistently on both operands and in the tag assertions; the workspace slice stored still the split's): each
    split's partial sum is its own slice, so nothing is accumulated twice and every tag holds, but the weights of the
    later taps are never loaded (`COVERAGE_CONTRACTION` on WT, an element of a tap past the first share)."""
    import dataclasses

    from tests.kernels.seeding import replace_exprs

    from argus.ir.expr import BinaryOp, Const
    from argus.ir.nodes import Copy, For, If, Let, Role, Space
    from argus.lineage.variants import map_statements

    conv = _conv2(32, 512, 512, 7, 7, (3, 3), p=(1, 1))
    kernel = _traced("implicit", _key(implicit_params(conv, _split(conv, 2), nchw=False)))
    (z,) = [v for v in kernel.block_vars if v.name == "bz"]  # (image, split), the split fastest: split = z % 2

    def first(x: Any) -> Any:  # the split index z % 2 read as 0
        return Const(0) if x.op == BinaryOp.MOD and x.lhs is z and isinstance(x.rhs, Const) else None

    def first_share(s: Any) -> Any:
        if isinstance(s, For | If | Let | Role) or (isinstance(s, Copy) and s.dst.buffer.space == Space.GLOBAL):
            return s
        return replace_exprs(s, first)

    result = verify(dataclasses.replace(kernel, body=map_statements(kernel.body, first_share)))
    found = [f for f in result.findings if f.code == "COVERAGE_CONTRACTION"]
    assert result.verdict.value == "violated" and found, [f.message for f in result.findings]
    assert "of WT" in found[0].message
    tap = int(found[0].counterexample.variables["element"].strip("()").split(",")[2])
    assert tap >= 4  # 9 taps x 8 channel blocks in 2 shares: the first ends in tap 4


@gpu
@pytest.mark.parametrize("channels_last", [True, False])
def test_a_split_convolution_matches_torch_on_the_gpu(channels_last: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv_module, "IMPLICIT_SPLIT", True)
    conv_plan.cache_clear()
    rows = [
        _conv2(8, 512, 128, 7, 7, (3, 3), p=(1, 1), bias=True),  # 8 tiles: eight ways, the bias in the reduction
        _conv2(2, 64, 64, 7, 7, (3, 3), p=(1, 1), bias=True, dtype="f32"),  # split precision: not split
        _conv2(4, 256, 256, 14, 14, (3, 3), s=(2, 2), p=(1, 1)),
    ]
    try:
        # (f32 is not split by choice: `implicit_splits`)
        assert [conv_plan(c).implicit.SPLITS for c in rows] == [8, 1, 6]
        for conv in rows:
            dt = TORCH[conv.dtype]
            x = torch.randn(conv.batch, conv.channels, *conv.size[1:], device="cuda").to(dt)
            w = (torch.randn(conv.filters, conv.channels, *conv.kernel[1:], device="cuda") / 8).to(dt)
            b = torch.randn(conv.filters, device="cuda").to(dt) if conv.bias else None
            if channels_last:
                x = x.to(memory_format=torch.channels_last)
            call = LibraryConv("conv", conv)
            out = call.empty_output(x, w, *([b] if conv.bias else []))
            call(x, w, *([b] if conv.bias else []), out)
            want = F.conv2d(x.double(), w.double(), None if b is None else b.double(), conv.stride[1:],
                            conv.padding[1:])  # fmt: skip
            err = ((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0)).item()
            assert err < TOLERANCE[conv.dtype], (conv, err)
    finally:
        conv_plan.cache_clear()


@pytest.mark.parametrize(
    ("rank", "size"),
    [(3, (12, 4, 2)), (2, (1, 5, 3)), (1, (1, 1, 7))],
)
def test_the_pointwise_gemm_writes_a_channels_first_output_of_any_rank(
    rank: int, size: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pointwise GEMM's channels-last result copied into an NC(D)HW output it cannot write in place: the GPU
    call's own code, its GEMM computed by torch here (a 3-d one crashed permuting five dimensions as four, found by
    benchmarks/random_configs.py seed 2 on an H100)."""
    import argus.kernels.matmul as mm

    def on_the_cpu(a: Any, b: Any, *, out: Any = None, **_: Any) -> tuple[Any, list]:
        return a @ b, mm.Launches()

    monkeypatch.setattr(mm, "prepare", on_the_cpu)
    conv = Conv(rank, 2, 6, 4, 1, size, (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), False, "f32")
    spatial = size[3 - rank :]
    x = torch.randn(2, 6, *spatial)
    w = torch.randn(4, 6, *(1,) * rank)
    out = torch.empty(4, 2, *spatial).transpose(0, 1)  # (N, F, ...) not contiguous: no channels-last view of it
    conv_module.run_pointwise_on_gpu(conv, x, w, out)
    want = (F.conv1d, F.conv2d, F.conv3d)[rank - 1](x, w)
    torch.testing.assert_close(out, want)
