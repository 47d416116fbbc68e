"""argus.runtime without a GPU: argument checks on stand-in tensors (torch-like and
``__cuda_array_interface__`` objects), the launch path against a recording stand-in for the CUDA driver, and
the errors a missing or failing driver gives."""

from __future__ import annotations

import subprocess
import sys
import types
from dataclasses import dataclass, field

import pytest

from argus.backend.cuda.codegen import CompiledKernel, compile_kernel
from argus.kernels.registry import get_kernel
from argus.runtime import ArgumentError, LaunchError, LoadedKernel, describe, load
from argus.runtime import driver as drv

# --- stand-ins ---------------------------------------------------------------------------------------------


@dataclass
class FakeDevice:
    type: str = "cuda"
    index: int | None = 0

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"


_ITEMSIZE = {"torch.float32": 4, "torch.bfloat16": 2, "torch.float16": 2, "torch.float64": 8, "torch.int32": 4}


class FakeTorchTensor:
    """What argus.runtime reads of a torch tensor: dtype, shape, stride(), data_ptr(), device, element_size()."""

    def __init__(self, shape, dtype="torch.float32", pointer=0x7F0000000000, strides=None, device=None) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self._pointer = pointer
        self.device = device or FakeDevice()
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.shape):
                strides.append(acc)
                acc *= s
            strides = tuple(reversed(strides))
        self._strides = tuple(strides)

    def data_ptr(self) -> int:
        return self._pointer

    def stride(self) -> tuple[int, ...]:
        return self._strides

    def element_size(self) -> int:
        return _ITEMSIZE[self.dtype]


class FakeCudaArray:
    """A CuPy-like array: only ``__cuda_array_interface__`` (and, for bfloat16, a dtype that says so)."""

    def __init__(self, shape, typestr="<f4", pointer=0x7F0000000000, strides=None, readonly=False, dtype=None):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (pointer, readonly),
            "strides": strides,
            "version": 3,
        }
        if dtype is not None:
            self.dtype = types.SimpleNamespace(name=dtype)


PA, PB, PC = 1 << 40, 2 << 40, 3 << 40  # far apart: no accidental overlap even for huge shapes


@pytest.fixture(scope="module")
def gemm() -> CompiledKernel:
    return compile_kernel(get_kernel("gemm_cp_async").kernel, cache=False)


@pytest.fixture(scope="module")
def loaded(gemm) -> LoadedKernel:
    return load(gemm)


def gemm_args(m=100, n=72, k=80, **overrides):
    args = {
        "A": FakeTorchTensor((m, k), "torch.bfloat16", PA),
        "B": FakeTorchTensor((k, n), "torch.bfloat16", PB),
        "C": FakeTorchTensor((m, n), "torch.float32", PC),
    }
    args.update(overrides)
    return args["A"], args["B"], args["C"]


# --- binding ------------------------------------------------------------------------------------------------


def test_bind_reads_shape_symbols_and_the_launch_configuration(loaded) -> None:
    binding = loaded.bind(*gemm_args())
    assert binding.shapes == {"M": 100, "K": 80, "N": 72}
    assert binding.config.grid == (2, 2, 1) and binding.config.block == (128, 1, 1)
    assert binding.config.shared_bytes == 16384
    assert binding.pointers == (PA, PB, PC)
    assert binding.device == 0
    assert loaded.parameters == ("A", "B", "C") and loaded.name == "gemm_cp_async"


def _error(loaded, *args) -> ArgumentError:
    with pytest.raises(ArgumentError) as info:
        loaded.bind(*args)
    return info.value


def test_wrong_argument_count(loaded) -> None:
    err = _error(loaded, *gemm_args()[:2])
    assert err.code == "RUNTIME_ARG_COUNT" and "takes 3 tensors (A, B, C), got 2" in err.message


def test_wrong_dtype_names_the_argument_and_both_dtypes(loaded) -> None:
    err = _error(loaded, *gemm_args(C=FakeTorchTensor((100, 72), "torch.float16", PC)))
    assert err.code == "RUNTIME_ARG_DTYPE" and err.argument == "C"
    assert "argument 'C' of gemm_cp_async: dtype float16, the kernel takes f32" in err.message
    err = _error(loaded, *gemm_args(A=FakeTorchTensor((100, 80), "torch.float64", PA)))
    assert err.code == "RUNTIME_ARG_DTYPE" and "float64" in err.message and "torch.bfloat16" in err.hint


def test_wrong_rank(loaded) -> None:
    err = _error(loaded, *gemm_args(C=FakeTorchTensor((7200,), "torch.float32", PC)))
    assert err.code == "RUNTIME_ARG_RANK" and err.argument == "C" and "(M, N)" in err.message


def test_inconsistent_shape_symbol(loaded) -> None:
    err = _error(loaded, *gemm_args(B=FakeTorchTensor((81, 72), "torch.bfloat16", PB)))
    assert err.code == "RUNTIME_ARG_SHAPE" and err.argument == "B"
    assert "K = 81" in err.message and "K = 80" in err.message


