"""Windows that reach outside the tensor on every side verify: rows before the first (negative origins),
columns past the last, and blocks past the last tile (the grid has two more blocks than tiles). Every
global access of the DSL is masked element by element (loads read the pad value, stores are dropped), so
none of them is out of bounds; the test also runs this kernel on the interpreter.

expect: verified
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
    T.assume("N % 4 == 0")
    T.assume(N <= 32)  # the window N - 32 .. N + 31 then holds every column (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM) + 2, threads=128) as (bm,):
        r = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.window((bm * BM - 8, N - 32), (BM, BN)), r, pad=-1.0)  # rows -8.., 32 columns past N
        T.copy(r + 1.0, Y.window((bm * BM - 8, N - 32), (BM, BN)))
