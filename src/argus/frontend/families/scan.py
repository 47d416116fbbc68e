"""The scan family: ``cumsum`` along one dimension as one DSL kernel that streams the scanned axis in tiles with a
carried running total.

The input is viewed as ``(OUTER, R, INNER)`` around the scanned dimension ``R`` (`KernelSource.shapes` passes the
tensors so); two kernel shapes:

* ``INNER == 1`` (the last dimension, ``rows``): the tensor is ``(M, N)``; a 1-d grid of ``BM``-row blocks of 128
  threads. Each ``(BM, BN)`` tile is read with 16-byte vector loads along the row (a row held by one warp) and
  scanned in the block by Hillis–Steele steps through shared memory: the tile is stored in the right half of a
  ``(BM, 2 BN)`` buffer whose left half holds zeros, and step ``d = 1, 2, 4, ... < BN`` adds the window shifted by
  ``d`` columns (``log2(BN)`` steps, each a shared store and load between two barriers: ``BN log2(BN)`` additions
  per tile instead of ``BN``, all in shared memory and registers; global memory is read and written once). The
  running total of each row (a warp-shuffle row sum of each tile) is added to the tile's inclusive scan.
* ``INNER > 1`` (``columns``): the tensor is ``(O, R, I)``; a grid of ``(O, cdiv(I, BI))`` blocks of ``BI``
  threads, thread ``t`` owning inner index ``t``: the scanned axis is walked one element at a time with the running
  sum in a register, so each step is one coalesced load and store of ``BI`` consecutive inner indices.

Values are float32, float16 or bfloat16, read into float32 fragments (sums in float32) and rounded once when
stored. The tiles are the kernel's ``tile_shape`` policy: ``(BM, BN)`` (default ``(4, 128)``: a row of ``BN`` f32
within one warp) or ``(BI,)`` (threads, a multiple of 32).

Two more scans are taken whole, their layout operators absorbed into the group (`absorbs`):

* **reverse** — ``flip(cumsum(flip(x, [d]), d), [d])``, the suffix sum: the rows kernel walks the row's tiles from
  the last and scans each tile the other way (the tile in the left half of the shared buffer, zeros in the right, the
  window shifted by ``+d``); the columns kernel walks R from its end;
* **exclusive** — ``cat([zeros, cumsum(x.narrow(d, 0, R - 1), d)], d)`` (the zeros ``full_like`` of a view of x, or
  ``full`` of that shape, as `argus.frontend.decompositions` makes them), the sum
  of the elements before each: the rows kernel shifts the tile's inclusive scan by one column through shared memory
  (column 0 reads the zeros), the columns kernel stores the running sum before adding the element. The last element
  of x is read and never added, as in the reference.

Not taken: ``cumprod`` (its running total needs a row product, which the DSL's reductions do not have),
``cummax``/``cummin``/``logcumsumexp``, integer inputs (their ``cumsum`` is int64), a flip or an exclusive pattern
that is not exactly one of the two above (they stay layout operators, left to PyTorch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.atoms.common import WARP_SIZE, WARPGROUP_SIZE
from argus.frontend.families.base import (
    DTYPES,
    KernelSource,
    aten_name,
    dtype_name,
    grid_axes,
    node_value,
    reference_source,
)

#: Row tile of the last-dimension kernel: BM rows of BN columns (a row of BN f32 values spread over one warp).
ROWS_TILE = (4, 128)
#: Threads of the other kernel: one warpgroup at most (fewer, rounded up to whole warps, where INNER is smaller).
COLUMNS_THREADS = WARPGROUP_SIZE


def _dim(node: Any) -> int | str:
    import torch

    x = node_value(node.args[0])
    if not isinstance(x, torch.Tensor):
        return "its input is not a tensor"
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if not isinstance(dim, int) or isinstance(dim, bool):
        return f"dim {dim!r} is not an int"
    if x.dim() == 0:
        return "a 0-d input"
    return dim % x.dim()


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    import torch

    name = aten_name(node)
    if name != "cumsum":
        return f"the scan template takes cumsum only, not {node.target}"
    dim = _dim(node)
    if isinstance(dim, str):
        return dim
    x, out = node_value(node.args[0]), node_value(node)
    if not isinstance(out, torch.Tensor):
        return "its result is not a tensor"
    for what, t in (("input", x), ("output", out)):
        if dtype_name(t) not in DTYPES:
            return f"{what} dtype {t.dtype} (the template takes float32, float16, bfloat16)"
    if x.numel() == 0:
        return "an empty input"
    if len(node.args) > 2 or set(node.kwargs) - {"dtype"}:
        return "arguments the template does not read"
    return None


def _flip_of(node: Any, dim: int) -> bool:
    """`node` is ``flip(_, [dim])`` of a tensor of the scan's rank."""
    if node.op != "call_function" or aten_name(node) != "flip" or len(node.args) < 2:
        return False
    rank = node_value(node).dim()
    dims = node.args[1]
    return isinstance(dims, list | tuple) and len(dims) == 1 and isinstance(dims[0], int) and dims[0] % rank == dim


