"""Kernels written for the operators no template covers (the LLM path of `argus solve`): what `solve` asks a
writer for, what comes back, and how an accepted module is placed in the solution file.

`requests(partition)` groups the uncovered compute nodes into requests: connected uncovered operators (with the
views between them) are proposed together by FX's capability-based partitioner, vertical merges only (a group is
connected and no path leaves it and comes back), and a group whose values are read outside it in more than one
place — or whose outer tensors are not of a `WRITABLE` dtype — falls back to one request per operator. Each request
is a `KernelRequest`: its reference as Python source (``def reference(IN0, IN1, ...)``, one ATen call per line,
every argument that is not a tensor a literal) and as a callable (the group's own FX subgraph), its tensors at
their captured shapes and dtypes (inputs, then the output), and the family the closest library kernel is chosen by
(`closest_kernel`: the kernel the writer starts from). A writer (`argus.agent.writer.KernelWriter` behind
``argus solve --llm``) answers with a `WrittenKernel` — a module it has gated in a sandbox — or the reason it has
none.

`embedded(name, kernel)` is the module's text to place in the solution: every name the module defines at its top
level is prefixed with the group's name (the kernel function itself becomes the group's name), so that it cannot
collide with the solution's own names or another written module's; its imports stay (the solution imports argus
and ``argus.lang as T`` already). The module is written code nobody vouches for: `solve` never imports the
solution file once it holds one (the checks of the template kernels import a version without them, and the gate
runs the solution in its sandbox).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from argus.frontend.families.base import DTYPES, aten_call, dtype_name, format_arg, node_value
from argus.frontend.partition import Family, classify, metadata_only, op_label, op_name

#: The DSL dtype names a written kernel's tensors may have (`argus.frontend.families.base.DTYPES` and integers).
WRITABLE = {**DTYPES, "int32": "i32", "int64": "i64"}

#: The library kernels closest to a group of each family, closest first (`closest_kernel`): an elementwise kernel
#: for what maps elements to elements (pointwise, data movement, a gather), a row reduction with statistics for
#: what reduces (a reduction, a scan along rows, softmax and normalization), the simplest library kernel of each
#: family that has one for the rest.
CLOSEST: dict[Family, tuple[str, ...]] = {
    Family.POINTWISE: ("vector_add",),
    Family.LAYOUT: ("vector_add",),
    Family.INDEXING: ("vector_add",),
    Family.OTHER: ("vector_add",),
    Family.REDUCTION: ("softmax", "layer_norm"),
    Family.SCAN: ("softmax", "layer_norm"),
    Family.SOFTMAX: ("softmax", "layer_norm"),
    Family.NORMALIZATION: ("layer_norm", "softmax"),
    Family.POOLING: ("conv_naive",),
    Family.CONVOLUTION: ("conv_naive",),
    Family.MATMUL: ("gemm_naive",),
    Family.ATTENTION: ("flash_attention_fwd",),
}

#: Which operator names a group of several families, first first: a pointwise tail does not make a reduction
#: pointwise, and a gather summed is a reduction.
PRECEDENCE: tuple[Family, ...] = (
    Family.ATTENTION,
    Family.MATMUL,
    Family.CONVOLUTION,
    Family.POOLING,
    Family.NORMALIZATION,
    Family.SOFTMAX,
    Family.SCAN,
    Family.REDUCTION,
    Family.INDEXING,
    Family.LAYOUT,
    Family.OTHER,
    Family.POINTWISE,
)


def group_family(families: Iterable[Family]) -> Family:
    """The family that names a group of operators of `families` (the first of them in `PRECEDENCE`)."""
    present = set(families)
    found = next((f for f in PRECEDENCE if f in present), None)
    if found is None:
        raise ValueError(f"no family names a group of {sorted(map(str, present))}: a group has an operator")
    return found


def closest_kernel(family: Family, examples: Collection[str] = ()) -> str:
    """The library kernel a written kernel for a group of `family` starts from: the closest in `CLOSEST` that is
    not one of the writer's `examples` (the prompt shows those whole already), else the closest (an example: the
    prompt then names it rather than repeating it)."""
    candidates = CLOSEST[family]
    return next((name for name in candidates if name not in examples), candidates[0])


@dataclass
class KernelRequest:
    """One group of uncovered nodes to write a kernel for: the kernel's name, the reference's source (a function of
    the inputs) and the reference itself, the tensors ``(name, shape, DSL dtype, output)`` in parameter order, the
    node whose value the kernel's ``OUT`` is, the group's operators (in graph order), every node the kernel
    replaces (its operators and the views between them), the graph values ``IN0, IN1, ...`` are, and the family
    its closest library kernel is chosen by."""

    name: str
    reference_source: str
    reference: Callable[..., Any]
    tensors: list[tuple[str, tuple[int, ...], str, bool]]
    node: str
    ops: list[str]
    nodes: list[str]
    inputs: list[str]
    family: Family

    @property
    def op(self) -> str:
        """The group's operators as one label (``aten.mul.Tensor -> aten.add.Tensor``)."""
        return " -> ".join(self.ops)


