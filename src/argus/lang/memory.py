"""Allocating and moving data: shared-memory buffers and fragments (``T.alloc_shared``, ``T.alloc_fragment``,
``T.alloc_reduced``), ``T.copy`` with its atoms (vector, ``cp.async``, TMA loads, ``ldmatrix``, ``stmatrix``, and
TMA stores through a staging buffer) and ``T.fill``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from argus.atoms import MmaAtom
from argus.atoms.common import shared_budget
from argus.atoms.errors import AtomError
from argus.atoms.smem import SharedCarve, panel_layout
from argus.atoms.swizzle import hopper_swizzle
from argus.atoms.tma import STAGING_BUFFERS, store_chunk_columns
from argus.ir.expr import Expr, as_expr, elements
from argus.ir.nodes import Alloc, Buffer, Copy, Fill, GroupBarrier, Space, TileRef, walk, whole
from argus.ir.types import DType
from argus.lang.errors import DSLError, caller_loc
from argus.lang.fragment import Fragment, fragment_like
from argus.lang.fragments import blocked_tv, check_mma_tiling, mma_tv, reduced_tv
from argus.lang.sync import MbarrierRef
from argus.lang.tiles import Shared, Tile, check_same_shape
from argus.lang.trace import current
from argus.layout import ComposedLayout, Layout
from argus.layout.int_tuple import suffix_product


def alloc_shared(
    shape: Any,
    dtype: DType,
    swizzle: int = 0,
    layout: Layout | ComposedLayout | None = None,
    panels: bool = False,
) -> Shared:
    """A shared-memory buffer, row-major (last dimension contiguous) unless `layout` is given,
    with Hopper's 32/64/128-byte `swizzle` applied to its offsets.

    ``panels=True`` (with a swizzle) cuts the last dimension into panels one swizzle width wide, each stored
    whole before the next (`argus.atoms.smem.panel_layout`): the layout of a tile wider than the swizzle span
    loaded by one TMA box per panel (``sB[s].window((0, 64 * j), (BK, 64))``) and read by ``wgmma`` as an
    MN-major operand."""
    st = current("T.alloc_shared")
    loc = caller_loc()
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(s, int) and s >= 1 for s in shape):
        raise DSLError("DSL_TILE_SHAPE", f"shared buffers need a static shape of positive ints, got {shape}", loc=loc)
    if panels:
        if layout is not None:
            raise DSLError("DSL_TILE_SHAPE", "give either layout= or panels=True, not both", loc=loc)
        try:
            layout = panel_layout(shape, dtype, swizzle)
        except AtomError as err:
            raise DSLError(
                "DSL_TILE_SHAPE",
                f"panels=True: {err.message}",
                err.hint,
                requirement=err.requirement,
                actual=err.actual,
                loc=loc,
            ) from None
    if layout is None:
        base = Layout(shape, suffix_product(shape))
        layout = base if swizzle == 0 else ComposedLayout(hopper_swizzle(swizzle, dtype.bits), 0, base)
    buffer = Buffer(st.value_name("s"), Space.SHARED, dtype, shape, layout=layout, loc=loc)
    nbytes = SharedCarve.footprint(buffer)[0]
    budget = shared_budget(st.blocks_per_sm)
    if st.carve.would_need(buffer) > budget:
        per = "" if st.blocks_per_sm == 1 else f" with {st.blocks_per_sm} blocks per SM"
        raise DSLError(
            "DSL_SMEM_BUDGET",
            f"shared memory over budget: this buffer needs {nbytes} bytes and {st.carve.total} are already in use "
            "(buffers start aligned: 1024 bytes for a swizzled one, 128 otherwise)",
            "use fewer stages or a smaller tile" + (", or fewer blocks per SM" if st.blocks_per_sm > 1 else ""),
            requirement=f"at most {budget} bytes per block on Hopper{per}",
            actual=f"{st.carve.would_need(buffer)} bytes",
            loc=loc,
        )
    st.carve.place(buffer)
    st.emit(Alloc(buffer, loc=loc))
    return Shared(whole(buffer))


def alloc_fragment(
    shape: Any,
    dtype: DType,
    mma: MmaAtom | None = None,
    operand: str = "C",
    groups: tuple[int, int] | None = None,
    vector_bytes: int = 16,
    name: str | None = None,
    tv: Layout | None = None,
) -> Fragment:
    """A register tile spread over the block's threads.

    With `mma`, the layout is the atom's `operand` layout (``"A"``, ``"B"`` or ``"C"``) tiled over
    `groups` = (thread groups along rows, along columns), each of the atom's thread count (default:
    all groups along rows). Without, each thread holds runs of `vector_bytes` of the last dimension.
    Expert escape hatch: `tv` gives the thread–value layout explicitly (with `mma`, the fragment is
    still read by the atom's own register convention, so a `tv` that differs gives other numbers).
    `name` is its IR name; by default, the variable it is assigned to (``acc`` in ``acc = T.alloc_fragment(...)``),
    else ``r`` (`argus.lang.names`).
    """
    st = current("T.alloc_fragment")
    loc = caller_loc()
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(s, int) and s >= 1 for s in shape):
        raise DSLError("DSL_TILE_SHAPE", f"fragments need a static shape of positive ints, got {shape}", loc=loc)
    threads = st.role[1] if st.role else (st.threads or 0)
    atom_name = None
    if mma is not None:
        if len(shape) != 2:
            raise DSLError("DSL_TILE_SHAPE", f"an MMA fragment is 2-D, got shape {shape}", loc=loc)
        if operand not in ("A", "B", "C"):
            raise DSLError("DSL_BAD_OPERAND", f"operand must be 'A', 'B' or 'C', got {operand!r}", loc=loc)
        groups = groups or (threads // mma.thread_count, 1)
        if groups[0] * groups[1] * mma.thread_count != threads:
            raise DSLError(
                "DSL_MMA_GROUPS",
                f"{mma.name}: {groups[0]}x{groups[1]} groups of {mma.thread_count} threads "
                f"do not make the block's {threads}",
                requirement=f"groups whose product is {threads // mma.thread_count}",
                actual=groups,
                loc=loc,
            )
        why = check_mma_tiling(mma, operand, (shape[0], shape[1]), groups)
        if why:
            raise DSLError(
                "DSL_MMA_TILE", f"{mma.name}: {why}", "choose a tile that is a multiple of the atom", loc=loc
            )
        tv = tv if tv is not None else mma_tv(mma, operand, (shape[0], shape[1]), groups)
        atom_name = mma.name
    elif tv is not None:
        pass
    else:
        tv = blocked_tv(shape, threads, max(1, vector_bytes * 8 // dtype.bits))
        if tv is None:
            raise DSLError(
                "DSL_FRAGMENT_LAYOUT",
                f"a {shape} tile does not spread evenly over {threads} threads",
                "choose a tile whose element count is a multiple of the thread count times the vector width",
                loc=loc,
            )
    buffer = Buffer(
        st.fresh(name) if name is not None else st.value_name("r"),
        Space.FRAGMENT,
        dtype,
        shape,
        tv=tv,
        threads=threads,
        atom=atom_name,
        groups=groups if mma is not None else None,
        operand=operand if mma is not None else None,
        loc=loc,
    )
    st.emit(Alloc(buffer, loc=loc))
    return Fragment(whole(buffer))


def alloc_reduced(x: Fragment, axis: int, dtype: DType | None = None) -> Fragment:
    """A fragment with the shape and thread–value layout of reducing 2-D fragment `x` along
    `axis`: ``(R,)`` for ``axis=1``, ``(C,)`` for ``axis=0``. Use it for per-row or per-column
    values (a bias, a scale) that combine with `x` through broadcasting."""
    loc = caller_loc()
    if not isinstance(x, Fragment) or len(x.shape) != 2 or axis not in (0, 1):
        raise DSLError("DSL_REDUCE_AXIS", "T.alloc_reduced takes a 2-D fragment and axis 0 or 1", loc=loc)
    result = reduced_tv(x.buffer.tv, x.buffer.static_shape, axis, x.buffer.threads, shuffles=False)
    if isinstance(result, str):
        raise DSLError("DSL_REDUCE_LAYOUT", f"T.alloc_reduced: {result}", loc=loc)
    shape = (x.shape[0],) if axis == 1 else (x.shape[1],)
    return fragment_like(x, dtype=dtype, shape=shape, tv=result[0])


_COPY_ATOMS = (
    "auto",
    "vector",
    "cp.async",
    "tma",
    "tma.store",
    "ldmatrix",
    "ldmatrix.x4",
    "ldmatrix.x4.trans",
    "stmatrix",
)


def copy(
    src: Tile,
    dst: Tile,
    atom: str = "auto",
    pad: float = 0.0,
    mbarrier: Any = None,
    staging: Any = None,
    multicast: bool = False,
) -> None:
    """Copy tile `src` into tile `dst` (same shape; the dtype is converted if they differ).

    `atom`: ``"auto"`` (the lowering chooses), ``"vector"`` (16-byte loads/stores), ``"cp.async"``
    (global -> shared, asynchronous: wait with `T.async_wait`), ``"tma"``, ``"ldmatrix"``
    (shared -> MMA operand fragment; ``.trans`` chosen from the layouts), or forced variants
    ``"ldmatrix.x4"`` / ``"ldmatrix.x4.trans"`` (lane-level escape hatch), ``"stmatrix"``.
    Source elements outside a global tensor read as `pad` (use ``-inf`` before a maximum).
    A ``"tma"`` load completes on `mbarrier` (an element of `T.alloc_mbarrier`): its bytes count
    towards the barrier's current phase, and the data may only be read after waiting for that
    phase; out-of-bounds box elements read 0.

    ``"tma.store"`` stores a fragment (a ``wgmma`` accumulator: each warpgroup holds 64 whole rows) into a
    global tile through `staging`, ``T.alloc_shared((2, rows, 128 // itemsize), dst.dtype, swizzle=128)``: the
    tile goes out in chunks of 128 bytes of columns, each warpgroup writing its rows of a chunk into one of the two
    buffers and one of its threads issuing a TMA store of them; the threads go on while the store drains (before
    a buffer is rewritten, the store that read it last must have finished reading). Out-of-bounds rows and columns
    are not written. The staging buffer belongs to the copy (no other statement may use it), the stores complete
    before the block exits, and no other statement may touch the destination tensor (the stores are asynchronous)
    but a synchronous store elsewhere in it (`check_tma_stores`).
    The destination's rows must be 16-byte aligned (``T.assume`` it).

    `multicast` (a ``"tma"`` load in a grid of 2-block clusters, ``T.grid(..., cluster=2)``): the two blocks of the
    cluster load the box together, each half of it (along its first dimension) into both blocks' `dst`, completing
    on the `mbarrier` at the same index in each; each block announces the whole box's bytes on its own `mbarrier`
    as for a plain load. Both blocks must name the same box at the same time (the verifier proves it:
    ``PIPELINE_CLUSTER_ASYMMETRIC``), and the stage must not be refilled before both blocks are done with it
    (release it on a cluster barrier, ``T.alloc_mbarrier(..., cluster=True)``, that the issuing role waits on).
    """
    st = current("T.copy")
    loc = caller_loc()
    for name, t in (("source", src), ("destination", dst)):
        if not isinstance(t, Tile):
            raise DSLError(
                "DSL_BAD_OPERAND",
                f"T.copy: the {name} must be a tile (A.tile(...), a shared buffer or a fragment)",
                actual=type(t).__name__,
                loc=loc,
            )
    check_same_shape("T.copy", src.shape, dst.shape, loc)
    if atom not in _COPY_ATOMS:
        raise DSLError(
            "DSL_UNKNOWN_ATOM",
            f"T.copy: unknown atom {atom!r}",
            requirement=f"one of {', '.join(_COPY_ATOMS)}",
            loc=loc,
        )
    s, d = src.ref.space, dst.ref.space
    spaces = {"cp.async": (Space.GLOBAL, Space.SHARED), "ldmatrix": (Space.SHARED, Space.FRAGMENT)}
    spaces["tma"] = (Space.GLOBAL, Space.SHARED)
    spaces["ldmatrix.x4"] = spaces["ldmatrix.x4.trans"] = spaces["ldmatrix"]
    spaces["stmatrix"] = (Space.FRAGMENT, Space.SHARED)
    spaces["tma.store"] = (Space.FRAGMENT, Space.GLOBAL)
    if atom in spaces and (s, d) != spaces[atom]:
        want = spaces[atom]
        raise DSLError(
            "DSL_ATOM_SPACES",
            f"T.copy: {atom} copies {want[0].value} memory into {want[1].value} memory",
            requirement=f"{want[0].value} -> {want[1].value}",
            actual=f"{s.value} -> {d.value}",
            loc=loc,
        )
    if s == Space.GLOBAL and d == Space.GLOBAL:
        raise DSLError("DSL_ATOM_SPACES", "T.copy from global to global memory is not supported", loc=loc)
    if dst.ref.im2col is not None or (src.ref.im2col is not None and atom != "tma"):
        raise DSLError(
            "DSL_IM2COL",
            "T.copy: an im2col tile (X.im2col(...)) is the source of a TMA load into shared memory",
            requirement="T.copy(X.im2col(...), shared_tile, atom='tma', mbarrier=...)",
            actual=f"atom {atom!r}, {s.value} -> {d.value}",
            loc=loc,
        )
    if dst.ref.gather is not None or (src.ref.gather is not None and (atom != "tma" or d != Space.SHARED)):
        raise DSLError(
            "DSL_GATHER",
            "T.copy: a gathered tile (X.gather(...)) is the source of a TMA load into shared memory",
            requirement="T.copy(X.gather(index, position, shape, origin), shared_tile, atom='tma', mbarrier=...)",
            actual=f"atom {atom!r}, {s.value} -> {d.value}",
            loc=loc,
        )
    bar = _tma_barrier(atom, mbarrier, pad, loc)
    if multicast:
        _check_multicast(st, src, atom, mbarrier, loc)
    stage = None
    if atom == "tma.store":
        stage = _tma_store_staging(src, dst, staging, pad, loc)
    elif staging is not None:
        raise DSLError("DSL_TMA_STAGING", f"only atom='tma.store' takes a staging buffer, not atom={atom!r}", loc=loc)
    st.emit(
        Copy(src.ref, dst.ref, atom, mbarrier=bar, pad=float(pad), staging=stage, multicast=bool(multicast), loc=loc)
    )


def _tma_barrier(atom: str, mbarrier: Any, pad: float, loc: Any) -> TileRef | None:
    """The mbarrier a ``"tma"`` load completes on (it needs one, and no padding: TMA fills with 0); None for other
    atoms, which take none."""
    if atom == "tma":
        if not isinstance(mbarrier, MbarrierRef):
            raise DSLError(
                "DSL_TMA_MBARRIER",
                "T.copy(..., atom='tma') needs mbarrier=<an element of T.alloc_mbarrier>",
                "the TMA unit signals completion on an mbarrier; wait on it before reading the data",
                loc=loc,
            )
        if pad != 0.0:
            raise DSLError("DSL_TMA_PAD", "TMA fills out-of-bounds elements with 0; pad must be 0", loc=loc)
        return mbarrier.ref
    if mbarrier is not None:
        raise DSLError("DSL_TMA_MBARRIER", f"only TMA loads complete on an mbarrier, not atom={atom!r}", loc=loc)
    return None


def _check_multicast(st: Any, src: Tile, atom: str, mbarrier: Any, loc: Any) -> None:
    """A multicast copy (`T.copy(..., multicast=True)`) is a tiled TMA load in a grid of clusters, completing on a
    block's own mbarrier."""
    if atom != "tma" or st.cluster == 1 or src.ref.im2col is not None or src.ref.gather is not None:
        raise DSLError(
            "DSL_CLUSTER",
            f"T.copy(..., multicast=True) is a tiled TMA load (atom='tma') in a grid of clusters "
            f"(T.grid(..., cluster=2)): atom {atom!r}, clusters of {st.cluster}",
            loc=loc,
        )
    if id(mbarrier.ref.buffer) in st.cluster_barriers:
        raise DSLError(
            "DSL_CLUSTER",
            "T.copy(..., multicast=True) completes on each block's own mbarrier, not on a cluster barrier",
            loc=loc,
        )


def _tma_store_staging(src: Tile, dst: Tile, staging: Any, pad: float, loc: Any) -> TileRef:
    """The staging buffer of a ``tma.store`` copy, checked: (2, rows, 128 bytes of columns) of the destination's
    dtype, 128-byte swizzled, row-major."""
    dtype = dst.ref.buffer.dtype
    if not isinstance(staging, Shared) or not staging.ref.is_whole():
        raise DSLError(
            "DSL_TMA_STAGING",
            "T.copy(..., atom='tma.store') needs staging=<a whole T.alloc_shared buffer>",
            "the fragment goes to global memory through shared memory: "
            f"staging=T.alloc_shared((2, rows, 128 // {dtype.itemsize}), {dtype.name}, swizzle=128)",
            actual=type(staging).__name__,
            loc=loc,
        )
    if pad != 0.0:
        raise DSLError("DSL_TMA_PAD", "a TMA store has no padding; pad must be 0", loc=loc)
    if len(src.shape) != 2 or not all(isinstance(e, int) for e in src.shape):
        raise DSLError("DSL_TMA_STAGING", "atom='tma.store' stores a 2-d fragment", actual=str(src.shape), loc=loc)

    rows, cols = src.shape
    width = store_chunk_columns(dtype)
    buf = staging.ref.buffer
    shape = (STAGING_BUFFERS, rows, width)
    base = Layout(shape, suffix_product(shape))
    want = ComposedLayout(hopper_swizzle(128, dtype.bits), 0, base)
    if buf.dtype != dtype or tuple(buf.static_shape) != shape or buf.layout != want:
        raise DSLError(
            "DSL_TMA_STAGING",
            f"the staging buffer of a tma.store of {rows}x{cols} {dtype.name} must be two 128-byte-swizzled "
            f"chunks of {rows} rows and {width} columns",
            requirement=f"T.alloc_shared({shape}, {dtype.name}, swizzle=128)",
            actual=f"{buf.dtype.name}{list(buf.static_shape)} layout {buf.layout}",
            loc=loc,
        )
    if cols % width:
        raise DSLError(
            "DSL_TMA_STAGING",
            f"a tma.store writes whole chunks of {width} columns; the tile has {cols}",
            requirement=f"tile columns % {width} == 0",
            loc=loc,
        )
    return staging.ref


def check_tma_stores(kernel_name: str, body: tuple) -> None:
    """A ``tma.store``'s staging buffer and destination tensor are the tma.store copies' alone: the stores are
    asynchronous, so any other access to either could race with them. One exception: a synchronous store into the
    destination from elsewhere (a grouped GEMM's partial tiles, stored through a bounded window beside its full tiles'
    TMA stores), which never reads it; that the two kinds of store never meet on an element is the verifier's *output
    written once* check (a tile stored both ways is `COVERAGE_OUTPUT_TWICE`). And one more: a synchronous load from
    the destination after a `T.group_barrier` (which completes the scope's TMA stores before its arrival: the split-K
    units of `gemm_split_fused` read each other's slices)."""
    stores = [s for s in walk(body) if isinstance(s, Copy) and s.atom == "tma.store"]
    if not stores:
        return
    owned = {s.staging.buffer: "staging buffer" for s in stores} | {s.dst.buffer: "destination" for s in stores}
    destinations = {s.dst.buffer for s in stores}
    after_group_barrier = False
    for s in walk(body):
        after_group_barrier = after_group_barrier or isinstance(s, GroupBarrier)
        if isinstance(s, Copy) and s.atom == "tma.store":
            continue
        if (
            after_group_barrier
            and isinstance(s, Copy)
            and s.src.buffer in destinations
            and s.dst.buffer.space == Space.FRAGMENT
            and s.atom in ("auto", "direct", "vector")
        ):
            continue  # a load after the group barrier completed the TMA stores (see above)
        if (
            isinstance(s, Copy)
            and s.dst.buffer in destinations
            and s.atom in ("auto", "direct")
            and s.src.buffer not in owned
            and s.dst.buffer is not s.src.buffer
        ):
            continue  # a synchronous store beside the TMA stores (see above)
        for f in dataclasses.fields(s):
            value = getattr(s, f.name)
            for ref in value if isinstance(value, tuple) else (value,):
                buffer = getattr(ref, "buffer", None)
                if isinstance(ref, TileRef) and buffer in owned:
                    raise DSLError(
                        "DSL_TMA_STAGING",
                        f"kernel {kernel_name}: {buffer.name} is the {owned[buffer]} of a tma.store, which is "
                        "asynchronous; no other statement may use it",
                        "give the statement its own buffer, or store with a synchronous copy",
                        loc=s.loc,
                    )


def _field_values(x: Any) -> Iterator[Any]:
    """Every expression and tile reference one statement field holds (tuples and broadcasts opened; a
    reference's origin, extent and bound expressions included)."""
    if isinstance(x, tuple):
        for y in x:
            yield from _field_values(y)
    elif isinstance(x, TileRef):
        yield x
        yield from _field_values(x.origin)
        yield from _field_values(x.bound or ())
    elif isinstance(x, Expr):
        yield x
    elif dataclasses.is_dataclass(x) and hasattr(x, "ref"):  # a broadcast view of a fragment
        yield from _field_values(x.ref)


def check_elements(kernel_name: str, body: tuple) -> None:
    """A tensor read element by element (``offs[g]``) is not written by the kernel (its elements are read anywhere,
    at any time, so a write could race with every read); a bounded window (``bound=``) is the destination of a
    synchronous store only (loads and TMA boxes are masked at the tensor's end, not at a bound)."""
    read: dict[Any, Any] = {}
    for s in walk(body):
        for f in dataclasses.fields(s):
            if f.name in ("loc", "made_by"):
                continue
            for x in _field_values(getattr(s, f.name)):
                if isinstance(x, Expr):
                    for e in elements(x):
                        read.setdefault(e.buffer, s.loc)
                elif isinstance(x, TileRef) and x.bound is not None:
                    store = isinstance(s, Copy) and x is s.dst and s.atom != "tma.store"
                    if not store:
                        what = type(s).__name__ + (
                            " (tma.store)" if isinstance(s, Copy) and s.atom == "tma.store" else ""
                        )
                        raise DSLError(
                            "DSL_WINDOW",
                            f"kernel {kernel_name}: a window of {x.buffer.name} with a bound is used by a {what}",
                            "a bound masks the elements of a synchronous store (T.copy from a fragment or shared "
                            "memory into the window); load the whole window (it is masked at the tensor's end) "
                            "and store through a bounded one",
                            loc=s.loc,
                        )
    for s in walk(body):
        dst = getattr(s, "dst", None)
        if isinstance(s, GroupBarrier):
            dst = s.counter
        if isinstance(dst, TileRef) and dst.buffer in read:
            raise DSLError(
                "DSL_ELEMENT",
                f"kernel {kernel_name}: {dst.buffer.name} is read element by element ({dst.buffer.name}[...]) and "
                "written by this statement",
                "read device-side metadata from a tensor the kernel does not write",
                loc=s.loc,
            )


def fill(dst: Tile, value: Any) -> None:
    """Set every element of `dst` to `value`."""
    st = current("T.fill")
    st.emit(Fill(dst.ref, as_expr(value), loc=caller_loc()))
