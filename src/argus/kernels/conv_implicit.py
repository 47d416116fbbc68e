"""Implicit-GEMM convolution on Hopper (issue #21): the column matrix is never written. A block computes one tile of
output positions (BH output rows by BW output columns of one image) by BN output channels; the K loop walks the
window's taps and the input's channel blocks, and the producer warpgroup TMA-loads each tap's input rows straight
from the channels-last input (one (BW, BK) box per output row of the tile, the padding zero-filled by TMA), the
weight's (BN, BK) block beside them. Kept apart from the planning code: this module holds DSL kernels only."""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import WARPGROUP_SIZE
from argus.atoms.swizzle import SWIZZLE_WIDTHS
from argus.kernels.conv_kernels import output_size
from argus.kernels.epilogue import Epilogue, applied
from argus.kernels.gemm import split_reduce
from argus.lang.errors import DSLError
from argus.layout import Layout


def bias_shape(BIAS: bool, EPILOGUE: Epilogue | None = None) -> tuple[Any, ...]:  # noqa: N803 - kernel parameters
    """The bias's shape: one value per output channel (a one-element placeholder without a bias); with a fused
    epilogue that has operands, (rows, F): the bias (with BIAS) then each operand, one row per output channel
    vector."""
    if EPILOGUE is not None and EPILOGUE.operands:
        return (int(BIAS) + len(EPILOGUE.operands), "F")
    return ("F",) if BIAS else (1,)


def _input_shape(SW: int, DEPTH: bool) -> tuple[Any, ...]:  # noqa: N803 - named after the kernel parameters
    """The input's view: (NX, H, WQ, CQ); with a column stride (NX, H, WQ, SW, CQ); 3-d (NX, D, H, WQ, CQ)."""
    if DEPTH:
        return ("NX", "D", "H", "WQ", "CQ")
    return ("NX", "H", "WQ", "CQ") if SW == 1 else ("NX", "H", "WQ", SW, "CQ")


def _reduce_bias_shape(BIAS: bool, EPILOGUE: Epilogue | None = None) -> tuple[Any, ...]:  # noqa: N803
    """`conv_split_reduce`'s B: `bias_shape`, its channels named N (the reduction's columns)."""
    return tuple("N" if d == "F" else d for d in bias_shape(BIAS, EPILOGUE))


def channel_row(acc: Any, B: Any, row: int, bf: Any, BN: int, rows: bool) -> Any:  # noqa: N803 - kernel names
    """Row `row` of B (the bias, or a fused epilogue's operand: `rows`, B is (rows, F); else B is the bias (F,)) for
    output channels ``bf * BN ...``, as f32 (1, BN) in the layout of `acc`'s columns."""
    b = T.alloc_reduced(acc, axis=0, dtype=B.dtype)
    if not rows:
        T.copy(B.tile(bf, BN), b)
        # invariant: column j of the tile is given output channel bf * BN + j's bias
        T.assert_tag(lambda x: x[0] == bf * BN + x.coord[0], b)
    else:
        T.copy(B.window((row, bf * BN), (None, BN)), b)
        # invariant: column j of the tile is given row `row`'s value of output channel bf * BN + j
        T.assert_tag(lambda x: (x[0] == row) & (x[1] == bf * BN + x.coord[0]), b)
    return T.cast(b, T.f32)[None, :]


def finished(acc: Any, B: Any, bf: Any, BN: int, BIAS: bool, EPILOGUE: Epilogue | None) -> Any:  # noqa: N803
    """The convolution's f32 value `acc` (its tile of output channels ``bf * BN ...``) with the bias added (BIAS)
    and the fused epilogue applied (its statements at trace time, over the tile and its operands, B's rows after
    the bias)."""
    rows = EPILOGUE is not None and bool(EPILOGUE.operands)
    value = acc + channel_row(acc, B, 0, bf, BN, rows) if BIAS else acc
    if EPILOGUE is not None:
        operands = {o.name: channel_row(acc, B, int(BIAS) + i, bf, BN, rows) for i, o in enumerate(EPILOGUE.operands)}
        value = applied(EPILOGUE, value, operands)
    return value


