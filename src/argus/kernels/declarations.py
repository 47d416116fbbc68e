"""The shape of a workload's declaration (`argus.kernels.workloads` holds the declarations themselves).

* A `Problem` is what is computed: its tensors in the kernels' parameter order, its reference (written once,
  `argus.kernels.arrays`), how to draw its inputs, the sizes it runs at on the CPU and on a GPU, its work (FLOPs
  and compulsory bytes), its baselines and what a candidate may not call. Each problem is a built-in task:
  `argus.tasks.builtin` derives its `Task` from the declaration.
* A `Workload` is one library kernel on a problem: the kernel, its parameters, the shapes the interpreter checks it
  at, its tolerance and, when it is a rung of a lineage, its `Rung`. Each workload is one entry of the kernel
  registry: `argus.kernels.registry` derives its `LibraryKernel` and the lineages from the declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus.diagnostics import ArgusError


class ProblemSizeError(ArgusError, ValueError):
    """Sizes a problem's inputs cannot be drawn at (code ``TASK_SIZE``; the task layer reports it as a task
    error)."""


#: ``draw(shape, sizes, generator)`` -> a torch tensor: the task's native draw of an input that needs structure.
Draw = Callable[[tuple[int, ...], Mapping[str, int], Any], Any]


def draw_dtype(generator: Any, dtype: Any) -> Any:
    """The dtype a native draw of a floating `dtype` is made in: float64 on a CPU generator (rounded to `dtype`
    after, the draw every recorded CPU result was made with), `dtype` itself on a device's generator (a bench
    size's weights reach 15 GB: a float64 draw there would hold four times that)."""
    import torch

    return torch.float64 if generator.device.type == "cpu" else dtype


#: ``make(sizes, rng)`` -> every tensor of the problem by name, numpy float64, outputs zeroed: the interpreter's inputs.
Make = Callable[[Mapping[str, int], np.random.Generator], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Tensor:
    """One tensor parameter: its name (the kernel's parameter of that name receives it), extents (ints or size
    names), argus dtype name, whether the kernel writes it, and its native draw (default: standard normal rounded
    to `dtype`)."""

    name: str
    shape: tuple[str | int, ...]
    dtype: str
    output: bool = False
    draw: Draw | None = None
    # an input computed from the inputs before it (by name; torch tensors), not drawn: metadata a problem states
    # along with its data (the grouped GEMM's row-tile counts, derived from its offsets)
    derive: Callable[[Mapping[str, Any]], Any] | None = None


@dataclass(frozen=True)
class Problem:
    """What a workload computes; a built-in task (see the module docstring).

    Attributes:
        name, description: the task's name and what it computes.
        tensors: parameters in kernel order, inputs and outputs.
        reference: ``reference(*inputs)`` -> the output (or a tuple, one per output), written once in operators
            that run on numpy arrays (the interpreter's check, float64) and on torch tensors (the gate's reference
            in float64, the PyTorch-eager baseline in the task's dtypes).
        make: the interpreter's inputs (`Make`); None for a problem no library kernel implements.
        cpu_sizes: sizes for CPU runs of the task: small and not multiples of the tiles.
        bench_sizes: sizes for GPU benchmarks, the first the default.
        flops, moved_bytes: ``f(sizes)`` -> the work and the compulsory memory traffic.
        baselines: named baselines with the reference's signature (``"eager"`` and ``"compile"`` always exist).
        default_baselines: those `argus bench` times when none are asked for.
        forbidden, forbidden_ops: the dotted names a candidate's source may not use and the PyTorch operators it may
            not dispatch.
    """

    name: str
    description: str
    tensors: tuple[Tensor, ...]
    reference: Callable[..., Any]
    make: Make | None
    cpu_sizes: dict[str, int]
    bench_sizes: tuple[dict[str, int], ...]
    flops: Callable[[Mapping[str, int]], float]
    moved_bytes: Callable[[Mapping[str, int]], float]
    baselines: dict[str, Callable[..., Any]] = field(default_factory=dict)
    default_baselines: tuple[str, ...] = ("eager", "compile")
    forbidden: tuple[str, ...] = ()
    forbidden_ops: tuple[str, ...] = ()

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if not t.output)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.output)

    def run_reference(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The reference on tensors by name (numpy arrays or torch tensors): the outputs by name."""
        got = self.reference(*(values[t.name] for t in self.inputs))
        got = got if isinstance(got, tuple) else (got,)
        return {t.name: v for t, v in zip(self.outputs, got, strict=True)}


@dataclass(frozen=True)
class Shapes:
    """The sizes the interpreter checks a kernel at: `default`, and `partial`, which is not a multiple of the
    kernel's tiles (partial tiles in every dimension the kernel tiles)."""

    default: dict[str, int]
    partial: dict[str, int]


@dataclass(frozen=True)
class Rung:
    """A workload's position in a lineage: its `family` (``"gemm"``), and the one mechanism it adds to the rung
    declared before it in that family (`mechanism`, a stable id; `adds`, what it is in a line). The first rung
    adds the family's starting point."""

    family: str
    mechanism: str
    adds: str


@dataclass(frozen=True)
class Workload:
    """One library kernel on a problem; one entry of the kernel registry (see the module docstring).

    Attributes:
        name, description: the entry's name (what users type) and what the kernel does.
        problem: what it computes (its task).
        kernel: the ``@argus.kernel`` function.
        shapes: the interpreter's default and partial-tile sizes.
        tolerance: the largest error, relative to the output's scale, the interpreter check accepts.
        params: the kernel's parameters for this entry (an expert configuration is a kernel at other parameters).
        rung: its lineage position, if it is a rung of one.
    """

    name: str
    description: str
    problem: Problem
    kernel: Any
    shapes: Shapes
    tolerance: float = 1e-4
    params: dict[str, Any] = field(default_factory=dict)
    rung: Rung | None = None
