"""Residual add `Y = X + R` on (64, 256) f32 tiles over 128 threads: the tile of X alone is 128 registers per
thread, fine; the tile of R, loaded while X's is live, brings the fragments live at the sum to 256 registers, more
than the 255 a thread can have (the compiler spills; the sum may be written over X and R element by element, so it
adds none). The finding surfaces at the sum (the peak); its blame names the allocation that crosses the budget,
`r`, with every live fragment and its registers.

expect: violated
code: BUDGET_REGISTERS
fact: BUDGET_REGISTERS details.registers >= 256
fact: BUDGET_REGISTERS blame.fix == 'free at least 1 registers per thread'
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32],
    R: T.Tensor[("M", "N"), T.f32],
    Y: T.Tensor[("M", "N"), T.f32],
    BM: int = 64,
    BN: int = 256,
):
    T.assume("N % 4 == 0")  # 16-byte rows
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), x)
        r = T.alloc_fragment((BM, BN), T.f32)  # <- BUDGET_REGISTERS
        T.copy(R.tile((bm, bn), (BM, BN)), r)
        T.copy(x + r, Y.tile((bm, bn), (BM, BN)))
