"""Where things are, as C: windows of global and shared buffers, a thread's fragment coordinates, and the runs
of a window spread over the scope's threads.

* `Window` — a window (`TileRef`) of a global or shared buffer: buffer coordinates from window coordinates,
  global offsets through the tensor's strides with bounds masks and vector-alignment conditions, shared
  pointers through the buffer's `argus.layout` layout (swizzle included), and the shared offsets of window
  coordinates enumerated over every stage (to prove contiguity, ``ldmatrix`` rows, TMA boxes, ``wgmma``
  descriptors);
* `fragment_coords` / `base_coords` — the tile coordinates of a thread's fragment values, declared once per
  dimension as a layout of the thread index (`placement`);
* `block_width` / `distribute` — the widest vector run every side of a block-wide copy can move, and the loop
  that spreads a window's runs over the scope's threads;
* `holders_only`, `uniform_condition` — the guards those accesses need.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from argus.backend.cuda.codegen import placement as pl
from argus.backend.cuda.codegen.cexpr import add, divisor, layout_at_coords, mul, paren, uses_swizzle
from argus.backend.cuda.codegen.context import Context
from argus.ir.expr import BinaryOp, BinOp, Const, Expr
from argus.ir.nodes import Space, TileRef

#: Most combinations of a shared window's dropped (stage) coordinates enumerated to prove a layout fact.
MAX_STAGE_COMBINATIONS = 256


def kept(ref: TileRef) -> tuple[int, ...]:
    """The buffer dimension of each window dimension, in window order (`TileRef.kept` where it exists)."""
    dims = getattr(ref, "kept", None)
    if dims is not None:
        return tuple(dims)
    return tuple(d for d in range(len(ref.extent)) if d not in ref.dropped)


def wide_product(e: Expr | int, cx: Context) -> str:
    """`e` (a stride: a product of sizes and constants) as C evaluated in 64 bits: the leftmost factor of a product
    chain cast to ``long long`` (C++ then widens every multiplication after it); a constant or a single size as it
    is (its product with a ``long long`` coordinate is 64-bit already)."""
    if not (isinstance(e, BinOp) and e.op == BinaryOp.MUL):
        return cx.expr(e)
    factors: list[Expr | int] = []
    stack: list[Expr | int] = [e]
    while stack:  # the product's factors, left to right
        f = stack.pop()
        if isinstance(f, BinOp) and f.op == BinaryOp.MUL:
            stack += [f.rhs, f.lhs]
        else:
            factors.append(f)
    first, *rest = (cx.expr(f) for f in factors)
    return " * ".join([f"static_cast<long long>({first})", *(paren(r) for r in rest)])


def row_major(shape: tuple[Expr | int, ...]) -> tuple[Expr | int, ...]:
    """Row-major element strides of `shape` (ints or expressions)."""
    strides: list[Expr | int] = []
    acc: Expr | int = 1
    for d in reversed(shape):
        strides.append(acc)
        acc = acc * d
    return tuple(reversed(strides))


def is_row_major(strides: tuple[Expr | int, ...] | None, shape: tuple[Expr | int, ...]) -> bool:
    """Whether a tensor's `strides` (None: the DSL's default) are row-major for `shape`."""
    return strides is None or tuple(map(str, strides)) == tuple(map(str, row_major(shape)))


class Window:
    """A window of a global or shared buffer as C: buffer coordinates from window coordinates."""

    def __init__(self, cx: Context, ref: TileRef) -> None:
        self.cx = cx
        self.ref = ref
        self.buffer = ref.buffer
        self.kept = kept(ref)
        self.origin = tuple(ref.origin)
        self.origin_c = [cx.expr(o) for o in self.origin]
        self.shape = ref.shape
        if ref.buffer.space == Space.GLOBAL:
            buf = ref.buffer
            strides = buf.strides if buf.strides is not None else row_major(buf.shape)
            self.strides = tuple(strides)
            self.shape_c = [cx.expr(s) for s in buf.shape]
            for d, b in enumerate(ref.bound or ()):  # a bounded window masks at min(extent, bound)
                if b is not None:
                    self.shape_c[d] = f"min({self.shape_c[d]}, {cx.expr(b)})"
            self.strides_c = [cx.expr(s) for s in self.strides]
        self.layout = ref.layout if getattr(ref, "layout", None) is not None else ref.buffer.layout

    @property
    def is_global(self) -> bool:
        return self.buffer.space == Space.GLOBAL

    def buffer_coords(self, window: list[str]) -> list[str]:
        out = list(self.origin_c)
        for i, d in enumerate(self.kept):
            out[d] = add(self.origin_c[d], window[i])
        return out

    def hoist(self, coords: list[str]) -> list[str]:
        """Name each compound buffer coordinate once (``const int a_row = bm * 64 + row;``) so that the offset and the
        bounds test of the access that follows read the name instead of repeating the expression."""
        out = list(coords)
        prefix = self.cx.buffer_name(self.buffer).lower()
        dims = ["row", "col"] if len(coords) == 2 else [f"c{d}" for d in range(len(coords))]
        for d, c in enumerate(coords):
            if c.isidentifier() or c.lstrip("-").isdigit():
                continue
            name = self.cx.local(f"{prefix}_{dims[d]}")
            self.cx.line(f"const int {name} = {c};")
            out[d] = name
        return out

    # --- global ---------------------------------------------------------------------------------------
    def run_dim(self) -> int | None:
        """The window dimension runs of consecutive elements go along (the last one, when its buffer
        dimension is contiguous), or None."""
        if not self.kept:
            return None
        d = self.kept[-1]
        stride = self.strides[d]
        unit = stride == 1 or (isinstance(stride, Const) and stride.value == 1)
        return len(self.kept) - 1 if unit else None

    def offset(self, coords: list[str]) -> str:
        """The element offset of buffer coordinates `coords`.

        In a kernel generated with wide offsets (`Switches.wide_offsets`, `GeneratedSource.wide`) every product of a
        coordinate and a stride, and every stride that is a product of sizes (`wide_product`), is computed in ``long
        long``, so that a tensor of more than 2^31 elements is addressed whole (a stride such as ``P * D * 3`` of
        3.2e9 elements, computed in ``int``, wrapped around and faulted; level 1's problem 83, 2026-11-29). Otherwise
        the offset's outermost term is a ``long long`` product and the rest ``int`` arithmetic, which the runtime
        launches only when every tensor argument has at most 2^31 elements (`argus.runtime.arguments.wide_tensor`): an
        element inside the tensor then has an offset below 2^31 and so has every term of it (coordinates and strides
        are not negative there; a masked element's offset is never dereferenced). Keeping the outermost term wide
        (the pre-2026-11-29 form) lets the compiler form that part of the address once: all-``int`` offsets took 127
        registers where this form takes 70. The 64-bit form costs registers wherever many addresses are live at once:
        160 instead of 70 per thread in KernelBench's 3-d max pooling (benchmarks/results/2026-11-30-level1-judge/)."""
        wide = self.cx.switches.wide_offsets
        terms = []
        for c, s, e in zip(coords, self.strides_c, self.strides, strict=True):
            if s == "0" or c == "0":
                continue
            if s == "1":
                terms.append(c)
            elif wide:
                terms.append(f"static_cast<long long>({c}) * {paren(wide_product(e, self.cx))}")
            elif not terms:  # the outermost term in 64 bits: the compiler then forms its pointer once per block
                terms.append(f"static_cast<long long>({c}) * {paren(s)}")
            else:
                terms.append(f"{paren(c)} * {paren(s)}")
        if len(terms) > 1 and not terms[0].startswith("static_cast"):
            terms[0] = f"static_cast<long long>({terms[0]})"
        return add(*terms) if terms else "0"

    def dim_in_bounds(self, d: int, coord: str) -> str | None:
        """C condition that `coord` is inside buffer dimension `d`, or None when statically true."""
        extent = self.buffer.shape[d]
        bounded = self.ref.bound is not None and self.ref.bound[d] is not None
        if isinstance(extent, int) and not bounded:
            origin = self.origin[d]
            window_extent = self.ref.extent[d]
            if isinstance(origin, int) and 0 <= origin and origin + window_extent <= extent:
                return None
        return f"argus::in_range({coord}, {self.shape_c[d]})"

    def mask(self, coords: list[str], run_buffer_dim: int) -> str:
        """The masking arguments of a run along `run_buffer_dim` starting at `coords`: ``row_ok`` (every other
        coordinate in bounds), the run's first coordinate and the extent of its dimension (see `prelude`)."""
        self.cx.use("bounds")
        others = [c for d, x in enumerate(coords) if d != run_buffer_dim and (c := self.dim_in_bounds(d, x))]
        return f"{' && '.join(others) or 'true'}, {coords[run_buffer_dim]}, {self.shape_c[run_buffer_dim]}"

    def vector_conditions(self, width: int) -> list[str] | None:
        """Run-time conditions (C text) under which every run of `width` elements of this window starts
        at an address aligned to the run (given an aligned base pointer); None when it can never be."""
        if width == 1:
            return []
        run = self.run_dim()
        if run is None:
            return None
        run_d = self.kept[run]
        conditions = []
        for d, stride in enumerate(self.strides):
            if d == run_d:
                continue
            if isinstance(stride, int):
                if stride % width:
                    return None
            elif divisor(stride) % width:
                conditions.append(f"{paren(self.cx.expr(stride))} % {width} == 0")
        origin = self.origin[run_d]
        if divisor(origin) % width:
            if isinstance(origin, int):
                return None
            conditions.append(f"{paren(self.cx.expr(origin))} % {width} == 0")
        return conditions

    # --- shared ---------------------------------------------------------------------------------------
    def shared_offset(self, coords: list[str]) -> str:
        if uses_swizzle(self.layout):
            self.cx.use("swizzle")
        return layout_at_coords(self.layout, coords)

    def pointer(self, coords: list[str]) -> str:
        return f"{self.cx.buffer_name(self.buffer)} + {paren(self.shared_offset(coords))}"

    def stage_values(self) -> list[dict[int, int]] | None:
        """Every assignment of the dropped dimensions' coordinates (their extents are static), or None
        when there are too many, or a kept dimension's origin is not a constant."""
        if any(not isinstance(self.origin[d], int) for d in self.kept):
            return None
        dropped = [d for d in range(len(self.origin)) if d not in self.kept]
        shape = self.buffer.static_shape
        combos = math.prod(shape[d] for d in dropped)
        if combos > MAX_STAGE_COMBINATIONS:
            return None
        out = []
        for values in itertools.product(*[range(shape[d]) for d in dropped]):
            assignment = dict(zip(dropped, values, strict=True))
            for d in dropped:  # a constant origin is the only value
                if isinstance(self.origin[d], int):
                    assignment[d] = int(self.origin[d])
            out.append(assignment)
        unique = {tuple(sorted(a.items())) for a in out}
        return [dict(u) for u in sorted(unique)]

    def offsets_of(self, window_coords: np.ndarray, layout: Any = None) -> np.ndarray | None:
        """Shared element offsets of window coordinates ``(..., rank)`` for every stage assignment:
        ``(S, ...)``; None when not enumerable."""
        stages = self.stage_values()
        if stages is None:
            return None
        out = []
        for assignment in stages:
            coords = []
            for d in range(len(self.origin)):
                if d in self.kept:
                    i = self.kept.index(d)
                    coords.append(int(self.origin[d]) + window_coords[..., i])
                else:
                    coords.append(np.full(window_coords.shape[:-1], assignment[d], dtype=np.int64))
            out.append(pl.layout_offsets(self.layout if layout is None else layout, coords))
        return np.stack(out)


# --- a thread's fragment coordinates ----------------------------------------------------------------------


def fragment_coords(cx: Context, p: pl.Placement, only: int | None = None) -> Callable[[int], list[str]]:
    """Declare the thread's base tile coordinates; return value -> C tile coordinates of that value.

    Separable placements get one ``const int`` per dimension (a layout of ``tid``) and constant
    per-value offsets; others evaluate ``tv``'s thread part at ``tid`` and split each value's
    column-major tile index into coordinates. With `only`, just that dimension is needed."""
    rank = len(p.shape)
    if p.base is not None:
        bases = base_coords(cx, p.base, only)

        def at(v: int) -> list[str]:
            return [add(bases[d], int(p.offsets[v, d])) for d in range(rank)]

        return at
    var = cx.local("index")
    cx.line(f"const int {var} = {p.thread_index.c(cx.tid)};  // tv's thread part: a column-major tile index")

    def at_generic(v: int) -> list[str]:
        index = add(var, int(p.value_index[v]))
        out, prefix_product = [], 1
        for d, extent in enumerate(p.shape):
            term = index if prefix_product == 1 else f"{paren(index)} / {prefix_product}"
            if d < rank - 1:
                term = f"{paren(term)} % {extent}"
            out.append(term)
            prefix_product *= extent
        return out

    return at_generic


def base_coords(cx: Context, fits: tuple[pl.Fit, ...], only: int | None = None, comment: str = "") -> list[str]:
    """C text of a thread's base tile coordinates, one `Fit` of ``tid`` per dimension: a ``const int`` declared
    for each that varies (only dimension `only` when given), the constant itself for the others."""
    rank = len(fits)
    names = {1: ["i"], 2: ["row", "col"]}.get(rank, [f"c{d}" for d in range(rank)])
    bases: list[str] = []
    for d, f in enumerate(fits):
        if f.is_constant or (only is not None and d != only):
            bases.append(str(f.constant))
            continue
        var = cx.local(names[d])
        cx.line(f"const int {var} = {f.c(cx.tid)};{comment}")
        bases.append(var)
    return bases


@contextmanager
def holders_only(cx: Context, p: pl.Placement) -> Iterator[None]:
    """Stores from a replicated fragment: only the first thread holding each element writes it."""
    mask = pl.holder_mask(p)
    guard = mask.c(cx.tid) if mask is not None else None
    if guard is None:
        yield
        return
    with cx.block(f"if ({guard}) {{  // one thread of each group that holds the same elements stores them"):
        yield


def uniform_condition(cx: Context, conditions: list[str], width: int) -> str:
    """A ``const bool`` of the vector-alignment `conditions` (C text to test), or ``"true"``."""
    if width == 1 or not conditions:
        return "true"
    var = cx.local("vector_ok")
    cx.line(f"const bool {var} = {' && '.join(conditions)};  // every {width}-element run is aligned")
    return var


# --- runs of a window over the scope's threads ------------------------------------------------------------


def block_width(shape: tuple[int, ...], windows: list[Window], limit: int) -> tuple[int, list[str]]:
    """The widest run (power of two, <= `limit`, dividing the last extent) every side can move as one
    aligned vector, and the run-time conditions that keeps it aligned on the global sides."""
    width = pl.power_of_two_at_most(min(limit, shape[-1]))
    while width > 1 and shape[-1] % width:
        width //= 2
    while width > 1:
        conditions: list[str] = []
        ok = True
        for w in windows:
            if w.is_global:
                conds = w.vector_conditions(width)
                if conds is None:
                    ok = False
                    break
                conditions += conds
            else:
                starts = run_starts(shape, width)  # (Q, rank) window coordinates
                offsets = w.offsets_of(starts[:, None, :] + _unit(len(shape), width)[None, :, :])
                if offsets is None or not _contiguous(offsets, width):
                    ok = False
                    break
        if ok:
            return width, conditions
        width //= 2
    return 1, []


def distribute(cx: Context, shape: tuple[int, ...], width: int, conditions: list[str], body: Callable) -> None:
    """Spread the window's runs over the scope's threads: thread ``tid`` takes runs ``tid + it *
    threads``; run ``q``'s window coordinates are row-major (the last dimension fastest, so that
    consecutive threads touch consecutive addresses). `body(coords, vec)` emits one run."""
    threads = cx.threads
    runs = math.prod(shape) // width
    iterations = -(-runs // threads)
    with cx.block():
        vec = uniform_condition(cx, conditions, width)
        q = cx.local("q")
        if iterations > 1:
            it = cx.local("it")
            cx.line("#pragma unroll")
            cx.open(f"for (int {it} = 0; {it} < {iterations}; ++{it}) {{")
            cx.line(f"const int {q} = {cx.tid} + {it} * {threads};")
        else:
            cx.line(f"const int {q} = {cx.tid};")
        guarded = runs % threads != 0
        if guarded:
            cx.open(f"if ({q} < {runs}) {{")
        rank = len(shape)
        names = {1: ["i"], 2: ["row", "col"]}.get(rank, [f"c{d}" for d in range(rank)])
        coords = ["0"] * rank
        rest = q
        for d in range(rank - 1, -1, -1):
            extent = shape[d] // width if d == rank - 1 else shape[d]
            if extent == 1:
                continue
            term = rest if d == 0 else f"{paren(rest)} % {extent}"
            var = cx.local(names[d])
            cx.line(f"const int {var} = {mul(term, width) if d == rank - 1 else term};")
            coords[d] = var
            rest = f"{paren(rest)} / {extent}"
        body(coords, vec)
        if guarded:
            cx.close()
        if iterations > 1:
            cx.close()


def shared_run_width(offsets: np.ndarray, limit: int) -> int:
    """Largest power-of-two run of consecutive fragment values that is contiguous and aligned in shared
    memory for every thread and stage (`offsets`: ``(S, threads, values)``)."""
    values = offsets.shape[2]
    width = 1
    while width * 2 <= limit and values % (width * 2) == 0:
        width *= 2
    while width > 1:
        runs = offsets.reshape(offsets.shape[0], offsets.shape[1], values // width, width)
        if np.array_equal(runs, runs[..., :1] + np.arange(width)) and not np.any(runs[..., 0] % width):
            return width
        width //= 2
    return 1


def run_starts(shape: tuple[int, ...], width: int) -> np.ndarray:
    """Window coordinates of the first element of every run of `width` along the last dimension."""
    grids = np.meshgrid(*[np.arange(s) for s in shape[:-1]], np.arange(0, shape[-1], width), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=-1)


def _unit(rank: int, width: int) -> np.ndarray:
    out = np.zeros((width, rank), dtype=np.int64)
    out[:, -1] = np.arange(width)
    return out


def _contiguous(offsets: np.ndarray, width: int) -> bool:
    """`offsets` ``(S, runs, width)``: each run contiguous and aligned to `width`."""
    return bool(np.array_equal(offsets, offsets[..., :1] + np.arange(width)) and not np.any(offsets[..., 0] % width))
