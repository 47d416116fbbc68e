"""The interpreter's machine: executes a traced `Kernel` on numpy arrays.

Model (what makes bugs visible):

* **Fragments** are ``(threads, values)`` arrays. Element ``(t, v)`` is tile element
  ``tv(t, v)``; copies and elementwise operations move data through these layouts.
* **MMA** (`Gemm`) reads operand and accumulator registers the way the instruction does: for
  every atom instance, lane ``l`` value ``a`` of the atom is register slot ``(l + group*atom_threads,
  a + atom_values * repeat)`` of the fragment, and means the element the *atom's* layout says
  (`argus.atoms.mma.slot_element`, the rule the DSL's layouts and the verifier use too). A
  fragment laid out any other way feeds the MMA the wrong elements.
* **Shared memory** is one flat array per buffer in physical order: every access goes through
  the buffer's layout, swizzle included. It starts poisoned with NaN (floats) or a sentinel.
* **cp.async** copies are queued in commit groups and land only at `AsyncWait`; reading their
  destination earlier reads the poison.
* Reductions combine a thread's own values, then partial results across lanes with XOR shuffles
  exactly over the lane offsets the IR records.

* **Warp roles** run as coroutines: a role yields whenever an mbarrier wait cannot complete, and the
  scheduler resumes the roles in order (the producer first, as far ahead as the barriers allow);
  a round in which no role can move is reported as a deadlock.
* **mbarriers** count arrivals and transaction bytes per phase; **TMA** loads land in shared memory
  only when the phase of the mbarrier they signal completes, so a consumer that does not wait, or
  waits on the wrong parity, reads poison or stale data.

Not modelled yet (an `InterpError` says so when met): TMA stores, named barriers between roles
(roles run in lockstep internally), branches whose condition differs between threads.

**Memory.** Every value is held as float64 (or int64), so the interpreter needs 8 bytes per element of every
tensor (a working copy of each), of one block's shared memory and of its threads' registers. `memory_needed`
computes that from the kernel and the problem size before anything is allocated, and `run_kernel` (like
`check_memory`, for a caller about to build the inputs) refuses a size over the memory budget (`memory_budget`:
``$ARGUS_INTERP_MAX_BYTES`` or a keyword, else 4 GiB or half the memory available, whichever is less) with
``INTERP_MEMORY_BUDGET``, instead of trying to allocate hundreds of GiB.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus.atoms import WARPGROUP_SIZE, Scope, get_atom
from argus.atoms.copy import ldmatrix_transposes, matrix_transpose
from argus.atoms.mma import group_origin, group_subtile, slot_count, slot_element
from argus.diagnostics import ArgusError
from argus.ir.expr import READ_ELEMENT, Expr, Var, evaluate, free_vars
from argus.ir.nodes import (
    FLOAT_MAP_OPS,
    Alloc,
    AsyncCommit,
    AsyncWait,
    Barrier,
    Broadcast,
    Buffer,
    Copy,
    Fence,
    Fill,
    For,
    Gemm,
    GroupBarrier,
    If,
    Kernel,
    Let,
    Map,
    MapOp,
    MbarrierArrive,
    MbarrierInit,
    MbarrierWait,
    Reduce,
    ReduceOp,
    Role,
    Space,
    Stmt,
    TileRef,
    ValueAssumption,
    WarpgroupTurn,
    WgmmaWait,
    map_compute_dtype,
    walk,
)
from argus.ir.tags import AssertTag, AssertTagEq, Tag
from argus.ir.types import DType, DTypeKind, f32, round_to

POISON_INT = -(2**31) + 7


class InterpError(ArgusError, RuntimeError):
    """The interpreter met something it cannot run (code ``INTERP_<DETAIL>``)."""


# --- the memory budget ------------------------------------------------------------------------------------------

#: The variable that sets the interpreter's memory budget: bytes, or with a binary unit (``512M``, ``16G``, ``16GiB``).
MAX_BYTES_ENV = "ARGUS_INTERP_MAX_BYTES"
#: The budget when neither `MAX_BYTES_ENV` nor the caller sets one (lowered to half the available memory).
DEFAULT_MAX_BYTES = 4 * 2**30
#: Bytes per element the interpreter holds: float64 for floats, int64 for integers.
VALUE_BYTES = 8

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str) -> int:
    """``"4096"`` -> 4096; ``"512M"`` / ``"512MiB"`` / ``"512 MB"`` -> 512 * 2**20 (units are binary); ``"1.5G"``
    -> 1.5 * 2**30. Raises `InterpError` ``INTERP_MEMORY_BUDGET_SETTING`` for anything else, or a size below 1."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([KMGT]?)(?:I?B)?\s*", text, flags=re.IGNORECASE)
    value = float(match.group(1)) * _UNITS[match.group(2).upper()] if match else 0.0
    if value < 1:
        raise InterpError(
            "INTERP_MEMORY_BUDGET_SETTING",
            f"cannot read {text!r} as a memory budget",
            f"give bytes or a size with a unit, e.g. {MAX_BYTES_ENV}=16G",
            requirement="a positive size: 4294967296, 512M, 16G, 16GiB",
            actual=text,
        )
    return int(value)


def _available_bytes() -> int | None:
    """``MemAvailable`` of /proc/meminfo (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_budget(max_bytes: int | str | None = None) -> int:
    """The interpreter's memory budget in bytes: `max_bytes` when given, else ``$ARGUS_INTERP_MAX_BYTES``, else the
    smaller of `DEFAULT_MAX_BYTES` and half of the memory available now."""
    if max_bytes is not None:
        return parse_bytes(str(max_bytes))
    if os.environ.get(MAX_BYTES_ENV, "").strip():
        return parse_bytes(os.environ[MAX_BYTES_ENV])
    available = _available_bytes()
    return min(DEFAULT_MAX_BYTES, available // 2) if available else DEFAULT_MAX_BYTES


def format_bytes(n: int) -> str:
    """``412316860416`` -> ``"384 GiB"``; ``1536`` -> ``"1.5 KiB"``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def _tensor_elements(kernel: Kernel, env: dict[Var, Any]) -> dict[str, int]:
    return {t.name: math.prod(_int(d, env) for d in t.shape) for t in kernel.tensors}


