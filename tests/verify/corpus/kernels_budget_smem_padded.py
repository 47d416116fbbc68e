"""IR that did not come from the tracer: a sandbox sends a candidate's traced IR back as data, and this IR's
shared layout was padded on the way (each row of 64 elements to 1024), so the three stages need
3 * 128 * 1024 * 2 bytes, far above the 227 KiB a block may use. The tracer refuses such a buffer
(`DSL_SMEM_BUDGET`, from the same carve), so only the verifier's budget check can catch it here.

expect: violated
code: BUDGET_SMEM
fact: BUDGET_SMEM details.total_bytes > 232448
"""

import argus
import argus.lang as T
from argus.ir.serialize import kernel_from_data, kernel_to_data
from argus.layout import Layout


@argus.kernel
def traced(A: T.Tensor[("M", "K"), T.bf16], Out: T.Tensor[("M", "K"), T.bf16], BM: int = 128, BK: int = 64):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sA = T.alloc_shared((3, BM, BK), T.bf16, layout=Layout((3, BM, BK), (BM * BK, BK, 1)))  # <- BUDGET_SMEM
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA[k % 3])
            T.barrier()
            T.copy(sA[k % 3], Out.tile((bm, k), (BM, BK)))
            T.barrier()


def _pad_rows(node):
    """The shared buffer's layout, rows padded to 1024 elements (in the IR's data form)."""
    if isinstance(node, dict):
        if node.get("$type") == "argus.layout.layout.Layout" and node.get("shape") == [3, 128, 64]:
            node["stride"] = [128 * 1024, 1024, 1]
        for value in node.values():
            _pad_rows(value)
    elif isinstance(node, list):
        for value in node:
            _pad_rows(value)
    return node


KERNEL = kernel_from_data(_pad_rows(kernel_to_data(traced.trace())))
