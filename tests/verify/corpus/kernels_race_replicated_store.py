"""Storing an MMA A fragment to shared memory: mma.sync's A layout is replicated over the thread
groups along N, so two threads write every element.

expect: violated
code: RACE_WRITE_WRITE
fact: RACE_WRITE_WRITE counterexample.accesses.0.kind == "write"
fact: RACE_WRITE_WRITE counterexample.accesses.1.kind == "write"
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    Out: T.Tensor[("M", "K"), T.bf16],
    BM: int = 64,
    BK: int = 32,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(K, BK), threads=128) as (bm, bk):
        atom = T.mma_sync(T.bf16, T.f32)
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        sA = T.alloc_shared((BM, BK), T.bf16)
        T.copy(A.tile((bm, bk), (BM, BK)), rA)
        T.copy(rA, sA)  # <- RACE_WRITE_WRITE
        T.barrier()
        T.copy(sA, Out.tile((bm, bk), (BM, BK)))
