"""The layout family: operators that move data without computing on it (``permute``, ``transpose``, ``slice``,
``select``, ``narrow``, ``expand``, ``split``, ``cat``, ``stack``, ``repeat``, ``roll``, ``constant_pad_nd``, ``flip``,
a window-shaped ``as_strided`` or ``unfold``) as one DSL copy kernel each.

What a node computes is written as *moves* (`plan`): each move fills a box of one output (its *region*, in the
output's view shape) either from one input or with a constant (a pad's border). A move from an input says where
each element of the region comes from as the input's strided view: element ``c`` of the region reads input element
``offset + sum(c[j] * strides[j])`` of the (contiguous) input. PyTorch itself gives those strides for every view
operator: `plan` applies the node's operator to a contiguous tensor on the ``meta`` device and reads the result's
strides and storage offset (so ``permute``, ``slice`` with a step, ``select``, ``expand``, ``split``'s pieces and
``as_strided`` share one path); ``cat`` and ``stack`` place each input's region at its offset along the dimension,
``repeat`` views its output as ``(repeats, size)`` pairs read with stride 0 along the repeats, ``roll`` is 2**k
moves (the two halves of each rolled dimension), ``constant_pad_nd`` the input's move (cropped where a pad is
negative) and a fill of each border slab.

The kernel reads an input through windows (`argus.lang` tiles: element origins, ``None`` extents for dimensions
fixed at one index, ``.T`` for a transpose), so a move's strides are factored into a row-major shape of the input
(`factor`): the strides of the region's dimensions that move (extent above 1, stride above 0), sorted, each must
divide the one above it, and the region must stay inside each of them (a view that wraps, such as a diagonal or
overlapping windows, is not a window: not taken, with the reason). A region dimension of stride 0 (broadcast) or
of extent 1 is walked by the grid and reads nothing new. One move's tile is the region's innermost moving
dimension and, where there is one, a second: the one the input holds innermost (the copy reads a transposed
window), else the next moving dimension outwards (a plain window). Tiles past the region read the input's next
elements (or masked zeros past its end) and are not stored: a store whose region ends before the output does is
bounded there (``window(..., bound=)``).

The kernel is one 1-d grid of blocks over every move's tiles (each move's share of the blocks a static range,
selected with ``T.if_``; a block's tile indices are the quotient and remainders of its number by the static tile
counts). Shapes are the captured ones (literals: the solution refuses other shapes). Values keep their dtype
(float32, float16, bfloat16; one dtype for the node's tensors).

``pad`` (what ``padding_mode`` of a convolution and ``F.pad`` give) is ``constant_pad_nd`` in its constant mode; its
circular mode reads each border from the input's other end, replicate repeats the edge (a broadcast, stride 0) and
reflect reads each border backwards, each border one move, except along the innermost dimension, where each border
element is a move (a broadcast of one element, or a reversed run, is no window there); at most `MAX_PAD_MOVES`
moves. A move of one element (a corner) tiles its innermost stepping dimension, of extent one: the
tile reads past it and its store is bounded to the element.

``flip`` reads each flipped dimension backwards (a negative stride, from its last element): such a dimension is
walked by the grid, one index a block, the window starting at ``last - index``; a flip of the innermost dimension
(a reversed run: no window) is not taken.

Not taken: a ``flip`` of the innermost dimension, ``tril``/``triu`` (a mask), a ``roll`` over
the flattened tensor, a move whose input view is not a window (above), integer and boolean tensors, and a permute
or transpose PyTorch runs as a view without a copy (`argus.frontend.partition.metadata_only`: left to PyTorch).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argus.frontend.families import coordinates
from argus.frontend.families.base import (
    DTYPES,
    INTEGER_DTYPES,
    KernelSource,
    aten_name,
    dtype_name,
    node_value,
    reference_source,
)

#: Threads of a layout kernel's block.
THREADS = 128
#: The dtypes the template moves (torch name -> the DSL's): the float ones, and integer tensors (a slice of token ids
#: a gather reads): data movement copies them exactly, and a fill writes its value converted to the dtype.
MOVED = {**DTYPES, **INTEGER_DTYPES}
#: Elements of a tile: a few 16-byte vectors a thread.
TILE_ELEMENTS = 2048
#: A transposed tile's side (the copy reads it across the input's rows).
TRANSPOSE_TILE = 32
#: The operators whose outputs are views of their (one) input: their strides come from PyTorch (`plan`).
VIEW_OPS = frozenset(
    "permute transpose t slice select narrow expand split split_with_sizes unbind chunk as_strided unfold "
    "diagonal".split()
)
#: Every operator this template writes.
OPERATORS = VIEW_OPS | frozenset("cat stack repeat roll constant_pad_nd pad flip".split())
#: The most moves a reflect pad may take (each reflected border row is a move of its own: (lo + 1 + hi) per padded
#: dimension, their product in all); past it, not taken.
MAX_PAD_MOVES = 64
#: Why the other layout operators are not taken.
NOT_WRITTEN = {
    "tril": "a masked copy (data movement under a triangle) is not written yet",
    "triu": "a masked copy (data movement under a triangle) is not written yet",
}


@dataclass(frozen=True)
class Move:
    """Fill the box `origin` + `extent` of output `out` (in its view shape): from input `src` (an index into the
    plan's inputs) at ``offset + sum(c[j] * strides[j])``, or with `fill` when `src` is None."""

    out: int
    origin: tuple[int, ...]
    extent: tuple[int, ...]
    src: int | None = None
    strides: tuple[int, ...] = ()
    offset: int = 0
    fill: float = 0.0


@dataclass(frozen=True)
class Plan:
    """A node's moves: its inputs (graph names and shapes), its outputs (graph names and view shapes)."""

    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    outputs: tuple[tuple[str, tuple[int, ...]], ...]
    moves: tuple[Move, ...]


class NotTaken(Exception):
    """Why the template does not take a node (its message)."""


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def _ints(shape: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise NotTaken("its sizes are symbolic (the captured sizes are dynamic)") from None


def _tensor_args(node: Any) -> list[Any]:
    """The node's tensor arguments (graph nodes), in order; a list argument (``cat``'s) is expanded."""
    import torch.fx

    out = []
    for a in node.args:
        if isinstance(a, torch.fx.Node):
            out.append(a)
        elif isinstance(a, list | tuple):
            out.extend(x for x in a if isinstance(x, torch.fx.Node))
    return out


def _literal(value: Any) -> Any:
    import torch.fx

    if isinstance(value, torch.fx.Node):
        raise NotTaken(f"an argument ({value.name}) is a value computed at run time")
    if isinstance(value, list | tuple):
        return type(value)(_literal(v) for v in value)
    return value


def _users(node: Any) -> list[Any]:
    """The nodes that read `node`'s results: its getitems for an operator of several results (in result order)."""
    from argus.frontend.partition import op_name

    items = [u for u in node.users if op_name(u) == "getitem"]
    return sorted(items, key=lambda u: u.args[1]) if items else [node]


def plan(node: Any) -> Plan:
    """The moves of layout node `node` (see the module docstring), or `NotTaken` with the reason."""
    import torch

    op = aten_name(node)
    if op not in OPERATORS:
        raise NotTaken(NOT_WRITTEN.get(op, f"data movement by {op} is not written yet"))
    sources = _tensor_args(node)
    values = [node_value(s) for s in sources]
    if not sources or not all(isinstance(v, torch.Tensor) for v in values):
        raise NotTaken("its inputs are not all tensors")
    names = list(dict.fromkeys(s.name for s in sources))
    shapes = {s.name: _ints(v.shape) for s, v in zip(sources, values, strict=True)}
    dtypes = {dtype_name(v) for v in values}
    outs = _users(node)
    out_values = [node_value(u) for u in outs]
    if not all(isinstance(v, torch.Tensor) for v in out_values):
        raise NotTaken("its results are not all tensors")
    dtypes |= {dtype_name(v) for v in out_values}
    if len(dtypes) != 1 or next(iter(dtypes)) not in MOVED:
        raise NotTaken(f"its tensors are {', '.join(sorted(dtypes))}; the template moves one of {', '.join(MOVED)}")
    if next(iter(dtypes)) not in DTYPES and (
        coordinates.is_coordinate(node) or any(coordinates.is_coordinate(s) for s in sources)
    ):  # the pointwise family's: an integer arange and its views are computed where they are read, never stored
        raise NotTaken("an integer view of an arange (computed from coordinates in the kernel that reads it)")
    inputs = tuple((n, shapes[n]) for n in names)
    index = {n: i for i, n in enumerate(names)}
    if op in VIEW_OPS:
        return _view_plan(node, inputs, outs, out_values)
    out_shape = _ints(out_values[0].shape)
    args = [_literal(a) for a in node.args[1:]]  # after the tensors (cat's list is args[0]): literals
    if op in ("cat", "stack"):
        dim = int(args[0]) if args else int(node.kwargs.get("dim", 0))
        rank = len(out_shape)
        dim = dim % rank
        moves, at = [], 0
        for s in sources:
            shape = shapes[s.name]
            if op == "cat" and math.prod(shape) == 0:
                continue  # an empty operand (cat takes a 1-d empty tensor beside anything)
            strides = list(_contiguous_strides(shape))
            extent = list(shape)
            if op == "stack":
                strides.insert(dim, 0)
                extent.insert(dim, 1)
            origin = [0] * rank
            origin[dim] = at
            at += extent[dim]
            moves.append(Move(0, tuple(origin), tuple(extent), index[s.name], tuple(strides)))
        return Plan(inputs, ((outs[0].name, out_shape),), tuple(moves))
    (name,) = names
    shape = shapes[name]
    strides = _contiguous_strides(shape)
    if op == "repeat":
        repeats = [int(r) for r in args[0]]
        padded = (1,) * (len(repeats) - len(shape)) + shape
        full = (0,) * (len(repeats) - len(shape)) + strides
        view = tuple(x for r, p in zip(repeats, padded, strict=True) for x in (r, p))
        steps = tuple(x for s in full for x in (0, s))
        return Plan(inputs, ((outs[0].name, view),), (Move(0, (0,) * len(view), view, 0, steps),))
    if op == "flip":  # each flipped dimension read backwards: from its last element, with the negated stride
        dims = {int(d) % len(shape) for d in (args[0] if args else node.kwargs.get("dims", []))}
        steps = tuple(-s if d in dims and shape[d] > 1 else s for d, s in enumerate(strides))
        offset = sum((shape[d] - 1) * strides[d] for d in dims)
        return Plan(inputs, ((outs[0].name, out_shape),), (Move(0, (0,) * len(shape), shape, 0, steps, offset),))
    if op == "roll":
        shifts = [int(s) for s in (args[0] if isinstance(args[0], list | tuple) else [args[0]])]
        dims = [int(d) for d in (args[1] if len(args) > 1 else node.kwargs.get("dims", []))]
        if not dims:
            raise NotTaken("a roll of the flattened tensor is not written yet (give dims)")
        dims = [d % len(shape) for d in dims]
        halves = []
        for d, s in zip(dims, shifts, strict=True):
            n = shape[d]
            s = s % n if n else 0
            # output [s, n) reads input [0, n - s); output [0, s) reads input [n - s, n)
            halves.append([(d, s, n - s, 0), (d, 0, s, n - s)])
        moves = []
        for combo in itertools.product(*halves):
            origin, extent, offset = [0] * len(shape), list(shape), 0
            for d, at, length, read in combo:
                origin[d], extent[d] = at, length
                offset += read * strides[d]
            if all(e > 0 for e in extent):
                moves.append(Move(0, tuple(origin), tuple(extent), 0, strides, offset))
        return Plan(inputs, ((outs[0].name, out_shape),), tuple(moves))
    # constant_pad_nd(input, pad, value=0); pad(input, pad, mode="constant", value=None)
    pad = [int(p) for p in args[0]]
    mode = "constant"
    if op == "pad":
        mode = str(args[1]) if len(args) > 1 else str(node.kwargs.get("mode", "constant"))
        given = args[2] if len(args) > 2 else node.kwargs.get("value")
        value = float(given) if given is not None else 0.0
    else:
        value = float(args[1]) if len(args) > 1 else float(node.kwargs.get("value", 0.0))
    if len(pad) % 2 or len(pad) // 2 > len(shape):
        raise NotTaken(f"pad {pad} is not pairs for the last dimensions")
    lo, hi = [0] * len(shape), [0] * len(shape)
    for i in range(len(pad) // 2):
        lo[len(shape) - 1 - i], hi[len(shape) - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if mode != "constant":
        moves = _edge_pad_moves(mode, shape, strides, lo, hi)
        return Plan(inputs, ((outs[0].name, out_shape),), tuple(moves))
    origin, extent, offset = [], [], 0
    for d, n in enumerate(shape):
        start = max(0, -lo[d])  # a negative pad crops
        stop = n - max(0, -hi[d])
        origin.append(max(0, lo[d]))
        extent.append(max(0, stop - start))
        offset += start * strides[d]
    moves = [Move(0, tuple(origin), tuple(extent), 0, strides, offset)] if all(e > 0 for e in extent) else []
    moves += _border(out_shape, tuple(origin), tuple(extent), value)
    return Plan(inputs, ((outs[0].name, out_shape),), tuple(moves))


def _edge_pad_moves(
    mode: str, shape: tuple[int, ...], strides: tuple[int, ...], lo: list[int], hi: list[int]
) -> list[Move]:
    """The moves of a pad whose border repeats the input (`mode` "replicate", "circular" or "reflect"): along each
    dimension the output is segments (output start, length, input start, input stride): the input itself at lo, and
    before and after it the far end of the input (circular), the edge repeated (replicate: stride 0) or the elements
    next to the edge in reverse order (reflect: read backwards), except along the innermost dimension, where
    replicate and reflect take one segment per border element. A move is one segment of every dimension."""
    if mode not in ("replicate", "circular", "reflect"):
        raise NotTaken(f"a pad of mode {mode!r} (constant, reflect, replicate and circular are written)")
    per_dim = []
    for d, n in enumerate(shape):
        a, b, step = lo[d], hi[d], strides[d]
        if a < 0 or b < 0:
            raise NotTaken(f"a {mode} pad with a negative extent ({a}, {b}) is not written")
        limit = {"reflect": n - 1, "circular": n}.get(mode)  # a replicate pad may be any length
        if (a or b) and (n == 0 or (limit is not None and max(a, b) > limit)):
            raise NotTaken(f"a {mode} pad of ({a}, {b}) on an extent of {n} (PyTorch takes at most {limit})")
        segments = [(a, n, 0, step)]
        if mode == "replicate" and step != 1:  # the edge row repeated: a broadcast (stride 0) over the border
            segments = [(0, a, 0, 0), *segments, (a + n, b, n - 1, 0)]
        elif mode == "replicate":  # along the innermost dimension one segment per border element (a corner of a
            # broadcast along every dimension would be one element, which no window repeats)
            segments = [(j, 1, 0, step) for j in range(a)] + segments + [(a + n + i, 1, n - 1, step) for i in range(b)]
        elif mode == "circular":
            segments = [(0, a, n - a, step), *segments, (a + n, b, 0, step)]
        elif step != 1:  # output j < a reads input a - j, output a + n + i input n - 2 - i: reversed runs
            segments = [(0, a, a, -step), *segments, (a + n, b, n - 2, -step)]
        else:  # along the innermost dimension a reversed run is no window: one segment per border element
            segments = [(j, 1, a - j, step) for j in range(a)] + segments
            segments += [(a + n + i, 1, n - 2 - i, step) for i in range(b)]
        per_dim.append([seg for seg in segments if seg[1] > 0])
    if math.prod(len(p) for p in per_dim) > MAX_PAD_MOVES:
        raise NotTaken(f"a {mode} pad of {math.prod(len(p) for p in per_dim)} moves (at most {MAX_PAD_MOVES})")
    moves = []
    for combo in itertools.product(*per_dim):
        origin = tuple(seg[0] for seg in combo)
        extent = tuple(seg[1] for seg in combo)
        offset = sum(seg[2] * s for seg, s in zip(combo, strides, strict=True))
        moves.append(Move(0, origin, extent, 0, tuple(seg[3] for seg in combo), offset))
    return moves


def _border(shape: tuple[int, ...], origin: tuple[int, ...], extent: tuple[int, ...], value: float) -> list[Move]:
    """Fills of `shape` outside the box `origin` + `extent`: per dimension d, the slabs before and after the box
    along d, inside the box along the dimensions before d and whole along those after it."""
    moves = []
    for d in range(len(shape)):
        for start, stop in ((0, origin[d]), (origin[d] + extent[d], shape[d])):
            if stop <= start:
                continue
            o = list(origin[:d]) + [start] + [0] * (len(shape) - d - 1)
            e = list(extent[:d]) + [stop - start] + list(shape[d + 1 :])
            if all(x > 0 for x in e):
                moves.append(Move(0, tuple(o), tuple(e), None, fill=value))
    return moves


def _view_plan(node: Any, inputs: tuple, outs: list[Any], out_values: list[Any]) -> Plan:
    """The moves of an operator whose results are views of its one input: PyTorch's own strides, from the operator
    applied to a contiguous tensor on the meta device."""
    import torch

    (name, shape), *rest = inputs
    if rest:
        raise NotTaken("a view operator of more than one tensor")
    x = torch.empty(shape, dtype=out_values[0].dtype, device="meta")
    args = [_literal(a) for a in node.args[1:]]
    kwargs = {k: _literal(v) for k, v in node.kwargs.items()}
    try:
        result = node.target(x, *args, **kwargs)
    except Exception as err:  # noqa: BLE001 - an operator the meta device cannot run: not taken, with its error
        raise NotTaken(f"its strides could not be computed ({type(err).__name__}: {err})") from None
    results = list(result) if isinstance(result, list | tuple) else [result]
    picked = [results[u.args[1]] for u in outs] if len(outs) and outs[0] is not node else results[:1]
    moves, outputs = [], []
    for i, (u, r) in enumerate(zip(outs, picked, strict=True)):
        view = _ints(r.shape)
        outputs.append((u.name, view))
        moves.append(Move(i, (0,) * len(view), view, 0, tuple(int(s) for s in r.stride()), int(r.storage_offset())))
    return Plan(inputs, tuple(outputs), tuple(moves))


def collapse(p: Plan) -> Plan:
    """`p` with each output's view shape made as short as its moves allow: dimensions of extent 1 dropped, and a
    dimension merged into the one before it where every move writing the output covers it whole and steps through
    its input across the two as through one (or broadcasts both, or is a fill). Fewer dimensions: fewer grid
    indices, longer contiguous runs in a tile."""
    outputs, moves = list(p.outputs), list(p.moves)
    for o, (name, shape) in enumerate(p.outputs):
        mine = [i for i, m in enumerate(moves) if m.out == o]
        keep = [j for j, n in enumerate(shape) if n != 1] or [len(shape) - 1]
        shape = tuple(shape[j] for j in keep)
        for i in mine:
            m = moves[i]
            pick = [m.strides[j] for j in keep] if m.src is not None else []
            moves[i] = Move(o, tuple(m.origin[j] for j in keep), tuple(m.extent[j] for j in keep), m.src,
                            tuple(pick), m.offset, m.fill)  # fmt: skip
        j = len(shape) - 2
        while j >= 0:
            if all(_mergeable(moves[i], shape, j) for i in mine):
                n = shape[j + 1]
                shape = shape[:j] + (shape[j] * n,) + shape[j + 2 :]
                for i in mine:
                    moves[i] = _merged(moves[i], n, j)
            j -= 1
        outputs[o] = (name, shape)
    return Plan(p.inputs, tuple(outputs), tuple(moves))


def _mergeable(m: Move, shape: tuple[int, ...], j: int) -> bool:
    """Whether output dimensions j and j + 1 of move `m` are one (see `collapse`)."""
    if m.origin[j + 1] != 0 or m.extent[j + 1] != shape[j + 1]:
        return False
    if m.src is None or m.extent[j] == 1:
        return True
    a, b = m.strides[j], m.strides[j + 1]
    return (a == 0 and b == 0) or (b != 0 and a == b * shape[j + 1])


def _merged(m: Move, n: int, j: int) -> Move:
    """`m` with output dimensions j and j + 1 (of extent `n`) merged."""
    origin = m.origin[:j] + (m.origin[j] * n,) + m.origin[j + 2 :]
    extent = m.extent[:j] + (m.extent[j] * n,) + m.extent[j + 2 :]
    strides = m.strides[:j] + (m.strides[j + 1],) + m.strides[j + 2 :] if m.src is not None else ()
    return Move(m.out, origin, extent, m.src, strides, m.offset, m.fill)


@dataclass(frozen=True)
class Factored:
    """An input viewed row-major as `shape`; each moving region dimension j on input dimension `dims[j]` (None for
    a dimension that does not move: broadcast, or extent 1), and `origin` the element of each input dimension the
    region's first element reads."""

    shape: tuple[int, ...]
    dims: tuple[int | None, ...]
    origin: tuple[int, ...]
    #: each region dimension read backwards (a flip): the input dimension it walks down from `origin`, else None
    reversed: tuple[int | None, ...] = ()


def factor(move: Move, numel: int, steps: tuple[int, ...] | None = None) -> Factored:
    """The input of `move` as a row-major shape its region reads as a window (see the module docstring), or
    `NotTaken` with the reason. `steps`: the strides the input's shape is made of (default: those of `move`'s
    moving dimensions; the kernel gives the union over every move reading the input, so that all read one shape)."""
    backwards = [j for j, (e, s) in enumerate(zip(move.extent, move.strides, strict=True)) if e > 1 and s < 0]
    moving = [j for j, (e, s) in enumerate(zip(move.extent, move.strides, strict=True)) if e > 1 and s > 0]
    if not moving:  # one element (a pad's corner): its innermost stepping dimension is the tile's, of extent one
        moving = [j for j, s in enumerate(move.strides) if s > 0][-1:]
    if any(move.strides[j] == -1 for j in backwards):
        raise NotTaken(
            "it reverses its input's innermost elements (a reversed run is no window): data movement backwards "
            "along the innermost dimension is not written yet"
        )
    mine = [abs(move.strides[j]) for j in moving + backwards]
    if len(set(mine)) != len(mine):
        raise NotTaken("two of its dimensions step through the input alike (a diagonal): not a window")
    steps = tuple(sorted(set(mine) if steps is None else set(steps), reverse=True))
    if not steps or steps[-1] != 1:
        steps += (1,)  # the input's innermost elements, at one index
    if numel % steps[0]:
        raise NotTaken(f"its input of {numel} elements is not whole rows of {steps[0]}: not a window of its input")
    shape = [numel // steps[0]]
    for above, below in itertools.pairwise(steps):
        if above % below:
            raise NotTaken(f"strides {above} and {below} do not nest: not a window of its input")
        shape.append(above // below)
    origin, rest = [], move.offset
    for s in steps:
        origin.append(rest // s)
        rest %= s
    dims: list[int | None] = [None] * len(move.extent)
    for j in moving:
        i = steps.index(move.strides[j])
        dims[j] = i
        if origin[i] + move.extent[j] > shape[i]:
            raise NotTaken("its region wraps around a dimension of its input: not a window")
    backward: list[int | None] = [None] * len(move.extent)
    for j in backwards:  # walked by the grid, one index a block, from the origin down
        i = steps.index(-move.strides[j])
        backward[j] = i
        if origin[i] - (move.extent[j] - 1) < 0:
            raise NotTaken("its region wraps around a dimension of its input: not a window")
    return Factored(tuple(shape), tuple(dims), tuple(origin), tuple(backward))


@dataclass(frozen=True)
class _Tiling:
    """A move's tile: the region dimensions it spans (one or two, outer first), their extents, and whether the
    input's window is read transposed."""

    dims: tuple[int, ...]
    sizes: tuple[int, ...]
    transposed: bool


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _dividing(extent: int, cap: int, floor: int) -> int | None:
    """The largest power of two in ``[floor, cap]`` that divides `extent`, or None."""
    size = 1 << max(0, cap.bit_length() - 1)
    while size >= max(1, floor):
        if extent % size == 0:
            return size
        size //= 2
    return None


def tiling(move: Move, fac: Factored | None, itemsize: int, out_shape: tuple[int, ...] | None = None) -> _Tiling:
    """The tile of `move` (see the module docstring); a fill tiles the region's innermost dimensions. Where the
    region ends inside the output (`out_shape`: a cat's piece, a pad's interior) the tile takes a size that divides
    the region's extent when one fits the block's threads, so that no store needs a bound (a bounded store's
    coverage is not checked)."""
    vec = 16 // itemsize
    inside = [
        out_shape is not None and o + e < n
        for o, e, n in zip(move.origin, move.extent, out_shape or move.extent, strict=True)
    ]
    if fac is None:  # a fill
        spans = [j for j, e in enumerate(move.extent) if e > 1][-2:] or [len(move.extent) - 1]
        transposed = False
    else:
        moving = [j for j, d in enumerate(fac.dims) if d is not None]
        if not moving:
            raise NotTaken("it broadcasts one element (an expand of a single value)")
        inner = moving[-1]  # the output's innermost moving dimension
        held = max(moving, key=lambda j: fac.dims[j] or 0)  # the one the input holds innermost
        if held != inner:
            spans, transposed = [held, inner], True
        elif len(moving) > 1:
            spans, transposed = [moving[-2], inner], False
        else:
            spans, transposed = [inner], False
        spans = sorted(spans)
    if transposed:
        return _Tiling(tuple(spans), (TRANSPOSE_TILE, TRANSPOSE_TILE), True)
    floor = THREADS * vec  # a fragment spreads whole 16-byte vectors over the block's threads
    if len(spans) == 1:
        even = _dividing(move.extent[spans[0]], TILE_ELEMENTS, floor) if inside[spans[0]] else None
        return _Tiling(tuple(spans), (even or TILE_ELEMENTS,), False)
    bn = max(vec, min(_pow2_at_least(move.extent[spans[1]]), TILE_ELEMENTS // 4))
    if inside[spans[1]]:
        bn = _dividing(move.extent[spans[1]], TILE_ELEMENTS // 4, vec) or bn
    bm = max(1, TILE_ELEMENTS // bn)
    least = max(1, floor // bn)  # rows enough for the block's vectors
    bm = max(min(bm, _pow2_at_least(move.extent[spans[0]])), least)
    if inside[spans[0]]:
        bm = _dividing(move.extent[spans[0]], bm, least) or bm
    return _Tiling(tuple(spans), (bm, bn), False)


def absorbs(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The ``clone`` nodes (a ``.contiguous()``, no other memory format) that are the only reader of one of the
    node's results: the copy kernel writes a contiguous tensor already, so the clone is the same values and joins
    the group instead of a second copy (``x.transpose(1, 2).contiguous()`` is one kernel)."""
    import torch

    from argus.frontend.partition import op_name

    if aten_name(node) not in OPERATORS or unsupported(node) is not None:
        return []
    out = []
    for u in _users(node):
        readers = list(u.users)
        if len(readers) != 1:
            continue
        (c,) = readers
        plain = c.kwargs.get("memory_format") in (None, torch.contiguous_format) and len(c.all_input_nodes) == 1
        if c.op == "call_function" and op_name(c) == "clone" and plain and c.name not in bound:
            out.append(c)
    return out


def unsupported(node: Any) -> str | None:
    """None when the template writes `node` (see the module docstring), else why not."""
    from argus.frontend.partition import metadata_only

    if metadata_only(node):
        return "PyTorch runs it as a view: no data moves"
    try:
        _kernel_plan(node)
    except NotTaken as err:
        return str(err)
    return None


def _kernel_plan(node: Any) -> tuple[Plan, list[Factored | None], list[_Tiling], list[tuple[int, ...]]]:
    """The node's plan, each move's factored input and tiling, and each input's row-major shape in the kernel."""
    import torch

    p = collapse(plan(node))
    itemsize = torch.empty((), dtype=node_value(_users(node)[0]).dtype).element_size()
    steps: dict[int, set[int]] = {}  # per input, the strides its moves step through it with
    for m in p.moves:
        if m.src is not None:
            mine = steps.setdefault(m.src, set())
            mine.update(abs(s) for e, s in zip(m.extent, m.strides, strict=True) if e > 1 and s != 0)
    facs: list[Factored | None] = []
    shapes: dict[int, tuple[int, ...]] = {}
    for m in p.moves:
        if m.src is None:
            facs.append(None)
            continue
        fac = factor(m, math.prod(p.inputs[m.src][1]), tuple(steps[m.src]))
        shapes[m.src] = fac.shape
        facs.append(fac)
    tilings = [tiling(m, f, itemsize, p.outputs[m.out][1]) for m, f in zip(p.moves, facs, strict=True)]
    units = sum(_units(m, t) for m, t in zip(p.moves, tilings, strict=True))
    if units >= 2**31:
        raise NotTaken(f"its {units} tiles exceed CUDA's grid")
    if not p.moves:
        raise NotTaken("it moves no element")
    in_shapes = [shapes.get(i, (math.prod(s),)) for i, (_, s) in enumerate(p.inputs)]
    return p, facs, tilings, in_shapes


def _counts(move: Move, t: _Tiling) -> list[int]:
    """The tile count along each region dimension of `move`."""
    out = []
    for j, e in enumerate(move.extent):
        out.append(-(-e // t.sizes[t.dims.index(j)]) if j in t.dims else e)
    return out


def _units(move: Move, t: _Tiling) -> int:
    return math.prod(_counts(move, t))


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a one-operator layout group (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    (node,) = [n for n in nodes if n.op == "call_function" and aten_name(n) in OPERATORS]
    p, facs, tilings, in_shapes = _kernel_plan(node)
    dt = MOVED[dtype_name(node_value(_users(node)[0]))]
    placeholders = [n.name for n in nodes if n.op == "placeholder"]
    # the kernel takes its inputs in the group's order (the subgraph's placeholders)
    perm = sorted(range(len(p.inputs)), key=lambda i: placeholders.index(p.inputs[i][0]))
    ins = [f"X{i}" for i in range(len(p.inputs))]
    outs = [f"O{i}" for i in range(len(p.outputs))]
    title = f"{aten_name(node)}: {len(p.moves)} move(s) of {', '.join(n for n, _ in p.inputs)}"
    params = [f"    {ins[i]}: T.Tensor[{tuple(in_shapes[i])!r}, T.{dt}]," for i in perm]
    params += [f"    {o}: T.Tensor[{tuple(s)!r}, T.{dt}]," for o, (_, s) in zip(outs, p.outputs, strict=True)]
    total = sum(_units(m, t) for m, t in zip(p.moves, tilings, strict=True))
    lines = [
        f"@argus.kernel(reference={name}_reference, sizes={{}})",
        f"def {name}(",
        *params,
        "):",
        f'    """{title}; a block per tile of one move (see argus.frontend.families.layout)."""',
        f"    with T.grid({total}, threads={THREADS}) as (u,):",
    ]
    start = 0
    for k, (m, fac, t) in enumerate(zip(p.moves, facs, tilings, strict=True)):
        units = _units(m, t)
        lines += _move_lines(k, m, fac, t, start, units, total, ins, outs[m.out], p.outputs[m.out][1], dt)
        start += units
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({aten_name(node)}).")
    # a result that a clone the group took in reads (`absorbs`) leaves the group as that clone's value
    clones = {n.all_input_nodes[0].name: n.name for n in nodes if n.op == "call_function" and aten_name(n) == "clone"}
    p = Plan(p.inputs, tuple((clones.get(n, n), v) for n, v in p.outputs), p.moves)
    shapes = {n: s for (n, _), s in zip(p.inputs, in_shapes, strict=True)}
    shapes.update({n: s for n, s in p.outputs})
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [p.inputs[i][0] for i in perm],
        [n for n, _ in p.outputs],
        {},
        math.prod(p.outputs[0][1]),
        {**{n: dt for n, _ in p.inputs}, **{n: dt for n, _ in p.outputs}},
        shapes,
    )


def _move_lines(
    k: int,
    m: Move,
    fac: Factored | None,
    t: _Tiling,
    start: int,
    units: int,
    total: int,
    ins: list[str],
    out: str,
    out_shape: tuple[int, ...],
    dt: str,
) -> list[str]:
    """One move's block body: the tile indices from the block number, the window read (or the fill) and the store."""
    counts = _counts(m, t)
    what = "fill" if m.src is None else f"from {ins[m.src]}"
    conds = ([f"u >= {start}"] if start else []) + ([f"u < {start + units}"] if start + units < total else [])
    box = ", ".join(f"{o}:{o + e}" for o, e in zip(m.origin, m.extent, strict=True))
    lines, ind = [f"        # move {k}: {out}[{box}] {what}"], "        "
    for c in conds:
        lines.append(f"{ind}with T.if_({c}):")
        ind += "    "
    local = f"(u - {start})" if start else "u"
    idx: list[str] = []
    below = 1
    for j in reversed(range(len(counts))):
        if counts[j] == 1:
            idx.append("0")
        else:
            q = local if below == 1 else f"{local} // {below}"
            idx.append(q if below * counts[j] == units else f"{q} % {counts[j]}")
        below *= counts[j]
    idx.reverse()

    def at(j: int) -> str:
        """Region dimension j's first element of this block's tile."""
        if j in t.dims:
            size = t.sizes[t.dims.index(j)]
            return idx[j] if size == 1 else (f"{idx[j]} * {size}" if idx[j] != "0" else "0")
        return idx[j]

    shape = tuple(t.sizes)
    lines.append(f"{ind}v = T.alloc_fragment({shape!r}, T.{dt})")
    if fac is None:
        lines.append(f"{ind}T.fill(v, {_literal_float(m.fill)})")
    else:
        origin, extent = [str(o) for o in fac.origin], ["None"] * len(fac.shape)
        for j, d in enumerate(fac.dims):
            if d is None:
                continue
            base = at(j)
            origin[d] = _plus(fac.origin[d], base)
            if j in t.dims:
                extent[d] = str(t.sizes[t.dims.index(j)])
        for j, d in enumerate(fac.reversed):
            if d is not None:  # read backwards: one index a block (the grid walks it), down from the origin
                origin[d] = f"{fac.origin[d]} - {idx[j]}" if idx[j] != "0" else str(fac.origin[d])
        window = f"{ins[m.src]}.window(({', '.join(origin)},), ({', '.join(extent)},))"  # type: ignore[index]
        lines.append(f"{ind}T.copy({window}{'.T' if t.transposed else ''}, v)")
    o_origin, o_extent, bound = [], [], []
    for j, e in enumerate(m.extent):
        o_origin.append(_plus(m.origin[j], at(j)))
        if j in t.dims:
            size = t.sizes[t.dims.index(j)]
            o_extent.append(str(size))
            end = m.origin[j] + e
            bound.append(str(end) if end < out_shape[j] and e % size else "None")
        else:
            o_extent.append("None")
            bound.append("None")
    bounded = f", bound=({', '.join(bound)},)" if any(b != "None" for b in bound) else ""
    lines.append(f"{ind}T.copy(v, {out}.window(({', '.join(o_origin)},), ({', '.join(o_extent)},){bounded}))")
    return lines


def _literal_float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return f"float({str(value)!r})"
    return repr(value)


def _plus(base: int, term: str) -> str:
    if term == "0":
        return str(base)
    return term if base == 0 else f"{base} + {term}"
