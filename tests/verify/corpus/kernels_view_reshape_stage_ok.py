"""A whole shared buffer (4 rows, 8 channels, 64 columns) written in its own order and read through a view that
reshapes it to (rows, channels, columns), so that a stage index picks a row: the view has more stages than the
buffer has rows in its first dimension's place would suggest (8 channels there), and none of them reaches past
the allocation. The bound check must count the view's own stages (4), not the buffer's first extent (8).

expect: verified
"""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def KERNEL(
    X: T.Tensor[("N", 8, 4, 64), T.f32],
    Y: T.Tensor[("N", 4, 8, 32), T.f32],
):
    with T.grid(N, threads=128) as (n,):
        s = T.alloc_shared((8, 4, 64), T.f32, layout=Layout((8, 4, 64), (64, 512, 1)))
        rows = s.view(Layout((4, 8, 64), (512, 64, 1)))  # (row, channel, column)
        T.copy(X.window((n, 0, 0, 0), (None, 8, 4, 64)), s)
        T.barrier()
        r = T.alloc_fragment((8, 32), T.f32, vector_bytes=4)
        for i in T.serial(4):
            T.copy(rows[i].window((0, 16), (8, 32)), r)
            T.copy(r, Y.window((n, i, 0, 0), (None, None, 8, 32)))
