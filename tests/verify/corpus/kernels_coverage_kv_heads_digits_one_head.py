"""Attention scores against a (B, S, HK, D) key cache in which every block reads KV head 0 (an MQA kernel run on a
GQA cache): grid axis ``by`` runs over the B * HK (batch, KV head) pairs and the batch is ``by // HK``, but the head
index is 0 where it should be ``by % HK``. The keys of heads 1 .. HK - 1 are never loaded; every other check holds
(each block stores its own scores once).

expect: violated
code: COVERAGE_CONTRACTION
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
        head = 0  # BUG: by % HK
        T.copy(K.window((by // HK, bn * BN, head, 0), (None, BN, None, BD)).T, rB)  # <- COVERAGE_CONTRACTION
        T.gemm(rA, rB, acc)
        T.copy(acc, SC.window((by, bm * BM, bn * BN), (None, BM, BN)))