def channel_operands(EPILOGUE: Epilogue | None) -> None:  # noqa: N803 - a kernel parameter
    """Refuse a fused epilogue whose operands are not per-output-channel vectors (kind ``"columns"``): the
    convolution kernels carry them as rows of B (`channel_row`), for the unsplit kernel and the split-K
    reduction alike."""
    if EPILOGUE is not None and any(o.kind != "columns" for o in EPILOGUE.operands):
        kinds = sorted({o.kind for o in EPILOGUE.operands} - {"columns"})
        raise DSLError(
            "DSL_BAD_PARAM",
            f"a convolution's fused epilogue reads per-output-channel vectors (kind 'columns'), not {kinds}",
        )


def _output_shape(NCHW: bool, DEPTH: bool, SPLITS: int = 1) -> tuple[Any, ...]:  # noqa: N803 - kernel parameters
    """The output: channels last (N, OH, OW, F) or first (N, F, OH, OW), with OD after N (or F) when 3-d; split along
    K (SPLITS > 1), the f32 workspace (SPLITS, N, OH, OW, F) of the partial sums, one channels-last slice a split."""
    depth = ("OD",) if DEPTH else ()
    if SPLITS > 1:
        return (SPLITS, "N", *depth, "OH", "OW", "F")
    return ("N", "F", *depth, "OH", "OW") if NCHW else ("N", *depth, "OH", "OW", "F")


