"""Kernels run one after another through intermediate buffers, as one step of a generated solution.

`Stages` is what `argus solve` emits for a group that one kernel launch does not compute well: a reduction of many
elements into few outputs runs as a partial reduction over many blocks into an f32 buffer, then a reduction of that
buffer (`argus.frontend.families.reduction`). Each stage is a DSL kernel taking one input and writing one output,
each viewed as the stage declares; the first stage reads the group's input, the last writes the group's output, and
the buffers between them are allocated per call. On CUDA tensors each kernel is compiled once (`argus.runtime.build`)
and launched; on CPU tensors it runs on the lane-level interpreter. The pipeline verifies every kernel of the
sequence (`kernels()`), and checks the sequence as a whole against the group's reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class StagesError(ValueError):
    """A `Stages` call on tensors it was not generated for."""


@dataclass(frozen=True)
class Stage:
    """One kernel of a sequence: the shape it reads its input as, the shape of the output it writes, and that
    output's dtype when it is a buffer (a torch dtype name; the last stage writes the sequence's output)."""

    kernel: Any
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    buffer_dtype: str = "float32"


class Stages:
    """A sequence of single-input, single-output kernels (see the module docstring). `in_shape` and `out_shape` are
    the group's own tensors' shapes (the captured ones); a call on tensors of other element counts is refused."""

    library = True

    def __init__(
        self, name: str, stages: list[Stage], in_shape: tuple[int, ...], out_shape: tuple[int, ...], out_dtype: str
    ) -> None:
        if not stages:
            raise StagesError(f"{name}: a sequence of no kernels")
        for a, b in zip(stages, stages[1:], strict=False):
            if math.prod(a.out_shape) != math.prod(b.in_shape):
                raise StagesError(f"{name}: a stage writes {a.out_shape} and the next reads {b.in_shape}")
        if math.prod(stages[0].in_shape) != math.prod(in_shape):
            raise StagesError(f"{name}: the first stage reads {stages[0].in_shape}, the input is {in_shape}")
        if math.prod(stages[-1].out_shape) != math.prod(out_shape):
            raise StagesError(f"{name}: the last stage writes {stages[-1].out_shape}, the output is {out_shape}")
        self.name = name
        self.stages = list(stages)
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        self.out_dtype = out_dtype
        self._compiled: dict[int, Any] = {}

    def __repr__(self) -> str:
        return f"Stages({self.name!r}, {len(self.stages)} kernels, {self.in_shape} -> {self.out_shape})"

    def kernels(self) -> list[Any]:
        """The kernels, in launch order (the pipeline verifies each)."""
        return [s.kernel for s in self.stages]

    def empty_output(self, x: Any) -> Any:
        """An uninitialized output for the input `x`: the captured output shape, on `x`'s device."""
        import torch

        return torch.empty(self.out_shape, dtype=getattr(torch, self.out_dtype), device=x.device)

    def __call__(self, x: Any, out: Any, device: Any = None) -> None:
        """Compute into `out` from `x` (both of the captured element counts; `out` contiguous)."""
        import torch

        if x.numel() != math.prod(self.in_shape) or out.numel() != math.prod(self.out_shape):
            raise StagesError(
                f"{self.name} was generated for an input of shape {self.in_shape} and an output of "
                f"{self.out_shape}, got {tuple(x.shape)} and {tuple(out.shape)}: run argus solve at these sizes"
            )
        if not out.is_contiguous():
            raise StagesError(f"{self.name}: the output must be contiguous")
        current = x.contiguous()
        for i, stage in enumerate(self.stages):
            last = i == len(self.stages) - 1
            target = (
                out.view(stage.out_shape)
                if last
                else torch.empty(stage.out_shape, dtype=getattr(torch, stage.buffer_dtype), device=x.device)
            )
            source = current.view(stage.in_shape)
            if x.is_cuda:
                if i not in self._compiled:
                    from argus.runtime import build

                    self._compiled[i] = build(stage.kernel)
                self._compiled[i](source, target)
            else:
                stage.kernel(source, target, device="cpu")
            current = target
