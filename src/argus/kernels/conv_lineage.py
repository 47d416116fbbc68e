"""The 2-d convolution's lineage (issue #21, docs/conv.md "The lineage"): rungs of one channels-last convolution, each
a verified library kernel adding one mechanism to the rung before it, as the GEMM ladder's first rungs do
(`argus.kernels.gemm`), so that KLineage can walk it and mine convolution skills. Every rung computes

    Y[n, oh, ow, f] = sum over (kh, kw, c) of X[n, oh*SH - PH + kh*LH, ow - PW + kw*LW, c] * WT[kh*KW + kw, c, f]

(input (N, H, W, C) and output (N, OH, OW, F) channels last, the weight as (taps, C, F): the GEMM's B with K = (tap,
channel)), in f32 from bf16 or f16 inputs, any row stride SH, padding (PH, PW) and dilation (LH, LW), column stride
1 (a column stride makes a tap's columns every SW-th element, which a window copy does not express: the implicit
kernel's strided view does). A block takes BW output positions of one output row (the GEMM's M tile) and walks the
output channels BN at a time; its K loop walks the taps and the input's channel blocks of BK, one loop of KH*KW*CB
steps whose tap and block are divisions by constants (the channels C are a parameter of the kernel, fixed when it is
built, as the window is; CB = C / BK rounded up). The im2col addressing is each K step's window of the input: the
tap's input row, the tile's columns shifted by the tap, the channel block; rows and columns outside the input (the
padding) and channels past C read 0 (as do the weight's).

1. `conv_naive` — one thread per output element, A and B from global memory into registers, FMA in f32;
2. `conv_smem_tiled` — the block's A and B tiles staged in shared memory between barriers, a register micro-tile of
   FMAs per thread;
3. `conv_mma_sync` — tensor cores: ldmatrix into operand fragments and mma.sync on 2x2 warps;
4. `conv_cp_async` — a multi-stage cp.async pipeline: the next K steps' windows load during the MMAs;
5. `conv_swizzle` — the stages in XOR-swizzled shared memory: the ldmatrix reads free of bank conflicts;
6. `conv_tma_wgmma` — TMA boxes onto mbarriers and ``wgmma`` from the swizzled stages, no warp roles (split for the
   walk by the bridge `argus.lineage.bridges.conv_cp_async_wgmma`: ``wgmma`` fed by ``cp.async``);
7. `conv_warp_specialized` — warp roles: a producer warpgroup issues the TMA loads into a ring of stages that the
   consumer warpgroup releases through "empty" mbarriers, ``setmaxnreg`` moving registers to the consumer;
8. `conv_warp_specialized_persistent` — a persistent grid: BLOCKS blocks walk the (position tile, output channel
   tile) units in a grouped tile order, the mbarrier ring running on across a block's units;
9. `conv_tma_store_epilogue` (rung 8 with EPILOGUE "tma") — each tile stored through swizzled shared-memory staging
   and TMA stores, which drain while the consumer starts the block's next unit.

The GEMM ladder's nine rungs on the convolution. Kept apart from the planning code: this module holds DSL kernels
only."""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, consumer_registers
from argus.atoms.tma import STAGING_BUFFERS, store_chunk_columns
from argus.kernels.attention_lineage import resident_blocks, row_swizzle
from argus.kernels.conv_kernels import output_size
from argus.lang.errors import DSLError
from argus.layout import Layout

X_SHAPE = lambda C: ("N", "H", "W", C)  # noqa: E731 - channels last, C channels
W_SHAPE = lambda KH, KW, C: (KH * KW, C, "F")  # noqa: E731 - the taps, the channels, the output channels
Y_SHAPE = ("N", "OH", "OW", "F")


