"""The restriction on generated code (`argus.agent.restricted`): a DSL module passes, every escape is refused."""

from __future__ import annotations

import pytest

from argus.agent.arms import KernelRef, kernel_source
from argus.agent.restricted import (
    RestrictedCodeError,
    check_source,
    kernel_functions,
    require_restricted,
    tag_assertions,
)

KERNEL = """
import math
import argus
import argus.lang as T
from argus.layout import Layout


@argus.kernel
def scale(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], BLOCK: int = 128):
    with T.grid(T.cdiv(N, BLOCK), threads=BLOCK) as (b,):
        r = T.alloc_fragment((BLOCK,), T.f32)
        T.copy(X.tile((b,), (BLOCK,)), r)
        T.assert_tag(lambda x: x[0] // BLOCK == b, r)
        T.copy(r, Y.tile((b,), (BLOCK,)))
"""


@pytest.mark.parametrize("name", ["gemm_naive", "gemm_mma_sync", "gemm_cp_async_swizzled", "gemm_warp_specialized"])
def test_library_kernels_pass(name: str):
    assert check_source(kernel_source(KernelRef(library=name))) == []


def test_a_dsl_module_passes_and_is_read():
    assert check_source(KERNEL) == []
    assert kernel_functions(KERNEL) == ["scale"]
    assert tag_assertions(KERNEL) == 1


@pytest.mark.parametrize(
    ("snippet", "says"),
    [
        ("import os", "imports os"),
        ("import subprocess as sp", "imports subprocess"),
        ("from socket import socket", "imports from socket"),
        ("import argus.eval.candidates", "imports argus.eval.candidates"),
        ("from argus.kernels import registry", "imports from argus.kernels"),
        ("from . import x", "imports from ."),
        ("x = open('/etc/passwd').read()", "uses open"),
        ("eval('1+1')", "uses eval"),
        ("exec('import os')", "uses exec"),
        ("__import__('os').system('true')", "uses __import__"),
        ("y = getattr(T, 'copy')", "uses getattr"),
        ("y = (1).__class__.__bases__", "accesses the attribute __class__"),
        ("f = argus.kernel.__globals__", "accesses the attribute __globals__"),
        ("g = argus.eval", "uses argus.eval"),
        ("class Evil:\n    pass", "defines a class Evil"),
        ("def f():\n    global X", "declares global or nonlocal names"),
        ("z = compile('1', 'f', 'eval')", "uses compile"),
        ("import math\nimport os.path", "imports os.path"),
    ],
)
def test_escapes_are_refused(snippet: str, says: str):
    violations = check_source(KERNEL + "\n" + snippet + "\n")
    assert any(says in v.message for v in violations), violations
    with pytest.raises(RestrictedCodeError) as err:
        require_restricted(KERNEL + "\n" + snippet + "\n")
    assert err.value.code == "CODER_RESTRICTED" and says in err.value.message


def test_code_that_does_not_parse_is_refused():
    (v,) = check_source("def broken(:\n")
    assert "does not parse" in v.message and v.line == 1
