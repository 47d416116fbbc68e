"""The thin layer over the CUDA driver API (``cuda.bindings.driver``): imported on first use, every call
checked, every failure raised as `LaunchError` with the kernel's name and CUDA's error name and string.

Owns the per-device primary contexts (retained once, pushed around each module load and launch when
another context is current, so a torch program's own current context is left as it was) and the
per-context module cache (a cubin is loaded once per context).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from argus.runtime.errors import LaunchError

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"driver": None, "primary": {}}


def cuda_driver(kernel: str = "") -> Any:
    """``cuda.bindings.driver``, initialised (``cuInit``); `LaunchError` ``RUNTIME_NO_CUDA`` when the
    bindings, the driver or a GPU are missing."""
    with _LOCK:
        if _STATE["driver"] is not None:
            return _STATE["driver"]
        try:
            from cuda.bindings import driver
        except ImportError as err:
            raise LaunchError(
                "RUNTIME_NO_CUDA",
                f"{kernel or 'argus.runtime'}: cuda.bindings is not installed ({err})",
                "pip install 'argus-kernels[cuda]'",
                kernel=kernel,
            ) from None
        try:
            (result,) = driver.cuInit(0)
        except Exception as err:  # noqa: BLE001 - the bindings raise their own types when libcuda is absent
            raise LaunchError(
                "RUNTIME_NO_CUDA",
                f"{kernel or 'argus.runtime'}: the CUDA driver could not be loaded: {err}",
                "run on a machine with an NVIDIA GPU and driver",
                kernel=kernel,
                call="cuInit",
            ) from None
        _check(driver, result, "cuInit", kernel)
        _STATE["driver"] = driver
        return driver


def _error_text(driver: Any, result: Any) -> tuple[str, str]:
    try:
        _, name = driver.cuGetErrorName(result)
        _, text = driver.cuGetErrorString(result)
        name = name.decode() if isinstance(name, bytes) else str(name)
        text = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001
        name, text = str(result), "unknown error"
    return name, text


def _check(driver: Any, result: Any, call: str, kernel: str) -> None:
    if result == driver.CUresult.CUDA_SUCCESS:
        return
    name, text = _error_text(driver, result)
    raise LaunchError(
        f"RUNTIME_CUDA_{call.removeprefix('cu').upper()}",
        f"{kernel}: {call} failed: {name}: {text}",
        _hint(name),
        kernel=kernel,
        call=call,
        cuda_error=name,
        cuda_message=text,
    )


def _hint(name: str) -> str | None:
    if name in ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE"):
        return "argus compiles for sm_90a: the kernel runs on Hopper GPUs (H100, H200) only"
    if name in ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED"):
        return (
            "the context is now unusable; the error may come from this kernel or from earlier asynchronous work "
            "on the stream (run with CUDA_LAUNCH_BLOCKING=1, or compute-sanitizer, to find which)"
        )
    if name == "CUDA_ERROR_OUT_OF_MEMORY" or name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES":
        return "the kernel needs more shared memory or registers than the device allows at this block size"
    return None


def call(kernel: str, name: str, *args: Any) -> Any:
    """``driver.<name>(*args)`` with its result checked; returns the values after the status (None,
    one value, or a tuple)."""
    driver = cuda_driver(kernel)
    out = getattr(driver, name)(*args)
    result, values = (out[0], out[1:]) if isinstance(out, tuple) else (out, ())
    _check(driver, result, name, kernel)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def primary_context(device: int, kernel: str) -> Any:
    """The primary context of `device`, retained once per process."""
    with _LOCK:
        cached = _STATE["primary"].get(device)
    if cached is not None:
        return cached
    dev = call(kernel, "cuDeviceGet", device)
    context = call(kernel, "cuDevicePrimaryCtxRetain", dev)
    with _LOCK:
        _STATE["primary"].setdefault(device, context)
        return _STATE["primary"][device]


class ContextScope:
    """``with ContextScope(device, kernel):`` makes `device`'s primary context current for the block
    (pushing it only when another one is current) and restores the previous state after."""

    def __init__(self, device: int, kernel: str) -> None:
        self.device = device
        self.kernel = kernel
        self.pushed = False
        self.context: Any = None

    def __enter__(self) -> Any:
        self.context = primary_context(self.device, self.kernel)
        current = call(self.kernel, "cuCtxGetCurrent")
        if current is None or int(current) != int(self.context):
            call(self.kernel, "cuCtxPushCurrent", self.context)
            self.pushed = True
        return self.context

    def __exit__(self, *exc: Any) -> None:
        if self.pushed:
            call(self.kernel, "cuCtxPopCurrent")


def pointer_device(pointer: int, kernel: str) -> int:
    """The device ordinal a device pointer belongs to (for ``__cuda_array_interface__`` arguments)."""
    driver = cuda_driver(kernel)
    attribute = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return int(call(kernel, "cuPointerGetAttribute", attribute, pointer))


def kernel_arguments(pointers: tuple[int, ...], ints: tuple[int, ...], tensor_maps: tuple[bytes, ...] = ()) -> Any:
    """The ``kernelParams`` of ``cuLaunchKernel``: device pointers, then 32-bit ints, then 128-byte tensor maps.
    Without tensor maps, in cuda.bindings' (values, ctypes) form; with them, a `KernelParams` (a ``void**``
    array of addresses of host copies of each parameter, which cuda.bindings takes as an int)."""
    values = tuple(pointers) + tuple(ints)
    types = (ctypes.c_void_p,) * len(pointers) + (ctypes.c_int,) * len(ints)
    if not tensor_maps:
        return values, types
    return KernelParams(pointers, ints, tensor_maps)


class KernelParams(int):
    """A ``void**`` kernel-parameter array as an int (its address), keeping the host copies alive."""

    def __new__(cls, pointers: tuple[int, ...], ints: tuple[int, ...], tensor_maps: tuple[bytes, ...]) -> KernelParams:
        holders: list[Any] = [ctypes.c_void_p(p) for p in pointers] + [ctypes.c_int(i) for i in ints]
        for blob in tensor_maps:
            holders.append((ctypes.c_ubyte * len(blob)).from_buffer_copy(blob))
        array = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
        self = super().__new__(cls, ctypes.addressof(array))
        self._keep = (holders, array)
        return self
