"""The per-thread FMA atom: one thread, 1x1x1, f32 accumulation; its validation; and its tiling over a block
(each thread a micro-tile of the accumulator, the rows of A and the columns of B it needs)."""

from __future__ import annotations

import itertools

import pytest

from argus.atoms import FMA_INPUT_DTYPES, AtomError, MemorySpace, Scope, fma, get_atom
from argus.ir.types import bf16, e4m3, f16, f32, i32
from argus.lang.fragments import check_mma_tiling, mma_tv


def test_the_atom() -> None:
    atom = fma()
    assert (atom.name, atom.ptx, atom.shape) == ("fma.f32.bf16.bf16", "fma.rn.f32", (1, 1, 1))
    assert (atom.a_dtype, atom.b_dtype, atom.acc_dtype) == (bf16, bf16, f32)
    assert (atom.thread_count, atom.scope) == (1, Scope.THREAD)
    assert atom.source("A") is atom.source("B") is MemorySpace.REGISTERS
    assert [atom.values_per_thread(op) for op in "ABC"] == [1, 1, 1]
    assert [atom.coord(op, 0, 0) for op in "ABC"] == [(0, 0)] * 3
    assert atom.register("A", 0) == (0, 0)


@pytest.mark.parametrize("dtype", FMA_INPUT_DTYPES, ids=lambda d: d.name)
def test_registered_for_every_input_dtype(dtype) -> None:
    atom = fma(dtype)
    assert get_atom(atom.name) == atom
    assert atom.name == f"fma.f32.{dtype.name}.{dtype.name}"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ((i32,), "ATOM_MMA_DTYPE"),
        ((bf16, f16), "ATOM_MMA_DTYPE"),
        ((f16, f16, f16), "ATOM_MMA_ACC_DTYPE"),
        ((e4m3,), "ATOM_MMA_DTYPE"),
    ],
    ids=["integer inputs", "A and B differ", "f16 accumulator", "fp8"],
)
def test_rejects(args, code) -> None:
    with pytest.raises(AtomError) as err:
        fma(*args)
    assert err.value.code == code


@pytest.mark.parametrize(("groups", "micro"), [((16, 16), (8, 8)), ((1, 128), (1, 1)), ((8, 4), (2, 4))])
def test_tiled_over_a_block_each_thread_owns_a_micro_tile(groups, micro) -> None:
    """Thread ``t = gm + GM * gn`` holds accumulator rows ``gm*TM ..``, columns ``gn*TN ..`` (value ``r + TM*c``),
    A rows ``gm*TM ..`` for every k (value ``r + TM*k``) and B columns ``gn*TN ..`` (value ``k + K*c``)."""
    atom = fma()
    (gm_count, gn_count), (tm, tn), k = groups, micro, 4
    m, n = gm_count * tm, gn_count * tn
    c, a, b = mma_tv(atom, "C", (m, n), groups), mma_tv(atom, "A", (m, k), groups), mma_tv(atom, "B", (k, n), groups)
    for gm, gn in itertools.product(range(gm_count), range(gn_count)):
        t = gm + gm_count * gn
        for r, col in itertools.product(range(tm), range(tn)):
            assert c(t, r + tm * col) == (gm * tm + r) + m * (gn * tn + col)
        for r, kk in itertools.product(range(tm), range(k)):
            assert a(t, r + tm * kk) == (gm * tm + r) + m * kk
        for kk, col in itertools.product(range(k), range(tn)):
            assert b(t, kk + k * col) == kk + k * (gn * tn + col)
    assert c.size() == m * n  # every accumulator element has exactly one owner
    assert sorted(c(t, v) for t in range(gm_count * gn_count) for v in range(tm * tn)) == list(range(m * n))


def test_tiling_needs_groups_that_divide_the_tile() -> None:
    assert check_mma_tiling(fma(), "C", (30, 32), (8, 8)) is not None
    assert check_mma_tiling(fma(), "C", (32, 32), (8, 8)) is None
