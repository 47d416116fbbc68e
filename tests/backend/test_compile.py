"""compile_cuda: NVRTC turns each fixture kernel into an sm_90a cubin whose SASS uses the intended
instructions, without a GPU; options and architectures are validated."""

from __future__ import annotations

import subprocess
import sys

import pytest

from argus.backend.cuda import (
    DEFAULT_OPTIONS,
    CompiledModule,
    CompileError,
    compile_cuda,
    effective_options,
    find_toolkit,
    toolchain_info,
)
from tests.backend.cuda_kernels import ALL_VALID, VECTOR_ADD


def test_every_fixture_compiles_to_an_sm90a_cubin_without_warnings(compiled: dict[str, CompiledModule]) -> None:
    assert set(compiled) == set(ALL_VALID)
    for module in compiled.values():
        assert module.cubin[:4] == b"\x7fELF"
        assert module.arch == "sm_90a"
        assert ".target sm_90a" in module.ptx
        assert module.warnings == ()
        assert not module.from_cache


def test_vector_add_loads_adds_and_stores_without_spills(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["vector_add"]
    mix = module.instruction_mix()
    assert mix["LDG"] == 2 and mix["FADD"] == 1 and mix["STG"] == 1
    assert module.kernel_names == ("vector_add",)
    resources = module.resources["vector_add"]
    assert resources.registers > 0
    assert (resources.spill_stores, resources.spill_loads, resources.stack_frame) == (0, 0, 0)
    assert not resources.spills
    assert resources.param_bytes == 3 * 8 + 4


def test_mma_sync_becomes_hmma(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["mma_sync_bf16"]
    assert module.instruction_mix()["HMMA"] == 1
    assert module.instruction_mix(modifiers=True)["HMMA.16816.F32.BF16"] == 1
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in module.ptx


def test_ldmatrix_becomes_ldsm(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["ldmatrix_x4"]
    assert module.instruction_mix(modifiers=True)["LDSM.16.M88.4"] == 1
    assert module.resources["ldmatrix_x4"].static_shared == 4 * 8 * 8 * 2


def test_wgmma_becomes_hgmma_between_warpgroup_fences(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["wgmma_m64n64k16"]
    mix = module.instruction_mix(modifiers=True)
    assert any(op.startswith("HGMMA.64x64x16.F32.BF16") for op in mix)
    assert mix["WARPGROUP.ARRIVE"] >= 1  # wgmma.fence
    assert any(op.startswith("WARPGROUP.DEPBAR") for op in mix)  # wgmma.wait_group
    assert module.resources["wgmma_m64n64k16"].max_threads == (128, 1, 1)


def test_tma_load_becomes_utmaldg(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["tma_load_2d"]
    mix = module.instruction_mix(modifiers=True)
    assert mix["UTMALDG.2D"] == 1
    assert module.instruction_mix()["SYNCS"] >= 1  # mbarrier operations
    resources = module.resources["tma_load_2d"]
    assert resources.static_shared == 64 * 64 * 4 + 8
    # the tensor map (128 bytes, passed by value), a pointer and two ints, padded to the map's 64-byte alignment
    assert resources.param_bytes == 192


def test_spilling_kernel_reports_spills_and_a_stack_frame(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["spilling"]
    resources = module.resources["spilling"]
    assert resources.stack_frame > 0
    assert resources.spill_stores > 0 and resources.spill_loads > 0 and resources.spills
    assert resources.spill_instructions > 0
    assert resources.max_threads == (1024, 1, 1)
    assert resources.registers <= 64
    mix = module.instruction_mix()
    assert mix["STL"] > 0 and mix["LDL"] > 0


def test_cuda_headers_from_the_wheels_are_on_the_include_path(compiled: dict[str, CompiledModule]) -> None:
    # cuda_runtime.h, cuda_bf16.h, cuda_fp16.h and cuda/barrier (CCCL)
    module = compiled["headers"]
    assert module.instruction_mix()["SYNCS"] >= 1  # cuda::barrier lowers to mbarrier operations


def test_template_kernel_is_found_through_its_name_expression(compiled: dict[str, CompiledModule]) -> None:
    module = compiled["template_and_cluster"]
    lowered = module.lowered_names["scale<4>"]
    assert lowered == "_Z5scaleILi4EEvPf"
    assert set(module.kernel_names) == {lowered, "clustered"}
    assert module.resources[lowered].max_threads == (256, 1, 1)
    clustered = module.resources["clustered"]
    assert clustered.cluster_dims == (2, 1, 1)
    assert clustered.barriers == 2  # barrier 0 (implicit) and the named barrier 1
    assert module.instruction_mix("clustered")["BAR"] >= 1
    assert module.instruction_mix(lowered)["FMUL"] == 1
    with pytest.raises(KeyError, match="no kernel 'missing'"):
        module.instruction_mix("missing")


def test_default_options_are_the_documented_ones() -> None:
    options = effective_options("sm_90a", ())
    assert options[0] == "--gpu-architecture=sm_90a"
    assert options[1 : 1 + len(DEFAULT_OPTIONS)] == DEFAULT_OPTIONS
    assert "--use_fast_math" not in options and "-default-device" not in options
    includes = [o for o in options if o.startswith("-I")]
    assert includes == [f"-I{d}" for d in find_toolkit().include_dirs]


def test_a_callers_option_replaces_the_default_that_sets_the_same_thing() -> None:
    options = effective_options("sm_90a", ["-std=c++20", "--use_fast_math"], ["/my/include"])
    assert "-std=c++17" not in options and options[-2:] == ("-std=c++20", "--use_fast_math")
    assert options.index("-I/my/include") < options.index(f"-I{find_toolkit().include_dirs[0]}")
    module = compile_cuda(VECTOR_ADD, "vector_add", options=["-std=c++20"], cache=False)
    assert module.log == ""  # no "-std followed by -std" warning


def test_architecture_options_are_rejected_in_favour_of_arch() -> None:
    with pytest.raises(CompileError) as caught:
        compile_cuda(VECTOR_ADD, "vector_add", options=["--gpu-architecture=sm_80"], cache=False)
    assert caught.value.code == "COMPILE_OPTION"
    assert "arch='sm_80'" in str(caught.value)


@pytest.mark.parametrize("arch", ["sm_91a", "compute_90a", "90", "sm_90x"])
def test_unsupported_architectures_are_rejected_with_the_supported_list(arch: str) -> None:
    with pytest.raises(CompileError) as caught:
        compile_cuda(VECTOR_ADD, "vector_add", arch=arch, cache=False)
    assert caught.value.code == "COMPILE_ARCH"
    assert "sm_90" in str(caught.value) and arch in str(caught.value)


def test_other_real_architectures_compile() -> None:
    module = compile_cuda(VECTOR_ADD, "vector_add", arch="sm_80", cache=False)
    assert ".target sm_80" in module.ptx
    assert module.instruction_mix()["FADD"] == 1


def test_unknown_options_are_reported_as_option_errors() -> None:
    with pytest.raises(CompileError) as caught:
        compile_cuda(VECTOR_ADD, "vector_add", options=["--no-such-option"], cache=False)
    error = caught.value
    assert error.code == "COMPILE_OPTION"
    assert "--no-such-option" in error.log and "--no-such-option" in str(error)


def test_program_name_gets_a_cu_suffix_once() -> None:
    assert compile_cuda(VECTOR_ADD, "vector_add", cache=False).name == "vector_add.cu"
    assert compile_cuda(VECTOR_ADD, "vector_add.cu", cache=False).name == "vector_add.cu"


def test_toolchain_info_describes_what_is_used() -> None:
    info = toolchain_info()
    assert info.nvrtc_version >= (12, 0)
    assert 90 in info.supported_archs
    assert info.nvrtc_library is not None and info.nvrtc_library.name.startswith("libnvrtc")
    assert info.cuobjdump is not None and info.nvdisasm is not None
    assert info.default_options[0] == "--gpu-architecture=sm_90a"


def test_importing_the_backend_does_not_load_cuda_bindings() -> None:
    code = "import sys, argus.backend.cuda; print('cuda.bindings' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
