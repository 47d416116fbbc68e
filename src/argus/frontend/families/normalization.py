"""The normalization family: layer norm, group norm, instance norm and batch norm (training mode) as one DSL kernel
per operator, statistics by shifted sums in float32 and a normalize pass applying the affine parameters.

Every operator is seen as the same problem on its input viewed as ``(A, R, K, S)``: statistics rows ``r`` (one
mean and one variance each), each reduced over ``(K, S)`` — and over ``A`` too for batch norm, where ``A`` is the
batch; otherwise ``A`` is a grid dimension (group norm's samples). ``S`` is the contiguous extent.

| operator | view ``(A, R, K, S)`` | affine parameters |
|---|---|---|
| ``native_layer_norm`` | ``(1, rows, 1, normalized elements)`` | per column, viewed ``(1, S)`` |
| ``native_group_norm`` | ``(N, groups, channels per group, HxW)`` | per channel, viewed ``(groups, K)`` |
| ``_native_batch_norm_legit`` (no stats: instance norm's form) | ``(N, C, 1, HxW)``, ``A`` reduced | per channel |
| ``_native_batch_norm_legit_functional`` (BatchNorm in training) | ``(N, C, 1, HxW)``, ``A`` reduced | per channel |

The kernel (`kernel_source`): a grid over ``A`` (unless reduced) and ``R / BR`` blocks of 128 threads; each block
holds ``(BR, BS)`` tiles, one warp per statistics row (a row's partial results are combined with shuffles, so a
row spans at most one warp: ``BS`` at most 32 threads x 4 values). Pass 1 loops over the reduced extent in
``BS``-element tiles along ``S`` (coalesced 16-byte loads) and keeps, per lane, the sums of ``x - shift`` and of its
square in float32 (the tail masked), where ``shift`` is the row's first element: shifted sums, so
``var = E[(x - shift)^2] - E[x - shift]^2`` does not cancel catastrophically as the unshifted ``E[x^2] - E[x]^2``
does when the mean is large against the spread. The outer reduced extent (a group's channels ``K``, or batch
norm's ``A``) is unrolled while tracing, one serial loop over ``S`` per slice: the verifier traces a carried
accumulator through one loop at a time, and a nest of two serial loops carrying one did not finish. Pass 2 reads
the tiles again and writes ``x * scale + offset`` with ``scale = rstd * weight`` and
``offset = bias - mean * scale`` (per column for layer norm). The op's mean and rstd results are written when the
graph uses them, batch norm's new running statistics too (``(1 - momentum) * running + momentum * batch``, the
variance unbiased) — though `argus.frontend.capture` drops those buffer updates from the graph today.
``(BR, BS)`` is the kernel's declared ``tile_shape`` policy.

Not taken (`unsupported` says why): eval-mode batch norm (``_native_batch_norm_legit_no_training``: running
statistics), the in-place ``_native_batch_norm_legit.default``, ``native_batch_norm``, dtypes other than float32,
float16 and bfloat16. RMS norm is not one operator after the decompositions (``pow``, ``mean``, ``rsqrt``,
``mul``): the reduction and pointwise families own it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus.frontend.families.base import DTYPES, KernelSource, aten_name, dtype_name, node_value, reference_source

#: The DSL names of the four extents of the view.
DIMS = ("A", "R", "K", "S")

#: What each result of an operator is, by index.
RESULTS = ("out", "mean", "rstd", "running_mean", "running_var")


@dataclass
class Spec:
    """One normalization node read: its operands, the ``(A, R, K, S)`` view, whether ``A`` is reduced (batch
    norm), where the affine parameters sit (``row``: one per ``(r, k)``; ``column``: one per ``(k, s)``), eps,
    momentum and the number of elements each statistic is taken over."""

    op: str
    x: Any
    view: tuple[int, int, int, int]
    batch: bool
    affine: str
    eps: float
    weight: Any = None
    bias: Any = None
    running_mean: Any = None
    running_var: Any = None
    momentum: float = 0.0
    operands: dict[str, Any] = field(default_factory=dict)

    @property
    def count(self) -> int:
        a, _, k, s = self.view
        return (a if self.batch else 1) * k * s


def _arg(node: Any, index: int, name: str, default: Any = None) -> Any:
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(name, default)


def read(node: Any) -> Spec | str:
    """The node as a `Spec`, or why the template cannot take it."""
    import torch
    import torch.fx

    name = aten_name(node)
    overload = getattr(node.target, "_overloadname", "")
    x = _arg(node, 0, "input")
    if not isinstance(x, torch.fx.Node) or not isinstance(node_value(x), torch.Tensor):
        return "its input is not a tensor"
    shape = tuple(node_value(x).shape)
    if name == "native_layer_norm":
        normalized = list(_arg(node, 1, "normalized_shape"))
        axis = len(shape) - len(normalized)
        if axis < 0 or list(shape[axis:]) != normalized:
            return f"normalized_shape {normalized} is not the trailing shape of {shape}"
        view = (1, math.prod(shape[:axis]), 1, math.prod(normalized))
        spec = Spec(name, x, view, False, "column", float(_arg(node, 4, "eps")))
        spec.weight, spec.bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
    elif name == "native_group_norm":
        n, c, hw, groups = (int(_arg(node, i, k)) for i, k in ((3, "N"), (4, "C"), (5, "HxW"), (6, "group")))
        if groups < 1 or c % groups or math.prod(shape) != n * c * hw:
            return f"group norm of {shape} with N={n}, C={c}, HxW={hw}, {groups} groups"
        spec = Spec(name, x, (n, groups, c // groups, hw), False, "row", float(_arg(node, 7, "eps")))
        spec.weight, spec.bias = _arg(node, 1, "weight"), _arg(node, 2, "bias")
    elif name in ("_native_batch_norm_legit", "_native_batch_norm_legit_functional"):
        if len(shape) < 2:
            return f"batch norm of a {len(shape)}-d input"
        view = (shape[0], shape[1], 1, math.prod(shape[2:]))
        functional = name == "_native_batch_norm_legit_functional"
        if name == "_native_batch_norm_legit" and overload != "no_stats":
            return "it updates its running statistics in place (the graph is not functionalized)"
        first = 5 if functional else 3
        training = _arg(node, first, "training")
        if training is not True:
            return "batch norm in eval mode (running statistics) is not built yet"
        spec = Spec(name, x, view, True, "row", float(_arg(node, first + 2, "eps")))
        spec.weight, spec.bias = _arg(node, 1, "weight"), _arg(node, 2, "bias")
        spec.momentum = float(_arg(node, first + 1, "momentum"))
        if functional:
            spec.running_mean, spec.running_var = _arg(node, 3, "running_mean"), _arg(node, 4, "running_var")
        if spec.count < 2 and any(_index(u) == 4 for u in node.users):
            return "the unbiased running variance of a single value per channel"
    elif name in ("_native_batch_norm_legit_no_training", "native_batch_norm", "batch_norm"):
        return f"{name} (batch norm with running statistics, eval mode) is not built yet"
    else:
        return f"the normalization template has no rule for {node.target}"
    spec.operands = {
        k: v
        for k, v in (
            ("X", x),
            ("WEIGHT", spec.weight),
            ("BIAS", spec.bias),
            ("RUNNING_MEAN", spec.running_mean),
            ("RUNNING_VAR", spec.running_var),
        )
        if v is not None
    }
    return spec


def _index(user: Any) -> int | None:
    return user.args[1] if aten_name(user) == "" and getattr(user.target, "__name__", "") == "getitem" else None


def unsupported(node: Any) -> str | None:
    """None when the normalization template can take `node`, else why not (see the module docstring)."""
    import torch
    import torch.fx

    spec = read(node)
    if isinstance(spec, str):
        return spec
    seen: set[str] = set()
    for role, operand in spec.operands.items():
        if not isinstance(operand, torch.fx.Node):
            return f"{role.lower()} is a {type(operand).__name__}, not a tensor"
        val = node_value(operand)
        if not isinstance(val, torch.Tensor) or dtype_name(val) not in DTYPES:
            dtype = getattr(val, "dtype", None)
            return f"{role.lower()} has dtype {dtype} (the template takes float32, float16, bfloat16)"
        if operand.name in seen:
            return f"{role.lower()} is the same tensor as another operand"
        seen.add(operand.name)
    a, r, k, s = spec.view
    for role in ("WEIGHT", "BIAS", "RUNNING_MEAN", "RUNNING_VAR"):
        if role in spec.operands:
            numel = node_value(spec.operands[role]).numel()
            want = (k * s if spec.affine == "column" else r * k) if role in ("WEIGHT", "BIAS") else r
            if numel != want:
                return f"{role.lower()} has {numel} elements, {want} expected"
    for user in node.users:
        index = _index(user)
        if index is None:
            return f"its result is used by {user.target} directly (not through getitem)"
        val = node_value(user)
        if not isinstance(val, torch.Tensor) or dtype_name(val) not in DTYPES:
            return f"result {index} has dtype {getattr(val, 'dtype', None)}"
        if index >= len(RESULTS) or (index >= 3 and spec.running_mean is None):
            return f"result {index} of {spec.op}"
    return None


# ---------------------------------------------------------------------------------------------------------------
# source text


def _norm_node(subgraph: Any) -> Any:
    return next(n for n in subgraph.graph.nodes if n.op == "call_function" and aten_name(n))


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of one normalization node and the getitems selecting its used results (see the module
    docstring). Scalars are the graph's constants (eps, momentum)."""
    node = _norm_node(subgraph)
    spec = read(node)
    assert not isinstance(spec, str)  # unsupported() was asked first
    a, r, k, s = spec.view
    placeholders = [n for n in subgraph.graph.nodes if n.op == "placeholder"]
    output = next(n for n in subgraph.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], tuple | list) else (output.args[0],)
    role_of = {v.name: role for role, v in spec.operands.items()}
    dtypes = {n.name: DTYPES[dtype_name(node_value(n))] for n in placeholders}
    row_view = ("R",) if spec.batch else ("A", "R")
    operand_view = {
        "X": DIMS,
        "WEIGHT": ("K", "S") if spec.affine == "column" else ("R", "K"),
        "BIAS": ("K", "S") if spec.affine == "column" else ("R", "K"),
        "RUNNING_MEAN": ("R",),
        "RUNNING_VAR": ("R",),
    }
    sizes = dict(zip(DIMS, spec.view, strict=True))
    shapes: dict[str, tuple[int, ...]] = {}
    signature: list[str] = []
    for n in placeholders:
        role = role_of[n.name]
        dims = operand_view[role]
        shapes[n.name] = tuple(sizes[d] for d in dims)
        signature.append(f"{role}: T.Tensor[{dims!r}, T.{dtypes[n.name]}]")
    out_roles: list[str] = []
    for res in results:
        role = RESULTS[res.args[1]].upper()
        dims = DIMS if role == "OUT" else row_view
        dtypes[res.name] = DTYPES[dtype_name(node_value(res))]
        shapes[res.name] = tuple(sizes[d] for d in dims)
        signature.append(f"{role}: T.Tensor[{dims!r}, T.{dtypes[res.name]}]")
        out_roles.append(role)
    signature += ["BR: int = 4", "BS: int = 128"]

    grid = "T.cdiv(R, BR), threads=128) as (br,)" if spec.batch else "A, T.cdiv(R, BR), threads=128) as (ba, br)"
    a_index = "a" if spec.batch else "ba"
    x_tile = f"({a_index}, br, k, j), (None, BR, None, BS)"
    row_tile = "br, BR" if spec.batch else "(ba, br), (None, BR)"
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={sizes!r}, policies={{"tile_shape": ("BR", "BS")}})',
        f"def {name}(",
        *[f"    {p}," for p in signature],
        "):",
        f'    """{spec.op} of {tuple(node_value(spec.x).shape)} viewed as (A, R, K, S) = {spec.view}: the statistics '
        f"of each row r over {'(A, K, S)' if spec.batch else '(K, S)'} by shifted sums, then x * scale + shift."
        '"""',
        f"    T.assume(T.eq({'A' if spec.batch else 'K'}, {a if spec.batch else k}))  # the unrolled extent",
        f"    with T.grid({grid}:",
        "        # each row's first element: the shift that keeps the sums below free of cancellation",
        "        first = T.alloc_fragment((BR, BS), T.f32)",
        f"        T.copy(X.tile(({'0' if spec.batch else 'ba'}, br, 0, 0), (None, BR, None, BS)), first)",
        "        shift = T.reduce_sum(T.where(T.index(first, 1) < 1, first, 0.0), axis=1)",
        "        s1 = T.alloc_fragment((BR, BS), T.f32)  # per lane: the sum of x - shift, and of its square",
        "        s2 = T.alloc_fragment((BR, BS), T.f32)",
        "        T.fill(s1, 0.0)",
        "        T.fill(s2, 0.0)",
    ]
    # the outer reduced extent (the batch, or a group's channels) is unrolled while tracing: one serial loop per
    # slice, so the accumulators are carried through one loop at a time (the verifier's cost grows with the nest)
    outer, extent = ("a", a) if spec.batch else ("k", k)
    inner = "a, br, 0, j" if spec.batch else "ba, br, k, j"
    indent = "        "
    lines += [
        f"{indent}for {outer} in range({extent}):  # unrolled: {'A' if spec.batch else 'K'} = {extent}",
        f"{indent}    for j in T.serial(T.cdiv(S, BS)):",
        f"{indent}        x = T.alloc_fragment((BR, BS), T.f32)",
        f"{indent}        T.copy(X.tile(({inner}), (None, BR, None, BS)), x)",
        f"{indent}        d = T.where(T.index(x, 1) + j * BS < S, x - shift[:, None], 0.0)  # the tail masked",
        f"{indent}        T.copy(s1 + d, s1)",
        f"{indent}        T.copy(s2 + d * d, s2)",
    ]
    lines += [
        f"        m1 = T.reduce_sum(s1, axis=1) / {float(spec.count)!r}  # the mean of x - shift, over {spec.count}",
        f"        var = T.maximum(T.reduce_sum(s2, axis=1) / {float(spec.count)!r} - m1 * m1, 0.0)",
        "        mu = shift + m1",
        f"        rstd = T.rsqrt(var + {spec.eps!r})",
    ]
    if "MEAN" in out_roles:
        lines.append(f"        T.copy(mu, MEAN.tile({row_tile}))")
    if "RSTD" in out_roles:
        lines.append(f"        T.copy(rstd, RSTD.tile({row_tile}))")
    m = spec.momentum
    for role, fresh in (("RUNNING_MEAN", "mu"), ("RUNNING_VAR", f"var * {spec.count / max(spec.count - 1, 1)!r}")):
        if role in out_roles:
            lines += [
                f"        {role.lower()} = T.alloc_reduced(s1, axis=1)",
                f"        T.copy({role}.tile(br, BR), {role.lower()})",
                f"        T.copy({role.lower()} * {1.0 - m!r} + {fresh} * {m!r}, {role}.tile(br, BR))",
            ]
    if "OUT" in out_roles:
        lines += _normalize_pass(spec, x_tile)
    ref = reference_source(
        f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({spec.op}), the results the graph uses."
    )
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [n.name for n in placeholders],
        [res.name for res in results],
        {},
        math.prod(node_value(results[0]).shape),
        dtypes,
        shapes,
    )


