"""The grouped smoothing step counting its groups from one: group g arrives at counter g + 1, and the last group's
counter is past the tensor (N / 4 counters): the atomic add writes memory that is not F's.

expect: violated
code: OOB_GROUP_COUNTER
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
        T.group_barrier(F, b // 4 + 1, b % 4, 4)  # <- OOB_GROUP_COUNTER
        h = T.alloc_fragment((1, 256), T.f32)
        T.copy(H.tile((b // 4 * 4 + (b + 1) % 4, 0), (1, 256)), h)
        T.copy(x * 0.5 + h, Y.tile((b, 0), (1, 256)))
