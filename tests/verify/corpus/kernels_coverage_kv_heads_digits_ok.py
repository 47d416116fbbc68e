"""Attention scores against a (B, S, HK, D) key cache, FlashAttention's layout: grid axis ``by`` runs over the
B * HK (batch, KV head) pairs, and a block reads the keys of batch ``by // HK`` and head ``by % HK`` (a quotient and
a remainder by a size). Every element of K is loaded: the check reads ``by`` as its two digits, exact where the
assumptions make B * HK its range.

expect: verified
"""

import argus
import argus.lang as T


@argus.kernel
def KERNEL(
    Q: T.Tensor[("BH", "M", "D"), T.bf16],
    K: T.Tensor[("B", "S", "HK", "D"), T.bf16],
    SC: T.Tensor[("BH", "M", "S"), T.f32],
    BM: int = 16,
    BN: int = 16,
    BD: int = 16,
):
    T.assume(f"BH % HK == 0 and BH // HK == B and D == {BD}")
    with T.grid(T.cdiv(M, BM), BH, T.cdiv(S, BN), threads=BM * BN) as (bm, by, bn):
        atom = T.fma_atom(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(BM, BN))
        rA = T.alloc_fragment((BM, BD), T.bf16, mma=atom, operand="A", groups=(BM, BN))
        rB = T.alloc_fragment((BD, BN), T.bf16, mma=atom, operand="B", groups=(BM, BN))
        T.fill(acc, 0.0)
        T.copy(Q.window((by, bm * BM, 0), (None, BM, BD)), rA)
        T.copy(K.window((by // HK, bn * BN, by % HK, 0), (None, BN, None, BD)).T, rB)
        T.gemm(rA, rB, acc)
        T.copy(acc, SC.window((by, bm * BM, bn * BN), (None, BM, BN)))
