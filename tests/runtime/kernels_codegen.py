"""Small DSL kernels that reach the code generator's less common paths (conversions, T.index/T.where,
unrolled loops and branches, replicated stores, swizzled shared memory, forced ldmatrix variants,
stmatrix, narrow cp.async runs, a non-separable thread-value layout, shared-memory fills, named barriers).

Each `Case` says how to make inputs; the GPU tier (`tests/runtime/test_gpu.py`) runs it on the device and on
the interpreter and requires the same numbers, and `tests/backend/test_codegen_paths.py` checks what the
generated code and its SASS contain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import argus
import argus.lang as T
from argus.ir.types import bf16, round_to
from argus.layout import Layout


@argus.kernel
def mixed_elementwise(
    X: T.Tensor[("M", "N"), T.f32],
    Y: T.Tensor[("M", "N"), T.bf16],
    Z: T.Tensor[("M", "N"), T.f32],
    R: T.Tensor[("M",), T.f32],
    BM: int = 8,
    BN: int = 64,
):
    """Y = bf16(where(col < 32, 2x, -x)); Z = 3x (an unrolled loop, under a uniform branch);
    R = row sums (a replicated fragment stored once per row)."""
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x)
        col = T.index(x, 1)
        y = T.where(col < 32.0, x * 2.0, -x)
        T.copy(T.cast(y, T.bf16), Y.tile((bm, 0), (BM, BN)))
        acc = T.alloc_fragment((BM, BN), T.f32)
        T.fill(acc, 0.0)
        for _ in T.unroll(3):
            T.copy(acc + x, acc)
        with T.if_(bm * BM < M):
            T.copy(acc, Z.tile((bm, 0), (BM, BN)))
        T.copy(T.reduce_sum(x, axis=1), R.tile(bm, BM))


@argus.kernel
def swizzled_gemm(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("K", "N"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    TRANS_B: str = "ldmatrix",
):
    """gemm_cp_async's structure, one stage, with 64- and 128-byte swizzled shared memory; `TRANS_B` forces an
    ldmatrix variant for B (``"ldmatrix.x4"`` is the wrong one: each 8x8 block of B arrives transposed)."""
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16, swizzle=64)
        sB = T.alloc_shared((BK, BN), T.bf16, swizzle=128)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(K, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA, atom="cp.async")
            T.copy(B.tile((k, bn), (BK, BN)), sB, atom="cp.async")
            T.async_commit()
            T.async_wait(0)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom=TRANS_B)
            T.gemm(rA, rB, acc)
            T.barrier()
        T.copy(acc, C.tile((bm, bn), (BM, BN)))


@argus.kernel
def matrix_roundtrip(
    X: T.Tensor[("M", 32), T.bf16],
    Y: T.Tensor[("M", 32), T.bf16],
    BM: int = 64,
):
    """X -> shared -> ldmatrix -> registers -> stmatrix -> shared -> Y (through a named barrier)."""
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        s_in = T.alloc_shared((BM, 32), T.bf16)
        s_out = T.alloc_shared((BM, 32), T.bf16)
        a = T.alloc_fragment((BM, 32), T.bf16, mma=T.mma_sync(T.bf16, T.f32), operand="A", groups=(4, 1))
        T.copy(X.tile((bm, 0), (BM, 32)), s_in)
        T.barrier()
        T.copy(s_in, a, atom="ldmatrix")
        T.copy(a, s_out, atom="stmatrix")
        T.barrier(1, 128)
        T.copy(s_out, Y.tile((bm, 0), (BM, 32)))


@argus.kernel
def narrow_copies(
    X: T.Tensor[("M", "K"), T.bf16],
    Y: T.Tensor[("M", 2), T.f32],
    W: T.Tensor[("M", 1), T.bf16],
    F: T.Tensor[("M", 8), T.f32],
    G: T.Tensor[("M", 8), T.f32],
):
    """cp.async of 4-byte runs (two bf16 per row) and of 2-byte runs (too narrow: a synchronous copy); a
    fragment with an explicit one-value-per-thread layout; a shared-memory fill copied out; a global fill."""
    with T.grid(T.cdiv(M, 64), threads=128) as (bm,):
        s2 = T.alloc_shared((64, 2), T.bf16)
        s1 = T.alloc_shared((64, 1), T.bf16)
        sf = T.alloc_shared((64, 8), T.f32)
        T.copy(X.tile((bm, 0), (64, 2)), s2, atom="cp.async")
        T.copy(X.tile((bm, 0), (64, 1)), s1, atom="cp.async")
        T.fill(sf, 1.5)
        T.async_commit()
        T.async_wait(0)
        T.barrier()
        v = T.alloc_fragment((64, 2), T.f32, tv=Layout((128, 1), (1, 0)))
        T.copy(s2, v)
        T.copy(v, Y.tile((bm, 0), (64, 2)))
        T.copy(s1, W.tile((bm, 0), (64, 1)))
        T.copy(sf, F.tile((bm, 0), (64, 8)))
        T.fill(G.tile((bm, 0), (64, 8)), -2.0)


@argus.kernel
def carried_layout(X: T.Tensor[("M", 48), T.f32], Y: T.Tensor[("M", 48), T.f32]):
    """A thread-value layout whose per-value offsets carry into the next column (idx = 3t + v on an 8x48
    tile), so coordinates cannot be split into a thread part plus a value part."""
    with T.grid(T.cdiv(M, 8), threads=128) as (bm,):
        x = T.alloc_fragment((8, 48), T.f32, tv=Layout((128, 3), (3, 1)))
        T.copy(X.tile((bm, 0), (8, 48)), x)
        T.copy(x * 2.0 + 1.0, Y.tile((bm, 0), (8, 48)))


@argus.kernel
def shifted_window(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], Z: T.Tensor[("N",), T.f32]):
    """A window that starts 3 elements before the block's tile (negative coordinates in block 0, misaligned
    vectors: per-element masks, pad 7), and a branch on Python's floor division and modulo of negative
    numbers (true on even blocks only: C's truncating / and % would disagree for block 0)."""
    with T.grid(T.cdiv(N, 512), threads=128) as (bx,):
        x = T.alloc_fragment((512,), T.f32)
        T.copy(X.window(bx * 512 - 3, 512), x, pad=7.0)
        T.copy(x, Y.tile(bx, 512))
        with T.if_(((bx - 1) % 2 > 0) & ((bx - 3) // 2 + 2 <= bx // 2)):
            T.copy(x, Z.tile(bx, 512))


@argus.kernel
def carve(X: T.Tensor[("N",), T.f32]):
    """Three shared buffers: a swizzled one starts on a 1024-byte boundary, the others on 128-byte ones."""
    with T.grid(1, threads=128):
        small = T.alloc_shared((3,), T.f32)
        swizzled = T.alloc_shared((8, 64), T.bf16, swizzle=128)
        plain = T.alloc_shared((4,), T.f32)
        T.fill(small, 0.0)
        T.fill(swizzled, 0.0)
        T.fill(plain, 0.0)


@argus.kernel
def with_role(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):
    """A warp role: not lowered yet (CODEGEN_UNSUPPORTED at the T.role line)."""
    with T.grid(1, threads=256):
        with T.role("producer", warpgroups=(0,)):
            x = T.alloc_fragment((512,), T.f32)
            T.copy(X.tile(0, 512), x)
            T.copy(x, Y.tile(0, 512))


@argus.kernel
def with_mbarrier(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):
    """An mbarrier: not lowered yet (CODEGEN_UNSUPPORTED at the T.alloc_mbarrier line)."""
    with T.grid(1, threads=128):
        x = T.alloc_fragment((512,), T.f32)
        T.copy(X.tile(0, 512), x)
        bars = T.alloc_mbarrier(2)
        T.mbarrier_wait(bars[0], 0)
        T.copy(x, Y.tile(0, 512))


def _bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(round_to(bf16, x), dtype=np.float64)


@dataclass(frozen=True)
class Case:
    """A test kernel with its specialization, shapes and input generator (outputs zeroed)."""

    name: str
    kernel: Any
    shapes: tuple[dict[str, int], ...]
    make: Callable[[dict[str, int], np.random.Generator], dict[str, np.ndarray]]
    params: dict[str, Any] = field(default_factory=dict)
    tolerance: float = 1e-5


def _mixed(shape, rng):
    m, n = shape["M"], shape["N"]
    return {"X": rng.standard_normal((m, n)), "Y": np.zeros((m, n)), "Z": np.zeros((m, n)), "R": np.zeros(m)}


def _gemm(shape, rng):
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"A": _bf16(rng.standard_normal((m, k))), "B": _bf16(rng.uniform(-1, 1, (k, n))), "C": np.zeros((m, n))}


def _roundtrip(shape, rng):
    m = shape["M"]
    return {"X": _bf16(rng.standard_normal((m, 32))), "Y": np.zeros((m, 32))}


def _narrow(shape, rng):
    m, k = shape["M"], shape["K"]
    return {
        "X": _bf16(rng.standard_normal((m, k))),
        "Y": np.zeros((m, 2)),
        "W": np.zeros((m, 1)),
        "F": np.zeros((m, 8)),
        "G": np.zeros((m, 8)),
    }


def _shifted(shape, rng):
    n = shape["N"]
    return {"X": rng.standard_normal(n), "Y": np.zeros(n), "Z": np.zeros(n)}


def _carried(shape, rng):
    m = shape["M"]
    return {"X": rng.standard_normal((m, 48)), "Y": np.zeros((m, 48))}


CASES = (
    Case("mixed_elementwise", mixed_elementwise, ({"M": 16, "N": 64}, {"M": 13, "N": 50}), _mixed, tolerance=1e-2),
    Case(
        "swizzled_gemm",
        swizzled_gemm,
        ({"M": 128, "N": 128, "K": 64}, {"M": 100, "N": 72, "K": 80}),
        _gemm,
        tolerance=1e-3,
    ),
    Case(
        "swizzled_gemm_forced_x4",
        swizzled_gemm,
        ({"M": 64, "N": 64, "K": 32},),
        _gemm,
        params={"TRANS_B": "ldmatrix.x4"},
        tolerance=1e-3,
    ),
    Case("matrix_roundtrip", matrix_roundtrip, ({"M": 128}, {"M": 100}), _roundtrip),
    Case("narrow_copies", narrow_copies, ({"M": 128, "K": 8}, {"M": 70, "K": 3}), _narrow),
    Case("carried_layout", carried_layout, ({"M": 16}, {"M": 13}), _carried),
    Case("shifted_window", shifted_window, ({"N": 2048}, {"N": 1500}), _shifted),
)
