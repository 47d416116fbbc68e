"""The convolution family: forward and transposed convolution (1-d, 2-d, 3-d; any stride, padding, dilation and
groups, a transposed one's output padding; with or without a bias), as a call of argus's convolution library
(`argus.kernels.conv.LibraryConv`).

torch.export with core ATen decompositions presents every ``nn.Conv1d/2d/3d``, ``nn.ConvTranspose1d/2d/3d`` and
``F.conv*d`` as ``aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
groups)`` on the input's own rank (a 1-d convolution on (N, C, L), no views around it); a padding mode other than
zeros arrives as an explicit pad before a convolution with no padding (the pad is another family's node). As with
the matmul template, the group's kernel is not one DSL kernel written for the group: it is the library's plan for
the captured convolution (`argus.kernels.conv.conv_plan`): the direct depthwise kernel for one input channel per
group, the implicit-GEMM kernel where it applies, else for a transposed convolution the weight's permutation
(and with a stride or output padding the input with zeros inserted), the im2col gather, the GEMM library's kernels
(the split passes for f32, the batched GEMM over the groups, a split-K reduction where it splits), and the output
pass that writes NCHW and adds the bias. The pipeline verifies every kernel of that plan and checks the call on the
CPU interpreter against the group's FX subgraph.

**Epilogues** (`absorbs`, with `FUSE_EPILOGUES`): the elementwise operators after a convolution whose plan runs on
the implicit kernel become its fused epilogue (`argus.kernels.conv`'s `conv_plan(..., epilogue=)`), grown as the
matmul family grows a product's (`argus.frontend.families.chains`); their tensor operands must hold one value per
output channel ((F, 1, ...), (1, F, 1, ...): a per-channel bias or scale). On by default since it was judged on a
GPU; a chain of more than `EPILOGUE_TRANSCENDENTALS` transcendental operators stays a kernel of its own.

Refused (`unsupported`), each with its reason: operands other than float32/float16/bfloat16 of one dtype, and
what the library refuses at the captured sizes (`argus.kernels.conv.ConvError`): a column matrix of one image over
the library's memory budget, a window whose input span does not fit in shared memory, a transposed convolution
whose padding crops the input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.frontend.families import chains
from argus.frontend.families.base import (
    DTYPES,
    KernelSource,
    aten_name,
    dtype_name,
    int_list,
    node_value,
    reference_source,
    three,
)
from argus.kernels.conv import Conv, ConvError, conv_plan
from argus.kernels.epilogue import Epilogue
from argus.kernels.matmul import GemmError

#: Whether the elementwise chain after a convolution becomes its fused epilogue where its plan runs on the implicit
#: kernel (`absorbs`). On since judged on an H200 (session 25, `benchmarks/results/2026-11-30-conv-epilogue/`): the
#: 21 level-2 problems that take one all correct, 1.04-1.20x faster than the chain as a kernel of its own on 15,
#: within 2 % on 5; one slower (below).
FUSE_EPILOGUES = True
#: The most transcendental operators (`TRANSCENDENTAL`) a fused epilogue takes; a longer chain stays a pointwise
#: kernel of its own. The epilogue runs in the consumer warpgroups after the K loop, not overlapped with it, while
#: a pointwise kernel runs the same math at memory speed on every SM: level 2's 4 (two Mish: six) ran 17 % slower
#: fused (7.67 -> 9.30 ms); 47 (Mish, tanh: four) 4 % faster. The crossover between four and six is not measured.
EPILOGUE_TRANSCENDENTALS = 4
#: The operators counted against `EPILOGUE_TRANSCENDENTALS` (ATen names; Mish arrives as exp, log1p, tanh).
TRANSCENDENTAL = frozenset(
    "exp exp2 expm1 log log1p log2 log10 tanh sigmoid erf erfc gelu silu mish softplus elu selu celu sin cos tan "
    "asin acos atan sinh cosh asinh acosh atanh pow rsqrt sqrt".split()
)

#: aten.convolution's arguments after input, weight and bias, with their defaults.
SCHEMA = (
    ("stride", [1]),
    ("padding", [0]),
    ("dilation", [1]),
    ("transposed", False),
    ("output_padding", [0]),
    ("groups", 1),
)


def read_conv(node: Any) -> Conv | str:
    """`node` (an ``aten.convolution``) as the library's `Conv`, or why the template cannot take it."""
    import torch

    name = aten_name(node)
    if name != "convolution":
        return f"{name or node.target}: the convolution template takes aten.convolution"
    args = list(node.args)
    if len(args) < 2:
        return "convolution: fewer than two operands"
    values = {k: (args[i + 3] if i + 3 < len(args) else node.kwargs.get(k, d)) for i, (k, d) in enumerate(SCHEMA)}
    transposed = bool(values["transposed"])
    x, w, out = node_value(args[0]), node_value(args[1]), node_value(node)
    has_bias = len(args) > 2 and args[2] is not None
    b = node_value(args[2]) if has_bias else None
    if not all(isinstance(t, torch.Tensor) for t in (x, w, out, *([b] if has_bias else []))):
        return "convolution: the capture recorded no tensor for an operand"
    rank = x.dim() - 2
    if rank not in (1, 2, 3) or w.dim() != x.dim():
        return f"convolution of a {x.dim()}-d input by a {w.dim()}-d weight (1-d, 2-d and 3-d convolutions are built)"
    dtypes = {dtype_name(t) for t in (x, w, out, *([b] if b is not None else []))}
    if len(dtypes) != 1 or next(iter(dtypes)) not in DTYPES:
        return f"operands in {', '.join(sorted(dtypes))} (the template takes one dtype: float32, float16 or bfloat16)"
    names = ("stride", "padding", "dilation", "output_padding")
    parts = {k: int_list(values[k], rank, k, "convolution") for k in names}
    for part in parts.values():
        if isinstance(part, str):
            return f"convolution: {part}"
    groups = values["groups"]
    if not isinstance(groups, int) or groups < 1:
        return f"convolution: groups {groups!r} is not a positive int"
    if 0 in (*x.shape, *w.shape):
        return "an empty operand"
    try:
        conv = Conv(
            rank=rank,
            batch=int(x.shape[0]),
            channels=int(x.shape[1]),
            filters=int(w.shape[1]) * groups if transposed else int(w.shape[0]),
            groups=groups,
            size=three(tuple(int(d) for d in x.shape[2:]), 1),
            kernel=three(tuple(int(d) for d in w.shape[2:]), 1),
            stride=three(parts["stride"], 1),  # type: ignore[arg-type]
            padding=three(parts["padding"], 0),  # type: ignore[arg-type]
            dilation=three(parts["dilation"], 1),  # type: ignore[arg-type]
            bias=b is not None,
            dtype=DTYPES[dtype_name(x)],
            transposed=transposed,
            output_padding=three(parts["output_padding"], 0) if transposed else (0, 0, 0),  # type: ignore[arg-type]
        )
        if (int(w.shape[0]) if transposed else int(w.shape[1]) * groups) != conv.channels:
            return f"a weight of {tuple(w.shape)} for {conv.channels} channels in {groups} groups"
        if tuple(int(d) for d in out.shape[2:]) != conv.out[3 - rank :]:
            return f"the captured output {tuple(out.shape)} is not the convolution's {conv.out[3 - rank :]}"
        conv_plan(conv)
    except (ConvError, GemmError) as e:
        return f"convolution: {e}"
    return conv


