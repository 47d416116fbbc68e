"""A block stores its row tile in column chunks: the loop steps 8 columns at a time, and each store is 16 columns
wide (a chunk width changed in one place and not the other). Chunk j's second half is chunk j + 1's first half: one
block stores those elements twice. The window's origin is the loop variable times 8 and nothing else, as in the
stores the verifier proves apart by their form alone; the wider extent must send it to the solver.

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
):
    with T.grid(T.cdiv(M, BM), threads=64) as (bm,):
        x = T.alloc_fragment((BM, 16), T.f32)
        for j in T.serial(T.cdiv(N, 8)):
            T.copy(X.window((bm * BM, j * 8), (BM, 16)), x)
            T.copy(x, Y.window((bm * BM, j * 8), (BM, 16)))  # <- COVERAGE_OUTPUT_TWICE