def channel_blocks(KH: int, KW: int, SH: int, PH: int, PW: int, LH: int, LW: int, C: int, BK: int) -> int:  # noqa: N803
    """Assume PyTorch's output extents; the channel blocks per tap, C / BK rounded up. The channels are a parameter
    of the kernel (fixed when it is built, as the window is), so that the K step's tap and block are divisions by
    constants: with C a size, the contraction proofs came back unknown (about 2 minutes each)."""
    if not isinstance(C, int) or C < 1:
        raise DSLError("DSL_BAD_PARAM", f"C (the input channels) must be a positive int, not {C!r}")
    T.assume(output_size("H", "OH", KH, SH, PH, LH) + " and " + output_size("W", "OW", KW, 1, PW, LW))
    return -(-C // BK)


def step_of(k: Any, KW: int, CB: int) -> tuple[Any, Any, Any, Any]:  # noqa: N803
    """(tap, kh, kw, cb) of K step `k` (taps slowest)."""
    tap, cb = k // CB, k % CB
    return tap, tap // KW, tap % KW, cb


def window_of(X: Any, n: Any, oh: Any, bw: Any, kh: Any, kw: Any, cb: Any, p: tuple, BW: int, BK: int) -> Any:  # noqa: N803
    """The (BW, BK) window of the input a K step reads for the tile's BW output positions (see the module
    docstring); `p` = (SH, PH, PW, LH, LW)."""
    SH, PH, PW, LH, LW = p  # noqa: N806
    return X.window((n, oh * SH - PH + kh * LH, bw * BW - PW + kw * LW, cb * BK), (None, None, BW, BK))


def step_tags(
    a: Any,
    b: Any,
    n: Any,
    oh: Any,
    bw: Any,
    bf: Any,
    k: Any,
    p: tuple,
    KW: int,
    CB: int,
    tile: tuple,  # noqa: N803
) -> None:
    """The invariants of one K step's operands: A's row m holds the input element the step's tap reads for output
    position (n, oh, bw * BW + m), channel block cb; B's rows are that tap's channels of block cb for the output
    channels bf * BN ...; `tile` = (BW, BN, BK)."""
    SH, PH, PW, LH, LW = p  # noqa: N806
    BW, BN, BK = tile  # noqa: N806
    tap, kh, kw, cb = step_of(k, KW, CB)
    T.assert_tag(
        lambda x: (
            (x[0] == n)
            & (x[1] == oh * SH - PH + kh * LH)
            & (x[2] == bw * BW + x.coord[0] - PW + kw * LW)
            & (x[3] == cb * BK + x.coord[1])
        ),
        a,
    )
    T.assert_tag(lambda x: (x[0] == tap) & (x[1] == cb * BK + x.coord[0]) & (x[2] == bf * BN + x.coord[1]), b)


def stage_spans(C: int, BW: int, BN: int, BK: int, dtype: Any) -> tuple[int, int]:  # noqa: N803
    """The swizzle spans (bytes) of the A and B stages of the swizzled rungs: the widest that divides a row of BK
    channels and of BN output channels; refused where a row is not whole 32-byte spans, or where C does not start
    each input row 16-byte aligned."""
    if C % 8:
        raise DSLError("DSL_BAD_PARAM", f"C must be a multiple of 8 (rows of X start 16-byte aligned), not {C}")
    span_a, span_b = row_swizzle(BK, dtype), row_swizzle(BN, dtype)
    if not span_a or not span_b:
        raise DSLError("DSL_BAD_PARAM", f"BK = {BK} and BN = {BN}: rows of whole 32-byte swizzle spans (16 elements)")
    return span_a, span_b


def wgmma_tile(BW: int) -> None:  # noqa: N803
    """The wgmma rungs' tile: BW = 64 output positions, one warpgroup's rows."""
    if BW != 64:
        raise DSLError("DSL_BAD_PARAM", f"BW = {BW}: the wgmma rungs take 64 output positions (one warpgroup's rows)")


def load_step(
    X: Any,  # noqa: N803 - the kernels' tensors
    WT: Any,  # noqa: N803
    sA: Any,  # noqa: N803
    sB: Any,  # noqa: N803
    unit: tuple,
    k: Any,
    s: Any,
    p: tuple,
    KW: int,  # noqa: N803
    CB: int,  # noqa: N803
    tile: tuple,
    atom: str,
    mbarrier: Any = None,
) -> None:
    """K step k's input window and weight block for `unit` = (n, oh, bw, bf) into stage s of sA and sB, copied by
    `atom` (``"cp.async"``, or ``"tma"`` completing on `mbarrier`); `tile` = (BW, BN, BK). A step past the last
    reads whatever is there and is never multiplied."""
    n, oh, bw, bf = unit
    BW, BN, BK = tile  # noqa: N806
    tap, kh, kw, cb = step_of(k, KW, CB)
    on = {} if mbarrier is None else {"mbarrier": mbarrier}
    T.copy(window_of(X, n, oh, bw, kh, kw, cb, p, BW, BK), sA[s], atom=atom, **on)
    T.copy(WT.window((tap, cb * BK, bf * BN), (None, BK, BN)), sB[s], atom=atom, **on)


def produce_steps(
    X: Any,  # noqa: N803 - the kernels' tensors
    WT: Any,  # noqa: N803
    sA: Any,  # noqa: N803
    sB: Any,  # noqa: N803
    barriers: tuple,
    unit: tuple,
    start: Any,
    shape: tuple,
) -> None:
    """The producer warpgroup's loop of the warp-specialized rungs for one unit: each K step's window and weight
    block by TMA into the ring, after the consumer released the stage; `barriers` = (full, empty), `start` the
    block's steps before the unit (0: one unit a block), `shape` = (steps, STAGES, stage bytes, p, KW, CB, tile)."""
    full, empty = barriers
    steps, STAGES, stage_bytes, p, KW, CB, tile = shape  # noqa: N806
    for k, s in T.pipeline(steps, stages=STAGES, start=start):
        g = k if isinstance(start, int) and start == 0 else start + k  # the block's global step
        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)  # the consumer released step g - STAGES
        T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
        load_step(X, WT, sA, sB, unit, k, s, p, KW, CB, tile, "tma", full[s])


