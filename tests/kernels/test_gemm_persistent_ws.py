"""The persistent warp-specialized Hopper GEMM (`argus.kernels.gemm`): BLOCKS blocks walk the output
tiles, each role looping over the block's tiles with a k pipeline whose stages and mbarrier phases run on across
tiles. It is correct on the interpreter (both role schedules, partial tiles, fewer blocks than tiles, a K-block
count that is not a multiple of the stages, every tile order), the tile-local phase bugs deadlock there, it is a
library kernel, and it compiles for sm_90a to TMA loads, wgmma and setmaxnreg with one wgmma group in flight."""

from __future__ import annotations

import numpy as np
import pytest
from tests.verify.kernels_persistent import persistent_variant

from argus.backend.cuda.codegen import compile_kernel, generate
from argus.interp import run_kernel
from argus.interp.machine import InterpError
from argus.ir.nodes import For, LoopKind, Role, walk
from argus.ir.types import bf16, round_to
from argus.kernels import all_kernels, get_kernel
from argus.kernels.gemm import gemm_warp_specialized_persistent
from argus.kernels.registry import check_on_interpreter


def _operands(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.asarray(round_to(bf16, rng.standard_normal((m, k))), dtype=np.float64)
    b = np.asarray(round_to(bf16, rng.uniform(-1, 1, (n, k))), dtype=np.float64)
    return a, b


def _run(kernel, m: int, n: int, k: int, schedule: str = "listed") -> float:
    """The largest error relative to the largest output (C starts as NaN: an element never written shows)."""
    a, b = _operands(m, n, k)
    arrays = {"A": a, "B": b, "C": np.full((m, n), np.nan)}
    run_kernel(kernel, arrays, schedule=schedule)
    ref = a @ b.T
    return float(np.max(np.abs(arrays["C"] - ref)) / np.max(np.abs(ref)))


@pytest.mark.parametrize("schedule", ["listed", "reversed"])
@pytest.mark.parametrize(
    ("m", "n", "k", "params"),
    [
        # 2 x 4 partial tiles on 3 blocks (block 0 walks tiles 0, 3, 6), 4 K-blocks on 3 stages, the last partial
        (200, 200, 200, {"BN": 64, "BLOCKS": 3, "GROUP": 2}),
        # one block walks all 2 x 2 tiles: the rotation crosses three tile boundaries, 5 K-blocks on 4 stages
        (256, 256, 320, {"BLOCKS": 1, "STAGES": 4}),
        # 3 x 2 tiles, row-major order, 2 blocks: 3 tiles each, 3 K-blocks on 2 stages (phase parity flips mid-tile)
        (300, 128, 136, {"BN": 64, "BLOCKS": 2, "STAGES": 2, "ORDER": "row_major"}),
        # column-major order, bf16 C, more blocks than tiles (the guard skips the rest)
        (130, 100, 64, {"BN": 64, "BLOCKS": 5, "ORDER": "column_major", "OUT": "bf16"}),
    ],
)
def test_correct_on_the_interpreter(schedule: str, m: int, n: int, k: int, params: dict) -> None:
    kernel = gemm_warp_specialized_persistent.trace(**params)
    tol = 5e-3 if params.get("OUT") == "bf16" else 1e-5  # C rounded to bf16: 2^-9 relative
    assert _run(kernel, m, n, k, schedule) < tol


@pytest.mark.parametrize("bug", ["consumer_local_phase", "producer_local_phase", "no_start"])
@pytest.mark.parametrize("schedule", ["listed", "reversed"])
def test_tile_local_phases_deadlock_on_the_interpreter(bug: str, schedule: str) -> None:
    # 2 x 2 tiles on 2 blocks, 4 K-blocks on 3 stages: the second tile of a block starts on stage 1, phase 1
    assert _run(persistent_variant.trace(BLOCKS=2), 256, 128, 256, schedule) < 1e-3
    with pytest.raises(InterpError) as err:
        _run(persistent_variant.trace(BLOCKS=2, BUG=bug), 256, 128, 256, schedule)
    assert err.value.code == "INTERP_DEADLOCK"


def test_roles_stay_at_the_top_with_the_tile_loop_inside_each() -> None:
    kernel = gemm_warp_specialized_persistent.trace()
    roles = [s for s in kernel.body if isinstance(s, Role)]
    assert [r.name for r in roles] == ["producer", "consumer"] and [r.registers for r in roles] == [40, 232]
    for r in roles:
        tile_loop = next(s for s in r.body if isinstance(s, For))
        assert tile_loop.kind == LoopKind.SERIAL
        (pipe,) = [s for s in walk(tile_loop.body) if isinstance(s, For)]
        assert pipe.kind == LoopKind.PIPELINED and pipe.stages == 3
        assert str(pipe.start) == f"({tile_loop.var.name} * ((K + 63) // 64))"
    assert kernel.grid == (132,)
    pol = kernel.policies
    assert pol.persistent is True and pol.tile_order.value == "grouped" and pol.stages == 3


def test_the_library_kernel_at_one_block_per_sm_and_at_3_blocks_that_walk_several_tiles() -> None:
    import dataclasses

    entry = get_kernel("gemm_warp_specialized_persistent")
    assert entry in all_kernels() or entry.name in {e.name for e in all_kernels()}
    assert entry.params == {"BLOCKS": 132}  # as it is measured, gated and walked on a GPU
    shape = entry.default_shape
    tiles = -(-shape["M"] // 128) * -(-shape["N"] // 128)
    assert -(-shape["K"] // 64) % 3 != 0  # the K-blocks of a tile are not a whole number of rotations
    assert tiles == 4
    for blocks in (132, 3):  # 132: most blocks find no tile; 3: block 0 takes tiles 0 and 3
        walking = dataclasses.replace(entry, params={"BLOCKS": blocks})
        assert check_on_interpreter(walking, shape) < entry.tolerance
        assert check_on_interpreter(walking, entry.partial_shape) < entry.tolerance


@pytest.fixture(scope="module")
def expert_compiled():
    return compile_kernel(gemm_warp_specialized_persistent, BN=256, STAGES=4, OUT="bf16")


def test_compiles_to_tma_wgmma_and_setmaxnreg_without_spills(expert_compiled) -> None:
    mix = expert_compiled.instruction_mix()
    for opcode in ("UTMALDG", "HGMMA", "SYNCS", "USETMAXREG"):
        assert mix.get(opcode, 0) > 0, (opcode, mix)
    r = expert_compiled.resources
    assert r.spill_stores == 0 and r.spill_loads == 0, r
    assert "setmaxnreg' ignored" not in (expert_compiled.module.log or "")


def test_the_deferred_release_follows_the_global_stage() -> None:
    src = generate(gemm_warp_specialized_persistent.trace(BN=256, STAGES=4, OUT="bf16")).source
    assert "__launch_bounds__(384, 1)" in src and "const int bx = blockIdx.x;" in src
    # one wgmma group in flight; stage g - 1 = (start + k - 1) % 4 released once the MMAs of k are issued, the
    # tile's last stage after its loop, before the epilogue (the producer meanwhile fills the next tile's stages)
    assert "argus::wgmma_wait<1>();" in src
    release = "argus::mbarrier_arrive(argus::smem_u32(&empty[(k_1 + (it_1 * ((K + 63) / 64))) % 4]));"
    assert src.count("if (consumer_tid % 128 == 0) " + release) == 2
    assert src.index("const int k_1 = k_1_released;") < src.index("argus::wgmma_wait<0>();  // the last iteration")
    assert "argus::mbarrier_init(argus::smem_u32(&empty[i]), 2);" in src  # each consumer warpgroup arrives
    # the waits use the global iteration's parity
    assert "static_cast<unsigned>(((k_1 + (it_1 * ((K + 63) / 64))) / 4) % 2) & 1u" in src
    assert "static_cast<unsigned>((((k + (it * ((K + 63) / 64))) / 4) + 1) % 2) & 1u" in src


def test_the_expert_kernel_generates_the_same_code_as_before() -> None:
    # the pipeline's start is 0 there: no trace of it in the IR printer or the generated source
    from argus.ir.printer import format_stmts
    from argus.kernels.gemm import gemm_warp_specialized

    kernel = gemm_warp_specialized.trace(STAGES=4)
    assert "start=" not in "\n".join(format_stmts(kernel.body))
    assert "full[k % 4]" in generate(kernel).source
