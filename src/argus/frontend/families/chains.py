"""Elementwise chains after a product or a convolution, taken into its group as the library call's fused epilogue
(`argus.kernels.epilogue.Epilogue`): which nodes (`chain_nodes`) and the epilogue they make (`epilogue_of`). The
matmul family and the convolution family share them; each says how an operand of the chain broadcasts to its
output (`kind`: the epilogue operand kind of a shape, or None where the epilogue cannot read it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argus.frontend.families import pointwise
from argus.frontend.families.base import DTYPES, aten_name, dtype_name, node_value

#: ``kind(shape)``: the epilogue operand kind (``"columns"``, ``"rows"``, ``"tile"``) of a tensor of `shape` read
#: with the group's output, or None where the epilogue cannot read it
Kind = Callable[[tuple[int, ...]], "str | None"]


def chain_nodes(node: Any, bound: frozenset[str], kind: Kind) -> list[Any]:
    """The elementwise nodes after `node` that its fused epilogue computes, in graph order: the longest prefix of
    its elementwise users, in graph order, after which exactly one value of the group is used outside it (of
    `node`'s shape and dtype). `bound`: names of nodes with a constant bound to a forward argument (not taken)."""
    out = node_value(node)
    shape, dtype = tuple(out.shape), out.dtype
    group: dict[Any, None] = {node: None}
    tainted: set[Any] = set()  # nodes outside the group that depend on it
    best: list[Any] = []
    started = False
    for n in node.graph.nodes:
        if n is node:
            started = True
            continue
        if not started or n.op != "call_function":
            continue
        inputs = [a for a in n.all_input_nodes]
        if not any(a in group or a in tainted for a in inputs):
            continue
        if takes(n, group, tainted, shape, dtype, bound, kind):
            group[n] = None
            for a in inputs:  # constants it reads become literals of the epilogue
                if pointwise._is_literal(a):
                    group[a] = None
            used_outside = [g for g in group if any(u not in group for u in g.users)]
            if len(used_outside) == 1 and used_outside[0] is not node and node_value(used_outside[0]).dtype == dtype:
                best = [g for g in group if g is not node]
            elif not used_outside:
                break
        else:
            tainted.add(n)
    return best


def takes(n: Any, group: dict, tainted: set, shape: tuple, dtype: Any, bound: frozenset[str], kind: Kind) -> bool:
    """Whether the epilogue can take elementwise node `n`, whose inputs include a value of the group."""
    import torch
    import torch.fx

    op = aten_name(n)
    if op not in pointwise.RULES or op in ("scalar_tensor", "clone") or n.name in bound:
        return False
    if op == "_to_copy" and (set(n.kwargs) - {"dtype"} or n.kwargs.get("dtype") not in (torch.float32, dtype)):
        return False  # only a conversion between the output's dtype and float32, which the epilogue computes in
    params, _ = pointwise.RULES[op]
    args = pointwise._arguments(n, params)
    if isinstance(args, str):
        return False
    val = node_value(n)
    compared = op in pointwise.COMPARISONS
    # float32 values on the way (a 16-bit output widened, then rounded once at the end: eval-mode batch norm's
    # decomposition) are what the epilogue holds anyway; the chain's last value has the output's dtype (`chain_nodes`)
    if not isinstance(val, torch.Tensor) or tuple(val.shape) != shape:
        return False
    if val.dtype not in (dtype, torch.float32) and not compared:
        return False
    if op == "div" and n.kwargs.get("rounding_mode") is not None:
        return False
    if op == "gelu" and args[1] not in ("none", "tanh"):
        return False
    for a in args:
        if isinstance(a, torch.fx.Node):
            if a in group or pointwise._is_literal(a):
                continue
            v = node_value(a)
            external = isinstance(v, torch.Tensor) and a not in tainted and dtype_name(v) in DTYPES
            if not external or kind(tuple(v.shape)) is None:
                return False
        elif not (a is None or isinstance(a, bool | int | float | str)):
            return False
    return True


def epilogue_of(
    node: Any, chain: list[Any], placeholders: list[Any], kind: Kind, head: list[str] = (), bias: Any = None
) -> tuple[Any, tuple[int, ...]]:
    """The `Epilogue` of `chain` (one statement per elementwise node, rendered by the pointwise template's rules)
    after `node`'s value ``acc``, and the positions of its operands among the group's inputs (`placeholders`).
    `head`: the first statement's value over ``acc`` (addmm's scaled accumulator), to which `bias` (a node) is
    added."""
    import torch.fx

    from argus.kernels.epilogue import Epilogue, EpilogueOperand

    operands: dict[str, EpilogueOperand] = {}
    positions: list[int] = []
    text: dict[Any, str] = {node: "acc"}
    statements: list[str] = []

    def operand(n: Any) -> str:
        if n in text:
            return text[n]
        value = node_value(n)
        if pointwise._is_literal(n):
            return pointwise._lit(float(n.args[0]))
        name = f"e_{n.name}"
        operands[name] = EpilogueOperand(name, kind(tuple(value.shape)), DTYPES[dtype_name(value)])
        positions.append(placeholders.index(n))
        text[n] = name
        return name

    for first in head:
        statements.append(f"v_{node.name} = {first} + {operand(bias)}")
        text[node] = f"v_{node.name}"
    for n in chain:
        if pointwise._is_literal(n):
            continue
        op = aten_name(n)
        params, render = pointwise.RULES[op]
        args = pointwise._arguments(n, params)
        rendered = []
        for v in args:
            if isinstance(v, torch.fx.Node):
                rendered.append(pointwise.Operand(operand(v), v in text and not pointwise._is_literal(v)))
            elif v is None:
                rendered.append(None)
            elif isinstance(v, str):
                rendered.append(pointwise.Operand(repr(v), False))
            else:
                rendered.append(pointwise.Operand(pointwise._lit(v), False))
        statements.append(f"v_{n.name} = {render(*rendered)}")
        text[n] = f"v_{n.name}"
    result = text[chain[-1]] if chain else text[node]
    return Epilogue(tuple(statements), result, tuple(operands.values())), tuple(positions)


#: The import a generated call with a fused epilogue needs.
EPILOGUE_IMPORT = "from argus.kernels.epilogue import Epilogue, EpilogueOperand  # noqa: E402\n"


def epilogue_arguments(ep: Any, positions: tuple[int, ...]) -> list[str]:
    """The keyword arguments ``epilogue=Epilogue(...)`` and ``epilogue_order=...`` of a generated library call,
    one line each (indented for the call's body)."""
    operands = "".join(f"EpilogueOperand({o.name!r}, {o.kind!r}, {o.dtype!r}), " for o in ep.operands)
    return [
        "    epilogue=Epilogue(",
        "        (",
        *[f"            {line!r}," for line in ep.statements],
        "        ),",
        f"        {ep.result!r},",
        f"        ({operands}),",
        *([f"        reduce={ep.reduce!r},"] if ep.reduce else []),
        "    ),",
        f"    epilogue_order={positions!r},",
    ]
