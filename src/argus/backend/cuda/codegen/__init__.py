"""The CUDA code generator: argus IR -> one CUDA C++ translation unit (with inline PTX) per kernel
specialization.

Public API:

* `generate(kernel)` -> `GeneratedSource`: the source text, the entry symbol, the parameters in order
  (tensor pointers, then the shape symbols as ``int``), the launch configuration as a function of the
  shape symbols (`GeneratedSource.launch_config`), the dynamic shared memory, and what each tensor
  must satisfy (dtype, row-major strides, alignment);
* `compile_kernel(kernel)` -> `CompiledKernel`: `generate`, then `argus.backend.cuda.compile_cuda` for
  ``sm_90a`` (cached on disk); `argus.runtime.load` takes the result;
* `CodegenError` (``CODEGEN_UNSUPPORTED`` for constructs not lowered yet, pointing at the DSL line).

Modules: `cexpr` (C expressions, layouts as C), `placement` (per-thread facts derived from layouts by
enumeration), `prelude` (device helpers), `emitter` (one rule per IR statement), `hopper` (the rules for warp
roles, mbarriers, TMA loads and ``wgmma``), `source` (the result, with the TMA tensor maps the runtime encodes).
The generated code's semantics are the interpreter's (`argus.interp`); the emitter's docstring says
how each IR concept becomes CUDA.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus.backend.cuda.codegen.emitter import Emitter
from argus.backend.cuda.codegen.errors import CodegenError
from argus.backend.cuda.codegen.source import (
    CompiledKernel,
    GeneratedSource,
    LaunchConfig,
    ShapeParam,
    TensorMapParam,
    TensorParam,
)
from argus.ir.nodes import Kernel


def generate(kernel: Kernel) -> GeneratedSource:
    """The CUDA C++ translation unit of `kernel` (a traced `argus.ir.nodes.Kernel`).

    Raises `CodegenError` (``CODEGEN_UNSUPPORTED``) at the first statement the generator cannot lower
    (e.g. TMA stores, ``wgmma`` with A in registers, warp roles over non-consecutive warpgroups), naming the
    construct and its DSL line.
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(
            f"generate takes a traced argus Kernel, got {type(kernel).__name__}; trace it first: fn.trace(**params)"
        )
    return Emitter(kernel).generate()


def compile_kernel(
    kernel: Kernel | Any,
    *,
    options: Sequence[str] = (),
    cache: Any = True,
    **params: Any,
) -> CompiledKernel:
    """`generate` and compile for ``sm_90a``. `kernel` is a traced `Kernel` or an ``@argus.kernel``
    function (traced with `params`). Raises `CodegenError` or `argus.backend.cuda.CompileError`."""
    from argus.backend.cuda.toolchain import compile_cuda

    if not isinstance(kernel, Kernel):
        kernel = kernel.trace(**params)
    elif params:
        raise TypeError("trace-time parameters go with an @argus.kernel function, not with a traced Kernel")
    generated = generate(kernel)
    module = compile_cuda(generated.source, generated.program_name, options=options, cache=cache)
    return CompiledKernel(generated, module)


__all__ = [
    "CodegenError",
    "CompiledKernel",
    "GeneratedSource",
    "LaunchConfig",
    "ShapeParam",
    "TensorMapParam",
    "TensorParam",
    "compile_kernel",
    "generate",
]
