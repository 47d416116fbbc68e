"""A row tile copied with cp.async from an (M, N) f32 tensor whose row length N is not declared to be a
multiple of 4: for N = 4097 the rows start 4 bytes apart from 16-byte boundaries, so the 16-byte cp.async
vectors are misaligned and the copy runs synchronously, element by element. `align_vector_assumed_ok`
declares T.assume("N % 4 == 0") and verifies.

expect: violated
code: ALIGN_VECTOR
warning: ALIGN_ASSUMPTION
fact: ALIGN_VECTOR counterexample.variables.vector_elements == 4
fact: ALIGN_VECTOR counterexample.element.buffer == "X"
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
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        sX = T.alloc_shared((BM, BN), T.f32)
        T.copy(X.tile((bm, bn), (BM, BN)), sX, atom="cp.async")  # <- ALIGN_VECTOR
        T.async_commit()
        T.async_wait(0)
        T.barrier()
        r = T.alloc_fragment((BM, BN), T.f32)
        T.copy(sX, r)
        T.copy(r, Y.tile((bm, bn), (BM, BN)))  # <- ALIGN_ASSUMPTION
