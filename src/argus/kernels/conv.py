"""Forward convolution: the implicit-GEMM kernel where it applies, else an explicit im2col gather, argus's GEMM, and
an output pass.

`conv_plan` takes the implicit-GEMM kernel (`argus.kernels.conv_implicit.conv_implicit_gemm`: one launch, channels
last, no column matrix) for forward 1-d and 2-d bf16/f16/f32 convolutions without groups whose channel counts TMA
can address (`implicit_refusal` says why not; 3-d ones too where `IMPLICIT_3D` is set), and for the stride phases
of transposed ones (below), a pointwise one (1x1, stride 1, no padding or bias) as one GEMM of the library
(`is_pointwise`: on NCHW tensors a product per image, W (F, C) @ X[n] (C, H*W), batched over the images, which writes
NCHW with no layout change; on channels-last ones (N*H*W, C) @ (C, F)), and everything else as follows (the *gather
path*).

A convolution of an input X (N, C, D, H, W) with a weight (F, C/g, KD, KH, KW) (1-d and 2-d convolutions are the
3-d one with extents of one, as the pooling family reads them) is, per group, the product of the weight viewed as
a matrix (F/g, K), K = C/g * KD * KH * KW, and the *column matrix* (K, M) whose column m = (n, od, oh, ow) holds
the input window that output position reads, row k = (c, kd, kh, kw) the input element at offset (kd, kh, kw) of
that window in channel c (zero where the window reads padding). Three steps (`LibraryConv`):

1. `im2col` (a DSL kernel) writes the column matrix. A block takes one (BH, BW) tile of output rows and columns
   of one image; for each channel and output depth it stages the input span the tile's windows read into shared
   memory with one masked copy (the padding reads 0), stored *phase-major* (element ``q * s + r`` of a row at
   ``[r][q]``, as `argus.frontend.families.pooling` does), so that every window offset is one contiguous slice of
   a view; it then stores that slice as the tile of row (c, kd, kh, kw). Stores run along the output width, the
   column matrix's contiguous axis; no thread computes an address.
2. The GEMM library (`argus.kernels.matmul`): Y (F/g, M) = W (F/g, K) @ cols (K, M) for every group at once, the
   batched GEMM with ``batch = groups`` (one launch, however many groups: a depthwise convolution has as many
   groups as channels, and one GEMM per group would be that many launches). The weight as stored is K-major
   (``a_major="K"``), the column matrix N-major (``b_major="N"``); Y comes out in f32 (``out="f32"``), so that
   the bias is added before the one rounding to the output's dtype. f32 inputs run the library's split-precision
   passes. A batched f32 product with K over the library's accumulation chain (`F32_CHAIN`) is refused by the
   batched GEMM (it has no split-K): those convolutions run one GEMM per group instead.
3. `conv_output` / `conv_output_bias` (DSL kernels) write Y, which is (F, N, OD*OH*OW) for all groups together,
   as the NCHW output (N, F, OD, OH, OW), adding the bias per channel. Both sides are contiguous along the output
   positions, so loads and stores coalesce.

The product is written the transposed way round (the weight on the left, Y = (F, M) rather than (M, F)) so that
both the column matrix and Y are contiguous along the output positions, the axis the input and the output are
contiguous along: the gather and the output pass then move rows, never transpose tiles.

The column matrix is K x M elements, K times the output's positions: at KernelBench's sizes it reaches tens of
gigabytes. A call runs the batch in chunks of images whose column matrix fits `COLUMN_BUDGET` (the chunk is the
largest divisor of N that fits, so that every chunk is one problem with one plan); a convolution of which one
image's column matrix is over the budget is refused (`ConvError`, ``CONV_COLUMNS_OVER_BUDGET``); the implicit kernel
has no such budget, but does not take groups or 3-d convolutions yet (docs/conv.md).

A transposed convolution (``transposed=True``) without groups, 1-d or 2-d, runs as its *stride phases* on the
implicit kernel (`transposed_phases`, `ConvPlan.phases`): output position o = q * s + r of phase r reads input q +
(r + p - t * d) / s through each window offset t for which that is whole, so each phase is a forward convolution of
stride 1 over the input as it is, with only those offsets (every s / gcd(s, d)-th, flipped; dilation d / gcd(s, d))
and its own padding at each end (possibly negative: input rows it never reads); a phase no offset reaches is the
bias alone. One phase (stride 1) writes the output itself; several share the input's channels-last (for f32 split)
form and each writes a fresh NCHW tensor that is copied into its interleaved positions. No zeros are multiplied.

Other transposed convolutions (groups, 3-d, or a phase the implicit kernel refuses) take the gather path: of stride 1
it is the forward one with its window flipped and padding dilation * (kernel - 1) - padding:
`conv_transpose_weight` (DSL) first permutes its weight (C, F/g, window) to the GEMM's (F/g, C/g * window) per group,
and the gather runs with ``FLIP``. With a stride s (or an output padding), `conv_upsample` (DSL) first writes the
input with s - 1 zeros inserted between its elements along each dimension (and the output padding's zeros at the
end: extent (n - 1) * s + 1 + output_padding), and the same flipped gather of stride 1 reads that: correct for every
stride, but the GEMM multiplies the inserted zeros too (s^rank times the phases' work).

The DSL kernels live in `argus.kernels.conv_kernels` (a module of kernels only); this module plans and calls them.

A transposed convolution whose padding is past its window's reach, dilation * (kernel - 1), crops the full
output: its gather and its phases read the input with a negative padding (their first elements never read).

Refused (`ConvError`, each with a stable code): dtypes other than f32/f16/bf16, one image's column matrix over the
budget, a window whose staged span does not fit in shared memory, and shapes that
are not a convolution's. Padding modes other than zeros reach argus as explicit pads before a convolution.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any

from argus.atoms.common import MAX_GRID_Y, MAX_GRID_Z, SMS, shared_budget
from argus.atoms.swizzle import SWIZZLE_WIDTHS
from argus.atoms.target import DEFAULT_TARGET
from argus.atoms.tma import IM2COL_OFFSET_MAX, conv_im2col_box, diagnose_im2col
from argus.kernels.conv_im2col import conv_im2col_gemm, conv_im2col_split_fused
from argus.kernels.conv_implicit import conv_implicit_gemm, conv_split_reduce
from argus.kernels.conv_kernels import (
    ITEMSIZE,
    THREADS,
    conv_depthwise,
    conv_output,
    conv_output_bias,
    conv_transpose_weight,
    conv_upsample,
    depthwise_span,
    im2col,
)
from argus.kernels.epilogue import Epilogue
from argus.kernels.gemm import split_bf16x3, split_reducers
from argus.kernels.matmul import (
    HBM_EFFICIENCY,
    REDUCE_LAUNCH_S,
    GemmError,
    GemmProblem,
    LibraryGemm,
    device_sms,
    plan,
    shares_storage,
    split_vector,
)

#: The most bytes of column matrix one chunk of the batch may take (a call runs the batch in chunks that fit): 4 GiB,
#: and for f32 inputs 6 GiB more of its split bf16 parts; KernelBench's largest image (57, transposed) needs 2.3 GiB.
COLUMN_BUDGET = 4 << 30


class ConvError(ValueError):
    """A convolution this library cannot run; `code` is stable, the message says why and what to do."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.reason = message


def _triple(values: tuple[int, ...], fill: int) -> tuple[int, int, int]:
    full = (fill,) * (3 - len(values)) + tuple(values)
    return full[0], full[1], full[2]


