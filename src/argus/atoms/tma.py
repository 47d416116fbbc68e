"""TMA tile copies: ``cp.async.bulk.tensor.{2,3}d`` loads (global -> shared) and stores (shared -> global).

One elected thread issues the copy of a whole *box* on behalf of the CTA, described by a tensor map
(``CUtensorMap``, built on the host by ``cuTensorMapEncodeTiled``). Dimensions are in TMA order:
dimension 0 is the innermost (contiguous) one, so ``box = (64, 128)`` is 128 rows of 64 elements.

Layouts: the box's tile is ``box`` itself; its TV layout ``(1, size(box)) : (0, 1)`` maps value ``v``
to the column-major index of the box element, which is also the element's offset in the unswizzled
shared-memory box (TMA writes the box densely, dimension 0 fastest). With a swizzle, the element's
shared-memory offset is ``hopper_swizzle(W)`` of that (`smem_layout`): the 16-byte chunk bits of the
*address* are XOR-ed with the row bits, so the pattern assumes the box starts where the pattern
starts.

Constraints (`TmaCopyAtom.diagnose`), from the CUDA Driver API's ``cuTensorMapEncodeTiled`` and
the CUDA C++ Programming Guide's "TMA Swizzle" section (compute capability 9.0):

* every box dimension in ``[1, 256]`` (``ATOM_TMA_BOX``);
* the inner box dimension in bytes a multiple of 16 (``ATOM_TMA_BOX_INNER``);
* with a swizzle, the inner box dimension in bytes at most the swizzle width, 32/64/128
  (``ATOM_TMA_SWIZZLE_SPAN``);
* global dimensions in ``[1, 2**32]`` (``ATOM_TMA_GLOBAL_DIM``); global strides (bytes, for
  dimensions 1..rank-1) multiples of 16 and below ``2**40`` (``ATOM_TMA_GLOBAL_STRIDE``);
* the global base address 16-byte aligned (``ATOM_TMA_GLOBAL_ALIGN``);
* the shared-memory box 128-byte aligned (``ATOM_TMA_SMEM_ALIGN``: the Programming Guide's table,
  "Shared memory alignment: 128 bytes");
* with a swizzle, the shared-memory box aligned to the pattern's repeat, 256/512/1024 bytes
  (``ATOM_SMEM_SWIZZLE_ALIGN``). This one is argus's rule, not the hardware's: the hardware
  accepts any 128-byte-aligned box and then starts mid-pattern, so argus's layouts (which assume
  phase 0) would be wrong. The Programming Guide recommends it ("shared memory should be aligned
  according to the number of bytes after which the swizzle pattern repeats"; its 128-byte-swizzle
  example declares ``alignas(1024)``), and CUTLASS aligns swizzled buffers to 1024 bytes. A box
  placed by the absolute address (`argus.atoms.smem.tma_box_start`: one row of a swizzled tile,
  the load naming the row's unswizzled start) is exempt (``diagnose(..., mid_pattern=True)``);
* element strides, when given, in ``[1, 8]`` (``ATOM_TMA_ELEMENT_STRIDE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from argus.atoms.common import MemorySpace, Scope, supported_dtype
from argus.atoms.copy import CopyAtom, CopyKind
from argus.atoms.errors import AtomError, raise_first
from argus.atoms.smem import check_swizzle_base
from argus.atoms.swizzle import SWIZZLE_MODES, SWIZZLE_REPEAT_BYTES, hopper_swizzle
from argus.ir.types import DType
from argus.layout import ComposedLayout, Layout

TMA_MAX_RANK = 5
TMA_MAX_BOX = 256
TMA_INNER_BOX_MULTIPLE = 16  # bytes
TMA_GLOBAL_ALIGNMENT = 16  # bytes
TMA_GLOBAL_STRIDE_MULTIPLE = 16  # bytes
TMA_MAX_GLOBAL_STRIDE = 2**40  # exclusive
TMA_MAX_GLOBAL_DIM = 2**32  # inclusive
TMA_SMEM_ALIGNMENT = 128  # bytes
TMA_MAX_ELEMENT_STRIDE = 8

#: The ranks registered as atoms (the checks themselves accept 1..5).
TMA_RANKS = (2, 3)


@dataclass(frozen=True, kw_only=True)
class TmaCopyAtom(CopyAtom):
    """``cp.async.bulk.tensor.{rank}d`` in tile mode.

    Attributes:
        rank: tensor (and box) rank.
        smem_alignment: required alignment of the shared-memory box, in bytes.
        global_alignment: required alignment of the tensor's global base address, in bytes.
        max_box: largest extent of a box dimension.
    """

    rank: int
    smem_alignment: int = TMA_SMEM_ALIGNMENT
    global_alignment: int = TMA_GLOBAL_ALIGNMENT
    max_box: int = TMA_MAX_BOX

    def tile_shape(self, box: Sequence[int]) -> tuple[int, ...]:
        """The atom's tile: the box, dimension 0 innermost."""
        return tuple(self._box(box))

    def tv_layout(self, box: Sequence[int]) -> Layout:
        """``(1, size(box)) : (0, 1)``: the issuing thread moves every element of the box; value ``v``
        is the element of column-major box index ``v``."""
        size = 1
        for extent in self._box(box):
            size *= extent
        return Layout((1, size), (0, 1))

    def smem_layout(self, dtype: DType | str, box: Sequence[int], swizzle: int = 0) -> ComposedLayout:
        """Where each box element lands in shared memory (offsets in elements from the box's start):
        ``hopper_swizzle(swizzle, bits) o Layout(box)``, indexed by box coordinates, dimension 0
        fastest. Assumes the box starts at a swizzle-pattern boundary (see the module docstring)."""
        dt = supported_dtype(dtype, self.name, "element dtype")
        box = self._box(box)
        if swizzle not in SWIZZLE_MODES:
            raise AtomError("ATOM_TMA_SWIZZLE", "TMA swizzle modes are 0 (none), 32, 64 and 128 bytes", actual=swizzle)
        return ComposedLayout(hopper_swizzle(swizzle, dt.bits), 0, Layout(tuple(box)))

    def diagnose(
        self,
        *,
        dtype: DType | str,
        global_shape: Sequence[int],
        global_strides: Sequence[int],
        box: Sequence[int],
        global_address: int = 0,
        smem_address: int = 0,
        swizzle: int = 0,
        element_strides: Sequence[int] | None = None,
        mid_pattern: bool = False,
    ) -> tuple[AtomError, ...]:
        """All problems of one tensor map plus copy, each an `AtomError` (empty when legal).

        `global_shape` has `rank` extents (elements, dimension 0 innermost); `global_strides` the
        ``rank - 1`` byte strides of dimensions 1..rank-1 (dimension 0 is contiguous), as
        ``cuTensorMapEncodeTiled`` takes them; `box` the box extents; addresses in bytes. `mid_pattern`:
        the caller has placed a box that starts inside a swizzle pattern by the absolute address
        (`argus.atoms.smem.tma_box_start`), so argus's phase-0 rule (``ATOM_SMEM_SWIZZLE_ALIGN``) does not apply.
        """
        problems: list[AtomError] = []
        dt = supported_dtype(dtype, self.name, "element dtype")
        size = dt.itemsize
        given = {"global_shape": tuple(global_shape), "box": tuple(box)}
        if element_strides is not None:
            given["element_strides"] = tuple(element_strides)
        for what, extents in given.items():
            n = len(extents)
            if n != self.rank:
                problems.append(
                    AtomError(
                        "ATOM_TMA_RANK",
                        f"{self.name} copies a {self.rank}-d box, but {what} has {n} dimensions",
                        requirement=f"{self.rank} extents in {what}",
                        actual=f"{what} = {extents}",
                        hint=f"use the {n}-d TMA atom" if 1 <= n <= TMA_MAX_RANK else None,
                    )
                )
        if len(global_strides) != self.rank - 1:
            problems.append(
                AtomError(
                    "ATOM_TMA_RANK",
                    f"{self.name}: global_strides gives the byte strides of dimensions 1..{self.rank - 1}",
                    requirement=f"{self.rank - 1} strides (dimension 0 is contiguous and has none)",
                    actual=f"global_strides = {tuple(global_strides)}",
                )
            )
        for i, extent in enumerate(box):
            if not 1 <= extent <= TMA_MAX_BOX:
                problems.append(
                    AtomError(
                        "ATOM_TMA_BOX",
                        f"{self.name}: box dimension {i} is out of range",
                        requirement=f"1 <= box[{i}] <= {TMA_MAX_BOX}",
                        actual=f"box[{i}] = {extent} (box = {tuple(box)})",
                        hint=f"split the tile into boxes of at most {TMA_MAX_BOX} along dimension {i} and issue "
                        "several copies",
                    )
                )
        if box:
            inner_bytes = box[0] * size
            if inner_bytes % TMA_INNER_BOX_MULTIPLE:
                multiple = TMA_INNER_BOX_MULTIPLE // _gcd(TMA_INNER_BOX_MULTIPLE, size)
                problems.append(
                    AtomError(
                        "ATOM_TMA_BOX_INNER",
                        f"{self.name}: the inner box dimension is not a whole number of 16-byte chunks",
                        requirement=f"box[0] * {size} bytes ({dt.name}) a multiple of {TMA_INNER_BOX_MULTIPLE}",
                        actual=f"box[0] = {box[0]} -> {inner_bytes} bytes",
                        hint=f"make box[0] a multiple of {multiple} {dt.name} elements",
                    )
                )
            if swizzle not in SWIZZLE_MODES:
                problems.append(
                    AtomError(
                        "ATOM_TMA_SWIZZLE",
                        f"{self.name}: unknown swizzle mode",
                        requirement="swizzle in {0, 32, 64, 128} bytes",
                        actual=f"swizzle = {swizzle!r}",
                    )
                )
            elif swizzle and inner_bytes > swizzle:
                problems.append(
                    AtomError(
                        "ATOM_TMA_SWIZZLE_SPAN",
                        f"{self.name}: with {swizzle}-byte swizzle the inner box dimension must fit in one swizzle row",
                        requirement=f"box[0] * {size} bytes <= {swizzle}",
                        actual=f"box[0] = {box[0]} -> {inner_bytes} bytes",
                        hint=f"use box[0] <= {swizzle // size} and issue several copies along dimension 0"
                        + ("" if swizzle == 128 else ", or a wider swizzle"),
                    )
                )
        for i, extent in enumerate(global_shape):
            if not 1 <= extent <= TMA_MAX_GLOBAL_DIM:
                problems.append(
                    AtomError(
                        "ATOM_TMA_GLOBAL_DIM",
                        f"{self.name}: global dimension {i} is out of range",
                        requirement=f"1 <= global_shape[{i}] <= 2**32",
                        actual=f"global_shape[{i}] = {extent}",
                    )
                )
        for i, stride in enumerate(global_strides, start=1):
            if stride % TMA_GLOBAL_STRIDE_MULTIPLE or not 0 < stride < TMA_MAX_GLOBAL_STRIDE:
                row = f" ({stride / size:g} {dt.name} elements)" if size else ""
                problems.append(
                    AtomError(
                        "ATOM_TMA_GLOBAL_STRIDE",
                        f"{self.name}: the byte stride of global dimension {i} is not a positive multiple of 16",
                        requirement=f"global_strides[{i - 1}] % 16 == 0 and 0 < stride < 2**40",
                        actual=f"global_strides[{i - 1}] = {stride} bytes{row}",
                        hint="pad the leading dimension to a multiple of 16 bytes "
                        f"({TMA_GLOBAL_STRIDE_MULTIPLE // _gcd(TMA_GLOBAL_STRIDE_MULTIPLE, size)} {dt.name} elements), "
                        "or fall back to cp.async",
                    )
                )
        if global_address % TMA_GLOBAL_ALIGNMENT:
            problems.append(
                AtomError(
                    "ATOM_TMA_GLOBAL_ALIGN",
                    f"{self.name}: the tensor's global base address is not 16-byte aligned",
                    requirement="global address % 16 == 0",
                    actual=f"global address {global_address} (% 16 = {global_address % 16})",
                    hint="describe the tensor from an aligned base and move the offset into the coordinates",
                )
            )
        if smem_address % TMA_SMEM_ALIGNMENT:
            problems.append(
                AtomError(
                    "ATOM_TMA_SMEM_ALIGN",
                    f"{self.name}: the shared-memory box is not 128-byte aligned",
                    requirement="shared-memory address % 128 == 0",
                    actual=f"shared-memory address {smem_address} (% 128 = {smem_address % 128})",
                    hint="align the shared-memory buffer (and every stage) to 128 bytes, 1024 with 128-byte swizzle",
                )
            )
        elif swizzle in SWIZZLE_MODES and not mid_pattern:
            problems.extend(check_swizzle_base(smem_address, swizzle, f"{self.name}'s shared-memory box"))
        if element_strides is not None:
            for i, step in enumerate(element_strides):
                if not 1 <= step <= TMA_MAX_ELEMENT_STRIDE:
                    problems.append(
                        AtomError(
                            "ATOM_TMA_ELEMENT_STRIDE",
                            f"{self.name}: element stride {i} is out of range",
                            requirement=f"1 <= element_strides[{i}] <= {TMA_MAX_ELEMENT_STRIDE}",
                            actual=f"element_strides[{i}] = {step}",
                        )
                    )
        return tuple(problems)

    def check(self, **kwargs) -> None:
        """Raise the first problem `diagnose` finds (same keyword arguments)."""
        raise_first(self.diagnose(**kwargs))

    def _box(self, box: Sequence[int]) -> list[int]:
        box = list(box)
        if len(box) != self.rank or any(not 1 <= b <= TMA_MAX_BOX for b in box):
            raise AtomError(
                "ATOM_TMA_BOX",
                f"{self.name} copies a {self.rank}-d box of extents in [1, {TMA_MAX_BOX}]",
                actual=f"box = {tuple(box)}",
            )
        return box


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _tma(kind: CopyKind, rank: int) -> TmaCopyAtom:
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= TMA_MAX_RANK:
        raise AtomError(
            "ATOM_TMA_RANK",
            "TMA tile copies have rank 1 to 5",
            requirement=f"1 <= rank <= {TMA_MAX_RANK}",
            actual=f"rank = {rank!r}",
        )
    load = kind is CopyKind.TMA_LOAD
    if load:
        ptx = f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    else:
        ptx = f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group"
    return TmaCopyAtom(
        name=f"tma.{'load' if load else 'store'}.{rank}d",
        ptx=ptx,
        kind=kind,
        src_space=MemorySpace.GLOBAL if load else MemorySpace.SHARED,
        dst_space=MemorySpace.SHARED if load else MemorySpace.GLOBAL,
        scope=Scope.THREAD,
        thread_count=1,
        arch="sm_90",
        rank=rank,
    )


