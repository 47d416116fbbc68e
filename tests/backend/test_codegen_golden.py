"""The golden source of vector_add (``tests/backend/golden/vector_add.cu``, pinned against the generator by
`tests/backend/test_golden_cuda.py` with every other library kernel's) compiles with NVRTC and loads its data with
128-bit loads."""

from __future__ import annotations

from pathlib import Path

from argus.backend.cuda import compile_cuda

GOLDEN = Path(__file__).parent / "golden" / "vector_add.cu"


def test_the_golden_file_itself_compiles() -> None:
    module = compile_cuda(GOLDEN.read_text(), "vector_add_golden", cache=False)
    assert module.kernel_names == ("vector_add",)
    assert module.instruction_mix(modifiers=True)["LDG.E.128.CONSTANT"] == 4
