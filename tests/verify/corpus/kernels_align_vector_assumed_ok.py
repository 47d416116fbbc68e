"""The twin of `align_vector_cp_async` with the row length declared a multiple of 4 (T.assume): every
16-byte cp.async vector and every vector of the store is aligned for every allowed N; the runtime refuses
a launch with N = 4097 (RUNTIME_ASSUMPTION).

expect: verified
no-warning: ALIGN_VECTOR
no-warning: ALIGN_ASSUMPTION
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    X: T.Tensor[("M", "N"), T.f32],
    Y: T.Tensor[("M", "N"), T.f32],
    BM: int = 16,
    BN: int = 64,
):
    T.assume("N % 4 == 0")
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sX = T.alloc_shared((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), sX, atom="cp.async")
        T.async_commit()
        T.async_wait(0)
        T.barrier()
        r = T.alloc_fragment((BM, BN), T.f32)
        T.copy(sX, r)
        T.copy(r, Y.tile((bm, bn), (BM, BN)))
