"""The reversed column walk of `coverage_output_reversed_loop` with one iteration too few: the loop runs 3 times,
so the windows start at tiles 3, 2 and 1 and tile 0 (columns 0 .. BN - 1) is never written.

expect: violated
code: COVERAGE_OUTPUT
fact: COVERAGE_OUTPUT counterexample.variables.element != ''
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", 512), T.f32], Y: T.Tensor[("M", 512), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        for i in T.serial(3):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, 3 - i), (BM, BN)), x)
            T.copy(x * 2.0, Y.tile((bm, 3 - i), (BM, BN)))  # <- COVERAGE_OUTPUT
