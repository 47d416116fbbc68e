"""The DSL pieces behind the Hopper GEMMs' operand layouts: a tensor shape that is a function of trace-time
parameters, sub-windows of shared tiles (one TMA box per panel), ``T.alloc_shared(..., panels=True)``, and
``@T.macro`` helpers whose statements are located at the kernel line that calls them."""

from __future__ import annotations

import inspect

import pytest

import argus
import argus.lang as T
from argus.ir.nodes import Copy, walk
from argus.lang.errors import DSLError


def _shape(ORIENT: str):  # noqa: N803 - named after the parameter
    return ("R", "C") if ORIENT == "rows" else ("C", "R")


@T.macro
def _load(src, dst):
    T.copy(src, dst)


@argus.kernel
def oriented(X: T.Tensor[_shape, T.f32], Y: T.Tensor[("R", "C"), T.f32], ORIENT: str = "rows", LEFT: int = 0):
    with T.grid(1, threads=128) as (b,):
        s = T.alloc_shared((16, 32), T.f32)
        _load(X.tile((0, 0), (16, 32)), s)  # the macro's copy is located here
        T.copy(Y.tile((0, 0), (16, 8)), s.window((0, LEFT), (16, 8)))


def test_the_shape_follows_the_parameter() -> None:
    assert [str(d) for d in oriented.trace().tensors[0].shape] == ["R", "C"]
    assert [str(d) for d in oriented.trace(ORIENT="cols").tensors[0].shape] == ["C", "R"]


def test_a_shape_function_taking_no_parameter_is_refused_at_definition() -> None:
    with pytest.raises(DSLError) as err:

        @argus.kernel
        def bad(A: T.Tensor[lambda LAYOUT: ("N",), T.f32]):
            pass

    assert err.value.code == "DSL_KERNEL_SIGNATURE" and "'LAYOUT'" in str(err.value)


def test_a_shape_function_returning_no_shape_is_a_located_error() -> None:
    @argus.kernel
    def bad(A: T.Tensor[lambda P: 3.5, T.f32], P: int = 0):
        with T.grid(1, threads=32) as (b,):
            pass

    with pytest.raises(DSLError) as err:
        bad.trace()
    assert err.value.code == "DSL_TENSOR_SHAPE" and "3.5" in str(err.value)


def test_windows_of_shared_tiles_and_the_macro_location() -> None:
    kernel = oriented.trace(LEFT=24)
    copies = [s for s in walk(kernel.body) if isinstance(s, Copy)]
    assert copies[1].dst.origin == (0, 24) and copies[1].dst.shape == (16, 8)
    lines, start = inspect.getsourcelines(oriented.fn)
    call_line = start + next(i for i, ln in enumerate(lines) if "_load(X.tile" in ln)
    assert copies[0].loc.line == call_line  # not the line inside _load
    with pytest.raises(DSLError) as err:
        oriented.trace(LEFT=30)  # 30 + 8 > 32
    assert err.value.code == "DSL_WINDOW" and "origin (0, 30)" in str(err.value)


def test_panels_need_a_swizzle_and_whole_panels() -> None:
    @argus.kernel
    def panels(A: T.Tensor[("N",), T.bf16], SWIZZLE: int = 128, COLS: int = 128):
        with T.grid(1, threads=128) as (b,):
            T.alloc_shared((2, 64, COLS), T.bf16, swizzle=SWIZZLE, panels=True)

    layout = [s for s in walk(panels.trace().body) if hasattr(s, "buffer")][0].buffer.layout
    assert str(layout) == "Sw<3,3,3> o 0 o (2,64,(64,2)):(8192,64,(1,4096))"
    for params in ({"SWIZZLE": 0}, {"COLS": 96}):
        with pytest.raises(DSLError) as err:
            panels.trace(**params)
        assert err.value.code == "DSL_TILE_SHAPE"
