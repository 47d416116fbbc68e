"""Kernels written for the operators no template covers (the LLM path of `argus solve`): what `solve` asks a
writer for, what comes back, and how an accepted module is placed in the solution file.

`requests(partition)` turns each uncovered compute node with tensor inputs and one tensor output into a
`KernelRequest`: its reference as Python source (the ATen call on the node's tensor inputs, every other argument
a literal) and as a callable, and its tensors at their captured shapes and dtypes, inputs then the output. A
writer (`argus.agent.writer.KernelWriter` behind ``argus solve --llm``) answers with a `WrittenKernel` — a module
it has gated in a sandbox — or the reason it has none.

`embedded(name, kernel)` is the module's text to place in the solution: every name the module defines at its top
level is prefixed with the group's name (the kernel function itself becomes the group's name), so that it cannot
collide with the solution's own names or another written module's; its imports stay (the solution imports argus
and ``argus.lang as T`` already). The module is written code nobody vouches for: `solve` never imports the
solution file once it holds one (the checks of the template kernels import a version without them, and the gate
runs the solution in its sandbox).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus.frontend.families.base import DTYPES, aten_call, dtype_name, node_value

#: The DSL dtype names a written kernel's tensors may have (`argus.frontend.families.base.DTYPES` and integers).
WRITABLE = {**DTYPES, "int32": "i32", "int64": "i64"}


@dataclass
class KernelRequest:
    """One uncovered node to write a kernel for: the kernel's name, the reference's source (a function of the
    inputs) and the reference itself, the tensors ``(name, shape, DSL dtype, output)`` in parameter order, the
    node's name and its operator."""

    name: str
    reference_source: str
    reference: Callable[..., Any]
    tensors: list[tuple[str, tuple[int, ...], str, bool]]
    node: str
    op: str


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
    """The requests for `partition`'s uncovered nodes, and for the others why none is made (node -> reason)."""
    import torch
    import torch.fx

    graph_nodes = {n.name: n for n in partition.fused.graph.nodes}
    out: list[KernelRequest] = []
    skipped: dict[str, str] = {}
    for i, u in enumerate(partition.uncovered):
        node = graph_nodes.get(u.node)
        if node is None or node.op != "call_function":
            skipped[u.node] = "not a single operator"
            continue
        value = node_value(node)
        if not isinstance(value, torch.Tensor):
            skipped[u.node] = "its result is not one tensor"
            continue
        operands = list(dict.fromkeys(a for a in node.all_input_nodes))
        tensors: list[tuple[str, tuple[int, ...], str, bool]] = []
        for j, operand in enumerate(operands):
            val = node_value(operand)
            kind = WRITABLE.get(dtype_name(val)) if isinstance(val, torch.Tensor) else None
            if kind is None:
                break
            tensors.append((f"IN{j}", tuple(int(d) for d in val.shape), kind, False))
        kind = WRITABLE.get(dtype_name(value))
        if len(tensors) != len(operands) or not operands or kind is None:
            skipped[u.node] = "an operand or its result is not a float or integer tensor"
            continue
        tensors.append(("OUT", tuple(int(d) for d in value.shape), kind, True))
        names = {operand.name: f"IN{j}" for j, operand in enumerate(operands)}
        call = _call(node, names)
        params = ", ".join(names.values())
        source = f"def reference({params}):\n    return {call}\n"
        out.append(KernelRequest(f"written_{i}", source, _reference(node, operands), tensors, u.node, u.op))
    return out, skipped


def _call(node: Any, names: dict[str, str]) -> str:
    import torch.fx

    text = aten_call(node)
    fn = text.split("(", 1)[0]

    def arg(value: Any) -> str:
        from argus.frontend.families.base import format_arg

        if isinstance(value, torch.fx.Node):
            return names[value.name]
        return format_arg(value, names)

    parts = [arg(a) for a in node.args] + [f"{k}={arg(v)}" for k, v in node.kwargs.items()]
    return f"{fn}({', '.join(parts)})"


def _reference(node: Any, operands: list[Any]) -> Callable[..., Any]:
    """``reference(*inputs)``: the node's operator on the given tensors, its other arguments as captured."""
    import torch.fx

    positions = {operand.name: j for j, operand in enumerate(operands)}

    def reference(*inputs: Any) -> Any:
        def sub(value: Any) -> Any:
            if isinstance(value, torch.fx.Node):
                return inputs[positions[value.name]]
            if isinstance(value, list | tuple):
                return type(value)(sub(v) for v in value)
            return value

        return node.target(*[sub(a) for a in node.args], **{k: sub(v) for k, v in node.kwargs.items()})

    return reference


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
