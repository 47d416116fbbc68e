"""The matmul-like family: ``mm`` of two 2-D float tensors as a call of argus's GEMM library
(`argus.kernels.matmul.LibraryGemm`), the operand transposes that feed it taken into the group.

Unlike the other templates, the group's kernel is not one DSL kernel written for the group: it is the library's
plan for the captured problem (`argus.kernels.matmul.plan`): for f32 operands the two split-precision passes
(`split_bf16x3`), the persistent Hopper GEMM, and the split-K reduction where the plan splits K. The pipeline
verifies every kernel of that plan (`LibraryGemm.kernels`) and checks the call on the CPU interpreter against the
group's FX subgraph, as for any other group.

Taken: ``aten.mm`` of float32, float16 or bfloat16 operands of one dtype (its output in the same dtype); an
operand produced by a 2-D transpose (``permute(x, [1, 0])``, ``t``, ``transpose(x, 0, 1)``) that only the ``mm``
reads is taken into the group, and the GEMM reads the untransposed tensor in the other layout (KernelBench's
``A.T @ B``). A 3-d or 4-d tensor times a matrix reaches the graph as views around an ``mm`` (views compute
nothing). Not taken: ``bmm`` and the batched ``matmul`` (no batched GEMM yet), ``addmm``/``linear`` (the bias is an
epilogue, and the fused epilogue interface is not built), ``mv``/``dot``, integer operands.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.frontend.families.base import DTYPES, KernelSource, aten_name, dtype_name, node_value, reference_source

#: The 2-D transposes an ``mm`` operand may come through (taken into the group).
TRANSPOSES = frozenset({"permute", "t", "transpose"})


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    import torch

    name = aten_name(node)
    if name in ("bmm", "baddbmm", "addbmm"):
        return "batched GEMM (bmm) is not built yet"
    if name in ("addmm", "linear"):
        return "the bias of addmm is an epilogue: the fused GEMM epilogue interface is not built yet"
    if name != "mm":
        return f"the matmul template takes mm only, not {node.target}"
    a, b, out = node_value(node.args[0]), node_value(node.args[1]), node_value(node)
    if not all(isinstance(t, torch.Tensor) for t in (a, b, out)):
        return "an operand is not a tensor"
    if a.dim() != 2 or b.dim() != 2:
        return "operands that are not 2-D"
    if a.dtype != b.dtype or dtype_name(a) not in DTYPES or out.dtype != a.dtype:
        return f"operands in {a.dtype} and {b.dtype} (the template takes two float32, float16 or bfloat16 operands)"
    if 0 in (*a.shape, *b.shape):
        return "an empty operand"
    return None


def is_transpose(node: Any) -> bool:
    """Whether `node` is a 2-D transpose (see `TRANSPOSES`)."""
    import torch

    if getattr(node, "op", None) != "call_function" or aten_name(node) not in TRANSPOSES:
        return False
    x = node_value(node.args[0])
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        return False
    if aten_name(node) == "permute":
        return list(node.args[1]) == [1, 0]
    if aten_name(node) == "transpose":
        return sorted(d % 2 for d in node.args[1:3]) == [0, 1]
    return True


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
    (mm,) = [n for n in nodes if n.op == "call_function" and aten_name(n) == "mm"]
    operands, flags = [], []
    for arg in mm.args[:2]:
        flags.append(is_transpose(arg))
        operands.append(arg.args[0] if flags[-1] else arg)
    a, b = (node_value(mm.args[0]), node_value(mm.args[1]))  # as the product reads them: (M, K), (K, N)
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    dt = DTYPES[dtype_name(a)]
    problem = GemmProblem(
        int(m), int(n), int(k), dt, dt, "M" if flags[0] else "K", "K" if flags[1] else "N"
    )  # the operands as the group receives them, contiguous: A^T stored (K, M) is M-major, B^T stored (N, K) K-major
    order = tuple(placeholders.index(o) for o in operands)  # which of the group's inputs each operand is
    title = f"mm of {tuple(a.shape)} and {tuple(b.shape)} ({dt}), the GEMM library's plan"
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} (mm).")
    kernel = "\n".join(
        [
            f"# {title}",
            f"{name} = LibraryGemm(",
            f"    {name!r},",
            f"    GemmProblem({m}, {n}, {k}, {dt!r}, {dt!r}, {problem.a_major!r}, {problem.b_major!r}),",
            f"    transpose_a={flags[0]},",
            f"    transpose_b={flags[1]},",
            f"    order={order!r},",
            ")",
        ]
    )
    shapes = {p.name: tuple(node_value(p).shape) for p in placeholders}
    shapes[mm.name] = (int(m), int(n))
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