def _channels(out: tuple[int, ...]) -> chains.Kind:
    """The epilogue operand kind of a tensor read with a convolution's output (N, F, *spatial): ``"columns"`` for
    one value per output channel ((F, 1, ...) or (1, F, 1, ...), right-aligned), else None."""
    filters, spatial = out[1], len(out) - 2

    def kind(shape: tuple[int, ...]) -> str | None:
        trimmed = shape[1:] if len(shape) == len(out) and shape[0] == 1 else shape
        return "columns" if trimmed == (filters, *(1,) * spatial) else None

    return kind


def absorbs(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The elementwise nodes after convolution `node` that its group takes in as its fused epilogue (see the module
    docstring): none unless `FUSE_EPILOGUES`, the convolution's plan can apply one, and the chain has at most
    `EPILOGUE_TRANSCENDENTALS` transcendental operators."""
    if not FUSE_EPILOGUES:
        return []
    conv = read_conv(node)
    if isinstance(conv, str):
        return []
    try:
        conv_plan(conv, epilogue=Epilogue(("y = acc",), "y"))
    except (ConvError, GemmError):
        return []
    chain = chains.chain_nodes(node, bound, _channels(tuple(int(d) for d in node_value(node).shape)))
    if sum(aten_name(n) in TRANSCENDENTAL for n in chain) > EPILOGUE_TRANSCENDENTALS:
        return []  # slower fused than as a pointwise kernel (see EPILOGUE_TRANSCENDENTALS)
    return chain


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    found = read_conv(node)
    return found if isinstance(found, str) else None


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The library call of a convolution group (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    (node,) = [n for n in nodes if n.op == "call_function" and aten_name(n) == "convolution"]
    (result,) = [n for n in nodes if n.op == "output"][0].all_input_nodes
    conv = read_conv(node)
    assert not isinstance(conv, str)  # unsupported() was asked first
    chain = [n for n in nodes if n.op == "call_function" and n is not node]
    epilogue = None
    if chain:  # the elementwise chain `absorbs` took: the fused epilogue, its operands by position
        out = tuple(int(d) for d in node_value(node).shape)
        epilogue = chains.epilogue_of(node, chain, placeholders, _channels(out))
    operands = list(node.args[:2]) + ([node.args[2]] if conv.bias else [])
    order = tuple(placeholders.index(o) for o in operands)
    x, w = node_value(node.args[0]), node_value(node.args[1])
    dt = conv.dtype
    fields = ", ".join(
        f"{k}={getattr(conv, k)!r}"
        for k in (
            "rank", "batch", "channels", "filters", "groups", "size", "kernel", "stride", "padding", "dilation",
            "bias", "dtype", "transposed", *(("output_padding",) if conv.upsampled else ()),
        )
    )  # fmt: skip
    kind = "transposed convolution" if conv.transposed else "convolution"
    ops = " -> ".join(["convolution", *(aten_name(n) for n in chain if aten_name(n))])
    plan = conv_plan(conv, epilogue=epilogue[0] if epilogue else None)
    title = (
        f"{conv.rank}-d {kind} of {tuple(x.shape)} by {tuple(w.shape)} ({dt}, groups={conv.groups}, "
        f"{'with' if conv.bias else 'no'} bias{', a fused epilogue' if epilogue else ''}): {plan.describe()}"
    )
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({ops}).")
    imports = "from argus.kernels.conv import Conv, LibraryConv  # noqa: E402\n"
    call = [f"{name} = LibraryConv({name!r}, Conv({fields}), order={order!r})"]
    if epilogue is not None:
        imports += chains.EPILOGUE_IMPORT
        head = [f"{name} = LibraryConv(", f"    {name!r},", f"    Conv({fields}),", f"    order={order!r},"]
        call = [*head, *chains.epilogue_arguments(*epilogue), ")"]
    kernel = "\n".join([f"# {title}", *call])
    shapes = {p.name: tuple(int(d) for d in node_value(p).shape) for p in placeholders}
    shapes[result.name] = tuple(int(d) for d in node_value(result).shape)
    return KernelSource(
        name,
        ref,
        imports + "\n" + kernel + "\n",
        [p.name for p in placeholders],
        [result.name],
        {},
        math.prod(shapes[result.name]),
        {**{p.name: dt for p in placeholders}, result.name: dt},
        shapes,
        library=True,
    )
