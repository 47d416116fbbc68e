"""Baselines, timed by the same harness in the same run as the candidates: PyTorch eager (the task's
reference in its own dtypes), ``torch.compile`` of it, and each task's named library baselines — cuBLAS through
``torch.matmul``, ``scaled_dot_product_attention`` with its backend named (``sdpa-flash``, ``sdpa-cudnn``,
``sdpa-efficient``, ``sdpa-math``), ``torch._grouped_mm``.

Timing needs a GPU. Without one, `check_baselines` still runs each baseline that PyTorch can run on the CPU
against the float64 reference, so a baseline that computes something else is caught before it is timed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from argus.tasks.base import ModuleTask, Task


def baseline_functions(task: Task, names: Sequence[str], device: Any = "cuda") -> dict[str, Callable[..., Any] | str]:
    """Each named baseline as a function of the task's inputs, or a string saying why it is not available
    (``torch.compile`` is only built for a GPU, where it is checked and timed)."""
    out: dict[str, Callable[..., Any] | str] = {}
    for name in names:
        if name == "eager":
            out[name] = task.reference
        elif name == "compile" and not str(device).startswith("cuda"):
            out[name] = "torch.compile is checked and timed on a GPU only"
        elif name == "compile":
            try:
                import torch

                out[name] = torch.compile(task.reference)
            except Exception as e:  # noqa: BLE001 - torch.compile unavailable: say so
                out[name] = f"torch.compile is not available: {e}"
        elif name in task.baselines:
            out[name] = task.baselines[name]
        else:
            out[name] = f"task {task.name} has no baseline {name!r} (it has: {', '.join(task.baseline_names)})"
    return out


def check_baselines(task: Task, sizes: dict[str, int], names: Sequence[str], device: Any = "cpu") -> dict[str, Any]:
    """Run each baseline once on a native draw and compare it with the float64 reference at the task's
    tolerance: name -> ``{"correct": bool, "max_abs_err": ..., "reason": ...}`` or ``{"skipped": reason}``
    (``torch.compile`` is only checked on a GPU, where it is timed)."""
    import torch

    from argus.eval.correctness import as_outputs, task_precision, to_device, to_high
    from argus.eval.tolerance import compare, input_scale, tolerance_for

    tol = tolerance_for(task_precision(task) or torch.float32)
    inputs = to_device(task.sample(sizes, 12345, device), device)
    want = [r.detach().to("cpu") for r in as_outputs(task.reference(*to_high(inputs)))]
    results: dict[str, Any] = {}
    for name, fn in baseline_functions(task, names, device).items():
        if isinstance(fn, str):
            results[name] = {"skipped": fn}
            continue
        try:
            got = as_outputs(fn(*inputs))
        except Exception as e:  # noqa: BLE001 - e.g. an SDPA backend this device lacks
            results[name] = {"skipped": f"does not run here: {type(e).__name__}: {str(e).splitlines()[0][:160]}"}
            continue
        scale = input_scale(inputs)
        comparisons = [compare(g, w, tol, input_scale=scale) for g, w in zip(got, want, strict=False)]
        ok = len(got) == len(want) and all(c.ok for c in comparisons)
        results[name] = {
            "correct": ok,
            "max_abs_err": max((c.details.get("max_abs_err", 0.0) for c in comparisons), default=0.0),
            **({} if ok else {"reason": next((c.reason for c in comparisons if not c.ok), "output count differs")}),
        }
    return results


def time_baselines(
    task: Task,
    sizes: dict[str, int],
    names: Sequence[str],
    *,
    device: Any = "cuda",
    reps: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    graph: bool | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Time each named baseline on the GPU with `argus.eval.timing.time_cuda`: name -> ``{"timing": ...}`` or
    ``{"skipped": reason}``."""
    import torch

    from argus.eval.correctness import to_device
    from argus.eval.timing import time_cuda

    inputs = to_device(task.sample(sizes, seed, device), device)
    out: dict[str, Any] = {}
    for name, fn in baseline_functions(task, names, device).items():
        if isinstance(fn, str):
            out[name] = {"skipped": fn}
            continue
        try:
            with torch.no_grad():
                timing = time_cuda(
                    lambda fn=fn: fn(*inputs), device=device, reps=reps, warmup=warmup, flush_l2=flush_l2, graph=graph
                )
            out[name] = {"timing": timing.to_json()}
        except Exception as e:  # noqa: BLE001 - a baseline that cannot run here is reported, not fatal
            out[name] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    return out


def module_baseline_functions(
    task: ModuleTask, names: Sequence[str], device: Any = "cuda", seed: int = 0
) -> dict[str, Callable[..., Any] | str]:
    """PyTorch eager (``"eager"``: the reference module, built as the candidate is) and ``torch.compile`` of it
    (``"compile"``), each a function of the task's inputs, or a string saying why it is not available."""
    out: dict[str, Callable[..., Any] | str] = {}
    for name in names:
        if name not in ("eager", "compile"):
            out[name] = f"no baseline {name!r} for a module task (eager, compile)"
            continue
        try:
            model = task.build(task.model, seed, device)
            if name == "compile":
                import torch

                model = torch.compile(model)
            out[name] = model
        except Exception as e:  # noqa: BLE001 - said, not fatal
            out[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return out


def time_module_baselines(
    task: ModuleTask,
    names: Sequence[str],
    *,
    device: Any = "cuda",
    reps: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    graph: bool | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Time PyTorch eager (``"eager"``: the reference module) and ``torch.compile`` of it (``"compile"``)."""
    import torch

    from argus.eval.correctness import to_device
    from argus.eval.timing import time_cuda

    inputs = to_device(task.sample(seed, device), device)
    out: dict[str, Any] = {}
    for name, model in module_baseline_functions(task, names, device, seed).items():
        if isinstance(model, str):
            out[name] = {"skipped": model}
            continue
        try:
            with torch.no_grad():
                timing = time_cuda(
                    lambda m=model: m(*inputs), device=device, reps=reps, warmup=warmup, flush_l2=flush_l2, graph=graph
                )
            out[name] = {"timing": timing.to_json()}
        except Exception as e:  # noqa: BLE001
            out[name] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    return out
