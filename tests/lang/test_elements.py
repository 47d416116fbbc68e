"""Tensor elements as scalars (``offs[g]``), `T.let` and bounded windows: what the tracer refuses, and a small
kernel that uses all three on the interpreter, verified and generated."""

from __future__ import annotations

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import generate
from argus.interp.machine import InterpError, interpret
from argus.lang import DSLError
from argus.verify import verify


@argus.kernel
def grouped_scale(
    X: T.Tensor[("R", "N"), T.f32],
    offs: T.Tensor[("E",), T.i32],
    Y: T.Tensor[("R", "N"), T.f32],
    BM: int = 16,
    BN: int = 32,
):
    """Y[rows of group g] = X[rows of group g], group by group; rows past offs[E-1] are not written."""
    R, N = X.shape  # noqa: N806
    (E,) = offs.shape  # noqa: N806
    T.assume("N % 4 == 0")
    with T.grid(E, T.cdiv(R, BM), T.cdiv(N, BN), threads=128) as (g, mt, bn):
        with T.let(T.where(g > 0, offs[T.maximum(g - 1, 0)], 0), "lo") as lo, T.let(offs[g], "hi") as hi:
            with T.if_(lo + mt * BM < hi):
                x = T.alloc_fragment((BM, BN), T.f32)
                T.copy(X.window((lo + mt * BM, bn * BN), (BM, BN)), x)
                T.copy(x * 1.0, Y.window((lo + mt * BM, bn * BN), (BM, BN), bound=(hi, None)))


def test_groups_of_rows_are_written_and_no_other_row() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 40)).astype(np.float32).astype(np.float64)
    offs = np.array([0, 7, 7, 30, 45])
    y = np.full((50, 40), 7.0)
    interpret(grouped_scale, x, offs, y)
    assert np.array_equal(y[:45], x[:45]) and np.all(y[45:] == 7.0)


def test_an_element_read_outside_the_tensor_is_an_interpreter_error() -> None:
    @argus.kernel
    def past_the_end(offs: T.Tensor[("E",), T.i32], Y: T.Tensor[("E",), T.f32]):
        with T.grid(1, threads=32) as (b,):
            y = T.alloc_fragment((128,), T.f32)
            T.fill(y, 1.0)
            T.copy(y, Y.window((offs[b + 3],), (128,)))

    with pytest.raises(InterpError) as err:
        interpret(past_the_end, np.array([0, 1]), np.zeros(2))
    assert err.value.code == "INTERP_ELEMENT_OOB"


def test_the_kernel_verifies_and_reads_elements_in_the_generated_code() -> None:
    report = verify(grouped_scale.trace())
    assert not report.findings, [f.message for f in report.findings]
    source = generate(grouped_scale.trace()).source
    assert "__ldg(offs + g)" in source and "min(R, hi)" in source


def _code(fn) -> str:  # noqa: ANN001
    try:
        fn.trace()
    except DSLError as err:
        return err.code
    return "traced"


def test_the_tracer_refuses_misuse() -> None:
    @argus.kernel
    def float_element(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=32) as (b,):
            y = T.alloc_fragment((128,), T.f32)
            T.copy(X.window((X[b],), (128,)), y)

    @argus.kernel
    def writes_what_it_reads(offs: T.Tensor[("E",), T.i32]):
        with T.grid(1, threads=32) as (b,):
            y = T.alloc_fragment((128,), T.i32)
            T.fill(y, 0)
            T.copy(y, offs.window((offs[b],), (128,)))

    @argus.kernel
    def per_thread_let(Y: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=32) as (b,):
            with T.let(T.thread_id() + b) as v:
                y = T.alloc_fragment((128,), T.f32)
                T.fill(y, 0.0)
                T.copy(y, Y.window((v,), (128,)))

    @argus.kernel
    def bounded_load(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=32) as (b,):
            y = T.alloc_fragment((128,), T.f32)
            T.copy(X.window((0,), (128,), bound=(5,)), y)
            T.copy(y, Y.window((0,), (128,)))

    @argus.kernel
    def float_extent(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=32) as (b,):
            for i in T.serial(X[b] + 1):
                y = T.alloc_fragment((128,), T.f32)
                T.fill(y, 0.0)
                T.copy(y, Y.window((i * 128,), (128,)))

    @argus.kernel
    def float_scale(X: T.Tensor[("N",), T.f32], S: T.Tensor[(1,), T.f32], Y: T.Tensor[("N",), T.f32]):
        with T.grid(1, threads=32) as (b,):
            y = T.alloc_fragment((128,), T.f32)
            T.copy(X.window((0,), (128,)), y)
            T.copy(y * S[0], Y.window((0,), (128,)))

    assert _code(float_element) == "DSL_ELEMENT"  # a float tensor's element is never an index
    assert _code(float_extent) == "DSL_ELEMENT"
    assert _code(float_scale) == "traced"  # but is a value for fragment math (a scale held on the device)
    source = generate(float_scale.trace()).source
    assert "y[v] * __ldg(S + 0)" in source and "static_cast<int>" not in source  # read as a float, not truncated
    x, s, y = np.arange(128.0), np.array([0.375]), np.zeros(128)
    interpret(float_scale, x, s, y)
    assert np.array_equal(y, x * 0.375)
    assert _code(writes_what_it_reads) == "DSL_ELEMENT"
    assert _code(per_thread_let) == "DSL_LET"
    assert _code(bounded_load) == "DSL_WINDOW"
