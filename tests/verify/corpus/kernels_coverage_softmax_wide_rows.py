"""A row softmax with one tile of BN columns per row and no assumption that rows fit: for N > BN the columns
past BN are never written (the interpreter shows the stale values; every other check holds).

expect: violated
code: COVERAGE_OUTPUT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))
        row_max = T.reduce_max(x, axis=1)
        e = T.exp(x - row_max[:, None])
        row_sum = T.reduce_sum(e, axis=1)
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))  # <- COVERAGE_OUTPUT
