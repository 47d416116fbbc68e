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

Not taken: ``cumprod`` (its running total needs a row product, which the DSL's reductions do not have),
``cummax``/``cummin``/``logcumsumexp``, integer inputs (their ``cumsum`` is int64).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.atoms.common import WARP_SIZE, WARPGROUP_SIZE
from argus.frontend.families.base import DTYPES, KernelSource, aten_name, dtype_name, node_value, reference_source

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


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The DSL kernel of a one-operator scan group (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    (placeholder,) = [n for n in nodes if n.op == "placeholder"]
    (node,) = [n for n in nodes if n.op == "call_function"]
    dim = _dim(node)
    assert isinstance(dim, int)  # unsupported() was asked first
    x, out = node_value(placeholder), node_value(node)
    shape = tuple(x.shape)
    outer, r, inner = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])
    in_dt, out_dt = DTYPES[dtype_name(x)], DTYPES[dtype_name(out)]
    title = f"cumsum along dimension {dim} of {shape}"
    if inner == 1:
        lines = _rows(name, in_dt, out_dt, title, outer, r)
        view: tuple[int, ...] = (outer, r)
    else:
        lines = _columns(name, in_dt, out_dt, title, outer, r, inner)
        view = (outer, r, inner)
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} (cumsum).")
    return KernelSource(
        name,
        ref,
        "\n".join(lines) + "\n",
        [placeholder.name],
        [node.name],
        {},
        math.prod(tuple(out.shape)),
        {placeholder.name: in_dt, node.name: out_dt},
        {placeholder.name: view, node.name: view},
    )


def _rows(name: str, in_dt: str, out_dt: str, title: str, m: int, n: int) -> list[str]:
    bm, bn = ROWS_TILE
    return [
        f'@argus.kernel(reference={name}_reference, sizes={{"M": {m}, "N": {n}}}, '
        'policies={"tile_shape": ("BM", "BN")})',
        f"def {name}(",
        f'    X: T.Tensor[("M", "N"), T.{in_dt}],',
        f'    OUT: T.Tensor[("M", "N"), T.{out_dt}],',
        f"    BM: int = {bm},",
        f"    BN: int = {bn},",
        "):",
        f'    """{title}: BM rows per block,',
        "    each row streamed in BN-column tiles; a tile is scanned by Hillis-Steele steps through shared memory",
        '    and the running total of its rows is added."""',
        "    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):",
        "        x = T.alloc_fragment((BM, BN), T.f32)  # (BM, BN), 16-byte vectors along the row",
        "        shifted = T.alloc_fragment((BM, BN), T.f32)",
        "        sX = T.alloc_shared((BM, 2 * BN), T.f32)  # (BM, 2 BN): zeros, then the partial scan of the tile",
        "        carry = T.alloc_reduced(x, axis=1)  # the sum of each row's tiles so far",
        "        T.fill(carry, 0.0)",
        "        T.fill(sX.window((0, 0), (BM, BN)), 0.0)",
        "        for j in T.serial(T.cdiv(N, BN)):",
        "            T.copy(X.tile((bm, j), (BM, BN)), x)  # past N reads 0",
        "            scan = x",
        "            shift = 1",
        "            while shift < BN:  # unrolled while tracing: log2(BN) steps",
        "                T.barrier()  # the previous step's reads are done",
        "                T.copy(scan, sX.window((0, BN), (BM, BN)))",
        "                T.barrier()",
        "                T.copy(sX.window((0, BN - shift), (BM, BN)), shifted)  # column c - shift, 0 before it",
        "                scan = scan + shifted",
        "                shift *= 2",
        "            T.copy(scan + carry[:, None], OUT.tile((bm, j), (BM, BN)))",
        "            T.copy(carry + T.reduce_sum(x, axis=1), carry)",
    ]


def _columns(name: str, in_dt: str, out_dt: str, title: str, o: int, r: int, i: int) -> list[str]:
    bi = min(COLUMNS_THREADS, WARP_SIZE * -(-i // WARP_SIZE))
    tile = "(o, j, bi), (None, 1, BI)"
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
        "    with T.grid(O, T.cdiv(I, BI), threads=BI) as (o, bi):",
        "        # (BI, 1): thread t holds inner index bi * BI + t, so a warp reads consecutive addresses",
        "        x = T.alloc_fragment((BI, 1), T.f32, tv=argus.layout.Layout((BI, 1), (1, BI)))",
        "        total = T.alloc_fragment((BI, 1), T.f32, tv=argus.layout.Layout((BI, 1), (1, BI)))",
        "        T.fill(total, 0.0)",
        "        for j in T.serial(R):",
        f"            T.copy(X.tile({tile}).T, x)",
        "            T.copy(total + x, total)",
        f"            T.copy(total, OUT.tile({tile}).T)",
    ]
