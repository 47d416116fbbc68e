"""Vector add: the smallest kernel, one 16-byte vector per thread and repeat."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def vector_add(A: T.Tensor[("N",), T.f32], B: T.Tensor[("N",), T.f32], C: T.Tensor[("N",), T.f32], BLOCK: int = 1024):
    with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):
        a = T.alloc_fragment((BLOCK,), T.f32)
        b = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(A.tile(bx, BLOCK), a)
        T.copy(B.tile(bx, BLOCK), b)
        T.copy(a + b, C.tile(bx, BLOCK))
