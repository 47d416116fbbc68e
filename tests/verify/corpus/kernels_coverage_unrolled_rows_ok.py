"""A tile stored one row at a time by a Python loop the trace unrolls (``for h in range(BH)``: BH store sites,
row ``bm * BH + h`` each): together the sites store the whole BH-row tile of every block, so every element of Y is
written. Covered for every size (the run of sites is read as one window).

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BH: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BH), T.cdiv(N, BN), threads=32) as (bm, bn):
        for h in range(BH):
            x = T.alloc_fragment((1, BN), T.f32)
            T.copy(X.window((bm * BH + h, bn * BN), (1, BN)), x)
            T.copy(x * 2.0, Y.window((bm * BH + h, bn * BN), (1, BN)))
