"""TMA loads and the kernel's TMA tensor maps.

A TMA load (``T.copy(..., atom="tma", mbarrier=...)``) is issued by the scope's thread 0 with a ``CUtensorMap``
per (tensor, box, swizzle), passed as a ``const __grid_constant__`` parameter (`TensorMapParam`) that the
runtime encodes before each launch; it completes on the mbarrier. The swizzle is the one under which the
destination's layout equals TMA's box layout, proven by enumeration over the same `argus.layout` objects the
interpreter evaluates: TMA writes the box densely in row-major order of the tensor's dimensions, swizzled by
``hopper_swizzle(W)``, so the destination window's layout, relative to its first element, must be exactly that
for one ``W`` (`argus.atoms.smem.tma_box_swizzle`). The box, strides and shared address are checked against the
atom's constraints (`argus.atoms.tma`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from argus.atoms.errors import AtomError
from argus.atoms.smem import swizzle_mode_of, tma_box_start, tma_box_swizzle
from argus.atoms.swizzle import SWIZZLE_REPEAT_BYTES
from argus.atoms.tma import IM2COL_RANKS, TMA_SMEM_ALIGNMENT, Im2colBox, multicast_half, tma_load
from argus.backend.cuda.codegen.addressing import Window, is_row_major
from argus.backend.cuda.codegen.cexpr import add, layout_at_coords, paren
from argus.backend.cuda.codegen.context import Context
from argus.backend.cuda.codegen.source import TensorMapParam
from argus.backend.cuda.codegen.sync import mbarrier_address
from argus.ir.nodes import Buffer, Copy, Space
from argus.layout import ComposedLayout, Swizzle


def tma_copy(cx: Context, s: Copy) -> None:
    """A TMA load of a global window into shared memory, completing on ``s.mbarrier``."""
    src, dst = s.src, s.dst
    if src.space != Space.GLOBAL or dst.space != Space.SHARED:
        raise cx.error(f"TMA copy from {src.space.value} to {dst.space.value} memory", "only TMA loads are lowered")
    if s.mbarrier is None:
        raise cx.invalid("a TMA load needs an mbarrier to complete on (mbarrier=...)")
    if src.perm is not None or dst.perm is not None or getattr(dst, "layout", None) is not None:
        raise cx.error("TMA copy through a transposed or re-laid-out view")
    tensor = src.buffer
    rank = len(tensor.shape)
    if src.im2col is not None:
        _im2col_copy(cx, s)
        return
    if src.gather is not None:
        _gather_copy(cx, s)
        return
    if rank not in (2, 3, 4, 5):
        raise cx.error(f"TMA copy of a {rank}-d tensor", "TMA lowering covers 2-d to 5-d tensors")
    if not is_row_major(tensor.strides, tensor.shape):
        raise cx.error(f"TMA copy of {tensor.name} with strides that are not row-major")
    if tuple(src.shape) != tuple(dst.shape):
        raise cx.invalid(f"copy between windows of shapes {src.shape} and {dst.shape}")
    box_tensor = tuple(int(e) for e in src.extent)  # tensor order; squeezed dimensions have extent 1
    box = tuple(reversed(box_tensor))  # TMA order: dimension 0 innermost
    window = Window(cx, dst)
    swizzle, inside = _box_swizzle(cx, s, window, box)
    cx.require_alignment(tensor, 16)
    origin = [cx.expr(o) for o in reversed(src.origin)]
    first = window.buffer_coords(["0"] * len(dst.shape))
    if s.multicast:
        _multicast_copy(cx, s, tensor, box, swizzle, inside, window.pointer(first), origin)
        return
    tmap = tensor_map(cx, tensor, box, swizzle)
    cx.use("tma")
    # a box that starts inside a swizzle pattern names its unswizzled start (`tma_box_start`)
    target = _unswizzled_pointer(cx, window, first) if inside else window.pointer(first)
    cx.line(
        f"if ({cx.tid} == 0) argus::tma_load_{rank}d(argus::smem_u32({target}), &{tmap.name}, "
        f"{', '.join(origin)}, {mbarrier_address(cx, s.mbarrier)});  // box {list(box)} (TMA order), "
        f"{swizzle}-byte swizzle"
    )


def _multicast_copy(  # noqa: PLR0913 - the load's parts, as `tma_copy` derived them
    cx: Context, s: Copy, tensor: Buffer, box: tuple[int, ...], swizzle: int, inside: bool, target: str, origin: list
) -> None:
    """This block's half of a multicast box (`Copy.multicast`, `argus.atoms.tma.multicast_half`): rows ``[r * h, (r +
    1) * h)`` of the box's outermost dimension, r the block's cluster rank, into both blocks of the cluster at the
    half's offset of the box, completing on the mbarrier at the same offset in each."""
    if cx.kernel.cluster == 1:
        raise cx.invalid("a multicast TMA load in a kernel launched without clusters")
    if inside:
        raise cx.error("a multicast TMA load of a box that starts inside a swizzle pattern")
    try:
        half = multicast_half(box, tensor.dtype.itemsize, swizzle)
    except AtomError as err:
        raise cx.invalid(f"multicast TMA load of {tensor.name}: {err}") from err
    tmap = tensor_map(cx, tensor, half.box, swizzle)
    cx.use("tma")
    cx.use("cluster")
    rank = len(box)
    outer = f"{paren(origin[-1])} + static_cast<int>(argus::cluster_rank()) * {half.rows}"
    coords = [*origin[:-1], outer]
    cx.line(
        f"if ({cx.tid} == 0) argus::tma_load_{rank}d_multicast(argus::smem_u32({target}) + argus::cluster_rank() * "
        f"{half.bytes}u, &{tmap.name}, {', '.join(coords)}, {mbarrier_address(cx, s.mbarrier)});  // this block's "
        f"half {list(half.box)} of box {list(box)} (TMA order) into both blocks of the cluster, {swizzle}-byte swizzle"
    )


