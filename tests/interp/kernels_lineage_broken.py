"""Broken variants of a shared-memory-tiled FMA GEMM (the per-thread FMA atom, as `gemm_smem_tiled`), each
with one deliberate bug that the interpreter shows as wrong numbers and the verifier names
(tests/interp/test_lineage.py)."""

from __future__ import annotations

import argus
import argus.lang as T
from argus.layout import Layout

#: Small tiles: (32, 32) per block, a (4, 4) micro-tile per thread, 64 threads.
BM, BN, BK, TM, TN = 32, 32, 8, 4, 4
GROUPS = (BM // TM, BN // TN)


def fma_gemm(a_tv: Layout | None = None, acc_tv: Layout | None = None, b_block_shift: int = 0):
    """The FMA GEMM; `a_tv` / `acc_tv` override the A operand's / the accumulator's thread-value layout (the
    escape hatch), `b_block_shift` loads B's K-block k + shift at iteration k."""

    @argus.kernel
    def gemm_fma_variant(
        A: T.Tensor[("M", "K"), T.bf16],
        B: T.Tensor[("K", "N"), T.bf16],
        C: T.Tensor[("M", "N"), T.f32],
    ):
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=GROUPS[0] * GROUPS[1]) as (bm, bn):
            sA = T.alloc_shared((BM, BK), T.bf16)
            sB = T.alloc_shared((BK, BN), T.bf16)
            atom = T.fma_atom(T.bf16, T.f32)
            acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=GROUPS, tv=acc_tv)
            rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=GROUPS, tv=a_tv)
            rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=GROUPS)
            T.fill(acc, 0.0)
            for k in T.serial(T.cdiv(K, BK)):
                T.copy(A.tile((bm, k), (BM, BK)), sA)
                T.copy(B.tile((k + b_block_shift, bn), (BK, BN)), sB)
                T.barrier()
                T.copy(sA, rA)
                T.copy(sB, rB)
                T.gemm(rA, rB, acc)
                T.barrier()
            T.copy(acc, C.tile((bm, bn), (BM, BN)))

    return gemm_fma_variant


def _correct(operand: str, tile: tuple[int, int]) -> Layout:
    from argus.lang.fragments import mma_tv

    return mma_tv(T.fma_atom(T.bf16, T.f32), operand, tile, GROUPS)


def raked_rows_a():
    """BUG: rA is loaded raked — thread group gm holds rows gm, gm + 8, gm + 16, ... of A — while the FMA atom
    reads a thread's A registers as its TM consecutive rows (a valid bijection, the wrong one)."""
    correct = _correct("A", (BM, BK))  # ((1,(GM,GN)),(1,(TM,BK))) : ((0,(TM,0)),(0,(1,BM)))
    thr, val = correct[0], correct[1]
    raked = Layout((thr.shape, val.shape), ((0, (1, 0)), (0, (GROUPS[0], BM))))
    return fma_gemm(a_tv=raked)


def raked_columns_accumulator():
    """BUG: the accumulator is declared raked along columns (thread group gn holds columns gn, gn + 8, ...),
    so the registers the FMAs fill are stored to other columns of C than they were computed for."""
    correct = _correct("C", (BM, BN))  # ((1,(GM,GN)),(1,(TM,TN))) : ((0,(TM,TN*BM)),(0,(1,BM)))
    thr, val = correct[0], correct[1]
    raked = Layout((thr.shape, val.shape), ((0, (TM, BM)), (0, (1, GROUPS[1] * BM))))
    return fma_gemm(acc_tv=raked)


def next_k_block_of_b():
    """BUG: B's tile at iteration k is K-block k + 1 (an off-by-one tile origin)."""
    return fma_gemm(b_block_shift=1)
