"""A tile stored one row at a time by a Python loop the trace unrolls, one row short (``range(BH - 1)``): row
``bm * BH + BH - 1`` of every tile is never written. The sites stored are a run of rows, read as one window of
BH - 1 rows a block, which does not cover the grid of BH-row tiles; every other check holds.

expect: violated
code: COVERAGE_OUTPUT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BH: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BH), T.cdiv(N, BN), threads=32) as (bm, bn):
        for h in range(BH - 1):  # BUG: range(BH)
            x = T.alloc_fragment((1, BN), T.f32)
            T.copy(X.window((bm * BH + h, bn * BN), (1, BN)), x)
            T.copy(x * 2.0, Y.window((bm * BH + h, bn * BN), (1, BN)))  # <- COVERAGE_OUTPUT
