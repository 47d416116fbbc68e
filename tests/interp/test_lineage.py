"""The GEMM lineage (`argus.kernels.lineage`) and the per-thread FMA atom on the interpreter: the rungs are
registered in order, each adds the mechanism it declares (read off its IR), and FMA GEMMs built wrong give
wrong numbers. (Every rung is checked against numpy and PyTorch at its default and a partial shape by
tests/interp/test_library.py, as every library kernel.)"""

from __future__ import annotations

import types

import numpy as np
import pytest

from argus.interp import machine, run_kernel
from argus.ir.nodes import Alloc, Copy, Gemm, Role, Space, walk
from argus.ir.types import bf16, round_to
from argus.kernels import get_kernel, lineage, lineages
from argus.kernels.registry import KernelLookupError
from argus.layout import ComposedLayout
from tests.interp import kernels_lineage_broken as broken

SHAPE = {"M": 64, "N": 64, "K": 96}


def _gemm_error(kernel, shape=SHAPE) -> float:
    rng = np.random.default_rng(3)
    a = np.asarray(round_to(bf16, rng.standard_normal((shape["M"], shape["K"]))), dtype=np.float64)
    b = np.asarray(round_to(bf16, rng.standard_normal((shape["K"], shape["N"]))), dtype=np.float64)
    c = np.zeros((shape["M"], shape["N"]))
    run_kernel(kernel, {"A": a, "B": b, "C": c})
    err = np.abs(c - a @ b)
    return float("inf") if not np.isfinite(err).all() else float(err.max())


def test_the_correct_fma_gemm_passes() -> None:
    assert _gemm_error(broken.fma_gemm().trace()) < 1e-3
    assert _gemm_error(broken.fma_gemm().trace(), {"M": 50, "N": 40, "K": 13}) < 1e-3


@pytest.mark.parametrize(
    "make",
    [broken.raked_rows_a, broken.raked_columns_accumulator, broken.next_k_block_of_b],
    ids=["A fragment raked", "accumulator raked", "next K-block of B"],
)
def test_broken_fma_gemm_gives_wrong_numbers(make) -> None:
    assert _gemm_error(make().trace()) > 1e-2


@pytest.mark.parametrize("name", ["gemm_naive", "gemm_smem_tiled"])
def test_all_groups_at_once_equals_group_by_group(name: str, monkeypatch) -> None:
    """The interpreter runs a per-thread atom for every thread group at once; the group-by-group loop every
    other MMA goes through gives the same bits."""
    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    results = []
    for batched in (True, False):
        if not batched:  # no atom is THREAD-scoped any more: the general loop runs
            monkeypatch.setattr(machine, "Scope", types.SimpleNamespace(THREAD=object()))
        arrays = entry.make(entry.partial_shape, np.random.default_rng(5))
        run_kernel(kernel, arrays)
        results.append(arrays["C"])
    assert np.array_equal(results[0], results[1]) and np.all(np.isfinite(results[0]))


# --- the lineage --------------------------------------------------------------------------------------------

GEMM_LINEAGE = [
    "gemm_naive",
    "gemm_smem_tiled",
    "gemm_mma_sync",
    "gemm_cp_async",
    "gemm_cp_async_swizzled",
    "gemm_tma_wgmma",
    "gemm_warp_specialized",
    "gemm_warp_specialized_persistent",
    "gemm_tma_store_epilogue",
]


def test_gemm_lineage_in_order() -> None:
    steps = lineage("gemm")
    assert [s.kernel for s in steps] == GEMM_LINEAGE
    assert len({s.mechanism for s in steps}) == len(steps)  # one distinct mechanism per rung
    for step in steps:
        assert get_kernel(step.kernel).kernel is not None and step.adds
    assert "gemm" in lineages()


def test_unknown_lineage() -> None:
    with pytest.raises(KernelLookupError) as err:
        lineage("moe")
    assert err.value.code == "LINEAGE_UNKNOWN"


def _features(name: str) -> set[str]:
    """The mechanisms a kernel's IR shows."""
    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    out: set[str] = set()
    if all(isinstance(extent, int) for extent in kernel.grid):  # a grid of BLOCKS, not of tiles: blocks walk tiles
        out.add("persistent grid")
    if kernel.policies.tile_order is not None and kernel.policies.tile_order.value != "row_major":
        out.add(f"{kernel.policies.tile_order.value} tile order")
    for s in walk(kernel.body):
        if isinstance(s, Gemm):
            out.add({"fma": "fma", "mma": "mma.sync", "wgmma": "wgmma"}[s.atom.split(".")[0]])
        elif isinstance(s, Copy):
            if s.atom in ("cp.async", "tma") or s.atom.startswith("ldmatrix"):
                out.add(s.atom.split(".x")[0])
            elif s.atom == "tma.store":
                out.add("tma store")
        elif isinstance(s, Alloc) and s.buffer.space == Space.SHARED:
            out.add("shared tiles")
            if isinstance(s.buffer.layout, ComposedLayout):
                out.add("swizzle")
        elif isinstance(s, Alloc) and s.buffer.space == Space.MBARRIER:
            out.add("mbarrier")
        elif isinstance(s, Role):
            out.add("warp roles")
            if s.registers:
                out.add("setmaxnreg")
    return out


#: What each rung adds to (+) and takes from (-) the one before, as its IR shows it.
STEPS = {
    "gemm_smem_tiled": ({"shared tiles"}, set()),
    "gemm_mma_sync": ({"mma.sync", "ldmatrix"}, {"fma"}),
    "gemm_cp_async": ({"cp.async"}, set()),
    "gemm_cp_async_swizzled": ({"swizzle"}, set()),
    "gemm_tma_wgmma": ({"tma", "mbarrier", "wgmma"}, {"cp.async", "ldmatrix", "mma.sync"}),
    "gemm_warp_specialized": ({"warp roles", "setmaxnreg"}, set()),
    "gemm_warp_specialized_persistent": ({"persistent grid", "grouped tile order"}, set()),
    "gemm_tma_store_epilogue": ({"tma store"}, set()),
}


def test_each_rung_adds_its_one_mechanism() -> None:
    assert _features("gemm_naive") == {"fma"}
    for before, after in zip(GEMM_LINEAGE, GEMM_LINEAGE[1:], strict=False):
        added, removed = STEPS[after]
        got_before, got_after = _features(before), _features(after)
        assert (got_after - got_before, got_before - got_after) == (added, removed), after
