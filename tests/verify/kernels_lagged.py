"""A lagged, peeled pipeline (FlashAttention-3's intra-warpgroup overlap, `argus.kernels.attention` with OVERLAP),
cut down to its pipeline: iteration j of the consumer issues S_j = Q K_j^T and O += P_{j-1} V_{j-1} (V read one
tile behind, on barriers of its own), tile 0's S peeled before the loop and the last tile's P V after it. One seeded
bug chosen by BUG, for `test_lagged_pipeline.py`:

* ``""``: correct (verified);
* ``"v_parity"``: the lagged wait on ``full_v[prev]`` uses the parity of tile j, not of tile j - 1: violated,
  MBARRIER_PHASE;
* ``"v_stage"``: the lagged read is of stage ``s`` (tile j's), not ``prev``: violated, PIPELINE_STALE_READ;
* ``"early_release"``: ``empty_v[prev]`` is released before the wgmma reading it is waited for: violated,
  PIPELINE_OVERWRITE;
* ``"epilogue_stage"``: the epilogue reads stage ``n % STAGES``, not ``(n - 1) % STAGES``: violated,
  PIPELINE_STALE_READ;
* ``"k_release_early"``: the loop releases ``empty[s]`` before S = Q K^T reads the stage: violated,
  PIPELINE_OVERWRITE;
* ``"epilogue_no_wait"``: the epilogue reads without waiting on ``full_v``: not verified (the read stands for
  no iteration it waited for).
* ``"two_in_flight"``: both MMAs issued with ``wait_group=2``, then ``T.wgmma_wait(1)`` completes S before K's
  release (the attention kernel's form under ping-pong): verified;
* ``"two_in_flight_loose"``: the same with ``T.wgmma_wait(2)``, which completes nothing: K's stage is released while
  S may still read it: violated, PIPELINE_OVERWRITE.
"""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def lagged_variant(
    Q: T.Tensor[("SQ", "D"), T.bf16],
    K: T.Tensor[("SK", "D"), T.bf16],
    V: T.Tensor[("SK", "D"), T.bf16],
    O: T.Tensor[("SQ", "D"), T.f32],  # noqa: E741
    BM: int = 64,
    BN: int = 64,
    STAGES: int = 2,
    BUG: str = "",
):
    """O = (Q K^T) V with P = S (no softmax), the K/V tiles through a lagged pipeline; one seeded bug, named by BUG."""
    T.assume("D == 64")
    with T.grid(T.cdiv(SQ, BM), threads=256) as (bm,):
        sQ = T.alloc_shared((BM, 64), T.bf16, swizzle=128)
        sK = T.alloc_shared((STAGES, BN, 64), T.bf16, swizzle=128)
        sV = T.alloc_shared((STAGES, BN, 64), T.bf16, swizzle=128)
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        full_v = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty_v = T.alloc_mbarrier(STAGES, arrive_count=1)
        n = T.cdiv(SK, BN)
        with T.role("producer", warpgroups=(0,), registers=40):
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * 64 * 2)
            T.copy(Q.tile((bm, 0), (BM, 64)), sQ, atom="tma", mbarrier=q_ready[0])
            for j, s in T.pipeline(n, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=BN * 64 * 2)
                T.copy(K.tile((j, 0), (BN, 64)), sK[s], atom="tma", mbarrier=full[s])
                T.mbarrier_wait(empty_v[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full_v[s], expect_bytes=BN * 64 * 2)
                T.copy(V.tile((j, 0), (BN, 64)), sV[s], atom="tma", mbarrier=full_v[s])
        with T.role("consumer", warpgroups=(1,), registers=232):
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, T.bf16))
            pv = T.wgmma_atom(64, T.bf16, a_source="registers")
            o = T.alloc_fragment((BM, 64), T.f32, mma=pv)
            pa = T.alloc_fragment((BM, BN), T.bf16, mma=pv, operand="A")
            T.fill(o, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            with T.if_(n > 0):  # tile 0, peeled
                T.mbarrier_wait(full[0], phase=0)
                T.assert_tag(lambda x: x[0] // BN == 0, sK[0])
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[0].T, scores)
                T.mbarrier_arrive(empty[0])
                T.copy(scores, pa)
            for i, s in T.pipeline(n - 1, stages=STAGES, start=1):  # tile j = i + 1
                j = i + 1
                prev = i % STAGES  # tile j - 1's stage
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                if BUG == "k_release_early":
                    T.mbarrier_arrive(empty[s])
                T.assert_tag(lambda x: x[0] // BN == j, sK[s])  # noqa: B023
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[s].T, scores, wait_group=1)
                phase = (j // STAGES) % 2 if BUG == "v_parity" else ((j - 1) // STAGES) % 2
                T.mbarrier_wait(full_v[prev], phase=phase)
                read = s if BUG == "v_stage" else prev
                T.assert_tag(lambda x: x[0] // BN == j - 1, sV[read])  # noqa: B023
                if BUG in ("two_in_flight", "two_in_flight_loose"):  # both issued, then S waited for (ping-pong)
                    T.gemm(pa, sV[read], o, wait_group=2)
                    T.wgmma_wait(2 if BUG == "two_in_flight_loose" else 1)
                else:
                    T.gemm(pa, sV[read], o, wait_group=1)
                if BUG != "k_release_early":
                    T.mbarrier_arrive(empty[s])
                if BUG == "early_release":
                    T.mbarrier_arrive(empty_v[prev])
                T.wgmma_wait(0)
                if BUG != "early_release":
                    T.mbarrier_arrive(empty_v[prev])
                T.copy(scores, pa)
            with T.if_(n > 0):  # the last tile's P V
                last = (n - 1) % STAGES
                if BUG != "epilogue_no_wait":
                    T.mbarrier_wait(full_v[last], phase=((n - 1) // STAGES) % 2)
                read = n % STAGES if BUG == "epilogue_stage" else last
                T.assert_tag(lambda x: x[0] // BN == n - 1, sV[read])
                T.gemm(pa, sV[read], o)
                T.mbarrier_arrive(empty_v[last])
            T.copy(o, O.tile((bm, 0), (BM, 64)))
