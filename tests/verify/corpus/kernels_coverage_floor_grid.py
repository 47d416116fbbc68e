"""A grid of N // BLOCK blocks where cdiv(N, BLOCK) are needed: the last partial block of C is never written.

expect: violated
code: COVERAGE_OUTPUT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(A: T.Tensor[("N",), T.f32], B: T.Tensor[("N",), T.f32], C: T.Tensor[("N",), T.f32], BLOCK: int = 1024):
    T.assume(N >= BLOCK)  # at least one block
    with T.grid(N // BLOCK, threads=128) as (bx,):
        a = T.alloc_fragment((BLOCK,), T.f32)
        b = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(A.tile(bx, BLOCK), a)
        T.copy(B.tile(bx, BLOCK), b)
        T.copy(a + b, C.tile(bx, BLOCK))  # <- COVERAGE_OUTPUT
