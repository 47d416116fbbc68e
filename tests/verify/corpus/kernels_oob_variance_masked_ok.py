"""Two-pass layer norm masked correctly: the padded columns read 0 for the mean, and the deviations are masked with
`T.where(col < N, x - mean, 0)` before they are squared and summed.

expect: verified
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
        xc = T.where(T.index(x, 1) < N, x - mean[:, None], 0.0)
        var = T.reduce_sum(xc * xc, axis=1) / N
        T.copy(xc * T.rsqrt(var + 1e-5)[:, None], Y.tile((bm, 0), (BM, BN)))
