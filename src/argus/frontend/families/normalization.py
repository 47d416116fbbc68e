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

from argus.frontend.families.base import (
    DTYPES,
    KernelSource,
    aten_name,
    dtype_name,
    grid_axes,
    node_value,
    reference_source,
)

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
    grid = _grid_refusal(spec)
    if grid is not None:
        return f"{spec.op}: {grid}"
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


def _axes(extents: list[tuple[str, str, int]]) -> tuple[str, str]:
    """`grid_axes` of one of the template's kernels (`unsupported` refused the grids no order fits)."""
    axes = grid_axes(extents)
    if isinstance(axes, str):
        raise ValueError(f"normalization: {axes}")
    return axes


def _grid_refusal(spec: Spec) -> str | None:
    """Why the template's kernels cannot launch at the captured sizes (their grids of A and R / BR blocks, BR = 4,
    past CUDA's limits in every order), or None."""
    a, r, _, _ = spec.view
    found = grid_axes([("", "", a), ("", "", -(-r // 4))])
    return found if isinstance(found, str) else None


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
    chunks = split_of(spec, [RESULTS[res.args[1]] for res in results])
    if chunks is not None:
        return _split_source(name, subgraph, spec, chunks, placeholders, results)
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

    rows = ("T.cdiv(R, BR)", "br", -(-r // 4))  # BR's default
    axes = _axes([rows] if spec.batch else [("A", "ba", a), rows])
    grid = f"{axes[0]}, threads=128) as ({axes[1]})"
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


# ---------------------------------------------------------------------------------------------------------------
# the three-stage form: partial sums over many blocks, their totals, the normalizing pass

#: Normalizations of fewer elements than this stay one kernel (`split_of`), as reductions do.
SPLIT_MIN_ELEMENTS = 1 << 21
#: A chunk of a slice's S (when one slice per block leaves too few blocks) is a multiple of this many elements: of
#: every power-of-two BS up to it, so that a chunk is whole tiles whatever the tile policy.
CHUNK_QUANTUM = 1024


def split_of(spec: Spec, results: list[str], br: int = 4, bs: int = 128) -> tuple[int, int] | None:
    """``(C, SC)`` when the operator runs in three stages, else None. The one-kernel form runs one block per ``BR``
    statistics rows, which reads the whole ``(A, K, S)`` or ``(K, S)`` extent of its rows alone and unrolls the
    outer reduced extent (batch norm's batch, group norm's channels) while tracing: 16 blocks for KernelBench's
    batch norm of 64 channels. Three stages instead (`_split_source`): partial sums per (``a``, row tile, ``k``,
    chunk), one block each; their totals into each row's mean and rstd; the normalizing pass over the same blocks.
    Taken for operators of at least `SPLIT_MIN_ELEMENTS` elements whose only used result is the output (the mean,
    rstd and running statistics stay with the one kernel) and whose outer reduced extent is more than one or whose
    one kernel would launch fewer than `argus.frontend.families.reduction.min_blocks` blocks. Each slice's S is cut
    into ``C`` chunks of ``SC`` elements (``C = 1``, ``SC = S`` unless the slices alone are fewer blocks than that):
    ``SC`` a multiple of `CHUNK_QUANTUM`, ``C = ceil(S / SC)``."""
    from argus.frontend.families.reduction import min_blocks

    a, r, k, s = spec.view
    if results != ["out"] or a * r * k * s < SPLIT_MIN_ELEMENTS:
        return None
    outer = a if spec.batch else k
    one_kernel = (1 if spec.batch else a) * -(-r // br)
    if outer == 1 and one_kernel >= min_blocks():
        return None
    slices = a * -(-r // br) * k
    if slices >= min_blocks() or s <= CHUNK_QUANTUM:
        return 1, s
    want = -(-min_blocks() // slices)
    per_chunk = -(-s // want)
    sc = max(CHUNK_QUANTUM, -(-per_chunk // CHUNK_QUANTUM) * CHUNK_QUANTUM)
    c = -(-s // sc)
    return (1, s) if c == 1 else (c, sc)


def _split_source(
    name: str, subgraph: Any, spec: Spec, chunks: tuple[int, int], placeholders: list[Any], results: Any
) -> KernelSource:
    """The three kernels of `split_of` and the `argus.kernels.stages.Stages` that runs them (buffers: the partial
    sums ``S1``, ``S2`` and each row's ``MU`` and ``RSTD``, all f32)."""
    a, r, k, s = spec.view
    c, sc = chunks
    q = 1 if spec.batch else a  # statistics rows per r: one (batch norm) or one per a
    m = (a if spec.batch else 1) * k * c  # partial sums per statistics row
    role_of = {v.name: role for role, v in spec.operands.items()}
    (out,) = results
    dtypes = {n.name: DTYPES[dtype_name(node_value(n))] for n in placeholders}
    dtypes[out.name] = DTYPES[dtype_name(node_value(out))]
    x_dtype = dtypes[spec.x.name]
    view = spec.view
    partial_view = (r, a, k * c) if spec.batch else (a, r, k * c)
    sizes = {"A": a, "R": r, "K": k, "S": s, "KC": k * c, "Q": q, "M": m}
    count = float(spec.count)
    wb = [role for role in ("WEIGHT", "BIAS") if role in spec.operands]
    affine_view = (k, s) if spec.affine == "column" else (r, k)
    affine_dims = ("K", "S") if spec.affine == "column" else ("R", "K")
    what = f"{spec.op} of {tuple(node_value(spec.x).shape)} viewed as (A, R, K, S) = {spec.view}"
    tiles = "T.cdiv(S, BS)" if c == 1 else f"{sc} // BS"
    q_rule = "Q == 1" if spec.batch else "Q == A"
    m_rule = f"M == A * K * {c}" if spec.batch else f"M == K * {c}"
    chunk_check = (
        []
        if c == 1
        else [
            f"    if {sc} % BS:",
            f'        raise ValueError("a chunk of {sc} elements is whole tiles only for BS dividing it, not %d" % BS)',
        ]
    )
    # what the chunked stages rely on, stated for the verifier (which proves a kernel over all sizes its
    # assumptions allow): a single k when the grid index is the chunk alone, and C chunks covering S
    chunked = (
        []
        if c == 1
        else (['    T.assume("K == 1")  # the grid\'s third index is the chunk alone'] if k == 1 else [])
        + [f'    T.assume("S <= {c * sc}")  # {c} chunks of {sc} cover S']
    )
    # the block's slice (a, row tile, k) and chunk of S, from the grid's third index kc = k * C + chunk
    locate = [
        f"        k = kc // {c}" if c > 1 and k > 1 else ("        k = kc" if c == 1 else "        k = 0"),
        f"        c = kc % {c}" if c > 1 and k > 1 else ("        c = kc" if c > 1 else "        c = 0"),
        f"        tiles = {tiles}  # tiles of BS elements per chunk",
    ]
    x_at = "X.tile((ba, br, k, c * tiles + j), (None, BR, None, BS))"
    axes = _axes([("A", "ba", a), ("T.cdiv(R, BR)", "br", -(-r // 4)), (f"K * {c}", "kc", k * c)])
    grid = f"    with T.grid({axes[0]}, threads=128) as ({axes[1]}):"
    stats_axes = _axes([("Q", "bq", q), ("T.cdiv(R, BR)", "br", -(-r // 4))])
    row_first = f"X.tile(({'0' if spec.batch else 'ba'}, br, 0, 0), (None, BR, None, BS))"
    p_at = "S{i}.tile((br, ba, kc), (BR, None, None))" if spec.batch else "S{i}.tile((ba, br, kc), (None, BR, None))"
    decorator = '@argus.kernel(reference={ref}, sizes={sizes!r}, policies={{"tile_shape": ("BR", "BS")}})'
    partial_dims = ("R", "A", "KC") if spec.batch else ("A", "R", "KC")
    texts: list[str] = []

    # stage 1: partial shifted sums
    texts.append(
        "\n".join(
            [
                f"def {name}_partial_reference(X):",
                f'    """{what}, stage 1 of 3: per (a, row, k, chunk of {sc}) the sums of x - shift and of its square '
                '(shift: the row\'s first element)."""',
                "    A, R, K, S = X.shape",
                "    x = X.float()",
                f"    d = x - x[{':1' if spec.batch else ':'}, :, :1, :1]",
                f"    d = torch.nn.functional.pad(d, (0, {c * sc} - S)).view(A, R, K, {c}, {sc})",
                f"    s1, s2 = d.sum(-1).reshape(A, R, K * {c}), (d * d).sum(-1).reshape(A, R, K * {c})",
                "    return (s1.transpose(0, 1).contiguous(), s2.transpose(0, 1).contiguous())"
                if spec.batch
                else "    return s1, s2",
            ]
        )
        + "\n"
    )
    texts.append(
        "\n".join(
            [
                decorator.format(ref=f"{name}_partial_reference", sizes=sizes),
                f"def {name}_partial(",
                f"    X: T.Tensor[{DIMS!r}, T.{x_dtype}],",
                f"    S1: T.Tensor[{partial_dims!r}, T.f32],",
                f"    S2: T.Tensor[{partial_dims!r}, T.f32],",
                "    BR: int = 4,",
                "    BS: int = 128,",
                "):",
                f'    """{what}, stage 1 of 3: one block per (a, BR rows, k, chunk of S), the sums of x - shift and of '
                'its square over its tiles (shift: the row\'s first element, as every stage takes it)."""',
                *chunk_check,
                f'    T.assume("KC == K * {c}")  # the partial sums: {c} chunk(s) of each slice',
                *chunked,
                grid,
                *locate,
                "        first = T.alloc_fragment((BR, BS), T.f32)",
                f"        T.copy({row_first}, first)",
                "        shift = T.reduce_sum(T.where(T.index(first, 1) < 1, first, 0.0), axis=1)",
                "        s1 = T.alloc_fragment((BR, BS), T.f32)",
                "        s2 = T.alloc_fragment((BR, BS), T.f32)",
                "        T.fill(s1, 0.0)",
                "        T.fill(s2, 0.0)",
                "        for j in T.serial(tiles):",
                "            x = T.alloc_fragment((BR, BS), T.f32)",
                f"            T.copy({x_at}, x)",
                "            d = T.where(T.index(x, 1) + (c * tiles + j) * BS < S, x - shift[:, None], 0.0)",
                "            T.copy(s1 + d, s1)",
                "            T.copy(s2 + d * d, s2)",
                f"        T.copy(T.reduce_sum(s1, axis=1), {p_at.format(i=1)})",
                f"        T.copy(T.reduce_sum(s2, axis=1), {p_at.format(i=2)})",
            ]
        )
        + "\n"
    )

    # stage 2: each row's totals, mean and rstd
    texts.append(
        "\n".join(
            [
                f"def {name}_stats_reference(X, S1, S2):",
                f'    """{what}, stage 2 of 3: each statistics row\'s mean and rstd from its {m} partial sums."""',
                "    Q = S1.shape[0]",
                "    shift = X.float()[:Q, :, 0, 0]",
                f"    m1 = S1.sum(-1) / {count!r}",
                f"    var = (S2.sum(-1) / {count!r} - m1 * m1).clamp_min(0.0)",
                f"    return shift + m1, torch.rsqrt(var + {spec.eps!r})",
            ]
        )
        + "\n"
    )
    texts.append(
        "\n".join(
            [
                decorator.format(ref=f"{name}_stats_reference", sizes=sizes),
                f"def {name}_stats(",
                f"    X: T.Tensor[{DIMS!r}, T.{x_dtype}],",
                "    S1: T.Tensor[('Q', 'R', 'M'), T.f32],",
                "    S2: T.Tensor[('Q', 'R', 'M'), T.f32],",
                "    MU: T.Tensor[('Q', 'R'), T.f32],",
                "    RSTD: T.Tensor[('Q', 'R'), T.f32],",
                "    BR: int = 4,",
                "    BS: int = 128,",
                "):",
                f'    """{what}, stage 2 of 3: per BR statistics rows, the totals of their {m} partial sums, then '
                f'mean = shift + S1 / n and rstd = 1 / sqrt(S2 / n - (S1 / n)^2 + eps), n = {spec.count}."""',
                f'    T.assume("{q_rule}")  # statistics rows per channel',
                f'    T.assume("{m_rule}")  # partial sums per statistics row',
                *chunked,
                f"    with T.grid({stats_axes[0]}, threads=128) as ({stats_axes[1]}):",
                "        first = T.alloc_fragment((BR, BS), T.f32)",
                "        T.copy(X.tile((bq, br, 0, 0), (None, BR, None, BS)), first)",
                "        shift = T.reduce_sum(T.where(T.index(first, 1) < 1, first, 0.0), axis=1)",
                "        t1 = T.alloc_fragment((BR, BS), T.f32)",
                "        t2 = T.alloc_fragment((BR, BS), T.f32)",
                "        T.fill(t1, 0.0)",
                "        T.fill(t2, 0.0)",
                "        for j in T.serial(T.cdiv(M, BS)):",
                "            p1 = T.alloc_fragment((BR, BS), T.f32)",
                "            p2 = T.alloc_fragment((BR, BS), T.f32)",
                "            T.copy(S1.tile((bq, br, j), (None, BR, BS)), p1)",
                "            T.copy(S2.tile((bq, br, j), (None, BR, BS)), p2)",
                "            T.copy(t1 + T.where(T.index(p1, 1) + j * BS < M, p1, 0.0), t1)",
                "            T.copy(t2 + T.where(T.index(p2, 1) + j * BS < M, p2, 0.0), t2)",
                f"        m1 = T.reduce_sum(t1, axis=1) / {count!r}",
                f"        var = T.maximum(T.reduce_sum(t2, axis=1) / {count!r} - m1 * m1, 0.0)",
                "        T.copy(shift + m1, MU.tile((bq, br), (None, BR)))",
                f"        T.copy(T.rsqrt(var + {spec.eps!r}), RSTD.tile((bq, br), (None, BR)))",
            ]
        )
        + "\n"
    )

    # stage 3: the normalizing pass
    affine_ref = {"WEIGHT": "*", "BIAS": "+"}
    bshape = "(1, 1, K, S)" if spec.affine == "column" else "(1, R, K, 1)"
    texts.append(
        "\n".join(
            [
                f"def {name}_normalize_reference(X, MU, RSTD{''.join(', ' + w for w in wb)}):",
                f'    """{what}, stage 3 of 3: (x - mean) * rstd, then the affine parameters."""',
                "    A, R, K, S = X.shape",
                "    y = (X.float() - MU.view(-1, R, 1, 1)) * RSTD.view(-1, R, 1, 1)",
                *[f"    y = y {affine_ref[w]} {w}.float().reshape{bshape}" for w in wb],
                f"    return y.to(torch.{str(node_value(out).dtype).removeprefix('torch.')})",
            ]
        )
        + "\n"
    )
    q_at = "(0, br)" if spec.batch else "(ba, br)"
    body = [
        decorator.format(ref=f"{name}_normalize_reference", sizes=sizes),
        f"def {name}_normalize(",
        f"    X: T.Tensor[{DIMS!r}, T.{x_dtype}],",
        "    MU: T.Tensor[('Q', 'R'), T.f32],",
        "    RSTD: T.Tensor[('Q', 'R'), T.f32],",
        *[f"    {w}: T.Tensor[{affine_dims!r}, T.{dtypes[spec.operands[w].name]}]," for w in wb],
        f"    OUT: T.Tensor[{DIMS!r}, T.{dtypes[out.name]}],",
        "    BR: int = 4,",
        "    BS: int = 128,",
        "):",
        f'    """{what}, stage 3 of 3: one block per (a, BR rows, k, chunk of S), as stage 1; every tile written as '
        '(x - mean) * rstd with the affine parameters."""',
        *chunk_check,
        f'    T.assume("{q_rule}")  # statistics rows per channel',
        *chunked,
        grid,
        *locate,
        "        row = T.alloc_fragment((BR, BS), T.f32)  # the layout of a tile's rows",
        "        mu = T.alloc_reduced(row, axis=1)",
        "        rstd = T.alloc_reduced(row, axis=1)",
        f"        T.copy(MU.tile({q_at}, (None, BR)), mu)",
        f"        T.copy(RSTD.tile({q_at}, (None, BR)), rstd)",
    ]
    if spec.affine == "row":
        for w, var in (("WEIGHT", "w"), ("BIAS", "b")):
            if w in wb:
                body += [
                    f"        {var} = T.alloc_reduced(row, axis=1)  # one per row, channel k",
                    f"        T.copy({w}.tile((br, k), (BR, None)), {var})",
                ]
        body += [
            f"        scale = {'rstd * w' if 'WEIGHT' in wb else 'rstd'}",
            f"        offset = {'b - mu * scale' if 'BIAS' in wb else '-(mu * scale)'}",
            "        for j in T.serial(tiles):",
            "            x = T.alloc_fragment((BR, BS), T.f32)",
            f"            T.copy({x_at}, x)",
            "            T.copy(x * scale[:, None] + offset[:, None], OUT.tile((ba, br, k, c * tiles + j), "
            "(None, BR, None, BS)))",
        ]
    else:
        body += [
            "        for j in T.serial(tiles):",
            "            x = T.alloc_fragment((BR, BS), T.f32)",
            f"            T.copy({x_at}, x)",
            "            y = (x - mu[:, None]) * rstd[:, None]",
        ]
        for w, var, op in (("WEIGHT", "w", "*"), ("BIAS", "b", "+")):
            if w in wb:
                body += [
                    f"            {var} = T.alloc_reduced(x, axis=0)  # one per column",
                    f"            T.copy({w}.tile((k, c * tiles + j), (None, BS)), {var})",
                    f"            y = y {op} {var}[None, :]",
                ]
        body.append("            T.copy(y, OUT.tile((ba, br, k, c * tiles + j), (None, BR, None, BS)))")
    texts.append("\n".join(body) + "\n")

    buffers = {"S1": (partial_view, "float32"), "S2": (partial_view, "float32"), "MU": ((q, r), "float32"),
               "RSTD": ((q, r), "float32")}  # fmt: skip
    inputs = {role_of[n.name]: tuple(int(d) for d in node_value(n).shape) for n in placeholders}
    out_shape = tuple(int(d) for d in node_value(out).shape)
    out_dtype = str(node_value(out).dtype).removeprefix("torch.")
    stages = [
        f"        Stage({name}_partial, (('X', {view!r}), ('S1', {partial_view!r}), ('S2', {partial_view!r}))),",
        f"        Stage({name}_stats, (('X', {view!r}), ('S1', {(q, r, m)!r}), ('S2', {(q, r, m)!r}), "
        f"('MU', {(q, r)!r}), ('RSTD', {(q, r)!r}))),",
        f"        Stage({name}_normalize, (('X', {view!r}), ('MU', {(q, r)!r}), ('RSTD', {(q, r)!r}), "
        + "".join(f"('{w}', {affine_view!r}), " for w in wb)
        + f"('OUT', {view!r}))),",
    ]
    texts.append(
        "\n".join(
            [
                "from argus.kernels.stages import Stage, Stages  # noqa: E402",
                "",
                f"{name} = Stages(",
                f"    {name!r},",
                "    [",
                *stages,
                "    ],",
                f"    {inputs!r},",
                f"    {{'OUT': ({out_shape!r}, {out_dtype!r})}},",
                f"    {buffers!r},",
                ")",
            ]
        )
        + "\n"
    )
    ref = reference_source(
        f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({spec.op}), the results the graph uses."
    )
    shapes = {n.name: tuple(int(d) for d in node_value(n).shape) for n in placeholders}
    shapes[out.name] = out_shape
    return KernelSource(
        name,
        ref,
        "\n\n".join(texts),
        [n.name for n in placeholders],
        [out.name],
        {},
        math.prod(out_shape),
        dtypes,
        shapes,
        library=True,
    )
