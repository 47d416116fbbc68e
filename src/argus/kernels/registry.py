"""The library's kernels with what is needed to check them (a reference, a default small shape, a shape that is not
a multiple of the tiles, an input generator), and the kernel lineages.

All of it is derived from the declarations in `argus.kernels.workloads`: one `LibraryKernel` per declared `Workload`,
in declaration order, and a lineage per family of rungs, in the same order. Nothing here describes a kernel. An old
kernel name (`argus.kernels.workloads.OLD_NAMES`) still finds its kernel, under the current name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus.diagnostics import ArgusError
from argus.kernels.declarations import Workload
from argus.kernels.workloads import (
    GEMM_HOPPER_PARAMS,
    GEMM_HOPPER_PERSISTENT_PARAMS,
    OLD_NAMES,
    PERSISTENT_BLOCKS,
    WORKLOADS,
)

__all__ = [
    "GEMM_HOPPER_PARAMS",
    "GEMM_HOPPER_PERSISTENT_PARAMS",
    "PERSISTENT_BLOCKS",
    "KernelLookupError",
    "LibraryKernel",
    "LineageStep",
    "all_kernels",
    "canonical_name",
    "check_on_interpreter",
    "get_kernel",
    "library_kernel",
    "lineage",
    "lineages",
    "load",
    "parse_shape",
    "torch_check",
]


class KernelLookupError(ArgusError, KeyError):
    """No library kernel of that name (code ``KERNEL_UNKNOWN``)."""


@dataclass(frozen=True)
class LibraryKernel:
    """A library kernel: `make(shape, rng)` returns all its arrays by parameter name (outputs
    zeroed), `reference(arrays)` the expected outputs by name, in float64."""

    name: str
    description: str
    kernel: Any  # an argus.lang KernelFunction
    default_shape: dict[str, int]
    partial_shape: dict[str, int]
    make: Callable[[dict[str, int], np.random.Generator], dict[str, np.ndarray]]
    reference: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    tolerance: float = 1e-4
    params: dict[str, Any] = field(default_factory=dict)
    #: The reference on torch tensors by name (in and out; PyTorch's own operators, imported lazily): the tests
    #: check that it agrees with `reference` and with the kernel.
    torch_reference: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    #: The declaration this entry is derived from (`argus.kernels.workloads`); None for a kernel of your own.
    workload: Workload | None = None


def library_kernel(workload: Workload) -> LibraryKernel:
    """The registry entry of a declared workload: its problem's input generator and its reference (the same function
    on numpy arrays and on torch tensors), its kernel, shapes, tolerance and parameters (fresh copies)."""
    problem = workload.problem
    if problem.make is None:
        raise KernelLookupError(
            "KERNEL_DECLARATION",
            f"workload {workload.name}: its problem {problem.name} declares no interpreter inputs",
            "give the problem a make function in argus.kernels.workloads",
        )
    return LibraryKernel(
        workload.name,
        workload.description,
        workload.kernel,
        dict(workload.shapes.default),
        dict(workload.shapes.partial),
        problem.make,
        problem.run_reference,
        tolerance=workload.tolerance,
        params=dict(workload.params),
        torch_reference=problem.run_reference,
        workload=workload,
    )


_BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}


def canonical_name(name: str) -> str:
    """The library kernel's current name for `name`: `name` itself, or the new name of an old one
    (`argus.kernels.workloads.OLD_NAMES`)."""
    return OLD_NAMES.get(name, name)


def all_kernels() -> list[LibraryKernel]:
    """Every library kernel, in the order of their declarations (`argus.kernels.workloads.WORKLOADS`)."""
    return [library_kernel(w) for w in WORKLOADS]


def get_kernel(name: str) -> LibraryKernel:
    """The library kernel `name`, or the one an old name stands for (under its current name); ``KERNEL_UNKNOWN``
    with a suggestion when there is none."""
    workload = _BY_NAME.get(canonical_name(name))
    if workload is None:
        import difflib

        close = difflib.get_close_matches(name, list(_BY_NAME), n=1)
        raise KernelLookupError(
            "KERNEL_UNKNOWN",
            f"no library kernel named {name!r}",
            f"did you mean {close[0]!r}?" if close else f"one of: {', '.join(_BY_NAME)}",
        )
    return library_kernel(workload)


@dataclass(frozen=True)
class LineageStep:
    """One rung of a kernel lineage: a library kernel and the one mechanism it adds to the rung before it
    (`mechanism` is a stable id, `adds` says what it is in a line)."""

    kernel: str
    mechanism: str
    adds: str


def lineages() -> tuple[str, ...]:
    """The families that have a lineage, in the order their first rungs are declared."""
    return tuple(dict.fromkeys(w.rung.family for w in WORKLOADS if w.rung is not None))


def lineage(family: str) -> tuple[LineageStep, ...]:
    """The lineage of `family` (``"gemm"``, ``"gemm_residual"``): its rungs in declaration order, from the naive
    kernel to the expert one, each adding one mechanism to the one before it (docs/gemm.md). Raises
    `KernelLookupError` ``LINEAGE_UNKNOWN`` for a family without one."""
    steps = tuple(
        LineageStep(w.name, w.rung.mechanism, w.rung.adds)
        for w in WORKLOADS
        if w.rung is not None and w.rung.family == family
    )
    if not steps:
        raise KernelLookupError(
            "LINEAGE_UNKNOWN", f"no kernel lineage named {family!r}", f"one of: {', '.join(lineages())}"
        )
    return steps


def torch_check(entry: LibraryKernel, shape: dict[str, int], seed: int = 0) -> tuple[float, float]:
    """(largest difference between the reference on numpy arrays and on torch tensors, largest difference between
    the interpreted kernel and the reference on torch tensors), both relative to the output scale."""
    import torch

    from argus.interp import run_kernel

    rng = np.random.default_rng(seed)
    arrays = entry.make(shape, rng)
    tensors = {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
    want_torch = {k: v.numpy() for k, v in entry.torch_reference(tensors).items()}
    want_numpy = entry.reference({k: v.copy() for k, v in arrays.items()})
    run_kernel(entry.kernel.trace(**entry.params), arrays)
    ref_gap = kernel_gap = 0.0
    for name, want in want_torch.items():
        scale = max(1.0, float(np.abs(want).max()))
        ref_gap = max(ref_gap, float(np.abs(want_numpy[name] - want).max()) / scale)
        kernel_gap = max(kernel_gap, float(np.abs(arrays[name] - want).max()) / scale)
    return ref_gap, kernel_gap


def check_on_interpreter(entry: LibraryKernel, shape: dict[str, int], seed: int = 0) -> float:
    """Run `entry` on the interpreter at `shape`; return the largest error relative to the
    reference's scale (0 when exact). Raises nothing for a mismatch: the caller decides."""
    from argus.interp import SCHEDULES, has_roles, run_kernel
    from argus.interp.machine import check_assumptions, check_memory

    kernel = entry.kernel.trace(**entry.params)
    check_assumptions(kernel, shape)  # sizes the kernel excludes are refused, with the assumption
    check_memory(kernel, shape)  # before the inputs are built: a size too large is refused, with the bytes needed
    worst = 0.0
    for schedule in SCHEDULES if has_roles(kernel) else SCHEDULES[:1]:  # warp roles: every schedule
        rng = np.random.default_rng(seed)
        arrays = entry.make(shape, rng)
        expected = entry.reference({k: v.copy() for k, v in arrays.items()})
        run_kernel(kernel, arrays, schedule)
        for name, want in expected.items():
            got = arrays[name]
            if not np.all(np.isfinite(got)):
                return float("inf")
            scale = max(1.0, float(np.abs(want).max()))
            worst = max(worst, float(np.abs(got - want).max()) / scale)
    return worst


