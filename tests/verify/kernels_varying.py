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


def _rows_by_block(extent, rows):
    @argus.kernel
    def rows_by_block(
        A: T.Tensor[(16, 48), T.bf16],
        B: T.Tensor[(48, "N"), T.bf16],
        C: T.Tensor[(rows, "N"), T.f32],
        BN: int = 16,
    ):
        """Row tiles of C; block b sums extent(b, blocks) K-blocks of 16 of A and of B (three would be all)."""
        if rows == "R":
            T.assume("R >= 48")  # three row tiles at least
        blocks = T.cdiv(C.shape[0], 16)
        with T.grid(blocks, T.cdiv(N, BN), threads=16 * BN) as (b, bn):
            atom = T.fma_atom(T.bf16, T.f32)
            acc = T.alloc_fragment((16, BN), T.f32, mma=atom, groups=(16, BN))
            rA = T.alloc_fragment((16, 16), T.bf16, mma=atom, operand="A", groups=(16, BN))
            rB = T.alloc_fragment((16, BN), T.bf16, mma=atom, operand="B", groups=(16, BN))
            T.fill(acc, 0.0)
            for k in T.serial(extent(b, blocks)):
                T.copy(A.tile((0, k), (16, 16)), rA)
                T.copy(B.tile((k, bn), (16, BN)), rB)
                T.gemm(rA, rB, acc)
            T.copy(acc, C.tile((b, bn), (16, BN)))

    return rows_by_block


def _middle(b, blocks):  # the inner blocks walk all three K-blocks, the first and the last one each
    return T.minimum(1 + 2 * T.minimum(b, blocks - 1 - b), 3)


def _short(b, blocks):  # no block walks the third K-block
    return 1 + T.minimum(b, 1)


# a symbolic number of row tiles: read at the ends of the block index (the union is whole, the ends' is not)
longest_in_the_middle = _rows_by_block(_middle, "R")
# three row tiles: the block index read at every value
longest_in_the_middle_of_three = _rows_by_block(_middle, 48)
short_everywhere = _rows_by_block(_short, "R")


def _split_k(share, extra=0, splits=4):
    @argus.kernel
    def split_k(
        A: T.Tensor[("M", "K"), T.bf16],
        B: T.Tensor[("K", "N"), T.bf16],
        W: T.Tensor[(splits, "M", "N"), T.f32],
        BM: int = 16,
        BN: int = 16,
        BK: int = 16,
    ):
        """Four splits of K, as flash-decoding splits the keys: split z sums its share of the K-blocks, the last one
        what is left (none where the shares run out), into slice z of W (another kernel adds the slices). `extra`
        K-blocks more per split overlap the next split's share."""
        T.partial_sums(W, 0, "the next kernel adds the four slices")
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), W.shape[0], threads=BM * BN) as (bm, bn, z):
            atom = T.fma_atom(T.bf16, T.f32)
            acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
            rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(BM, BN))
            rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
            blocks = T.cdiv(K, BK)
            first = z * share(blocks)
            T.fill(acc, 0.0)
            for k in T.serial(T.maximum(T.minimum(share(blocks) + extra, blocks - first), 0)):
                T.copy(A.tile((bm, first + k), (BM, BK)), rA)
                T.copy(B.tile((first + k, bn), (BK, BN)), rB)
                T.gemm(rA, rB, acc)
            T.copy(acc, W.tile((z, bm, bn), (None, BM, BN)))

    return split_k


split_k = _split_k(lambda blocks: T.cdiv(blocks, 4))
# shares of blocks // 4: no split loads the last K-blocks of a count that is not a multiple of 4
split_k_floor = _split_k(lambda blocks: blocks // 4)
# each split one K-block past its share: the first K-block of the next share is summed twice
split_k_overlap = _split_k(lambda blocks: T.cdiv(blocks, 4), extra=1)
# a count of splits S given at the launch (the share still cdiv(blocks, 4)): no slice indices to pin
split_k_symbolic = _split_k(lambda blocks: T.cdiv(blocks, 4), splits="S")


def _causal_split(share):
    @argus.kernel
    def causal_split(
        A: T.Tensor[("M", "M"), T.bf16],
        B: T.Tensor[("M", "N"), T.bf16],
        W: T.Tensor[(4, "M", "N"), T.f32],
        BM: int = 16,
        BN: int = 16,
    ):
        """A lower-triangular A times B with the K-blocks split four ways, as a causal attention's keys are split for
        a few query tokens: row tile bm walks the K-blocks up to its diagonal (bm + 1 of them), split z its share of
        them, from z * share(bm + 1) (the share moves with the row tile, which also bounds the loop), into slice z of
        W (another kernel adds the slices)."""
        T.assume("M % 16 == 0")
        T.partial_sums(W, 0, "the next kernel adds the four slices")
        with T.grid(M // BM, T.cdiv(N, BN), 4, threads=BM * BN) as (bm, bn, z):
            atom = T.fma_atom(T.bf16, T.f32)
            acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
            rA = T.alloc_fragment((BM, BM), T.bf16, mma=atom, operand="A", groups=(BM, BN))
            rB = T.alloc_fragment((BM, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
            tiles = bm + 1
            first = z * share(tiles)
            T.fill(acc, 0.0)
            for k in T.serial(T.maximum(T.minimum(share(tiles), tiles - first), 0)):
                T.copy(A.tile((bm, first + k), (BM, BM)), rA)
                T.copy(B.tile((first + k, bn), (BM, BN)), rB)
                T.gemm(rA, rB, acc)
            T.copy(acc, W.tile((z, bm, bn), (None, BM, BN)))

    return causal_split


causal_split = _causal_split(lambda tiles: T.cdiv(tiles, 4))
# shares of tiles // 4: the last row tile's last K-blocks (a count not a multiple of 4) are loaded by no split
causal_split_floor = _causal_split(lambda tiles: tiles // 4)


def zero_slices(**declare):
    """A kernel that declares ``T.partial_sums(W, **declare)`` (its errors: `test_coverage_varying.py`)."""

    @argus.kernel
    def zero_slices(W: T.Tensor[(4, "N"), T.f32]):
        T.partial_sums(W, **declare)
        with T.grid(4, threads=32) as (z,):
            T.fill(W.tile((z, 0), (None, 32)), 0.0)

    return zero_slices
