"""Kernel arguments: describing tensors of any framework, and checking them against a kernel before launch.

Owns `describe` (a torch tensor, or any object with ``__cuda_array_interface__`` such as a CuPy array ->
`TensorInfo`) and `bind` (the arguments of one call -> `Binding`: shape-symbol values, pointers, device,
launch configuration), which raises `ArgumentError` naming the offending argument for every mismatch the
generated code cannot handle. Nothing here imports torch or needs a GPU: torch tensors are recognised by
their methods, so the checks run (and are tested) with stand-in objects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from argus.backend.cuda.codegen.source import GeneratedSource, LaunchConfig, TensorParam
from argus.ir.expr import Expr, Var, evaluate
from argus.ir.types import DType, DTypeError, dtype_from_name
from argus.runtime.errors import ArgumentError

#: Largest shape-symbol value: tile coordinates are 32-bit ints in the generated code, and a tile may
#: reach past the end of a dimension by up to its extent.
MAX_EXTENT = 2**30

#: ``__cuda_array_interface__`` type strings (numpy's) -> argus dtypes.
_TYPESTRS = {
    "<f4": "f32",
    "<f2": "f16",
    "<i4": "i32",
    "<i8": "i64",
    "<u4": "u32",
    "|b1": "bool",
    "<V2": None,  # two opaque bytes: bfloat16 when the object's own dtype says so
}


@dataclass(frozen=True)
class TensorInfo:
    """What the runtime needs to know about one argument.

    Attributes:
        kind: ``"torch"`` or ``"cuda_array_interface"``.
        dtype: the argus dtype, or None when it has none.
        dtype_name: the framework's name for the dtype (for messages).
        shape: extents.
        strides: element strides.
        pointer: device address of element 0.
        device: CUDA device ordinal, None when unknown until launch (CUDA array interface), -1 when the
            tensor is not on a CUDA device.
        readonly: the producer marked the memory read-only.
        itemsize: bytes per element.
    """

    kind: str
    dtype: DType | None
    dtype_name: str
    shape: tuple[int, ...]
    strides: tuple[int | float, ...]  # a float when a byte stride is not a whole number of elements
    pointer: int
    device: int | None
    readonly: bool
    itemsize: int

    @property
    def nbytes_span(self) -> int:
        """Bytes from the first to one past the last element (0 for an empty tensor)."""
        if any(s == 0 for s in self.shape):
            return 0
        return (sum((n - 1) * abs(st) for n, st in zip(self.shape, self.strides, strict=True)) + 1) * self.itemsize


def _argus_dtype(name: str) -> DType | None:
    try:
        return dtype_from_name(name)
    except DTypeError:
        return None


def _is_torch_like(x: Any) -> bool:
    return callable(getattr(x, "data_ptr", None)) and callable(getattr(x, "stride", None)) and hasattr(x, "device")


def describe(x: Any) -> TensorInfo | None:
    """`TensorInfo` for a torch tensor or a ``__cuda_array_interface__`` object; None for anything else."""
    if _is_torch_like(x):
        dtype_name = str(x.dtype).removeprefix("torch.")
        device = x.device
        on_cuda = getattr(device, "type", None) == "cuda"
        index = getattr(device, "index", None)
        if on_cuda and index is None:
            index = _torch_current_device()
        itemsize = x.element_size() if callable(getattr(x, "element_size", None)) else 0
        dtype = _argus_dtype(dtype_name)
        return TensorInfo(
            kind="torch",
            dtype=dtype,
            dtype_name=dtype_name,
            shape=tuple(int(s) for s in x.shape),
            strides=tuple(int(s) for s in x.stride()),
            pointer=int(x.data_ptr()),
            device=index if on_cuda else -1,
            readonly=False,
            itemsize=int(itemsize or (dtype.itemsize if dtype else 1)),
        )
    interface = getattr(x, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        typestr = str(interface.get("typestr", ""))
        name = _TYPESTRS.get(typestr)
        own = getattr(x, "dtype", None)
        own_name = getattr(own, "name", None) or (str(own) if own is not None else None)
        dtype = _argus_dtype(name) if name else (_argus_dtype(own_name) if own_name else None)
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else (dtype.itemsize if dtype else 1)
        shape = tuple(int(s) for s in interface.get("shape", ()))
        strides_bytes = interface.get("strides")
        if strides_bytes is None:
            strides = _row_major(shape)
        else:
            strides = tuple(int(s) // itemsize if int(s) % itemsize == 0 else int(s) / itemsize for s in strides_bytes)
        pointer, readonly = interface.get("data", (0, False))
        return TensorInfo(
            kind="cuda_array_interface",
            dtype=dtype,
            dtype_name=own_name or typestr,
            shape=shape,
            strides=strides,
            pointer=int(pointer or 0),
            device=None,
            readonly=bool(readonly),
            itemsize=itemsize,
        )
    return None


def _torch_current_device() -> int:
    import sys

    torch = sys.modules.get("torch")
    return int(torch.cuda.current_device()) if torch is not None else 0


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


#: Elements a kernel generated with 32-bit global offsets addresses (`GeneratedSource.wide`): every offset of an
#: element inside a tensor of at most this many elements fits in an ``int``.
NARROW_ELEMENTS = 2**31


def wide_tensor(infos: Sequence[TensorInfo], names: Sequence[str]) -> str | None:
    """The first tensor argument (``"X (3200000000 elements)"``) whose elements a kernel with 32-bit global offsets
    cannot address (more than `NARROW_ELEMENTS` elements, or a span in memory that long), or None."""
    for info, name in zip(infos, names, strict=True):
        count = max(math.prod(info.shape), info.nbytes_span // max(info.itemsize, 1))
        if count > NARROW_ELEMENTS:
            return f"{name} ({count} elements)"
    return None


@dataclass(frozen=True)
class Binding:
    """One call's arguments, checked: what `LoadedKernel` launches with."""

    shapes: dict[str, int]
    pointers: tuple[int, ...]
    infos: tuple[TensorInfo, ...]
    device: int | None
    config: LaunchConfig
    torch_stream_device: int | None  # the device whose current torch stream to use (torch tensors only)
    tensor_maps: tuple[Any, ...] = ()  # `argus.runtime.tensor_maps.TensorMapSpec`, in parameter order


