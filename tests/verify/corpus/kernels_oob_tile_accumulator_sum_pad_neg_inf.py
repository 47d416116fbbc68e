"""Row sum with a tile-shaped accumulator, as `oob_tile_accumulator_sum_ok`, but the tile copy pads with -inf
(a maximum's padding): past N a lane adds -inf, which is not the identity of the sum, and the row sum is -inf.

expect: violated
code: OOB_MASKED_REDUCTION
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
            T.copy(X.tile((bm, k), (BM, BN)), x, pad=float("-inf"))  # BUG: -inf (a maximum's padding) swallows the sum
            T.copy(acc + x, acc)
        T.copy(T.reduce_sum(acc, axis=1), Y.tile(bm, BM))  # <- OOB_MASKED_REDUCTION
