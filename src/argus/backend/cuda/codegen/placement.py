"""Where each thread's elements are: the per-thread facts the code generator derives from layouts.

Everything here is decided by enumeration over the block's threads and a fragment's values, from the
same `argus.layout` objects the interpreter evaluates, and then turned back into layouts the generated
code evaluates at ``threadIdx.x``:

* `Fit` — a function of the thread index written as a `Layout` over its mixed-radix digits
  (``(2, 2, ..., 2, odd)``) plus a constant, found when the function is additive over those digits
  (which is what thread-value layouts built from atoms and tilings are). ``fit(f)`` holds exactly when
  ``f(t) == fit.layout(t) + fit.constant`` for every thread.
* `Placement` — a fragment's thread-value layout as coordinates: ``coords[t, v]`` is the tile coordinate
  of value ``v`` of thread ``t`` (``tv(t, v)`` split column-major), separated, where possible, into a
  per-thread base (one `Fit` per dimension) plus a per-value constant offset.
* vector runs (`vector_width`), replicated holders (`holder_mask`), register gathers (`gather_slots`),
  reductions (`reduce_groups`) and the ``ldmatrix``/``stmatrix`` plan (`plan_matrix_copy`, which lane holds which
  element of a matrix with or without ``.trans``: `argus.atoms.copy.matrix_holder`): each checks its
  precondition for every thread, so the generated code is correct wherever it is emitted at all.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from argus.atoms.copy import matrix_holder
from argus.backend.cuda.codegen.cexpr import add, layout_at
from argus.ir.nodes import Buffer
from argus.layout import ComposedLayout, Layout, Swizzle, coalesce, flatten

# --- fitting functions of the thread index ---------------------------------------------------------


def digits(n: int, odd_position: int | None = None) -> tuple[int, ...]:
    """A mixed radix for indices below `n`: one binary digit per factor of two and the odd rest as one
    digit, placed after `odd_position` binary digits (default: last; ``384 -> (2, 2, 2, 2, 2, 2, 2, 3)``)."""
    twos = (n & -n).bit_length() - 1 if n > 0 else 0
    odd = n >> twos
    if odd == 1:
        return (2,) * twos
    position = twos if odd_position is None else odd_position
    return (2,) * position + (odd,) + (2,) * (twos - position)


def _evaluate(shapes: tuple[int, ...], strides: tuple[int, ...], x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    prefix = 1
    for s, d in zip(shapes, strides, strict=True):
        out += ((x // prefix) % s) * d
        prefix *= s
    return out


@dataclass(frozen=True)
class Fit:
    """``f(x) = layout(x) + constant`` for ``0 <= x < domain``."""

    layout: Layout
    constant: int
    domain: int

    def c(self, x: str) -> str:
        """C text for ``f(x)``."""
        return add(layout_at(self.layout, x, self.domain), self.constant)

    @property
    def is_constant(self) -> bool:
        return all(d == 0 for d in flatten(self.layout.stride))

    def same_function(self, other: Fit) -> bool:
        return self.layout == other.layout and self.domain == other.domain


def fit(values: np.ndarray) -> Fit | None:
    """A `Fit` with ``fit(x) == values[x]`` for every ``x``, or None when `values` is not additive over the
    digits of its index (binary digits, with the odd factor of the length tried at every position)."""
    values = np.asarray(values, dtype=np.int64)
    n = len(values)
    constant = int(values[0]) if n else 0
    f = values - constant
    if n <= 1:
        return Fit(Layout(1, 0), constant, max(n, 1))
    twos = (n & -n).bit_length() - 1
    x = np.arange(n, dtype=np.int64)
    for position in range(twos, -1, -1) if n >> twos > 1 else (None,):
        shapes = digits(n, position)
        strides: list[int] = []
        prefix = 1
        for s in shapes:
            strides.append(int(f[prefix]) if prefix < n else 0)
            prefix *= s
        if np.array_equal(_evaluate(shapes, tuple(strides), x), f):
            return Fit(coalesce(Layout(shapes, tuple(strides))), constant, n)
    return None


# --- vectorized layout evaluation ------------------------------------------------------------------


def _index(layout: Layout, x: np.ndarray) -> np.ndarray:
    return _evaluate(tuple(flatten(layout.shape)), tuple(flatten(layout.stride)), x)


def layout_offsets(layout: Layout | ComposedLayout, coords: list[np.ndarray]) -> np.ndarray:
    """``layout(c0, c1, ...)`` for arrays of coordinates (one per top-level mode), element by element:
    the same function `Layout.__call__`/`ComposedLayout.__call__` compute, swizzle included."""
    if isinstance(layout, ComposedLayout):
        o = layout_offsets(layout.outer, coords) + layout.offset
        inner = layout.inner
        if isinstance(inner, Swizzle):
            bits = o & inner.yyy_mask
            return o ^ (bits >> inner.shift if inner.shift >= 0 else bits << -inner.shift)
        return _index(inner, o)
    modes = list(layout) if isinstance(layout.shape, tuple) else [layout]
    if len(modes) != len(coords):
        raise ValueError(f"layout {layout} has {len(modes)} modes, got {len(coords)} coordinates")
    out = np.zeros_like(coords[0], dtype=np.int64)
    for mode, c in zip(modes, coords, strict=True):
        out = out + _index(mode, np.asarray(c, dtype=np.int64))
    return out


def colmajor_coords(shape: tuple[int, ...], index: np.ndarray) -> np.ndarray:
    """Column-major tile indices -> coordinates, stacked on a new last axis."""
    out = []
    rest = np.asarray(index, dtype=np.int64)
    for s in shape:
        out.append(rest % s)
        rest = rest // s
    return np.stack(out, axis=-1) if out else np.zeros(rest.shape + (0,), dtype=np.int64)


# --- fragments -------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Placement:
    """Where a fragment's elements are, per thread.

    Attributes:
        buffer: the fragment.
        shape: its tile shape.
        threads: threads that hold it.
        values: values per thread.
        index: ``(threads, values)`` column-major tile index ``tv(t, v)``.
        coords: ``(threads, values, rank)`` tile coordinates.
        base: per dimension, ``coords[t, 0, d]`` as a `Fit` over the thread index, when every value's
            coordinate is that base plus a per-value constant (`offsets`); None otherwise.
        offsets: ``(values, rank)``: ``coords[0, v] - coords[0, 0]``.
        thread_index: ``tv(t, 0)`` as a `Fit` (always exists: it is the thread mode of ``tv``).
        value_index: ``(values,)``: ``tv(0, v) - tv(0, 0)``.
    """

    buffer: Buffer
    shape: tuple[int, ...]
    threads: int
    values: int
    index: np.ndarray
    coords: np.ndarray
    base: tuple[Fit, ...] | None
    offsets: np.ndarray
    thread_index: Fit
    value_index: np.ndarray

    @property
    def separable(self) -> bool:
        return self.base is not None


@functools.lru_cache(maxsize=512)
def placement(buffer: Buffer) -> Placement:
    """The `Placement` of a fragment (cached per buffer object)."""
    tv = buffer.tv
    if tv is None or buffer.threads is None:
        raise ValueError(f"{buffer.name} is not a fragment")
    threads, values = buffer.threads, buffer.values_per_thread
    shape = buffer.static_shape
    thread_part = np.array([tv[0](t) for t in range(threads)], dtype=np.int64)
    value_part = np.array([tv[1](v) for v in range(values)], dtype=np.int64)
    index = thread_part[:, None] + value_part[None, :]
    coords = colmajor_coords(shape, index)
    offsets = coords[0] - coords[0, 0]
    base: tuple[Fit, ...] | None = None
    if np.array_equal(coords, coords[:, :1, :] + offsets[None, :, :]):
        fits = [fit(coords[:, 0, d]) for d in range(len(shape))]
        if all(f is not None for f in fits):
            base = tuple(f for f in fits if f is not None)
    thread_fit = fit(thread_part)
    if thread_fit is None:  # a layout's mode is additive over its own digits, which need not be ours
        thread_fit = Fit(coalesce(tv[0]), 0, threads)
    return Placement(
        buffer=buffer,
        shape=shape,
        threads=threads,
        values=values,
        index=index,
        coords=coords,
        base=base,
        offsets=offsets,
        thread_index=thread_fit,
        value_index=value_part - value_part[0],
    )


def vector_width(coords: np.ndarray, run_dim: int, limit: int, aligned: bool = True) -> int:
    """The largest power of two ``V <= limit`` such that every thread's values ``k*V .. k*V+V-1`` are
    ``V`` consecutive elements along `run_dim` (same coordinate in every other dimension), the first at
    a coordinate divisible by ``V`` when `aligned`. ``coords`` is ``(threads, values, rank)``."""
    values = coords.shape[1]
    width = 1
    while width * 2 <= limit and values % (width * 2) == 0:
        width *= 2
    step = np.zeros(coords.shape[2], dtype=np.int64)
    step[run_dim] = 1
    while width > 1:
        runs = coords.reshape(coords.shape[0], values // width, width, coords.shape[2])
        expected = runs[:, :, :1, :] + np.arange(width)[None, None, :, None] * step[None, None, None, :]
        ok = np.array_equal(runs, expected)
        if ok and aligned:
            ok = bool(np.all(runs[:, :, 0, run_dim] % width == 0))
        if ok:
            return width
        width //= 2
    return 1


@dataclass(frozen=True)
class HolderMask:
    """Threads ``t`` with ``t & mask == 0`` and ``t >> twos == 0`` (when `odd_zero`) are the first to
    hold each of their elements; the others hold copies."""

    mask: int
    odd_zero: bool
    twos: int

    def c(self, tid: str) -> str | None:
        parts = []
        if self.mask:
            parts.append(f"({tid} & {self.mask}) == 0")
        if self.odd_zero:
            parts.append(f"{tid} < {1 << self.twos}")
        return " && ".join(parts) if parts else None


def holder_mask(p: Placement) -> HolderMask | None:
    """For a fragment whose elements are held by several threads (stride-0 thread modes), the threads
    that hold each element first; None when every thread must write (no replication, or replication
    that is not a digit pattern of the thread index)."""
    keys = p.index  # (threads, values): the tile element each value is
    first: dict[int, int] = {}
    for t in range(p.threads):
        for k in keys[t]:
            first.setdefault(int(k), t)
    is_first = np.array([all(first[int(k)] == t for k in keys[t]) for t in range(p.threads)])
    is_copy = np.array([all(first[int(k)] != t for k in keys[t]) for t in range(p.threads)])
    if not np.all(is_first | is_copy) or np.all(is_first):
        return None
    shapes = digits(p.threads)
    twos = sum(1 for s in shapes if s == 2)
    mask = 0
    for b in range(twos):
        if not is_first[1 << b]:
            mask |= 1 << b
    odd_zero = len(shapes) > twos and not is_first[1 << twos]
    t = np.arange(p.threads)
    predicted = (t & mask) == 0
    if odd_zero:
        predicted &= t < (1 << twos)
    if not np.array_equal(predicted, is_first):
        return None
    return HolderMask(mask, odd_zero, twos)


def gather_slots(dst: Buffer, src: Buffer, axes: tuple[int, ...]) -> np.ndarray | None:
    """For every value ``j`` of `dst`, a value index of `src` that holds, in every thread, the element
    ``dst[j]`` needs (`src` broadcast along `axes` of `dst`); the highest such index, as the interpreter
    picks; None when no single index works for all threads."""
    pd, ps = placement(dst), placement(src)
    keep = [d for d in range(len(pd.shape)) if d not in axes]
    need_coords = pd.coords[:, :, keep]  # (threads, Vd, rank_src)
    need = np.zeros(need_coords.shape[:2], dtype=np.int64)
    mult = 1
    for i, s in enumerate(ps.shape):
        need += need_coords[:, :, i] * mult
        mult *= s
    match = np.all(ps.index[:, None, :] == need[:, :, None], axis=0)  # (Vd, Vs): slot works in every thread
    slots = np.full(pd.values, -1, dtype=np.int64)
    for j in range(pd.values):
        hits = np.nonzero(match[j])[0]
        if len(hits) == 0:
            return None
        slots[j] = hits[-1]
    return slots


def reduce_groups(dst: Buffer, src: Buffer, axis: int) -> list[list[int]] | None:
    """For every value ``j`` of the reduction result `dst`, the values of `src` (2-D) each thread combines
    into it (those on the row, for ``axis=1``, or column that ``dst[j]`` is); None when the sets differ
    between threads."""
    pd, ps = placement(dst), placement(src)
    key = ps.coords[:, :, 0] if axis == 1 else ps.coords[:, :, 1]  # (threads, Vs)
    want = pd.index  # (threads, Vd): the kept coordinate each result value is
    match = key[:, None, :] == want[:, :, None]  # (threads, Vd, Vs)
    if not np.all(match == match[:1]):
        return None
    return [list(np.nonzero(match[0, j])[0]) for j in range(pd.values)]


# --- ldmatrix / stmatrix ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixInstruction:
    """One ``ldmatrix``/``stmatrix`` ``.x{num}``: fragment registers `registers` (32-bit, two 16-bit
    values each) are matrices ``0..num-1``; thread ``t`` supplies the address of the row whose first
    element has window coordinates ``row_start[d](t)``."""

    num: int
    trans: bool
    registers: tuple[int, ...]
    row_start: tuple[Fit, ...]


def _matrix_ok(offsets: np.ndarray, p: int, trans: bool) -> bool:
    """Whether register `p` of every warp is one 8x8 matrix of 16-byte rows (`offsets`: ``(S, threads,
    values)`` element offsets in shared memory, for every value of the dropped coordinates)."""
    r = np.arange(8)[:, None]
    e = np.arange(8)[None, :]
    lane, half = matrix_holder(r, e, trans)  # who holds element e of row r
    start_lane, start_half = matrix_holder(r + 0 * e, 0 * e, trans)  # who holds the row's first element
    threads = offsets.shape[1]
    for w in range(threads // 32):
        warp = offsets[:, 32 * w : 32 * w + 32, 2 * p : 2 * p + 2]  # (S, 32, 2)
        values = warp[:, lane, half]  # (S, 8 rows, 8 elements)
        starts = warp[:, start_lane, start_half]
        if not np.array_equal(values, starts[:, :, :1] + e[None, :, :]):
            return False
        if np.any(starts[:, :, 0] % 8):
            return False
    return True


def plan_matrix_copy(p: Placement, offsets: np.ndarray) -> list[MatrixInstruction] | str:
    """The ``ldmatrix``/``stmatrix`` instructions that move fragment `p` to or from shared memory, or why
    there are none. `offsets` is ``(S, threads, values)``: the shared-memory element offset of each
    fragment value for each of the ``S`` possible values of the window's dropped (stage) coordinates."""
    if p.threads % 32:
        return f"the fragment is spread over {p.threads} threads, not whole warps"
    if p.values % 2:
        return f"each thread holds {p.values} values; 16-bit matrices pack them in pairs"
    registers = p.values // 2
    orientation: list[bool | None] = []
    for reg in range(registers):
        if _matrix_ok(offsets, reg, False):
            orientation.append(False)
        elif _matrix_ok(offsets, reg, True):
            orientation.append(True)
        else:
            return (
                f"register {reg} (values {2 * reg}, {2 * reg + 1}) of each thread is not one row/column pair of an "
                "8x8 matrix of 16-byte shared-memory rows"
            )
    instructions: list[MatrixInstruction] = []
    reg = 0
    while reg < registers:
        trans = bool(orientation[reg])
        num = 1
        for candidate in (4, 2):
            group = orientation[reg : reg + candidate]
            if len(group) == candidate and all(o == trans for o in group):
                num = candidate
                break
        regs = tuple(range(reg, reg + num))
        row_start = []
        t = np.arange(p.threads)
        lane, warp = t % 32, t // 32
        matrix, row = (lane // 8) % num, lane % 8
        first_lane, first_half = matrix_holder(row, 0, trans)  # who holds the first element of the row lane t addresses
        holder = 32 * warp + first_lane
        value = 2 * np.array(regs)[matrix] + first_half
        coords = p.coords[holder, value]  # (threads, rank)
        for d in range(coords.shape[1]):
            f = fit(coords[:, d])
            if f is None:
                return "the row addresses are not an additive function of the thread index"
            row_start.append(f)
        instructions.append(MatrixInstruction(num, trans, regs, tuple(row_start)))
        reg += num
    return instructions


def power_of_two_at_most(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def gcd_all(values: list[int]) -> int:
    out = 0
    for v in values:
        out = math.gcd(out, int(v))
    return out
