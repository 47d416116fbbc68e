"""The kernel library, written in the argus DSL. Each kernel comes with a reference, a default
small shape and an input generator (`argus.kernels.registry`)."""

from argus.kernels.registry import LibraryKernel, LineageStep, all_kernels, get_kernel, lineage, lineages

__all__ = ["LibraryKernel", "LineageStep", "all_kernels", "get_kernel", "lineage", "lineages"]
