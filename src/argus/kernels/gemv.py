"""GEMV-class kernels: a product with at most a few rows on one side (a decode batch, a matrix-vector product), which
is bound by streaming the matrix from memory, not by the tensor cores. ``P[s] = V @ Mat`` over K-split s, for V
(R, K) with R <= ROWS rows and a matrix Mat of (K, N) elements; with S > 1 splits `argus.kernels.gemm.
gemm_split_reduce` then sums the slices of the f32 workspace P (S, R, N) into the result, in its dtype.

Two kernels, by how the matrix lies in memory:

* `gemv_columns`: Mat is row-major (K, N) (``x @ W`` with W (K, N) contiguous): each thread owns a 16-byte run of
  N's columns and walks its split's K rows, so a warp reads whole contiguous rows of Mat; the K sum stays in the
  thread (no shuffle).
* `gemv_rows`: Mat is given transposed, MT (N, K) row-major (``x @ W.T`` for an ``nn.Linear`` weight W (N, K)):
  a warp reads contiguous K runs of one of MT's rows, and the K sum of each output element is finished by the
  warp's lanes with shuffles.

Both multiply in f32 (a bf16/f16 value widens exactly) and read V's chunk once per K-block into a fragment every
thread holds whole (a broadcast load). P is f32 (OUT) for a split to be summed; with one split (S = 1) it is the
result itself, in its own dtype, rounded once, and no reduction runs. The library call and the choice of kernel are
`argus.kernels.matmul`.
"""

from __future__ import annotations

import argus
import argus.lang as T
from argus.lang import DSLError


