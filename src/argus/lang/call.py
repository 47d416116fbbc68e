"""Calling a traced kernel: ``kernel(*tensors, device="cpu")`` checks and converts the tensors (numpy arrays or CPU
torch tensors) to float64 numpy arrays, runs the IR through the runner registered for the device, and writes the
results back in place.

The DSL owns the contract (`Runner`) and the registry, and imports nothing above its layer: a runner lives with the
machinery it drives and registers itself (`register_runner`) when its package is imported; the CPU's, which checks
the sizes against the kernel's assumptions as a launch does and runs the lane-level interpreter, is
`argus.runtime.cpu`. `DEVICE_PACKAGES` names, as data, the package that registers each device's runner, so that
``import argus`` alone is enough to call a kernel: the first call on a device imports its package. A device that
nothing registers is refused with ``DSL_NO_RUNNER``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from argus.ir.expr import SourceLoc
from argus.ir.nodes import Kernel
from argus.lang.errors import DSLError

#: Runs `kernel` on its tensors' arrays (by parameter name), writing the outputs into them.
Runner = Callable[[Kernel, dict[str, Any]], None]

#: The package that registers each device's runner when it is imported.
DEVICE_PACKAGES: dict[str, str] = {"cpu": "argus.runtime"}

_RUNNERS: dict[str, Runner] = {}


def register_runner(device: str, runner: Runner) -> None:
    """Make `runner` run kernel calls on `device` (a later registration replaces an earlier one)."""
    _RUNNERS[device] = runner


def runner_for(device: str, kernel_name: str = "", loc: SourceLoc | None = None) -> Runner:
    """The runner registered for `device`, importing the package `DEVICE_PACKAGES` names for it if none is yet;
    ``DSL_NO_RUNNER`` if there is still none."""
    failure: ImportError | None = None
    if device not in _RUNNERS and device in DEVICE_PACKAGES:
        try:
            importlib.import_module(DEVICE_PACKAGES[device])
        except ImportError as err:
            failure = err
    if device in _RUNNERS:
        return _RUNNERS[device]
    package = DEVICE_PACKAGES.get(device)
    raise DSLError(
        "DSL_NO_RUNNER",
        f"kernel {kernel_name}: nothing runs kernels on device {device!r}"
        + (f" (importing {package}, which registers its runner, failed: {failure})" if failure else ""),
        f"import {package}, which registers the runner" if package else f"devices: {', '.join(DEVICE_PACKAGES)}",
        loc=loc,
    )


def run_traced(kernel: Kernel, tensors: Sequence[Any], device: str = "cpu", loc: SourceLoc | None = None) -> None:
    """Run the traced `kernel` on `device` with `tensors` (numpy arrays or CPU torch tensors, in parameter order),
    writing outputs in place; the device's runner refuses sizes that violate the kernel's ``T.assume``."""
    names = [t.name for t in kernel.tensors]
    if len(tensors) != len(names):
        raise DSLError(
            "DSL_CALL_ARGUMENTS",
            f"kernel {kernel.name} takes {len(names)} tensors ({', '.join(names)}), got {len(tensors)}",
            loc=loc,
        )
    run = runner_for(device, kernel.name, loc)
    arrays, writeback = {}, []
    for name, value in zip(names, tensors, strict=True):
        array, back = _as_numpy(name, value)
        arrays[name] = array
        if back is not None:
            writeback.append((back, array))
    run(kernel, arrays)
    for back, array in writeback:
        back(array)


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
