"""Tracing builds the IR we expect: a golden printed IR for a small kernel, and structural facts."""

from __future__ import annotations

from argus.ir.nodes import Copy, For, Gemm, LoopKind, Reduce, walk
from argus.ir.printer import format_kernel
from argus.kernels.elementwise import vector_add
from argus.kernels.gemm import gemm_cp_async
from argus.kernels.softmax import softmax

VECTOR_ADD_IR = """\
kernel vector_add(A: global f32[N] strides (1), B: global f32[N] strides (1), C: global f32[N] strides (1))
  params BLOCK=1024
  assume (1 <= N)
  grid (((N + 1023) // 1024)) as (bx), threads 128 as tid
  alloc a: fragment f32[1024] tv ((128,1),(4,2,1)):((4,1),(1,512,1)) over 128 threads  # elementwise.py:12
  alloc b: fragment f32[1024] tv ((128,1),(4,2,1)):((4,1),(1,512,1)) over 128 threads  # elementwise.py:13
  copy A[(bx * 1024):+1024] -> a atom=auto  # elementwise.py:14
  copy B[(bx * 1024):+1024] -> b atom=auto  # elementwise.py:15
  alloc r: fragment f32[1024] tv ((128,1),(4,2,1)):((4,1),(1,512,1)) over 128 threads  # elementwise.py:16
  r = add(a, b)  # elementwise.py:16
  copy r -> C[(bx * 1024):+1024] atom=auto  # elementwise.py:16"""


def test_vector_add_golden_ir() -> None:
    assert format_kernel(vector_add.trace()) == VECTOR_ADD_IR


def test_trace_is_cached_per_parameters() -> None:
    assert vector_add.trace() is vector_add.trace()
    assert vector_add.trace(BLOCK=512) is not vector_add.trace()
    assert "BLOCK=512" in format_kernel(vector_add.trace(BLOCK=512))


def test_softmax_reductions_use_warp_shuffles() -> None:
    k = softmax.trace()
    reduces = [s for s in walk(k.body) if isinstance(s, Reduce)]
    assert len(reduces) == 2
    assert all(r.shuffle_lanes == (1, 2, 4, 8, 16) for r in reduces)  # 32 lanes share a row
    first_copy = next(s for s in walk(k.body) if isinstance(s, Copy))
    assert first_copy.pad == float("-inf")


def test_pipeline_structure_of_gemm_cp_async() -> None:
    k = gemm_cp_async.trace()
    loops = [s for s in walk(k.body) if isinstance(s, For)]
    assert len(loops) == 1 and loops[0].kind == LoopKind.SERIAL
    gemms = [s for s in walk(k.body) if isinstance(s, Gemm)]
    assert len(gemms) == 1 and gemms[0].atom.startswith("mma.m16n8k16") and gemms[0].groups == (2, 2)
    async_copies = [s for s in walk(k.body) if isinstance(s, Copy) and s.atom == "cp.async"]
    assert len(async_copies) == 4  # prologue (A, B) and steady state (A, B)
