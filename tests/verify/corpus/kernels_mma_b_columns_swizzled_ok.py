"""B is N-major (K, N), staged 64-byte-swizzled, written and read through the same swizzled buffer: every product
summed into one accumulator element reads one column of B (the negative control of
kernels_mma_b_columns_swizzled_one_side.py).

expect: verified
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
        sB = T.alloc_shared((BK, BN), T.bf16, swizzle=64)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))
