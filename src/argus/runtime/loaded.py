"""`load` and `LoadedKernel`: a compiled argus kernel, callable on CUDA tensors.

``load(compiled)`` is cheap and needs no GPU: the cubin is loaded into a context (``cuModuleLoadData``,
``cuModuleGetFunction``, and the dynamic shared-memory limit raised when the kernel needs more than
48 KiB) on the first call on each device. A call checks its arguments (`argus.runtime.arguments.bind`,
which also plans and checks TMA tensor maps), encodes the tensor maps (`argus.runtime.tensor_maps`), then
launches on the current torch stream of the tensors' device (``torch.cuda.current_stream(device)``),
or on the stream given, or on the legacy default stream (0) when the arguments are not torch tensors.
Launches are asynchronous, as CUDA's are: an error inside the kernel surfaces at the next synchronizing
call. Kernels compute global element offsets in 32 bits; a call on a tensor of more than 2^31 elements runs the
kernel's 64-bit variant, compiled from the traced kernel on the first such call (`LoadedKernel._for`).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from argus.backend.cuda.codegen.source import DEFAULT_DYNAMIC_SHARED_LIMIT, CompiledKernel, GeneratedSource
from argus.runtime import driver as drv
from argus.runtime.arguments import Binding, bind, wide_tensor

#: Launch kernels with group barriers (`GeneratedSource.cooperative`) cooperatively (``cuLaunchKernelEx`` with
#: ``CU_LAUNCH_ATTRIBUTE_COOPERATIVE``): the driver refuses a grid whose blocks cannot all be resident at once
#: (``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``: another process holding SMs, an MPS share, a smaller GPU) rather
#: than letting its blocks wait for ones that never run. A switch for A/B measurements.
COOPERATIVE_LAUNCHES = True
#: A cooperative launch that is also a programmatic dependent of the grid before it (a fused split-K after the copies
#: into padded operands) takes both attributes; off: the cooperative attribute alone, the launch waiting for the grid
#: before it in stream order (its ``griddepcontrol.wait`` then waits for nothing). A switch for A/B measurements.
COOPERATIVE_DEPENDENT = True


def launch_config(driver: Any, config: Any, stream: int, dependent: bool, cooperative: bool) -> Any:
    """``cuLaunchKernelEx``'s config for a launch with attributes: a programmatic dependent of the stream's previous
    grid (`PreparedLaunch.dependent`) and/or cooperative (`COOPERATIVE_LAUNCHES`); with the attribute objects, which
    must outlive the launch."""
    launch = driver.CUlaunchConfig()
    launch.gridDimX, launch.gridDimY, launch.gridDimZ = config.grid
    launch.blockDimX, launch.blockDimY, launch.blockDimZ = config.block
    launch.sharedMemBytes = config.shared_bytes
    launch.hStream = driver.CUstream(stream)
    attributes = []
    if dependent:
        attribute = driver.CUlaunchAttribute()
        attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attribute.value.programmaticStreamSerializationAllowed = 1
        attributes.append(attribute)
    if cooperative:
        attribute = driver.CUlaunchAttribute()
        attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attribute.value.cooperative = 1
        attributes.append(attribute)
    launch.attrs = attributes
    launch.numAttrs = len(attributes)
    return launch, attributes


@dataclass(frozen=True)
class PreparedLaunch:
    """A checked call, ready to be launched again and again without re-checking (for timing loops):
    the same tensors must stay alive and unchanged in shape."""

    kernel: LoadedKernel
    binding: Binding
    stream: int
    tensor_maps: tuple[bytes, ...] = ()  # encoded CUtensorMaps, in parameter order
    #: launched as a programmatic dependent of the stream's previous grid (``cuLaunchKernelEx`` with
    #: ``PROGRAMMATIC_STREAM_SERIALIZATION``): it may start while that grid finishes; its first statement
    #: (``griddepcontrol.wait``, in a kernel generated with ``dependent=True``; `LoadedKernel.prepare` refuses
    #: any other) waits for it to complete before touching memory
    dependent: bool = False

    def launch(self) -> None:
        """Launch again. The first call resolves everything a launch needs (function, packed
        parameters, stream handle, the device's primary context); later calls make one
        ``cuCtxGetCurrent`` and one ``cuLaunchKernel`` (falling back to the general path when another
        context is current)."""
        fast = self.__dict__.get("_fast")
        if fast is None:
            fast = self._resolve()
            object.__setattr__(self, "_fast", fast)
        driver, context, arguments, _keep_alive = fast
        current = driver.cuCtxGetCurrent()[1]
        if current is None or int(current) != context:
            self.kernel._launch(self.binding, self.stream, self.tensor_maps)
            return
        extended = self.dependent or self.cooperative
        if extended:
            result = driver.cuLaunchKernelEx(*arguments)[0]
        else:
            result = driver.cuLaunchKernel(*arguments)[0]
        if result != driver.CUresult.CUDA_SUCCESS:
            drv._check(driver, result, "cuLaunchKernelEx" if extended else "cuLaunchKernel", self.kernel.name)

    @property
    def cooperative(self) -> bool:
        """Launched cooperatively: the kernel has group barriers (`COOPERATIVE_LAUNCHES`)."""
        return COOPERATIVE_LAUNCHES and self.kernel.generated.cooperative

    def _resolve(self) -> tuple[Any, int, tuple[Any, ...], Any]:
        kernel, binding = self.kernel, self.binding
        device = binding.device if binding.device is not None else 0
        config = binding.config
        shape_ints = tuple(binding.shapes[s.name] for s in kernel.generated.shape_params)
        params = drv.kernel_arguments(binding.pointers, shape_ints, self.tensor_maps)
        with drv.ContextScope(device, kernel.name) as context:
            function = kernel._function(device)
        driver = drv.cuda_driver(kernel.name)
        packed = int(params) if isinstance(params, drv.KernelParams) else params
        if self.dependent or self.cooperative:
            dependent = self.dependent and (COOPERATIVE_DEPENDENT or not self.cooperative)
            launch, attributes = launch_config(driver, config, self.stream, dependent, self.cooperative)
            return driver, int(context), (launch, function, packed, 0), (params, launch, attributes)
        arguments = (
            function,
            *config.grid,
            *config.block,
            config.shared_bytes,
            driver.CUstream(self.stream),
            packed,
            0,
        )
        return driver, int(context), arguments, params


class LoadedKernel:
    """A generated kernel's cubin, loaded lazily per device; call it with tensors in parameter order."""

    def __init__(self, generated: GeneratedSource, cubin: bytes, wide: Callable[[], Any] | None = None) -> None:
        """`wide`: compiles the same kernel with 64-bit global offsets (a `CompiledKernel`), for a launch on a tensor
        of more than 2^31 elements (`_for`); None when this kernel has them already or cannot be recompiled."""
        self.generated = generated
        self.cubin = bytes(cubin)
        self._functions: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._prepared: dict[tuple, PreparedLaunch] = {}
        self._compile_wide = wide
        self._wide: LoadedKernel | None = None

    @property
    def name(self) -> str:
        return self.generated.entry

    @property
    def parameters(self) -> tuple[str, ...]:
        """The tensor parameters a call takes, in order (shape symbols are inferred from them)."""
        return tuple(t.name for t in self.generated.tensors)

    def __repr__(self) -> str:
        return f"<argus LoadedKernel {self.name}({', '.join(self.parameters)})>"

    def bind(self, *tensors: Any) -> Binding:
        """Check the arguments and bind the shape symbols without launching (no GPU needed)."""
        return bind(self.generated, tensors)

    def prepare(self, *tensors: Any, stream: Any = None, dependent: bool = False) -> PreparedLaunch:
        """Check the arguments once; `PreparedLaunch.launch` then launches without re-checking. `dependent`:
        launch as a programmatic dependent of the stream's previous grid (`PreparedLaunch.dependent`; for the launches
        of a multi-kernel plan, whose kernels follow each other in one stream).

        Torch tensors whose pointers, shapes, strides, dtypes and devices (and the stream) match an earlier call's
        get that call's prepared launch back: everything the checks and the tensor maps depend on is in that
        signature. Binding costs about 200 us a launch (argument checks, TMA descriptors), so the library's calls
        (`matmul`, `sdpa`, a convolution), which prepare their launches on every call, pay it once per signature."""
        if dependent and not self.generated.dependent:
            from argus.runtime.errors import ArgumentError

            # launched early, a kernel without griddepcontrol.wait could read what the grid before it still writes
            raise ArgumentError(
                "RUNTIME_NOT_DEPENDENT",
                f"{self.generated.kernel_name}: launched as a programmatic dependent (dependent=True), but generated "
                "without the griddepcontrol prologue that waits for the grid before it",
                kernel=self.generated.kernel_name,
            )
        key = launch_signature(tensors, stream)
        key = None if key is None else (dependent, *key)
        if key is not None and (prepared := self._prepared.get(key)) is not None:
            return prepared
        binding = self.bind(*tensors)
        target = self._for(binding)
        if target is not self:  # the 64-bit variant's launch, kept under this call's signature too
            prepared = target.prepare(*tensors, stream=stream, dependent=dependent)
            if key is not None:
                self._remember(key, prepared)
            return prepared
        binding = self._resolve_device(binding)
        maps: tuple[bytes, ...] = ()
        if binding.tensor_maps:
            from argus.runtime.tensor_maps import encode

            with drv.ContextScope(binding.device if binding.device is not None else 0, self.name):
                maps = tuple(encode(spec, self.name) for spec in binding.tensor_maps)
        prepared = PreparedLaunch(self, binding, self._stream(binding, stream), maps, dependent)
        if key is not None:
            self._remember(key, prepared)
        return prepared

    def _remember(self, key: tuple, prepared: PreparedLaunch) -> None:
        if len(self._prepared) >= _PREPARED_CACHE:
            self._prepared.pop(next(iter(self._prepared)))
        self._prepared[key] = prepared

    def __call__(self, *tensors: Any, stream: Any = None) -> None:
        """Launch on `tensors` (torch CUDA tensors or ``__cuda_array_interface__`` objects) in parameter
        order, on `stream` (a handle, a torch stream, or None for the current torch stream).

        A call with torch tensors whose pointers, shapes, strides, dtypes and devices (and the stream)
        match an earlier call reuses that call's checked launch: everything the checks look at is in
        that signature, so the checks would pass again."""
        self.prepare(*tensors, stream=stream).launch()

    # --- internals ---------------------------------------------------------------------------------------
    def _for(self, binding: Binding) -> LoadedKernel:
        """This kernel, or its variant with 64-bit global offsets (compiled on first need) when a tensor of the call
        has more elements than 32-bit offsets address (`argus.runtime.arguments.wide_tensor`)."""
        if self.generated.wide:
            return self
        too_large = wide_tensor(binding.infos, [t.name for t in self.generated.tensors])
        if too_large is None:
            return self
        with self._lock:
            if self._wide is None:
                if self._compile_wide is None:
                    from argus.runtime.errors import ArgumentError

                    raise ArgumentError(
                        "RUNTIME_ARG_WIDE",
                        f"{self.generated.kernel_name}: tensor {too_large} has more elements than its 32-bit offsets "
                        "address, and this LoadedKernel cannot compile the 64-bit variant (it was loaded from a module "
                        "without its traced kernel)",
                        kernel=self.generated.kernel_name,
                    )
                self._wide = load(self._compile_wide())
            return self._wide

    def _resolve_device(self, binding: Binding) -> Binding:
        if binding.device is not None:
            return binding
        devices = {drv.pointer_device(p, self.name) for p in binding.pointers}
        if len(devices) > 1:
            from argus.runtime.errors import ArgumentError

            raise ArgumentError(
                "RUNTIME_ARG_DEVICE",
                f"{self.generated.kernel_name}: the tensors are on different devices ({sorted(devices)})",
                kernel=self.generated.kernel_name,
            )
        return Binding(
            binding.shapes,
            binding.pointers,
            binding.infos,
            devices.pop(),
            binding.config,
            binding.torch_stream_device,
            binding.tensor_maps,
        )

    def _stream(self, binding: Binding, stream: Any) -> int:
        if stream is not None:
            handle = getattr(stream, "cuda_stream", stream)
            return int(handle)
        torch = sys.modules.get("torch")
        if torch is not None and binding.torch_stream_device is not None:
            return int(torch.cuda.current_stream(binding.torch_stream_device).cuda_stream)
        return 0

    def _function(self, device: int) -> Any:
        with self._lock:
            if device in self._functions:
                return self._functions[device]
            module = drv.call(self.name, "cuModuleLoadData", self.cubin)
            function = drv.call(self.name, "cuModuleGetFunction", module, self.name.encode())
            shared = self.generated.shared_bytes
            if shared > DEFAULT_DYNAMIC_SHARED_LIMIT:
                driver = drv.cuda_driver(self.name)
                attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                drv.call(self.name, "cuFuncSetAttribute", function, attribute, shared)
            self._functions[device] = function
            return function

    def _launch(self, binding: Binding, stream: int, tensor_maps: tuple[bytes, ...] = ()) -> None:
        device = binding.device if binding.device is not None else 0
        config = binding.config
        shape_ints = tuple(binding.shapes[s.name] for s in self.generated.shape_params)
        params = drv.kernel_arguments(binding.pointers, shape_ints, tensor_maps)  # kept alive across the launch
        with drv.ContextScope(device, self.name):
            function = self._function(device)
            driver = drv.cuda_driver(self.name)
            if COOPERATIVE_LAUNCHES and self.generated.cooperative:  # the blocks wait for each other: all or none
                launch, _attributes = launch_config(driver, config, stream, False, True)
                packed = int(params) if isinstance(params, drv.KernelParams) else params
                drv.call(self.name, "cuLaunchKernelEx", launch, function, packed, 0)
                return
            drv.call(
                self.name,
                "cuLaunchKernel",
                function,
                *config.grid,
                *config.block,
                config.shared_bytes,
                driver.CUstream(stream),
                int(params) if isinstance(params, drv.KernelParams) else params,
                0,
            )


_PREPARED_CACHE = 64


def launch_signature(tensors: tuple[Any, ...], stream: Any = None) -> tuple | None:
    """What the argument checks depend on, for torch CUDA tensors (None for anything else): the stream (the current
    one for None) and every tensor's address, shape, strides, dtype and device. A library call that keeps its
    prepared launches keys them by it too."""
    torch = sys.modules.get("torch")
    tensor_type = getattr(torch, "Tensor", None)
    if tensor_type is None or not tensors or not all(isinstance(t, tensor_type) and t.is_cuda for t in tensors):
        return None  # the checks report what is wrong with anything else
    if stream is None:
        # the raw handle, as torch's own generated code reads it: a third of this function's time went to building
        # a torch.cuda.Stream object per call (a small solution's host time is most of its call)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        device = tensors[0].device
        if raw is not None and device.index is not None:
            stream_key = int(raw(device.index))
        else:
            stream_key = int(torch.cuda.current_stream(device).cuda_stream)
    else:
        stream_key = int(getattr(stream, "cuda_stream", stream))
    return (stream_key,) + tuple((t.data_ptr(), t.shape, t.stride(), t.dtype, t.device) for t in tensors)


def load(compiled: CompiledKernel | Any, generated: GeneratedSource | None = None) -> LoadedKernel:
    """A `LoadedKernel` for `compiled`: an `argus.backend.cuda.codegen.CompiledKernel`, or a
    `CompiledModule` together with the `GeneratedSource` it was compiled from. Needs no GPU until the
    kernel is called."""
    if isinstance(compiled, CompiledKernel):
        wide = None
        if not compiled.generated.wide and compiled.kernel is not None:
            from argus.backend.cuda.codegen import compile_kernel

            wide = functools.partial(
                compile_kernel,
                compiled.kernel,
                options=compiled.options,
                dependent=compiled.generated.dependent,
                wide=True,
            )
        return LoadedKernel(compiled.generated, compiled.module.cubin, wide)
    if generated is None:
        raise TypeError("load(module) needs the GeneratedSource too: load(module, generated)")
    cubin = getattr(compiled, "cubin", compiled)
    if not isinstance(cubin, bytes | bytearray):
        raise TypeError(f"expected a CompiledKernel, or a CompiledModule/cubin bytes, got {type(compiled).__name__}")
    return LoadedKernel(generated, bytes(cubin))


def build(kernel: Any, *, options: Sequence[str] = (), dependent: bool = False, **params: Any) -> LoadedKernel:
    """Trace (with `params`), generate, compile and load in one step (`dependent`: for programmatic dependent
    launch, `argus.backend.cuda.codegen.generate`)."""
    from argus.backend.cuda.codegen import compile_kernel

    return load(compile_kernel(kernel, options=options, dependent=dependent, **params))
