"""Row gathers of the indexing/gather family: ``embedding``, ``index_select`` and ``x[..., idx, ...]``
(``aten.index.Tensor`` with one integer index tensor), each a copy of whole rows chosen by an index tensor.

Every such operator is one view: the source ``X`` as ``(A, R, C)`` (the dimensions before the indexed one, the
indexed one, the ones after it), the indices as ``I (N,)`` (flattened: a multi-dimensional index's result has its
shape in the indexed dimension's place), the result as ``O (A, N, C)``. ``O[a, n, :] = X[a, I[n], :]``.

The kernel (one per operator): a block of THREADS threads for each RB indices, BN-column tile of a row and outer
index a (grid ``(cdiv(N, RB), cdiv(C, BN), A)``, in that order where the extents fit CUDA's axes; RB rows so that a
block's tiles make about `BLOCK_BYTES`, every load issued before the first store), reading ``I[n]`` as a
scalar and copying the window ``X[a, row, bn*BN : (bn+1)*BN]`` to ``O[a, n, ...]`` in 16-byte vectors (narrower
where C is not a multiple of a 16-byte vector). The row is data: the kernel wraps a negative index (``idx + R``,
as Python indexing and ``aten.index`` do); a row still outside ``[0, R)`` reads zeros, because a window's load is
predicated on every coordinate's bounds (the generated code's ``in_range`` of the row read from I, the
interpreter likewise), so no index content can address memory outside X. PyTorch raises an error for such an
index (a device assertion on a GPU); the kernel writes a zero row instead. ``embedding`` and ``index_select`` take
no negative indices in PyTorch (an error there, wrapped here). The index is read as a 32-bit int: an index of
2**31 or more (an error in PyTorch) is truncated, not refused.

The copy is exact in every dtype (the row moves as it is stored). Not taken (each with its reason): boolean masks
(``x[mask]``: the result's shape is data), several index tensors (advanced indexing that broadcasts them, and
``_unsafe_index`` of the nearest-neighbour upsampling), ``gather``/``scatter``/``index_put`` (an index per element,
or a write), integer sources (the template moves float32, float16 and bfloat16).
"""

from __future__ import annotations

import math
from typing import Any

from argus.frontend.families.base import (
    DTYPES,
    INTEGER_DTYPES,
    KernelSource,
    aten_name,
    dtype_name,
    grid_axes,
    node_value,
    safe_name,
)

#: The operators this module writes (``aten`` names).
OPERATORS = frozenset({"embedding", "index_select", "index"})


def _name(node: Any) -> str:
    return aten_name(node) if node.op == "call_function" else ""


def takes(node: Any) -> bool:
    """Whether `node` is an operator this module writes (or refuses with its own reason)."""
    return _name(node) in OPERATORS


def view(node: Any) -> tuple[Any, Any, int, tuple[int, int, int], int] | str:
    """(the source node, the index node, the indexed dimension, (A, R, C), N) of a row gather, or why the template
    does not take it."""
    import torch

    op = _name(node)
    if op == "embedding":
        source, index, dim = node.args[0], node.args[1], 0
    elif op == "index_select":
        source, dim, index = node.args[0], node.args[1], node.args[2]
    elif op == "index":
        source, indices = node.args[0], list(node.args[1])
        given = [i for i, x in enumerate(indices) if x is not None]
        if len(given) != 1:
            return f"aten.index with {len(given)} index tensors (the template takes one: x[..., idx, ...])"
        dim, index = given[0], indices[given[0]]
    else:
        return f"{node.target}: not a row gather"
    x, i = node_value(source), node_value(index)
    if not isinstance(x, torch.Tensor) or not isinstance(i, torch.Tensor):
        return f"aten.{op}: its source or index is not a tensor"
    if i.dtype == torch.bool:
        return f"aten.{op} by a boolean mask (the result's shape is data)"
    if dtype_name(i) not in INTEGER_DTYPES:
        return f"aten.{op}: index dtype {i.dtype} (the template reads int64 and int32)"
    if dtype_name(x) not in DTYPES:
        return f"aten.{op}: source dtype {x.dtype} (the template moves float32, float16, bfloat16)"
    if x.dim() == 0:
        return f"aten.{op} of a 0-d source"
    dim = dim % x.dim()
    if op == "embedding" and x.dim() != 2:
        return f"aten.embedding of a {x.dim()}-d weight"
    if op == "index_select" and i.dim() > 1:
        return f"aten.index_select with a {i.dim()}-d index"
    shape = [int(d) for d in x.shape]
    a, r, c = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])
    n = int(i.numel())
    if min(a, r, c, n) == 0:
        return f"aten.{op} of an empty tensor"
    return source, index, dim, (a, r, c), n


def unsupported(node: Any) -> str | None:
    """None when the template takes `node` (see the module docstring), else why not."""
    found = view(node)
    if isinstance(found, str):
        return found
    (a, _, c), n = found[3], found[4]
    axes = _blocks(a, c, n, node_value(found[0]).element_size())[4]
    return axes if isinstance(axes, str) else None


