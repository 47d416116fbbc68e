"""TMA's im2col mode as argus models it (`argus.atoms.tma.im2col_rows`, `conv_im2col_box`): the traversal of a
convolution's bounding box visits exactly the output positions, flattened over (n, spatial...), and each row reads
the input element the convolution's definition names for the tap; what the PTX ISA leaves undefined is refused.
The hardware's agreement is checked on a GPU (`tests/runtime/test_tma_im2col_gpu.py`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from argus.atoms.errors import AtomError
from argus.atoms.tma import Im2colBox, conv_im2col_box, diagnose_im2col, im2col_rows


def _outputs(extent: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (extent + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


CASES = [  # (N, spatial extents, kernel, stride, padding, dilation)
    (2, (3, 3), 3, 1, 1, 1),
    (2, (14, 14), 3, 2, 1, 1),
    (3, (7, 7), 3, 1, 1, 1),
    (2, (9, 11), 3, 1, 2, 2),
    (2, (10, 13), 5, 3, 2, 1),
    (2, (8,), 3, 1, 1, 1),  # 1-d: N, W, C
    (2, (4, 5, 6), 3, 1, 1, 1),  # 3-d
    (1, (6, 6), 1, 2, 0, 1),  # a strided 1x1 projection
]


@pytest.mark.parametrize(("n", "size", "k", "s", "p", "d"), CASES)
def test_the_traversal_is_the_convolutions_im2col(n, size, k, s, p, d) -> None:
    outs = tuple(_outputs(e, k, s, p, d) for e in size)
    positions = [(b, *o) for b in range(n) for o in itertools.product(*(range(x) for x in outs))]
    shape = (n, *size, 16)
    box = conv_im2col_box((p,) * len(size), ((k - 1) * d + 1,) * len(size), (s,) * len(size), 24, 16)
    assert not diagnose_im2col(shape, box, 2, 32)
    for first in range(0, len(positions), 7):  # tiles starting anywhere, crossing rows and images
        b, *o = positions[first]
        start = (b, *(x * s - p for x in o))
        for taps in itertools.product(range(k), repeat=len(size)):
            rows, inside = im2col_rows(shape, box, start, tuple(t * d for t in taps))
            for r, (pixel, ok) in enumerate(zip(rows, inside, strict=True)):
                if first + r >= len(positions):  # past the last output position: the image past the last
                    assert pixel[0] >= n and not ok
                    continue
                b2, *o2 = positions[first + r]
                want = (b2, *(x * s - p + t * d for x, t in zip(o2, taps, strict=True)))
                assert pixel == want
                assert ok == all(0 <= w < e for w, e in zip(want[1:], size, strict=True))


def test_wrapping_goes_to_the_lower_corner_and_carries_into_the_image() -> None:
    box = Im2colBox(lower=(-1, -1), upper=(0, 0), strides=(1, 1), pixels=6, channels=8)
    rows, inside = im2col_rows((2, 2, 2, 8), box, (0, 1, 0), (0, 0))
    assert rows == [(0, 1, 0), (0, 1, 1), (1, -1, -1), (1, -1, 0), (1, -1, 1), (1, 0, -1)]
    assert inside == [True, True, False, False, False, False]


def test_undefined_starts_and_offsets_are_refused() -> None:
    box = conv_im2col_box((1, 1), (3, 3), (2, 2), 8, 8)
    with pytest.raises(AtomError, match="traversal grid"):
        im2col_rows((1, 14, 14, 8), box, (0, 0, -1), (0, 0))  # h = 0 is off the stride-2 grid from -1
    with pytest.raises(AtomError, match="outside the bounding box"):
        im2col_rows((1, 14, 14, 8), box, (0, -3, -1), (0, 0))
    with pytest.raises(AtomError, match="offset 1 out of range"):
        im2col_rows((1, 14, 14, 8), box, (0, -1, -1), (0, 256))


def test_tensor_map_limits() -> None:
    ok = conv_im2col_box((1, 1), (3, 3), (1, 1), 128, 64)
    assert not diagnose_im2col((8, 56, 56, 64), ok, 2, 128)
    codes = [e.code for e in diagnose_im2col((8, 56, 56, 64), Im2colBox((-200, -1), (0, 0), (1, 1), 128, 64), 2, 128)]
    assert codes == ["ATOM_TMA_IM2COL"]  # a 4-d tensor's corners lie in [-128, 127]
    wide = diagnose_im2col((8, 56, 56, 128), conv_im2col_box((1, 1), (3, 3), (1, 1), 128, 128), 2, 128)
    assert [e.code for e in wide] == ["ATOM_TMA_SWIZZLE_SPAN"]  # 256 bytes of channels in a 128-byte swizzle
    odd = diagnose_im2col((8, 56, 56, 12), conv_im2col_box((1, 1), (3, 3), (1, 1), 128, 12), 2, 0)
    assert [e.code for e in odd] == ["ATOM_TMA_IM2COL"]  # 24 bytes: not whole 16-byte chunks
    assert diagnose_im2col((8, 56, 64), conv_im2col_box((1, 1), (3, 3), (1, 1), 8, 8), 2)  # rank 3 needs 1 corner
    assert np.all([e.code == "ATOM_TMA_IM2COL" for e in diagnose_im2col((8, 64), ok, 2)])
