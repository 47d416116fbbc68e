"""Each block computes two neighbouring column tiles of C in a loop over them, but the accumulator is zeroed once,
before the tile loop: the second tile's result includes the first tile's products.

expect: violated
code: MMA_ACC_NOT_RESET
fact: MMA_ACC_NOT_RESET counterexample.loops.t == 1
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 16,
    BN: int = 16,
    BK: int = 16,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, 2 * BN), threads=BM * BN) as (bm, bn2):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        T.fill(acc, 0.0)  # BUG: belongs at the top of the tile loop
        for t in T.serial(2):
            bn = bn2 * 2 + t
            for k in T.serial(T.cdiv(K, BK)):
                T.copy(A.tile((bm, k), (BM, BK)), rA)
                T.copy(B.tile((k, bn), (BK, BN)), rB)
                T.gemm(rA, rB, acc)  # <- MMA_ACC_NOT_RESET
            T.copy(acc, C.tile((bm, bn), (BM, BN)))
