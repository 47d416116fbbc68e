"""The GEMM lineage compiled for sm_90a without a GPU: each rung's SASS shows the instructions of the mechanism
it adds (FFMA for the FMA rungs, LDSM + HMMA and LDGSTS for the mma.sync rungs, UTMALDG + HGMMA without a
register split for the TMA rung, the persistent rung's stores of C as STG and the last rung's as UTMASTG), with no
spills and no slower path than the IR asked for."""

from __future__ import annotations

import dataclasses

import pytest

from argus.backend.cuda.codegen import CodegenError, CompiledKernel, compile_kernel, generate
from argus.ir.nodes import Alloc, For, Gemm, Kernel, Space, walk, whole
from argus.kernels.registry import get_kernel
from tests.interp.kernels_lineage_broken import fma_gemm

RUNGS = (
    "gemm_naive",
    "gemm_smem_tiled",
    "gemm_cp_async_swizzled",
    "gemm_tma_wgmma",
    "gemm_warp_specialized_persistent",
    "gemm_tma_store_epilogue",
)


@pytest.fixture(scope="module")
def built() -> dict[str, CompiledKernel]:
    out = {}
    for name in RUNGS:
        entry = get_kernel(name)
        out[name] = compile_kernel(entry.kernel.trace(**entry.params), cache=False)
    return out


@pytest.mark.parametrize("name", RUNGS)
def test_compiles_without_spills_warnings_or_fallbacks(name: str, built) -> None:
    compiled = built[name]
    assert compiled.module.arch == "sm_90a" and compiled.module.warnings == ()
    resources = compiled.resources
    assert (resources.spill_stores, resources.spill_loads, resources.stack_frame) == (0, 0, 0), str(resources)
    mix = compiled.instruction_mix()
    assert mix["LDL"] == 0 and mix["STL"] == 0  # fragments stayed in registers
    assert compiled.generated.notes == ()


def test_naive_is_ffma_on_global_loads(built) -> None:
    compiled = built["gemm_naive"]
    mix = compiled.instruction_mix(modifiers=True)
    # BK = 16 products per k-tile, one output per thread; no tensor cores, no shared memory, no barrier
    assert compiled.instruction_mix()["FFMA"] >= 16 and compiled.instruction_mix()["FFMA"] % 16 == 0
    assert compiled.instruction_mix()["HMMA"] == compiled.instruction_mix()["LDS"] == 0
    assert compiled.generated.shared_bytes == 0 and compiled.instruction_mix()["BAR"] == 0
    assert mix["LDG.E.128.CONSTANT"] >= 2  # A's row: 16 bf16 as two 16-byte vectors when K % 8 == 0
    assert "fma.rn.f32" in compiled.module.ptx


def test_smem_tiled_is_ffma_on_16_byte_shared_loads(built) -> None:
    compiled = built["gemm_smem_tiled"]
    mix = compiled.instruction_mix(modifiers=True)
    assert compiled.instruction_mix()["FFMA"] == 8 * 8 * 8  # TM x TN x BK per k-tile
    # A (M-contiguous) and B (K-contiguous) runs of 8 bf16: 8 + 8 LDS.128 per thread and k-tile
    assert mix["LDS.128"] == 16
    assert compiled.instruction_mix()["HMMA"] == 0
    assert compiled.instruction_mix()["BAR"] == 2
    assert compiled.generated.shared_bytes == (128 * 8 + 8 * 128) * 2


def test_swizzled_cp_async_keeps_ldmatrix_mma_sync_and_16_byte_cp_async(built) -> None:
    compiled = built["gemm_cp_async_swizzled"]
    mix = compiled.instruction_mix(modifiers=True)
    assert mix["HMMA.16816.F32.BF16"] == 16
    assert mix["LDSM.16.M88.4"] == 4 and mix["LDSM.16.MT88.4"] == 4
    assert mix["LDGSTS.E.BYPASS.128.ZFILL"] == 8  # 16-byte cp.async: the swizzle keeps 16-byte chunks whole
    assert "Sw<2,3,3>" in compiled.generated.source and "Sw<3,3,3>" in compiled.generated.source


def test_tma_wgmma_without_warp_specialization(built) -> None:
    compiled = built["gemm_tma_wgmma"]
    mix = compiled.instruction_mix(modifiers=True)
    plain = compiled.instruction_mix()
    assert mix["HGMMA.64x128x16.F32.BF16"] == 4  # BK = 64: four k16 steps per warpgroup and k-tile
    assert plain["UTMALDG"] >= 2
    assert plain["USETMAXREG"] == 0  # no register split: that is the next rung
    assert plain["BAR"] >= 1
    assert len(compiled.generated.tensor_maps) == 2


def test_the_last_rung_stores_c_through_tma_and_changes_nothing_else(built) -> None:
    persistent, staged = built["gemm_warp_specialized_persistent"], built["gemm_tma_store_epilogue"]
    before, after = persistent.instruction_mix(), staged.instruction_mix()
    assert before["UTMASTG"] == 0 and before["STG"] > 0  # the persistent rung stores C from registers
    assert after["UTMASTG"] > 0 and after["STG"] == 0  # C leaves through TMA only
    for opcode in ("UTMALDG", "HGMMA", "USETMAXREG"):  # the main loop and the roles are the persistent rung's
        assert after[opcode] == before[opcode] > 0, opcode
    # two 128-byte-swizzled chunk buffers of 128 rows x 128 bytes, and a third tensor map (C's)
    assert staged.generated.shared_bytes - persistent.generated.shared_bytes >= 2 * 128 * 128
    assert [m.tensor for m in staged.generated.tensor_maps] == [m.tensor for m in persistent.generated.tensor_maps] + [
        "C"
    ]


def _gemm_reading_shared_memory() -> Kernel:
    """An FMA GEMM whose T.gemm reads A and B straight from shared memory (the DSL refuses to trace that; the
    IR is built by replacing the operands)."""
    kernel = fma_gemm().trace()
    shared = [s.buffer for s in walk(kernel.body) if isinstance(s, Alloc) and s.buffer.space == Space.SHARED]

    def change(stmts: tuple) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, Gemm):
                s = dataclasses.replace(s, a=whole(shared[0]), b=whole(shared[1]))
            elif isinstance(s, For):
                s = dataclasses.replace(s, body=change(s.body))
            out.append(s)
        return tuple(out)

    return dataclasses.replace(kernel, body=change(kernel.body))


def test_fma_gemm_reading_shared_memory_is_refused_at_its_line() -> None:
    with pytest.raises(CodegenError) as info:
        generate(_gemm_reading_shared_memory())
    err = info.value
    assert err.code == "CODEGEN_UNSUPPORTED"
    assert "fma.f32.bf16.bf16 reading operand a from shared memory" in err.message
    assert "T.gemm(rA, rB, acc)" in str(err)
