"""The softmax-like family: ``_softmax``, ``_log_softmax`` and ``logsumexp`` over one dimension, each as one DSL
kernel that streams the reduced axis in tiles with an online (running maximum, rescaled running sum) first pass.

The input is viewed as ``(OUTER, R, INNER)``: ``R`` the reduced dimension, ``OUTER`` the dimensions before it and
``INNER`` those after it (`KernelSource.shapes` passes the tensors so). Two kernel shapes, both with the reduced
axis as the fragment's row, so that the row statistics are per-row values held next to the row:

* ``INNER == 1`` (the last dimension, ``rows``): the tensor is ``(M, N)``; a 1-d grid of ``BM``-row blocks of 128
  threads; each ``(BM, BN)`` tile is a blocked fragment (16-byte vector loads along the contiguous row, a row held
  by one warp, so its statistics combine with warp shuffles);
* ``INNER > 1`` (``columns``): the tensor is ``(O, R, I)``; a grid of ``(O, cdiv(I, BI))`` blocks of ``BI``
  threads; tile ``(BR, BI)`` of one outer index is read as a ``(BI, BR)`` fragment whose thread ``t`` holds inner
  index ``t`` and ``BR`` consecutive elements of the reduced axis, so a warp's loads are consecutive addresses
  along ``INNER`` (coalesced) and each thread reduces its own row in registers.

Pass 1 loops over the reduced axis in tiles (the last one masked with ``pad=-inf``): ``m_new = max(m,
rowmax(x))``, ``l = l * exp(m - m_new) + rowsum(exp(x - m_new))`` (``exp`` as ``exp2`` with ``log2(e)`` folded in).
Pass 2 (``_softmax``, ``_log_softmax``) reads the tiles again and writes ``exp(x - m) / l`` or ``x - m - log(l)``;
``logsumexp`` writes ``m + log(l)`` after pass 1. Values are float32, float16 or bfloat16, read into float32
fragments (all math in float32) and rounded once when stored. The tile sizes are the kernel's ``tile_shape``
policy: ``(BM, BN)`` (a row of ``BN`` f32 held by one warp: ``BN / 4`` a multiple of 32 whose share of the 128
threads stays within a warp, e.g. 128 or 384), ``(BR, BI)`` (``BI`` threads, a multiple of 32).

Known limit: a row whose first tile is all ``-inf`` while a later tile is not gets NaN (the running maximum is
``-inf`` when the first rescaling is computed); PyTorch returns the softmax of the finite part.
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

#: log2(e): exp(v) is written exp2(v * LOG2E), the literal value in the kernel text.
LOG2E = 1.4426950408889634

#: The operators this template writes, with the positional arguments it reads.
OPERATORS = ("_softmax", "_log_softmax", "logsumexp")

#: Row tile of the last-dimension kernel: BM rows of BN columns (a row of BN f32 values spread over one warp).
ROWS_TILE = (4, 128)
#: Column tile of the other kernel: BR elements of the reduced axis per thread; BI threads, one warpgroup at most
#: (fewer, rounded up to whole warps, where INNER is smaller).
COLUMNS_ROWS = 8
COLUMNS_THREADS = WARPGROUP_SIZE


def _dim(node: Any) -> int | str:
    """The reduced dimension of `node` (normalized), or why it cannot be read."""
    import torch

    x = node_value(node.args[0])
    if not isinstance(x, torch.Tensor):
        return "its input is not a tensor"
    rank = x.dim()
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if isinstance(dim, list | tuple):
        if len(dim) != 1:
            return f"a reduction over {len(dim)} dimensions (the template reduces one)"
        dim = dim[0]
    if not isinstance(dim, int) or isinstance(dim, bool):
        return f"dim {dim!r} is not an int"
    if rank == 0:
        return "a 0-d input"
    if not -rank <= dim < rank:
        return f"dim {dim} out of range for rank {rank}"
    return dim % rank


def view(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    """``(OUTER, R, INNER)``: `shape` around its dimension `dim`."""
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    import torch

    name = aten_name(node)
    if name not in OPERATORS:
        return f"the softmax template has no rule for {node.target} (it takes {', '.join(OPERATORS)})"
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
    if name == "_log_softmax" or name == "_softmax":
        if len(node.args) > 3 or set(node.kwargs) - {"half_to_float"}:
            return "arguments the template does not read"
    elif len(node.args) > 3 or set(node.kwargs) - {"keepdim"}:
        return "arguments the template does not read"
    return None


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a one-operator softmax-like group (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    (placeholder,) = [n for n in nodes if n.op == "placeholder"]
    (node,) = [n for n in nodes if n.op == "call_function"]
    op = aten_name(node)
    dim = _dim(node)
    assert isinstance(dim, int)  # unsupported() was asked first
    x, out = node_value(placeholder), node_value(node)
    shape = tuple(x.shape)
    outer, r, inner = view(shape, dim)
    in_dt, out_dt = DTYPES[dtype_name(x)], DTYPES[dtype_name(out)]
    reduced = op == "logsumexp"
    what = {"_softmax": "softmax", "_log_softmax": "log_softmax", "logsumexp": "logsumexp"}[op]
    title = f"{what} over dimension {dim} of {shape}"
    if inner == 1:
        lines = _rows(name, op, in_dt, out_dt, title, outer, r)
        shapes = {placeholder.name: (outer, r), node.name: (outer,) if reduced else (outer, r)}
    else:
        lines = _columns(name, op, in_dt, out_dt, title, outer, r, inner)
        shapes = {placeholder.name: (outer, r, inner), node.name: (outer, inner) if reduced else (outer, r, inner)}
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} ({what}).")
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [placeholder.name],
        [node.name],
        {},
        math.prod(tuple(out.shape)),
        {placeholder.name: in_dt, node.name: out_dt},
        shapes,
    )


def _pass_one(indent: str, tile: str, axis: str) -> list[str]:
    """The online first pass over the tiles of the reduced axis (`tile`: the global tile as the fragment reads it)."""
    return [
        f"{indent}m = T.alloc_reduced(x, axis=1)  # running maximum of each row",
        f"{indent}l = T.alloc_reduced(x, axis=1)  # running sum of exp(x - m)",
        f'{indent}T.fill(m, float("-inf"))',
        f"{indent}T.fill(l, 0.0)",
        f"{indent}for j in T.serial(T.cdiv({axis}, {'BN' if axis == 'N' else 'BR'})):",
        f'{indent}    T.copy({tile}, x, pad=float("-inf"))  # masked elements must not win the maximum',
        f"{indent}    m_new = T.maximum(T.reduce_max(x, axis=1), m)",
        f"{indent}    p = T.exp2((x - m_new[:, None]) * {LOG2E!r})",
        f"{indent}    # what was summed under the old maximum is rescaled to the new one",
        f"{indent}    T.copy(l * T.exp2((m - m_new) * {LOG2E!r}) + T.reduce_sum(p, axis=1), l)",
        f"{indent}    T.copy(m_new, m)",
    ]


def _pass_two(indent: str, op: str, axis: str, tile: str, out_tile: str) -> list[str]:
    """The second pass: every tile read again and its result written."""
    lines = []
    if op == "_softmax":
        lines.append(f"{indent}r = T.rcp(l)")
        value = f"T.exp2((x - m[:, None]) * {LOG2E!r}) * r[:, None]"
    else:
        # (x - m) - log(l), in PyTorch's order: x - (m + log(l)) rounded log(l) to the grid of m, and the largest
        # element of a row of large logits came out off by half an ulp of m (a KL divergence of peaked
        # distributions 1e3 times less accurate than eager)
        lines.append(f"{indent}lg = T.log(l)  # log(sum(exp(x - m))) of each row")
        value = "(x - m[:, None]) - lg[:, None]"
    lines += [
        f"{indent}for j in T.serial(T.cdiv({axis}, {'BN' if axis == 'N' else 'BR'})):",
        f"{indent}    T.copy({tile}, x)",
        f"{indent}    T.copy({value}, {out_tile})",
    ]
    return lines


def _rows(name: str, op: str, in_dt: str, out_dt: str, title: str, m: int, n: int) -> list[str]:
    bm, bn = ROWS_TILE
    out_shape = '("M",)' if op == "logsumexp" else '("M", "N")'
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={{"M": {m}, "N": {n}}}, '
        'policies={"tile_shape": ("BM", "BN")})',
        f"def {name}(",
        f'    X: T.Tensor[("M", "N"), T.{in_dt}],',
        f"    OUT: T.Tensor[{out_shape}, T.{out_dt}],",
        f"    BM: int = {bm},",
        f"    BN: int = {bn},",
        "):",
        f'    """{title}: BM rows per block,',
        '    each row streamed in BN-column tiles (a row held by one warp)."""',
        "    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):",
        "        x = T.alloc_fragment((BM, BN), T.f32)  # (BM, BN), 16-byte vectors along the row",
    ]
    lines += _pass_one("        ", "X.tile((bm, j), (BM, BN))", "N")
    if op == "logsumexp":
        lines.append("        T.copy(m + T.log(l), OUT.tile(bm, BM))")
    else:
        lines += _pass_two("        ", op, "N", "X.tile((bm, j), (BM, BN))", "OUT.tile((bm, j), (BM, BN))")
    return lines


