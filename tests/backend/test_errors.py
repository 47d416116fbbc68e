"""Compile errors: typed, with a stable code and the full NVRTC log, pointing at the DSL line nearest above
the failing generated line (from ``// file.py:LINE`` comments or an explicit line map)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from argus.backend.cuda import CompileError, compile_cuda, derive_line_map, dsl_location
from argus.backend.cuda.diagnostics import parse_log, ptx_line_to_source_line
from tests.backend.cuda_kernels import BAD_INLINE_PTX, SYNTAX_ERROR, SYNTAX_ERROR_LINE, VECTOR_ADD


def _compile_error(source: str, **kwargs: object) -> CompileError:
    with pytest.raises(CompileError) as caught:
        compile_cuda(source, "kernel", cache=False, **kwargs)  # type: ignore[arg-type]
    return caught.value


def test_syntax_error_names_the_dsl_line_and_carries_the_full_log() -> None:
    error = _compile_error(SYNTAX_ERROR)
    assert error.code == "COMPILE_NVRTC"
    assert error.location == "kernel.py:42"
    assert error.generated_line == SYNTAX_ERROR_LINE
    assert f'kernel.cu({SYNTAX_ERROR_LINE}): error: expected a ";"' in error.log
    assert "error detected in the compilation" in error.log
    text = str(error)
    assert text.startswith('[COMPILE_NVRTC] NVRTC could not compile kernel.cu for sm_90a: expected a ";"')
    assert "  at kernel.py:42\n" in text
    assert f"generated kernel.cu:{SYNTAX_ERROR_LINE}" in text
    assert error.log.rstrip().splitlines()[-1].strip() in text  # the whole log is in the message
    assert error.source == SYNTAX_ERROR
    assert error.options[0] == "--gpu-architecture=sm_90a"


def test_the_generated_line_is_shown_with_nvrtcs_caret() -> None:
    text = str(_compile_error(SYNTAX_ERROR))
    line = SYNTAX_ERROR.splitlines()[SYNTAX_ERROR_LINE - 1]
    shown = f"{SYNTAX_ERROR_LINE:>5} | {line}"
    assert shown in text
    caret = text.splitlines()[text.splitlines().index("    " + shown) + 1]
    assert caret.index("^") == ("    " + shown).index("x[threadIdx.x] = y")


def test_an_explicit_line_map_takes_precedence_over_comments() -> None:
    error = _compile_error(SYNTAX_ERROR, line_map={1: "gemm.py:7", 4: "gemm.py:9", 6: "gemm.py:11"})
    assert error.location == "gemm.py:9"
    assert "at gemm.py:9" in str(error) and "kernel.py:42" not in error.location


def test_without_a_line_map_the_error_still_shows_the_generated_line() -> None:
    source = "\n".join(line for line in SYNTAX_ERROR.splitlines() if "kernel.py" not in line) + "\n"
    error = _compile_error(source)
    assert error.location is None
    assert error.generated_line == SYNTAX_ERROR_LINE - 2
    assert "generated kernel.cu:3" in str(error)


def test_the_dsl_source_line_is_quoted_when_the_file_exists(tmp_path: Path) -> None:
    dsl = tmp_path / "my_kernel.py"
    dsl.write_text("import argus\n\nacc = T.gemm(sA, sB, acc)  # the DSL line\n")
    source = SYNTAX_ERROR.replace("// kernel.py:42", f"// {dsl}:3")
    text = str(_compile_error(source))
    assert f"at {dsl}:3" in text
    assert "3 | acc = T.gemm(sA, sB, acc)  # the DSL line" in text


def test_ptxas_errors_are_mapped_back_through_the_ptx_line_table() -> None:
    error = _compile_error(BAD_INLINE_PTX)
    assert error.code == "COMPILE_NVRTC"
    assert "ptxas" in error.log and "bogus" in error.log
    assert error.location == "kernel.py:12"
    assert error.generated_line == 5  # the asm statement
    first = error.diagnostics[0]
    assert first.tool == "ptxas" and first.file == "ptx" and first.line is not None
    assert "ptxas rejected the PTX" in str(error)


def test_every_error_is_listed_with_its_location() -> None:
    source = SYNTAX_ERROR.replace("x[threadIdx.x] = y * 2.0f;", "x[threadIdx.x] = y * 2.0f;\n  undefined_fn(y);")
    error = _compile_error(source)
    errors = [d for d in error.diagnostics if d.is_error]
    assert len(errors) == 2
    assert 'also: kernel.py:42 (generated line 6): error: identifier "undefined_fn" is undefined' in str(error)


def test_missing_headers_get_a_hint_about_nvrtc_and_host_headers() -> None:
    error = _compile_error("#include <cuda.h>\n" + VECTOR_ADD)
    assert "cannot open source file" in error.log
    assert "CUtensorMap" in (error.hint or "")


def test_compile_errors_survive_pickling() -> None:
    error = _compile_error(SYNTAX_ERROR)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is CompileError
    assert str(copy) == str(error)
    assert (copy.code, copy.location, copy.log, copy.diagnostics) == (
        error.code,
        error.location,
        error.log,
        error.diagnostics,
    )


def test_warnings_of_a_successful_compile_are_mapped_to_the_dsl() -> None:
    source = '// kernel.py:7\nextern "C" __global__ void w(float* x) {\n  int unused = 3;\n  x[0] = 1.0f;\n}\n'
    module = compile_cuda(source, "warned", cache=False)
    (warning,) = module.warnings
    assert warning.severity == "warning" and "unused" in warning.message
    assert warning.generated_line == 3 and warning.location == "kernel.py:7"


def test_derive_line_map_reads_dsl_comments_anywhere_on_a_line() -> None:
    source = "// a.py:1\nint x;  // b.py:20\n// not a location: c.txt:3\n/* x */ y; // c.py:5 then // d.py:6\n"
    assert derive_line_map(source) == {1: "a.py:1", 2: "b.py:20", 4: "d.py:6"}


def test_dsl_location_is_the_nearest_mapped_line_at_or_above() -> None:
    line_map = {3: "k.py:10", 7: "k.py:12"}
    assert [dsl_location(line_map, line) for line in (1, 2, 3, 6, 7, 100)] == [
        None,
        None,
        "k.py:10",
        "k.py:10",
        "k.py:12",
        "k.py:12",
    ]
    assert dsl_location({}, 5) is None and dsl_location(line_map, None) is None


def test_ptx_lines_map_to_the_program_not_to_headers() -> None:
    ptx = '.loc 1 3 0\nmov.b32 %r1, 0;\n.loc 2 9 0\nadd.s32 %r1, %r1, 1;\n.file 1 "/tmp/k.cu"\n.file 2 "/inc/h.h"\n'
    assert ptx_line_to_source_line(ptx, 2, "k.cu") == 3
    assert ptx_line_to_source_line(ptx, 4, "k.cu") == 3  # .loc 2 is a header: skipped
    assert ptx_line_to_source_line(ptx, 1, "other.cu") is None


def test_parse_log_understands_nvrtc_and_ptxas_messages() -> None:
    log = (
        'k.cu(4): error: expected a ";"\n'
        '/inc/h.h(9): warning #177-D: variable "v" was declared but never referenced\n'
        "nvrtc: error: unrecognized option --x found\n"
        "ptxas info    : Used 10 registers\n"
        "ptxas application ptx input, line 2; error   : Unknown modifier '.y'\n"
        "ptxas fatal   : Ptx assembly aborted due to errors\n"
    )
    diagnostics = parse_log(log, program_name="k.cu", line_map={1: "k.py:1"}, ptx='.loc 1 4 0\nfoo;\n.file 1 "k.cu"\n')
    assert [(d.tool, d.severity, d.generated_line, d.location) for d in diagnostics] == [
        ("nvrtc", "error", 4, "k.py:1"),
        ("nvrtc", "warning", None, None),
        ("nvrtc", "error", None, None),
        ("ptxas", "error", 4, "k.py:1"),
    ]


def test_a_serialized_wgmma_pipeline_is_a_warning() -> None:
    """ptxas reports a serialized wgmma pipeline (C7514) on an info line; argus reports it as a warning (the
    flattened convolution's K loop ran ~15 % slower when its epilogue's cast made ptxas serialize it)."""
    log = (
        "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
        "wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in "
        "the function 'k' in line 0\n"
        "ptxas info    : Used 10 registers\n"
    )
    diagnostics = parse_log(log, program_name="k.cu", line_map={})
    assert [(d.tool, d.severity) for d in diagnostics] == [("ptxas", "warning")]
    assert "serialized" in diagnostics[0].message


def test_the_flat_convolution_keeps_its_wgmma_pipeline() -> None:
    """The flattened-position convolution with a bias, a fused epilogue and split along K: no ptxas warning (its
    epilogue once rounded the accumulator into a fragment of its own, and ptxas serialized the K loop's wgmma)."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.conv_im2col import conv_im2col_gemm
    from argus.kernels.epilogue import Epilogue

    epilogue = Epilogue.of("T.maximum(acc * s, 0.0)", s="columns")
    for params in ({}, {"BIAS": True, "EPILOGUE": epilogue}, {"SPLITS": 2, "OUT": "f32"}):
        compiled = compile_kernel(conv_im2col_gemm.trace(BN=128, STAGES=4, CB=4, **params))
        assert compiled.module.warnings == (), compiled.module.warnings


def test_fitted_widths_keep_the_wgmma_pipeline() -> None:
    """Every filter width the flattened convolution's planner fits (`argus.kernels.conv.flat_widths`: multiples of
    `FLAT_WIDTH_STEP` from 64 to 256) compiles without a ptxas warning, with and without a bias; an odd multiple of
    16 (112, no bias: the accumulator rounded as it is stored) is serialized (C7514), the reason the widths step by
    32 (measured 1.2-1.4x slower a tile, docs/conv.md). Should ptxas stop serializing it, this test fails and the
    step can be 16."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.conv import FLAT_WIDTH_STEP
    from argus.kernels.conv_im2col import conv_im2col_gemm

    for bn in range(64, 257, FLAT_WIDTH_STEP):
        for bias in (False, True):
            compiled = compile_kernel(conv_im2col_gemm.trace(BN=bn, STAGES=4, CB=2, BIAS=bias))
            assert compiled.module.warnings == (), (bn, bias, compiled.module.warnings)
    odd = compile_kernel(conv_im2col_gemm.trace(BN=112, STAGES=4, CB=2)).module.warnings
    assert any("C7514" in w.message for w in odd), odd


@pytest.mark.parametrize("name", ["gemm_hopper", "gemm_hopper_nn"])
def test_a_k_loop_of_run_time_length_keeps_its_wgmma_pipeline(name: str) -> None:
    """The warp-specialized GEMM's K loop runs ``cdiv(K, BK)`` times, possibly none: the accumulator after it merges
    the fill's zeros with the loop's sums, and with the drain (``wgmma.wait_group 0``) after the loop ptxas put the
    merge's moves before it and serialized every wgmma (C7515). The code generator emits the loop and its drain
    under ``if (trip > 0)`` (`codegen.context.drained_loop`): no warning, and the loop waits for one group behind."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.backend.cuda.inspection import sass
    from argus.kernels.registry import get_kernel

    entry = get_kernel(name)
    compiled = compile_kernel(entry.kernel.trace(**entry.params))
    assert compiled.module.warnings == (), compiled.module.warnings
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass(compiled.module.cubin)
    assert "> 0) {  // the wait inside the branch" in compiled.generated.source
