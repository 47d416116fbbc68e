"""The kernel of `test_engine_memo.py`: a tiled copy, with its store moved `bias` tiles."""

from typing import Any

import argus
import argus.lang as T


def tiled_copy(bias: int = 0) -> Any:
    """Y[b] = X[b] per tile of 128 elements; `bias` 1 stores each tile one further (the first is never written)."""

    @argus.kernel
    def copy(X: T.Tensor[("M",), T.f32], Y: T.Tensor[("M",), T.f32], B: int = 128):
        with T.grid(T.cdiv(M, B), threads=32) as (b,):
            x = T.alloc_fragment((B,), T.f32)
            T.copy(X.tile(b, B), x)
            T.copy(x, Y.tile(b + bias, B))

    return copy.trace()
