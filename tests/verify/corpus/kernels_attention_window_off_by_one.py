"""`attention_window_ok` with the window's mask off by one (``key - row >= limit - WINDOW``): the key exactly WINDOW
behind each row's diagonal enters the row maximum and sum. T.exclude declared it excluded, so the verifier reports it
entering the reduction, with the row, the key and the iteration; its probability then enters P V (OOB_MASKED_MMA).

expect: violated
code: OOB_MASKED_REDUCTION
code: OOB_MASKED_MMA
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
    WINDOW: int = 100,
):
    T.assume("S % 64 == 0")  # whole tiles: no padding, so only T.exclude can say which keys must not count
    scale_log2 = LOG2E / D**0.5
    with T.grid(T.cdiv(S, BM), BH, threads=256) as (bm, bh):
        sQ = T.alloc_shared((BM, D), T.bf16, swizzle=128)
        sK = T.alloc_shared((STAGES, BN, D), T.bf16, swizzle=128)  # (stages, BN, D)
        sV = T.alloc_shared((STAGES, BN, D), T.bf16, swizzle=128)
        sP = T.alloc_shared((BM, BN), T.bf16, swizzle=128)  # probabilities, the A operand of P @ V
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        first = T.maximum(bm * BM - (WINDOW - 1), 0) // BN  # the tile of the first key the block's first row sees
        n_tiles = T.minimum(T.cdiv(S, BN), bm + 1) - first  # BM == BN: the key tiles up to the diagonal
        with T.role("producer", warpgroups=(0,), registers=40):
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * D * 2)
            T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ, atom="tma", mbarrier=q_ready[0])
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=2 * BN * D * 2)
                T.copy(K.tile((bh, first + j, 0), (None, BN, D)), sK[s], atom="tma", mbarrier=full[s])
                T.copy(V.tile((bh, first + j, 0), (None, BN, D)), sV[s], atom="tma", mbarrier=full[s])
        with T.role("consumer", warpgroups=(1,), registers=240):
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))  # S tile, wgmma C layout
            o = T.alloc_fragment((BM, D), T.f32, mma=T.wgmma_atom(D))
            m = T.alloc_reduced(scores, axis=1)  # running row maximum (log2 domain)
            l = T.alloc_reduced(scores, axis=1)  # noqa: E741
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[s].T, scores)  # S = Q K^T
                # invariant: no key past its row's diagonal contributes, nor one WINDOW or more behind it
                T.exclude(scores, lambda r, c, j=j: c + (first + j) * BN > r + bm * BM)
                T.exclude(scores, lambda r, c, j=j: c + (first + j) * BN <= r + bm * BM - WINDOW)
                diagonal = T.index(scores, 1) - T.index(scores, 0)
                limit = bm * BM - (first + j) * BN
                x = T.where(diagonal <= limit, scores * scale_log2, float("-inf"))
                x = T.where(diagonal >= limit - WINDOW, x, float("-inf"))  # BUG: the key WINDOW behind kept too
                m_new = T.maximum(T.reduce_max(x, axis=1), m)  # <- OOB_MASKED_REDUCTION
                p = T.exp2(x - m_new[:, None])
                alpha = T.exp2(m - m_new)  # rescales what was accumulated with the old maximum
                # invariant: the statistics that rescale row r of S (and of O) were computed from row r of S
                T.assert_tag(lambda pv, mv: (pv[0] == mv[0]) & (pv[0] // BM == bm), p, m_new[:, None])
                T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
                T.copy(o * alpha[:, None], o)
                T.copy(m_new, m)
                T.barrier(1, threads=128)  # the previous P @ V has finished reading sP
                T.copy(p, sP)  # to bf16 in shared memory: wgmma reads A from there
                T.fence_proxy_async()  # ordinary stores -> visible to wgmma (the async proxy)
                T.barrier(1, threads=128)  # every thread's part of P is in place
                T.gemm(sP, sV[s], o)  # <- OOB_MASKED_MMA (O += P V)
                T.mbarrier_arrive(empty[s])
            T.copy(o / l[:, None], O.tile((bh, bm, 0), (None, BM, D)))