def _columns(name: str, op: str, in_dt: str, out_dt: str, title: str, o: int, r: int, i: int) -> list[str]:
    bi = min(COLUMNS_THREADS, WARP_SIZE * -(-i // WARP_SIZE))
    out_shape = '("O", "I")' if op == "logsumexp" else '("O", "R", "I")'
    axes = grid_axes([("O", "o", o), ("T.cdiv(I, BI)", "bi", -(-i // bi))])
    if isinstance(axes, str):
        raise ValueError(axes)
    tile = "X.tile((o, j, bi), (None, BR, BI)).T"
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={{"O": {o}, "R": {r}, "I": {i}}}, '
        'policies={"tile_shape": ("BR", "BI")})',
        f"def {name}(",
        f'    X: T.Tensor[("O", "R", "I"), T.{in_dt}],',
        f"    OUT: T.Tensor[{out_shape}, T.{out_dt}],",
        f"    BR: int = {COLUMNS_ROWS},",
        f"    BI: int = {bi},",
        "):",
        f'    """{title}: (O, R, I) reduced along R;',
        "    a block of BI threads per BI inner indices of one outer index, thread t holding inner index t, the",
        '    reduced axis streamed in BR-element tiles."""',
        f"    with T.grid({axes[0]}, threads=BI) as ({axes[1]}):",
        "        # (BI, BR): thread t holds row t (inner index bi * BI + t) and its BR elements along R, so a warp",
        "        # reads consecutive inner indices (coalesced) and reduces its rows in registers",
        "        x = T.alloc_fragment((BI, BR), T.f32, tv=argus.layout.Layout((BI, BR), (1, BI)))",
    ]
    lines += _pass_one("        ", tile, "R")
    if op == "logsumexp":
        lines.append("        T.copy(m + T.log(l), OUT.tile((o, bi), (None, BI)))")
    else:
        lines += _pass_two("        ", op, "R", tile, "OUT.tile((o, j, bi), (None, BR, BI)).T")
    return lines
