"""A grouped row kernel in the shape of the MoE grouped GEMM's epilogue: block (g, bm, bn) stores row tile bm of
expert g, rows ``offs[g-1] + bm * BM ..`` through a window bounded by the expert's end ``offs[g]`` (rows at or past
it are masked), scaled by the expert's weight. That no element of Y is stored twice rests on the data: the experts'
row ranges do not overlap because ``offs`` is nondecreasing, which the kernel declares (``T.assume_values``); the
verifier proves it for every content of ``offs`` the declaration allows. (Without the declaration the check is not
made: `tests/verify/test_values.py`.)

expect: verified
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
        T.copy(x * w[None, :], Y.window((start + bm * BM, bn * BN), (BM, BN), bound=(offs[g], None)))
