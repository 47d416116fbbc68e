"""The pooling family: max and average pooling over 1, 2 or 3 spatial dimensions as one DSL kernel per operator.

torch.export with core ATen decompositions presents pooling as ``max_pool2d_with_indices`` /
``max_pool3d_with_indices`` (whose values the graph reads through ``getitem(·, 0)``) and ``avg_pool2d`` /
``avg_pool3d``; a 1-d pool arrives as the 2-d one between an ``unsqueeze`` and a ``squeeze`` (views, no compute).
Every operator is read (`read_pool`) as one 3-d pool over (depth, height, width): a 2-d pool has a depth of one.
The input is passed as ``(P, D, H, W)`` and the output as ``(P, OD, OH, OW)``, with ``P`` the batch and channel
dimensions flattened (the planes pool independently).

The kernel (`kernel_source`): a grid of ``(BH, BW)`` tiles of output rows and columns, one plane per block row,
128 threads, one output element per thread slot (consecutive threads along an output row, so stores coalesce).
For each output depth (a loop, one iteration for a 2-d pool) the block stages the input span its tile's windows
read into shared memory with one masked copy (elements in the padding, or past the input's end, read ``-inf`` for
a maximum and 0 for a sum), then accumulates the window one offset ``(kd, kh, kw)`` at a time: the elements of
that offset over the tile are a strided slice of the span (stride ``s``), so the span is stored *phase-major*
(element ``q * s + r`` of a row at ``[r][q]``) and read through a view in which each offset's slice is one
contiguous window; no thread computes an address. An average divides by the window's count, as PyTorch does:
``divisor_override``, else the window clipped to the padded input (``count_include_pad``) or to the input.
``(BH, BW)`` is the kernel's declared ``tile_shape`` policy; the span's size follows from it, the window and the
stride.

What the template refuses (`unsupported`): other pooling operators (adaptive pooling, the low-memory max pool
with offsets), a max pool whose indices are read, dtypes other than float32/float16/bfloat16, and a window whose
span does not fit in shared memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argus.atoms.common import shared_budget
from argus.frontend.families.base import (
    DTYPES,
    KernelSource,
    aten_call,
    dtype_name,
    grid_axes,
    int_list,
    node_value,
    safe_name,
    three,
)

#: operator -> (pool kind, spatial rank, the schema's arguments after ``self`` with their defaults)
OPERATORS: dict[str, tuple[str, int, tuple[tuple[str, Any], ...]]] = {
    "max_pool2d_with_indices": (
        "max",
        2,
        (("kernel_size", None), ("stride", ()), ("padding", 0), ("dilation", 1), ("ceil_mode", False)),
    ),
    "max_pool3d_with_indices": (
        "max",
        3,
        (("kernel_size", None), ("stride", ()), ("padding", 0), ("dilation", 1), ("ceil_mode", False)),
    ),
    "avg_pool2d": (
        "avg",
        2,
        (
            ("kernel_size", None),
            ("stride", ()),
            ("padding", 0),
            ("ceil_mode", False),
            ("count_include_pad", True),
            ("divisor_override", None),
        ),
    ),
    "avg_pool3d": (
        "avg",
        3,
        (
            ("kernel_size", None),
            ("stride", ()),
            ("padding", 0),
            ("ceil_mode", False),
            ("count_include_pad", True),
            ("divisor_override", None),
        ),
    ),
}

#: threads per block of the generated kernel
THREADS = 128
#: elements each thread moves per staging copy (one copy's loads are issued together: a whole span at once spills)
COPY_ELEMENTS = 8


@dataclass(frozen=True)
class Pool:
    """One pooling operator read as a 3-d pool over (depth, height, width); a 2-d pool has depth 1 everywhere.
    `kernel`, `stride`, `padding`, `dilation`: (d, h, w). `planes` is P (the leading dimensions flattened),
    `size` the input's (D, H, W) and `out` the output's (OD, OH, OW)."""

    op: str
    kind: str  # "max" | "avg"
    rank: int  # spatial dimensions of the operator: 2 or 3
    kernel: tuple[int, int, int]
    stride: tuple[int, int, int]
    padding: tuple[int, int, int]
    dilation: tuple[int, int, int]
    ceil_mode: bool
    count_include_pad: bool
    divisor_override: int | None
    planes: int
    size: tuple[int, int, int]
    out: tuple[int, int, int]
    dtype: str  # the DSL's dtype of input and output

    def tile(self) -> tuple[int, int]:
        """The default output tile (BH, BW): a row of THREADS for a 1-d pool (one output row), else 32 columns
        (one warp's coalesced 128 bytes of f32) by THREADS / 32 rows; one element per thread."""
        return (1, THREADS) if self.out[1] == 1 and self.size[1] == 1 else (THREADS // 32, 32)

    def span(self, bh: int, bw: int) -> tuple[int, int, int, int, int]:
        """(planes, rows, columns, row phases QH, column phases QW) of the input span a (bh, bw) output tile
        reads for one output depth: rows = stride_h * QH, QH = bh + the window's reach in strides."""
        kd, kh, kw = self.kernel
        _, sh, sw = self.stride
        dd, dh, dw = self.dilation
        qh = bh + (kh - 1) * dh // sh
        qw = bw + (kw - 1) * dw // sw
        return (kd - 1) * dd + 1, sh * qh, sw * qw, qh, qw

    def shared_bytes(self, bh: int, bw: int) -> int:
        planes, rows, cols, _, _ = self.span(bh, bw)
        return planes * rows * cols * _ITEMSIZE[self.dtype]


_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2}


def _op(node: Any) -> str:
    packet = getattr(node.target, "_overloadpacket", None)
    return str(packet.__name__) if packet is not None else str(getattr(node.target, "__name__", ""))


def read_pool(node: Any) -> Pool | str:
    """`node` as a `Pool`, or why the template cannot take it."""
    op = _op(node)
    if op not in OPERATORS:
        if "adaptive" in op:
            return f"{op}: adaptive pooling (windows that depend on the output position) is not built"
        return f"{op}: the template takes max_pool2d/3d_with_indices and avg_pool2d/3d"
    kind, rank, schema = OPERATORS[op]
    args = list(node.args)
    if len(args) > len(schema) + 1:
        return f"{op}: {len(args)} positional arguments, the template reads {len(schema) + 1}"
    values: dict[str, Any] = {}
    for i, (name, default) in enumerate(schema):
        values[name] = args[i + 1] if i + 1 < len(args) else node.kwargs.get(name, default)
    if values["kernel_size"] is None:
        return f"{op}: kernel_size missing"
    kernel = int_list(values["kernel_size"], rank, "kernel_size", "pool")
    stride = int_list(values["stride"], rank, "stride", "pool") if values["stride"] else kernel
    padding = int_list(values["padding"], rank, "padding", "pool")
    dilation = int_list(values.get("dilation", 1), rank, "dilation", "pool")
    for part in (kernel, stride, padding, dilation):
        if isinstance(part, str):
            return f"{op}: {part}"
    assert not isinstance(kernel, str) and not isinstance(stride, str)
    assert not isinstance(padding, str) and not isinstance(dilation, str)
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        return f"{op}: kernel {kernel}, stride {stride}, dilation {dilation}, padding {padding} out of range"
    divisor = values.get("divisor_override")
    if divisor is not None and (not isinstance(divisor, int) or divisor == 0):
        return f"{op}: divisor_override {divisor!r} is not a nonzero int"
    x = node.args[0]
    val, out = node_value(x), node_value(node)
    if isinstance(out, tuple | list):
        out = out[0]
    if val is None or out is None or not hasattr(val, "shape"):
        return f"{op}: the capture recorded no input or output shape"
    if dtype_name(val) not in DTYPES or dtype_name(out) != dtype_name(val):
        return f"{op}: {dtype_name(val)} values (the template takes float32, float16 and bfloat16)"
    if len(val.shape) not in (rank + 1, rank + 2):
        return f"{op}: a {len(val.shape)}-d input (the {rank}-d pool takes {rank + 1} or {rank + 2} dimensions)"
    if kind == "max":
        for user in node.users:
            if _op(user) != "getitem" or user.args[1] != 0:
                return f"{op}: the indices output is used ({user.name}); the template computes the values only"
    lead = [int(d) for d in val.shape[: len(val.shape) - rank]]
    pool = Pool(
        op=op,
        kind=kind,
        rank=rank,
        kernel=three(kernel, 1),
        stride=three(stride, 1),
        padding=three(padding, 0),
        dilation=three(dilation, 1),
        ceil_mode=bool(values["ceil_mode"]),
        count_include_pad=bool(values.get("count_include_pad", True)),
        divisor_override=divisor,
        planes=math.prod(lead),
        size=three(tuple(int(d) for d in val.shape[-rank:]), 1),
        out=three(tuple(int(d) for d in out.shape[-rank:]), 1),
        dtype=DTYPES[dtype_name(val)],
    )
    bh, bw = pool.tile()
    axes = grid_axes([("", "", -(-pool.out[2] // bw)), ("", "", -(-pool.out[1] // bh)), ("", "", pool.planes)])
    if isinstance(axes, str):
        return f"{op}: {axes}"
    need, budget = pool.shared_bytes(*pool.tile()), shared_budget(1)
    if need > budget:
        return (
            f"{op}: the input span of one ({', '.join(map(str, pool.tile()))}) tile of outputs needs {need} bytes "
            f"of shared memory, more than the {budget} a block has (a window this wide is not built)"
        )
    return pool


def unsupported(node: Any) -> str | None:
    """None when the template can take the ``call_function`` node, else why not (the partitioner asks)."""
    found = read_pool(node)
    return found if isinstance(found, str) else None


def _plus(constant: int) -> str:
    return f" + {constant}" if constant > 0 else f" - {-constant}" if constant < 0 else ""


def _output_size(length: str, out: str, k: int, s: int, p: int, d: int, ceil_mode: bool) -> str:
    """PyTorch's output length of one pooled dimension as a condition on the shape symbols: ``out == (length +
    2p - d(k-1) - 1) // s + 1``; with ceil_mode rounded up, less one when the last window would start past the
    input and its right padding."""
    reach = 2 * p - d * (k - 1) - 1
    if not ceil_mode:
        return f"{out} == ({length}{_plus(reach)}) // {s} + 1"
    up = f"(({length}{_plus(reach + s - 1)}) // {s} + 1)"
    return (
        f"(({out} == {up}) and (({up} - 1) * {s} < {length}{_plus(p)}))"
        f" or (({out} == {up} - 1) and (({up} - 1) * {s} >= {length}{_plus(p)}))"
    )


def _divisor(pool: Pool) -> tuple[list[str], str]:
    """(DSL lines that compute it, the expression) of the average's divisor: a number when every window counts
    the same, else a fragment over the tile (`acc`'s coordinates are the output's)."""
    if pool.divisor_override is not None:
        return [], f"{float(pool.divisor_override)!r}"
    kd, kh, kw = pool.kernel
    if pool.count_include_pad and not pool.ceil_mode:
        return [], f"{float(kd * kh * kw)!r}"  # no window reaches past the padding
    lines = []
    factors = []
    dims = (("d", "od", 1, "D"), ("h", "bh * BH", 2, "H"), ("w", "bw * BW", 3, "W"))
    for i, (axis, origin, coord, length) in enumerate(dims):
        if pool.rank == 2 and axis == "d":
            continue
        k, s, p = pool.kernel[i], pool.stride[i], pool.padding[i]
        lines += [
            f"            {axis}0 = (T.index(acc, {coord}) + {origin}) * {s}{_plus(-p)}  # the windows' first {axis}",
            f"            {axis}1 = T.minimum({axis}0 + {k}, {length}{_plus(p)})  # their end, clipped to the padding",
        ]
        if pool.count_include_pad:
            factors.append(f"({axis}1 - {axis}0)")
        else:
            factors.append(f"(T.minimum({axis}1, {length}) - T.maximum({axis}0, 0))")
    lines.append(f"            count = {' * '.join(factors)}")
    return lines, "count"


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The pooling kernel of the group `subgraph` (one pooling node, and the ``getitem`` of a max pool's values)
    and its reference (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    node = next(n for n in nodes if n.op == "call_function" and _op(n) in OPERATORS)
    pool = read_pool(node)
    assert not isinstance(pool, str)  # unsupported() was asked first
    placeholder = next(n for n in nodes if n.op == "placeholder")
    output = next(n for n in nodes if n.op == "output")
    result = output.args[0]
    result = result[0] if isinstance(result, tuple | list) else result
    taken: set[str] = set()
    x, out = safe_name("X", taken), safe_name("OUT", taken)
    kd, kh, kw = pool.kernel
    sd, sh, sw = pool.stride
    pd, ph, pw = pool.padding
    dd, dh, dw = pool.dilation
    bh, bw = pool.tile()
    three = pool.rank == 3
    in_shape = ('"P"', '"D"' if three else "1", '"H"', '"W"')
    out_shape = ('"P"', '"OD"' if three else "1", '"OH"', '"OW"')
    sizes = {"P": pool.planes, "H": pool.size[1], "W": pool.size[2], "OH": pool.out[1], "OW": pool.out[2]}
    if three:
        sizes.update(D=pool.size[0], OD=pool.out[0])
    conditions = [
        _output_size(length, o, pool.kernel[i], pool.stride[i], pool.padding[i], pool.dilation[i], pool.ceil_mode)
        for i, (length, o) in enumerate((("D", "OD"), ("H", "OH"), ("W", "OW")))
        if three or i > 0
    ]
    is_max = pool.kind == "max"
    pad = 'float("-inf")' if is_max else "0.0"
    dims = "(kernel, stride, padding, dilation) = " + ", ".join(
        str(v[3 - pool.rank :]) for v in (pool.kernel, pool.stride, pool.padding, pool.dilation)
    )
    extra = "" if is_max else f", count_include_pad={pool.count_include_pad}, divisor_override={pool.divisor_override}"
    shape = tuple(node_value(placeholder).shape)
    axes = grid_axes(
        [
            ("T.cdiv(OW, BW)", "bw", -(-pool.out[2] // bw)),
            ("T.cdiv(OH, BH)", "bh", -(-pool.out[1] // bh)),
            ("P", "p", pool.planes),
        ]
    )
    assert not isinstance(axes, str)  # unsupported() asked read_pool, which refuses a grid past the limits
    grid_args, grid_names = axes
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={sizes!r}, policies={{"tile_shape": ("BH", "BW")}})',
        f"def {name}(",
        f"    {x}: T.Tensor[({', '.join(in_shape)}), T.{pool.dtype}],",
        f"    {out}: T.Tensor[({', '.join(out_shape)}), T.{pool.dtype}],",
        f"    BH: int = {bh},",
        f"    BW: int = {bw},",
        "):",
        f'    """{pool.op}: {dims}, ceil_mode={pool.ceil_mode}{extra}, over the planes of {shape} (P = the '
        'leading dimensions flattened); one (BH, BW) tile of an output plane per block."""',
        "    # the output sizes PyTorch gives these input sizes",
        f"    T.assume({' and '.join(f'({c})' for c in conditions)!r})",
        "    # the input span a tile's windows read, per output depth: rows = stride * QH (QH = BH + the window's",
        "    # reach in strides), stored phase-major so that each window offset reads one contiguous slice",
        f"    QH, QW = BH + {(kh - 1) * dh // sh}, BW + {(kw - 1) * dw // sw}",
        f"    ROWS, COLS = {sh} * QH, {sw} * QW",
        f"    CHUNK = max(1, {THREADS * COPY_ELEMENTS} // COLS)  # rows per staging copy: a few elements per thread",
        f"    phase_major = argus.layout.Layout((1, {(kd - 1) * dd + 1}, ({sh}, QH), ({sw}, QW)), "
        "(0, ROWS * COLS, (QH * COLS, COLS), (QW, 1)))",
        f"    by_offset = argus.layout.Layout((1, {(kd - 1) * dd + 1}, (QH, {sh}), (QW, {sw})), "
        "(0, ROWS * COLS, (COLS, QH * COLS), (1, QW)))",
        f"    with T.grid({grid_args}, threads={THREADS}) as ({grid_names}):",
        f"        sx = T.alloc_shared((1, {(kd - 1) * dd + 1}, ROWS, COLS), T.{pool.dtype}, layout=phase_major)",
        "        window = sx.view(by_offset)  # element (r * QH + q) of a row is input row q * stride + r",
        "        acc = T.alloc_fragment((1, 1, BH, BW), T.f32, vector_bytes=4)  # one output element per thread",
        "        v = T.alloc_fragment((1, 1, BH, BW), T.f32, vector_bytes=4)  # one window offset, widened to f32",
    ]
    indent = "        "
    if three:
        lines.append("        for od in T.serial(OD):")
        indent = "            "
        depth = f"od * {sd}{_plus(-pd)}"
        od = "od"
    else:
        depth, od = "0", "0"
    lines += [
        f"{indent}for z in range({(kd - 1) * dd + 1}):  # the span, a few rows per copy (padding and past the end "
        f"read {pad})",
        f"{indent}    for r in range(0, ROWS, CHUNK):",
        f"{indent}        n = min(CHUNK, ROWS - r)",
        f"{indent}        T.copy({x}.window((p, {depth} + z, bh * (BH * {sh}){_plus(-ph)} + r, "
        f"bw * (BW * {sw}){_plus(-pw)}), (1, 1, n, COLS)), sx.window((0, z, r, 0), (1, 1, n, COLS)), pad={pad})",
        f"{indent}T.barrier()",
        f"{indent}T.fill(acc, {pad})",
        f"{indent}for kd in range({kd}):",
        f"{indent}    for kh in range({kh}):",
        f"{indent}        for kw in range({kw}):",
        f"{indent}            rh, rw = kh * {dh}, kw * {dw}  # the offset's distance from the window's start",
        f"{indent}            T.copy(window.window((0, kd * {dd}, (rh % {sh}) * QH + rh // {sh}, "
        f"(rw % {sw}) * QW + rw // {sw}), (1, 1, BH, BW)), v)",
        f"{indent}            T.copy({'T.maximum(acc, v)' if is_max else 'acc + v'}, acc)",
    ]
    value = "acc"
    if not is_max:
        div_lines, divisor = _divisor(pool)
        lines += [line.replace("            ", indent, 1) for line in div_lines]
        value = f"acc / {divisor}"
    lines.append(f"{indent}T.copy({value}, {out}.tile((p, {od}, bh, bw), (1, 1, BH, BW)))")
    if three:
        lines.append(f"{indent}T.barrier()  # every thread is done with sx before the next depth overwrites it")

    call = aten_call(node)
    ref = [
        f"def {name}_reference({placeholder.name}):",
        f'    """The captured FX subgraph of {name}: {pool.op}{" (its values)" if is_max else ""}."""',
        f"    {node.name} = {call}",
        f"    return {node.name}{'[0]' if result is not node else ''}",
    ]
    dt = pool.dtype
    p_, (d_, h_, w_), (od_, oh_, ow_) = pool.planes, pool.size, pool.out
    return KernelSource(
        name,
        "\n".join(ref) + "\n",
        "\n".join(lines) + "\n",
        [placeholder.name],
        [result.name],
        {},
        p_ * od_ * oh_ * ow_,
        {placeholder.name: dt, result.name: dt},
        shapes={placeholder.name: (p_, d_, h_, w_), result.name: (p_, od_, oh_, ow_)},
    )
