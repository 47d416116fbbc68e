"""Every library kernel runs on the lane-level interpreter and matches its reference, at its
default shape and at a shape that is not a multiple of its tiles."""

from __future__ import annotations

import numpy as np
import pytest

from argus.interp import InterpError, interpret
from argus.kernels import all_kernels, get_kernel
from argus.kernels.registry import KernelLookupError, check_on_interpreter

KERNELS = [k.name for k in all_kernels()]


@pytest.mark.parametrize("name", KERNELS)
def test_default_shape(name: str) -> None:
    entry = get_kernel(name)
    assert check_on_interpreter(entry, entry.default_shape) <= entry.tolerance


@pytest.mark.parametrize("name", KERNELS)
def test_partial_tiles(name: str) -> None:
    entry = get_kernel(name)
    assert check_on_interpreter(entry, entry.partial_shape, seed=1) <= entry.tolerance


def test_library_has_the_first_kernels() -> None:
    assert {"vector_add", "softmax", "layer_norm", "gemm_mma_sync", "gemm_cp_async"} <= set(KERNELS)


def test_unknown_kernel_suggests_a_name() -> None:
    with pytest.raises(KernelLookupError, match="did you mean 'softmax'"):
        get_kernel("sofmax")


def test_argument_checks() -> None:
    from argus.kernels.elementwise import vector_add

    with pytest.raises(InterpError, match="3 tensors"):
        interpret(vector_add, np.zeros(8), np.zeros(8))
    with pytest.raises(InterpError) as e:
        interpret(vector_add, np.zeros(8), np.zeros(9), np.zeros(8))
    assert e.value.code == "INTERP_SHAPE_MISMATCH"
    with pytest.raises(InterpError) as e:
        interpret(vector_add, np.zeros((2, 4)), np.zeros(8), np.zeros(8))
    assert e.value.code == "INTERP_ARGUMENT_RANK"


@pytest.mark.parametrize("name", KERNELS)
def test_pytorch_reference_agrees(name: str) -> None:
    """Each kernel's PyTorch reference (torch's own softmax, layer_norm, scaled_dot_product_attention,
    matmul) agrees with the numpy reference, and the interpreted kernel matches it."""
    from argus.kernels.registry import torch_check

    entry = get_kernel(name)
    assert entry.torch_reference is not None
    ref_gap, kernel_gap = torch_check(entry, entry.partial_shape, seed=2)
    assert ref_gap < 1e-9
    assert kernel_gap <= entry.tolerance
