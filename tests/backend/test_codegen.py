"""The code generator on the kernel library: every kernel generates, compiles with NVRTC for sm_90a (no GPU
needed), and its SASS shows the instructions it was written for, with no spills; the generated source
carries the DSL line comments the toolchain's line map reads, and the parameters and launch configuration
the runtime needs."""

from __future__ import annotations

import os
import re

import pytest

from argus.backend.cuda import CompiledModule, compile_cuda, derive_line_map, dsl_location
from argus.backend.cuda.codegen import CompiledKernel, GeneratedSource, compile_kernel, generate
from argus.ir.nodes import Copy, Stmt, walk
from argus.kernels.registry import get_kernel

LIBRARY = ("vector_add", "softmax", "layer_norm", "gemm_mma_sync", "gemm_cp_async")


@pytest.fixture(scope="module")
def built() -> dict[str, CompiledKernel]:
    """Each library kernel generated and compiled once, without the on-disk cache."""
    out = {}
    for name in LIBRARY:
        entry = get_kernel(name)
        out[name] = compile_kernel(entry.kernel.trace(**entry.params), cache=False)
    return out


@pytest.mark.parametrize("name", LIBRARY)
def test_library_kernel_compiles_for_sm90a_without_spills_or_warnings(name: str, built) -> None:
    compiled = built[name]
    module: CompiledModule = compiled.module
    assert module.arch == "sm_90a" and module.cubin[:4] == b"\x7fELF"
    assert module.warnings == ()
    assert module.kernel_names == (compiled.entry,)
    resources = compiled.resources
    assert (resources.spill_stores, resources.spill_loads, resources.stack_frame) == (0, 0, 0), str(resources)
    assert 0 < resources.registers <= 128, str(resources)
    mix = compiled.instruction_mix()
    assert mix["LDL"] == 0 and mix["STL"] == 0  # fragments stayed in registers
    assert compiled.generated.notes == ()  # no slower path than the IR asked for


def test_vector_add_moves_16_byte_vectors(built) -> None:
    mix = built["vector_add"].instruction_mix(modifiers=True)
    # two 16-byte vectors per thread and tensor (values 0..3 and 512..515 of the blocked layout)
    assert mix["LDG.E.128.CONSTANT"] == 4
    assert mix["STG.E.128"] == 2
    assert mix["FADD"] >= 8
    assert built["vector_add"].instruction_mix()["BAR"] == 0


@pytest.mark.parametrize("name", ["softmax", "layer_norm"])
def test_row_reductions_are_warp_shuffles(name: str, built) -> None:
    compiled = built[name]
    mix = compiled.instruction_mix(modifiers=True)
    # two row reductions, each over the 32 lanes of a warp: 5 XOR shuffles (lane offsets 1, 2, 4, 8, 16)
    assert compiled.instruction_mix()["SHFL"] == 10
    assert mix["SHFL.BFLY"] == 10
    assert mix["LDG.E.128.CONSTANT"] >= 1 and mix["STG.E.128"] == 1
    assert compiled.generated.shared_bytes == 0
    assert compiled.instruction_mix()["BAR"] == 0  # shuffles, not shared memory


@pytest.mark.parametrize("name", ["gemm_mma_sync", "gemm_cp_async"])
def test_gemms_use_ldmatrix_and_mma_sync(name: str, built) -> None:
    compiled = built[name]
    mix = compiled.instruction_mix(modifiers=True)
    # per k-tile and warp: 2 x 4 x 2 m16n8k16 on a 32x32 sub-tile of the 64x64 accumulator
    assert mix["HMMA.16816.F32.BF16"] == 16
    # A (64x32, K-major in shared memory): 4 x ldmatrix.x4; B (32x64, N-major): 4 x ldmatrix.x4.trans
    assert mix["LDSM.16.M88.4"] == 4
    assert mix["LDSM.16.MT88.4"] == 4
    assert compiled.instruction_mix()["BAR"] == 2
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in compiled.module.ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in compiled.module.ptx
    # the f32 accumulator leaves as 8-byte (c0, c1) pairs
    assert mix["STG.E.64"] == 16


def test_cp_async_gemm_copies_with_ldgsts_and_waits(built) -> None:
    compiled = built["gemm_cp_async"]
    mix = compiled.instruction_mix(modifiers=True)
    # 16-byte cp.async with zero-fill of masked elements: 2 copies x 2 runs per thread, in the prologue and
    # in the loop body
    assert mix["LDGSTS.E.BYPASS.128.ZFILL"] == 8
    assert compiled.instruction_mix()["LDGDEPBAR"] == 2  # commit_group: prologue and loop
    assert compiled.instruction_mix()["DEPBAR"] == 1  # wait_group 1
    assert "cp.async.cg.shared.global" in compiled.module.ptx
    assert compiled.generated.shared_bytes == 2 * (2 * 64 * 32 * 2)


def test_synchronous_gemm_copies_global_to_shared_with_vectors(built) -> None:
    mix = built["gemm_mma_sync"].instruction_mix(modifiers=True)
    assert mix["LDG.E.128.CONSTANT"] == 4 and mix["STS.128"] == 4
    assert built["gemm_mma_sync"].instruction_mix()["LDGSTS"] == 0


# --- the source -------------------------------------------------------------------------------------


def _statements(name: str) -> list[Stmt]:
    entry = get_kernel(name)
    return list(walk(entry.kernel.trace(**entry.params).body))


