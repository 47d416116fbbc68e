"""Forward convolution through the GEMM library (`argus.kernels.conv`): the gather and output kernels verify, the
whole plan (gather, the GEMM library's kernels, output pass) matches ``torch.nn.functional.conv{1,2,3}d`` on the
CPU interpreter at small odd shapes with strides, padding, dilation, groups and bias, in float32 and bfloat16, the
batch runs in chunks under a small column budget, and what the library cannot run is refused with its code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from argus.kernels.conv import (
    Conv,
    ConvError,
    LibraryConv,
    conv_output,
    conv_output_bias,
    conv_plan,
    conv_transpose_weight,
    conv_upsample,
    im2col,
    run_on_interpreter,
)
from argus.verify import verify

FUNCTIONS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
TRANSPOSED = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
TORCH = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
TOLERANCE = {"f32": 1e-4, "bf16": 2e-2, "f16": 5e-3}


def _conv(rank: int, n: int, c: int, f: int, g: int, size: tuple, k: tuple, s: tuple = (1,), p: tuple = (0,),
          d: tuple = (1,), bias: bool = False, dtype: str = "f32", transposed: bool = False,
          op: tuple = (0,)) -> Conv:  # fmt: skip
    """A `Conv` from the rank's own spatial tuples (a single entry repeated); `op`: the output padding."""

    def three(v: tuple, fill: int) -> tuple[int, int, int]:
        v = v * rank if len(v) == 1 else v
        full = (fill,) * (3 - rank) + tuple(v)
        return full[0], full[1], full[2]

    return Conv(
        rank,
        n,
        c,
        f,
        g,
        three(size, 1),
        three(k, 1),
        three(s, 1),
        three(p, 0),
        three(d, 1),
        bias,
        dtype,
        transposed,
        three(op, 0),
    )


