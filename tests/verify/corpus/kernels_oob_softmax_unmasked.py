"""Row softmax that copies X with the default pad 0: on a partial tile (N not a multiple of BN) the
masked columns read 0, which wins the row maximum of an all-negative row. Since padding is tracked through every
operation, the row sum is reported too: it adds ``exp2(0 - max)`` for every padded column (a second finding).

expect: violated
code: OOB_MASKED_REDUCTION
fact: OOB_MASKED_REDUCTION counterexample.actual.masked == True
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x)  # BUG: pad must be -inf before a maximum
        row_max = T.reduce_max(x, axis=1)  # <- OOB_MASKED_REDUCTION
        e = T.exp2((x - row_max[:, None]) * 1.4426950408889634)
        row_sum = T.reduce_sum(e, axis=1)
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))
