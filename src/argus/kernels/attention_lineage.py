"""The attention lineage's lower rungs (issue #22, docs/attention.md "The lineage"): one forward attention, each rung a
verified library kernel adding one mechanism to the rung before it, as the GEMM and convolution ladders' first rungs
do (`argus.kernels.gemm`, `argus.kernels.conv_lineage`), so that KLineage can walk it and mine attention skills.
Every rung computes, per batch-head h,

    O[h] = softmax(Q[h] K[h]^T / sqrt(D)) V[h]

for Q, K, V (BH, S, D) in bf16 or f16 (IN) and O in f32, non-causal, any sequence length S: key positions past S are
masked out of every row (their scores are -inf before the row maximum, so they weigh 0) and query rows past S are not
stored. Every rung runs the same online softmax over key tiles of BN keys (FlashAttention's: a running row maximum m
and row sum l in the log2 domain, the accumulator rescaled by exp2(m_old - m_new) whenever the maximum grows, O / l at
the end), so that consecutive rungs differ by the one mechanism the vocabulary names (`argus.lineage.mechanisms`):

1. `attention_naive` — one thread per query row: its scores, their maximum and sum, and P V from global memory
   (Q, K and V read straight into registers), FMA in f32, P kept in f32;
2. `attention_smem_tiled` — the block's Q rows and each key tile's K and V staged in shared memory between barriers,
   every thread computing a register micro-tile of S and of O with FMAs (of the transposed problem, S^T = K Q^T,
   see the kernel); P goes through shared memory (in f32) to become an operand of P V.
3. `attention_mma_sync` — S = Q K^T and O += P V by ldmatrix and mma.sync on four warps, P rounded to the input dtype.
4. `attention_cp_async` — K and V staged by a multi-stage cp.async pipeline: the next key tile loads during the MMAs.
5. `attention_swizzle` — Q, K and V stored in XOR-swizzled shared memory: the ldmatrix reads free of bank conflicts.
6. `attention_tma_wgmma` — Q, K and V loaded by TMA onto mbarriers, S = Q K^T and O += P V by wgmma from shared
   memory (P through a swizzled shared tile), no warp specialization (split for the walk by the bridge
   `argus.lineage.bridges.attention_cp_async_wgmma`).
7. `attention_warp_specialized` — warp roles: a producer warpgroup issues the TMA loads into a ring of stages freed
   by the consumers through "empty" mbarriers, the consumer warpgroups run rung 6's math, and ``setmaxnreg`` moves
   registers from the producer to them (the walk removes the register split by an IR operator, then the roles).

8. `attention_p_registers` — P kept in registers as the A operand of O += P V (wgmma's register-A form): no
   shared-memory round trip and no barrier between the consumer warpgroups. It is `flash_attention`'s loop
   (`argus.kernels.attention.attention_body`: 128-row tiles over two consumer warpgroups, the scale folded into one
   fma per exponent) writing O alone, and the rungs above it are the same kernel with one switch more each:
9. `attention_pingpong` (PINGPONG) — the consumer warpgroups take turns issuing their MMAs, one's softmax running
   while the other's MMAs do (FlashAttention-3's ping-pong);
10. `attention_overlap` (OVERLAP) — each warpgroup's P V of key tile j - 1 runs while it computes tile j's softmax
    (FlashAttention-3's intra-warpgroup overlap).
The walk removes 10's and 9's switches by parameter operators and 8's step by moving to rung 7.

Not built yet: a persistent longest-first rung (`flash_attention`'s PERSISTENT is slower and `unknown` to the
verifier; its LPT orders causal blocks, and the lineage's task is non-causal). DSL kernels only here."""

from __future__ import annotations

import argus
import argus.lang as T
from argus.atoms.common import consumer_registers, shared_budget
from argus.atoms.swizzle import SWIZZLE_WIDTHS
from argus.ir.types import DType
from argus.kernels.attention import LOG2E, attention_body, holds_head, load_panels
from argus.lang.errors import DSLError
from argus.layout import Layout

QKV_SHAPE = lambda D: ("BH", "S", D)  # noqa: E731 - (batch * heads, sequence, head dim)


def head_dim(D: int, *blocks: int) -> int:  # noqa: N803
    """D itself, refused unless it is a positive multiple of every block that walks it."""
    if not isinstance(D, int) or D < 1 or any([D % b for b in blocks]):
        multiples = " and ".join([str(b) for b in sorted(set(blocks))])
        raise DSLError("DSL_BAD_PARAM", f"D (the head dim) must be a positive multiple of {multiples}, not {D!r}")
    return D


def row_swizzle(D: int, dtype: DType) -> int:  # noqa: N803
    """The widest Hopper swizzle (bytes) whose span divides a row of D elements of `dtype`: 128 for a 16-bit head dim
    that is a multiple of 64, 64 for one of 32, else 32 (D a multiple of 16). Stored in panels of that span, each of
    the eight rows an ldmatrix phase reads is XOR-ed by its own row bits, so they fall on eight bank groups."""
    return max([w for w in SWIZZLE_WIDTHS if (D * dtype.itemsize) % w == 0], default=0)


