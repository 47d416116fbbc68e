"""A (M, 64) @ (64, 64) product whose A tile is scaled in registers and stored to shared memory for wgmma:
the T.fence_proxy_async() comes after the barrier, so it does not order the other warps' ordinary stores
before the async proxy's reads (the fence must follow the stores and precede the barrier). B's tile,
copied by ordinary loads and stores, has the same problem.

expect: violated
code: FENCE_PROXY_ASYNC
fact: FENCE_PROXY_ASYNC counterexample.accesses.0.kind == "write"
fact: FENCE_PROXY_ASYNC counterexample.accesses.1.kind == "read"
fact: FENCE_PROXY_ASYNC counterexample.accesses.0.element.index == counterexample.accesses.1.element.index
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
        T.copy(B.tile((0, 0), (64, 64)), sB)  # <- FENCE_PROXY_ASYNC
        T.copy(rA * 2.0, sA)  # <- FENCE_PROXY_ASYNC
        T.barrier()
        T.fence_proxy_async()  # BUG: after the barrier instead of before it
        T.fill(acc, 0.0)
        T.gemm(sA, sB, acc)
        T.copy(acc, C.tile((bm, 0), (BM, 64)))