def tma_load(rank: int = 2) -> TmaCopyAtom:
    """``cp.async.bulk.tensor.{rank}d`` global -> shared, completing on an mbarrier."""
    return _tma(CopyKind.TMA_LOAD, rank)


def tma_store(rank: int = 2) -> TmaCopyAtom:
    """``cp.async.bulk.tensor.{rank}d`` shared -> global, completing through a bulk async-group."""
    return _tma(CopyKind.TMA_STORE, rank)


#: Blocks of a thread-block cluster as argus launches them (``__cluster_dims__(2, 1, 1)``: blocks 2c and 2c + 1 of the
#: grid's first dimension, cluster ranks 0 and 1). One 2-block cluster is what the multicast loads and cluster
#: barriers below are written for; wider clusters are not modelled.
CLUSTER_BLOCKS = 2
#: The CTA mask of a multicast TMA load in a 2-block cluster: both blocks receive it.
MULTICAST_MASK = (1 << CLUSTER_BLOCKS) - 1
#: The PTX of a multicast TMA load: the box lands at the same shared-memory offset in every block of the mask, and
#: its bytes complete on the mbarrier at the same offset in each.
MULTICAST_PTX = (
    "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
)


@dataclass(frozen=True)
class MulticastHalf:
    """How each block of a 2-block cluster issues its part of a multicast box: a box of `box` (TMA order, the
    outermost extent halved), starting `rows` further along the outermost dimension and `bytes` further in shared
    memory per cluster rank, into both blocks."""

    box: tuple[int, ...]
    rows: int
    bytes: int


