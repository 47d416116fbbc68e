"""The code generator's less common paths, on the small kernels of `tests/runtime/kernels_codegen.py`: each
generates and compiles for sm_90a without spills, and its source and SASS show the path taken. (Their
numbers are checked against the interpreter by the GPU tier, `tests/runtime/test_gpu.py`.)"""

from __future__ import annotations

import pytest

from argus.backend.cuda.codegen import CompiledKernel, compile_kernel
from tests.runtime.kernels_codegen import CASES

BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="module")
def built() -> dict[str, CompiledKernel]:
    return {case.name: compile_kernel(case.kernel.trace(**case.params), cache=False) for case in CASES}


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_case_compiles_without_spills_or_warnings(name: str, built) -> None:
    compiled = built[name]
    assert compiled.module.warnings == ()
    r = compiled.resources
    assert (r.spill_stores, r.spill_loads, r.stack_frame) == (0, 0, 0), str(r)


def test_conversions_index_select_unroll_and_branch(built) -> None:
    compiled = built["mixed_elementwise"]
    source = compiled.generated.source
    assert "#include <cuda_bf16.h>" in source
    assert "__float2bfloat16_rn(y[v])" in source  # T.cast to bf16 rounds to nearest even
    assert "static_cast<float>(col1 + 3)" in source  # T.index: each value's own column (the fragment is `col`)
    assert "(r[v] != 0 ? r_1[v] : r_2[v])" in source  # T.where
    assert "#pragma unroll\n  for (int i = 0; i < 3; ++i) {" in source  # T.unroll
    assert "if ((bm * 8) < M) {" in source  # T.if_
    # bf16 stores: four values of 2 bytes per thread move as one 8-byte vector
    assert compiled.instruction_mix(modifiers=True)["STG.E.64"] == 1


def test_replicated_fragment_is_stored_once_per_element(built) -> None:
    source = built["mixed_elementwise"].generated.source
    # the row sums are held by the 16 threads of each row; only the first of them stores
    assert "if ((tid & 15) == 0) {" in source
    assert built["mixed_elementwise"].instruction_mix()["SHFL"] == 4  # 16 lanes per row: offsets 1, 2, 4, 8


def test_swizzled_shared_memory_with_ldmatrix_and_cp_async(built) -> None:
    compiled = built["swizzled_gemm"]
    source = compiled.generated.source
    assert "argus::swizzle<2, 3, 3>(" in source  # 64-byte swizzle of bf16
    assert "argus::swizzle<3, 3, 3>(" in source  # 128-byte swizzle of bf16
    assert "argus_smem + 4096" in source  # sB right after sA (64 x 32 bf16), on a 1024-byte boundary
    mix = compiled.instruction_mix(modifiers=True)
    assert mix["LDSM.16.M88.4"] == 4 and mix["LDSM.16.MT88.4"] == 4
    assert mix["LDGSTS.E.BYPASS.128.ZFILL"] == 4
    assert mix["HMMA.16816.F32.BF16"] == 16
    assert compiled.generated.notes == ()


def test_a_forced_ldmatrix_variant_is_emitted_as_written(built) -> None:
    mix = built["swizzled_gemm_forced_x4"].instruction_mix(modifiers=True)
    # B's layout calls for .trans; the forced .x4 keeps the row addresses and loads without it
    assert mix["LDSM.16.M88.4"] == 8 and mix["LDSM.16.MT88.4"] == 0


def test_stmatrix_and_named_barrier(built) -> None:
    compiled = built["matrix_roundtrip"]
    mix = compiled.instruction_mix(modifiers=True)
    # 16 rows x 32 columns per warp: two 16x16 A atoms, each one .x4
    assert mix["LDSM.16.M88.4"] == 2
    assert mix["STSM.16.M88.4"] == 2
    assert 'bar.sync %0, %1;\\n" :: "r"(1), "r"(128)' in compiled.generated.source


def test_narrow_cp_async_runs(built) -> None:
    compiled = built["narrow_copies"]
    mix = compiled.instruction_mix(modifiers=True)
    # two bf16 per row: 4-byte cp.async (.ca); one bf16 per row: too narrow, a synchronous copy and a note
    assert mix["LDGSTS.E.ZFILL"] == 1
    assert "cp.async.ca.shared.global" in compiled.module.ptx
    (note,) = compiled.generated.notes
    assert "kernels_codegen.py:" in note and "2 bytes" in note
    assert "// note: cp.async needs 4-, 8- or 16-byte runs" in compiled.generated.source
    # the row stride K is a shape symbol: the 4-byte runs are aligned only when K is even
    assert "const bool vector_ok = K % 2 == 0;" in compiled.generated.source
    assert "argus::store_shared<4>(sf + " in compiled.generated.source  # the shared fill, 16 bytes at a time
    assert "argus::store_global<4>(G, " in compiled.generated.source  # the global fill, masked per run