def test_non_contiguous_strides(loaded) -> None:
    transposed = FakeTorchTensor((100, 72), "torch.float32", PC, strides=(1, 100))
    err = _error(loaded, *gemm_args(C=transposed))
    assert err.code == "RUNTIME_ARG_STRIDES" and err.argument == "C" and "contiguous" in err.hint
    # size-1 dimensions may have any stride
    loaded.bind(
        *gemm_args(
            m=1,
            C=FakeTorchTensor((1, 72), "torch.float32", PC, strides=(999, 1)),
            A=FakeTorchTensor((1, 80), "torch.bfloat16", PA),
        )
    )


def test_misaligned_pointer_for_vector_copies(loaded, gemm) -> None:
    assert [t.alignment for t in gemm.generated.tensors] == [16, 16, 8]
    err = _error(loaded, *gemm_args(A=FakeTorchTensor((100, 80), "torch.bfloat16", PA + 8)))
    assert err.code == "RUNTIME_ARG_ALIGNMENT" and err.argument == "A" and "16-byte" in err.message
    loaded.bind(*gemm_args(C=FakeTorchTensor((100, 72), "torch.float32", PC + 8)))  # C needs 8 bytes only


def test_host_tensors_and_other_objects(loaded) -> None:
    err = _error(loaded, *gemm_args(C=FakeTorchTensor((100, 72), device=FakeDevice("cpu", None))))
    assert err.code == "RUNTIME_ARG_DEVICE" and err.argument == "C" and ".cuda()" in err.hint
    err = _error(loaded, *gemm_args(C=[[0.0] * 72] * 100))
    assert err.code == "RUNTIME_ARG_TYPE" and err.argument == "C" and "list" in err.message


def test_tensors_on_different_devices(loaded) -> None:
    other = FakeTorchTensor((100, 72), "torch.float32", PC, device=FakeDevice("cuda", 1))
    err = _error(loaded, *gemm_args(C=other))
    assert err.code == "RUNTIME_ARG_DEVICE" and "different devices" in err.message


def test_an_output_overlapping_an_input(loaded) -> None:
    err = _error(loaded, *gemm_args(C=FakeTorchTensor((100, 72), "torch.float32", PA + 64)))
    assert err.code == "RUNTIME_ARG_ALIAS" and err.argument == "C" and "'A'" in err.message


def test_shapes_outside_the_kernel_assumptions_or_limits(loaded) -> None:
    err = _error(loaded, *gemm_args(m=0))
    assert err.code == "RUNTIME_ASSUMPTION" and "(1 <= M)" in err.message
    err = _error(loaded, *gemm_args(n=2**31))
    assert err.code == "RUNTIME_ARG_RANGE" and err.argument == "B"
    err = _error(loaded, *gemm_args(n=64 * 70000))
    assert err.code == "RUNTIME_LAUNCH_CONFIG" and "grid extent y" in err.message


def test_cuda_array_interface_objects() -> None:
    compiled = compile_kernel(get_kernel("vector_add").kernel, cache=False)
    kernel = load(compiled)
    a, b, c = (FakeCudaArray((3000,), pointer=p) for p in (0x1000, 0x10000, 0x20000))
    binding = kernel.bind(a, b, c)
    assert binding.shapes == {"N": 3000} and binding.config.grid == (3, 1, 1)
    assert binding.device is None  # read from the pointer at launch
    with pytest.raises(ArgumentError) as info:
        kernel.bind(a, b, FakeCudaArray((3000,), pointer=0x20000, readonly=True))
    assert info.value.code == "RUNTIME_ARG_READONLY"
    with pytest.raises(ArgumentError) as info:
        kernel.bind(a, b, FakeCudaArray((3000,), typestr="<f8", pointer=0x20000))
    assert info.value.code == "RUNTIME_ARG_DTYPE"
    strided = FakeCudaArray((3000,), pointer=0x20000, strides=(8,))
    with pytest.raises(ArgumentError) as info:
        kernel.bind(a, b, strided)
    assert info.value.code == "RUNTIME_ARG_STRIDES"


def test_describe_bfloat16_through_the_cuda_array_interface() -> None:
    info = describe(FakeCudaArray((4, 8), typestr="<V2", dtype="bfloat16"))
    assert info is not None and info.dtype is not None and info.dtype.name == "bf16" and info.itemsize == 2
    assert info.strides == (8, 1)
    assert describe(object()) is None


# --- launching against a recording driver -------------------------------------------------------------------


