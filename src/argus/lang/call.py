"""Calling a traced kernel on the CPU: tensors are checked and converted to numpy arrays, the sizes are checked
against the kernel's assumptions, and the interpreter runs it, writing the outputs back in place."""

from __future__ import annotations

from typing import Any

from argus.ir.expr import Var
from argus.ir.nodes import Kernel
from argus.lang.errors import DSLError


def run_traced(kernel: Kernel, tensors: tuple[Any, ...] | list[Any], loc: Any = None) -> None:
    """Run the traced `kernel` on the CPU interpreter with `tensors` (numpy arrays or CPU torch tensors, in
    parameter order), writing outputs in place; sizes that violate its ``T.assume`` are refused."""
    from argus.interp import run_kernel

    names = [t.name for t in kernel.tensors]
    if len(tensors) != len(names):
        raise DSLError(
            "DSL_CALL_ARGUMENTS",
            f"kernel {kernel.name} takes {len(names)} tensors ({', '.join(names)}), got {len(tensors)}",
            loc=loc,
        )
    arrays, writeback = {}, []
    for name, value in zip(names, tensors, strict=True):
        array, back = _as_numpy(name, value)
        arrays[name] = array
        if back is not None:
            writeback.append((back, array))
    _check_assumptions(kernel, arrays)
    run_kernel(kernel, arrays)
    for back, array in writeback:
        back(array)


def _check_assumptions(kernel: Kernel, arrays: dict[str, Any]) -> None:
    """Refuse a call whose sizes violate the kernel's assumptions (``T.assume``), as the GPU runtime does
    (`argus.runtime.arguments.bind`, ``RUNTIME_ASSUMPTION``): the kernel is verified for those sizes only."""
    from argus.ir.expr import evaluate
    from argus.runtime.errors import ArgumentError

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


def _as_numpy(name: str, value: Any):
    """(a float64 numpy array with the values, a function writing results back or None)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value, None
    if type(value).__module__.startswith("torch"):
        if value.device.type != "cpu":
            raise DSLError("DSL_CALL_ARGUMENTS", f"{name}: the interpreter takes CPU tensors, got {value.device}")
        work = value.detach().to("cpu").double().numpy().copy()

        def back(result: np.ndarray, target: Any = value) -> None:
            import torch

            target.copy_(torch.from_numpy(result).to(target.dtype))

        return work, back
    raise DSLError(
        "DSL_CALL_ARGUMENTS", f"{name}: expected a numpy array or a CPU torch tensor, got {type(value).__name__}"
    )
