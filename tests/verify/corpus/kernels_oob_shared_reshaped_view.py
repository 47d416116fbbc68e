"""A shared buffer of 8 x 64 elements read through a view that reshapes it to (4, 2, 64) but spaces its stages
128 elements apart plus one row of padding the allocation does not have (stride 192): stages 3 and up reach
past the 512 elements allocated.

expect: violated
code: OOB_SHARED
fact: OOB_SHARED counterexample.variables.allocated_elements == 512
fact: OOB_SHARED counterexample.variables.offset >= 512
"""

import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def KERNEL(
    X: T.Tensor[("N", 8, 64), T.f32],
    Y: T.Tensor[("N", 4, 2, 64), T.f32],
):
    with T.grid(N, threads=128) as (n,):
        s = T.alloc_shared((8, 64), T.f32)
        pairs = s.view(Layout((4, 2, 64), (192, 64, 1)))  # BUG: 192 between stages, 128 allocated
        T.copy(X.window((n, 0, 0), (None, 8, 64)), s)
        T.barrier()
        r = T.alloc_fragment((2, 64), T.f32, vector_bytes=4)
        for i in T.serial(4):
            T.copy(pairs[i], r)  # <- OOB_SHARED
            T.copy(r, Y.window((n, i, 0, 0), (None, None, 2, 64)))
