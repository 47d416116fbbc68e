"""What every kernel-family template shares: the generated kernel's description (`KernelSource`), the
`Template` interface the partitioner and the pipeline call, and the FX graph written back out as Python (the
reference every generated kernel is checked against).

A template is two functions: `Template.unsupported(node)` (None when the template can take the ``call_function``
node, else why not; the partitioner asks it) and `Template.source(name, subgraph, scalar_uses, scalar_values)`,
which writes the DSL kernel of a group (a ``torch.fx.GraphModule`` holding the group's nodes). With
`Template.fuses`, connected nodes the template takes are grouped into one kernel (FX's capability-based
partitioner); otherwise every node is its own kernel. A fusing template may also refuse a proposed group as a
whole (`Template.group_unsupported`, e.g. when its nodes do not broadcast to one shape): its nodes are then one
kernel each where the template takes them alone, else left uncovered with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: torch dtype name -> the DSL's dtype name.
DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
#: torch integer dtype name -> the DSL's, for the integer tensors the templates read or move as they are stored (a
#: gather's indices, token ids a layout kernel moves, an integer input a pointwise kernel reads as float32).
INTEGER_DTYPES = {"int64": "i64", "int32": "i32"}

#: Names a generated kernel's parameters and locals never take.
RESERVED = frozenset({"T", "N", "BLOCK", "bx", "argus", "torch", "math", "float", "reference"})


def grid_axes(extents: list[tuple[str, str, int]]) -> tuple[str, str] | str:
    """A template kernel's ``T.grid`` arguments and index names for `extents`, each (its DSL text, its index's
    name, its extent at the captured sizes), in the kernel's own order where every extent fits its axis (CUDA takes
    2**31 - 1 blocks along x, 65535 along y and z), else largest first (a layer norm of 4M rows in row tiles of 4
    has a million along one axis); or why no order fits. The names come back as the ``as (...)`` tuple's text."""
    from argus.atoms.common import MAX_GRID

    def fits(order: list[tuple[str, str, int]]) -> bool:
        return all(n <= limit for (_, _, n), limit in zip(order, MAX_GRID, strict=False))

    order = list(extents)
    if not fits(order):
        order = sorted(order, key=lambda e: -e[2])
        if not fits(order):
            counts = " x ".join(str(n) for _, _, n in order)
            return f"its grid of {counts} blocks exceeds CUDA's grid limits {MAX_GRID}"
    names = ", ".join(name for _, name, _ in order)
    return ", ".join(text for text, _, _ in order), names + ("," if len(order) == 1 else "")


def safe_name(name: str, taken: set[str]) -> str:
    """`name` as a new identifier of the generated source: not reserved, not taken (then added to `taken`)."""
    out = name if name.isidentifier() and name not in RESERVED else f"{name}_v"
    while out in taken:
        out += "_"
    taken.add(out)
    return out


def int_list(value: Any, rank: int, name: str, what: str) -> tuple[int, ...] | str:
    """An int-list argument of an operator over `rank` spatial dimensions (a pooling's window, a convolution's
    stride) as `rank` ints (a single int, or a list of one, is repeated), or why not; `what` names the operator in
    the reason (``"pool"``, ``"convolution"``)."""
    items = [value] if isinstance(value, int) else list(value)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return f"{name} {value!r} is not a list of ints"
    if len(items) == 1:
        items = items * rank
    if len(items) != rank:
        return f"{name} {value!r} has {len(items)} entries, the {rank}-d {what} needs {rank}"
    return tuple(items)


def three(values: tuple[int, ...], fill: int) -> tuple[int, int, int]:
    """1, 2 or 3 spatial values as three (depth, height, width), `fill` in front for the dimensions a 1-d or 2-d
    operator does not have."""
    full = (fill,) * (3 - len(values)) + tuple(values)
    return full[0], full[1], full[2]


def min_blocks() -> int:
    """The fewest blocks a generated kernel should launch: two waves of a GPU of `argus.atoms.target.DEFAULT_TARGET`'s
    SMs (a reduction launching fewer is split in two stages; a pointwise kernel's default tile shrinks)."""
    from argus.atoms.target import DEFAULT_TARGET

    return 2 * DEFAULT_TARGET.sms


def node_value(node: Any) -> Any:
    """The fake tensor (or value) the capture recorded for `node`."""
    return node.meta.get("val") if hasattr(node, "meta") else None


def aten_name(node: Any) -> str:
    """The ATen operator's name without namespace and overload (``aten.sum.dim_IntList`` -> ``sum``); "" for a
    node whose target is not an ATen operator."""
    packet = getattr(node.target, "_overloadpacket", None)
    return str(packet.__name__) if packet is not None else ""


