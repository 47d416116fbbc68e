"""`coverage_output_reversed_rows` starting one tile too low: the column origin is ``(cdiv(N, BN) - 2 - j) * BN``
(the last iteration's window lies before column 0, outside the tensor), so the last column tile of every row is
never written whenever N > 0.

expect: violated
code: COVERAGE_OUTPUT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for j in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, T.cdiv(N, BN) - 1 - j), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, T.cdiv(N, BN) - 2 - j), (BM, BN)))  # <- COVERAGE_OUTPUT
