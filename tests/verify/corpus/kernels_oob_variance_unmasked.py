"""Two-pass layer norm (mean, then the mean of the squared deviations) that masks the first pass only: the padded
columns read 0, which is right for the sum of x, but `(0 - mean)^2` is not 0, so every padded column adds `mean^2`
to the variance.

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
        T.copy(X.tile((bm, 0), (BM, BN)), x)  # padded columns read 0: the sum of x is exact
        mean = T.reduce_sum(x, axis=1) / N
        xc = x - mean[:, None]  # BUG: padded columns must be masked here (T.where(col < N, x - mean, 0))
        var = T.reduce_sum(xc * xc, axis=1) / N  # <- OOB_MASKED_REDUCTION
        T.copy(xc * T.rsqrt(var + 1e-5)[:, None], Y.tile((bm, 0), (BM, BN)))