def window_params(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> dict[str, int]:
    """A window's trace parameters as the convolution kernels name them: KD, KH, KW, SD, ..., LW (each (d, h, w))."""
    parts = (("K", kernel), ("S", stride), ("P", padding), ("L", dilation))
    return {f"{prefix}{axis}": v for prefix, values in parts for axis, v in zip("DHW", values, strict=True)}


@dataclass(frozen=True)
class Conv:
    """One forward convolution read as a 3-d one over (depth, height, width): a 1-d or 2-d convolution has
    extents of one (and no padding) in the leading spatial dimensions. `rank`: its own spatial dimensions (1, 2, 3).
    `size` is the input's (D, H, W), `out` the output's (OD, OH, OW); `kernel`, `stride`, `padding`, `dilation`
    are (d, h, w). `dtype`: the DSL dtype of input, weight, bias and output."""

    rank: int
    batch: int
    channels: int
    filters: int
    groups: int
    size: tuple[int, int, int]
    kernel: tuple[int, int, int]
    stride: tuple[int, int, int]
    padding: tuple[int, int, int]
    dilation: tuple[int, int, int]
    bias: bool
    dtype: str
    #: a transposed convolution (the gradient of a convolution's input): the weight is (C, F/g, KD, KH, KW)
    transposed: bool = False
    #: a transposed convolution's extra output extent at the end of each dimension, (d, h, w): each below its
    #: dimension's stride or dilation (as PyTorch requires)
    output_padding: tuple[int, int, int] = (0, 0, 0)
    #: a forward convolution's padding at the end of each dimension, (d, h, w) (None: `padding`); may be negative
    #: (the last input elements are never read). The stride-phase convolutions of a transposed one
    #: (`transposed_phases`) have it, and only they: with it, `padding` may be negative too (the first input
    #: elements are never read), which only the implicit kernel takes.
    padding_end: tuple[int, int, int] | None = None
    out: tuple[int, int, int] = field(init=False, default=(0, 0, 0))

    def __post_init__(self) -> None:
        if self.dtype not in ITEMSIZE:
            raise ConvError("CONV_DTYPE", f"{self.dtype} values: a convolution takes {', '.join(ITEMSIZE)}")
        if self.rank not in (1, 2, 3):
            raise ConvError("CONV_RANK", f"a {self.rank}-d convolution: 1-d, 2-d and 3-d are built")
        ints = (self.batch, self.channels, self.filters, self.groups, *self.size, *self.kernel, *self.stride)
        if min(ints) < 1 or min(self.dilation) < 1 or (min(self.padding) < 0 and self.padding_end is None):
            raise ConvError("CONV_SHAPE", f"extents, strides and dilations must be positive, padding >= 0: {self}")
        if self.channels % self.groups or self.filters % self.groups:
            raise ConvError(
                "CONV_SHAPE", f"{self.channels} channels and {self.filters} filters in {self.groups} groups"
            )
        ops = tuple(self.output_padding)
        if len(ops) != 3 or min(ops) < 0 or (any(ops) and not self.transposed):
            raise ConvError(
                "CONV_SHAPE", f"output padding {self.output_padding}: three extents >= 0, for a transposed convolution"
            )
        if self.padding_end is not None and (self.transposed or len(tuple(self.padding_end)) != 3):
            raise ConvError(
                "CONV_SHAPE", f"padding at the end {self.padding_end}: three extents, for a forward convolution"
            )
        if any(op >= max(s, d) for op, s, d in zip(ops, self.stride, self.dilation, strict=True)):
            raise ConvError(
                "CONV_SHAPE",
                f"output padding {self.output_padding} with stride {self.stride} and dilation {self.dilation}: each "
                "must be smaller than its dimension's stride or dilation",
            )
        out = tuple(
            (n + p + e - d * (k - 1) - 1) // s + 1
            for n, k, s, p, e, d in zip(
                self.gather_size, self.kernel, self.gather_stride, self.gather_padding, self.gather_padding_end,
                self.dilation, strict=True,
            )
        )  # fmt: skip
        if min(out) < 1:
            raise ConvError("CONV_SHAPE", f"the window is larger than the padded input: output extents {out}")
        object.__setattr__(self, "out", (out[0], out[1], out[2]))

    @property
    def upsampled(self) -> bool:
        """Whether the gather reads the input with zeros inserted (`conv_upsample`): a transposed convolution with a
        stride above 1 or an output padding."""
        return self.transposed and (max(self.stride) > 1 or any(self.output_padding))

    @property
    def upsample_extra(self) -> tuple[int, int, int]:
        """The whole input elements of zeros `conv_upsample` appends per dimension so that its output ends with the
        output padding: cdiv(1 + output_padding, stride) - 1 (0 unless the output padding reaches a stride)."""
        e = tuple(-(-(1 + op) // s) - 1 for op, s in zip(self.output_padding, self.stride, strict=True))
        return e[0], e[1], e[2]

    @property
    def gather_size(self) -> tuple[int, int, int]:
        """The (D, H, W) of the input the gather reads: the input's own, or for an upsampled transposed convolution
        (n + extra) * stride per dimension (`conv_upsample`'s output: each element followed by stride - 1 zeros);
        the zeros past (n - 1) * stride + 1 + output_padding are cut by `gather_padding_end`."""
        if not self.upsampled:
            return self.size
        u = tuple((n + e) * s for n, e, s in zip(self.size, self.upsample_extra, self.stride, strict=True))
        return u[0], u[1], u[2]

    @property
    def gather_stride(self) -> tuple[int, int, int]:
        """The stride of the forward convolution the gather computes: the convolution's own; 1 for a transposed one
        (its stride is in the zeros `conv_upsample` inserts)."""
        return (1, 1, 1) if self.transposed else self.stride

    @property
    def gather_padding(self) -> tuple[int, int, int]:
        """The padding of the forward convolution the gather computes: the convolution's own, or for a transposed
        convolution dilation * (kernel - 1) - padding, its window flipped (negative where the padding is past the
        window's reach: the output crops the full one, and the gather never reads its first elements)."""
        if not self.transposed:
            return self.padding
        p = tuple(d * (k - 1) - q for k, d, q in zip(self.kernel, self.dilation, self.padding, strict=True))
        return p[0], p[1], p[2]

    @property
    def gather_padding_end(self) -> tuple[int, int, int]:
        """The gather's padding at the end of each dimension: `gather_padding`, less (for an upsampled transposed
        convolution) the zeros `conv_upsample` writes past (n - 1) * stride + 1 + output_padding (possibly negative:
        those last elements are never read)."""
        if self.padding_end is not None:
            return (self.padding_end[0], self.padding_end[1], self.padding_end[2])
        if not self.upsampled:
            return self.gather_padding
        e = tuple(
            p - (u - ((n - 1) * s + 1 + op))
            for p, u, n, s, op in zip(
                self.gather_padding, self.gather_size, self.size, self.stride, self.output_padding, strict=True
            )
        )
        return e[0], e[1], e[2]

    @property
    def window(self) -> int:
        """Elements of one window per channel: KD * KH * KW."""
        return math.prod(self.kernel)

    @property
    def positions(self) -> int:
        """Output positions per image: OD * OH * OW."""
        return math.prod(self.out)

    @property
    def k(self) -> int:
        """The GEMM's K per group: C/g * KD * KH * KW."""
        return self.channels // self.groups * self.window

    def column_bytes(self, images: int | None = None) -> int:
        """Bytes of the column matrix of `images` images (default: the whole batch)."""
        n = self.batch if images is None else images
        return self.channels * self.window * n * self.positions * ITEMSIZE[self.dtype]

    def chunk(self, budget: int | None = None) -> int:
        """Images per chunk: the largest divisor of the batch whose column matrix fits `budget` (default
        `COLUMN_BUDGET`)."""
        budget = COLUMN_BUDGET if budget is None else budget
        if self.column_bytes(1) > budget:
            raise ConvError(
                "CONV_COLUMNS_OVER_BUDGET",
                f"one image's column matrix is {self.column_bytes(1)} bytes ({self.channels * self.window} x "
                f"{self.positions} elements), over the {budget} bytes of COLUMN_BUDGET: this convolution needs "
                "the implicit-GEMM kernel, which does not take this convolution: "
                f"{implicit_refusal(self) or 'it was not asked for'}",
            )
        return max(d for d in range(1, self.batch + 1) if self.batch % d == 0 and self.column_bytes(d) <= budget)

    def tile(self) -> tuple[int, int]:
        """The gather's default output tile (BH, BW), one element per thread: a row of THREADS for a 1-d
        convolution; else 32 columns (a warp's coalesced row) by THREADS / 32 rows, narrower (and taller) where
        the output is narrower than 32."""
        if self.out[1] == 1 and self.gather_size[1] == 1:
            return 1, THREADS
        bw = 32
        while bw > 4 and bw // 2 >= self.out[2]:
            bw //= 2
        return THREADS // bw, bw

    def span(self, bh: int, bw: int) -> tuple[int, int, int, int, int]:
        """(depth planes, rows, columns, row phases QH, column phases QW) of the input span one (bh, bw) tile of
        outputs reads for one output depth: rows = stride_h * QH, QH = bh + the window's reach in strides."""
        kd, kh, kw = self.kernel
        _, sh, sw = self.gather_stride
        dd, dh, dw = self.dilation
        qh = bh + (kh - 1) * dh // sh
        qw = bw + (kw - 1) * dw // sw
        qw = -(-qw // (32 // math.gcd(32, sw))) * (32 // math.gcd(32, sw))  # as `im2col` rounds it
        return (kd - 1) * dd + 1, sh * qh, sw * qw, qh, qw

    def gather_params(self) -> dict[str, Any]:
        """`im2col`'s trace parameters."""
        bh, bw = self.tile()
        params: dict[str, Any] = {"DT": self.dtype, "BH": bh, "BW": bw}
        if self.transposed:
            params["FLIP"] = True
        if self.gather_padding_end != self.gather_padding:
            params.update({f"P{axis}E": e for axis, e in zip("DHW", self.gather_padding_end, strict=True)})
        return params | window_params(self.kernel, self.gather_stride, self.gather_padding, self.dilation)

    def upsample_params(self) -> dict[str, Any]:
        """`conv_upsample`'s trace parameters: the strides, and an input tile (QH, QW) of 128 elements: a row of
        128 for a 1-d convolution, else 4 x 32."""
        qh, qw = (1, THREADS) if self.size[1] == 1 else (4, THREADS // 4)
        sd, sh, sw = self.stride
        return {"DT": self.dtype, "SD": sd, "SH": sh, "SW": sw, "QH": qh, "QW": qw}

    def upsample_shapes(self, images: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """`conv_upsample`'s X and XU shapes for `images` images: (M, D, 1, H, 1, W, 1) and (M, DD, SD, HH, SH, WW,
        SW), M = images * C, DD = D + extra (`upsample_extra`)."""
        m = images * self.channels
        (d, h, w), (sd, sh, sw) = self.size, self.stride
        ed, eh, ew = self.upsample_extra
        return (m, d, 1, h, 1, w, 1), (m, d + ed, sd, h + eh, sh, w + ew, sw)

    def output_params(self) -> dict[str, Any]:
        return {"DT": self.dtype}

    def weight_params(self) -> dict[str, Any]:
        """`conv_transpose_weight`'s trace parameters: a (BF, BK) tile of 128 elements, BK the window's elements
        rounded up to a power of two (at most 32)."""
        bk = 1
        while bk < min(self.window, 32):
            bk *= 2
        return {"DT": self.dtype, "BF": THREADS // bk, "BK": bk}


#: The implicit-GEMM kernel's widest K step: 128 bytes of channels (the 128-byte swizzle's row); convolutions of
#: fewer channels take a narrower one (`implicit_bk`).
IMPLICIT_BK = 64
#: A forward f32 convolution of this many channels or fewer (and a window of more than one tap) takes the gather
#: path: its K step of 16 channels is more than four times the channels it holds, and the gather, which packs the
#: window's taps, ran 2.2-5.7x faster on KernelBench's 3-channel 3-d convolutions (level 1's 54, 59, 60, 66, level
#: 2's 6, 23, 24, 27, 48); with 8 channels the implicit kernel ran 1.14-1.20x faster (level 2's 7, 8, 90), and the
#: stride phases of a transposed 3-channel one 1.83x (level 2's 96: the gather path upsamples). Session 24, call 3
#: of `benchmarks/results/2026-11-30-conv3d/`.
FEW_CHANNELS = 4
#: Whether 3-d convolutions take the implicit kernel's 3-d form (``DEPTH``; off: the gather path). On since it was
#: measured on an H200: 1.2-25x faster than the gather path on every KernelBench 3-d convolution that takes it
#: (`benchmarks/results/2026-11-30-conv3d/`).
IMPLICIT_3D = True
#: Whether a grouped transposed convolution of at most `GROUPED_PHASES_MAX_GROUPS` groups runs as its groups' stride
#: phases (`group_conv`, each group's phases on the implicit kernel) where the gather path could run it too. On
#: since measured on an H200 (session 25, `benchmarks/results/2026-11-30-conv-epilogue/` call 1): level 1's 72 (3-d,
#: 4 groups, 8 phases each) 19.2 -> 6.8 ms, 75 (2-d, 4 groups, 6 phases) 13.4 -> 5.0 ms against the gather path.
#: Where the gather path cannot run it (one image's column matrix over `COLUMN_BUDGET`) the groups' phases run
#: regardless of both.
GROUPED_PHASES = True
#: The most groups whose phases a grouped transposed convolution takes by choice: each group's phases are launches of
#: their own (groups x phases launches), so a convolution of many small groups stays on the gather path's one
#: batched GEMM. Measured only at 4 groups (above); 8 is a guess, not a measured crossover.
GROUPED_PHASES_MAX_GROUPS = 8
#: The most stages the implicit kernel pipelines.
IMPLICIT_MAX_STAGES = 4
#: Whether `implicit_config` splits the K loop where `implicit_splits` says to. On since measured on an H200
#: (`benchmarks/conv_implicit_sweep.py --splits --extra`, `benchmarks/results/2026-12-02-conv-split-moe-combine/`):
#: on each of the 12 rows of few tiles the model's split was the fastest of those timed (or within 3 %), e.g.
#: ResNet-50's 7x7 3x3 at batch 32 38.2 -> 28.6 us, at batch 8 37.9 -> 16.4 us; rows of many tiles stay unsplit.
IMPLICIT_SPLIT = True
#: The most ways the implicit kernel splits a tile's K loop (`implicit_splits`): 8 measured 1.1-1.2x faster than 4
#: on the 7x7 layers at batch 8 and 1 (4 and 32 tiles of 72 K-steps).
IMPLICIT_MAX_SPLITS = 8
#: The fewest K-steps a split of a tile multiplies: shorter shares would not hide their pipeline's fill. Six
#: measured faster than nine (ResNet-50's 14x14 3x3 of 256 channels at batch 1: 36 steps in 6 shares 13.0 us, in 4
#: shares 14.1; `benchmarks/results/2026-12-02-conv-split-moe-combine/conv_splits8.txt`).
IMPLICIT_SPLIT_MIN_STEPS = 6
#: A split is taken where `implicit_split_time` models it this much faster than unsplit.
IMPLICIT_SPLIT_GAIN = 1.15
#: Seconds of one K-step of a tile when the tiles are few (one or two blocks per SM): about twice the step's
#: tensor-core time, whatever the tile, and deeper pipelines did not shorten it (session 36's stage variants).
#: Measured on an H200 (`benchmarks/results/2026-12-02-conv-split-moe-combine/`): 0.50-0.58 us for 64-128
#: positions x 128 filters x 64 channels (ResNet-50's 7x7 layers: 72 steps in 38 us at batch 1, 8 and 32 alike;
#: 8 x 16 positions: 72 in 42 us; 4 x 16: two waves of 54 in 54 us).
IMPLICIT_STEP_S = 0.55e-6


@dataclass(frozen=True)
class ImplicitConfig:
    """The implicit-GEMM kernel's tile (`argus.kernels.conv_implicit`): BH output rows by BW output columns (BH * BW =
    64 * CONSUMERS positions) by BN output channels, STAGES-deep pipeline."""

    BH: int
    BW: int
    BN: int
    STAGES: int
    CONSUMERS: int
    #: persistent blocks (0: one block per work unit)
    BLOCKS: int = 0
    #: channels per K step (one tap's): 64, 32 or 16 (`implicit_bk`)
    BK: int = IMPLICIT_BK
    #: splits of the K loop (split-K, `implicit_splits`): each tile's K-steps in SPLITS shares, their f32 partial sums
    #: summed by `conv_split_reduce`, which adds the bias and applies the epilogue
    SPLITS: int = 1
    #: a tile of BH * BW consecutive flattened output positions (N·OH·OW) rather than BH rows of BW columns: the
    #: kernel `argus.kernels.conv_im2col.conv_im2col_gemm` (one TMA im2col box per K-step; `flat_refusal`), BH = 1
    FLAT: bool = False
    #: a split flattened tile whose splits sum their slices in the same launch (`conv_im2col_split_fused`: a group
    #: barrier per tile, no `conv_split_reduce`; `flat_fuse_refusal`); without a split of a flattened tile a block
    #: per tile there is nothing to sum, and it reads False
    FUSE: bool = False

    def __post_init__(self) -> None:
        if self.FUSE and not (self.FLAT and self.SPLITS > 1 and not self.BLOCKS):
            object.__setattr__(self, "FUSE", False)

    @property
    def blocks_per_sm(self) -> int:
        """Resident blocks per SM: two with one consumer warpgroup (its tile is half as large), else one."""
        return 2 if self.CONSUMERS == 1 else 1

    def label(self) -> str:
        tile = f"flat {self.BH * self.BW}x{self.BN}" if self.FLAT else f"{self.BH}x{self.BW}x{self.BN}"
        return (
            f"{tile} s{self.STAGES} c{self.CONSUMERS}"
            + (f" p{self.BLOCKS}" if self.BLOCKS else "")
            + (f" k{self.BK}" if self.BK != IMPLICIT_BK else "")
            + (f" split{self.SPLITS}" if self.SPLITS > 1 else "")
            + (" fused" if self.FUSE else "")
        )

    def reducers(self) -> int | None:
        """How many blocks of a fused split tile (`FUSE`) sum its slices (`conv_im2col_split_fused`'s REDUCERS): the
        most, at most SPLITS, that divide its BH * BW positions into shares of whole 4-element vectors for every
        consumer thread; None where no count does."""
        return split_reducers(self.BH * self.BW, self.BN, self.SPLITS, self.CONSUMERS * 128)


def implicit_channels(conv: Conv) -> int:
    """The channels the implicit kernel reads: the convolution's own, or for f32 its split planes', which the split
    pads with zeros to a multiple of 8 (TMA's 16-byte row strides)."""
    if conv.dtype != "f32":
        return conv.channels
    return -(-conv.channels // 8) * 8


def implicit_bk(conv: Conv) -> int:
    """The implicit kernel's K step for `conv`: the narrowest of 16, 32 and 64 channels (32, 64 or 128 bytes, each
    a Hopper swizzle's row) that holds its channels (`implicit_channels`), 64 from 64 channels on. A K step of 64
    channels over 8 would multiply 56 zeros in every tap; the narrow steps are as many (one per tap and channel
    block) and carry less."""
    channels = implicit_channels(conv)
    steps = sorted(w // 2 for w in SWIZZLE_WIDTHS if w)  # a swizzle row of 16-bit values (the split planes are bf16)
    return next((bk for bk in steps if channels <= bk), IMPLICIT_BK)


def implicit_bn(conv: Conv) -> int:
    """The implicit kernel's output-channel tile for `conv`: 128 over 64 filters, else for f32 outputs the narrowest
    of 16, 32 and 64 that holds them (level 2's 3-d convolutions of 16 filters would compute 48 zero columns on a
    tile of 64), for 16-bit ones 64 (their epilogue stages the tile in 128-byte-swizzled panels of 64 columns). The
    f32 tile of 16 reads its staged rows with a 2-way bank conflict (the verifier's PERF_BANK_CONFLICT warning; the
    epilogue's copy-out, small beside the K loop)."""
    if conv.filters > 64:
        return 128
    if conv.dtype != "f32":
        return 64
    return next(bn for bn in (16, 32, 64) if conv.filters <= bn)


def implicit_refusal(conv: Conv, *, phase: bool = False) -> str | None:
    """Why `conv` does not run on the implicit-GEMM kernel (None: it does; `phase`: `conv` is a stride phase of a
    transposed convolution, which `FEW_CHANNELS` does not send to the gather path). The kernel takes forward 1-d and 2-d
    convolutions without groups in bf16 or f16 (channels a multiple of 8: TMA's 16-byte strides) and in f32 (split
    precision: the split planes' channels are padded), filters whose output rows are whole 16-byte vectors, and an
    input width that is a multiple of the column stride (`conv_implicit_gemm`'s view of the input)."""
    _, sh, sw = conv.stride
    if conv.transposed:
        return "a transposed convolution"
    if conv.rank == 3 and not IMPLICIT_3D:
        return "a 3-d convolution (the kernel's 3-d form is switched off: argus.kernels.conv.IMPLICIT_3D)"
    if conv.rank == 3 and sw != 1:
        return f"a 3-d convolution with column stride {sw} (its view of the input would be 6-d)"
    if conv.groups != 1:
        return f"{conv.groups} groups"
    if conv.dtype not in ("bf16", "f16", "f32"):
        return f"{conv.dtype} values"
    if conv.dtype == "f32" and conv.batch > MAX_GRID_Z:
        return f"f32 with a batch of {conv.batch}: the input's split takes a grid plane an image, {MAX_GRID_Z} at most"
    if not phase and conv.dtype == "f32" and conv.channels <= FEW_CHANNELS and conv.window > 1:
        return (
            f"f32 with {conv.channels} channels: each tap's K step of 16 channels would be mostly padding, and the "
            "gather path, which packs the window's taps, ran faster"
        )
    if implicit_channels(conv) % 8:
        return f"{conv.channels} channels: a multiple of 8 is needed for {conv.dtype}"
    if conv.filters % (16 // ITEMSIZE[conv.dtype]):
        return f"{conv.filters} filters: a multiple of {16 // ITEMSIZE[conv.dtype]} is needed for {conv.dtype} outputs"
    if conv.size[2] % sw:
        return f"column stride {sw} with width {conv.size[2]}: the width must be a multiple of the stride"
    return None


def is_pointwise(conv: Conv) -> bool:
    """A 1x1 convolution of stride 1 without padding or bias, which is one GEMM of the channels-last input viewed as
    (N * H * W, C) by the weight (F, C): the GEMM library runs it (measured faster than the implicit kernel on such
    shapes, `benchmarks/results/2026-11-29-conv-implicit/`). With a bias the implicit kernel, which adds it in its
    epilogue, runs it."""
    return (
        conv.kernel == (1, 1, 1)
        and conv.stride == (1, 1, 1)
        and conv.padding == (0, 0, 0)
        and conv.padding_end is None
        and not conv.bias
    )


#: A pointwise convolution on NCHW tensors runs a product per image where each image has this many positions or
#: more (its product's N): measured faster than the channels-last product with its permutes at 3136 positions
#: (2.2-4.3x) and at 196 in bf16 (1.21x; 0.96x in f32), slower at 49 (0.87x): each image's product is one tile row
#: (`benchmarks/results/2026-11-29-conv-depthwise/`, call 5).
POINTWISE_PER_IMAGE_POSITIONS = 128


#: A K loop this short (K-steps per tile) runs persistent (`ImplicitConfig.BLOCKS`): each tile's pipeline fill and
#: epilogue are then hidden behind the next tile's loads; longer loops hide them themselves and ran slower
#: persistent (`benchmarks/results/2026-11-29-conv-implicit/`, run 4).
PERSISTENT_K_STEPS = 9


def implicit_config(conv: Conv, sms: int = SMS) -> ImplicitConfig:
    """The tile of `conv` on the implicit kernel. Of the (BH, BW) shapes with BW a multiple of 8, the one that
    computes the fewest positions past the output's edges (two consumer warpgroups before one, then wider rows:
    fewer boxes); BN and BK by `implicit_bn` and `implicit_bk`; as many stages as shared memory holds
    (`with_stages`). A K loop of at most `PERSISTENT_K_STEPS` steps runs persistent on `sms` SMs (not
    with column taps off a stride's phase 0, nor with channels that do not fill the K steps: those proofs did not
    complete, see below), and
    from 5 steps on with two consumer warpgroups where their tile wastes at most 20 % more (measured faster on
    ResNet-50's and KLineage's layers, run 4). With `IMPLICIT_SPLIT`, one block per tile splits its K loop where
    the tiles leave most of the GPU idle (`implicit_splits`). Where the flattened tile may run (`flat_refusal`), it
    is taken persistent where its tiles make more than one wave (`FLAT_PERSISTENT`), else where the implicit tile
    would run a block per tile or waste `FLAT_WASTE` (`FLAT_TILES`)."""
    _, oh, ow = conv.out
    best: dict[int, tuple[float, ImplicitConfig]] = {}
    for consumers in (2, 1):
        for bw in (128, 64, 32, 16, 8):
            bh = 64 * consumers // bw
            if bh < 1 or (conv.rank == 1 and bh != 1):
                continue
            waste = -(-ow // bw) * bw * (-(-oh // bh) * bh) / (oh * ow)
            if consumers not in best or waste < best[consumers][0] - 1e-9:
                best[consumers] = (waste, ImplicitConfig(bh, bw, 64, 1, consumers))
    # a tile of one consumer warpgroup counts as 5 % more work: half the MMAs per barrier round
    pick = best[1][1] if 1 in best and (2 not in best or best[1][0] * 1.05 < best[2][0] - 1e-9) else best[2][1]
    bk = implicit_bk(conv)
    k_steps = implicit_k_steps(conv, bk)
    if 4 < k_steps <= PERSISTENT_K_STEPS and 2 in best and best[2][0] <= 1.2 * best[pick.CONSUMERS][0]:
        pick = best[2][1]
    pick = replace(pick, BN=implicit_bn(conv), BK=bk)
    _, _, sw = conv.stride
    off_phase = any((kw * conv.dilation[2] - conv.padding[2]) % sw for kw in range(conv.kernel[2]))
    # channels that do not fill their K steps (24 in steps of 32, 40 in steps of 64): the persistent form's
    # contraction-once proof did not complete within the verifier's budget (`unknown` after 81-128 s), one block per
    # tile verifies in 6-12 s (session 24)
    fills = implicit_channels(conv) % bk == 0
    if k_steps <= PERSISTENT_K_STEPS and not off_phase and conv.rank != 3 and fills:
        # (3-d: the persistent form's contraction-once proof did not complete within the verifier's budget either)
        # with column taps off the stride's phase 0 the persistent form's contraction-once proof of X (through the
        # strided view) did not complete within the verifier's budget (level 1's 76: unknown); one block per tile
        # verifies in seconds. A strided 1x1 (a projection) reads phase 0 only, and its persistent form verifies
        pick = replace(pick, BLOCKS=sms * pick.blocks_per_sm)
    if FLAT_TILES and flat_refusal(conv) is None:
        flat = flat_config(conv, sms)
        if FLAT_PERSISTENT and flat.SPLITS == 1 and implicit_tiles(conv, flat) > sms:
            return replace(flat, BLOCKS=sms)  # more than a wave of flattened tiles: persistent (FLAT_PERSISTENT)
        if FLAT_FUSE_SPLITS and flat_fuse_refusal(conv, replace(flat, FUSE=True), sms) is None:
            flat = replace(flat, FUSE=True)  # split in one wave: the splits sum their slices in the same launch
        if not pick.BLOCKS or best[pick.CONSUMERS][0] >= FLAT_WASTE:
            return flat
    if IMPLICIT_SPLIT:
        pick = replace(pick, SPLITS=implicit_splits(conv, pick, sms))
    return with_stages(conv, pick)


#: Whether `implicit_config` takes a tile of flattened output positions (`ImplicitConfig.FLAT`) where `flat_refusal`
#: allows it and the implicit kernel's tile would run one block per tile (a K loop longer than `PERSISTENT_K_STEPS`),
#: or persistent but computing `FLAT_WASTE` positions per output position. Measured on an H200 (session 40,
#: `benchmarks/results/2026-12-02-flat-tiles/`, call 2, each row's implicit tile timed beside it): 1.08-1.25x the
#: implicit kernel on ResNet-50's 28x28, 14x14 and 7x7 layers (14x14 3x3 256: 1.13 against 0.93x cuDNN; split along
#: K at 7x7: 0.92 against 0.74x), 1.27x on an unwasteful 56x56 3x3 of 256 channels (its 8x8 tiles' eight boxes a
#: step), 2.0x on 12x12x384; the persistent implicit tiles of 56x56 and 28x28 layers with short K loops stayed
#: faster (0.59-0.83x flattened: the flattened kernel had no persistent form then; since session 66 it has, and
#: `FLAT_PERSISTENT` takes it there).
FLAT_TILES = True
#: Whether `implicit_config` runs the flattened tile persistent (`ImplicitConfig.BLOCKS`: a block an SM walking the
#: units, `conv_im2col_gemm`'s BLOCKS) where its tiles, unsplit, make more than one wave, in place of both the
#: flattened tile a block per tile and the persistent implicit tile. Measured on an H200 (session 66,
#: `benchmarks/results/2026-12-06-conv-persistent-flat/`, call 1, each row's plan beside the persistent forms,
#: interleaved with cuDNN): ResNet-50's 3x3 64->64 at 56x56 0.84 -> 1.07x cuDNN (784 units), 3x3 128 at 28x28 0.97
#: -> 1.03x, the strided 1x1 256->512 1.02 -> 1.16x, VGG-16's 3x3 64 at 224x224 0.64 -> 0.87x, 128 at 112x112 0.81 ->
#: 0.93x, YOLO's strided 64->128 0.82 -> 0.97x, U-Net's 128 at 128x128 1.18 -> 1.37x; a wave or less (98-130 units)
#: ran 2-6 % slower persistent than a block per tile, split rows 25-40 % slower unsplit: those keep their tiles. The
#: planner with it (call 2, an H100, beside the planner without it): ResNet-50 at batch 32 0.949 -> 0.993x cuDNN
#: (geometric mean of 15 rows), the held-out rows 1.038 -> 1.117x.
FLAT_PERSISTENT = True
#: Whether `implicit_config` runs a split flattened tile's reduction in the same launch (`ImplicitConfig.FUSE`,
#: `conv_im2col_split_fused`) where `flat_fuse_refusal` allows: its blocks (tiles x splits) one wave, so that the
#: blocks of a tile can wait for each other at a group barrier. An A/B switch.
FLAT_FUSE_SPLITS = True
#: A persistent implicit tile that computes this many positions per output position or more (its BH x BW tiles past
#: the image's edges) gives way to the flattened tile: ResNet-50's 1x1 512->2048 at 7x7 (8x8 tiles for 49
#: positions, 1.31) ran 1.32x faster flattened; at 28x28 (4x32 tiles, 1.14) the persistent tile was as fast or 5 %
#: faster (session 39, call 5; session 40, call 2: 0.65-0.79x flattened). A threshold between two measured points,
#: not a measured crossover.
FLAT_WASTE = 1.25
#: The most stages the flattened tile pipelines: six ran 0-10 % faster than four on ResNet-50's layers of 14x14 and
#: 7x7 (session 39, call 5: 3x3/2 28->14 18.8 against 20.3 us), at most 2 % slower elsewhere.
FLAT_MAX_STAGES = 6


def flat_fuse_refusal(conv: Conv, config: ImplicitConfig, sms: int = SMS) -> str | None:
    """Why the flattened tile `config` of `conv` cannot sum its split-K slices in its own launch
    (`conv_im2col_split_fused`), or None. The blocks of a tile wait for each other at a group barrier, so every block
    must be resident at once: one wave of blocks (tiles x splits at most `sms`, a block an SM)."""
    if not config.FLAT or config.SPLITS < 2 or config.BLOCKS:
        return "it fuses a split flattened tile's reduction (FLAT, SPLITS > 1, a block per tile)"
    if config.reducers() is None:
        return (
            f"no count of a tile's blocks divides its {config.BH * config.BW} positions into shares of {config.BN} "
            f"filters that fill the {config.CONSUMERS * 128} consumer threads' 4-element vectors"
        )
    blocks = implicit_tiles(conv, config) * config.SPLITS
    if blocks > sms:
        return f"{blocks} blocks on {sms} SMs: more than one wave (a tile's blocks must all run at once)"
    return None


def flat_refusal(conv: Conv) -> str | None:
    """Why `conv` does not run on the flattened-position kernel (`conv_im2col_gemm`; None: it may): a 2-d forward
    convolution without groups in bf16 or f16 (f32's split planes are the implicit kernel's), padding the same at
    both ends (a transposed convolution's stride phases are not), more than 32 channels (its K step of 64, one 128-byte
    swizzle row), and a traversal TMA's im2col mode can address in a 4-d tensor (`argus.atoms.tma.diagnose_im2col`:
    corners within 8 bits, strides 1..8; the taps' offsets below 256)."""
    if conv.rank != 2 or conv.transposed or conv.padding_end is not None:
        return "not a 2-d forward convolution with the same padding at both ends"
    if conv.groups != 1 or conv.dtype not in ("bf16", "f16"):
        return f"{conv.groups} groups of {conv.dtype} values: one group of 16-bit values is needed"
    if implicit_bk(conv) != IMPLICIT_BK:
        return f"{conv.channels} channels: the K step is {IMPLICIT_BK} channels"
    refused = implicit_refusal(conv)
    if refused is not None:
        return refused
    _, kh, kw = conv.kernel
    _, lh, lw = conv.dilation
    window = ((kh - 1) * lh + 1, (kw - 1) * lw + 1)
    box = conv_im2col_box(conv.padding[1:], window, conv.stride[1:], 128, IMPLICIT_BK)
    shape = (conv.batch, *conv.size[1:], conv.channels)
    problems = diagnose_im2col(shape, box, ITEMSIZE[conv.dtype], swizzle=IMPLICIT_BK * ITEMSIZE[conv.dtype])
    if problems:
        return f"TMA's im2col mode cannot address it: {problems[0].message}"
    if max(window) - 1 > IM2COL_OFFSET_MAX[4]:
        return f"a dilated window of {window}: im2col offsets of a 4-d tensor are below {IM2COL_OFFSET_MAX[4] + 1}"
    if conv.batch * conv.positions >= 2**31:
        return f"{conv.batch * conv.positions} output positions: the kernel indexes them in 32 bits"
    return None


#: How much longer a flattened tile of 256 filters takes than one of 128, the same K loop: 1.57-1.81 measured (1.75
#: typical; session 40, calls 2 and 5 of `benchmarks/results/2026-12-02-flat-tiles/`: a wave of 128x256 tiles against
#: a wave of 128x128 ones on VGG-16's, YOLO-like, ResNet-50's and Stable Diffusion's layers).
FLAT_WIDE_TILE_TIME = 1.75
#: The same for a tile of 64 filters: 0.85, fitted (session 65, calls 1-2 of
#: `benchmarks/results/2026-12-06-conv-widths/`:
#: the value of 0.78-1.0 whose plans came closest to the fastest width measured over 36 rows, 1.001x its time on
#: average; 0.78, a tile of 64 against one of 128 measured across problems in session 40, took 96 filters for Stable
#: Diffusion's 640 at 32x32, 1.09x the time of 160 split two ways). A narrow tile is not much quicker than one of 128:
#: its im2col box of 128 positions is as large, and each `wgmma` reads its A from shared memory for half the products.
FLAT_NARROW_TILE_TIME = 0.85
#: Whether the flattened tile's filter width is fitted to the filter count (`flat_widths`: the widths that cut the
#: filters into k near-equal tiles, multiples of `FLAT_WIDTH_STEP` from 64 to 256) rather than 128, or 256 of a
#: multiple of 256. Measured on an H100 (session 65, `benchmarks/results/2026-12-06-conv-widths/`, call 3, each row's
#: plan beside the 128/256 rule's tile): Stable Diffusion's 320 filters as two tiles of 160, where 128 made three (a
#: sixth of them zeros) in twice the waves, 0.50-0.68 -> 1.01-1.26x cuDNN; 384 filters in two tiles of 192 1.08 ->
#: 1.39x, 448 in two of 224 0.86 -> 1.28x, 160 in one 0.88 -> 1.44x; the rows of odd widths 0.807 -> 1.120x (geometric
#: mean of 8), session 40's held-out rows 0.939 -> 1.032x.
FLAT_FITTED_WIDTHS = True
#: The fitted widths' granularity: 32 filters. A width that is an odd multiple of 16 (80, 112, 176, 208, 240) makes
#: ptxas serialize the K loop's `wgmma` (its C7514 warning, `CompiledModule.warnings`): measured 1.2-1.4x the time of
#: the next multiple of 32 per tile (ResNet-50's 1x1 512->2048 at 7x7: 130 tiles of 208 17.3 us, 104 of 256 12.7 us).
FLAT_WIDTH_STEP = 32


def flat_tile_time(bn: int) -> float:
    """A flattened tile's K-step with `bn` filters, in units of one with 128: the line through the measured widths
    (64: `FLAT_NARROW_TILE_TIME`, 128: 1, 256: `FLAT_WIDE_TILE_TIME`) between them, the nearer segment's beyond."""
    if bn <= 128:
        return 1.0 - (1.0 - FLAT_NARROW_TILE_TIME) * (128 - bn) / 64
    return 1.0 + (FLAT_WIDE_TILE_TIME - 1.0) * (bn - 128) / 128


def flat_widths(conv: Conv) -> tuple[int, ...]:
    """The filter widths `flat_config` weighs for `conv`: `implicit_bn`'s (64 up to 64 filters, else 128) and 256 where
    it divides the filters; with `FLAT_FITTED_WIDTHS`, over 64 filters, the width of each cut into k near-equal tiles
    (the filters / k rounded up to `FLAT_WIDTH_STEP`; `wgmma` takes any N that is a multiple of 8 up to 256) from 64 to
    256, 128 first (a tie goes to the width measured most)."""
    base = implicit_bn(conv)
    if not FLAT_FITTED_WIDTHS or conv.filters <= 64:
        return (base, *((256,) if conv.filters % 256 == 0 and base != 256 else ()))
    step = FLAT_WIDTH_STEP
    cuts = {math.ceil(conv.filters / k / step) * step for k in range(1, -(-conv.filters // 64) + 1)}
    return tuple(sorted((bn for bn in cuts | {base} if 64 <= bn <= 256), key=lambda bn: (bn != 128, bn)))


def flat_candidates(conv: Conv, sms: int = SMS) -> list[tuple[float, ImplicitConfig]]:
    """(modelled seconds, tile) of the flattened tile of `conv` at each width of `flat_widths`, in their order: 128
    positions (two consumer warpgroups) by that width, its K loop split where `implicit_splits` says to, timed by
    `implicit_split_time` with each K-step `flat_tile_time` long (stages not yet chosen)."""
    found: list[tuple[float, ImplicitConfig]] = []
    for bn in flat_widths(conv):
        pick = ImplicitConfig(1, 128, bn, 1, 2, FLAT=True)
        if IMPLICIT_SPLIT:
            pick = replace(pick, SPLITS=implicit_splits(conv, pick, sms))
        found.append((implicit_split_time(conv, pick, pick.SPLITS, sms) * flat_tile_time(bn), pick))
    return found


def flat_config(conv: Conv, sms: int = SMS) -> ImplicitConfig:
    """The flattened-position tile of `conv` (`flat_refusal` None): of `flat_candidates`, the one whose waves of tiles
    take least time (Stable Diffusion's 320 filters at 64x64 and batch 2, 64 position tiles, run one wave of 128
    tiles of 160 rather than two of 192 tiles of 128), K steps of 64 channels, as many stages as fit (up to
    `FLAT_MAX_STAGES`)."""
    _, pick = min(flat_candidates(conv, sms), key=lambda t: t[0])  # on a tie the width listed first
    return with_stages(conv, pick, FLAT_MAX_STAGES)


def implicit_k_steps(conv: Conv, bk: int) -> int:
    """The K-steps of one tile of `conv` in steps of `bk` channels: each tap's channel blocks, for f32 over its three
    split planes."""
    return (3 if conv.dtype == "f32" else 1) * conv.window * -(-implicit_channels(conv) // bk)


def implicit_tiles(conv: Conv, config: ImplicitConfig) -> int:
    """The tiles (blocks, one block per tile) of `conv` on `config`: output positions, planes, filters and images."""
    if config.FLAT:
        return -(-conv.batch * conv.positions // (config.BH * config.BW)) * -(-conv.filters // config.BN)
    _, oh, ow = conv.out
    planes = conv.out[0] if conv.rank == 3 else 1
    spatial = -(-ow // config.BW) * -(-oh // config.BH) * planes
    return spatial * -(-conv.filters // config.BN) * conv.batch


def implicit_splits(conv: Conv, config: ImplicitConfig, sms: int = SMS) -> int:
    """How many ways to split each tile's K loop of `conv` on `config` (one block per tile): where the tiles leave
    most of the GPU's block slots (``sms`` x blocks per SM) idle, e.g. ResNet-50's 7x7 layers at batch 32 (128 tiles
    of 64 positions for 264 slots). Of the splits s <= `IMPLICIT_MAX_SPLITS` that divide the K-steps into shares of
    at least `IMPLICIT_SPLIT_MIN_STEPS`, the one of least modelled time (`implicit_split_time`), taken where unsplit's
    is `IMPLICIT_SPLIT_GAIN` times longer (1 otherwise). Only 2-d forward convolutions of 16-bit data split (the
    form measured, and verified: `test_the_split_kernels_verify_and_compile`); the kernel splits others too (the
    interpreter tests), but a 3-d split kernel's tag proof was `unknown` after five minutes (session 38), and f32,
    1-d and a transposed convolution's phases were neither timed nor proved split."""
    if config.BLOCKS or conv.rank != 2 or conv.dtype == "f32" or conv.padding_end is not None:
        return 1
    steps = implicit_k_steps(conv, config.BK)
    fits = [s for s in range(1, IMPLICIT_MAX_SPLITS + 1) if steps % s == 0 and steps // s >= IMPLICIT_SPLIT_MIN_STEPS]
    times = {s: implicit_split_time(conv, config, s, sms) for s in fits}
    best = min(fits, key=lambda s: (times[s], s), default=1)
    return best if best > 1 and implicit_split_time(conv, config, 1, sms) >= IMPLICIT_SPLIT_GAIN * times[best] else 1


def implicit_split_time(conv: Conv, config: ImplicitConfig, splits: int, sms: int = SMS) -> float:
    """Modelled seconds of `conv` on `config` with its K loop split `splits` ways (one block per tile): waves of
    blocks (``cdiv(tiles * splits, slots)``) times each block's K-steps at `IMPLICIT_STEP_S` (a few tiles per SM
    take about that a step whatever the tile), and with a split the f32 workspace's round trip at `HBM_EFFICIENCY`
    of the memory bandwidth (written by the split kernel, read by the reduction) and the reduction's launch; a
    flattened tile whose split runs in one launch (`FLAT_FUSE_SPLITS`, `flat_fuse_refusal`) pays neither the launch
    nor the read (its slices are read back from L2 as soon as they are written)."""
    steps = implicit_k_steps(conv, config.BK)
    tiles, slots = implicit_tiles(conv, config), sms * config.blocks_per_sm
    loop = -(-tiles * splits // slots) * steps / splits * IMPLICIT_STEP_S
    if splits == 1:
        return loop
    outputs = conv.batch * math.prod(conv.out) * conv.filters
    trip = splits * outputs * 4 / (DEFAULT_TARGET.hbm_gbs * 1e9 * HBM_EFFICIENCY)
    fused = replace(config, SPLITS=splits, FUSE=True, BLOCKS=0)
    if config.FLAT and FLAT_FUSE_SPLITS and flat_fuse_refusal(conv, fused, sms) is None:
        return loop + trip
    return loop + 2 * trip + REDUCE_LAUNCH_S


def with_stages(conv: Conv, config: ImplicitConfig, most: int | None = None) -> ImplicitConfig:
    """`config` with as many stages as its share of an SM's shared memory holds, up to `most` (at least 2; by
    default `IMPLICIT_MAX_STAGES`, twice that for a K step of 32 or fewer channels, whose stages are a quarter
    as large: more of them keep as many bytes in flight)."""
    if most is None:
        most = IMPLICIT_MAX_STAGES * (2 if config.BK < IMPLICIT_BK else 1)
    bm = config.BH * config.BW
    stage = (bm + config.BN) * config.BK * 2  # 16-bit operands (an f32 convolution's split planes are bf16)
    # the output tile's buffer (f32 partial sums with split-K), padded as the larger of its two layouts needs:
    item = 4 if config.SPLITS > 1 else ITEMSIZE[conv.dtype]
    out = max(bm * (config.BN + (8 if item == 4 else 0)), (bm + 16 // item) * config.BN) * item  # NHWC, NCHW
    if config.FLAT:  # stored from the accumulator's registers
        out = 0
    budget = shared_budget(config.blocks_per_sm) - out - 1024  # the barriers and the carve's alignment
    return replace(config, STAGES=max(2, min(most, budget // stage)))


def writes_nchw(conv: Conv, config: ImplicitConfig) -> bool:
    """Whether a call with a channels-first (NCHW) output has the kernel write it itself (`conv_implicit_gemm`'s
    NCHW): where a tile row holds at least 128 bytes of positions per channel. Narrower rows store in pieces of a
    sector (16 bytes for 8 bf16 positions), which ran slower than the NHWC tile and a permuted copy (run 9). A
    split-K tile (`ImplicitConfig.SPLITS`) is summed channels last by `conv_split_reduce`."""
    return config.BW * ITEMSIZE[conv.dtype] >= 128 and config.SPLITS == 1 and not config.FLAT


def implicit_kind(config: ImplicitConfig) -> str:
    """The kernel a tile runs on (`_traced`'s name): the flattened-position one (`ImplicitConfig.FLAT`) or the
    implicit one."""
    return ("flat_fused" if config.FUSE else "flat") if config.FLAT else "implicit"


def flat_params(conv: Conv, config: ImplicitConfig, epilogue: Epilogue | None = None) -> dict[str, Any]:
    """`conv_im2col_gemm`'s trace parameters for `conv` on the flattened tile `config` (`flat_refusal` None):
    channels last; split along K, f32 partial sums (the bias and `epilogue` go to `split_reduce_params`' kernel, or
    with `ImplicitConfig.FUSE` `conv_im2col_split_fused`'s, which sums them itself: its REDUCERS);
    persistent (`ImplicitConfig.BLOCKS`), its blocks and their residency (two a SM with one consumer warpgroup)."""
    _, kh, kw = conv.kernel
    _, sh, sw = conv.stride
    _, ph, pw = conv.padding
    _, lh, lw = conv.dilation
    split = config.SPLITS > 1
    reduced = split and not config.FUSE  # the bias and epilogue in another kernel's sum
    return {
        "KH": kh, "KW": kw, "SH": sh, "SW": sw, "PH": ph, "PW": pw, "LH": lh, "LW": lw,
        "BN": config.BN, "BK": config.BK, "CB": -(-conv.channels // config.BK), "STAGES": config.STAGES,
        "CONSUMERS": config.CONSUMERS, "SPLITS": config.SPLITS, "BIAS": conv.bias and not reduced,
        "IN": conv.dtype, "OUT": "f32" if reduced else conv.dtype,
    } | ({"EPILOGUE": epilogue} if epilogue is not None and not reduced else {}) | (
        {"BLOCKS": config.BLOCKS, "BLOCKS_PER_SM": config.blocks_per_sm} if config.BLOCKS else {}
    ) | ({"REDUCERS": config.reducers()} if config.FUSE else {})  # fmt: skip


def implicit_params(
    conv: Conv, config: ImplicitConfig, *, nchw: bool, epilogue: Epilogue | None = None
) -> dict[str, Any]:
    """`conv_implicit_gemm`'s trace parameters for `conv` (a 1-d convolution as a 2-d one of height 1), the channel
    blocks per tap fixed (`CB`: one K loop, the form whose proofs are quickest). `nchw`: the kernel writes the
    output channels first (`writes_nchw`), else channels last. Split along K (`ImplicitConfig.SPLITS`), the kernel
    writes f32 partial sums channels last, and the bias and `epilogue` go to `split_reduce_params`' kernel. A
    flattened tile (`ImplicitConfig.FLAT`): `flat_params`."""
    if config.FLAT:
        return flat_params(conv, config, epilogue)
    kd, kh, kw = conv.kernel
    sd, sh, sw = conv.stride
    pd, ph, pw = conv.padding
    ld, lh, lw = conv.dilation
    ed, eh, ew = conv.gather_padding_end
    extra = {"PHE": eh, "PWE": ew} if conv.padding_end is not None else {}  # a stride phase's ends
    if conv.rank == 3:
        extra |= {"DEPTH": True, "KD": kd, "SD": sd, "PD": pd, "LD": ld}
        extra |= {"PDE": ed} if conv.padding_end is not None else {}
    if config.SPLITS > 1:
        extra |= {"SPLITS": config.SPLITS}
        nchw, epilogue = False, None
    return extra | {
        "KH": kh, "KW": kw, "SH": sh, "SW": sw, "PH": ph, "PW": pw, "LH": lh, "LW": lw,
        "BH": config.BH, "BW": config.BW, "BN": config.BN, "BK": config.BK, "STAGES": config.STAGES,
        "CONSUMERS": config.CONSUMERS, "BLOCKS_PER_SM": config.blocks_per_sm, "BLOCKS": config.BLOCKS,
        "CB": -(-implicit_channels(conv) // config.BK), "BIAS": conv.bias and config.SPLITS == 1,
        "IN": "bf16" if conv.dtype == "f32" else conv.dtype, "OUT": conv.dtype if config.SPLITS == 1 else "f32",
        "TERMS": 3 if conv.dtype == "f32" else 1, "NCHW": nchw,
    } | ({"EPILOGUE": epilogue} if epilogue is not None else {})  # fmt: skip


#: Output channels per block of a split convolution's reduction (`conv_split_reduce`, four per thread), at most.
SPLIT_REDUCE_BN = 512


def split_reduce_params(conv: Conv, config: ImplicitConfig, epilogue: Epilogue | None = None) -> dict[str, Any]:
    """`conv_split_reduce`'s parameters for `conv` split along K on `config` (SPLITS > 1): the sum of the slices,
    the bias and the fused epilogue, into the channels-last output; BN the output channels rounded up to a power of
    two from 128 (32 threads), at most `SPLIT_REDUCE_BN`."""
    bn = min(SPLIT_REDUCE_BN, max(128, 1 << (conv.filters - 1).bit_length()))
    return {"SPLITS": config.SPLITS, "BN": bn, "BIAS": conv.bias, "OUT": conv.dtype} | (
        {"EPILOGUE": epilogue} if epilogue is not None else {}
    )


@dataclass(frozen=True)
class TransposedPhase:
    """One output phase of a transposed convolution (`transposed_phases`): the outputs at (od * SD + RD, oh * SH + RH,
    ow * SW + RW), `offset` = (RD, RH, RW), of extents `out`, are the forward convolution `conv` (stride 1) of the
    input with the transposed weight's offsets `taps` (per dimension, in the order the phase's window reads them:
    its input offsets rising), or the bias alone (zero without one) where no offset of the window reaches them
    (`conv` None). `config`: the phase's tile on the implicit kernel."""

    offset: tuple[int, int, int]
    taps: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    conv: Conv | None
    out: tuple[int, int, int]
    config: ImplicitConfig | None = None

    def positions(self, stride: tuple[int, int, int]) -> tuple[slice, ...]:
        """The index of this phase's outputs in the whole output (N, F, OD, OH, OW) of the transposed convolution of
        `stride`: every stride-th position from the phase's offset, per dimension."""
        return (slice(None), slice(None), *(slice(r, None, s) for r, s in zip(self.offset, stride, strict=True)))


def _dimension_phase(
    n: int, out: int, k: int, s: int, p: int, d: int, r: int
) -> tuple[tuple[int, ...], int, int, int, int]:
    """One dimension of a transposed convolution's output phase r (extent n in, `out` out, window k, stride s,
    padding p, dilation d): (the window offsets that reach it, in the order of their input offsets, rising; the
    forward convolution's padding at the start and at the end; its dilation; the phase's extent). Output o = q * s +
    r reads input (o + p - t * d) / s for each window offset t where that is whole: input q + (r + p - t * d) / s,
    offsets t = t0, t0 - s / g, ... (g = gcd(s, d)) at input offsets rising by d / g."""
    extent = -(-(out - r) // s)
    taps = tuple(sorted((t for t in range(k) if (r + p - t * d) % s == 0), reverse=True))
    if not taps:
        return (), 0, 0, 1, extent
    start = -((r + p - taps[0] * d) // s)
    step = d // math.gcd(s, d) if len(taps) > 1 else 1
    return taps, start, extent - n - start + step * (len(taps) - 1), step, extent


def transposed_phases(conv: Conv) -> tuple[TransposedPhase, ...]:
    """The stride-phase decomposition of transposed convolution `conv` (without groups): one forward convolution of
    stride 1 per output phase (offset in [0, stride) per dimension), each with only the window offsets that reach
    its outputs, on the input as it is: stride^rank times less work than the upsampled input's convolution, and no
    zeros multiplied. A stride of 1 is one phase: the window flipped, padding dilation * (kernel - 1) - padding (and
    the output padding at the end). A phase's padding may be negative at either end (its first or last input
    elements are never read)."""
    if not conv.transposed or conv.groups != 1:
        raise ConvError("CONV_PHASES", f"the stride phases of a transposed convolution without groups, not {conv}")
    per_axis = []
    for axis in range(3):
        n, out, k = conv.size[axis], conv.out[axis], conv.kernel[axis]
        s, p, d = conv.stride[axis], conv.padding[axis], conv.dilation[axis]
        per_axis.append([(r, _dimension_phase(n, out, k, s, p, d, r)) for r in range(min(s, out))])
    phases = []
    for (rd, dd), (rh, dh), (rw, dw) in itertools.product(*per_axis):
        taps = (dd[0], dh[0], dw[0])
        extents = (dd[4], dh[4], dw[4])
        if not all(taps):
            phases.append(TransposedPhase((rd, rh, rw), taps, None, extents))
            continue
        start, end, step = (dd[1], dh[1], dw[1]), (dd[2], dh[2], dw[2]), (dd[3], dh[3], dw[3])
        forward = Conv(
            conv.rank, conv.batch, conv.channels, conv.filters, 1, conv.size,
            (len(dd[0]), len(dh[0]), len(dw[0])), (1, 1, 1), start, step, conv.bias, conv.dtype, padding_end=end,
        )  # fmt: skip
        if forward.out != extents:  # the arithmetic above, checked where it is cheap
            raise ConvError("CONV_PHASES", f"phase {(rd, rh, rw)} of {conv}: {forward.out} outputs, not {extents}")
        phases.append(TransposedPhase((rd, rh, rw), taps, forward, extents))
    return tuple(phases)


def group_conv(conv: Conv) -> Conv:
    """One group of a grouped convolution as a convolution of its own: C/g input channels, F/g filters, no groups
    (every group is this convolution of its own channels with its own weights)."""
    g = conv.groups
    return replace(conv, groups=1, channels=conv.channels // g, filters=conv.filters // g)


def group_slices(conv: Conv) -> list[tuple[slice, slice]]:
    """Each group's (input channels, filters) of a grouped convolution, as slices of the channel axes: the slices of
    x, a transposed weight (C, F/g, ...), the bias, the epilogue's operands and the output one group reads and
    writes (`group_conv`)."""
    one = group_conv(conv)
    cg, fg = one.channels, one.filters
    return [(slice(i * cg, (i + 1) * cg), slice(i * fg, (i + 1) * fg)) for i in range(conv.groups)]


def transposed_refusal(conv: Conv) -> str | None:
    """Why transposed convolution `conv` does not run as stride phases on the implicit kernel (None: it does; a
    grouped one runs as each group's phases, `group_conv`)."""
    if not conv.transposed:
        return "not a transposed convolution"
    if conv.groups != 1:
        why = transposed_refusal(group_conv(conv))
        return None if why is None else f"{conv.groups} groups (one group's convolution: {why})"
    try:
        phases = transposed_phases(conv)
    except ConvError as e:
        return e.reason
    for phase in phases:
        why = implicit_refusal(phase.conv, phase=True) if phase.conv is not None else None
        if why is not None:
            return f"phase {phase.offset}: {why}"
    return None


def _phased(conv: Conv) -> tuple[TransposedPhase, ...]:
    """`transposed_phases` with each phase's implicit tile, one block per tile: the persistent form's contraction-once
    proof with the phases' end padding did not complete within the verifier's budget (a 2x1 phase: `unknown` after
    19 s, one block per tile verified in 2 s), as for strided convolutions (`implicit_config`)."""
    return tuple(
        replace(phase, config=replace(implicit_config(phase.conv), BLOCKS=0)) if phase.conv is not None else phase
        for phase in transposed_phases(conv)
    )


#: The most window offsets the direct depthwise kernel takes: it holds one weight per offset (and channel of its
#: block) in registers.
DEPTHWISE_MAX_TAPS = 64


@dataclass(frozen=True)
class DepthwiseConfig:
    """The direct depthwise kernel's tile (`argus.kernels.conv_kernels.conv_depthwise`): CB channels by BH output
    rows, walking the columns BW at a time (CB * BW = THREADS: one output per thread and row)."""

    CB: int
    BH: int
    BW: int

    def label(self) -> str:
        return f"depthwise {self.CB}x{self.BH}x{self.BW}"


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def depthwise_config(conv: Conv) -> DepthwiseConfig:
    """The tile of `conv` on the direct depthwise kernel: BH 8 output rows (1 for a 1-d convolution, the output's
    height rounded up to a power of two where it is shorter), and of the (CB, BW) splits of THREADS with CB
    dividing the channels (BW from 8 to 128 columns), the one of least `depthwise_cost` (on a tie the wider
    rows). Measured on an H200 (`benchmarks/results/2026-11-29-conv-depthwise/`, call 1, every tile of each row
    timed): the model's choice was the fastest tile, or within 2 % of it, on every row but the two f32 ones of
    56x56 images (within 3 % and 8 %)."""
    _, oh, _ = conv.out
    bh = 1 if oh == 1 else min(8, _pow2_at_least(oh))
    best: tuple[float, DepthwiseConfig] | None = None
    for bw in (128, 64, 32, 16, 8):
        if conv.channels % (THREADS // bw):
            continue
        config = DepthwiseConfig(THREADS // bw, bh, bw)
        cost = depthwise_cost(conv, config)
        if best is None or cost < best[0] - 1e-9:
            best = (cost, config)
    assert best is not None  # CB = 1 divides every channel count
    return best[1]


def depthwise_cost(conv: Conv, config: DepthwiseConfig) -> float:
    """The work of `conv` on the direct kernel with tile `config`, per output it keeps: the elements staged (the
    span, its rows and columns rounded as the kernel stores them, over the tile's outputs) plus a quarter of the
    window's multiply-adds (each a shared load and an FMA; a staged element moves four to a vector), both scaled
    by the outputs computed past the output's edges (whole tiles)."""
    _, oh, ow = conv.out
    staged = depthwise_span_bytes(conv, config) / ITEMSIZE[conv.dtype] / config.CB / (config.BH * config.BW)
    waste = (-(-ow // config.BW) * config.BW / ow) * (-(-oh // config.BH) * config.BH / oh)
    return (staged + conv.window / 4) * waste


def depthwise_span_bytes(conv: Conv, config: DepthwiseConfig) -> int:
    """Shared memory of the direct kernel's staged span: CB channels of (depth, rows, columns), as `conv_depthwise`
    lays it out."""
    (kd, kh, kw), (_, sh, sw), (ld, lh, lw) = conv.kernel, conv.stride, conv.dilation
    depth, qh, qw, _ = depthwise_span(kd, kh, kw, sh, sw, ld, lh, lw, conv.padding[2], config.BH, config.BW, conv.dtype)
    return config.CB * depth * sh * qh * sw * qw * ITEMSIZE[conv.dtype]


def depthwise_refusal(conv: Conv) -> str | None:
    """Why `conv` does not run on the direct depthwise kernel (None: it does). The kernel takes forward convolutions
    of one input channel per group (groups = channels: depthwise, any number of output channels per input channel;
    or a single input channel), any rank, stride, padding and dilation, whose window has at most
    `DEPTHWISE_MAX_TAPS` offsets and whose staged span fits in shared memory."""
    if conv.transposed:
        return "a transposed convolution"
    if conv.padding_end is not None:
        return "a stride phase of a transposed convolution (padding given at both ends)"
    if conv.channels != conv.groups:
        return f"{conv.channels // conv.groups} input channels per group (the direct kernel takes one)"
    if conv.window > DEPTHWISE_MAX_TAPS:
        return f"a window of {conv.window} offsets (the direct kernel holds at most {DEPTHWISE_MAX_TAPS} weights)"
    config = depthwise_config(conv)
    need, budget = depthwise_span_bytes(conv, config), shared_budget(1)
    if need > budget:
        return f"its staged span needs {need} bytes of shared memory, more than the {budget} a block has"
    if -(-conv.out[1] // config.BH) > MAX_GRID_Y or conv.batch > MAX_GRID_Z:
        return f"{conv.out[1]} output rows and a batch of {conv.batch}: over the grid's limits"
    return None


def depthwise_params(conv: Conv, config: DepthwiseConfig) -> dict[str, Any]:
    """`conv_depthwise`'s trace parameters for `conv`."""
    params: dict[str, Any] = {
        "MULT": conv.filters // conv.channels, "CB": config.CB, "BH": config.BH, "BW": config.BW,
        "BIAS": conv.bias, "DT": conv.dtype,
    }  # fmt: skip
    return params | window_params(conv.kernel, conv.stride, conv.padding, conv.dilation)


def check_shared(conv: Conv) -> None:
    """Refuse a window whose input span does not fit in one block's shared memory."""
    planes, rows, cols, _, _ = conv.span(*conv.tile())
    need, budget = planes * rows * cols * ITEMSIZE[conv.dtype], shared_budget(1)
    if need > budget:
        raise ConvError(
            "CONV_SPAN_OVER_SHARED",
            f"the input span of one {conv.tile()} tile of outputs needs {need} bytes of shared memory, more than the "
            f"{budget} a block has (a window this wide is not built)",
        )


@functools.lru_cache(maxsize=64)
def _traced(kind: str, params: tuple[tuple[str, Any], ...]) -> Any:
    kernels = {
        "im2col": im2col,
        "upsample": conv_upsample,
        "output": conv_output,
        "output_bias": conv_output_bias,
        "weight": conv_transpose_weight,
        "implicit": conv_implicit_gemm,
        "flat": conv_im2col_gemm,
        "flat_fused": conv_im2col_split_fused,
        "split_reduce": conv_split_reduce,
        "split": split_bf16x3,
        "depthwise": conv_depthwise,
    }
    return kernels[kind].trace(**dict(params))


@functools.lru_cache(maxsize=64)
def _loaded(kind: str, params: tuple[tuple[str, Any], ...]) -> Any:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    return load(compile_kernel(_traced(kind, params)))


@dataclass(frozen=True)
class ConvPlan:
    """What one convolution call runs: either the implicit-GEMM kernel (`implicit`: its tile; one launch, channels
    last), or the gather path: the images per chunk of the batch, the GEMM problem of one chunk (batched over the
    groups, or one group's when `per_group`), and its plan."""

    conv: Conv
    images: int
    gemm: GemmProblem | None
    per_group: bool
    implicit: ImplicitConfig | None = None
    #: a pointwise (1x1, stride 1, unpadded) convolution without a bias: `gemm` is its channels-last product (N*H*W,
    #: C) x (C, F), `nchw_gemm` the product per image (F, C) x (C, H*W) batched over the images (None where the library
    #: has no batched plan for it), which a call on NCHW tensors runs
    pointwise: bool = False
    nchw_gemm: GemmProblem | None = None
    #: a depthwise convolution on the direct kernel (`conv_depthwise`): its tile; one launch, NCHW, no GEMM
    depthwise: DepthwiseConfig | None = None
    #: a transposed convolution as stride phases on the implicit kernel (`transposed_phases`, each with its tile);
    #: of a grouped one, the phases of one group's convolution (`group_conv`), which every group runs
    phases: tuple[TransposedPhase, ...] | None = None
    #: a fused epilogue applied in the implicit kernel's store (`conv_implicit_gemm`'s EPILOGUE; `conv_plan`)
    epilogue: Epilogue | None = None

    @property
    def gemm_plan(self) -> Any:
        if self.gemm is None:
            raise ConvError(
                "CONV_NO_GEMM", "this convolution runs on the implicit-GEMM kernel (ConvPlan.implicit), without a GEMM"
            )
        return plan(self.gemm)

    def describe(self) -> str:
        """Which path the plan takes, in words (a generated solution's comment, a benchmark's row)."""
        if self.depthwise is not None:
            return f"the direct depthwise kernel ({self.depthwise.label()})"
        if self.phases is not None:
            run = [p for p in self.phases if p.conv is not None]
            tiles = sorted({p.config.label() for p in run if p.config is not None})
            what = "the flipped window" if len(self.phases) == 1 else f"{len(self.phases)} stride phases"
            groups = f" of each of {self.conv.groups} groups" if self.conv.groups > 1 else ""
            return f"the implicit-GEMM kernel on {what}{groups} ({', '.join(tiles)})" + (
                f", {len(self.phases) - len(run)} phase(s) the bias alone" if len(run) < len(self.phases) else ""
            )
        if self.implicit is not None:
            return f"the implicit-GEMM kernel ({self.implicit.label()})"
        if self.pointwise:
            return "one GEMM of the library" + (": a product per image, NCHW" if self.nchw_gemm else ", channels last")
        steps = ["the weight's permutation"] if self.conv.transposed else []
        steps += ["the upsampling"] if self.conv.upsampled else []
        return ", ".join([*steps, "the im2col gather", "the GEMM library's plan", "the output pass"])

    def kernels(self) -> list[Any]:
        """The traced kernels a call launches, in order: for a transposed convolution the weight's permutation and
        (with a stride or output padding) the upsampling, the gather, the GEMM plan's (splits for f32, the GEMM, a
        split-K reduction), the output pass; or the implicit kernel (both of its forms where a call's layout picks
        one: the NCHW epilogue and the channels-last one), or the depthwise kernel, alone."""
        if self.depthwise is not None:
            return [_traced("depthwise", _key(depthwise_params(self.conv, self.depthwise)))]
        if self.phases is not None:
            found = []
            for phase in self.phases:
                if phase.conv is None or phase.config is None:
                    continue
                # several phases: each writes a fresh NCHW tensor (one layout); one phase writes the call's output
                layouts = None if len(self.phases) == 1 else (writes_nchw(phase.conv, phase.config),)
                for k in _implicit_kernels(phase.conv, phase.config, layouts, self.epilogue):
                    if all(k is not j for j in found):
                        found.append(k)
            return found
        if self.implicit is not None:
            return _implicit_kernels(self.conv, self.implicit, epilogue=self.epilogue)
        if self.pointwise:  # both products: a call runs the one its tensors' layout takes
            found = LibraryGemm("gemm", self.gemm).kernels()
            if self.nchw_gemm is not None:
                found += [k for k in LibraryGemm("gemm", self.nchw_gemm).kernels() if all(k is not j for j in found)]
            return found
        found = [_traced("weight", _key(self.conv.weight_params()))] if self.conv.transposed else []
        if self.conv.upsampled:
            found.append(_traced("upsample", _key(self.conv.upsample_params())))
        found.append(_traced("im2col", _key(self.conv.gather_params())))
        found += LibraryGemm("gemm", self.gemm).kernels()
        found.append(_traced("output_bias" if self.conv.bias else "output", _key(self.conv.output_params())))
        return found


def _implicit_kernels(
    conv: Conv, config: ImplicitConfig, layouts: tuple[bool, ...] | None = None, epilogue: Epilogue | None = None
) -> list[Any]:
    """The traced kernels an implicit-kernel call of `conv` launches: for f32 the splits of the input and of the
    weight, then the implicit kernel in each of `layouts` (NCHW or not; default: what a call on PyTorch's default
    (NCHW) tensors launches, then what a channels-last call does)."""
    found = []
    if conv.dtype == "f32":  # the split planes of the input and of the weight first
        for rows, name, batch in split_rows(conv):
            found.append(_traced("split", _key(split_params(rows, conv.channels, name, bool(batch)))))
    if layouts is None:
        layouts = (True, False) if writes_nchw(conv, config) else (False,)
    if config.FUSE:  # the split kernel that sums its partial sums itself
        params = implicit_params(conv, config, nchw=False, epilogue=epilogue)
        return [*found, _traced(implicit_kind(config), _key(params))]
    if config.SPLITS > 1:  # the split kernel's partial sums (one layout: channels last), then their reduction
        params = implicit_params(conv, config, nchw=False)
        reduce = split_reduce_params(conv, config, epilogue)
        return [*found, _traced(implicit_kind(config), _key(params)), _traced("split_reduce", _key(reduce))]
    params = (implicit_params(conv, config, nchw=v, epilogue=epilogue) for v in layouts)
    return [*found, *(_traced(implicit_kind(config), _key(p)) for p in params)]


def _key(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


@functools.lru_cache(maxsize=256)
def conv_plan(
    conv: Conv, budget: int | None = None, implicit: bool = True, epilogue: Epilogue | None = None
) -> ConvPlan:
    """The plan of `conv` (see the module docstring): the direct depthwise kernel where it takes the convolution
    (`depthwise_refusal`), the implicit-GEMM kernel where it does (`implicit_refusal`; `implicit=False` asks for the
    gather path instead of either), else the gather path with the batch in chunks whose column matrix fits `budget`
    (default `COLUMN_BUDGET`); `ConvError` when it cannot run. `epilogue`: a fused epilogue, which only the implicit
    kernel applies (in its store; a 1x1 then takes it rather than the pointwise GEMM, and a transposed
    convolution's phases take it where every phase runs a kernel): `CONV_EPILOGUE_PATH` for other paths."""
    if epilogue is not None:
        if implicit and conv.groups == 1 and implicit_refusal(conv) is None and not conv.transposed:
            return ConvPlan(conv, conv.batch, None, per_group=False, implicit=implicit_config(conv), epilogue=epilogue)
        found = conv_plan(conv, budget, implicit)
        if found.phases is not None and all(p.conv is not None for p in found.phases):
            return replace(found, epilogue=epilogue)
        raise ConvError(
            "CONV_EPILOGUE_PATH",
            f"a fused epilogue runs in the implicit kernel's store, and {conv} takes {found.describe()}",
        )
    if implicit and depthwise_refusal(conv) is None:
        return ConvPlan(conv, conv.batch, None, per_group=False, depthwise=depthwise_config(conv))
    if implicit and conv.transposed and transposed_refusal(conv) is None:
        if conv.groups == 1:
            return ConvPlan(conv, conv.batch, None, per_group=False, phases=_phased(conv))
        chosen = GROUPED_PHASES and conv.groups <= GROUPED_PHASES_MAX_GROUPS
        if chosen or conv.column_bytes(1) > (COLUMN_BUDGET if budget is None else budget):
            return ConvPlan(conv, conv.batch, None, per_group=False, phases=_phased(group_conv(conv)))
    if implicit and implicit_refusal(conv) is None:
        if is_pointwise(conv):
            m = conv.batch * conv.positions
            gemm = GemmProblem(m, conv.filters, conv.channels, conv.dtype, conv.dtype, "K", "K")
            per_image: GemmProblem | None = None
            if conv.positions >= POINTWISE_PER_IMAGE_POSITIONS:
                per_image = GemmProblem(
                    conv.filters, conv.positions, conv.channels, conv.dtype, conv.dtype, "K", "N", conv.batch
                )
                try:
                    plan(per_image)
                except GemmError:  # e.g. an f32 K past the batched chain: the channels-last product only
                    per_image = None
            return ConvPlan(conv, conv.batch, gemm, per_group=False, pointwise=True, nchw_gemm=per_image)
        return ConvPlan(conv, conv.batch, None, per_group=False, implicit=implicit_config(conv))
    if conv.padding_end is not None:
        raise ConvError(
            "CONV_PHASE_GATHER",
            f"{conv} is a stride phase of a transposed convolution (padding given at both ends), which only the "
            f"implicit kernel takes, and it does not: {implicit_refusal(conv) if implicit else 'it was not asked for'}",
        )
    check_shared(conv)
    images = conv.chunk(budget)
    g = conv.groups
    m = images * conv.positions
    batched = GemmProblem(conv.filters // g, m, conv.k, conv.dtype, "f32", "K", "N", g)
    try:
        plan(batched)
        return ConvPlan(conv, images, batched, per_group=False)
    except GemmError:
        if g == 1:
            raise
    return ConvPlan(conv, images, replace(batched, batch=1), per_group=True)  # f32 with K past the batched chain


class LibraryConv:
    """A forward convolution as one step of a generated solution (`argus solve`'s convolution groups): ``out =
    conv(x, weight) (+ bias)``, NCHW, on the CPU interpreter for CPU tensors (`run_on_interpreter`: small sizes)
    and on the GPU for CUDA tensors. `conv` is the captured convolution; `kernels` are the traced kernels of its
    plan, which the pipeline verifies. A call plans for the tensors it is given (their batch and spatial extents
    may differ from the captured ones)."""

    library = True

    def __init__(
        self,
        name: str,
        conv: Conv,
        order: tuple[int, ...] | None = None,
        budget: int | None = None,
        implicit: bool = True,
        epilogue: Epilogue | None = None,
        epilogue_order: tuple[int, ...] = (),
    ):
        self.name = name
        self.conv = conv
        #: a fused epilogue over the convolution's value (`conv_plan`), its operands the call's inputs at
        #: `epilogue_order`, one vector per output channel each
        self.epilogue = epilogue
        self.epilogue_order = tuple(epilogue_order)
        if epilogue is not None and len(self.epilogue_order) != len(epilogue.operands):
            raise ConvError(
                "CONV_ARGUMENTS",
                f"epilogue_order {self.epilogue_order}: the positions of the epilogue's {len(epilogue.operands)} "
                "operands",
            )
        #: False: the gather path even where the implicit kernel applies (`conv_plan`'s `implicit`)
        self.implicit = implicit
        self._at_shape: dict[tuple, Conv] = {}
        #: the positions of x, the weight and (when the convolution has one) the bias among the call's inputs
        self.order = tuple(order) if order is not None else tuple(range(3 if conv.bias else 2))
        if len(self.order) != 2 + int(conv.bias):
            operands = "x, the weight and the bias" if conv.bias else "x and the weight"
            raise ConvError("CONV_ARGUMENTS", f"order {self.order}: the positions of {operands}")
        self.budget = budget
        #: calls that were launches alone (`run_implicit_on_gpu`'s replay), by their tensors' launch signature, with
        #: the weight's version they staged: the same call again, the weight unchanged, replays them (a small
        #: convolution's call was bound by its host work: 70-134 us of Python a call against cuDNN's 17-27, session
        #: 38); a weight changed in place replaces its entry (one staged copy kept per set of tensors)
        self._replays: dict[tuple, tuple[tuple[Any, ...], tuple[Any, ...], int]] = {}

    def __repr__(self) -> str:
        return f"LibraryConv({self.name!r}, {self.conv}, order={self.order})"

    def plan(self) -> ConvPlan:
        return conv_plan(self.conv, self.budget, self.implicit, self.epilogue)

    def kernels(self) -> list[Any]:
        return self.plan().kernels()

    def conv_for(self, x: Any) -> Conv:
        """The captured convolution at `x`'s batch and spatial extents (kept per shape: a call's host time counts)."""
        shape = tuple(x.shape)
        found = self._at_shape.get(shape)
        if found is None:
            size = _triple(tuple(int(d) for d in shape[2:]), 1)
            found = replace(self.conv, batch=int(shape[0]), size=size, rank=self.conv.rank)
            if len(self._at_shape) < 64:
                self._at_shape[shape] = found
        return found

    def empty_output(self, *inputs: Any) -> Any:
        """An uninitialized output for these inputs: (N, F, *the output's spatial extents), the input's dtype."""
        import torch

        x = inputs[self.order[0]]
        conv = self.conv_for(x)
        spatial = conv.out[3 - conv.rank :]
        return torch.empty((conv.batch, conv.filters, *spatial), dtype=x.dtype, device=x.device)

    def __call__(self, *tensors: Any, device: Any = None) -> None:
        """Compute into the last of `tensors` from the inputs before it: x, the weight, and the bias when the
        convolution has one."""
        import torch

        *inputs, out = tensors
        x, w = inputs[self.order[0]], inputs[self.order[1]]
        bias = [inputs[self.order[2]]] if self.conv.bias else []
        operands = [inputs[i] for i in self.epilogue_order]
        conv = self.conv_for(x)
        if x.is_cuda:
            self._run_on_gpu(conv, x, w, bias[0] if bias else None, out, operands)
            return
        result = run_on_interpreter(
            conv,
            x.double().numpy(),
            w.double().numpy(),
            bias[0].double().numpy() if bias else None,
            self.budget,
            implicit=self.implicit,
            epilogue=self.epilogue,
            operands=[o.double().numpy() for o in operands],
        )
        out.copy_(torch.from_numpy(result).reshape(out.shape).to(out.dtype))

    def _run_on_gpu(self, conv: Conv, x: Any, w: Any, bias: Any, out: Any, operands: Any = ()) -> None:
        import torch

        from argus.kernels.matmul import prepare
        from argus.runtime.loaded import launch_signature

        key = launch_signature((x, w, out, *([] if bias is None else [bias]), *operands))
        replay = self._replays.get(key) if key is not None else None
        if replay is not None and replay[2] == w._version:  # (a weight changed in place is staged again)
            for launch in replay[0]:
                launch.launch()
            return
        epilogue = self.epilogue
        the_plan = conv_plan(conv, self.budget, self.implicit, epilogue)  # cached: a call's host time counts
        if the_plan.depthwise is not None:
            run_depthwise_on_gpu(conv, the_plan.depthwise, x, w, bias, out)
            return
        if the_plan.phases is not None and conv.groups > 1:  # each group's phases on its slices of x, w, bias, out
            one = group_conv(conv)
            for cs, fs in group_slices(conv):
                run_transposed_on_gpu(
                    one,
                    the_plan.phases,
                    x[:, cs],
                    w[cs],
                    None if bias is None else bias[fs],
                    out[:, fs],
                    epilogue,
                    [o.reshape(-1)[fs] for o in operands],
                )
            return
        if the_plan.phases is not None:
            run_transposed_on_gpu(conv, the_plan.phases, x, w, bias, out, epilogue, operands)
            return
        if the_plan.implicit is not None:
            replay = run_implicit_on_gpu(conv, the_plan.implicit, x, w, bias, out, epilogue=epilogue, operands=operands)
            if key is not None:
                self._replays.pop(key, None)  # one replay per set of tensors: the weight's latest version's
                if replay is not None:
                    if len(self._replays) >= REPLAYS_KEPT:
                        self._replays.pop(next(iter(self._replays)))
                    self._replays[key] = (*replay, w._version)
            return
        if the_plan.pointwise:
            run_pointwise_on_gpu(conv, x, w, out, the_plan.nchw_gemm is not None)
            return
        (n_, c_, f_, g_), p_ = (conv.batch, conv.channels, conv.filters, conv.groups), conv.positions
        images = the_plan.images
        x5 = x.contiguous().view(n_, c_, *conv.size)
        out3 = out.view(n_, f_, p_)
        if conv.transposed:  # the weight (C, F/g, window) as (g, F/g, C/g, window)
            stored = w.contiguous().view(g_, c_ // g_, f_ // g_, conv.window)
            a = torch.empty((g_, f_ // g_, c_ // g_, conv.window), dtype=w.dtype, device=w.device)
            _loaded("weight", _key(conv.weight_params()))(stored, a)
            a = a.view(g_, f_ // g_, conv.k)
        else:
            a = w.contiguous().view(g_, f_ // g_, conv.k)
        cols = torch.empty(
            (c_, conv.kernel[0], conv.window // conv.kernel[0], images, *conv.out), dtype=x.dtype, device=x.device
        )
        b = cols.view(g_, conv.k, images * p_)
        gather = _loaded("im2col", _key(conv.gather_params()))
        output = _loaded("output_bias" if conv.bias else "output", _key(conv.output_params()))
        if conv.upsampled:  # the chunk's input with the stride's zeros inserted, which the gather reads
            x_shape, xu_shape = conv.upsample_shapes(images)
            xu = torch.empty(xu_shape, dtype=x.dtype, device=x.device)
            upsample = _loaded("upsample", _key(conv.upsample_params()))
        for first in range(0, n_, images):
            if conv.upsampled:
                upsample(x5[first : first + images].reshape(x_shape), xu)
                gather(xu.view(images, c_, *conv.gather_size), cols)
            else:
                gather(x5[first : first + images], cols)
            if the_plan.per_group:
                y = torch.cat([_gpu_gemm(prepare, a[i], b[i]) for i in range(g_)])
            else:
                y = _gpu_gemm(prepare, a, b)
            y = y.reshape(f_, images, p_)
            chunk = out3[first : first + images]
            output(*([y, bias.contiguous(), chunk] if conv.bias else [y, chunk]))


def _gpu_gemm(prepare: Any, a: Any, b: Any) -> Any:
    import torch

    y, launches = prepare(a, b, out_dtype=torch.float32)
    for launch in launches:
        launch.launch()
    return y.contiguous()


def run_on_interpreter(
    conv: Conv,
    x: Any,
    w: Any,
    bias: Any = None,
    budget: int | None = None,
    *,
    target: Any = None,
    implicit: bool = True,
    epilogue: Epilogue | None = None,
    operands: Any = (),
) -> Any:
    """The convolution of numpy arrays x (N, C, *spatial), w (F, C/g, *window) and bias (F,) on the lane-level
    interpreter (small sizes only), through exactly the kernels and parameters a GPU call launches: the output
    (N, F, OD * OH * OW) in float64 (values of the output's dtype). `implicit=False`: the gather path, as
    `conv_plan` takes it. `epilogue`: a fused epilogue over the convolution's value, its `operands` one vector per
    output channel each (`conv_plan`, `epilogue_rows`)."""
    import numpy as np

    from argus.interp import run_kernel

    the_plan = conv_plan(conv, budget, implicit, epilogue)
    if the_plan.depthwise is not None:
        return _depthwise_on_interpreter(conv, the_plan.depthwise, x, w, bias)
    if the_plan.phases is not None and conv.groups > 1:  # each group's phases, its channels, weights and bias
        one = group_conv(conv)
        x = np.asarray(x, dtype=np.float64).reshape(conv.batch, conv.channels, *conv.size[3 - conv.rank :])
        return np.concatenate(
            [
                _transposed_on_interpreter(
                    one,
                    the_plan.phases,
                    x[:, cs],
                    np.asarray(w)[cs],
                    None if bias is None else np.asarray(bias).reshape(-1)[fs],
                    epilogue,
                    [np.asarray(o).reshape(-1)[fs] for o in operands],
                )
                for cs, fs in group_slices(conv)
            ],
            axis=1,
        )
    if the_plan.phases is not None:
        return _transposed_on_interpreter(conv, the_plan.phases, x, w, bias, epilogue, operands)
    if the_plan.implicit is not None:
        return _implicit_on_interpreter(conv, the_plan.implicit, x, w, bias, epilogue, operands)
    if the_plan.pointwise:
        weight = np.asarray(w, dtype=np.float64).reshape(conv.filters, conv.channels)
        if the_plan.nchw_gemm is not None:  # as a call on NCHW tensors: a product per image
            images = np.asarray(x, dtype=np.float64).reshape(conv.batch, conv.channels, conv.positions)
            weights = np.ascontiguousarray(np.broadcast_to(weight, (conv.batch, *weight.shape)))
            y = plan(the_plan.nchw_gemm).run_on_interpreter(weights, images, target=target)
            return np.asarray(y).reshape(conv.batch, conv.filters, conv.positions)
        rows = np.asarray(x, dtype=np.float64).reshape(conv.batch, conv.channels, -1).transpose(0, 2, 1)
        y = the_plan.gemm_plan.run_on_interpreter(rows.reshape(-1, conv.channels), weight.T, target=target)
        return np.asarray(y).reshape(conv.batch, conv.positions, conv.filters).transpose(0, 2, 1)
    n_, c_, f_, g_ = conv.batch, conv.channels, conv.filters, conv.groups
    p_, images = conv.positions, the_plan.images
    x5 = np.asarray(x, dtype=np.float64).reshape(n_, c_, *conv.size)
    a = np.asarray(w, dtype=np.float64).reshape(g_, f_ // g_, conv.k)
    if conv.transposed:  # the weight (C, F/g, window) as (g, F/g, C/g, window)
        stored = np.asarray(w, dtype=np.float64).reshape(g_, c_ // g_, f_ // g_, conv.window)
        a = np.full((g_, f_ // g_, c_ // g_, conv.window), np.nan)
        run_kernel(_traced("weight", _key(conv.weight_params())), {"W": stored, "A": a})
        a = a.reshape(g_, f_ // g_, conv.k)
    gemm_plan = the_plan.gemm_plan
    gather = _traced("im2col", _key(conv.gather_params()))
    output = _traced("output_bias" if conv.bias else "output", _key(conv.output_params()))
    out = np.full((n_, f_, p_), np.nan)
    for first in range(0, n_, images):
        cols = np.full((c_, conv.kernel[0], conv.window // conv.kernel[0], images, *conv.out), np.nan)
        chunk_x = np.ascontiguousarray(x5[first : first + images])
        if conv.upsampled:  # the stride's zeros inserted first (`conv_upsample`)
            x_shape, xu_shape = conv.upsample_shapes(images)
            xu = np.full(xu_shape, np.nan)
            run_kernel(_traced("upsample", _key(conv.upsample_params())), {"X": chunk_x.reshape(x_shape), "XU": xu})
            chunk_x = xu.reshape(images, c_, *conv.gather_size)
        run_kernel(gather, {"X": chunk_x, "COLS": cols})
        b = cols.reshape(g_, conv.k, images * p_)
        if the_plan.per_group:
            y = np.concatenate([gemm_plan.run_on_interpreter(a[i], b[i], target=target) for i in range(g_)])
        else:
            y = gemm_plan.run_on_interpreter(a if g_ > 1 else a[0], b if g_ > 1 else b[0], target=target)
        y = np.ascontiguousarray(y).reshape(f_, images, p_)
        chunk = np.full((images, f_, p_), np.nan)
        arrays = {"Y": y, "OUT": chunk}
        if conv.bias:
            arrays["BIAS"] = np.asarray(bias, dtype=np.float64).reshape(f_)
        run_kernel(output, arrays)
        out[first : first + images] = chunk
    return out


def _implicit_shapes(conv: Conv, nchw: bool = False) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The implicit kernel's X view (N·T, H, W, C) (image n's planes at n·T ... n·T + T - 1), with a column stride
    SW > 1 (N·T, H, W / SW, SW, C), 3-d (N·T, D, H, W, C), weight (T, F, taps, C) and output (N, OH, OW, F), or (N,
    F, OH, OW) with `nchw` (3-d: OD after N or F); T the split planes (3 for f32, else 1) and C
    `implicit_channels`."""
    d, h, w = conv.size
    _, sw = conv.stride[1:]
    n, c, f = conv.batch, implicit_channels(conv), conv.filters
    t = 3 if conv.dtype == "f32" else 1
    if conv.rank == 3:  # the 3-d form: depth after the image (a column stride of 1)
        out3 = conv.out
        return (t * n, d, h, w, c), (t, f, conv.window, c), (n, f, *out3) if nchw else (n, *out3, f)
    out = (n, f, conv.out[1], conv.out[2]) if nchw else (n, conv.out[1], conv.out[2], f)
    x = (t * n, h, w // sw, sw, c) if sw > 1 else (t * n, h, w, c)
    return x, (t, f, conv.window, c), out


def split_rows(conv: Conv) -> tuple[tuple[int, str, int], tuple[int, str, int]]:
    """The f32 splits' (rows, operand, batch) of the channels-last input, N images of (D·H·W, C) each (its planes
    image by image: (N, 3, D·H·W, C)), and of the weight (F·KD·KH·KW, C), not batched (its planes (3, F·taps, C))."""
    return (math.prod(conv.size), "A", conv.batch), (conv.filters * conv.window, "B", 0)


def split_params(rows: int, channels: int, operand: str, batch: bool = False) -> dict[str, Any]:
    """`split_bf16x3`'s parameters for an f32 operand stored (rows, channels), channels last, split along its rows
    (AXIS 0) into three bf16 planes (3, rows, channels padded to 8): BR divides the rows (so that plane t starts at
    row t * rows and the planes are one (3 * rows, ...) tensor), at least 32 threads a block. `batch`: a batch of
    such operands (L, rows, channels) into (L, 3, rows, padded), each image's three planes together."""
    br = next(d for d in (16, 8, 4, 2, 1) if rows % d == 0)
    vec = split_vector(channels)
    bc = max(64, 32 * vec // br)
    return {"AXIS": 0, "OPERAND": operand, "VEC": vec, "BR": br, "BC": bc} | ({"BATCH": True} if batch else {})


def _implicit_on_interpreter(
    conv: Conv, config: ImplicitConfig, x: Any, w: Any, bias: Any, epilogue: Epilogue | None = None, operands: Any = ()
) -> Any:
    """`run_on_interpreter` through the implicit kernel (and for f32 the splits first): the output (N, F, positions)
    in float64. `epilogue`, `operands`: a fused epilogue and its per-output-channel vectors (`epilogue_rows`)."""
    import numpy as np

    from argus.interp import run_kernel

    nchw = writes_nchw(conv, config)  # as a call on NCHW tensors
    xs, ws, ys = _implicit_shapes(conv, nchw=nchw)
    n, c, f = conv.batch, conv.channels, conv.filters
    x5 = np.asarray(x, dtype=np.float64).reshape(n, c, *conv.size)
    xl = np.ascontiguousarray(x5.transpose(0, 2, 3, 4, 1))  # (N, D, H, W, C)
    wl = np.ascontiguousarray(np.asarray(w, dtype=np.float64).reshape(f, c, -1).transpose(0, 2, 1))  # (F, taps, C)
    if conv.dtype == "f32":
        planes = []
        for (rows, name, batch), v in zip(split_rows(conv), (xl, wl), strict=True):
            lead = (batch,) if batch else ()
            out = np.full((*lead, 3, rows, implicit_channels(conv)), np.nan)
            kernel = _traced("split", _key(split_params(rows, c, name, bool(batch))))
            run_kernel(kernel, {"X": v.reshape(*lead, rows, c), "Y": out})
            planes.append(out)
        xl, wl = planes
    b = (
        epilogue_rows(conv, bias, operands, np)
        if epilogue is not None and epilogue.operands
        else (np.asarray(bias, dtype=np.float64).reshape(f) if conv.bias else np.zeros(1))
    )
    splits = config.SPLITS
    if config.FLAT:  # the input as it is (N, H, W, C), the output (N·OH·OW, F)
        xs, ys = xl.shape[:1] + xl.shape[2:], (n * conv.positions, f)
    arrays = {
        "X": xl.reshape(xs),
        "WT": wl.reshape(ws),
        "B": b if splits == 1 or config.FUSE else np.zeros(1),
        "Y": np.full(ys if splits == 1 else (splits, *ys), np.nan),
    }
    if config.FUSE:  # the workspace, the output and a counter per tile (zero when first used)
        arrays |= {"W": arrays["Y"], "Y": np.full(ys, np.nan), "CNT": np.zeros(implicit_tiles(conv, config), np.int32)}
    params = implicit_params(conv, config, nchw=nchw, epilogue=epilogue)
    run_kernel(_traced(implicit_kind(config), _key(params)), arrays)
    y = arrays["Y"]
    if splits > 1 and not config.FUSE:  # the partial sums' reduction, the bias and the epilogue, channels last
        reduced = {"W": y.reshape(splits, -1, f), "B": b, "Y": np.full((y[0].size // f, f), np.nan)}
        run_kernel(_traced("split_reduce", _key(split_reduce_params(conv, config, epilogue))), reduced)
        y = reduced["Y"]
    return y.reshape(n, f, -1) if nchw else y.reshape(n, -1, f).transpose(0, 2, 1)


def epilogue_rows(conv: Conv, bias: Any, operands: Any, xp: Any, dtype: Any = None) -> Any:
    """The implicit kernel's B with a fused epilogue: (rows, F), the bias (where the convolution has one) then each
    operand, a per-output-channel vector of F values in any broadcastable shape ((F,), (F, 1, 1), (1, F, 1, 1), ...);
    `xp` numpy (float64) or torch (on the operands' device, in `dtype`: the output's)."""
    rows = ([bias] if conv.bias else []) + list(operands)
    for r in rows:
        if int(math.prod(r.shape)) != conv.filters:
            raise ConvError(
                "CONV_ARGUMENTS",
                f"an epilogue operand of shape {tuple(r.shape)}: one value per output channel ({conv.filters}) is read",
            )
    if xp.__name__ == "numpy":
        return xp.stack([xp.asarray(r, dtype=xp.float64).reshape(conv.filters) for r in rows])
    return xp.stack([r.reshape(conv.filters).to(dtype) for r in rows]).contiguous()


def _transposed_on_interpreter(
    conv: Conv,
    phases: tuple[TransposedPhase, ...],
    x: Any,
    w: Any,
    bias: Any,
    epilogue: Epilogue | None = None,
    operands: Any = (),
) -> Any:
    """`run_on_interpreter` through the stride phases (`run_transposed_on_gpu`): each phase on the implicit kernel,
    its outputs placed at their interleaved positions; the output (N, F, positions) in float64."""
    import numpy as np

    n, f = conv.batch, conv.filters
    out = np.full((n, f, *conv.out), np.nan)
    weight = np.asarray(w, dtype=np.float64)
    for phase in phases:
        at = phase.positions(conv.stride)
        if phase.conv is None or phase.config is None:
            out[at] = np.asarray(bias, dtype=np.float64).reshape(1, f, 1, 1, 1) if conv.bias else 0.0
            continue
        y = _implicit_on_interpreter(phase.conv, phase.config, x, phase_weight(weight, phase), bias, epilogue, operands)
        out[at] = y.reshape(n, f, *phase.out)
    return out.reshape(n, f, -1)


def _depthwise_shapes(conv: Conv, config: DepthwiseConfig) -> dict[str, tuple[int, ...]]:
    """`conv_depthwise`'s views of the NCHW tensors: X (N, C/CB, CB, D, H, W), WT (C/CB, CB, MULT, window), B
    (C/CB, CB, MULT) or the one-element placeholder, OUT (N, C/CB, CB, MULT, OD, OH, OW)."""
    cg, mult = conv.channels // config.CB, conv.filters // conv.channels
    return {
        "X": (conv.batch, cg, config.CB, *conv.size),
        "WT": (cg, config.CB, mult, conv.window),
        "B": (cg, config.CB, mult) if conv.bias else (1,),
        "OUT": (conv.batch, cg, config.CB, mult, *conv.out),
    }


def _depthwise_on_interpreter(conv: Conv, config: DepthwiseConfig, x: Any, w: Any, bias: Any) -> Any:
    """`run_on_interpreter` through the direct depthwise kernel: the output (N, F, positions) in float64."""
    import numpy as np

    from argus.interp import run_kernel

    shapes = _depthwise_shapes(conv, config)
    arrays = {
        "X": np.asarray(x, dtype=np.float64).reshape(shapes["X"]),
        "WT": np.asarray(w, dtype=np.float64).reshape(shapes["WT"]),
        "B": np.asarray(bias, dtype=np.float64).reshape(shapes["B"]) if conv.bias else np.zeros(1),
        "OUT": np.full(shapes["OUT"], np.nan),
    }
    run_kernel(_traced("depthwise", _key(depthwise_params(conv, config))), arrays)
    return arrays["OUT"].reshape(conv.batch, conv.filters, conv.positions)


def run_depthwise_on_gpu(conv: Conv, config: DepthwiseConfig, x: Any, w: Any, bias: Any, out: Any) -> None:
    """The direct depthwise kernel on CUDA tensors x (N, C, *spatial), w (F, 1, *window), bias (F,) or None, into
    `out` (N, F, *output spatial): NCHW views of the tensors, no copies where they are contiguous."""
    import torch

    shapes = _depthwise_shapes(conv, config)
    if conv.bias:
        b = bias.contiguous().view(shapes["B"])
    else:
        b = _zero_bias(out)
    y = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    kernel = _loaded("depthwise", _key(depthwise_params(conv, config)))
    kernel(x.contiguous().view(shapes["X"]), w.contiguous().view(shapes["WT"]), b, y.view(shapes["OUT"]))
    if y is not out:
        out.copy_(y)


def _channels_last(conv: Conv, x: Any) -> Any:
    """x as (N, H, W, C), 3-d (N, D, H, W, C): read in place where x is channels last in memory, else copied."""
    if conv.rank == 3:
        xv = x.reshape(conv.batch, conv.channels, *conv.size).permute(0, 2, 3, 4, 1)
    else:
        xv = x.reshape(conv.batch, conv.channels, conv.size[1], conv.size[2]).permute(0, 2, 3, 1)
    return xv if xv.is_contiguous() else xv.contiguous()


def _to_channels_first(conv: Conv, y: Any) -> Any:
    """A channels-last output (N, [OD,] OH, OW, F) as (N, F, [OD,] OH, OW) (a view)."""
    return y.permute(0, 4, 1, 2, 3) if conv.rank == 3 else y.permute(0, 3, 1, 2)


def _channels_last_output(conv: Conv, out: Any) -> tuple[Any, bool]:
    """(the output as (N, OH, OW, F): `out` where it is channels last in memory, else a fresh tensor; whether it is
    `out`'s memory): the channels-last output the implicit kernel and the pointwise GEMM write."""
    import torch

    n, f = conv.batch, conv.filters
    spatial = conv.out if conv.rank == 3 else conv.out[1:]
    o4 = out.view(n, f, *spatial) if out.is_contiguous() else out.reshape(n, f, *spatial)
    yv = o4.permute(0, *range(2, 2 + len(spatial)), 1)
    if yv.is_contiguous() and o4.data_ptr() == out.data_ptr():
        return yv, True
    return torch.empty((n, *spatial, f), dtype=out.dtype, device=out.device), False


def run_pointwise_on_gpu(conv: Conv, x: Any, w: Any, out: Any, per_image: bool = False) -> None:
    """A pointwise convolution (`is_pointwise`) as one GEMM of the library: with `per_image` (the plan has the
    batched product) and NCHW tensors, W (F, C) @ X[n] (C, H*W) for every image n in one batched launch, written
    into `out` as it is (the weight repeated per image once and kept, as the implicit kernel's weights are);
    otherwise on the channels-last views."""
    from argus.kernels.matmul import prepare

    key = _call_key("pointwise", per_image, conv, w._version, x, w, out)
    found = _POINTWISE.get(key)
    if found is not None:  # the same tensors as a call before: its launches, which write into `out` itself
        for launch in found:
            launch.launch()
        return
    if per_image and x.is_contiguous() and out.is_contiguous():
        n, c, f, p = conv.batch, conv.channels, conv.filters, conv.positions
        a = _staged(_weight_key("per-image weight", w, n), lambda: w.reshape(1, f, c).expand(n, f, c).contiguous(), w)
        y, launches = prepare(a, x.view(n, c, p), out=out.view(n, f, p))
        for launch in launches:
            launch.launch()
        if y.data_ptr() != out.data_ptr():
            out.view(n, f, p).copy_(y)
        elif not launches.copies:  # x read where it is (contiguous), the weight's staged form by its version
            _remember_call(_POINTWISE, key, launches, (x, w, out))
        return

    xv = _channels_last(conv, x)
    y, in_place = _channels_last_output(conv, out)
    m = conv.batch * conv.positions
    wv = w.reshape(conv.filters, conv.channels)
    c, launches = prepare(xv.view(m, conv.channels), wv.t(), out=y.view(m, -1))
    for launch in launches:
        launch.launch()
    if c.data_ptr() != y.data_ptr():
        y.view(m, -1).copy_(c)
    elif in_place and not launches.copies and shares_storage(xv, x) and shares_storage(wv, w):  # read in place
        _remember_call(_POINTWISE, key, launches, (x, w, out))
    if not in_place:
        out.copy_(_to_channels_first(conv, y).reshape(out.shape))  # (3-d: five dimensions, not four)


#: The launches of pointwise calls that wrote their output in place and read their operands where they are (no copy
#: made when they were prepared: `matmul.Launches.copies`), by `_call_key`: a call on the same tensors launches them
#: again (a GEMM call's planning, tuning lookup and binding took 150 us of host time an H200 call,
#: ten times its kernel on ResNet-50's 1x1 layers; benchmarks/results/2026-12-01-conv-remeasure/).
_POINTWISE: dict[tuple, Any] = {}
_CALLS_MAX = 64


def _call_key(kind: str, *parts: Any) -> tuple:
    """What a call's launches depend on: `parts` (the convolution, flags, a weight's version where a staged form of it
    is launched) and its tensors' launch signature (`argus.runtime.loaded.launch_signature`: the stream, each tensor's
    address and layout). The launches hold addresses only: a tensor freed and another of the same layout made at its
    address is what the launch reads then, as it should."""
    import torch

    from argus.runtime.loaded import launch_signature

    tensors = tuple(part for part in parts if isinstance(part, torch.Tensor))
    others = tuple(part for part in parts if not isinstance(part, torch.Tensor))
    return (kind, *others, launch_signature(tensors))


def _remember_call(table: dict[tuple, Any], key: tuple, launches: Any, users: tuple) -> None:
    """Keep `launches` under `key` with the buffers they address that are not the caller's tensors `users` (a staged
    weight, a workspace), the oldest entry dropped past `_CALLS_MAX`. The caller's tensors are not kept: a cache
    entry must not hold a model's activations alive."""
    if len(table) >= _CALLS_MAX:
        table.pop(next(iter(table)))
    mine = {t.untyped_storage().data_ptr() for t in users}
    own = [t for t in getattr(launches, "keep", []) if t.untyped_storage().data_ptr() not in mine]
    table[key] = _Remembered(tuple(launches), own)


class _Remembered(tuple):
    """Prepared launches and the buffers of their own they address (kept alive with them)."""

    def __new__(cls, launches: tuple, own: list) -> _Remembered:
        made = super().__new__(cls, launches)
        made.own = own
        return made


#: Channels-last copies of weights and the bias placeholders the implicit kernel was given, so that repeated calls
#: pass the same tensors (the prepared-launch cache is keyed by the tensors' addresses). An entry keeps its source
#: tensor alive, so that no other tensor can take its address while the entry stands; a weight changed in place
#: has another version and is copied again.
_STAGED: dict[tuple, tuple[Any, Any]] = {}
#: Entries kept, the least recently used dropped first: a transposed convolution's phases take two each (the phase's
#: weight and its channels-last or split form), so a model of a few such layers holds dozens.
_STAGED_MAX = 128
#: The most replays (`LibraryConv._replays`) one convolution keeps: one per set of tensors it is called on.
REPLAYS_KEPT = 8


def _weight_key(kind: str, w: Any, *extra: Any) -> tuple:
    """A staged form of weight `w`: its memory, version (a weight changed in place is staged again) and layout, and
    what else the form depends on."""
    return (kind, w.data_ptr(), w._version, tuple(w.shape), tuple(w.stride()), w.dtype, str(w.device), *extra)


def _zero_bias(out: Any) -> Any:
    """The one-element bias placeholder a kernel without a bias is given (the same tensor every call)."""
    import torch

    return _staged(("bias", out.dtype, str(out.device)), lambda: torch.zeros(1, dtype=out.dtype, device=out.device))


def _staged(key: tuple, make: Any, source: Any = None) -> Any:
    """The staged form under `key`, made by `make()` the first time (kept with `source`, least recently used
    first out)."""
    found = _STAGED.pop(key, None)
    if found is None:
        while len(_STAGED) >= _STAGED_MAX:
            _STAGED.pop(next(iter(_STAGED)))
        found = (source, make())
    _STAGED[key] = found  # the most recently used last
    return found[1]


def implicit_input(conv: Conv, x: Any) -> Any:
    """x (N, C, *spatial) as the implicit kernel reads it (`_implicit_shapes`' X): channels last (read in place where
    x is, else copied), for f32 its three split planes (`split_bf16x3`)."""
    c = conv.channels
    xv = _channels_last(conv, x)
    if conv.dtype == "f32":  # each image's three planes together: plane t of image n is X's image 3n + t
        xv = _split_on_gpu(xv.reshape(conv.batch, -1, c), c, "A", implicit_channels(conv))
    return xv.reshape(_implicit_shapes(conv)[0])


def run_implicit_on_gpu(
    conv: Conv,
    config: ImplicitConfig,
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    xv: Any = None,
    epilogue: Epilogue | None = None,
    operands: Any = (),
) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """The implicit kernel on CUDA tensors x (N, C, *spatial), w (F, C, *window), bias (F,) or None, into `out`
    (N, F, *output spatial). x is read in place where it is channels last (``torch.channels_last`` for 2-d: NHWC
    in memory), else copied to NHWC first; the kernel writes `out` in place where it is contiguous (channels first:
    the kernel's NCHW epilogue) or channels last, else a fresh NHWC tensor that is copied into `out` after. f32: the
    input's and the weight's split planes are written first (`split_bf16x3`). `xv`: the input as `implicit_input`
    gives it, where the caller has it already (x is then not read). `epilogue`, `operands`: a fused epilogue and its
    per-output-channel vectors (`epilogue_rows`).

    Returns the call's replay where it was its launches alone (x read and `out` written in place, the bias given
    as it is, no split planes, no epilogue operands to gather): (the prepared launches, the tensors they address
    that the caller does not hold: the staged weight, the bias placeholder, split-K's workspace), which launched
    again on the same tensors compute the same call; None otherwise."""
    import torch

    xs, ws, _ = _implicit_shapes(conv)
    c, f = conv.channels, conv.filters
    nchw = out.is_contiguous() and writes_nchw(conv, config)
    if nchw:
        y, in_place = out.view(_implicit_shapes(conv, nchw=True)[2]), True
    else:
        y, in_place = _channels_last_output(conv, out)

    def weight() -> Any:
        wl = w.reshape(f, c, -1).permute(0, 2, 1).contiguous()
        return _split_on_gpu(wl.view(-1, c), c, "B", implicit_channels(conv)).view(ws) if conv.dtype == "f32" else wl

    # the staged form depends on the padded channels too (f32's split planes: 8 or, with a stride, 64)
    wv = _staged(_weight_key("weight", w, implicit_channels(conv)), weight, source=w).view(ws)
    given = xv is not None
    if xv is None:
        xv = implicit_input(conv, x)
    if epilogue is not None and epilogue.operands:  # the bias, then each operand: one row per vector
        b = epilogue_rows(conv, bias, operands, torch, out.dtype)
    elif conv.bias:
        b = bias.contiguous()
    else:
        b = _zero_bias(out)
    launches, work = prepare_implicit(conv, config, xv.reshape(xs), wv, b, y, nchw=nchw, epilogue=epilogue)
    for launch in launches:
        launch.launch()
    if not in_place:
        out.copy_(_to_channels_first(conv, y).reshape(out.shape))
        return None
    pure = not given and conv.dtype != "f32" and xv.data_ptr() == x.data_ptr() and (bias is None or b is bias)
    if not pure or (epilogue is not None and epilogue.operands):
        return None
    return tuple(launches), (wv, b, *work)


def prepare_implicit(
    conv: Conv, config: ImplicitConfig, xv: Any, wv: Any, b: Any, y: Any, *, nchw: bool, epilogue: Any = None
) -> tuple[list[Any], tuple[Any, ...]]:
    """The prepared launches of `conv` on `config` (CUDA tensors as the kernel reads them: `_implicit_shapes`' X and
    WT views, B the bias rows or a placeholder, Y the output, channels first with `nchw`): the implicit kernel, and
    split along K (`ImplicitConfig.SPLITS`) the f32 workspace of its partial sums and `conv_split_reduce`, which
    sums them into Y (channels last) with the bias and `epilogue` (with `ImplicitConfig.FUSE`, one launch of
    `conv_im2col_split_fused` and its counters; on a GPU of fewer SMs than the plan's blocks, the two launches); and
    the workspace (empty unsplit), which must stay alive as long as the launches may run."""
    import torch

    if config.FUSE and flat_fuse_refusal(conv, config, device_sms(y.device)) is not None:
        config = replace(config, FUSE=False)  # fewer SMs than the plan's one wave (a MIG slice): two launches
    params = implicit_params(conv, config, nchw=nchw, epilogue=epilogue)
    f = conv.filters
    kernel = _loaded(implicit_kind(config), _key(params))
    if config.FLAT:  # the input (N, H, W, C) as it is in memory (not the strided view), the output (N·OH·OW, F)
        xv, y = xv.reshape(conv.batch, *conv.size[1:], conv.channels), y.view(-1, f)
    if config.SPLITS == 1:
        return [kernel.prepare(xv, wv, b, y)], ()
    work = torch.empty((config.SPLITS, *y.shape), dtype=torch.float32, device=y.device)
    if config.FUSE:  # one launch: the slices, a counter per tile (zeroed once, reused by every relaunch), the sum
        counters = torch.zeros(implicit_tiles(conv, config), dtype=torch.int32, device=y.device)
        return [kernel.prepare(xv, wv, b, work, y, counters)], (work, counters)
    return [
        kernel.prepare(xv, wv, _zero_bias(work), work),
        _loaded("split_reduce", _key(split_reduce_params(conv, config, epilogue))).prepare(
            work.view(config.SPLITS, -1, f), b, y.view(-1, f)
        ),
    ], (work,)


def phase_weight(w: Any, phase: TransposedPhase) -> Any:
    """The forward weight (F, C, *the phase's window) of a stride phase, from the transposed convolution's weight w
    (C, F, *window): its offsets `phase.taps` in their order (numpy or torch)."""
    conv = phase.conv
    assert conv is not None
    w5 = w.reshape(w.shape[0], w.shape[1], *(1,) * (5 - w.ndim), *w.shape[2:])
    td, th, tw = (list(t) for t in phase.taps)
    picked = w5[:, :, td][:, :, :, th][:, :, :, :, tw]
    moved = picked.transpose(1, 0, 2, 3, 4) if hasattr(picked, "__array_interface__") else picked.permute(1, 0, 2, 3, 4)
    return moved.reshape(conv.filters, conv.channels, *conv.kernel[3 - conv.rank :])


def run_transposed_on_gpu(
    conv: Conv,
    phases: tuple[TransposedPhase, ...],
    x: Any,
    w: Any,
    bias: Any,
    out: Any,
    epilogue: Epilogue | None = None,
    operands: Any = (),
) -> None:
    """A transposed convolution as its stride phases on the implicit kernel (`transposed_phases`): one phase (stride
    1) writes `out` itself; several share the input as the kernel reads it (`implicit_input`, split once for f32),
    each writes a fresh NCHW tensor that is copied into its interleaved positions of `out`, and a phase no window
    offset reaches is the bias (or zero): where several are, one fill of the whole output first (level 1's 81: 16 of
    25 phases; 16 strided fills took 1.64 ms of its 2.92, one fill and the rest 2.02 ms in all). The phases' weights
    are gathered once and kept (as the implicit kernel's are)."""
    import torch

    def weight(phase: TransposedPhase) -> Any:
        return _staged(
            _weight_key("phase weight", w, phase.taps), lambda: phase_weight(w, phase).contiguous(), source=w
        )

    if len(phases) == 1 and phases[0].conv is not None and phases[0].config is not None:
        run_implicit_on_gpu(
            phases[0].conv, phases[0].config, x, weight(phases[0]), bias, out, epilogue=epilogue, operands=operands
        )
        return
    n, f = conv.batch, conv.filters
    whole = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    o5 = whole.view(n, f, *conv.out)
    first = next((p.conv for p in phases if p.conv is not None), None)  # every phase shares the input's form
    xv = implicit_input(first, x) if first is not None else None
    alone = [p for p in phases if p.conv is None or p.config is None]  # phases no window offset reaches
    if len(alone) > 1:  # one contiguous fill of the whole output, not a strided fill per phase (the others overwrite)
        o5.copy_((bias.view(1, f, 1, 1, 1) if bias is not None else o5.new_zeros(())).expand_as(o5))
    for phase in phases:
        at = phase.positions(conv.stride)
        if phase.conv is None or phase.config is None:
            if len(alone) == 1:
                o5[at] = bias.view(1, f, 1, 1, 1) if bias is not None else 0
            continue
        y = torch.empty((n, f, *phase.out[3 - conv.rank :]), dtype=out.dtype, device=out.device)
        run_implicit_on_gpu(phase.conv, phase.config, x, weight(phase), bias, y, xv, epilogue, operands)
        o5[at] = y.view(n, f, *phase.out)
    if whole is not out:
        out.copy_(whole)


def _split_on_gpu(v: Any, channels: int, operand: str, padded: int) -> Any:
    """The three bf16 planes (3, rows, padded) of an f32 operand (rows, channels), or of a batch of them (L, rows,
    channels) into (L, 3, rows, padded), by `split_bf16x3`."""
    import torch

    lead, rows = tuple(v.shape[:-2]), v.shape[-2]
    planes = torch.empty((*lead, 3, rows, padded), dtype=torch.bfloat16, device=v.device)
    _loaded("split", _key(split_params(rows, channels, operand, bool(lead))))(v, planes)
    return planes


__all__ = [
    "COLUMN_BUDGET",
    "Conv",
    "ConvError",
    "ConvPlan",
    "DepthwiseConfig",
    "ImplicitConfig",
    "LibraryConv",
    "TransposedPhase",
    "conv_output",
    "conv_output_bias",
    "conv_depthwise",
    "conv_plan",
    "conv_transpose_weight",
    "conv_upsample",
    "depthwise_config",
    "depthwise_cost",
    "depthwise_params",
    "depthwise_refusal",
    "im2col",
    "implicit_channels",
    "implicit_config",
    "implicit_params",
    "flat_candidates",
    "flat_config",
    "flat_fuse_refusal",
    "flat_params",
    "flat_refusal",
    "flat_tile_time",
    "flat_widths",
    "implicit_kind",
    "implicit_refusal",
    "writes_nchw",
    "is_pointwise",
    "run_depthwise_on_gpu",
    "implicit_input",
    "phase_weight",
    "run_implicit_on_gpu",
    "run_pointwise_on_gpu",
    "run_transposed_on_gpu",
    "transposed_phases",
    "transposed_refusal",
    "split_params",
    "split_rows",
    "run_on_interpreter",
]
