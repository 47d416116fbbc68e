"""An implicit-GEMM convolution whose tiles are runs of flattened output positions (N·OH·OW), the operand loaded by
TMA's im2col mode (`argus.lang` ``X.im2col``; `argus.atoms.tma`, "im2col mode"): one box of BM positions x BK
channels per K-step, whatever the image's width, so no tile computes positions past an image's edge (the implicit
kernel's BH x BW tiles compute 128 positions for 98 of a 14x14 image).

**Verified and planned** (since session 40: `argus.kernels.conv.implicit_config` takes it where `flat_refusal`
allows and the implicit tile would run one block per tile, docs/conv.md "Flattened-position tiles"): its tag
assertions prove (row m of the A stage holds the pixel its tap reads for output position p0 + m) and so does the
contraction-once check over its im2col windows (docs/verify.md); it is checked on the interpreter against the
convolution's definition (`tests/kernels/test_conv_im2col.py`) and timed by `benchmarks/conv_implicit_sweep.py
--flat`. `conv_im2col_split_fused` is its split form that sums the splits' slices in the same launch (a group barrier
per tile; docs/conv.md "Split-K in one launch").
"""

from __future__ import annotations

from typing import Any

import argus
import argus.lang as T
from argus.atoms.common import SMS, WARPGROUP_SIZE
from argus.kernels.conv_implicit import bias_shape, channel_operands, finished
from argus.kernels.epilogue import Epilogue
from argus.kernels.gemm import split_reducers, split_rows_sum
from argus.lang.errors import DSLError

#: The widest filter tile of a block that shares its SM with another (BLOCKS_PER_SM = 2): 64 x 192 compiled and ran,
#: 64 x 224 and 64 x 256 did not compile (session 66: ptxas asked for 138-154 registers a thread of the 128 two
#: blocks of 256 threads leave).
TWO_BLOCKS_MAX_BN = 192


def _workspace_shape(SPLITS: int = 2) -> tuple[Any, ...]:  # noqa: N803 - a kernel parameter
    """`conv_im2col_split_fused`'s f32 workspace (SPLITS, M, F): a slice of partial sums a split."""
    return (SPLITS, "M", "F")


def _output_shape(SPLITS: int = 1) -> tuple[Any, ...]:  # noqa: N803 - a kernel parameter
    """The output (M, F): the channels-last output viewed as positions x filters; split along K (SPLITS > 1), the f32
    workspace (SPLITS, M, F) of the partial sums, one slice a split (`conv_split_reduce`'s W)."""
    return (SPLITS, "M", "F") if SPLITS > 1 else ("M", "F")


