"""Batch-norm statistics as `argus solve` writes them for a short batch axis: the A rows of each channel summed in
an unrolled loop, each copy a serial loop over column tiles, every lane's running sum of ``x - shift`` (the shift: the
row's first element). The deviation is not masked: a tile's padded columns read 0, and ``0 - shift`` is not 0, so each
padded lane adds ``-shift`` A times to the sum. (A chain of serial loops, one in each unrolled copy, made the
verifier read the state before each loop once per iteration it looked back through: exponential in A.)

expect: violated
code: OOB_MASKED_REDUCTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("A", "R", "S"), T.f32], Y: T.Tensor[("R",), T.f32], BR: int = 4, BS: int = 128):
    T.assume(T.eq(A, 12))  # the unrolled extent
    T.assume("S % 4 == 0")  # rows in whole 16-byte vectors
    with T.grid(T.cdiv(R, BR), threads=128) as (br,):
        first = T.alloc_fragment((BR, BS), T.f32)
        T.copy(X.tile((0, br, 0), (None, BR, BS)), first)
        shift = T.reduce_sum(T.where(T.index(first, 1) < 1, first, 0.0), axis=1)
        s1 = T.alloc_fragment((BR, BS), T.f32)
        T.fill(s1, 0.0)
        for a in range(12):
            for j in T.serial(T.cdiv(S, BS)):
                x = T.alloc_fragment((BR, BS), T.f32)
                T.copy(X.tile((a, br, j), (None, BR, BS)), x)
                d = x - shift[:, None]  # BUG: the tail must be masked (T.where(col + j * BS < S, x - shift, 0))
                T.copy(s1 + d, s1)
        m1 = T.reduce_sum(s1, axis=1) / 12.0  # <- OOB_MASKED_REDUCTION
        T.copy(shift + m1, Y.tile((br,), (BR,)))
