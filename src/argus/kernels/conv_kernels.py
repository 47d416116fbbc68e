"""The convolution library's DSL kernels (`argus.kernels.conv` plans and calls them): `im2col`, the gather that
writes a convolution's column matrix; `conv_output` / `conv_output_bias`, the pass that writes the GEMM's product as
the NCHW output and adds the bias; `conv_transpose_weight`, a transposed convolution's weight as the GEMM's operand.
Kept apart from the planning code so that this module holds DSL kernels only (the form a coder rewrites)."""

from __future__ import annotations

import math
from typing import Any

import argus
import argus.lang as T
from argus.layout import Layout

#: The dtypes a convolution takes (the DSL's names), and their sizes in bytes.
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2}
#: The DSL's dtype of each name.
DTYPES = {"f32": T.f32, "f16": T.f16, "bf16": T.bf16}
#: Threads per block of the gather and the output pass.
THREADS = 128
#: Elements each thread moves per staging copy of the gather (one copy's loads are issued together).
COPY_ELEMENTS = 8


def output_size(length: str, out: str, k: int, s: int, p: int, d: int, end: int | None = None) -> str:
    """PyTorch's output extent of one convolved dimension as a condition on the shape symbols: padding `p` at the
    start and `end` (default `p`; may be negative: the last elements are never read) at the end."""
    reach = p + (p if end is None else end) - d * (k - 1) - 1
    shifted = f"{length} + {reach}" if reach >= 0 else f"{length} - {-reach}"
    return f"({out} == ({shifted}) // {s} + 1)"


