"""Matrix-vector product by a reduction: each lane accumulates ``M[r, k] * v[k]`` over the column tiles, then the
lanes of each row are summed. The loop runs ``K // BK`` tiles and drops the tail of K: its products are missing
from every row's sum. (Contraction coverage read T.gemm operands only: a contraction by a reduction verified.)

expect: violated
code: COVERAGE_CONTRACTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    Mat: T.Tensor[("R", "K"), T.f32],
    V: T.Tensor[("K",), T.f32],
    Y: T.Tensor[("R",), T.f32],
    BR: int = 4,
    BK: int = 128,
):
    T.assume("K % 4 == 0")  # rows in whole 16-byte vectors
    with T.grid(T.cdiv(R, BR), threads=128) as (br,):
        acc = T.alloc_fragment((BR, BK), T.f32)  # per lane: the sum of its columns' products
        T.fill(acc, 0.0)
        for k in T.serial(K // BK):  # BUG: T.cdiv(K, BK): the last, partial tile of K is never loaded
            m = T.alloc_fragment((BR, BK), T.f32)
            v = T.alloc_reduced(m, axis=0)  # (BK,): the vector's elements of the tile's columns
            T.copy(Mat.tile((br, k), (BR, BK)), m)  # <- COVERAGE_CONTRACTION
            T.copy(V.tile((k,), (BK,)), v)
            T.copy(acc + m * v[None, :], acc)
        T.copy(T.reduce_sum(acc, axis=1), Y.tile((br,), (BR,)))
