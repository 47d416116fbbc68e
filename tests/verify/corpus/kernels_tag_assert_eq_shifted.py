"""T.assert_tag_eq between a tile and the tile one column block over: the first element where they
differ is reported with both tags.

expect: violated
code: TAG_ASSERT
fact: TAG_ASSERT counterexample.expected.name == "X"
"""

import argus
import argus.lang as T
from argus.lang.tags import assert_tag_eq


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 16, BN: int = 32):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        x = T.alloc_fragment((BM, BN), T.f32)
        y = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), x)
        T.copy(X.tile((bm, bn + 1), (BM, BN)), y)  # BUG: the next column block
        assert_tag_eq(x, y)  # <- TAG_ASSERT
        T.copy(x + y, Y.tile((bm, bn), (BM, BN)))
