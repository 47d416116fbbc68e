# ruff: noqa: F821, UP037, B023 -- DSL kernels: shape symbols (M, N, K) injected by the tracer, string shapes, tag lambdas
"""Kernels that split a rung of a library lineage which adds two mechanisms at once, so that every edge of
the walk removes exactly one.

The GEMM lineage's rung `gemm_tma_wgmma` adds TMA loads *and* ``wgmma`` to `gemm_cp_async_swizzled`. The
bridge `gemm_cp_async_wgmma` sits between them: ``wgmma`` from 128-byte-swizzled shared memory (as
`gemm_tma_wgmma`) fed by ``cp.async`` copies (as `gemm_cp_async_swizzled`), so that "TMA -> cp.async" and
"wgmma -> mma.sync" are separate, checked steps. It is an ordinary DSL kernel: the gate compiles, verifies
and runs it like any other (`tests/lineage`).
"""

from __future__ import annotations

import argus
import argus.lang as T


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


#: Bridges by name: (kernel, the library rung it splits, what it is).
BRIDGES = {
    "gemm_cp_async_wgmma": (
        gemm_cp_async_wgmma,
        "gemm_tma_wgmma",
        "wgmma from swizzled shared memory fed by cp.async (gemm_tma_wgmma without TMA)",
    ),
}
