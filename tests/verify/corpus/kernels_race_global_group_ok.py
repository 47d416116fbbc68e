"""The smoothing step of `kernels_race_global_neighbour` in groups of four rows: each group's blocks meet at the
group's counter (`T.group_barrier`, block b as rank b % 4) between storing their rows of H and reading the next row of
the group, so every read follows the store it reads. Verified: the reads of other blocks' stores, the ranks and the
counters.

expect: verified
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
        T.group_barrier(F, b // 4, b % 4, 4)
        h = T.alloc_fragment((1, 256), T.f32)
        T.copy(H.tile((b // 4 * 4 + (b + 1) % 4, 0), (1, 256)), h)
        T.copy(x * 0.5 + h, Y.tile((b, 0), (1, 256)))
