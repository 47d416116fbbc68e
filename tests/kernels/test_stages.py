"""`argus.kernels.stages.Stages`: a sequence of kernels over named tensors, checked when it is built (every tensor a
stage takes exists and is viewed at its element count, every output and buffer taken) and when it is called (the
tensors it was generated for), run on the interpreter through a buffer."""

from __future__ import annotations

import pytest
import torch

import argus
import argus.lang as T
from argus.kernels.stages import Stage, Stages, StagesError


@argus.kernel
def _double(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], B: int = 128):
    with T.grid(T.cdiv(N, B), threads=32) as (b,):
        x = T.alloc_fragment((B,), T.f32)
        T.copy(X.tile(b, B), x)
        T.copy(x * 2.0, Y.tile(b, B))


def _pipeline() -> Stages:
    # X -> BUF (x2) -> OUT (x2), the buffer seen as (4, 25) by nobody but its shape's count
    return Stages(
        "quad",
        [Stage(_double, (("X", (100,)), ("BUF", (100,)))), Stage(_double, (("BUF", (100,)), ("OUT", (100,))))],
        {"X": (4, 25)},
        {"OUT": ((4, 25), "float32")},
        {"BUF": ((4, 25), "float32")},
    )


def test_stages_run_through_their_buffer_on_the_interpreter() -> None:
    stages = _pipeline()
    x = torch.randn(4, 25)
    out = stages.empty_output(x)
    assert out.shape == (4, 25) and stages.kernels() == [_double, _double]
    stages(x, out)
    torch.testing.assert_close(out, x * 4)
    (again,) = stages.empty_outputs(x)
    assert again.shape == (4, 25)


@pytest.mark.parametrize(
    ("stages", "inputs", "outputs", "buffers", "says"),
    [
        ([], {"X": (4,)}, {"OUT": ((4,), "float32")}, {}, "no kernels"),
        ([Stage(_double, (("X", (4,)), ("Y", (4,))))], {"X": (4,)}, {"OUT": ((4,), "float32")}, {}, "'Y', which is"),
        ([Stage(_double, (("X", (5,)), ("OUT", (4,))))], {"X": (4,)}, {"OUT": ((4,), "float32")}, {}, "views 'X'"),
        (
            [Stage(_double, (("X", (4,)), ("OUT", (4,))))],
            {"X": (4,)},
            {"OUT": ((4,), "float32")},
            {"B": ((4,), "float32")},
            "no stage takes B",
        ),  # fmt: skip
        ([Stage(_double, (("X", (4,)), ("X", (4,))))], {"X": (4,)}, {"X": ((4,), "float32")}, {}, "two tensors"),
    ],
)
def test_inconsistent_stages_are_refused(stages, inputs, outputs, buffers, says: str) -> None:
    with pytest.raises(StagesError, match=says):
        Stages("bad", stages, inputs, outputs, buffers)


def test_a_call_on_other_tensors_is_refused() -> None:
    stages = _pipeline()
    x = torch.randn(4, 25)
    with pytest.raises(StagesError, match="takes 2 tensors"):
        stages(x)
    with pytest.raises(StagesError, match="generated for X of shape"):
        stages(torch.randn(3, 25), torch.empty(4, 25))
    with pytest.raises(StagesError, match="must be contiguous"):
        stages(x, torch.empty(25, 4).t())