def multicast_half(box: Sequence[int], itemsize: int, swizzle: int) -> MulticastHalf:
    """The halves of the TMA box `box` (TMA order: dimension 0 innermost) that the two blocks of a cluster load for a
    multicast (`Copy.multicast`): split along the outermost dimension, rank r loading rows ``[r * h, (r + 1) * h)``
    into bytes ``[r * h * row, ...)`` of the box in both blocks. TMA writes a box densely (outermost dimension
    slowest), so the second half lands where the whole box would have put it if it starts on a shared-memory address
    a box may start at: 128-byte aligned (`TMA_SMEM_ALIGNMENT`) and, with a swizzle, on the pattern's repeat (the
    half restarts the pattern). An `AtomError` (``ATOM_TMA_MULTICAST``) otherwise."""
    box = [int(b) for b in box]
    outer = box[-1]
    row = itemsize * _product(box[:-1])
    half = outer // 2
    align = max(TMA_SMEM_ALIGNMENT, SWIZZLE_REPEAT_BYTES.get(swizzle, 0))
    if outer % CLUSTER_BLOCKS or (half * row) % align:
        raise AtomError(
            "ATOM_TMA_MULTICAST",
            f"a multicast TMA box of {tuple(box)} (TMA order) does not split into two halves that start where a box "
            f"may start",
            requirement=f"an even outermost extent whose half is a multiple of {align} bytes "
            f"({'the ' + str(swizzle) + '-byte swizzle repeat' if swizzle else 'TMA shared-memory alignment'})",
            actual=f"outermost extent {outer}, half {half * row} bytes",
        )
    return MulticastHalf((*box[:-1], half), half, half * row)


