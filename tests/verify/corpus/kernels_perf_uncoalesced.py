"""Each thread loads a whole row of a (128, 32) f32 tile: consecutive threads are 128 bytes apart, so
a warp's 16-byte vectors touch twice the sectors they need. A warning, not an error.

expect: verified
warning: PERF_UNCOALESCED
fact: PERF_UNCOALESCED details.degree >= 2
"""

import argus
import argus.lang as T
from argus.layout import Layout

ROW_PER_THREAD = Layout((128, 32), (1, 128))  # thread t holds row t: tile index t + 128 * v


@argus.kernel
def KERNEL(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 128, BN: int = 32):
    with T.grid(T.cdiv(M, BM), T.cdiv(N, BN), threads=128) as (bm, bn):
        x = T.alloc_fragment((BM, BN), T.f32, tv=ROW_PER_THREAD)
        T.copy(X.tile((bm, bn), (BM, BN)), x)  # <- PERF_UNCOALESCED
        T.copy(x * 2.0, Y.tile((bm, bn), (BM, BN)))
