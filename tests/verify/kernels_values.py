"""Kernels for `test_values.py`: the corpus's grouped row kernel with its declaration of ``offs`` chosen, and
declarations the DSL refuses."""

from typing import Any

import argus
import argus.lang as T


def grouped_rows_declared(declare: str, bump: int = 0):
    """The corpus's grouped row kernel with the declaration of `offs` chosen: "all", "range" (no order) or "none";
    `bump` moves each expert's bound that many rows past its end."""

    @argus.kernel
    def kernel(
        X: T.Tensor[("R", "N"), T.f32],
        offs: T.Tensor[("E",), T.i32],
        Y: T.Tensor[("R", "N"), T.f32],
        BM: int = 16,
        BN: int = 32,
    ):
        T.assume("N % 4 == 0")
        if declare == "all":
            T.assume_values(offs, lo=0, hi="R", nondecreasing=True)
        elif declare == "range":
            T.assume_values(offs, lo=0, hi="R")
        with T.grid(E, T.cdiv(R, BM), T.cdiv(N, BN), threads=128) as (g, bm, bn):
            start = T.where(g > 0, offs[T.maximum(g - 1, 0)], 0)
            x = T.alloc_fragment((BM, BN), T.f32)
            T.copy(X.window((start + bm * BM, bn * BN), (BM, BN)), x)
            T.copy(x * 2.0, Y.window((start + bm * BM, bn * BN), (BM, BN), bound=(offs[g] + bump, None)))

    return kernel


def refusing(args: dict[str, Any]) -> Any:
    """A kernel whose ``T.assume_values`` takes `args` (``tensor`` names the tensor: X f32, offs i32 1-d, M2 i32
    2-d, tiles i32 1-d; in ``tile_counts`` too; ``first``: offs declared nondecreasing from 0 before it)."""

    @argus.kernel
    def kernel(
        X: T.Tensor[("R",), T.f32],
        offs: T.Tensor[("E",), T.i32],
        M2: T.Tensor[("E", "E"), T.i32],
        tiles: T.Tensor[("E",), T.i32],
    ):
        tensors = {"X": X, "offs": offs, "M2": M2, "tiles": tiles}
        if args.get("first"):  # the segments' own declaration, which tile_counts= needs before it
            T.assume_values(offs, lo=0, nondecreasing=True)
        given = {k: v for k, v in args.items() if k not in ("tensor", "first")}
        if isinstance(given.get("tile_counts"), tuple):
            name, tile = given["tile_counts"]
            given["tile_counts"] = (tensors[name], tile)
        elif "tile_counts" in given:
            given["tile_counts"] = tensors[given["tile_counts"]]
        T.assume_values(tensors[args["tensor"]], **given)
        with T.grid(1, threads=128) as (bx,):
            pass

    return kernel
