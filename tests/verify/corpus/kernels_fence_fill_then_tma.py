"""A shared tile zeroed with ordinary stores (T.fill, the generic proxy) and then overwritten by a TMA load
(the async proxy) with no fence.proxy.async in between: the two proxies' writes are not ordered, so a zero
may land after the TMA data. With T.fence_proxy_async() after the fill (FENCED=True) it verifies.

expect: violated
code: FENCE_PROXY_ASYNC
fact: FENCE_PROXY_ASYNC counterexample.accesses.1.op == "TMA write (async proxy)"
fact: FENCE_PROXY_ASYNC counterexample.accesses.0.element.index == counterexample.accesses.1.element.index
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", 64), T.bf16],
    Y: T.Tensor[("M", 64), T.f32],
    BM: int = 64,
    FENCED: bool = False,
):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        sX = T.alloc_shared((BM, 64), T.bf16, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.fill(sX, 0.0)  # <- FENCE_PROXY_ASYNC
        if FENCED:
            T.fence_proxy_async()
        T.barrier()
        T.mbarrier_arrive(bar[0], expect_bytes=BM * 64 * 2)
        T.copy(X.tile((bm, 0), (BM, 64)), sX, atom="tma", mbarrier=bar[0])
        T.mbarrier_wait(bar[0], phase=0)
        r = T.alloc_fragment((BM, 64), T.f32)
        T.copy(sX, r)
        T.copy(r, Y.tile((bm, 0), (BM, 64)))
