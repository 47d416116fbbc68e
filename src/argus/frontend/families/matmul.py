"""The matmul-like family: ``mm`` of two 2-D float tensors as a call of argus's GEMM library
(`argus.kernels.matmul.LibraryGemm`), the operand transposes that feed it taken into the group.

Unlike the other templates, the group's kernel is not one DSL kernel written for the group: it is the library's
plan for the captured problem (`argus.kernels.matmul.plan`): for f32 operands the two split-precision passes
(`split_bf16x3`), the persistent Hopper GEMM, and the split-K reduction where the plan splits K. The pipeline
verifies every kernel of that plan (`LibraryGemm.kernels`) and checks the call on the CPU interpreter against the
group's FX subgraph, as for any other group.

Taken: ``aten.mm`` and ``aten.bmm`` of float32, float16 or bfloat16 operands of one dtype (the output in the same
dtype; ``bmm`` as the library's batched GEMM, at most 4096 of K for float32); an operand produced by a transpose of
its last two extents (``permute``, ``t``, ``transpose``) that only the product reads is taken into the group, and
the GEMM reads the untransposed tensor in the other layout (KernelBench's ``A.T @ B``). A 3-d or 4-d tensor times a
matrix reaches the graph as views around an ``mm`` (views compute nothing). Not taken: ``addmm``/``linear``/
``baddbmm`` (the bias is an epilogue, and the fused epilogue interface is not built), ``mv``/``dot``, integer
operands.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.frontend.families.base import DTYPES, KernelSource, aten_name, dtype_name, node_value, reference_source
from argus.kernels.matmul import F32_CHAIN

#: The 2-D transposes an ``mm`` operand may come through (taken into the group).
TRANSPOSES = frozenset({"permute", "t", "transpose"})


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    import torch

    name = aten_name(node)
    if name in ("baddbmm", "addbmm", "addmm", "linear"):
        return f"the bias of {name} is an epilogue: the fused GEMM epilogue interface is not built yet"
    if name not in ("mm", "bmm"):
        return f"the matmul template takes mm and bmm only, not {node.target}"
    a, b, out = node_value(node.args[0]), node_value(node.args[1]), node_value(node)
    if not all(isinstance(t, torch.Tensor) for t in (a, b, out)):
        return "an operand is not a tensor"
    rank = 2 if name == "mm" else 3
    if a.dim() != rank or b.dim() != rank:
        return f"operands that are not {rank}-D"
    if name == "bmm" and dtype_name(a) == "float32" and a.shape[-1] > F32_CHAIN // 3:
        return (
            f"a float32 bmm with K = {a.shape[-1]} needs split-K for float32 accuracy (more than {F32_CHAIN // 3} "
            "of K in one tensor-core accumulator), which the batched GEMM does not have yet"
        )
    if a.dtype != b.dtype or dtype_name(a) not in DTYPES or out.dtype != a.dtype:
        return f"operands in {a.dtype} and {b.dtype} (the template takes two float32, float16 or bfloat16 operands)"
    if 0 in (*a.shape, *b.shape):
        return "an empty operand"
    return None


def is_transpose(node: Any) -> bool:
    """Whether `node` swaps the last two extents of a 2-D or 3-D tensor and nothing else (see `TRANSPOSES`)."""
    import torch

    if getattr(node, "op", None) != "call_function" or aten_name(node) not in TRANSPOSES:
        return False
    x = node_value(node.args[0])
    if not isinstance(x, torch.Tensor) or x.dim() not in (2, 3):
        return False
    r = x.dim()
    if aten_name(node) == "permute":
        return [d % r for d in node.args[1]] == [*range(r - 2), r - 1, r - 2]
    if aten_name(node) == "transpose":
        return sorted(d % r for d in node.args[1:3]) == [r - 2, r - 1]
    return r == 2


def absorbs(node: Any) -> list[Any]:
    """The producers of `node`'s operands taken into its group: 2-D transposes that only `node` reads."""
    return [a for a in node.args[:2] if is_transpose(a) and len(a.users) == 1]


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The library call of an ``mm`` group (see the module docstring)."""
    from argus.kernels.matmul import GemmProblem

    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    (mm,) = [n for n in nodes if n.op == "call_function" and aten_name(n) in ("mm", "bmm")]
    operands, flags = [], []
    for arg in mm.args[:2]:
        flags.append(is_transpose(arg))
        operands.append(arg.args[0] if flags[-1] else arg)
    a, b = (node_value(mm.args[0]), node_value(mm.args[1]))  # as the product reads them: ([L,] M, K), ([L,] K, N)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = int(a.shape[0]) if a.dim() == 3 else 1
    dt = DTYPES[dtype_name(a)]
    problem = GemmProblem(
        int(m), int(n), int(k), dt, dt, "M" if flags[0] else "K", "K" if flags[1] else "N", batch
    )  # the operands as the group receives them, contiguous: A^T stored (K, M) is M-major, B^T stored (N, K) K-major
    order = tuple(placeholders.index(o) for o in operands)  # which of the group's inputs each operand is
    op = aten_name(mm)
    title = f"{op} of {tuple(a.shape)} and {tuple(b.shape)} ({dt}), the GEMM library's plan"
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({op}).")
    kernel = "\n".join(
        [
            f"# {title}",
            f"{name} = LibraryGemm(",
            f"    {name!r},",
            f"    GemmProblem({m}, {n}, {k}, {dt!r}, {dt!r}, {problem.a_major!r}, {problem.b_major!r}, {batch}),",
            f"    transpose_a={flags[0]},",
            f"    transpose_b={flags[1]},",
            f"    order={order!r},",
            ")",
        ]
    )
    shapes = {p.name: tuple(node_value(p).shape) for p in placeholders}
    shapes[mm.name] = tuple(int(d) for d in node_value(mm).shape)
    return KernelSource(
        name,
        ref,
        "from argus.kernels.matmul import GemmProblem, LibraryGemm  # noqa: E402\n\n" + kernel + "\n",
        [p.name for p in placeholders],
        [mm.name],
        {},
        math.prod(tuple(node_value(mm).shape)),
        {**{p.name: dt for p in placeholders}, mm.name: dt},
        shapes,
        library=True,
    )
