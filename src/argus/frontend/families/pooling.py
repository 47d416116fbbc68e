"""The pooling family: max and average pooling over 1, 2 or 3 spatial dimensions as one DSL kernel per operator.

torch.export with core ATen decompositions presents pooling as ``max_pool2d_with_indices`` /
``max_pool3d_with_indices`` (whose values the graph reads through ``getitem(·, 0)``) and ``avg_pool2d`` /
``avg_pool3d``; a 1-d pool arrives as the 2-d one between an ``unsqueeze`` and a ``squeeze`` (views, no compute).
Every operator is read (`read_pool`) as one 3-d pool over (depth, height, width): a 2-d pool has a depth of one.
The input is passed as ``(P, D, H, W)`` and the output as ``(P, OD, OH, OW)``, with ``P`` the batch and channel
dimensions flattened (the planes pool independently).

The kernel (`kernel_source`): a grid of ``(BH, BW)`` tiles of output rows and columns, one plane per block row,
128 threads, one output element per thread slot (consecutive threads along an output row, so stores coalesce),
in one of two shapes (`separable` chooses; for each output depth, a loop, one iteration for a 2-d pool):

* **staged** (small windows): the block stages the input span its tile's windows read into shared memory with a
  few masked copies (elements in the padding, or past the input's end, read ``-inf`` for a maximum and 0 for a
  sum), then accumulates the window one offset ``(kd, kh, kw)`` at a time: the elements of that offset over the
  tile are a strided slice of the span (stride ``s``), so the span is stored *phase-major* (element ``q * s + r``
  of a row at ``[r][q]``) and read through a view in which each offset's slice is one contiguous window; no
  thread computes an address.
* **separable** (large windows): the window's dimensions are taken apart. Vertically, for each output row of the
  tile, the block loads the kd * kh input row segments its windows read (``(BW - 1) * s + (kw - 1) * dilation +
  1`` contiguous columns each, masked as above, in coalesced runs of up to 16 bytes per thread) and combines them
  elementwise (sum or maximum) in an f32 register row; depth folds into this pass. Horizontally, the combined
  rows (BH of them, not the span) go to shared memory phase-major, and each thread reduces its output's kw
  columns from one contiguous slice per offset, as the staged shape does.

An average divides by the window's count, as PyTorch does: ``divisor_override``, else the window clipped to the
padded input (``count_include_pad``) or to the input. ``(BH, BW)`` is the kernel's declared ``tile_shape``
policy; the shared memory follows from it, the window and the stride.

What the template refuses (`unsupported`): other pooling operators (adaptive pooling with uneven windows: even
ones arrive decomposed into plain pooling, `argus.frontend.decompositions`; the low-memory max pool
with offsets), a max pool whose indices are read, dtypes other than float32/float16/bfloat16, and a tile whose
span (staged) or combined rows (separable) do not fit in shared memory.
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

    def separable(self) -> bool:
        """Whether the kernel takes the separable shape (see `separable`)."""
        return separable(self)

    def tile(self) -> tuple[int, int]:
        """The default output tile (BH, BW), one element per thread. Staged shape: a row of THREADS for a 1-d pool
        (one output row), else 32 columns (one warp's coalesced 128 bytes of f32) by THREADS / 32 rows. Separable
        shape: BW the output row's width rounded up to a power of two in 32..THREADS (a segment of about BW *
        stride input columns per load), BH = THREADS / BW rows."""
        if self.separable():
            bw = min(THREADS, max(32, 1 << (self.out[2] - 1).bit_length()))
            return THREADS // bw, bw
        return (1, THREADS) if self.out[1] == 1 and self.size[1] == 1 else (THREADS // 32, 32)

    def span(self, bh: int, bw: int) -> tuple[int, int, int, int, int]:
        """(planes, rows, columns, row phases QH, column phases QW) of the input span a (bh, bw) output tile
        reads for one output depth in the staged shape: rows = stride_h * QH, QH = bh + the window's reach in
        strides."""
        kd, kh, kw = self.kernel
        _, sh, sw = self.stride
        dd, dh, dw = self.dilation
        qh = bh + (kh - 1) * dh // sh
        qw = bw + (kw - 1) * dw // sw
        return (kd - 1) * dd + 1, sh * qh, sw * qw, qh, qw

    def segment(self, bw: int) -> int:
        """The input columns one output row of `bw` windows reads: ``(bw - 1) * stride_w + (kernel_w - 1) *
        dilation_w + 1``, starting at column ``tile * bw * stride_w - padding_w`` (the separable shape loads it)."""
        return (bw - 1) * self.stride[2] + (self.kernel[2] - 1) * self.dilation[2] + 1

    def shared_bytes(self, bh: int, bw: int) -> int:
        """Shared memory of a (bh, bw) tile: the staged span, or (separable) `bh` combined f32 rows of the
        segment rounded up to whole runs of every thread, with the column-phase padding (at most 31 per phase)."""
        if self.separable():
            sw = self.stride[2]
            run = THREADS * 16 // _ITEMSIZE[self.dtype]  # a load of the widest runs over the block
            cols = -(-self.segment(bw) // run) * run
            return bh * sw * (-(-cols // sw) + 31) * 4
        planes, rows, cols, _, _ = self.span(bh, bw)
        return planes * rows * cols * _ITEMSIZE[self.dtype]


#: the (height x width) window from which the separable shape is taken: more offsets than this
SEPARABLE_WINDOW = 16


def separable(pool: Pool) -> bool:
    """Whether `pool` takes the separable shape: its (height x width) window has more than SEPARABLE_WINDOW
    offsets. Why: the staged shape costs, per output, one shared-memory read per window offset (kd * kh * kw) and
    a share of a staged span that grows with the window (stride_h * (BH + reach) x stride_w * (BW + reach) per
    depth, staged element by element): 121 reads and 62 KB per block for an 11 x 11 window of stride 11, three
    blocks per SM, latency bound. The separable shape reads each window row once from global memory in
    coalesced vectors and combines it in registers (kd * kh row loads of about stride_w elements per output),
    then kw shared reads per output from one combined row of about BW * stride_w floats per output row. For
    small windows (up to 4 x 4, and 3 x 3 x 3: the level-1 problems 41-44 and 46, whose staged kernels were
    tuned and measured) the staged span is small, every block stages it once and both shapes cost about the
    same; those keep the staged shape. Depth is folded into the vertical pass (kd * kh rows per output row)."""
    return pool.kernel[1] * pool.kernel[2] > SEPARABLE_WINDOW


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
            f"{op}: one ({', '.join(map(str, pool.tile()))}) tile of outputs needs {need} bytes of shared memory "
            f"(its {'combined rows' if pool.separable() else 'input span'}), more than the {budget} a block has "
            "(a window or stride this wide is not built)"
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


def _staged_lines(pool: Pool, x: str, out: str, grid_args: str, grid_names: str) -> list[str]:
    """The body of the staged shape (small windows): per output depth, the tile's whole input span staged
    phase-major in shared memory, then one window offset at a time accumulated from it (module docstring)."""
    kd, kh, kw = pool.kernel
    sd, sh, sw = pool.stride
    pd, ph, pw = pool.padding
    dd, dh, dw = pool.dilation
    three = pool.rank == 3
    is_max = pool.kind == "max"
    pad = 'float("-inf")' if is_max else "0.0"
    lines = [
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
    return lines + _finish(pool, indent, out, od, three)


def _finish(pool: Pool, indent: str, out: str, od: str, three: bool) -> list[str]:
    """Both shapes' last lines: the average's division (its count), the tile's store, and for a 3-d pool the barrier
    before the next output depth overwrites the shared buffer."""
    lines, value = [], "acc"
    if pool.kind != "max":
        div_lines, divisor = _divisor(pool)
        lines += [line.replace("            ", indent, 1) for line in div_lines]
        value = f"acc / {divisor}"
    lines.append(f"{indent}T.copy({value}, {out}.tile((p, {od}, bh, bw), (1, 1, BH, BW)))")
    if three:
        lines.append(f"{indent}T.barrier()  # every thread is done with sx before the next depth overwrites it")
    return lines


def _phase_residues(stride: int, run: int) -> tuple[int, ...]:
    """The residues mod 32 of QW (the length of a column phase, in f32 words) for which the separable shape's
    store of a combined row into shared memory has the fewest bank conflicts. Column ``c`` of the row is stored
    phase-major at word ``(c % stride) * QW + c // stride``; a warp's store instruction writes element ``e`` of
    each lane's run of `run` columns (columns ``base + lane * run + e``), and its cost is the most lanes that hit
    one of the 32 banks. With QW = 128 and stride 11 a warp's 32 columns fall in 11 phases of 3 words each, all
    in 3 banks (11-way conflicts); an odd stride's inverse mod 32 makes them a permutation of the banks."""

    def cost(residue: int) -> int:
        worst = 0
        for base in range(0, 32 * stride * run, 32 * run):  # the bank pattern repeats every 32 * stride columns
            for e in range(run):
                banks = [((c % stride) * residue + c // stride) % 32 for c in range(base + e, base + 32 * run, run)]
                worst = max(worst, max(banks.count(b) for b in set(banks)))
        return worst

    costs = [cost(r) for r in range(32)]
    return tuple(r for r in range(32) if costs[r] == min(costs))


def _separable_lines(pool: Pool, x: str, out: str, grid_args: str, grid_names: str) -> list[str]:
    """The body of the separable shape (large windows, `separable`): per output depth and output row of the
    tile, the kd * kh input row segments its windows read are loaded from global memory (coalesced, in runs of
    up to 16 bytes per thread) and combined elementwise in registers; the combined rows go to shared memory
    phase-major, and each thread reduces its output's kw columns from there (module docstring)."""
    kd, kh, kw = pool.kernel
    sd, sh, sw = pool.stride
    pd, ph, pw = pool.padding
    dd, dh, dw = pool.dilation
    three = pool.rank == 3
    is_max = pool.kind == "max"
    pad = 'float("-inf")' if is_max else "0.0"
    item = _ITEMSIZE[pool.dtype]
    runs = tuple(r for r in (16 // item, 8 // item, 4 // item, 2 // item) if r >= 1)
    lines = [
        "    # separable: a window's rows are combined in registers as they are loaded from global memory, and the",
        "    # combined row goes through shared memory for the window's columns",
        f"    SEG = (BW - 1) * {sw} + {(kw - 1) * dw + 1}  # the input columns one output row's BW windows read",
        "    # runs of RUN elements per thread: 16 bytes unless rounding SEG up to whole runs of the block reads",
        "    # more than 1/8 past it",
        f"    RUN = next(r for r in {runs} if r == 1 or T.cdiv(SEG, {THREADS} * r) * {THREADS} * r * 8 <= SEG * 9)",
        f"    COLS = T.cdiv(SEG, {THREADS} * RUN) * {THREADS} * RUN  # one load: the segment in whole runs",
    ]
    if sw == 1:
        lines.append("    QW = COLS  # a stride of one: the row is stored as it is")
    else:
        residues = {run: _phase_residues(sw, run) for run in runs}
        phases = ", ".join(f"{run}: {'range(32)' if len(r) == 32 else r}" for run, r in residues.items())
        lines += [
            "    # a column phase holds QW words, QW % 32 one of PHASES[RUN]: the row's store has the fewest bank",
            "    # conflicts",
            f"    PHASES = {{{phases}}}",
            f"    QW = next(q for q in range(T.cdiv(COLS, {sw}), T.cdiv(COLS, {sw}) + 32) if q % 32 in PHASES[RUN])",
        ]
    lines += [
        f"    phase_major = argus.layout.Layout((1, 1, BH, ({sw}, QW)), (0, 0, {sw} * QW, (QW, 1)))",
        f"    by_offset = argus.layout.Layout((1, 1, BH, (QW, {sw})), (0, 0, {sw} * QW, (1, QW)))",
        f"    with T.grid({grid_args}, threads={THREADS}) as ({grid_names}):",
        f"        sx = T.alloc_shared((1, 1, BH, {sw} * QW), T.f32, layout=phase_major)  # BH combined rows",
        f"        window = sx.view(by_offset)  # element (r * QW + q) of a row is input column q * {sw} + r",
        "        row = T.alloc_fragment((1, 1, 1, COLS), T.f32, vector_bytes=4 * RUN)  # an output row's window rows",
        f"        seg = T.alloc_fragment((1, 1, 1, COLS), T.{pool.dtype}, vector_bytes={item} * RUN)  # one input row",
        "        acc = T.alloc_fragment((1, 1, BH, BW), T.f32, vector_bytes=4)  # one output element per thread",
        "        v = T.alloc_fragment((1, 1, BH, BW), T.f32, vector_bytes=4)  # one window column offset",
    ]
    indent = "        "
    if three:
        lines.append("        for od in T.serial(OD):")
        indent = "            "
        od = "od"
    else:
        od = "0"
    combine = "T.maximum(row, seg)" if is_max else "row + seg"
    loads = [f"{indent}    for kh in T.unroll({kh}):"]
    depth = "0"
    if three:
        loads = [f"{indent}    for kd in T.unroll({kd}):", f"{indent}        for kh in T.unroll({kh}):"]
        depth = f"od * {sd}{_plus(-pd)} + kd * {dd}"
    inner = indent + "    " * (len(loads) + 1)
    lines += [
        f"{indent}for i in range(BH):  # output row bh * BH + i: its window rows, combined ({pad} past the edges)",
        f"{indent}    T.fill(row, {pad})",
        *loads,
        f"{inner}T.copy({x}.window((p, {depth}, (bh * BH + i) * {sh}{_plus(-ph)} + kh * {dh}, "
        f"bw * (BW * {sw}){_plus(-pw)}), (1, 1, 1, COLS)), seg, pad={pad})",
        f"{inner}T.copy({combine}, row)",
        f"{indent}    T.copy(row, sx.window((0, 0, i, 0), (1, 1, 1, COLS)))",
        f"{indent}T.barrier()",
        f"{indent}T.fill(acc, {pad})",
        f"{indent}for kw in range({kw}):  # the columns of every window of the tile at offset kw: one slice",
        f"{indent}    rw = kw * {dw}",
        f"{indent}    T.copy(window.window((0, 0, 0, (rw % {sw}) * QW + rw // {sw}), (1, 1, BH, BW)), v)",
        f"{indent}    T.copy({'T.maximum(acc, v)' if is_max else 'acc + v'}, acc)",
    ]
    return lines + _finish(pool, indent, out, od, three)


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
    ]
    body = _separable_lines if pool.separable() else _staged_lines
    lines += body(pool, x, out, grid_args, grid_names)

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
