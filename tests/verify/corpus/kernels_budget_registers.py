"""A (128, 256) f32 accumulator over 128 threads is 256 registers per thread on its own, more than
the 255 a thread can have: the compiler must spill.

expect: violated
code: BUDGET_REGISTERS
fact: BUDGET_REGISTERS details.registers >= 256
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 128, BN: int = 256):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), x)  # <- BUDGET_REGISTERS
        T.copy(x * 2.0, Y.tile((bm, bn), (BM, BN)))
