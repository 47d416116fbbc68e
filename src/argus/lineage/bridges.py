# ruff: noqa: F821, UP037, B023 -- DSL kernels: shape symbols (M, N, K) injected by the tracer, string shapes, tag lambdas
"""Kernels that split a rung of a library lineage which adds two mechanisms at once, so that every edge of
the walk removes exactly one.

The GEMM lineage's rung `gemm_tma_wgmma` adds TMA loads *and* ``wgmma`` to `gemm_cp_async_swizzled`. The
bridge `gemm_cp_async_wgmma` sits between them: ``wgmma`` from 128-byte-swizzled shared memory (as
`gemm_tma_wgmma`) fed by ``cp.async`` copies (as `gemm_cp_async_swizzled`), so that "TMA -> cp.async" and
"wgmma -> mma.sync" are separate, checked steps. The attention lineage's rung `attention_tma_wgmma` adds the same
two to `attention_swizzle`, and `attention_cp_async_wgmma` splits it the same way; the convolution lineage's
`conv_tma_wgmma` to `conv_swizzle`, split by `conv_cp_async_wgmma`. Each is an ordinary DSL kernel:
the gate compiles, verifies and runs it like any other (`tests/lineage`).
"""

from __future__ import annotations

import argus
import argus.lang as T
from argus.kernels.attention import LOG2E
from argus.kernels.attention_lineage import QKV_SHAPE, head_dim, rung_tiles
from argus.kernels.conv_lineage import (
    W_SHAPE,
    X_SHAPE,
    Y_SHAPE,
    channel_blocks,
    load_step,
    stage_spans,
    step_tags,
    wgmma_tile,
)


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def gemm_cp_async_wgmma(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
):
    """C = A @ B^T (B given as (N, K), K-major): `gemm_tma_wgmma` with its TMA loads replaced by ``cp.async``
    copies into the same 128-byte-swizzled stages — committed and waited on per thread, then made visible to
    ``wgmma`` (the async proxy) by ``fence.proxy.async`` and a block barrier."""
    T.assume("K % 8 == 0")  # rows of A and B start 16-byte aligned: cp.async moves 16-byte vectors
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=2 * 128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)  # (stages, BM, BK), K-major
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)  # (stages, BN, BK), K-major
        acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # 2 warpgroups x 64 rows
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        for s in range(STAGES - 1):  # prologue: the first STAGES-1 tiles in flight
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((bn, s), (BN, BK)), sB[s], atom="cp.async")
            T.async_commit()
        for k, s in T.pipeline(k_tiles, stages=STAGES):
            nxt = k + (STAGES - 1)  # into the stage iteration k - 1 consumed (freed by its closing barrier)
            T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
            T.copy(B.tile((bn, nxt), (BN, BK)), sB[nxt % STAGES], atom="cp.async")
            T.async_commit()
            T.async_wait(STAGES - 1)  # this thread's copies of tile k have landed
            T.fence_proxy_async()  # ... and are visible to wgmma, which reads through the async proxy
            T.barrier()  # every thread's copies of tile k
            # invariant: the stage consumed at iteration k holds K-block k of this block's A and B tiles
            T.assert_tag(lambda a: (a[1] // BK == k) & (a[0] // BM == bm), sA[s])
            T.assert_tag(lambda b: (b[1] // BK == k) & (b[0] // BN == bn), sB[s])
            T.gemm(sA[s], sB[s].T, acc)
            T.barrier()  # every warpgroup is done with stage s: the next iteration may refill it
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel(policies={"tile_shape": ("BM", "BN"), "stages": "STAGES"})
def attention_cp_async_wgmma(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],  # noqa: E741 - the output's name
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`attention_tma_wgmma` with its TMA loads replaced by ``cp.async`` copies into the same 128-byte-swizzled
    tiles (Q by plain loads, as in `attention_swizzle`), committed and waited on per thread, then made visible to
    ``wgmma`` (the async proxy) by ``fence.proxy.async`` and a block barrier."""
    head_dim(D, 64)
    rung_tiles(BM, BN, STAGES)
    scale_log2 = LOG2E / D**0.5
    with T.grid(T.cdiv(S, BM), BH, threads=128 * (BM // 64)) as (bm, bh):
        sQ = T.alloc_shared((BM, D), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sP = T.alloc_shared((BM, BN), Q.dtype, swizzle=128, panels=True)  # P @ V's A operand
        s = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))  # 64 rows per warpgroup
        o = T.alloc_fragment((BM, D), T.f32, mma=T.wgmma_atom(D, Q.dtype))
        m = T.alloc_reduced(s, axis=1)
        l = T.alloc_reduced(s, axis=1)  # noqa: E741
        T.fill(o, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ)  # rows past S read 0 (never stored)
        for t in range(STAGES - 1):  # prologue: the first STAGES - 1 key tiles in flight
            T.copy(K.tile((bh, t, 0), (None, BN, D)), sK[t], atom="cp.async")
            T.copy(V.tile((bh, t, 0), (None, BN, D)), sV[t], atom="cp.async")
            T.async_commit()
        for j, st in T.pipeline(T.cdiv(S, BN), stages=STAGES):
            nxt = j + (STAGES - 1)  # into the stage iteration j - 1 consumed (freed by its closing barrier)
            T.copy(K.tile((bh, nxt, 0), (None, BN, D)), sK[nxt % STAGES], atom="cp.async")  # keys past S read 0
            T.copy(V.tile((bh, nxt, 0), (None, BN, D)), sV[nxt % STAGES], atom="cp.async")  # values past S read 0
            T.async_commit()
            T.async_wait(STAGES - 1)  # this thread's copies of key tile j have landed
            T.fence_proxy_async()  # ... and are visible to wgmma, which reads through the async proxy (Q's too)
            T.barrier()  # every thread's copies of key tile j
            T.assert_tag(lambda k: (k[0] == bh) & (k[1] // BN == j), sK[st])
            T.assert_tag(lambda v: (v[0] == bh) & (v[1] // BN == j), sV[st])
            T.fill(s, 0.0)
            T.gemm(sQ, sK[st].T, s)  # S = Q K^T
            T.assert_tag(lambda x: (x[0] == bm * BM + x.coord[0]) & (x[1] == j * BN + x.coord[1]), s)
            x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=1), m)
            p = T.exp2(x - m_new[:, None])
            alpha = T.exp2(m - m_new)
            T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
            T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
            T.copy(m_new, m)
            T.copy(o * alpha[:, None], o)
            T.copy(p, sP)
            T.fence_proxy_async()
            T.barrier()  # every thread's part of P is in place
            T.gemm(sP, sV[st], o)  # O += P V
            T.assert_tag(lambda y: (y[0] == bm * BM + y.coord[0]) & (y[1] == y.coord[1]), o)
            T.barrier()  # stage j % STAGES and sP may be overwritten from here on
        T.copy(o / l[:, None], O.tile((bh, bm, 0), (None, BM, D)))


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK"), "stages": "STAGES"})
def conv_cp_async_wgmma(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`conv_tma_wgmma` with its TMA boxes replaced by ``cp.async`` copies into the same swizzled stages (as
    `conv_swizzle` loads them), committed and waited on per thread, then made visible to ``wgmma`` (the async proxy)
    by ``fence.proxy.async`` and a block barrier."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    span_a, span_b = stage_spans(C, BW, BN, BK, X.dtype)
    wgmma_tile(BW)
    T.assume("F % 8 == 0")  # rows of WT start 16-byte aligned: cp.async moves 16-byte vectors
    p = (SH, PH, PW, LH, LW)
    steps = KH * KW * CB
    tiles_w = T.cdiv(OW, BW)
    with T.grid(tiles_w * OH, T.cdiv(F, BN), N, threads=128) as (t, bf, n):
        sA = T.alloc_shared((STAGES, BW, BK), X.dtype, swizzle=span_a, panels=True)  # (stages, BW, BK)
        sB = T.alloc_shared((STAGES, BK, BN), X.dtype, swizzle=span_b, panels=True)
        acc = T.alloc_fragment((BW, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))
        with T.let(t % tiles_w, "tile_w") as bw, T.let(t // tiles_w, "out_row") as oh:

            def load(k: Any, s: Any) -> None:
                load_step(X, WT, sA, sB, (n, oh, bw, bf), k, s, p, KW, CB, (BW, BN, BK), "cp.async")

            T.fill(acc, 0.0)
            for s in range(STAGES - 1):  # prologue: the first STAGES-1 steps in flight
                load(s, s)
                T.async_commit()
            for k in T.serial(steps):
                nxt = k + (STAGES - 1)
                load(nxt, nxt % STAGES)
                T.async_commit()
                T.async_wait(STAGES - 1)  # this thread's copies of step k have landed
                T.fence_proxy_async()  # ... and are visible to wgmma, which reads through the async proxy
                T.barrier()  # every thread's copies of step k
                # invariant: stage k % STAGES holds K step k's window and weights when iteration k consumes it
                step_tags(sA[k % STAGES], sB[k % STAGES], n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(sA[k % STAGES], sB[k % STAGES], acc)
                T.barrier()  # stage k % STAGES may be overwritten from here on
            T.async_wait(0)  # the steps past the last, loaded and never read, land before the block ends
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


#: Bridges by name: (kernel, the library rung it splits, what it is).
BRIDGES = {
    "gemm_cp_async_wgmma": (
        gemm_cp_async_wgmma,
        "gemm_tma_wgmma",
        "wgmma from swizzled shared memory fed by cp.async (gemm_tma_wgmma without TMA)",
    ),
    "attention_cp_async_wgmma": (
        attention_cp_async_wgmma,
        "attention_tma_wgmma",
        "S = Q K^T and O += P V by wgmma from swizzled shared memory fed by cp.async (attention_tma_wgmma without TMA)",
    ),
    "conv_cp_async_wgmma": (
        conv_cp_async_wgmma,
        "conv_tma_wgmma",
        "the convolution's K steps by wgmma from swizzled shared memory fed by cp.async (conv_tma_wgmma without TMA)",
    ),
}