def bind(generated: GeneratedSource, args: tuple[Any, ...]) -> Binding:
    """Check `args` against `generated`'s parameters and bind the shape symbols (see the module docstring
    for what is checked). Raises `ArgumentError`."""
    kernel = generated.kernel_name

    def fail(code: str, message: str, argument: str | None = None, **kw: Any) -> ArgumentError:
        where = f"argument {argument!r} of {kernel}" if argument else kernel
        return ArgumentError(code, f"{where}: {message}", kernel=kernel, argument=argument, **kw)

    params = generated.tensors
    if len(args) != len(params):
        raise fail(
            "RUNTIME_ARG_COUNT",
            f"takes {len(params)} tensors ({', '.join(p.name for p in params)}), got {len(args)}",
            hint="pass the tensors positionally in the kernel's parameter order; shape symbols are inferred",
        )
    infos: list[TensorInfo] = []
    for p, x in zip(params, args, strict=True):
        info = describe(x)
        if info is None:
            raise fail(
                "RUNTIME_ARG_TYPE",
                f"expected a CUDA tensor (torch, or an object with __cuda_array_interface__), got {type(x).__name__}",
                p.name,
                hint="move host data to the GPU first, e.g. torch.as_tensor(a, device='cuda')",
            )
        if info.device == -1:
            raise fail(
                "RUNTIME_ARG_DEVICE",
                "the tensor is not on a CUDA device",
                p.name,
                actual=str(getattr(x, "device", "?")),
                hint="call .cuda() or create it with device='cuda'",
            )
        _check_tensor(p, info, fail)
        infos.append(info)
    shapes = _bind_shapes(generated, infos, fail)
    _check_layout(params, infos, fail)
    devices = {i.device for i in infos if i.device is not None}
    if len(devices) > 1:
        raise fail(
            "RUNTIME_ARG_DEVICE",
            "the tensors are on different devices",
            actual=", ".join(f"{p.name}: cuda:{i.device}" for p, i in zip(params, infos, strict=True)),
            hint="move every argument to the same GPU",
        )
    _check_aliasing(params, infos, fail)
    env: dict[Var, int] = generated.shape_env(shapes)
    for n, assumption in enumerate(generated.assumptions):
        if not bool(evaluate(assumption, env)):
            declared = n >= len(generated.shape_params)  # after the implicit `1 <= size` of each shape symbol
            raise fail(
                "RUNTIME_ASSUMPTION",
                f"the shapes {shapes} violate the kernel's assumption {assumption}"
                + (
                    " (declared with T.assume: the kernel is verified and generated for those sizes only)"
                    if declared
                    else ""
                ),
                hint="pass sizes that satisfy it (pad the tensors), or use a kernel written for these sizes"
                if declared
                else "empty tensors need no launch; other shapes need a kernel traced for them",
            )
    try:
        config = generated.launch_config(shapes)
    except ValueError as err:
        raise fail("RUNTIME_LAUNCH_CONFIG", str(err)) from None
    device = next(iter(devices)) if devices else None
    torch_device = device if any(i.kind == "torch" for i in infos) else None
    from argus.runtime.tensor_maps import plan

    by_name = {p.name: i for p, i in zip(params, infos, strict=True)}
    maps = tuple(plan(m, by_name[m.tensor], kernel) for m in generated.tensor_maps)
    return Binding(shapes, tuple(i.pointer for i in infos), tuple(infos), device, config, torch_device, maps)


