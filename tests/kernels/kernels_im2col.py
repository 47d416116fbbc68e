"""Kernels around TMA im2col loads (``X.im2col(...)``): a probe that loads one tile of a convolution's flattened
output positions for one filter tap and stores it, and a load whose start is off its traversal grid."""

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
):
    """Y[p, :] = X's pixel that output position p (flattened over N, OH, OW) reads at filter tap (TH, TW) of a KxK
    convolution of stride S and padding P (zero where that pixel is padding): one im2col load of BM positions per
    block."""
    N, H, W, C = X.shape  # noqa: N806
    OH = (H + 2 * P - K) // S + 1  # noqa: N806
    OW = (W + 2 * P - K) // S + 1  # noqa: N806
    T.assume(f"C == 64 and M == N * ((H + {2 * P} - {K}) // {S} + 1) * ((W + {2 * P} - {K}) // {S} + 1)")
    with T.grid(T.cdiv(Y.shape[0], BM), threads=128) as blocks:
        bx = blocks[0]
        sA = T.alloc_shared((BM, 64), X.dtype, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        p0 = bx * BM
        n0, rest = p0 // (OH * OW), p0 % (OH * OW)
        oh, ow = rest // OW, rest % OW
        T.mbarrier_arrive(bar[0], expect_bytes=BM * 64 * X.dtype.itemsize)
        src = X.im2col(
            (n0, oh * S - P, ow * S - P, 0),
            pixels=BM,
            channels=64,
            offsets=(TH, TW),
            lower=(-P, -P),
            upper=(P - (K - 1), P - (K - 1)),
            strides=(S, S),
        )
        T.copy(src, sA, atom="tma", mbarrier=bar[0])
        T.mbarrier_wait(bar[0], phase=0)
        T.copy(sA, Y.tile((bx, 0), (BM, 64)))


# stride 2, padding 1: base pixels -1, 1, 3, ...; a tile starting at an odd output column of a width-9 row is
# still on the grid, so break it with a padding the start does not subtract
@argus.kernel
def off_grid(X: T.Tensor[("N", "H", "W", "C"), T.bf16], Y: T.Tensor[("M", "C"), T.bf16]):
    T.assume("C == 64")
    with T.grid(1, threads=128):
        sA = T.alloc_shared((16, 64), T.bf16, swizzle=128)
        bar = T.alloc_mbarrier(1, arrive_count=1)
        T.mbarrier_arrive(bar[0], expect_bytes=16 * 64 * 2)
        src = X.im2col(
            (0, 0, 0, 0), pixels=16, channels=64, offsets=(0, 0), lower=(-1, -1), upper=(-1, -1), strides=(2, 2)
        )
        T.copy(src, sA, atom="tma", mbarrier=bar[0])
        T.mbarrier_wait(bar[0], phase=0)
        T.copy(sA, Y.tile((0, 0), (16, 64)))


#: One bad use of ``X.im2col`` per VARIANT of `im2col_misuse` (each must be refused at trace time).
MISUSES = {
    "one corner": {"lower": (-1,)},  # one corner per spatial dimension
    "corner range": {"lower": (-200, -1)},  # a 4-d tensor's corners lie in [-128, 127]
    "stride": {"strides": (9, 1)},
    "pixels": {"pixels": 2000},
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
        src = X.im2col((0, -1, -1, 0), **(base | MISUSES[VARIANT]))
        if VARIANT == "cp.async":
            T.copy(src, sA, atom="cp.async")
        else:
            T.copy(src, sA, atom="tma", mbarrier=bar[0])
