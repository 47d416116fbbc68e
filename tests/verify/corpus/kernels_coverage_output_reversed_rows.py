"""Rows of any length walked from the last column tile to the first: the window's column origin is
``(cdiv(N, BN) - 1 - j) * BN`` for ``j < cdiv(N, BN)``, falling with the loop and depending on the size. The last
iteration starts at column 0 for every N, so every element is written.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for j in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, T.cdiv(N, BN) - 1 - j), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, T.cdiv(N, BN) - 1 - j), (BM, BN)))
