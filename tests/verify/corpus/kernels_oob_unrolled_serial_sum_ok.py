"""The batch-norm statistics of `oob_unrolled_serial_sum_unmasked` with the tail masked: each padded lane's
deviation is 0, the identity of the sum. Twelve unrolled copies of a serial loop: the verifier reads the state
before each loop once, not once per iteration it looks back through (which was exponential in the copies).

expect: verified
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
                d = T.where(T.index(x, 1) + j * BS < S, x - shift[:, None], 0.0)
                T.copy(s1 + d, s1)
        m1 = T.reduce_sum(s1, axis=1) / 12.0
        T.copy(shift + m1, Y.tile((br,), (BR,)))
