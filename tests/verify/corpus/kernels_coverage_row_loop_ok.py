"""Rows of any length: each block walks its rows' column tiles in a loop and stores every one (the window's
column origin is j * BN over j < cdiv(N, BN)). Covered for every size.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for j in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, j), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, j), (BM, BN)))
