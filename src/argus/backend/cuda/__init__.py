"""The CUDA backend for NVIDIA Hopper (``sm_90a``): compile, cache and inspect, with no GPU needed.

Owns, today, the compile toolchain (the IR -> CUDA C++ code generator joins it later):

* `compile_cuda` -> `CompiledModule`: NVRTC (``cuda.bindings.nvrtc``) to a cubin and PTX, through an
  on-disk `CubinCache`; failures raise `CompileError` pointing at the DSL line (`argus.backend.cuda.toolchain`,
  `argus.backend.cuda.diagnostics`, `argus.backend.cuda.cache`);
* `inspect_cubin` -> `KernelResources` per kernel, `sass`, `split_sass` and `instruction_mix`
  (`argus.backend.cuda.inspection`);
* `find_toolkit` / `toolchain_info`: where NVRTC, the CUDA headers, cuobjdump and nvdisasm come from — the
  NVIDIA wheels of the ``cuda`` extra, or ``ARGUS_CUDA_HOME`` (`argus.backend.cuda.locate`).

Importing this package does not import ``cuda.bindings``; the first compilation does.
"""

from argus.backend.cuda.cache import CacheEntry, CubinCache, default_cache_dir
from argus.backend.cuda.diagnostics import Diagnostic, derive_line_map, dsl_location
from argus.backend.cuda.errors import BackendError, CompileError, InspectError, ToolchainError
from argus.backend.cuda.inspection import (
    KernelResources,
    PtxasReport,
    inspect_cubin,
    instruction_mix,
    parse_ptxas_log,
    sass,
    split_sass,
)
from argus.backend.cuda.locate import CudaToolkit, find_toolkit
from argus.backend.cuda.toolchain import (
    DEFAULT_ARCH,
    DEFAULT_OPTIONS,
    CompiledModule,
    ToolchainInfo,
    compile_cuda,
    effective_options,
    toolchain_info,
)

__all__ = [
    "DEFAULT_ARCH",
    "DEFAULT_OPTIONS",
    "BackendError",
    "CacheEntry",
    "CompileError",
    "CompiledModule",
    "CubinCache",
    "CudaToolkit",
    "Diagnostic",
    "InspectError",
    "KernelResources",
    "PtxasReport",
    "ToolchainError",
    "ToolchainInfo",
    "compile_cuda",
    "default_cache_dir",
    "derive_line_map",
    "dsl_location",
    "effective_options",
    "find_toolkit",
    "inspect_cubin",
    "instruction_mix",
    "parse_ptxas_log",
    "sass",
    "split_sass",
    "toolchain_info",
]