def _operands(conv: Conv, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """x, weight and bias at `conv`'s shapes, drawn in float64 and rounded to its dtype."""
    gen = torch.Generator().manual_seed(seed)
    spatial = conv.size[3 - conv.rank :]
    window = conv.kernel[3 - conv.rank :]

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(TORCH[conv.dtype])

    b = draw(conv.filters) if conv.bias else None
    if conv.transposed:  # the weight (C, F/g, window)
        return draw(conv.batch, conv.channels, *spatial), draw(conv.channels, conv.filters // conv.groups, *window), b
    return draw(conv.batch, conv.channels, *spatial), draw(conv.filters, conv.channels // conv.groups, *window), b


def _reference(conv: Conv, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> np.ndarray:
    r = 3 - conv.rank
    if conv.transposed:
        b64 = None if b is None else b.double()
        out = TRANSPOSED[conv.rank](
            x.double(), w.double(), b64, conv.stride[r:], conv.padding[r:], conv.output_padding[r:], conv.groups,
            conv.dilation[r:],
        )  # fmt: skip
        return out.numpy()
    out = FUNCTIONS[conv.rank](
        x.double(), w.double(), None if b is None else b.double(), conv.stride[r:], conv.padding[r:],
        conv.dilation[r:], conv.groups,
    )  # fmt: skip
    return out.numpy()


def _error(conv: Conv, budget: int | None = None) -> float:
    x, w, b = _operands(conv)
    want = _reference(conv, x, w, b)
    extra: dict[str, Any] = {} if budget is None else {"budget": budget}
    got = run_on_interpreter(conv, x.double().numpy(), w.double().numpy(), None if b is None else b.double().numpy(),
                             **extra).reshape(want.shape)  # fmt: skip
    return float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))


#: (id, convolution) at small odd shapes: every parameter away from its default somewhere, tiles partly masked.
CASES = [
    ("1d-stride-pad-dilation", _conv(1, 2, 3, 4, 1, (13,), (3,), (3,), (1,), (2,))),
    ("1d-bias-groups", _conv(1, 1, 4, 6, 2, (11,), (3,), (2,), (2,), (1,), bias=True)),
    ("2d-3x3-pad-bias", _conv(2, 1, 2, 3, 1, (5, 7), (3,), p=(1,), bias=True)),
    ("2d-asymmetric-stride-dilation-groups", _conv(2, 1, 4, 6, 2, (6, 5), (3, 2), (2, 1), (1, 0), (1, 2), True)),
    ("2d-depthwise", _conv(2, 2, 3, 3, 3, (5, 6), (3,), p=(1,))),
    ("2d-pointwise", _conv(2, 2, 3, 5, 1, (3, 5), (1,))),
    ("3d-stride-pad-dilation-bias", _conv(3, 1, 2, 3, 1, (3, 4, 5), (2, 2, 3), (1, 2, 1), (1, 0, 1), (2, 1, 1), True)),
    ("2d-bf16-bias", _conv(2, 1, 3, 5, 1, (5, 7), (3,), p=(1,), bias=True, dtype="bf16")),
    ("3d-bf16-groups", _conv(3, 1, 4, 2, 2, (3, 3, 4), (2,), (1, 1, 2), (0, 1, 1), dtype="bf16")),
    ("transposed-1d-dilation-groups", _conv(1, 2, 4, 6, 2, (7,), (3,), p=(1,), d=(3,), transposed=True)),
    ("transposed-2d-pad-bias", _conv(2, 1, 2, 3, 1, (4, 5), (3,), p=(0, 1), bias=True, transposed=True)),
    ("transposed-3d-bf16", _conv(3, 1, 2, 3, 1, (2, 3, 4), (2, 3, 2), p=(0, 1, 0), d=(1, 1, 2), dtype="bf16",
                                 transposed=True)),
    # with a stride: the input upsampled (zeros inserted) first, output padding at the ends
    ("transposed-1d-stride-dilation", _conv(1, 2, 3, 4, 1, (9,), (3,), (2,), (1,), (2,), transposed=True)),
    ("transposed-2d-stride-output-padding-groups", _conv(2, 2, 4, 6, 2, (5, 4), (3, 4), (2, 3), (1, 2), bias=True,
                                                         transposed=True, op=(1, 2))),
    ("transposed-2d-stride-5", _conv(2, 1, 2, 3, 1, (3, 4), (3,), (5,), (1,), (2,), transposed=True)),
    ("transposed-3d-stride-output-padding-bf16", _conv(3, 1, 2, 3, 1, (2, 3, 3), (3,), (2,), (1,), dtype="bf16",
                                                       transposed=True, op=(1, 0, 1))),
    # padding past the window's reach: the output crops the full one (the gather's padding is negative)
    ("transposed-1d-cropping", _conv(1, 1, 2, 3, 1, (6,), (2,), (2,), (2,), transposed=True)),
    ("transposed-3d-cropping-groups-f16", _conv(3, 1, 4, 6, 2, (3, 6, 5), (2, 2, 3), (2, 1, 3), (1, 3, 1), (2, 2, 1),
                                                dtype="f16", transposed=True)),
    ("transposed-2d-output-padding-by-dilation", _conv(2, 1, 2, 2, 1, (4, 5), (2,), p=(1,), d=(3,), transposed=True,
                                                       op=(2, 1))),
]  # fmt: skip


@pytest.mark.parametrize("conv", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_the_plan_matches_torch_on_the_interpreter(conv: Conv) -> None:
    assert _error(conv) <= TOLERANCE[conv.dtype] / 4


def test_the_batch_runs_in_chunks_under_a_small_column_budget() -> None:
    conv = _conv(2, 4, 2, 3, 1, (4, 5), (3,), p=(1,), bias=True)
    budget = conv.column_bytes(2)  # two images per chunk: two chunks
    assert conv_plan(conv, budget).images == 2
    assert conv_plan(conv, budget - 1).images == 1
    assert _error(conv, budget=budget) <= 1e-4
    assert _error(conv, budget=conv.column_bytes(1)) <= 1e-4


def test_library_conv_takes_its_inputs_in_any_order_on_cpu_tensors() -> None:
    conv = _conv(2, 1, 2, 3, 1, (4, 6), (2, 3), (1, 2), (1, 1), bias=True)
    x, w, b = _operands(conv, seed=3)
    assert b is not None
    call = LibraryConv("conv_0", conv, order=(2, 0, 1))  # the group's inputs are (weight, bias, x)
    out = call.empty_output(w, b, x)
    assert tuple(out.shape) == (1, 3, 5, 3) and out.dtype == torch.float32
    call(w, b, x, out)
    want = _reference(conv, x, w, b)
    assert np.abs(out.double().numpy() - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    names = [k.name for k in call.kernels()]  # f32: the split passes of both operands before the GEMM
    assert names == ["im2col", "split_bf16x3", "split_bf16x3", "gemm_warp_specialized_persistent", "conv_output_bias"]


def test_the_16_bit_plan_has_no_split_passes_and_an_output_pass_without_bias() -> None:
    names = [k.name for k in LibraryConv("c", _conv(2, 1, 2, 3, 1, (4, 6), (3,), dtype="bf16")).kernels()]
    # the GEMM's K = 18 (36-byte rows, not whole 16-byte units): its operands copied into padded buffers first
    assert names == ["im2col", "pad_copy", "pad_copy", "gemm_warp_specialized_persistent", "conv_output"]


#: im2col parameter sets: a 2-d 3x3, a strided dilated 1-d row, a 3-d window with every parameter set, bf16.
GATHERS = [
    {},
    {"KD": 2, "KH": 3, "KW": 2, "PD": 1, "PH": 2, "PW": 1, "LW": 2, "FLIP": True},
    {"KD": 1, "KH": 1, "KW": 3, "SW": 3, "PW": 1, "LW": 4, "BH": 1, "BW": 128},
    {"KD": 2, "KH": 2, "KW": 3, "SD": 2, "SH": 2, "SW": 1, "PD": 1, "PH": 0, "PW": 1, "LD": 2, "LH": 1, "LW": 2},
    {"KH": 3, "KW": 2, "SH": 2, "LW": 2, "BH": 8, "BW": 16, "DT": "bf16"},
    {"KH": 3, "KW": 4, "PH": 2, "PW": 3, "PHE": 0, "PWE": -1, "FLIP": True},  # an upsampled input's end padding
    {"KH": 2, "KW": 3, "PH": -1, "PW": -2, "FLIP": True},  # a cropping transposed convolution's negative padding
]


@pytest.mark.parametrize(
    "params", GATHERS, ids=["2d", "3d-flipped", "1d", "3d", "2d-bf16", "2d-end-padding", "2d-negative-padding"]
)
def test_the_gather_verifies(params: dict[str, Any]) -> None:
    result = verify(im2col.trace(**params))
    assert result.verdict.value == "verified" and not result.unknowns and not result.errors, result.codes()


@pytest.mark.parametrize("kernel", [conv_output, conv_output_bias, conv_transpose_weight])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_the_output_pass_verifies(kernel: Any, dtype: str) -> None:
    result = verify(kernel.trace(DT=dtype))
    assert result.verdict.value == "verified" and not result.unknowns and not result.errors, result.codes()


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_the_column_matrix_is_torch_unfold(pad: int) -> None:
    # the gather alone: its column matrix (C, KD, KH * KW, N, OD, OH, OW) against F.unfold's (N, C * window, OH * OW)
    conv = _conv(2, 2, 3, 1, 1, (5, 7), (3, 2), (2, 1), (pad,), (1, 2))
    x, _, _ = _operands(conv)
    want = F.unfold(x.double(), (3, 2), dilation=(1, 2), padding=pad, stride=(2, 1)).numpy()
    cols = np.full((3, 1, 6, 2, *conv.out), np.nan)  # (C, KD, KH * KW, N, OD, OH, OW)
    im2col(x.double().numpy().reshape(2, 3, 1, 5, 7), cols, device="cpu", **conv.gather_params())
    got = cols.reshape(18, 2, -1).transpose(1, 0, 2)
    assert got.shape == want.shape and np.array_equal(got, want)


def test_refusals_carry_their_codes() -> None:
    conv = _conv(2, 2, 3, 4, 1, (5, 7), (3,))
    with pytest.raises(ConvError) as e:
        conv_plan(conv, budget=conv.column_bytes(1) - 1, implicit=False)
    assert e.value.code == "CONV_COLUMNS_OVER_BUDGET" and "implicit-GEMM kernel" in e.value.reason
    # the implicit kernel (f32 by split planes) has no column budget; with 3 channels it is not asked (FEW_CHANNELS)
    wide = _conv(2, 2, 16, 4, 1, (5, 7), (3,))
    assert conv_plan(wide, budget=wide.column_bytes(1) - 1).implicit is not None
    with pytest.raises(ConvError) as e:
        conv_plan(conv, budget=conv.column_bytes(1) - 1)
    assert "f32 with 3 channels" in e.value.reason
    with pytest.raises(ConvError) as e:
        conv_plan(_conv(2, 1, 1, 1, 1, (1200, 1200), (40,), d=(30,)), budget=1 << 40)
    assert e.value.code == "CONV_SPAN_OVER_SHARED"
    with pytest.raises(ConvError) as e:
        _conv(2, 1, 3, 4, 2, (5, 7), (3,))  # 3 channels in 2 groups
    assert e.value.code == "CONV_SHAPE"
    with pytest.raises(ConvError) as e:
        _conv(2, 1, 2, 2, 1, (2, 7), (3,))  # the window is taller than the input
    assert e.value.code == "CONV_SHAPE"
    with pytest.raises(ConvError) as e:
        _conv(2, 1, 2, 2, 1, (5, 7), (3,), dtype="f64")
    assert e.value.code == "CONV_DTYPE"
    with pytest.raises(ConvError) as e:
        _conv(2, 1, 2, 2, 1, (5, 7), (3,), s=(2,), transposed=True, op=(2,))  # output padding 2 >= stride 2
    assert e.value.code == "CONV_SHAPE" and "smaller than" in e.value.reason
    with pytest.raises(ConvError) as e:
        _conv(2, 1, 2, 2, 1, (5, 7), (3,), s=(2,), op=(1,))  # output padding on a forward convolution
    assert e.value.code == "CONV_SHAPE"
    with pytest.raises(ConvError) as e:  # padding 5 crops all of the full output's 2 * 1 + 2 + 1 = 5 columns
        _conv(2, 1, 2, 2, 1, (2, 2), (3,), p=(5,), transposed=True)
    assert e.value.code == "CONV_SHAPE" and "output extents" in e.value.reason


def test_a_batched_f32_product_past_the_chain_runs_one_gemm_per_group() -> None:
    # K = 460 * 9 = 4140 per group: over the batched GEMM's f32 accumulation chain, so one GEMM per group
    wide = conv_plan(_conv(2, 1, 920, 4, 2, (3, 3), (3,)))
    assert wide.per_group and wide.gemm.batch == 1 and wide.gemm.K == 4140
    narrow = conv_plan(_conv(2, 1, 920, 4, 2, (3, 3), (3,), dtype="bf16"))
    assert not narrow.per_group and narrow.gemm.batch == 2


def test_a_transposed_plan_permutes_the_weight_first() -> None:
    conv = _conv(2, 1, 2, 3, 1, (4, 5), (3,), transposed=True)
    names = [k.name for k in LibraryConv("t", conv).kernels()]
    assert names[:2] == ["conv_transpose_weight", "im2col"] and names[-1] == "conv_output"
    assert conv.gather_params()["FLIP"] and conv.out == (1, 6, 7)


def test_a_strided_transposed_plan_upsamples_the_input_first() -> None:
    conv = _conv(2, 2, 4, 6, 2, (5, 4), (3, 4), (2, 3), (1, 2), transposed=True, op=(0, 2))
    names = [k.name for k in LibraryConv("t", conv).kernels()]
    assert names[:3] == ["conv_transpose_weight", "conv_upsample", "im2col"]
    # (n - 1) * s - 2p + (k - 1) + op + 1: (5 - 1) * 2 - 2 + 2 + 0 + 1 = 9, (4 - 1) * 3 - 4 + 3 + 2 + 1 = 11
    assert conv.out == (1, 9, 11)
    # upsampled: 5 * 2 = 10 rows, of which the last (a zero past (5 - 1) * 2 + 1) is cut by the end padding, one
    # less than the start's; 4 * 3 = 12 columns, the output padding's two zeros the stride's own
    assert conv.gather_size == (1, 10, 12) and conv.upsample_extra == (0, 0, 0)
    params = conv.gather_params()
    assert (params["PH"], params["PHE"], params["PW"], params["PWE"]) == (1, 0, 1, 1)
    # an output padding by the dilation (stride 1): two more columns than the input's, a whole element of zeros each
    wide = _conv(1, 1, 2, 2, 1, (6,), (2,), d=(3,), transposed=True, op=(2,))
    assert wide.upsampled and wide.upsample_extra == (0, 0, 2) and wide.gather_size == (1, 1, 8)
    with pytest.raises(ConvError) as e:  # an output padding must be below the stride or the dilation
        _conv(2, 1, 2, 2, 1, (5, 7), (3,), s=(2,), transposed=True, op=(2,))
    assert e.value.code == "CONV_SHAPE"


#: conv_upsample parameter sets (SD, SH, SW, QH, QW): a 1-d row, 2-d strides 2 x 3 and 5 x 5, 3-d.
UPSAMPLES = [(1, 1, 2, 1, 128), (1, 2, 3, 4, 32), (1, 5, 5, 4, 32), (2, 2, 2, 4, 32), (3, 1, 2, 2, 64)]


@pytest.mark.parametrize("strides", UPSAMPLES, ids=["1d", "2x3", "5x5", "3d", "3d-3"])
def test_the_upsampling_verifies_and_inserts_the_zeros(strides: tuple[int, ...]) -> None:
    sd, sh, sw, qh, qw = strides
    kernel = conv_upsample.trace(SD=sd, SH=sh, SW=sw, QH=qh, QW=qw, DT="f32")
    result = verify(kernel)
    assert result.verdict.value == "verified" and not result.unknowns and not result.errors, result.codes()
    m, d, h, w = 3, 2, 5, 37  # tiles partly masked; one more plane, row and column of zeros than the input has
    x = np.random.default_rng(0).standard_normal((m, d, 1, h, 1, w, 1)).astype(np.float32).astype(np.float64)
    xu = np.full((m, d + 1, sd, h + 1, sh, w + 1, sw), np.nan)
    conv_upsample(x, xu, device="cpu", SD=sd, SH=sh, SW=sw, QH=qh, QW=qw)
    want = np.zeros((m, (d + 1) * sd, (h + 1) * sh, (w + 1) * sw))
    want[:, : d * sd : sd, : h * sh : sh, : w * sw : sw] = x.reshape(m, d, h, w)
    assert np.array_equal(xu.reshape(want.shape), want)


#: GPU checks at moderate sizes: (id, convolution) — chunked batches, groups, a 1-d row, a transposed 3-d one.
GPU_CASES = [
    ("2d-bias-chunks", _conv(2, 4, 16, 32, 1, (37, 61), (3,), p=(1,), bias=True)),
    ("2d-depthwise", _conv(2, 2, 32, 32, 32, (40, 50), (3,), (2,), (1,))),
    ("1d-stride-dilation", _conv(1, 3, 8, 16, 1, (1001,), (3,), (3,), (0,), (4,))),
    ("3d-bf16", _conv(3, 2, 4, 8, 1, (9, 10, 11), (3, 5, 7), p=(1, 2, 3), dtype="bf16")),
    ("transposed-2d", _conv(2, 2, 8, 12, 1, (30, 31), (3, 5), p=(1, 2), bias=True, transposed=True)),
    ("transposed-3d-stride-output-padding", _conv(3, 2, 8, 12, 4, (5, 9, 17), (3,), (2,), (1,), bias=True,
                                                  transposed=True, op=(1,))),
    ("transposed-2d-stride-5-dilation", _conv(2, 2, 8, 16, 1, (13, 29), (3,), (5,), (1,), (2,), transposed=True)),
]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("conv", [c for _, c in GPU_CASES], ids=[i for i, _ in GPU_CASES])
def test_library_conv_matches_torch_on_the_gpu(conv: Conv) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    x, w, b = (t.cuda() if t is not None else None for t in _operands(conv))
    call = LibraryConv("conv", conv, budget=conv.column_bytes(1) if conv.batch > 1 else None)  # chunks of 1 image
    inputs = [x, w] + ([b] if b is not None else [])
    out = call.empty_output(*inputs)
    call(*inputs, out)
    torch.cuda.synchronize()
    want = _reference(conv, x.cpu(), w.cpu(), None if b is None else b.cpu())
    err = float(np.abs(out.double().cpu().numpy() - want).max() / max(1.0, np.abs(want).max()))
    assert err <= TOLERANCE[conv.dtype] / 4, err