def _reverse_nodes(node: Any, dim: int) -> list[Any]:
    """The two flips around a cumsum that make it a reverse scan, or []."""
    source = node.args[0]
    users = list(node.users)
    if not (_flip_of(source, dim) and len(source.users) == 1 and len(users) == 1 and _flip_of(users[0], dim)):
        return []
    return [source, users[0]]


def _exclusive_nodes(node: Any, dim: int) -> list[Any]:
    """The slice, zeros and cat around a cumsum that make it an exclusive scan of the slice's source, or []."""
    import torch.fx

    source, users = node.args[0], list(node.users)
    if not (source.op == "call_function" and aten_name(source) == "slice" and len(source.users) == 1):
        return []
    x = source.args[0]
    if not isinstance(x, torch.fx.Node):
        return []
    rank, length = node_value(x).dim(), node_value(x).shape[dim]
    given = list(source.args[1:])
    sdim, start, end, step = (given + [0, None, None, 1][len(given) :])[:4]
    if not (isinstance(sdim, int) and sdim % rank == dim and start in (0, None) and step == 1 and end == length - 1):
        return []
    if len(users) != 1 or users[0].op != "call_function" or aten_name(users[0]) != "cat":
        return []
    cat = users[0]
    parts = cat.args[0]
    cat_dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
    if not (isinstance(parts, list | tuple) and len(parts) == 2 and parts[1] is node and cat_dim % rank == dim):
        return []
    zeros = parts[0]
    # the zeros: full_like / zeros_like of a view of x, or (as argus.frontend.decompositions makes them) full
    if not (
        zeros.op == "call_function"
        and aten_name(zeros) in ("full_like", "zeros_like", "full")
        and len(zeros.users) == 1
    ):
        return []
    if aten_name(zeros) in ("full_like", "full") and (len(zeros.args) < 2 or zeros.args[1] != 0):
        return []
    if node_value(zeros).shape[dim] != 1 or tuple(node_value(cat).shape) != tuple(node_value(x).shape):
        return []
    views: list[Any] = []  # what the zeros' shape is taken from: views of x that nothing else reads
    base = zeros.args[0]
    while isinstance(base, torch.fx.Node) and base is not x:
        if base.op != "call_function" or aten_name(base) not in ("select", "unsqueeze", "view", "reshape", "slice"):
            return []
        if len(base.users) != 1:
            return []
        views.append(base)
        base = base.args[0]
    return [source, *views, zeros, cat]


