"""A row sum and a row maximum from two tile-shaped accumulators folded in interleaved order: both new values are
computed, then both copied back. The sum's tile pads with 0 and the maximum's term is masked to -inf past N, the
identities of each, so padding adds nothing to either. (The fold was recognized only when its copy-back was the
very next statement: the sum, copied back one statement later, was flagged.)

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32], S: T.Tensor[("M",), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128
):
    T.assume("N % 4 == 0")  # rows in whole 16-byte vectors
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        total = T.alloc_fragment((BM, BN), T.f32)  # per lane: the sum of its columns of every tile
        top = T.alloc_fragment((BM, BN), T.f32)  # per lane: their maximum
        T.fill(total, 0.0)
        T.fill(top, float("-inf"))
        for k in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, k), (BM, BN)), x)  # padded columns read 0
            new_total = total + x
            new_top = T.maximum(top, T.where(T.index(x, 1) + k * BN < N, x, float("-inf")))
            T.copy(new_total, total)
            T.copy(new_top, top)
        T.copy(T.reduce_sum(total, axis=1), S.tile(bm, BM))
        T.copy(T.reduce_max(top, axis=1), Y.tile(bm, BM))
