"""A copy that asks for 16-byte vectors (atom="vector") of a window that starts at column 2 of a row: with
4-byte elements every vector starts 8 bytes past a 16-byte boundary, for every size (the row length is
declared a multiple of 4), so the vectors the copy asks for never happen.

expect: violated
code: ALIGN_VECTOR
fact: ALIGN_VECTOR counterexample.variables.origin == 2
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32],
    Y: T.Tensor[("M", "N"), T.f32],
    BM: int = 16,
    BN: int = 64,
):
    T.assume(T.eq(N % 4, 0))
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        r = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.window((bm * BM, 2), (BM, BN)), r, atom="vector")  # <- ALIGN_VECTOR
        T.copy(r, Y.tile((bm, 0), (BM, BN)))
