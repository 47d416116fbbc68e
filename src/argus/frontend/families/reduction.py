"""The reduction family: one ATen reduction over an axis, an axis set or the whole tensor as one DSL kernel.

Operators (`unsupported` says why any other is refused): ``sum`` and ``mean`` (``.dim_IntList`` / ``.dim`` and the
full ``.default``), ``amax`` and ``amin``, ``max.dim`` and ``min.dim`` (values, and int64 indices when the graph
reads them), ``max.default`` / ``min.default`` (the whole tensor), ``argmax`` and ``argmin``
(int64; ``dim=None`` is the flattened tensor), and ``linalg_vector_norm`` of order 2 (a sum of squares, then its
square root), 1 (a sum of magnitudes), inf and -inf (a maximum / minimum of magnitudes; before a maximum, the
elements past R are masked to -inf after the magnitude, which would otherwise turn the -inf padding into +inf).
Inputs are float32, float16 or bfloat16; every kernel accumulates
in float32 and rounds once into the output's dtype. Indices are the first occurrence of the extremum, as torch's.

The reduced axes must be contiguous in the shape (axes of extent 1 are ignored), so the input is the 3-d view
``(OUTER, R, INNER)``: OUTER the axes before the reduced ones, R the reduced ones, INNER the axes after them. The
kernel takes the input in that view and the output as ``(OUTER, INNER)`` (or ``(OUTER,)``), declared through
`KernelSource.shapes`. Two designs, 128 threads a block, both looping over R with a running accumulator:

* **INNER > 1** (a middle axis): a block per (outer index, ``BN`` columns of INNER); each iteration loads a
  ``(BR, BN)`` tile of R rows x INNER columns, coalesced along INNER. Every thread holds whole columns of the
  tile (``BN`` is a multiple of 128 x the 4 floats of a 16-byte vector), so reducing a tile over its rows stays in
  its registers.
* **INNER == 1** (the last axis, or the whole tensor): a block per ``BM`` rows; each iteration loads a
  ``(BM, BN)`` tile along R (a warp per row), the row's lanes combined with warp shuffles.

The last tile is masked: elements past R read the reduction's identity (``pad=``: 0 for a sum, -inf for a
maximum, +inf for a minimum). Sums, means, maxima and minima reduce each tile and fold it into a running value per
output element (folding the padded tile elementwise into a tile-shaped accumulator instead is the same work, but
the verifier classes a real partial sum plus 0-padding as padding of unknown value: ``OOB_MASKED_REDUCTION``).
Arg-reductions keep, per lane, the best value and the position where it was first seen (a later element replaces
it only when strictly better), then take the smallest position among the lanes holding the row's extremum.
Positions are float32 values, exact below 2^24, so R is at most 2^24 (assumed by the kernel, refused by
`unsupported`). Tile sizes are the kernel's ``tile_shape`` policy.

Not taken: ``prod`` (the DSL reduces with sums and maxima only; a float one arrives decomposed), ``var``/``std``
whole (they arrive decomposed into two passes, `argus.frontend.decompositions`; one that did not is refused), vector
norms of other orders, reduced axes that are not contiguous (a sum, mean, maximum or minimum over them arrives as one
reduction per run of neighbouring axes, `argus.frontend.decompositions`), integer or boolean inputs. NaN inputs
follow the DSL's maximum (on the GPU ``fmaxf``, which drops NaN), not torch's NaN propagation.

A value reduction takes in its **prologue** (`prologue_nodes`, the template's ``absorbs``): the elementwise nodes
before it that only feed it and together read at most four tensors of its input's shape. The kernel loads those
tensors tile by tile and computes them on each element (the pointwise family's math,
`argus.frontend.families.pointwise.render_calls`); the elements past R, loaded as the identity, are masked back to
it after the map. Split in two stages, the first computes it.

The group's subgraph is the kernel's reference (written out for ``argus interpret``, taking the tensors in the
kernel's views). A ``max.dim`` / ``min.dim`` node returns a tuple: its group's subgraph is given explicit
``getitem`` outputs (values, and indices when the graph reads them), so each kernel output is a node of the
subgraph, as the rest of the frontend expects.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argus.frontend.families.base import (
    DTYPES,
    KernelSource,
    aten_call,
    aten_name,
    dtype_name,
    format_arg,
    grid_axes,
    min_blocks,
    node_value,
)

#: The kernel's extents are 32-bit (`argus.runtime.arguments.MAX_EXTENT`).
MAX_EXTENT = 2**30
#: Positions are float32 values: exact integers below 2^24.
MAX_ARG_EXTENT = 2**24
#: Elements of a 16-byte vector of float32 (the fragments hold float32): the width of a thread's run of columns.
VECTOR = 4
#: The default tile sizes (the `tile_shape` policy): (BR, BN) for a middle axis, (BM, BN) for the last one.
MIDDLE_TILE = (8, 512)
LAST_TILE = (4, 128)

#: The node's meta key holding whether the captured graph reads the indices of a max.dim / min.dim.
READS = "argus_reduction_reads"

#: Operator name -> (the reduction, whether it returns indices).
OPS = {
    "sum": ("sum", False),
    "mean": ("mean", False),
    "amax": ("max", False),
    "amin": ("min", False),
    "max": ("max", True),
    "min": ("min", True),
    "argmax": ("max", True),
    "argmin": ("min", True),
    "linalg_vector_norm": ("sum", False),  # the order decides (`NORMS`)
}

#: A vector norm's order -> (the reduction, the map applied to each element first, the map applied to the result).
NORMS: dict[float, tuple[str, str, str]] = {
    2.0: ("sum", "square", "sqrt"),
    1.0: ("sum", "abs", ""),
    float("inf"): ("max", "abs", ""),
    float("-inf"): ("min", "abs", ""),
}

REFUSED = {
    # float products arrive as sums of logarithms (argus.frontend.decompositions); what stays whole is this
    "prod": "an integer product, or one with a dtype argument (float products are taken as exponentiated sums of "
    "logarithms; the DSL reduces with T.reduce_sum and T.reduce_max only)",
    "var": "a variance (a two-pass or Welford template, not built)",
    "var_mean": "a variance (a two-pass or Welford template, not built)",
    "std": "a standard deviation (a two-pass or Welford template, not built)",
    "std_mean": "a standard deviation (a two-pass or Welford template, not built)",
}


@dataclass(frozen=True)
class Reduction:
    """What one reduction node computes, on the view ``(outer, r, inner)`` of its input."""

    op: str  # "sum" | "mean" | "max" | "min"
    values: bool  # the kernel writes the reduced values
    indices: bool  # the kernel writes the int64 position (along R) of the first extremum
    shape: tuple[int, ...]  # the input's captured shape
    dims: tuple[int, ...]  # the reduced axes, normalized
    outer: int
    r: int
    inner: int
    pre: str = ""  # "square" | "abs": applied to each element before it is reduced (vector norms)
    post: str = ""  # "sqrt": applied to the reduced value (the 2-norm)


def _overload(node: Any) -> str:
    return str(getattr(node.target, "_overloadname", ""))


def _arg(node: Any, index: int, name: str, default: Any) -> Any:
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(name, default)


def _getitems(node: Any) -> dict[int, list[Any]]:
    """A tuple-valued node's readers by the index they read."""
    out: dict[int, list[Any]] = {}
    for user in node.users:
        if user.op == "call_function" and user.target is operator.getitem:
            out.setdefault(int(user.args[1]), []).append(user)
    return out


