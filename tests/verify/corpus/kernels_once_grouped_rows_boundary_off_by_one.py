"""Seeded bug, off-by-one group boundary: the grouped row kernel of `kernels_once_grouped_rows_ok.py` bounds expert
g's window at ``offs[g] + 1``, one row past the expert's end. The first row of expert g+1 is then stored by expert
g's last row tile as well as by expert g+1's first, so its value is whichever lands last: the counterexample names
the two blocks (of consecutive experts), the row, and offsets the declaration allows.

expect: violated
code: COVERAGE_OUTPUT_TWICE
fact: COVERAGE_OUTPUT_TWICE counterexample.code == 'COVERAGE_OUTPUT_TWICE'
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("R", "N"), T.f32],
    offs: T.Tensor[("E",), T.i32],
    W: T.Tensor[("E", "N"), T.f32],
    Y: T.Tensor[("R", "N"), T.f32],
    BM: int = 16,
    BN: int = 32,
):
    T.assume("N % 4 == 0")
    T.assume_values(offs, lo=0, hi="R", nondecreasing=True)
    with T.grid(E, T.cdiv(R, BM), T.cdiv(N, BN), threads=128) as (g, bm, bn):
        start = T.where(g > 0, offs[T.maximum(g - 1, 0)], 0)
        x = T.alloc_fragment((BM, BN), T.f32)
        w = T.alloc_reduced(x, axis=0)  # (BN,): the expert's weight of each column
        T.copy(X.window((start + bm * BM, bn * BN), (BM, BN)), x)
        T.copy(W.tile((g, bn), (None, BN)), w)
        y = Y.window((start + bm * BM, bn * BN), (BM, BN), bound=(offs[g] + 1, None))
        T.copy(x * w[None, :], y)  # <- COVERAGE_OUTPUT_TWICE
