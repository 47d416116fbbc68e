"""A (64, 256) f32 accumulator (128 registers per thread on 128 threads) carried across a loop and rescaled in place
each iteration, ``T.copy(acc * 0.5, acc)``, as flash attention rescales its output by the new row maximum, while a
(64, 256) bf16 tile (64 registers) stays live: the product's elements may be written over the accumulator's, whose
old value nothing reads after the product, so the loop needs 192 registers plus a few. Counting the product as a
second whole tile (320 registers) would be a false positive.
expect: verified
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
        for _ in T.serial(4):
            T.copy(acc * 0.5, acc)
            T.copy(acc + 1.0, acc)
        T.copy(acc, Y.tile((0, bn), (BM, BN)))
        T.copy(w, Z.tile((0, bn), (BM, BN)))
