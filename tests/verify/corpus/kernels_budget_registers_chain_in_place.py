"""An elementwise chain over a (64, 256) f32 tile on 128 threads: the tile is 128 registers per thread, and each
step's result may be written over the operand that dies at that step, element by element, so the chain needs the
tile's 128 registers plus a few, whatever its length (ptxas compiles such chains without spilling). Counting every
intermediate as a whole live tile (384 registers here) would be a false positive.
expect: verified
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
        z = T.maximum(y, 0.0) * 0.5
        T.copy(z - 1.0, Y.tile((bm, bn), (BM, BN)))