def _check_tensor(p: TensorParam, info: TensorInfo, fail: Any) -> None:
    if info.dtype is None or info.dtype != p.dtype:
        raise fail(
            "RUNTIME_ARG_DTYPE",
            f"dtype {info.dtype_name}, the kernel takes {p.dtype.name}",
            p.name,
            requirement=p.dtype.name,
            actual=info.dtype_name,
            hint=f"convert it, e.g. x.to(torch.{_torch_name(p.dtype)})",
        )
    if len(info.shape) != p.rank:
        raise fail(
            "RUNTIME_ARG_RANK",
            f"{len(info.shape)} dimensions, the kernel takes {p.rank} ({_shape_text(p.shape)})",
            p.name,
            requirement=_shape_text(p.shape),
            actual=info.shape,
        )
    if info.pointer % p.alignment:
        raise fail(
            "RUNTIME_ARG_ALIGNMENT",
            f"data pointer {info.pointer:#x} is not {p.alignment}-byte aligned; the kernel's vector accesses need it",
            p.name,
            requirement=f"address % {p.alignment} == 0",
            actual=f"address % {p.alignment} == {info.pointer % p.alignment}",
            hint="pass a tensor that starts at an allocation boundary (e.g. .contiguous() of a copy), not a "
            "view offset into another tensor",
        )
    if info.readonly and p.written:
        raise fail("RUNTIME_ARG_READONLY", "the kernel writes it, but its memory is marked read-only", p.name)


def _torch_name(dtype: DType) -> str:
    names = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "i32": "int32", "i64": "int64", "bool": "bool"}
    names.update(e4m3="float8_e4m3fn", e5m2="float8_e5m2")
    return names.get(dtype.name, dtype.name)


