"""Eight column tiles written from the last to the first by two stores per iteration, each falling by two tiles:
``7 - 2 * i`` (tiles 7, 5, 3, 1) and ``6 - 2 * i`` (tiles 6, 4, 2, 0) for ``i < 4``. Neither store's windows touch
one another (a gap of one tile between them); together they cover every column.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", 512), T.f32], Y: T.Tensor[("M", 512), T.f32], BM: int = 8, BN: int = 64):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for i in T.serial(4):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, 7 - 2 * i), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, 7 - 2 * i), (BM, BN)))
            z = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, 6 - 2 * i), (BM, BN)), z)
            T.copy(z * 2.0, Y.tile((bm, 6 - 2 * i), (BM, BN)))
