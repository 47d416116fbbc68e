"""A gathered TMA load (`X.gather`) whose position is one row late (`bx * BM + 1`): every row of the tile holds the
next position's row. The tag assertion, "row m holds X's row IDX[bx * BM + m]", fails with the index's values that
show it (two neighbouring positions naming different rows). The correct load: `tag_gather_rows_ok`.

expect: violated
code: TAG_ASSERT
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
        T.copy(X.gather(IDX, bx * BM + 1, (BM, 64), (bk * 64,)), sA, atom="tma", mbarrier=bar[0])  # the bug: + 1
        T.mbarrier_wait(bar[0], phase=0)
        T.assert_tag(  # <- TAG_ASSERT
            lambda x: (
                (x[1] // 64 == bk)
                & ((bx * BM + x.coord[0] >= R) | (x[0] == IDX[T.minimum(bx * BM + x.coord[0], R - 1)]))
            ),
            sA,
        )
        T.copy(sA, Y.tile((bx, bk), (BM, 64)))
