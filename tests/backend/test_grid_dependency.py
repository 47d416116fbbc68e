"""Programmatic dependent launch: every generated kernel starts with ``griddepcontrol.wait`` (wait for the grids
before it in the stream) and ``griddepcontrol.launch_dependents`` before any statement of its body, so that a
launch made as a programmatic dependent (`argus.runtime.loaded.PreparedLaunch.dependent`) keeps stream order; the
switch off gives the kernels as they were; the instructions reach SASS (ACQBULK, PREEXIT)."""

from __future__ import annotations

import pytest

from argus.backend.cuda.codegen import compile_kernel, generate
from argus.backend.cuda.codegen.emitter import Emitter
from argus.kernels import gemm
from argus.kernels.elementwise import vector_add

WAIT = "argus::grid_dependency_wait(); argus::launch_dependents();"


def _kernels() -> list:
    return [
        gemm.gemm_warp_specialized_persistent.trace(BM=128, BN=256, STAGES=4, OUT="bf16", EPILOGUE="tma"),
        gemm.gemm_split_reduce.trace(SPLITS=3, OUT="bf16"),
        vector_add.trace(),
    ]


@pytest.mark.parametrize("index", range(3))
def test_the_wait_comes_before_any_statement_of_the_body(index: int) -> None:
    kernel = _kernels()[index]
    source = generate(kernel).source
    lines = [line.strip() for line in source.splitlines()]
    assert sum(WAIT in line for line in lines) == 1
    start = next(i for i, line in enumerate(lines) if line.startswith('extern "C" __global__'))
    wait = next(i for i, line in enumerate(lines) if WAIT in line)
    # before it only the indices and the tensor-map prefetch, which read the kernel's parameters, not memory
    for line in lines[start + 1 : wait]:
        assert line.startswith("const int ") or line.startswith("if (threadIdx.x == 0) { argus::prefetch_tensormap"), (
            line
        )


def test_the_switch_off_gives_the_kernel_as_it_was() -> None:
    from argus.backend.cuda.codegen.prelude import _SNIPPETS

    class Without(Emitter):
        grid_dependency = False

    snippet = _SNIPPETS["grid_dependency"].text.splitlines()
    for kernel in _kernels():
        before = Without(kernel).generate().source.splitlines()
        after = generate(kernel).source.splitlines()
        assert not any("griddepcontrol" in line for line in before)
        at = after.index(snippet[0])  # the helpers, one block of the prelude
        assert after[at : at + len(snippet)] == snippet
        assert after[at + len(snippet)] == ""  # the blank line between two helpers
        kept = [line for line in after[:at] + after[at + len(snippet) + 1 :] if WAIT not in line]
        assert kept == before, kernel.name


def test_the_instructions_reach_sass() -> None:
    mix = compile_kernel(gemm.gemm_split_reduce, SPLITS=3, OUT="bf16").instruction_mix()
    assert mix.get("ACQBULK", 0) == 1 and mix.get("PREEXIT", 0) == 1, mix
