# ruff: noqa: F821, UP037
"""``T.exp2(x, fma_every=P)``: 2^x with every P-th register evaluated by a polynomial on the FMA pipe instead of the
special-function unit. The polynomial's algorithm, emulated in f32 with the code generator's own coefficients, is
within 2e-7 of 2^x wherever 2^x is a normal number and exactly 0 from -127 down (exp2(-inf) = 0, as masked scores
need); the IR, the interpreter and the verifier see 2^x; the SASS has the share of ``MUFU.EX2`` instructions the
choice leaves; on a GPU the results match float64 2^x to the same bound."""

from __future__ import annotations

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import compile_kernel
from argus.backend.cuda.codegen.prelude import EXP2_POLY
from argus.ir.nodes import Map, MapOp, walk
from argus.lang.errors import DSLError
from argus.verify import Verdict, verify

#: The largest relative error allowed against float64 2^x where 2^x is normal (the fit's own: 1.7e-7).
BOUND = 2.0e-7


def emulated(x: np.ndarray) -> np.ndarray:
    """`argus::exp2_fma` step for step in f32 (each fmaf rounded once, through float64)."""
    x = x.astype(np.float32)
    x = np.where(np.isnan(x), x, np.minimum(np.maximum(x, np.float32(-127.0)), np.float32(128.0)))
    magic = np.float32(12582912.0)
    t = (x + magic).astype(np.float32)
    f = (x - (t - magic).astype(np.float32)).astype(np.float32)
    p = np.full_like(f, np.float32(EXP2_POLY[-1]))
    for c in reversed(EXP2_POLY[:-1]):
        p = (p.astype(np.float64) * f + np.float32(c)).astype(np.float32)
    scale = ((t.view(np.uint32) << np.uint32(23)) + np.uint32(0x3F800000)).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        return (p * scale).astype(np.float32)


def test_the_polynomial_is_within_a_few_ulp_of_exp2_and_exact_at_the_ends() -> None:
    x = np.concatenate(
        [np.linspace(-126.0, 0.0, 2_000_001), -np.arange(300_000) / 3e5, np.linspace(0.0, 127.49, 200_001)]
    ).astype(np.float32)
    got = emulated(x).astype(np.float64)
    want = np.exp2(x.astype(np.float64))
    assert np.max(np.abs(got - want) / want) < BOUND
    low = np.array([-np.inf, -1e30, -1000.0, -127.5, -127.0, -126.6], dtype=np.float32)
    assert (emulated(low) == 0.0).all()  # exp2(-inf) = 0: masked scores weigh nothing
    high = emulated(np.array([np.inf, 1e30, 200.0, 128.0, 127.5], dtype=np.float32))
    assert (high == np.inf).all()
    assert np.isnan(emulated(np.array([np.nan], dtype=np.float32))).all()  # a NaN is not hidden
    assert emulated(np.array([0.0, 1.0, -1.0, 10.0], dtype=np.float32)).tolist() == [1.0, 2.0, 0.5, 1024.0]


def _kernel():
    @argus.kernel
    def exp2_probe(A: T.Tensor[("N",), T.f32], C: T.Tensor[("N",), T.f32], BLOCK: int = 512, P: int = 2):
        with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):
            a = T.alloc_fragment((BLOCK,), T.f32)
            T.copy(A.tile(bx, BLOCK), a, pad=float("-inf"))
            T.copy(T.exp2(a, fma_every=P), C.tile(bx, BLOCK))

    return exp2_probe


def test_the_choice_is_an_ir_operation_that_the_interpreter_and_verifier_read_as_exp2() -> None:
    kernel = _kernel()
    ops = [s.op for s in walk(kernel.trace(P=2).body) if isinstance(s, Map)]
    assert ops == [MapOp.EXP2_FMA]
    assert [s.op for s in walk(kernel.trace(P=0).body) if isinstance(s, Map)] == [MapOp.EXP2]
    x = np.concatenate([np.linspace(-140.0, 20.0, 997), [-np.inf, 0.0, -127.0]]).astype(np.float32)
    out = np.zeros_like(x)
    kernel(x, out, P=3, device="cpu")
    # the exact 2^x rounded once to f32 (numpy's own f32 exp2 may be a last place off on subnormals, by CPU)
    np.testing.assert_array_equal(out, np.exp2(x.astype(np.float64)).astype(np.float32))
    assert verify(kernel, P=2).verdict == Verdict.VERIFIED


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_fma_every_is_a_count_of_registers(bad) -> None:
    with pytest.raises(DSLError, match="fma_every is a number of registers"):
        _kernel().trace(P=bad)


def test_the_sass_keeps_the_share_of_special_function_instructions_the_choice_leaves() -> None:
    kernel = _kernel()
    counts = {}
    for p in (0, 1, 2, 4):
        mix = compile_kernel(kernel.trace(P=p), cache=False).instruction_mix(modifiers=True)
        counts[p] = sum(n for op, n in mix.items() if op.startswith("MUFU.EX2"))
    values = 512 // 128  # registers a thread holds: registers P - 1, 2P - 1, ... leave the unit
    assert {p: values - n for p, n in counts.items()} == {p: values // p if p else 0 for p in counts}


@pytest.mark.gpu
def test_exp2_fma_matches_float64_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    g = torch.Generator(device="cpu").manual_seed(3)
    ends = [float("-inf"), float("inf"), float("nan"), 0.0, -127.0, 127.5, 128.0, 200.0]
    x = torch.cat([torch.rand(1 << 20, generator=g) * 267 - 140, torch.tensor(ends)])
    from argus.runtime import load

    for p in (1, 2):
        out = torch.empty_like(x, device="cuda")
        load(compile_kernel(_kernel().trace(P=p)))(x.cuda(), out)
        got, want = out.cpu().double(), torch.exp2(x.double())
        normal = (want >= 2.0**-126) & (want < 2.0**127.5)
        assert ((got[normal] - want[normal]).abs() / want[normal]).max() < BOUND
        assert (got[x <= -127] == 0).all() and (got[~normal & (x < 0)] <= 2.0**-126).all()
        assert torch.isnan(got[-6]) and got[-7] == float("inf")
        if p == 1:  # every value on the FMA pipe: the emulation's (within an ulp: its fmaf rounds through float64)
            np.testing.assert_allclose(out.cpu().numpy(), emulated(x.numpy()), rtol=2.0**-23, atol=0.0)
