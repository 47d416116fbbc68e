"""Hopper GEMM that declares `T.assume("K % 4 == 0")` to make its TMA loads legal, but a bf16 row of K elements
is 2K bytes, and the tensor map needs a multiple of 16 bytes: K % 8 == 0. The assumption is too weak (K = 4100
passes it and the launch is refused). The finding surfaces at the TMA copies; its blame names the assumption's
line and the assumption that makes the proof go through, which the verifier confirmed with Z3.

expect: violated
code: ALIGN_TMA
fact: ALIGN_TMA blame.fix == 'declare T.assume("K % 8 == 0") instead'
fact: ALIGN_TMA counterexample.element.buffer == "A"
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 64,
    BK: int = 64,
    STAGES: int = 3,
):
    T.assume("K % 4 == 0 and N % 8 == 0")  # <- ALIGN_TMA
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,), registers=40):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)  # the first pass finds every stage free
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s].T, acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
