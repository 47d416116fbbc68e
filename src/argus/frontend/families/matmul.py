"""The matmul-like family: ``mm`` of two 2-D float tensors as a call of argus's GEMM library
(`argus.kernels.matmul.LibraryGemm`), the operand transposes that feed it taken into the group.

Unlike the other templates, the group's kernel is not one DSL kernel written for the group: it is the library's
plan for the captured problem (`argus.kernels.matmul.plan`): for f32 operands the two split-precision passes
(`split_bf16x3`), the persistent Hopper GEMM, and the split-K reduction where the plan splits K. The pipeline
verifies every kernel of that plan (`LibraryGemm.kernels`) and checks the call on the CPU interpreter against the
group's FX subgraph, as for any other group.

Taken: ``aten.mm``, ``aten.addmm`` and ``aten.bmm`` of float32, float16 or bfloat16 operands of one dtype (the
output in the same dtype; ``bmm`` as the library's batched GEMM, at most 4096 of K for float32); an operand produced
by a transpose of its last two extents (``permute``, ``t``, ``transpose``) that only the product reads is taken into
the group, and the GEMM reads the untransposed tensor in the other layout (KernelBench's ``A.T @ B``, and
``nn.Linear``, which core ATen presents as ``addmm(bias, x, permute(weight))``). A 3-d or 4-d tensor times a matrix
reaches the graph as views around an ``mm`` (views compute nothing).

**Epilogues** (`epilogue_nodes`): ``addmm``'s bias, and the elementwise operators that follow a 2-d product (those
the pointwise template has rules for), become the GEMM's fused epilogue (`argus.kernels.epilogue`): computed on the
f32 accumulator in registers before C is stored. The group grows over the product's users in graph order while
every value it computes is used only inside it except one, the group's result, of the product's shape and dtype;
an operator's other tensor operands must broadcast to the product as a per-column vector ((N,) or (1, N)), a
per-row vector ((M, 1)) or a tile of its shape ((M, N)), and must not depend on the group; a constant bound to a
forward argument at run time stops the growth (the library call has no scalar parameters).

**Reductions** (`reduction_nodes`): where the group's result is read by one row reduction and nothing else
(``sum``/``mean`` over the last axis, ``amax``/``amin``, ``max.dim``/``min.dim`` whose indices nothing reads,
``logsumexp``; with or without keepdim), the reduction ends the group: the epilogue reduces each row of its result
in registers (`argus.kernels.epilogue.Epilogue.reduce`), the product is never stored, and the call returns the (M,)
or (M, 1) vector (level 2's ``Gemm_Sigmoid_Sum``, ``Gemm_LogSumExp``, ``Gemm_Max``). Not taken: ``baddbmm``/
``addbmm`` (an epilogue on a batched GEMM is not built), ``mv``/``dot``, integer operands, casts, reductions over
the product's columns (the library call has them: ``matmul(..., reduce=, dim=0)``) or of a 3-d view of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.frontend.families import chains, pointwise
from argus.frontend.families.base import DTYPES, KernelSource, aten_name, dtype_name, node_value, reference_source

#: The 2-D transposes an ``mm`` operand may come through (taken into the group).
TRANSPOSES = frozenset({"permute", "t", "transpose"})


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    import torch

    name = aten_name(node)
    if name in ("baddbmm", "addbmm"):
        return f"the bias of {name} is an epilogue on a batched GEMM, which is not built"
    if name not in ("mm", "bmm", "addmm"):
        return f"the matmul template takes mm, addmm and bmm only, not {node.target}"
    if name == "addmm":
        bias = node_value(node.args[0])
        out = node_value(node)
        if not isinstance(bias, torch.Tensor) or not isinstance(out, torch.Tensor):
            return "addmm's bias is not a tensor"
        if _kind(tuple(bias.shape), tuple(out.shape)) is None:
            return f"addmm's bias of shape {tuple(bias.shape)} (taken: (N,), (1, N), (M, 1), (M, N))"
        if dtype_name(bias) not in DTYPES:
            return f"addmm's bias in {bias.dtype}"
        if node.kwargs.get("beta", 1) != 1:
            return "addmm with beta != 1 (the epilogue reads its bias as it is)"
        if not isinstance(node.kwargs.get("alpha", 1), int | float):
            return "addmm's alpha is not a number"
        node_args = node.args[1:3]
    else:
        node_args = node.args[:2]
    a, b, out = node_value(node_args[0]), node_value(node_args[1]), node_value(node)
    if not all(isinstance(t, torch.Tensor) for t in (a, b, out)):
        return "an operand is not a tensor"
    rank = 3 if name == "bmm" else 2
    if a.dim() != rank or b.dim() != rank:
        return f"operands that are not {rank}-D"
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


def _operands(node: Any) -> tuple[Any, Any]:
    """The product's two operand nodes (``addmm``: after its bias)."""
    return tuple(node.args[1:3]) if aten_name(node) == "addmm" else tuple(node.args[:2])


