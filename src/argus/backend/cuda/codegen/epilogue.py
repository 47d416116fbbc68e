"""Epilogue stores: a fragment (a ``wgmma`` or ``mma.sync`` accumulator) into a global tile, wider than the
fragment holds it.

* `exchange_store` — neighbouring lanes transpose their short runs with shuffles (`argus.atoms.copy.LaneExchange`)
  so that each thread stores 16-byte runs (`Emitter.lane_exchange_stores`);
* `tma_store` — ``atom="tma.store"``: the tile goes out through a two-chunk staging buffer in shared memory and
  TMA stores, each warpgroup storing its own rows; the values are written swizzled as the buffer's layout says,
  pairs of adjacent columns as one word, and where the swizzle splits over a thread's base offset (proven by
  enumeration), each store is the thread's swizzled base XOR a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from argus.atoms.copy import tile_lane_exchange
from argus.atoms.smem import tma_box_swizzle
from argus.atoms.swizzle import SWIZZLE_REPEAT_BYTES
from argus.atoms.tma import (
    STAGING_BUFFERS,
    STORE_ROWS_PER_WARPGROUP,
    TMA_MAX_RANK,
    staged_store_buffer,
    staged_store_wait,
    store_chunk_columns,
)
from argus.backend.cuda.codegen import placement as pl
from argus.backend.cuda.codegen.addressing import Window, base_coords, is_row_major, uniform_condition
from argus.backend.cuda.codegen.cexpr import add, convert
from argus.backend.cuda.codegen.context import WARPGROUP, Context
from argus.backend.cuda.codegen.source import TensorMapParam
from argus.backend.cuda.codegen.sync import NAMED_BARRIERS
from argus.backend.cuda.codegen.tma import tensor_map
from argus.ir.nodes import Buffer, Copy, Space, TileRef
from argus.layout import ComposedLayout, Swizzle

#: How two adjacent f32 values are stored as one word of the tensor's dtype: (C type, constructor).
_PAIRS = {
    "bf16": ("__nv_bfloat162", "__floats2bfloat162_rn"),
    "f16": ("__half2", "__floats2half2_rn"),
    "f32": ("float2", "make_float2"),
}


def apply_swizzle(sw: Swizzle, x: np.ndarray) -> np.ndarray:
    """`Swizzle.__call__` on an array of offsets."""
    bits = x & sw.yyy_mask
    return x ^ (bits >> sw.shift if sw.shift >= 0 else bits << -sw.shift)


# --- stores through a lane exchange -------------------------------------------------------------------------------


def exchange_store(
    cx: Context, p: pl.Placement, window: Window, mem_ref: TileRef, fname: str, frag_c: str, run: int
) -> bool:
    """Fragment -> global store through a lane exchange (`argus.atoms.copy.LaneExchange`): neighbouring lanes
    transpose their short runs with shuffles so that each thread stores 16-byte runs. False (nothing emitted)
    where there is no exchange plan, or the exchanged runs are not a per-thread base plus per-group offsets."""
    if not cx.switches.lane_exchange_stores or pl.holder_mask(p) is not None:
        return False
    itemsize = mem_ref.dtype.itemsize
    plan = tile_lane_exchange(p.coords, run, itemsize)
    if plan is None:
        return False
    conditions = window.vector_conditions(plan.vector)
    if conditions is None:
        return False
    rank = len(p.shape)
    starts = plan.regroup(p.coords)[:, :: plan.vector, :]  # (threads, groups, rank): each 16-byte run's start
    offsets = starts[0] - starts[0, 0]
    if not np.array_equal(starts, starts[:, :1, :] + offsets[None]):
        return False
    fits = [pl.fit(starts[:, 0, d]) for d in range(rank)]
    if any(f is None for f in fits):
        return False
    cx.require_alignment(mem_ref.buffer, plan.vector * itemsize)
    cx.use("global_store")
    cx.use("lane_exchange")
    mem_c, mname = cx.dtype_c(mem_ref.dtype), cx.buffer_name(mem_ref.buffer)
    vec = uniform_condition(cx, conditions, plan.vector)
    bases = base_coords(cx, tuple(fits), comment="  // the thread's first 16-byte run, after the exchange")
    lane = cx.local("lane")
    cx.line(f"const int {lane} = {cx.tid} % {plan.lanes};  // its place among the exchanging lanes")
    words = plan.width * itemsize // 4
    run_buffer_dim = window.kept[run]
    for g, runs in enumerate(plan.groups):
        with cx.block():
            x = cx.local("runs")
            cx.line(f"unsigned {x}[{plan.lanes}][{words}];  // runs {', '.join(map(str, runs))} of {plan.width}")
            for i, r in enumerate(runs):
                values = ", ".join(convert(f"{fname}[{r * plan.width + e}]", frag_c, mem_c) for e in range(plan.width))
                tmp = cx.local("run")
                cx.line(f"const {mem_c} {tmp}[{plan.width}] = {{{values}}};")
                cx.line(f"argus::pack_words({x}[{i}], {tmp});")
            cx.line(f"argus::lane_exchange({x}, {lane});")
            coords = window.buffer_coords([add(bases[d], int(offsets[g, d])) for d in range(rank)])
            mask = window.mask(coords, run_buffer_dim)
            source = f"reinterpret_cast<const {mem_c}*>(&{x}[0][0])"
            cx.line(f"argus::store_global<{plan.vector}>({mname}, {window.offset(coords)}, {mask}, {vec}, {source});")
    return True


# --- staged TMA stores -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _StagedStore:
    """One ``tma.store``: the accumulator's placement, the staging buffer and the TMA boxes it goes out in."""

    copy: Copy
    p: pl.Placement
    frag: Buffer
    tensor: Buffer
    sbuf: Buffer
    width: int  # columns per chunk (128 bytes of the tensor's dtype)
    wg_rows: int  # rows each warpgroup stores
    runs: list[list[tuple[int, int]]]  # per chunk: (first value, 1 or 2 values stored as one word)
    split: tuple[Swizzle, dict[tuple[int, int], int]] | None  # the swizzle and per-(chunk, value) offsets, or None