@dataclass
class WrittenKernel:
    """An accepted module: its source, the kernel function's name, and what its gate said (the verifier's
    verdict and where it was checked)."""

    source: str
    function: str
    verdict: str = "verified"
    summary: str = ""
    checked_on: str = "cpu"


def requests(partition: Any) -> tuple[list[KernelRequest], dict[str, str]]:
    """The requests for `partition`'s uncovered nodes (see the module docstring), and for the nodes none takes
    why (node -> reason)."""
    graph_module = partition.fused
    nodes = {n.name: n for n in graph_module.graph.nodes}
    bound = {node: arg for arg, uses in partition.capture.scalar_uses.items() for node, _ in uses}
    skipped: dict[str, str] = {}
    operators: set[Any] = set()
    for u in partition.uncovered:
        node = nodes.get(u.node)
        why = _not_writable(node, bound)
        if why is not None:
            skipped[u.node] = why
        else:
            operators.add(node)
    views = {n for n in graph_module.graph.nodes if _view(n)}
    out: list[KernelRequest] = []
    for group in _groups(graph_module, operators, views):
        made = _request(graph_module, group, operators, f"written_{len(out)}")
        if isinstance(made, KernelRequest):
            out.append(made)
            continue
        alone = [n for n in group if n in operators]
        if len(alone) == 1:
            skipped[alone[0].name] = made
            continue
        for node in alone:  # a group that cannot be one kernel: each of its operators alone
            single = _request(graph_module, [node], operators, f"written_{len(out)}")
            if isinstance(single, KernelRequest):
                out.append(single)
            else:
                skipped[node.name] = single
    return out, skipped


def _not_writable(node: Any, bound: dict[str, str]) -> str | None:
    """Why uncovered node `node` cannot be in a written kernel, or None."""
    import torch

    if node is None or node.op != "call_function":
        return "not a single operator"
    if not isinstance(node_value(node), torch.Tensor):
        return "its result is not one tensor"
    if node.name in bound:
        return f"a constant of it is the forward's argument {bound[node.name]}, which a written kernel cannot take"
    if not node.users:
        return "its result is never read"
    return None


def _view(node: Any) -> bool:
    """Whether `node` is a view the partition leaves as it is (metadata only: no compute) on one tensor."""
    import torch

    if node.op != "call_function" or op_name(node) == "getitem":
        return False
    if not isinstance(node_value(node), torch.Tensor):
        return False
    return classify(node) is Family.VIEW or metadata_only(node)


def _groups(graph_module: Any, operators: set[Any], views: set[Any]) -> list[list[Any]]:
    """The connected groups of `operators` (with the `views` between them), each in graph order, in the order of
    their last node. A view at a group's edge — one that reads only values from outside the group, or whose value
    only outside nodes read — is left out: the kernel reads the value it views, or its output is viewed outside."""
    from argus.frontend.partition import propose

    def writable(node: Any) -> bool:
        return node in operators or node in views

    # connected groups only; an older torch's partitioner also merges groups side by side, and such a group, read
    # outside in several places, becomes one request per operator (`requests`)
    proposals = propose(graph_module, writable, vertical_only=True) or propose(graph_module, writable) or []
    order = {n: i for i, n in enumerate(graph_module.graph.nodes)}
    groups: list[list[Any]] = []
    for proposal in proposals:
        members = set(proposal)
        edge = [n for n in members & views if _at_the_edge(n, members)]
        while edge:
            members -= set(edge)
            edge = [n for n in members & views if _at_the_edge(n, members)]
        if members & operators:
            groups.append(sorted(members, key=order.__getitem__))
    return sorted(groups, key=lambda group: order[group[-1]])