# --- rung 1: one thread per query row ---------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def attention_naive(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 4,
    BK: int = 8,
    BD: int = 8,
    IN: str = "bf16",
):
    """Rung 1 (see the module docstring): thread r of a block owns query row bm * BM + r. For each key tile j of BN
    keys it accumulates the row's BN scores from its Q row and the tile's keys, read from global memory BK columns at
    a time, updates the row's running maximum and sum, and adds P V to its D accumulators, BD columns at a time (V
    read from global memory into f32 registers)."""
    head_dim(D, BK, BD)
    scale_log2 = LOG2E / D**0.5
    rows = (BM, 1)  # thread groups: one thread per row
    with T.grid(T.cdiv(S, BM), BH, threads=BM) as (bm, bh):
        qk = T.fma_atom(Q.dtype, T.f32)
        pv = T.fma_atom(T.f32, T.f32)
        s = T.alloc_fragment((BM, BN), T.f32, mma=qk, groups=rows)  # the row's BN scores
        rQ = T.alloc_fragment((BM, BK), Q.dtype, mma=qk, operand="A", groups=rows)  # BK columns of its Q row
        rK = T.alloc_fragment((BK, BN), Q.dtype, mma=qk, operand="B", groups=rows)  # the tile's keys, BK columns
        rP = T.alloc_fragment((BM, BN), T.f32, mma=pv, operand="A", groups=rows)  # the row's probabilities
        rV = T.alloc_fragment((BN, BD), T.f32, mma=pv, operand="B", groups=rows)  # BD columns of the tile's values
        o = [T.alloc_fragment((BM, BD), T.f32, mma=pv, groups=rows) for _ in range(D // BD)]  # O, BD columns each
        m = T.alloc_reduced(s, axis=1)  # running row maximum (log2 domain)
        l = T.alloc_reduced(s, axis=1)  # running row sum  # noqa: E741
        for oc in o:
            T.fill(oc, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        for j in T.serial(T.cdiv(S, BN)):
            T.fill(s, 0.0)
            for kd in range(D // BK):  # S = Q K^T, BK columns of the head dim at a time
                T.copy(Q.tile((bh, bm, kd), (None, BM, BK)), rQ)
                T.copy(K.tile((bh, j, kd), (None, BN, BK)).T, rK)  # keys past S read 0 (masked below)
                T.gemm(rQ, rK, s)
            x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=1), m)
            p = T.exp2(x - m_new[:, None])
            alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
            # invariant: the statistics that rescale row r of S (and of O) were computed from row r of S
            T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
            T.copy(l * alpha + T.reduce_sum(p, axis=1), l)
            T.copy(m_new, m)
            T.copy(p, rP)  # the thread's own row: the accumulator's elements are the A operand's
            for c, oc in enumerate(o):  # O = O * alpha + P V, BD columns at a time
                T.copy(V.tile((bh, j, c), (None, BN, BD)), rV)  # values past S read 0 (their P is 0)
                T.copy(oc * alpha[:, None], oc)
                T.gemm(rP, rV, oc)
        for c, oc in enumerate(o):
            T.copy(oc / l[:, None], O.tile((bh, bm, c), (None, BM, BD)))


# --- rung 2: shared-memory tiling -------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def attention_smem_tiled(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    BK: int = 8,
    GM: int = 8,
    GN: int = 16,
    IN: str = "bf16",
):
    """`attention_naive` plus shared-memory tiling: the block's BM query rows are staged in shared memory once, and
    each key tile's K and V rows (BN of them) once per tile, between barriers; each thread computes a register
    micro-tile of the scores and of O with FMAs from the rows and columns it reads there (every K and V element
    fetched from global memory once per block instead of once per thread).

    The block computes the transposed problem, S^T = K Q^T (keys x queries) and O^T = V^T P^T, over a (GM, GN) grid
    of thread groups: the GM threads that share a query's column are consecutive lanes of one warp (the FMA tiling
    numbers threads along M first), so the query's maximum and sum combine by shuffles, and O^T's columns are held by
    the same threads as S^T's, so the statistics rescale them in place. P^T goes through shared memory in f32 (a
    thread's O^T micro-tile needs whole columns of it); Q and V are staged transposed, so that every operand is read
    along its contiguous dimension."""
    head_dim(D, BK, GM)
    scale_log2 = LOG2E / D**0.5
    groups = (GM, GN)
    with T.grid(T.cdiv(S, BM), BH, threads=GM * GN) as (bm, bh):
        sQt = T.alloc_shared((D, BM), Q.dtype)  # (D, BM): Q^T, query-contiguous
        sK = T.alloc_shared((BN, D), Q.dtype, layout=Layout((BN, D), (1, BN)))  # (BN, D), key-contiguous
        sVt = T.alloc_shared((D, BN), Q.dtype, layout=Layout((D, BN), (1, D)))  # (D, BN): V^T, dim-contiguous
        sPt = T.alloc_shared((BN, BM), T.f32)  # (BN, BM): P^T, query-contiguous
        qk = T.fma_atom(Q.dtype, T.f32)
        pv = T.fma_atom(T.f32, T.f32)
        st = T.alloc_fragment((BN, BM), T.f32, mma=qk, groups=groups)  # S^T: (BN / GM, BM / GN) per thread
        rK = T.alloc_fragment((BN, BK), Q.dtype, mma=qk, operand="A", groups=groups)
        rQ = T.alloc_fragment((BK, BM), Q.dtype, mma=qk, operand="B", groups=groups)
        ot = T.alloc_fragment((D, BM), T.f32, mma=pv, groups=groups)  # O^T: (D / GM, BM / GN) per thread
        rV = T.alloc_fragment((D, BK), T.f32, mma=pv, operand="A", groups=groups)
        rP = T.alloc_fragment((BK, BM), T.f32, mma=pv, operand="B", groups=groups)
        m = T.alloc_reduced(st, axis=0)  # each query's running maximum (log2 domain), held by its column's threads
        l = T.alloc_reduced(st, axis=0)  # each query's running sum  # noqa: E741
        T.fill(ot, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        T.copy(Q.tile((bh, bm, 0), (None, BM, D)).T, sQt)  # rows past S read 0 (never stored)
        for j in T.serial(T.cdiv(S, BN)):
            T.copy(K.tile((bh, j, 0), (None, BN, D)), sK)  # keys past S read 0 (masked below)
            T.copy(V.tile((bh, j, 0), (None, BN, D)).T, sVt)  # values past S read 0 (their P is 0)
            T.barrier()
            T.fill(st, 0.0)
            for kd in range(D // BK):  # S^T = K Q^T, BK columns of the head dim at a time
                T.copy(sK.window((0, kd * BK), (BN, BK)), rK)
                T.copy(sQt.window((kd * BK, 0), (BK, BM)), rQ)
                T.gemm(rK, rQ, st)
            x = T.where(T.index(st, 0) + j * BN < S, st * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=0), m)  # combined over the column's GM lanes by shuffles
            p = T.exp2(x - m_new[None, :])
            alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
            # invariant: the statistics that rescale query r's scores (and its O) were computed from query r's
            T.assert_tag(lambda pt, mt: (pt[1] == mt[0]) & (pt[1] // BM == bm), p, m_new[None, :])
            T.copy(l * alpha + T.reduce_sum(p, axis=0), l)
            T.copy(m_new, m)
            T.copy(ot * alpha[None, :], ot)  # O^T's columns are held by the threads of S^T's
            T.copy(p, sPt)
            T.barrier()  # P^T in place
            for kd in range(BN // BK):  # O^T += V^T P^T, BK keys at a time
                T.copy(sVt.window((0, kd * BK), (D, BK)), rV)
                T.copy(sPt.window((kd * BK, 0), (BK, BM)), rP)
                T.gemm(rV, rP, ot)
            T.barrier()  # sK, sVt and sPt may be overwritten from here on
        T.copy(ot / l[None, :], O.tile((bh, bm, 0), (None, BM, D)).T)


# --- rung 3: mma.sync -------------------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def attention_mma_sync(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    BK: int = 16,
    BD: int = 16,
    IN: str = "bf16",
):
    """`attention_smem_tiled` on tensor cores: S = Q K^T and O += P V by mma.sync (m16n8k16, f32 accumulators), their
    operands read from the staged tiles by ldmatrix, as FlashAttention-2 does.

    Four warps, one per 16 query rows (groups (4, 1)): each warp holds its rows of S whole, so a query's maximum and
    sum combine over the four lanes that share its row by shuffles, and O's rows are held by the same lanes as S's,
    so the statistics rescale O in place. S is accumulated BK head-dim columns at a time (Q's and K^T's windows),
    O in D / BD column blocks (V's windows; one accumulator each). P is rounded to the input dtype as it becomes the
    A operand of P V (the accumulator's register layout of S is the A operand's, so each thread converts its own
    values); the row sum is taken from P in f32 before the rounding. Q, K and V are staged as they lie in global
    memory (rows contiguous, so every staging copy is coalesced): Q and K^T (the transposed view of K's window) are
    read by plain ldmatrix, V by ldmatrix.trans. The shared tiles are not swizzled (the swizzle rung,
    `attention_swizzle`), so the ldmatrix reads meet 8-way bank conflicts."""
    head_dim(D, BK, BD)
    scale_log2 = LOG2E / D**0.5
    warps = (BM // 16, 1)  # thread groups: one warp per 16 query rows
    with T.grid(T.cdiv(S, BM), BH, threads=32 * warps[0]) as (bm, bh):
        sQ = T.alloc_shared((BM, D), Q.dtype)  # (BM, D)
        sK = T.alloc_shared((BN, D), Q.dtype)  # (BN, D)
        sV = T.alloc_shared((BN, D), Q.dtype)  # (BN, D)
        atom = T.mma_sync(Q.dtype, T.f32)
        s = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=warps)  # S: 16 rows per warp
        rQ = T.alloc_fragment((BM, BK), Q.dtype, mma=atom, operand="A", groups=warps)
        rKt = T.alloc_fragment((BK, BN), Q.dtype, mma=atom, operand="B", groups=warps)
        rP = T.alloc_fragment((BM, BN), Q.dtype, mma=atom, operand="A", groups=warps)  # P in the input dtype
        rV = T.alloc_fragment((BN, BD), Q.dtype, mma=atom, operand="B", groups=warps)
        o = [T.alloc_fragment((BM, BD), T.f32, mma=atom, groups=warps) for _ in range(D // BD)]  # O, BD columns each
        m = T.alloc_reduced(s, axis=1)  # each query's running maximum (log2 domain), held by its row's lanes
        l = T.alloc_reduced(s, axis=1)  # each query's running sum  # noqa: E741
        for oc in o:
            T.fill(oc, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ)  # rows past S read 0 (never stored)
        for j in T.serial(T.cdiv(S, BN)):
            T.copy(K.tile((bh, j, 0), (None, BN, D)), sK)  # keys past S read 0 (masked below)
            T.copy(V.tile((bh, j, 0), (None, BN, D)), sV)  # values past S read 0 (their P is 0)
            T.barrier()
            T.fill(s, 0.0)
            for kd in range(D // BK):  # S = Q K^T, BK columns of the head dim at a time
                T.copy(sQ.window((0, kd * BK), (BM, BK)), rQ, atom="ldmatrix")
                T.copy(sK.window((0, kd * BK), (BN, BK)).T, rKt, atom="ldmatrix")
                # invariant: the keys multiplied at iteration j are key tile j of this batch-head
                T.assert_tag(lambda k: (k[0] == bh) & (k[1] // BN == j), rKt)
                T.gemm(rQ, rKt, s)
            # invariant: S's element (r, c) pairs query row bm * BM + r with key j * BN + c
            T.assert_tag(lambda x: (x[0] == bm * BM + x.coord[0]) & (x[1] == j * BN + x.coord[1]), s)
            x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=1), m)  # combined over the row's four lanes by shuffles
            p = T.exp2(x - m_new[:, None])
            alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
            # invariant: the statistics that rescale query r's scores (and its O) were computed from query r's
            T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
            T.copy(l * alpha + T.reduce_sum(p, axis=1), l)  # the sum of P in f32, before the rounding
            T.copy(m_new, m)
            T.copy(p, rP)  # rounded to the input dtype: S's accumulator layout is P's A-operand layout
            for c, oc in enumerate(o):  # O = O * alpha + P V, BD columns at a time
                T.copy(sV.window((0, c * BD), (BN, BD)), rV, atom="ldmatrix")
                # invariant: the values multiplied at iteration j are value tile j of this batch-head
                T.assert_tag(lambda v: (v[0] == bh) & (v[1] // BN == j), rV)
                T.copy(oc * alpha[:, None], oc)
                T.gemm(rP, rV, oc)
                # invariant: O's element (r, c) pairs query row bm * BM + r with head-dim column c of this block
                T.assert_tag(lambda y: (y[0] == bm * BM + y.coord[0]) & (y[1] == c * BD + y.coord[1]), oc)
            T.barrier()  # sK and sV may be overwritten from here on
        for c, oc in enumerate(o):
            T.copy(oc / l[:, None], O.tile((bh, bm, c), (None, BM, BD)))


# --- rung 4: a cp.async pipeline --------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def attention_cp_async(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    BK: int = 16,
    BD: int = 16,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`attention_mma_sync` with a `cp.async` multi-stage pipeline: key tile j + STAGES - 1's K and V rows are in
    flight (16-byte `cp.async` copies, one commit group per tile) while key tile j is multiplied, as FlashAttention-2
    does; a tile past the last is loaded (its rows past S read 0) and never read. The math is `attention_mma_sync`'s
    statement for statement, reading stage j % STAGES of sK and sV. Q is staged once, by plain loads, before the
    loop (the first iteration's barrier publishes it). Rows of K and V start 16-byte aligned because D is a multiple
    of BK (16 elements)."""
    head_dim(D, BK, BD)
    scale_log2 = LOG2E / D**0.5
    warps = (BM // 16, 1)  # thread groups: one warp per 16 query rows
    with T.grid(T.cdiv(S, BM), BH, threads=32 * warps[0]) as (bm, bh):
        sQ = T.alloc_shared((BM, D), Q.dtype)  # (BM, D)
        sK = T.alloc_shared((STAGES, BN, D), Q.dtype)  # (stages, BN, D)
        sV = T.alloc_shared((STAGES, BN, D), Q.dtype)  # (stages, BN, D)
        atom = T.mma_sync(Q.dtype, T.f32)
        s = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=warps)  # S: 16 rows per warp
        rQ = T.alloc_fragment((BM, BK), Q.dtype, mma=atom, operand="A", groups=warps)
        rKt = T.alloc_fragment((BK, BN), Q.dtype, mma=atom, operand="B", groups=warps)
        rP = T.alloc_fragment((BM, BN), Q.dtype, mma=atom, operand="A", groups=warps)  # P in the input dtype
        rV = T.alloc_fragment((BN, BD), Q.dtype, mma=atom, operand="B", groups=warps)
        o = [T.alloc_fragment((BM, BD), T.f32, mma=atom, groups=warps) for _ in range(D // BD)]  # O, BD columns each
        m = T.alloc_reduced(s, axis=1)  # each query's running maximum (log2 domain), held by its row's lanes
        l = T.alloc_reduced(s, axis=1)  # each query's running sum  # noqa: E741
        for oc in o:
            T.fill(oc, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ)  # rows past S read 0 (never stored)
        for t in range(STAGES - 1):  # prologue: the first STAGES - 1 key tiles in flight
            T.copy(K.tile((bh, t, 0), (None, BN, D)), sK[t], atom="cp.async")
            T.copy(V.tile((bh, t, 0), (None, BN, D)), sV[t], atom="cp.async")
            T.async_commit()
        for j in T.serial(T.cdiv(S, BN)):
            nxt = j + (STAGES - 1)
            T.copy(K.tile((bh, nxt, 0), (None, BN, D)), sK[nxt % STAGES], atom="cp.async")  # keys past S read 0
            T.copy(V.tile((bh, nxt, 0), (None, BN, D)), sV[nxt % STAGES], atom="cp.async")  # values past S read 0
            T.async_commit()
            T.async_wait(STAGES - 1)  # key tile j has landed
            T.barrier()
            T.fill(s, 0.0)
            for kd in range(D // BK):  # S = Q K^T, BK columns of the head dim at a time
                T.copy(sQ.window((0, kd * BK), (BM, BK)), rQ, atom="ldmatrix")
                T.copy(sK[j % STAGES].window((0, kd * BK), (BN, BK)).T, rKt, atom="ldmatrix")
                # invariant: stage j % STAGES holds key tile j of this batch-head when iteration j consumes it
                T.assert_tag(lambda k: (k[0] == bh) & (k[1] // BN == j), rKt)
                T.gemm(rQ, rKt, s)
            # invariant: S's element (r, c) pairs query row bm * BM + r with key j * BN + c
            T.assert_tag(lambda x: (x[0] == bm * BM + x.coord[0]) & (x[1] == j * BN + x.coord[1]), s)
            x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=1), m)  # combined over the row's four lanes by shuffles
            p = T.exp2(x - m_new[:, None])
            alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
            # invariant: the statistics that rescale query r's scores (and its O) were computed from query r's
            T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
            T.copy(l * alpha + T.reduce_sum(p, axis=1), l)  # the sum of P in f32, before the rounding
            T.copy(m_new, m)
            T.copy(p, rP)  # rounded to the input dtype: S's accumulator layout is P's A-operand layout
            for c, oc in enumerate(o):  # O = O * alpha + P V, BD columns at a time
                T.copy(sV[j % STAGES].window((0, c * BD), (BN, BD)), rV, atom="ldmatrix")
                # invariant: stage j % STAGES holds value tile j of this batch-head when iteration j consumes it
                T.assert_tag(lambda v: (v[0] == bh) & (v[1] // BN == j), rV)
                T.copy(oc * alpha[:, None], oc)
                T.gemm(rP, rV, oc)
                # invariant: O's element (r, c) pairs query row bm * BM + r with head-dim column c of this block
                T.assert_tag(lambda y: (y[0] == bm * BM + y.coord[0]) & (y[1] == c * BD + y.coord[1]), oc)
            T.barrier()  # stage j % STAGES may be overwritten from here on
        for c, oc in enumerate(o):
            T.copy(oc / l[:, None], O.tile((bh, bm, c), (None, BM, BD)))


# --- rung 5: swizzled shared memory -----------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK"), "stages": "STAGES"})
def attention_swizzle(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    BK: int = 16,
    BD: int = 16,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`attention_cp_async` with XOR-swizzled shared memory, as `gemm_cp_async_swizzled` swizzles `gemm_cp_async`'s
    stages: sQ, sK and sV are stored under Hopper's 128-byte swizzle, so that the eight rows one ``ldmatrix`` phase
    reads (16 bytes of each, at the same columns) lie in eight different 16-byte bank groups, and the three ldmatrix
    reads (Q, K^T and, transposed, V) are free of bank conflicts. A row of D = 64 is one swizzle span (128 bytes);
    a wider head dim is cut into panels one span wide, each stored whole before the next (``panels=True``), so that
    the swizzle's row bits are the row's own (a row-major 256-byte row would leave two rows of every eight on the
    same bank group). The staging copies write whole 16-byte vectors, which the swizzle permutes but never splits.
    Everything else is `attention_cp_async`'s statement for statement, the same pipeline and the same math, except
    that the assertions on the K and V operands also pin each element's head-dim column: a swizzle missing on one
    side moves elements within their row only, and for V no built-in check would see it (for Q and K the MMA's
    contraction check does)."""
    head_dim(D, BK, BD)
    scale_log2 = LOG2E / D**0.5
    warps = (BM // 16, 1)  # thread groups: one warp per 16 query rows
    span = row_swizzle(D, Q.dtype)  # bytes: 128 for D = 64 and 128
    with T.grid(T.cdiv(S, BM), BH, threads=32 * warps[0]) as (bm, bh):
        sQ = T.alloc_shared((BM, D), Q.dtype, swizzle=span, panels=True)  # (BM, D), in panels of one swizzle span
        sK = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=span, panels=True)  # (stages, BN, D), likewise
        sV = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=span, panels=True)  # (stages, BN, D), likewise
        atom = T.mma_sync(Q.dtype, T.f32)
        s = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=warps)  # S: 16 rows per warp
        rQ = T.alloc_fragment((BM, BK), Q.dtype, mma=atom, operand="A", groups=warps)
        rKt = T.alloc_fragment((BK, BN), Q.dtype, mma=atom, operand="B", groups=warps)
        rP = T.alloc_fragment((BM, BN), Q.dtype, mma=atom, operand="A", groups=warps)  # P in the input dtype
        rV = T.alloc_fragment((BN, BD), Q.dtype, mma=atom, operand="B", groups=warps)
        o = [T.alloc_fragment((BM, BD), T.f32, mma=atom, groups=warps) for _ in range(D // BD)]  # O, BD columns each
        m = T.alloc_reduced(s, axis=1)  # each query's running maximum (log2 domain), held by its row's lanes
        l = T.alloc_reduced(s, axis=1)  # each query's running sum  # noqa: E741
        for oc in o:
            T.fill(oc, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        T.copy(Q.tile((bh, bm, 0), (None, BM, D)), sQ)  # rows past S read 0 (never stored)
        for t in range(STAGES - 1):  # prologue: the first STAGES - 1 key tiles in flight
            T.copy(K.tile((bh, t, 0), (None, BN, D)), sK[t], atom="cp.async")
            T.copy(V.tile((bh, t, 0), (None, BN, D)), sV[t], atom="cp.async")
            T.async_commit()
        for j in T.serial(T.cdiv(S, BN)):
            nxt = j + (STAGES - 1)
            T.copy(K.tile((bh, nxt, 0), (None, BN, D)), sK[nxt % STAGES], atom="cp.async")  # keys past S read 0
            T.copy(V.tile((bh, nxt, 0), (None, BN, D)), sV[nxt % STAGES], atom="cp.async")  # values past S read 0
            T.async_commit()
            T.async_wait(STAGES - 1)  # key tile j has landed
            T.barrier()
            T.fill(s, 0.0)
            for kd in range(D // BK):  # S = Q K^T, BK columns of the head dim at a time
                T.copy(sQ.window((0, kd * BK), (BM, BK)), rQ, atom="ldmatrix")
                T.copy(sK[j % STAGES].window((0, kd * BK), (BN, BK)).T, rKt, atom="ldmatrix")
                # invariant: stage j % STAGES holds key tile j of this batch-head when iteration j consumes it, and
                # K^T's element (d, n) is head-dim column kd * BK + d (the swizzle undone on the read)
                T.assert_tag(lambda k: (k[0] == bh) & (k[1] // BN == j) & (k[2] == kd * BK + k.coord[0]), rKt)
                T.gemm(rQ, rKt, s)
            # invariant: S's element (r, c) pairs query row bm * BM + r with key j * BN + c
            T.assert_tag(lambda x: (x[0] == bm * BM + x.coord[0]) & (x[1] == j * BN + x.coord[1]), s)
            x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=1), m)  # combined over the row's four lanes by shuffles
            p = T.exp2(x - m_new[:, None])
            alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
            # invariant: the statistics that rescale query r's scores (and its O) were computed from query r's
            T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
            T.copy(l * alpha + T.reduce_sum(p, axis=1), l)  # the sum of P in f32, before the rounding
            T.copy(m_new, m)
            T.copy(p, rP)  # rounded to the input dtype: S's accumulator layout is P's A-operand layout
            for c, oc in enumerate(o):  # O = O * alpha + P V, BD columns at a time
                T.copy(sV[j % STAGES].window((0, c * BD), (BN, BD)), rV, atom="ldmatrix")
                # invariant: stage j % STAGES holds value tile j of this batch-head when iteration j consumes it, and
                # V's element (n, d) is head-dim column c * BD + d (the swizzle undone on the read)
                T.assert_tag(lambda v: (v[0] == bh) & (v[1] // BN == j) & (v[2] == c * BD + v.coord[1]), rV)
                T.copy(oc * alpha[:, None], oc)
                T.gemm(rP, rV, oc)
                # invariant: O's element (r, c) pairs query row bm * BM + r with head-dim column c of this block
                T.assert_tag(lambda y: (y[0] == bm * BM + y.coord[0]) & (y[1] == c * BD + y.coord[1]), oc)
            T.barrier()  # stage j % STAGES may be overwritten from here on
        for c, oc in enumerate(o):
            T.copy(oc / l[:, None], O.tile((bh, bm, c), (None, BM, BD)))


# --- rung 6: TMA and wgmma --------------------------------------------------------------------------------------------


def rung_tiles(BM: int, BN: int, STAGES: int) -> None:  # noqa: N803
    """Refuse tiles the wgmma rungs cannot take: BM and BN of 64 or 128 (64 query rows per warpgroup, keys in
    64-column panels), at least one stage."""
    if BM not in (64, 128) or BN not in (64, 128) or not isinstance(STAGES, int) or STAGES < 1:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"BM={BM}, BN={BN}, STAGES={STAGES}: BM and BN of 64 or 128 (64 query rows per warpgroup, keys in "
            "64-column panels) and at least one stage",
        )


@argus.kernel(policies={"tile_shape": ("BM", "BN"), "stages": "STAGES"})
def attention_tma_wgmma(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`attention_swizzle` on Hopper's TMA and ``wgmma``, without warp specialization, as `gemm_tma_wgmma` is
    `gemm_cp_async_swizzled` on them: Q, K and V are loaded by TMA (one box per 64-column panel of a 128-byte
    swizzled tile) and complete on mbarriers, the key tiles STAGES - 1 ahead of the one being used; every warpgroup
    (64 query rows each, BM / 64 of them) waits for the stage, computes S = Q K^T with ``wgmma`` reading Q and K
    from shared memory, runs the online softmax on the accumulator in registers, stores P (rounded to IN) into
    shared memory, and computes O += P V with ``wgmma`` reading P and V (MN-major, transposed by the instruction)
    from there; a block barrier frees the stage and P for the next key tile. Thread 0 issues every load. The same
    math as the rungs below, in the same order per key tile."""
    head_dim(D, 64)
    rung_tiles(BM, BN, STAGES)
    scale_log2 = LOG2E / D**0.5
    item = Q.dtype.itemsize
    with T.grid(T.cdiv(S, BM), BH, threads=128 * (BM // 64)) as (bm, bh):
        sQ = T.alloc_shared((BM, D), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sP = T.alloc_shared((BM, BN), Q.dtype, swizzle=128, panels=True)  # P @ V's A operand
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds key tile j: one expect_tx arrival + bytes
        s = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))  # 64 rows per warpgroup
        o = T.alloc_fragment((BM, D), T.f32, mma=T.wgmma_atom(D, Q.dtype))
        m = T.alloc_reduced(s, axis=1)  # each query's running maximum (log2 domain)
        l = T.alloc_reduced(s, axis=1)  # each query's running sum  # noqa: E741
        T.fill(o, 0.0)
        T.fill(m, float("-inf"))
        T.fill(l, 0.0)
        n_tiles = T.cdiv(S, BN)
        T.mbarrier_arrive(q_ready[0], expect_bytes=BM * D * item)
        load_panels(Q, (bh,), bm, BM, D, sQ, q_ready[0])  # rows past S read 0 (never stored)
        for t in range(STAGES - 1):  # prologue: the first STAGES - 1 key tiles in flight
            with T.if_(n_tiles > t):
                T.mbarrier_arrive(full[t], expect_bytes=2 * BN * D * item)
                load_panels(K, (bh,), t, BN, D, sK[t], full[t])
                load_panels(V, (bh,), t, BN, D, sV[t], full[t])
        T.mbarrier_wait(q_ready[0], phase=0)
        for j, st in T.pipeline(n_tiles, stages=STAGES):
            nxt = j + (STAGES - 1)  # into the stage iteration j - 1 consumed (freed by its closing barrier)
            with T.if_(nxt < n_tiles):
                T.mbarrier_arrive(full[nxt % STAGES], expect_bytes=2 * BN * D * item)
                load_panels(K, (bh,), nxt, BN, D, sK[nxt % STAGES], full[nxt % STAGES])  # keys past S read 0
                load_panels(V, (bh,), nxt, BN, D, sV[nxt % STAGES], full[nxt % STAGES])  # values past S read 0
            T.mbarrier_wait(full[st], phase=(j // STAGES) % 2)  # key tile j has landed
            # invariant: the stage consumed at iteration j holds key and value tile j of this batch-head
            T.assert_tag(holds_head((bh,), j, BN), sK[st])
            T.assert_tag(holds_head((bh,), j, BN), sV[st])
            T.fill(s, 0.0)
            T.gemm(sQ, sK[st].T, s)  # S = Q K^T
            # invariant: S's element (r, c) pairs query row bm * BM + r with key j * BN + c
            T.assert_tag(lambda x: (x[0] == bm * BM + x.coord[0]) & (x[1] == j * BN + x.coord[1]), s)
            x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
            m_new = T.maximum(T.reduce_max(x, axis=1), m)
            p = T.exp2(x - m_new[:, None])
            alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
            # invariant: the statistics that rescale query r's scores (and its O) were computed from query r's
            T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
            T.copy(l * alpha + T.reduce_sum(p, axis=1), l)  # the sum of P in f32, before the rounding
            T.copy(m_new, m)
            T.copy(o * alpha[:, None], o)
            T.copy(p, sP)  # rounded to the input dtype, into shared memory: wgmma reads A from there
            T.fence_proxy_async()  # ordinary stores -> visible to wgmma (the async proxy)
            T.barrier()  # every thread's part of P is in place
            T.gemm(sP, sV[st], o)  # O += P V
            # invariant: O's element (r, c) pairs query row bm * BM + r with head-dim column c
            T.assert_tag(lambda y: (y[0] == bm * BM + y.coord[0]) & (y[1] == y.coord[1]), o)
            T.barrier()  # stage j % STAGES and sP may be overwritten from here on
        T.copy(o / l[:, None], O.tile((bh, bm, 0), (None, BM, D)))


# --- rung 7: warp specialization -------------------------------------------------------------------------------------


#: Registers per thread the consumers' math needs without spilling (rung 6 compiles to 124 at D = 64, 153 at
#: D = 128; the warp-specialized consumer to 136 at D = 64 with no spill, and spills at 104).
CONSUMER_FLOOR = 128

#: The most blocks `resident_blocks` puts on an SM (four would leave a D = 64 consumer 104 registers).
MOST_BLOCKS = 3


def resident_blocks(threads: int, consumers: int, producer: int, shared_bytes: int) -> int:
    """The most blocks per SM (1 .. `MOST_BLOCKS`) whose shared memory fits (`shared_budget`) and whose consumer
    warpgroups keep `CONSUMER_FLOOR` registers a thread: 3 for one consumer at D = 64, 1 for two. Measured on an H200
    (benchmarks/results/2026-12-01-attention-ws): at D = 64, BM = 64, one block per SM ran 1.7x slower than three
    (its launch at 255 registers a thread leaves room for one block)."""
    fits = [
        b
        for b in range(1, MOST_BLOCKS + 1)
        if shared_bytes <= shared_budget(b) and consumer_registers(threads, consumers, b, producer) >= CONSUMER_FLOOR
    ]
    return max(fits, default=1)


@argus.kernel(policies={"tile_shape": ("BM", "BN"), "stages": "STAGES"})
def attention_warp_specialized(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 64,
    BN: int = 64,
    STAGES: int = 2,
    IN: str = "bf16",
    BLOCKS_PER_SM: int = 0,
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 0,
):
    """`attention_tma_wgmma` with warp roles, as `gemm_warp_specialized` is `gemm_tma_wgmma` with them: warpgroup 0 (the
    producer) loads Q once and each key tile's K and V by TMA into a ring of STAGES stages, waiting on an "empty"
    mbarrier per stage before it refills one; warpgroups 1 .. BM / 64 (the consumers, 64 query rows each) wait on the
    stage's "full" mbarrier, run rung 6's math on it statement for statement (S = Q K^T by wgmma, the online softmax in
    registers, P rounded to IN through swizzled shared memory, O += P V by wgmma), and release the stage with one
    arrival per warpgroup, so that the producer runs up to STAGES tiles ahead with no block barrier between the roles.
    The consumers alone synchronize around P (a named barrier of their threads). ``setmaxnreg`` gives the producer
    PRODUCER_REGS registers per thread and the consumers CONSUMER_REGS (0: the most that `BLOCKS_PER_SM` resident blocks
    leave them, `argus.atoms.common.consumer_registers`, at most 240). BLOCKS_PER_SM blocks are meant to share an SM
    (the launch bounds; 0: `resident_blocks`, the most whose shared memory fits and whose consumers keep the registers
    their math needs). Rung 6, with no roles and no launch bounds, keeps as many blocks per SM as its shared memory
    allows (four at D = 64): a warp-specialized block launched for one block per SM (255 registers a thread) ran 1.7x
    slower than three."""
    head_dim(D, 64)
    rung_tiles(BM, BN, STAGES)
    scale_log2 = LOG2E / D**0.5
    item = Q.dtype.itemsize
    consumers = tuple(range(1, 1 + BM // 64))  # one warpgroup per 64 query rows
    threads = 128 * (1 + len(consumers))
    shared_bytes = (BM * D + 2 * STAGES * BN * D + BM * BN) * item  # sQ, sK, sV, sP
    blocks = BLOCKS_PER_SM or resident_blocks(threads, len(consumers), PRODUCER_REGS, shared_bytes)
    budget = CONSUMER_REGS or consumer_registers(threads, len(consumers), blocks, PRODUCER_REGS, most=240)
    with T.grid(T.cdiv(S, BM), BH, threads=threads, blocks_per_sm=blocks) as (bm, bh):
        sQ = T.alloc_shared((BM, D), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sP = T.alloc_shared((BM, BN), Q.dtype, swizzle=128, panels=True)  # P @ V's A operand
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds key tile j: one expect_tx arrival + bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=len(consumers))  # every consumer warpgroup is done with it
        n_tiles = T.cdiv(S, BN)
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * D * item)
            load_panels(Q, (bh,), bm, BM, D, sQ, q_ready[0])  # rows past S read 0 (never stored)
            for j, st in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(empty[st], phase=(j // STAGES + 1) % 2)  # the consumers released tile j - STAGES
                T.mbarrier_arrive(full[st], expect_bytes=2 * BN * D * item)
                load_panels(K, (bh,), j, BN, D, sK[st], full[st])  # keys past S read 0
                load_panels(V, (bh,), j, BN, D, sV[st], full[st])  # values past S read 0
        with T.role("consumer", warpgroups=consumers, registers=budget):
            s = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))  # 64 rows per warpgroup
            o = T.alloc_fragment((BM, D), T.f32, mma=T.wgmma_atom(D, Q.dtype))
            m = T.alloc_reduced(s, axis=1)  # each query's running maximum (log2 domain)
            l = T.alloc_reduced(s, axis=1)  # each query's running sum  # noqa: E741
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, st in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(full[st], phase=(j // STAGES) % 2)  # key tile j has landed
                # invariant: the stage consumed at iteration j holds key and value tile j of this batch-head
                T.assert_tag(holds_head((bh,), j, BN), sK[st])
                T.assert_tag(holds_head((bh,), j, BN), sV[st])
                T.fill(s, 0.0)
                T.gemm(sQ, sK[st].T, s)  # S = Q K^T
                # invariant: S's element (r, c) pairs query row bm * BM + r with key j * BN + c
                T.assert_tag(lambda x: (x[0] == bm * BM + x.coord[0]) & (x[1] == j * BN + x.coord[1]), s)
                x = T.where(T.index(s, 1) + j * BN < S, s * scale_log2, float("-inf"))
                m_new = T.maximum(T.reduce_max(x, axis=1), m)
                p = T.exp2(x - m_new[:, None])
                alpha = T.exp2(m - m_new)  # rescales what was accumulated under the old maximum
                # invariant: the statistics that rescale query r's scores (and its O) were computed from query r's
                T.assert_tag(lambda pt, mt: (pt[0] == mt[0]) & (pt[0] // BM == bm), p, m_new[:, None])
                T.copy(l * alpha + T.reduce_sum(p, axis=1), l)  # the sum of P in f32, before the rounding
                T.copy(m_new, m)
                T.copy(o * alpha[:, None], o)
                T.barrier(1, threads=128 * len(consumers))  # the previous P V has finished reading sP
                T.copy(p, sP)  # rounded to the input dtype, into shared memory: wgmma reads A from there
                T.fence_proxy_async()  # ordinary stores -> visible to wgmma (the async proxy)
                T.barrier(1, threads=128 * len(consumers))  # every consumer thread's part of P is in place
                T.gemm(sP, sV[st], o)  # O += P V
                # invariant: O's element (r, c) pairs query row bm * BM + r with head-dim column c
                T.assert_tag(lambda y: (y[0] == bm * BM + y.coord[0]) & (y[1] == y.coord[1]), o)
                T.mbarrier_arrive(empty[st], per_warpgroup=True)  # stage j % STAGES may be refilled
            T.copy(o / l[:, None], O.tile((bh, bm, 0), (None, BM, D)))


# --- rungs 8-10: P in registers, ping-pong, intra-warpgroup overlap --------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BM", "BN"), "stages": "STAGES"})
def attention_p_registers(
    Q: T.Tensor[QKV_SHAPE, "IN"],
    K: T.Tensor[QKV_SHAPE, "IN"],
    V: T.Tensor[QKV_SHAPE, "IN"],
    O: T.Tensor[QKV_SHAPE, T.f32],
    D: int = 64,
    BM: int = 128,
    BN: int = 128,
    STAGES: int = 2,
    IN: str = "bf16",
    PINGPONG: bool = False,
    OVERLAP: bool = False,
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
):
    """`attention_warp_specialized` with P kept in registers: S's accumulator layout is wgmma's A register layout
    thread for thread, so P is rounded to IN in place and O += P V reads it from there (the register-A ``wgmma``),
    with no shared-memory tile for P, no proxy fence and no barrier between the consumer warpgroups. The loop is
    `flash_attention`'s (`argus.kernels.attention.attention_body`): a producer warpgroup loading Q once and K and V
    through STAGES stages by TMA, BM / 64 consumer warpgroups of 64 query rows, the softmax on the raw scores with
    the scale folded into one fma per exponent, keys past S masked, O written alone (no log-sum-exp).

    PINGPONG (rung 9, `attention_pingpong`) makes the consumer warpgroups take turns issuing their MMAs;
    OVERLAP (rung 10, `attention_overlap`) leaves each warpgroup's O += P V of tile j - 1 running while it computes
    tile j's softmax (docs/attention.md, "The kernel")."""
    attention_body(
        Q, K, V, O, None,
        D=D, DV=D, BM=BM, BN=BN, STAGES=STAGES, CONSUMERS=BM // 64, CAUSAL=False, GROUP=1, SCALE=0.0, SPLITS=1,
        LAYOUT="bhsd", P_REGISTERS=True, PINGPONG=PINGPONG, OVERLAP=OVERLAP, LPT=False, MASK_TAIL=True, EXP2_FMA=0,
        IN=IN, OUT="f32", PRODUCER_REGS=PRODUCER_REGS, CONSUMER_REGS=CONSUMER_REGS, PERSISTENT=False, BLOCKS=0,
        Q_BUFFERS=1, BLOCKS_PER_SM=1, PAIRS=False,
    )  # fmt: skip
