"""Coordinates and integer values inside a pointwise kernel: an ``aten.arange`` and the views of it are not tensors
read from memory but functions of the element's own coordinates, and the integer arithmetic on them (a triangular
mask's ``col - row >= 0``) is computed in the kernel.

A constant tensor (``torch.full``; ``full_like``, ``zeros_like`` and ``ones_like`` arrive as it) of a finite
number is the same with step 0 and every stride 0: its value alone, which varies along no dimension.

An arange of constant ``start`` and ``step`` (int or float; its length is the captured one), seen through views
(``unsqueeze``, ``view``, ``expand``, ``permute``, ``slice``, ... : anything torch computes as a strided view) and
clones, is a `Coordinate`: element ``idx`` of the viewed tensor holds ``start + step * (offset + sum_d idx_d *
strides_d)``. The strides and offset are the ones torch gives the same views of a tensor whose storage is the
arange itself (`coordinate` applies each view operator to a meta tensor), so the function is exactly what the
views select; a view torch would have to copy (``view`` of a permuted arange) is refused. An expanded dimension
has stride 0: the value repeats along it, which is how the pointwise template's broadcasting plan reads it
(`Coordinate.varying_shape`).

Integer values (int64, int32, ... of aranges, integer ``scalar_tensor`` constants, and ``add``, ``sub``, ``mul``,
``neg``, ``abs``, ``maximum``, ``minimum``, ``clamp``, ``where``, ``clone`` and conversions between integer types
of them) are computed as 32-bit integers (the DSL's ``i32``). That is exact when every value of every such node
lies in the 32-bit range and its own dtype's: `integer_range` bounds each node's values by interval arithmetic
from the aranges' constants, and a node whose bounds do not fit is refused with them. An integer tensor from
anywhere else (an input of the model, an operator of another family) has no bounds, so the template does not take
it (integer inputs are not built), and an integer value never leaves a kernel: it is not stored
(`stays_inside`). A float arange may leave its kernel: the kernel stores it like any float value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from argus.frontend.families.base import DTYPES, aten_name, dtype_name, node_value

#: The integer dtypes computed in a kernel as ``i32``, with the values each holds (a value outside its own range
#: would wrap in torch; the template refuses it instead).
INTEGERS: dict[str, tuple[int, int]] = {
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
}
#: The values a kernel's ``i32`` holds.
I32 = (-(2**31), 2**31 - 1)

#: Operators whose integer result the kernel computes from integer (or boolean) operands.
INTEGER_OPS = frozenset(
    "add sub rsub mul neg abs maximum minimum clamp clamp_min clamp_max where clone _to_copy scalar_tensor".split()
)

#: Operators that give a view of their first argument (torch computes them as strides over the same storage; a
#: ``reshape`` or ``flatten`` that torch would copy is refused), and ``clone`` (the same values at the same
#: coordinates).
VIEWS = frozenset(
    "view _unsafe_view reshape alias squeeze unsqueeze expand permute transpose t slice select narrow flatten "
    "unflatten diagonal as_strided".split()
)


@dataclass(frozen=True)
class Coordinate:
    """An arange seen through views: element ``idx`` of a tensor of `shape` holds ``start + step * (offset +
    sum_d idx_d * strides_d)``, of torch dtype `dtype` (its name: ``int64``, ``float32``, ...); `length` is the
    arange's own number of elements."""

    start: int | float
    step: int | float
    length: int
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @property
    def integer(self) -> bool:
        return self.dtype in INTEGERS

    @property
    def varying_shape(self) -> tuple[int, ...]:
        """The shape the values vary along: an expanded dimension (stride 0) is 1, as a broadcast operand's is."""
        return tuple(s if st != 0 else 1 for s, st in zip(self.shape, self.strides, strict=True))

    @property
    def varying_strides(self) -> tuple[int, ...]:
        """The strides along `varying_shape` (0 along a dimension of one element)."""
        return tuple(st if s > 1 else 0 for s, st in zip(self.shape, self.strides, strict=True))

    def value_range(self) -> tuple[float, float]:
        """The least and the greatest value any element holds (the arange's own bounds when the tensor is empty)."""
        low = self.offset + sum(min(0, (s - 1) * st) for s, st in zip(self.shape, self.strides, strict=True))
        high = self.offset + sum(max(0, (s - 1) * st) for s, st in zip(self.shape, self.strides, strict=True))
        if any(s == 0 for s in self.shape):
            low, high = 0, max(0, self.length - 1)
        ends = (self.start + self.step * low, self.start + self.step * high)
        return min(ends), max(ends)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


