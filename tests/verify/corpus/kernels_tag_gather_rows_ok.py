"""A gathered TMA load (`X.gather`): each block loads the rows of X that IDX names for its BM positions (a MoE
routing's tokens) into 128-byte-swizzled shared memory, one box a row, and stores them. The tag assertion, "row m
holds X's row IDX[bx * BM + m]" (rows at or past the index's end exempt: they read zeros), is proved for every
content of IDX the declaration allows.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("TOKENS", "K"), T.bf16],
    IDX: T.Tensor[("R",), T.i32],
    Y: T.Tensor[("M", "K"), T.bf16],
    BM: int = 64,
):
    T.assume("K % 64 == 0")
    T.assume_values(IDX, lo=0, hi="TOKENS - 1")
    with T.grid(T.cdiv(Y.shape[0], BM), T.cdiv(X.shape[1], 64), threads=128) as (bx, bk):
        sA = T.alloc_shared((BM, 64), T.bf16, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0], expect_bytes=BM * 64 * 2)
        T.copy(X.gather(IDX, bx * BM, (BM, 64), (bk * 64,)), sA, atom="tma", mbarrier=bar[0])
        T.mbarrier_wait(bar[0], phase=0)
        T.assert_tag(
            lambda x: (
                (x[1] // 64 == bk)
                & ((bx * BM + x.coord[0] >= R) | (x[0] == IDX[T.minimum(bx * BM + x.coord[0], R - 1)]))
            ),
            sA,
        )
        T.copy(sA, Y.tile((bx, bk), (BM, 64)))
