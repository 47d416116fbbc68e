"""A MoE combine (`argus.kernels.moe_combine`) that indexes the routing's positions choice-major, POS[j * TOKENS +
t], where the routing lays them out token-major (token t's choices at t * TOPK ... t * TOPK + TOPK - 1): tokens add
other tokens' rows. The tag assertion, "what is added for choice j is row POS[t * TOPK + j] of Y", fails with the
token, the choice and the positions.

expect: violated
code: TAG_ASSERT
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    Y: T.Tensor[("R", "H"), T.bf16],
    POS: T.Tensor[("R",), T.i32],
    Z: T.Tensor[("TOKENS", "H"), T.bf16],
    TOPK: int = 2,
    BH: int = 1024,
):
    T.assume(f"R == {TOPK} * TOKENS and H % 8 == 0")
    T.assume_values(POS, lo=0, hi="R - 1")
    with T.grid(TOKENS, T.cdiv(H, BH), threads=BH // 8) as (t, bh):
        acc = None
        for j in range(TOPK):
            with T.let(POS[j * TOKENS + t], f"row{j}") as row:  # the bug: choice-major
                part = T.alloc_fragment((1, BH), Y.dtype)
                T.copy(Y.tile((row, bh), (1, BH)), part)
                T.assert_tag(lambda y, j=j: (y[0] == POS[t * TOPK + j]) & (y[1] // BH == bh), part)  # <- TAG_ASSERT
                value = T.cast(part, T.f32)
                acc = value if acc is None else acc + value
        T.copy(acc, Z.tile((t, bh), (1, BH)))
