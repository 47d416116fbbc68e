"""A smoothing step written as one kernel: each block stores its row of the half-step H, then reads its neighbour's
row of H to finish. The neighbour is another block, and blocks run in any order: the read may see H before the
neighbour stored it. Two kernels (or a group barrier between the store and the load) are needed. (Before
`checks/global_reads.py`, session 60, this verified: the verifier reasoned about one block.)

expect: violated
code: RACE_GLOBAL
fact: RACE_GLOBAL counterexample.accesses.0.kind == 'write'
fact: RACE_GLOBAL counterexample.accesses.1.kind == 'read'
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(X: T.Tensor[("N", 256), T.f32], H: T.Tensor[("N", 256), T.f32], Y: T.Tensor[("N", 256), T.f32]):
    with T.grid(N, threads=64) as (b,):
        x = T.alloc_fragment((1, 256), T.f32)
        T.copy(X.tile((b, 0), (1, 256)), x)
        T.copy(x * 0.5, H.tile((b, 0), (1, 256)))  # the half-step of row b
        h = T.alloc_fragment((1, 256), T.f32)
        T.copy(H.tile(((b + 1) % N, 0), (1, 256)), h)  # <- RACE_GLOBAL
        T.copy(x * 0.5 + h, Y.tile((b, 0), (1, 256)))