def dtype_name(value: Any) -> str:
    return str(value.dtype).removeprefix("torch.")


@dataclass
class KernelSource:
    """A generated kernel: its name, the source of its reference and of the kernel, the group's tensor inputs
    and outputs (graph names, in the kernel's parameter order), the scalar parameters it takes (kernel
    parameter -> forward argument), the elements of its (first) output, the DSL dtype of every graph value it
    reads or makes, and the shape each tensor is passed as (`shapes`; flattened when absent)."""

    name: str
    reference: str
    kernel: str
    inputs: list[str]
    outputs: list[str]
    scalars: dict[str, str]
    numel: int
    dtypes: dict[str, str]
    #: the shape each tensor (graph name) is passed to the kernel as; a tensor not named is flattened
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: the kernel is a call of argus's kernel library (`argus.kernels.matmul.LibraryGemm`), not one DSL kernel: it
    #: takes its tensors as they are (views included) and the pipeline verifies each kernel of its plan
    library: bool = False
    #: integer inputs that hold indices, by graph name: ``(low, high, extra)``, the kernel check draws them uniformly
    #: in ``[low, high)`` and about one in eight from `extra` (an ``ignore_index``); other integer inputs are drawn
    #: as rounded standard-normal values
    indices: dict[str, tuple[int, int, tuple[int, ...]]] = field(default_factory=dict)

    def shape_of(self, name: str, numel: int) -> tuple[int, ...]:
        return self.shapes.get(name, (numel,))


def format_arg(value: Any, names: Mapping[str, str] | None = None) -> str:
    """`value` (an FX argument) as Python source; a node as its name (or the name `names` gives it)."""
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return names.get(value.name, value.name) if names else value.name
    if isinstance(value, list | tuple):
        inner = ", ".join(format_arg(v, names) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, torch.memory_format | torch.layout):
        return str(value)
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return f"float({str(value)!r})"
    return repr(value)


def aten_call(node: Any) -> str:
    """`node` as the Python call it is: ``torch.ops.aten.sigmoid.default(x)``."""
    target = node.target
    if hasattr(target, "_overloadpacket"):
        fn = f"torch.ops.{target.namespace}.{target._overloadpacket.__name__}.{target._overloadname}"
    else:
        fn = f"{target.__module__}.{target.__name__}"
    parts = [format_arg(a) for a in node.args]
    parts += [f"{k}={format_arg(v)}" for k, v in node.kwargs.items()]
    return f"{fn}({', '.join(parts)})"


def reference_source(name: str, subgraph: Any, title: str) -> str:
    """The group's FX subgraph as a Python function of its inputs (the kernel's reference)."""
    nodes = list(subgraph.graph.nodes)
    inputs = [n.name for n in nodes if n.op == "placeholder"]
    lines = [f"def {name}({', '.join(inputs)}):", f'    """{title}"""']
    for n in nodes:
        if n.op == "call_function":
            lines.append(f"    {n.name} = {aten_call(n)}")
        elif n.op == "output":
            result = n.args[0]
            lines.append(f"    return {format_arg(result)}")
    return "\n".join(lines) + "\n"


#: A template's answer about one node: None when it can take it, else why not.
Support = Callable[[Any], "str | None"]
#: A template's answer about a proposed group (its nodes): None when they make one kernel, else why not.
GroupSupport = Callable[[list[Any]], "str | None"]
#: A template's kernel writer: (kernel name, group subgraph, scalar uses, scalar values) -> the kernel.
Writer = Callable[[str, Any, Mapping[tuple[str, int], str], Mapping[str, Any]], KernelSource]


@dataclass(frozen=True)
class Template:
    """A kernel family's template (see the module docstring). `absorbs`: ``absorbs(node, bound)``, the nodes of
    other families that `node`'s group takes in with it (the matmul template's operand transposes and fused
    epilogue, the reduction's prologue; for a fusing template, nodes proposed to the partitioner with the family's
    own: the pointwise template's views of an arange, which its kernel computes as coordinates), `bound` the names
    of nodes it may not take (one with a constant that a forward argument gives at run time, or one an earlier
    group took: the partitioner asks the reduction template last); no other family proposes them."""

    unsupported: Support
    source: Writer
    fuses: bool = False
    group_unsupported: GroupSupport | None = None
    absorbs: Callable[[Any, frozenset[str]], list[Any]] | None = None
    #: the template passes a constant bound to a forward argument as a kernel parameter at each call (the pointwise
    #: and indexing families); the others write constants into the kernel, so the partition leaves a node with a
    #: bound constant to PyTorch rather than give them one
    takes_scalars: bool = False
