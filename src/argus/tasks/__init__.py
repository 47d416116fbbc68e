"""Tasks: what a candidate must compute (`argus.tasks.base`). Built-in workloads (`argus.tasks.builtin`: vector add,
softmax, layer norm, GEMM, Hopper GEMM, attention, MoE grouped GEMM), the KernelBench loader
(`argus.tasks.kernelbench`), which reads problems from a directory and never copies them into the package, and the
task of a kernel of your own (`argus.tasks.user`, named ``FILE.py:NAME[...]``). A task is data: the gate
(`argus.eval`) builds its reference and poisoned outputs from it, and runs KernelBench (`argus.eval.kernelbench`).
"""

from argus.tasks.base import ModuleTask, Task, TaskError, TensorSpec, torch_dtype
from argus.tasks.builtin import all_tasks, get_task, task_of_kernel

__all__ = [
    "ModuleTask",
    "Task",
    "TaskError",
    "TensorSpec",
    "all_tasks",
    "get_task",
    "task_of_kernel",
    "torch_dtype",
]
