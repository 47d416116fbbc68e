"""Online softmax down the columns of a (BR, BI) tile (as `scale_softmax_columns_ok`) that forgets to rescale the
running column sum: `l + reduce_sum(p, axis=0)` adds this tile's terms, relative to the new column maximum, to a
sum of terms relative to older maxima, so every column whose maximum grows in a later tile is normalised by a
sum that is too large. The statistics are per column (reduced along axis 0, broadcast with `[None, :]`); reported
where the sum mixes scales, from the second tile on.

expect: violated
code: VALUE_SCALE_MISMATCH
fact: VALUE_SCALE_MISMATCH counterexample.loops.j == 1
"""

import argus
import argus.lang as T

LOG2E = 1.4426950408889634


@argus.kernel
def KERNEL(
    X: T.Tensor[("O", "R", "I"), T.f32],
    Y: T.Tensor[("O", "R", "I"), T.f32],
    BR: int = 8,
    BI: int = 128,
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
            T.copy(l + T.reduce_sum(p, axis=0), l)  # <- VALUE_SCALE_MISMATCH
            T.copy(m_new, m)
        r = T.rcp(l)
        for j in T.serial(T.cdiv(R, BR)):
            T.copy(X.tile((o, j, bi), (None, BR, BI)), x)
            T.copy(T.exp2((x - m[None, :]) * LOG2E) * r[None, :], Y.tile((o, j, bi), (None, BR, BI)))