def _shape_text(shape: tuple[Expr | int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _bind_shapes(generated: GeneratedSource, infos: list[TensorInfo], fail: Any) -> dict[str, int]:
    values: dict[str, tuple[int, str]] = {}
    for p, info in zip(generated.tensors, infos, strict=True):
        for axis, (dim, extent) in enumerate(zip(p.shape, info.shape, strict=True)):
            if isinstance(dim, int):
                if dim != extent:
                    raise fail(
                        "RUNTIME_ARG_SHAPE",
                        f"dimension {axis} is {extent}, the kernel was generated for {dim}",
                        p.name,
                        requirement=_shape_text(p.shape),
                        actual=info.shape,
                    )
                continue
            if isinstance(dim, Var):
                if dim.name in values and values[dim.name][0] != extent:
                    first, where = values[dim.name]
                    raise fail(
                        "RUNTIME_ARG_SHAPE",
                        f"dimension {axis} gives {dim.name} = {extent}, but {where} gives {dim.name} = {first}",
                        p.name,
                        requirement=f"every {dim.name} the same",
                        actual=info.shape,
                        hint=_transposed_hint(p, info, values),
                    )
                if extent > MAX_EXTENT:
                    raise fail(
                        "RUNTIME_ARG_RANGE",
                        f"{dim.name} = {extent} is too large for the kernel's 32-bit tile coordinates",
                        p.name,
                        requirement=f"{dim.name} <= {MAX_EXTENT}",
                        actual=extent,
                    )
                values.setdefault(dim.name, (extent, f"{p.name}'s dimension {axis}"))
    for p, info in zip(generated.tensors, infos, strict=True):
        env = {s.var: values[s.name][0] for s in generated.shape_params if s.name in values}
        for axis, (dim, extent) in enumerate(zip(p.shape, info.shape, strict=True)):
            if isinstance(dim, Expr) and not isinstance(dim, Var):
                try:
                    want = int(evaluate(dim, env))
                except KeyError:
                    continue
                if want != extent:
                    raise fail(
                        "RUNTIME_ARG_SHAPE",
                        f"dimension {axis} is {extent}, the kernel needs {dim} = {want}",
                        p.name,
                        actual=info.shape,
                    )
    missing = [s.name for s in generated.shape_params if s.name not in values]
    if missing:
        raise fail("RUNTIME_ARG_SHAPE", f"no tensor dimension gives shape symbol(s) {', '.join(missing)}")
    return {name: v for name, (v, _) in values.items()}


def _transposed_hint(p: TensorParam, info: TensorInfo, values: dict[str, tuple[int, str]]) -> str | None:
    """A hint when a 2-d argument fits the sizes bound so far once transposed: it is given in the other
    orientation (e.g. B as (N, K) to a kernel that takes (K, N))."""
    if p.rank != 2 or not all(isinstance(d, Var) for d in p.shape):
        return None
    swapped = tuple(reversed(info.shape))
    if any(d.name in values and values[d.name][0] != e for d, e in zip(p.shape, swapped, strict=True)):
        return None
    want = _shape_text(p.shape)
    return (
        f"{p.name} looks transposed: the kernel takes it as {want}; pass {p.name}.T.contiguous(), or use the "
        "kernel's variant for the other operand layout (e.g. B_MAJOR / A_MAJOR of the Hopper GEMMs)"
    )


def _check_layout(params: tuple[TensorParam, ...], infos: list[TensorInfo], fail: Any) -> None:
    for p, info in zip(params, infos, strict=True):
        want = _row_major(info.shape)
        for axis, (extent, have, need) in enumerate(zip(info.shape, info.strides, want, strict=True)):
            if extent > 1 and have != need:
                raise fail(
                    "RUNTIME_ARG_STRIDES",
                    f"strides {info.strides} (in elements) are not row-major contiguous; dimension {axis} "
                    f"has stride {have}, the kernel indexes it with {need}",
                    p.name,
                    requirement=f"row-major strides {want}",
                    actual=info.strides,
                    hint="pass x.contiguous()",
                )


def _check_aliasing(params: tuple[TensorParam, ...], infos: list[TensorInfo], fail: Any) -> None:
    spans = [(i.pointer, i.pointer + i.nbytes_span) for i in infos]
    for a, (pa, (lo_a, hi_a)) in enumerate(zip(params, spans, strict=True)):
        if not pa.written or hi_a == lo_a:
            continue
        for b, (pb, (lo_b, hi_b)) in enumerate(zip(params, spans, strict=True)):
            if a == b or hi_b == lo_b:
                continue
            if (
                lo_a < hi_b
                and lo_b < hi_a
                and (infos[a].device == infos[b].device or None in (infos[a].device, infos[b].device))
            ):
                raise fail(
                    "RUNTIME_ARG_ALIAS",
                    f"the kernel writes it, and its memory overlaps argument {pb.name!r}",
                    pa.name,
                    hint="outputs must not alias other arguments (the generated code assumes __restrict__); "
                    "pass a separate output tensor",
                )
