"""The twin of `fence_after_barrier`: each thread fences its ordinary stores before the barrier that
hands the tiles to wgmma, as CUTLASS does (fence.proxy.async, then bar.sync).

expect: verified
no-warning: FENCE_PROXY_ASYNC
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", 64), T.bf16],
    B: T.Tensor[(64, 64), T.bf16],
    C: T.Tensor[("M", 64), T.f32],
    BM: int = 64,
):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sA = T.alloc_shared((BM, 64), T.bf16, swizzle=128)
        sB = T.alloc_shared((64, 64), T.bf16, swizzle=128)  # (K, N)
        acc = T.alloc_fragment((BM, 64), T.f32, mma=T.wgmma_atom(64))
        rA = T.alloc_fragment((BM, 64), T.bf16)
        T.copy(A.tile((bm, 0), (BM, 64)), rA)
        T.copy(B.tile((0, 0), (64, 64)), sB)
        T.copy(rA * 2.0, sA)
        T.fence_proxy_async()  # this thread's ordinary stores -> visible to the async proxy
        T.barrier()  # every thread's stores (and fences) are done
        T.fill(acc, 0.0)
        T.gemm(sA, sB, acc)
        T.copy(acc, C.tile((bm, 0), (BM, 64)))
