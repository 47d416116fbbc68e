"""Kernels with mistakes, one per function, for the error-UX tests: each faulty line carries
a comment saying `error here`."""

import argus
import argus.lang as T


@argus.kernel
def copy_shape_mismatch(A: T.Tensor[("M", "K"), T.f32], BM: int = 64):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        s = T.alloc_shared((BM, 32), T.f32)
        T.copy(A.tile((bm, 0), (BM, 64)), s)  # error here: 64 columns into 32


@argus.kernel
def smem_over_budget(A: T.Tensor[("M", "K"), T.bf16], STAGES: int = 8):
    with T.grid(T.cdiv(M, 128), threads=128) as (bm,):
        s = T.alloc_shared((STAGES, 128, 128), T.bf16)  # error here: 256 KiB
        T.copy(A.tile((bm, 0), (128, 128)), s[0])


@argus.kernel
def gemm_bad_accumulator(A: T.Tensor[("M", "K"), T.bf16], B: T.Tensor[("K", "N"), T.bf16]):
    with T.grid(1, threads=128) as (bm,):
        sA = T.alloc_shared((64, 32), T.bf16)
        sB = T.alloc_shared((32, 64), T.bf16)
        acc = T.alloc_fragment((64, 64), T.f32)
        T.gemm(sA, sB, acc)  # error here: acc has no mma atom


@argus.kernel
def fragment_layout_mismatch(A: T.Tensor[("M", "K"), T.bf16]):
    with T.grid(1, threads=128) as (bm,):
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((64, 64), T.f32, mma=atom, groups=(2, 2))
        plain = T.alloc_fragment((64, 64), T.f32)
        T.fill(acc, 0.0)
        T.fill(plain, 1.0)
        acc + plain  # error here: different thread-value layouts


@argus.kernel
def bad_threads(A: T.Tensor[("N",), T.f32]):
    with T.grid(1, threads=100) as (b,):  # error here: not a multiple of 32
        pass


@argus.kernel
def wrong_atom_spaces(A: T.Tensor[("M", "K"), T.f32]):
    with T.grid(1, threads=128) as (b,):
        r = T.alloc_fragment((64, 32), T.f32)
        T.copy(A.tile((0, 0), (64, 32)), r, atom="cp.async")  # error here: cp.async into registers
