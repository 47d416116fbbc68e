"""The pointwise family: a chain of elementwise ATen operators as one DSL kernel over the flattened elements.

The template (`kernel_source`) is `argus.kernels.elementwise`'s shape: a 1-d grid of ``BLOCK``-element tiles over
``N`` elements (the tensors flattened), 128 threads, every input tile copied into a fragment, one line of DSL math
per operator, every output copied back (the last tile masked). ``BLOCK`` is the kernel's declared ``tile_shape``
policy. The kernel's reference is the group's FX subgraph, written out as the ATen calls it holds
(`reference_source`), so ``argus interpret FILE.py:fused_0`` checks the kernel against exactly what was captured.

What a node must be for the template to take it (`unsupported`, which the partitioner asks): an operator of
`RULES` with its arguments in range; every tensor operand of the output's shape (no broadcasting yet); float32,
float16 or bfloat16 values (a comparison's boolean result only inside the group, as 1.0 or 0.0).
Scalars are literals, or the run-time value of a forward argument when `argus.frontend.capture` bound the constant
to one (then a float parameter of the kernel, passed at each call).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from argus.frontend.families.base import (
    DTYPES,
    RESERVED,
    KernelSource,
    aten_call,
    dtype_name,
    format_arg,
    node_value,
    reference_source,
    safe_name,
)


@dataclass(frozen=True)
class Operand:
    """An operator's argument as DSL source text: a fragment's name, a literal, or a kernel parameter."""

    text: str
    fragment: bool


def _lit(value: Any) -> str:
    if isinstance(value, bool):
        return "1.0" if value else "0.0"
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    return repr(value)


def _max(a: Operand, b: Operand) -> str:
    return f"T.maximum({a.text}, {b.text})" if a.fragment else f"T.maximum({b.text}, {a.text})"


def _min(a: Operand, b: Operand) -> str:
    return f"T.minimum({a.text}, {b.text})" if a.fragment else f"T.minimum({b.text}, {a.text})"


def _clamp(x: Operand, lo: Any, hi: Any) -> str:
    text = x.text
    if lo is not None:
        text = f"T.maximum({text}, {_lit(lo) if not isinstance(lo, Operand) else lo.text})"
    if hi is not None:
        text = f"T.minimum({text}, {_lit(hi) if not isinstance(hi, Operand) else hi.text})"
    return text


def _pow(x: Operand, e: Operand) -> str:
    if e.text in ("2", "2.0"):
        return f"{x.text} * {x.text}"
    if e.text in ("3", "3.0"):
        return f"{x.text} * {x.text} * {x.text}"
    if e.text in ("1", "1.0"):
        return f"{x.text} * 1.0"
    if e.text == "0.5":
        return f"T.sqrt({x.text})"
    return f"{x.text} ** {e.text}"


def _gelu(x: Operand, approximate: str) -> str:
    v = x.text
    if approximate == "tanh":
        return f"0.5 * {v} * (1.0 + T.tanh({math.sqrt(2.0 / math.pi)!r} * ({v} + 0.044715 * {v} * {v} * {v})))"
    return f"0.5 * {v} * (1.0 + T.erf({v} * {math.sqrt(0.5)!r}))"


def _elu(x: Operand, alpha: Any, scale: Any, input_scale: Any) -> str:
    v = x.text
    scaled = v if float(input_scale.text) == 1.0 else f"{v} * {input_scale.text}"
    negative = f"T.expm1({scaled}) * {alpha.text}"
    positive = v
    if float(scale.text) != 1.0:
        negative = f"{negative} * {scale.text}"
        positive = f"{v} * {scale.text}"
    return f"T.where({v} > 0.0, {positive}, {negative})"


def _softplus(x: Operand, beta: Operand, threshold: Operand) -> str:
    v = x.text
    scaled = v if float(beta.text) == 1.0 else f"({v} * {beta.text})"
    soft = f"T.log1p(T.exp({scaled}))" if float(beta.text) == 1.0 else f"T.log1p(T.exp({scaled})) / {beta.text}"
    return f"T.where({scaled} > {threshold.text}, {v}, {soft})"


def _add(a: Operand, b: Operand, alpha: Operand) -> str:
    right = b.text if alpha.text in ("1", "1.0") else f"{b.text} * {alpha.text}"
    return f"{a.text} + {right}"


def _sub(a: Operand, b: Operand, alpha: Operand) -> str:
    right = b.text if alpha.text in ("1", "1.0") else f"({b.text} * {alpha.text})"
    return f"{a.text} - {right}"


def _where(c: Operand, a: Operand, b: Operand) -> str:
    if not a.fragment and not b.fragment:
        return f"T.where({c.text}, {c.text} * 0.0 + {a.text}, {b.text})"
    return f"T.where({c.text}, {a.text}, {b.text})"


#: operator name -> (argument names with defaults, the DSL text from the operands). A default of `REQUIRED` is a
#: positional argument every call gives. The order of the names is the ATen schema's.
REQUIRED = object()
Rule = tuple[tuple[tuple[str, Any], ...], Callable[..., str]]
X: tuple[tuple[str, Any], ...] = (("self", REQUIRED),)
XY: tuple[tuple[str, Any], ...] = (("self", REQUIRED), ("other", REQUIRED))
RULES: dict[str, Rule] = {
    "add": (XY + (("alpha", 1),), _add),
    "sub": (XY + (("alpha", 1),), _sub),
    "rsub": (XY + (("alpha", 1),), lambda a, b, alpha: _sub(b, a, alpha)),
    "mul": (XY, lambda a, b: f"{a.text} * {b.text}"),
    "div": (XY, lambda a, b: f"{a.text} / {b.text}"),
    "neg": (X, lambda x: f"-{x.text}"),
    "abs": (X, lambda x: f"T.abs({x.text})"),
    "relu": (X, lambda x: f"T.maximum({x.text}, 0.0)"),
    "sigmoid": (X, lambda x: f"T.sigmoid({x.text})"),
    "tanh": (X, lambda x: f"T.tanh({x.text})"),
    "exp": (X, lambda x: f"T.exp({x.text})"),
    "exp2": (X, lambda x: f"T.exp2({x.text})"),
    "expm1": (X, lambda x: f"T.expm1({x.text})"),
    "log": (X, lambda x: f"T.log({x.text})"),
    "log2": (X, lambda x: f"T.log2({x.text})"),
    "log1p": (X, lambda x: f"T.log1p({x.text})"),
    "sqrt": (X, lambda x: f"T.sqrt({x.text})"),
    "rsqrt": (X, lambda x: f"T.rsqrt({x.text})"),
    "reciprocal": (X, lambda x: f"T.rcp({x.text})"),
    "erf": (X, lambda x: f"T.erf({x.text})"),
    "sin": (X, lambda x: f"T.sin({x.text})"),
    "cos": (X, lambda x: f"T.cos({x.text})"),
    "floor": (X, lambda x: f"T.floor({x.text})"),
    "ceil": (X, lambda x: f"T.ceil({x.text})"),
    "sign": (X, lambda x: f"({x.text} > 0.0) - ({x.text} < 0.0)"),
    "pow": ((("self", REQUIRED), ("exponent", REQUIRED)), _pow),
    "maximum": (XY, _max),
    "minimum": (XY, _min),
    "clamp": ((("self", REQUIRED), ("min", None), ("max", None)), _clamp),
    "clamp_min": ((("self", REQUIRED), ("min", REQUIRED)), lambda x, lo: _clamp(x, lo, None)),
    "clamp_max": ((("self", REQUIRED), ("max", REQUIRED)), lambda x, hi: _clamp(x, None, hi)),
    "hardtanh": ((("self", REQUIRED), ("min_val", -1.0), ("max_val", 1.0)), _clamp),
    "leaky_relu": (
        (("self", REQUIRED), ("negative_slope", 0.01)),
        lambda x, slope: f"T.where({x.text} > 0.0, {x.text}, {x.text} * {slope.text})",
    ),
    "elu": ((("self", REQUIRED), ("alpha", 1.0), ("scale", 1.0), ("input_scale", 1.0)), _elu),
    "gelu": ((("self", REQUIRED), ("approximate", "none")), lambda x, a: _gelu(x, a.text.strip("'\""))),
    "silu": (X, lambda x: f"{x.text} * T.sigmoid({x.text})"),
    "softplus": ((("self", REQUIRED), ("beta", 1.0), ("threshold", 20.0)), _softplus),
    "hardsigmoid": (X, lambda x: f"T.minimum(T.maximum({x.text} / 6.0 + 0.5, 0.0), 1.0)"),
    "hardswish": (X, lambda x: f"{x.text} * T.minimum(T.maximum({x.text} / 6.0 + 0.5, 0.0), 1.0)"),
    "where": ((("condition", REQUIRED), ("self", REQUIRED), ("other", REQUIRED)), _where),
    "gt": (XY, lambda a, b: f"({a.text} > {b.text})"),
    "ge": (XY, lambda a, b: f"({a.text} >= {b.text})"),
    "lt": (XY, lambda a, b: f"({a.text} < {b.text})"),
    "le": (XY, lambda a, b: f"({a.text} <= {b.text})"),
    "eq": (XY, lambda a, b: f"T.eq({a.text}, {b.text})"),
    "ne": (XY, lambda a, b: f"T.ne({a.text}, {b.text})"),
    "clone": (X, lambda x: x.text),
    "_to_copy": (X, lambda x: x.text),
}

#: Comparisons: their boolean result stays inside the kernel (1.0 or 0.0 in its operand's dtype).
COMPARISONS = frozenset({"gt", "ge", "lt", "le", "eq", "ne"})


def _op(node: Any) -> str:
    packet = getattr(node.target, "_overloadpacket", None)
    return str(packet.__name__) if packet is not None else ""


def _arguments(node: Any, params: tuple[tuple[str, Any], ...]) -> list[Any] | str:
    """The node's arguments in schema order with defaults filled in, or why they cannot be read."""
    args = list(node.args)
    if len(args) > len(params):
        return f"{len(args)} positional arguments, the template reads {len(params)}"
    out = []
    for i, (name, default) in enumerate(params):
        if i < len(args):
            out.append(args[i])
        elif name in node.kwargs:
            out.append(node.kwargs[name])
        elif default is REQUIRED:
            return f"argument {name} missing"
        else:
            out.append(default)
    extra = set(node.kwargs) - {n for n, _ in params} - {"dtype", "memory_format", "layout", "device"}
    if extra:
        return f"keyword argument(s) {', '.join(sorted(extra))} not supported"
    return out