def _kind(shape: tuple[int, ...], out: tuple[int, ...]) -> str | None:
    """How a tensor of `shape` broadcasts to the 2-d product's `out` (M, N): as the epilogue operand kind
    (`argus.kernels.epilogue`), or None."""
    m, n = out
    if shape in ((n,), (1, n)):
        return "columns"
    if shape == (m, 1):
        return "rows"
    if shape == (m, n):
        return "tile"
    return None


def absorbs(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The nodes taken into `node`'s group with it: the 2-D transposes of its operands that only `node` reads, and
    its epilogue (`epilogue_nodes`). `bound`: names of nodes with a constant bound to a forward argument."""
    return [a for a in _operands(node) if is_transpose(a) and len(a.users) == 1] + epilogue_nodes(node, bound)


def epilogue_nodes(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The elementwise nodes after a 2-d product that its fused epilogue computes (see the module docstring), in
    graph order (`chains.chain_nodes`), then the row reduction that reads their result, if one does
    (`reduction_nodes`)."""
    if aten_name(node) not in ("mm", "addmm"):
        return []
    out = tuple(node_value(node).shape)
    chain = chains.chain_nodes(node, bound, lambda shape: _kind(shape, out))
    group = {node, *chain}
    leaving = [g for g in (node, *chain) if any(u not in group for u in g.users)]
    return chain + (reduction_nodes(leaving[0]) if len(leaving) == 1 else [])


#: The row reductions that may end a product's group (`reduction_nodes`): aten name -> `Epilogue.reduce`.
ROW_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min", "max": "max", "min": "min",
                  "logsumexp": "logsumexp"}  # fmt: skip


def reduction_nodes(result: Any) -> list[Any]:
    """The nodes of the row reduction that is the only reader of `result` (a 2-d value of the product's group): the
    reduction, and for ``max.dim``/``min.dim`` the one read of its values; [] where there is none (see the module
    docstring)."""
    import operator

    import torch

    users = list(result.users)
    value = node_value(result)
    if len(users) != 1 or not isinstance(value, torch.Tensor) or value.dim() != 2:
        return []
    (r,) = users
    if r.op != "call_function" or aten_name(r) not in ROW_REDUCTIONS or r.args[0] is not result:
        return []
    overload = str(getattr(r.target, "_overloadname", ""))
    dims = r.args[1] if len(r.args) > 1 else r.kwargs.get("dim")
    dims = [dims] if isinstance(dims, int) else dims
    if not isinstance(dims, list | tuple) or [d % 2 for d in dims if isinstance(d, int)] != [1] or len(dims) != 1:
        return []
    if r.kwargs.get("dtype") is not None or (len(r.args) > 3 and r.args[3] is not None):
        return []
    if aten_name(r) in ("max", "min"):  # (values, indices): the values only, read once
        reads = [u for u in r.users if u.op == "call_function" and u.target is operator.getitem]
        if overload != "dim" or len(reads) != 1 or len(r.users) != 1 or reads[0].args[1] != 0:
            return []
        taken = [r, reads[0]]
    elif aten_name(r) in ("sum", "mean") and overload not in ("dim_IntList", "dim"):
        return []
    else:
        taken = [r]
    out = node_value(taken[-1])
    if not isinstance(out, torch.Tensor) or out.dtype != value.dtype:
        return []
    return taken


