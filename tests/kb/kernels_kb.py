"""Small kernels for the knowledge-base tests: a softmax with exp (base e), a causal online row
softmax, and an mma.sync GEMM that declares its swizzle as a policy."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def softmax_exp(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    """Softmax of 0.125 * X with exp (base e): the scale is not folded into exp2."""
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))
        row_max = T.reduce_max(x, axis=1)
        e = T.exp((x - row_max[:, None]) * 0.125)
        row_sum = T.reduce_sum(e, axis=1)
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))


@argus.kernel
def causal_row_logsumexp(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    """Running row maximum and sum over column tiles, keeping only columns <= the row (causal)."""
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        probe = T.alloc_fragment((BM, BN), T.f32)
        m = T.alloc_reduced(probe, axis=1)
        total = T.alloc_reduced(probe, axis=1)
        T.fill(m, float("-inf"))
        T.fill(total, 0.0)
        for j in T.serial(T.cdiv(N, BN)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.tile((bm, j), (BM, BN)), x, pad=float("-inf"))
            keep = T.index(x, 1) + j * BN < T.index(x, 0) + (bm * BM + 1)
            xm = T.where(keep, x, float("-inf"))
            m_new = T.maximum(m, T.reduce_max(xm, axis=1))
            T.copy(total * T.exp2(m - m_new) + T.reduce_sum(T.exp2(xm - m_new[:, None]), axis=1), total)
            T.copy(m_new, m)
        T.copy(probe, Y.tile((bm, 0), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "swizzle": "SWIZZLE"})
def gemm_swizzle_policy(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 64,
    SWIZZLE: int = 0,
):
    """`gemm_mma_sync` whose shared tiles take their swizzle from a parameter (0: none)."""
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16, swizzle=SWIZZLE)
        sB = T.alloc_shared((BK, BN), T.bf16, swizzle=SWIZZLE)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
