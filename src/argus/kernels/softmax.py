"""Row softmax and layer norm: one block per BM rows, the whole row in registers, row statistics
combined with warp shuffles."""

from __future__ import annotations

import argus
import argus.lang as T

LOG2E = 1.4426950408889634


@argus.kernel
def softmax(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    """Y = softmax(X, dim=1) for rows of at most BN elements (masked past N)."""
    T.assume(N <= BN)  # one tile per row: longer rows would be left unwritten (COVERAGE_OUTPUT)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x, pad=float("-inf"))  # masked columns must not win the max
        row_max = T.reduce_max(x, axis=1)
        e = T.exp2((x - row_max[:, None]) * LOG2E)  # exp(x - max) with the scale folded into exp2
        row_sum = T.reduce_sum(e, axis=1)
        # invariant: the statistics that rescale row r were computed from row r of X
        T.assert_tag(lambda v, m, s: (v[0] == m[0]) & (v[0] == s[0]), e, row_max[:, None], row_sum[:, None])
        T.copy(e / row_sum[:, None], Y.tile((bm, 0), (BM, BN)))


@argus.kernel
def layer_norm(
    X: T.Tensor[("M", "N"), T.f32],
    W: T.Tensor[("N",), T.f32],
    Bias: T.Tensor[("N",), T.f32],
    Y: T.Tensor[("M", "N"), T.f32],
    BM: int = 4,
    BN: int = 128,
    EPS: float = 1e-5,
):
    """Y = (X - mean) / sqrt(var + eps) * W + Bias over rows of at most BN elements. Masked
    columns read 0, so the sums of x and x*x are exact and the statistics divide by N."""
    T.assume(N <= BN)  # one tile per row: longer rows would be left unwritten (COVERAGE_OUTPUT)
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), x)
        mean = T.reduce_sum(x, axis=1) / N
        var = T.reduce_sum(x * x, axis=1) / N - mean * mean
        rstd = T.rsqrt(var + EPS)
        w = T.alloc_reduced(x, axis=0)  # (BN,), held by the threads that hold each column of x
        b = T.alloc_reduced(x, axis=0)
        T.copy(W.tile(0, BN), w)
        T.copy(Bias.tile(0, BN), b)
        y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
        T.copy(y, Y.tile((bm, 0), (BM, BN)))
