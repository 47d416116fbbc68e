"""Partition: every operator of a captured graph classified into a kernel family, and the operators a family's
template can take grouped into kernels by FX's own capability-based partitioner.

`classify` names the family of a ``call_function`` node: pointwise (PyTorch's ``torch.Tag.pointwise`` on the
operator, plus the copies that compute nothing new, ``scalar_tensor`` and ``full``, constants, and ``arange``, a
function of the element's coordinate), reduction, normalization,
softmax-like, matmul-like, attention, convolution, pooling, scan, indexing/gather, view (metadata only: ``view``,
``unsqueeze``, ...), layout (a view whose consumer needs the data moved: ``permute``, ``expand``, ``slice``, ...)
or other. `partition` asks each family that has a template (`argus.frontend.families.TEMPLATES`) which nodes it
supports. A fusing family's supported nodes go to ``torch.fx.passes.infra.partitioner.CapabilityBasedPartitioner``
(which merges connected ones without creating cycles), and the template may refuse a proposed group as a whole
(its nodes are then one kernel each where the template takes them alone, else not covered with the template's
reason); every other family's nodes are one group each (with the ``getitem`` nodes that pick a multi-result node's
outputs). All proposals are fused into submodules at once, and each group's own FX subgraph is the reference its
kernel is checked against. Every compute node left outside a group is listed as not covered, with its family and
why.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from argus.frontend.capture import Capture


class Family(StrEnum):
    """The kernel family an operator belongs to (the issue's classes, plus the two kinds of views)."""

    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    NORMALIZATION = "normalization"
    SOFTMAX = "softmax-like"
    MATMUL = "matmul-like"
    ATTENTION = "attention"
    CONVOLUTION = "convolution"
    POOLING = "pooling"
    SCAN = "scan"
    INDEXING = "indexing/gather"
    VIEW = "view"
    LAYOUT = "layout"
    OTHER = "other"


#: Operators by family, by the name of their overload packet (``aten.sum.dim_IntList`` -> ``sum``). Pointwise is
#: PyTorch's own tag; these names come first.
_NAMED: dict[Family, frozenset[str]] = {
    Family.REDUCTION: frozenset(
        "sum mean prod amax amin max min argmax argmin var var_mean std std_mean any all norm linalg_vector_norm "
        "count_nonzero nansum".split()
    ),
    Family.NORMALIZATION: frozenset(
        "native_batch_norm _native_batch_norm_legit _native_batch_norm_legit_no_training "
        "_native_batch_norm_legit_functional native_layer_norm native_group_norm batch_norm layer_norm group_norm "
        "instance_norm rms_norm _fused_rms_norm".split()
    ),
    Family.SOFTMAX: frozenset("_softmax _log_softmax softmax log_softmax logsumexp _safe_softmax".split()),
    Family.MATMUL: frozenset("mm bmm addmm addbmm baddbmm matmul mv dot vdot linear _scaled_mm _grouped_mm".split()),
    Family.ATTENTION: frozenset(
        "_scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_efficient_attention "
        "_scaled_dot_product_flash_attention scaled_dot_product_attention".split()
    ),
    Family.CONVOLUTION: frozenset("convolution _convolution conv1d conv2d conv3d conv_transpose1d".split()),
    Family.POOLING: frozenset(
        "max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices avg_pool1d avg_pool2d "
        "avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d "
        "_adaptive_avg_pool3d adaptive_max_pool2d adaptive_max_pool3d _low_memory_max_pool_with_offsets "
        "_low_memory_max_pool2d_with_offsets".split()
    ),
    Family.SCAN: frozenset("cumsum cumprod cummax cummin logcumsumexp _cummax_helper _cummin_helper".split()),
    Family.INDEXING: frozenset(
        "gather index index_select scatter scatter_add scatter_reduce embedding take index_put _unsafe_index "
        "_unsafe_index_put nll_loss_forward nll_loss2d_forward masked_select sort topk class_loss_rows".split()
    ),
    # _assert_tensor_metadata: a dtype check export puts after a conversion (`.float()`), computing nothing
    Family.VIEW: frozenset(
        "view _unsafe_view reshape alias squeeze unsqueeze flatten lift_fresh_copy _assert_tensor_metadata".split()
    ),
    Family.LAYOUT: frozenset(
        "permute transpose t expand slice select narrow diagonal as_strided unfold flip roll cat stack split "
        "split_with_sizes constant_pad_nd pad repeat tril triu".split()
    ),
}


def op_name(node: Any) -> str:
    """The operator's name without namespace and overload (``aten.add.Tensor`` -> ``add``)."""
    target = node.target
    packet = getattr(target, "_overloadpacket", None)
    if packet is not None:
        return str(packet.__name__)
    return str(getattr(target, "__name__", target))


def op_label(node: Any) -> str:
    """How a report names the operator: ``aten.add.Tensor``, or the Python function's name."""
    target = node.target
    return str(target) if hasattr(target, "_overloadpacket") else str(getattr(target, "__name__", target))


def classify(node: Any) -> Family:
    """The family of the ``call_function`` node `node` (see the module docstring)."""
    import torch

    name = op_name(node)
    for family, names in _NAMED.items():
        if name in names:
            return family
    tags = getattr(node.target, "tags", ())
    if torch.Tag.pointwise in tags or name in ("clone", "_to_copy", "scalar_tensor", "arange", "full"):
        return Family.POINTWISE
    return Family.OTHER


@dataclass
class Group:
    """Operators fused into one kernel: `module` names the submodule of `Partition.fused` that holds its FX
    subgraph (`subgraph`, its reference); `kernel` is the generated kernel's name."""

    kernel: str
    family: Family
    module: str
    subgraph: Any
    ops: list[str]


@dataclass
class Uncovered:
    """A compute node left to PyTorch: its name, operator, family and why no template took it."""

    node: str
    op: str
    family: Family
    reason: str

    def line(self) -> str:
        return f"not covered: {self.family} ({self.op}): {self.reason}"


@dataclass
class Partition:
    """The captured graph with every supported group fused into a submodule (`fused`), the groups in execution
    order, and the compute nodes no template covers."""

    capture: Capture
    fused: Any
    groups: list[Group] = field(default_factory=list)
    uncovered: list[Uncovered] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        return not self.uncovered


#: Families with a template today, and why the others are not covered yet (the issue that builds each).
NOT_BUILT: dict[Family, str] = {
    Family.OTHER: "no kernel family for this operator",
}


#: Layout operators that are strided views in PyTorch: they move data only where a consumer needs it contiguous.
_STRIDED_VIEWS = frozenset({"permute", "transpose", "t"})


def metadata_only(node: Any) -> bool:
    """Whether layout node `node` (a permute or transpose) computes nothing in the solution: every value that leaves
    the chain of views and layout views it starts — read by a compute node, or returned — is contiguous, so PyTorch
    runs it as a strided view and no kernel needs a copy (a permute that moves only dimensions of extent 1, or two
    that undo each other around views, as an ``einsum``'s decomposition makes)."""
    import torch

    if node.op != "call_function" or op_name(node) not in _STRIDED_VIEWS:
        return False
    seen: set[Any] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for user in n.users:
            through = user.op == "call_function" and (classify(user) is Family.VIEW or op_name(user) in _STRIDED_VIEWS)
            if through:
                stack.append(user)
                continue
            value = n.meta.get("val") if hasattr(n, "meta") else None
            if not isinstance(value, torch.Tensor) or not value.is_contiguous():
                return False
    return True


def propose(
    graph_module: Any, supported: Callable[[Any], bool], *, vertical_only: bool = False
) -> list[list[Any]] | None:
    """FX's capability-based partitioner over the nodes `supported` accepts: groups of connected nodes that create
    no cycle, each in graph order. It also merges groups side by side (nodes that share only inputs);
    `vertical_only` asks it not to (``skip_horizontal_fusion``), which torch 2.13's partitioner has and 2.11's not:
    None on an older torch (the H200 machine's 2.11), where the caller does without."""
    import inspect

    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class _Supported(OperatorSupportBase):  # type: ignore[misc]
        def is_node_supported(self, submodules: Any, node: Any) -> bool:
            return supported(node)

    options: dict[str, Any] = {"allows_single_node_partition": True}
    if vertical_only:
        if "skip_horizontal_fusion" not in inspect.signature(CapabilityBasedPartitioner.__init__).parameters:
            return None
        options["skip_horizontal_fusion"] = True
    found = CapabilityBasedPartitioner(graph_module, _Supported(), **options).propose_partitions()
    return [list(p.nodes) for p in found]


def _bound_constant(node: Any, template: Any, scalar_uses: dict[str, list[tuple[str, int]]]) -> str | None:
    """Why `template` may not take `node`: a constant of it is a forward argument's value (the capture bound it,
    `argus.frontend.capture`), and the template writes its constants into the kernel (`Template.takes_scalars`
    false) — the solution would be right at the captured value only. None otherwise."""
    if template.takes_scalars:
        return None
    args = sorted(arg for arg, uses in scalar_uses.items() if any(name == node.name for name, _ in uses))
    if not args:
        return None
    return (
        f"a constant of it is the forward's argument {', '.join(args)}, which this template would write into its "
        "kernel as the captured value"
    )


def partition(capture: Capture, templates: dict[Family, Any] | None = None) -> Partition:
    """Partition `capture`'s graph (see the module docstring). `templates`: family -> its
    `argus.frontend.families.base.Template` (default: `argus.frontend.families.TEMPLATES`).

    Each family's nodes are proposed separately, so no kernel mixes families: a fusing family's connected nodes by
    FX's capability-based partitioner (which never merges nodes whose path leaves the group, so no two groups form
    a cycle), every other family's nodes one per group. All proposals are fused into submodules at once."""
    from torch.fx.passes.infra.partitioner import Partition as Proposal
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    if templates is None:
        from argus.frontend.families import TEMPLATES

        templates = TEMPLATES
    reasons: dict[str, str] = {}
    graph_module = copy.deepcopy(capture.graph_module)
    supported: dict[Family, list[Any]] = {}
    for node in graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        family = classify(node)
        template = templates.get(family)
        if template is None:
            continue
        why = template.unsupported(node) or _bound_constant(node, template, capture.scalar_uses)
        if why is not None:
            reasons[node.name] = why
        else:
            supported.setdefault(family, []).append(node)

    # a non-fusing template's group takes nodes of other families in with it (the matmul template's operand
    # transposes and fused epilogue): those are proposed with it, and by no other family
    bound = frozenset(node for uses in capture.scalar_uses.values() for node, _ in uses)
    # in a fixed order, the reduction's prologue last (a GEMM's epilogue first): a node one group takes in is one
    # the next may not take (passed as bound, like a constant a forward argument gives)
    absorbed: dict[Any, list[Any]] = {}
    taken: set[Any] = set()
    order = sorted(supported, key=lambda f: f is Family.REDUCTION)
    for family in order:
        if not templates[family].fuses and templates[family].absorbs is not None:
            for n in supported[family]:
                found = templates[family].absorbs(n, bound | {t.name for t in taken})
                absorbed[n] = [a for a in found if a not in taken]
                taken.update(absorbed[n])
    supported = {family: [n for n in nodes if n not in taken] for family, nodes in supported.items()}
    # a fusing template's nodes take nodes of other families into their groups too (the pointwise template: the
    # views of an arange it computes as coordinates): proposed with the family's own nodes to the partitioner
    joining: dict[Family, list[Any]] = {}
    for family, nodes in supported.items():
        if templates[family].fuses and templates[family].absorbs is not None:
            for n in nodes:
                found = templates[family].absorbs(n, bound | {t.name for t in taken})
                joining.setdefault(family, []).extend(a for a in found if a not in taken)
            taken.update(joining.get(family, []))

    proposals: list[Any] = []
    owners: dict[str, Family] = {}  # a node that took others in -> its family (the group's, whatever it took)
    for family, nodes in supported.items():
        if templates[family].fuses:
            check = templates[family].group_unsupported or (lambda group: None)

            def named(names: set[str]) -> Callable[[Any], bool]:
                return lambda candidate: candidate.op == "call_function" and candidate.name in names

            for group in propose(graph_module, named({n.name for n in [*nodes, *joining.get(family, [])]})) or []:
                why = check(group)
                if why is None:
                    proposals.append(Proposal(id=len(proposals), nodes=group))
                    continue
                # a group the template refuses as a whole (chains merged side by side whose outputs differ in
                # shape, say): its chains, connected nodes only, where the template takes them; else each node its
                # own kernel where the template takes it alone, the others uncovered with the group's reason
                chains = (
                    propose(graph_module, named({n.name for n in group}), vertical_only=True)
                    if len(group) > 1
                    else None
                )
                for chain in chains or [group]:
                    if len(chain) > 1 and len(chain) < len(group) and check(chain) is None:
                        proposals.append(Proposal(id=len(proposals), nodes=chain))
                        continue
                    for node in chain:
                        if len(group) > 1 and check([node]) is None:
                            proposals.append(Proposal(id=len(proposals), nodes=[node]))
                        else:
                            reasons[node.name] = why
        else:
            # a node with several results (max_pool2d_with_indices) takes the getitems that pick them: its kernel
            # makes the tensors they read, and its subgraph returns those tensors
            proposals += [
                Proposal(
                    id=len(proposals) + i,
                    nodes=[*absorbed.get(n, []), n, *(u for u in n.users if op_name(u) == "getitem")],
                )
                for i, n in enumerate(nodes)
            ]
            owners.update({n.name: family for n in nodes if absorbed.get(n)})
    fused = fuse_by_partitions(graph_module, [p.nodes for p in proposals], prefix="fused_")
    out = Partition(capture, fused)
    submodules = dict(fused.named_children())
    for node in fused.graph.nodes:
        if node.op == "call_module" and node.target in submodules:
            sub = submodules[node.target]
            calls = [n for n in sub.graph.nodes if n.op == "call_function"]
            # the group's family is its computing node's: what a template absorbs are views and layouts (operand
            # transposes, a scan's flips), pointwise nodes (an epilogue) or nodes no template takes alone (an
            # exclusive scan's zeros), so the first node of another family with a template names it; a node that
            # took in one of another family with a template (an NLL loss its log_softmax) names its group
            families = [f for f in map(classify, calls) if f not in (Family.VIEW, Family.LAYOUT) and f in templates]
            family = next((f for f in families if f is not Family.POINTWISE), families[0] if families else None)
            family = next((owners[n.name] for n in calls if n.name in owners), None) or family or classify(calls[0])
            out.groups.append(
                Group(
                    f"{family.name.lower()}_{len(out.groups)}",
                    family,
                    node.target,
                    sub,
                    [op_name(n) for n in calls if op_name(n) != "getitem"],
                )
            )
        elif node.op == "call_function":
            family = classify(node)
            if family is Family.VIEW or op_name(node) == "getitem" or metadata_only(node):
                continue  # metadata: no compute
            reason = reasons.get(node.name) or NOT_BUILT.get(family, "no template for this family")
            out.uncovered.append(Uncovered(node.name, op_label(node), family, reason))
    return out
