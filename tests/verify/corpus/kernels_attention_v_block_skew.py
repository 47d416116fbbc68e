"""Flash attention whose V tile is loaded one key block ahead of K's: P (from keys of block j) is
multiplied with V rows of block j+1.

expect: violated
code: COVERAGE_CONTRACTION
code: MMA_K_MISMATCH
fact: MMA_K_MISMATCH counterexample.expected.name == "V"
"""

import argus
import argus.lang as T

LOG2E = 1.4426950408889634


@argus.kernel
def KERNEL(
    Q: T.Tensor[("BH", "S", 64), T.bf16],
    K: T.Tensor[("BH", "S", 64), T.bf16],
    V: T.Tensor[("BH", "S", 64), T.bf16],
    O: T.Tensor[("BH", "S", 64), T.f32],  # noqa: E741
    BM: int = 64,
    BN: int = 64,
    D: int = 64,
    STAGES: int = 2,
):
    scale_log2 = LOG2E / D**0.5
    with T.grid(T.cdiv(S, BM), BH, threads=256) as (bm, bh):
        sQ = T.alloc_shared((BM, D), T.bf16, swizzle=128)
        sK = T.alloc_shared((STAGES, BN, D), T.bf16, swizzle=128)
        sV = T.alloc_shared((STAGES, BN, D), T.bf16, swizzle=128)
        sP = T.alloc_shared((BM, BN), T.bf16, swizzle=128)
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        n_tiles = T.cdiv(S, BN)
        with T.role("producer", warpgroups=(0,), registers=40):
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * D * 2)
            T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ, atom="tma", mbarrier=q_ready[0])
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=2 * BN * D * 2)
                T.copy(K.tile((bh, j, 0), (None, BN, D)), sK[s], atom="tma", mbarrier=full[s])
                T.copy(V.tile((bh, j + 1, 0), (None, BN, D)), sV[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1,), registers=240):
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
            o = T.alloc_fragment((BM, D), T.f32, mma=T.wgmma_atom(D))
            m = T.alloc_reduced(scores, axis=1)
            l = T.alloc_reduced(scores, axis=1)  # noqa: E741
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[s].T, scores)
                valid = T.index(scores, 1) + j * BN < S
                x = T.where(valid, scores * scale_log2, float("-inf"))
                m_new = T.maximum(m, T.reduce_max(x, axis=1))
                p = T.exp2(x - m_new[:, None])
                alpha = T.exp2(m - m_new)
                T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
                T.copy(o * alpha[:, None], o)
                T.copy(m_new, m)
                T.copy(p, sP)
                T.fence_proxy_async()  # the ordinary stores of P -> visible to wgmma (the async proxy)
                T.barrier(1, 128)  # the consumer warpgroup's stores of P complete before wgmma reads sP
                T.gemm(sP, sV[s], o)  # <- MMA_K_MISMATCH
                T.barrier(1, 128)  # and every warp's wgmma read sP before it is overwritten
                T.mbarrier_arrive(empty[s])
            T.copy(o / l[:, None], O.tile((bh, bm, 0), (None, BM, D)))
