"""A persistent grid whose blocks walk the tiles in a `T.tile_order` (tests/verify/test_tile_lemma.py)."""

import argus
import argus.lang as T


@argus.kernel
def persistent_fill(
    C: T.Tensor[("M", "N"), T.f32],
    BM: int = 32,
    BN: int = 32,
    ORDER: str = "grouped",
    GROUP: int = 8,
    CLAMP: bool = False,
    STRIDE: int = 0,
):
    """Each of 4 blocks walks the tiles in ORDER and fills its tile of C (STRIDE: the blocks' stride, 4 when 0)."""
    tiles_m, tiles_n = T.cdiv(M, BM), T.cdiv(N, BN)
    tiles = tiles_m * tiles_n
    with T.grid(4, threads=128) as (bx,):
        acc = T.alloc_fragment((BM, BN), T.f32)
        for it in T.serial(T.cdiv(tiles, 4)):
            t = bx + it * (STRIDE or 4)
            with T.if_(t < tiles):
                bm, bn = T.tile_order(t, (tiles_m, tiles_n), ORDER, GROUP, clamp=CLAMP)
                T.fill(acc, 0.0)
                T.copy(acc, C.tile((bm, bn), (BM, BN)))
