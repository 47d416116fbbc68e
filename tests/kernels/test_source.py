"""`argus.kernels.source.module_source`: every library kernel as one self-contained module — it passes the
restriction on generated code, runs in a fresh namespace, and traces to the same IR as the kernel itself (the
coder used to be shown the function alone: softmax's LOG2E and the GEMMs' macros were missing, so a faithful
rewrite failed COMPILE_TRACE)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import argus
import argus.lang as T
from argus.agent.arms import KernelRef, kernel_source
from argus.agent.restricted import check_source
from argus.eval.candidates import import_file
from argus.ir.printer import format_kernel
from argus.kernels.registry import all_kernels, get_kernel
from argus.kernels.source import module_source


def _ir(kernel, params) -> str:
    """The traced IR without its source locations (the copy lives in another file)."""
    return re.sub(r"  # [^\n]*:\d+", "", format_kernel(kernel.trace(**params)))


@pytest.mark.parametrize("name", sorted(k.name for k in all_kernels()))
def test_a_library_kernel_as_one_module_traces_to_the_same_ir(name: str, tmp_path: Path) -> None:
    entry = get_kernel(name)
    text = module_source(entry.kernel)
    assert check_source(text) == [], text
    assert "# not shown" not in text
    path = tmp_path / f"copy_{name}.py"
    path.write_text(text)
    copy = getattr(import_file(path, f"copy_{name}"), entry.kernel.name)
    assert _ir(copy, entry.params) == _ir(entry.kernel, entry.params)


def test_constants_helpers_and_what_cannot_be_shown() -> None:
    softmax = module_source(get_kernel("softmax").kernel)
    assert "LOG2E = 1.4426950408889634" in softmax
    persistent = get_kernel("gemm_hopper_persistent").kernel
    gemm = module_source(persistent)
    assert "@T.macro" in gemm and gemm.index("@T.macro") < gemm.index(f"def {persistent.name}(")
    assert "SMS = 132" in gemm  # a hardware fact from argus.atoms, as the literal it is
    assert kernel_source(KernelRef(library="softmax")) == softmax


TABLE = {"a": object()}  # not a literal: cannot be written as source


def helper(x):
    return TABLE["a"] and x


@argus.kernel
def uses_table(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], B: int = 128):
    with T.grid(T.cdiv(N, B), threads=32) as (b,):
        x = T.alloc_fragment((B,), T.f32)
        T.copy(X.tile(b, B), x)
        helper(x)
        T.copy(x, Y.tile(b, B))


def test_an_object_without_source_is_named_not_dropped() -> None:
    text = module_source(uses_table)
    assert "#   TABLE: a dict" in text
    assert text.index("def helper(") < text.index("def uses_table(")
