"""The kernel library, written in the argus DSL. Each workload is declared once (`argus.kernels.workloads`: its
kernel, task, reference, shapes, tolerance, parameters and lineage position); the registry
(`argus.kernels.registry`) and the built-in tasks (`argus.tasks.builtin`) are derived from those declarations."""

from argus.kernels.registry import LibraryKernel, LineageStep, all_kernels, get_kernel, lineage, lineages

__all__ = ["LibraryKernel", "LineageStep", "all_kernels", "get_kernel", "lineage", "lineages"]
