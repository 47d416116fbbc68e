"""The direct depthwise convolution (`argus.kernels.conv_kernels.conv_depthwise`, planned by `argus.kernels.conv`):
which convolutions take it, its tile choice, its result on the CPU interpreter against ``torch.nn.functional`` at
small odd shapes (1-d, 2-d, 3-d; stride, padding, dilation, asymmetric windows, several output channels per input
channel, a bias, a single input channel, channel counts that leave smaller channel blocks; f32, bf16, f16), its
verification (tag assertions: every element multiplied is the input element and weight its output reads), its
SASS, and the same call on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from argus.kernels.conv import (
    DEPTHWISE_MAX_TAPS,
    Conv,
    DepthwiseConfig,
    LibraryConv,
    conv_plan,
    depthwise_config,
    depthwise_cost,
    depthwise_params,
    depthwise_refusal,
    run_on_interpreter,
)
from argus.kernels.conv_kernels import conv_depthwise
from argus.verify import verify

FUNCTIONS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
TORCH = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
#: relative max error: the kernel accumulates in f32 and rounds the output once
TOLERANCE = {"f32": 2e-6, "bf16": 1e-2, "f16": 2e-3}


def _conv(rank: int, n: int, c: int, mult: int, size: tuple, k: tuple, s: tuple = (1,), p: tuple = (0,),
          d: tuple = (1,), bias: bool = False, dtype: str = "f32", groups: int | None = None) -> Conv:  # fmt: skip
    """A depthwise `Conv` (groups = channels unless given, `mult` output channels per group) from the rank's own
    spatial tuples (a single entry repeated)."""

    def three(v: tuple, fill: int) -> tuple[int, int, int]:
        v = v * rank if len(v) == 1 else v
        full = (fill,) * (3 - rank) + tuple(v)
        return full[0], full[1], full[2]

    g = c if groups is None else groups
    return Conv(
        rank, n, c, g * mult, g, three(size, 1), three(k, 1), three(s, 1), three(p, 0), three(d, 1), bias, dtype
    )


def _operands(conv: Conv, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    gen = torch.Generator().manual_seed(conv.channels + conv.filters + sum(conv.size))

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(TORCH[conv.dtype]).to(device)

    x = draw(conv.batch, conv.channels, *conv.size[3 - conv.rank :])
    w = draw(conv.filters, conv.channels // conv.groups, *conv.kernel[3 - conv.rank :])
    return x, w, draw(conv.filters) if conv.bias else None


def _reference(conv: Conv, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> np.ndarray:
    r = 3 - conv.rank
    out = FUNCTIONS[conv.rank](
        x.double().cpu(), w.double().cpu(), None if b is None else b.double().cpu(), conv.stride[r:],
        conv.padding[r:], conv.dilation[r:], conv.groups,
    )  # fmt: skip
    if conv.dtype != "f32":  # the output rounds once to its dtype
        out = out.to(TORCH[conv.dtype]).double()
    return out.numpy()


def _error(conv: Conv, implicit: bool = True) -> float:
    x, w, b = _operands(conv)
    want = _reference(conv, x, w, b)
    got = run_on_interpreter(
        conv, x.double().numpy(), w.double().numpy(), None if b is None else b.double().numpy(), implicit=implicit
    ).reshape(want.shape)
    return float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))


#: (id, convolution): every parameter away from its default somewhere, tiles partly masked
CASES = [
    ("2d-3x3", _conv(2, 2, 8, 1, (11, 13), (3,))),
    ("2d-asymmetric-pad-bias-mult", _conv(2, 2, 4, 2, (9, 40), (3, 7), p=(1, 3), bias=True)),
    ("2d-stride-dilation", _conv(2, 1, 8, 1, (12, 20), (3,), s=(2,), p=(1,), d=(2, 1))),
    ("2d-stride-3x2-pad", _conv(2, 2, 6, 1, (9, 35), (5, 3), s=(3, 2), p=(2, 1))),
    ("1d-pad-dilation", _conv(1, 3, 4, 1, (37,), (5,), p=(2,), d=(2,))),
    ("3d-pad", _conv(3, 1, 4, 2, (5, 6, 7), (3,), p=(1,))),
    ("3d-stride-dilation-bias", _conv(3, 2, 4, 3, (6, 7, 9), (2, 3, 3), s=(2, 1, 2), d=(2, 1, 1), bias=True)),
    ("single-channel", _conv(2, 2, 1, 5, (9, 9), (3,), p=(1,), groups=1)),
    ("odd-channels", _conv(2, 1, 3, 1, (7, 70), (3,), p=(1,))),
    ("narrow-output", _conv(2, 2, 16, 1, (9, 7), (3,))),
    ("bf16", _conv(2, 2, 16, 1, (9, 7), (3,), dtype="bf16", bias=True)),
    ("f16-stride", _conv(2, 2, 6, 1, (9, 35), (5, 3), s=(3, 2), p=(2, 1), dtype="f16")),
]  # fmt: skip


@pytest.mark.parametrize("conv", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_matches_torch_on_the_interpreter(conv: Conv) -> None:
    assert conv_plan(conv).depthwise is not None
    assert conv_plan(conv).describe().startswith("the direct depthwise kernel")
    assert _error(conv) <= TOLERANCE[conv.dtype]


def test_the_gather_path_and_the_direct_kernel_agree() -> None:
    conv = CASES[1][1]
    x, w, b = _operands(conv)
    args = (conv, x.double().numpy(), w.double().numpy(), b.double().numpy())
    direct, gathered = run_on_interpreter(*args), run_on_interpreter(*args, implicit=False)
    assert conv_plan(conv, implicit=False).depthwise is None
    assert np.abs(direct - gathered).max() <= 1e-4 * max(1.0, np.abs(gathered).max())


@pytest.mark.parametrize(
    ("conv", "why"),
    [
        (_conv(2, 1, 8, 1, (9, 9), (3,), groups=4), "2 input channels per group"),
        (_conv(2, 1, 4, 1, (20, 20), (9,)), "a window of 81 offsets"),
        (_conv(2, 1, 4, 1, (410, 40), (3,), d=(200, 1)), "shared memory"),
    ],
)
def test_what_the_direct_kernel_refuses_runs_on_the_gather_path(conv: Conv, why: str) -> None:
    refusal = depthwise_refusal(conv)
    assert refusal is not None and why in refusal
    assert conv_plan(conv).depthwise is None


def test_a_transposed_depthwise_convolution_is_refused() -> None:
    conv = Conv(2, 1, 4, 4, 4, (1, 5, 6), (1, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1), False, "f32", transposed=True)
    assert depthwise_refusal(conv) == "a transposed convolution"
    assert conv_plan(conv).depthwise is None
    assert DEPTHWISE_MAX_TAPS == 64


def test_tile_choice() -> None:
    # KernelBench 82: wide rows; one channel by 128 columns reads the fewest halo columns per output
    assert depthwise_config(_conv(2, 16, 64, 1, (512, 512), (3,))) == DepthwiseConfig(1, 8, 128)
    # a 56-wide output: 64 columns (one tile a row), 2 channels
    assert depthwise_config(_conv(2, 32, 144, 1, (56, 56), (3,), p=(1,), dtype="bf16")) == DepthwiseConfig(2, 8, 64)
    # a 7-wide output: 8-column rows, 16 channels a block
    assert depthwise_config(_conv(2, 32, 960, 1, (7, 7), (3,), p=(1,))) == DepthwiseConfig(16, 8, 8)
    # 6 channels: only 1 and 2 channels a block divide them
    assert depthwise_config(_conv(2, 1, 6, 1, (9, 70), (3,))).CB in (1, 2)
    # a 1-d convolution: one row
    assert depthwise_config(_conv(1, 1, 4, 1, (100,), (3,))).BH == 1
    # a short output: its height, a power of two
    assert depthwise_config(_conv(2, 1, 4, 1, (5, 100), (3,))).BH == 4


def test_the_cost_counts_halo_columns_and_edge_waste() -> None:
    conv = _conv(2, 16, 64, 1, (512, 512), (3,))
    # 32 columns stage 64 (34 rounded to whole 32-element runs), 128 stage 160: fewer staged elements per output
    assert depthwise_cost(conv, DepthwiseConfig(1, 8, 128)) < depthwise_cost(conv, DepthwiseConfig(4, 8, 32))
    narrow = _conv(2, 32, 960, 1, (7, 7), (3,), p=(1,))
    # a 7-wide output in 128-column tiles computes 128 / 7 times the outputs it keeps
    assert depthwise_cost(narrow, DepthwiseConfig(1, 8, 128)) > 5 * depthwise_cost(narrow, DepthwiseConfig(16, 8, 8))


@pytest.mark.parametrize("name", ["2d-asymmetric-pad-bias-mult", "3d-stride-dilation-bias", "bf16"])
def test_planned_configurations_verify(name: str) -> None:
    conv = dict(CASES)[name]
    (kernel,) = conv_plan(conv).kernels()
    result = verify(kernel)
    assert result.verdict.value == "verified", result.render_text()
    # every output element is written: the rows bh * BH + o of the loop over a tile's rows, enumerated
    (coverage,) = [c for c in result.checks if c.check == "output coverage"]
    assert coverage.verdict.value == "verified" and not coverage.not_checked, coverage.target


def test_a_tile_row_loop_one_short_is_caught() -> None:
    """The seeded bug: the loop over a tile's output rows runs BH - 1 times: the last row of every tile is never
    written, a `COVERAGE_OUTPUT` counterexample (the rows ``bh * BH + o`` are read with ``o`` enumerated)."""
    import dataclasses

    from argus.ir.nodes import For
    from argus.lineage.variants import map_statements

    conv = dict(CASES)["bf16"]
    (kernel,) = conv_plan(conv).kernels()
    rows = [s for s in _loops(kernel.body) if s.var.name == "o"]
    assert len(rows) == 1 and isinstance(rows[0].extent, int) and rows[0].extent > 1
    short = rows[0]

    def one_short(s):  # noqa: ANN001, ANN202
        return dataclasses.replace(s, extent=s.extent - 1) if isinstance(s, For) and s.var is short.var else s

    result = verify(dataclasses.replace(kernel, body=map_statements(kernel.body, one_short)))
    found = [f for f in result.findings if f.code == "COVERAGE_OUTPUT"]
    assert result.verdict.value == "violated" and found, result.render_text()


def _loops(body):  # noqa: ANN001, ANN202
    from argus.ir.nodes import For
    from argus.lineage.variants import map_statements

    found = []
    map_statements(body, lambda s: found.append(s) if isinstance(s, For) else None)
    return found


def test_kernelbench_82_verifies_with_its_tag_assertions() -> None:
    conv = _conv(2, 16, 64, 1, (512, 512), (3,))
    params = depthwise_params(conv, depthwise_config(conv))
    result = verify(conv_depthwise.trace(**params))
    assert result.verdict.value == "verified", result.render_text()
    assert not result.errors


def test_sass_is_fma_on_shared_loads() -> None:
    from argus.backend.cuda.codegen import compile_kernel

    compiled = compile_kernel(conv_plan(_conv(2, 16, 64, 1, (512, 512), (3,))).kernels()[0])
    mix = compiled.instruction_mix()
    assert mix["FFMA"] >= 9 and mix["LDS"] >= 9 and mix["STG"] >= 1, mix
    assert not any(op.startswith(("HMMA", "HGMMA")) for op in mix)  # CUDA cores, no tensor cores
    assert "0 B spill stores" in str(compiled.resources)


#: GPU checks at moderate sizes
GPU_CASES = [
    ("2d-3x3-bias", _conv(2, 4, 64, 1, (67, 131), (3,), p=(1,), bias=True)),
    ("2d-7x7-bf16", _conv(2, 8, 128, 1, (56, 56), (7,), p=(3,), dtype="bf16")),
    ("2d-stride-mult-f16", _conv(2, 4, 24, 2, (57, 57), (3,), s=(2,), p=(1,), dtype="f16")),
    ("3d", _conv(3, 2, 8, 1, (9, 20, 30), (3,), p=(1,))),
    ("1d", _conv(1, 4, 16, 1, (5000,), (7,), p=(3,), d=(2,))),
]


@pytest.mark.gpu
@pytest.mark.parametrize("conv", [c for _, c in GPU_CASES], ids=[i for i, _ in GPU_CASES])
def test_library_conv_matches_torch_on_the_gpu(conv: Conv) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    x, w, b = _operands(conv, "cuda")
    call = LibraryConv("conv", conv)
    assert call.plan().depthwise is not None
    inputs = [x, w] + ([b] if b is not None else [])
    out = call.empty_output(*inputs)
    call(*inputs, out)
    torch.cuda.synchronize()
    want = _reference(conv, x, w, b)
    err = float(np.abs(out.double().cpu().numpy() - want).max() / max(1.0, np.abs(want).max()))
    assert err <= TOLERANCE[conv.dtype], err
