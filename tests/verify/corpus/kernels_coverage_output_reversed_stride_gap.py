"""`coverage_output_reversed_stride` with the second store one tile off: ``8 - 2 * i`` (tiles 8, 6, 4 and 2; tile 8
lies wholly past the tensor's end) instead of ``6 - 2 * i``, so tile 0 (columns 0 .. BN - 1) is never written.

expect: violated
code: COVERAGE_OUTPUT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", 512), T.f32], Y: T.Tensor[("M", 512), T.f32], BM: int = 8, BN: int = 64):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for i in T.serial(4):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, 7 - 2 * i), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, 7 - 2 * i), (BM, BN)))  # <- COVERAGE_OUTPUT
            z = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, 8 - 2 * i), (BM, BN)), z)
            T.copy(z * 2.0, Y.tile((bm, 8 - 2 * i), (BM, BN)))
