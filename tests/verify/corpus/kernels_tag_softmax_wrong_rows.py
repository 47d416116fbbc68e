"""Softmax-style normalization whose row statistics come from the next tile of rows: the predicate
"the statistics used to rescale row r were computed from row r" fails.

expect: violated
code: TAG_ASSERT
fact: TAG_ASSERT counterexample.actual.name == "X"
"""

import argus
import argus.lang as T
from argus.lang.tags import assert_tag


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        stats = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))
        T.copy(X.tile((bm + 1, 0), (BM, BN)), stats, pad=float("-inf"))  # BUG: the next rows
        row_max = T.reduce_max(stats, axis=1)
        assert_tag(lambda v, m: v[0] == m[0], x, row_max[:, None])  # <- TAG_ASSERT
        T.copy(x - row_max[:, None], Y.tile((bm, 0), (BM, BN)))
