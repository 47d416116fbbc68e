"""The elementwise chain of `budget_registers_chain_in_place`, except that the input tile is used again at the end:
x and y stay live while z is computed, so three (64, 256) f32 tiles (384 registers per thread) are live there,
more than the 255 a thread can have. Only operands that die at a step may be overwritten by its result.
expect: violated
code: BUDGET_REGISTERS
fact: BUDGET_REGISTERS details.registers >= 256
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 64, BN: int = 256):
    T.assume("N % 4 == 0")  # 16-byte rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), x)
        y = x * 2.0 + 1.0
        z = T.maximum(y, 0.0) * 0.5  # <- BUDGET_REGISTERS
        T.copy(z * y - x, Y.tile((bm, bn), (BM, BN)))
