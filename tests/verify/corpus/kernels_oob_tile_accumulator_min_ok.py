"""Row minimum over any number of column tiles, folding each tile elementwise into a tile-shaped accumulator
(`T.minimum`) and reducing once after the loop: the last tile pads with +inf, the identity of the minimum, so
the accumulator's padded lanes keep what they held (the minimum of real elements, or the fill's +inf). The row
minimum is the negated maximum of the negation.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        acc = T.alloc_fragment((BM, BN), T.f32)  # per lane: the minimum of its columns of every tile
        T.fill(acc, float("inf"))
        for k in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, k), (BM, BN)), x, pad=float("inf"))  # past N: +inf, the identity of the minimum
            T.copy(T.minimum(acc, x), acc)
        T.copy(-T.reduce_max(-acc, axis=1), Y.tile(bm, BM))  # the DSL's row minimum