@argus.kernel(policies={"tile_shape": ("BN", "BK"), "stages": "STAGES"})
def conv_im2col_gemm(
    X: T.Tensor[("N", "H", "W", "C"), "IN"],
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
    BN: int = 128,
    BK: int = 64,
    CB: int = 1,
    STAGES: int = 4,
    CONSUMERS: int = 2,
    SPLITS: int = 1,
    BIAS: bool = False,
    IN: str = "bf16",
    OUT: str = "bf16",
    EPILOGUE: Epilogue | None = None,
    BLOCKS: int = 0,
    BLOCKS_PER_SM: int = 1,
):
    """Y[p, f] = sum over (kh, kw, c) of X[n, oh*SH - PH + kh*LH, ow*SW - PW + kw*LW, c] * WT[0, f, kh*KW + kw, c]
    (+ B[f] with BIAS, then the fused EPILOGUE), p = (n * OH + oh) * OW + ow: a 2-d forward convolution, channels last
    (Y is the NHWC output viewed as (N*OH*OW, F)), the input's padding zero-filled by TMA. One block per (BM = 64 x
    CONSUMERS positions, BN filters) tile; a producer warpgroup loads, per K-step (tap, channel block of BK; CB blocks
    per tap), one im2col box of the tile's BM positions and one weight box; CONSUMERS warpgroups multiply with wgmma
    and store. B and EPILOGUE as in `argus.kernels.conv_implicit.conv_implicit_gemm` (per-output-channel rows).

    SPLITS > 1 splits the K loop (split-K) for convolutions of too few tiles to fill the GPU: the grid's third axis
    is the split, split s multiplies K-steps ``s * KS ... (s + 1) * KS - 1`` (KS = the K-steps / SPLITS, which must
    divide them), and Y is the f32 workspace (SPLITS, M, F) into whose slice s the tile's partial sum is stored,
    without the bias or the epilogue: `conv_split_reduce` sums the slices and applies them (or, in one launch,
    `conv_im2col_split_fused`).

    BLOCKS > 0 makes the kernel persistent: BLOCKS blocks walk the (position tile, filter tile) units, filter tiles
    fastest (consecutive units read the same input positions), block b units ``b, b + BLOCKS, ...``; one mbarrier
    pipeline runs on across a block's units, so the producer loads the next unit's first stages while the consumers
    store this one (short K loops, whose fill and store a block per tile would wait for). BLOCKS_PER_SM = 2 (one
    consumer warpgroup: 64 positions a tile) asks for two resident blocks per SM. Persistent blocks take whole K
    loops (SPLITS = 1)."""
    if SPLITS > 1 and (OUT != "f32" or BIAS or EPILOGUE is not None):
        raise DSLError(
            "DSL_BAD_PARAM",
            f"split-K (SPLITS = {SPLITS}) stores f32 partial sums: OUT='f32', no BIAS or EPILOGUE (conv_split_reduce "
            f"adds them), not OUT={OUT!r}, BIAS={BIAS}, EPILOGUE={EPILOGUE!r}",
        )
    window = {"KH": KH, "KW": KW, "SH": SH, "SW": SW, "PH": PH, "PW": PW, "LH": LH, "LW": LW}
    tile = {"BN": BN, "BK": BK, "CB": CB, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SPLITS": SPLITS}
    rest = {"BIAS": BIAS, "EPILOGUE": EPILOGUE, "BLOCKS": BLOCKS, "BLOCKS_PER_SM": BLOCKS_PER_SM}
    flat_conv(X, WT, B, Y, window | tile | rest)


@argus.kernel(policies={"tile_shape": ("BN", "BK"), "stages": "STAGES"})
def conv_im2col_split_fused(
    X: T.Tensor[("N", "H", "W", "C"), "IN"],
    WT: T.Tensor[("TX", "F", "TAPS", "C"), "IN"],
    B: T.Tensor[bias_shape, "OUT"],
    W: T.Tensor[_workspace_shape, T.f32],
    Y: T.Tensor[("M", "F"), "OUT"],
    CNT: T.Tensor[("NF",), T.i32],
    KH: int = 3,
    KW: int = 3,
    SH: int = 1,
    SW: int = 1,
    PH: int = 1,
    PW: int = 1,
    LH: int = 1,
    LW: int = 1,
    BN: int = 128,
    BK: int = 64,
    CB: int = 1,
    STAGES: int = 4,
    CONSUMERS: int = 2,
    SPLITS: int = 2,
    REDUCERS: int = 0,
    BIAS: bool = False,
    IN: str = "bf16",
    OUT: str = "bf16",
    EPILOGUE: Epilogue | None = None,
    WAVE: int = SMS,
):
    """Split-K in one launch: `conv_im2col_gemm`'s split blocks (a block per (position tile, filter tile, split))
    store their f32 partial sums into slice ``split`` of the workspace W (S, M, F), then the SPLITS blocks of each
    tile meet at a group barrier on counter ``CNT[bm * tiles_f + bf]`` (`T.group_barrier`, rank ``split``) and each
    of the first REDUCERS (0: SPLITS) sums BM / REDUCERS rows of the tile over every slice, adds the bias and applies
    the fused epilogue into Y (`argus.kernels.gemm.split_rows_sum`): no reduction kernel nor its launch, the slices
    read from L2 right after they are written. The blocks of a tile wait for each other, so every block must be
    resident at once: one wave (the launch is cooperative: the driver refuses a grid that cannot all be resident,
    `argus.kernels.conv.flat_fuse_refusal` plans it only where its blocks are at most the SMs). CNT holds zeros when
    first used and is left at the barriers' next generation, so a relaunch needs no reset. WAVE: the blocks that can
    be resident at once (the SMs; assumed, so a launch of more blocks is refused before it runs)."""
    reducers = REDUCERS or SPLITS
    if not isinstance(SPLITS, int) or SPLITS < 2 or not isinstance(reducers, int) or not 1 <= reducers <= SPLITS:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"conv_im2col_split_fused splits K at least two ways and sums each tile on 1 to SPLITS of its blocks "
            f"(SPLITS = {SPLITS!r}, REDUCERS = {REDUCERS!r})",
        )
    bm = 64 * CONSUMERS
    if split_reducers(bm, BN, reducers, WARPGROUP_SIZE * CONSUMERS) != reducers:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"conv_im2col_split_fused's REDUCERS blocks of a tile (SPLITS when 0) each sum BM / REDUCERS rows of it, "
            f"a whole 4-element vector a consumer thread: REDUCERS = {reducers} does not divide BM = {bm} into such "
            f"shares of BN = {BN} filters",
        )
    tiles = f"(M + {bm - 1}) // {bm} * ((F + {BN - 1}) // {BN})"
    # one wave: the blocks of a tile wait for each other (each factor bounded on its own too: the product of two
    # unbounded sizes could wrap around in the index width)
    T.assume(f"(M + {bm - 1}) // {bm} <= {WAVE} and (F + {BN - 1}) // {BN} <= {WAVE}")
    T.assume(f"{tiles} * {SPLITS} <= {WAVE}")
    T.assume(f"NF >= {tiles}")  # a counter per tile
    window = {"KH": KH, "KW": KW, "SH": SH, "SW": SW, "PH": PH, "PW": PW, "LH": LH, "LW": LW}
    tile = {"BN": BN, "BK": BK, "CB": CB, "STAGES": STAGES, "CONSUMERS": CONSUMERS, "SPLITS": SPLITS}
    rest = {"BIAS": BIAS, "EPILOGUE": EPILOGUE, "BLOCKS": 0, "BLOCKS_PER_SM": 1}
    flat_conv(X, WT, B, W, window | tile | rest, fused=(Y, CNT, reducers))


