"""Kernels around TMA im2col loads (``X.im2col(...)``): a probe that loads one tile of a convolution's flattened
output positions for one filter tap and stores it, and one misuse per VARIANT of `im2col_misuse`."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def im2col_probe(
    X: T.Tensor[("N", "H", "W", "C"), "IN"],
    Y: T.Tensor[("M", "C"), "IN"],
    BM: int = 64,
    K: int = 3,
    S: int = 1,
    P: int = 1,
    TH: int = 0,
    TW: int = 0,
    IN: str = "bf16",
    START: str = "derived",
):
    """START: the load's start ``"derived"`` by X.im2col from the position, ``"bound"`` with T.let of
    X.im2col_pixel (the same pixel, computed once), or ``"wrong"`` (the first tile's for every block).

    Y[p, :] = X's pixel that output position p (flattened over N, OH, OW) reads at filter tap (TH, TW) of a KxK
    convolution of stride S and padding P (zero where that pixel is padding): one im2col load of BM positions per
    block."""
    T.assume(f"C == 64 and M == N * ((H + {2 * P} - {K}) // {S} + 1) * ((W + {2 * P} - {K}) // {S} + 1)")
    with T.grid(T.cdiv(Y.shape[0], BM), threads=128) as blocks:
        bx = blocks[0]
        sA = T.alloc_shared((BM, 64), X.dtype, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0], expect_bytes=BM * 64 * X.dtype.itemsize)
        box = {"lower": (-P, -P), "upper": (P - (K - 1), P - (K - 1)), "strides": (S, S)}
        pixel = X.im2col_pixel(bx * BM if START != "wrong" else 0, **box)
        with T.let(pixel[0], "image") as n0, T.let(pixel[1], "row") as h0, T.let(pixel[2], "column") as w0:
            start = None if START == "derived" else (n0, h0, w0)
            src = X.im2col(bx * BM, 0, pixels=BM, channels=64, offsets=(TH, TW), start=start, **box)
            T.copy(src, sA, atom="tma", mbarrier=bar[0])
        T.mbarrier_wait(bar[0], phase=0)
        T.copy(sA, Y.tile((bx, 0), (BM, 64)))


# stride 2, padding 1: base pixels -1, 1, 3, ...; a tile starting at an odd output column of a width-9 row is
# still on the grid, so break it with a padding the start does not subtract
#: One bad use of ``X.im2col`` per VARIANT of `im2col_misuse` (each must be refused at trace time).
MISUSES = {
    "one corner": {"lower": (-1,)},  # one corner per spatial dimension
    "corner range": {"lower": (-200, -1)},  # a 4-d tensor's corners lie in [-128, 127]
    "stride": {"strides": (9, 1)},
    "pixels": {"pixels": 300},  # the hardware takes 1024; argus lays out tiled boxes of at most 256 rows
    "negative offset": {"offsets": (0, -1)},  # unsigned
    "channels": {"channels": 300},
    "cp.async": {},  # an im2col source is a TMA load's only
}


@argus.kernel
def im2col_misuse(X: T.Tensor[("N", "H", "W", "C"), T.bf16], Y: T.Tensor[("M", "C"), T.bf16], VARIANT: str = ""):
    base = {"pixels": 64, "channels": 64, "offsets": (0, 0), "lower": (-1, -1), "upper": (-1, -1), "strides": (1, 1)}
    with T.grid(1, threads=128):
        sA = T.alloc_shared((64, 64), T.bf16, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        src = X.im2col(0, 0, **(base | MISUSES[VARIANT]))
        if VARIANT == "cp.async":
            T.copy(src, sA, atom="cp.async")
        else:
            T.copy(src, sA, atom="tma", mbarrier=bar[0])
