"""Random layouts for the layout tests: a deterministic generator (for the oracle runs, which need
thousands of cases) and hypothesis strategies (for the property tests, which shrink failures)."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from argus.layout import Layout, size

POW2 = [1, 2, 4, 8, 16]
SMALL = [1, 2, 3, 4, 5, 6, 8, 12, 16]


def random_shape(rng: random.Random, max_rank: int = 3, max_depth: int = 2, extents=SMALL):
    """An int tuple of depth <= max_depth with extents from `extents`."""
    if max_depth == 0 or rng.random() < 0.35:
        return rng.choice(extents)
    return tuple(random_shape(rng, max_rank, max_depth - 1, extents) for _ in range(rng.randint(1, max_rank)))


def _leaves(t):
    if isinstance(t, tuple):
        for e in t:
            yield from _leaves(e)
    else:
        yield t


def _rebuild(like, it):
    if isinstance(like, tuple):
        return tuple(_rebuild(e, it) for e in like)
    return next(it)


def random_layout(
    rng: random.Random, max_rank: int = 3, max_depth: int = 2, extents=SMALL, zero_strides=True, max_size: int = 4096
) -> Layout:
    """A layout with random (non-negative) strides: compact-permuted, with gaps, or arbitrary."""
    while True:
        shape = random_shape(rng, max_rank, max_depth, extents)
        if size(Layout(shape)) <= max_size:
            break
    flat = list(_leaves(shape))
    kind = rng.random()
    if kind < 0.5:
        # compact in a random order, optionally with gaps: an injective layout
        order = list(range(len(flat)))
        rng.shuffle(order)
        strides = [0] * len(flat)
        current = 1
        for i in order:
            if rng.random() < 0.25:
                current *= rng.choice([2, 3, 4])
            strides[i] = current
            current *= flat[i]
    else:
        strides = [
            rng.choice([0, 1, 2, 3, 4, 8, 16, 32]) if zero_strides else rng.choice([1, 2, 4, 8, 16, 32]) for _ in flat
        ]
    return Layout(shape, _rebuild(shape, iter(strides)))


def injective_layout(
    rng: random.Random, max_rank: int = 3, max_depth: int = 2, extents=SMALL, gaps: bool = True, max_size: int = 4096
) -> Layout:
    """An injective layout whose sorted strides divide one another (so it has a complement)."""
    while True:
        shape = random_shape(rng, max_rank, max_depth, extents)
        if size(Layout(shape)) <= max_size:
            break
    flat = list(_leaves(shape))
    order = list(range(len(flat)))
    rng.shuffle(order)
    strides = [0] * len(flat)
    current = 1
    for i in order:
        if gaps and rng.random() < 0.3:
            current *= rng.choice([2, 3, 4])
        strides[i] = current
        current *= flat[i]
    return Layout(shape, _rebuild(shape, iter(strides)))


@st.composite
def layouts(draw, max_rank: int = 3, max_depth: int = 2, injective: bool = False, extents=SMALL, max_size: int = 2048):
    """Hypothesis strategy over layouts (seeded through hypothesis, so failures shrink to a seed)."""
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = random.Random(seed)
    if injective:
        return injective_layout(rng, max_rank, max_depth, extents, max_size=max_size)
    return random_layout(rng, max_rank, max_depth, extents, max_size=max_size)
