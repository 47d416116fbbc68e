"""The GEMM of `race_barrier_after_first_iteration_ok` with the barrier's condition off by one (``k > 1``): at
k = 1 no barrier runs between iteration 0's reads of sA and iteration 1's refill.

expect: violated
code: RACE_READ_WRITE
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16)
        sB = T.alloc_shared((BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            with T.if_(k > 1):  # BUG: iteration 1 refills the tiles while iteration 0's reads may still run
                T.barrier()
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")  # <- RACE_READ_WRITE
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
