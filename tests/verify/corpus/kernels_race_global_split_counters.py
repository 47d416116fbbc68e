"""The grouped smoothing step with its counters cut too fine: blocks meet in pairs (counter b // 2), but each reads
the next row of its group of four, so block 1 reads row 2, whose writer arrives at another counter: nothing orders
that store before the read.

expect: violated
code: RACE_GLOBAL
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
    T.assume("NF >= N // 2")
    with T.grid(N, threads=64) as (b,):
        x = T.alloc_fragment((1, 256), T.f32)
        T.copy(X.tile((b, 0), (1, 256)), x)
        T.copy(x * 0.5, H.tile((b, 0), (1, 256)))
        T.group_barrier(F, b // 2, b % 2, 2)
        h = T.alloc_fragment((1, 256), T.f32)
        T.copy(H.tile((b // 4 * 4 + (b + 1) % 4, 0), (1, 256)), h)  # <- RACE_GLOBAL
        T.copy(x * 0.5 + h, Y.tile((b, 0), (1, 256)))