def parse(node: Any) -> Reduction | str:
    """What `node` reduces, or why the template cannot take it."""
    import torch
    import torch.fx

    name, overload = aten_name(node), _overload(node)
    if name in REFUSED:
        return REFUSED[name]
    if name not in OPS:
        return f"the reduction template has no rule for {node.target}"
    op, arg_like = OPS[name]
    source = node.args[0] if node.args else None
    if not isinstance(source, torch.fx.Node) or not isinstance(node_value(source), torch.Tensor):
        return "its input is not a tensor"
    value = node_value(source)
    if dtype_name(value) not in DTYPES:
        return f"input dtype {value.dtype} (the template takes float32, float16, bfloat16)"
    shape = tuple(int(s) for s in value.shape)
    rank = len(shape)
    keyword = set(node.kwargs) - {"dim", "keepdim", "dtype", "ord"}
    if keyword:
        return f"keyword argument(s) {', '.join(sorted(keyword))} not supported"

    dims: Any
    values, indices = True, False
    pre = post = ""
    if name == "linalg_vector_norm":
        order = _arg(node, 1, "ord", 2)
        if _arg(node, 4, "dtype", None) is not None:
            return f"{node.target} with a dtype argument"
        if not isinstance(order, int | float) or float(order) not in NORMS:
            return f"a vector norm of order {order!r} (the template takes 1, 2, inf and -inf)"
        op, pre, post = NORMS[float(order)]
        dims = _arg(node, 2, "dim", None)
        dims = [dims] if isinstance(dims, int) else dims
    elif name in ("sum", "mean"):
        if overload not in ("dim_IntList", "dim", "default"):
            return f"{node.target}: only the overloads over axes or the whole tensor"
        dims = _arg(node, 1, "dim", None) if overload != "default" else None
    elif name in ("amax", "amin"):
        dims = _arg(node, 1, "dim", [])
    elif name in ("max", "min"):
        if overload == "default":
            dims = None
        elif overload == "dim":
            dims = [_arg(node, 1, "dim", None)]
            read = _getitems(node)
            if read:  # in the captured graph: remembered for the group's subgraph, where the readers are gone
                indices = bool(read.get(1))  # the values are written in any case: the tuple keeps its positions
                node.meta[READS] = indices
            else:
                indices = node.meta.get(READS, True)
        else:
            return f"{node.target}: only max/min over one axis (.dim) or the whole tensor (.default)"
    else:  # argmax, argmin
        dims = _arg(node, 1, "dim", None)
        dims = None if dims is None else [dims]
        values, indices = False, True
    if arg_like and name in ("argmax", "argmin", "max", "min") and overload not in ("dim", "default"):
        return f"{node.target}: overload not supported"

    if dims is None or (isinstance(dims, list | tuple) and len(dims) == 0):
        dims = list(range(rank))
    if not isinstance(dims, list | tuple) or not all(isinstance(d, int) for d in dims):
        return f"reduction axes {dims!r} are not a list of ints"
    if rank == 0:
        normalized: tuple[int, ...] = ()
    else:
        if any(not -rank <= d < rank for d in dims):
            return f"reduction axes {list(dims)} out of range for a {rank}-d input"
        normalized = tuple(sorted({d % rank for d in dims}))

    out = node_value(node)
    outs = list(out) if isinstance(out, tuple | list) else [out]
    for o in outs:
        if not isinstance(o, torch.Tensor):
            return "its result is not a tensor"
    if values and dtype_name(outs[0]) not in DTYPES:
        return f"output dtype {outs[0].dtype} (the template writes float32, float16, bfloat16 values)"
    if indices and outs[-1].dtype != torch.int64:
        return f"index dtype {outs[-1].dtype} (int64 expected)"

    # the view (OUTER, R, INNER): axes of extent 1 are ignored, the reduced ones must be contiguous
    kept = [d for d in range(rank) if shape[d] != 1]
    reduced = [i for i, d in enumerate(kept) if d in normalized]
    if reduced and reduced != list(range(reduced[0], reduced[-1] + 1)):
        return (
            f"reduced axes {list(normalized)} of {shape} are not contiguous "
            "(the template views the input as (outer, reduced, inner); a sum, mean, maximum or minimum over them "
            "is taken as one reduction per run of neighbouring axes, not this operator)"
        )
    if reduced:
        outer = math.prod(shape[d] for d in kept[: reduced[0]])
        r = math.prod(shape[kept[i]] for i in reduced)
        inner = math.prod(shape[d] for d in kept[reduced[-1] + 1 :])
    else:  # every reduced axis has extent 1: a copy, as a reduction over R = 1
        outer, r, inner = math.prod(shape), 1, 1
    if r == 0 or outer == 0 or inner == 0:
        return f"an empty tensor {shape}"
    if indices and r > MAX_ARG_EXTENT:
        return f"an index reduction over {r} elements (positions are float32 in the kernel: at most 2^24)"
    found = Reduction(op, values, indices, shape, normalized, outer, r, inner, pre, post)
    split = split_of(found)
    extents = (outer, r, inner) if split is None else (outer, split[0], split[1] * inner)
    if max(extents) >= MAX_EXTENT:
        return f"an extent of the view ({outer}, {r}, {inner}) reaches 2^30 (the kernel's extents are 32-bit)"
    return found


