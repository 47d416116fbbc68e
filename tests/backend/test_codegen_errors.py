"""What the code generator refuses, and how: ``CODEGEN_UNSUPPORTED`` naming the construct and pointing at the
DSL line (with the line's text and a caret), never at the generator's own code."""

from __future__ import annotations

import dataclasses
import os
import pickle
from dataclasses import dataclass

import pytest

from argus.backend.cuda.codegen import CodegenError, generate
from argus.diagnostics import ArgusError
from argus.ir.nodes import Copy, For, Gemm, If, Kernel, Role, Stmt
from argus.kernels.registry import get_kernel
from tests.runtime.kernels_codegen import with_mbarrier, with_role


def _line_of(fn, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _map_stmts(stmts: tuple[Stmt, ...], change) -> tuple[Stmt, ...]:
    out = []
    for s in stmts:
        s = change(s)
        if isinstance(s, For | Role):
            s = dataclasses.replace(s, body=_map_stmts(s.body, change))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then=_map_stmts(s.then, change), orelse=_map_stmts(s.orelse, change))
        out.append(s)
    return tuple(out)


def _changed(kernel: Kernel, change) -> Kernel:
    return dataclasses.replace(kernel, body=_map_stmts(kernel.body, change))


def _split_role() -> Kernel:
    """`with_role` with its role over warpgroups 0 and 2 (not consecutive: not lowered)."""
    kernel = with_role.trace()
    kernel = dataclasses.replace(kernel, threads=384)
    return _changed(kernel, lambda s: dataclasses.replace(s, warpgroups=(0, 2)) if isinstance(s, Role) else s)


def test_a_split_warp_role_is_unsupported_at_its_dsl_line() -> None:
    with pytest.raises(CodegenError) as info:
        generate(_split_role())
    err = info.value
    assert err.code == "CODEGEN_UNSUPPORTED"
    assert isinstance(err, ArgusError)
    assert "warp role 'producer' over warpgroups (0, 2) that are not consecutive" in err.message
    line = _line_of(with_role, 'T.role("producer"')
    assert err.location == f"kernels_codegen.py:{line}"
    text = str(err)
    assert f"--> kernels_codegen.py:{line}" in text
    assert 'with T.role("producer", warpgroups=(0,)):' in text and "^^^^" in text
    assert os.path.basename(err.loc.file) == "kernels_codegen.py"  # the user's file, not the generator's


def test_a_warp_role_is_a_branch_on_its_warpgroups_with_role_relative_threads() -> None:
    source = generate(with_role.trace()).source
    assert "if (tid < 128) {  // role producer: warpgroups (0,)" in source
    assert "const int producer_tid = tid;" in source


def test_an_mbarrier_is_carved_from_shared_memory_and_waited_on_with_try_wait() -> None:
    generated = generate(with_mbarrier.trace())
    assert "unsigned long long* const bars = reinterpret_cast<unsigned long long*>(argus_smem + 0)" in generated.source
    assert "mbarrier.try_wait.parity.shared::cta.b64" in generated.source
    assert "argus::mbarrier_wait(argus::smem_u32(&bars[0]), static_cast<unsigned>(0) & 1u);" in generated.source
    assert generated.shared_bytes == 16


def test_a_tma_copy_without_mbarrier_and_wgmma_on_registers_are_refused() -> None:
    entry = get_kernel("gemm_mma_sync")
    kernel = entry.kernel.trace(**entry.params)
    first_copy = next(s for s in kernel.body if isinstance(s, For)).body[0]
    assert isinstance(first_copy, Copy)

    tma = _changed(kernel, lambda s: dataclasses.replace(s, atom="tma") if s is first_copy else s)
    with pytest.raises(CodegenError, match="TMA load needs an mbarrier") as info:
        generate(tma)
    assert info.value.code == "CODEGEN_INVALID" and info.value.loc == first_copy.loc

    wgmma = _changed(
        kernel, lambda s: dataclasses.replace(s, atom="wgmma.m64n64k16.f32.bf16.bf16.ss") if isinstance(s, Gemm) else s
    )
    with pytest.raises(CodegenError, match="wgmma.m64n64k16") as info:
        generate(wgmma)
    assert info.value.code == "CODEGEN_UNSUPPORTED"
    assert info.value.location.startswith("gemm.py:")


@dataclass(frozen=True, eq=False)
class Teleport(Stmt):
    """A statement kind the generator has never heard of."""


@dataclass(frozen=True, eq=False)
class Tag(Stmt):
    """Stands for the verifier's annotations (issue 4): they generate no code."""


def test_an_unknown_statement_is_unsupported_and_annotations_are_skipped() -> None:
    kernel = get_kernel("vector_add").kernel.trace()
    loc = kernel.body[0].loc
    with pytest.raises(CodegenError, match="IR statement Teleport") as info:
        generate(dataclasses.replace(kernel, body=(Teleport(loc=loc), *kernel.body)))
    assert info.value.code == "CODEGEN_UNSUPPORTED" and info.value.loc == loc
    plain = generate(kernel).source
    annotated = generate(dataclasses.replace(kernel, body=(Tag(loc=loc), *kernel.body))).source
    assert annotated == plain


def test_codegen_errors_pickle() -> None:
    with pytest.raises(CodegenError) as info:
        generate(_split_role())
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is CodegenError and again.code == info.value.code and again.loc == info.value.loc
    assert str(again) == str(info.value)