def _at_the_edge(view: Any, members: set[Any]) -> bool:
    return not any(a in members for a in view.all_input_nodes) or not any(u in members for u in view.users)


def _request(graph_module: Any, group: list[Any], operators: set[Any], name: str) -> KernelRequest | str:
    """The request for `group` (nodes of `graph_module` in graph order, connected, every one read), or why there is
    none."""
    import torch
    from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule

    members = set(group)
    outputs = [n for n in group if any(u not in members for u in n.users)]
    if len(outputs) != 1:
        read = ", ".join(n.name for n in outputs)
        return f"its operators' values are read outside it at {len(outputs)} nodes ({read}), a kernel has one output"
    (result,) = outputs
    subgraph, inputs, _ = fuse_as_graphmodule(graph_module, group, name)
    tensors: list[tuple[str, tuple[int, ...], str, bool]] = []
    for j, operand in enumerate(inputs):
        val = node_value(operand)
        kind = WRITABLE.get(dtype_name(val)) if isinstance(val, torch.Tensor) else None
        if kind is None:
            break
        tensors.append((f"IN{j}", tuple(int(d) for d in val.shape), kind, False))
    value = node_value(result)
    kind = WRITABLE.get(dtype_name(value))
    if len(tensors) != len(inputs) or kind is None:
        return "an operand or its result is not a float or integer tensor"
    if not inputs:
        return "it reads no tensor"
    tensors.append(("OUT", tuple(int(d) for d in value.shape), kind, True))
    names = {operand.name: f"IN{j}" for j, operand in enumerate(inputs)} | {n.name: n.name for n in group}
    lines = [f"def reference({', '.join(f'IN{j}' for j in range(len(inputs)))}):"]
    # every other node of the group is read inside it, so the result is its last node
    lines += [f"    {n.name} = {_call(n, names)}" for n in group if n is not result]
    lines.append(f"    return {_call(result, names)}")
    computing = [n for n in group if n in operators]
    return KernelRequest(
        name,
        "\n".join(lines) + "\n",
        subgraph,
        tensors,
        result.name,
        [op_label(n) for n in computing],
        [n.name for n in group],
        [operand.name for operand in inputs],
        group_family(classify(n) for n in computing),
    )


def _call(node: Any, names: dict[str, str]) -> str:
    """`node` as its ATen call, every node it reads by the name `names` gives it."""
    fn = aten_call(node).split("(", 1)[0]
    parts = [format_arg(a, names) for a in node.args] + [f"{k}={format_arg(v, names)}" for k, v in node.kwargs.items()]
    return f"{fn}({', '.join(parts)})"


def embedded(name: str, kernel: WrittenKernel) -> str:
    """The module's text with its top-level names prefixed by `name` (its kernel function named `name`)."""
    tree = ast.parse(kernel.source)
    defined: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    mapping = {n: (name if n == kernel.function else f"{name}_{n}") for n in defined}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:  # noqa: N802 - ast's visitor naming
            node.id = mapping.get(node.id, node.id)
            return node

        def visit_arg(self, node: ast.arg) -> ast.arg:
            node.arg = mapping.get(node.arg, node.arg)
            self.generic_visit(node)
            return node

        def visit_keyword(self, node: ast.keyword) -> ast.keyword:
            if node.arg is not None:
                node.arg = mapping.get(node.arg, node.arg)
            self.generic_visit(node)
            return node

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:  # noqa: N802
            node.name = mapping.get(node.name, node.name)
            self.generic_visit(node)
            return node

    renamed = Rename().visit(tree)
    body = [s for s in renamed.body if not isinstance(s, ast.ImportFrom) or s.module != "__future__"]
    return ast.unparse(ast.Module(body=body, type_ignores=[])) + "\n"
