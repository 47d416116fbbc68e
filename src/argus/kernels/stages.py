"""Kernels run one after another through intermediate buffers, as one step of a generated solution.

`Stages` is what `argus solve` emits for a group that one kernel launch does not compute well: a reduction of many
elements into few outputs runs as a partial reduction over many blocks into an f32 buffer, then a reduction of that
buffer (`argus.frontend.families.reduction`); a normalization whose statistics rows are few and long runs as partial
sums, their totals, and the normalizing pass (`argus.frontend.families.normalization`).

A sequence has named tensors: its inputs, its outputs, and buffers it allocates per call (f32 unless declared
otherwise). Each `Stage` is a DSL kernel with the names of the tensors it takes, in its parameter order, each with
the shape that kernel views it as (any shape of the tensor's element count: one stage may see a buffer as
``(R, A, C)`` and the next as ``(1, R, A * C)``). On CUDA tensors each kernel is compiled once
(`argus.runtime.build`) and launched; on CPU tensors it runs on the lane-level interpreter. The pipeline verifies
every kernel of the sequence (`kernels()`), and checks the sequence as a whole against the group's reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class StagesError(ValueError):
    """A `Stages` built inconsistently, or called on tensors it was not generated for."""


@dataclass(frozen=True)
class Stage:
    """One kernel of a sequence: ``args``, the tensors it takes in its parameter order, each ``(name, shape)``: a
    tensor of the sequence (input, output or buffer) and the shape this kernel views it as."""

    kernel: Any
    args: tuple[tuple[str, tuple[int, ...]], ...]


class Stages:
    """A sequence of kernels over named tensors (see the module docstring). `inputs`: name -> captured shape;
    `outputs` and `buffers`: name -> (shape, torch dtype name). A call takes the inputs then the outputs, in the
    order given, of the captured element counts; other tensors are refused."""

    library = True

    def __init__(
        self,
        name: str,
        stages: list[Stage],
        inputs: Mapping[str, tuple[int, ...]],
        outputs: Mapping[str, tuple[tuple[int, ...], str]],
        buffers: Mapping[str, tuple[tuple[int, ...], str]] | None = None,
    ) -> None:
        if not stages:
            raise StagesError(f"{name}: a sequence of no kernels")
        if not outputs:
            raise StagesError(f"{name}: a sequence with no output")
        buffers = dict(buffers or {})
        shapes: dict[str, tuple[int, ...]] = {k: tuple(v) for k, v in inputs.items()}
        for group in (outputs, buffers):
            for k, (shape, _) in group.items():
                if k in shapes:
                    raise StagesError(f"{name}: two tensors named {k!r}")
                shapes[k] = tuple(shape)
        used: set[str] = set()
        for i, stage in enumerate(stages):
            for arg, view in stage.args:
                if arg not in shapes:
                    raise StagesError(f"{name}: stage {i} takes {arg!r}, which is no input, output or buffer")
                if math.prod(view) != math.prod(shapes[arg]):
                    raise StagesError(f"{name}: stage {i} views {arg!r} of shape {shapes[arg]} as {tuple(view)}")
                used.add(arg)
        unused = [k for k in (*outputs, *buffers) if k not in used]
        if unused:
            raise StagesError(f"{name}: no stage takes {', '.join(unused)}")
        self.name = name
        self.stages = list(stages)
        self.inputs = {k: tuple(v) for k, v in inputs.items()}
        self.outputs = {k: (tuple(s), d) for k, (s, d) in outputs.items()}
        self.buffers = {k: (tuple(s), d) for k, (s, d) in buffers.items()}
        self._compiled: dict[int, Any] = {}

    def __repr__(self) -> str:
        return f"Stages({self.name!r}, {len(self.stages)} kernels, {list(self.inputs)} -> {list(self.outputs)})"

    def kernels(self) -> list[Any]:
        """The kernels, in launch order (the pipeline verifies each)."""
        return [s.kernel for s in self.stages]

    def empty_outputs(self, *inputs: Any) -> tuple[Any, ...]:
        """Uninitialized outputs, of the captured shapes and dtypes, on the first input's device."""
        import torch

        device = inputs[0].device if inputs else None
        return tuple(torch.empty(s, dtype=getattr(torch, d), device=device) for s, d in self.outputs.values())

    def empty_output(self, *inputs: Any) -> Any:
        """The one output (`empty_outputs`) of a single-output sequence."""
        if len(self.outputs) != 1:
            raise StagesError(f"{self.name} has {len(self.outputs)} outputs: use empty_outputs")
        return self.empty_outputs(*inputs)[0]

    def __call__(self, *tensors: Any, device: Any = None) -> None:
        """Compute the outputs (written in place) from the inputs: ``self(*inputs, *outputs)``."""
        import torch

        names = [*self.inputs, *self.outputs]
        if len(tensors) != len(names):
            raise StagesError(f"{self.name} takes {len(names)} tensors ({', '.join(names)}), got {len(tensors)}")
        shapes = {**self.inputs, **{k: s for k, (s, _) in self.outputs.items()}}
        for name, t in zip(names, tensors, strict=True):
            if t.numel() != math.prod(shapes[name]):
                raise StagesError(
                    f"{self.name} was generated for {name} of shape {shapes[name]}, got {tuple(t.shape)}: "
                    "run argus solve at these sizes"
                )
        for name in self.outputs:
            if not tensors[names.index(name)].is_contiguous():
                raise StagesError(f"{self.name}: the output {name} must be contiguous")
        where = tensors[0].device
        held = {name: (t.contiguous() if name in self.inputs else t) for name, t in zip(names, tensors, strict=True)}
        for k, (shape, dtype) in self.buffers.items():
            held[k] = torch.empty(shape, dtype=getattr(torch, dtype), device=where)
        for i, stage in enumerate(self.stages):
            views = [held[arg].view(view) for arg, view in stage.args]
            if where.type == "cuda":
                if i not in self._compiled:
                    from argus.runtime import build

                    self._compiled[i] = build(stage.kernel)
                self._compiled[i](*views)
            else:
                stage.kernel(*views, device="cpu")