#: The bytes of rows a block aims to have in flight (RB rows of a BN-column tile, every load issued before the
#: first store): one row of 256 bytes a block of 32 threads kept 8 KB in flight an SM, and an ``index_select`` of
#: (32, 8192, 128) bfloat16 rows ran at 0.71x eager (benchmarks/results/2026-12-08-gpu-owed-gather-gemv/)
BLOCK_BYTES = 4096
#: The most rows a block copies
MAX_ROWS = 16


def rows_per_block(c: int, bn: int, itemsize: int) -> int:
    """RB: rows a block copies, so that its tile of each moves about `BLOCK_BYTES` (at most `MAX_ROWS`)."""
    return max(1, min(MAX_ROWS, BLOCK_BYTES // (min(c, bn) * itemsize)))


def _blocks(a: int, c: int, n: int, itemsize: int) -> tuple[int, int, int, int, tuple[str, str] | str]:
    """(threads, BN, vector bytes, RB, the grid's `grid_axes`, or why none fits) of a gather of n rows of C elements
    from each of `a` outer slices."""
    threads, bn, vector = _tile(c, itemsize)
    rb = rows_per_block(c, bn, itemsize)
    axes = grid_axes([("T.cdiv(N, RB)", "nb", -(-n // rb)), ("T.cdiv(C, BN)", "bn", -(-c // bn)), ("A", "a", a)])
    return threads, bn, vector, rb, axes


def _tile(c: int, itemsize: int) -> tuple[int, int, int]:
    """(threads, BN, vector bytes) for rows of C elements: one vector per thread, 16 bytes where C's rows are whole
    16-byte vectors (else the widest that divides a row), 32 to 256 threads, as many as a row's vectors need."""
    vector = 16
    while vector > itemsize and (c * itemsize) % vector:
        vector //= 2
    per = vector // itemsize
    vectors = -(-c // per)
    threads = min(256, max(32, 32 * -(-vectors // 32)))
    return threads, threads * per, vector


def kernel_source(name: str, subgraph: Any) -> KernelSource:
    """The DSL kernel of a one-operator row-gather group."""
    nodes = list(subgraph.graph.nodes)
    (node,) = [n for n in nodes if takes(n)]
    source, index, dim, (a, r, c), n = view(node)
    x, i = node_value(source), node_value(index)
    x_dt, i_dt = DTYPES[dtype_name(x)], INTEGER_DTYPES[dtype_name(i)]
    threads, bn, vector, rb, (grid, names) = _blocks(a, c, n, x.element_size())
    taken: set[str] = set()
    px, pi, po = safe_name("X", taken), safe_name("I", taken), safe_name("O", taken)
    op = str(node.target).removesuffix(".default")
    what = f"{op}: rows of a ({a}, {r}, {c}) {x_dt} view of the source, {n} {i_dt} indices along dimension {dim}"
    per = vector // x.element_size()
    kernel = "\n".join(
        [
            f'@argus.kernel(reference={name}_reference, sizes={{"A": {a}, "R": {r}, "C": {c}, "N": {n}}}, '
            'policies={"tile_shape": ("BN", "RB")})',
            f"def {name}(",
            f'    {px}: T.Tensor[("A", "R", "C"), T.{x_dt}],',
            f'    {pi}: T.Tensor[("N",), T.{i_dt}],',
            f'    {po}: T.Tensor[("A", "N", "C"), T.{x_dt}],',
            f"    BN: int = {bn},",
            f"    RB: int = {rb},",
            "):",
            f'    """{what}: O[a, n, :] = X[a, I[n], :], a negative index wrapped, one outside the rows a zero row',
            '    (PyTorch raises an error there)."""',
            *([f'    T.assume("C % {per} == 0")  # rows in whole {vector}-byte vectors'] if per > 1 else []),
            f"    with T.grid({grid}, threads={threads}) as ({names}):",
            "        # RB rows a block, every row's load issued before the first store (RB loads in flight a thread)",
            "        rows = []",
            "        for r in range(RB):",
            "            n = nb * RB + r",
            f"            idx = {pi}[T.where(n < N, n, N - 1)]  # (a row past N is not stored)",
            "            # a negative index counts from the end; a row still outside X reads 0 (the load is predicated",
            "            # on the row's bounds, as every window's elements past a tensor's edge)",
            "            row = T.where(idx < 0, idx + R, idx)",
            f"            v = T.alloc_fragment((1, BN), T.{x_dt}, vector_bytes={vector})",
            f"            T.copy({px}.window((a, row, bn * BN), (None, 1, BN)), v)",
            "            rows.append(v)",
            "        for r in range(RB):",
            f"            T.copy(rows[r], {po}.window((a, nb * RB + r, bn * BN), (None, 1, BN)))",
        ]
    )
    reference = "\n".join(
        [
            f"def {name}_reference({px}, {pi}):",
            f'    """{what}: the rows as PyTorch indexes them (a negative index from the end)."""',
            f"    return {px}[:, {pi}.long()]",
        ]
    )
    return KernelSource(
        name,
        reference + "\n",
        kernel + "\n",
        [source.name, index.name],
        [node.name],
        {},
        a * n * c,
        {source.name: x_dt, index.name: i_dt, node.name: x_dt},
        {source.name: (a, r, c), index.name: (n,), node.name: (a, n, c)},
        indices={index.name: (0, r, ())},
    )


__all__ = ["OPERATORS", "kernel_source", "takes", "unsupported", "view"]
