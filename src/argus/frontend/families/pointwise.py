"""The pointwise family: a chain of elementwise ATen operators as one DSL kernel, its tensor operands broadcast to
its output as torch broadcasts them.

`plan` collapses the output's shape to its canonical form (size-1 dimensions dropped, neighbours merged where every
value of the group varies or repeats alike). When every value is the whole output, the kernel (`kernel_source`) is
`argus.kernels.elementwise`'s shape: a 1-d grid of ``BLOCK``-element tiles over ``N`` elements (the tensors
flattened), 128 threads, every input tile copied into a fragment, one line of DSL math per operator, every output
copied back (the last tile masked); ``BLOCK`` is the declared ``tile_shape`` policy. Otherwise (`_tiled_kernel`) a
2-d or 3-d grid of ``(BM, BN)`` tiles of the canonical rows and (contiguous) columns, a third dimension walked by
the grid; each operand is loaded as a whole tile, a per-row or a per-column fragment (``T.alloc_reduced``), math on
per-row or per-column values stays at that size, and such a value is repeated over the tile where it meets a whole
tile; ``("BM", "BN")`` is the ``tile_shape`` policy. The kernel's reference is the group's FX subgraph, written out
as the ATen calls it holds (`reference_source`), so ``argus interpret FILE.py:fused_0`` checks the kernel against
exactly what was captured.

What a node must be for the template to take it (`unsupported`, which the partitioner asks): an operator of
`RULES` with its arguments in range; tensor operands that broadcast to its output in a form `plan` takes; float32,
float16 or bfloat16 values (a ``scalar_tensor`` constant only inside the group; a comparison's boolean result is
1.0/0.0 inside it and, where it leaves the group, a bool tensor the kernel stores; a boolean tensor from outside
the group — a mask the model is given, another kernel's comparison — is read as 1.0/0.0 into an f32 fragment);
operands of different float dtypes are converted to the node's dtype (torch's promotion) before it computes. The
partitioner also asks `group_unsupported` of each proposed group (one output shape, one plan for all its values).
Scalars are literals, or the run-time value of a forward argument when `argus.frontend.capture` bound the constant
to one (then a float parameter of the kernel, passed at each call).

Coordinates (`argus.frontend.families.coordinates`): an ``arange`` of constants, and the views of it between it and
the operators that read it (the group takes them in: `coordinate_views`, the template's ``absorbs``), are not read
from memory: each is computed where it is read from the elements' own coordinates (`_coordinate_lines`: ``T.index``
of a fragment of the tile's layout plus the tile's origin, split by the canonical extents in the flat kernel, the
block index along the grid's dimension), as ``start + step * element``, ``element`` the dot product of the
coordinates with the view's strides. `plan` keeps two dimensions apart where a coordinate's index does not step
through them as through one (a permuted arange). Integer values of the group (the aranges', and ``sub``, ``add``,
``mul``, comparisons, ``where``, ... of them: a triangular mask) are computed as ``i32`` within the bounds their
constants give (`coordinates.integer_range`); they never leave the kernel, and integer tensors from outside it
(integer inputs) are not taken. A float arange may be stored (a kernel of no input).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from argus.frontend.errors import FrontendError
from argus.frontend.families import coordinates
from argus.frontend.families.base import (
    DTYPES,
    INTEGER_DTYPES,
    RESERVED,
    KernelSource,
    aten_call,
    aten_name,
    dtype_name,
    format_arg,
    min_blocks,
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
        if math.isnan(value):
            return "float('nan')"
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
    "isnan": (X, lambda x: f"T.ne({x.text}, {x.text})"),
    "clone": (X, lambda x: x.text),
    "scalar_tensor": ((("s", REQUIRED),), lambda s: s.text),
    "_to_copy": (X, lambda x: x.text),
}

#: Comparisons: their boolean result is 1.0 or 0.0 in its operand's dtype inside the kernel, a bool tensor outside.
COMPARISONS = frozenset({"gt", "ge", "lt", "le", "eq", "ne", "isnan"})


def _out_dtype(node: Any) -> str:
    """The DSL dtype a group's result is stored as: a comparison's as a bool tensor (its fragment holds 1.0/0.0; the
    store converts nonzero to true), any other's as its own float dtype."""
    import torch

    value = node_value(node)
    return "boolean" if value.dtype == torch.bool else DTYPES[dtype_name(value)]


#: Bytes per element of each DSL dtype.
_DT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4}


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


def _is_literal(node: Any) -> bool:
    """A ``scalar_tensor`` node: a constant the kernel writes as a literal."""
    return getattr(node, "op", None) == "call_function" and aten_name(node) == "scalar_tensor"


def _itemsize(value: Any) -> int:
    """Bytes of an element of `value` in the kernel (an integer is an ``i32`` there)."""
    return 4 if coordinates.integer_dtype(value) else int(value.element_size())


def _kernel_dtype(value: Any) -> str | None:
    """The DSL dtype a value of the group is computed in: its float dtype, ``i32`` for an integer (exact within
    the bounds `coordinates.integer_range` proves), None for a boolean (the dtype of the operands it compares)."""
    if coordinates.integer_dtype(value):
        return "i32"
    return DTYPES.get(dtype_name(value))


def unsupported(node: Any) -> str | None:
    """None when the pointwise template can take `node`, else why not (see the module docstring). An integer value
    `node` makes or reads, and a view of an arange it reads, is computed in its kernel: every reader of it must be
    one the template takes (`coordinates.stays_inside`)."""
    import torch

    why = _unsupported_alone(node)
    if why is not None:
        return why
    for value in [node, *node.all_input_nodes]:
        val = node_value(value)
        inside = isinstance(val, torch.Tensor) and coordinates.integer_dtype(val) and value.op == "call_function"
        if inside and (value is node or not read_as_float(node, value)):  # (another kernel's integers: an input)
            why = coordinates.stays_inside(value, _unsupported_alone)
            if why is not None:
                return why if value is node else f"{value.name}: {why}"
    return None


