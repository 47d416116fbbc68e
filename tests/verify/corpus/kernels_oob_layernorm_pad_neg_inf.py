"""Layer norm whose row copy pads with -inf (as softmax must), then sums the row: on a partial tile
the masked columns add -inf to the mean. Since padding is tracked through every operation, the variance's sum is
reported too: ``(-inf - mean)^2`` is +inf (a second finding).

expect: violated
code: OOB_MASKED_REDUCTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))  # BUG: a sum needs pad 0
        mean = T.reduce_sum(x, axis=1) / N  # <- OOB_MASKED_REDUCTION
        xc = x - mean[:, None]
        var = T.reduce_sum(xc * xc, axis=1) / N
        T.copy(xc * T.rsqrt(var + 1e-5)[:, None], Y.tile((bm, 0), (BM, BN)))