def absorbs(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The layout nodes a cumsum's group takes in with it: the flips of a reverse scan or the slice, zeros and cat
    of an exclusive one (see the module docstring); [] for a plain cumsum."""
    if aten_name(node) != "cumsum" or unsupported(node) is not None:
        return []
    dim = _dim(node)
    assert isinstance(dim, int)
    return _reverse_nodes(node, dim) or _exclusive_nodes(node, dim)


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a scan group: one cumsum, plain, reverse or exclusive (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    (placeholder,) = [n for n in nodes if n.op == "placeholder"]
    (node,) = [n for n in nodes if n.op == "call_function" and aten_name(n) == "cumsum"]
    dim = _dim(node)
    assert isinstance(dim, int)  # unsupported() was asked first
    (result,) = [n for n in nodes if n.op == "output"][0].all_input_nodes
    mode = "reverse" if _reverse_nodes(node, dim) else ("exclusive" if _exclusive_nodes(node, dim) else "")
    x, out = node_value(placeholder), node_value(result)
    shape = tuple(x.shape)
    outer, r, inner = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])
    in_dt, out_dt = DTYPES[dtype_name(x)], DTYPES[dtype_name(out)]
    what = f"{mode} cumsum" if mode else "cumsum"
    title = f"{what} along dimension {dim} of {shape}"
    if inner == 1:
        lines = _rows(name, in_dt, out_dt, title, outer, r, mode)
        view: tuple[int, ...] = (outer, r)
    else:
        lines = _columns(name, in_dt, out_dt, title, outer, r, inner, mode)
        view = (outer, r, inner)
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({what}).")
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [placeholder.name],
        [result.name],
        {},
        math.prod(tuple(out.shape)),
        {placeholder.name: in_dt, result.name: out_dt},
        {placeholder.name: view, result.name: view},
    )


def _rows(name: str, in_dt: str, out_dt: str, title: str, m: int, n: int, mode: str = "") -> list[str]:
    bm, bn = ROWS_TILE
    reverse = mode == "reverse"
    # the tile's half of the shared buffer and the other (zeros); a step reads the window `shift` columns towards
    # the zeros: column c - shift for a forward scan, c + shift for a reverse one
    tile_at, zeros_at = ("0", "BN") if reverse else ("BN", "0")
    read = "shift" if reverse else "BN - shift"
    tile = "T.cdiv(N, BN) - 1 - j" if reverse else "j"
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={{"M": {m}, "N": {n}}}, '
        'policies={"tile_shape": ("BM", "BN")})',
        f"def {name}(",
        f'    X: T.Tensor[("M", "N"), T.{in_dt}],',
        f'    OUT: T.Tensor[("M", "N"), T.{out_dt}],',
        f"    BM: int = {bm},",
        f"    BN: int = {bn},",
        "):",
        f'    """{title}: BM rows per block,',
        f"    each row streamed in BN-column tiles{' from its end' if reverse else ''}; a tile is scanned by "
        "Hillis-Steele steps through shared memory",
        "    and the running total of its rows is added"
        + ("; the inclusive scan shifted by one column" if mode == "exclusive" else "")
        + '."""',
        "    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):",
        "        x = T.alloc_fragment((BM, BN), T.f32)  # (BM, BN), 16-byte vectors along the row",
        "        shifted = T.alloc_fragment((BM, BN), T.f32)",
        "        sX = T.alloc_shared((BM, 2 * BN), T.f32)  # (BM, 2 BN): the partial scan of the tile, and zeros",
        "        carry = T.alloc_reduced(x, axis=1)  # the sum of each row's tiles so far",
        "        T.fill(carry, 0.0)",
        f"        T.fill(sX.window((0, {zeros_at}), (BM, BN)), 0.0)",
        "        for j in T.serial(T.cdiv(N, BN)):",
        f"            T.copy(X.tile((bm, {tile}), (BM, BN)), x)  # past N reads 0",
        "            scan = x",
        "            shift = 1",
        "            while shift < BN:  # unrolled while tracing: log2(BN) steps",
        "                T.barrier()  # the previous step's reads are done",
        f"                T.copy(scan, sX.window((0, {tile_at}), (BM, BN)))",
        "                T.barrier()",
        f"                T.copy(sX.window((0, {read}), (BM, BN)), shifted)  # `shift` columns back, or zeros",
        "                scan = scan + shifted",
        "                shift *= 2",
    ]
    if mode == "exclusive":  # column c takes the inclusive scan of column c - 1 (column 0: zero)
        lines += [
            "            T.barrier()",
            "            T.copy(scan, sX.window((0, BN), (BM, BN)))",
            "            T.barrier()",
            "            T.copy(sX.window((0, BN - 1), (BM, BN)), shifted)",
            "            scan = shifted",
        ]
    lines += [
        f"            T.copy(scan + carry[:, None], OUT.tile((bm, {tile}), (BM, BN)))",
        "            T.copy(carry + T.reduce_sum(x, axis=1), carry)",
    ]
    return lines


def _columns(name: str, in_dt: str, out_dt: str, title: str, o: int, r: int, i: int, mode: str = "") -> list[str]:
    bi = min(COLUMNS_THREADS, WARP_SIZE * -(-i // WARP_SIZE))
    tile = f"(o, {'R - 1 - j' if mode == 'reverse' else 'j'}, bi), (None, 1, BI)"
    axes = grid_axes([("O", "o", o), ("T.cdiv(I, BI)", "bi", -(-i // bi))])
    if isinstance(axes, str):
        raise ValueError(axes)
    return [
        f'@argus.kernel(reference={name}_reference, sizes={{"O": {o}, "R": {r}, "I": {i}}}, '
        'policies={"tile_shape": ("BI",)})',
        f"def {name}(",
        f'    X: T.Tensor[("O", "R", "I"), T.{in_dt}],',
        f'    OUT: T.Tensor[("O", "R", "I"), T.{out_dt}],',
        f"    BI: int = {bi},",
        "):",
        f'    """{title}: (O, R, I) scanned along R;',
        "    a block of BI threads per BI inner indices of one outer index, thread t carrying the running sum of",
        '    inner index t along R."""',
        f"    with T.grid({axes[0]}, threads=BI) as ({axes[1]}):",
        "        # (BI, 1): thread t holds inner index bi * BI + t, so a warp reads consecutive addresses",
        "        x = T.alloc_fragment((BI, 1), T.f32, tv=argus.layout.Layout((BI, 1), (1, BI)))",
        "        total = T.alloc_fragment((BI, 1), T.f32, tv=argus.layout.Layout((BI, 1), (1, BI)))",
        "        T.fill(total, 0.0)",
        f"        for j in T.serial(R):{'  # from the end' if mode == 'reverse' else ''}",
        f"            T.copy(X.tile({tile}).T, x)",
        *(  # exclusive: the running sum before this element
            [f"            T.copy(total, OUT.tile({tile}).T)", "            T.copy(total + x, total)"]
            if mode == "exclusive"
            else ["            T.copy(total + x, total)", f"            T.copy(total, OUT.tile({tile}).T)"]
        ),
    ]