def tma_store(cx: Context, s: Copy) -> None:
    """``atom="tma.store"``: a ``wgmma`` accumulator -> a global tile, through `s.staging` and TMA stores.

    The tile goes out in chunks of 128 bytes of columns (`store_chunk_columns`), alternating between the
    staging buffer's two chunk buffers. Each warpgroup stores its own 64 rows of a chunk on its own: its first
    thread waits until the store that last read the buffer has (``wait_group.read 1`` for chunk c >= 1: its last
    store is chunk c - 1's, from the other buffer, which may stay in flight; ``wait_group.read 0`` for chunk 0: its
    last store may have read buffer 0 too, the previous tile's last chunk where a tile has an odd count of chunks,
    as a 64-column tile's one chunk; with ``read 1`` there, the next tile's values overwrote a buffer its TMA store
    was still reading: wrong products on an H200 in session 52), a named barrier of the warpgroup releases its
    threads to write their values (swizzled like the buffer's layout, pairs of adjacent columns as one word),
    ``fence.proxy.async`` and the barrier again, then that thread issues the box's TMA store and commits it.
    Nothing waits for the store to reach global memory except `tma_store_wait_all` at the end of the kernel. Each
    precondition is checked by enumerating the fragment's thread-value layout."""
    frag_ref, dst, staging = s.src, s.dst, s.staging
    if staging is None or frag_ref.space != Space.FRAGMENT or dst.space != Space.GLOBAL:
        raise cx.invalid("a tma.store copies a fragment into a global tile through a staging buffer")
    if not frag_ref.is_whole() or dst.perm is not None or getattr(dst, "layout", None) is not None:
        raise cx.error("tma.store of part of a fragment or into a transposed view")
    frag, tensor = frag_ref.buffer, dst.buffer
    lead = tuple(int(e) for e in dst.extent[:-2])  # a batched C (L, M, N): the tile's matrix index fixed
    row_major = is_row_major(tensor.strides, tensor.shape)
    if not 2 <= tensor.rank <= TMA_MAX_RANK or not row_major or any(e != 1 for e in lead):
        raise cx.error(
            f"tma.store into {tensor.name}",
            f"a staged TMA store writes a row-major tensor of 2 to {TMA_MAX_RANK} dimensions, a 2-d tile at fixed "
            "leading indices",
        )
    p = pl.placement(frag)
    width, wg_rows = store_chunk_columns(tensor.dtype), STORE_ROWS_PER_WARPGROUP
    groups = _check_accumulator(cx, p, frag, width, wg_rows)
    sbuf = staging.buffer
    _check_staging(cx, sbuf, groups, width, wg_rows)
    tmap = tensor_map(cx, tensor, (width, wg_rows) + (1,) * len(lead), 128)
    cx.require_alignment(tensor, 16)
    cx.use("tma_store")
    cx.use("swizzle")
    cx.needs.tma_stores = True
    barrier0 = cx.barriers.for_stores(groups)
    if barrier0 is None:
        raise cx.error(f"more than {NAMED_BARRIERS - 1} named barriers (warp roles and staged TMA stores)")
    src_c, dst_c = cx.dtype_c(frag.dtype), cx.dtype_c(tensor.dtype)
    runs = _chunk_runs(p, tensor, width)
    store = _StagedStore(s, p, frag, tensor, sbuf, width, wg_rows, runs, _xor_split(p, sbuf, runs, width))
    _emit_staged_store(cx, store, tmap, barrier0, (src_c, dst_c))