def unsupported(node: Any) -> str | None:
    """None when the pointwise template can take `node`, else why not (see the module docstring)."""
    import torch
    import torch.fx

    name = _op(node)
    if name not in RULES:
        return f"the pointwise template has no rule for {node.target}"
    rule_params, _ = RULES[name]
    args = _arguments(node, rule_params)
    if isinstance(args, str):
        return args
    out = node_value(node)
    if not isinstance(out, torch.Tensor):
        return "its result is not a tensor"
    if name == "div" and node.kwargs.get("rounding_mode") is not None:
        return "division with a rounding mode"
    if name == "gelu" and args[1] not in ("none", "tanh"):
        return f"gelu approximate={args[1]!r}"
    if name in COMPARISONS:
        if not all(u.op == "call_function" and _op(u) in RULES for u in node.users):
            return "a comparison's boolean result leaves the kernel (it is kept as 1.0/0.0 inside it)"
    elif dtype_name(out) not in DTYPES:
        return f"dtype {out.dtype} (the template takes float32, float16, bfloat16)"
    if name == "_to_copy" and any(k in node.kwargs for k in ("dtype",)) and node.kwargs["dtype"] != out.dtype:
        return "a dtype conversion"
    for i, a in enumerate(args):
        if isinstance(a, torch.fx.Node):
            val = node_value(a)
            if not isinstance(val, torch.Tensor):
                return f"operand {i} is not a tensor"
            if tuple(val.shape) != tuple(out.shape):
                return f"operand {i} of shape {tuple(val.shape)} broadcasts to {tuple(out.shape)} (not supported yet)"
            compared = a.op == "call_function" and _op(a) in COMPARISONS
            if val.dtype == torch.bool and not compared:
                return f"operand {i} is a boolean tensor not computed by a comparison in the same kernel"
            if val.dtype != torch.bool and dtype_name(val) not in DTYPES:
                return f"operand {i} has dtype {val.dtype}"
        elif not (a is None or isinstance(a, bool | int | float | str)):
            return f"argument {i} is a {type(a).__name__}"
    return None


