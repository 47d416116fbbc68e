"""Online softmax down the columns of a (BR, BI) tile: softmax over dimension 1 of an (O, R, I) tensor, each of
the BI columns of a tile an independent softmax row (inner index), the reduced axis R streamed in BR-row tiles.
The statistics are per column: reduced along axis 0 and broadcast back with `[None, :]`; the running sum is
rescaled by exp2(m - m_new) of its own column whenever the column maximum grows. Correct: the scales of the
running sum and of each tile's column sums agree, and the output divides values relative to the final maximum by
a sum relative to the same maximum.

expect: verified
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
            # what was summed under the old maximum is rescaled to the new one
            T.copy(l * T.exp2((m - m_new) * LOG2E) + T.reduce_sum(p, axis=0), l)
            T.copy(m_new, m)
        r = T.rcp(l)
        for j in T.serial(T.cdiv(R, BR)):
            T.copy(X.tile((o, j, bi), (None, BR, BI)), x)
            T.copy(T.exp2((x - m[None, :]) * LOG2E) * r[None, :], Y.tile((o, j, bi), (None, BR, BI)))
