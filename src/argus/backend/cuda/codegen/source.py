"""What the code generator hands on: the CUDA source of one kernel specialization and how to launch it.

`GeneratedSource` is everything the toolchain and the runtime need and nothing they would have to
recompute from the IR: the text, the entry symbol, the parameters in order (tensor pointers, then the
shape symbols as ``int``, then TMA tensor maps), the launch shape as a function of the shape symbols, the dynamic shared
memory, and per tensor what the generated code assumes of it (dtype, row-major strides, alignment,
whether it is written).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus.atoms.common import MAX_GRID  # the largest grid extents CUDA accepts, per dimension
from argus.atoms.tma import Im2colBox
from argus.ir.expr import Expr, Var, evaluate
from argus.ir.types import DType

#: Dynamic shared memory a kernel may use without opting in (``cudaFuncAttributeMaxDynamicSharedMemorySize``).
DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024


@dataclass(frozen=True)
class TensorParam:
    """A tensor parameter of the generated kernel (a device pointer).

    Attributes:
        name: the parameter's name (the DSL's).
        dtype: element type.
        shape: extents, ints or expressions over the shape symbols.
        strides: element strides the generated code indexes with (row-major for DSL tensors).
        written: whether the kernel writes it (then it must not overlap any other argument).
        alignment: bytes the base address must be a multiple of (the widest vector access made
            relative to it; at least the element size).
    """

    name: str
    dtype: DType
    shape: tuple[Expr | int, ...]
    strides: tuple[Expr | int, ...]
    written: bool
    alignment: int

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class TensorMapParam:
    """A TMA tensor map the kernel takes as a ``const __grid_constant__`` parameter (after the shape
    symbols): the runtime encodes it with ``cuTensorMapEncodeTiled`` from the tensor's pointer, shape and
    strides before each launch.

    Attributes:
        name: the parameter's C name.
        tensor: the name of the tensor parameter it describes.
        box: box extents in TMA order (dimension 0 is the tensor's last, contiguous dimension); a window
            dimension the DSL squeezed has extent 1.
        swizzle: 0, 32, 64 or 128 bytes: the swizzle of the shared-memory layout the box lands in.
        dtype: element type.
        im2col: for an im2col load's map (``cuTensorMapEncodeIm2col``), its traversal and box; `box` is then
            (channels, 1, ...).
    """

    name: str
    tensor: str
    box: tuple[int, ...]
    swizzle: int
    dtype: DType
    im2col: Im2colBox | None = None


@dataclass(frozen=True)
class ShapeParam:
    """A shape symbol passed as an ``int`` parameter (``M``, ``N``, ``K``)."""

    name: str
    var: Var


@dataclass(frozen=True)
class LaunchConfig:
    """One launch: grid and block extents (x, y, z) and dynamic shared memory in bytes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int


@dataclass(frozen=True, eq=False)
class GeneratedSource:
    """The CUDA C++ translation unit of one kernel specialization.

    Attributes:
        kernel_name: the IR kernel's name.
        entry: the ``extern "C" __global__`` symbol to launch.
        source: the CUDA C++ text (``// file.py:LINE`` comments tie its statements to the DSL).
        tensors: tensor parameters, in order (they come first in the signature).
        shape_params: shape-symbol parameters, in `Kernel.shape_vars` order (after the tensors).
        threads: threads per block.
        grid: grid extents as expressions over the shape symbols.
        shared_bytes: dynamic shared memory per block.
        assumptions: the kernel's declared assumptions over the shape symbols (checked before launch).
        params: the trace-time parameters the kernel was specialized with.
        notes: where the generator chose a slower path than the IR asked for, and why.
        tensor_maps: TMA tensor maps, in order (they come after the shape symbols in the signature).
        dependent: generated for programmatic dependent launch (``generate(kernel, dependent=True)``: the
            ``griddepcontrol`` prologue); only such a kernel may be launched with ``dependent=True``.
        cooperative: the kernel has group barriers (`T.group_barrier`): its blocks wait for each other, so the
            runtime launches it cooperatively (the driver refuses a grid whose blocks cannot all be resident at once,
            `argus.runtime.loaded.COOPERATIVE_LAUNCHES`) instead of letting it hang.
        wide: global element offsets computed in 64 bits (``generate(kernel, wide=True)``); otherwise in 32 bits,
            which the runtime uses only for tensors of at most 2^31 elements (it compiles the wide variant when a
            launch needs it).
    """

    kernel_name: str
    entry: str
    source: str
    tensors: tuple[TensorParam, ...]
    shape_params: tuple[ShapeParam, ...]
    threads: int
    grid: tuple[Expr | int, ...]
    shared_bytes: int
    assumptions: tuple[Expr, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default=())
    tensor_maps: tuple[TensorMapParam, ...] = ()
    dependent: bool = False
    wide: bool = False
    cooperative: bool = False

    @property
    def parameters(self) -> tuple[str, ...]:
        """Parameter names in signature order: tensor pointers, then shape symbols."""
        return tuple(t.name for t in self.tensors) + tuple(s.name for s in self.shape_params)

    @property
    def program_name(self) -> str:
        """The file name NVRTC sees (and logs and line tables refer to)."""
        return f"{self.entry}.cu"

    def shape_env(self, shape_values: Mapping[str, int]) -> dict[Var, int]:
        """Shape symbol variables bound to `shape_values` (by name)."""
        missing = [s.name for s in self.shape_params if s.name not in shape_values]
        if missing:
            raise KeyError(f"{self.kernel_name}: no value for shape symbol(s) {', '.join(missing)}")
        return {s.var: int(shape_values[s.name]) for s in self.shape_params}

    def launch_config(self, shape_values: Mapping[str, int]) -> LaunchConfig:
        """Grid, block and dynamic shared memory for the shape symbols' values (by name).

        Raises ValueError when a grid extent is not positive or exceeds CUDA's limits."""
        env = self.shape_env(shape_values)
        extents = [int(evaluate(g, env)) if isinstance(g, Expr) else int(g) for g in self.grid]
        extents += [1] * (3 - len(extents))
        for axis, (extent, limit) in enumerate(zip(extents, MAX_GRID, strict=True)):
            if extent < 1 or extent > limit:
                raise ValueError(
                    f"{self.kernel_name}: grid extent {'xyz'[axis]} = {extent} for {dict(shape_values)} "
                    f"is outside 1..{limit}"
                )
        return LaunchConfig((extents[0], extents[1], extents[2]), (self.threads, 1, 1), self.shared_bytes)


@dataclass(frozen=True, eq=False)
class CompiledKernel:
    """A generated kernel and its compiled module (`argus.backend.cuda.CompiledModule`): what
    `argus.runtime.load` takes."""

    generated: GeneratedSource
    module: Any
    #: the traced IR kernel and the compiler options it was built with: what the runtime compiles the wide-offset
    #: variant from when a launch needs it (`argus.runtime.loaded.LoadedKernel`); None when not kept
    kernel: Any = None
    options: tuple[str, ...] = ()

    @property
    def entry(self) -> str:
        return self.generated.entry

    @property
    def resources(self) -> Any:
        """`KernelResources` of the entry (registers, spills, shared memory)."""
        return self.module.resources[self.generated.entry]

    def instruction_mix(self, *, modifiers: bool = False) -> Any:
        """SASS opcode counts of the entry."""
        return self.module.instruction_mix(self.generated.entry, modifiers=modifiers)
