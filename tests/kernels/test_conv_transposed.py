"""Transposed convolutions as stride phases on the implicit kernel (`argus.kernels.conv.transposed_phases`): the
decomposition is torch's `conv_transpose{1,2,3}d` for every stride, padding, dilation and output padding tried (in
float64, phase by phase through torch's forward convolution), the plan matches torch on the CPU interpreter at small
odd shapes through the kernels a GPU call launches, every kernel of a plan verifies, what the phases do not take
runs on the gather path, and a phase's forward convolution is refused where only the implicit kernel may take it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from argus.kernels.conv import (
    Conv,
    ConvError,
    LibraryConv,
    conv_plan,
    implicit_refusal,
    phase_weight,
    run_on_interpreter,
    transposed_phases,
    transposed_refusal,
)
from argus.verify import verify

TRANSPOSED = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _conv(rank: int, n: int, c: int, f: int, size: tuple, k: tuple, s: tuple, p: tuple, d: tuple = (1,),
          op: tuple = (0,), bias: bool = False, dtype: str = "f32", groups: int = 1) -> Conv:  # fmt: skip
    def three(v: tuple, fill: int) -> tuple[int, int, int]:
        v = v * rank if len(v) == 1 else v
        full = (fill,) * (3 - rank) + tuple(v)
        return full[0], full[1], full[2]

    return Conv(rank, n, c, f, groups, three(size, 1), three(k, 1), three(s, 1), three(p, 0), three(d, 1), bias,
                dtype, transposed=True, output_padding=three(op, 0))  # fmt: skip


def _spatial(conv: Conv, v: tuple) -> tuple:
    return tuple(v[3 - conv.rank :])


def _torch(conv: Conv, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    return TRANSPOSED[conv.rank](
        x, w, b, stride=_spatial(conv, conv.stride), padding=_spatial(conv, conv.padding),
        output_padding=_spatial(conv, conv.output_padding), dilation=_spatial(conv, conv.dilation),
    )  # fmt: skip


def _phases_by_torch(conv: Conv, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The transposed convolution assembled from its phases, each a forward convolution by torch (float64)."""
    n, f = conv.batch, conv.filters
    out = torch.full((n, f, *conv.out), float("nan"), dtype=torch.float64)
    x5 = x.reshape(n, conv.channels, *conv.size)
    for phase in transposed_phases(conv):
        at = phase.positions(conv.stride)
        if phase.conv is None:
            out[at] = b.view(1, f, 1, 1, 1)
            continue
        fc = phase.conv
        pads = [e for a in (2, 1, 0) for e in (fc.padding[a], fc.gather_padding_end[a])]  # negative: cropped
        weight = phase_weight(w, phase).reshape(f, conv.channels, *fc.kernel)
        y = F.conv3d(F.pad(x5, pads), weight, b, dilation=fc.dilation)
        assert tuple(y.shape[2:]) == phase.out
        out[at] = y
    return out.reshape(n, f, *_spatial(conv, conv.out))


def _sweep() -> list[tuple]:
    cases = []
    for rank, k, s, d in itertools.product((1, 2, 3), (1, 2, 3, 4), (1, 2, 3), (1, 2, 3)):
        if rank == 3 and (k == 4 or d == 3):
            continue
        # padding up to two past the window's reach d * (k - 1): the output crops the full one
        for p in range(0, d * (k - 1) + 3, 1 if rank == 1 else 2):
            for op in range(max(s, d)):
                size = {1: (5,), 2: (4, 5), 3: (3, 3, 4)}[rank]
                window = {1: (k,), 2: (k, max(1, k - 1)), 3: (2, k, max(1, k - 1))}[rank]
                pad = tuple(min(p, d * (kk - 1) + 2) for kk in window)
                case = (rank, size, window, (s,) * rank, pad, (d,) * rank, (op,) * rank)
                try:
                    _conv(rank, 2, 3, 2, *case[1:], bias=True)
                except ConvError:  # an output of no extent: not a convolution torch runs either
                    continue
                cases.append(case)
    return cases


