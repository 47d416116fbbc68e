"""TMA tensor maps: from a kernel's `TensorMapParam`s and one call's tensors to encoded ``CUtensorMap`` bytes.

`plan` (no GPU, no driver) turns a tensor map parameter and the tensor it describes into a `TensorMapSpec`
(TMA-order dimensions, byte strides, box, swizzle, base address) and checks it with
`argus.atoms.tma.TmaCopyAtom.diagnose` (box extents, inner box bytes, swizzle span, 16-byte strides and base
address, ...), raising `ArgumentError` ``RUNTIME_ARG_TMA`` that names the argument and the rule. `encode`
calls ``cuTensorMapEncodeTiled`` (interleave none, L2 promotion `L2_PROMOTION_BYTES`, out-of-bounds elements filled with
zeros, as the interpreter's TMA loads) and returns the 128 opaque bytes the kernel takes as a
``const __grid_constant__`` parameter.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from argus.atoms.swizzle import TENSOR_MAP_SWIZZLE
from argus.atoms.tma import TMA_GLOBAL_STRIDE_MULTIPLE, Im2colBox, diagnose_im2col, tma_load
from argus.backend.cuda.codegen.source import TensorMapParam
from argus.ir.types import DType
from argus.runtime.errors import ArgumentError

#: Bytes of a ``CUtensorMap``.
TENSOR_MAP_BYTES = 128
#: How far the L2 widens a tiled map's requests, in bytes (0: not at all; 64, 128 or 256), read at each encode: an
#: A/B switch for benchmarks (`benchmarks/gemm_l2_promotion.py`: 128 measured best or tied on an H200)
L2_PROMOTION_BYTES = 128
#: ``CUtensorMapL2promotion``'s values by those bytes (none, 64, 128, 256 B)
_PROMOTION_VALUES = {0: 0, 64: 1, 128: 2, 256: 3}

_DATA_TYPES = {
    "bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    "f16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
    "f32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
    "i32": "CU_TENSOR_MAP_DATA_TYPE_INT32",
    "u32": "CU_TENSOR_MAP_DATA_TYPE_UINT32",
    # FP8: TMA copies bytes; the element type matters to the MMA only
    "e4m3": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "e5m2": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
}


@dataclass(frozen=True)
class TensorMapSpec:
    """What ``cuTensorMapEncodeTiled`` takes for one tensor map (dimension 0 innermost)."""

    param: TensorMapParam
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # bytes, dimensions 1..rank-1
    box: tuple[int, ...]
    swizzle: int


def canonical_strides(dims: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of dimensions 1.. (TMA order) with each dimension of extent one given the stride it would
    have contiguous, rounded up to TMA's stride multiple: such a dimension is never stepped (a box past it reads
    zeros), and PyTorch leaves its stride anything (``x.T`` of a (K, 1) matrix, a batch of one row transposed:
    stride 1, which TMA refuses)."""
    out: list[int] = []
    inner = itemsize
    for j, stride in enumerate(strides, start=1):
        if dims[j] == 1:
            whole = inner * dims[j - 1]
            stride = -(-whole // TMA_GLOBAL_STRIDE_MULTIPLE) * TMA_GLOBAL_STRIDE_MULTIPLE
        out.append(stride)
        inner = stride
    return tuple(out)


def plan(param: TensorMapParam, info: Any, kernel: str) -> TensorMapSpec:
    """The `TensorMapSpec` of `param` for the tensor `info` (`argus.runtime.TensorInfo`, row-major: checked
    by `bind` before), checked against TMA's rules. Raises `ArgumentError` ``RUNTIME_ARG_TMA``."""
    rank = len(param.box)
    shape = tuple(int(s) for s in info.shape)
    if param.im2col is not None:
        return plan_im2col(  # type: ignore[return-value] - `encode` takes either
            param.dtype,
            int(info.pointer),
            shape,
            tuple(int(s) for s in info.strides),
            param.im2col,
            param.swizzle,
            f"argument {param.tensor!r} of {kernel}",
        )
    if len(shape) != rank:
        raise ArgumentError(
            "RUNTIME_ARG_TMA",
            f"argument {param.tensor!r} of {kernel}: its tensor map is {rank}-d, "
            f"the tensor has {len(shape)} dimensions",
            kernel=kernel,
            argument=param.tensor,
        )
    itemsize = param.dtype.itemsize
    dims = tuple(reversed(shape))
    strides = canonical_strides(dims, tuple(int(s) * itemsize for s in reversed(info.strides))[1:], itemsize)
    problems = tma_load(rank).diagnose(
        dtype=param.dtype,
        global_shape=dims,
        global_strides=strides,
        box=param.box,
        global_address=int(info.pointer),
        swizzle=param.swizzle,
    )
    if problems:
        p = problems[0]
        raise ArgumentError(
            "RUNTIME_ARG_TMA",
            f"argument {param.tensor!r} of {kernel}: cannot describe it for TMA: {p.message}",
            p.hint,
            kernel=kernel,
            argument=param.tensor,
            requirement=p.requirement,
            actual=p.actual,
        )
    return TensorMapSpec(param, int(info.pointer), dims, strides, tuple(param.box), param.swizzle)


def encode(spec: TensorMapSpec, kernel: str) -> bytes:
    """``cuTensorMapEncodeTiled`` of `spec` (``cuTensorMapEncodeIm2col`` of an `Im2colMapSpec`): the 128 bytes of
    the ``CUtensorMap``."""
    from argus.runtime import driver as drv

    if isinstance(spec, Im2colMapSpec):
        return encode_im2col(spec, kernel)

    driver = drv.cuda_driver(kernel)
    rank = len(spec.dims)
    tensor_map = drv.call(
        kernel,
        "cuTensorMapEncodeTiled",
        getattr(driver.CUtensorMapDataType, _DATA_TYPES[spec.param.dtype.name]),
        rank,
        spec.address,
        [driver.cuuint64_t(d) for d in spec.dims],
        [driver.cuuint64_t(s) for s in spec.strides],
        [driver.cuuint32_t(b) for b in spec.box],
        [driver.cuuint32_t(1)] * rank,
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, TENSOR_MAP_SWIZZLE[spec.swizzle]),
        driver.CUtensorMapL2promotion(_PROMOTION_VALUES[L2_PROMOTION_BYTES]),
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    return ctypes.string_at(int(tensor_map.getPtr()), TENSOR_MAP_BYTES)


@dataclass(frozen=True)
class Im2colMapSpec:
    """What ``cuTensorMapEncodeIm2col`` takes for a channels-last tensor (`argus.atoms.tma`, "im2col mode"):
    `dims`, `strides` (bytes, dimensions 1..rank-1) in TMA order, and the traversal `box` (tensor order)."""

    dtype: DType
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: Im2colBox
    swizzle: int


def plan_im2col(
    dtype: DType,
    address: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    box: Im2colBox,
    swizzle: int,
    what: str,
) -> Im2colMapSpec:
    """The `Im2colMapSpec` of a row-major channels-last tensor (`shape` and element `strides` in tensor order, N
    first), checked against the im2col atom's rules and TMA's stride and alignment rules. Raises `ArgumentError`
    ``RUNTIME_ARG_TMA`` naming `what`."""
    itemsize = dtype.itemsize
    dims = tuple(reversed(tuple(int(s) for s in shape)))
    byte_strides = tuple(int(s) * itemsize for s in reversed(strides))[1:]
    problems = list(diagnose_im2col(shape, box, itemsize, swizzle))
    problems += [
        p
        for p in tma_load(len(shape)).diagnose(
            dtype=dtype,
            global_shape=dims,
            global_strides=byte_strides,
            box=(box.channels,) + (1,) * (len(shape) - 1),
            global_address=address,
            swizzle=swizzle,
        )
        if p.code in ("ATOM_TMA_GLOBAL_DIM", "ATOM_TMA_GLOBAL_STRIDE", "ATOM_TMA_GLOBAL_ALIGN")
    ]
    if problems:
        p = problems[0]
        raise ArgumentError(
            "RUNTIME_ARG_TMA",
            f"{what}: cannot describe it for an im2col TMA load: {p.message}",
            p.hint,
            requirement=p.requirement,
            actual=p.actual,
        )
    return Im2colMapSpec(dtype, address, dims, byte_strides, box, swizzle)


def encode_im2col(spec: Im2colMapSpec, kernel: str) -> bytes:
    """``cuTensorMapEncodeIm2col`` of `spec` (interleave none, L2 promotion 128 B, out-of-bounds elements zero):
    the 128 bytes of the ``CUtensorMap``. Corners and traversal strides go in TMA order (W first)."""
    from argus.runtime import driver as drv

    driver = drv.cuda_driver(kernel)
    box = spec.box
    tensor_map = drv.call(
        kernel,
        "cuTensorMapEncodeIm2col",
        getattr(driver.CUtensorMapDataType, _DATA_TYPES[spec.dtype.name]),
        len(spec.dims),
        spec.address,
        [driver.cuuint64_t(d) for d in spec.dims],
        [driver.cuuint64_t(s) for s in spec.strides],
        list(reversed(box.lower)),
        list(reversed(box.upper)),
        box.channels,
        box.pixels,
        [driver.cuuint32_t(s) for s in (1, *reversed(box.strides), 1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, TENSOR_MAP_SWIZZLE[spec.swizzle]),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    return ctypes.string_at(int(tensor_map.getPtr()), TENSOR_MAP_BYTES)