def _reduction(nodes: list[Any]) -> tuple[str, bool] | None:
    """(`Epilogue.reduce`, keepdim) of the group's row reduction among `nodes`, or None."""
    found = [n for n in nodes if n.op == "call_function" and aten_name(n) in ROW_REDUCTIONS]
    if not found:
        return None
    (r,) = found
    keepdim = r.args[2] if len(r.args) > 2 else r.kwargs.get("keepdim", False)
    return ROW_REDUCTIONS[aten_name(r)], bool(keepdim)


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The library call of a product's group: the GEMM, with its epilogue when the group has one (see the module
    docstring)."""
    from argus.kernels.matmul import GemmProblem

    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    (mm,) = [n for n in nodes if n.op == "call_function" and aten_name(n) in ("mm", "bmm", "addmm")]
    (result,) = [n for n in nodes if n.op == "output"][0].all_input_nodes
    operands, flags = [], []
    for arg in _operands(mm):
        flags.append(is_transpose(arg) and arg.op == "call_function")
        operands.append(arg.args[0] if flags[-1] else arg)
    a, b = (node_value(x) for x in _operands(mm))  # as the product reads them: ([L,] M, K), ([L,] K, N)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = int(a.shape[0]) if a.dim() == 3 else 1
    dt = DTYPES[dtype_name(a)]
    problem = GemmProblem(
        int(m), int(n), int(k), dt, dt, "M" if flags[0] else "K", "K" if flags[1] else "N", batch
    )  # the operands as the group receives them, contiguous: A^T stored (K, M) is M-major, B^T stored (N, K) K-major
    order = tuple(placeholders.index(o) for o in operands)  # which of the group's inputs each operand is
    reduced = _reduction(nodes)
    epilogue = _epilogue(mm, nodes, placeholders, (int(m), int(n)), reduced[0] if reduced else None)
    chain = [aten_name(x) for x in nodes if x.op == "call_function" and x is not mm and not is_transpose(x)]
    chain = [x for x in chain if x != "getitem"]
    op = " -> ".join([aten_name(mm), *chain])
    title = f"{op} of {tuple(a.shape)} and {tuple(b.shape)} ({dt}), the GEMM library's plan"
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({op}).")
    lines = [
        f"# {title}",
        f"{name} = LibraryGemm(",
        f"    {name!r},",
        f"    GemmProblem({m}, {n}, {k}, {dt!r}, {dt!r}, {problem.a_major!r}, {problem.b_major!r}, {batch}),",
        f"    transpose_a={flags[0]},",
        f"    transpose_b={flags[1]},",
        f"    order={order!r},",
    ]
    imports = "from argus.kernels.matmul import GemmProblem, LibraryGemm  # noqa: E402\n"
    if epilogue is not None:
        imports += chains.EPILOGUE_IMPORT
        lines += chains.epilogue_arguments(*epilogue)
    if reduced is not None and reduced[1]:
        lines.append("    keepdim=True,")
    lines.append(")")
    shapes = {p.name: tuple(node_value(p).shape) for p in placeholders}
    shapes[result.name] = tuple(int(d) for d in node_value(result).shape)
    return KernelSource(
        name,
        ref,
        imports + "\n" + "\n".join(lines) + "\n",
        [p.name for p in placeholders],
        [result.name],
        {},
        math.prod(tuple(node_value(result).shape)),
        {**{p.name: DTYPES[dtype_name(node_value(p))] for p in placeholders}, result.name: dt},
        shapes,
        library=True,
    )


def _epilogue(
    mm: Any, nodes: list[Any], placeholders: list[Any], out: tuple[int, int], reduce: str | None = None
) -> tuple[Any, tuple] | None:
    """The group's `Epilogue` and the positions of its operands among the group's inputs, or None (a bare product):
    addmm's bias, then one statement per elementwise node (`chains.epilogue_of`), then the row reduction `reduce`."""
    import operator

    ends = [
        x for x in nodes if x.op == "call_function" and (aten_name(x) in ROW_REDUCTIONS or x.target is operator.getitem)
    ]
    chain = [x for x in nodes if x.op == "call_function" and x is not mm and not is_transpose(x) and x not in ends]
    if reduce is not None:
        ep, positions = chains.epilogue_of(mm, chain, placeholders, lambda shape: _kind(shape, out), _head(mm),
                                           mm.args[0])  # fmt: skip
        return ep.reducing(reduce), positions
    if aten_name(mm) != "addmm" and not chain:
        return None
    return chains.epilogue_of(mm, chain, placeholders, lambda shape: _kind(shape, out), _head(mm), mm.args[0])


def _head(mm: Any) -> list[str]:
    """addmm's first statement over ``acc`` (its bias added by `chains.epilogue_of`; beta is 1: `unsupported`)."""
    if aten_name(mm) != "addmm":
        return []
    alpha = mm.kwargs.get("alpha", 1)
    return ["acc" if alpha == 1 else f"acc * {pointwise._lit(float(alpha))}"]
