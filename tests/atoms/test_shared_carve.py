"""One shared-memory carve (`argus.atoms.smem.SharedCarve`): the bytes the tracer and the verifier check against the
budget are the bytes the generated code launches with, alignment padding included."""

from __future__ import annotations

import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import generate
from argus.kernels import all_kernels
from argus.lang.errors import DSLError
from argus.verify import verify


@pytest.mark.parametrize("entry", [k for k in all_kernels() if k.name.startswith(("gemm_hopper", "gemm_tma", "flash"))],
                         ids=lambda k: k.name)  # fmt: skip
def test_the_verifier_checks_the_bytes_the_generated_code_launches_with(entry) -> None:
    kernel = entry.kernel.trace(**entry.params)
    launched = generate(kernel).shared_bytes
    checked = next(
        c for c in verify(entry, checks=("budget",)).to_json()["checks"] if c["check"] == "shared-memory budget"
    )
    assert checked["target"] == f"{launched} B"


def test_alignment_padding_counts_against_the_budget() -> None:
    """8 + 1024 + 128 + 230400 bytes fit in 227 KiB end to end, but the swizzled buffers start on 1024-byte
    boundaries, so the carve needs 233472: refused while tracing (the launch would fail)."""

    @argus.kernel
    def padded(X: T.Tensor[("N",), T.f32], ROWS: int = 1800):  # noqa: F821, UP037 - a shape, not a forward reference
        with T.grid(1, threads=128) as (bx,):
            T.alloc_mbarrier(1)
            T.alloc_shared((8, 64), T.bf16, swizzle=128)  # 1024 bytes at 1024
            T.alloc_shared((64,), T.bf16)  # 128 bytes at 2048
            T.alloc_shared((ROWS, 64), T.bf16, swizzle=128)  # starts at 3072

    with pytest.raises(DSLError) as e:
        padded.trace()
    assert e.value.code == "DSL_SMEM_BUDGET" and "233472 bytes" in str(e.value)
    padded.trace(ROWS=1792)  # 8 rows fewer: 3072 + 229376 = 232448, exactly the budget


def test_a_padded_layout_counts_its_physical_extent_when_tracing() -> None:
    """The carve counts a layout's cosize, not its element count: rows of 64 padded to 1024 need 16x the bytes."""
    from argus.layout import Layout

    @argus.kernel
    def padded_rows(X: T.Tensor[("N",), T.f32], PAD: int = 1024):  # noqa: F821, UP037 - a shape
        with T.grid(1, threads=128) as (bx,):
            T.alloc_shared((3, 128, 64), T.bf16, layout=Layout((3, 128, 64), (128 * PAD, PAD, 1)))

    with pytest.raises(DSLError) as e:
        padded_rows.trace()
    assert e.value.code == "DSL_SMEM_BUDGET"
    padded_rows.trace(PAD=64)  # unpadded: 48 KiB
