"""Fused epilogues on the implicit convolution kernel (`conv_implicit_gemm`'s EPILOGUE, `conv_plan(...,
epilogue=)`, `LibraryConv(epilogue=, epilogue_order=)`): the elementwise chain after a convolution computed on the
f32 tile in the kernel's store, its operands one vector per output channel. Against torch on the CPU interpreter
(forward 2-d f32 and bf16, a 1x1 that would otherwise take the pointwise GEMM, a strided transposed convolution's
phases), the kernel verified, and the paths that cannot apply one refused with a clear error."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from argus.kernels.conv import Conv, ConvError, LibraryConv, conv_plan
from argus.kernels.conv_implicit import conv_split_reduce
from argus.kernels.epilogue import Epilogue
from argus.lang.errors import DSLError
from argus.verify import verify

#: relu(conv * scale) + shift, the scale and shift per output channel: a batch-norm-like affine and an activation
AFFINE_RELU = Epilogue.of("T.maximum(acc * scale, 0.0) + shift", scale="columns", shift="columns")
#: constants only: a clamp and a tanh
CLAMP_TANH = Epilogue(("y = T.minimum(T.maximum(acc, -1.5), 2.0)", "z = T.tanh(y) * 0.5"), "z")

TORCH = {"f32": torch.float32, "bf16": torch.bfloat16}


def _conv(c: int, f: int, size: tuple, k: tuple, s: tuple = (1, 1), p: tuple = (0, 0), bias: bool = True,
          dtype: str = "f32", transposed: bool = False, op: tuple = (0, 0)) -> Conv:  # fmt: skip
    return Conv(2, 2, c, f, 1, (1, *size), (1, *k), (1, *s), (0, *p), (1, 1, 1), bias, dtype, transposed=transposed,
                output_padding=(0, *op))  # fmt: skip


def _apply(ep: Epilogue, y: torch.Tensor, operands: list[torch.Tensor]) -> torch.Tensor:
    if ep is AFFINE_RELU:
        scale, shift = (o.reshape(1, -1, 1, 1) for o in operands)
        return torch.clamp_min(y * scale, 0.0) + shift
    return torch.tanh(torch.clamp(y, -1.5, 2.0)) * 0.5


CASES = {
    "3x3 f32, affine + relu": (_conv(16, 24, (5, 11), (3, 3), p=(1, 1)), AFFINE_RELU),
    "3x3 bf16, clamp + tanh": (_conv(16, 64, (6, 9), (3, 3), bias=False, dtype="bf16"), CLAMP_TANH),
    "1x1 f32 without a bias (else the pointwise GEMM)": (_conv(32, 16, (4, 6), (1, 1), bias=False), AFFINE_RELU),
    "transposed 3x3/2 f32 (four phases)": (_conv(16, 8, (4, 5), (3, 3), (2, 2), (1, 1), transposed=True, op=(1, 1)),
                                           AFFINE_RELU),
}  # fmt: skip


def _check(name: str, device: str) -> None:
    conv, ep = CASES[name]
    gen = torch.Generator(device=device).manual_seed(7)
    dt = TORCH[conv.dtype]
    x = torch.randn(conv.batch, conv.channels, *conv.size[1:], generator=gen, device=device).to(dt)
    shape = (conv.channels, conv.filters) if conv.transposed else (conv.filters, conv.channels)
    w = (torch.randn(*shape, *conv.kernel[1:], generator=gen, device=device) / 4).to(dt)
    b = torch.randn(conv.filters, generator=gen, device=device).to(dt) if conv.bias else None
    operands = [torch.randn(conv.filters, 1, 1, generator=gen, device=device).to(dt) for _ in ep.operands]
    inputs = [x, w, *([b] if b is not None else []), *operands]
    call = LibraryConv("conv", conv, epilogue=ep, epilogue_order=tuple(range(len(inputs) - len(operands), len(inputs))))
    plan = call.plan()
    assert plan.epilogue is ep and (plan.implicit is not None or plan.phases is not None), plan.describe()
    out = call.empty_output(*inputs)
    call(*inputs, out)
    kw = {"stride": conv.stride[1:], "padding": conv.padding[1:]}
    xd, wd, bd = x.double(), w.double(), None if b is None else b.double()
    if conv.transposed:
        y = F.conv_transpose2d(xd, wd, bd, output_padding=conv.output_padding[1:], **kw)
    else:
        y = F.conv2d(xd, wd, bd, **kw)
    if conv.dtype != "f32":  # the kernel rounds its f32 tile once, after the epilogue
        y = y.float()
    want = _apply(ep, y.double(), [o.double() for o in operands])
    tolerance = {"f32": 2e-5, "bf16": 1e-2}[conv.dtype]
    err = float((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0))
    assert err <= tolerance, err


@pytest.mark.parametrize("name", list(CASES))
def test_a_fused_epilogue_matches_torch_on_the_interpreter(name: str) -> None:
    _check(name, "cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
@pytest.mark.parametrize("name", list(CASES))
def test_a_fused_epilogue_matches_torch_on_the_gpu(name: str) -> None:
    _check(name, "cuda")


def test_the_fused_kernel_verifies_and_reads_each_operand_for_its_channels() -> None:
    conv, ep = CASES["3x3 f32, affine + relu"]
    kernels = conv_plan(conv, epilogue=ep).kernels()
    (kernel,) = (k for k in kernels if k.name == "conv_implicit_gemm")
    result = verify(kernel)
    assert result.verdict.value == "verified" and not result.unknowns, result.codes()
    from argus.backend.cuda.codegen import compile_kernel

    mix = compile_kernel(kernel).instruction_mix()
    assert mix["HGMMA"] > 0 and mix["UTMALDG"] > 0


def test_paths_without_the_implicit_kernel_refuse_an_epilogue() -> None:
    depthwise = Conv(2, 1, 16, 16, 16, (1, 9, 9), (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), False, "f32")
    with pytest.raises(ConvError, match="CONV_EPILOGUE_PATH.*depthwise"):
        conv_plan(depthwise, epilogue=AFFINE_RELU)
    few = _conv(3, 16, (6, 6), (3, 3))  # f32 of 3 channels: the gather path
    with pytest.raises(ConvError, match="CONV_EPILOGUE_PATH.*im2col"):
        conv_plan(few, epilogue=CLAMP_TANH)
    # the gather path asked for: no implicit kernel to apply it
    with pytest.raises(ConvError, match="CONV_EPILOGUE_PATH.*im2col"):
        conv_plan(CASES["3x3 f32, affine + relu"][0], implicit=False, epilogue=CLAMP_TANH)
    # a stride wider than the window leaves phases that are the bias alone: no kernel to apply the epilogue there
    sparse = _conv(16, 8, (4, 5), (1, 1), (2, 2), transposed=True)
    with pytest.raises(ConvError, match="CONV_EPILOGUE_PATH"):
        conv_plan(sparse, epilogue=CLAMP_TANH)


def test_operands_are_checked() -> None:
    conv, ep = CASES["3x3 f32, affine + relu"]
    with pytest.raises(ConvError, match="epilogue_order"):
        LibraryConv("conv", conv, epilogue=ep, epilogue_order=(3,))
    call = LibraryConv("conv", conv, epilogue=ep, epilogue_order=(3, 4))
    x = torch.randn(2, 16, 5, 11)
    w, b = torch.randn(24, 16, 3, 3), torch.randn(24)
    with pytest.raises(ConvError, match="one value per output channel"):
        call(x, w, b, torch.randn(24), torch.randn(12), call.empty_output(x, w, b))
    bad = Epilogue.of("acc + r", r="tile")
    with pytest.raises(Exception, match="per-output-channel vectors"):
        conv_plan(conv, epilogue=bad).kernels()
    # split along K, the reduction applies the epilogue: it refuses it too
    with pytest.raises(DSLError, match="per-output-channel vectors"):
        conv_split_reduce.trace(SPLITS=2, EPILOGUE=bad)


def test_no_epilogue_keeps_the_kernel_s_parameters() -> None:
    conv, _ = CASES["3x3 f32, affine + relu"]
    assert dict(conv_plan(conv).kernels()[-1].params)["EPILOGUE"] is None
    assert conv_plan(conv).epilogue is None
