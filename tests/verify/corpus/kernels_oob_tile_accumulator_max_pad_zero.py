"""Row maximum with a tile-shaped accumulator, as `oob_tile_accumulator_max_ok`, but the tile copy keeps the
default pad 0: past N a lane folds in 0, which is not the identity of the maximum, so a row of negative values
gets 0 as its maximum (the accumulator's lane becomes padding of unknown value, reduced with real lanes).

expect: violated
code: OOB_MASKED_REDUCTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        acc = T.alloc_fragment((BM, BN), T.f32)  # per lane: the maximum of its columns of every tile
        T.fill(acc, float("-inf"))
        for k in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, k), (BM, BN)), x)  # BUG: past N reads 0, which beats a row of negative values
            T.copy(T.maximum(acc, x), acc)
        T.copy(T.reduce_max(acc, axis=1), Y.tile(bm, BM))  # <- OOB_MASKED_REDUCTION