def _normalize_pass(spec: Spec, x_tile: str) -> list[str]:
    """Pass 2: every tile read again and written as ``x * scale + shift``."""
    has_w, has_b = "WEIGHT" in spec.operands, "BIAS" in spec.operands
    indent = "        "
    lines: list[str] = []
    if spec.batch:
        lines.append(f"{indent}for a in T.serial(A):")
        indent += "    "
    lines.append(f"{indent}for k in T.serial(K):")
    if spec.affine == "row":
        body = indent + "    "
        for role, var in (("WEIGHT", "w"), ("BIAS", "b")):
            if role in spec.operands:
                lines += [
                    f"{body}{var} = T.alloc_reduced(s1, axis=1)  # one per row, channel k",
                    f"{body}T.copy({role}.tile((br, k), (BR, None)), {var})",
                ]
        scale = "rstd * w" if has_w else "rstd"
        shift = "b - mu * scale" if has_b else "-(mu * scale)"
        lines += [f"{body}scale = {scale}", f"{body}offset = {shift}"]
        lines += [
            f"{body}for j in T.serial(T.cdiv(S, BS)):",
            f"{body}    x = T.alloc_fragment((BR, BS), T.f32)",
            f"{body}    T.copy(X.tile({x_tile}), x)",
            f"{body}    T.copy(x * scale[:, None] + offset[:, None], OUT.tile({x_tile}))",
        ]
        return lines
    body = indent + "    "
    lines += [
        f"{body}for j in T.serial(T.cdiv(S, BS)):",
        f"{body}    x = T.alloc_fragment((BR, BS), T.f32)",
        f"{body}    T.copy(X.tile({x_tile}), x)",
        f"{body}    y = (x - mu[:, None]) * rstd[:, None]",
    ]
    for role, var, combine in (("WEIGHT", "w", "*"), ("BIAS", "b", "+")):
        if role in spec.operands:
            lines += [
                f"{body}    {var} = T.alloc_reduced(x, axis=0)  # one per column",
                f"{body}    T.copy({role}.tile((k, j), (None, BS)), {var})",
                f"{body}    y = y {combine} {var}[None, :]",
            ]
    lines.append(f"{body}    T.copy(y, OUT.tile({x_tile}))")
    return lines
