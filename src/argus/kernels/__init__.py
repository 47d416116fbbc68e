"""The kernel library, written in the argus DSL: elementwise kernels, softmax and layer norm, the GEMM lineage from
naive to expert (`gemm_lineage`, `gemm`, `gemm_persistent_ws`), the held-out GEMM + residual + ReLU family
(`gemm_residual`) and flash attention (`attention`). Each kernel comes with a reference, a default small shape and an
input generator (`argus.kernels.registry`, which also names the lineages); `argus.kernels.user` makes a kernel of
your own (an ``@argus.kernel`` with a reference) a `LibraryKernel` like them."""

from argus.kernels.registry import LibraryKernel, LineageStep, all_kernels, get_kernel, lineage, lineages

__all__ = ["LibraryKernel", "LineageStep", "all_kernels", "get_kernel", "lineage", "lineages"]