#: Reduced extents below this are not split.
SPLIT_MIN_R = 1 << 12
#: Nor reductions of fewer elements than this (128 KB of f32). One block walking a long R is slower than the second
#: launch the split costs from far fewer elements than once thought: a sum of one vector of 32768 f32 takes 0.120 ms
#: as one kernel and 0.014 ms split, of 262144 0.927 ms and 0.092 ms (H200, `benchmarks/reduction_split_gpu.py`,
#: `benchmarks/results/2026-11-30-solve-gather/`; the threshold was 2**21 before).
SPLIT_MIN_ELEMENTS = 1 << 15


def blocks(spec: Reduction) -> int:
    """The blocks one kernel launches for `spec` at the default tiles."""
    if spec.inner > 1:
        return spec.outer * -(-spec.inner // MIDDLE_TILE[1])
    return -(-spec.outer // LAST_TILE[0])


def split_of(spec: Reduction) -> tuple[int, int] | None:
    """(S, C) with S * C = R when the reduction runs in two stages, else None: a value reduction of at least
    `SPLIT_MIN_ELEMENTS` whose one kernel would launch fewer than `min_blocks` blocks over a long R (a whole-tensor
    sum reads 2.7e8 elements in one block otherwise: 1 s on an H200). The first stage reduces the input viewed
    (OUTER, S, C * INNER) over S into an f32 buffer (OUTER, C * INNER), many blocks wide; the second reduces the
    buffer viewed (OUTER, C, INNER) over C. S and C divide R exactly, so a mean of equal-count means is the mean. C
    is the smallest divisor of R that gives the first stage `min_blocks` blocks (S as long as it can be), else the
    one that gives it the most; S is at least `SPLIT_MIN_ROWS` and C * INNER at least one tile's columns. None too
    where no divisor gives more blocks than one kernel (a prime R)."""
    small = spec.r < SPLIT_MIN_R or spec.outer * spec.r * spec.inner < SPLIT_MIN_ELEMENTS
    if spec.indices or small or blocks(spec) >= min_blocks():
        return None

    def first_blocks(c: int) -> int:
        return spec.outer * -(-(c * spec.inner) // MIDDLE_TILE[1])

    usable = [c for c in _divisors(spec.r) if spec.r // c >= SPLIT_MIN_ROWS and c * spec.inner >= MIDDLE_TILE[1]]
    if not usable:
        return None
    enough = [c for c in usable if first_blocks(c) >= min_blocks()]
    c = enough[0] if enough else usable[-1]
    return (spec.r // c, c) if first_blocks(c) > blocks(spec) else None


#: The first stage of a split reduction reduces at least this many rows (one tile's worth: `MIDDLE_TILE`'s BR).
SPLIT_MIN_ROWS = MIDDLE_TILE[0]


def _divisors(n: int) -> list[int]:
    """The divisors of `n`, ascending."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def unsupported(node: Any) -> str | None:
    """None when the reduction template can take `node`, else why not (see the module docstring)."""
    found = parse(node)
    return found if isinstance(found, str) else None


#: The most elementwise operators a reduction kernel computes on each element it loads (its fused prologue), and
#: the most tensors they read (each loaded tile by tile like the input of a plain reduction).
MAX_PROLOGUE = 16
MAX_PROLOGUE_INPUTS = 4


def prologue_nodes(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The elementwise nodes before reduction `node` that its kernel computes on each element it loads (its fused
    prologue), in graph order; [] when none. They are the largest set, walking the graph backwards from the reduced
    input, of nodes the pointwise template takes (none with a constant a forward argument gives, `bound`), each of
    the reduced input's shape, each read only by the set or by `node`, that together read at most
    `MAX_PROLOGUE_INPUTS` tensors from outside (float tensors of that shape: no broadcasting) and constants
    (``scalar_tensor`` nodes only the set reads); the earliest nodes are left out until they do. An arg-reduction
    takes none (its positions are compared on the loaded elements)."""
    import torch

    from argus.frontend.families import pointwise

    spec = parse(node)
    if isinstance(spec, str) or spec.indices:
        return []
    source = node.args[0]
    shape = tuple(node_value(source).shape)
    taken: dict[Any, None] = {}
    wanted = {source}
    nodes = list(node.graph.nodes)
    for n in reversed(nodes[: nodes.index(node)]):
        if n not in wanted or len(taken) >= MAX_PROLOGUE:
            continue
        if not all(u in taken or u is node for u in n.users):
            continue
        if pointwise._is_literal(n):
            taken[n] = None
            continue
        val = node_value(n)
        if (
            n.op != "call_function"
            or n.name in bound
            or aten_name(n) not in pointwise.RULES
            or pointwise.unsupported(n) is not None
            or not isinstance(val, torch.Tensor)
            or tuple(val.shape) != shape
            or not (dtype_name(val) in DTYPES or val.dtype == torch.bool)
        ):
            continue
        taken[n] = None
        wanted.update(n.all_input_nodes)

    # what the set reads from outside: a few float tensors of the reduced input's shape, else no prologue
    def readable(x: Any) -> bool:
        val = node_value(x)
        return isinstance(val, torch.Tensor) and tuple(val.shape) == shape and dtype_name(val) in DTYPES

    while taken:
        outside = {a for n in taken for a in n.all_input_nodes if a not in taken}
        if len(outside) <= MAX_PROLOGUE_INPUTS and all(readable(x) for x in outside):
            break
        # drop the earliest node (no other reads it, and what it read is outside already): the rest may still
        # read tensors the kernel can load
        del taken[min(taken, key=nodes.index)]
    if source not in taken:
        return []
    return sorted(taken, key=nodes.index)


# ---------------------------------------------------------------------------------------------------------------
# source text


def _outputs(subgraph: Any, node: Any, spec: Reduction) -> list[Any]:
    """The subgraph's output nodes, one per kernel output. A tuple-valued node (``max.dim``) gets explicit
    ``getitem`` nodes (values, then indices when read) and the subgraph returns them (see the module docstring)."""
    graph = subgraph.graph
    output = next(n for n in graph.nodes if n.op == "output")
    value = node_value(node)
    if not isinstance(value, tuple | list):
        return [node]
    existing = output.args[0]
    if isinstance(existing, tuple | list) and all(
        n.op == "call_function" and n.target is operator.getitem for n in existing
    ):
        return list(existing)  # already given (the writer was called before)
    positions = [0, 1] if spec.indices else [0]
    items = []
    anchor = node
    for i in positions:
        with graph.inserting_after(anchor):
            item = graph.create_node(
                "call_function", operator.getitem, (node, i), name=f"{node.name}_{'indices' if i else 'values'}"
            )
        item.meta["val"] = value[i]
        items.append(item)
        anchor = item
    output.args = (tuple(items),)
    graph.lint()
    subgraph.recompile()
    return items


@dataclass(frozen=True)
class Prologue:
    """A reduction's fused prologue (`prologue_nodes`; None where there is none): the group's input placeholders
    (in the kernel's parameter order), the reduced value, and the elementwise nodes computing it from the inputs, in
    graph order."""

    inputs: list[str]
    result: str
    nodes: list[Any]


#: The names a reduction kernel's own locals and parameters take (a prologue's values are named around them).
_KERNEL_NAMES = frozenset(
    "x acc r bo bn bm element best seen_at better extremum first X OUT VALUES INDICES OUTER R INNER BR BN BM".split()
    + [f"x{i}" for i in range(1, MAX_PROLOGUE_INPUTS)]
    + [f"X{i}" for i in range(1, MAX_PROLOGUE_INPUTS)]
)


def _fragment(i: int) -> str:
    """The loaded tile of the kernel's `i`-th input."""
    return "x" if i == 0 else f"x{i}"


def _param(i: int) -> str:
    """The kernel's `i`-th input parameter."""
    return "X" if i == 0 else f"X{i}"


def _render_prologue(prologue: Prologue, lines: list[str]) -> str:
    """The prologue's math on the loaded f32 tiles (``x``, ``x1``, ... for its inputs in order), one line per
    operator appended to `lines` (inside the kernel's loop); returns the f32 expression of the reduced value."""
    from argus.frontend.families.pointwise import render_calls

    frag = {name: _fragment(i) for i, name in enumerate(prologue.inputs)}
    dtypes = dict.fromkeys(prologue.inputs, "f32")
    render_calls(prologue.nodes, frag, dtypes, set(), set(_KERNEL_NAMES), lines, indent=" " * 12)
    value = frag[prologue.result]
    return value if dtypes[prologue.result] == "f32" else f"T.cast({value}, T.f32)"


def _literal(value: float) -> str:
    return repr(value) if math.isfinite(value) else f"float({str(value)!r})"


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a reduction group: one reduction node (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    node = next(n for n in nodes if n.op == "call_function" and aten_name(n) in OPS)
    prologue = [n for n in nodes[: nodes.index(node)] if n.op == "call_function"]
    spec = parse(node)
    assert not isinstance(spec, str)  # unsupported() was asked first
    results = _outputs(subgraph, node, spec)
    in_dtypes = [DTYPES[dtype_name(node_value(p))] for p in placeholders]
    middle = spec.inner > 1
    out_shape = (spec.outer, spec.inner) if middle else (spec.outer,)
    in_shape = (spec.outer, spec.r, spec.inner) if middle else (spec.outer, spec.r)

    params: list[tuple[str, Any, str]] = []  # (kernel name, graph node, DSL dtype)
    if spec.values:
        value_node = results[0]
        params.append(("VALUES" if spec.indices else "OUT", value_node, DTYPES[dtype_name(node_value(value_node))]))
    if spec.indices:
        params.append(("INDICES" if spec.values else "OUT", results[-1], "i64"))
    dtypes = {**{p.name: d for p, d in zip(placeholders, in_dtypes, strict=True)}, **{n.name: d for _, n, d in params}}
    shapes = {**{p.name: in_shape for p in placeholders}, **{n.name: out_shape for _, n, _ in params}}

    what = _describe(node, spec)
    if prologue:
        ops = [aten_name(n) for n in prologue if aten_name(n) != "scalar_tensor"]
        what += f" of {' -> '.join(ops)} on each element (fused)"
    fused = Prologue([p.name for p in placeholders], node.args[0].name, prologue) if prologue else None
    split = split_of(spec)
    if split is not None:
        return _split_source(name, spec, split, placeholders, node, results, in_dtypes, params[0][2], what, fused)
    kernel = _kernel_text(name, spec, in_dtypes, params, what, fused)
    reference = _reference_text(name, placeholders, node, results, spec, in_shape, out_shape, what, fused)
    return KernelSource(
        name,
        reference,
        kernel,
        [p.name for p in placeholders],
        [n.name for _, n, _ in params],
        {},
        math.prod(out_shape),
        dtypes,
        shapes,
    )


def _split_source(
    name: str,
    spec: Reduction,
    split: tuple[int, int],
    placeholders: list[Any],
    node: Any,
    results: list[Any],
    in_dtypes: list[str],
    out_dtype: str,
    what: str,
    prologue: Prologue | None = None,
) -> KernelSource:
    """The two-stage form of a value reduction (`split_of`): a partial reduction into an f32 buffer, the buffer's
    reduction, and the `argus.kernels.stages.Stages` that runs them; the group takes its tensors in their captured
    shapes."""
    s, c = split
    outer, inner = spec.outer, spec.inner
    first = Reduction(spec.op, True, False, (outer, s, c * inner), (1,), outer, s, c * inner, spec.pre, "")
    second_in = (outer, c, inner) if inner > 1 else (outer, c)
    second = Reduction(spec.op, True, False, second_in, (1,), outer, c, inner, "", spec.post)
    first_out = (outer, c * inner)
    second_out = (outer, inner) if inner > 1 else (outer,)
    out_shape = tuple(int(d) for d in node_value(results[0]).shape)
    torch_dtype = str(node_value(results[0]).dtype).removeprefix("torch.")
    texts = []
    for suffix, stage, dtype, in_shape, words in (
        ("partial", first, in_dtypes, (outer, s, c * inner), f"the partial {spec.op}s of {s} rows each"),
        ("total", second, ["f32"], second_in, f"the {c} partial results combined"),
    ):
        stage_what = f"{what}, stage {1 if suffix == 'partial' else 2} of 2: {words}"
        stage_dtype = "f32" if suffix == "partial" else out_dtype
        fused = prologue if suffix == "partial" else None
        texts.append(_stage_reference(f"{name}_{suffix}", stage, in_shape, stage_what, fused))
        texts.append(_kernel_text(f"{name}_{suffix}", stage, dtype, [("OUT", None, stage_dtype)], stage_what, fused))
    inputs_view = "".join(f"({_param(i)!r}, {(outer, s, c * inner)!r}), " for i in range(len(placeholders)))
    inputs_shape = ", ".join(f"{_param(i)!r}: {spec.shape!r}" for i in range(len(placeholders)))
    texts += [
        "from argus.kernels.stages import Stage, Stages  # noqa: E402",
        "",
        f"{name} = Stages(",
        f"    {name!r},",
        "    [",
        f"        Stage({name}_partial, ({inputs_view} ('PARTIAL', {first_out!r}))),",
        f"        Stage({name}_total, (('PARTIAL', {second_in!r}), ('OUT', {second_out!r}))),",
        "    ],",
        f"    {{{inputs_shape}}},",
        f"    {{'OUT': ({out_shape!r}, {torch_dtype!r})}},",
        f"    {{'PARTIAL': ({first_out!r}, 'float32')}},",
        ")",
    ]
    reference = _reference_text(name, placeholders, node, results, spec, spec.shape, out_shape, what, prologue)
    return KernelSource(
        name,
        reference,
        "\n\n".join(texts[:4]) + "\n\n" + "\n".join(texts[4:]) + "\n",
        [p.name for p in placeholders],
        [results[0].name],
        {},
        math.prod(out_shape),
        {**{p.name: d for p, d in zip(placeholders, in_dtypes, strict=True)}, results[0].name: out_dtype},
        {**{p.name: spec.shape for p in placeholders}, results[0].name: out_shape},
        library=True,
    )


def _stage_reference(
    name: str, stage: Reduction, in_shape: tuple[int, ...], what: str, prologue: Prologue | None = None
) -> str:
    """A stage kernel's reference: its reduction over axis 1 of its input view (after the fused prologue, which is
    elementwise, so the view does not matter to it), in PyTorch."""
    count = len(prologue.inputs) if prologue is not None else 1
    args = ", ".join(_param(i) for i in range(count))
    lines = [f"def {name}_reference({args}):", f'    """{what}, on {args} viewed {in_shape}."""']
    v = "X"
    if prologue is not None:
        # one assignment: a placeholder named like another parameter (X1) cannot take a value before it is read
        lines.append(f"    {', '.join(prologue.inputs)}, = {', '.join(_param(i) for i in range(count))},")
        lines += [f"    {n.name} = {aten_call(n)}" for n in prologue.nodes]
        v = prologue.result
    x = {"": v, "square": f"({v} * {v})", "abs": f"{v}.abs()"}[stage.pre]
    reduced = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin"}[stage.op]
    post = ".sqrt()" if stage.post == "sqrt" else ""
    lines.append(f"    return {x}.{reduced}(1){post}")
    return "\n".join(lines) + "\n"


def _describe(node: Any, spec: Reduction) -> str:
    target = f"{aten_name(node)}.{_overload(node)}"
    axes = "all axes" if len(spec.dims) == len(spec.shape) else f"axes {list(spec.dims)}"
    return f"{target} over {axes} of {spec.shape}"


def _kernel_text(
    name: str,
    spec: Reduction,
    in_dtypes: list[str],
    params: list[tuple[str, Any, str]],
    what: str,
    prologue: Prologue | None = None,
) -> str:
    in_dtype = in_dtypes[0]
    middle = spec.inner > 1
    if middle:
        sizes = f'{{"OUTER": {spec.outer}, "R": {spec.r}, "INNER": {spec.inner}}}'
        tile_names = ("BR", "BN")
        defaults = MIDDLE_TILE
        in_dims = '("OUTER", "R", "INNER")'
        out_dims = '("OUTER", "INNER")'
        axis = 0
        axes = grid_axes([("OUTER", "bo", spec.outer), ("T.cdiv(INNER, BN)", "bn", -(-spec.inner // defaults[1]))])
        if isinstance(axes, str):
            raise ValueError(f"reduction: {axes}")
        grid = f"    with T.grid({axes[0]}, threads=128) as ({axes[1]}):"
        load = "X.tile((bo, r, bn), (None, BR, BN))"
        store = "{param}.tile((bo, bn), (None, BN))"
        loop = "        for r in T.serial(T.cdiv(R, BR)):"
        step = "BR"
        design = (
            "a block per (outer index, BN columns of INNER), looping over R in (BR, BN) tiles coalesced along INNER; "
            "each thread holds whole columns, so the reduction over rows stays in its registers"
        )
        tile = "(BR, BN)"
    else:
        sizes = f'{{"OUTER": {spec.outer}, "R": {spec.r}}}'
        tile_names = ("BM", "BN")
        defaults = LAST_TILE
        in_dims = '("OUTER", "R")'
        out_dims = '("OUTER",)'
        axis = 1
        grid = "    with T.grid(T.cdiv(OUTER, BM), threads=128) as (bm,):"
        load = "X.tile((bm, r), (BM, BN))"
        store = "{param}.tile(bm, BM)"
        loop = "        for r in T.serial(T.cdiv(R, BN)):"
        step = "BN"
        design = (
            "a block per BM rows, looping over R in (BM, BN) tiles (a warp per row), "
            "the row's lanes combined with warp shuffles"
        )
        tile = "(BM, BN)"
    bcast = "[None, :]" if axis == 0 else "[:, None]"
    signature = [f"{_param(i)}: T.Tensor[{in_dims}, T.{d}]" for i, d in enumerate(in_dtypes)]
    signature += [f"{p}: T.Tensor[{out_dims}, T.{d}]" for p, _, d in params]
    signature += [f"{tile_names[0]}: int = {defaults[0]}", f"{tile_names[1]}: int = {defaults[1]}"]
    policies = f'{{"tile_shape": ("{tile_names[0]}", "{tile_names[1]}")}}'
    view = f"(OUTER, R, INNER) = ({spec.outer}, {spec.r}, {spec.inner})"
    if not middle:
        view = f"(OUTER, R) = ({spec.outer}, {spec.r})"
    lines = [
        f"@argus.kernel(reference={name}_reference, sizes={sizes}, policies={policies})",
        f"def {name}(",
        *[f"    {s}," for s in signature],
        "):",
        f'    """{what}, on the view {view}: {design}."""',
    ]
    if spec.indices:
        lines.append(f"    T.assume(R <= {MAX_ARG_EXTENT})  # positions are float32: exact integers below 2^24")
    lines += [grid, f"        x = T.alloc_fragment({tile}, T.f32)  # {in_dtype} in, float32 accumulation"]
    lines += [
        f"        {_fragment(i)} = T.alloc_fragment({tile}, T.f32)  # {d} in" for i, d in enumerate(in_dtypes) if i
    ]
    if spec.indices:
        identity = float("-inf") if spec.op == "max" else float("inf")
        better = ">" if spec.op == "max" else "<"
        lines += [
            f"        best = T.alloc_fragment({tile}, T.f32)  # each lane's extremum so far",
            f"        seen_at = T.alloc_fragment({tile}, T.f32)  # the position along R where the lane first saw it",
            f"        T.fill(best, {_literal(identity)})",
            "        T.fill(seen_at, 0.0)",
            loop,
            f"            T.copy({load}, x, pad={_literal(identity)})  # past R: never better",
            f"            better = x {better} best  # strictly: an earlier position keeps a tie",
            f"            T.copy(T.where(better, T.index(x, {axis}) + r * {step}, seen_at), seen_at)",
            "            T.copy(T.where(better, x, best), best)",
        ]
        if spec.op == "max":
            lines.append(f"        extremum = T.reduce_max(best, axis={axis})")
        else:
            lines.append(f"        extremum = -T.reduce_max(-best, axis={axis})")
        lines.append(
            f"        first = -T.reduce_max(-T.where(T.eq(best, extremum{bcast}), seen_at, float('inf')), axis={axis})"
            "  # the smallest position holding it"
        )
        for p, _, d in params:
            if d == "i64":
                lines.append(f"        T.copy(T.cast(first, T.i64), {store.format(param=p)})")
            else:
                lines.append(f"        T.copy(extremum, {store.format(param=p)})")
    else:
        identity = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}[spec.op]
        computed: list[str] = []
        v = "x"
        if prologue is not None:
            v = _render_prologue(prologue, computed)
        element = {"": v, "square": f"{v} * {v}", "abs": f"T.abs({v})"}[spec.pre]
        if computed or (spec.pre == "abs" and spec.op == "max"):
            # the padding past R is the identity when loaded, not after a map (|-inf| would win a maximum of
            # magnitudes, exp(0) a sum): the elements past R are masked to the identity after it
            computed.append(
                f"            element = T.where(T.index(x, {axis}) + r * {step} < R, {element}, {_literal(identity)})"
            )
            element = "element"
        tile_reduced = {
            "sum": f"T.reduce_sum({element}, axis={axis})",
            "mean": f"T.reduce_sum({element}, axis={axis})",
            "max": f"T.reduce_max({element}, axis={axis})",
            "min": f"-T.reduce_max(-{element}, axis={axis})",
        }[spec.op]
        combine = {
            "sum": f"acc + {tile_reduced}",
            "mean": f"acc + {tile_reduced}",
            "max": f"T.maximum(acc, {tile_reduced})",
            "min": f"T.minimum(acc, {tile_reduced})",
        }[spec.op]
        final = "acc / R" if spec.op == "mean" else ("T.sqrt(acc)" if spec.post == "sqrt" else "acc")
        held = "in each thread's registers" if middle else "by the row's lanes (warp shuffles)"
        lines += [
            f"        acc = T.alloc_reduced(x, axis={axis})  # the running {spec.op}, held {held}",
            f"        T.fill(acc, {_literal(identity)})",
            loop,
            f"            T.copy({load}, x, pad={_literal(identity)})  # past R: the identity",
            *[
                f"            T.copy({load.replace('X.tile', f'{_param(i)}.tile')}, {_fragment(i)}, pad=0.0)"
                for i in range(1, len(in_dtypes))
            ],
            *computed,
            f"            T.copy({combine}, acc)",
        ]
        (p, _, _) = params[0]
        lines.append(f"        T.copy({final}, {store.format(param=p)})")
    return "\n".join(lines) + "\n"


def _reference_text(
    name: str,
    placeholders: list[Any],
    node: Any,
    results: list[Any],
    spec: Reduction,
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    what: str,
    prologue: Prologue | None = None,
) -> str:
    """The group's subgraph as Python, taking the inputs in the kernel's view and returning the outputs in theirs."""
    x = ", ".join(p.name for p in placeholders)
    lines = [
        f"def {name}_reference({x}):",
        f'    """The captured FX subgraph of {name} ({what}), on {x} in the kernel\'s view {in_shape}."""',
        *[f"    {p.name} = {p.name}.reshape({format_arg(spec.shape)})" for p in placeholders],
        *[f"    {n.name} = {aten_call(n)}" for n in (prologue.nodes if prologue is not None else [])],
        f"    {node.name} = {aten_call(node)}",
    ]
    if results == [node]:
        lines.append(f"    return {node.name}.reshape({format_arg(out_shape)})")
    else:
        parts = [f"{node.name}[{r.args[1]}].reshape({format_arg(out_shape)})" for r in results]
        lines.append(f"    return {parts[0]}" if len(parts) == 1 else f"    return ({', '.join(parts)})")
    return "\n".join(lines) + "\n"
