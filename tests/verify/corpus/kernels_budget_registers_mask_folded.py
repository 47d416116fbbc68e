"""A tile, a second one kept, and the first masked by its column coordinate against a bound (a key tail): the
mask is a function of each element's coordinates and a value the same for every element, which the compiler folds
into the select (or recomputes there), so it takes no registers of its own. The two tiles fit (224 registers per
thread); counting the mask as a stored fragment (32 more) would report a spill that does not happen.
expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[(64, "N"), T.f32],
    K: T.Tensor[(64, "N"), T.bf16],
    Y: T.Tensor[(64, "N"), T.f32],
    Z: T.Tensor[(64, "N"), T.bf16],
    BM: int = 64,
    BN: int = 256,
):
    T.assume("N % 8 == 0")  # 16-byte rows
    with T.grid(T.cdiv(N, BN), threads=128) as (bn,):
        s = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((0, bn), (BM, BN)), s)
        kept = T.alloc_fragment((BM, 3 * BN // 2), T.bf16)
        T.copy(K.tile((0, bn), (BM, 3 * BN // 2)), kept)
        valid = T.index(s, 1, T.i32) < N - bn * BN  # columns past the tensor's end
        T.copy(T.where(valid, s, 0.0), Y.tile((0, bn), (BM, BN)))
        T.copy(kept, Z.tile((0, bn), (BM, 3 * BN // 2)))