def _product(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


#: Rows of a ``wgmma`` accumulator that one warpgroup holds (m64): the rows of its boxes in a staged TMA store.
STORE_ROWS_PER_WARPGROUP = 64
#: Bytes of columns per chunk of a staged TMA store: the 128-byte swizzle's span, so a chunk's rows are its boxes'.
STORE_CHUNK_BYTES = 128


def store_chunk_columns(dtype: DType) -> int:
    """Columns per chunk of a staged TMA store (``T.copy(..., atom="tma.store", staging=...)``) of `dtype`: one
    chunk row is 128 bytes, the span of the 128-byte swizzle its staging buffer has."""
    return STORE_CHUNK_BYTES // dtype.itemsize


#: Chunk buffers of a staged TMA store's staging buffer (its first dimension): chunk c of a tile is written into
#: buffer ``c % STAGING_BUFFERS`` while the TMA store of chunk c - 1 may still be reading the other.
STAGING_BUFFERS = 2


def staged_store_buffer(chunk: int) -> int:
    """The chunk buffer chunk `chunk` of a staged TMA store is written into."""
    return chunk % STAGING_BUFFERS


def staged_store_wait(chunk: int) -> int:
    """The ``n`` of the ``cp.async.bulk.wait_group.read n`` that a warpgroup's issuing thread runs before its warpgroup
    writes chunk `chunk` of a staged TMA store into `staged_store_buffer(chunk)`: then at most ``n`` of the thread's
    bulk async-groups (one TMA store each, one per chunk and warpgroup) still read shared memory, the newest ``n``.

    1 after the first chunk: the newest group is the previous chunk's, which reads the other buffer. 0 for the first:
    the thread's newest group is the previous staged store's last chunk, which reads buffer 0 too where that store
    has an odd count of chunks (a 64-column tile of bf16 has one; with 1 there, the next tile overwrote a buffer its
    TMA store was still reading, wrong products on an H200 in session 52) or another staging buffer. The code
    generator emits these waits; the verifier proves that none of the groups a wait leaves pending reads the chunk
    buffer written after it (`argus.verify.checks.staged`, ``PIPELINE_STORE_OVERWRITE``)."""
    return 0 if chunk == 0 else 1


# --- im2col mode --------------------------------------------------------------------------------------------------
#
# ``cp.async.bulk.tensor.{3,4,5}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes``: a convolution's
# implicit-GEMM operand in one copy. The tensor is channels last (N, [D,] [H,] W, C); its tensor map (encoded by
# ``cuTensorMapEncodeIm2col``) holds a *bounding box* of base pixels per spatial dimension, ``[lower, extent - 1 +
# upper]`` (inclusive), the traversal strides, ``channelsPerPixel`` and ``pixelsPerColumn``. The instruction takes the
# first base pixel and channel (``{c, w, [h, [d,]] n}``, TMA order) and one 16-bit unsigned *offset* per spatial
# dimension (``{off_w, [off_h, [off_d]]}``). Row r of the box (``pixelsPerColumn`` rows of ``channelsPerPixel``
# channels, row-major, swizzled as a tiled box of that shape) is the r-th base pixel of the traversal from the start,
# innermost spatial dimension fastest, each wrapping to its ``lower`` corner and carrying into the next, the
# outermost carrying into the image (by 1): it holds ``X[n, d + off_d, h + off_h, w + off_w, c .. c + cpp)``, every
# element outside the tensor (negative, past an extent, n past the last image, channels past C) filled with zero.
# Sources: the PTX ISA, "Tensor im2col mode" (bounding box, traversal, offsets' and corners' ranges per rank) and
# ``cp.async.bulk.tensor``; the CUDA Driver API, ``cuTensorMapEncodeIm2col`` (corner order W first, limits).
# Behaviour the documents leave open is refused by `im2col_rows` (a start outside the bounding box, or off the
# traversal stride's grid), so no kernel relies on it.

#: Tensor ranks im2col mode takes (NWC, NHWC, NDHWC).
IM2COL_RANKS = (3, 4, 5)
#: Inclusive range of a bounding-box corner, by tensor rank.
IM2COL_CORNER_RANGE = {3: (-(2**15), 2**15 - 1), 4: (-(2**7), 2**7 - 1), 5: (-(2**4), 2**4 - 1)}
#: Largest im2col offset (16-bit unsigned operands, of a width that shrinks with the rank), by tensor rank.
IM2COL_OFFSET_MAX = {3: 2**16 - 1, 4: 2**8 - 1, 5: 2**5 - 1}
#: Largest ``channelsPerPixel``.
IM2COL_MAX_CHANNELS = 256
#: Largest ``pixelsPerColumn``.
IM2COL_MAX_PIXELS = 1024


@dataclass(frozen=True)
class Im2colBox:
    """An im2col tensor map's traversal, per spatial dimension in tensor order ((d,) (h,) w): the bounding box's
    `lower` and `upper` corners (the box of base pixels is ``[lower, extent - 1 + upper]``), the traversal
    `strides`; and the box: `pixels` rows (``pixelsPerColumn``) of `channels` channels (``channelsPerPixel``)."""

    lower: tuple[int, ...]
    upper: tuple[int, ...]
    strides: tuple[int, ...]
    pixels: int
    channels: int

    @property
    def spatial(self) -> int:
        return len(self.lower)


def conv_im2col_box(
    padding: Sequence[int], window: Sequence[int], stride: Sequence[int], pixels: int, channels: int
) -> Im2colBox:
    """The bounding box of a forward convolution's base pixels, per spatial dimension in tensor order: the base
    pixel of output position o is ``o * stride - padding``, so the box runs from ``-padding`` to the last output's
    base pixel, ``extent - 1 + padding - (window - 1)`` where `window` is the dilated filter extent
    (``(K - 1) * dilation + 1``) and the padding is the same at both ends; the traversal visits exactly the output
    positions, the offset of filter tap k being ``k * dilation``."""
    return Im2colBox(
        tuple(-int(p) for p in padding),
        tuple(int(p) - (int(w) - 1) for p, w in zip(padding, window, strict=True)),
        tuple(int(s) for s in stride),
        pixels,
        channels,
    )


def diagnose_im2col(shape: Sequence[int], box: Im2colBox, itemsize: int, swizzle: int = 0) -> tuple[AtomError, ...]:
    """The problems of an im2col tensor map for a channels-last tensor of `shape` (tensor order, N first, C last):
    rank, corner ranges, strides, the box's channels (whole 16-byte chunks, within the swizzle's span) and pixels,
    and a bounding box that holds at least one base pixel per dimension."""
    rank = len(shape)
    problems: list[AtomError] = []
    if rank not in IM2COL_RANKS or box.spatial != rank - 2:
        return (
            AtomError(
                "ATOM_TMA_IM2COL",
                "im2col mode takes a channels-last tensor of rank 3 to 5 and a corner per spatial dimension",
                requirement="rank in (3, 4, 5), rank - 2 corners",
                actual=f"rank {rank}, {box.spatial} corners",
            ),
        )
    lo, hi = IM2COL_CORNER_RANGE[rank]
    for i, (a, b, s) in enumerate(zip(box.lower, box.upper, box.strides, strict=True)):
        extent = int(shape[1 + i])
        if not (lo <= a <= hi and lo <= b <= hi):
            problems.append(
                AtomError(
                    "ATOM_TMA_IM2COL",
                    f"im2col: spatial dimension {i}'s bounding-box corners are out of range for a {rank}-d tensor",
                    requirement=f"{lo} <= corner <= {hi}",
                    actual=f"lower {a}, upper {b}",
                )
            )
        if extent - 1 + b < a:
            problems.append(
                AtomError(
                    "ATOM_TMA_IM2COL",
                    f"im2col: spatial dimension {i}'s bounding box is empty",
                    requirement="lower <= extent - 1 + upper",
                    actual=f"[{a}, {extent - 1 + b}]",
                )
            )
        if not 1 <= s <= TMA_MAX_ELEMENT_STRIDE:
            problems.append(
                AtomError(
                    "ATOM_TMA_ELEMENT_STRIDE",
                    f"im2col: spatial dimension {i}'s traversal stride is out of range",
                    requirement=f"1 <= stride <= {TMA_MAX_ELEMENT_STRIDE}",
                    actual=f"stride {s}",
                )
            )
    row = box.channels * itemsize
    if not 1 <= box.channels <= IM2COL_MAX_CHANNELS or row % TMA_INNER_BOX_MULTIPLE:
        problems.append(
            AtomError(
                "ATOM_TMA_IM2COL",
                "im2col: channelsPerPixel must be 1..256 channels of whole 16-byte chunks",
                requirement=f"1 <= channels <= {IM2COL_MAX_CHANNELS}, channels * {itemsize} % 16 == 0",
                actual=f"{box.channels} channels ({row} bytes)",
            )
        )
    if swizzle not in SWIZZLE_MODES or (swizzle and row > swizzle):
        problems.append(
            AtomError(
                "ATOM_TMA_SWIZZLE_SPAN",
                "im2col: a swizzled box's row of channels must fit in one swizzle row",
                requirement=f"swizzle in {sorted(SWIZZLE_MODES)}, channels * {itemsize} <= swizzle",
                actual=f"{row} bytes, swizzle {swizzle}",
            )
        )
    if not 1 <= box.pixels <= IM2COL_MAX_PIXELS:
        problems.append(
            AtomError(
                "ATOM_TMA_IM2COL",
                "im2col: pixelsPerColumn out of range",
                requirement=f"1 <= pixels <= {IM2COL_MAX_PIXELS}",
                actual=f"{box.pixels}",
            )
        )
    return tuple(problems)


def im2col_rows(
    shape: Sequence[int], box: Im2colBox, start: Sequence[int], offsets: Sequence[int]
) -> tuple[list[tuple[int, ...]], list[bool]]:
    """What an im2col load reads: for each of the box's rows, the tensor coordinates (n, spatial..., in tensor
    order) of its pixel, and whether that pixel lies inside the tensor (else the row reads zeros; the channels
    past C read zero too). `start`: (n, spatial...) of the first base pixel, tensor order; `offsets`: one per
    spatial dimension, tensor order. Raises `AtomError` ``ATOM_TMA_IM2COL`` for what the PTX ISA leaves
    undefined: a start outside the bounding box or off its traversal grid, an offset out of range."""
    rank = len(shape)
    spatial = rank - 2
    if len(start) != rank - 1 or len(offsets) != spatial or box.spatial != spatial:
        raise AtomError(
            "ATOM_TMA_IM2COL",
            "im2col: a start of (n, spatial...) and one offset per spatial dimension",
            actual=f"start {tuple(start)}, offsets {tuple(offsets)}, {box.spatial} corners for rank {rank}",
        )
    bounds = [(a, int(shape[1 + i]) - 1 + b) for i, (a, b) in enumerate(zip(box.lower, box.upper, strict=True))]
    top = IM2COL_OFFSET_MAX.get(rank, 0)
    for i, off in enumerate(offsets):
        if not 0 <= int(off) <= top:
            raise AtomError(
                "ATOM_TMA_IM2COL",
                f"im2col: offset {i} out of range for a {rank}-d tensor",
                requirement=f"0 <= offset <= {top}",
                actual=f"{off}",
            )
    base = [int(x) for x in start]
    for i, (a, b) in enumerate(bounds):
        x = base[1 + i]
        if not a <= x <= b or (x - a) % box.strides[i]:
            raise AtomError(
                "ATOM_TMA_IM2COL",
                f"im2col: the start's spatial coordinate {i} is outside the bounding box or off its traversal grid",
                requirement=f"{a} <= start <= {b}, (start - {a}) % {box.strides[i]} == 0",
                actual=f"start {x}",
                hint="start at an output position's base pixel (o * stride - padding)",
            )
    rows: list[tuple[int, ...]] = []
    inside: list[bool] = []
    for _ in range(box.pixels):
        pixel = (base[0], *(base[1 + i] + int(offsets[i]) for i in range(spatial)))
        rows.append(pixel)
        inside.append(
            0 <= pixel[0] < int(shape[0]) and all(0 <= pixel[1 + i] < int(shape[1 + i]) for i in range(spatial))
        )
        for i in reversed(range(spatial)):  # the innermost spatial dimension fastest, each carrying outwards
            base[1 + i] += box.strides[i]
            if base[1 + i] <= bounds[i][1]:
                break
            base[1 + i] = bounds[i][0]
        else:
            base[0] += 1
    return rows, inside
