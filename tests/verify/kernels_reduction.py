"""Kernels of `test_reduction_contraction.py`: contractions written without `T.gemm`, and products that are not
contractions."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def gemv_by_reduction(
    V: T.Tensor[("K",), T.f32], M: T.Tensor[("N", "K"), T.f32], Y: T.Tensor[("N",), T.f32], HOW: str = "reduce"
):
    """Y = M @ V, 32 rows a block, K in blocks of 64 (`HOW`: "reduce" sums each block's products at once, "accumulate"
    adds them into a running (32, 64) sum reduced at the end; "short" is "reduce" with K's last block dropped)."""
    T.assume("K % 64 == 0 and K >= 128")
    blocks = K // 64 - (1 if HOW == "short" else 0)
    with T.grid(T.cdiv(N, 32), threads=128) as (bn,):
        w = T.alloc_fragment((32, 64), T.f32)
        acc = T.alloc_reduced(w, axis=1, dtype=T.f32)
        part = T.alloc_fragment((32, 64), T.f32)
        T.fill(acc, 0.0)
        T.fill(part, 0.0)
        for k in T.serial(blocks):
            T.copy(M.tile((bn, k), (32, 64)), w)
            v = T.alloc_reduced(w, axis=0, dtype=T.f32)
            T.copy(V.window((k * 64,), (64,)), v)
            if HOW == "accumulate":
                T.copy(part + w * v[None, :], part)
            else:
                T.copy(acc + T.reduce_sum(w * v[None, :], axis=1), acc)
        total = T.reduce_sum(part, axis=1) if HOW == "accumulate" else acc
        T.copy(total, Y.tile((bn,), (32,)))


@argus.kernel
def affine_and_squares(X: T.Tensor[("R", 64), T.f32], W: T.Tensor[(64,), T.f32], Y: T.Tensor[("R", 64), T.f32]):
    """y = x * w + x, and the rows' sums of squares added in: products not summed, and a tensor times itself."""
    with T.grid(T.cdiv(R, 32), threads=128) as (b,):
        x = T.alloc_fragment((32, 64), T.f32)
        T.copy(X.tile((b, 0), (32, 64)), x)
        w = T.alloc_reduced(x, axis=0, dtype=T.f32)
        T.copy(W.window((0,), (64,)), w)
        squares = T.reduce_sum(x * x, axis=1)
        T.copy(x * w[None, :] + x + squares[:, None], Y.tile((b, 0), (32, 64)))
