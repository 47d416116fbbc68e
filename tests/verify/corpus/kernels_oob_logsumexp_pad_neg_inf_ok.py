"""Row log-sum-exp with the padding chosen at the load and no mask: the copy pads with -inf, which is the identity
of the maximum, `-inf - max` stays -inf and `exp2(-inf) = 0` is the identity of the sum.

expect: verified
"""

import argus
import argus.lang as T

LOG2E = 1.4426950408889634


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128):
    T.assume(N <= BN)  # one column tile per row
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))
        row_max = T.reduce_max(x, axis=1)
        row_sum = T.reduce_sum(T.exp2((x - row_max[:, None]) * LOG2E), axis=1)
        T.copy(row_max + T.log2(row_sum) / LOG2E, Y.tile(bm, BM))