def _check_accumulator(cx: Context, p: pl.Placement, frag: Buffer, width: int, wg_rows: int) -> int:
    """The scope's warpgroups, each of which must hold `wg_rows` whole rows, every value in the same chunk of
    `width` columns in every thread (a ``wgmma`` accumulator)."""
    rows, cols = p.shape
    groups = p.threads // WARPGROUP
    thread = np.arange(p.threads)
    whole_rows = (
        p.threads == cx.threads
        and p.threads % WARPGROUP == 0
        and rows == wg_rows * groups
        and np.array_equal(
            p.coords[:, :, 0] // wg_rows, np.broadcast_to((thread // WARPGROUP)[:, None], (p.threads, p.values))
        )
    )
    chunk_of = p.coords[:, :, 1] // width
    if not whole_rows or not p.separable or not np.all(chunk_of == chunk_of[:1]) or cols % width:
        raise cx.error(
            f"tma.store of fragment {frag.name} ({rows}x{cols} over {p.threads} threads)",
            f"each warpgroup of the scope must hold {wg_rows} whole rows, and each value must fall in the same "
            f"{width}-column chunk in every thread (a wgmma accumulator)",
        )
    assert p.base is not None
    return groups


def _check_staging(cx: Context, sbuf: Buffer, groups: int, width: int, wg_rows: int) -> None:
    """Each (chunk buffer, warpgroup) box of the staging buffer is laid out as TMA reads a 128-byte-swizzled box."""
    if cx.facts.shared[sbuf] % SWIZZLE_REPEAT_BYTES[128]:
        raise cx.invalid(f"staging buffer {sbuf.name} is not aligned to the 128-byte swizzle's repeat")
    box_coords = np.indices((wg_rows, width)).reshape(2, -1)  # row-major: TMA's box order
    for b in range(STAGING_BUFFERS):
        for g in range(groups):
            coords = [np.full_like(box_coords[0], b), box_coords[0] + g * wg_rows, box_coords[1]]
            offsets = pl.layout_offsets(sbuf.layout, coords)
            base = int(offsets[0])
            if base % (SWIZZLE_REPEAT_BYTES[128] // sbuf.dtype.itemsize) or (
                tma_box_swizzle(offsets - base, (wg_rows, width), sbuf.dtype.bits) != 128
            ):
                raise cx.invalid(f"staging buffer {sbuf.name} is not laid out as 128-byte-swizzled TMA boxes")


