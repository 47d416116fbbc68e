"""Row softmax that masks the padded columns with T.where, off by one: `col < N + 1` keeps column N, which the
load padded with 0, so on a partial tile a 0 wins the maximum of an all-negative row. The finding names the mask.

expect: violated
code: OOB_MASKED_REDUCTION
fact: OOB_MASKED_REDUCTION counterexample.element.coord.1 == counterexample.shapes.N
"""

import argus
import argus.lang as T

LOG2E = 1.4426950408889634


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x0 = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x0)
        x = T.where(T.index(x0, 1) < N + 1, x0, float("-inf"))  # <- OOB_MASKED_REDUCTION  (BUG: col < N)
        row_max = T.reduce_max(x, axis=1)
        e = T.exp2((x - row_max[:, None]) * LOG2E)
        row_sum = T.reduce_sum(e, axis=1)
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))
