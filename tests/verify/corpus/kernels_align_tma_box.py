"""A TMA load of a (64, 4) bf16 box: its inner extent is 8 bytes, but TMA boxes need an inner extent that is
a multiple of 16 bytes (cuTensorMapEncodeTiled refuses the tensor map). The row stride (64 elements) is fine.

expect: violated
code: ALIGN_TMA
fact: ALIGN_TMA counterexample.variables.box_0 == 4
fact: ALIGN_TMA counterexample.variables.element_bytes == 2
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", 64), T.bf16],
    Y: T.Tensor[("M", 4), T.f32],
    BM: int = 64,
    BN: int = 4,
):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sX = T.alloc_shared((BM, BN), T.bf16)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0], expect_bytes=BM * BN * 2)
        T.copy(X.tile((bm, 0), (BM, BN)), sX, atom="tma", mbarrier=bar[0])  # <- ALIGN_TMA
        T.mbarrier_wait(bar[0], phase=0)
        r = T.alloc_fragment((BM, BN), T.f32, vector_bytes=8)
        T.copy(sX, r)
        T.copy(r, Y.tile((bm, 0), (BM, BN)))
