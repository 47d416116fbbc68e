"""Seeded bug, wrong offset: the grouped row kernel of `kernels_once_grouped_rows_ok.py` starts expert g's rows at
``offs[g - 2]``, the previous expert's first row, instead of ``offs[g - 1]``. Expert g's windows then cover expert
g-1's rows too (the bound ``offs[g]`` lets them through), so a row of expert g-1 is stored by both experts' blocks,
for offsets the declaration allows (nondecreasing, within 0 .. R): the counterexample names the two blocks, the
element and the offsets.

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
        start = T.where(g > 1, offs[T.maximum(g - 2, 0)], 0)  # should be g > 0, offs[g - 1]
        x = T.alloc_fragment((BM, BN), T.f32)
        w = T.alloc_reduced(x, axis=0)  # (BN,): the expert's weight of each column
        T.copy(X.window((start + bm * BM, bn * BN), (BM, BN)), x)
        T.copy(W.tile((g, bn), (None, BN)), w)
        y = Y.window((start + bm * BM, bn * BN), (BM, BN), bound=(offs[g], None))
        T.copy(x * w[None, :], y)  # <- COVERAGE_OUTPUT_TWICE