@argus.kernel(policies={"tile_shape": ("BK", "BN")})
def gemv_columns(
    V: T.Tensor[("R", "K"), "IN"],
    Mat: T.Tensor[("K", "N"), "IN"],
    P: T.Tensor[("S", "R", "NP"), "OUT"],
    ROWS: int = 1,
    BK: int = 8,
    BN: int = 1024,
    SPLITS: int = 8,
    UNROLL: int = 2,
    IN: str = "bf16",
    OUT: str = "f32",
):
    """P[s, r, n] = sum over the K-blocks of split s of V[r, k] * Mat[k, n]: blocks (column tile bn of BN columns,
    split s), BN / (16 / itemsize) threads each holding one 16-byte run of the tile's columns for BK rows of K;
    split s takes K-blocks ``s * k_split ...`` (``k_split = UNROLL * cdiv(cdiv(K, BK), SPLITS * UNROLL)``, UNROLL
    blocks per step of its loop, all loaded before any is used; blocks past K read zeros).
    Rows of V past R read zeros and are not stored. P's columns may run on past N to NP (a row of whole 16-byte
    vectors for the reduction): those are zeros."""
    R, K = V.shape  # noqa: N806 - the kernel's shape symbols
    _, N = Mat.shape  # noqa: N806
    vec = 16 // Mat.dtype.itemsize
    if ROWS < 1 or BN % vec or BK < 1:  # BN is then a multiple of 4 too (P's padding)
        raise DSLError("DSL_BAD_PARAM", f"ROWS >= 1, BK >= 1, BN a multiple of {vec}; got {ROWS}, {BK}, {BN}")
    T.assume(f"S == {SPLITS}")
    T.assume(f"R <= {ROWS}")
    T.assume(f"N % {vec} == 0")  # Mat's rows in whole 16-byte runs
    T.assume("N <= NP and NP < N + 4 and NP % 4 == 0")  # P's rows padded to whole 16-byte vectors (zeros past N)
    k_steps = T.cdiv(T.cdiv(K, BK), SPLITS * UNROLL)  # run-time steps of UNROLL K-blocks per split
    with T.grid(T.cdiv(N, BN), SPLITS, threads=BN // vec) as (bn, s):
        shape = T.alloc_fragment((BK, BN), Mat.dtype)  # each thread: one 16-byte run of columns, all BK rows
        accs = [T.alloc_reduced(shape, axis=0, dtype=T.f32) for _ in range(ROWS)]  # (BN,) per row of V
        for acc in accs:
            T.fill(acc, 0.0)
        for k in T.serial(k_steps):
            blocks = []
            for u in range(UNROLL):  # every load of the step first: UNROLL blocks in flight at once
                kb = (s * k_steps + k) * UNROLL + u
                w = T.alloc_fragment((BK, BN), Mat.dtype)
                T.copy(Mat.tile((kb, bn), (BK, BN)), w)
                blocks.append((kb, w))
            for kb, w in blocks:
                wf = T.cast(w, T.f32)  # products and sums in f32
                v = T.alloc_reduced(w, axis=1, dtype=T.f32)  # (BK,): V's chunk, held whole by every thread
                for r, acc in enumerate(accs):
                    T.copy(V.window((r, kb * BK), (None, BK)), v)
                    # invariant: the products summed pair V's element k with Mat's row k, in column tile bn
                    T.assert_tag(lambda y, x: (x[1] == y[0]) & (y[1] // BN == bn), wf, v[:, None])
                    T.copy(acc + T.reduce_sum(wf * v[:, None], axis=0), acc)
        for r, acc in enumerate(accs):
            T.copy(acc, P.window((s, r, bn * BN), (None, None, BN)))


@argus.kernel(policies={"tile_shape": ("BN", "BK")})
def gemv_rows(
    V: T.Tensor[("R", "K"), "IN"],
    MT: T.Tensor[("N", "K"), "IN"],
    P: T.Tensor[("S", "R", "NP"), "OUT"],
    ROWS: int = 1,
    BN: int = 4,
    BK: int = 256,
    SPLITS: int = 8,
    UNROLL: int = 4,
    IN: str = "bf16",
    OUT: str = "f32",
):
    """P[s, r, n] = sum over the K-blocks of split s of V[r, k] * MT[n, k]: blocks (tile bn of BN rows of MT,
    split s), BN * BK / (16 / itemsize) threads: the BK / (16 / itemsize) lanes of a row of the tile each hold one
    16-byte run of its K-block, and the row's K sum is finished across them with shuffles (a row lies in one warp:
    BK at most 32 runs). P's columns may run on past N to NP: those are zeros."""
    R, K = V.shape  # noqa: N806 - the kernel's shape symbols
    N, _ = MT.shape  # noqa: N806
    vec = 16 // MT.dtype.itemsize
    lanes = BK // vec
    if ROWS < 1 or BK % vec or lanes > 32 or lanes & (lanes - 1) or BN % 4:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"ROWS >= 1, BN a multiple of 4, BK a power-of-two number (at most 32) of {vec}-element runs; got "
            f"{ROWS}, {BN}, {BK}",
        )
    T.assume(f"S == {SPLITS}")
    T.assume(f"R <= {ROWS}")
    T.assume(f"K % {vec} == 0")  # MT's rows in whole 16-byte runs
    T.assume("N <= NP and NP < N + 4 and NP % 4 == 0")  # P's rows padded to whole 16-byte vectors (zeros past N)
    k_steps = T.cdiv(T.cdiv(K, BK), SPLITS * UNROLL)  # run-time steps of UNROLL K-blocks per split
    with T.grid(T.cdiv(N, BN), SPLITS, threads=BN * lanes) as (bn, s):
        # the lanes' partial sums, per row of V, in the layout of MT's blocks (a lane's run of vec elements)
        parts = [T.alloc_fragment((BN, BK), T.f32, vector_bytes=4 * vec) for _ in range(ROWS)]
        for part in parts:
            T.fill(part, 0.0)
        for k in T.serial(k_steps):
            blocks = []
            for u in range(UNROLL):  # every load of the step first: UNROLL blocks in flight at once
                kb = (s * k_steps + k) * UNROLL + u
                w = T.alloc_fragment((BN, BK), MT.dtype)  # each lane: one 16-byte run of one row's K-block
                T.copy(MT.tile((bn, kb), (BN, BK)), w)
                vs = []
                for r in range(ROWS):
                    v = T.alloc_reduced(w, axis=0, dtype=T.f32)  # (BK,): V's chunk, each lane its own run
                    T.copy(V.window((r, kb * BK), (None, BK)), v)
                    vs.append(v)
                blocks.append((w, vs))
            for w, vs in blocks:
                wf = T.cast(w, T.f32)  # products and sums in f32
                for part, v in zip(parts, vs, strict=True):
                    # invariant: the products summed pair V's element k with MT's column k, in row tile bn
                    T.assert_tag(lambda y, x: (x[1] == y[1]) & (y[0] // BN == bn), wf, v[None, :])
                    T.copy(part + wf * v[None, :], part)
        for r, part in enumerate(parts):
            T.copy(T.reduce_sum(part, axis=1), P.window((s, r, bn * BN), (None, None, BN)))
