"""Small kernels around ``T.copy(..., atom="tma.store", staging=...)``: one correct store of a 128x64 wgmma
accumulator (two warpgroups, one chunk pair), and one seeded misuse per VARIANT (the test says what each must
raise or report)."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def tma_store_tile(
    A: T.Tensor[("M", "N"), "f32"],
    C: T.Tensor[("M", "N"), "OUT"],
    OUT: str = "bf16",
    VARIANT: str = "ok",
):
    """C = A (converted to OUT) through a wgmma-accumulator fragment and a staged TMA store (VARIANT ``"ok"``)."""
    if VARIANT != "no_assume":
        T.assume("N % 8 == 0")
    with T.grid(T.cdiv(M, 128), T.cdiv(N, 64), threads=256) as (bm, bn):
        width = 128 // C.dtype.itemsize
        swizzle = 0 if VARIANT == "no_swizzle" else 128
        sC = T.alloc_shared((2, 128, 32 if VARIANT == "bad_shape" else width), C.dtype, swizzle=swizzle)
        if VARIANT == "not_wgmma":
            acc = T.alloc_fragment((128, 64), T.f32)
        else:
            acc = T.alloc_fragment((128, 64), T.f32, mma=T.wgmma_atom(64, T.bf16))
        T.copy(A.tile((bm, bn), (128, 64)), acc)
        if VARIANT == "dst_read":
            T.copy(C.tile((bm, bn), (128, 64)), acc)
        if VARIANT == "no_staging":
            T.copy(acc, C.tile((bm, bn), (128, 64)), atom="tma.store")
        elif VARIANT == "staging_on_plain_copy":
            T.copy(acc, C.tile((bm, bn), (128, 64)), staging=sC)
        else:
            T.copy(acc, C.tile((bm, bn), (128, 64)), atom="tma.store", staging=sC)
        if VARIANT == "staging_reused":
            T.fill(sC, 0.0)
