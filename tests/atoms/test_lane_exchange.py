"""The lane exchange that widens a fragment's global stores to 16-byte runs (`argus.atoms.copy.lane_exchange`):
found for the wgmma and mma.sync accumulators with a 16-bit output, exact for every thread, refused where the
stores already fill whole sectors or where no exchange makes 16-byte runs; and the code generator and the
verifier both follow it."""

from __future__ import annotations

import numpy as np
import pytest

from argus.atoms.copy import LaneExchange, lane_exchange, tile_lane_exchange
from argus.backend.cuda.codegen import placement as pl
from argus.ir.nodes import Copy, Space, walk
from argus.kernels.gemm import gemm_warp_specialized
from argus.kernels.registry import GEMM_HOPPER_PARAMS


def _accumulator(**params):
    kernel = gemm_warp_specialized.trace(**params)
    stores = [s for s in walk(kernel.body) if isinstance(s, Copy) and s.src.space == Space.FRAGMENT]
    return kernel, pl.placement(stores[0].src.buffer)


def _positions(coords: np.ndarray, row_pitch: int) -> np.ndarray:
    return coords[:, :, 0] * row_pitch + coords[:, :, 1]


def test_the_wgmma_accumulator_with_a_bf16_output_is_exchanged_among_quads() -> None:
    _, p = _accumulator(**GEMM_HOPPER_PARAMS)  # 128x256 accumulator over 256 threads, 128 f32 values each
    plan = tile_lane_exchange(p.coords, 1, 2)
    assert plan is not None
    assert (plan.lanes, plan.width, plan.vector, len(plan.groups)) == (4, 2, 8, 16)
    # after the exchange every thread holds 16 runs of 8 consecutive, 8-aligned columns of one row
    after = plan.regroup(p.coords).reshape(256, 16, 8, 2)
    assert np.all(after[..., 0] == after[:, :, :1, 0])
    assert np.array_equal(after[..., 1], after[:, :, :1, 1] + np.arange(8))
    assert np.all(after[:, :, 0, 1] % 8 == 0)
    # ... and the threads together still hold every element exactly once
    flat = after.reshape(-1, 2)
    assert len({(int(r), int(c)) for r, c in flat}) == 128 * 256


def test_an_f32_output_already_fills_whole_sectors_and_is_left_alone() -> None:
    _, p = _accumulator(**GEMM_HOPPER_PARAMS)
    assert tile_lane_exchange(p.coords, 1, 4) is None


def test_a_plan_is_checked_for_every_thread() -> None:
    _, p = _accumulator(**GEMM_HOPPER_PARAMS)
    positions = _positions(p.coords, 1 << 16)
    assert lane_exchange(positions, 2) is not None
    broken = positions.copy()
    broken[37, 0:2] += 64  # one thread's first run elsewhere: its quad no longer forms 16-byte runs
    assert lane_exchange(broken, 2) is None
    assert lane_exchange(positions[:48], 2) is None  # not whole warps
    assert lane_exchange(positions[:, :6], 2) is None  # 3 runs per thread cannot be grouped by 4


def test_regroup_is_the_butterfly_transpose() -> None:
    """The code generator's butterfly (prelude `lane_exchange`: per bit, a lane sends the runs whose index differs
    from its lane in that bit and takes its partner's in their place) gives exactly `regroup`'s arrangement."""
    lanes = 4
    plan = LaneExchange(lanes, 1, ((0, 1, 2, 3),))
    held = [[(q, i) for i in range(lanes)] for q in range(32)]  # lane q's run i
    bit = 1
    while bit < lanes:
        low = [m for m in range(lanes) if not m & bit]
        sent = [[row[m] if q & bit else row[m | bit] for m in low] for q, row in enumerate(held)]
        new = [row[:] for row in held]
        for q in range(32):
            got = sent[q ^ bit]
            for j, m in enumerate(low):
                new[q][m if q & bit else m | bit] = got[j]
        held, bit = new, bit * 2
    labels = np.array([[q * 10 + i for i in range(lanes)] for q in range(32)])
    want = plan.regroup(labels)
    assert [[a * 10 + b for a, b in row] for row in held] == want.tolist()


@pytest.mark.parametrize("exchange", [True, False])
def test_the_expert_stores_16_byte_runs_after_shuffles(exchange: bool, monkeypatch) -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.backend.cuda.codegen.emitter import Emitter

    monkeypatch.setattr(Emitter, "lane_exchange_stores", exchange)
    kernel, _ = _accumulator(**GEMM_HOPPER_PARAMS)
    mix = compile_kernel(kernel, cache=False).instruction_mix(modifiers=True)
    if exchange:  # 128 values a thread: 16 stores of 8 bf16; 16 groups x 2 butterfly rounds x 2 runs sent = 64 shuffles
        assert mix["STG.E.128"] == 16 and mix["SHFL.BFLY"] == 64 and mix["STG.E"] == 0
    else:  # the packed pairs as the accumulator holds them
        assert mix["STG.E"] == 64 and mix["SHFL.BFLY"] == 0


def test_the_verifier_counts_the_stores_the_generator_emits() -> None:
    from argus.verify import verify

    kernel, _ = _accumulator(**GEMM_HOPPER_PARAMS)
    findings = verify(kernel).findings
    assert not [f for f in findings if f.code == "PERF_UNCOALESCED"]
    # the alignment it needs is that of the 16-byte runs (N a multiple of 8), as the generated code's vector_ok
    (align,) = [f for f in findings if f.code == "ALIGN_ASSUMPTION"]
    assert "16-byte vectors of 8 elements" in align.message
