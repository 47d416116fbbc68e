"""User tags: A tagged by its (row block, K block) with T.tag; the shared tile consumed at iteration
k must carry block (bm, k), and the two fragments loaded from it must agree element by element.

expect: verified
"""

import argus
import argus.lang as T
from argus.lang.tags import assert_tag, assert_tag_eq, tag


@argus.kernel
def KERNEL(A: T.Tensor[("M", "K"), T.f32], Out: T.Tensor[("M", "K"), T.f32], BM: int = 16, BK: int = 32):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        tag(A, lambda m, kk: (m // BM, kk // BK), "Ablk")
        sA = T.alloc_shared((BM, BK), T.f32, swizzle=128)
        x = T.alloc_fragment((BM, BK), T.f32)
        y = T.alloc_fragment((BM, BK), T.f32)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.barrier()
            assert_tag(lambda a: (a[0] == bm) & (a[1] == k) & (a.name == "Ablk"), sA)  # noqa: B023 (traced at once)
            T.copy(sA, x)
            T.copy(sA, y)
            assert_tag_eq(x, y)
            T.copy(x + y, Out.tile((bm, k), (BM, BK)))
            T.barrier()
