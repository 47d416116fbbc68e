"""An epilogue meant to store the block's BM x 2BN result in two halves stores the second half at tile (bm, bn + 1)
of a grid that still has one block per BN columns: block (bm, bn)'s second half and block (bm, bn + 1)'s first half
land on the same elements.

expect: violated
code: COVERAGE_OUTPUT_TWICE
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32],
    Y: T.Tensor[("M", "N"), T.f32],
    BM: int = 16,
    BN: int = 32,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), x)
        y = T.alloc_fragment((BM, BN), T.f32)
        T.copy(x * 2.0, y)
        T.copy(y, Y.tile((bm, bn), (BM, BN)))
        T.copy(x, Y.tile((bm, bn + 1), (BM, BN)))  # <- COVERAGE_OUTPUT_TWICE