#: Operators that make a tensor of one constant value (``torch.full``; ``full_like``, ``zeros_like``, ``ones_like``
#: arrive as ``full``, `argus.frontend.decompositions`): a `Coordinate` of step 0 that varies along no dimension.
CONSTANTS = frozenset(["full"])


def constant_of(node: Any) -> Coordinate | str:
    """The `Coordinate` of a ``full`` node (step 0, stride 0 along every dimension: the value alone),
    or why its value cannot be one: a fill that is not a constant finite number, or a dtype the kernel does not
    compute."""
    import torch

    fill = node.args[1] if len(node.args) > 1 else node.kwargs.get("fill_value")
    if not _is_number(fill) or not math.isfinite(fill):
        return f"its fill value {fill} is not a constant finite number (the kernel computes constants of those)"
    value = node_value(node)
    if not isinstance(value, torch.Tensor):
        return "its result is not a tensor"
    dtype = dtype_name(value)
    if dtype not in INTEGERS and dtype not in DTYPES:
        return f"a constant of dtype {value.dtype} (the kernel computes integer, float32, float16, bfloat16 values)"
    if dtype in INTEGERS and not isinstance(fill, int):
        return f"an integer constant with a float fill ({fill})"
    shape = tuple(int(d) for d in value.shape)
    return Coordinate(fill, 0, 1, dtype, shape, (0,) * len(shape))


def arange_of(node: Any) -> Coordinate | str:
    """The `Coordinate` of an ``aten.arange`` node (its own shape, stride 1), or why its values cannot be one: a
    start, end or step that is not a constant number, or a dtype the kernel does not compute."""
    import torch

    args = list(node.args)
    names = {"default": ("end",), "start": ("start", "end"), "start_step": ("start", "end", "step")}
    overload = getattr(node.target, "_overloadname", "")
    if overload not in names:
        return f"aten.arange.{overload} (the template reads arange.default, .start and .start_step)"
    given = dict(zip(names[overload], args, strict=False))
    given |= {k: node.kwargs[k] for k in ("start", "end", "step") if k in node.kwargs}
    start, step = given.get("start", 0), given.get("step", 1)
    for what, value in (("start", start), ("end", given.get("end")), ("step", step)):
        if not _is_number(value):
            return f"its {what} {value} is not a constant number (the kernel computes an arange of constants)"
    if not all(math.isfinite(v) for v in (start, step)):
        return f"arange({start}, {given.get('end')}, {step}) has a value that is not finite"
    value = node_value(node)
    if not isinstance(value, torch.Tensor) or value.dim() != 1:
        return "its result is not a 1-d tensor"
    dtype = dtype_name(value)
    if dtype not in INTEGERS and dtype not in DTYPES:
        return f"an arange of dtype {value.dtype} (the kernel computes integer, float32, float16, bfloat16 values)"
    if dtype in INTEGERS and not (isinstance(start, int) and isinstance(step, int)):
        return f"an integer arange with a float start or step ({start}, {step})"
    n = int(value.shape[0])
    return Coordinate(start, step, n, dtype, (n,), (1,))


