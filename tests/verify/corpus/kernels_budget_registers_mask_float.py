"""`budget_registers_mask_folded` with the mask computed in f32, ``T.index(s, 1) + bn * BN < N``: float arithmetic
on the coordinates is not folded into the select (ptxas does not reassociate floats; the lineage's warp-specialized
attention, whose tail mask is written this way, spills at 96 registers where its fragments with the mask take 100),
so the mask counts as a stored fragment: 352 registers per thread, a spill.
expect: violated
code: BUDGET_REGISTERS
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
        valid = T.index(s, 1) + bn * BN < N  # <- BUDGET_REGISTERS: in f32, held per element
        T.copy(T.where(valid, s, 0.0), Y.tile((0, bn), (BM, BN)))
        T.copy(kept, Z.tile((0, bn), (BM, 3 * BN // 2)))
