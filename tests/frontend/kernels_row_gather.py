"""A row-gather kernel for tests/frontend/test_gather.py: the gather template's kernel with the row read straight
from the index (no wrap of a negative one), to show that a window's load is masked whatever the index holds."""

from __future__ import annotations

import argus
import argus.lang as T


@argus.kernel
def trusting_gather(
    X: T.Tensor[("A", "R", "C"), T.f32],  # noqa: N803
    IDX: T.Tensor[("N",), T.i64],  # noqa: N803
    OUT: T.Tensor[("A", "N", "C"), T.f32],  # noqa: N803
    BN: int = 128,
):
    """O[a, n, :] = X[a, IDX[n], :], the window's row the index as it is (any content of IDX can put it outside X:
    the load is predicated on it)."""
    T.assume("C % 4 == 0")
    with T.grid(N, T.cdiv(C, BN), A, threads=32) as (n, bn, a):
        idx = IDX[n]
        v = T.alloc_fragment((1, BN), T.f32)
        T.copy(X.window((a, idx, bn * BN), (None, 1, BN)), v)
        T.copy(v, OUT.window((a, n, bn * BN), (None, 1, BN)))
