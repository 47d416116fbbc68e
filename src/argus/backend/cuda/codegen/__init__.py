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

Modules. The renderer is a table of rules (`emitter.Emitter.RULES`, one line per IR statement kind); each rule
is a function ``rule(cx, statement)`` of the module that owns its concern, and what the rules share is one
`context.Context` per kernel:

* `emitter` — the entry point (`Emitter.generate`), its A/B switches and the rule table; its docstring says how
  each IR concept becomes CUDA;
* `context` — the emission state: the body's lines and block-local names, the scope (thread index and count,
  warp role, statement being emitted), what the body needs of the translation unit; errors at the DSL line;
* `analysis` — the walk before emission: names, the shared-memory carve, written tensors, hoisted fragments;
* `addressing` — windows of global and shared buffers as C, a thread's fragment coordinates, runs over threads;
* `memory` — allocations, copies (fragment <-> memory, ``ldmatrix``/``stmatrix``, ``cp.async``), fills;
* `tma` — TMA loads and the kernel's tensor maps; `epilogue` — lane-exchange and staged TMA stores;
* `mma` — ``mma.sync``, the per-thread FMA atom, ``wgmma`` and its matrix descriptors;
* `pointwise` — elementwise math and reductions in registers;
* `sync` — barriers, fences, ``cp.async`` groups, mbarriers, and the named barriers the generator hands out;
* `hopper` — warp roles with ``setmaxnreg``;
* `control` — loops, branches and bindings (a consumer loop with a deferred stage release comes written into
  the IR by `argus.ir.passes`, and is rendered as written); `frame` — the translation unit around the body
  (signature, launch bounds, prologue, shared-memory carve, prelude);
* building blocks: `cexpr` (C expressions, layouts as C), `placement` (per-thread facts derived from layouts by
  enumeration), `prelude` (device helpers), `source` (the result, with the TMA tensor maps the runtime
  encodes), `errors`.

The generated code's semantics are the interpreter's (`argus.interp`).
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


def generate(kernel: Kernel, *, dependent: bool = False, wide: bool = False) -> GeneratedSource:
    """The CUDA C++ translation unit of `kernel` (a traced `argus.ir.nodes.Kernel`, after `argus.ir.passes`: the
    tracer runs them, and the generator renders what they wrote without rewriting anything).

    Raises `CodegenError` (``CODEGEN_UNSUPPORTED``) at the first statement the generator cannot lower
    (e.g. TMA stores, ``wgmma`` with A in registers, warp roles over non-consecutive warpgroups), naming the
    construct and its DSL line.

    `dependent`: generate for programmatic dependent launch (the ``griddepcontrol`` prologue,
    `GeneratedSource.dependent`): for kernels that follow another kernel in one stream and are launched with
    ``dependent=True`` (the GEMM plans' kernels, `argus.kernels.matmul`). `wide`: global element offsets in 64 bits
    (`GeneratedSource.wide`), for tensors of more than 2^31 elements; the runtime asks for it when a launch needs it.
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(
            f"generate takes a traced argus Kernel, got {type(kernel).__name__}; trace it first: fn.trace(**params)"
        )
    return Emitter(kernel, dependent=dependent, wide=wide).generate()


def compile_kernel(
    kernel: Kernel | Any,
    *,
    options: Sequence[str] = (),
    cache: Any = True,
    dependent: bool = False,
    wide: bool = False,
    **params: Any,
) -> CompiledKernel:
    """`generate` (with `dependent` and `wide`) and compile for ``sm_90a``. `kernel` is a traced `Kernel` or an
    ``@argus.kernel`` function (traced with `params`). Raises `CodegenError` or `argus.backend.cuda.CompileError`."""
    from argus.backend.cuda.toolchain import compile_cuda

    if not isinstance(kernel, Kernel):
        kernel = kernel.trace(**params)
    elif params:
        raise TypeError("trace-time parameters go with an @argus.kernel function, not with a traced Kernel")
    generated = generate(kernel, dependent=dependent, wide=wide)
    module = compile_cuda(generated.source, generated.program_name, options=options, cache=cache)
    return CompiledKernel(generated, module, kernel, tuple(options))


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
