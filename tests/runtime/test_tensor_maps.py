"""TMA tensor maps on the host, without a GPU: `bind` plans one per `TensorMapParam` from the tensor's pointer,
shape and strides (TMA order: dimension 0 innermost), and refuses tensors TMA cannot describe, naming the
argument and the rule; the launch's parameter array carries the 128 encoded bytes after the ints."""

from __future__ import annotations

import ctypes

import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.kernels.attention import flash_attention_fwd
from argus.kernels.gemm import gemm_warp_specialized
from argus.runtime import ArgumentError, load
from argus.runtime import driver as drv
from tests.runtime.test_arguments import FakeTorchTensor

PA, PB, PC = 1 << 40, 2 << 40, 3 << 40


@pytest.fixture(scope="module")
def gemm():
    return load(compile_kernel(gemm_warp_specialized))


def test_bind_plans_one_tensor_map_per_tma_operand(gemm) -> None:
    a = FakeTorchTensor((200, 136), "torch.bfloat16", PA)
    b = FakeTorchTensor((72, 136), "torch.bfloat16", PB)
    c = FakeTorchTensor((200, 72), "torch.float32", PC)
    binding = gemm.bind(a, b, c)
    assert [(m.param.tensor, m.address, m.dims, m.strides, m.box, m.swizzle) for m in binding.tensor_maps] == [
        ("A", PA, (136, 200), (272,), (64, 128), 128),
        ("B", PB, (136, 72), (272,), (64, 128), 128),
    ]


def test_a_row_tma_cannot_stride_is_refused_naming_the_argument(gemm) -> None:
    from argus.runtime import describe
    from argus.runtime.tensor_maps import plan

    a = FakeTorchTensor((200, 100), "torch.bfloat16", PA)  # 200-byte rows: not a multiple of 16
    b = FakeTorchTensor((72, 100), "torch.bfloat16", PB)
    c = FakeTorchTensor((200, 72), "torch.float32", PC)
    with pytest.raises(ArgumentError) as info:
        gemm.bind(a, b, c)  # the kernel declares T.assume("K % 8 == 0"), checked before the tensor maps
    assert info.value.code == "RUNTIME_ASSUMPTION" and "K % 8" in info.value.message
    with pytest.raises(ArgumentError) as info:
        plan(gemm.generated.tensor_maps[0], describe(a), gemm.name)
    err = info.value
    assert err.code == "RUNTIME_ARG_TMA" and err.argument == "A"
    assert "multiple of 16" in err.message and "200 bytes" in str(err.actual)


def test_a_misaligned_base_is_refused(gemm) -> None:
    a = FakeTorchTensor((200, 136), "torch.bfloat16", PA + 8)
    b = FakeTorchTensor((72, 136), "torch.bfloat16", PB)
    c = FakeTorchTensor((200, 72), "torch.float32", PC)
    with pytest.raises(ArgumentError) as info:
        gemm.bind(a, b, c)
    assert info.value.argument == "A"


def test_squeezed_dimensions_have_box_extent_one() -> None:
    loaded = load(compile_kernel(flash_attention_fwd))
    q, k, v = (FakeTorchTensor((2, 100, 64), "torch.bfloat16", p) for p in (PA, PB, PC))
    o = FakeTorchTensor((2, 100, 64), "torch.float32", 4 << 40)
    binding = loaded.bind(q, k, v, o)
    assert [(m.param.tensor, m.dims, m.strides, m.box) for m in binding.tensor_maps] == [
        ("Q", (64, 100, 2), (128, 12800), (64, 64, 1)),
        ("K", (64, 100, 2), (128, 12800), (64, 64, 1)),
        ("V", (64, 100, 2), (128, 12800), (64, 64, 1)),
    ]


def test_kernel_parameters_with_tensor_maps_are_a_pointer_array() -> None:
    blob = bytes(range(128))
    params = drv.kernel_arguments((0x1000, 0x2000), (7, 9), (blob,))
    array = (ctypes.c_void_p * 5).from_address(int(params))
    assert ctypes.c_void_p.from_address(array[1]).value == 0x2000
    assert ctypes.c_int.from_address(array[3]).value == 9
    assert ctypes.string_at(array[4], 128) == blob
    assert drv.kernel_arguments((1,), (2,)) == ((1, 2), (ctypes.c_void_p, ctypes.c_int))


def test_a_dimension_of_extent_one_takes_a_stride_tma_accepts(gemm) -> None:
    """PyTorch leaves the stride of an extent-one dimension anything: a (1, K) row that is the transpose of a (K, 1)
    column has strides (1, 1), 2 bytes for bf16, which TMA refuses (the random sweep's batched products of one row,
    session 74). The dimension is never stepped, so its tensor map takes the stride it would have contiguous."""
    from argus.runtime.tensor_maps import canonical_strides

    a = FakeTorchTensor((1, 136), "torch.bfloat16", PA, strides=(1, 1))
    b = FakeTorchTensor((72, 136), "torch.bfloat16", PB)
    c = FakeTorchTensor((1, 72), "torch.float32", PC)
    (a_map, _) = gemm.bind(a, b, c).tensor_maps
    assert a_map.dims == (136, 1) and a_map.strides == (272,)
    # (TMA order) a (L, 1, K) batch of rows: the middle extent-one dimension's stride made K's bytes; a real stride
    # past it kept; rounded up to 16 bytes
    assert canonical_strides((136, 1, 5), (2, 2), 2) == (272, 2)
    assert canonical_strides((7, 1, 3), (2, 14), 2) == (16, 14)
