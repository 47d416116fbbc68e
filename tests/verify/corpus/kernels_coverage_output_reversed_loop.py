"""Each block walks its row's four column tiles from the last to the first: the window's column origin is
``(3 - i) * BN`` for ``i < 4``, a tile index that falls as the loop runs. Every tile 0..3 is written.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", 512), T.f32], Y: T.Tensor[("M", 512), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for i in T.serial(4):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, 3 - i), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, 3 - i), (BM, BN)))