@pytest.mark.parametrize("name", LIBRARY)
def test_every_statement_has_a_dsl_line_comment(name: str, built) -> None:
    source = built[name].generated.source
    line_map = derive_line_map(source)
    mapped = set(line_map.values())
    from argus.ir.tags import AssertTag, AssertTagEq, Tag

    for s in _statements(name):
        if s.loc is not None and not isinstance(s, (Tag, AssertTag, AssertTagEq)):  # invariants emit no code
            assert f"{os.path.basename(s.loc.file)}:{s.loc.line}" in mapped
    # every line of code after the first statement maps back to the DSL statement it implements
    lines = source.splitlines()
    first = min(line_map)
    for number, text in enumerate(lines[first:], first + 1):
        if text.strip() and not text.strip().startswith(("//", "}", "{")):
            assert dsl_location(line_map, number) is not None


def test_ldmatrix_and_mma_lines_map_to_their_dsl_lines(built) -> None:
    source = built["gemm_mma_sync"].generated.source
    line_map = derive_line_map(source)
    stmts = _statements("gemm_mma_sync")
    ldmatrix = [s for s in stmts if isinstance(s, Copy) and s.atom == "ldmatrix"]
    gemm = next(s for s in stmts if type(s).__name__ == "Gemm")
    lines = source.splitlines()
    calls = [n for n, text in enumerate(lines, 1) if "argus::ldmatrix_x4" in text and "void" not in text]
    assert len(calls) == 8
    assert {dsl_location(line_map, n) for n in calls[:4]} == {f"gemm.py:{ldmatrix[0].loc.line}"}
    assert {dsl_location(line_map, n) for n in calls[4:]} == {f"gemm.py:{ldmatrix[1].loc.line}"}
    mma = next(n for n, text in enumerate(lines, 1) if "argus::mma_m16n8k16" in text and "void" not in text)
    assert dsl_location(line_map, mma) == f"gemm.py:{gemm.loc.line}"


def test_vector_add_comments_point_at_elementwise_py(built) -> None:
    source = built["vector_add"].generated.source
    comments = re.findall(r"// (elementwise\.py:\d+)", source)
    from argus.kernels import elementwise

    lines = {s.loc.line for s in _statements("vector_add")}
    assert {f"elementwise.py:{n}" for n in lines} <= set(comments)
    assert elementwise.__file__.endswith("elementwise.py")
    # the copy of A is the statement right after its comment
    copy_a = next(s for s in _statements("vector_add") if isinstance(s, Copy) and s.src.buffer.name == "A")
    after = source.split(f"// elementwise.py:{copy_a.loc.line}  copy A", 1)[1]
    assert "argus::load_global<4>(&a[0], A," in after.split("// elementwise.py:", 1)[0]


def test_parameters_are_tensors_then_shape_symbols(built) -> None:
    gen: GeneratedSource = built["gemm_cp_async"].generated
    assert gen.parameters == ("A", "B", "C", "M", "K", "N")
    signature = next(line for line in gen.source.splitlines() if line.startswith('extern "C"'))
    assert (
        "gemm_cp_async(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, "
        "float* __restrict__ C, int M, int K, int N)" in signature
    )
    assert "__launch_bounds__(128)" in signature
    a, b, c = gen.tensors
    assert (a.written, b.written, c.written) == (False, False, True)
    assert (a.alignment, b.alignment, c.alignment) == (16, 16, 8)  # 16-byte cp.async; 8-byte f32 pairs
    assert [str(s) for s in c.strides] == ["N", "1"]


def test_launch_config_from_shape_symbols(built) -> None:
    gen = built["gemm_cp_async"].generated
    config = gen.launch_config({"M": 100, "N": 72, "K": 80})
    assert config.grid == (2, 2, 1) and config.block == (128, 1, 1) and config.shared_bytes == 16384
    assert built["vector_add"].generated.launch_config({"N": 3000}).grid == (3, 1, 1)
    assert built["softmax"].generated.launch_config({"M": 10, "N": 100}).grid == (3, 1, 1)
    with pytest.raises(ValueError, match="grid extent y"):
        gen.launch_config({"M": 64, "N": 64 * 70000, "K": 32})
    with pytest.raises(KeyError, match="K"):
        gen.launch_config({"M": 64, "N": 64})


def test_shared_buffers_are_carved_from_one_dynamic_buffer(built) -> None:
    source = built["gemm_cp_async"].generated.source
    assert "extern __shared__ __align__(1024) unsigned char argus_smem[];" in source
    assert "reinterpret_cast<__nv_bfloat16*>(argus_smem + 0)" in source
    assert "reinterpret_cast<__nv_bfloat16*>(argus_smem + 8192)" in source  # 128-byte aligned after sA
    assert built["vector_add"].generated.shared_bytes == 0
    assert "__shared__" not in built["vector_add"].generated.source


def test_generation_is_deterministic() -> None:
    entry = get_kernel("gemm_cp_async")
    first = generate(entry.kernel.trace(**entry.params)).source
    again = generate(entry.kernel.trace(**entry.params)).source
    assert first == again


def test_generated_source_compiles_through_the_toolchain_and_its_cache(private_cache_dir) -> None:
    gen = generate(get_kernel("softmax").kernel.trace())
    first = compile_cuda(gen.source, gen.program_name)
    again = compile_cuda(gen.source, gen.program_name)
    assert not first.from_cache and again.from_cache
    assert first.line_map == again.line_map and any(v.startswith("softmax.py:") for v in first.line_map.values())


def test_generate_rejects_an_untraced_function() -> None:
    with pytest.raises(TypeError, match="trace it first"):
        generate(get_kernel("vector_add").kernel)