def external_integer(value: Any) -> bool:
    """Whether graph value `value` is an integer tensor (`INTEGER_DTYPES`) the pointwise template does not compute: an
    input of the model, or another family's result (argmax's indices), whose values no bound is known for."""
    import torch

    val = node_value(value)
    if not isinstance(val, torch.Tensor) or dtype_name(val) not in INTEGER_DTYPES:
        return False
    if isinstance(coordinates.coordinate(value), coordinates.Coordinate):
        return False
    return isinstance(coordinates.integer_range(value), str)


def read_as_float(node: Any, operand: Any) -> bool:
    """Whether `node` reads `operand`, an integer tensor from outside its kernel (`external_integer`), as float32
    values: a conversion to float32 (``.float()``), or arithmetic whose result is float32 (torch converts the
    integers first). The kernel takes the tensor as it is and converts each element as it loads it (to nearest, as
    torch's ``.float()``: exact below 2**24). A result of
    another dtype (a 16-bit float: converting through float32 would round twice; an integer or a comparison) is not
    taken."""
    return dtype_name(node_value(node)) == "float32" and external_integer(operand)


def coordinate_views(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The views of aranges that the kernel of `node` (a node the template takes) takes in with it
    (`Template.absorbs` of the fusing pointwise template): the chains of views between `node`'s operands and an
    arange, which the kernel computes as coordinates (`coordinates.coordinate_views`); none of `bound`."""
    return [n for n in coordinates.coordinate_views(node, _unsupported_alone) if n.name not in bound]


def _unsupported_alone(node: Any) -> str | None:
    """`unsupported` of `node` by itself: whether the template has a rule for it and can read its operands, not
    whether the integer values around it stay inside a kernel."""
    import torch
    import torch.fx

    name = aten_name(node)
    found_coordinate = coordinates.coordinate(node)
    if found_coordinate is not None:  # an arange, or a view or clone of one: computed from the element's coordinates
        if isinstance(found_coordinate, str):
            return found_coordinate
        if found_coordinate.integer:
            bounds = coordinates.integer_range(node)
            return bounds if isinstance(bounds, str) else None
        return None
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
    if name == "scalar_tensor":  # a comparison's boolean may leave the kernel: it is stored as a bool tensor
        if not node.users or not all(u.op == "call_function" and unsupported(u) is None for u in node.users):
            return (
                "a constant tensor leaves the kernel (it is a literal inside it), or feeds an operator the template "
                "does not take"
            )
    if coordinates.integer_dtype(out):  # computed as 32-bit integers, within bounds the constants give
        bounds = coordinates.integer_range(node)
        if isinstance(bounds, str):
            return bounds
    elif name not in COMPARISONS and dtype_name(out) not in DTYPES:
        return f"dtype {out.dtype} (the template takes float32, float16, bfloat16, and integers it computes)"
    if name == "scalar_tensor":
        return None if isinstance(args[0], bool | int | float) else "a constant tensor of a value that is not a number"
    for i, a in enumerate(args):
        if isinstance(a, torch.fx.Node):
            val = node_value(a)
            if not isinstance(val, torch.Tensor):
                return f"operand {i} is not a tensor"
            if _is_literal(a) or val.dtype == torch.bool or dtype_name(val) in DTYPES:
                continue
            if not coordinates.integer_dtype(val):
                return f"operand {i} has dtype {val.dtype}"
            bounds = coordinates.integer_range(a)
            if isinstance(bounds, str):
                if read_as_float(node, a):  # an integer tensor from outside, read converted to float32
                    continue
                return f"operand {i} has dtype {val.dtype}: {bounds}"
        elif not (a is None or isinstance(a, bool | int | float | str)):
            return f"argument {i} is a {type(a).__name__}"
    shapes, itemsizes, strides = _plan_values([node])
    found = plan(tuple(out.shape), shapes, itemsizes, strides=strides)
    return found if isinstance(found, str) else None


def _plan_values(
    nodes: list[Any],
) -> tuple[dict[str, tuple[int, ...]], list[int], dict[str, tuple[int, ...]]]:
    """What `plan` needs of the values a kernel computing `nodes` holds: (graph name -> shape of each value it
    computes or reads, the bytes of an element of each (an integer is an ``i32`` in the kernel; a boolean has
    none), graph name -> strides of each coordinate). A coordinate — a view of an arange the kernel computes, or an
    integer one it reads — counts where a computed node reads it or the kernel stores it (a float arange), as the
    shape its values vary along (`coordinates.Coordinate.varying_shape`); its views in between are not values."""
    import torch

    members = set(nodes)

    def coordinate_here(n: Any) -> coordinates.Coordinate | None:
        c = coordinates.coordinate(n)
        return c if isinstance(c, coordinates.Coordinate) and (n in members or c.integer) else None

    shapes: dict[str, tuple[int, ...]] = {}
    strides: dict[str, tuple[int, ...]] = {}
    itemsizes: list[int] = []

    def add(n: Any) -> None:
        val = node_value(n)
        if n.name in shapes or _is_literal(n) or not isinstance(val, torch.Tensor):
            return
        c = coordinate_here(n)
        if c is not None:
            shapes[n.name], strides[n.name] = c.varying_shape, c.varying_strides
            itemsizes.append(_itemsize(val))
            return
        shapes[n.name] = tuple(val.shape)
        if val.dtype != torch.bool:
            itemsizes.append(_itemsize(val))

    for n in nodes:
        if coordinate_here(n) is None:
            add(n)
            for a in n.all_input_nodes:
                add(a)
        elif any(u not in members for u in n.users):
            add(n)
    return shapes, itemsizes, strides


def group_unsupported(nodes: list[Any]) -> str | None:
    """None when the nodes the partitioner proposes as one group make one kernel, else why not: the group's
    outputs (its nodes used outside it) must all have one shape, which every value of the group broadcasts to in
    a form `plan` takes, and be float tensors (a comparison or a constant stays inside its kernel: it may neither
    leave the group nor come from another; an integer value or a view of an arange is computed where it is read,
    so it may neither leave nor come from another kernel)."""
    import torch

    members = {n.name for n in nodes}
    outputs = [n for n in nodes if any(u.name not in members for u in n.users)]
    for n in outputs:
        val = node_value(n)
        if _is_literal(n) or (val.dtype == torch.bool and aten_name(n) not in COMPARISONS):
            return f"{n.name} ({aten_name(n)}) would leave its kernel as a boolean or a constant tensor"
        # a float arange or constant itself may leave (the kernel stores it); its views are computed where read
        stored = aten_name(n) == "arange" or aten_name(n) in coordinates.CONSTANTS
        if coordinates.integer_dtype(val) or (not stored and coordinates.is_coordinate(n)):
            return (
                f"{n.name} ({aten_name(n)}) would leave its kernel as a {val.dtype} tensor (integer values and views "
                "of an arange are computed in the kernel that reads them, never stored)"
            )
    out_shapes = {tuple(node_value(n).shape) for n in outputs}
    if len(out_shapes) != 1:
        return f"the fused group's outputs have shapes {sorted(out_shapes)} (one kernel writes one shape)"
    for n in nodes:
        for value in n.all_input_nodes:
            val = node_value(value)
            if value.name in members or not isinstance(val, torch.Tensor):
                continue
            # a boolean from outside (the model's mask, another kernel's comparison) is read as 1.0/0.0
            if _is_literal(value):
                return f"{value.name} ({aten_name(value)}), a constant tensor, comes from another kernel"
            if coordinates.integer_dtype(val) and not read_as_float(n, value):
                return f"{value.name} ({aten_name(value)}), a {val.dtype} tensor, comes from another kernel"
    shapes, itemsizes, strides = _plan_values(nodes)
    external = {a.name for n in nodes for a in n.all_input_nodes if a.name not in members}
    found = plan(out_shapes.pop(), shapes, itemsizes, external, strides)
    return f"the fused group: {found}" if isinstance(found, str) else None


# ---------------------------------------------------------------------------------------------------------------
# broadcasting: the group's values on the output's canonical form

#: A value's pattern: for each canonical dimension, whether the value varies along it (1) or repeats (0).
Bits = tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """How a group's kernel walks its output and reads each value (graph name -> `bits`).

    The output's shape is collapsed to its *canonical form*: size-1 dimensions dropped, and neighbouring
    dimensions merged where every value of the group varies along both or repeats along both (while the product
    stays within `argus.runtime.arguments.MAX_EXTENT`). `dims` are the
    canonical sizes; `bits[name]` says along which of them a value varies (its elements, row-major, are the
    canonical dimensions it varies along). `flat` when every value is the whole output (one dimension): the 1-d
    kernel over the flattened elements. Otherwise the kernel tiles the last canonical dimension (columns, ``N``)
    and one other (rows, ``M``); a third is walked by the grid alone (``G``), and where there are more, each of
    them (``G0``, ``G1``, ...: the grid's one dimension of their product, its index split into theirs): `roles`
    names each dimension's part.
    A one-element operand makes the rows a dimension of size 1 (tiles of one row, the operand a per-row value).
    `tile` is the default (BM, BN); `vector` the elements of one vector copy every fragment uses (one for all
    dtypes, so that fragments of different dtypes share a thread-value layout)."""

    dims: tuple[int, ...]
    bits: dict[str, Bits]
    flat: bool
    roles: tuple[str, ...] = ()
    tile: tuple[int, int] = (1, 1)
    vector: int = 4
    #: each coordinate's index strides along the canonical dimensions (0 where it repeats): element ``idx`` holds
    #: the arange's element ``offset + sum_c idx_c * strides_c`` (`coordinates.Coordinate`)
    strides: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def tile_bits(self, name: str) -> tuple[int, int]:
        """(varies along the tile's rows, varies along its columns) of value `name`."""
        b = dict(zip(self.roles, self.bits[name], strict=True))
        return b.get("M", 0), b.get("N", 0)


def _aligned_strides(strides: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """A coordinate's `strides` right-aligned to a domain of `rank` dimensions (as its shape is broadcast)."""
    if len(strides) > rank:
        return strides[len(strides) - rank :]
    return (0,) * (rank - len(strides)) + strides


def _aligned_bits(shape: tuple[int, ...], domain: tuple[int, ...]) -> Bits | None:
    """For each dimension of `domain`, whether `shape` (right-aligned, as torch broadcasts) varies along it; None
    when `shape` does not broadcast to `domain`."""
    if len(shape) > len(domain):
        if any(s != 1 for s in shape[: len(shape) - len(domain)]):
            return None
        shape = shape[len(shape) - len(domain) :]
    padded = (1,) * (len(domain) - len(shape)) + tuple(shape)
    if any(s not in (1, d) for s, d in zip(padded, domain, strict=True)):
        return None
    return tuple(int(s == d and d > 1) for s, d in zip(padded, domain, strict=True))


#: Elements of a (BM, BN) tile by default: 64 per thread of the 128 when the kernel moves at most two whole tiles
#: (its inputs and outputs that vary along both), fewer when it holds more at once. Measured on an H200 at
#: KernelBench's 39_L2Norm_ (a (32768, 65535) division by a per-row value: (8, 128) tiles 0.97x eager, (8, 1024)
#: 1.18x; benchmarks/results/2026-11-29-solve-policies/).
TILE_ELEMENTS = {2: 8192, 4: 4096}
#: The fewest elements of a default tile (so that every thread holds whole vectors).
MIN_TILE_ELEMENTS = 1024


def _default_tile(rows: int, cols: int, others: int, vector: int, full: int) -> tuple[int, int]:
    """(BM, BN) for `rows` x `cols` tiles walked `others` times more by the grid, in a kernel moving `full` whole
    tiles: BN the columns rounded up to a power of two, between one vector and 1024; BM * BN `TILE_ELEMENTS`, halved
    (down to `MIN_TILE_ELEMENTS`) while the grid would launch fewer than two waves of blocks, BM at most the rows
    rounded up to a power of two."""
    bn = max(vector, min(1024, 1 << max(0, (cols - 1).bit_length())))
    elements = next((e for f, e in sorted(TILE_ELEMENTS.items()) if full <= f), 2048)

    def blocks(e: int) -> int:
        return -(-cols // bn) * -(-rows // max(1, e // bn)) * others

    while elements > MIN_TILE_ELEMENTS and blocks(elements) < min_blocks():
        elements //= 2
    bm = max(1, min(elements // bn, 1 << max(0, (rows - 1).bit_length())))
    while bm * bn < MIN_TILE_ELEMENTS:
        bm *= 2
    return bm, bn


def plan(
    domain: tuple[int, ...],
    shapes: Mapping[str, tuple[int, ...]],
    itemsizes: list[int],
    io: Collection[str] | None = None,
    strides: Mapping[str, tuple[int, ...]] | None = None,
) -> Plan | str:
    """The kernel plan of a group writing `domain` and reading (or making) the values of `shapes` (graph name ->
    shape), with dtypes of `itemsizes` bytes; a string saying why no kernel of this template can when it cannot
    (see `Plan`). `io`: the names of the kernel's inputs (its outputs are whole tiles), which size its default
    tile (`_default_tile`); None counts one whole input. `strides`: the coordinates among the values (graph name ->
    the strides of their index along their shape, `coordinates.Coordinate`), whose index along two dimensions
    merged into one must stay one stride along it."""
    from argus.backend.cuda.codegen.source import MAX_GRID
    from argus.runtime.arguments import MAX_EXTENT

    vector = min((16 // s for s in itemsizes), default=4)
    raw: dict[str, Bits] = {}
    for name, shape in shapes.items():
        bits = _aligned_bits(tuple(shape), tuple(domain))
        if bits is None:
            return f"{name} of shape {tuple(shape)} does not broadcast to {tuple(domain)}"
        raw[name] = bits
    steps = {n: _aligned_strides(tuple(st), len(domain)) for n, st in (strides or {}).items()}
    kept = [d for d, size in enumerate(domain) if size > 1]
    dims: list[int] = []
    columns: list[tuple[int, ...]] = []
    inner: list[int] = []  # the innermost dimension of `domain` merged into each canonical one
    for d in kept:
        column = tuple(raw[n][d] for n in shapes)
        # merged only while the kernel's 32-bit tile coordinates hold the product (the flat kernel runs in chunks),
        # and while every coordinate's index steps through both as through one dimension
        if (
            columns
            and columns[-1] == column
            and dims[-1] * domain[d] <= MAX_EXTENT
            and all(st[inner[-1]] == st[d] * domain[d] for st in steps.values())
        ):
            dims[-1] *= domain[d]
            inner[-1] = d
        else:
            dims.append(domain[d])
            columns.append(column)
            inner.append(d)
    names = list(shapes)
    bits = {n: tuple(c[i] for c in columns) for i, n in enumerate(names)}
    canonical = {n: tuple(st[d] if b else 0 for d, b in zip(inner, bits[n], strict=True)) for n, st in steps.items()}
    if all(all(b) for b in bits.values()):
        if canonical and math.prod(dims) > MAX_EXTENT:
            return (
                f"a coordinate (an arange) over {math.prod(dims)} elements of one flat kernel, more than a "
                f"kernel's largest extent {MAX_EXTENT}"
            )
        return Plan(tuple(dims), bits, flat=True, vector=vector, strides=canonical)
    if max(dims) > MAX_EXTENT:
        return f"a dimension of {max(dims)} elements is longer than a kernel's largest extent {MAX_EXTENT}"
    rank = len(dims)
    options = {1: [], 2: [("M", "N")], 3: [("G", "M", "N"), ("M", "G", "N")]}[rank] if rank <= 3 else _grid_roles(rank)
    roles: tuple[str, ...] | None = None
    for candidate in options:
        tiled = [i for i, r in enumerate(candidate) if not r.startswith("G")]
        # a coordinate is computed, not loaded: one that varies along the grid's dimension alone is held per row
        if all(any(b[i] for i in tiled) for n, b in bits.items() if n not in steps):
            roles = candidate
            rows = candidate.index("M")
            for n in steps:
                if not any(bits[n][i] for i in tiled):
                    bits[n] = tuple(1 if i == rows else b for i, b in enumerate(bits[n]))
            break
    tile: tuple[int, int] | None = None  # the default, chosen below once the rows are known
    if roles is None and rank >= 3:
        lone = next(n for n, b in bits.items() if not (b[1] or b[2]) and n not in steps)
        return (
            f"{lone} repeats along both dimensions of every tile of the {' x '.join(map(str, dims))} broadcast "
            "(one value per block: not supported)"
        )
    if roles is None:
        # a one-element operand: tiles of one row (a dimension of size 1 every value varies along), so that it is
        # a per-row value; the rows of a 2-d form are walked by the grid
        dims = [1, dims[0]] if rank == 1 else [dims[0], 1, dims[1]]
        bits = {n: (1, b[0]) if rank == 1 else (b[0], 1, b[1]) for n, b in bits.items()}
        canonical = {n: (0, st[0]) if rank == 1 else (st[0], 0, st[1]) for n, st in canonical.items()}
        roles = ("M", "N") if rank == 1 else ("G", "M", "N")
        tile = (1, 1024)
    walked = math.prod(d for d, r in zip(dims, roles, strict=True) if r.startswith("G"))  # the grid's G blocks
    if tile is None:
        whole = 1 if io is None else sum(1 for n in io if n in bits and all(bits[n]))
        tile = _default_tile(dims[roles.index("M")], dims[-1], walked, vector, whole + 1)
    extents = {"N": -(-dims[-1] // tile[1]), "M": -(-dims[roles.index("M")] // tile[0])}
    if any(r.startswith("G") for r in roles):
        extents["G"] = walked
    counts = sorted(extents.values(), reverse=True)
    if len(counts) > 1 and counts[1] > MAX_GRID[1]:
        return f"its grid of {' x '.join(map(str, counts))} blocks exceeds CUDA's grid limits {MAX_GRID}"
    return Plan(tuple(dims), bits, flat=False, roles=roles, tile=tile, vector=vector, strides=canonical)


# ---------------------------------------------------------------------------------------------------------------
# source text

#: What each canonical dimension's part of the kernel is called: (size symbol, block index, tile extent).
ROLE_NAMES = {"M": ("M", "bm", "BM"), "N": ("N", "bn", "BN"), "G": ("G", "bg", None)}


def role_names(role: str) -> tuple[str, str, str | None]:
    """`ROLE_NAMES` of `role`; a grid dimension of several (``G0``, ``G1``, ...): its size and block index."""
    return ROLE_NAMES.get(role) or (role, f"b{role.lower()}", None)


def _grid_roles(rank: int) -> list[tuple[str, ...]]:
    """The role candidates of `rank` > 3 canonical dimensions: the columns the last, the rows one of the others (the
    one before the columns first, then outwards), each other walked by the grid (``G0``, ``G1``, ... in order)."""
    out = []
    for m in [rank - 2, *range(rank - 3, -1, -1)]:
        roles, k = [], 0
        for i in range(rank):
            if i in (m, rank - 1):
                roles.append("M" if i == m else "N")
            else:
                roles.append(f"G{k}")
                k += 1
        out.append(tuple(roles))
    return out


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a pointwise group (see the module docstring). `scalar_uses`: (node name, argument index)
    -> the forward argument whose run-time value that constant is; `scalar_values`: its captured value."""
    import torch
    import torch.fx

    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    calls = [n for n in nodes if n.op == "call_function"]
    output = next(n for n in nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
    shape = tuple(node_value(results[0]).shape)
    numel = math.prod(shape)
    # an arange and its views are computed from the elements' coordinates where the group reads them (`uses`)
    coords = {n.name: c for n in calls if isinstance(c := coordinates.coordinate(n), coordinates.Coordinate)}
    computed = [n for n in calls if n.name not in coords]
    bound = sorted({node for node, _ in scalar_uses} & set(coords))
    if bound:
        raise FrontendError(
            "SOLVE_POINTWISE_PLAN", f"{name}: the arange {bound[0]} has a constant a forward argument gives", None
        )
    value_shapes, itemsizes, coordinate_strides = _plan_values(calls)
    found = plan(shape, value_shapes, itemsizes, [n.name for n in placeholders], coordinate_strides)
    if isinstance(found, str):  # group_unsupported() was asked first
        raise FrontendError("SOLVE_POINTWISE_PLAN", f"{name}: no pointwise kernel for this group: {found}", None)
    uses = {n: coords[n] for n in found.strides}
    tiled = not found.flat
    taken: set[str] = {"M", "N", "G", "BM", "BN", "bm", "bn", "bg", "tile"} if tiled else set()
    if tiled:  # the grid dimensions of a broadcast of more than three: their sizes and block indices
        taken |= {x for r in found.roles for x in role_names(r)[:2]}
    frag: dict[str, str] = {}
    literal: set[str] = set()
    dtypes: dict[str, str] = {}
    in_params: list[str] = []
    scalars: dict[str, str] = {}
    # a boolean input (a mask the model is given) is read into an f32 fragment as 1.0/0.0, as a comparison's result;
    # an integer input (`read_as_float`) into an f32 fragment, converted as torch converts it: `stored` is the DSL
    # dtype of such a tensor, where it is not its fragment's
    stored = {n.name: "boolean" for n in placeholders if node_value(n).dtype == torch.bool}
    stored |= {n.name: INTEGER_DTYPES[dtype_name(node_value(n))] for n in placeholders if external_integer(n)}
    for node in placeholders:
        dtypes[node.name] = "f32" if node.name in stored else DTYPES[dtype_name(node_value(node))]
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

    setup: list[str] = []
    body: list[str] = []
    ones: dict[str, str] = {}
    lifted: dict[tuple[str, str], str] = {}

    def full(value: str, dt: str) -> str:
        """Value `value` (a per-row or per-column fragment) in dtype `dt`, repeated over the whole (BM, BN) tile."""
        if (value, dt) not in lifted:
            source = frag[value]
            if dt != dtypes[value]:  # converted at its own size, before it is repeated
                source = safe_name(f"{frag[value]}_{dt}", taken)
                body.append(f"        {source} = T.cast({frag[value]}, T.{dt})")
            if dt not in ones:
                ones[dt] = safe_name(f"ones_{dt}", taken)
                setup.append(f"        {ones[dt]} = T.alloc_fragment((BM, BN), T.{dt}{_vector_bytes(found, dt)})")
                one = "1" if dt == "i32" else "1.0"
                setup.append(f"        T.fill({ones[dt]}, {one})  # selects every element of a repeated value")
            view = f"{source}[:, None]" if found.tile_bits(value) == (1, 0) else f"{source}[None, :]"
            lifted[(value, dt)] = safe_name(f"{source}_tile", taken)
            body.append(
                f"        {lifted[(value, dt)]} = T.where({ones[dt]}, {view}, {view})  # repeated over the tile"
            )
        return lifted[(value, dt)]

    def scalar_param(node_name: str, index: int) -> str | None:
        if (node_name, index) not in scalar_uses:
            return None
        return next(p for p, a in scalars.items() if a == scalar_uses[(node_name, index)])

    def lift(operand: str, node_name: str, dt: str) -> str | None:
        if tiled and found.tile_bits(operand) != found.tile_bits(node_name):
            return full(operand, dt)
        return None

    located = _coordinate_lines(found, uses, frag, dtypes, taken)
    ops = render_calls(computed, frag, dtypes, literal, taken, body, scalar_param, lift)
    if uses:  # the coordinates' operators: aranges and constants (`coordinates.CONSTANTS`), computed first
        made = {aten_name(n) for n in calls if n.name in coords and aten_name(n) in ("arange", *coordinates.CONSTANTS)}
        ops = [*sorted(made), *ops]

    in_dtypes = [dtypes[n.name] for n in placeholders]
    tensor_dtypes = [stored.get(n.name, dtypes[n.name]) for n in placeholders]
    out_dtypes = [_out_dtype(r) for r in results]
    chain = " -> ".join(ops)
    ref = reference_source(
        f"{name}_reference",
        subgraph,
        f"The captured FX subgraph of {name} ({chain}) on {', '.join(n.name for n in placeholders)}.",
    )
    if scalars:
        # the reference takes the scalar too: by default the captured value, as the kernel's parameter does
        head, _, rest = ref.partition("):\n")
        defaults = ", ".join(f"{a}={_lit(scalar_values[a])}" for a in scalars.values())
        ref = f"{head}, {defaults}):\n{rest}"
        for (node_name, index), arg in scalar_uses.items():
            ref = _rebind(ref, subgraph, node_name, index, arg)
    scalar_params = [f"{p}: float = {_lit(float(scalar_values[a]))}" for p, a in scalars.items()]
    if tiled:
        for r in results:  # a result held per row or per column (a constant the kernel stores) fills the whole tile
            if found.tile_bits(r.name) != (1, 1):
                frag[r.name] = full(r.name, dtypes[r.name])
        seen = ", ".join(f"{r} = {d}" for r, d in zip(found.roles, found.dims, strict=True))
        docstring = f"{chain}, elementwise over {shape}, its operands broadcast\n    ({seen}), in BM x BN tiles."
        kernel = _tiled_kernel(
            name,
            found,
            placeholders,
            results,
            (in_params, out_params, scalar_params),
            frag,
            dtypes,
            stored,
            layout=bool(uses),
        )
        lines = kernel.before + [f'    """{docstring}"""'] + kernel.middle + setup + located + body + kernel.after
        shapes = kernel.shapes
    else:
        # a kernel computing coordinates is written for the captured shape: it is passed its tensors' shapes (so
        # that the solution checks them, and never runs it in chunks whose elements would restart at 0)
        shapes = {n.name: (numel,) for n in [*placeholders, *results]} if uses else {}
        signature = [f'{p}: T.Tensor[("N",), T.{d}]' for p, d in zip(in_params, tensor_dtypes, strict=True)]
        signature += [f'{p}: T.Tensor[("N",), T.{d}]' for p, d in zip(out_params, out_dtypes, strict=True)]
        signature.append("BLOCK: int = 1024")
        signature += scalar_params
        lines = [
            f'@argus.kernel(reference={name}_reference, sizes={{"N": {numel}}}, policies={{"tile_shape": "BLOCK"}})',
            f"def {name}(",
            *[f"    {s}," for s in signature],
            "):",
            f'    """{chain}, elementwise over the N elements of {shape} (flattened)."""',
            "    with T.grid(T.cdiv(N, BLOCK), threads=128) as (bx,):",
        ]
        for node, param, dt in zip(placeholders, in_params, in_dtypes, strict=True):
            lines.append(f"        {frag[node.name]} = T.alloc_fragment((BLOCK,), T.{dt}{_vector_bytes(found, dt)})")
            lines.append(f"        T.copy({param}.tile(bx, BLOCK), {frag[node.name]})  # the last tile is masked")
        lines += located + body
        for r, param in zip(results, out_params, strict=True):
            lines.append(f"        T.copy({frag[r.name]}, {param}.tile(bx, BLOCK))")
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [n.name for n in placeholders],
        [r.name for r in results],
        scalars,
        numel,
        {**dtypes, **stored},
        shapes,
    )


def _coordinate_lines(
    found: Plan,
    uses: Mapping[str, coordinates.Coordinate],
    frag: dict[str, str],
    dtypes: dict[str, str],
    taken: set[str],
) -> list[str]:
    """The DSL lines computing each coordinate the kernel reads (`uses`: graph name -> its `Coordinate`) from the
    elements' own coordinates, at the size `found` gives it (a whole tile, or one value per row or per column); each
    gets its fragment's name in `frag` and its dtype in `dtypes`.

    The index of an element along each canonical dimension is ``T.index`` of a fragment of the tile's layout plus
    the tile's origin (``bn * BN``); in the flat kernel the flattened index split by the canonical extents
    (``//``, ``%``); along the grid's own dimension the block index. The arange's element is the index's dot
    product with the coordinate's strides (`Plan.strides`), computed as ``i32`` (exact: every index is below the
    arange's length); its value is ``start + step * element``, in ``i32`` for an integer arange, in float32 (then
    rounded to its dtype) for a float one."""
    if not uses:
        return []
    lines: list[str] = []
    made: dict[str, str] = {}

    def once(key: str, name: str, text: str, comment: str) -> str:
        if key not in made:
            made[key] = safe_name(name, taken)
            lines.append(f"        {made[key]} = {text}  # {comment}")
        return made[key]

    if found.flat:
        vb = _vector_bytes(found, "i32")
        lanes = once("lanes", "lanes", f"T.alloc_fragment((BLOCK,), T.i32{vb})", "the elements' layout")
        element = once(
            "element", "element", f"T.cast(T.index({lanes}, 0), T.i32) + bx * BLOCK", "each element's flat index"
        )

        def index(c: int, bits: tuple[int, int]) -> str:
            inner = math.prod(found.dims[c + 1 :])
            if len(found.dims) == 1:
                return element
            text = element if inner == 1 else f"{element} // {inner}"
            text = text if c == 0 else f"{text} % {found.dims[c]}"
            return once(f"index{c}", f"index{c}", text, f"the index along canonical dimension {c}")

        def base(bits: tuple[int, int]) -> str:
            return element
    else:
        tile_text = {
            (1, 1): ("tile", None),
            (1, 0): ("rows", "T.alloc_reduced(tile, axis=1, dtype=T.i32)"),
            (0, 1): ("cols", "T.alloc_reduced(tile, axis=0, dtype=T.i32)"),
        }

        def layout(bits: tuple[int, int]) -> str:
            name, alloc = tile_text[bits]
            if alloc is None:
                return name
            return once(name, name, alloc, f"one value per {'row' if bits == (1, 0) else 'column'}: their layout")

        def index(c: int, bits: tuple[int, int]) -> str:
            role = found.roles[c]
            if role.startswith("G"):
                return role_names(role)[1]
            axis = (0 if role == "M" else 1) if bits == (1, 1) else 0
            origin = "bm * BM" if role == "M" else "bn * BN"
            what = "row" if role == "M" else "col"
            text = f"T.cast(T.index({layout(bits)}, {axis}), T.i32) + {origin}"
            axis_name = "row" if role == "M" else "column"
            comment = f"each element's {axis_name} index" if bits == (1, 1) else f"each {axis_name}'s index"
            return once(f"{role}{bits}", f"tile_{what}" if bits == (1, 1) else what, text, comment)

        def base(bits: tuple[int, int]) -> str:
            return index(found.roles.index("M") if bits[0] else len(found.dims) - 1, bits)

    for name, c in uses.items():
        bits = (1, 1) if found.flat else found.tile_bits(name)
        terms = []
        for d, stride in enumerate(found.strides[name]):
            if stride:
                term = index(d, bits)
                terms.append(term if stride == 1 else f"{term} * {stride}")
        # a fragment first (the block index alone is a scalar); a coordinate of one element is its base times 0
        terms.sort(key=lambda t: t.startswith("bg"))
        if not terms or terms[0].startswith("bg"):
            terms.insert(0, f"{base(bits)} * 0")
        if c.offset:
            terms.append(str(c.offset))
        element_text = " + ".join(terms)
        if c.integer:
            text = element_text if c.step == 1 else f"({element_text}) * {c.step}"
            text = text if c.start == 0 else f"{text} + {c.start}"
            kind = "i32"
        else:
            kind = DTYPES[c.dtype]
            text = f"T.cast({element_text}, T.f32) * {_lit(float(c.step))} + {_lit(float(c.start))}"
            text = text if kind == "f32" else f"T.cast({text}, T.{kind})"
        dtypes[name] = kind
        if text.isidentifier():
            frag[name] = text
            continue
        frag[name] = safe_name(name, taken)
        what = "element" if bits == (1, 1) else ("row" if bits == (1, 0) else "column")
        about = (
            f"the constant {c.start}"
            if c.step == 0
            else f"the arange (start {c.start}, step {c.step}, {c.length} elements)"
        )
        lines.append(f"        {frag[name]} = {text}  # {about} at each {what}")
    return lines


def render_calls(
    calls: list[Any],
    frag: dict[str, str],
    dtypes: dict[str, str],
    literal: set[str],
    taken: set[str],
    body: list[str],
    scalar_param: Callable[[str, int], str | None] = lambda node, index: None,
    lift: Callable[[str, str, str], str | None] = lambda operand, node, dt: None,
    indent: str = "        ",
) -> list[str]:
    """One line of DSL math per elementwise node of `calls` (in order), appended to `body`; returns the operators'
    names. `frag` maps a graph value to its fragment's expression and `dtypes` to its DSL dtype (both extended with
    every node computed; the inputs must be there); a ``scalar_tensor`` becomes a literal (its name added to
    `literal`). `scalar_param(node, index)` names the kernel parameter a constant argument is bound to (None: the
    captured literal); `lift(operand, node, dt)` the expression of an operand repeated over the tile where it varies
    along fewer dimensions than the node (None: the fragment as it is). New local names are taken from `taken`."""
    import torch.fx

    ops: list[str] = []
    for node in calls:
        op = node.target._overloadpacket.__name__
        ops.append(op)
        params, render = RULES[op]
        args = _arguments(node, params)
        assert not isinstance(args, str)  # unsupported() was asked first
        val = node_value(node)
        if op == "scalar_tensor":
            frag[node.name] = _lit(int(args[0]) if coordinates.integer_dtype(val) else float(args[0]))
            literal.add(node.name)
            continue
        want = _kernel_dtype(val)
        # a select between two constants computes in the condition's dtype: converted to the result's first
        constants = op == "where" and not any(isinstance(v, torch.fx.Node) and v.name not in literal for v in args[1:])
        operands: list[Operand | None] = []
        kinds: dict[int, str] = {}  # operand index -> the dtype of its fragment
        for i, v in enumerate(args):
            if isinstance(v, torch.fx.Node) and v.name in literal:
                operands.append(Operand(frag[v.name], False))
            elif isinstance(v, torch.fx.Node):
                # torch computes in the promoted dtype: an operand of another dtype (an integer's among floats) is
                # converted first; a select's condition is read as it is
                convert = want is not None and dtypes[v.name] != want and (not (op == "where" and i == 0) or constants)
                kinds[i] = want if convert else dtypes[v.name]
                lifted = lift(v.name, node.name, kinds[i])
                if lifted is not None:
                    text = lifted
                else:
                    text = f"T.cast({frag[v.name]}, T.{want})" if convert else frag[v.name]
                operands.append(Operand(text, True))
            elif (param := scalar_param(node.name, i)) is not None:
                operands.append(Operand(param, False))
            elif v is None:
                operands.append(None)
            elif isinstance(v, str):
                operands.append(Operand(repr(v), False))
            else:
                operands.append(Operand(_lit(v), False))
        if op in ("clamp", "hardtanh"):
            text = render(operands[0], *(None if o is None else o for o in operands[1:]))
        else:
            text = render(*operands)
        var = safe_name(node.name, taken)
        # the DSL's result has the dtype of the fragment it is computed like: T.where's first value, else the first
        # fragment operand; a node of another float dtype is converted
        like = [i for i in kinds if i > 0] if op == "where" else []
        like += list(kinds)
        have = kinds[like[0]] if like else None
        if want is not None and have is not None and want != have:
            text = f"T.cast({text}, T.{want})"
        dtypes[node.name] = want or have or "f32"
        frag[node.name] = var
        body.append(f"{indent}{var} = {text}")
    return ops


@dataclass
class _Tiled:
    """A broadcasting group's kernel around its math: the lines before the docstring, those between it and the
    math (grid, loads), those after (stores), and the shape each tensor is passed as."""

    before: list[str]
    middle: list[str]
    after: list[str]
    shapes: dict[str, tuple[int, ...]]


def _vector_bytes(found: Plan, dt: str) -> str:
    """``, vector_bytes=W`` when a fragment of `dt` copies vectors of other than the default 16 bytes (every
    fragment of a kernel copies vectors of `Plan.vector` elements, so that they share a thread layout)."""
    width = found.vector * _DT_BYTES[dt]
    return "" if width == 16 else f", vector_bytes={width}"


def _tiled_kernel(
    name: str,
    found: Plan,
    placeholders: list[Any],
    results: Any,
    params: tuple[list[str], list[str], list[str]],
    frag: dict[str, str],
    dtypes: dict[str, str],
    stored: Mapping[str, str] | None = None,
    layout: bool = False,
) -> _Tiled:
    """The kernel of a broadcasting group (`Plan` not flat): a grid over (BM, BN) tiles of the canonical rows and
    columns (and the grid dimension), every operand loaded as a whole tile, a per-row or a per-column fragment;
    each tensor passed as the canonical dimensions it varies along. `layout`: the kernel computes coordinates, which
    take the tile's layout (``tile``) whatever its operands are."""
    in_params, out_params, scalar_params = params
    size = dict(zip(found.roles, found.dims, strict=True))

    def kept(bits: Bits) -> list[tuple[str, str, str | None]]:
        return [role_names(r) for r, b in zip(found.roles, bits, strict=True) if b]

    def annotation(bits: Bits, dt: str) -> str:
        names = ", ".join(f'"{k[0]}"' for k in kept(bits))
        return f"T.Tensor[({names}{',' if len(kept(bits)) == 1 else ''}), T.{dt}]"

    def tile(param: str, bits: Bits) -> str:
        parts = kept(bits)
        if len(parts) == 1:
            return f"{param}.tile({parts[0][1]}, {parts[0][2]})"
        return f"{param}.tile(({', '.join(p[1] for p in parts)}), ({', '.join(p[2] or 'None' for p in parts)}))"

    everything = (1,) * len(found.dims)
    out_dtypes = [_out_dtype(r) for r in results]
    signature = [
        f"{p}: {annotation(found.bits[n.name], (stored or {}).get(n.name, dtypes[n.name]))}"
        for n, p in zip(placeholders, in_params, strict=True)
    ]
    signature += [f"{p}: {annotation(everything, d)}" for p, d in zip(out_params, out_dtypes, strict=True)]
    signature += [f"BM: int = {found.tile[0]}", f"BN: int = {found.tile[1]}", *scalar_params]
    # the largest number of blocks goes on the grid's x dimension (CUDA allows 2**31 - 1 there, 65535 on y and z)
    counts = {"N": -(-size["N"] // found.tile[1]), "M": -(-size["M"] // found.tile[0])}
    grids = [r for r in found.roles if r.startswith("G")]  # one ("G"), or several walked as one grid dimension
    if grids:
        counts["G"] = math.prod(size[r] for r in grids)
    order = sorted(counts, key=lambda r: -counts[r])
    extents = {"N": "T.cdiv(N, BN)", "M": "T.cdiv(M, BM)", "G": " * ".join(grids) or "G"}
    sizes = ", ".join(f'"{role_names(r)[0]}": {d}' for r, d in zip(found.roles, found.dims, strict=True))
    before = [
        f'@argus.kernel(reference={name}_reference, sizes={{{sizes}}}, policies={{"tile_shape": ("BM", "BN")}})',
        f"def {name}(",
        *[f"    {s}," for s in signature],
        "):",
    ]
    middle = []
    if size["N"] % found.vector == 0:  # rows start on a vector boundary: the copies move whole vectors
        middle.append(f'    T.assume("N % {found.vector} == 0")')
    middle += [
        f"    with T.grid({', '.join(extents[r] for r in order)}, threads=128) as "
        f"({', '.join(ROLE_NAMES[r][1] for r in order)},):",
    ]
    if len(grids) > 1:  # the grid dimension's index split into the dimensions it walks, the last fastest
        for k, r in enumerate(grids):
            below = " * ".join(grids[k + 1 :])
            text = "bg" if not below else (f"bg // {below}" if "*" not in below else f"bg // ({below})")
            text = text if k == 0 else f"{text} % {r}"
            middle.append(f"        {role_names(r)[1]} = {text}  # the block's index along {r}")
    if layout or any(found.tile_bits(n.name) != (1, 1) for n in placeholders):
        dt = next((d for d in out_dtypes if d != "boolean"), "f32")  # a comparison's fragment is f32 (1.0/0.0)
        middle.append(f"        tile = T.alloc_fragment((BM, BN), T.{dt}{_vector_bytes(found, dt)})  # its layout")
    for node, param in zip(placeholders, in_params, strict=True):
        dt, bits = dtypes[node.name], found.tile_bits(node.name)
        if bits == (1, 1):
            middle.append(f"        {frag[node.name]} = T.alloc_fragment((BM, BN), T.{dt}{_vector_bytes(found, dt)})")
        else:
            axis, what = (1, "one value per row") if bits == (1, 0) else (0, "one value per column")
            middle.append(f"        {frag[node.name]} = T.alloc_reduced(tile, axis={axis}, dtype=T.{dt})  # {what}")
        middle.append(f"        T.copy({tile(param, found.bits[node.name])}, {frag[node.name]})  # masked at the edges")
    after = [f"        T.copy({frag[r.name]}, {tile(p, everything)})" for r, p in zip(results, out_params, strict=True)]
    shapes = {n.name: tuple(d for d, b in zip(found.dims, found.bits[n.name], strict=True) if b) for n in placeholders}
    shapes |= {r.name: tuple(found.dims) for r in results}
    return _Tiled(before, middle, after, shapes)


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
