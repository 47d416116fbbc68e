"""The grouped smoothing step with ranks that repeat: each group of four arrives with ranks b % 2 (0, 1, 0, 1). Rank
0 adds 2^31 - 3 and the others 1, so two rank-0 arrivals flip the counter's top bit after three blocks: the fourth's
row may still be unwritten when the others read it.

expect: violated
code: RACE_GROUP_RANK
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("N", 256), T.f32],
    F: T.Tensor[("NF",), T.i32],
    H: T.Tensor[("N", 256), T.f32],
    Y: T.Tensor[("N", 256), T.f32],
):
    T.assume("N % 4 == 0")
    T.assume("NF >= N // 4")
    with T.grid(N, threads=64) as (b,):
        x = T.alloc_fragment((1, 256), T.f32)
        T.copy(X.tile((b, 0), (1, 256)), x)
        T.copy(x * 0.5, H.tile((b, 0), (1, 256)))
        T.group_barrier(F, b // 4, b % 2, 4)  # <- RACE_GROUP_RANK
        h = T.alloc_fragment((1, 256), T.f32)
        T.copy(H.tile((b // 4 * 4 + (b + 1) % 4, 0), (1, 256)), h)
        T.copy(x * 0.5 + h, Y.tile((b, 0), (1, 256)))
