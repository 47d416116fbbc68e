"""The interleaved sum and maximum of `oob_tile_accumulators_interleaved_ok` with the maximum's term unmasked: its
padded columns read 0, which is not the identity of a maximum, so a row of negative values gets 0.

expect: violated
code: OOB_MASKED_REDUCTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32], S: T.Tensor[("M",), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128
):
    T.assume("N % 4 == 0")  # rows in whole 16-byte vectors
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        total = T.alloc_fragment((BM, BN), T.f32)
        top = T.alloc_fragment((BM, BN), T.f32)
        T.fill(total, 0.0)
        T.fill(top, float("-inf"))
        for k in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, k), (BM, BN)), x)  # padded columns read 0
            new_total = total + x
            new_top = T.maximum(top, x)  # BUG: past N the term must be -inf (T.where(col + k * BN < N, x, -inf))
            T.copy(new_total, total)
            T.copy(new_top, top)
        T.copy(T.reduce_sum(total, axis=1), S.tile(bm, BM))
        T.copy(T.reduce_max(top, axis=1), Y.tile(bm, BM))  # <- OOB_MASKED_REDUCTION