# ---------------------------------------------------------------------------------------------------------------
# source text


#: Names the generated kernel uses itself; a graph name equal to one of these gets a suffix.
def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a pointwise group (see the module docstring). `scalar_uses`: (node name, argument index)
    -> the forward argument whose run-time value that constant is; `scalar_values`: its captured value."""
    import torch
    import torch.fx

    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    output = next(n for n in nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
    shape = tuple(node_value(results[0]).shape)
    numel = math.prod(shape)
    taken: set[str] = set()
    frag: dict[str, str] = {}
    dtypes: dict[str, str] = {}
    in_params: list[str] = []
    scalars: dict[str, str] = {}
    for node in placeholders:
        dtypes[node.name] = DTYPES[dtype_name(node_value(node))]
    single_in = len(placeholders) == 1
    for i, node in enumerate(placeholders):
        upper = node.name.upper()
        param = upper if upper.isidentifier() and upper not in RESERVED and upper != node.name else f"X{i}"
        if single_in and param == f"X{i}":
            param = "X"
        in_params.append(safe_name(param, taken))
    out_params = [safe_name("OUT" if len(results) == 1 else f"OUT{i}", taken) for i in range(len(results))]
    for node in placeholders:
        frag[node.name] = safe_name(node.name.lower() if node.name.lower() != node.name else node.name, taken)
    for (_, _), arg in scalar_uses.items():
        if arg not in scalars.values():
            scalars[safe_name(arg, taken)] = arg

    body: list[str] = []
    ops: list[str] = []
    for node in nodes:
        if node.op != "call_function":
            continue
        op = node.target._overloadpacket.__name__
        ops.append(op)
        params, render = RULES[op]
        values = _arguments(node, params)
        assert not isinstance(values, str)  # unsupported() was asked first
        operands = []
        for i, v in enumerate(values):
            if isinstance(v, torch.fx.Node):
                operands.append(Operand(frag[v.name], True))
            elif (node.name, i) in scalar_uses:
                param = next(p for p, a in scalars.items() if a == scalar_uses[(node.name, i)])
                operands.append(Operand(param, False))
            elif v is None:
                operands.append(None)  # type: ignore[arg-type]
            elif isinstance(v, str):
                operands.append(Operand(repr(v), False))
            else:
                operands.append(Operand(_lit(v), False))
        if op in ("clamp", "hardtanh"):
            text = render(operands[0], *(None if o is None else o for o in operands[1:]))
        else:
            text = render(*operands)
        var = safe_name(node.name, taken)
        val = node_value(node)
        # the DSL's result has the dtype of its first fragment operand; a node of another float dtype is converted
        first = next((o for o in operands if o is not None and o.fragment), None)
        have = next((dtypes[k] for k, f in frag.items() if first is not None and f == first.text), None)
        want = DTYPES.get(dtype_name(val))
        if want is not None and have is not None and want != have:
            text = f"T.cast({text}, T.{want})"
        dtypes[node.name] = want or have or "f32"
        frag[node.name] = var
        body.append(f"        {var} = {text}")

    in_dtypes = [dtypes[n.name] for n in placeholders]
    out_dtypes = [DTYPES[dtype_name(node_value(r))] for r in results]
    signature = [f'{p}: T.Tensor[("N",), T.{d}]' for p, d in zip(in_params, in_dtypes, strict=True)]
    signature += [f'{p}: T.Tensor[("N",), T.{d}]' for p, d in zip(out_params, out_dtypes, strict=True)]
    signature.append("BLOCK: int = 1024")
    signature += [f"{p}: float = {_lit(float(scalar_values[a]))}" for p, a in scalars.items()]
    chain = " -> ".join(ops)
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={{"N": {numel}}}, policies={{"tile_shape": "BLOCK"}})',
        f"def {name}(",
        *[f"    {s}," for s in signature],
        "):",
        f'    """{chain}, elementwise over the N elements of {shape} (flattened)."""',
        "    with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):",
    ]
    for node, param, dt in zip(placeholders, in_params, in_dtypes, strict=True):
        lines.append(f"        {frag[node.name]} = T.alloc_fragment((BLOCK,), T.{dt})")
        lines.append(f"        T.copy({param}.tile(bx, BLOCK), {frag[node.name]})  # the last tile is masked")
    lines += body
    for r, param in zip(results, out_params, strict=True):
        lines.append(f"        T.copy({frag[r.name]}, {param}.tile(bx, BLOCK))")
    reference_args = ", ".join(n.name for n in placeholders)
    ref = reference_source(
        f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({chain}) on {reference_args}."
    )
    if scalars:
        # the reference takes the scalar too: by default the captured value, as the kernel's parameter does
        head, _, rest = ref.partition("):\n")
        defaults = ", ".join(f"{a}={_lit(scalar_values[a])}" for a in scalars.values())
        ref = f"{head}, {defaults}):\n{rest}"
        for (node_name, index), arg in scalar_uses.items():
            ref = _rebind(ref, subgraph, node_name, index, arg)
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [n.name for n in placeholders],
        [r.name for r in results],
        scalars,
        numel,
        dtypes,
    )


def _rebind(source: str, subgraph: Any, node_name: str, index: int, arg: str) -> str:
    """The reference's call of `node_name` with argument `index` replaced by the scalar argument `arg`."""
    node = next((n for n in subgraph.graph.nodes if n.name == node_name), None)
    if node is None:
        return source
    before = f"    {node.name} = {aten_call(node)}"
    args = list(node.args)
    args[index] = _Name(arg)
    parts = [a.name if isinstance(a, _Name) else format_arg(a) for a in args]
    parts += [f"{k}={format_arg(v)}" for k, v in node.kwargs.items()]
    fn = aten_call(node).split("(", 1)[0]
    return source.replace(before, f"    {node.name} = {fn}({', '.join(parts)})")


@dataclass(frozen=True)
class _Name:
    name: str
