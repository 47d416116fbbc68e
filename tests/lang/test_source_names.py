"""The IR keeps the names the kernel's source gives (`argus.lang.names`): a buffer is named after the variable its
DSL call is assigned to, a loop variable after the ``for`` target, the block indices after ``with T.grid(...) as
(...)``; everything else keeps the generic names (``s``, ``r``, ``bar``, ``k``, ``i``, ``bx``), and every name is
unique in the kernel."""

from __future__ import annotations

import argus
import argus.lang as T
from argus.backend.cuda.codegen import generate
from argus.ir.nodes import Alloc, For, walk
from argus.ir.printer import format_kernel
from argus.kernels.gemm import gemm_warp_specialized_persistent
from argus.lang.names import usable


def _names(kernel) -> list[str]:
    """The block indices, then every buffer and loop variable, in program order."""
    k = kernel.trace()
    out = [v.name for v in k.block_vars]
    for s in walk(k.body):
        if isinstance(s, Alloc):
            out.append(s.buffer.name)
        elif isinstance(s, For):
            out.append(s.var.name)
    return out


@argus.kernel
def named(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32]):  # noqa: F821
    with T.grid(T.cdiv(N, 512), 2, threads=128) as (bm, half):  # noqa: F821
        sX = T.alloc_shared((2, 512), T.f32)
        full = T.alloc_mbarrier(2)
        x: T.Fragment = T.alloc_fragment((512,), T.f32)
        lo, hi = T.alloc_fragment((512,), T.f32), T.alloc_fragment((512,), T.f32)
        T.copy(X.tile(bm, 512), x)
        for k, s in T.pipeline(4, stages=2):
            T.copy(X.tile(bm * 4 + k, 512), sX[s])
        for i in T.serial(3):
            y = T.exp(x * 2.0) + half  # the product and the exponential are temporaries, the sum is y
            y += 1.0
            T.copy(y, Y.tile(bm + i, 512))
        T.fill(lo, 0.0)
        T.fill(hi, 0.0)
        T.mbarrier_arrive(full[0])


def test_assigned_buffers_loops_and_block_indices_keep_their_names() -> None:
    assert _names(named) == ["bm", "half", "sX", "full", "x", "lo", "hi", "k", "i", "r", "r_1", "y", "y_1"]


@argus.kernel
def clashing(A: T.Tensor[("N",), T.f32], B: T.Tensor[("N",), T.f32]):  # noqa: F821
    with T.grid(T.cdiv(N, 512), threads=128):  # noqa: F821
        a = T.alloc_fragment((512,), T.f32)
        a = T.alloc_fragment((512,), T.f32)  # the same variable again
        A = T.alloc_fragment((512,), T.f32)  # the name of a tensor  # noqa: N806
        tid = T.alloc_fragment((512,), T.f32)  # the thread index's name
        r = T.alloc_fragment((512,), T.f32)
        t = T.alloc_fragment((512,), T.f32, name="r")  # an explicit name wins
        _ = T.alloc_fragment((512,), T.f32)
        _Acc = T.alloc_fragment((512,), T.f32)  # reserved in C++  # noqa: N806
        α = T.alloc_fragment((512,), T.f32)  # not ASCII
        for _ in T.unroll(2):
            T.fill(a, 1.0)
        bufs = [T.alloc_fragment((512,), T.f32) for _ in range(2)]  # not a plain target
        int = T.alloc_fragment((512,), T.f32)  # a C++ keyword: the IR keeps it, the code generator renames it
        T.copy(a + A + tid + r + t + _Acc + α + bufs[0] + bufs[1] + int, B.tile(0, 512))


def test_names_are_unique_and_usable_or_fall_back() -> None:
    names = _names(clashing)
    assert names[:12] == ["bx", "a", "a_1", "A_1", "tid_1", "r", "r_1", "r_2", "r_3", "r_4", "i", "r_5"]
    assert names[12:14] == ["r_6", "int"]
    assert len(set(names)) == len(names)
    source = generate(clashing.trace()).source
    assert "float int_1[" in source and " int[" not in source


def test_a_macro_call_names_what_it_allocates() -> None:
    # sA = alloc_operand_stages(...): the @T.macro's T.alloc_shared takes the name of the kernel's variable
    names = _names(gemm_warp_specialized_persistent)
    assert names == ["bx", "sA", "sB", "full", "empty", "it", "k", "acc", "it_1", "k_1"]


@argus.kernel
def persistent(X: T.Tensor[("N",), T.f32]):  # noqa: F821
    with T.persistent_grid((T.cdiv(N, 512), 1), blocks=4) as (tm, tn):  # noqa: F821
        x = T.alloc_fragment((512,), T.f32)
        T.copy(X.tile(tm, 512), x)


def test_what_the_tracer_makes_itself_keeps_the_generic_names() -> None:
    # T.persistent_grid's own grid and tile loop are not the (tm, tn) of the user's with statement
    assert _names(persistent) == ["bx", "i", "x"]


def test_source_that_cannot_be_read_keeps_the_generic_names() -> None:
    namespace: dict = {"argus": argus, "T": T}
    exec(  # noqa: S102 - a kernel whose source linecache does not have
        compile(
            "@argus.kernel\n"
            "def unread(X: T.Tensor[('N',), T.f32]):\n"
            "    with T.grid(T.cdiv(N, 512), threads=128) as (bm,):\n"
            "        x = T.alloc_fragment((512,), T.f32)\n"
            "        T.copy(X.tile(bm, 512), x)\n",
            "<no file>",
            "exec",
        ),
        namespace,
    )
    assert _names(namespace["unread"]) == ["bx", "r"]
    assert "alloc r: fragment" in format_kernel(namespace["unread"].trace())


def test_usable_names() -> None:
    assert all(usable(n) for n in ("sA", "acc", "m_new", "x2", "_tmp", "int"))
    assert not any(usable(n) for n in ("_", "__x", "a__b", "_Acc", "α", "1x", "a-b"))
