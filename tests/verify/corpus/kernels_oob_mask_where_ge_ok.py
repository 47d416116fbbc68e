"""Row softmax whose mask is written the other way round, `T.where(col >= N, -inf, x)`, over a load padded with 0:
the padded columns become the constant -inf, so the maximum ignores them and `exp2(-inf - max) = 0` adds nothing
to the sum. (Rows past M are padding throughout and are dropped by the store.)

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
        x = T.where(T.index(x0, 1) >= N, float("-inf"), x0)
        row_max = T.reduce_max(x, axis=1)
        e = T.exp2((x - row_max[:, None]) * LOG2E)
        row_sum = T.reduce_sum(e, axis=1)
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))
