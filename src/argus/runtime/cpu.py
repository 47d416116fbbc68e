"""Kernel calls on the CPU: ``kernel(*tensors, device="cpu")`` (`argus.lang.call`) runs here, on the lane-level
interpreter. The sizes are checked against the kernel's assumptions first, as a launch's are
(`argus.runtime.arguments.bind`, ``RUNTIME_ASSUMPTION``): the kernel is verified for those sizes only. Importing
this module registers `run_on_cpu` as the runner of device ``"cpu"``."""

from __future__ import annotations

from typing import Any

from argus.interp import run_kernel
from argus.ir.expr import Var, evaluate
from argus.ir.nodes import Kernel
from argus.lang.call import register_runner
from argus.runtime.errors import ArgumentError


def run_on_cpu(kernel: Kernel, arrays: dict[str, Any]) -> None:
    """Run `kernel` on the interpreter with `arrays` (float64 numpy arrays by parameter name), in place; sizes that
    violate its ``T.assume`` are refused (`ArgumentError` ``RUNTIME_ASSUMPTION``)."""
    _check_assumptions(kernel, arrays)
    run_kernel(kernel, arrays)


def _check_assumptions(kernel: Kernel, arrays: dict[str, Any]) -> None:
    """Refuse a call whose sizes violate the kernel's assumptions (``T.assume``), as the GPU runtime does
    (`argus.runtime.arguments.bind`, ``RUNTIME_ASSUMPTION``): the kernel is verified for those sizes only."""
    sizes: dict[Var, int] = {}
    for t in kernel.tensors:
        shape = getattr(arrays.get(t.name), "shape", ())
        for dim, extent in zip(t.shape, shape, strict=False):
            if isinstance(dim, Var):
                sizes.setdefault(dim, int(extent))
    if len(sizes) != len(kernel.shape_vars):
        return  # the interpreter reports the missing or mismatched tensor itself
    for assumption in kernel.assumptions[len(kernel.shape_vars) :]:
        if not bool(evaluate(assumption, sizes)):
            values = {v.name: n for v, n in sizes.items()}
            raise ArgumentError(
                "RUNTIME_ASSUMPTION",
                f"{kernel.name}: the shapes {values} violate the kernel's assumption {assumption} (declared with "
                "T.assume: the kernel is verified for those sizes only)",
                "pass sizes that satisfy it (pad the tensors), or use a kernel written for these sizes",
                kernel=kernel.name,
            )


register_runner("cpu", run_on_cpu)
