"""Online softmax down the columns of a square (BR, BI) tile (as `scale_softmax_columns_ok`, with BR = BI, the
column sums handed to every thread through shared memory and the output divided by them) whose normalisation
broadcasts the column sums along the wrong axis: `l_all[:, None]` spreads the sum of column c over row c, so
element (r, c), relative to the maximum of column c, is divided by the sum of column r, relative to the maximum of
column r. The shapes agree only because the tile is square, and every thread holds every sum, so the tracer's
layout check has nothing to object to. Reported at the division: a value scaled per column divided by one scaled
per row.

expect: violated
code: VALUE_SCALE_MISMATCH
"""

import argus
import argus.lang as T

LOG2E = 1.4426950408889634


@argus.kernel
def KERNEL(
    X: T.Tensor[("O", "R", "I"), T.f32],
    Y: T.Tensor[("O", "R", "I"), T.f32],
    BR: int = 32,
    BI: int = 32,
):
    with T.grid(O, T.cdiv(I, BI), threads=BI) as (o, bi):
        # thread t holds column t (inner index bi * BI + t) and its BR elements along R: a warp reads consecutive
        # inner indices, and each thread reduces its column in registers
        x = T.alloc_fragment((BR, BI), T.f32, tv=argus.layout.Layout((BI, BR), (BR, 1)))
        m = T.alloc_reduced(x, axis=0)  # running maximum of each column
        l = T.alloc_reduced(x, axis=0)  # noqa: E741  (running sum of exp(x - m) of each column)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        for j in T.serial(T.cdiv(R, BR)):
            T.copy(X.tile((o, j, bi), (None, BR, BI)), x, pad=float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=0), m)
            p = T.exp2((x - m_new[None, :]) * LOG2E)
            # what was summed under the old maximum is rescaled to the new one
            T.copy(l * T.exp2((m - m_new) * LOG2E) + T.reduce_sum(p, axis=0), l)
            T.copy(m_new, m)
        sL = T.alloc_shared((BI,), T.f32)
        T.copy(l, sL)
        T.barrier()
        l_all = T.alloc_fragment((BI,), T.f32, tv=argus.layout.Layout((BI, BI), (0, 1)))  # every sum, every thread
        T.copy(sL, l_all)
        for j in T.serial(T.cdiv(R, BR)):
            T.copy(X.tile((o, j, bi), (None, BR, BI)), x)
            e = T.exp2((x - m[None, :]) * LOG2E)
            T.copy(e / l_all[:, None], Y.tile((o, j, bi), (None, BR, BI)))  # <- VALUE_SCALE_MISMATCH
