"""Inspection: resources read from the cubin agree with what ptxas -v reported when it built it; SASS is
split per kernel and counted by opcode; things that are not cubins are refused."""

from __future__ import annotations

import pytest

from argus.backend.cuda import (
    CompiledModule,
    InspectError,
    KernelResources,
    inspect_cubin,
    instruction_mix,
    parse_ptxas_log,
    sass,
    split_sass,
)


def test_resources_agree_with_ptxas_for_every_fixture(compiled: dict[str, CompiledModule]) -> None:
    """The oracle: every fixture was compiled with ``-Xptxas -v``; cubin-derived numbers must match."""
    checked = 0
    for module in compiled.values():
        reports = parse_ptxas_log(module.log)
        resources = inspect_cubin(module.cubin)
        assert set(resources) == set(reports), module.name
        for name, found in resources.items():
            expected = reports[name]
            assert (
                found.registers,
                found.spill_stores,
                found.spill_loads,
                found.stack_frame,
                found.static_shared,
                found.barriers,
            ) == (
                expected.registers,
                expected.spill_stores,
                expected.spill_loads,
                expected.stack_frame,
                expected.static_shared,
                expected.barriers,
            ), name
            checked += 1
    assert checked == len(compiled) + 1  # one module holds two kernels
    assert any(r.spills for m in compiled.values() for r in m.resources.values())


def test_passing_the_sass_gives_the_same_resources(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["spilling"]
    assert inspect_cubin(module.cubin, sass_text=module.sass) == inspect_cubin(module.cubin)


def test_reserved_shared_memory_is_separated_from_the_declared(compiled: dict[str, CompiledModule]) -> None:
    uses_shared = compiled["tma_load_2d"].resources["tma_load_2d"]
    assert uses_shared.reserved_shared == 1024 and uses_shared.static_shared == 64 * 64 * 4 + 8
    no_shared = compiled["vector_add"].resources["vector_add"]
    assert (no_shared.static_shared, no_shared.reserved_shared) == (0, 0)


def test_sass_is_split_per_kernel(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["template_and_cluster"]
    per_kernel = split_sass(module.sass)
    assert set(per_kernel) == set(module.kernel_names)
    total = instruction_mix(module.sass)
    assert sum((instruction_mix(text) for text in per_kernel.values()), start=type(total)()) == total


def test_sass_with_line_info_names_the_generated_source(compiled: dict[str, CompiledModule]) -> None:
    text = sass(compiled["vector_add"].cubin, line_info=True)
    assert '//## File "' in text and "vector_add.cu" in text
    assert instruction_mix(text) == compiled["vector_add"].instruction_mix()


def test_instruction_mix_counts_opcodes_in_nvdisasm_and_cuobjdump_layouts() -> None:
    text = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0070*/               @P0 EXIT ;
        /*0080*/              @!P1 LDG.E.128 R4, desc[UR4][R2.64] ;
        /*00d0*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;  /* 0x00e0000418187df0 */
                                                                       /* 0x000fe20008000818 */
        /*00e0*/             @!UPT UTMALDG.2D [UR8], [UR4] ;
        /*00f0*/                   LDG.E R3, desc[UR4][R2.64] ;
        /*0100*/                   NOP;
    .L_x_1:
        // a comment: /*0110*/ FADD is not an instruction line
    """
    assert instruction_mix(text) == {"LDC": 1, "EXIT": 1, "LDG": 2, "HGMMA": 1, "UTMALDG": 1, "NOP": 1}
    with_modifiers = instruction_mix(text, modifiers=True)
    assert with_modifiers["LDG.E.128"] == 1 and with_modifiers["LDG.E"] == 1
    assert with_modifiers["HGMMA.64x64x16.F32.BF16"] == 1 and with_modifiers["UTMALDG.2D"] == 1


def test_parse_ptxas_log_reads_entries_only() -> None:
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
ptxas         .     384 bytes stack frame, 132 bytes spill stores, 136 bytes spill loads
ptxas info    : Used 64 registers, used 2 barriers, 1024 bytes smem
ptxas info    : Function properties for _Z6helperf
ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
    (report,) = parse_ptxas_log(log).values()
    assert (report.name, report.registers, report.barriers, report.static_shared) == ("k", 64, 2, 1024)
    assert (report.stack_frame, report.spill_stores, report.spill_loads) == (384, 132, 136)


@pytest.mark.parametrize(
    "data",
    [b"", b"not a cubin", b".version 9.0\n.target sm_90a\n", b"\x7fELF\x01" + bytes(60), b"\x7fELF\x02" + bytes(60)],
)
def test_things_that_are_not_cubins_are_refused(data: bytes) -> None:
    with pytest.raises(InspectError) as caught:
        inspect_cubin(data)
    assert caught.value.code == "INSPECT_NOT_CUBIN"
    with pytest.raises(InspectError):
        sass(data)


def test_resources_render_as_one_line(compiled: dict[str, CompiledModule]) -> None:
    resources: KernelResources = compiled["spilling"].resources["spilling"]
    text = str(resources)
    assert text.startswith("spilling: ") and "B spill stores" in text and f"{resources.stack_frame} B stack" in text