@argus.kernel(policies={"tile_shape": ("BH", "BW", "BN", "BK"), "stages": "STAGES"})
def conv_implicit_gemm(
    X: T.Tensor[_input_shape, "IN"],
    WT: T.Tensor[("TX", "F", "TAPS", "C"), "IN"],
    B: T.Tensor[bias_shape, "OUT"],
    Y: T.Tensor[_output_shape, "OUT"],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    SW: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    PHE: int | None = None,
    PWE: int | None = None,
    DEPTH: bool = False,
    KD: int = 1,
    SD: int = 1,
    PD: int = 0,
    LD: int = 1,
    PDE: int | None = None,
    BH: int = 2,
    BW: int = 64,
    BN: int = 128,
    BK: int = 64,
    STAGES: int = 4,
    CONSUMERS: int = 2,
    BLOCKS_PER_SM: int = 1,
    BLOCKS: int = 0,
    CB: int = 0,
    SPLITS: int = 1,
    BIAS: bool = False,
    IN: str = "bf16",
    OUT: str = "bf16",
    TERMS: int = 1,
    NCHW: bool = False,
    EPILOGUE: Epilogue | None = None,
):
    """Y[n, oh, ow, f] = sum over (kh, kw, c) of X[n, oh*SH - PH + kh*LH, ow*SW - PW + kw*LW, c] * W[f, kh, kw, c]
    (+ B[f] with BIAS), channels last, for a 2-d convolution with window (KH, KW), stride (SH, SW), padding (PH, PW)
    and dilation (LH, LW); a 1-d one is a 2-d one of height 1. PHE, PWE: the padding at the end of H and W where it
    differs from PH, PW (a stride phase of a transposed convolution; may be negative): only the output's extents
    depend on it, since every read past the input's end is TMA's zero fill.

    Operands: the input (N, H, W, C), and with a column stride SW > 1 its free view (N, H, W / SW, SW, C): input
    column ``q * SW + phase`` is element (q, phase, c) of a row, so that the columns one tap reads for consecutive
    output columns are consecutive in the view (W must be a multiple of SW); the phase is a dimension of its own,
    so that a box's channels past C are zeros and the tag's last coordinate is the channel, the contraction index
    the weight's tag has too (an earlier view packed (phase, channel) into one axis, and the verifier's MMA check
    rightly could not pair phase * C + c with c); the weight (F, C, KH, KW) as
    (1, F, KH * KW, C), channels last (TERMS of them: below); the output (N, OH, OW, F) in OUT, rounded once from
    the f32 accumulator (the bias, in OUT, added before).

    DEPTH: a 3-d convolution, window (KD, KH, KW), stride (SD, SH, SW), padding (PD, PH, PW), dilation (LD, LH, LW),
    PDE the padding at the end of D: the input is (NX, D, H, W, C) (a column stride of 1), the output (N, OD, OH,
    OW, F) or with NCHW (N, F, OD, OH, OW); a tile is BH x BW positions of one output depth plane od, its K loop walks
    the KD * KH * KW taps (depth slowest), and each row's box is the 5-d (1, 1, 1, BW, BK) at input plane od * SD -
    PD + kd * LD (TMA's zeros outside it, as for rows and columns). The work units walk the depth planes after the
    images.

    NCHW: the output is (N, F, OH, OW), channels first (PyTorch's default layout): the tile is stored in shared
    memory channel by channel (16 bytes apart: conflict-free for the accumulator's stores) and copied out one
    output row at a time, as rows of BW positions per channel. Where OW is not a multiple of the 16-byte vector,
    those stores fall back to narrower ones (the verifier's ALIGN_ASSUMPTION warning says for which sizes;
    declaring OW's alignment instead made the contraction proof of X undecidable within its budget).

    TERMS = 3 is an f32 convolution by split precision: X holds three bf16 planes of the input (NX = 3N: hi, hi, lo;
    image n's plane t at X's image 3n + t) and WT three of the weight ((TX, F, TAPS, C), TX = 3: hi, lo, hi), and the
    K loop runs over the three products x_hi w_hi + x_hi w_lo + x_lo w_hi (`argus.kernels.gemm.split_bf16x3` writes
    the planes, the input's batched by image). TERMS = 1: NX = N, TX = 1. Both indexings are linear in the plane
    (n * TERMS + term, and the plane its own axis of WT): with the planes at t * N + n and t * F + f (until session
    23) the products of a plane and a size made the contraction-once proofs of long K loops undecidable within the
    verifier's budget (a 3x5 f32 window on the 8x16 two-consumer tile, 3x3x3 in 3-d); now they verify in 11-13 s.

    The GEMM view: M = the BH x BW output positions of a tile (BM = BH * BW = 64 * CONSUMERS), N = BN output
    channels, K = KH * KW * C in steps of BK channels of one tap. K-step k is tap ``k // CB`` (CB = C / BK rounded
    up), channel block ``k % CB``; its A stage is BH TMA boxes, one per output row of the tile: (BW, BK) elements
    of the input row that row's tap reads, at the column where the tile's first output column's tap is. Row h of
    the tile lands at stage rows h * BW ... (BW a multiple of 8, so that each box starts on the swizzle's period:
    8 rows). BK is 128, 64 or 32 bytes of channels (64, 32 or 16 bf16 values), swizzled by as many bytes: a
    convolution of few channels (f32 with 8, its split planes padded to 8) takes the narrowest K step that
    holds them, so that its taps are not mostly zeros (`argus.kernels.conv.implicit_bk`). Input rows and columns
    outside the input (the padding) are out of the tensor's bounds and
    TMA fills them with zeros; channels past C likewise (their weights are zero-filled too). Output positions
    past OH or OW are computed from whatever the boxes hold and never stored.

    BLOCKS_PER_SM = 2 (one consumer warpgroup) asks for two resident blocks per SM, so that one block's epilogue and
    pipeline fill overlap the other's MMAs: 40 producer and 216 consumer registers per thread instead of 40 and 232,
    and the shared memory of half an SM.

    CB > 0 fixes the channel blocks per tap, C / BK rounded up, when the kernel is built (asserted at launch): the K
    loop is then one loop whose tap and channel block are divisions by constants, which the verifier's proofs
    handle more easily than quotients by a size.

    BLOCKS > 0 makes the kernel persistent: BLOCKS blocks walk the work units (output-channel tile fastest, then
    the spatial tiles, then the images), with one mbarrier pipeline across a block's units, so that the producer
    loads the next unit's first stages while the consumers store this one. BLOCKS = 0: one block per unit.

    SPLITS > 1 splits the K loop (split-K), for convolutions of too few tiles to fill the GPU (ResNet-50's 7x7 layers
    at batch 32: 128 tiles of 64 positions for 264 block slots): the grid's third axis walks (image, split) pairs,
    ``z = n * SPLITS + split`` (divisions by a constant), split s multiplies K-steps ``s * KS ... (s + 1) * KS - 1``
    (KS = the K-steps / SPLITS, which must divide them), and Y is the f32 workspace (SPLITS, N, OH, OW, F) (3-d:
    OD after N), into whose slice s the tile's partial sum is stored, without the bias or the epilogue:
    `conv_split_reduce` sums the slices and applies them. One block per tile (BLOCKS = 0), CB fixed, channels last.

    The epilogue goes through shared memory: the consumers store the tile (BM, BN), rounded, into one buffer and,
    after a barrier of the consumer warpgroups, copy it out one output row at a time (rows of BN channels,
    contiguous in the output).

    EPILOGUE: a fused epilogue (`argus.kernels.epilogue.Epilogue`) applied to the f32 tile (the convolution's value,
    its bias added) before it is rounded: its statements over ``acc`` and its operands, each a per-output-channel
    vector (kind ``"columns"``), which B then carries as rows after the bias ((rows, F), in OUT: `bias_shape`),
    each loaded for the tile's output channels with a tag assertion."""
    if not isinstance(CONSUMERS, int) or CONSUMERS not in (1, 2):
        raise DSLError("DSL_BAD_PARAM", f"CONSUMERS must be 1 or 2 consumer warpgroups, not {CONSUMERS!r}")
    if BH * BW != 64 * CONSUMERS or BW % 8:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"the tile's BH x BW = {BH} x {BW} output positions must be the consumers' {64 * CONSUMERS} rows, with BW "
            "a multiple of 8 (each row's box starts on the swizzle's period)",
        )
    if BLOCKS_PER_SM not in (1, 2) or (BLOCKS_PER_SM == 2 and CONSUMERS != 1):
        raise DSLError("DSL_BAD_PARAM", f"BLOCKS_PER_SM = {BLOCKS_PER_SM}: 1, or 2 with one consumer warpgroup")
    if TERMS not in (1, 3) or (TERMS == 3 and (IN != "bf16" or OUT != "f32")):
        raise DSLError("DSL_BAD_PARAM", f"TERMS = {TERMS}: 1, or 3 (split precision) with IN='bf16' and OUT='f32'")
    rows = sorted(w for w in SWIZZLE_WIDTHS if w)  # a K step's row of channels is one swizzle row
    if BK * X.dtype.itemsize not in rows:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"BK must be {', '.join(map(str, rows))} bytes of channels (a Hopper swizzle's row: "
            f"{', '.join(str(r // X.dtype.itemsize) for r in rows)} values), not {BK}",
        )
    if not isinstance(SPLITS, int) or SPLITS < 1:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS must be a positive number of K splits, not {SPLITS!r}")
    if SPLITS > 1 and (BLOCKS or not CB or OUT != "f32" or NCHW or BIAS or EPILOGUE is not None):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"split-K (SPLITS = {SPLITS}) stores f32 partial sums channels last, one block per tile, the channel "
            "blocks fixed: BLOCKS=0, CB > 0, OUT='f32', NCHW=False and no BIAS or EPILOGUE (conv_split_reduce adds "
            f"them to the sum), not BLOCKS={BLOCKS}, CB={CB}, OUT={OUT!r}, NCHW={NCHW}, BIAS={BIAS}, "
            f"EPILOGUE={EPILOGUE!r}",
        )
    if DEPTH and SW != 1:
        raise DSLError("DSL_BAD_PARAM", f"a 3-d convolution takes column stride 1 (the view would be 6-d), not {SW}")
    channel_operands(EPILOGUE)
    if not DEPTH and (KD, SD, PD, LD, PDE) != (1, 1, 0, 1, None):
        raise DSLError("DSL_BAD_PARAM", "KD, SD, PD, LD and PDE are a 3-d convolution's (DEPTH=True)")
    T.assume(
        f"TAPS == {KD * KH * KW} and NX == {TERMS} * N and TX == {TERMS} and CQ == {1 if SW > 1 else SW} * C and "
        "C % 8 == 0 and "
        + (output_size("D", "OD", KD, SD, PD, LD, PDE) + " and " if DEPTH else "")
        + ("" if NCHW else f"F % {16 // Y.dtype.itemsize} == 0 and ")
        + output_size("H", "OH", KH, SH, PH, LH, PHE)
        + " and "
        + output_size(f"WQ * {SW}", "OW", KW, SW, PW, LW, PWE)
    )
    PWU = -(-PW // SW)  # the padding in whole view columns, rounded up: keeps the tap's column offsets non-negative
    threads = WARPGROUP_SIZE * (1 + CONSUMERS)
    BM = BH * BW  # noqa: N806 - the GEMM's M tile
    tiles_w, tiles_h, tiles_f = T.cdiv(OW, BW), T.cdiv(OH, BH), T.cdiv(F, BN)
    planes = OD if DEPTH else 1  # output depth planes: a tile is BH x BW positions of one plane of one image
    if CB:  # the channel blocks per tap, fixed when the kernel is built: one K loop, its divisions by constants
        T.assume(f"(C + {BK - 1}) // {BK} == {CB}")
    else:
        CB = T.cdiv(C, BK)  # noqa: N806 - channel blocks per tap
    static_cb = isinstance(CB, int)
    k_tiles = TERMS * KD * KH * KW * CB
    if SPLITS > 1 and k_tiles % SPLITS:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS = {SPLITS} does not divide the {k_tiles} K-steps of a tile")
    k_split = k_tiles // SPLITS if static_cb else k_tiles  # the K-steps of one split
    consumers = tuple(range(1, 1 + CONSUMERS))

    def tap_of(tap: Any) -> tuple[Any, Any, Any, Any]:
        """(kd, kh, kw, u) of a tap (KD * KH * KW of them, depth slowest); u: the tap's input column relative to the
        output column times SW, plus PWU * SW (non-negative)."""
        kd, kh, kw = (tap // (KH * KW), (tap // KW) % KH, tap % KW) if DEPTH else (0, tap // KW, tap % KW)
        return kd, kh, kw, kw * LW + SW * PWU - PW

    def steps(start: Any, body: Any, split: Any = 0) -> None:
        """The tile's K loop over (term, tap, channel block), the block's pipeline iteration ``start + (term * KH *
        KW + tap) * CB + cb``. With CB fixed, one loop over the K-steps (term, tap and channel block are quotients
        and remainders by constants), split `split`'s share of them with SPLITS > 1; else the terms and taps, and in
        each the channel blocks, pipelined across them (the tap and the channel block are then loop variables, not
        quotients by the symbolic CB)."""
        taps = KD * KH * KW
        if static_cb:
            for k, s in T.pipeline(k_split, stages=STAGES, start=start):
                kk = k + split * k_split if SPLITS > 1 else k  # the tile's K-step
                term, r = (kk // (taps * CB), kk % (taps * CB)) if TERMS > 1 else (0, kk)
                body(term, r // CB, r % CB, s, start + k)
            return
        for term in T.serial(TERMS) if TERMS > 1 else range(1):
            for tap in T.serial(taps):
                first = start + (term * taps + tap) * CB
                for cb, s in T.pipeline(CB, stages=STAGES, start=first):
                    body(term, tap, cb, s, first + cb)

    def produce(tile: tuple, term: Any, tap: Any, cb: Any, s: Any, g: Any) -> None:
        """Load channel block cb of `tile` (bw, bh, bf, n, od, split)'s tap into stage s, the block's pipeline iteration
        g."""
        bw, bh, bf, n, od, _ = tile
        T.mbarrier_wait(empty[s], phase=(g // STAGES + 1) % 2)  # the first pass finds every stage free
        T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * X.dtype.itemsize)
        kd, kh, kw, u = tap_of(tap)
        q = bw * BW + u // SW - PWU  # the view column of the tile's first output column's tap
        for h in range(BH):
            ih = (bh * BH + h) * SH + kh * LH - PH
            if DEPTH:
                idp = od * SD + kd * LD - PD
                src = X.window((n * TERMS + term, idp, ih, q, cb * BK), (None, None, None, BW, BK))
            elif SW == 1:
                src = X.window((n * TERMS + term, ih, q, (u % SW) * C + cb * BK), (None, None, BW, BK))
            else:
                src = X.window((n * TERMS + term, ih, q, u % SW, cb * BK), (None, None, BW, None, BK))
            T.copy(
                src,
                sA[s].window((h * BW, 0), (BW, BK)),
                atom="tma",
                mbarrier=full[s],
            )
        T.copy(WT.window((term, bf * BN, tap, cb * BK), (None, BN, None, BK)), sB[s], atom="tma", mbarrier=full[s])

    def consume(tile: tuple, term: Any, tap: Any, cb: Any, s: Any, g: Any) -> None:
        """Multiply channel block cb of `tile`'s tap from stage s into the accumulator."""
        bw, bh, bf, n, od, _ = tile
        T.mbarrier_wait(full[s], phase=(g // STAGES) % 2)
        kd, kh, kw, u = tap_of(tap)

        # invariant: position row m of the A stage holds the input element tap (kd, kh, kw) reads for output
        # position (od, bh * BH + m // BW, bw * BW + m % BW), channel block cb (of plane term)
        def position(x: Any) -> Any:  # the image, row and column of position row m of the stage
            return (
                (x[0] == n * TERMS + term)
                & (x[1] == (bh * BH + x.coord[0] // BW) * SH + kh * LH - PH)
                & (x[2] == bw * BW + x.coord[0] % BW + u // SW - PWU)
            )

        if DEPTH:  # the depth plane, then as in 2-d one axis on
            T.assert_tag(
                lambda x: (
                    (x[0] == n * TERMS + term)
                    & (x[1] == od * SD + kd * LD - PD)
                    & (x[2] == (bh * BH + x.coord[0] // BW) * SH + kh * LH - PH)
                    & (x[3] == bw * BW + x.coord[0] % BW + u // SW - PWU)
                    & (x[4] == cb * BK + x.coord[1])
                ),
                sA[s],
            )
        elif SW == 1:
            T.assert_tag(lambda x: position(x) & (x[3] == (u % SW) * C + cb * BK + x.coord[1]), sA[s])
        else:  # the strided view: the tap's column phase, then the channel
            T.assert_tag(lambda x: position(x) & (x[3] == u % SW) & (x[4] == cb * BK + x.coord[1]), sA[s])
        # invariant: the B stage holds output channels bf * BN ... of tap (kh, kw), channel block cb (of plane term)
        T.assert_tag(
            lambda x: (x[0] == term) & (x[1] == bf * BN + x.coord[0]) & (x[2] == tap) & (x[3] == cb * BK + x.coord[1]),
            sB[s],
        )
        T.gemm(sA[s], sB[s].T, acc)
        T.mbarrier_arrive(empty[s])

    def store(tile: tuple) -> None:
        """The tile's epilogue: bias, rounding, through sC to the output one output row at a time (split-K: the
        partial sum, into the tile's slice of the workspace)."""
        bw, bh, bf, n, od, split = tile

        value = finished(acc, B, bf, BN, BIAS, EPILOGUE)
        if BLOCKS:
            T.barrier(1, WARPGROUP_SIZE * CONSUMERS)  # every consumer is done copying the previous tile out of sC
        T.copy(T.cast(value, Y.dtype), sC)
        T.barrier(1, WARPGROUP_SIZE * CONSUMERS)
        for h in range(BH):
            rows = sC.window((h * BW, 0), (BW, BN))
            if SPLITS > 1 and DEPTH:
                T.copy(rows, Y.window((split, n, od, bh * BH + h, bw * BW, bf * BN), (None,) * 4 + (BW, BN)))
            elif SPLITS > 1:
                T.copy(rows, Y.window((split, n, bh * BH + h, bw * BW, bf * BN), (None, None, None, BW, BN)))
            elif NCHW and DEPTH:
                T.copy(rows.T, Y.window((n, bf * BN, od, bh * BH + h, bw * BW), (None, BN, None, None, BW)))
            elif NCHW:
                T.copy(rows.T, Y.window((n, bf * BN, bh * BH + h, bw * BW), (None, BN, None, BW)))
            elif DEPTH:
                T.copy(rows, Y.window((n, od, bh * BH + h, bw * BW, bf * BN), (None, None, None, BW, BN)))
            else:
                T.copy(rows, Y.window((n, bh * BH + h, bw * BW, bf * BN), (None, None, BW, BN)))

    def unit_tile(u: Any) -> tuple:
        """Work unit u of the persistent grid as (bw, bh, bf, n, od, split): output-channel tiles fastest (consecutive
        units read the same input rows), then the spatial tiles, then the images (3-d: then the depth planes)."""
        bf, rest = u % tiles_f, u // tiles_f
        t, z = rest % (tiles_w * tiles_h), rest // (tiles_w * tiles_h)
        n, od = (z % N, z // N) if DEPTH else (z, 0)
        return t % tiles_w, t // tiles_w, bf, n, od, 0

    extents = (BLOCKS,) if BLOCKS else (tiles_w * tiles_h * planes, tiles_f, N * SPLITS)
    with T.grid(*extents, threads=threads, blocks_per_sm=BLOCKS_PER_SM) as blocks:
        swizzle = BK * X.dtype.itemsize  # a K step's row of channels is one swizzle row
        sA = T.alloc_shared((STAGES, BM, BK), X.dtype, swizzle=swizzle)  # (stages, positions, channels)
        sB = T.alloc_shared((STAGES, BN, BK), X.dtype, swizzle=swizzle)  # (stages, output channels, channels)
        if NCHW:  # stored channel by channel (positions contiguous, as the output rows are), SC_PAD values apart
            sC = T.alloc_shared((BM, BN), Y.dtype, layout=Layout((BM, BN), (1, BM + 16 // Y.dtype.itemsize)))
        elif Y.dtype.itemsize == 2:  # the rounded tile, on its way out: 128-byte-swizzled panels
            sC = T.alloc_shared((BM, BN), Y.dtype, swizzle=128, panels=True)
        else:  # f32: rows padded by 8 values, so that the accumulator's 8 rows per store land in distinct banks
            sC = T.alloc_shared((BM, BN), Y.dtype, layout=Layout((BM, BN), (BN + 8, 1)))
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)
        if not BLOCKS:
            t, bf, z = blocks
            n, split = (z // SPLITS, z % SPLITS) if SPLITS > 1 else (z, 0)  # z: (image, split), the split fastest
            if DEPTH:  # x walks the plane's tiles, then the depth planes
                plane, t = t // (tiles_w * tiles_h), t % (tiles_w * tiles_h)
                tile = (t % tiles_w, t // tiles_w, bf, n, plane, split)
            else:
                tile = (t % tiles_w, t // tiles_w, bf, n, 0, split)
            # the tile's coordinates bound once (T.let): the producer's K-step recomputed its quotients by the runtime
            # tile counts (157 SASS instructions a step on the 8x16 tile, 124 bound; 5-10 % faster, session 38)
            with T.let(tile[0], "tile_w") as tw, T.let(tile[1], "tile_h") as th:
                tile = (tw, th, *tile[2:])
                with T.role("producer", warpgroups=(0,), registers=40):
                    steps(0, lambda *step: produce(tile, *step), split)
                with T.role("consumer", warpgroups=consumers, registers=232 if BLOCKS_PER_SM == 1 else 216):
                    acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))
                    T.fill(acc, 0.0)
                    steps(0, lambda *step: consume(tile, *step), split)
                    store(tile)
            return
        # persistent: BLOCKS blocks walk the units; one mbarrier pipeline runs across a block's units (global
        # iteration g = it * k_tiles + k), so the producer loads the next unit while the consumers store this one
        bx = blocks[0]
        units = tiles_w * tiles_h * tiles_f * N * planes
        with T.role("producer", warpgroups=(0,), registers=40):
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = bx + it * BLOCKS
                with T.if_(u < units):
                    tile = unit_tile(u)
                    with T.let(tile[0], "tile_w") as tw, T.let(tile[1], "tile_h") as th, T.let(tile[3], "image") as ni:
                        tile = (tw, th, tile[2], ni, *tile[4:])
                        steps(it * k_tiles, lambda *step, tile=tile: produce(tile, *step))
        with T.role("consumer", warpgroups=consumers, registers=232 if BLOCKS_PER_SM == 1 else 216):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = bx + it * BLOCKS
                with T.if_(u < units):
                    tile = unit_tile(u)
                    T.fill(acc, 0.0)
                    steps(it * k_tiles, lambda *step, tile=tile: consume(tile, *step))
                    store(tile)


@argus.kernel(policies={"tile_shape": ("BN",)})
def conv_split_reduce(
    W: T.Tensor[("S", "M", "N"), T.f32],
    B: T.Tensor[_reduce_bias_shape, "OUT"],
    Y: T.Tensor[("M", "N"), "OUT"],
    SPLITS: int = 2,
    BN: int = 128,
    BIAS: bool = False,
    OUT: str = "bf16",
    EPILOGUE: Epilogue | None = None,
):
    """The second half of a split-K convolution (`conv_implicit_gemm` with SPLITS > 1): Y = the sum of the
    workspace's SPLITS slices, W (SPLITS, M, N) viewed with M = the output positions and N = the output channels,
    plus the bias (B as in `conv_implicit_gemm`), through the fused epilogue, rounded once to OUT: the channels-last
    output viewed (M, N). `argus.kernels.gemm.split_reduce`'s blocks: one row of BN channels each."""
    channel_operands(EPILOGUE)

    def finish(acc: Any, tile: tuple) -> Any:
        _, bf, _, _ = tile
        return finished(acc, B, bf, BN, BIAS, EPILOGUE)

    split_reduce(W, Y, SPLITS=SPLITS, BN=BN, epilogue=finish if BIAS or EPILOGUE is not None else None)


__all__ = ["bias_shape", "channel_operands", "channel_row", "conv_implicit_gemm", "conv_split_reduce", "finished"]
