"""Hopper's shared-memory swizzle modes as data: which widths exist, the `argus.layout.Swizzle` of each, where
its pattern repeats, and how ``wgmma`` matrix descriptors and TMA tensor maps encode it.

A mode is named by its width ``W`` in bytes: one swizzled row is ``W`` bytes (32, 64 or 128; 0 means no
swizzle). On byte offsets it is ``Swizzle(B, 4, 3)`` with ``W = 16 << B``: the 16-byte chunk bits of an offset
are XOR-ed with its row bits modulo 2, 4 or 8, so the pattern repeats every 8 rows (256, 512 or 1024 bytes).
`hopper_swizzle` writes it in units of elements, the unit every shared-memory layout of argus counts in. The
generic ``Swizzle(B, M, S)`` algebra is `argus.layout`'s; the facts here are the hardware's (PTX ISA, the
matrix descriptor's "swizzle mode" and "base offset" fields, §9.7.15.5.1.2.2; CUDA driver API
``CUtensorMapSwizzle``).
"""

from __future__ import annotations

from dataclasses import dataclass

from argus.layout import LayoutError, Swizzle


@dataclass(frozen=True)
class SwizzleMode:
    """One shared-memory swizzle mode.

    Attributes:
        width: bytes of one swizzled row (0: no swizzle).
        bits, base, shift: the byte-level ``Swizzle(B, M, S)``.
        repeat_bytes: bytes after which the pattern repeats (8 rows): the alignment at which a swizzled tile
            must start for its pattern to start at phase 0 (0 without swizzle).
        descriptor: the ``wgmma`` matrix descriptor's swizzle field (note the order: the reverse of TMA's).
        tensor_map: the ``CUtensorMapSwizzle`` enumerator TMA is given.
    """

    width: int
    bits: int
    base: int
    shift: int
    repeat_bytes: int
    descriptor: int
    tensor_map: str


#: Hopper's swizzle modes, by width in bytes.
MODES: dict[int, SwizzleMode] = {
    0: SwizzleMode(0, 0, 4, 3, 0, 0, "CU_TENSOR_MAP_SWIZZLE_NONE"),
    32: SwizzleMode(32, 1, 4, 3, 256, 3, "CU_TENSOR_MAP_SWIZZLE_32B"),
    64: SwizzleMode(64, 2, 4, 3, 512, 2, "CU_TENSOR_MAP_SWIZZLE_64B"),
    128: SwizzleMode(128, 3, 4, 3, 1024, 1, "CU_TENSOR_MAP_SWIZZLE_128B"),
}

#: The swizzle widths in bytes, 0 (none) included.
SWIZZLE_MODES: tuple[int, ...] = tuple(MODES)
#: The widths that swizzle (TMA and wgmma know these).
SWIZZLE_WIDTHS: tuple[int, ...] = tuple(w for w in MODES if w)
#: The byte-level ``(B, M, S)`` of each swizzling mode.
HOPPER_SWIZZLE_BYTES: dict[int, tuple[int, int, int]] = {w: (m.bits, m.base, m.shift) for w, m in MODES.items() if w}
#: Bytes after which each swizzle pattern repeats (8 rows of the swizzle width).
SWIZZLE_REPEAT_BYTES: dict[int, int] = {w: m.repeat_bytes for w, m in MODES.items() if w}
#: wgmma matrix-descriptor swizzle field encoding (PTX ISA §9.7.15.5.1.2.2).
DESCRIPTOR_SWIZZLE_ENCODING: dict[int, int] = {w: m.descriptor for w, m in MODES.items()}
#: TMA's ``CUtensorMapSwizzle`` enumerator of each mode.
TENSOR_MAP_SWIZZLE: dict[int, str] = {w: m.tensor_map for w, m in MODES.items()}


def hopper_swizzle(swizzle_bytes: int, element_bits: int = 16) -> Swizzle:
    """The swizzle of a Hopper shared-memory swizzle mode (32, 64 or 128 bytes; ``0`` means none:
    ``Swizzle(0, 4, 3)``, the identity) in units of `element_bits`-bit elements.

    The byte-level swizzle is ``Swizzle(B, 4, 3)`` (16-byte chunks); for elements of ``2**k`` bytes
    the base ``M`` drops by ``k``: 128-byte swizzle of bf16 is ``Swizzle(3, 3, 3)``. Raises `LayoutError`
    ``LAYOUT_BAD_SWIZZLE`` for another width or element width.
    """
    if swizzle_bytes == 0:
        return Swizzle(0, 4, 3)
    if swizzle_bytes not in HOPPER_SWIZZLE_BYTES:
        raise LayoutError(
            "LAYOUT_BAD_SWIZZLE",
            f"Hopper has no {swizzle_bytes}-byte swizzle mode",
            "use 0 (none), 32, 64 or 128",
        )
    if element_bits not in (8, 16, 32, 64, 128):
        raise LayoutError("LAYOUT_BAD_SWIZZLE", f"element width {element_bits} bits is not 8, 16, 32, 64 or 128")
    b, m, s = HOPPER_SWIZZLE_BYTES[swizzle_bytes]
    drop = (element_bits // 8).bit_length() - 1
    return Swizzle(b, m - drop, s)


def swizzle_width(bits: int) -> int:
    """The width in bytes of a mode whose swizzle XORs `bits` bits of 16-byte chunks (``B`` of ``Swizzle(B, M, S)``,
    the same in bytes and in elements): ``16 << B`` (32, 64, 128 for B = 1, 2, 3)."""
    return 16 << bits
