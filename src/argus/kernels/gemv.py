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

* `gemv_rows_tma`: MT (N, K) as for `gemv_rows`, streamed by TMA into a ring of shared-memory stages (one 128-byte
  swizzle span of K per row and stage, STAGES - 1 stages in flight ahead of the one being read): the loads in
  flight are the ring's bytes, not registers, which is what a 16-bit matrix needs to stream at the memory's rate
  (`gemv_rows` keeps one 16-byte load per thread and block in flight and reached 13-35 % of it in bf16). Each
  stage's products are summed per row at once (in the thread, then across the lanes sharing the row), so a thread
  holds one f32 per row of V and of the tile it covers. The plan takes it for 16-bit matrix-vector products.

All multiply in f32 (a bf16/f16 value widens exactly) and read V's chunk once per K-block into a fragment every
thread holds whole (a broadcast load). P is f32 (OUT) for a split to be summed; with one split (S = 1) it is the
result itself, in its own dtype, rounded once, and no reduction runs. The library call and the choice of kernel are
`argus.kernels.matmul`.
"""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.lang import DSLError
from argus.layout import Layout


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


@argus.kernel(policies={"tile_shape": ("BN",), "stages": ("STAGES",)})
def gemv_rows_tma(
    V: T.Tensor[("R", "K"), "IN"],
    MT: T.Tensor[("N", "K"), "IN"],
    P: T.Tensor[("S", "R", "NP"), "OUT"],
    ROWS: int = 1,
    BN: int = 128,
    SPLITS: int = 4,
    STAGES: int = 4,
    THREADS: int = 128,
    LANES: int = 8,
    PARTIAL: bool = False,
    VSTAGE: bool = False,
    IN: str = "bf16",
    OUT: str = "f32",
):
    """P[s, r, n] = sum over the K-blocks of split s of V[r, k] * MT[n, k]: blocks (tile bn of BN rows of MT, split
    s) of THREADS threads; a K-block is one 128-byte swizzle span of a row (BK = 128 / itemsize elements), split s
    takes K-blocks ``s * k_split ...`` (``k_split = cdiv(cdiv(K, BK), SPLITS)``; blocks past K read zeros: TMA
    fills them). One thread issues the TMA loads of a stage (STAGES - 1 ahead), every thread waits for it, reads its
    16-byte runs of the stage into registers, multiplies them with V's K-block (read through L1) and sums each row's
    products: in the thread, then across the LANES lanes that share a row, by shuffles (LANES = 1: a thread holds
    whole rows and sums them alone; measured slower, its sum being one chain of dependent FMAs). PARTIAL: each
    lane's products are instead added into an f32 copy of its share of the stage, per row of V, and summed once at
    the end (no shuffles per stage; registers grow with ROWS x BN x BK / THREADS). A block barrier frees the stage.
    VSTAGE: V's K-block (its ROWS rows) comes in the same stage, a second TMA box on the stage's mbarrier, and is
    read from shared memory; without it each iteration loads V's chunk from global memory after the stage's wait
    (an L2 round trip per K-block on the loop's critical path: what bounds a long split). P's columns may run on
    past N to NP: those are zeros."""
    R, K = V.shape  # noqa: N806 - the kernel's shape symbols
    N, _ = MT.shape  # noqa: N806
    vec = 16 // MT.dtype.itemsize
    bk = 128 // MT.dtype.itemsize  # one 128-byte swizzle span of K per row and stage
    runs = bk // vec  # 16-byte runs per row of a stage
    if LANES not in (1, 2, 4, 8) or LANES > runs:
        raise DSLError("DSL_BAD_PARAM", f"LANES one of 1, 2, 4, 8 (at most the {runs} runs of a row); got {LANES}")
    rows_covered = THREADS // LANES  # the rows one pass of the block's threads covers
    if ROWS < 1 or STAGES < 2 or THREADS % 128 or BN % rows_covered or BN % 4 or BN > 256:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"ROWS >= 1, STAGES >= 2, THREADS a multiple of 128, BN a multiple of 4 and of {rows_covered} (the rows "
            f"{THREADS} threads cover) and at most 256 (one TMA box); got {ROWS}, {STAGES}, {THREADS}, {BN}",
        )
    # thread (lane l, row group g) holds runs l, l + LANES, ... of rows g, g + rows_covered, ... (column-major index)
    tv = Layout(
        ((LANES, rows_covered), (vec, runs // LANES, BN // rows_covered)),
        ((vec * BN, 1), (BN, vec * LANES * BN, rows_covered)),
    )
    T.assume(f"S == {SPLITS}")
    T.assume(f"R <= {ROWS}")
    T.assume(f"K % {vec} == 0")  # TMA: MT's rows are whole 16-byte runs
    T.assume("N <= NP and NP < N + 4 and NP % 4 == 0")  # P's rows padded to whole 16-byte vectors (zeros past N)
    k_split = T.cdiv(T.cdiv(K, bk), SPLITS)  # K-blocks per split
    stage_bytes = BN * bk * MT.dtype.itemsize  # the whole box counts, also where it is out of bounds
    if VSTAGE:
        stage_bytes += ROWS * bk * V.dtype.itemsize  # V's box (ROWS rows; zeros past R)
    with T.grid(T.cdiv(N, BN), SPLITS, threads=THREADS) as (bn, s):
        sW = T.alloc_shared((STAGES, BN, bk), MT.dtype, swizzle=128)  # noqa: N806
        if VSTAGE:  # V's K-blocks, a stage's ROWS rows each; `rows_of` its rows one at a time (stage * ROWS + r)
            sV = T.alloc_shared((STAGES, ROWS, bk), V.dtype)  # noqa: N806
            rows_of = sV.view(Layout((STAGES * ROWS, bk), (bk, 1)))

        def load(kb: Any, st: Any) -> None:
            """Stage st: the K-block kb of this block's rows of MT (and of V), on mbarrier st."""
            T.mbarrier_arrive(full[st], expect_bytes=stage_bytes)
            T.copy(MT.tile((bn, kb), (BN, bk)), sW[st], atom="tma", mbarrier=full[st])
            if VSTAGE:
                T.copy(V.tile((0, kb), (ROWS, bk)), sV[st], atom="tma", mbarrier=full[st])

        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage st holds data: one expect_tx arrival + TMA bytes
        if PARTIAL:  # per row of V, each lane's products kept apart (in the stage's layout) until the end
            accs = [T.alloc_fragment((BN, bk), T.f32, tv=tv) for _ in range(ROWS)]
        else:  # per row of V, (BN,): each stage's products summed at once
            shape = T.alloc_fragment((BN, bk), MT.dtype, tv=tv)  # each thread: runs of BN / rows_covered rows
            accs = [T.alloc_reduced(shape, axis=1, dtype=T.f32) for _ in range(ROWS)]
        for acc in accs:
            T.fill(acc, 0.0)
        for st in range(STAGES - 1):  # prologue: the first STAGES - 1 K-blocks in flight
            with T.if_(k_split > st):
                load(s * k_split + st, st)
        for k, st in T.pipeline(k_split, stages=STAGES):
            nxt = k + (STAGES - 1)  # into the stage iteration k - 1 read (freed by its closing barrier)
            with T.if_(nxt < k_split):
                load(s * k_split + nxt, nxt % STAGES)
            T.mbarrier_wait(full[st], phase=(k // STAGES) % 2)
            # invariant: the stage read at iteration k holds K-block s * k_split + k of this block's rows of MT
            T.assert_tag(lambda w: (w[1] // bk == s * k_split + k) & (w[0] // BN == bn), sW[st])
            if VSTAGE:  # and the same K-block of V
                T.assert_tag(lambda x: x[1] // bk == s * k_split + k, sV[st])
            w = T.alloc_fragment((BN, bk), MT.dtype, tv=tv)
            T.copy(sW[st], w)
            wf = T.cast(w, T.f32)  # products and sums in f32
            for r, acc in enumerate(accs):
                v = T.alloc_reduced(w, axis=0, dtype=T.f32)  # (bk,): each lane its runs of V's K-block
                if VSTAGE:  # from the stage
                    T.copy(rows_of[st * ROWS + r], v)
                else:  # through L1
                    T.copy(V.window((r, (s * k_split + k) * bk), (None, bk)), v)
                # invariant: the products summed pair V's element k with MT's column k, in row tile bn
                T.assert_tag(lambda y, x: (x[1] == y[1]) & (y[0] // BN == bn), wf, v[None, :])
                if PARTIAL:
                    T.copy(acc + wf * v[None, :], acc)
                else:
                    T.copy(acc + T.reduce_sum(wf * v[None, :], axis=1), acc)
            T.barrier()  # every thread is done with stage st: the next iteration may refill it
        for r, acc in enumerate(accs):
            total = T.reduce_sum(acc, axis=1) if PARTIAL else acc
            T.copy(total, P.window((s, r, bn * BN), (None, None, BN)))
