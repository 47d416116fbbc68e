"""The loop of `budget_registers_rescale_in_place`, except that the rescaled accumulator goes into a second tile and
the old one is read again after it: the accumulator, the product and the bf16 tile are live together (320
registers per thread), more than a thread can have. A fragment's old value may be overwritten only where nothing
reads it afterwards.
expect: violated
code: BUDGET_REGISTERS
fact: BUDGET_REGISTERS details.registers >= 256
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[(64, "N"), T.bf16],
    Y: T.Tensor[(64, "N"), T.f32],
    Z: T.Tensor[(64, "N"), T.bf16],
    BM: int = 64,
    BN: int = 256,
):
    T.assume("N % 8 == 0")  # 16-byte rows
    with T.grid(T.cdiv(N, BN), threads=128) as (bn,):
        w = T.alloc_fragment((BM, BN), T.bf16)
        T.copy(X.tile((0, bn), (BM, BN)), w)
        acc = T.alloc_fragment((BM, BN), T.f32)
        T.fill(acc, 0.0)
        half = T.alloc_fragment((BM, BN), T.f32)
        for _ in T.serial(4):
            T.copy(acc * 0.5, half)  # <- BUDGET_REGISTERS
            T.copy(acc + half, acc)
        T.copy(acc, Y.tile((0, bn), (BM, BN)))
        T.copy(w, Z.tile((0, bn), (BM, BN)))
