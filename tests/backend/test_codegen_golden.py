"""Golden source: the CUDA generated for vector_add is pinned, so any change to the generated text is seen
in review.

When a change to the code generator (or to the IR printer, whose text the comments quote) is intended,
regenerate the golden file deliberately and review its diff before committing::

    ARGUS_UPDATE_GOLDEN=1 python -m pytest tests/backend/test_codegen_golden.py
    git diff tests/backend/golden/
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from argus.backend.cuda import compile_cuda
from argus.backend.cuda.codegen import generate
from argus.kernels.elementwise import vector_add

GOLDEN = Path(__file__).parent / "golden" / "vector_add.cu"
UPDATE = "ARGUS_UPDATE_GOLDEN"


def test_vector_add_source_matches_the_golden_file() -> None:
    source = generate(vector_add.trace()).source
    if os.environ.get(UPDATE) == "1":
        GOLDEN.write_text(source)
    expected = GOLDEN.read_text()
    if source != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                source.splitlines(keepends=True),
                fromfile=str(GOLDEN.relative_to(Path.cwd()) if GOLDEN.is_relative_to(Path.cwd()) else GOLDEN),
                tofile="generated",
            )
        )
        pytest.fail(
            "the generated CUDA for vector_add differs from the golden file:\n"
            f"{diff}\n"
            "If this change is intended, regenerate the golden file and review the diff:\n"
            f"    {UPDATE}=1 python -m pytest tests/backend/test_codegen_golden.py\n"
            "    git diff tests/backend/golden/",
            pytrace=False,
        )


def test_the_golden_file_itself_compiles() -> None:
    module = compile_cuda(GOLDEN.read_text(), "vector_add_golden", cache=False)
    assert module.kernel_names == ("vector_add",)
    assert module.instruction_mix(modifiers=True)["LDG.E.128.CONSTANT"] == 4
