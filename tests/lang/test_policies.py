"""Compiler policies are named and recorded; persistent grids cover every tile exactly once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.ir.expr import Var, VarKind, evaluate
from argus.ir.nodes import Barrier, BarrierKind, TileOrder, walk
from argus.kernels import get_kernel
from argus.lang import DSLError


def test_policies_of_the_hopper_gemm() -> None:
    p = get_kernel("gemm_warp_specialized").kernel.trace().policies
    assert p.tile_shape == (128, 128, 64) and p.stages == 3 and p.swizzle == 128
    assert p.warp_roles == ("producer", "consumer") and p.register_split == (40, 232)
    assert get_kernel("gemm_warp_specialized").kernel.trace(STAGES=4).policies.stages == 4


def test_policies_of_the_persistent_gemm() -> None:
    entry = get_kernel("gemm_persistent")
    p = entry.kernel.trace(**entry.params).policies
    assert p.persistent is True and p.tile_order == TileOrder.GROUPED and p.tile_shape == (64, 64, 32)


def test_unknown_policy_is_rejected() -> None:
    with pytest.raises(DSLError, match="unknown policy 'stage'"):
        argus.kernel(policies={"stage": "STAGES"})
    with pytest.raises(DSLError, match="does not have"):

        @argus.kernel(policies={"stages": "STAGES"})
        def k(A: T.Tensor[("N",), T.f32], BLOCK: int = 4):
            pass


@pytest.mark.parametrize("order", ["row_major", "column_major", "grouped"])
@pytest.mark.parametrize(("tm", "tn", "group"), [(5, 7, 2), (8, 3, 8), (1, 1, 8), (9, 4, 3)])
def test_tile_order_is_a_bijection(order: str, tm: int, tn: int, group: int) -> None:
    t = Var("t", VarKind.BLOCK)
    m, n = T.tile_order(t, (tm, tn), order, group)
    seen = {(int(evaluate(m, {t: i})), int(evaluate(n, {t: i}))) for i in range(tm * tn)}
    assert seen == set(itertools.product(range(tm), range(tn)))


def test_grouped_order_walks_groups_of_rows() -> None:
    t = Var("t", VarKind.BLOCK)
    m, n = T.tile_order(t, (8, 8), "grouped", 4)
    first = [(int(evaluate(m, {t: i})), int(evaluate(n, {t: i}))) for i in range(8)]
    assert first == [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1)]


def test_persistent_gemm_on_the_interpreter_with_few_blocks() -> None:
    entry = get_kernel("gemm_persistent")
    rng = np.random.default_rng(0)
    arrays = entry.make({"M": 150, "N": 130, "K": 40}, rng)
    want = arrays["A"] @ arrays["B"]
    entry.kernel(*arrays.values(), device="cpu", BLOCKS=2)
    assert np.abs(arrays["C"] - want).max() < 1e-3


def test_named_barrier_and_lane_ids() -> None:
    @argus.kernel
    def k(A: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=256):
            T.barrier(1, threads=128)
            assert str(T.warp_id()) == "(tid // 32)" and str(T.lane_id()) == "(tid % 32)"

    bars = [s for s in walk(k.trace().body) if isinstance(s, Barrier)]
    assert bars[0].kind == BarrierKind.NAMED and bars[0].barrier_id == 1 and bars[0].threads == 128

    @argus.kernel
    def bad(A: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=256):
            T.barrier(1, threads=100)

    with pytest.raises(DSLError) as e:
        bad.trace()
    assert e.value.code == "DSL_NAMED_BARRIER"


def test_runtime_equality_and_trace_time_conditions() -> None:
    @argus.kernel
    def good(A: T.Tensor[("N",), T.f32]):
        with T.grid(4, threads=128) as (bx,):
            with T.if_(T.eq(bx % 2, 1)):
                T.barrier()

    from argus.ir.nodes import If

    cond = next(s for s in walk(good.trace().body) if isinstance(s, If)).cond
    assert str(cond) == "((bx % 2) == 1)"
    assert [bool(evaluate(cond, {good.trace().block_vars[0]: i})) for i in range(4)] == [False, True, False, True]

    @argus.kernel
    def bad(A: T.Tensor[("N",), T.f32]):
        with T.grid(4, threads=128) as (bx,):
            with T.if_(bx % 2 == 1):  # identity comparison: a Python bool
                T.barrier()

    with pytest.raises(DSLError) as e:
        bad.trace()
    assert e.value.code == "DSL_TRACE_TIME_CONDITION" and "T.eq" in str(e.value)
