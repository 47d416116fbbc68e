"""C = A^T-stored @ B: A given as (K, M) and B as (K, N), both MN-major, staged in 64-element panels
(``panels=True``) loaded one TMA box per panel, read by wgmma transposed. The TMA boxes and the wgmma operands are
canonical layouts, and the stage consumed at iteration k holds K-block k of both operands.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("K", "M"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 128,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 2,
):
    T.assume("M % 8 == 0 and N % 8 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
        sA = T.alloc_shared((STAGES, BK, BM), T.bf16, swizzle=128, panels=True)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16, swizzle=128, panels=True)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        with T.role("producer", warpgroups=(0,)):
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2)
                for j in range(BM // 64):
                    dst = sA[s].window((0, 64 * j), (BK, 64))
                    T.copy(A.tile((k, bm * (BM // 64) + j), (BK, 64)), dst, atom="tma", mbarrier=full[s])
                for j in range(BN // 64):
                    dst = sB[s].window((0, 64 * j), (BK, 64))
                    T.copy(B.tile((k, bn * (BN // 64) + j), (BK, 64)), dst, atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1, 2)):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            T.fill(acc, 0.0)
            for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)
                T.assert_tag(lambda a: (a[0] // BK == k) & (a[1] // BM == bm), sA[s])  # noqa: B023 (traced at once)
                T.assert_tag(lambda b: (b[0] // BK == k) & (b[1] // BN == bn), sB[s])  # noqa: B023 (traced at once)
                T.gemm(sA[s].T, sB[s], acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
