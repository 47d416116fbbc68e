"""An occupancy rewrite asks for two resident blocks per SM (`blocks_per_sm=2`) on a cp.async GEMM whose three
stages of (128 x 64) A and (64 x 128) B tiles need 96 KiB... and whose epilogue staging tile (128 x 128 f32,
64 KiB) brings the block to 160 KiB: alone on an SM it fits in 227 KiB, but two blocks share the SM's 228 KiB,
so each may use about 113 KiB. The rewrite edits the IR (`blocks_per_sm` only); the tracer never saw the
pair, so only the verifier's budget checks catch it. Two blocks per SM also cap every thread at 128 registers
(`__launch_bounds__(256, 2)`), fewer than the 160 its fragments need. Both findings blame the `T.grid`
statement that sets the blocks per SM, not the largest allocation or the peak.

expect: violated
code: BUDGET_SMEM
code: BUDGET_REGISTERS
fact: BUDGET_SMEM details.blocks_per_sm == 2
fact: BUDGET_SMEM blame.fix == 'blocks_per_sm=1, or free 48128 B'
"""

import dataclasses

import argus
import argus.lang as T


@argus.kernel
def traced(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
):
    T.assume("K % 8 == 0 and N % 8 == 0")  # 16-byte aligned rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=256) as (bm, bn):  # <- BUDGET_SMEM # <- BUDGET_REGISTERS
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16)
        sC = T.alloc_shared((BM, BN), T.f32)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 4))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 4))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 4))
        T.fill(acc, 0.0)
        for s in range(STAGES - 1):
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((s, bn), (BK, BN)), sB[s], atom="cp.async")
            T.async_commit()
        for k in T.serial(T.cdiv(K, BK)):
            nxt = k + (STAGES - 1)
            T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
            T.copy(B.tile((nxt, bn), (BK, BN)), sB[nxt % STAGES], atom="cp.async")
            T.async_commit()
            T.async_wait(STAGES - 1)
            T.barrier()
            T.copy(sA[k % STAGES], rA, atom="ldmatrix")
            T.copy(sB[k % STAGES], rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, sC)
        T.barrier()
        T.copy(sC, C.tile((bm, bn), (BM, BN)))


KERNEL = dataclasses.replace(traced.trace(), blocks_per_sm=2)
