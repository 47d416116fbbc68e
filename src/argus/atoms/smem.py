"""Hopper's canonical shared-memory layouts: the tiles ``wgmma`` reads through a matrix descriptor
and that TMA writes with a swizzle.

A shared-memory operand tile is indexed ``(mn, k)`` (``m, k`` for A, ``n, k`` for B) and laid out
from *swizzle atoms*, each 8 rows of ``W`` bytes where ``W`` is the swizzle width (32, 64 or 128
bytes) or 16 bytes without swizzle. With ``T = 128 / element_bits`` elements per 16-byte chunk and
``c = W / 16`` chunks per atom row (``c = 1`` without swizzle), PTX ISA §9.7.15.5.1.2.1.3 ("Canonical
Layouts") gives the layouts, in elements, with the swizzle applied to the resulting offset:

=========  ==========  ===========================================
major      swizzle     canonical layout
=========  ==========  ===========================================
K          none        ``((8,m),(T,2k)):((T,SBO),(1,LBO))``
K          W bytes     ``((8,m),(T,2k)):((cT,SBO),(1,T))``
MN         none        ``((T,1,m),(8,k)):((1,T,SBO),(T,LBO))``
MN         W bytes     ``((T,c,m),(8,k)):((1,T,LBO),(cT,SBO))``
=========  ==========  ===========================================

*K-major* means K is the contiguous dimension (``imm-trans = 0``); *MN-major* means M (for A) or N
(for B) is (``imm-trans = 1``, allowed for 16-bit types only). The swizzle is ``Swizzle<B,4,3>`` on
byte offsets (B = 0, 1, 2, 3 for none, 32, 64, 128 bytes), i.e. `hopper_swizzle` in element units (the swizzle
modes, their repeats and their descriptor encoding are `argus.atoms.swizzle`'s table).

`canonical_smem_layout` builds the tile CUTLASS's ``tile_to_shape`` would build from those atoms
(atoms repeated along MN first, then along K, no padding), which is one instance of the canonical
layout; `descriptor_offsets` gives its leading- and stride-dimension byte offsets (LBO, SBO) for the
``wgmma`` matrix descriptor.

Alignment: a matrix descriptor's start address must be 16-byte aligned (PTX ISA §9.7.15.5.1). A
swizzled tile is swizzled by *address* bits (the pattern repeats every 8 rows: 256, 512 or 1024
bytes); the layouts here assume the tile starts where the pattern starts (the descriptor's "base
offset" field is then 0; PTX ISA §9.7.15.5.1.2.2). `check_swizzle_base` enforces that.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from argus.atoms.errors import AtomError
from argus.atoms.swizzle import SWIZZLE_MODES, SWIZZLE_REPEAT_BYTES, hopper_swizzle
from argus.ir.types import DType, dtype_from_name
from argus.layout import ComposedLayout, Layout, Swizzle


class Major(StrEnum):
    """Which dimension of a shared-memory operand is contiguous."""

    K = "K"
    MN = "MN"


#: Alignment of a wgmma matrix descriptor's start address (PTX ISA §9.7.15.5.1).
DESCRIPTOR_ALIGNMENT = 16


def major(value: Major | str) -> Major:
    """Parse a major-ness given as an enum or a string (``"K"``, ``"MN"``, also ``"M"``/``"N"``)."""
    if isinstance(value, Major):
        return value
    text = str(value).upper()
    if text in ("M", "N"):
        text = "MN"
    try:
        return Major(text)
    except ValueError:
        raise AtomError(
            "ATOM_SMEM_MAJOR", "a shared-memory operand is K-major or MN-major", actual=repr(value)
        ) from None


def _swizzle_mode(swizzle_bytes: int) -> int:
    if swizzle_bytes not in SWIZZLE_MODES:
        raise AtomError(
            "ATOM_SWIZZLE_MODE",
            "Hopper's shared-memory swizzle modes are 0 (none), 32, 64 and 128 bytes",
            actual=swizzle_bytes,
        )
    return swizzle_bytes


def _element(dtype: DType | str, mj: Major) -> tuple[DType, int]:
    dtype = dtype_from_name(dtype)
    if dtype.bits not in (8, 16, 32):
        raise AtomError(
            "ATOM_SMEM_DTYPE",
            f"wgmma shared-memory operands have 8-, 16- or 32-bit elements; {dtype.name} has {dtype.bits}",
            actual=dtype.name,
        )
    if mj is Major.MN and dtype.bits != 16:
        raise AtomError(
            "ATOM_SMEM_MAJOR",
            f"MN-major (transposed) wgmma operands exist for 16-bit types only; {dtype.name} must be K-major",
            requirement="imm-trans-a / imm-trans-b may be 1 only for .f16 / .bf16",
            actual=f"MN-major {dtype.name}",
            hint="store the operand K-major",
        )
    return dtype, 128 // dtype.bits


def swizzle_atom(dtype: DType | str, major_: Major | str, swizzle_bytes: int) -> ComposedLayout:
    """The swizzle atom of a mode, indexed ``(mn, k)``: K-major ``(8, cT):(cT, 1)``, MN-major
    ``(cT, 8):(1, cT)``, swizzled by ``hopper_swizzle(W)``. It is a bijection onto
    ``[0, 8 * c * T)``, one swizzle pattern (``c = 1`` for no swizzle)."""
    mj = major(major_)
    dtype, t = _element(dtype, mj)
    width = _swizzle_mode(swizzle_bytes)
    row = max(1, width // 16) * t
    outer = Layout((8, row), (row, 1)) if mj is Major.K else Layout((row, 8), (1, row))
    return ComposedLayout(hopper_swizzle(width, dtype.bits), 0, outer)


def canonical_smem_layout(
    dtype: DType | str, major_: Major | str, swizzle_bytes: int, mn: int, k: int
) -> ComposedLayout:
    """The compact canonical layout of an ``mn x k`` operand tile, indexed ``(mn, k)``, in elements.

    Atoms tile MN first, then K. K-major: ``((8, mn/8), (cT, k/cT)) : ((cT, 8cT), (1, mn*cT))``;
    MN-major: ``((cT, mn/cT), (8, k/8)) : ((1, 8cT), (cT, 8mn))`` (``c = 1`` and the chunk-level
    split of the PTX table without swizzle). Property: it equals PTX's canonical layout with the
    LBO/SBO of `descriptor_offsets`, and is a bijection onto ``[0, mn*k)``.

    Raises `AtomError` ``ATOM_SMEM_TILE`` when the tile is not a whole number of swizzle atoms.
    """
    mj = major(major_)
    dtype, t = _element(dtype, mj)
    width = _swizzle_mode(swizzle_bytes)
    c = max(1, width // 16)
    row = c * t  # elements in one row of the swizzle atom
    if mj is Major.K:
        _require_multiple(mn, 8, "MN", dtype, mj, width)
        _require_multiple(k, row, "K", dtype, mj, width)
        if width == 0:
            outer = Layout(((8, mn // 8), (t, k // t)), ((t, 8 * t), (1, mn * t)))
        else:
            outer = Layout(((8, mn // 8), (row, k // row)), ((row, 8 * row), (1, mn * row)))
    else:
        _require_multiple(mn, row, "MN", dtype, mj, width)
        _require_multiple(k, 8, "K", dtype, mj, width)
        outer = Layout(((row, mn // row), (8, k // 8)), ((1, 8 * row), (row, 8 * mn)))
    return ComposedLayout(hopper_swizzle(width, dtype.bits), 0, outer)


def panel_layout(shape: tuple[int, ...], dtype: DType | str, swizzle_bytes: int) -> ComposedLayout:
    """A shared buffer of `shape` ``(..., rows, cols)`` whose last dimension is cut into *panels* one swizzle
    width wide (``P = W / itemsize`` elements), each panel stored whole, all rows, before the next:
    ``(..., rows, (P, cols/P)) : (..., P, (1, rows*P))``, leading dimensions (stages) outermost, swizzled by
    ``hopper_swizzle(W)``.

    This is the layout of a tile loaded by TMA boxes ``(rows, P)``, one per panel (a TMA box's inner dimension
    must not exceed the swizzle span), and, read with ``rows`` along K and ``cols`` along M or N, an MN-major
    canonical ``wgmma`` layout with its swizzle atoms tiled along K first: LBO is the panel size
    (``rows * W`` bytes), SBO the 8 K-rows of one atom (``8 * W`` bytes). Property: panel ``j`` (columns
    ``jP .. jP+P-1``) relative to its first element is exactly the row-major swizzled box TMA writes, and the
    layout is a bijection onto ``[0, size)``. Where ``cols == P`` it is the row-major swizzled layout.

    Raises `AtomError` ``ATOM_SMEM_TILE`` when `cols` is not a multiple of `P`."""
    dtype = dtype_from_name(dtype)
    width = _swizzle_mode(swizzle_bytes)
    if width == 0 or len(shape) < 2:
        raise AtomError(
            "ATOM_SMEM_TILE",
            "a panel layout cuts the last dimension of a 2-d (or staged) tile into swizzle-wide panels",
            requirement="a 32-, 64- or 128-byte swizzle and at least two dimensions",
            actual=f"swizzle {width}, shape {tuple(shape)}",
        )
    panel = width // dtype.itemsize
    *lead, rows, cols = (int(x) for x in shape)
    if cols % panel:
        raise AtomError(
            "ATOM_SMEM_TILE",
            f"a {width}-byte-swizzled panel layout of {dtype.name} has panels of {panel} columns",
            requirement=f"the last extent a multiple of {panel}",
            actual=f"{cols}",
            hint=f"use {max(panel, cols // panel * panel)} columns, or a narrower swizzle",
        )
    tile = rows * cols
    lead_strides = []
    acc = tile
    for extent in reversed(lead):
        lead_strides.append(acc)
        acc *= extent
    lead_strides.reverse()
    outer = Layout(
        (*lead, rows, (panel, cols // panel)),
        (*lead_strides, panel, (1, rows * panel)),
    )
    return ComposedLayout(hopper_swizzle(width, dtype.bits), 0, outer)


def descriptor_offsets(
    dtype: DType | str, major_: Major | str, swizzle_bytes: int, mn: int, k: int
) -> tuple[int | None, int]:
    """``(LBO, SBO)`` in bytes of the `canonical_smem_layout` tile, as the wgmma matrix descriptor
    defines them (PTX ISA §9.7.15.5.1.2.1); LBO is ``None`` where the instruction ignores it
    (K-major swizzled layouts, where PTX says it is "assumed to be 1")."""
    mj = major(major_)
    dtype, t = _element(dtype, mj)
    width = _swizzle_mode(swizzle_bytes)
    canonical_smem_layout(dtype, mj, width, mn, k)  # validates the tile
    size = dtype.itemsize
    c = max(1, width // 16)
    if mj is Major.K:
        sbo = 8 * c * t * size  # from one group of 8 rows to the next
        lbo = None if width else mn * t * size  # from one 16-byte column of core matrices to the next
        return lbo, sbo
    if width == 0:
        return 8 * mn * size, 8 * t * size  # LBO: next 8 K; SBO: next T elements of MN
    return 8 * c * t * size, 8 * mn * size  # LBO: next swizzle atom along MN; SBO: next 8 K


def swizzle_mode_of(sw: Swizzle | None, element_bits: int) -> int | None:
    """The Hopper swizzle mode (0, 32, 64, 128 bytes) `sw` is for `element_bits`-bit elements, or None."""
    if sw is None or sw.bits == 0:
        return 0
    for width in SWIZZLE_MODES[1:]:
        h = hopper_swizzle(width, element_bits)
        if (h.bits, h.base, h.shift) == (sw.bits, sw.base, sw.shift):
            return width
    return None


def canonical_offsets(
    major_: Major | str, swizzle_bytes: int, t: int, mn: np.ndarray, k: np.ndarray, lbo: int, sbo: int
) -> np.ndarray:
    """PTX's canonical layout (the table above) at coordinates ``(mn, k)``: element offsets before the swizzle,
    relative to the descriptor's start address, with LBO and SBO given in elements."""
    mj, c = major(major_), max(1, swizzle_bytes // 16)
    if mj is Major.K:
        if swizzle_bytes:
            return (mn % 8) * c * t + (mn // 8) * sbo + k
        return (mn % 8) * t + (mn // 8) * sbo + (k % t) + (k // t) * lbo
    if swizzle_bytes:
        return (mn % t) + ((mn // t) % c) * t + (mn // (c * t)) * lbo + (k % 8) * c * t + (k // 8) * sbo
    return (mn % t) + (mn // t) * sbo + (k % 8) * t + (k // 8) * lbo


def match_canonical(
    sub_tiles: Sequence[np.ndarray], sub: int, ak: int, dtype: DType | str, swizzle_bytes: int
) -> tuple[Major, int, int] | None:
    """The wgmma descriptor that reads every one of `sub_tiles`: ``(major, LBO, SBO)`` (bytes, at least 16: the
    field's unit), or None when no canonical layout matches them all.

    Each sub-tile is an array ``(S, sub * ak)`` of pre-swizzle element offsets of the ``sub x ak`` operand block
    (one warpgroup's M or N rows, one k step; element ``(mn, k)`` at ``mn * ak + k``) for S placements (stages);
    the same LBO/SBO must describe them all relative to their first element. MN-major layouts are tried for
    16-bit types only (imm-trans is 1 only for .f16/.bf16)."""
    dtype = dtype_from_name(dtype)
    t = 128 // dtype.bits
    mn, kk = np.meshgrid(np.arange(sub), np.arange(ak), indexing="ij")
    mn, kk = mn.ravel(), kk.ravel()
    first = sub_tiles[0]
    grid = (first - first[:, :1])[0].reshape(sub, ak)
    candidates: list[tuple[Major, int, int]] = []  # (major, LBO, SBO) in elements, 0 where the tile does not use it
    if swizzle_bytes:
        c = swizzle_bytes // 16
        candidates.append((Major.K, 16 // dtype.itemsize, int(grid[8, 0]) if sub > 8 else 0))
        candidates.append((Major.MN, int(grid[c * t, 0]) if sub > c * t else 0, int(grid[0, 8]) if ak > 8 else 0))
    else:
        candidates.append((Major.K, int(grid[0, t]) if ak > t else 0, int(grid[8, 0]) if sub > 8 else 0))
        candidates.append((Major.MN, int(grid[0, 8]) if ak > 8 else 0, int(grid[t, 0]) if sub > t else 0))
    for mj, lbo, sbo in candidates:
        if mj is Major.MN and dtype.bits != 16:
            continue
        if lbo < 0 or sbo < 0:
            continue  # the descriptor's offsets are unsigned: atoms laid out backwards have no descriptor
        model = canonical_offsets(mj, swizzle_bytes, t, mn, kk, lbo, sbo)
        if all(np.array_equal(p - p[:, :1], np.broadcast_to(model, p.shape)) for p in sub_tiles):
            return mj, max(lbo * dtype.itemsize, 16), max(sbo * dtype.itemsize, 16)
    return None


def _swizzled(sw: Swizzle, x: np.ndarray) -> np.ndarray:
    bits = x & sw.yyy_mask
    return x ^ (bits >> sw.shift if sw.shift >= 0 else bits << -sw.shift)


def tma_box_swizzle(
    relative: np.ndarray, box_shape: tuple[int, ...], element_bits: int, prefer: int | None = None
) -> int | None:
    """The swizzle mode (128, 64, 32 or 0 bytes) under which a TMA box of `box_shape` (tensor order) lands at
    `relative`: element offsets of the box's elements, row-major over `box_shape`, relative to the box's first
    element (an array ``(S, size)`` for S placements). TMA writes a box densely, row-major, swizzled by
    ``hopper_swizzle(W)``; None when no mode gives these offsets.

    A box smaller than a pattern's period can match several modes (8 rows of 32 bytes land alike under the 32- and
    the 128-byte swizzle: both XOR bit 7 of the offset into bit 4, and the wider one's other bits are 0 inside the
    box), but the hardware applies the mode to the absolute shared address, so only the destination buffer's own
    mode is right where the box starts inside a wider period: `prefer` (the buffer's mode) is tried first."""
    linear = np.arange(int(np.prod(box_shape)), dtype=np.int64)
    order = (128, 64, 32, 0)
    for width in (prefer,) + order if prefer in order else order:
        want = _swizzled(hopper_swizzle(width, element_bits), linear)
        if np.array_equal(relative, np.broadcast_to(want, relative.shape)):
            return width
    return None


def tma_box_start(
    absolute: np.ndarray, box_shape: tuple[int, ...], element_bits: int, prefer: int | None = None
) -> tuple[int, np.ndarray] | None:
    """``(mode, starts)`` for a TMA box that starts inside a swizzle pattern (one row of a 128-byte-swizzled tile),
    or None. The hardware swizzles the absolute shared address: the box is written densely, row-major, from the
    start address the instruction names, and each byte lands at ``hopper_swizzle(W)`` of its address. So a box
    lands at `absolute` (its elements' offsets from a buffer start aligned to the pattern's repeat, row-major over
    `box_shape`, an array ``(S, size)`` for S placements) when, under one mode W, ``W(start + i)`` is element i's
    offset for every i, where ``start`` is the first element's offset taken back through the swizzle (an
    involution): `starts` holds that unswizzled start for each placement, the address the load must name.
    `tma_box_swizzle`'s relative form is the case of a box starting where a pattern starts (``start`` is then its
    first element's own offset)."""
    absolute = np.asarray(absolute, dtype=np.int64)
    linear = np.arange(int(np.prod(box_shape)), dtype=np.int64)
    order = (128, 64, 32, 0)
    for width in (prefer,) + order if prefer in order else order:
        sw = hopper_swizzle(width, element_bits)
        starts = _swizzled(sw, absolute[:, :1])
        if np.array_equal(_swizzled(sw, starts + linear), absolute):
            return width, starts[:, 0]
    return None


def check_swizzle_base(address: int, swizzle_bytes: int, what: str = "shared-memory tile") -> list[AtomError]:
    """Problems with the start address of a swizzled tile: it must sit where the swizzle pattern
    starts (256, 512 or 1024 bytes for 32, 64, 128-byte swizzle), else the layout's swizzle phase is
    wrong. Without swizzle there is nothing to check here."""
    width = _swizzle_mode(swizzle_bytes)
    if width == 0:
        return []
    repeat = SWIZZLE_REPEAT_BYTES[width]
    if address % repeat == 0:
        return []
    return [
        AtomError(
            "ATOM_SMEM_SWIZZLE_ALIGN",
            f"{what} with {width}-byte swizzle starts inside a swizzle pattern",
            requirement=f"start address a multiple of {repeat} bytes, where the {width}-byte swizzle pattern "
            "repeats (PTX ISA, matrix descriptor 'base offset' table; CUTLASS aligns such buffers to 1024 bytes)",
            actual=f"address {address} ({address % repeat} bytes past a {repeat}-byte boundary)",
            hint=f"align the shared-memory buffer to {repeat} bytes (e.g. alignas({repeat}) or round the offset up)",
        )
    ]


def _require_multiple(extent: int, unit: int, dim: str, dtype: DType, mj: Major, width: int) -> None:
    if extent < 1 or extent % unit:
        mode = f"{width}-byte swizzle" if width else "no swizzle"
        raise AtomError(
            "ATOM_SMEM_TILE",
            f"a {mj}-major {dtype.name} tile with {mode} is built from swizzle atoms of {unit} along {dim}",
            requirement=f"the {dim} extent a positive multiple of {unit}",
            actual=f"{dim} = {extent}",
            hint=f"use a {dim} extent of {max(unit, (max(extent, 1) + unit - 1) // unit * unit)}"
            + ("" if width == 0 else " or a narrower swizzle"),
        )


# --- the shared-memory carve --------------------------------------------------------------------------------------

#: Where a shared buffer may start: 128 bytes (TMA boxes and 16-byte vector accesses), 1024 for a swizzled buffer
#: (the swizzle is computed from address bits 4..9: its pattern repeats every 1024 bytes), 8 for an mbarrier.
SHARED_ALIGNMENT = 128
SWIZZLED_ALIGNMENT = max(SWIZZLE_REPEAT_BYTES.values())
MBARRIER_BYTES = 8


def is_swizzled(layout: object) -> bool:
    """True when `layout` is a composed layout with a non-identity swizzle."""
    return isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle) and layout.inner.bits > 0


class SharedCarve:
    """Shared memory as a block lays it out: buffers in allocation order, each at the next offset aligned for it
    (`SHARED_ALIGNMENT`, `SWIZZLED_ALIGNMENT`, 8 bytes for mbarriers). The tracer's budget check, the verifier's
    ``BUDGET_SMEM`` and the code generator's offsets all come from this one carve, so the bytes checked against the
    budget are the bytes launched."""

    def __init__(self) -> None:
        self.total = 0
        self.offsets: dict[object, int] = {}

    @staticmethod
    def footprint(buffer: object) -> tuple[int, int]:
        """(bytes, alignment) of a shared buffer or an mbarrier array (`argus.ir.nodes.Buffer`)."""
        import math

        from argus.ir.nodes import Space

        if buffer.space == Space.MBARRIER:
            return MBARRIER_BYTES * math.prod(buffer.static_shape), MBARRIER_BYTES
        layout = buffer.layout
        has_cosize = layout is not None and hasattr(layout, "cosize")
        elements = layout.cosize() if has_cosize else math.prod(buffer.static_shape)
        return elements * buffer.dtype.bits // 8, SWIZZLED_ALIGNMENT if is_swizzled(layout) else SHARED_ALIGNMENT

    def would_need(self, buffer: object) -> int:
        """The total after placing `buffer` (nothing is placed)."""
        nbytes, align = self.footprint(buffer)
        return -(-self.total // align) * align + nbytes

    def place(self, buffer: object) -> int:
        """Place `buffer` after the ones placed so far; its offset."""
        nbytes, align = self.footprint(buffer)
        offset = -(-self.total // align) * align
        self.offsets[buffer] = offset
        self.total = offset + nbytes
        return offset
