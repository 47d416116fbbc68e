"""The task of your own kernel: an ``@argus.kernel`` with a reference (`argus.kernels.user`) turned into a `Task`,
so the gate, `argus bench` and `argus optimize` take it like a built-in workload.

A user task is named by what rebuilds it anywhere (a gate worker included): ``FILE.py:NAME`` (the kernel, whose
decorator gives the reference and sizes), optionally followed by ``[ref=FILE.py:function]`` (a reference given on
the command line) and ``[M=100,N=72]`` (sizes given on the command line), e.g. ``kernels/mine.py:bias_relu[N=1000]``.
`argus.tasks.builtin.get_task` resolves such names here.

The reference is the user's definition of the task: like a KernelBench problem file it is trusted and runs where
the verdict is decided (`docs/eval.md`, threat model); the kernel file's module-level code runs there too when it
is imported for it. Candidates derived from the kernel are gated as usual.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from argus.tasks.base import Task, TaskError, TensorSpec

_NAME = re.compile(r"^(?P<kernel>.+?\.py:[A-Za-z_]\w*)(?:\[ref=(?P<ref>[^\]]+)\])?(?:\[(?P<sizes>[^\]]*)\])?$")


def is_user_task(name: str) -> bool:
    return bool(_NAME.match(name))


def kernel_of(name: str) -> tuple[str, str]:
    """(file, function) of the kernel a user task name names."""
    match = _NAME.match(name)
    if match is None:
        raise TaskError("TASK_UNKNOWN", f"{name!r} is not a user task name", "FILE.py:NAME[ref=FILE.py:fn][M=..,N=..]")
    path, function = match["kernel"].rsplit(":", 1)
    return path, function


def user_task_name(kernel: str, *, reference: str | None = None, sizes: Mapping[str, int] | None = None) -> str:
    """The name of the task of `kernel` (``FILE.py:NAME``) with an optional reference and sizes."""
    name = kernel
    if reference:
        name += f"[ref={reference}]"
    if sizes:
        name += "[" + ",".join(f"{k}={int(v)}" for k, v in sizes.items()) + "]"
    return name


def user_task(name: str) -> Task:
    """The `Task` a user task name describes (see the module docstring)."""
    from argus.ir.types import dtype_from_name
    from argus.kernels.registry import LibraryKernel, parse_shape
    from argus.kernels.user import call_reference, describe, load_reference, resolve, resolve_shape

    match = _NAME.match(name)
    if match is None:
        raise TaskError("TASK_UNKNOWN", f"{name!r} is not a user task name", "FILE.py:NAME[ref=FILE.py:fn][M=..,N=..]")
    sizes = parse_shape(match["sizes"] or "")
    entry = resolve(match["kernel"], reference=match["ref"], sizes=sizes)
    if not isinstance(entry, LibraryKernel):
        raise TaskError(
            "TASK_NO_REFERENCE",
            f"{match['kernel']} has no reference, so it defines no task",
            "give one: @argus.kernel(reference=my_reference), or --reference FILE.py:function",
        )
    traced = entry.kernel.trace(**entry.params)
    inputs, outputs = describe(traced)
    sizes = dict(entry.default_shape)
    for t in traced.tensors:
        resolve_shape(t, traced, sizes)  # every size given (`KERNEL_SIZES` names the missing ones)

    def spec(buffer: Any, output: bool) -> TensorSpec:
        shape = tuple(e if isinstance(e, int) else str(e) for e in buffer.shape)
        return TensorSpec(buffer.name, shape, buffer.dtype.name, output=output)

    out_specs = {id(o) for o in outputs}
    tensors = tuple(spec(t, id(t) in out_specs) for t in traced.tensors)
    input_names = [t.name for t in inputs]
    reference = load_reference(match["ref"])[0] if match["ref"] else entry.kernel.reference

    def run(*values: Any) -> Any:
        got = call_reference(reference, traced, dict(zip(input_names, values, strict=True)))
        result = tuple(got[o.name] for o in outputs)
        return result[0] if len(result) == 1 else result

    def moved_bytes(at: Mapping[str, int]) -> float:
        total = 0
        for t in tensors:
            count = 1
            for extent in t.resolve(at):
                count *= extent
            total += count * dtype_from_name(t.dtype).bits // 8
        return float(total)

    return Task(
        name=name,
        description=entry.description,
        tensors=tensors,
        reference=run,
        small_sizes=sizes,
        bench_sizes=(sizes,),
        flops=lambda at: 0.0,  # not declared: throughput is reported in bytes moved
        moved_bytes=moved_bytes,
    )