def test_a_layout_that_carries_between_values_uses_the_generic_index(built) -> None:
    source = built["carried_layout"].generated.source
    assert "const int index = tid * 3;  // tv's thread part" in source
    assert "(index + 2) % 8" in source and "(index + 2) / 8" in source
    mix = built["carried_layout"].instruction_mix(modifiers=True)
    assert mix["LDG.E.128.CONSTANT"] == 0  # no vector: consecutive values are not consecutive addresses


def test_negative_origins_and_floor_semantics(built) -> None:
    source = built["shifted_window"].generated.source
    # the origin bx * 512 - 3 is not a multiple of 4: vectors only where a run-time check says aligned
    assert "const bool vector_ok = ((bx * 512) - 3) % 4 == 0;" in source
    assert "argus::floormod(bx - 1, 2)" in source and "argus::floordiv(bx - 3, 2)" in source
    assert "bx / 2" in source  # non-negative operands keep C's division


def test_global_offsets_are_computed_in_64_bits_in_the_wide_variant() -> None:
    """A batched split of (8, 3, 16.7M) f32 (level 1's 83: a depthwise convolution's column matrix) writes Y (8, 3,
    64, 16.7M): the batch stride P * D * 3 is 3.2e9 elements. Computed in int it wrapped around and the launch
    faulted (CUDA_ERROR_ILLEGAL_ADDRESS on an H200); in the wide variant (which the runtime launches for tensors of
    more than 2^31 elements) every stride that is a product of sizes, and every product of a coordinate with a
    stride, is computed in long long. The default variant keeps the outermost term in long long and the rest in int
    (what the runtime launches for tensors of at most 2^31 elements: 70 registers instead of 160 in KernelBench's
    3-d max pooling)."""
    import re

    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.gemm import split_bf16x3
    from argus.kernels.matmul import GemmProblem, split_steps

    (step,) = [s for s in split_steps(GemmProblem(1, 16711680, 3, "f32", "f32", "K", "N", 8)) if s.name == "B"]
    wide = compile_kernel(split_bf16x3.trace(**step.params), wide=True).generated
    assert wide.wide
    stores = [line for line in wide.source.splitlines() if "argus::store_global<" in line]
    assert stores and all("static_cast<long long>(bz) * (static_cast<long long>(D) * P * 3)" in s for s in stores)
    assert all("static_cast<long long>(bx * 16 + row) * D" in line for line in stores)  # the row term too
    assert not [line for line in stores if re.search(r"[^>]\((\w+) \* (\w+)\)", line)]  # no int product of sizes
    narrow = compile_kernel(split_bf16x3.trace(**step.params)).generated
    assert not narrow.wide
    stores = [line for line in narrow.source.splitlines() if "argus::store_global<" in line]
    assert stores and all("static_cast<long long>(bz) * ((D * P) * 3)" in s for s in stores), stores[0]
    assert all("(bx * 16 + row) * D" in line and "static_cast<long long>(bx * 16" not in line for line in stores)


def _binding(*shapes: tuple[int, ...]):
    from types import SimpleNamespace

    from argus.runtime.arguments import TensorInfo

    def info(shape: tuple[int, ...]) -> TensorInfo:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
        return TensorInfo("torch", None, "float32", shape, tuple(strides), 0, 0, False, 4)

    return SimpleNamespace(infos=tuple(info(s) for s in shapes))


def test_a_launch_on_a_tensor_past_2_31_elements_takes_the_wide_variant() -> None:
    # the runtime's choice, without a GPU: the binding's tensors decide; the wide variant is compiled once, from the
    # traced kernel the CompiledKernel keeps
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.elementwise import vector_add
    from argus.runtime import load
    from argus.runtime.arguments import NARROW_ELEMENTS, wide_tensor

    loaded = load(compile_kernel(vector_add))
    assert not loaded.generated.wide
    small = _binding((NARROW_ELEMENTS,), (NARROW_ELEMENTS,), (NARROW_ELEMENTS,))
    assert wide_tensor(small.infos, "abc") is None and loaded._for(small) is loaded
    large = _binding((4,), (NARROW_ELEMENTS + 1,), (4,))
    assert wide_tensor(large.infos, "abc") == f"b ({NARROW_ELEMENTS + 1} elements)"
    wide = loaded._for(large)
    assert wide is not loaded and wide.generated.wide and wide._for(large) is wide
    assert loaded._for(large) is wide  # compiled once


def test_a_kernel_loaded_without_its_traced_kernel_refuses_a_tensor_past_2_31_elements() -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.diagnostics import ArgusError
    from argus.kernels.elementwise import vector_add
    from argus.runtime import load
    from argus.runtime.arguments import NARROW_ELEMENTS

    compiled = compile_kernel(vector_add)
    loaded = load(compiled.module, compiled.generated)
    with pytest.raises(ArgusError) as err:
        loaded._for(_binding((4,), (4,), (2 * NARROW_ELEMENTS,)))
    assert err.value.code == "RUNTIME_ARG_WIDE"
    assert f"tensor C ({2 * NARROW_ELEMENTS} elements)" in str(err.value)