def test_the_phases_are_the_transposed_convolution() -> None:
    gen = torch.Generator().manual_seed(0)
    cases = _sweep()
    assert len(cases) > 500
    for rank, size, window, s, p, d, op in cases:
        conv = _conv(rank, 2, 3, 2, size, window, s, p, d, op, bias=True)
        x = torch.randn(2, 3, *size, generator=gen, dtype=torch.float64)
        w = torch.randn(3, 2, *window, generator=gen, dtype=torch.float64)
        b = torch.randn(2, generator=gen, dtype=torch.float64)
        want = _torch(conv, x, w, b)
        got = _phases_by_torch(conv, x, w, b)
        assert got.shape == want.shape and torch.allclose(got, want, atol=1e-10), (rank, size, window, s, p, d, op)


def test_a_phase_count_and_its_taps() -> None:
    # 3x3, stride 2, padding 1, output padding 1 (KernelBench level 2's 2): four phases of 1, 2, 2 and 4 taps; output
    # row 2q reads input q through tap 1, row 2q + 1 reads inputs q + 1 and q through taps 0 and 2
    phases = transposed_phases(_conv(2, 1, 8, 8, (5, 5), (3,), (2,), (1,), op=(1,)))
    assert [p.offset[1:] for p in phases] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [p.taps[1:] for p in phases] == [((1,), (1,)), ((1,), (2, 0)), ((2, 0), (1,)), ((2, 0), (2, 0))]
    assert phases[3].conv is not None and phases[3].conv.padding[1:] == (0, 0) and phases[3].out[1:] == (5, 5)
    # a window narrower than the stride: phases the window never reaches are the bias alone
    lonely = transposed_phases(_conv(1, 1, 8, 8, (6,), (1,), (3,), (0,), op=(2,)))
    assert [p.conv is None for p in lonely] == [False, True, True]


#: (id, transposed convolution) at small odd shapes: every parameter away from its default somewhere
CASES = [
    ("2d-3x3-s2-p1-op1-bias", _conv(2, 2, 16, 8, (5, 7), (3,), (2,), (1,), op=(1,), bias=True)),
    ("2d-4x4-s2-p1", _conv(2, 1, 16, 8, (5, 6), (4,), (2,), (1,))),
    ("2d-3x3-s1-p1-bf16", _conv(2, 1, 16, 8, (5, 6), (3,), (1,), (1,), bias=True, dtype="bf16")),
    ("2d-asymmetric-s3x2-dilation", _conv(2, 1, 16, 8, (4, 5), (3, 2), (3, 2), (2, 1), d=(2, 1), op=(1, 0))),
    ("1d-s3-p2-d2-op1", _conv(1, 2, 16, 8, (9,), (3,), (3,), (2,), d=(2,), op=(1,), bias=True)),
    ("1x1-s2-bias-phases", _conv(2, 1, 16, 8, (4, 5), (1,), (2,), (0,), bias=True)),
    ("2d-negative-start-f16", _conv(2, 1, 16, 16, (5, 5), (2,), (2,), (1,), dtype="f16")),
    # padding past the window's reach (3 > 2, 2 > 1): the output crops the full one
    ("2d-cropping-s2-op1-bf16", _conv(2, 1, 16, 8, (7, 9), (3,), (2,), (3, 2), op=(1, 0), bias=True, dtype="bf16")),
    ("1d-cropping-s1-f16", _conv(1, 2, 16, 8, (9,), (2,), (1,), (2,), dtype="f16")),
]  # fmt: skip


