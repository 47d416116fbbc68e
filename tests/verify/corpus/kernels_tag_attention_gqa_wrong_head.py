"""Grouped-query attention's score GEMM, S = Q K^T, where the producer loads the key tile of query head bh instead
of its key/value head bh // GROUP: every head past the first group reads another head's keys (or past K's heads).
The consumer's tag assertion, "the stage holds key tile j of key/value head bh // GROUP", fails with the element.

expect: violated
code: TAG_ASSERT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    Q: T.Tensor[("BH", "S", 64), T.bf16],
    K: T.Tensor[("BHK", "S", 64), T.bf16],
    Out: T.Tensor[("BH", "S", 64), T.f32],
    BM: int = 64,
    BN: int = 64,
    GROUP: int = 4,
):
    T.assume(f"BH == BHK * {GROUP}")
    T.assume("S % 64 == 0")  # whole key tiles: no mask needed
    with T.grid(T.cdiv(S, BM), BH, threads=256) as (bm, bh):
        sQ = T.alloc_shared((BM, 64), T.bf16, swizzle=128)
        sK = T.alloc_shared((2, BN, 64), T.bf16, swizzle=128)
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(2, arrive_count=1)
        empty = T.alloc_mbarrier(2, arrive_count=1)
        with T.role("producer", warpgroups=(0,), registers=40):
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * 64 * 2)
            T.copy(Q.tile((bh, bm, 0), (None, BM, 64)), sQ, atom="tma", mbarrier=q_ready[0])
            for j, s in T.pipeline(T.cdiv(S, BN), stages=2):
                T.mbarrier_wait(empty[s], phase=(j // 2 + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=BN * 64 * 2)
                T.copy(K.tile((bh, j, 0), (None, BN, 64)), sK[s], atom="tma", mbarrier=full[s])  # BUG: not bh // GROUP
        with T.role("consumer", warpgroups=(1,), registers=232):
            acc = T.alloc_fragment((BM, 64), T.f32, mma=T.wgmma_atom(64))
            T.fill(acc, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(T.cdiv(S, BN), stages=2):
                T.mbarrier_wait(full[s], phase=(j // 2) % 2)
                T.assert_tag(lambda k, j=j: (k[0] == bh // GROUP) & (k[1] // BN == j), sK[s])  # <- TAG_ASSERT
                scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN))
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[s].T, scores)
                T.copy(acc + T.reduce_sum(scores, axis=1)[:, None], acc)
                T.mbarrier_arrive(empty[s])
            T.copy(acc, Out.tile((bh, bm, 0), (None, BM, 64)))