def coordinate(node: Any) -> Coordinate | str | None:
    """The `Coordinate` whose values `node` holds, why it cannot be one (an arange, or a view of one, that is not),
    or None when `node` is not an arange nor a view or clone of one."""
    import torch
    import torch.fx

    if getattr(node, "op", None) != "call_function":
        return None
    name = aten_name(node)
    if name == "arange":
        return arange_of(node)
    if name in CONSTANTS:
        return constant_of(node)
    if name not in VIEWS and name != "clone":
        return None
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return None
    source = coordinate(node.args[0])
    if not isinstance(source, Coordinate):
        return source
    if name == "clone":
        return source
    rest = list(node.args[1:])
    if any(isinstance(a, torch.fx.Node) for a in [*rest, *node.kwargs.values()]):
        return f"{node.target} of an arange with an argument computed at run time"
    storage = torch.empty((source.length,), device="meta")
    base = storage.as_strided(source.shape, source.strides, source.offset)
    try:
        viewed = node.target(base, *rest, **node.kwargs)
    except Exception as e:  # noqa: BLE001 - a view torch cannot make of these strides
        return f"{node.target} of an arange that torch could not view without a copy ({str(e).splitlines()[0][:100]})"
    value = node_value(node)
    if not torch._C._is_alias_of(viewed, storage) or not isinstance(value, torch.Tensor):
        return f"{node.target} copies the arange (the kernel computes views of it only)"
    if tuple(viewed.shape) != tuple(value.shape):
        return f"{node.target} of an arange gives shape {tuple(viewed.shape)}, the graph says {tuple(value.shape)}"
    return Coordinate(
        source.start,
        source.step,
        source.length,
        source.dtype,
        tuple(viewed.shape),
        tuple(viewed.stride()),
        int(viewed.storage_offset()),
    )


def is_coordinate(node: Any) -> bool:
    """Whether `node` is an arange, or a view or clone of one, that the kernel computes from coordinates."""
    return isinstance(coordinate(node), Coordinate)


def integer_dtype(value: Any) -> bool:
    """Whether tensor `value` holds integers the kernel computes as ``i32``."""
    return dtype_name(value) in INTEGERS


def _operand_range(a: Any, seen: dict[Any, tuple[int, int] | str]) -> tuple[int, int] | str:
    import torch
    import torch.fx

    if isinstance(a, torch.fx.Node):
        value = node_value(a)
        if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
            return 0, 1  # a comparison's result, or a mask: 0 or 1 in integer math
        if not isinstance(value, torch.Tensor) or not integer_dtype(value):
            return f"{a.name} is not an integer tensor"
        return integer_range(a, seen)
    if isinstance(a, bool):
        return int(a), int(a)
    if isinstance(a, int):
        return a, a
    return f"a {type(a).__name__} operand {a!r} in integer arithmetic"


def _combine(op: str, ranges: list[tuple[int, int] | None], numbers: list[Any]) -> tuple[int, int] | str:
    """The bounds of integer operator `op`'s result from its operands' bounds (`ranges`; None where an argument
    is not a value, e.g. a clamp without a maximum)."""

    def products(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)

    a = ranges[0] if ranges else None
    b = ranges[1] if len(ranges) > 1 else None
    if op in ("add", "sub", "rsub"):
        alpha = numbers[2] if len(numbers) > 2 and numbers[2] is not None else 1
        if not isinstance(alpha, int):
            return f"{op} with alpha {alpha!r}"
        assert a is not None and b is not None
        x, y = (b, a) if op == "rsub" else (a, b)
        y = products(y, (alpha, alpha))
        return (x[0] + y[0], x[1] + y[1]) if op == "add" else (x[0] - y[1], x[1] - y[0])
    if op == "mul":
        assert a is not None and b is not None
        return products(a, b)
    if op == "neg":
        assert a is not None
        return -a[1], -a[0]
    if op == "abs":
        assert a is not None
        high = max(abs(a[0]), abs(a[1]))
        return (0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1]))), high
    if op in ("maximum", "minimum"):
        assert a is not None and b is not None
        pick = max if op == "maximum" else min
        return pick(a[0], b[0]), pick(a[1], b[1])
    if op in ("clamp", "clamp_min", "clamp_max"):
        assert a is not None
        low, high = a
        lo = ranges[1] if op in ("clamp", "clamp_min") and len(ranges) > 1 else None
        hi = ranges[2] if op == "clamp" and len(ranges) > 2 else (ranges[1] if op == "clamp_max" else None)
        if lo is not None:
            low, high = max(low, lo[0]), max(high, lo[1])
        if hi is not None:
            low, high = min(low, hi[0]), min(high, hi[1])
        return low, high
    if op == "where":
        assert b is not None and len(ranges) > 2 and ranges[2] is not None
        c = ranges[2]
        return min(b[0], c[0]), max(b[1], c[1])
    if op in ("clone", "_to_copy"):
        assert a is not None
        return a
    return f"{op} on integer values (the template computes {', '.join(sorted(INTEGER_OPS))})"


