"""Error UX: a tracing error points at the user's line with a caret, says what was expected and
what was found, and shows no tracer internals."""

from __future__ import annotations

import pytest

from argus.lang import DSLError
from tests.lang import kernels_errors as k


def _marked_lines() -> list[int]:
    import pathlib

    text = pathlib.Path(k.__file__).read_text().splitlines()
    return [n for n, line in enumerate(text, 1) if "# error here" in line]


_LINES = _marked_lines()
CASES = [
    (k.copy_shape_mismatch, "DSL_SHAPE_MISMATCH", _LINES[0], "(64, 64) and (64, 32)"),
    (k.smem_over_budget, "DSL_SMEM_BUDGET", _LINES[1], "262144 bytes"),
    (k.gemm_bad_accumulator, "DSL_GEMM_ACCUMULATOR", _LINES[2], None),
    (k.fragment_layout_mismatch, "DSL_FRAGMENT_MISMATCH", _LINES[3], None),
    (k.bad_threads, "DSL_THREADS", _LINES[4], "100"),
    (k.wrong_atom_spaces, "DSL_ATOM_SPACES", _LINES[5], "global -> fragment"),
]


@pytest.mark.parametrize(("kernel", "code", "line", "found"), CASES, ids=[c[1] for c in CASES])
def test_error_points_at_the_user_line(kernel, code: str, line: int, found: str | None) -> None:
    with pytest.raises(DSLError) as info:
        kernel.trace()
    err = info.value
    text = str(err)
    assert err.code == code
    assert err.loc is not None and err.loc.line == line and err.loc.file.endswith("kernels_errors.py")
    assert f"--> kernels_errors.py:{line}" in text
    source_line = err.loc.text.strip()
    assert f"{line} | " in text and source_line in text
    caret_line = text.splitlines()[
        text.splitlines().index(next(t for t in text.splitlines() if t.startswith(f"{line} |"))) + 1
    ]
    assert "^" in caret_line
    if found:
        assert found in text
    # nothing from the tracer's own files
    assert "argus/lang" not in text
    # and the traceback is cut at the kernel's trace() call
    assert err.__traceback__ is None or all(
        "argus/lang/" not in str(tb.tb_frame.f_code.co_filename) or tb.tb_frame.f_code.co_name == "trace"
        for tb in _walk(err.__traceback__)
    )


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_outside_a_kernel() -> None:
    import argus.lang as T

    with pytest.raises(DSLError) as info:
        T.barrier()
    assert info.value.code == "DSL_OUTSIDE_KERNEL"


def test_unknown_parameter() -> None:
    from argus.kernels.elementwise import vector_add

    with pytest.raises(DSLError, match="no parameter 'BLOCKS'"):
        vector_add.trace(BLOCKS=256)
