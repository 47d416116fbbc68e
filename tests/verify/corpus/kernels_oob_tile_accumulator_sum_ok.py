"""Row sum over any number of column tiles, folding each tile elementwise into a tile-shaped accumulator and
reducing once after the loop: the last tile pads with 0, the identity of the sum, so adding it leaves the
accumulator's padded lanes as they were (a partial sum of real elements, or the fill's 0).

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        acc = T.alloc_fragment((BM, BN), T.f32)  # per lane: the sum of its columns of every tile
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, k), (BM, BN)), x, pad=0.0)  # past N: 0, the identity of the sum
            T.copy(acc + x, acc)
        T.copy(T.reduce_sum(acc, axis=1), Y.tile(bm, BM))
