"""Row sum of ``x + b`` (a per-row bias) with a tile-shaped accumulator, as `oob_tile_accumulator_sum_ok`, but the
bias is added before the term is folded in: past N the term is ``0 + b``, padding of unknown value (there is no
column there), so every padded lane adds `b` to the row: the sum is off by ``b`` times the padded columns.

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
            T.copy(acc + (x + b[:, None]), acc)  # BUG: the bias lands on padded columns too
        T.copy(T.reduce_sum(acc, axis=1), Y.tile(bm, BM))  # <- OOB_MASKED_REDUCTION
