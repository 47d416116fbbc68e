"""A split up-projection's gated sum (`argus.kernels.moe_combine.moe_glu_sum`) that reads slice 0 for every split: the
first partial product is added SPLITS times and the others never. The tag assertion, "what is added into half h of
row r is slice s's half h of row r", fails for s = 1 with the element that shows it.

expect: violated
code: TAG_ASSERT
"""

import argus
import argus.lang as T
from argus.kernels.grouped import glu_gate
from argus.kernels.moe_combine import glu_slices_shape


@argus.kernel
def KERNEL(
    Y: T.Tensor[glu_slices_shape, T.f32],
    SCALE: T.Tensor[("R",), T.f32],
    H: T.Tensor[("R", "I"), T.bf16],
    SPLITS: int = 2,
    BI: int = 512,
):
    T.assume("I % 4 == 0")
    with T.grid(R, T.cdiv(I, BI), threads=BI // 4) as (r, bi):
        sums = []
        for half in (0, 1):
            acc = None
            for s in range(SPLITS):
                read_half = half
                read_slice = 0  # the bug: the first slice for every split
                part = T.alloc_fragment((1, BI), T.f32)
                T.copy(Y.tile((read_slice, r, read_half, bi), (None, 1, None, BI)), part)
                T.assert_tag(  # <- TAG_ASSERT
                    lambda y, s=s, half=half: (y[0] == s) & (y[1] == r) & (y[2] == half) & (y[3] // BI == bi), part
                )
                acc = part if acc is None else acc + part
            sums.append(acc)
        T.copy(glu_gate(sums[0], "silu") * sums[1] * SCALE[r], H.tile((r, bi), (1, BI)))
