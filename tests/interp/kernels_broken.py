"""Deliberately broken kernels: each differs from a correct library kernel by one bug that the
interpreter must expose as wrong numbers."""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def gemm_missing_wait(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for s in range(STAGES - 1):
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((s, bn), (BK, BN)), sB[s], atom="cp.async")
            T.async_commit()
        for k in T.serial(T.cdiv(K, BK)):
            nxt = k + (STAGES - 1)
            T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
            T.copy(B.tile((nxt, bn), (BK, BN)), sB[nxt % STAGES], atom="cp.async")
            T.async_commit()
            # BUG: no T.async_wait(STAGES - 1): tile k may not have landed
            T.barrier()
            T.copy(sA[k % STAGES], rA, atom="ldmatrix")
            T.copy(sB[k % STAGES], rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel
def gemm_wrong_stage(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((STAGES, BM, BK), T.bf16)
        sB = T.alloc_shared((STAGES, BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for s in range(STAGES - 1):
            T.copy(A.tile((bm, s), (BM, BK)), sA[s], atom="cp.async")
            T.copy(B.tile((s, bn), (BK, BN)), sB[s], atom="cp.async")
            T.async_commit()
        for k in T.serial(T.cdiv(K, BK)):
            nxt = k + (STAGES - 1)
            T.copy(A.tile((bm, nxt), (BM, BK)), sA[nxt % STAGES], atom="cp.async")
            T.copy(B.tile((nxt, bn), (BK, BN)), sB[nxt % STAGES], atom="cp.async")
            T.async_commit()
            T.async_wait(STAGES - 1)
            T.barrier()
            T.copy(sA[nxt % STAGES], rA, atom="ldmatrix")  # BUG: the stage being filled, not k's
            T.copy(sB[k % STAGES], rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


def _gemm(tile_offset: int = 0, a_tv=None, swizzle_reader: bool = False, a_atom="ldmatrix", b_atom="ldmatrix"):
    @argus.kernel
    def gemm_variant(
        A: T.Tensor[("M", "K"), T.bf16],
        B: T.Tensor[("K", "N"), T.bf16],
        C: T.Tensor[("M", "N"), T.f32],
        BM: int = 64,
        BN: int = 64,
        BK: int = 32,
    ):
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
            sA = T.alloc_shared((BM, BK), T.bf16, swizzle=64 if swizzle_reader else 0)
            sB = T.alloc_shared((BK, BN), T.bf16)
            atom = T.mma_sync(T.bf16, T.f32)
            acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
            rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2), tv=a_tv)
            rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
            T.fill(acc, 0.0)
            for k in T.serial(T.cdiv(K, BK)):
                # the writer goes through the plain row-major layout when the reader is swizzled
                writer = sA.view(Layout((BM, BK), (BK, 1))) if swizzle_reader else sA
                T.copy(A.tile((bm, k + tile_offset), (BM, BK)), writer)
                T.copy(B.tile((k, bn), (BK, BN)), sB)
                T.barrier()
                T.copy(sA, rA, atom=a_atom)
                T.copy(sB, rB, atom=b_atom)
                T.gemm(rA, rB, acc)
                T.barrier()
            T.copy(acc, C.tile((bm, bn), (BM, BN)))

    return gemm_variant


def gemm_off_by_one_tile():
    return _gemm(tile_offset=1)


def gemm_swizzle_mismatch():
    return _gemm(swizzle_reader=True)


def gemm_wrong_fragment_layout():
    """rA holds A in the *accumulator's* style of layout (a valid bijection over the tile, but not
    the one mma.sync reads A registers by)."""
    from argus.atoms import mma_sync_m16n8k16
    from argus.ir.types import bf16, f32
    from argus.lang.fragments import mma_tv

    atom = mma_sync_m16n8k16(bf16, bf16, f32)
    correct = mma_tv(atom, "A", (64, 32), (2, 2))
    # swap the roles of the two value sub-modes (the two 8-row halves and the two k halves)
    thr, val = correct[0], correct[1]
    vs, vd = val.shape, val.stride
    swapped = Layout(
        (thr.shape, ((vs[0][1], vs[0][0], vs[0][2]), vs[1])), (thr.stride, ((vd[0][1], vd[0][0], vd[0][2]), vd[1]))
    )
    return _gemm(a_tv=swapped)


@argus.kernel
def softmax_unmasked(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x)  # BUG: masked columns read 0, not -inf
        row_max = T.reduce_max(x, axis=1)
        e = T.exp2((x - row_max[:, None]) * 1.4426950408889634)
        row_sum = T.reduce_sum(e, axis=1)
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))


def _hopper(wait_full: bool = True, consumer_parity_offset: int = 0, expect_bytes_delta: int = 0, acc_tv=None):
    @argus.kernel
    def gemm_hopper_variant(
        A: T.Tensor[("M", "K"), T.bf16],
        B: T.Tensor[("N", "K"), T.bf16],
        C: T.Tensor[("M", "N"), T.f32],
        BM: int = 128,
        BN: int = 64,
        BK: int = 64,
        STAGES: int = 2,
    ):
        with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=384) as (bm, bn):
            sA = T.alloc_shared((STAGES, BM, BK), T.bf16, swizzle=128)
            sB = T.alloc_shared((STAGES, BN, BK), T.bf16, swizzle=128)
            full = T.alloc_mbarrier(STAGES, arrive_count=1)
            empty = T.alloc_mbarrier(STAGES, arrive_count=1)
            with T.role("producer", warpgroups=(0,), registers=40):
                for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                    T.mbarrier_wait(empty[s], phase=(k // STAGES + 1) % 2)
                    T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * 2 + expect_bytes_delta)
                    T.copy(A.tile((bm, k), (BM, BK)), sA[s], atom="tma", mbarrier=full[s])
                    T.copy(B.tile((bn, k), (BN, BK)), sB[s], atom="tma", mbarrier=full[s])
            with T.role("consumer", warpgroups=(1, 2), registers=232):
                acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN), tv=acc_tv)
                T.fill(acc, 0.0)
                for k, s in T.pipeline(T.cdiv(K, BK), stages=STAGES):
                    if wait_full:
                        T.mbarrier_wait(full[s], phase=(k // STAGES + consumer_parity_offset) % 2)
                    T.gemm(sA[s], sB[s].T, acc)
                    T.mbarrier_arrive(empty[s])
                T.copy(acc, C.tile((bm, bn), (BM, BN)))

    return gemm_hopper_variant


def hopper_correct():
    return _hopper()


def hopper_missing_mbarrier_wait():
    return _hopper(wait_full=False)


def hopper_wrong_phase_bit():
    return _hopper(consumer_parity_offset=1)


def hopper_wrong_expect_bytes():
    return _hopper(expect_bytes_delta=-1024)


def hopper_wrong_wgmma_fragment_layout():
    """The accumulator laid out as a plain row-major tile of 16-byte runs per thread: a valid
    layout of the tile over the 256 consumer threads, but not the one wgmma writes its
    accumulator registers by. (mma.sync's C layout tiled over 8 warps would *not* do: it is
    exactly wgmma's.)"""
    from argus.lang.fragments import blocked_tv

    return _hopper(acc_tv=blocked_tv((128, 64), 256, 4))


def gemm_transposed_ldmatrix():
    """A loaded with ``ldmatrix.x4.trans`` although its K dimension is contiguous in shared
    memory: every 8x8 block of A arrives transposed."""
    return _gemm(a_atom="ldmatrix.x4.trans")


def gemm_forced_ldmatrix_variants_that_are_right():
    """The forced variants, used where they are right (A without .trans, B with), must agree."""
    return _gemm(a_atom="ldmatrix.x4", b_atom="ldmatrix.x4.trans")
