"""Matrix-vector product by a reduction, as `coverage_reduction_contraction_k_tail` with ``T.cdiv(K, BK)`` tiles:
every element of M and v is loaded (the last tile's columns past K pad 0, and 0 * 0 adds nothing).

expect: verified
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
        for k in T.serial(T.cdiv(K, BK)):
            m = T.alloc_fragment((BR, BK), T.f32)
            v = T.alloc_reduced(m, axis=0)  # (BK,): the vector's elements of the tile's columns
            T.copy(Mat.tile((br, k), (BR, BK)), m)
            T.copy(V.tile((k,), (BK,)), v)
            T.copy(acc + m * v[None, :], acc)
        T.copy(T.reduce_sum(acc, axis=1), Y.tile((br,), (BR,)))
