"""Running generated kernels: load a compiled kernel, check arguments, launch on the current torch stream.

Public API:

* `load(compiled)` -> `LoadedKernel` (``compiled`` from `argus.backend.cuda.codegen.compile_kernel`);
  `build(kernel_fn, **params)` traces, generates, compiles and loads in one step;
* ``LoadedKernel(*tensors, stream=None)`` launches on torch CUDA tensors (or any object with
  ``__cuda_array_interface__``, e.g. CuPy arrays) in the kernel's parameter order; shape symbols are read
  off the tensors; `LoadedKernel.bind` checks without launching, `LoadedKernel.prepare` checks once for
  repeated launches;
* `run_on_cpu`: a kernel call with ``device="cpu"`` (`argus.lang.call`) runs the interpreter through it (importing
  this package registers it);
* `ArgumentError` (``RUNTIME_ARG_*``, raised before launch, naming the argument) and `LaunchError`
  (``RUNTIME_CUDA_*`` with the kernel's name and CUDA's error string, ``RUNTIME_NO_CUDA``).

Importing this package needs neither a GPU nor torch nor ``cuda.bindings``: the driver is imported on the
first launch, and torch tensors are recognised without importing torch.
"""

from argus.runtime.arguments import Binding, TensorInfo, bind, describe
from argus.runtime.cpu import run_on_cpu  # registers the runner of kernel calls on the CPU (argus.lang.call)
from argus.runtime.errors import ArgumentError, LaunchError
from argus.runtime.loaded import LoadedKernel, PreparedLaunch, build, load

__all__ = [
    "ArgumentError",
    "Binding",
    "LaunchError",
    "LoadedKernel",
    "PreparedLaunch",
    "TensorInfo",
    "bind",
    "build",
    "describe",
    "load",
    "run_on_cpu",
]
