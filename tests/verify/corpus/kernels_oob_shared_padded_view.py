"""A tile stored through a padded view (rows of 72 elements) of a shared buffer allocated unpadded (rows of
64): the view covers the buffer's shape, but its last rows lie past the 4096 elements the buffer was given
and overwrite the buffer after it.

expect: violated
code: OOB_SHARED
fact: OOB_SHARED counterexample.variables.allocated_elements == 4096
fact: OOB_SHARED counterexample.variables.offset >= 4096
"""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", 64), T.bf16],
    Y: T.Tensor[("M", 64), T.f32],
    BM: int = 64,
):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sX = T.alloc_shared((BM, 64), T.bf16)
        sPad = sX.view(Layout((BM, 64), (72, 1)))  # BUG: padding the allocation does not have
        T.copy(X.tile((bm, 0), (BM, 64)), sPad)  # <- OOB_SHARED
        T.barrier()
        r = T.alloc_fragment((BM, 64), T.f32)
        T.copy(sPad, r)
        T.copy(r, Y.tile((bm, 0), (BM, 64)))