def consume_steps(sA: Any, sB: Any, barriers: tuple, acc: Any, unit: tuple, start: Any, shape: tuple) -> None:  # noqa: N803
    """The consumer warpgroup's loop of the warp-specialized rungs for one unit (arguments as `produce_steps`'):
    each stage waited for, multiplied into `acc` by wgmma, and released."""
    full, empty = barriers
    steps, STAGES, _, p, KW, CB, tile = shape  # noqa: N806
    n, oh, bw, bf = unit
    for k, s in T.pipeline(steps, stages=STAGES, start=start):
        g = k if isinstance(start, int) and start == 0 else start + k  # the block's global step
        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)  # step k has landed
        # invariant: stage s holds K step k's window and weights of this unit when iteration k consumes it
        step_tags(sA[s], sB[s], n, oh, bw, bf, k, p, KW, CB, tile)
        T.gemm(sA[s], sB[s], acc)
        T.mbarrier_arrive(empty[s], per_warpgroup=True)  # stage s may be refilled


# --- rung 1: one thread per output element ---------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK")})
def conv_naive(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 1,
    BN: int = 128,
    BK: int = 16,
    IN: str = "bf16",
):
    """Rung 1 (see the module docstring): thread t of a block owns output channel t % BN of position t // BN of the
    block's BW positions; for every K step it reads its position's window row and its output channel's weight
    column from global memory (BK elements each) and accumulates them with FMAs in f32."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    p = (SH, PH, PW, LH, LW)
    with T.grid(T.cdiv(OW, BW), OH, N, threads=BW * BN) as (bw, oh, n):
        atom = T.fma_atom(X.dtype, T.f32)
        acc = T.alloc_fragment((BW, BN), T.f32, mma=atom, groups=(BW, BN))  # one element per thread
        rA = T.alloc_fragment((BW, BK), X.dtype, mma=atom, operand="A", groups=(BW, BN))  # its window row
        rB = T.alloc_fragment((BK, BN), X.dtype, mma=atom, operand="B", groups=(BW, BN))  # its weight column
        for bf in T.serial(T.cdiv(F, BN)):
            T.fill(acc, 0.0)
            for k in T.serial(KH * KW * CB):
                tap, kh, kw, cb = step_of(k, KW, CB)
                T.copy(window_of(X, n, oh, bw, kh, kw, cb, p, BW, BK), rA)  # the padding reads 0
                T.copy(WT.window((tap, cb * BK, bf * BN), (None, BK, BN)), rB)
                # invariant: the operands multiplied at step k are its tap's window and weights, channel block cb
                step_tags(rA, rB, n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(rA, rB, acc)
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 2: shared-memory tiling -------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK")})
def conv_smem_tiled(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 8,
    TM: int = 4,
    TN: int = 8,
    IN: str = "bf16",
):
    """`conv_naive` plus shared-memory tiling: the block's threads copy the K step's (BW, BK) window and (BK, BN)
    weight block into shared memory, synchronize, and each thread computes a (TM, TN) micro-tile of the output with
    FMAs from the TM positions and TN output channels it reads there (each input element fetched from global
    memory once per block and step instead of once per thread). The shared tiles are stored transposed to their
    use (A position-contiguous, B channel-contiguous), so that a thread's operand runs are vector loads."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    p = (SH, PH, PW, LH, LW)
    groups = (BW // TM, BN // TN)
    with T.grid(T.cdiv(OW, BW), OH, N, threads=groups[0] * groups[1]) as (bw, oh, n):
        sA = T.alloc_shared((BW, BK), X.dtype, layout=Layout((BW, BK), (1, BW)))  # (BW, BK), position-contiguous
        sB = T.alloc_shared((BK, BN), X.dtype, layout=Layout((BK, BN), (1, BK)))  # (BK, BN), channel-contiguous
        atom = T.fma_atom(X.dtype, T.f32)
        acc = T.alloc_fragment((BW, BN), T.f32, mma=atom, groups=groups)  # (TM, TN) per thread
        rA = T.alloc_fragment((BW, BK), X.dtype, mma=atom, operand="A", groups=groups)
        rB = T.alloc_fragment((BK, BN), X.dtype, mma=atom, operand="B", groups=groups)
        for bf in T.serial(T.cdiv(F, BN)):
            T.fill(acc, 0.0)
            for k in T.serial(KH * KW * CB):
                tap, kh, kw, cb = step_of(k, KW, CB)
                T.copy(window_of(X, n, oh, bw, kh, kw, cb, p, BW, BK), sA)
                T.copy(WT.window((tap, cb * BK, bf * BN), (None, BK, BN)), sB)
                T.barrier()
                T.copy(sA, rA)
                T.copy(sB, rB)
                # invariant: the operands multiplied at step k are its tap's window and weights, channel block cb
                step_tags(rA, rB, n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(rA, rB, acc)
                T.barrier()  # sA and sB may be overwritten from here on
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 3: tensor cores (ldmatrix + mma.sync) -----------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK")})
def conv_mma_sync(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    IN: str = "bf16",
):
    """`conv_smem_tiled` on tensor cores: the staged window and weight block go to operand fragments by ldmatrix
    and are multiplied by mma.sync on 2x2 warps; partial tiles are masked."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    p = (SH, PH, PW, LH, LW)
    with T.grid(T.cdiv(OW, BW), OH, N, threads=128) as (bw, oh, n):
        sA = T.alloc_shared((BW, BK), X.dtype)  # (BW, BK)
        sB = T.alloc_shared((BK, BN), X.dtype)  # (BK, BN)
        atom = T.mma_sync(X.dtype, T.f32)
        acc = T.alloc_fragment((BW, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BW, BK), X.dtype, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), X.dtype, mma=atom, operand="B", groups=(2, 2))
        for bf in T.serial(T.cdiv(F, BN)):
            T.fill(acc, 0.0)
            for k in T.serial(KH * KW * CB):
                tap, kh, kw, cb = step_of(k, KW, CB)
                T.copy(window_of(X, n, oh, bw, kh, kw, cb, p, BW, BK), sA)
                T.copy(WT.window((tap, cb * BK, bf * BN), (None, BK, BN)), sB)
                T.barrier()
                T.copy(sA, rA, atom="ldmatrix")
                T.copy(sB, rB, atom="ldmatrix")
                # invariant: the operands multiplied at step k are its tap's window and weights, channel block cb
                step_tags(rA, rB, n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(rA, rB, acc)
                T.barrier()
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 4: a cp.async pipeline --------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK"), "stages": "STAGES"})
def conv_cp_async(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`conv_mma_sync` with a `cp.async` multi-stage pipeline: the windows of K step k + STAGES - 1 are in flight
    while step k is multiplied."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    if C % 8:
        raise DSLError("DSL_BAD_PARAM", f"C must be a multiple of 8 (rows of X start 16-byte aligned), not {C}")
    T.assume("F % 8 == 0")  # rows of WT start 16-byte aligned: cp.async moves 16-byte vectors
    p = (SH, PH, PW, LH, LW)
    steps = KH * KW * CB
    with T.grid(T.cdiv(OW, BW), OH, N, threads=128) as (bw, oh, n):
        sA = T.alloc_shared((STAGES, BW, BK), X.dtype)  # (stages, BW, BK)
        sB = T.alloc_shared((STAGES, BK, BN), X.dtype)
        atom = T.mma_sync(X.dtype, T.f32)
        acc = T.alloc_fragment((BW, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BW, BK), X.dtype, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), X.dtype, mma=atom, operand="B", groups=(2, 2))

        def load(bf: Any, k: Any, s: Any) -> None:
            load_step(X, WT, sA, sB, (n, oh, bw, bf), k, s, p, KW, CB, (BW, BN, BK), "cp.async")

        for bf in T.serial(T.cdiv(F, BN)):
            T.fill(acc, 0.0)
            for s in range(STAGES - 1):  # prologue: the first STAGES-1 steps in flight
                load(bf, s, s)
                T.async_commit()
            for k in T.serial(steps):
                nxt = k + (STAGES - 1)
                load(bf, nxt, nxt % STAGES)
                T.async_commit()
                T.async_wait(STAGES - 1)  # step k has landed
                T.barrier()
                T.copy(sA[k % STAGES], rA, atom="ldmatrix")
                T.copy(sB[k % STAGES], rB, atom="ldmatrix")
                # invariant: stage k % STAGES holds K step k's window and weights when iteration k consumes it
                step_tags(rA, rB, n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(rA, rB, acc)
                T.barrier()  # stage k % STAGES may be overwritten from here on
            T.async_wait(0)  # the steps past the last, loaded and never read, land before the stages are reused
            T.barrier()
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 5: swizzled shared memory -----------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK"), "stages": "STAGES"})
def conv_swizzle(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`conv_cp_async` with its stages in XOR-swizzled shared memory, as `gemm_cp_async_swizzled` swizzles
    `gemm_cp_async`'s: the 16-byte chunks of each row of sA (BK channels) and sB (BN output channels) are permuted by
    the widest Hopper swizzle whose span divides the row (64 bytes for BK = 32, 128 for BN = 64), each row of a wider
    tile stored in panels of that span, so that the eight rows one ``ldmatrix`` phase reads fall on eight bank groups.
    The ``cp.async`` copies still move whole 16-byte vectors, which the swizzle permutes but never splits; the
    pipeline and the math are rung 4's, statement for statement."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    span_a, span_b = stage_spans(C, BW, BN, BK, X.dtype)
    T.assume("F % 8 == 0")  # rows of WT start 16-byte aligned: cp.async moves 16-byte vectors
    p = (SH, PH, PW, LH, LW)
    steps = KH * KW * CB
    with T.grid(T.cdiv(OW, BW), OH, N, threads=128) as (bw, oh, n):
        sA = T.alloc_shared((STAGES, BW, BK), X.dtype, swizzle=span_a, panels=True)  # (stages, BW, BK)
        sB = T.alloc_shared((STAGES, BK, BN), X.dtype, swizzle=span_b, panels=True)
        atom = T.mma_sync(X.dtype, T.f32)
        acc = T.alloc_fragment((BW, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BW, BK), X.dtype, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), X.dtype, mma=atom, operand="B", groups=(2, 2))

        def load(bf: Any, k: Any, s: Any) -> None:
            load_step(X, WT, sA, sB, (n, oh, bw, bf), k, s, p, KW, CB, (BW, BN, BK), "cp.async")

        for bf in T.serial(T.cdiv(F, BN)):
            T.fill(acc, 0.0)
            for s in range(STAGES - 1):  # prologue: the first STAGES-1 steps in flight
                load(bf, s, s)
                T.async_commit()
            for k in T.serial(steps):
                nxt = k + (STAGES - 1)
                load(bf, nxt, nxt % STAGES)
                T.async_commit()
                T.async_wait(STAGES - 1)  # step k has landed
                T.barrier()
                T.copy(sA[k % STAGES], rA, atom="ldmatrix")
                T.copy(sB[k % STAGES], rB, atom="ldmatrix")
                # invariant: stage k % STAGES holds K step k's window and weights when iteration k consumes it
                step_tags(rA, rB, n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(rA, rB, acc)
                T.barrier()  # stage k % STAGES may be overwritten from here on
            T.async_wait(0)  # the steps past the last, loaded and never read, land before the stages are reused
            T.barrier()
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 6: TMA and wgmma --------------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK"), "stages": "STAGES"})
def conv_tma_wgmma(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 2,
    IN: str = "bf16",
):
    """`conv_swizzle` on Hopper's TMA and ``wgmma``, without warp specialization, as `gemm_tma_wgmma` is
    `gemm_cp_async_swizzled` on them: each K step's input window (one 4-d box of BW columns and BK channels of the
    tap's input row; rows and columns outside the input, the padding, are TMA's zero fill) and weight block (BK
    channels of the tap by BN output channels) land in rung 5's swizzled stages on one mbarrier per stage, STAGES - 1
    steps ahead of the one multiplied; the warpgroup (the tile's 64 output positions) waits for the stage and
    multiplies it with ``wgmma`` (the weight MN-major, transposed by the instruction), and a block barrier frees the
    stage. Thread 0 issues every load. A block is one (output row tile, output channel tile, image): the grid's
    first axis walks the output rows' column tiles (the rungs below walk the channel tiles in the block; here the
    pipeline runs once a block, so that each stage's mbarrier phase is its step's, (k // STAGES) % 2)."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    span_a, span_b = stage_spans(C, BW, BN, BK, X.dtype)
    wgmma_tile(BW)
    T.assume("F % 8 == 0")  # TMA needs WT's row stride (F values) a multiple of 16 bytes
    p = (SH, PH, PW, LH, LW)
    steps = KH * KW * CB
    stage_bytes = (BW * BK + BK * BN) * X.dtype.itemsize
    tiles_w = T.cdiv(OW, BW)
    with T.grid(tiles_w * OH, T.cdiv(F, BN), N, threads=128) as (t, bf, n):
        sA = T.alloc_shared((STAGES, BW, BK), X.dtype, swizzle=span_a, panels=True)  # (stages, BW, BK)
        sB = T.alloc_shared((STAGES, BK, BN), X.dtype, swizzle=span_b, panels=True)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds a step: one expect_tx arrival + the bytes
        acc = T.alloc_fragment((BW, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))
        with T.let(t % tiles_w, "tile_w") as bw, T.let(t // tiles_w, "out_row") as oh:

            def load(k: Any, s: Any) -> None:
                """K step k's window and weight block into stage s, completing on its mbarrier."""
                T.mbarrier_arrive(full[s], expect_bytes=stage_bytes)
                load_step(X, WT, sA, sB, (n, oh, bw, bf), k, s, p, KW, CB, (BW, BN, BK), "tma", full[s])

            T.fill(acc, 0.0)
            for k0 in range(min(STAGES - 1, steps)):  # prologue: the first STAGES - 1 steps in flight
                load(k0, k0)
            for k, s in T.pipeline(steps, stages=STAGES):
                nxt = k + (STAGES - 1)  # into the stage step k - 1 consumed (freed by its closing barrier)
                with T.if_(nxt < steps):
                    load(nxt, nxt % STAGES)
                T.mbarrier_wait(full[s], phase=(k // STAGES) % 2)  # step k has landed
                # invariant: stage s holds K step k's window and weights when iteration k consumes it
                step_tags(sA[s], sB[s], n, oh, bw, bf, k, p, KW, CB, (BW, BN, BK))
                T.gemm(sA[s], sB[s], acc)
                T.barrier()  # stage s may be refilled from here on
            T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 7: warp specialization -------------------------------------------------------------------------------------


@argus.kernel(policies={"tile_shape": ("BW", "BN", "BK"), "stages": "STAGES"})
def conv_warp_specialized(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 4,
    IN: str = "bf16",
    BLOCKS_PER_SM: int = 0,
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 0,
):
    """`conv_tma_wgmma` with warp roles, as `gemm_warp_specialized` is `gemm_tma_wgmma` with them: warpgroup 0 (the
    producer) loads each K step's window and weight block by TMA into a ring of STAGES stages, waiting on an "empty"
    mbarrier per stage before it refills one; warpgroup 1 (the consumer, the tile's 64 output positions) waits on the
    stage's "full" mbarrier, multiplies it with ``wgmma`` as rung 6 does and releases it with one arrival, so that the
    producer runs up to STAGES steps ahead with no block barrier between the roles. ``setmaxnreg`` gives the
    producer PRODUCER_REGS registers per thread and the consumer CONSUMER_REGS (0: what BLOCKS_PER_SM resident
    blocks leave it, `argus.atoms.common.consumer_registers`, at most 240); BLOCKS_PER_SM (0: the most blocks whose
    shared memory fits and whose consumer keeps the registers its accumulator needs,
    `argus.kernels.attention_lineage.resident_blocks`) sets the launch bounds."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    span_a, span_b = stage_spans(C, BW, BN, BK, X.dtype)
    wgmma_tile(BW)
    T.assume("F % 8 == 0")  # TMA needs WT's row stride (F values) a multiple of 16 bytes
    p = (SH, PH, PW, LH, LW)
    steps = KH * KW * CB
    stage_bytes = (BW * BK + BK * BN) * X.dtype.itemsize
    threads = 2 * 128  # the producer warpgroup and the consumer warpgroup
    blocks = BLOCKS_PER_SM or resident_blocks(threads, 1, PRODUCER_REGS, STAGES * stage_bytes)
    budget = CONSUMER_REGS or consumer_registers(threads, 1, blocks, PRODUCER_REGS, most=240)
    tiles_w = T.cdiv(OW, BW)
    with T.grid(tiles_w * OH, T.cdiv(F, BN), N, threads=threads, blocks_per_sm=blocks) as (t, bf, n):
        sA = T.alloc_shared((STAGES, BW, BK), X.dtype, swizzle=span_a, panels=True)  # (stages, BW, BK)
        sB = T.alloc_shared((STAGES, BK, BN), X.dtype, swizzle=span_b, panels=True)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds a step: one expect_tx arrival + the bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # the consumer warpgroup is done with it
        shape = (steps, STAGES, stage_bytes, p, KW, CB, (BW, BN, BK))
        with T.let(t % tiles_w, "tile_w") as bw, T.let(t // tiles_w, "out_row") as oh:
            with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):
                produce_steps(X, WT, sA, sB, (full, empty), (n, oh, bw, bf), 0, shape)
            with T.role("consumer", warpgroups=(1,), registers=budget):
                acc = T.alloc_fragment((BW, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))
                T.fill(acc, 0.0)
                consume_steps(sA, sB, (full, empty), acc, (n, oh, bw, bf), 0, shape)
                T.copy(acc, Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN)))


# --- rung 8: a persistent grid ----------------------------------------------------------------------------------------


@argus.kernel(
    policies={"tile_shape": ("BW", "BN", "BK"), "stages": "STAGES", "persistent": True, "tile_order": "ORDER"}
)
def conv_warp_specialized_persistent(
    X: T.Tensor[X_SHAPE, "IN"],
    WT: T.Tensor[W_SHAPE, "IN"],
    Y: T.Tensor[Y_SHAPE, T.f32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    C: int = 64,
    BW: int = 64,
    BN: int = 64,
    BK: int = 32,
    STAGES: int = 4,
    IN: str = "bf16",
    BLOCKS_PER_SM: int = 0,
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 0,
    BLOCKS: int = 0,
    ORDER: str = "grouped",
    GROUP: int = 8,
    EPILOGUE: str = "direct",
):
    """`conv_warp_specialized` on a persistent grid, as `gemm_warp_specialized_persistent` is `gemm_warp_specialized`
    on one: BLOCKS blocks (0: the SMs times the blocks an SM holds) walk the work units, unit ``u = block + it *
    BLOCKS`` in iteration ``it``; the units are the (position tile, output channel tile) pairs, a position tile being
    BW output positions of one output row of one image (image-major, rows, then column tiles), in ORDER
    (`T.tile_order`: ``"grouped"`` walks GROUP position tiles at a time across the output channel tiles, so that the
    blocks running at once share input rows and weight blocks in L2; ``"row_major"`` the output channel tiles of one
    position tile after another). One mbarrier ring runs on across a block's units (global step ``it * steps + k``),
    so that the producer loads the next unit's first steps while the consumer stores this one.

    EPILOGUE ``"direct"`` stores each tile from the accumulator's registers; ``"tma"`` (rung 9,
    `conv_tma_store_epilogue`) stages it in 128-byte-swizzled shared memory, a chunk of 128 bytes of output channels
    at a time in two buffers, and stores each chunk by one TMA box (positions past OW and channels past F clipped by
    the TMA unit), so that the stores drain while the consumer starts the next unit (as in
    `gemm_warp_specialized_persistent`)."""
    CB = channel_blocks(KH, KW, SH, PH, PW, LH, LW, C, BK)  # noqa: N806 - the channel blocks per tap
    span_a, span_b = stage_spans(C, BW, BN, BK, X.dtype)
    wgmma_tile(BW)
    if EPILOGUE not in ("direct", "tma"):
        raise DSLError("DSL_BAD_PARAM", f"EPILOGUE must be 'direct' or 'tma', not {EPILOGUE!r}")
    T.assume("F % 8 == 0")  # TMA needs WT's row stride (F values) a multiple of 16 bytes (Y's too, for its stores)
    p = (SH, PH, PW, LH, LW)
    steps = KH * KW * CB
    stage_bytes = (BW * BK + BK * BN) * X.dtype.itemsize
    threads = 2 * 128  # the producer warpgroup and the consumer warpgroup
    blocks = BLOCKS_PER_SM or resident_blocks(threads, 1, PRODUCER_REGS, STAGES * stage_bytes)
    budget = CONSUMER_REGS or consumer_registers(threads, 1, blocks, PRODUCER_REGS, most=240)
    walkers = BLOCKS or SMS * blocks
    tiles_w = T.cdiv(OW, BW)
    row_tiles = tiles_w * OH  # an image's position tiles
    tiles = (row_tiles * N, T.cdiv(F, BN))  # (position tiles, output channel tiles)
    units = tiles[0] * tiles[1]
    with T.grid(walkers, threads=threads, blocks_per_sm=blocks) as (bx,):
        sA = T.alloc_shared((STAGES, BW, BK), X.dtype, swizzle=span_a, panels=True)  # (stages, BW, BK)
        sB = T.alloc_shared((STAGES, BK, BN), X.dtype, swizzle=span_b, panels=True)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)  # stage s holds a step: one expect_tx arrival + the bytes
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)  # the consumer warpgroup is done with it
        staging = None  # (buffer, BW, 128 bytes of output channels): two chunks of a tile on their way to TMA stores
        if EPILOGUE == "tma":
            staging = T.alloc_shared((STAGING_BUFFERS, BW, store_chunk_columns(Y.dtype)), Y.dtype, swizzle=128)

        def each_unit(body: Any) -> None:
            """body(it, n, oh, bw, bf) for every unit of this block, its coordinates bound once (`T.let`)."""
            for it in T.serial(T.cdiv(units, walkers)):
                u = bx + it * walkers
                with T.if_(u < units):
                    m, bf = T.tile_order(u, tiles, ORDER, GROUP, clamp=True)
                    with T.let(m // row_tiles, "image") as n, T.let(m % row_tiles, "row_tile") as t:
                        with T.let(t // tiles_w, "out_row") as oh, T.let(t % tiles_w, "tile_w") as bw:
                            body(it, n, oh, bw, bf)

        shape = (steps, STAGES, stage_bytes, p, KW, CB, (BW, BN, BK))
        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS):

            def produce(it: Any, n: Any, oh: Any, bw: Any, bf: Any) -> None:
                produce_steps(X, WT, sA, sB, (full, empty), (n, oh, bw, bf), it * steps, shape)

            each_unit(produce)
        with T.role("consumer", warpgroups=(1,), registers=budget):
            acc = T.alloc_fragment((BW, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))

            def consume(it: Any, n: Any, oh: Any, bw: Any, bf: Any) -> None:
                T.fill(acc, 0.0)
                consume_steps(sA, sB, (full, empty), acc, (n, oh, bw, bf), it * steps, shape)
                tile = Y.window((n, oh, bw * BW, bf * BN), (None, None, BW, BN))
                if EPILOGUE == "tma":
                    T.copy(acc, tile, atom="tma.store", staging=staging)
                else:
                    T.copy(acc, tile)

            each_unit(consume)
