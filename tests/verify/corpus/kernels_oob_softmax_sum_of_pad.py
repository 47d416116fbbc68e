"""Row softmax that masks the maximum but not the sum: the load pads with 0, the maximum is taken over
`T.where(col < N, x, -inf)`, but the exponentials are computed from the unmasked `x`, so every padded column adds
`exp(0 - max)` to the row sum.

expect: violated
code: OOB_MASKED_REDUCTION
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
        row_max = T.reduce_max(T.where(T.index(x0, 1) < N, x0, float("-inf")), axis=1)
        e = T.exp2((x0 - row_max[:, None]) * LOG2E)  # BUG: exp of the padding, not masked
        row_sum = T.reduce_sum(e, axis=1)  # <- OOB_MASKED_REDUCTION
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))
