"""Shared buffers with an explicit padded layout: each row of 64 elements is padded to 1024, so the
three stages need 3 * 128 * 1024 * 2 bytes, far above the 227 KiB a block may use (the tracer counts
elements, not the layout's physical extent).

expect: violated
code: BUDGET_SMEM
fact: BUDGET_SMEM details.total_bytes > 232448
"""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def KERNEL(A: T.Tensor[("M", "K"), T.bf16], Out: T.Tensor[("M", "K"), T.bf16], BM: int = 128, BK: int = 64):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sA = T.alloc_shared((3, BM, BK), T.bf16, layout=Layout((3, BM, BK), (BM * 1024, 1024, 1)))  # <- BUDGET_SMEM
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA[k % 3])
            T.barrier()
            T.copy(sA[k % 3], Out.tile((bm, k), (BM, BK)))
            T.barrier()
