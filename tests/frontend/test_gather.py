"""Row gathers (`argus.frontend.families.gather`): ``embedding``, ``index_select`` and ``x[..., idx, ...]`` as one
kernel each, verified (the window's row is a select on the index's bounds, so the verifier proves it inside the
source for every content of the index) and matched on the interpreter, the whole model judged by the gate; negative
indices wrapped and out-of-range ones given a zero row on the interpreter; a kernel that trusts the index is caught
with a counterexample; what the template refuses and why; integer tensors moved by the layout family (a row of
token ids sliced before a gather)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from argus.frontend import solve
from argus.frontend.capture import capture
from argus.frontend.partition import Family, partition
from argus.interp.machine import interpret
from argus.verify import verify
from tests.frontend.kernels_row_gather import trusting_gather

CASES = {
    # (forward body, inputs, arguments, extra module text)
    "embedding": (
        "F.embedding(t, w) * 2.0",
        "[torch.randint(0, 50, (3, 7)), torch.randn(50, 24)]",
        "t, w",
    ),
    "embedding-bf16-int32": (
        "F.embedding(t, w)",
        "[torch.randint(0, 30, (11,), dtype=torch.int32), torch.randn(30, 40, dtype=torch.bfloat16)]",
        "t, w",
    ),
    # a relative-position bias table read through a 2-d index (Swin's), rows of 6 elements (24 bytes)
    "index-2d": ("w[t].permute(2, 0, 1) + 1.0", "[torch.randint(0, 49, (9, 9)), torch.randn(49, 6)]", "t, w"),
    # x[:, idx]: the indexed dimension in the middle, rows of 5 elements (no whole 16-byte vectors)
    "index-dim1": ("x[:, t] - 1.0", "[torch.randn(4, 33, 5), torch.randint(0, 33, (17,))]", "x, t"),
    "index_select-dim2": (
        "torch.index_select(x, 2, t) * 3.0",
        "[torch.randn(2, 3, 40, 130), torch.randint(0, 40, (8,))]",
        "x, t",
    ),
    # a row of token ids sliced (int64 data movement, the layout family) before the gather
    "select-then-embedding": (
        "F.embedding(t[1], w)",
        "[torch.randint(0, 20, (2, 5)), torch.randn(20, 16)]",
        "t, w",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_row_gather_is_one_verified_kernel_and_the_model_passes_the_gate(
    problem: Callable[..., Path], tmp_path: Path, case: str
) -> None:
    body, inputs, args = CASES[case]
    result = solve(problem(body, inputs=inputs, args=args, name=case.replace("-", "_")), out=tmp_path / "s.py")
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert "indexing/gather" in [g["family"] for g in result.groups]
    assert all(k.verdict == "verified" for k in result.kernels), [k.verify_summary for k in result.kernels]
    assert all(k.interpreter_ok for k in result.kernels), [(k.name, k.interpreter_error) for k in result.kernels]
    assert result.gate.verdict == "accepted", result.gate


def _generated_gather(problem: Callable[..., Path], tmp_path: Path) -> object:
    """The generated kernel of ``x[t]`` (rows of 8 float32)."""
    result = solve(
        problem("x[t]", inputs="[torch.randn(10, 8), torch.randint(0, 10, (6,))]", args="x, t", name="g"),
        out=tmp_path / "g.py",
        judge=False,
    )
    from argus.eval.candidates import import_file

    module = import_file(tmp_path / "g.py")
    (kernel,) = [getattr(module, k.name) for k in result.kernels if k.name.startswith("indexing")]
    return kernel


def test_a_negative_index_counts_from_the_end_and_one_outside_the_rows_reads_a_zero_row(
    problem: Callable[..., Path], tmp_path: Path
) -> None:
    kernel = _generated_gather(problem, tmp_path)
    x = np.random.default_rng(0).standard_normal((1, 10, 8))
    index = np.array([3, -1, -10, 9, 10, -11, 0], dtype=np.int64)
    out = np.full((1, 7, 8), np.nan)
    interpret(kernel, x, index, out)
    want = np.stack([x[0, 3], x[0, 9], x[0, 0], x[0, 9], np.zeros(8), np.zeros(8), x[0, 0]])
    np.testing.assert_allclose(out[0], want, rtol=1e-6)
    from argus.backend.cuda.codegen import compile_kernel

    mix = compile_kernel(kernel.trace()).instruction_mix()  # sm_90a: global loads and stores, nothing in floats
    assert mix.get("LDG", 0) and mix.get("STG", 0) and not mix.get("I2FP", 0), mix


def test_a_row_outside_the_source_is_masked_by_the_load_whatever_the_index_holds() -> None:
    # the seeded kernel reads its window at the index as it is: every row outside X reads 0 on the interpreter, the
    # generated load is predicated on the row read from the index, and the verifier proves it (no assumption about
    # the index's contents); the template's select only wraps negative indices
    x = np.arange(80, dtype=np.float64).reshape(1, 10, 8)
    out = np.full((1, 3, 8), np.nan)
    interpret(trusting_gather, x, np.array([3, 10, -3], dtype=np.int64), out)
    np.testing.assert_array_equal(out[0, 0], x[0, 3])
    np.testing.assert_array_equal(out[0, 1:], 0.0)
    from argus.backend.cuda.codegen import compile_kernel

    source = compile_kernel(trusting_gather.trace()).generated.source
    assert "argus::in_range(static_cast<int>(__ldg(IDX + n)), R)" in source
    report = verify(trusting_gather.trace())
    assert report.verdict.value == "verified" and not report.unknowns, report.render_text()


@pytest.mark.parametrize(
    ("body", "inputs", "args", "reason"),
    [
        ("x[m]", "[torch.randn(6, 4), torch.rand(6) < 0.5]", "x, m", "boolean mask"),
        ("x[t, u]", "[torch.randn(6, 4), torch.randint(0, 6, (3,)), torch.randint(0, 4, (3,))]", "x, t, u", "2 index"),
        ("x[t]", "[torch.randint(0, 9, (6, 4)), torch.randint(0, 6, (3,))]", "x, t", "source dtype torch.int64"),
    ],
)
def test_what_the_gather_template_refuses_is_reported_with_its_reason(
    problem: Callable[..., Path], body: str, inputs: str, args: str, reason: str
) -> None:
    try:
        captured = capture(problem(body, inputs=inputs, args=args))
    except Exception as e:  # noqa: BLE001 - a boolean mask's data-dependent shape may stop the capture itself
        assert "mask" in reason, e
        return
    found = [u for u in partition(captured).uncovered if u.family is Family.INDEXING]
    assert found and any(reason in u.reason for u in found), partition(captured).uncovered
