"""Hopper's swizzle modes (`argus.atoms.swizzle`): the table is consistent with itself, with the `Target`, and with
the byte-level definition (16-byte chunks XOR-ed with the row modulo 2, 4, 8); `hopper_swizzle` writes it in
elements."""

from __future__ import annotations

import itertools

import pytest

from argus.atoms.swizzle import (
    DESCRIPTOR_SWIZZLE_ENCODING,
    HOPPER_SWIZZLE_BYTES,
    MODES,
    SWIZZLE_MODES,
    SWIZZLE_REPEAT_BYTES,
    SWIZZLE_WIDTHS,
    TENSOR_MAP_SWIZZLE,
    hopper_swizzle,
    swizzle_width,
)
from argus.atoms.target import DEFAULT_TARGET
from argus.layout import LayoutError, Swizzle


def test_hopper_128_byte_swizzle_of_bf16() -> None:
    # 8 rows of 64 bf16 (128 bytes): the 16-byte chunk index is XOR-ed with the row index mod 8.
    sw = hopper_swizzle(128, 16)
    assert sw == Swizzle(3, 3, 3)
    for row, col in itertools.product(range(16), range(64)):
        chunk, within = divmod(col, 8)
        assert sw(row * 64 + col) == row * 64 + ((chunk ^ (row % 8)) * 8) + within
    assert hopper_swizzle(64, 16) == Swizzle(2, 3, 3)
    assert hopper_swizzle(32, 16) == Swizzle(1, 3, 3)
    assert hopper_swizzle(128, 8) == Swizzle(3, 4, 3)
    assert hopper_swizzle(128, 32) == Swizzle(3, 2, 3)
    assert hopper_swizzle(0, 32) == Swizzle(0, 4, 3)  # none: the identity
    with pytest.raises(LayoutError) as e:
        hopper_swizzle(96, 16)
    assert e.value.code == "LAYOUT_BAD_SWIZZLE" and "96" in str(e.value)
    with pytest.raises(LayoutError) as e:
        hopper_swizzle(128, 12)
    assert e.value.code == "LAYOUT_BAD_SWIZZLE"


def test_the_table_is_one_table() -> None:
    assert SWIZZLE_MODES == (0, 32, 64, 128) and SWIZZLE_WIDTHS == (32, 64, 128) == DEFAULT_TARGET.swizzles
    for width, mode in MODES.items():
        assert mode.width == width
        if width:
            assert swizzle_width(mode.bits) == width and (mode.base, mode.shift) == (4, 3)
            assert HOPPER_SWIZZLE_BYTES[width] == (mode.bits, 4, 3)
            assert SWIZZLE_REPEAT_BYTES[width] == mode.repeat_bytes == 8 * width  # 8 rows
            assert Swizzle(mode.bits, mode.base, mode.shift).size() == mode.repeat_bytes
    assert DESCRIPTOR_SWIZZLE_ENCODING == {0: 0, 128: 1, 64: 2, 32: 3}
    assert TENSOR_MAP_SWIZZLE[0] == "CU_TENSOR_MAP_SWIZZLE_NONE"
    assert all(TENSOR_MAP_SWIZZLE[w] == f"CU_TENSOR_MAP_SWIZZLE_{w}B" for w in SWIZZLE_WIDTHS)


@pytest.mark.parametrize("width", SWIZZLE_WIDTHS)
@pytest.mark.parametrize("element_bits", [8, 16, 32, 64, 128])
def test_element_swizzle_is_the_byte_swizzle(width: int, element_bits: int) -> None:
    """On the address of an element, the element-unit swizzle moves it where the byte-level one moves its bytes."""
    size = element_bits // 8
    in_bytes = Swizzle(*HOPPER_SWIZZLE_BYTES[width])
    in_elements = hopper_swizzle(width, element_bits)
    for x in range(4 * width * 8 // size):
        assert in_elements(x) * size == in_bytes(x * size)
