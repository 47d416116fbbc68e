"""A producer warp role that fills shared memory with ordinary copies, handed over by mbarriers: not a
producer/consumer pipeline the verifier recognizes (it pairs TMA producers with pipelined consumers),
so what the consumer reads is unknown, and so is the verdict, never "verified".

expect: unknown
code: UNKNOWN_WARP_ROLES
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 16, BN: int = 64):
    T.assume(N <= BN)  # one column tile per row (COVERAGE_OUTPUT otherwise)
    with T.grid(T.cdiv(M, BM), threads=256) as (bm,):
        sX = T.alloc_shared((BM, BN), T.f32)
        ready = T.alloc_mbarrier(1, arrive_count=1)
        with T.role("producer", warpgroups=(0,)):
            T.copy(X.tile((bm, 0), (BM, BN)), sX)
            T.mbarrier_arrive(ready[0])
        with T.role("consumer", warpgroups=(1,)):
            x = T.alloc_fragment((BM, BN), T.f32)
            T.mbarrier_wait(ready[0], phase=0)
            T.copy(sX, x)  # <- UNKNOWN_WARP_ROLES
            T.copy(x * 2.0, Y.tile((bm, 0), (BM, BN)))
