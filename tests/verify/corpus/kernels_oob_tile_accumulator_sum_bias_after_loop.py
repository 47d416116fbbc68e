"""Row sum of ``x + b`` (a per-row bias) with a tile-shaped accumulator, as `oob_tile_accumulator_sum_ok`, but the
bias is added to every lane of the accumulator once after the loop: a lane past N has folded in only padding, it
holds no column, yet it adds `b` to the row (with N < BN, one tile, the sum gets ``BN * b`` instead of ``N * b``).

expect: violated
code: OOB_MASKED_REDUCTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32], B: T.Tensor[("M",), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128
):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        acc = T.alloc_fragment((BM, BN), T.f32)  # per lane: the sum of its columns of every tile
        b = T.alloc_reduced(acc, axis=1)  # the row's bias, held by the threads of its row
        T.copy(B.tile(bm, BM), b)
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, k), (BM, BN)), x, pad=0.0)  # past N: 0, the identity of the sum
            T.copy(acc + x, acc)
        T.copy(acc + b[:, None], acc)  # BUG: the bias lands on lanes that hold no column
        T.copy(T.reduce_sum(acc, axis=1), Y.tile(bm, BM))  # <- OOB_MASKED_REDUCTION