@argus.kernel(policies={"tile_shape": ("BH", "BW")})
def im2col(
    X: T.Tensor[("N", "C", "D", "H", "W"), "DT"],
    COLS: T.Tensor[lambda KD, KH, KW: ("C", KD, KH * KW, "N", "OD", "OH", "OW"), "DT"],
    KD: int = 1,
    KH: int = 3,
    KW: int = 3,
    SD: int = 1,
    SH: int = 1,
    SW: int = 1,
    PD: int = 0,
    PH: int = 0,
    PW: int = 0,
    LD: int = 1,
    LH: int = 1,
    LW: int = 1,
    BH: int = 4,
    BW: int = 32,
    DT: str = "f32",
    FLIP: bool = False,
    PDE: int | None = None,
    PHE: int | None = None,
    PWE: int | None = None,
):
    """COLS[(c, kd, kh, kw), n, od, oh, ow] = X[n, c, od*SD - PD + kd*LD, oh*SH - PH + kh*LH, ow*SW - PW + kw*LW]
    (0 where that is padding): the column matrix (C * KD * KH * KW, N * OD * OH * OW) of the convolution with
    kernel (KD, KH, KW), stride (SD, SH, SW), padding (PD, PH, PW) and dilation (LD, LH, LW); PDE, PHE, PWE: the
    padding at the end of each dimension where it differs from the start's (negative: the input's last elements are
    never read; a transposed convolution's upsampled input has zeros past its extent). One (BH, BW) tile of
    output rows and columns of one image per block; for each channel and output depth the block stages the input
    span the tile's windows read (phase-major: each window offset is one contiguous slice of a view) and stores
    one tile of the column matrix per window offset. FLIP: the window's offsets in reverse order (row
    (c, KD-1-kd, KH-1-kh, KW-1-kw)): a transposed convolution of stride 1 is this gather's product with its weight
    flipped."""
    T.assume(
        " and ".join(
            output_size(n, o, k, s, p, d, e)
            for n, o, k, s, p, d, e in (
                ("D", "OD", KD, SD, PD, LD, PDE),
                ("H", "OH", KH, SH, PH, LH, PHE),
                ("W", "OW", KW, SW, PW, LW, PWE),
            )
        )
    )
    depth = (KD - 1) * LD + 1  # input planes one output depth's windows read
    QH, QW = BH + (KH - 1) * LH // SH, BW + (KW - 1) * LW // SW
    # a span row is a whole number of 32-element runs (QW rounded up; the extra columns are read, never used): the
    # staging copy's threads then share rows (32 or more per row) and read them coalesced, where a row of an odd
    # width would give each thread a row of its own
    QW = -(-QW // (32 // math.gcd(32, SW))) * (32 // math.gcd(32, SW))
    ROWS, COLUMNS = SH * QH, SW * QW
    CHUNK = max(1, THREADS * COPY_ELEMENTS // COLUMNS)  # span rows per staging copy: a few elements per thread
    # the span of one output depth: `depth` planes (the first dimension, so that a window offset's plane is a
    # stage index, not an unrolled site), each stored phase-major
    phase_major = Layout((depth, 1, 1, (SH, QH), (SW, QW)), (ROWS * COLUMNS, 0, 0, (QH * COLUMNS, COLUMNS), (QW, 1)))
    by_offset = Layout((depth, 1, 1, (QH, SH), (QW, SW)), (ROWS * COLUMNS, 0, 0, (COLUMNS, QH * COLUMNS), (1, QW)))
    itemsize, dtype = ITEMSIZE[DT], DTYPES[DT]
    with T.grid(T.cdiv(OW, BW), T.cdiv(OH, BH), N, threads=THREADS) as (bw, bh, n):
        sx = T.alloc_shared((depth, 1, 1, ROWS, COLUMNS), dtype, layout=phase_major)
        span = sx.view(by_offset)  # element (r * QH + q) of a row is span row q * stride + r
        v = T.alloc_fragment((1, 1, BH, BW), dtype, vector_bytes=itemsize)  # one output position per thread
        for c in T.serial(C):
            for od in T.serial(OD):
                for z in range(depth):  # the span, a few rows per copy (padding and past the end read 0)
                    for r in range(0, ROWS, CHUNK):
                        rows = min(CHUNK, ROWS - r)
                        T.copy(
                            X.window(
                                (n, c, od * SD - PD + z, bh * (BH * SH) - PH + r, bw * (BW * SW) - PW),
                                (1, 1, 1, rows, COLUMNS),
                            ),
                            sx.window((z, 0, 0, r, 0), (1, 1, 1, rows, COLUMNS)),
                            pad=0.0,
                        )
                T.barrier()
                # the window offsets: the plane a loop (one store site per (kh, kw), so that the verifier's
                # pairwise checks grow with KH * KW, not with the whole window), rows and columns unrolled
                for plane in T.serial(KD) if KD > 1 else range(1):  # the column matrix's plane of the window
                    # the window offset's plane; flipped, the loop runs over the stored plane and reads the flipped
                    # one (written before the coverage check took origins that fall as the loop rises)
                    kd = KD - 1 - plane if FLIP else plane
                    for kh in range(KH):
                        for kw in range(KW):
                            rh, rw = kh * LH, kw * LW  # the offset's distance from the window's start
                            origin = (0, 0, (rh % SH) * QH + rh // SH, (rw % SW) * QW + rw // SW)
                            T.copy(span[kd * LD].window(origin, (1, 1, BH, BW)), v)
                            offset = (KH - 1 - kh) * KW + KW - 1 - kw if FLIP else kh * KW + kw
                            T.copy(v, COLS.tile((c, plane, offset, n, od, bh, bw), (None, None, None, 1, 1, BH, BW)))
                T.barrier()  # every thread is done with sx before the next span overwrites it


@T.macro
def _output_pass(Y: Any, OUT: Any, bias: Any, BF: int, BP: int, DT: str) -> None:
    filters, images, positions = Y.shape  # the shape symbols F, N, P
    with T.grid(T.cdiv(positions, BP), T.cdiv(filters, BF), images, threads=THREADS) as (bp, bf, n):
        y = T.alloc_fragment((BF, BP), T.f32, vector_bytes=4)
        T.copy(Y.tile((bf, n, bp), (BF, None, BP)), y)
        if bias is not None:
            b = T.alloc_reduced(y, axis=1)  # (BF,): one value per output channel, held by its row's threads
            T.copy(bias.tile(bf, BF), b)
            y = y + b[:, None]
        T.copy(y if DT == "f32" else T.cast(y, DTYPES[DT]), OUT.tile((n, bf, bp), (None, BF, BP)))


@argus.kernel(policies={"tile_shape": ("BF", "BP")})
def conv_output(
    Y: T.Tensor[("F", "N", "P"), T.f32],
    OUT: T.Tensor[("N", "F", "P"), "DT"],
    BF: int = 4,
    BP: int = 128,
    DT: str = "f32",
):
    """OUT[n, f, p] = Y[f, n, p]: the product (F, N * P) of the convolution's GEMM as its NCHW output (P the
    output positions of one image), one (BF, BP) tile of one image per block, rounded once to DT."""
    _output_pass(Y, OUT, None, BF, BP, DT)


@argus.kernel(policies={"tile_shape": ("BF", "BP")})
def conv_output_bias(
    Y: T.Tensor[("F", "N", "P"), T.f32],
    BIAS: T.Tensor[("F",), "DT"],
    OUT: T.Tensor[("N", "F", "P"), "DT"],
    BF: int = 4,
    BP: int = 128,
    DT: str = "f32",
):
    """OUT[n, f, p] = Y[f, n, p] + BIAS[f]: `conv_output` with the convolution's bias added in f32."""
    _output_pass(Y, OUT, BIAS, BF, BP, DT)


@argus.kernel(policies={"tile_shape": ("BF", "BK")})
def conv_transpose_weight(
    W: T.Tensor[("G", "CG", "FG", "KV"), "DT"],
    A: T.Tensor[("G", "FG", "CG", "KV"), "DT"],
    BF: int = 4,
    BK: int = 32,
    DT: str = "f32",
):
    """A[g, f, c, k] = W[g, c, f, k]: a transposed convolution's weight (C, F/g, window), per group (C/g, F/g,
    window), as the GEMM's (F/g, K) operand, K = (c, window). One (BF, BK) tile of one (group, channel) per block,
    the window's elements in BK-wide steps (contiguous on both sides)."""
    with T.grid(T.cdiv(FG, BF), CG, G, threads=THREADS) as (bf, c, g):
        w = T.alloc_fragment((BF, BK), DTYPES[DT], vector_bytes=ITEMSIZE[DT])
        for k in T.serial(T.cdiv(KV, BK)):
            T.copy(W.tile((g, c, bf, k), (None, None, BF, BK)), w)
            T.copy(w, A.tile((g, bf, c, k), (None, BF, None, BK)))


@argus.kernel(policies={"tile_shape": ("QH", "QW")})
def conv_upsample(
    X: T.Tensor[("M", "D", 1, "H", 1, "W", 1), "DT"],
    XU: T.Tensor[lambda SD, SH, SW: ("M", "DD", SD, "HH", SH, "WW", SW), "DT"],
    SD: int = 1,
    SH: int = 1,
    SW: int = 1,
    QH: int = 4,
    QW: int = 32,
    DT: str = "f32",
):
    """XU[m, d, 0, h, 0, w, 0] = X[m, d, 0, h, 0, w, 0] and zero elsewhere: viewed as (M, DD * SD, HH * SH, WW * SW),
    XU is the input (M, D, H, W) with SD - 1, SH - 1, SW - 1 zeros inserted after each plane, row and element (and
    whole zero planes, rows and columns past D, H, W up to DD, HH, WW): the input of a transposed convolution of
    stride (SD, SH, SW), which a stride-1 (flipped) convolution then reads. The phases are dimensions of their own,
    so that every tile origin is a block or loop index times a power of two or one (the verifier's exactly-once
    queries stay linear in them).

    One (QH, QW) tile of input rows and columns of one m per block, for each plane d: the tile of XU it lands in,
    (SD, QH, SH, QW, SW) with every phase, is staged in shared memory, zeroed once, the input written into its
    phase (0, 0, 0), and stored whole."""
    T.assume("DD >= D and HH >= H and WW >= W")
    dtype = DTYPES[DT]
    shape = (1, 1, SD, QH, SH, QW, SW)
    with T.grid(T.cdiv(WW, QW), T.cdiv(HH, QH), M, threads=THREADS) as (bw, bh, m):
        s = T.alloc_shared(shape, dtype)
        v = T.alloc_fragment(shape, dtype, vector_bytes=ITEMSIZE[DT])
        T.fill(s, 0.0)  # the phases other than (0, 0, 0) stay zero
        T.barrier()
        for d in T.serial(DD):  # past D (and H, W) the input reads as zeros
            src = X.window((m, d, 0, bh * QH, 0, bw * QW, 0), (1, 1, 1, QH, 1, QW, 1))
            T.copy(src, s.window((0, 0, 0, 0, 0, 0, 0), (1, 1, 1, QH, 1, QW, 1)), pad=0.0)
            T.barrier()
            T.copy(s, v)
            T.copy(v, XU.tile((m, d, 0, bh, 0, bw, 0), shape))
            T.barrier()  # every thread has read s before the next plane overwrites its phase (0, 0, 0)


def depthwise_span(
    KD: int, KH: int, KW: int, SH: int, SW: int, LD: int, LH: int, LW: int, PW: int, BH: int, BW: int, DT: str
) -> tuple[int, int, int, int]:  # noqa: N803 - the kernel's parameter names
    """(input planes, row phases QH, column phases QW, ALIGN) of the span `conv_depthwise` stages for a (BH, BW)
    tile of outputs: SH * QH rows and SW * QW columns per plane. The span starts ALIGN - PW columns before the
    padding's start, so that its first column is a whole 16-byte vector of the row (a staging copy of aligned rows
    then moves vectors, not single elements); QW is rounded up so that a row is whole 32-element runs (`im2col`)."""
    vector = 16 // ITEMSIZE[DT]
    align = -(-PW // vector) * vector
    run = 32 // math.gcd(32, SW)
    qw = BW + ((KW - 1) * LW + align - PW) // SW
    return (KD - 1) * LD + 1, BH + (KH - 1) * LH // SH, -(-qw // run) * run, align


def _depthwise_bias_shape(BIAS: bool, CB: int, MULT: int) -> tuple[Any, ...]:  # noqa: N803 - the parameters
    """The depthwise kernel's bias: one value per output channel as (CG, CB, MULT), or a one-element placeholder."""
    return ("CG", CB, MULT) if BIAS else (1,)


@argus.kernel(policies={"tile_shape": ("CB", "BH", "BW")})
def conv_depthwise(
    X: T.Tensor[lambda CB: ("N", "CG", CB, "D", "H", "W"), "DT"],
    WT: T.Tensor[lambda CB, MULT, KD, KH, KW: ("CG", CB, MULT, KD * KH * KW), "DT"],
    B: T.Tensor[_depthwise_bias_shape, "DT"],
    OUT: T.Tensor[lambda CB, MULT: ("N", "CG", CB, MULT, "OD", "OH", "OW"), "DT"],
    KD: int = 1,
    KH: int = 3,
    KW: int = 3,
    SD: int = 1,
    SH: int = 1,
    SW: int = 1,
    PD: int = 0,
    PH: int = 0,
    PW: int = 0,
    LD: int = 1,
    LH: int = 1,
    LW: int = 1,
    MULT: int = 1,
    CB: int = 4,
    BH: int = 8,
    BW: int = 32,
    BIAS: bool = False,
    DT: str = "f32",
):
    """OUT[n, c, m, od, oh, ow] = sum over (kd, kh, kw) of X[n, c, od*SD - PD + kd*LD, oh*SH - PH + kh*LH,
    ow*SW - PW + kw*LW] * WT[c, m, (kd, kh, kw)] (+ B[c, m] with BIAS), 0 where the window reads padding: a
    depthwise convolution (groups = channels, MULT output channels per input channel; output channel c * MULT + m),
    computed directly on the CUDA cores in f32, with no column matrix. The channels are viewed as (CG, CB): a block
    takes CB channels of one image and BH output rows (a row tile of the grid), and walks the output's columns BW
    at a time. For each column tile and output depth it stages the input span those outputs read, CB channels
    deep, in shared memory (padding and past the input's end read 0), its rows stored phase-major as `im2col`
    stores them and its columns as they are, so that every window offset of every output row is one (CB, BW) slice
    of a view (every SW-th element with a column stride); each thread then accumulates one output of each
    (channel, column) with one shared load and one FMA per window offset, the offset's weights held in registers
    (one per channel of the block)."""
    T.assume(
        " and ".join(
            output_size(n, o, k, s, p, d)
            for n, o, k, s, p, d in (
                ("D", "OD", KD, SD, PD, LD),
                ("H", "OH", KH, SH, PH, LH),
                ("W", "OW", KW, SW, PW, LW),
            )
        )
    )
    depth, QH, QW, ALIGN = depthwise_span(KD, KH, KW, SH, SW, LD, LH, LW, PW, BH, BW, DT)
    ROWS, COLUMNS = SH * QH, SW * QW
    CHUNK = max(1, THREADS * COPY_ELEMENTS // (CB * COLUMNS))  # span rows per staging copy
    # the span (CB, depth * ROWS, COLUMNS) in natural coordinates, stored with the (plane, row) pair first, rows
    # phase-major (row q * SH + r of plane z at [z][r][q]) and columns as they are, so that the staging copy moves
    # whole contiguous runs (phase-major columns scattered every element of a strided row, one 2- or 4-byte store
    # each: 0.52x cuDNN at stride 2)
    plane = CB * COLUMNS
    stored = Layout((CB, (SH, QH, depth), (SW, QW)), (COLUMNS, (QH * plane, plane, ROWS * plane), (1, SW)))
    # the same memory with (row, phase, plane) as one leading index, a stage: stage (z * SH + r) * QH + q is input
    # row q * SH + r of plane z, and its (CB, COLUMNS) tile holds column q * SW + r at r * QW + q (a window of a
    # tap's BW columns reads every SW-th element)
    by_offset = Layout(((QH, SH, depth), CB, (QW, SW)), ((plane, QH * plane, ROWS * plane), COLUMNS, (SW, 1)))
    taps = KD * KH * KW
    dtype = DTYPES[DT]
    with T.grid(CG, T.cdiv(OH, BH), N, threads=THREADS) as (cg, bh, n):
        sx = T.alloc_shared((CB, depth * ROWS, COLUMNS), dtype, layout=stored)
        span = sx.view(by_offset)
        acc = T.alloc_fragment((CB, BW), T.f32, vector_bytes=4)  # one output per thread: (channel, column)
        v = T.alloc_fragment((CB, BW), T.f32, vector_bytes=4)  # one offset's inputs, widened to f32 as they load

        def weights(m: Any) -> tuple[list[Any], Any]:
            """Output channel m's weight of each window offset and its bias, one value per channel, in f32."""
            w = [T.alloc_reduced(acc, axis=1) for _ in range(taps)]
            for t in range(taps):
                T.copy(WT.window((cg, 0, m, t), (None, CB, None, None)), w[t])
            b = None
            if BIAS:
                b = T.alloc_reduced(acc, axis=1)
                T.copy(B.window((cg, 0, m), (None, CB, None)), b)
                # invariant: the bias of row c is output channel (cg * CB + c, m)'s
                T.assert_tag(lambda x: (x[0] == cg) & (x[1] == x.coord[0]) & (x[2] == m), b)
            return w, b

        if MULT == 1:  # one output channel per input channel: its weights are loaded once
            w, b = weights(0)
        for bw in T.serial(T.cdiv(OW, BW)):
            for od in T.serial(OD):
                for z in range(depth):  # the span, a few rows per copy
                    for r in range(0, ROWS, CHUNK):
                        rows = min(CHUNK, ROWS - r)
                        T.copy(
                            X.window(
                                (n, cg, 0, od * SD - PD + z, bh * (BH * SH) - PH + r, bw * (BW * SW) - ALIGN),
                                (None, None, CB, None, rows, COLUMNS),
                            ),
                            sx.window((0, z * ROWS + r, 0), (CB, rows, COLUMNS)),
                            pad=0.0,
                        )
                T.barrier()
                for m in T.serial(MULT) if MULT > 1 else range(1):  # the output channels of each input channel
                    if MULT > 1:
                        w, b = weights(m)
                    for o in T.serial(BH):  # the tile's output rows
                        T.fill(acc, 0.0)
                        if BIAS:
                            T.copy(acc + b[:, None], acc)
                        for kd in range(KD):
                            for kh in range(KH):
                                for kw in range(KW):
                                    # the offset's distance from the window's start (in the span: its column
                                    # from the span's first, ALIGN - PW columns before the window's)
                                    rh, rw = kh * LH, kw * LW + ALIGN - PW
                                    stage = o + (rh % SH) * QH + rh // SH + kd * LD * ROWS
                                    column = (rw % SW) * QW + rw // SW
                                    T.copy(span[stage].window((0, column), (CB, BW)), v)
                                    t = (kd * KH + kh) * KW + kw
                                    # invariant: element (c, j) of v is the input element offset (kd, kh, kw) of
                                    # output (n, cg * CB + c, od, bh * BH + o, bw * BW + j) reads, and it is
                                    # multiplied by that channel's (and output channel m's) weight of the offset
                                    T.assert_tag(
                                        lambda x, y: (
                                            (x[0] == n)
                                            & (x[1] == cg)
                                            & (x[2] == x.coord[0])
                                            & (x[3] == od * SD - PD + kd * LD)
                                            & (x[4] == (bh * BH + o) * SH - PH + kh * LH)
                                            & (x[5] == (bw * BW + x.coord[1]) * SW - PW + kw * LW)
                                            & (y[0] == cg)
                                            & (y[1] == x.coord[0])
                                            & (y[2] == m)
                                            & (y[3] == t)
                                        ),
                                        v,
                                        w[t][:, None],
                                    )
                                    T.copy(acc + v * w[t][:, None], acc)
                        T.copy(
                            acc if DT == "f32" else T.cast(acc, dtype),
                            OUT.window((n, cg, 0, m, od, bh * BH + o, bw * BW), (None, None, CB, None, None, None, BW)),
                        )
                T.barrier()  # every thread is done with sx before the next span overwrites it
