"""The timing-independent defences: the static scan (library fallbacks, precision toggles), precision switches,
operator recording, poisoning, and the bit-exact input check."""

from __future__ import annotations

import textwrap

import pytest
import torch

from argus.eval.guards import (
    OpRecorder,
    PrecisionState,
    changed_inputs,
    equal_by_pieces,
    poison_,
    scan_source,
    strict_precision,
)
from argus.tasks.builtin import MATMUL_CALLS

SNEAKY = textwrap.dedent(
    """
    import torch
    import torch.nn.functional as F
    from torch import matmul as mm

    def forward(a, b):
        x = getattr(torch, "matmul")(a, b)
        y = a @ b
        z = F.linear(a, b) + a.matmul(b) + mm(a, b)
        f = torch.bmm
        src = "cublasGemmEx(handle, ...)"
        return x
    """
)


def _codes_by_line(findings):
    return {(f.line, f.code) for f in findings}


def test_static_scan_catches_every_route_to_a_library_matmul() -> None:
    findings = scan_source(SNEAKY, forbidden=MATMUL_CALLS)
    lines = {f.line for f in findings if f.code == "STATIC_FORBIDDEN_CALL"}
    # import alias, getattr, @, F.linear + tensor method + alias call, bare reference, vendor string
    assert lines == {4, 7, 8, 9, 10, 11}
    assert all(f.blocking for f in findings)
    assert any("cublas" in f.message for f in findings)


def test_static_scan_is_silent_when_nothing_is_forbidden() -> None:
    assert scan_source(SNEAKY) == []


def test_static_scan_flags_tf32_toggles_on_fp32_tasks_only() -> None:
    src = textwrap.dedent(
        """
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        setattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", True)
        torch.set_float32_matmul_precision("highest")
        torch.backends.cuda.matmul.allow_tf32 = False
        y = torch.ones(3).half()
        """
    )
    findings = scan_source(src, fp32=True)
    toggles = sorted(f.line for f in findings if f.code == "STATIC_PRECISION_TOGGLE")
    assert toggles == [3, 4, 5, 6, 7]
    casts = [f for f in findings if f.code == "FLAG_PRECISION_CAST"]
    assert len(casts) == 1 and not casts[0].blocking
    assert scan_source(src, fp32=False) == []


def test_static_scan_raises_on_syntax_errors() -> None:
    with pytest.raises(SyntaxError):
        scan_source("def f(:\n")


def test_precision_state_diff_and_restore() -> None:
    before = PrecisionState.capture()
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.set_float32_matmul_precision("medium")
        changed = before.diff(PrecisionState.capture())
        assert "float32_matmul_precision" in changed
        assert changed["float32_matmul_precision"] == ("highest", "medium")
    finally:
        before.restore()
    assert before.diff(PrecisionState.capture()) == {}


def test_strict_precision_pins_fp32_and_restores() -> None:
    before = PrecisionState.capture()
    torch.backends.cudnn.allow_tf32 = True
    try:
        with strict_precision(True) as inside:
            assert torch.get_float32_matmul_precision() == "highest"
            assert torch.backends.cudnn.allow_tf32 is False
            assert inside.as_dict()["cudnn.allow_tf32"] is False
        assert torch.backends.cudnn.allow_tf32 is True
    finally:
        before.restore()


def test_op_recorder_sees_operators_whatever_the_python_spelling() -> None:
    a = torch.randn(4, 4)
    name = "mat" + "mul"
    with OpRecorder() as rec:
        getattr(torch, name)(a, a)
        torch.softmax(a, 1)
    assert rec.matching(["aten::mm"]) == ["aten::mm"]
    assert rec.matching(["aten::*softmax"]) == ["aten::_softmax"]
    assert rec.matching(["aten::bmm"]) == []


def test_poison_fills_every_dtype_with_an_impossible_value() -> None:
    f = poison_(torch.zeros(3))
    assert bool(torch.isnan(f).all())
    i = poison_(torch.zeros(3, dtype=torch.int32))
    assert int(i[0]) == torch.iinfo(torch.int32).max
    b = poison_(torch.zeros(3, dtype=torch.bool))
    assert bool(b.all())


def test_changed_inputs_is_bit_exact() -> None:
    x = torch.tensor([1.0, float("nan"), -0.0])
    same = x.clone()
    assert changed_inputs([x, 2.0], [same, 2.0]) == []
    flipped = x.clone()
    flipped[2] = 0.0  # -0.0 -> +0.0: equal as numbers, different bits
    assert changed_inputs([x], [flipped]) == [0]
    assert changed_inputs([x, x], [x.clone(), x.double()]) == [1]


def test_equal_by_pieces_reads_every_piece() -> None:
    # the host-vs-device comparison of a large trial's inputs: a difference in any piece, the last one short
    x = torch.arange(10, dtype=torch.float32)
    assert equal_by_pieces(x, x.clone(), "cpu", chunk=3)
    for i in (0, 4, 9):
        y = x.clone()
        y[i] = -y[i] if i else -0.0  # 0.0 -> -0.0 differs in its bits only
        assert not equal_by_pieces(x, y, "cpu", chunk=3), i
    nan = torch.tensor([float("nan")] * 5)
    assert equal_by_pieces(nan, nan.clone(), "cpu", chunk=2)