def _gather_copy(cx: Context, s: Copy) -> None:
    """A gathered TMA load (`argus.ir.nodes.Gather`): one box of one row per window row, at the tensor's row
    ``index[position + r]`` (a position past the index's end names the row past the tensor's end, which TMA fills
    with zeros), each into its row of the destination. A row of a swizzled tile starts inside a swizzle pattern, so
    each load names its row's unswizzled start (`argus.atoms.smem.tma_box_start`: the hardware swizzles the absolute
    address). The scope's threads issue the rows, thread t rows t, t + threads, ... (up to the rows, in whole warps: a
    warp issues its lanes' boxes one after another, UTMALDG taking warp-uniform operands, so spreading the rows over
    the scope's warps issues them side by side); all complete on the one mbarrier."""
    src, dst = s.src, s.dst
    tensor, spec = src.buffer, src.gather
    rank = len(tensor.shape)
    if tuple(src.shape) != tuple(dst.shape) or dst.perm is not None or len(dst.shape) != rank:
        raise cx.invalid(f"a gathered copy between windows of shapes {src.shape} and {dst.shape}")
    rows = int(src.shape[0])
    box = tuple(reversed((1, *(int(e) for e in src.shape[1:]))))  # TMA order: one row
    window = Window(cx, dst)
    swizzles = set()
    d0 = dst.kept[0]  # the buffer dimension of the window's rows (a stage index before it is dropped)
    for r in range(rows):  # every row's box placement, as a window of its own (in every stage)
        origin, extent = list(dst.origin), list(dst.extent)
        origin[d0], extent[d0] = origin[d0] + r, 1
        row_ref = dataclasses.replace(dst, origin=tuple(origin), extent=tuple(extent))
        swizzles.add(_box_swizzle(cx, dataclasses.replace(s, dst=row_ref), Window(cx, row_ref), box)[0])
    if len(swizzles) != 1:
        raise cx.error(f"a gathered TMA copy into {dst.buffer.name} whose rows land under different swizzles")
    swizzle = swizzles.pop()
    cx.require_alignment(tensor, 16)
    tmap = tensor_map(cx, tensor, box, swizzle)
    cx.use("tma")
    r = cx.local("gather_row")
    target = _unswizzled_pointer(cx, window, window.buffer_coords([r] + ["0"] * (rank - 1)))
    pos = cx.local("gather_pos")
    row = cx.local("gather_src")
    index = cx.buffer_name(spec.index)
    length = cx.expr(spec.index.shape[0])
    # every thread of the scope a row (whole warps, at most the rows): UTMALDG takes uniform operands, so a warp's
    # lanes issue their rows one after another; the scope's warps issue theirs side by side
    lanes = max(1, min(cx.threads, -(-rows // 32) * 32)) if cx.threads >= 32 else 1
    origin = [cx.expr(o) for o in reversed(src.origin[1:])]
    cx.open(f"if ({cx.tid} < {lanes}) {{  // gathered rows of {tensor.name}: one TMA box a row")
    cx.open(f"for (int {r} = {cx.tid}; {r} < {rows}; {r} += {lanes}) {{")
    cx.line(f"const int {pos} = {cx.expr(spec.position)} + {r};")
    cx.line(
        f"const int {row} = {pos} < {paren(length)} ? static_cast<int>(__ldg({index} + {pos})) : "
        f"{paren(cx.expr(tensor.shape[0]))};  // past the index: the row past the tensor (zeros)"
    )
    cx.line(
        f"argus::tma_load_{rank}d(argus::smem_u32({target}), &{tmap.name}, "
        f"{', '.join([*origin, row])}, {mbarrier_address(cx, s.mbarrier)});  // {swizzle}-byte swizzle"
    )
    cx.close()
    cx.close()
    cx.forget(r, pos, row)


def _unswizzled_pointer(cx: Context, window: Window, coords: list[str]) -> str:
    """The shared address (C) a TMA load names for a box whose first element is at buffer `coords`: the offset before
    the buffer's swizzle (the hardware swizzles the absolute address, `argus.atoms.smem.tma_box_start`); a layout
    without one is its own."""
    layout = window.layout
    if not isinstance(layout, ComposedLayout):
        return window.pointer(coords)
    start = layout_at_coords(layout.outer, coords)
    return f"{cx.buffer_name(window.buffer)} + ({add(start, layout.offset) if layout.offset else start})"


def _im2col_copy(cx: Context, s: Copy) -> None:
    """A TMA im2col load (`argus.atoms.tma`, "im2col mode"): its (pixels, channels) box lands in shared memory as a
    tiled 2-d box of that shape does (row-major, swizzled), so the destination's swizzle is found as for one; the
    tensor map (``cuTensorMapEncodeIm2col``) holds the traversal, the instruction the start and the offsets."""
    src, dst = s.src, s.dst
    tensor, spec = src.buffer, src.im2col
    rank = len(tensor.shape)
    if rank not in IM2COL_RANKS:
        raise cx.invalid(f"an im2col load of a {rank}-d tensor (3-d to 5-d, channels last)")
    if not is_row_major(tensor.strides, tensor.shape):
        raise cx.error(f"TMA im2col copy of {tensor.name} with strides that are not row-major")
    if tuple(src.shape) != tuple(dst.shape):
        raise cx.invalid(f"copy between windows of shapes {src.shape} and {dst.shape}")
    pixels, channels = (int(e) for e in src.shape)
    window = Window(cx, dst)
    swizzle, _ = _box_swizzle(cx, s, window, (channels, pixels), inside=False)
    cx.require_alignment(tensor, 16)
    box = Im2colBox(spec.lower, spec.upper, spec.strides, pixels, channels)
    tmap = tensor_map(cx, tensor, (channels,) + (1,) * (rank - 1), swizzle, box)
    cx.use("tma_im2col")
    coords = [cx.expr(o) for o in reversed(src.origin)]  # TMA order: c, w[, h[, d]], n
    offsets = [f"static_cast<unsigned short>({cx.expr(o)})" for o in reversed(spec.offsets)]  # w[, h[, d]]
    target = window.pointer(window.buffer_coords(["0"] * len(dst.shape)))
    cx.line(
        f"if ({cx.tid} == 0) argus::tma_load_im2col_{rank}d(argus::smem_u32({target}), &{tmap.name}, "
        f"{', '.join(coords)}, {', '.join(offsets)}, {mbarrier_address(cx, s.mbarrier)});  // im2col box "
        f"{pixels} pixels x {channels} channels, {swizzle}-byte swizzle"
    )


def _box_swizzle(cx: Context, s: Copy, window: Window, box: tuple[int, ...], inside: bool = True) -> tuple[int, bool]:
    """The swizzle (bytes) under which TMA's box lands where the destination's layout says, for every stage, and
    whether the box starts inside a swizzle pattern (a row of a swizzled tile: `argus.atoms.smem.tma_box_start`,
    where the load names the unswizzled start; `inside` False refuses those); every box's shared address checked
    against the TMA atom's constraints."""
    dst = s.dst
    rank = len(box)
    shape = tuple(dst.shape)
    coords = np.indices(shape).reshape(len(shape), -1).T  # (N, rank): every window element
    offsets = window.offsets_of(coords)
    bases = window.offsets_of(np.zeros((1, len(shape)), dtype=np.int64))
    if offsets is None or bases is None:
        raise cx.error(f"TMA copy into {dst.buffer.name}: its position is not static enough to prove the box layout")
    layout = dst.buffer.layout  # the buffer's own swizzle mode, where its layout has one
    own = swizzle_mode_of(layout.inner, dst.dtype.bits) if isinstance(getattr(layout, "inner", None), Swizzle) else 0
    # coords are row-major: TMA's box order
    swizzle = tma_box_swizzle(offsets - bases, shape, dst.dtype.bits, prefer=own)
    started = False
    if swizzle is None and inside and isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle):
        found = tma_box_start(offsets.reshape(offsets.shape[0], -1), shape, dst.dtype.bits, prefer=own)
        if found is not None:
            swizzle, starts = found
            bases, started = starts, True
    if swizzle is None:
        raise cx.error(
            f"TMA copy into {dst.buffer.name} with layout {dst.buffer.layout}",
            "TMA writes its box row-major with a Hopper swizzle (none, 32, 64 or 128 bytes): give the shared "
            "buffer such a layout (T.alloc_shared(..., swizzle=128) with a 128-byte inner row)",
        )
    atom = tma_load(rank)
    itemsize = dst.dtype.itemsize
    start = cx.facts.shared[dst.buffer]
    for base in np.unique(bases):
        problems = atom.diagnose(
            dtype=dst.dtype,
            global_shape=box,
            global_strides=[16] * (rank - 1),
            box=box,
            swizzle=swizzle,
            smem_address=start + int(base) * itemsize,
            mid_pattern=started,
        )
        if problems:
            p = problems[0]
            raise cx.invalid(f"TMA copy into {dst.buffer.name}: [{p.code}] {p.message} ({p.actual})")
    if start % max(TMA_SMEM_ALIGNMENT, SWIZZLE_REPEAT_BYTES.get(swizzle, 0)):
        raise cx.invalid(f"shared buffer {dst.buffer.name} is not aligned for TMA")
    return swizzle, started


def tensor_map(
    cx: Context, tensor: Buffer, box: tuple[int, ...], swizzle: int, im2col: Im2colBox | None = None
) -> TensorMapParam:
    """The kernel's tensor map of `tensor` with `box` (TMA order) and `swizzle` (an im2col map: with its traversal),
    made a parameter on first use."""
    key = (tensor, box, swizzle, im2col)
    if key not in cx.needs.tensor_maps:
        name = cx.local(f"tmap_{cx.buffer_name(tensor)}")
        cx.names.reserve(name)
        cx.needs.tensor_maps[key] = TensorMapParam(name, tensor.name, box, swizzle, tensor.dtype, im2col)
    return cx.needs.tensor_maps[key]