@dataclass
class RecordingDriver:
    """Enough of ``cuda.bindings.driver`` for the launch path; every call is recorded."""

    calls: list = field(default_factory=list)
    fail: str | None = None
    current: int = 0

    def __post_init__(self) -> None:
        self.CUresult = types.SimpleNamespace(CUDA_SUCCESS=0, CUDA_ERROR_INVALID_VALUE=1)
        self.CUfunction_attribute = types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="max_smem")
        self.CUpointer_attribute = types.SimpleNamespace(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL="ordinal")

    def CUstream(self, handle: int) -> tuple:  # noqa: N802 - the driver's name
        return ("stream", handle)

    def __getattr__(self, name: str):
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args):
            self.calls.append((name, args))
            if name == self.fail:
                return (1,)
            results = {
                "cuDeviceGet": (0, 0),
                "cuDevicePrimaryCtxRetain": (0, 0xC0),
                "cuCtxGetCurrent": (0, self.current),
                "cuModuleLoadData": (0, "module"),
                "cuModuleGetFunction": (0, "function"),
                "cuPointerGetAttribute": (0, 0),
                "cuGetErrorName": (0, b"CUDA_ERROR_INVALID_VALUE"),
                "cuGetErrorString": (0, b"invalid argument"),
            }
            return results.get(name, (0,))

        return call

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> RecordingDriver:
    """The recording driver, and a stand-in torch whose current stream on every device is 0x5EED."""
    fake = RecordingDriver()
    monkeypatch.setitem(drv._STATE, "driver", fake)
    monkeypatch.setitem(drv._STATE, "primary", {})
    fake_torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(current_stream=lambda device: types.SimpleNamespace(cuda_stream=0x5EED))
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    return fake


def test_launch_passes_grid_block_shared_memory_stream_and_arguments(gemm, recording) -> None:
    kernel = load(gemm)
    kernel(*gemm_args())
    kernel(*gemm_args())
    names = recording.names()
    assert names.count("cuModuleLoadData") == 1  # once per device
    assert names.count("cuLaunchKernel") == 2
    assert "cuFuncSetAttribute" not in names  # 16 KiB of shared memory needs no opt-in
    assert "cuCtxPushCurrent" in names and names.count("cuCtxPushCurrent") == names.count("cuCtxPopCurrent")
    launch = [args for name, args in recording.calls if name == "cuLaunchKernel"][-1]
    function, gx, gy, gz, bx, by, bz, shared, stream, params, extra = launch
    assert function == "function" and (gx, gy, gz) == (2, 2, 1) and (bx, by, bz) == (128, 1, 1)
    assert shared == 16384 and stream == ("stream", 0x5EED) and extra == 0
    values, ctypes_ = params
    assert values == (PA, PB, PC, 100, 80, 72)  # pointers, then M, K, N
    assert [t.__name__ for t in ctypes_] == ["c_void_p"] * 3 + ["c_int"] * 3


def test_launch_on_an_explicit_stream_and_the_default_stream(gemm, recording, monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    kernel = load(gemm)
    kernel(*gemm_args())
    assert [a for n, a in recording.calls if n == "cuLaunchKernel"][-1][8] == ("stream", 0)
    kernel(*gemm_args(), stream=types.SimpleNamespace(cuda_stream=42))
    assert [a for n, a in recording.calls if n == "cuLaunchKernel"][-1][8] == ("stream", 42)


def test_large_shared_memory_is_opted_in(recording) -> None:
    compiled = compile_kernel(get_kernel("gemm_cp_async").kernel, STAGES=4, BK=64, cache=False)
    assert compiled.generated.shared_bytes == 4 * 2 * 64 * 64 * 2  # 64 KiB
    load(compiled)(*gemm_args())
    (set_attribute,) = [a for n, a in recording.calls if n == "cuFuncSetAttribute"]
    assert set_attribute == ("function", "max_smem", 65536)


def test_a_failing_driver_call_names_the_kernel_and_the_cuda_error(gemm, recording) -> None:
    recording.fail = "cuLaunchKernel"
    with pytest.raises(LaunchError) as info:
        load(gemm)(*gemm_args())
    err = info.value
    assert err.code == "RUNTIME_CUDA_LAUNCHKERNEL"
    assert err.message == "gemm_cp_async: cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE: invalid argument"
    assert err.kernel == "gemm_cp_async" and err.cuda_error == "CUDA_ERROR_INVALID_VALUE"
    assert recording.names().count("cuCtxPushCurrent") == recording.names().count("cuCtxPopCurrent")


def test_no_cuda_bindings_is_a_clear_error(gemm, monkeypatch) -> None:
    monkeypatch.setitem(drv._STATE, "driver", None)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(LaunchError) as info:
        load(gemm)(*gemm_args())
    assert info.value.code == "RUNTIME_NO_CUDA" and "gemm_cp_async" in info.value.message


def test_arguments_are_checked_before_the_driver_is_touched(gemm, recording) -> None:
    with pytest.raises(ArgumentError):
        load(gemm)(*gemm_args(m=0))
    assert recording.calls == []


def test_importing_the_runtime_needs_neither_torch_nor_the_driver() -> None:
    code = (
        "import sys, argus.runtime as r\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert 'cuda.bindings.driver' not in sys.modules, 'driver imported'\n"
        "print(r.load.__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "load"


def test_load_needs_the_generated_source_with_a_bare_module(gemm) -> None:
    with pytest.raises(TypeError, match="GeneratedSource"):
        load(gemm.module)
    kernel = load(gemm.module, gemm.generated)
    assert kernel.cubin == gemm.module.cubin and "gemm_cp_async(A, B, C)" in repr(kernel)
