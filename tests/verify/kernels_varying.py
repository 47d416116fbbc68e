"""Kernels whose loops run a different number of iterations in each block (a triangular walk, as causal attention's
key loop): what contraction coverage proves of them (`tests/verify/test_coverage_varying.py`)."""

# ruff: noqa: F821, UP037

import argus
import argus.lang as T


def _tril_gemm(diagonal: int):
    @argus.kernel
    def tril_gemm(
        A: T.Tensor[("M", "M"), T.bf16],
        B: T.Tensor[("M", "N"), T.bf16],
        C: T.Tensor[("M", "N"), T.f32],
        BM: int = 16,
        BN: int = 16,
    ):
        """C = A B for a lower-triangular A: row tile bm multiplies the K-blocks up to its diagonal only."""
        T.assume("M % 16 == 0")
        with T.grid(M // BM, T.cdiv(N, BN), threads=BM * BN) as (bm, bn):
            atom = T.fma_atom(T.bf16, T.f32)
            acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
            rA = T.alloc_fragment((BM, BM), T.bf16, mma=atom, operand="A", groups=(BM, BN))
            rB = T.alloc_fragment((BM, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
            T.fill(acc, 0.0)
            for k in T.serial(bm + diagonal):
                T.copy(A.tile((bm, k), (BM, BM)), rA)
                T.copy(B.tile((k, bn), (BM, BN)), rB)
                T.gemm(rA, rB, acc)
            T.copy(acc, C.tile((bm, bn), (BM, BN)))

    return tril_gemm


tril_gemm = _tril_gemm(1)
tril_gemm_short = _tril_gemm(0)  # stops before the diagonal block: no row tile multiplies B's last rows


def _rows_by_block(extent):
    @argus.kernel
    def rows_by_block(
        A: T.Tensor[(16, 48), T.bf16],
        B: T.Tensor[(48, "N"), T.bf16],
        C: T.Tensor[(48, "N"), T.f32],
        BN: int = 16,
    ):
        """Three row tiles of C; block b sums extent(b) K-blocks of 16 of A's row tile b and of B."""
        with T.grid(3, T.cdiv(N, BN), threads=16 * BN) as (b, bn):
            atom = T.fma_atom(T.bf16, T.f32)
            acc = T.alloc_fragment((16, BN), T.f32, mma=atom, groups=(16, BN))
            rA = T.alloc_fragment((16, 16), T.bf16, mma=atom, operand="A", groups=(16, BN))
            rB = T.alloc_fragment((16, BN), T.bf16, mma=atom, operand="B", groups=(16, BN))
            T.fill(acc, 0.0)
            for k in T.serial(extent(b)):
                T.copy(A.tile((0, k), (16, 16)), rA)
                T.copy(B.tile((k, bn), (16, BN)), rB)
                T.gemm(rA, rB, acc)
            T.copy(acc, C.tile((b, bn), (16, BN)))

    return rows_by_block


# the middle block walks every K-block, the first and last one each: the union is whole, the ends' is not
longest_in_the_middle = _rows_by_block(lambda b: 1 + b * (2 - b) + T.minimum(b, 2 - b))
# no block walks the last K-block
short_everywhere = _rows_by_block(lambda b: 1 + T.minimum(b, 1))