def memory_needed(
    kernel: Kernel,
    sizes: Mapping[str, int] | None = None,
    *,
    env: Mapping[Var, Any] | None = None,
    arguments: bool = False,
    argument_bytes: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """The bytes the interpreter allocates to run `kernel` at a problem size — `sizes` by shape-variable name
    (``{"M": 128, "N": 64, "K": 32}``) or `env` by variable — computed before anything is allocated:

    * ``tensors``: the working copy of every tensor (8 bytes an element);
    * ``write_back``: the largest tensor converted back to its array's type at the end (`argument_bytes` gives the
      arrays' item sizes by name; 8 when not given);
    * ``shared``: one block's shared-memory buffers; ``fragments``: its threads' registers (8 bytes a value);
    * ``arguments`` (with `arguments`): the tensors themselves, as float64 arrays, for a caller that has not
      built them yet (the library's inputs are float64).

    ``total`` is their sum. Raises `InterpError` ``INTERP_MISSING_SIZE`` when a shape variable has no size."""
    bound: dict[Var, Any] = dict(env or {})
    for t in kernel.tensors:
        for d in t.shape:
            if isinstance(d, Var) and d not in bound:
                if sizes is None or d.name not in sizes:
                    raise InterpError(
                        "INTERP_MISSING_SIZE",
                        f"{kernel.name}: no size for {d.name} (the shape of {t.name})",
                        f"give every shape variable, e.g. --shape {','.join(f'{v}=128' for v in _shape_vars(kernel))}",
                    )
                bound[d] = int(sizes[d.name])
    elements = _tensor_elements(kernel, bound)
    itemsize = dict(argument_bytes or {})
    shared = fragments = 0
    for stmt in walk(kernel.body):
        if isinstance(stmt, Alloc):
            b = stmt.buffer
            if b.space == Space.SHARED:
                size = b.layout.cosize() if hasattr(b.layout, "cosize") else math.prod(b.static_shape)
                shared += int(size) * VALUE_BYTES
            elif b.space == Space.FRAGMENT:
                fragments += int(b.threads) * int(b.values_per_thread) * VALUE_BYTES
    needed = {
        "tensors": sum(elements.values()) * VALUE_BYTES,
        "write_back": max((n * itemsize.get(name, VALUE_BYTES) for name, n in elements.items()), default=0),
        "shared": shared,
        "fragments": fragments,
    }
    if arguments:
        needed["arguments"] = sum(elements.values()) * VALUE_BYTES
    needed["total"] = sum(needed.values())
    return needed


def _shape_vars(kernel: Kernel) -> list[str]:
    names: list[str] = []
    for t in kernel.tensors:
        names += [d.name for d in t.shape if isinstance(d, Var) and d.name not in names]
    return names


def _refuse_over_budget(kernel: Kernel, needed: dict[str, int], budget: int, size_text: str) -> None:
    total = needed["total"]
    if total <= budget:
        return
    words = {
        "tensors": "working copies of the tensors",
        "write_back": "write-back",
        "shared": "a block's shared memory",
        "fragments": "a block's registers",
        "arguments": "the inputs themselves",
    }
    parts = ", ".join(f"{words.get(k, k)} {format_bytes(v)}" for k, v in needed.items() if k != "total" and v)
    raise InterpError(
        "INTERP_MEMORY_BUDGET",
        f"running {kernel.name} at {size_text} on the interpreter needs {format_bytes(total)} ({total} bytes: "
        f"{parts}; the interpreter holds every value as 8 bytes), more than its memory budget of "
        f"{format_bytes(budget)} ({budget} bytes)",
        "the interpreter checks correctness, which small and partial-tile sizes show as well as large ones: use "
        f"smaller --shape sizes; or raise the budget with {MAX_BYTES_ENV}={_round_up(total)} (or max_bytes=) "
        "where the machine has that much memory",
        requirement=f"at most {budget} bytes (the interpreter's memory budget)",
        actual=f"{total} bytes",
    )


def _round_up(n: int) -> str:
    """A budget with a unit at least `n` bytes: ``"400G"``."""
    for unit, size in (("T", 2**40), ("G", 2**30), ("M", 2**20)):
        if n >= size:
            return f"{math.ceil(n / size)}{unit}"
    return str(n)


def check_memory(
    kernel: Kernel, sizes: Mapping[str, int], *, max_bytes: int | str | None = None, arguments: bool = True
) -> int:
    """Refuse (`InterpError` ``INTERP_MEMORY_BUDGET``, stating the bytes needed, the budget and how to raise it) to
    run `kernel` at `sizes` when `memory_needed` (with the inputs a caller is about to build, by default) is over
    `memory_budget(max_bytes)`; otherwise return the bytes needed. Call it before building the inputs: it allocates
    nothing."""
    needed = memory_needed(kernel, sizes, arguments=arguments)
    size_text = ", ".join(f"{k}={v}" for k, v in sizes.items())
    _refuse_over_budget(kernel, needed, memory_budget(max_bytes), size_text)
    return needed["total"]


def check_assumptions(kernel: Kernel, sizes: Mapping[str, int]) -> None:
    """Refuse (`InterpError` ``INTERP_ASSUMPTION``, naming the assumption) to run `kernel` at `sizes` that violate
    one of its assumptions (``T.assume`` and the implicit ``1 <= size``): the kernel is verified and generated for
    the sizes they allow only, so a run outside them would answer a question nobody can rely on (the GPU runtime
    refuses the same sizes: ``RUNTIME_ASSUMPTION``)."""
    env = {v: int(sizes[v.name]) for v in kernel.shape_vars if v.name in sizes}
    for a in kernel.assumptions:
        if not free_vars(a) <= set(env):
            continue  # a size not given: the argument binding reports it
        if not bool(evaluate(a, env)):
            given = ", ".join(f"{k}={v}" for k, v in sizes.items())
            raise InterpError(
                "INTERP_ASSUMPTION",
                f"kernel {kernel.name} at {given} violates its assumption {a} (declared with T.assume: the kernel is "
                "verified and generated for those sizes only)",
                "pick sizes that satisfy it (pad the tensors), or use a kernel written for these sizes",
            )


def check_value_assumptions(kernel: Kernel, arrays: Mapping[str, np.ndarray], sizes: Mapping[Var, int]) -> None:
    """Refuse (`InterpError` ``INTERP_DATA_ASSUMPTION``, naming the tensor, the first violating index and its value)
    to run `kernel` on data that violates one of its ``T.assume_values`` declarations: the kernel is verified for the
    data they allow only. (The GPU runtime does not check them: there they are the caller's contract.)"""
    for va in kernel.value_assumptions:
        data = np.asarray(arrays[va.tensor.name])
        if data.size == 0:
            continue
        flat = data.reshape(-1)
        for value, side in ((va.lo, "lo"), (va.hi, "hi")):
            if value is None:
                continue
            limit = _int(value, dict(sizes))
            bad = flat < limit if side == "lo" else flat > limit
            if np.any(bad):
                i = int(np.argmax(bad))
                _refuse_data(kernel, va, data, i, f"is {'below' if side == 'lo' else 'above'} {limit}")
        if va.nondecreasing and flat.size > 1:
            bad = flat[1:] < flat[:-1]
            if np.any(bad):
                i = int(np.argmax(bad)) + 1
                _refuse_data(kernel, va, data, i, f"is less than {va.tensor.name}[{i - 1}] = {flat[i - 1]:g}")
        if va.counts_of is not None:  # checked after the segments' own declaration (nondecreasing from 0)
            ends = np.asarray(arrays[va.counts_of.name]).reshape(-1).astype(np.int64)
            rows = np.diff(np.concatenate([[0], ends]))
            want = np.cumsum(-(-rows // va.tile))
            bad = flat.astype(np.int64) != want
            if np.any(bad):
                i = int(np.argmax(bad))
                _refuse_data(
                    kernel, va, data, i, f"is not tile_counts({va.counts_of.name}, {va.tile})[{i}] = {want[i]}"
                )


def _refuse_data(kernel: Kernel, va: ValueAssumption, data: np.ndarray, i: int, why: str) -> None:
    """``INTERP_DATA_ASSUMPTION`` for flat element `i` of `data`, which violates `va` as `why` says."""
    index = ", ".join(str(int(x)) for x in np.unravel_index(i, data.shape))
    where = f" (declared at {va.loc})" if va.loc is not None else ""
    raise InterpError(
        "INTERP_DATA_ASSUMPTION",
        f"kernel {kernel.name}: {va.tensor.name}[{index}] = {data.reshape(-1)[i]:g} {why}, violating the declaration "
        f"{va.describe()} (T.assume_values{where}): the kernel is verified for such data only",
        "pass data that satisfies it (offsets as a cumulative sum of counts, argus.kernels.moe), or drop the "
        "declaration if the kernel does not rely on it",
    )


def _poison(dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.kind.value == "float":
        return np.full(shape, np.nan, dtype=np.float64)
    return np.full(shape, POISON_INT, dtype=np.int64)


def _round(dtype: DType, x: np.ndarray) -> np.ndarray:
    """Values stored into a buffer of `dtype`: floats round to nearest even; float values stored into an integer
    buffer truncate toward zero and saturate, NaN giving 0 (PTX ``cvt.rzi``, as the generated code converts);
    integer values (the poison of unwritten elements included) are kept."""
    if dtype.kind.value == "float":
        return np.asarray(round_to(dtype, np.asarray(x, dtype=np.float64)), dtype=np.float64)
    x = np.asarray(x)
    if dtype.is_integer and np.issubdtype(x.dtype, np.floating):
        out = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
        return np.clip(out, dtype.min_value, dtype.max_value).astype(np.int64)
    return x


@dataclass
class _Block:
    kernel: Kernel
    env: dict[Var, Any]
    globals_: dict[Buffer, np.ndarray]
    shared: dict[Buffer, np.ndarray] = field(default_factory=dict)
    fragments: dict[Buffer, np.ndarray] = field(default_factory=dict)
    async_open: list[tuple[Buffer, np.ndarray, np.ndarray]] = field(default_factory=list)
    async_groups: list[list[tuple[Buffer, np.ndarray, np.ndarray]]] = field(default_factory=list)
    mbarriers: dict[Buffer, list] = field(default_factory=dict)
    events: int = 0  # arrivals and phase completions so far (the scheduler's progress measure)
    concurrent: bool = False  # True while warp roles run
    # asynchronous MMAs (`Gemm.pending`) issued and not yet complete, oldest first, each with the environment it was
    # issued in; by id of the issuing role's environment (its warpgroups run in lockstep)
    wgmma_groups: dict[int, list[tuple[Gemm, dict]]] = field(default_factory=dict)
    # a kernel of 2-block clusters (`Kernel.cluster`): the other block of this one's cluster, and this block's rank
    peer: _Block | None = None
    rank: int = 0
    cluster_barriers: set[int] = field(default_factory=set)  # id() of the cluster mbarrier buffers initialised
    # a kernel with group barriers (`GroupBarrier`) runs every block together: a blocked block yields to the others
    together: bool = False


def _int(e: Expr | int, env: dict[Var, Any]) -> int:
    if isinstance(e, int):
        return e
    value = evaluate(e, env)
    if isinstance(value, np.ndarray):
        if value.size and np.all(value == value.flat[0]):
            return int(value.flat[0])
        raise InterpError("INTERP_DIVERGENT", f"{e} differs between threads where one value is needed")
    return int(value)


def _tile_coords(shape: tuple[int, ...], indices: np.ndarray) -> list[np.ndarray]:
    """Column-major tile indices -> per-dimension coordinates."""
    out = []
    rest = indices
    for s in shape:
        out.append(rest % s)
        rest = rest // s
    return out


def _tv_indices(buffer: Buffer) -> np.ndarray:
    """``(threads, values)`` array of tile indices of a fragment."""
    tv = buffer.tv
    values = tv[1].size()
    fast = _layout_at_indices(tv, np.arange(buffer.threads)[:, None] + tv[0].size() * np.arange(values)[None, :])
    if fast is not None and buffer.threads <= tv[0].size():
        return fast
    return np.array([[tv(t, v) for v in range(values)] for t in range(buffer.threads)], dtype=np.int64)


def _layout_at_indices(layout: Any, index: np.ndarray) -> np.ndarray | None:
    """``layout(i)`` for every 1-D index `i` of an int array (a plain layout of int shapes and strides: the
    index splits column-major over the flattened shape), or None for anything else. ``L(t, v)`` is
    ``L(t + size(L[0]) * v)`` for ``t < size(L[0])``."""
    from argus.layout import Layout, flatten

    if not isinstance(layout, Layout):
        return None
    shape, stride = flatten(layout.shape), flatten(layout.stride)
    if not all(isinstance(x, int) for x in (*shape, *stride)):
        return None
    out = np.zeros(index.shape, dtype=np.int64)
    rest = index.astype(np.int64)
    for i, (extent, step) in enumerate(zip(shape, stride, strict=True)):
        coord = rest if i == len(shape) - 1 else rest % extent  # the last mode takes the rest, as CuTe's
        out += coord * step
        rest = rest // extent
    return out


# Keyed by the buffers themselves (identity hashing): an id() could be reused by a new buffer.
_TV_CACHE: dict[Buffer, np.ndarray] = {}


def _indices(buffer: Buffer) -> np.ndarray:
    if buffer not in _TV_CACHE:
        _TV_CACHE[buffer] = _tv_indices(buffer)
    return _TV_CACHE[buffer]


def _window_coords(ref: TileRef, tile_coords: list[np.ndarray], env: dict[Var, Any]) -> list[np.ndarray]:
    """Buffer coordinates of window elements given their coordinates in the window's shape (an im2col source's:
    `_im2col_coords`)."""
    if ref.im2col is not None:
        return _im2col_coords(ref, tile_coords, env)
    if ref.gather is not None:
        return _gather_coords(ref, tile_coords, env)
    by_dim = dict(zip(ref.kept, tile_coords, strict=True))
    out = []
    for d, o in enumerate(ref.origin):
        origin = _int(o, env)
        out.append(np.full_like(tile_coords[0], origin) if d in ref.dropped else origin + by_dim[d])
    return out


def _gather_coords(ref: TileRef, tile_coords: list[np.ndarray], env: dict[Var, Any]) -> list[np.ndarray]:
    """Buffer coordinates of a gathered window's elements (`argus.ir.nodes.Gather`): row r is the tensor's row
    ``index[position + r]``; a position at or past the index's end gives the row past the tensor's end (the caller
    masks it: zero fill, as TMA does), the other dimensions origin + coordinate."""
    spec = ref.gather
    rows = tile_coords[0]
    positions = _int(spec.position, env) + rows
    length = _int(spec.index.shape[0], env)
    inside = (positions >= 0) & (positions < length)
    if length == 0:
        table = np.zeros_like(positions)
    else:
        table = np.asarray(env[READ_ELEMENT](spec.index, (np.clip(positions, 0, length - 1),)), dtype=np.int64)
    out = [np.where(inside, table, _int(ref.buffer.shape[0], env))]
    for d in range(1, len(ref.origin)):
        out.append(_int(ref.origin[d], env) + tile_coords[d])
    return out


def _im2col_coords(ref: TileRef, tile_coords: list[np.ndarray], env: dict[Var, Any]) -> list[np.ndarray]:
    """Buffer coordinates of an im2col source's (pixels, channels) window elements: row r's pixel from the TMA atom's
    traversal (`argus.atoms.tma.im2col_rows`, the model the hardware was checked against), channel origin + column.
    Pixels outside the tensor come back as such (the caller masks them: zero fill)."""
    from argus.atoms.errors import AtomError
    from argus.atoms.tma import Im2colBox, im2col_rows

    spec = ref.im2col
    shape = tuple(_int(x, env) for x in ref.buffer.shape)
    pixels, channels = ref.shape
    box = Im2colBox(spec.lower, spec.upper, spec.strides, pixels, channels)
    start = tuple(_int(o, env) for o in ref.origin[:-1])
    offsets = tuple(_int(o, env) for o in spec.offsets)
    try:
        rows, _ = im2col_rows(shape, box, start, offsets)
    except AtomError as err:
        raise InterpError("INTERP_IM2COL", f"an im2col load of {ref.buffer.name} from {start}: {err}") from None
    table = np.array(rows, dtype=np.int64)  # (pixels, 1 + spatial)
    r, c = tile_coords
    out = [table[r, d] for d in range(table.shape[1])]
    out.append(_int(ref.origin[-1], env) + c)
    return out


def _global_access(
    buf: Buffer, coords: list[np.ndarray], env: dict[Var, Any], bound: tuple | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(in-bounds mask, flat element index into the row-major global array); `bound` (a window's) masks the
    coordinates at or past it too."""
    shape = [_int(s, env) for s in buf.shape]
    mask = np.ones(coords[0].shape, dtype=bool)
    flat = np.zeros(coords[0].shape, dtype=np.int64)
    for c, s in zip(coords, shape, strict=True):
        mask &= (c >= 0) & (c < s)
    for c, b in zip(coords, bound or (), strict=False):
        if b is not None:
            mask &= c < _int(b, env)
    for c, s in zip(coords, shape, strict=True):
        flat = flat * s + np.where(mask, c, 0)
    return mask, flat


def _read_element(globals_: dict[Buffer, np.ndarray], buf: Buffer, index: tuple) -> Any:
    """The value of element `index` of global tensor `buf` (``offs[g]``): one value, or one per thread where an
    index differs between threads; an index outside the tensor is an error (`INTERP_ELEMENT_OOB`), as the
    generated code would read memory that is not the tensor's."""
    data = globals_[buf]
    idx = [np.asarray(i, dtype=np.int64) for i in index]
    for d, (i, n) in enumerate(zip(idx, data.shape, strict=True)):
        if np.any((i < 0) | (i >= n)):
            bad = int(np.asarray(i).ravel()[np.argmax(((i < 0) | (i >= n)).ravel())])
            raise InterpError(
                "INTERP_ELEMENT_OOB",
                f"{buf.name}[...] read index {bad} of dimension {d}, outside its extent {n}",
                "guard the read with T.if_ or clamp the index (T.minimum / T.maximum)",
            )
    value = data[tuple(idx)]
    if buf.dtype.is_float:  # a scale held on the device: a value for fragment math
        return float(value) if np.ndim(value) == 0 else value.astype(np.float64)
    if np.ndim(value) == 0:
        return int(value)
    return value.astype(np.int64)


def _shared_offsets(buf: Buffer, coords: list[np.ndarray], view: Any = None) -> np.ndarray:
    layout = view if view is not None else buf.layout
    flat_coords = np.stack([np.asarray(c, dtype=np.int64).ravel() for c in coords], axis=1)
    # the same window is read at every iteration of a loop: evaluate each (layout, coordinates) once
    key = (layout, flat_coords.shape, hashlib.blake2b(flat_coords.tobytes(), digest_size=16).digest())
    offsets = _OFFSETS_CACHE.get(key)
    if offsets is None:
        # the layout algebra evaluates numpy arrays elementwise: one call for every row
        columns = tuple(flat_coords[:, i] for i in range(flat_coords.shape[1]))
        value = np.asarray(layout(columns), dtype=np.int64)
        offsets = np.array(np.broadcast_to(value, (flat_coords.shape[0],)), dtype=np.int64)
        offsets.setflags(write=False)  # shared by every caller: never modified in place
        if len(_OFFSETS_CACHE) >= _OFFSETS_CACHE_ENTRIES:
            _OFFSETS_CACHE.clear()
        _OFFSETS_CACHE[key] = offsets
    return offsets.reshape(coords[0].shape)


_OFFSETS_CACHE: dict[tuple, np.ndarray] = {}
_OFFSETS_CACHE_ENTRIES = 128  # a loop reads a few windows (one per stage): plenty


SCHEDULES = ("listed", "reversed")


class _Machine:
    def __init__(self, kernel: Kernel, arrays: dict[str, np.ndarray], schedule: str = "listed") -> None:
        if schedule not in SCHEDULES:
            raise InterpError("INTERP_SCHEDULE", f"unknown schedule {schedule!r}", f"one of {SCHEDULES}")
        self.kernel = kernel
        self.arrays = arrays
        self.schedule = schedule
        # group barriers: the ranks arrived in the current generation, by (counter tensor, index)
        self.generations: dict[tuple[int, int], set[int]] = {}

    # --- copies -------------------------------------------------------------------------------------------
    def _read(self, blk: _Block, ref: TileRef, tile_idx: np.ndarray, pad: float) -> np.ndarray:
        """Values of window elements with column-major window indices `tile_idx`."""
        buf = ref.buffer
        coords = _tile_coords(ref.shape, tile_idx)
        if buf.space == Space.GLOBAL:
            bcoords = _window_coords(ref, coords, blk.env)
            mask, flat = _global_access(buf, bcoords, blk.env, ref.bound)
            data = blk.globals_[buf].reshape(-1)
            return np.where(mask, data[flat], pad)
        if buf.space == Space.SHARED:
            bcoords = _window_coords(ref, coords, blk.env)
            return blk.shared[buf][_shared_offsets(buf, bcoords, ref.layout)]
        raise InterpError("INTERP_INTERNAL", f"_read from {buf.space}")

    def _write(self, blk: _Block, ref: TileRef, tile_idx: np.ndarray, values: np.ndarray, queue: bool) -> None:
        buf = ref.buffer
        coords = _tile_coords(ref.shape, tile_idx)
        values = _round(buf.dtype, values)
        if buf.space == Space.GLOBAL:
            bcoords = _window_coords(ref, coords, blk.env)
            mask, flat = _global_access(buf, bcoords, blk.env, ref.bound)
            data = blk.globals_[buf].reshape(-1)
            data[flat[mask]] = values[mask]
            return
        if buf.space == Space.SHARED:
            offsets = _shared_offsets(buf, _window_coords(ref, coords, blk.env), ref.layout)
            if queue:
                blk.async_open.append((buf, offsets.ravel(), values.ravel()))
            else:
                blk.shared[buf][offsets] = values
            return
        raise InterpError("INTERP_INTERNAL", f"_write to {buf.space}")

    def copy(self, blk: _Block, s: Copy) -> None:
        src, dst = s.src, s.dst
        if s.atom == "tma" or s.mbarrier is not None:
            raise InterpError(
                "INTERP_UNSUPPORTED",
                f"{s.loc}: TMA copies and mbarriers are not interpreted yet",
                "use atom='cp.async' or 'auto' for now",
            )
        if dst.space == Space.FRAGMENT:
            if not dst.is_whole():
                raise InterpError("INTERP_UNSUPPORTED", f"{s.loc}: copies into part of a fragment")
            idx = _indices(dst.buffer)
            if src.space == Space.FRAGMENT:
                blk.fragments[dst.buffer] = _round(dst.dtype, self._gather(blk, src, dst.buffer, ()))
                return
            if s.atom.startswith("ldmatrix"):
                idx = self._ldmatrix_indices(blk, s, idx)
            blk.fragments[dst.buffer] = _round(dst.dtype, self._read(blk, src, idx, s.pad))
            return
        if src.space == Space.FRAGMENT:  # atom "tma.store" too: its effect is this store's (the staging is its own)
            if not src.is_whole():
                raise InterpError("INTERP_UNSUPPORTED", f"{s.loc}: copies from part of a fragment")
            idx = _indices(src.buffer)
            values = blk.fragments[src.buffer]
            self._write(blk, dst, idx, values, queue=False)
            return
        # global/shared -> shared/global: element by element over the window
        n = int(np.prod(src.shape))
        idx = np.arange(n, dtype=np.int64)
        values = self._read(blk, src, idx, s.pad)
        self._write(blk, dst, idx, values, queue=(s.atom == "cp.async"))

    def _ldmatrix_indices(self, blk: _Block, s: Copy, idx: np.ndarray) -> np.ndarray:
        """The tile elements `ldmatrix` really delivers to each register slot.

        ``ldmatrix`` moves 8x8 matrices whose rows are 16-byte runs of shared memory; without
        ``.trans`` a lane receives two neighbours *along* a row, with ``.trans`` two neighbours
        *across* rows. The MMA operand wants its register pairs along K, so the right variant depends
        on which tile dimension is contiguous in shared memory (`argus.atoms.copy.ldmatrix_trans`).
        ``"ldmatrix"`` picks it; a forced variant that disagrees transposes every 8x8 block
        (`argus.atoms.copy.ldmatrix_transposes`, `argus.atoms.copy.matrix_transpose`).
        """
        dst = s.dst.buffer
        if dst.operand not in ("A", "B") or not (dst.atom or "").startswith("mma.m16n8k16"):
            raise InterpError(
                "INTERP_LDMATRIX_OPERAND",
                f"{s.loc}: ldmatrix fills mma.sync A/B operand fragments; {dst.name} is not one",
            )
        window = s.src

        def offset(coord: tuple[int, int]) -> int:
            point = [np.full(1, c, dtype=np.int64) for c in coord]
            point += [np.zeros(1, dtype=np.int64)] * (len(window.shape) - len(point))
            return _shared_offsets(window.buffer, _window_coords(window, point, blk.env), window.layout)[0]

        if not ldmatrix_transposes(s.atom, dst.operand, offset):
            return idx
        rows, cols = window.shape
        r, c = matrix_transpose(idx % rows, idx // rows)
        return r + rows * c

    # --- elementwise ------------------------------------------------------------------------------------
    def _gather(self, blk: _Block, ref: TileRef, like: Buffer, axes: tuple[int, ...]) -> np.ndarray:
        """The `ref` fragment's values arranged as `like`'s ``(threads, values)``: each thread reads
        the element it needs from its *own* registers (the tracer guaranteed it holds it)."""
        src = ref.buffer
        data = blk.fragments[src]
        if src.tv == like.tv and not axes:
            return data
        key = (src, like, axes)
        if key not in _GATHER_CACHE:
            dst_idx = _indices(like)
            dst_shape = like.static_shape
            src_shape = src.static_shape
            coords = _tile_coords(dst_shape, dst_idx)
            kept = [c for i, c in enumerate(coords) if i not in axes]
            src_idx = np.zeros_like(dst_idx)
            mult = 1
            for c, sz in zip(kept, src_shape, strict=True):
                src_idx += c * mult
                mult *= sz
            src_tile = _indices(src)
            slot = np.full(dst_idx.shape, -1, dtype=np.int64)
            for t in range(like.threads):
                where = {int(i): v for v, i in enumerate(src_tile[t])}
                for j, i in enumerate(src_idx[t]):
                    slot[t, j] = where.get(int(i), -1)
            if (slot < 0).any():
                raise InterpError("INTERP_FRAGMENT_MISMATCH", f"{src.name} is not held where {like.name} needs it")
            _GATHER_CACHE[key] = slot
        slot = _GATHER_CACHE[key]
        return np.take_along_axis(data, slot, axis=1)

    def map(self, blk: _Block, s: Map) -> None:
        dst = s.dst.buffer
        if s.op == MapOp.COORD:
            axis = int(evaluate(s.srcs[0], blk.env))
            coords = _tile_coords(dst.static_shape, _indices(dst))
            blk.fragments[dst] = _round(dst.dtype, coords[axis].astype(np.float64))
            return
        compute = map_compute_dtype(dst.dtype, s.srcs)
        args = []
        for operand in s.srcs:
            if isinstance(operand, Expr):
                value, dtype = np.asarray(evaluate(operand, blk.env)), operand.dtype
                if value.ndim == 1:  # a per-thread scalar (it reads the thread index): the same for each value
                    value = value[:, None]
            elif isinstance(operand, Broadcast):
                value, dtype = self._gather(blk, operand.ref, dst, operand.axes), operand.ref.dtype
            else:
                value, dtype = self._gather(blk, operand, dst, ()), operand.dtype
            args.append(_to_compute(compute, dtype, value))
        table = _MAP_FNS if compute.is_float else _INTEGER_MAP_FNS
        if s.op not in table:
            raise InterpError(
                "INTERP_UNSUPPORTED",
                f"{s.loc}: elementwise {s.op.value} on {compute.kind.value} values",
                "the tracer refuses this combination; build the IR through argus.lang",
            )
        with np.errstate(all="ignore"):
            out = table[s.op](*args)
        out = np.broadcast_to(out, (dst.threads, dst.values_per_thread)).copy()
        blk.fragments[dst] = _store(dst.dtype, compute, out)

    def fill(self, blk: _Block, s: Fill) -> None:
        value = evaluate(s.value, blk.env)
        ref = s.dst
        if ref.space == Space.FRAGMENT:
            b = ref.buffer
            blk.fragments[b] = _round(b.dtype, np.full((b.threads, b.values_per_thread), value, dtype=np.float64))
            return
        n = int(np.prod(ref.shape))
        self._write(blk, ref, np.arange(n), np.full(n, value, dtype=np.float64), queue=False)

    def reduce(self, blk: _Block, s: Reduce) -> None:
        src, dst = s.src.buffer, s.dst.buffer
        data = blk.fragments[src]
        rows, cols = src.static_shape
        src_coords = _tile_coords((rows, cols), _indices(src))
        key_coord = src_coords[0] if s.axis == 1 else src_coords[1]
        dst_key = _indices(dst)  # index into the 1-D result = the kept coordinate
        combine = {ReduceOp.SUM: np.add, ReduceOp.MAX: np.maximum, ReduceOp.MIN: np.minimum}[s.op]
        identity = {ReduceOp.SUM: 0.0, ReduceOp.MAX: -np.inf, ReduceOp.MIN: np.inf}[s.op]
        partial = np.full(dst_key.shape, identity, dtype=np.float64)
        for t in range(dst.threads):
            for j, k in enumerate(dst_key[t]):
                vals = data[t][key_coord[t] == k]
                if vals.size:
                    partial[t, j] = combine.reduce(vals)
        for lane_offset in s.shuffle_lanes:  # shfl.xor butterfly: lane t reads lane t ^ offset of its warp
            partner = np.arange(dst.threads) ^ lane_offset
            partial = combine(partial, partial[partner])
        if s.accumulate:
            partial = combine(partial, blk.fragments[dst])
        blk.fragments[dst] = _round(dst.dtype, partial)

    # --- MMA ----------------------------------------------------------------------------------------------
    def gemm(self, blk: _Block, s: Gemm) -> None:
        """Each thread group (warp or warpgroup) multiplies what *its* registers hold, read by the
        atom's layouts; shared operands are read through the buffer's layout."""
        atom = get_atom(s.atom)
        if atom.scope is Scope.THREAD and all(r.space == Space.FRAGMENT for r in (s.a, s.b, s.acc)):
            self._gemm_all_groups(blk, s, atom)  # one thread per group: all groups at once
            return
        gm, gn = s.groups
        for g_m, g_n in itertools.product(range(gm), range(gn)):
            group = g_m + gm * g_n
            a = self._group_operand(blk, s.a, atom, "A", s.groups, group, (g_m, g_n))
            b = self._group_operand(blk, s.b, atom, "B", s.groups, group, (g_m, g_n))
            c = self._group_operand(blk, s.acc, atom, "C", s.groups, group, (g_m, g_n))
            c = c + atom.operand_values(a) @ atom.operand_values(b)  # as the instruction reads them (TF32: truncated)
            self._store_group(blk, s.acc.buffer, atom, s.groups, group, c)

    def _gemm_all_groups(self, blk: _Block, s: Gemm, atom: Any) -> None:
        """`gemm` with register operands for every thread group at once (the same reads and writes as the
        group-by-group loop, as batched numpy): group ``g``'s slot ``(lane, v)`` is register
        ``(lane + g * atom_threads, v)``, meaning the sub-tile element the atom's layout says."""
        gm, gn = s.groups
        groups = np.arange(gm * gn)
        tiles = {}
        for operand, ref in (("A", s.a), ("B", s.b), ("C", s.acc)):
            sub = group_subtile(operand, (ref.shape[0], ref.shape[1]), s.groups)
            rows, cols, lanes = self._hardware_slots(atom, operand, sub)
            data = blk.fragments[ref.buffer]
            if data.shape[1] != rows.shape[1]:
                raise InterpError(
                    "INTERP_FRAGMENT_MISMATCH",
                    f"{ref.buffer.name} holds {data.shape[1]} values per thread; {atom.name} reads {rows.shape[1]}",
                )
            threads = lanes[None, :, :] + atom.thread_count * groups[:, None, None]  # (groups, lanes, values)
            tile = np.full((groups.size, *sub), np.nan)
            tile[:, rows, cols] = data[threads, np.arange(rows.shape[1])[None, None, :]]
            tiles[operand] = (tile, rows, cols, threads)
        c, rows, cols, threads = tiles["C"]
        c = c + atom.operand_values(tiles["A"][0]) @ atom.operand_values(tiles["B"][0])
        regs = blk.fragments[s.acc.buffer]
        regs[threads, np.arange(rows.shape[1])[None, None, :]] = _round(s.acc.buffer.dtype, c[:, rows, cols])

    def _group_operand(self, blk, ref, atom, operand, groups, group, gpos) -> np.ndarray:
        full = (ref.shape[0], ref.shape[1])
        sub = group_subtile(operand, full, groups)
        if ref.space == Space.FRAGMENT:
            rows, cols, lanes = self._hardware_slots(atom, operand, sub)
            data = blk.fragments[ref.buffer]
            if data.shape[1] != rows.shape[1]:
                raise InterpError(
                    "INTERP_FRAGMENT_MISMATCH",
                    f"{ref.buffer.name} holds {data.shape[1]} values per thread; {atom.name} reads {rows.shape[1]}",
                )
            regs = data[lanes + group * atom.thread_count, np.arange(rows.shape[1])[None, :]]
            tile = np.full(sub, np.nan)
            tile[rows, cols] = regs
            return tile
        n = full[0] * full[1]
        whole_tile = self._read(blk, ref, np.arange(n), 0.0).reshape(full[1], full[0]).T
        r0, c0 = group_origin(operand, sub, gpos[0], gpos[1])
        return whole_tile[r0 : r0 + sub[0], c0 : c0 + sub[1]]

    def _store_group(self, blk, buffer, atom, groups, group, tile) -> None:
        sub = group_subtile("C", buffer.static_shape, groups)
        rows, cols, lanes = self._hardware_slots(atom, "C", sub)
        regs = blk.fragments[buffer]
        regs[lanes + group * atom.thread_count, np.arange(rows.shape[1])[None, :]] = _round(
            buffer.dtype, tile[rows, cols]
        )

    @staticmethod
    def _hardware_slots(atom: Any, operand: str, sub: tuple[int, int]):
        """For one thread group's sub-tile: arrays (rows, cols, lanes) of shape (lanes, values) giving,
        for register slot (lane, v), the element the *atom* reads it as (`argus.atoms.mma.slot_element`)."""
        key = (atom.name, operand, sub)
        if key in _HW_CACHE:
            return _HW_CACHE[key]
        lanes = np.arange(atom.thread_count, dtype=np.int64)[:, None]
        values = np.arange(slot_count(atom, operand, sub), dtype=np.int64)[None, :]
        rows, cols = slot_element(atom, operand, sub, lanes, values)
        shape = (lanes.size, values.size)
        rows, cols = (np.broadcast_to(np.asarray(x, dtype=np.int64), shape).copy() for x in (rows, cols))
        _HW_CACHE[key] = (rows, cols, np.broadcast_to(lanes, shape).copy())
        return _HW_CACHE[key]

    def _wgmma_wait(self, blk: _Block, pending: int) -> None:
        """``wgmma.wait_group pending`` in the current role: its oldest asynchronous MMAs complete, in issue order,
        until at most `pending` remain. A group reads its shared operands and accumulates when it completes, in the
        environment it was issued in: a stage overwritten, or an accumulator read, before the wait shows."""
        queue = blk.wgmma_groups.get(id(blk.env), [])
        while len(queue) > pending:
            s, env = queue.pop(0)
            current, blk.env = blk.env, env
            try:
                self.gemm(blk, s)
            finally:
                blk.env = current

    def _warpgroups(self, blk: _Block) -> int:
        """The warpgroups of the current role (of the block, outside roles)."""
        tids = np.asarray(blk.env.get(self.kernel.thread_var, np.arange(self.kernel.threads)))
        return int(np.unique(tids // WARPGROUP_SIZE).size)

    # --- mbarriers and TMA --------------------------------------------------------------------------------
    def _mbarrier(self, blk: _Block, ref: TileRef) -> _Mbarrier:
        if ref.buffer.space != Space.MBARRIER:
            raise InterpError("INTERP_INTERNAL", f"{ref.buffer.name} is not an mbarrier array")
        index = _int(ref.origin[0], blk.env)
        bars = blk.mbarriers.get(ref.buffer)
        if bars is None:
            raise InterpError("INTERP_MBARRIER_UNINITIALIZED", f"mbarrier {ref.buffer.name} used before its init")
        if not 0 <= index < len(bars):
            raise InterpError("INTERP_MBARRIER_INDEX", f"mbarrier {ref.buffer.name}[{index}] does not exist")
        return bars[index]

    def _complete(self, blk: _Block, bar: _Mbarrier) -> None:
        if bar.arrivals_left == 0 and bar.tx == 0:
            for buf, offsets, values in bar.landing:  # TMA data is visible once the phase completes
                blk.shared[buf][offsets] = values
            bar.landing = []
            bar.phase += 1
            bar.arrivals_left = bar.count
            blk.events += 1

    def tma_copy(self, blk: _Block, s: Copy) -> None:
        if s.mbarrier is None:
            raise InterpError("INTERP_TMA_BARRIER", f"{s.loc}: a TMA load needs an mbarrier to complete on")
        src, dst = s.src, s.dst
        if src.space != Space.GLOBAL or dst.space != Space.SHARED:
            raise InterpError("INTERP_UNSUPPORTED", f"{s.loc}: only TMA loads (global -> shared) are interpreted")
        n = int(np.prod(src.shape))
        idx = np.arange(n, dtype=np.int64)
        if s.multicast:
            self._multicast(blk, s, idx)
            return
        values = _round(dst.dtype, self._read(blk, src, idx, 0.0))  # out-of-bounds box elements are zero-filled
        offsets = _shared_offsets(dst.buffer, _window_coords(dst, _tile_coords(dst.shape, idx), blk.env), dst.layout)
        bar = self._mbarrier(blk, s.mbarrier)
        bar.landing.append((dst.buffer, offsets, values))
        bar.tx -= n * dst.dtype.bits // 8  # complete_tx: the whole box counts, masked parts included
        self._complete(blk, bar)

    def _multicast(self, blk: _Block, s: Copy, idx: np.ndarray) -> None:
        """This block's half of a multicast box (`Copy.multicast`): the rows of the box's first dimension that its
        cluster rank loads (`argus.atoms.tma.multicast_half`), read at this block's coordinates and landed in both
        blocks of the cluster, completing on the mbarrier at the same index in each."""
        if blk.peer is None:
            raise InterpError("INTERP_UNSUPPORTED", f"{s.loc}: a multicast TMA load in a kernel without clusters")
        src, dst = s.src, s.dst
        rows = int(src.shape[0])
        if rows % 2 or 0 in tuple(src.dropped):  # the box's outermost dimension is the tensor's first (as generated)
            raise InterpError(
                "INTERP_UNSUPPORTED", f"{s.loc}: a multicast box whose outermost dimension ({rows} rows) does not halve"
            )
        half = rows // 2
        mine = idx[_tile_coords(src.shape, idx)[0] // half == blk.rank]
        values = _round(dst.dtype, self._read(blk, src, mine, 0.0))
        index = _int(s.mbarrier.origin[0], blk.env) if s.mbarrier.origin else 0  # type: ignore[union-attr]
        offsets = _shared_offsets(dst.buffer, _window_coords(dst, _tile_coords(dst.shape, mine), blk.env), dst.layout)
        for target in (blk, blk.peer):  # the same offsets in both blocks: one shared-memory layout
            bar = self._barrier_at(target, s.mbarrier.buffer, index, s.loc)  # type: ignore[union-attr]
            bar.landing.append((dst.buffer, offsets, values))
            bar.tx -= mine.size * dst.dtype.bits // 8
            self._complete(target, bar)

    def _barrier_at(self, blk: _Block, buffer: Buffer, index: int, loc: Any) -> _Mbarrier:
        bars = blk.mbarriers.get(buffer)
        if bars is None:
            raise InterpError(
                "INTERP_MBARRIER_UNINITIALIZED",
                f"{loc}: mbarrier {buffer.name} of block rank {blk.rank} used before its init",
            )
        if not 0 <= index < len(bars):
            raise InterpError("INTERP_MBARRIER_INDEX", f"mbarrier {buffer.name}[{index}] does not exist")
        return bars[index]

    # --- control -------------------------------------------------------------------------------------------
    def run(self, blk: _Block, stmts: tuple[Stmt, ...]):
        """Execute `stmts` (a generator: it yields while an mbarrier wait blocks). Consecutive warp
        roles run as cooperatively scheduled coroutines."""
        i = 0
        while i < len(stmts):
            if isinstance(stmts[i], Role):
                j = i
                while j < len(stmts) and isinstance(stmts[j], Role):
                    j += 1
                yield from self.run_roles(blk, stmts[i:j])
                i = j
                continue
            yield from self.step(blk, stmts[i])
            i += 1

    def run_roles(self, blk: _Block, roles: tuple[Stmt, ...]):
        """Run warp roles concurrently: resume each in turn, in the order of the schedule (``listed``:
        the role written first, usually the producer, runs as far ahead as its waits allow;
        ``reversed``: the last, usually a consumer, goes first and so reads anything it does not
        wait for before it lands); a round in which no role moves is a deadlock."""
        base_env = blk.env
        running = []
        ordered = roles if self.schedule == "listed" else tuple(reversed(roles))
        for role in ordered:
            env = dict(base_env)
            tids = np.concatenate([np.arange(WARPGROUP_SIZE) + WARPGROUP_SIZE * wg for wg in role.warpgroups])
            env[self.kernel.thread_var] = tids
            running.append([role, env, self.run(_with_env(blk, env), role.body), None])
        while running:
            before = blk.events
            progressed = False
            for entry in list(running):
                role, env, gen, _ = entry
                blk.env = env
                try:
                    entry[3] = next(gen)
                except StopIteration:
                    self._wgmma_wait(blk, 0)  # a role's MMAs still in flight complete before its warps exit
                    running.remove(entry)
                    progressed = True
            blk.env = base_env
            if running and not progressed and blk.events == before and (blk.peer is not None or blk.together):
                yield "; ".join(f"role {e[0].name} waits at {e[3]}" for e in running)  # the peer may release it
                continue
            if running and not progressed and blk.events == before:
                waits = "; ".join(f"role {e[0].name} waits at {e[3]}" for e in running)
                raise InterpError(
                    "INTERP_DEADLOCK",
                    f"every warp role is blocked: {waits}",
                    "check the mbarrier phases and the arrive counts / expected bytes",
                )
        yield from ()

    def step(self, blk: _Block, s: Stmt):
        if isinstance(s, Alloc):
            b = s.buffer
            if b.space == Space.SHARED:
                size = b.layout.cosize() if hasattr(b.layout, "cosize") else int(np.prod(b.static_shape))
                blk.shared[b] = _poison(b.dtype, (size,))
            elif b.space == Space.FRAGMENT:
                blk.fragments[b] = _poison(b.dtype, (b.threads, b.values_per_thread))
        elif isinstance(s, Copy):
            if s.atom == "tma":
                self.tma_copy(blk, s)
            else:
                self.copy(blk, s)
        elif isinstance(s, Map):
            self.map(blk, s)
        elif isinstance(s, Fill):
            self.fill(blk, s)
        elif isinstance(s, Reduce):
            self.reduce(blk, s)
        elif isinstance(s, Gemm):
            if s.pending:
                blk.wgmma_groups.setdefault(id(blk.env), []).append((s, dict(blk.env)))
                self._wgmma_wait(blk, s.pending)
            else:
                self._wgmma_wait(blk, 0)  # wait_group 0 after the commit completes the older groups too
                self.gemm(blk, s)
        elif isinstance(s, WgmmaWait):
            self._wgmma_wait(blk, s.pending)
        elif isinstance(s, Let):
            had, old = s.var in blk.env, blk.env.get(s.var)
            blk.env[s.var] = _int(s.value, blk.env)
            yield from self.run(blk, s.body)
            if had:
                blk.env[s.var] = old
            else:
                blk.env.pop(s.var, None)
        elif isinstance(s, For):
            for i in range(_int(s.extent, blk.env)):
                blk.env[s.var] = i
                yield from self.run(blk, s.body)
            blk.env.pop(s.var, None)
        elif isinstance(s, If):
            cond = evaluate(s.cond, blk.env)
            if isinstance(cond, np.ndarray) and not (cond.all() or not cond.any()):
                raise InterpError("INTERP_UNSUPPORTED", f"{s.loc}: a branch that differs between threads")
            yield from self.run(blk, s.then if bool(np.all(cond)) else s.orelse)
        elif isinstance(s, AsyncCommit):
            blk.async_groups.append(blk.async_open)
            blk.async_open = []
        elif isinstance(s, AsyncWait):
            while len(blk.async_groups) > s.pending:
                for buf, offsets, values in blk.async_groups.pop(0):
                    blk.shared[buf][offsets] = values
        elif isinstance(s, MbarrierInit):
            count = int(np.prod(s.barriers.buffer.static_shape))
            # a cluster barrier counts both blocks' arrivals (`MbarrierInit.cluster`)
            arrivals = s.arrive_count * (self.kernel.cluster if s.cluster else 1)
            blk.mbarriers[s.barriers.buffer] = [_Mbarrier(arrivals) for _ in range(count)]
            if s.cluster:
                blk.cluster_barriers.add(id(s.barriers.buffer))
            blk.events += 1
            # the cluster barrier after the initialisation: no multicast or peer arrival before the peer's init
            while blk.peer is not None and s.barriers.buffer not in blk.peer.mbarriers:
                yield f"{s.loc} (the cluster barrier after the mbarriers' initialisation)"
        elif isinstance(s, MbarrierArrive):
            bar = self._mbarrier(blk, s.barrier)
            arrivals = self._warpgroups(blk) if s.per_warpgroup else 1
            targets = [(blk, bar)]
            if id(s.barrier.buffer) in blk.cluster_barriers and blk.peer is not None:  # made in both blocks
                index = _int(s.barrier.origin[0], blk.env) if s.barrier.origin else 0
                targets.append((blk.peer, self._barrier_at(blk.peer, s.barrier.buffer, index, s.loc)))
            for target, b in targets:
                b.arrivals_left -= arrivals
                if b.arrivals_left < 0:
                    raise InterpError(
                        "INTERP_MBARRIER_OVERARRIVE",
                        f"{s.loc}: more arrivals on {s.barrier.buffer.name} than its count {b.count} in one phase"
                        + (f" (block rank {target.rank} of the cluster)" if blk.peer is not None else ""),
                    )
                target.events += 1
            bar.tx += s.expect_bytes
            for target, b in targets:
                self._complete(target, b)
        elif isinstance(s, MbarrierWait):
            bar = self._mbarrier(blk, s.barrier)
            parity = _int(s.phase, blk.env) % 2
            if bar.phase % 2 == parity:  # the phase with this parity has not completed yet
                if not blk.concurrent:
                    raise InterpError(
                        "INTERP_DEADLOCK",
                        f"{s.loc}: waiting on {s.barrier.buffer.name} phase parity {parity}, which can never complete "
                        "(no other warp role runs)",
                    )
                while bar.phase % 2 == parity:
                    yield f"{s.loc} ({s.barrier.buffer.name}, parity {parity})"
        elif isinstance(s, GroupBarrier):
            yield from _group_barrier(self, blk, s)
        elif isinstance(s, (Barrier, Fence, WarpgroupTurn)):
            pass  # lockstep execution: all threads of a role reach it together (turns only schedule issue)
        elif isinstance(s, (Tag, AssertTag, AssertTagEq)):
            pass  # invariants are the verifier's: they cost nothing at run time
        else:
            raise InterpError(
                "INTERP_UNSUPPORTED",
                f"{s.loc}: {type(s).__name__} is not interpreted yet",
            )


def _group_barrier(machine: _Machine, blk: _Block, s: GroupBarrier):
    """`GroupBarrier`: add to the counter as the generated code does (rank 0 ``2^31 - (count - 1)``, the others 1,
    modulo 2^32, kept in the i32 tensor's two's complement), then wait (yielding to the other blocks) until its top
    bit differs from what this block's addition found. A rank outside 0 .. count - 1 or arriving twice in one
    generation is `INTERP_GROUP_BARRIER`: on the GPU the barrier would open early or never."""
    buf = s.counter.buffer
    mem = blk.globals_[buf]
    index = _int(s.counter.origin[0], blk.env)
    rank = _int(s.rank, blk.env)
    where = f"{s.loc}: the group barrier on {buf.name}[{index}]"
    if not 0 <= index < mem.shape[0]:
        raise InterpError(
            "INTERP_ELEMENT_OOB",
            f"{where} is outside {buf.name}'s extent {mem.shape[0]}",
            "size the counter tensor for every index the kernel arrives at",
        )
    if not 0 <= rank < s.count:
        raise InterpError("INTERP_GROUP_BARRIER", f"{where}: rank {rank} outside 0 .. {s.count - 1}")
    arrived = machine.generations.setdefault((id(buf), index), set())
    if rank in arrived:
        raise InterpError(
            "INTERP_GROUP_BARRIER",
            f"{where}: rank {rank} arrives twice before the other {s.count - len(arrived)} of {s.count} ranks",
            "give every block that arrives at one counter its own rank, and arrive once per generation",
        )
    arrived.add(rank)
    if len(arrived) == s.count:
        arrived.clear()
    old = int(mem[index]) & 0xFFFFFFFF
    new = (old + ((1 << 31) - (s.count - 1) if rank == 0 else 1)) & 0xFFFFFFFF
    mem[index] = new - (1 << 32) if new >= 1 << 31 else new
    blk.events += 1
    while ((old ^ (int(mem[index]) & 0xFFFFFFFF)) >> 31) == 0:
        if not blk.together:
            raise InterpError("INTERP_INTERNAL", f"{where}: a group barrier in a block that runs alone")
        yield f"{where} (rank {rank} of {s.count})"


@dataclass
class _Mbarrier:
    count: int
    arrivals_left: int = -1
    tx: int = 0
    phase: int = 0
    landing: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.arrivals_left < 0:
            self.arrivals_left = self.count


def _with_env(blk: _Block, env: dict) -> _Block:
    """The same block state (memory, barriers) as seen by one warp role."""
    blk.concurrent = True
    return blk


_GATHER_CACHE: dict[tuple, np.ndarray] = {}
_HW_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

_MAP_FNS = {
    MapOp.ADD: np.add,
    MapOp.SUB: np.subtract,
    MapOp.MUL: np.multiply,
    MapOp.DIV: np.divide,
    MapOp.MAX: np.maximum,
    MapOp.MIN: np.minimum,
    MapOp.LT: lambda a, b: (a < b).astype(np.float64),
    MapOp.FMA: lambda a, b, c: a * b + c,
    MapOp.SELECT: lambda c, a, b: np.where(c != 0, a, b),
    MapOp.NEG: np.negative,
    MapOp.EXP2: np.exp2,
    MapOp.EXP2_FMA: lambda x, _every: np.exp2(x),  # which unit evaluates it is the code generator's choice
    MapOp.EXP: np.exp,
    MapOp.LOG2: np.log2,
    MapOp.RSQRT: lambda x: 1.0 / np.sqrt(x),
    MapOp.SQRT: np.sqrt,
    MapOp.RCP: lambda x: 1.0 / x,
    MapOp.ABS: np.abs,
    MapOp.CAST: lambda x: x,
    MapOp.TANH: np.tanh,
    MapOp.ERF: np.vectorize(math.erf, otypes=[np.float64]),
    MapOp.LOG: np.log,
    MapOp.LOG1P: np.log1p,
    MapOp.EXPM1: np.expm1,
    MapOp.SIGMOID: lambda x: 1.0 / (1.0 + np.exp(-x)),
    MapOp.SIN: np.sin,
    MapOp.COS: np.cos,
    MapOp.FLOOR: np.floor,
    MapOp.CEIL: np.ceil,
    MapOp.POW: np.power,
    MapOp.FMOD: np.fmod,  # C's fmod: the sign of the dividend
    MapOp.LE: lambda a, b: (a <= b).astype(np.float64),
    MapOp.EQ: lambda a, b: (a == b).astype(np.float64),
    MapOp.NE: lambda a, b: (a != b).astype(np.float64),
}


def _shift_count(b: np.ndarray) -> np.ndarray:
    """PTX's ``shl``/``shr`` read the count as unsigned and clamp it to 32 (C leaves counts outside [0, 31]
    undefined)."""
    return np.where((b < 0) | (b > 32), 32, b)


def _c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's integer ``/``: the quotient truncated toward zero."""
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.where(b == 0, 1, np.abs(b)))


#: Integer operations on int64 values of the compute type (the result is wrapped to its width by `_store`).
_INTEGER_MAP_FNS = {
    **{op: fn for op, fn in _MAP_FNS.items() if op not in FLOAT_MAP_OPS},
    MapOp.LT: lambda a, b: (a < b).astype(np.int64),
    MapOp.LE: lambda a, b: (a <= b).astype(np.int64),
    MapOp.EQ: lambda a, b: (a == b).astype(np.int64),
    MapOp.NE: lambda a, b: (a != b).astype(np.int64),
    MapOp.DIV: _c_div,  # C's / (the tracer refuses / on integers: // is floored)
    MapOp.FLOORDIV: np.floor_divide,  # Python's //
    MapOp.MOD: np.remainder,  # Python's %: the sign of the divisor
    MapOp.FMOD: np.fmod,  # C's %: the sign of the dividend
    MapOp.AND: np.bitwise_and,
    MapOp.OR: np.bitwise_or,
    MapOp.XOR: np.bitwise_xor,
    MapOp.SHL: lambda a, b: np.left_shift(a, _shift_count(b)),
    MapOp.SHR: lambda a, b: np.right_shift(a, _shift_count(b)),  # arithmetic on i32 values, logical on u32
    MapOp.INVERT: np.invert,
}


def _wrap(dtype: DType, x: np.ndarray) -> np.ndarray:
    """int64 values wrapped to the two's complement range of the integer `dtype` (as 32-bit registers hold them)."""
    bits = dtype.bits
    x = np.bitwise_and(x.astype(np.int64), (1 << bits) - 1)
    if dtype.kind is DTypeKind.INT:
        x = np.where(x >= 1 << (bits - 1), x - (1 << bits), x)
    return x


def _to_compute(compute: DType, dtype: DType, value: np.ndarray) -> np.ndarray:
    """An operand's values converted to the compute type, as the generated code converts them: integers that
    take part in float math become f32 values (rounded above 2**24); integer math works on int64 values wrapped
    to the compute type's width."""
    if compute.is_float:
        value = np.asarray(value, dtype=np.float64)
        return _round(f32, value) if not dtype.is_float else value
    return _wrap(compute, np.asarray(value).astype(np.int64))


def _store(dtype: DType, compute: DType, out: np.ndarray) -> np.ndarray:
    """An elementwise result in the compute type converted to the destination's `dtype`: floats round once to
    nearest even; integer results wrap; float results stored in an integer truncate toward zero and saturate,
    NaN giving 0 (PTX ``cvt.rzi``); ``bool`` is ``value != 0``."""
    if dtype.is_float:
        return _round(dtype, out)
    if not dtype.is_integer:
        return (out != 0).astype(np.int64)
    if not compute.is_float:
        return _wrap(dtype, out)
    return _round(dtype, np.asarray(out, dtype=np.float64))


def has_roles(kernel: Kernel) -> bool:
    """True when the kernel uses warp specialization (its result may depend on the schedule)."""
    from argus.ir.nodes import walk

    return any(isinstance(s, Role) for s in walk(kernel.body))


def run_kernel(
    kernel: Kernel, arrays: dict[str, np.ndarray], schedule: str = "listed", *, max_bytes: int | str | None = None
) -> None:
    """Run `kernel` on numpy `arrays` (by parameter name) in place, every block in order. With
    warp roles, `schedule` picks which role runs ahead (see `_Machine.run_roles`); a correct
    kernel gives the same result under every schedule. Refused before anything is allocated
    (``INTERP_MEMORY_BUDGET``) when `memory_needed` is over `memory_budget(max_bytes)`."""
    env: dict[Var, Any] = {}
    for t in kernel.tensors:
        if t.name not in arrays:
            raise InterpError("INTERP_MISSING_ARGUMENT", f"no array given for {t.name}")
        a = arrays[t.name]
        if a.ndim != t.rank:
            raise InterpError(
                "INTERP_ARGUMENT_RANK",
                f"{t.name} must have {t.rank} dimensions",
                requirement=str(t.shape),
                actual=a.shape,
            )
        for d, s in zip(t.shape, a.shape, strict=True):
            if isinstance(d, Var):
                if d in env and env[d] != s:
                    dims = ", ".join(str(x) for x in t.shape)
                    flipped = t.rank == 2 and all(
                        not isinstance(x, Var) or x not in env or env[x] == e
                        for x, e in zip(t.shape, reversed(a.shape), strict=True)
                    )
                    raise InterpError(
                        "INTERP_SHAPE_MISMATCH",
                        f"{t.name}: {d.name} is {env[d]} elsewhere; the kernel takes {t.name} as ({dims})",
                        f"{t.name} looks transposed: pass {t.name}.T (or use the kernel's variant for that operand "
                        "layout, e.g. A_MAJOR / B_MAJOR of the Hopper GEMMs)"
                        if flipped
                        else None,
                        requirement=f"({dims})",
                        actual=a.shape,
                    )
                env[d] = s
            elif isinstance(d, int) and d != s:
                raise InterpError("INTERP_SHAPE_MISMATCH", f"{t.name} must have shape {t.shape}", actual=a.shape)
    check_assumptions(kernel, {v.name: n for v, n in env.items()})
    check_value_assumptions(kernel, arrays, env)
    machine = _Machine(kernel, arrays, schedule)
    needed = memory_needed(
        kernel, env=env, argument_bytes={t.name: arrays[t.name].dtype.itemsize for t in kernel.tensors}
    )
    size_text = ", ".join(f"{v.name}={n}" for v, n in env.items()) or "its size"
    _refuse_over_budget(kernel, needed, memory_budget(max_bytes), size_text)
    work = {t: np.asarray(arrays[t.name], dtype=np.float64).copy() for t in kernel.tensors}
    extents = [_int(g, env) for g in kernel.grid]

    def block(point: tuple[int, ...]) -> _Block:
        benv = dict(env)
        benv.update(zip(kernel.block_vars, point, strict=True))
        benv[kernel.thread_var] = np.arange(kernel.threads)
        benv[READ_ELEMENT] = functools.partial(_read_element, work)
        return _Block(kernel, benv, work)

    if any(isinstance(s, GroupBarrier) for s in walk(kernel.body)):  # blocks wait for each other: all at once
        blocks = [block(point) for point in itertools.product(*[range(e) for e in extents])]
        if kernel.cluster > 1:
            for i in range(0, len(blocks), kernel.cluster):
                first, second = blocks[i : i + 2]
                first.peer, second.peer, second.rank = second, first, 1
        _run_blocks(machine, blocks)
        blocks.clear()
    else:
        for point in itertools.product(*[range(e) for e in extents]):
            _run_point(machine, kernel, block, point)
    for t in kernel.tensors:
        arrays[t.name][...] = work[t].astype(arrays[t.name].dtype)


def _run_point(machine: _Machine, kernel: Kernel, block: Any, point: tuple[int, ...]) -> None:
    """Run the block at `point` alone (or, in a kernel of clusters, the cluster it leads with its peer)."""
    if kernel.cluster > 1:
        if point[0] % kernel.cluster == 0:
            _run_cluster(machine, [block((point[0] + r, *point[1:])) for r in range(kernel.cluster)])
        return
    blk = block(point)
    for _ in machine.run(blk, kernel.body):
        raise InterpError("INTERP_INTERNAL", "a wait escaped the warp-role scheduler")
    machine._wgmma_wait(blk, 0)  # MMAs still in flight complete before the block exits


def _run_blocks(machine: _Machine, blocks: list[_Block]) -> None:
    """Run every block of a kernel with group barriers together (`_run_together`); a round in which none moves is a
    deadlock (a group barrier whose blocks never all arrive)."""
    for b in blocks:
        b.together = True

    def stuck(running: list) -> InterpError:
        more = f"; and {len(running) - 4} more" if len(running) > 4 else ""
        return InterpError(
            "INTERP_DEADLOCK",
            f"{len(running)} blocks are blocked for good: " + "; ".join(e[2] for e in running[:4]) + more,
            "check that every block that arrives at a group barrier's counter does (count blocks, one rank each) "
            "and the mbarrier phases and arrive counts",
        )

    _run_together(machine, blocks, stuck)


def _run_cluster(machine: _Machine, blocks: list[_Block]) -> None:
    """Run the blocks of one cluster together (`_run_together`: a wait on a peer's multicast bytes or arrivals yields
    to the other block); a round in which neither moves is a deadlock."""
    first, second = blocks
    first.peer, second.peer, second.rank = second, first, 1

    def stuck(running: list) -> InterpError:
        return InterpError(
            "INTERP_DEADLOCK",
            "both blocks of a cluster are blocked: " + "; ".join(f"block rank {e[0].rank}: {e[2]}" for e in running),
            "check that both blocks issue the same multicast loads and cluster arrivals (the verifier's "
            "PIPELINE_CLUSTER_ASYMMETRIC) and the cluster barriers' arrive counts",
        )

    _run_together(machine, blocks, stuck)


def _run_together(machine: _Machine, blocks: list[_Block], stuck: Any) -> None:
    """Resume each block's program in turn, as far as its waits allow, until all have finished; `stuck(running)` is
    the error raised for a round in which no block moved (no arrival, no completion, none finished)."""
    running = [[b, machine.run(b, machine.kernel.body), ""] for b in blocks]
    while running:
        before = sum(b.events for b in blocks)
        finished = False
        for entry in list(running):
            try:
                entry[2] = next(entry[1])
            except StopIteration:
                machine._wgmma_wait(entry[0], 0)  # MMAs still in flight complete before the block exits
                running.remove(entry)
                finished = True
        if running and not finished and sum(b.events for b in blocks) == before:
            raise stuck(running)


def interpret(kernel_fn: Any, *arrays: np.ndarray, **params: Any) -> None:
    """Trace `kernel_fn` (an `@argus.kernel`) with `params` and run it on `arrays` (positional,
    in parameter order) in place."""
    kernel = kernel_fn.trace(**params)
    names = [t.name for t in kernel.tensors]
    if len(arrays) != len(names):
        raise InterpError("INTERP_MISSING_ARGUMENT", f"{kernel.name} takes {len(names)} tensors ({', '.join(names)})")
    run_kernel(kernel, dict(zip(names, arrays, strict=True)))
