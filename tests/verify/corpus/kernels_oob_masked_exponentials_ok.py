"""Row softmax that masks the exponentials instead of the input: the load pads with 0, the maximum is taken over
`T.where(valid, x, -inf)`, and `T.where(valid, p, 0)` zeroes the exponentials of the padded columns before the sum.

expect: verified
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
        valid = T.index(x0, 1) < N
        row_max = T.reduce_max(T.where(valid, x0, float("-inf")), axis=1)
        p = T.where(valid, T.exp2((x0 - row_max[:, None]) * LOG2E), 0.0)
        row_sum = T.reduce_sum(p, axis=1)
        T.copy(p / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))
