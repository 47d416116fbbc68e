"""Row softmax annotated with "the statistics used to rescale row r were computed from row r of X".

expect: verified
"""

import argus
import argus.lang as T
from argus.lang.tags import assert_tag


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))
        row_max = T.reduce_max(x, axis=1)
        e = T.exp2((x - row_max[:, None]) * 1.4426950408889634)
        row_sum = T.reduce_sum(e, axis=1)
        assert_tag(
            lambda v, m, s: (v[0] == m[0]) & (v[0] == s[0]) & (m.name == "X"), e, row_max[:, None], row_sum[:, None]
        )
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))
