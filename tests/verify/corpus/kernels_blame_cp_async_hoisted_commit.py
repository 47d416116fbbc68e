"""cp.async GEMM whose `T.async_commit()` was hoisted to the top of the main loop, above the copies it should
close: each iteration's copies are closed by the *next* iteration's commit, so their group is one later than
`T.async_wait(STAGES - 1)` assumes, and tile k is read while its group may still be in flight. The stale read
surfaces at the ldmatrix; the blame names the hoisted commit (the wait's count is right for a commit placed
after the copies, as in `gemm_cp_async`).

expect: violated
code: PIPELINE_STALE_READ
fact: PIPELINE_STALE_READ blame.fix == "T.async_commit() right after the copies it should close"
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
    T.assume("K % 8 == 0 and N % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for s in range(STAGES - 1):
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((s, bn), (BK, BN)), sB[s], atom="cp.async")
            T.async_commit()
        for k in T.serial(T.cdiv(K, BK)):
            nxt = k + (STAGES - 1)
            T.async_commit()  # <- PIPELINE_STALE_READ
            T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
            T.copy(B.tile((nxt, bn), (BK, BN)), sB[nxt % STAGES], atom="cp.async")
            T.async_wait(STAGES - 1)
            T.barrier()
            T.copy(sA[k % STAGES], rA, atom="ldmatrix")
            T.copy(sB[k % STAGES], rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
