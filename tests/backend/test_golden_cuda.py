"""Golden CUDA: the source generated for every kernel of the library (`argus.kernels.registry.all_kernels()`, each
traced with its entry's parameters) is pinned byte for byte in ``tests/backend/golden/<kernel>.cu``, so that any
change to the generated text (a rule of the code generator, a name the tracer gives, a comment) is seen in review.

When a change is intended, regenerate the golden files deliberately and review their diff before committing::

    ARGUS_UPDATE_GOLDEN=1 python -m pytest tests/backend/test_golden_cuda.py
    git diff tests/backend/golden/

With ``ARGUS_UPDATE_GOLDEN=1`` each test writes the source it generated over its golden file (and then passes).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from argus.backend.cuda.codegen import generate
from argus.kernels.registry import all_kernels

GOLDEN = Path(__file__).parent / "golden"
UPDATE = "ARGUS_UPDATE_GOLDEN"
ENTRIES = all_kernels()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_generated_cuda_matches_the_golden_file(entry) -> None:
    source = generate(entry.kernel.trace(**entry.params)).source
    golden = GOLDEN / f"{entry.name}.cu"
    if os.environ.get(UPDATE) == "1":
        golden.write_text(source)
    if not golden.exists():
        pytest.fail(f"no golden file for {entry.name}: run `{UPDATE}=1 python -m pytest {__file__}`", pytrace=False)
    expected = golden.read_text()
    if source != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), source.splitlines(keepends=True), str(golden), "generated"
            )
        )
        pytest.fail(
            f"the generated CUDA for {entry.name} differs from its golden file:\n{diff}\n"
            f"If this change is intended, regenerate the golden files and review the diff:\n"
            f"    {UPDATE}=1 python -m pytest tests/backend/test_golden_cuda.py\n"
            "    git diff tests/backend/golden/",
            pytrace=False,
        )


def test_every_golden_file_is_a_library_kernel() -> None:
    names = {e.name for e in ENTRIES}
    stray = sorted(p.name for p in GOLDEN.glob("*.cu") if p.stem not in names)
    assert not stray, f"golden files of no library kernel (remove them): {stray}"


def test_the_generated_code_keeps_the_dsl_names() -> None:
    """The golden sources name buffers and loop variables as the kernels' source does (`argus.lang.names`)."""
    persistent = (GOLDEN / "gemm_hopper_persistent.cu").read_text()
    for declaration in ("* const sA = ", "* const sB = ", "* const full = ", "* const empty = ", "float acc[128];"):
        assert declaration in persistent
    assert "for (int it = 0; " in persistent and "for (int k = 0; " in persistent
    attention = (GOLDEN / "flash_attention_fwd.cu").read_text()
    for name in ("sQ", "sK", "sV", "q_ready", "scores", "m_new", "alpha"):
        assert f" {name}" in attention