def load(spec: str) -> Any:
    """A library kernel by name, or ``FILE.py:NAME`` (a `LibraryKernel` or an ``@argus.kernel``
    defined in that file)."""
    if ":" not in spec or not spec.split(":", 1)[0].endswith(".py"):
        return get_kernel(spec)
    import importlib.util
    import pathlib

    path_text, attr = spec.rsplit(":", 1)
    path = pathlib.Path(path_text)
    if not path.is_file():
        raise KernelLookupError("KERNEL_FILE", f"no such file: {path}", "give FILE.py:function with an existing file")
    module_spec = importlib.util.spec_from_file_location(f"argus_user_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise KernelLookupError("KERNEL_FILE", f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module  # as an import does: torch.compile and pickle look modules up by name
    try:
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_spec.name, None)
            raise
    except SyntaxError as e:
        raise KernelLookupError(
            "KERNEL_FILE_SYNTAX",
            f"{e.filename or path}:{e.lineno}: {e.msg}\n    {(e.text or '').rstrip()}",
            "fix the syntax error at that line",
        ) from None
    except ArgusError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        import traceback

        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == str(path)]
        where = f"{path}:{frames[-1].lineno}: " if frames else f"{path}: "
        raise KernelLookupError(
            "KERNEL_FILE_IMPORT",
            f"{where}importing the file raised {type(e).__name__}: {e}",
            "run `python FILE.py` to see the full error",
        ) from None
    if not hasattr(module, attr):
        raise KernelLookupError("KERNEL_UNKNOWN", f"{path} defines no {attr!r}")
    return getattr(module, attr)


def parse_shape(text: str) -> dict[str, int]:
    """``"M=128,N=64"`` -> ``{"M": 128, "N": 64}``."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if not name.isidentifier() or not value.strip().isdigit() or int(value) < 1:
            raise KernelLookupError(
                "KERNEL_BAD_SHAPE", f"cannot read {part!r} in shape {text!r}", "write NAME=VALUE pairs, e.g. M=128,N=64"
            )
        out[name] = int(value)
    return out
