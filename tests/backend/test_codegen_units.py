"""The code generator's building blocks, checked by evaluating the C text they emit in Python: layouts
(swizzles included) evaluated at C expressions, fits of per-thread functions, fragment placements, the
ldmatrix plan, shared-memory carving and IR expressions."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from argus.atoms.swizzle import hopper_swizzle
from argus.backend.cuda.codegen import generate
from argus.backend.cuda.codegen import placement as pl
from argus.backend.cuda.codegen.cexpr import Names, c_expr, float_literal, layout_at, layout_at_coords, paren
from argus.ir.expr import Var, VarKind
from argus.kernels.registry import get_kernel
from argus.layout import ComposedLayout, Layout
from tests.layout.gen import random_layout
from tests.runtime.kernels_codegen import carve


def _swizzle(bits: int, base: int, shift: int, x: int) -> int:
    mask = ((1 << bits) - 1) << (base + shift)
    return x ^ ((x & mask) >> shift)


def c_eval(text: str, **env: int) -> int:
    """Evaluate generated index arithmetic (non-negative ints: C's / and % are Python's // and %)."""
    python = re.sub(r"argus::swizzle<(\d+), (\d+), (\d+)>\(", r"_swizzle(\1, \2, \3, ", text)
    python = python.replace(" / ", " // ")
    return eval(python, {"_swizzle": _swizzle}, dict(env))  # noqa: S307 - our own generated arithmetic


def test_layout_at_equals_the_layout_on_random_layouts() -> None:
    rng = random.Random(7)
    for _ in range(300):
        layout = random_layout(rng, max_size=512)
        text = layout_at(layout, "x")
        for x in range(layout.size()):
            assert c_eval(text, x=x) == layout(x), (layout, text, x)


def test_layout_at_coords_includes_offset_and_swizzle() -> None:
    for swizzle_bytes in (0, 32, 64, 128):
        base = Layout((2, 16, 64), (1024, 64, 1))
        layout = ComposedLayout(hopper_swizzle(swizzle_bytes, 16), 0, base) if swizzle_bytes else base
        text = layout_at_coords(layout, ["s", "r", "c"])
        assert ("argus::swizzle" in text) == (swizzle_bytes > 0)
        for s, r, c in [(0, 0, 0), (1, 3, 17), (0, 15, 63), (1, 7, 8), (0, 9, 40)]:
            assert c_eval(text, s=s, r=r, c=c) == layout((s, r, c))
    hierarchical = Layout(((2, 4), 8), ((1, 16), 2))
    text = layout_at_coords(hierarchical, ["a", "b"])
    for a in range(8):
        for b in range(8):
            assert c_eval(text, a=a, b=b) == hierarchical((a, b))


def test_fit_is_exact_or_refused() -> None:
    for layout in (
        Layout((4, 8, 4), (2, 16, 0)),
        Layout(128, 4),
        Layout((32, 4), (0, 1)),
        Layout((2, 3, 64), (5, 7, 1)),
    ):
        n = layout.size()
        values = np.array([layout(t) for t in range(n)]) + 3
        f = pl.fit(values)
        assert f is not None
        assert [c_eval(f.c("tid"), tid=t) for t in range(n)] == list(values)
    assert pl.fit(np.array([0, 1, 2, 0])) is None  # not additive over the two binary digits
    assert pl.digits(384) == (2,) * 7 + (3,)


@pytest.mark.parametrize("name", ["vector_add", "softmax", "gemm_mma_sync"])
def test_library_placements_are_separable_and_their_c_matches_the_tv_layout(name: str) -> None:
    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    fragments = [s.buffer for s in kernel.body if type(s).__name__ == "Alloc" and s.buffer.space.value == "fragment"]
    assert fragments
    for buffer in fragments:
        p = pl.placement(buffer)
        assert p.separable, buffer.name
        for t in (0, 1, 5, 31, 32, 77, 127):
            for v in range(p.values):
                index = buffer.tv(t, v)
                want = []
                for extent in p.shape:
                    want.append(index % extent)
                    index //= extent
                got = [c_eval(f.c("tid"), tid=t) + int(p.offsets[v, d]) for d, f in enumerate(p.base)]
                assert got == want, (buffer.name, t, v)


def test_vector_width_needs_consecutive_aligned_values() -> None:
    coords = np.zeros((2, 8, 1), dtype=np.int64)
    coords[0, :, 0] = np.arange(8)
    coords[1, :, 0] = np.arange(8) + 8
    assert pl.vector_width(coords, 0, 8) == 8
    assert pl.vector_width(coords, 0, 4) == 4
    coords[1, :, 0] = np.arange(8) + 2  # thread 1's run starts at 2: only pairs stay aligned
    assert pl.vector_width(coords, 0, 8) == 2
    coords[1, :, 0] = np.arange(8)[::-1]
    assert pl.vector_width(coords, 0, 8) == 1


def _gemm_fragments():
    kernel = get_kernel("gemm_mma_sync").kernel.trace()
    buffers = {s.buffer.name: s.buffer for s in kernel.body if type(s).__name__ == "Alloc"}
    return buffers["rA"], buffers["rB"]


def _offsets(p: pl.Placement, layout: Layout) -> np.ndarray:
    return pl.layout_offsets(layout, [p.coords[..., 0], p.coords[..., 1]])[None]


def test_ldmatrix_plan_for_mma_operands() -> None:
    a, b = _gemm_fragments()
    pa, pb = pl.placement(a), pl.placement(b)
    plan_a = pl.plan_matrix_copy(pa, _offsets(pa, Layout((64, 32), (32, 1))))
    assert [(i.num, i.trans) for i in plan_a] == [(4, False)] * 4
    # lane l of warp 0 addresses row l % 16 at column 8 * (l // 16) (matrices a0a1, a2a3, a4a5, a6a7)
    first = plan_a[0]
    assert [
        (c_eval(first.row_start[0].c("tid"), tid=t), c_eval(first.row_start[1].c("tid"), tid=t)) for t in range(32)
    ] == [(t % 16, 8 * (t // 16)) for t in range(32)]
    plan_b = pl.plan_matrix_copy(pb, _offsets(pb, Layout((32, 64), (64, 1))))  # (K, N), N contiguous
    assert [(i.num, i.trans) for i in plan_b] == [(4, True)] * 4
    plan_b_kmajor = pl.plan_matrix_copy(pb, _offsets(pb, Layout((32, 64), (1, 32))))  # K contiguous
    assert [(i.num, i.trans) for i in plan_b_kmajor] == [(4, False)] * 4
    swizzled = ComposedLayout(hopper_swizzle(64, 16), 0, Layout((64, 32), (32, 1)))
    assert [(i.num, i.trans) for i in pl.plan_matrix_copy(pa, _offsets(pa, swizzled))] == [(4, False)] * 4
    padded_badly = Layout((64, 32), (33, 1))  # rows of 33 elements: 16-byte row starts are not aligned
    assert isinstance(pl.plan_matrix_copy(pa, _offsets(pa, padded_badly)), str)


def test_gather_slots_and_reduce_groups_on_softmax() -> None:
    kernel = get_kernel("softmax").kernel.trace()
    allocs = {s.buffer.name: s.buffer for s in kernel.body if type(s).__name__ == "Alloc"}
    x, row_max = allocs["x"], allocs["row_max"]
    assert list(pl.gather_slots(x, row_max, (1,))) == [0, 0, 0, 0]  # every value of a row reads the one maximum
    assert pl.reduce_groups(row_max, x, axis=1) == [[0, 1, 2, 3]]


def test_holder_mask_of_a_row_statistic() -> None:
    kernel = get_kernel("softmax").kernel.trace()
    row_max = next(s.buffer for s in kernel.body if type(s).__name__ == "Alloc" and s.buffer.name == "row_max")
    mask = pl.holder_mask(pl.placement(row_max))
    assert mask is not None and mask.c("tid") == "(tid & 31) == 0"  # lane 0 of each warp holds the row first
    x = next(s.buffer for s in kernel.body if type(s).__name__ == "Alloc" and s.buffer.name == "x")
    assert pl.holder_mask(pl.placement(x)) is None  # nothing is replicated


def test_swizzled_buffers_start_on_1024_byte_boundaries() -> None:
    source = generate(carve.trace()).source
    assert "argus_smem + 0)" in source
    assert "argus_smem + 1024)" in source  # 12 bytes, then the 1024-byte boundary
    assert "argus_smem + 2048)" in source  # 1024 + 8 * 64 * 2 = 2048, already 128-byte aligned


def test_c_expressions_use_floor_division_only_where_needed() -> None:
    names = Names()
    i = Var("i", VarKind.LOOP)
    n = Var("N", VarKind.SHAPE)
    assert c_expr(i % 2, names) == "i % 2"
    assert c_expr((i + 1) // 2, names) == "(i + 1) / 2"
    assert c_expr((i - 1) % 2, names) == "argus::floormod(i - 1, 2)"
    assert c_expr((n - i) // 4, names) == "argus::floordiv(N - i, 4)"
    other = Var("i", VarKind.LOOP)  # same IR name, another variable
    assert c_expr(other, names) == "i_1"


def test_literals_and_parentheses() -> None:
    assert float_literal(1.0) == "1.0f" and float_literal(1e-5) == "1e-05f"
    assert float_literal(float("-inf")) == "__int_as_float(0xff800000)"
    assert paren("r[v]") == "r[v]" and paren("a + b") == "(a + b)" and paren("f(a, b)") == "f(a, b)"
    assert paren("(a) + (b)") == "((a) + (b))" and paren("1e-05f") == "1e-05f"


def test_names_never_shadow_what_the_generated_code_calls() -> None:
    """A user's buffer named like a C++ keyword or a CUDA math function the generated code calls gets another name."""
    names = Names()
    for base in ("int", "expf", "fmaxf", "float4", "threadIdx", "argus_smem"):
        ident = names.fresh(base)
        assert ident != base and ident.startswith(base)
    assert names.fresh("acc") == "acc"
