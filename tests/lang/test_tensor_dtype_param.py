"""A tensor's dtype may name a trace-time parameter: ``T.Tensor[("N",), "DT"]`` with ``DT: str = "bf16"``."""

from __future__ import annotations

import pytest

import argus
import argus.lang as T
from argus.lang.errors import DSLError


@argus.kernel
def copy_as(A: T.Tensor[("N",), "DT"], C: T.Tensor[("N",), T.f32], DT: str = "bf16"):
    with T.grid(T.cdiv(N, 1024), threads=128) as (b,):
        x = T.alloc_fragment((1024,), T.f32)
        T.copy(A.tile((b,), (1024,)), x)
        T.copy(x, C.tile((b,), (1024,)))


def test_the_parameter_picks_the_dtype_at_trace_time() -> None:
    assert [(t.name, t.dtype.name) for t in copy_as.trace().tensors] == [("A", "bf16"), ("C", "f32")]
    assert copy_as.trace(DT="float16").tensors[0].dtype.name == "f16"


def test_a_value_that_names_no_dtype_is_a_located_error() -> None:
    with pytest.raises(DSLError) as err:
        copy_as.trace(DT="nope")
    assert err.value.code == "DSL_TENSOR_DTYPE" and "'nope'" in str(err.value)


def test_a_dtype_naming_no_parameter_is_refused_at_definition() -> None:
    with pytest.raises(DSLError) as err:

        @argus.kernel
        def bad(A: T.Tensor[("N",), "XX"]):
            pass

    assert err.value.code == "DSL_KERNEL_SIGNATURE" and "XX: str = 'f32'" in str(err.value)
