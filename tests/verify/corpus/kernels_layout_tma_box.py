"""A TMA load of a (64, 64) bf16 box into a column-major shared tile: the box and its strides are fine for the
tensor map, but TMA writes a box row-major (with a Hopper swizzle), so the elements would land transposed. The
interpreter, which writes through the buffer's layout, computes the right result; the code generator refuses.

expect: violated
code: LAYOUT_TMA_BOX
fact: LAYOUT_TMA_BOX counterexample.variables.box_inner_bytes == 128
"""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", 64), T.bf16],
    Y: T.Tensor[("M", 64), T.f32],
    BM: int = 64,
):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sX = T.alloc_shared((BM, 64), T.bf16, layout=Layout((BM, 64), (1, BM)))  # column-major
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0], expect_bytes=BM * 64 * 2)
        T.copy(X.tile((bm, 0), (BM, 64)), sX, atom="tma", mbarrier=bar[0])  # <- LAYOUT_TMA_BOX
        T.mbarrier_wait(bar[0], phase=0)
        r = T.alloc_fragment((BM, 64), T.f32)
        T.copy(sX, r)
        T.copy(r, Y.tile((bm, 0), (BM, 64)))