@pytest.mark.parametrize("conv", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_the_plan_matches_torch_on_the_interpreter(conv: Conv) -> None:
    plan = conv_plan(conv)
    assert plan.phases is not None and plan.gemm is None, plan.describe()
    gen = torch.Generator().manual_seed(1)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[conv.dtype]
    x = torch.randn(conv.batch, conv.channels, *_spatial(conv, conv.size), generator=gen).to(dtype)
    w = torch.randn(conv.channels, conv.filters, *_spatial(conv, conv.kernel), generator=gen).to(dtype)
    b = torch.randn(conv.filters, generator=gen).to(dtype) if conv.bias else None
    want = _torch(conv, x.double(), w.double(), None if b is None else b.double()).numpy()
    got = run_on_interpreter(conv, x.double().numpy(), w.double().numpy(), None if b is None else b.double().numpy())
    tolerance = {"f32": 2e-5, "bf16": 1e-2, "f16": 2e-3}[conv.dtype]
    assert np.abs(got.reshape(want.shape) - want).max() <= tolerance * max(1.0, np.abs(want).max())


def test_library_conv_runs_the_phases_on_cpu_tensors() -> None:
    conv = _conv(2, 1, 16, 8, (5, 6), (4,), (2,), (1,), op=(1,), bias=True)
    gen = torch.Generator().manual_seed(2)
    x, w, b = torch.randn(1, 16, 5, 6, generator=gen), torch.randn(16, 8, 4, 4, generator=gen), torch.randn(8)
    call = LibraryConv("conv_0", conv)
    out = call.empty_output(x, w, b)
    assert tuple(out.shape) == (1, 8, 11, 13)
    call(x, w, b, out)
    want = _torch(conv, x.double(), w.double(), b.double())
    assert (out.double() - want).abs().max() <= 2e-5 * max(1.0, want.abs().max().item())
    assert "4 stride phases" in call.plan().describe()


PLANS = {
    "3x3/2 op1 f32": _conv(2, 2, 64, 64, (9, 9), (3,), (2,), (1,), op=(1,), bias=True),
    "4x4/2 bf16": _conv(2, 2, 64, 128, (9, 9), (4,), (2,), (1,), op=(1,), dtype="bf16"),
    "3x3/1 f32 (one phase)": _conv(2, 2, 64, 64, (9, 9), (3,), (1,), (1,), bias=True),
    "1-d k3/3 d2 f32": _conv(1, 2, 32, 64, (17,), (3,), (3,), (2,), d=(2,)),
    # KernelBench level 1's 69: a 3x5 window on the 8x16 two-consumer tile, `unknown` until the split planes were
    # indexed linearly (image n's plane t at 3n + t, the weight's planes an axis of their own)
    "3x5 f32 (level 1's 69)": _conv(2, 64, 64, 128, (128, 256), (3, 5), (1,), (0,)),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_every_kernel_of_a_plan_verifies(name: str) -> None:
    conv = PLANS[name]
    kernels = conv_plan(conv).kernels()
    assert [k.name for k in kernels].count("conv_implicit_gemm") >= 1
    for kernel in kernels:
        result = verify(kernel)
        # narrow 1-d rows store narrower vectors on the NCHW epilogue (a true performance warning)
        assert result.verdict.value == "verified" and not result.unknowns, (kernel.name, result.codes())
        assert all(f.severity.value == "warning" for f in result.findings), result.codes()


@pytest.mark.parametrize(
    ("conv", "why"),
    [
        (_conv(2, 1, 24, 8, (5, 5), (3,), (2,), (1,), groups=2, dtype="bf16"), "2 groups (one group's"),
        (_conv(3, 1, 12, 8, (3, 4, 5), (3,), (2,), (1,), dtype="bf16"), "12 channels"),
        (_conv(2, 1, 12, 8, (5, 5), (3,), (2,), (1,), dtype="bf16"), "12 channels"),
    ],
)
def test_what_the_phases_do_not_take_runs_on_the_gather_path(conv: Conv, why: str) -> None:
    assert why in (transposed_refusal(conv) or "")
    plan = conv_plan(conv)
    assert plan.phases is None and plan.gemm is not None and plan.conv.upsampled


def _grouped_torch(conv: Conv, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    return TRANSPOSED[conv.rank](
        x, w, b, stride=_spatial(conv, conv.stride), padding=_spatial(conv, conv.padding),
        output_padding=_spatial(conv, conv.output_padding), dilation=_spatial(conv, conv.dilation), groups=conv.groups,
    )  # fmt: skip


def _grouped_operands(conv: Conv, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16}[conv.dtype]
    gen = torch.Generator(device=device).manual_seed(5)
    x = torch.randn(conv.batch, conv.channels, *_spatial(conv, conv.size), generator=gen, device=device).to(tdt)
    shape = (conv.channels, conv.filters // conv.groups, *_spatial(conv, conv.kernel))
    w = torch.randn(*shape, generator=gen, device=device).to(tdt)
    b = torch.randn(conv.filters, generator=gen, device=device).to(tdt) if conv.bias else None
    return x, w, b


GROUPED = {
    # level 1's 75: strided, dilated, padded, 2-d; level 1's 72: a strided 3-d one with output padding; stride 1
    "2d-strided-dilated": _conv(2, 2, 16, 32, (5, 7), (3, 5), (2, 3), (1, 2), d=(2, 1), groups=2, bias=True),
    "3d-strided-output-padding": _conv(3, 1, 16, 16, (3, 4, 5), (3,), (2,), (1,), op=(1,), groups=2, bias=True),
    "2d-stride-1-bf16": _conv(2, 1, 32, 32, (5, 6), (3,), (1,), (1,), groups=4, dtype="bf16"),
}


def _switched(monkeypatch: pytest.MonkeyPatch, name: str, value: bool):  # noqa: ANN202
    """`argus.kernels.conv`'s switch `name` set to `value` for one test, the plan cache cleared around it."""
    import argus.kernels.conv as lib

    monkeypatch.setattr(lib, name, value)
    conv_plan.cache_clear()
    yield
    conv_plan.cache_clear()


@pytest.fixture
def grouped_phases(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Grouped transposed convolutions on each group's stride phases (`GROUPED_PHASES`, the default; kept explicit)."""
    yield from _switched(monkeypatch, "GROUPED_PHASES", True)


@pytest.mark.parametrize("name", list(GROUPED))
def test_a_grouped_transposed_convolution_runs_as_each_group_s_phases(name: str, grouped_phases: None) -> None:
    conv = GROUPED[name]
    plan = conv_plan(conv)
    assert plan.phases is not None and f"of each of {conv.groups} groups" in plan.describe()
    assert all(p.conv is None or (p.conv.channels, p.conv.groups) == (conv.channels // conv.groups, 1)
               for p in plan.phases)  # fmt: skip
    x, w, b = (t.double() if t is not None else None for t in _grouped_operands(conv))
    want = _grouped_torch(conv, x, w, b).numpy()
    got = run_on_interpreter(conv, x.numpy(), w.numpy(), None if b is None else b.numpy())
    tolerance = {"f32": 2e-5, "bf16": 1e-2}[conv.dtype]
    assert np.abs(got.reshape(want.shape) - want).max() <= tolerance * max(1.0, np.abs(want).max())


def test_grouped_phases_run_for_few_groups_and_where_the_gather_path_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    import argus.kernels.conv as lib

    conv = GROUPED["3d-strided-output-padding"]
    conv_plan.cache_clear()
    assert transposed_refusal(conv) is None
    assert lib.GROUPED_PHASES and conv.groups <= lib.GROUPED_PHASES_MAX_GROUPS
    assert conv_plan(conv).phases is not None  # few groups: their phases, by choice
    monkeypatch.setattr(lib, "GROUPED_PHASES_MAX_GROUPS", conv.groups - 1)
    conv_plan.cache_clear()
    assert conv_plan(conv).phases is None  # more groups than chosen: the gather path, which fits
    over = conv_plan(conv, budget=conv.column_bytes(1) - 1)  # one image's columns over the budget
    assert over.phases is not None and over.gemm is None
    monkeypatch.setattr(lib, "GROUPED_PHASES", False)
    conv_plan.cache_clear()
    assert conv_plan(conv).phases is None
    conv_plan.cache_clear()


def test_a_phase_convolution_is_refused_off_the_implicit_kernel() -> None:
    phase = transposed_phases(_conv(2, 1, 16, 8, (5, 5), (2,), (2,), (1,)))[-1]  # rows 2q + 1 read input q + 1
    assert phase.conv is not None and min(phase.conv.padding) < 0  # a negative start: the first input row unread
    with pytest.raises(ConvError) as caught:
        conv_plan(phase.conv, implicit=False)
    assert caught.value.code == "CONV_PHASE_GATHER"
    with pytest.raises(ConvError, match="padding >= 0"):
        Conv(2, 1, 8, 8, 1, (1, 5, 5), (1, 2, 2), (1, 1, 1), (0, -1, 0), (1, 1, 1), False, "f32")
    with pytest.raises(ConvError, match="for a forward convolution"):
        Conv(2, 1, 8, 8, 1, (1, 5, 5), (1, 2, 2), (1, 2, 2), (0, 1, 0), (1, 1, 1), False, "f32", transposed=True,
             padding_end=(0, 1, 0))  # fmt: skip


def test_a_phase_kernel_compiles_with_wgmma_and_tma() -> None:
    from argus.backend.cuda.codegen import compile_kernel

    kernels = conv_plan(PLANS["3x3/2 op1 f32"]).kernels()
    compiled = compile_kernel(kernels[-1])
    mix = compiled.instruction_mix()
    assert mix["HGMMA"] > 0 and mix["UTMALDG"] > 0
    assert "0 B spill stores" in str(compiled.resources)


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")


@gpu
@pytest.mark.parametrize("name", list(GROUPED))
def test_grouped_phases_match_torch_on_the_gpu(name: str, grouped_phases: None) -> None:
    conv = GROUPED[name]
    x, w, b = _grouped_operands(conv, "cuda")
    call = LibraryConv("conv", conv)
    inputs = [x, w] + ([b] if b is not None else [])
    out = call.empty_output(*inputs)
    call(*inputs, out)
    want = _grouped_torch(conv, x.double(), w.double(), None if b is None else b.double())
    err = ((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0)).item()
    assert err <= (2e-5 if conv.dtype == "f32" else 1e-2), (conv, err)


@gpu
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_library_conv_matches_torch_on_the_gpu(dtype: str, channels_last: bool) -> None:
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    for conv in (
        _conv(2, 3, 64, 64, (37, 29), (3,), (2,), (1,), op=(1,), bias=True, dtype=dtype),
        _conv(2, 2, 64, 128, (20, 24), (4,), (2,), (1,), dtype=dtype),
        _conv(2, 2, 32, 64, (33, 17), (3,), (1,), (1,), bias=True, dtype=dtype),
        _conv(1, 4, 32, 64, (301,), (3,), (3,), (2,), d=(2,), op=(1,), dtype=dtype),
        # level 1's 81's form: 16 of 25 phases the bias alone (one fill of the whole output, then the other 9)
        _conv(2, 2, 32, 64, (13, 11), (3,), (5,), (2,), d=(2,), bias=True, dtype=dtype),
    ):
        gen = torch.Generator(device="cuda").manual_seed(3)
        x = torch.randn(conv.batch, conv.channels, *_spatial(conv, conv.size), device="cuda", generator=gen).to(tdt)
        w = torch.randn(conv.channels, conv.filters, *_spatial(conv, conv.kernel), device="cuda", generator=gen)
        w = w.to(tdt)
        b = torch.randn(conv.filters, device="cuda", generator=gen).to(tdt) if conv.bias else None
        inputs = [x, w] + ([b] if b is not None else [])
        call = LibraryConv("conv", conv)
        out = call.empty_output(*inputs)
        if channels_last and conv.rank == 2:
            out = out.contiguous(memory_format=torch.channels_last)
        call(*inputs, out)
        want = _torch(conv, x.double(), w.double(), None if b is None else b.double())
        err = ((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0)).item()
        assert err <= (2e-5 if dtype == "f32" else 1e-2), (conv, err)


@pytest.fixture
def implicit_3d(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """The implicit kernel's 3-d form switched on (`IMPLICIT_3D`, the default), whatever another test left."""
    yield from _switched(monkeypatch, "IMPLICIT_3D", True)


def _forward3(n: int, c: int, f: int, size: tuple, k: tuple, s: tuple, p: tuple, d: tuple, bias: bool,
              dtype: str = "f32") -> Conv:  # fmt: skip
    return Conv(3, n, c, f, 1, size, k, s, p, d, bias, dtype)


THREE_D = [
    ("3d-forward-f32", _forward3(2, 16, 8, (3, 4, 5), (2, 3, 3), (1, 2, 1), (1, 1, 0), (2, 1, 1), True)),
    ("3d-forward-bf16", _forward3(1, 16, 16, (4, 5, 6), (3, 3, 3), (2, 1, 1), (1, 1, 1), (1, 1, 1), False, "bf16")),
    ("3d-transposed-phases", _conv(3, 1, 16, 8, (3, 4, 5), (3,), (2,), (1,), op=(1, 0, 1), bias=True)),
]


@pytest.mark.parametrize("conv", [c for _, c in THREE_D], ids=[i for i, _ in THREE_D])
def test_the_3d_form_matches_torch_on_the_interpreter(conv: Conv, implicit_3d: None) -> None:
    plan = conv_plan(conv)
    assert plan.gemm is None and (plan.implicit is not None or plan.phases is not None), plan.describe()
    gen = torch.Generator().manual_seed(4)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[conv.dtype]
    x = torch.randn(conv.batch, conv.channels, *conv.size, generator=gen).to(dtype).double()
    shape = (conv.channels, conv.filters) if conv.transposed else (conv.filters, conv.channels)
    w = torch.randn(*shape, *conv.kernel, generator=gen).to(dtype).double()
    b = torch.randn(conv.filters, generator=gen).to(dtype).double() if conv.bias else None
    if conv.transposed:
        want = _torch(conv, x, w, b).numpy()
    else:
        want = F.conv3d(x, w, b, stride=conv.stride, padding=conv.padding, dilation=conv.dilation).numpy()
    got = run_on_interpreter(conv, x.numpy(), w.numpy(), None if b is None else b.numpy())
    tolerance = {"f32": 2e-5, "bf16": 1e-2}[conv.dtype]
    assert np.abs(got.reshape(want.shape) - want).max() <= tolerance * max(1.0, np.abs(want).max())


def test_the_3d_form_is_the_default_and_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import argus.kernels.conv as lib

    conv = THREE_D[0][1]
    conv_plan.cache_clear()
    assert implicit_refusal(conv) is None and conv_plan(conv).implicit is not None
    monkeypatch.setattr(lib, "IMPLICIT_3D", False)
    conv_plan.cache_clear()
    try:
        assert "IMPLICIT_3D" in (implicit_refusal(conv) or "")
        assert conv_plan(conv).gemm is not None  # the gather path
    finally:
        conv_plan.cache_clear()


def test_3d_kernels_verify_and_compile(implicit_3d: None) -> None:
    from argus.backend.cuda.codegen import compile_kernel

    # an f32 3x3x3 convolution (81 K-steps: `unknown` with the split planes at t * N + n), a bf16 one, and a phase
    # of a strided 3-d transposed one
    f32 = conv_plan(_forward3(2, 64, 64, (5, 9, 9), (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), True))
    forward = conv_plan(_forward3(2, 64, 128, (5, 9, 9), (3, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1), False, "bf16"))
    phased = conv_plan(_conv(3, 2, 32, 64, (5, 9, 9), (3,), (2,), (1,), op=(1,)))
    assert f32.implicit is not None and f32.implicit.BLOCKS == 0  # 3-d is not persistent

    def implicit(plan):  # noqa: ANN001, ANN202 - the implicit kernel (split-K's reduction after it, few tiles)
        return next(k for k in plan.kernels() if k.name == "conv_implicit_gemm")

    kernels = [implicit(forward), implicit(f32), phased.kernels()[2]]
    for kernel in kernels:
        result = verify(kernel)
        assert result.verdict.value == "verified" and not result.unknowns, result.codes()
    mix = compile_kernel(kernels[0]).instruction_mix()
    assert mix["HGMMA"] > 0 and mix["UTMALDG"] > 0


def test_staged_weights_are_kept_least_recently_used_first_out(monkeypatch: pytest.MonkeyPatch) -> None:
    import argus.kernels.conv as lib

    monkeypatch.setattr(lib, "_STAGED", {})
    monkeypatch.setattr(lib, "_STAGED_MAX", 3)
    made: list[str] = []

    def stage(key: str) -> str:
        return lib._staged((key,), lambda: made.append(key) or key.upper())

    assert [stage(k) for k in "abc"] == ["A", "B", "C"]
    assert stage("a") == "A"  # a hit: not made again, and now the most recently used
    stage("d")  # b, the least recently used, goes
    assert stage("a") == "A" and stage("c") == "C" and made == list("abcd")
    stage("b")
    assert made == list("abcdb") and list(lib._STAGED) == [("a",), ("c",), ("b",)]  # d was the least recent


def test_a_transposed_convolution_of_3_f32_channels_takes_the_phases() -> None:
    """FEW_CHANNELS sends a forward f32 convolution of 3 channels to the gather path, not a stride phase (the gather
    path of a transposed convolution upsamples: level 2's 96 ran 1.83x faster on the phases, session 24)."""
    conv = _conv(3, 1, 3, 16, (3, 4, 5), (3,), (2,), (1,))
    assert transposed_refusal(conv) is None
    plan = conv_plan(conv)
    assert plan.phases is not None and {p.config.BK for p in plan.phases if p.config is not None} == {16}
    forward = max((p.conv for p in plan.phases if p.conv is not None), key=lambda c: c.window)  # 2x2x2 taps
    assert "f32 with 3 channels" in (implicit_refusal(forward) or "")
    assert implicit_refusal(forward, phase=True) is None