def integer_range(node: Any, seen: dict[Any, tuple[int, int] | str] | None = None) -> tuple[int, int] | str:
    """The least and the greatest value of integer node `node` as the kernel computes it (from the aranges'
    constants, by interval arithmetic), or why the kernel cannot compute it: it comes from outside (an input, an
    operator the template does not compute on integers) or does not fit in 32 bits and its own dtype."""
    import torch

    seen = {} if seen is None else seen
    if node in seen:
        return seen[node]
    value = node_value(node)
    found: tuple[int, int] | str
    if getattr(node, "op", None) != "call_function" or not isinstance(value, torch.Tensor):
        found = f"{node.name} is an integer tensor from outside the kernel (integer inputs are not built)"
    elif (c := coordinate(node)) is not None:
        if isinstance(c, str):
            found = c
        else:
            low, high = c.value_range()
            found = (int(low), int(high))
    else:
        found = _computed_range(node, seen)
    if not isinstance(found, str):
        dtype = dtype_name(value)
        bounds = INTEGERS.get(dtype, I32)
        low, high = max(bounds[0], I32[0]), min(bounds[1], I32[1])
        if found[0] < low or found[1] > high:
            found = (
                f"{node.name}'s {dtype} values reach [{found[0]}, {found[1]}], beyond the 32-bit integers the kernel "
                "computes them in"
            )
    seen[node] = found
    return found


def _computed_range(node: Any, seen: dict[Any, tuple[int, int] | str]) -> tuple[int, int] | str:
    """`integer_range` of an operator's integer result."""
    import torch
    import torch.fx

    from argus.frontend.families import pointwise

    op = aten_name(node)
    if op not in INTEGER_OPS:
        return f"{node.name} ({node.target}) makes integer values the template does not compute"
    if op == "scalar_tensor":
        v = node.args[0] if node.args else None
        if isinstance(v, bool | int) or (isinstance(v, float) and v.is_integer()):
            return int(v), int(v)
        return f"an integer constant tensor of {v!r}"
    params, _ = pointwise.RULES[op]
    args = pointwise._arguments(node, params)
    if isinstance(args, str):
        return args
    if op == "_to_copy":
        source = node_value(args[0])
        if isinstance(source, torch.Tensor) and source.is_floating_point():
            return f"{node.name} converts floats to integers (the template does not truncate floats)"
    value_args = args[1:] if op == "where" else args
    ranges: list[tuple[int, int] | None] = []
    for a in value_args:
        if a is None or isinstance(a, str):
            ranges.append(None)
            continue
        r = _operand_range(a, seen)
        if isinstance(r, str):
            return r
        ranges.append(r)
    if op == "where":
        ranges = [None, *ranges]
    numbers = [a if not isinstance(a, torch.fx.Node) else None for a in args]
    return _combine(op, ranges, numbers)


def stays_inside(node: Any, takes: Any) -> str | None:
    """None when every value `node` (an integer value, or a coordinate) gives is read inside a pointwise kernel:
    by views of it that stay inside too, or by operators `takes` (the template's check of one node, without this
    one: None when it takes the node) takes; else why not (it would have to be stored)."""
    import torch

    for user in node.users:
        if user.op == "call_function" and aten_name(user) in VIEWS and is_coordinate(user):
            why = stays_inside(user, takes)
        elif user.op == "call_function":
            why = takes(user)
            why = (
                None if why is None else f"read by {user.name} ({user.target}), which the template does not take: {why}"
            )
        else:
            why = "returned by the model"
        if why is not None:
            value = node_value(node)
            dtype = value.dtype if isinstance(value, torch.Tensor) else "?"
            return (
                f"its {dtype} values are {why}; integer values and views of an arange are computed in the pointwise "
                "kernel that reads them, never stored"
            )
    return None


def coordinate_views(node: Any, takes: Any) -> list[Any]:
    """The views (and clones) of aranges between `node`'s operands and the aranges: the nodes a pointwise kernel
    computing `node` takes in with it as coordinates, where every value they give stays inside (`stays_inside`)."""
    import torch.fx

    found: list[Any] = []
    stack = [a for a in node.all_input_nodes if isinstance(a, torch.fx.Node)]
    seen: set[Any] = set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if aten_name(n) in VIEWS and is_coordinate(n) and stays_inside(n, takes) is None:
            found.append(n)
            stack.extend(n.all_input_nodes)
    return found
