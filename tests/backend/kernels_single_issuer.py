"""A kernel for test_single_issuer: a TMA producer that also arrives on a barrier without bytes."""

import argus
import argus.lang as T


@argus.kernel
def two_barriers(A: T.Tensor[("M", "K"), T.bf16], C: T.Tensor[("M", "K"), T.f32]):
    with T.grid(1, threads=256) as (bx,):
        sA = T.alloc_shared((64, 64), T.bf16, swizzle=128)
        full = T.alloc_mbarrier(1, arrive_count=1)
        done = T.alloc_mbarrier(1, arrive_count=1)
        with T.role("producer", warpgroups=(0,)):
            T.mbarrier_arrive(full[0], expect_bytes=64 * 64 * 2)
            T.copy(A.tile((0, 0), (64, 64)), sA, atom="tma", mbarrier=full[0])
            T.mbarrier_arrive(done[0])
        with T.role("consumer", warpgroups=(1,)):
            T.mbarrier_wait(full[0], phase=0)
            T.mbarrier_wait(done[0], phase=0)
            r = T.alloc_fragment((64, 64), T.f32)
            T.copy(sA, r)
            T.copy(r, C.tile((0, 0), (64, 64)))
