"""The built-in tasks: the problems declared in `argus.kernels.workloads` (vector add, softmax, layer norm, GEMM,
Hopper GEMM, GEMM + residual + ReLU, flash attention, the MoE grouped GEMM), each with its reference, sizes,
FLOP/byte counts, baselines and what a candidate may not call, and with the library kernels declared on it.

Nothing here describes a workload: each `Task` is derived from its `Problem` declaration. Tensor names and order
match the library kernels' parameters, so a library kernel runs on its task as is. A reference is written once
(`argus.kernels.arrays`): run on float64 inputs it is the correctness reference, on the task's own dtypes the eager
baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from argus.kernels.declarations import Draw, Problem, ProblemSizeError
from argus.kernels.registry import canonical_name
from argus.kernels.workloads import ATTENTION_CALLS, ATTENTION_OPS, MATMUL_CALLS, MATMUL_OPS, PROBLEMS, WORKLOADS
from argus.tasks.base import Task, TaskError, TensorSpec

__all__ = [
    "ATTENTION_CALLS",
    "ATTENTION_OPS",
    "MATMUL_CALLS",
    "MATMUL_OPS",
    "all_tasks",
    "get_task",
    "task_from_problem",
    "task_of_kernel",
]


def _sampler(draw: Draw | None) -> Any:
    """The problem's draw as a `TensorSpec` sampler: sizes it cannot draw at are a `TaskError`."""
    if draw is None:
        return None

    def sample(shape: tuple[int, ...], sizes: Mapping[str, int], g: Any) -> Any:
        try:
            return draw(shape, sizes, g)
        except ProblemSizeError as e:
            raise TaskError(e.code, e.message, e.hint) from None

    return sample


def task_from_problem(problem: Problem) -> Task:
    """The `Task` of a declared problem; its kernels are the workloads declared on it, in declaration order."""
    return Task(
        problem.name,
        problem.description,
        tuple(TensorSpec(t.name, t.shape, t.dtype, t.output, _sampler(t.draw), t.derive) for t in problem.tensors),
        problem.reference,
        dict(problem.cpu_sizes),
        tuple(dict(s) for s in problem.bench_sizes),
        problem.flops,
        problem.moved_bytes,
        kernels=tuple(w.name for w in WORKLOADS if w.problem is problem),
        baselines=dict(problem.baselines),
        default_baselines=problem.default_baselines,
        forbidden=problem.forbidden,
        forbidden_ops=problem.forbidden_ops,
    )


def all_tasks() -> list[Task]:
    """Every built-in task, in the order of their declarations (`argus.kernels.workloads.PROBLEMS`)."""
    return [task_from_problem(p) for p in PROBLEMS]


def get_task(name: str) -> Task:
    """The built-in task `name` (``TASK_UNKNOWN`` with a suggestion if there is none), or the task of your own
    kernel when `name` is a user task name (``FILE.py:NAME[...]``, `argus.tasks.user`)."""
    from argus.tasks.user import is_user_task, user_task

    if is_user_task(name):
        return user_task(name)
    problems = {p.name: p for p in PROBLEMS}
    if name not in problems:
        import difflib

        close = difflib.get_close_matches(name, list(problems), n=1)
        raise TaskError(
            "TASK_UNKNOWN",
            f"no built-in task named {name!r}",
            f"did you mean {close[0]!r}?" if close else f"one of: {', '.join(problems)}",
        )
    return task_from_problem(problems[name])


def task_of_kernel(kernel_name: str) -> Task:
    """The built-in task a library kernel implements (an old kernel name finds its kernel's task)."""
    name = canonical_name(kernel_name)
    for workload in WORKLOADS:
        if workload.name == name:
            return task_from_problem(workload.problem)
    raise TaskError(
        "TASK_UNKNOWN",
        f"no built-in task is implemented by the library kernel {kernel_name!r}",
        "name a task instead (argus bench TASK)",
    )
