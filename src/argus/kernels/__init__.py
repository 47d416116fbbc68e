"""The kernel library, written in the argus DSL: elementwise kernels, softmax and layer norm, the GEMM ladder from
naive to expert in ladder order (`gemm`), the held-out GEMM + residual + ReLU family (`gemm_residual`) and flash
attention (`attention`). Each workload is declared once (`argus.kernels.workloads`: its kernel, task, reference,
shapes, tolerance, parameters and lineage position); the registry (`argus.kernels.registry`) and the built-in tasks
(`argus.tasks.builtin`) are derived from those declarations. `argus.kernels.user` makes a kernel of your own (an
``@argus.kernel`` with a reference) a `LibraryKernel` like them."""

from argus.kernels.registry import LibraryKernel, LineageStep, all_kernels, get_kernel, lineage, lineages

__all__ = ["LibraryKernel", "LineageStep", "all_kernels", "get_kernel", "lineage", "lineages"]
