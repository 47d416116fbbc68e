"""A 2-block cluster that shares B: blocks 2c and 2c + 1 compute row tiles 2 pm and 2 pm + 1 of column tile bn
(pm the cluster's row pair), each loading half of B's (BN, BK) block into both blocks' stage (a multicast), and
release a stage on the pair's barrier, so neither refills it before both have consumed it. Both blocks name the
same B box, stage and barriers at every step.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 3,
):
    T.assume("K % 8 == 0")  # 16-byte aligned rows
    T.assume("N % 4 == 0")  # C's rows in whole vectors
    with T.grid(2 * T.cdiv(T.cdiv(M, BM), 2), T.cdiv(N, BN), threads=384, cluster=2) as (bx, bn):
        bm = bx  # rows 2 pm + r: the cluster's pair of row tiles, r its rank
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
        sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1, cluster=True)
        with T.role("producer", warpgroups=(0,), registers=40):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)  # the first pass finds every stage free
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s], multicast=True)
        with T.role("consumer", warpgroups=(1, 2), registers=232):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.gemm(sA[s], sB[s].T, acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
