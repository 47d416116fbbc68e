"""What a task is: the computation a candidate must perform, how to draw its inputs, its reference, its
FLOP and byte counts, what it forbids, and which baselines it is compared with.

Two kinds:

* `Task` — a built-in workload in the *kernel-call convention* of argus kernels: named tensors in parameter
  order, outputs written in place. Its reference is a PyTorch function of the input tensors, written once and
  run in float64 (the correctness reference) and in the task's own dtypes (the eager baseline).
* `ModuleTask` — a PyTorch module as reference (KernelBench's format: ``Model``, ``get_inputs``,
  ``get_init_inputs``); a candidate is another module class with the same constructor and ``forward``.

A task is data: the gate (`argus.eval`) reads it and builds from it what its stages need — the correctness
`Reference` (`argus.eval.correctness.task_reference`, `module_reference`), the NaN-poisoned outputs
(`argus.eval.correctness.allocate_outputs`) and the tolerance of its least precise dtype
(`argus.eval.correctness.task_precision`). Nothing here imports the gate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.diagnostics import ArgusError
from argus.kernels.declarations import draw_dtype


class TaskError(ArgusError, ValueError):
    """A task was named or sized in a way that does not work (code ``TASK_<DETAIL>``)."""


_DTYPES = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
    "bool": "bool",
}


def torch_dtype(name: str) -> Any:
    """The torch dtype of an argus dtype name (``"bf16"`` -> ``torch.bfloat16``)."""
    import torch

    if name not in _DTYPES:
        raise TaskError("TASK_DTYPE", f"unknown dtype {name!r}", f"one of {', '.join(_DTYPES)}")
    return getattr(torch, _DTYPES[name])


@dataclass(frozen=True)
class TensorSpec:
    """One tensor parameter of a task.

    Attributes:
        name: the parameter's name (the kernel's parameter of the same name receives it).
        shape: extents, each an int or the name of a size (``("M", "K")``).
        dtype: argus dtype name (``"bf16"``, ``"f32"``, ``"i32"``, ...).
        output: written by the kernel (allocated and NaN-poisoned by the harness).
        sampler: ``sampler(shape, sizes, generator)`` -> the native draw of an input that needs structure
            (e.g. group offsets); default: standard normal rounded to `dtype`.
        derive: ``derive(inputs)`` -> an input computed from the inputs before it (a dict by name), not drawn
            (e.g. the row-tile counts of group offsets).
    """

    name: str
    shape: tuple[str | int, ...]
    dtype: str
    output: bool = False
    sampler: Callable[[tuple[int, ...], Mapping[str, int], Any], Any] | None = None
    derive: Callable[[Mapping[str, Any]], Any] | None = None

    def resolve(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        out = []
        for extent in self.shape:
            if isinstance(extent, int):
                out.append(extent)
            elif extent in sizes:
                out.append(int(sizes[extent]))
            else:
                raise TaskError(
                    "TASK_SIZE_MISSING",
                    f"tensor {self.name} needs the size {extent!r}",
                    f"give it, e.g. --shapes {extent}=128",
                    actual=dict(sizes),
                )
        return tuple(out)


@dataclass(frozen=True)
class Task:
    """A built-in workload (see the module docstring).

    Attributes:
        name, description: how the task is called and what it computes.
        tensors: parameters in kernel order; inputs and outputs.
        reference: ``reference(*inputs)`` -> the output tensor (or a tuple, one per output), with PyTorch
            operators, in the precision of its inputs.
        small_sizes: sizes for CPU runs (the interpreter): small and not multiples of the tiles.
        bench_sizes: sizes for GPU benchmarks, first is the default.
        flops, moved_bytes: ``f(sizes)`` -> the work and the compulsory memory traffic, for TFLOP/s and GB/s.
        kernels: library kernels (`argus.kernels`) that implement the task.
        baselines: named baseline functions with the reference's signature (``"cublas"``, ``"sdpa-flash"``, ...);
            ``"eager"`` (the reference itself) and ``"compile"`` (``torch.compile`` of it) are always available.
        default_baselines: the baselines `argus bench` times when none are asked for.
        forbidden: dotted-name patterns a candidate's source may not use (`argus.eval.guards.scan_source`).
        forbidden_ops: PyTorch operator patterns a candidate may not dispatch (`argus.eval.guards.OpRecorder`).
    """

    name: str
    description: str
    tensors: tuple[TensorSpec, ...]
    reference: Callable[..., Any]
    small_sizes: dict[str, int]
    bench_sizes: tuple[dict[str, int], ...]
    flops: Callable[[Mapping[str, int]], float]
    moved_bytes: Callable[[Mapping[str, int]], float]
    kernels: tuple[str, ...] = ()
    baselines: dict[str, Callable[..., Any]] = field(default_factory=dict)
    default_baselines: tuple[str, ...] = ("eager", "compile")
    forbidden: tuple[str, ...] = ()
    forbidden_ops: tuple[str, ...] = ()

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.tensors if not t.output)

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.tensors if t.output)

    @property
    def baseline_names(self) -> tuple[str, ...]:
        return ("eager", "compile", *self.baselines)

    def sample(self, sizes: Mapping[str, int], seed: int, device: Any = None) -> list[Any]:
        """The native draw of the inputs, in parameter order: CPU tensors, or with a CUDA `device` tensors drawn
        there by a generator of that device (a bench size's inputs reach 15 GB: drawn on the CPU in float64 they
        took minutes a trial and four times their size in host memory). The two draws of one seed differ; each is
        reproducible. A sampler sees the generator and draws on its device (`draw_dtype` says in which dtype)."""
        import torch

        cuda = device is not None and torch.device(device).type == "cuda"
        g = torch.Generator(device=device).manual_seed(seed) if cuda else torch.Generator().manual_seed(seed)
        out = []
        with torch.device(device) if cuda else contextlib.nullcontext():
            for spec in self.inputs:
                shape = spec.resolve(sizes)
                if spec.derive is not None:
                    before = dict(zip([t.name for t in self.inputs], out, strict=False))
                    out.append(spec.derive(before))
                elif spec.sampler is not None:
                    out.append(spec.sampler(shape, sizes, g))
                else:
                    dtype = torch_dtype(spec.dtype)
                    out.append(torch.randn(shape, generator=g, dtype=draw_dtype(g, dtype)).to(dtype))
        return out

    def arrange(self, inputs: Sequence[Any], outputs: Sequence[Any], order: Sequence[str] | None = None) -> list[Any]:
        """Inputs and outputs as one argument list in parameter order (`order`: the kernel's parameter names,
        default the task's)."""
        by_name = dict(zip([t.name for t in self.inputs], inputs, strict=True))
        by_name.update(zip([t.name for t in self.outputs], outputs, strict=True))
        return [by_name[n] for n in (order or [t.name for t in self.tensors])]


@dataclass
class ModuleTask:
    """A task whose reference is a PyTorch module (KernelBench's format).

    Attributes:
        name: e.g. ``"level1/23_Softmax"``.
        model: the reference ``nn.Module`` class.
        get_inputs: () -> the forward arguments (drawn from PyTorch's global generator, which the harness seeds).
        get_init_inputs: () -> the constructor arguments.
        path: the file it came from, when it came from one.
        sizes: module-level sizes overridden at load (see `argus.tasks.kernelbench.load_problem`).
        flops, moved_bytes: declared work and traffic, when known (KernelBench declares none).
        forbidden, forbidden_ops: as for `Task` (empty: KernelBench allows PyTorch operators).
    """

    name: str
    model: type
    get_inputs: Callable[[], list[Any]]
    get_init_inputs: Callable[[], list[Any]]
    path: Path | None = None
    sizes: dict[str, Any] = field(default_factory=dict)
    flops: float | None = None
    moved_bytes: float | None = None
    forbidden: tuple[str, ...] = ()
    forbidden_ops: tuple[str, ...] = ()

    def sample(self, seed: int, device: Any = None) -> list[Any]:
        """The native draw: ``get_inputs()`` with PyTorch's generators seeded by `seed`. With a CUDA `device`, the
        factory calls in ``get_inputs`` run with that device as the default (KernelBench's level-1 inputs are
        gigabytes: drawn on the CPU they take longer than everything else in the gate); a generator that cannot
        run there is drawn on the CPU instead. The harness moves the result to its device either way."""
        import torch

        if device is not None and str(device).startswith("cuda"):
            torch.manual_seed(seed)
            try:
                with torch.device(device):
                    return list(self.get_inputs())
            except Exception:  # noqa: BLE001 - a generator that needs the CPU: draw it there
                pass
        torch.manual_seed(seed)
        return list(self.get_inputs())

    def input_dtypes(self) -> list[Any]:
        """The dtypes of the forward's tensor arguments, found by drawing them on PyTorch's ``meta`` device (no
        memory is allocated, however large the task); a real draw if the generator cannot run there."""
        import torch

        try:
            with torch.device("meta"):
                inputs = self.get_inputs()
        except Exception:  # noqa: BLE001 - some generators need real values
            inputs = self.sample(0)
        return [x.dtype for x in inputs if isinstance(x, torch.Tensor)]

    def build(self, cls: type, seed: int, device: Any) -> Any:
        """An instance of `cls` constructed from the task's init inputs with PyTorch's generator at `seed` (so a
        candidate that creates the same parameters in the same order gets the same weights as the reference,
        as in KernelBench), moved to `device`."""
        import torch

        torch.manual_seed(seed)
        module = cls(*self.get_init_inputs())
        return module.to(device) if hasattr(module, "to") else module
