"""A cp.async GEMM whose prefetch stops at the end: the copies and their commit run under ``T.if_(nxt < k_tiles)``
with ``T.async_wait(STAGES - 1)`` (tiles k + 1 and k + 2 may stay in flight), and the tail waits for everything under
``T.if_(nxt >= k_tiles)`` (``T.async_wait(0)``). Correct: on every path one of the two waits runs before tile k is
read. Until 2026-12-05 this was a false `PIPELINE_STALE_READ`: the backward scan for the latest wait passed over
waits in branches, and the commits before a point were counted as the current iteration's branch times the
iterations (found by a blind bug hunt, session 55). Now each branch is an alternative of the scan, and a branch on
the loop's variable is counted over the iterations where it holds.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 3,
):
    T.assume("K % 8 == 0 and N % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        k_tiles = T.cdiv(K, BK)
        for s in range(STAGES - 1):
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((s, bn), (BK, BN)), sB[s], atom="cp.async")
            T.async_commit()
        for k in T.serial(k_tiles):
            nxt = k + (STAGES - 1)
            with T.if_(nxt < k_tiles):
                T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
                T.copy(B.tile((nxt, bn), (BK, BN)), sB[nxt % STAGES], atom="cp.async")
                T.async_commit()
                T.async_wait(STAGES - 1)
            with T.if_(nxt >= k_tiles):
                T.async_wait(0)  # the tail: nothing committed after tile k
            T.barrier()
            T.copy(sA[k % STAGES], rA, atom="ldmatrix")
            T.copy(sB[k % STAGES], rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