def flat_conv(X: Any, WT: Any, B: Any, Y: Any, p: dict[str, Any], fused: tuple[Any, Any, int] | None = None) -> None:  # noqa: N803
    """The body of `conv_im2col_gemm` (`p`: its parameters) and, with `fused` = (the output, the counters, the
    reducing blocks a tile), of `conv_im2col_split_fused`, whose Y here is the f32 workspace."""
    KH, KW, SH, SW, PH, PW, LH, LW = (p[k] for k in ("KH", "KW", "SH", "SW", "PH", "PW", "LH", "LW"))  # noqa: N806
    BN, BK, CB, STAGES, CONSUMERS, SPLITS = (p[k] for k in ("BN", "BK", "CB", "STAGES", "CONSUMERS", "SPLITS"))  # noqa: N806
    BIAS, EPILOGUE, BLOCKS, BLOCKS_PER_SM = p["BIAS"], p["EPILOGUE"], p["BLOCKS"], p["BLOCKS_PER_SM"]  # noqa: N806
    if CONSUMERS not in (1, 2):
        raise DSLError("DSL_BAD_PARAM", f"CONSUMERS must be 1 or 2 consumer warpgroups, not {CONSUMERS!r}")
    if not isinstance(SPLITS, int) or SPLITS < 1:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS must be a positive number of K splits, not {SPLITS!r}")
    if not isinstance(BLOCKS, int) or BLOCKS < 0 or (BLOCKS and SPLITS > 1):
        raise DSLError(
            "DSL_BAD_PARAM", f"BLOCKS = {BLOCKS!r}: 0 (a block per tile) or the persistent blocks, with SPLITS = 1"
        )
    if BLOCKS_PER_SM not in (1, 2) or (BLOCKS_PER_SM == 2 and CONSUMERS != 1):
        raise DSLError("DSL_BAD_PARAM", f"BLOCKS_PER_SM = {BLOCKS_PER_SM}: 1, or 2 with one consumer warpgroup")
    if BLOCKS_PER_SM == 2 and BN > TWO_BLOCKS_MAX_BN:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"BN = {BN} at two blocks an SM: at most {TWO_BLOCKS_MAX_BN} filters (two blocks leave 128 registers a "
            "thread; ptxas could not fit a 64 x 224 accumulator's wgmma in them)",
        )
    k_steps = KH * KW * CB
    if SPLITS > 1 and k_steps % SPLITS:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"split-K (SPLITS = {SPLITS}) multiplies an equal share of the {k_steps} K-steps a split: SPLITS must "
            "divide them",
        )
    channel_operands(EPILOGUE)
    N, H, W, C = X.shape  # noqa: N806 - the kernel's shape symbols
    M, F = Y.shape[-2:]  # noqa: N806
    OH = (H + (2 * PH - LH * (KH - 1) - 1)) // SH + 1  # noqa: N806
    OW = (W + (2 * PW - LW * (KW - 1) - 1)) // SW + 1  # noqa: N806
    T.assume(
        f"TX == 1 and TAPS == {KH * KW} and (C + {BK - 1}) // {BK} == {CB} and C % 8 == 0 and F % 8 == 0 and "
        f"M == N * ((H + {2 * PH} - {LH * (KH - 1) + 1}) // {SH} + 1) * "
        f"((W + {2 * PW} - {LW * (KW - 1) + 1}) // {SW} + 1)"
    )
    BM = 64 * CONSUMERS  # noqa: N806 - the GEMM's M tile
    k_split = k_steps // SPLITS  # the K-steps of one split

    box = {"lower": (-PH, -PW), "upper": (PH - (KH - 1) * LH, PW - (KW - 1) * LW), "strides": (SH, SW)}
    tiles_f = T.cdiv(F, BN)
    consumers = tuple(range(1, 1 + CONSUMERS))
    registers = 232 if BLOCKS_PER_SM == 1 else 216

    def step(k: Any, split: Any) -> tuple[Any, Any]:
        """(tap, channel block) of iteration k of a split's K loop: the tile's K-step ``k + split * k_split``."""
        kk = k + split * k_split if SPLITS > 1 else k
        return kk // CB, kk % CB

    def produce(p0: Any, bf: Any, split: Any, start: Any) -> None:
        """Load the K loop of the tile at position p0, filter tile bf (split `split`'s share) into the stages, the
        block's pipeline iterations ``start ...``."""
        n0, h0, w0 = X.im2col_pixel(p0, **box)  # where the tile's loads start: computed once (T.let), not per load
        with T.let(n0, "image") as ni, T.let(h0, "row") as hi, T.let(w0, "column") as wi:
            for k, s in T.pipeline(k_split, stages=STAGES, start=start):
                tap, cb = step(k, split)
                T.mbarrier_wait(empty[s], phase=((start + k) // STAGES + 1) % 2)  # the first pass finds them free
                T.mbarrier_arrive(full[s], expect_bytes=(BM + BN) * BK * X.dtype.itemsize)
                src = X.im2col(
                    p0,
                    cb * BK,
                    pixels=BM,
                    channels=BK,
                    offsets=((tap // KW) * LH, (tap % KW) * LW),
                    start=(ni, hi, wi),
                    **box,
                )
                T.copy(src, sA[s], atom="tma", mbarrier=full[s])
                T.copy(WT.window((0, bf * BN, tap, cb * BK), (None, BN, None, BK)), sB[s], atom="tma", mbarrier=full[s])

    def consume(acc: Any, p0: Any, bf: Any, split: Any, start: Any) -> None:
        """Multiply the tile's K loop from the stages into `acc`, the block's pipeline iterations ``start ...``."""
        for k, s in T.pipeline(k_split, stages=STAGES, start=start):
            tap, cb = step(k, split)
            T.mbarrier_wait(full[s], phase=((start + k) // STAGES) % 2)
            # invariant: row m of the A stage holds the input pixel that tap (kh, kw) reads for output position
            # p0 + m = (n, oh, ow) flattened, channel block cb (n by two divisions: a product of three sizes could
            # pass the verifier's 32-bit terms)
            T.assert_tag(
                lambda x: (
                    (x[0] == (p0 + x.coord[0]) // OW // OH)
                    & (x[1] == ((p0 + x.coord[0]) // OW) % OH * SH - PH + (tap // KW) * LH)
                    & (x[2] == (p0 + x.coord[0]) % OW * SW - PW + (tap % KW) * LW)
                    & (x[3] == cb * BK + x.coord[1])
                ),
                sA[s],
            )
            # invariant: the B stage holds filters bf * BN ... of tap, channel block cb
            T.assert_tag(
                lambda x: (x[0] == 0) & (x[1] == bf * BN + x.coord[0]) & (x[2] == tap) & (x[3] == cb * BK + x.coord[1]),
                sB[s],
            )
            T.gemm(sA[s], sB[s].T, acc)
            T.mbarrier_arrive(empty[s])

    def store(acc: Any, bm: Any, bf: Any, split: Any) -> None:
        if SPLITS > 1:
            T.copy(acc, Y.window((split, bm * BM, bf * BN), (None, BM, BN)))
            if fused is not None:  # the tile's SPLITS blocks meet, then the first `reducers` sum its rows
                out, counters, reducers = fused
                T.group_barrier(counters, bm * tiles_f + bf, split, SPLITS)
                rows = BM // reducers

                def finish(total: Any) -> Any:
                    return finished(total, B, bf, BN, BIAS, EPILOGUE)

                if reducers == SPLITS:
                    split_rows_sum(Y, out, bm * SPLITS + split, bf, SPLITS, rows, BN, finish)
                else:  # the others only arrive
                    with T.if_(split < reducers):
                        split_rows_sum(Y, out, bm * reducers + split, bf, SPLITS, rows, BN, finish)
        else:  # rounded as it is stored (a cast into a fragment of its own made ptxas serialize the K loop's wgmma)
            T.copy(finished(acc, B, bf, BN, BIAS, EPILOGUE), Y.tile((bm, bf), (BM, BN)))

    # persistent: BLOCKS blocks walk the units, filter tiles fastest; one pipeline across a block's units (iteration
    # it * k_split + k), so the producer loads the next unit while the consumers store this one
    units = T.cdiv(M, BM) * tiles_f
    extents = (BLOCKS,) if BLOCKS else (T.cdiv(M, BM), tiles_f, SPLITS)
    with T.grid(*extents, threads=WARPGROUP_SIZE * (1 + CONSUMERS), blocks_per_sm=BLOCKS_PER_SM) as coords:
        sA = T.alloc_shared((STAGES, BM, BK), X.dtype, swizzle=BK * X.dtype.itemsize)  # noqa: N806
        sB = T.alloc_shared((STAGES, BN, BK), X.dtype, swizzle=BK * X.dtype.itemsize)  # noqa: N806
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)

        def each(body: Any) -> None:
            """`body(bm, bf, split, start)` for the block's tile (a block per tile), or for each unit it walks."""
            if not BLOCKS:
                body(*coords, 0)
                return
            for it in T.serial(T.cdiv(units, BLOCKS)):
                u = coords[0] + it * BLOCKS
                with T.if_(u < units), T.let(u // tiles_f, "tile_m") as bm, T.let(u % tiles_f, "tile_f") as bf:
                    body(bm, bf, 0, it * k_split)

        def unit(bm: Any, bf: Any, split: Any, start: Any) -> None:
            T.fill(acc, 0.0)
            consume(acc, bm * BM, bf, split, start)
            store(acc, bm, bf, split)

        with T.role("producer", warpgroups=(0,), registers=40):
            each(lambda bm, bf, split, start: produce(bm * BM, bf, split, start))
        with T.role("consumer", warpgroups=consumers, registers=registers):
            acc = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, X.dtype))
            each(unit)


__all__ = ["TWO_BLOCKS_MAX_BN", "conv_im2col_gemm", "conv_im2col_split_fused", "flat_conv"]