def _chunk_runs(p: pl.Placement, tensor: Buffer, width: int) -> list[list[tuple[int, int]]]:
    """Per chunk, the fragment values stored: ``(v, 2)`` for a pair of adjacent columns that starts at an even
    column in every thread (one word), ``(v, 1)`` otherwise."""
    chunk_of = p.coords[:, :, 1] // width
    runs: list[list[tuple[int, int]]] = [[] for _ in range(p.shape[1] // width)]
    v = 0
    while v < p.values:
        n = 1
        if (
            tensor.dtype.name in _PAIRS
            and v + 1 < p.values
            and np.array_equal(p.coords[:, v + 1], p.coords[:, v] + np.array([0, 1]))
            and np.all(p.coords[:, v, 1] % 2 == 0)
        ):
            n = 2
        runs[int(chunk_of[0, v])].append((v, n))
        v += n
    return runs


def _xor_split(
    p: pl.Placement, sbuf: Buffer, runs: list[list[tuple[int, int]]], width: int
) -> tuple[Swizzle, dict[tuple[int, int], int]] | None:
    """Each value's staging offset is the swizzle of its plain offset u(t, v) = u0(t) + d(v). Where d(v) shares no
    bit with any thread's u0(t), the sum is an XOR and the (XOR-linear) swizzle splits: S(u) = S(u0) ^ S(d(v)),
    so a thread computes S(u0) once and each store XORs in a constant (proven for every thread and value).
    The swizzle and d per (chunk, value) where that holds, else None."""
    outer = sbuf.layout.outer if isinstance(sbuf.layout, ComposedLayout) else sbuf.layout
    sw = sbuf.layout.inner if isinstance(sbuf.layout, ComposedLayout) else None
    rows_t, cols_t = p.coords[:, 0, 0], p.coords[:, 0, 1]
    u0 = pl.layout_offsets(outer, [np.zeros_like(rows_t), rows_t, cols_t])
    deltas: dict[tuple[int, int], int] = {}
    split = isinstance(sw, Swizzle)
    for c, chunk in enumerate(runs):
        for v, _ in chunk:
            u = pl.layout_offsets(
                outer, [np.full_like(rows_t, staged_store_buffer(c)), p.coords[:, v, 0], p.coords[:, v, 1] - c * width]
            )
            d = u - u0
            split = split and bool(np.all(d == d[0]) and np.all((u0 & int(d[0])) == 0))
            deltas[(c, v)] = int(d[0])
    if not split or not isinstance(sw, Swizzle):
        return None
    exact = all(
        np.array_equal(apply_swizzle(sw, u0 + d), apply_swizzle(sw, u0) ^ int(apply_swizzle(sw, np.array([d]))[0]))
        for d in deltas.values()
    )
    return (sw, deltas) if exact else None


def _emit_staged_store(
    cx: Context, store: _StagedStore, tmap: TensorMapParam, barrier0: int, ctypes: tuple[str, str]
) -> None:
    """The warpgroup's tile origin and the thread's base coordinates (or swizzled base offset), then every chunk
    (`ctypes`: the C types of the fragment and of the tensor)."""
    dst, width, wg_rows = store.copy.dst, store.width, store.wg_rows
    window = Window(cx, store.copy.staging)
    name = cx.buffer_name(store.frag)
    with cx.block(
        f"{{  // {store.frag.name} -> {store.tensor.name} through {store.sbuf.name}: {len(store.runs)} chunks of "
        f"{width} columns, TMA stores of {wg_rows} rows per warpgroup"
    ):
        wg = cx.local("warpgroup")
        cx.line(f"const int {wg} = {cx.tid} / {WARPGROUP};")
        tile_row, tile_col = cx.local("tile_row"), cx.local("tile_col")
        cx.line(f"const int {tile_row} = {add(cx.expr(dst.origin[-2]), f'{wg_rows} * {wg}')};  // the warpgroup's rows")
        cx.line(f"const int {tile_col} = {cx.expr(dst.origin[-1])};")
        lead = [cx.expr(o) for o in reversed(dst.origin[:-2])]  # the fixed leading indices, in TMA order
        row, col = base_coords(cx, store.p.base, comment="  // the thread's first value in the tile")
        staged = ""
        if store.split is not None:
            staged = cx.local("staged")
            cx.line(
                f"const int {staged} = {window.shared_offset(['0', row, col])};  // its swizzled staging offset: "
                "every other value's is this XOR a constant"
            )
        site = _StoreSite(
            window, name, cx.buffer_name(store.sbuf), wg, tile_row, tile_col, tuple(lead), row, col, staged, *ctypes
        )
        for c in range(len(store.runs)):
            _emit_chunk(cx, store, c, site, tmap, barrier0)


@dataclass(frozen=True)
class _StoreSite:
    """The C names a chunk's stores use: the staging window, the fragment and the staging buffer, the warpgroup,
    the tile origin, the thread's base coordinates, its swizzled base offset (``""`` without the XOR split), and
    the C types of fragment and tensor."""

    window: Window
    name: str
    buffer_name: str
    wg: str
    tile_row: str
    tile_col: str
    lead: tuple[str, ...]  # the tensor's coordinates past the tile's two, in TMA order (a batched C's matrix)
    row: str
    col: str
    staged: str
    src_c: str
    dst_c: str


def _emit_chunk(cx: Context, store: _StagedStore, c: int, at: _StoreSite, tmap: TensorMapParam, barrier0: int) -> None:
    """Chunk `c`: wait until its staging buffer was read, write the values, fence, and one thread's TMA store."""
    width, wg_rows, p = store.width, store.wg_rows, store.p
    elected = f"{cx.tid} % {WARPGROUP} == 0"
    barrier = f"argus::named_barrier({add(str(barrier0), at.wg)}, {WARPGROUP});"
    name, buffer_name = at.name, at.buffer_name
    b = staged_store_buffer(c)
    cx.line(f"// chunk {c}: tile columns [{c * width}, {(c + 1) * width}), staging buffer {b}")
    pending = staged_store_wait(c)  # the protocol of argus.atoms.tma, which the verifier proves
    if pending == 0:  # every earlier store has read its buffer
        cx.line(f"if ({elected}) argus::tma_store_wait_read<0>();  // every earlier store has read its buffer")
    else:  # the thread's newest `pending` stores are this tile's chunks before c
        cx.line(
            f"if ({elected}) argus::tma_store_wait_read<{pending}>();  // the last store from buffer {b} has read it"
        )
    cx.line(barrier)
    for v, n in store.runs[c]:
        if store.split is not None:
            sw, deltas = store.split
            xor = int(apply_swizzle(sw, np.array([deltas[(c, v)]]))[0])
            ptr = f"{buffer_name} + ({at.staged} ^ {xor})" if xor else f"{buffer_name} + {at.staged}"
        else:
            r = add(at.row, int(p.offsets[v, 0]))
            k = add(at.col, int(p.offsets[v, 1]) - c * width)
            ptr = at.window.pointer([str(b), r, k])
        if n == 2:
            pc, make = _PAIRS[store.tensor.dtype.name]
            a0 = convert(f"{name}[{v}]", at.src_c, "float")
            a1 = convert(f"{name}[{v + 1}]", at.src_c, "float")
            cx.line(f"*reinterpret_cast<{pc}*>({ptr}) = {make}({a0}, {a1});")
        else:
            cx.line(f"*({ptr}) = {convert(f'{name}[{v}]', at.src_c, at.dst_c)};")
    cx.line("argus::fence_proxy_async_shared();  // the writes, before the TMA unit reads them")
    cx.line(barrier)
    source = at.window.pointer([str(b), f"{wg_rows} * {at.wg}", "0"])
    with cx.block(f"if ({elected}) {{"):
        coords = ", ".join([add(at.tile_col, c * width), at.tile_row, *at.lead])
        box = ", ".join(map(str, [width, wg_rows] + [1] * len(at.lead)))
        cx.line(
            f"argus::tma_store_{2 + len(at.lead)}d(&{tmap.name}, argus::smem_u32({source}), {coords});  "
            f"// box [{box}] (TMA order)"
        )
        cx.line("argus::tma_store_commit();")
