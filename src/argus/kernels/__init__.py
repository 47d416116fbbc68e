"""The kernel library, written in the argus DSL. Each kernel comes with a reference, a default
small shape and an input generator (`argus.kernels.registry`)."""

from argus.kernels.registry import LibraryKernel, all_kernels, get_kernel

__all__ = ["LibraryKernel", "all_kernels", "get_kernel"]
