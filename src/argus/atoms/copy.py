"""Copy atoms: 16-byte vector global loads and stores, ``cp.async``, ``ldmatrix`` and ``stmatrix``.

Layouts map ``(thread, value)`` to the column-major index of an element in the atom's tile, once for
the source side (`src_layout`) and once for the destination side (`dst_layout`): the element a thread
reads as its value ``v`` on one side is the element it writes as ``v`` on the other.

* Per-thread vector copies (``ld.global.v4``/``st.global.v4``, SASS ``LDG.128``/``STG.128``, and
  ``cp.async``): the tile is one contiguous vector of ``bytes * 8 / element_bits`` elements, lowest
  address first; one thread (``(1, V):(0, 1)``).
* ``ldmatrix``/``stmatrix`` ``.x1/.x2/.x4`` move ``num`` 8x8 matrices of 16-bit elements. The tile is
  ``(8*num, 8)``: row ``8*j + r`` is row ``r`` of matrix ``j`` (the matrix whose row addresses lanes
  ``8j..8j+7`` supply), index ``row + 8*num*col``. On the shared-memory side lane ``t < 8*num``
  supplies the address of row ``t`` and the 8 elements there are its values (lanes ``>= 8*num`` alias
  the lower lanes: their addresses are ignored). On the register side value ``v = 2*j + h`` is half
  ``h`` of destination (``ldmatrix``) or source (``stmatrix``) register ``r_j``: lane ``t`` holds row
  ``t/4``, columns ``2*(t%4) + h`` of matrix ``j`` (PTX ISA, "Warp-level matrix load instruction:
  ldmatrix", figure "ldmatrix fragment layout for one 8x8 matrix with 16-bit elements"); with ``.trans`` it holds
  row ``2*(t%4) + h``, column ``t/4`` instead (the matrix transposed on the way).

**The ``.trans`` rule** is written here once: `matrix_transpose` (where an element goes when its 8x8 matrix is
transposed), `matrix_holder` (which lane and register half hold an element of a matrix, with or without ``.trans``:
the ``.trans`` fragment layouts are built from it), `ldmatrix_trans` (whether an mma.sync operand fragment needs
``.trans`` from a given shared layout) and `ldmatrix_transposes` (whether a forced variant, `FORCED_TRANS`, delivers
every matrix transposed). The interpreter, the verifier and the code generator all decide and apply ``.trans``
through them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from argus.atoms.common import WARP_SIZE, MemorySpace, Scope, supported_dtype
from argus.atoms.errors import AtomError, raise_first
from argus.ir.types import DType, dtype_from_name
from argus.layout import Layout
from argus.layout.arith import floordiv, mod


class CopyKind(StrEnum):
    GLOBAL_LOAD = "global_load"
    GLOBAL_STORE = "global_store"
    CP_ASYNC = "cp_async"
    LDMATRIX = "ldmatrix"
    STMATRIX = "stmatrix"
    TMA_LOAD = "tma_load"
    TMA_STORE = "tma_store"


#: Element widths the per-thread vector atoms are registered for.
VECTOR_ELEMENT_BITS = (8, 16, 32)


@dataclass(frozen=True, kw_only=True)
class CopyAtom:
    """What all copy atoms share.

    Attributes:
        name: unique registry name.
        ptx: the PTX opcode (qualifiers included).
        kind: which family.
        src_space, dst_space: where the data comes from and goes to.
        scope: the threads that execute one instance together.
        thread_count: threads in the thread mode of the layouts.
        arch: the PTX target argus requires for the instruction (the one that introduced it, or sm_80
            for instructions older than argus's oldest target).
    """

    name: str
    ptx: str
    kind: CopyKind
    src_space: MemorySpace
    dst_space: MemorySpace
    scope: Scope
    thread_count: int
    arch: str


def _misaligned(code: str, atom: str, what: str, address: int, alignment: int, hint: str) -> AtomError:
    return AtomError(
        code,
        f"{atom}: {what} is not {alignment}-byte aligned",
        requirement=f"{what} a multiple of {alignment} bytes",
        actual=f"{address} (= {alignment} * {address // alignment} + {address % alignment})",
        hint=hint,
    )


# --- per-thread vectors -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class VectorCopyAtom(CopyAtom):
    """One thread copies `vector_bytes` contiguous bytes, viewed as elements of `element_bits`.

    Attributes:
        element_bits: width of the elements the layouts count.
        vector_bytes: bytes one thread moves.
        alignment: required alignment of every address, in bytes.
        src_layout, dst_layout: ``(1, V):(0, 1)`` with ``V = vector_bytes * 8 / element_bits``.
    """

    element_bits: int
    vector_bytes: int
    alignment: int
    src_layout: Layout
    dst_layout: Layout

    @property
    def tile_shape(self) -> tuple[int]:
        return (self.values_per_thread,)

    @property
    def values_per_thread(self) -> int:
        return self.vector_bytes * 8 // self.element_bits

    def accepts(self, dtype: DType | str) -> bool:
        """True when elements of `dtype` are what this atom's layouts count."""
        dt = dtype_from_name(dtype)
        return dt.supported and dt.bits == self.element_bits


@dataclass(frozen=True, kw_only=True)
class GlobalVectorAtom(VectorCopyAtom):
    """``ld.global.v4.b32`` / ``st.global.v4.b32`` (SASS ``LDG.128`` / ``STG.128``)."""

    def diagnose(self, address: int) -> tuple[AtomError, ...]:
        """Problems with the global address one thread accesses."""
        if address % self.alignment:
            return (
                _misaligned(
                    "ATOM_VECTOR_ALIGN",
                    self.name,
                    "the global address",
                    address,
                    self.alignment,
                    "start rows and tiles at multiples of 16 bytes (pad the leading dimension), or use a narrower "
                    "vector",
                ),
            )
        return ()

    def check(self, address: int) -> None:
        """Raise the first problem `diagnose` finds."""
        raise_first(self.diagnose(address))


@dataclass(frozen=True, kw_only=True)
class CpAsyncAtom(VectorCopyAtom):
    """``cp.async.{ca,cg}.shared.global``: one thread copies 4, 8 or 16 bytes global -> shared.

    Attributes:
        cache: ``"ca"`` (cache at all levels) or ``"cg"`` (L2 only; 16 bytes only).
    """

    cache: str

    def diagnose(self, src_address: int, dst_address: int, src_size: int | None = None) -> tuple[AtomError, ...]:
        """Problems with one thread's copy: both addresses aligned to the copy size; the optional
        ``src-size`` operand (bytes read, the rest zero-filled) within ``[0, cp-size]``."""
        problems = []
        for what, address in (
            ("the global source address", src_address),
            ("the shared destination address", dst_address),
        ):
            if address % self.alignment:
                problems.append(
                    _misaligned(
                        "ATOM_CP_ASYNC_ALIGN",
                        self.name,
                        what,
                        address,
                        self.alignment,
                        f"align both addresses to {self.vector_bytes} bytes, or use a smaller cp-size",
                    )
                )
        if src_size is not None and not 0 <= src_size <= self.vector_bytes:
            problems.append(
                AtomError(
                    "ATOM_CP_ASYNC_SRC_SIZE",
                    f"{self.name}: src-size is the number of bytes read (the rest is zero-filled)",
                    requirement=f"0 <= src-size <= cp-size ({self.vector_bytes})",
                    actual=f"src-size = {src_size}",
                    hint="clamp src-size to the bytes left in bounds",
                )
            )
        return tuple(problems)

    def check(self, src_address: int, dst_address: int, src_size: int | None = None) -> None:
        """Raise the first problem `diagnose` finds."""
        raise_first(self.diagnose(src_address, dst_address, src_size))


def _element_bits(dtype_or_bits: DType | str | int, atom: str) -> int:
    if isinstance(dtype_or_bits, int) and not isinstance(dtype_or_bits, bool):
        bits = dtype_or_bits
    else:
        bits = supported_dtype(dtype_or_bits, atom, "element dtype").bits
    if bits not in VECTOR_ELEMENT_BITS:
        raise AtomError(
            "ATOM_ELEMENT_BITS",
            f"{atom} is modelled for 8-, 16- and 32-bit elements",
            actual=f"{bits}-bit elements",
        )
    return bits


def _vector_layout(bits: int, nbytes: int) -> Layout:
    return Layout((1, nbytes * 8 // bits), (0, 1))


def global_load(dtype_or_bits: DType | str | int = 16) -> GlobalVectorAtom:
    """The 16-byte vector global load (``LDG.128``) with layouts counting elements of the given width."""
    bits = _element_bits(dtype_or_bits, "ld.global.v4.b32")
    return GlobalVectorAtom(
        name=f"ldg.128.b{bits}",
        ptx="ld.global.v4.b32",
        kind=CopyKind.GLOBAL_LOAD,
        src_space=MemorySpace.GLOBAL,
        dst_space=MemorySpace.REGISTERS,
        scope=Scope.THREAD,
        thread_count=1,
        arch="sm_80",
        element_bits=bits,
        vector_bytes=16,
        alignment=16,
        src_layout=_vector_layout(bits, 16),
        dst_layout=_vector_layout(bits, 16),
    )


def global_store(dtype_or_bits: DType | str | int = 16) -> GlobalVectorAtom:
    """The 16-byte vector global store (``STG.128``)."""
    bits = _element_bits(dtype_or_bits, "st.global.v4.b32")
    return GlobalVectorAtom(
        name=f"stg.128.b{bits}",
        ptx="st.global.v4.b32",
        kind=CopyKind.GLOBAL_STORE,
        src_space=MemorySpace.REGISTERS,
        dst_space=MemorySpace.GLOBAL,
        scope=Scope.THREAD,
        thread_count=1,
        arch="sm_80",
        element_bits=bits,
        vector_bytes=16,
        alignment=16,
        src_layout=_vector_layout(bits, 16),
        dst_layout=_vector_layout(bits, 16),
    )


#: cp.async copy sizes in bytes (PTX ISA, "cp.async", operand ``cp-size``).
CP_ASYNC_SIZES = (4, 8, 16)


def cp_async(nbytes: int = 16, cache: str = "cg", dtype_or_bits: DType | str | int = 16) -> CpAsyncAtom:
    """``cp.async.{ca,cg}.shared.global [dst], [src], nbytes``: `nbytes` in {4, 8, 16}; ``.cg``
    (bypass L1) exists for 16 bytes only. Raises `AtomError` ``ATOM_CP_ASYNC_SIZE`` /
    ``ATOM_CP_ASYNC_CACHE``."""
    if nbytes not in CP_ASYNC_SIZES:
        raise AtomError(
            "ATOM_CP_ASYNC_SIZE",
            "cp.async copies 4, 8 or 16 bytes per thread",
            requirement="cp-size in {4, 8, 16}",
            actual=f"cp-size = {nbytes!r}",
            hint="split the copy into 16-byte pieces",
        )
    if cache not in ("ca", "cg"):
        raise AtomError(
            "ATOM_CP_ASYNC_CACHE",
            "cp.async's cache operator is .ca (all levels) or .cg (L2 only)",
            actual=f"cache = {cache!r}",
        )
    if cache == "cg" and nbytes != 16:
        raise AtomError(
            "ATOM_CP_ASYNC_CACHE",
            "cp.async.cg (bypass L1) exists only for 16-byte copies",
            requirement="cp-size = 16 with .cg",
            actual=f"cp.async.cg with cp-size = {nbytes}",
            hint="use cp.async.ca for 4- and 8-byte copies, or copy 16 bytes",
        )
    bits = _element_bits(dtype_or_bits, f"cp.async.{cache}")
    if nbytes * 8 < bits:
        raise AtomError(
            "ATOM_ELEMENT_BITS",
            f"a {nbytes}-byte cp.async cannot hold a {bits}-bit element",
            actual=f"{bits}-bit elements",
        )
    return CpAsyncAtom(
        name=f"cp.async.{cache}.{nbytes}.b{bits}",
        ptx=f"cp.async.{cache}.shared.global",
        kind=CopyKind.CP_ASYNC,
        src_space=MemorySpace.GLOBAL,
        dst_space=MemorySpace.SHARED,
        scope=Scope.THREAD,
        thread_count=1,
        arch="sm_80",
        element_bits=bits,
        vector_bytes=nbytes,
        alignment=nbytes,
        src_layout=_vector_layout(bits, nbytes),
        dst_layout=_vector_layout(bits, nbytes),
        cache=cache,
    )


# --- ldmatrix / stmatrix -----------------------------------------------------------------------------

#: Matrices per ``ldmatrix``/``stmatrix`` (``.x1``, ``.x2``, ``.x4``).
MATRIX_COUNTS = (1, 2, 4)
#: Alignment of each row address (a row is 16 bytes, PTX: "naturally aligned accordingly").
MATRIX_ROW_ALIGNMENT = 16


@dataclass(frozen=True, kw_only=True)
class MatrixCopyAtom(CopyAtom):
    """``ldmatrix`` / ``stmatrix`` ``.m8n8.x{num}{.trans}.b16`` (see the module docstring).

    Attributes:
        num: matrices moved (1, 2 or 4).
        trans: True for ``.trans``.
        element_bits: 16.
        address_layout: shared-memory side: lane ``t`` supplies the address of tile row ``t``
            (lanes past ``8*num`` alias lower lanes, stride 0); its 8 values are that row.
        fragment_layout: register side: value ``2*j + h`` is half ``h`` of register ``r_j``.
        row_alignment: bytes each row address must be aligned to.
    """

    num: int
    trans: bool
    element_bits: int
    address_layout: Layout
    fragment_layout: Layout
    row_alignment: int

    @property
    def tile_shape(self) -> tuple[int, int]:
        return (8 * self.num, 8)

    @property
    def src_layout(self) -> Layout:
        return self.address_layout if self.kind is CopyKind.LDMATRIX else self.fragment_layout

    @property
    def dst_layout(self) -> Layout:
        return self.fragment_layout if self.kind is CopyKind.LDMATRIX else self.address_layout

    @property
    def address_lanes(self) -> tuple[int, ...]:
        """Lanes whose address operand is used: ``0 .. 8*num - 1``."""
        return tuple(range(8 * self.num))

    def row_address_lane(self, matrix: int, row: int) -> int:
        """The lane that supplies the address of row `row` of matrix `matrix`."""
        if not (0 <= matrix < self.num and 0 <= row < 8):
            raise AtomError(
                "ATOM_MATRIX_INDEX",
                f"{self.name} moves {self.num} matrices of 8 rows",
                actual=f"matrix {matrix}, row {row}",
            )
        return 8 * matrix + row

    def register(self, value: int) -> tuple[int, int]:
        """``(register, half)`` of fragment value `value`: ``(value // 2, value % 2)``."""
        return value // 2, value % 2

    def diagnose(self, row_addresses: Sequence[int]) -> tuple[AtomError, ...]:
        """Problems with the shared-memory row addresses (one per row, lane order: ``8*num`` of them)."""
        problems: list[AtomError] = []
        if len(row_addresses) != 8 * self.num:
            problems.append(
                AtomError(
                    "ATOM_MATRIX_ADDRESSES",
                    f"{self.name} takes one shared-memory address per matrix row from lanes 0..{8 * self.num - 1}",
                    requirement=f"{8 * self.num} row addresses",
                    actual=f"{len(row_addresses)} addresses",
                )
            )
        for lane, address in enumerate(row_addresses):
            if address % self.row_alignment:
                problems.append(
                    _misaligned(
                        "ATOM_MATRIX_ALIGN",
                        self.name,
                        f"the row address of lane {lane}",
                        address,
                        self.row_alignment,
                        "each 8-element row of 16-bit values must start on a 16-byte boundary; check the swizzle "
                        "and the leading dimension",
                    )
                )
        return tuple(problems)

    def check(self, row_addresses: Sequence[int]) -> None:
        """Raise the first problem `diagnose` finds."""
        raise_first(self.diagnose(row_addresses))


def _address_layout(num: int) -> Layout:
    rows = 8 * num
    thread = rows if rows == WARP_SIZE else (rows, WARP_SIZE // rows)
    thread_stride = 1 if rows == WARP_SIZE else (1, 0)
    return Layout((thread, 8), (thread_stride, rows))


def _fragment_layout(num: int, trans: bool) -> Layout:
    rows = 8 * num
    # (row, col) steps of lane = (lane % 4, lane / 4) and value = (half, matrix): lane t holds row t/4, columns
    # 2*(t%4) + half of matrix j (rows 8j..); with .trans, every element at its transposed position
    steps = (((0, 2), (1, 0)), ((0, 1), (8, 0)))

    def index(step: tuple[int, int]) -> int:
        row, col = matrix_transpose(*step) if trans else step
        return row + rows * col

    return Layout(((4, 8), (2, num)), tuple(tuple(index(step) for step in mode) for mode in steps))


def _matrix_atom(kind: CopyKind, num: int, trans: bool) -> MatrixCopyAtom:
    op = "ldmatrix" if kind is CopyKind.LDMATRIX else "stmatrix"
    if num not in MATRIX_COUNTS:
        raise AtomError(
            "ATOM_MATRIX_NUM",
            f"{op} moves one, two or four 8x8 matrices",
            requirement=".num in {.x1, .x2, .x4}",
            actual=f"num = {num!r}",
            hint="issue several instructions for more matrices",
        )
    suffix = f".x{num}" + (".trans" if trans else "")
    load = kind is CopyKind.LDMATRIX
    return MatrixCopyAtom(
        name=f"{op}{suffix}.b16",
        ptx=f"{op}.sync.aligned.m8n8{suffix}.shared.b16",
        kind=kind,
        src_space=MemorySpace.SHARED if load else MemorySpace.REGISTERS,
        dst_space=MemorySpace.REGISTERS if load else MemorySpace.SHARED,
        scope=Scope.WARP,
        thread_count=WARP_SIZE,
        arch="sm_80" if load else "sm_90",
        num=num,
        trans=bool(trans),
        element_bits=16,
        address_layout=_address_layout(num),
        fragment_layout=_fragment_layout(num, bool(trans)),
        row_alignment=MATRIX_ROW_ALIGNMENT,
    )


def ldmatrix(num: int = 4, trans: bool = False) -> MatrixCopyAtom:
    """``ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16``. Raises ``ATOM_MATRIX_NUM``."""
    return _matrix_atom(CopyKind.LDMATRIX, num, trans)


def stmatrix(num: int = 4, trans: bool = False) -> MatrixCopyAtom:
    """``stmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16`` (sm_90). Raises ``ATOM_MATRIX_NUM``."""
    return _matrix_atom(CopyKind.STMATRIX, num, trans)


def matrix_accepts(dtype: DType | str) -> bool:
    """True when `dtype` can be moved by ``ldmatrix``/``stmatrix`` ``.b16`` (any supported 16-bit type)."""
    dt = dtype_from_name(dtype)
    return dt.supported and dt.bits == 16


# --- .trans: which variant, and what it does ---------------------------------------------------------------

#: The DSL's ``ldmatrix`` copies that force a variant (the lane-level escape hatch), and the ``.trans`` each
#: forces. ``"ldmatrix"`` (and ``"stmatrix"``) take the variant the layouts call for.
FORCED_TRANS: dict[str, bool] = {"ldmatrix.x4": False, "ldmatrix.x4.trans": True}


def forced_trans(copy_atom: str) -> bool | None:
    """The ``.trans`` the DSL copy atom named `copy_atom` forces, or None where the layouts decide."""
    return FORCED_TRANS.get(copy_atom)


def matrix_transpose(row: Any, col: Any) -> tuple[Any, Any]:
    """The position of element ``(row, col)`` of a tile of 8x8 matrices once its matrix is transposed:
    ``(8*(row//8) + col%8, 8*(col//8) + row%8)``. An ``ldmatrix`` whose ``.trans`` disagrees with the
    shared layout delivers, in the slot meant for an element, the element at this position. Ints, numpy
    arrays and Z3 terms (`argus.layout.arith`)."""
    return floordiv(row, 8) * 8 + mod(col, 8), floordiv(col, 8) * 8 + mod(row, 8)


def matrix_holder(row: Any, col: Any, trans: bool) -> tuple[Any, Any]:
    """``(lane, half)``: the lane and the half of its register that hold element ``(row, col)`` (``0 <= row, col
    < 8``) of one 8x8 matrix on the register side of ``ldmatrix``/``stmatrix``: lane ``4*row + col//2``, half
    ``col % 2`` (PTX ISA figure); with ``.trans``, the holder of the transposed position (`matrix_transpose`)."""
    if trans:
        row, col = matrix_transpose(row, col)
    return 4 * row + floordiv(col, 2), mod(col, 2)


def ldmatrix_trans(operand: str, offset: Callable[[tuple[int, int]], int]) -> bool:
    """Whether ``ldmatrix`` needs ``.trans`` to fill an ``mma.sync`` A or B fragment from a shared tile whose
    element ``(row, col)`` is at `offset((row, col))` (elements): a fragment register holds two neighbours along
    K (A ``(M, K)``: along columns; B ``(K, N)``: along rows), which ``ldmatrix`` takes from one 16-byte row (no
    ``.trans``) only when they are neighbours in memory."""
    along_k = (0, 1) if operand == "A" else (1, 0)
    return offset(along_k) - offset((0, 0)) != 1


def ldmatrix_transposes(copy_atom: str, operand: str, offset: Callable[[tuple[int, int]], int]) -> bool:
    """True when the DSL copy `copy_atom` into an ``mma.sync`` `operand` fragment delivers every 8x8 matrix
    transposed (`matrix_transpose`): a forced variant (`FORCED_TRANS`) whose ``.trans`` disagrees with the one
    the layouts call for (`ldmatrix_trans`; `offset` is only called for a forced variant)."""
    forced = forced_trans(copy_atom)
    return forced is not None and forced != ldmatrix_trans(operand, offset)


# --- widening register stores by a lane exchange ---------------------------------------------------------

#: Bytes one thread stores per instruction after a lane exchange (``st.global.v4.b32``, SASS ``STG.E.128``).
EXCHANGE_BYTES = 16


@dataclass(frozen=True)
class LaneExchange:
    """How `lanes` neighbouring lanes (``t % lanes`` differs, the rest of ``t`` the same) turn short runs of
    a fragment into 16-byte runs before a global store, by transposing their runs in registers
    (``shfl.sync.bfly``, one round per bit of `lanes`).

    Before: every thread holds ``len(groups) * lanes`` runs of `width` consecutive elements; run ``r`` is its
    values ``r*width .. r*width+width-1``. ``groups[G]`` lists `lanes` of those run indices. After: lane
    ``q = t % lanes`` holds, for each group ``G``, run ``groups[G][q]`` of lanes ``t - q + 0, .., t - q +
    lanes-1``, in that order: one run of ``lanes * width`` elements (16 bytes), contiguous and aligned in
    memory. For the accumulator of ``wgmma`` (and of ``mma.sync``) with a 16-bit output, a quad of threads
    holds 2 consecutive columns each of an 8-column chunk: 4-byte stores, a quad writing half a 32-byte
    sector per row; after the exchange each thread writes one 8-column chunk with a 16-byte store and a
    quad 64 contiguous bytes."""

    lanes: int
    width: int
    groups: tuple[tuple[int, ...], ...]

    @property
    def vector(self) -> int:
        """Elements per store after the exchange."""
        return self.lanes * self.width

    def regroup(self, per_value: np.ndarray) -> np.ndarray:
        """``per_value[t, v, ...]`` (anything per thread and value) rearranged as the threads hold it after the
        exchange: value ``G * vector + i * width + e`` of thread ``t`` is value ``groups[G][t % lanes] * width +
        e`` of thread ``t - t % lanes + i``."""
        threads = per_value.shape[0]
        t = np.arange(threads)
        q = t % self.lanes
        out = np.empty_like(per_value)
        for g, runs in enumerate(self.groups):
            run = np.asarray(runs)[q]
            for i in range(self.lanes):
                src = t - q + i
                for e in range(self.width):
                    out[:, g * self.vector + i * self.width + e] = per_value[src, run * self.width + e]
        return out


def lane_exchange(positions: np.ndarray, element_bytes: int) -> LaneExchange | None:
    """The `LaneExchange` that makes every thread's stores 16-byte runs, or None when there is none.

    `positions[t, v]` is the element offset (in elements along a linear address) that value ``v`` of thread ``t``
    is stored at. Required: whole warps (a multiple of 32 threads), runs of `width` elements (a power of two of
    at least 4 and less than 16 bytes) contiguous and aligned in every thread, and after the exchange every
    16-byte run contiguous and 16-byte aligned, for every thread; and a gain: some warp's store of a run writes
    part of a 32-byte sector (an f32 accumulator's 8-byte pairs fill whole sectors already). The groups are
    thread 0's runs in address order, `lanes` at a time; the result is checked for every thread, so a plan
    returned is exact."""
    positions = np.asarray(positions, dtype=np.int64)
    if positions.ndim != 2:
        return None
    threads, values = positions.shape
    if threads == 0 or threads % WARP_SIZE or np.any(positions < 0):
        return None
    width = 0
    w = 1
    while w <= values and w * element_bytes < EXCHANGE_BYTES:
        if values % w == 0 and (w * element_bytes) % 4 == 0:
            runs = positions.reshape(threads, values // w, w)
            if np.array_equal(runs, runs[:, :, :1] + np.arange(w)) and np.all(runs[:, :, 0] % w == 0):
                width = w
        w *= 2
    if not width:
        return None
    lanes = EXCHANGE_BYTES // (width * element_bytes)
    count = values // width
    if lanes < 2 or count % lanes or _whole_sectors(positions, width, element_bytes):
        return None
    order = np.argsort(positions[0, ::width], kind="stable")
    groups = tuple(tuple(int(r) for r in order[i : i + lanes]) for i in range(0, count, lanes))
    plan = LaneExchange(lanes, width, groups)
    after = plan.regroup(positions).reshape(threads, count // lanes, plan.vector)
    if not np.array_equal(after, after[:, :, :1] + np.arange(plan.vector)) or np.any(after[:, :, 0] % plan.vector):
        return None
    return plan


def _whole_sectors(positions: np.ndarray, width: int, element_bytes: int) -> bool:
    """True when every warp's store of each run already writes whole 32-byte sectors (nothing to gain)."""
    threads, values = positions.shape
    for w0 in range(0, threads, WARP_SIZE):
        for r in range(0, values, width):
            block = positions[w0 : w0 + WARP_SIZE, r : r + width].ravel() * element_bytes
            sectors = len(set((block // 32).tolist()))
            if sectors * 32 > -(-len(set(block.tolist())) * element_bytes // 32) * 32:
                return False
    return True


def tile_lane_exchange(coords: np.ndarray, run_dim: int, element_bytes: int) -> LaneExchange | None:
    """`lane_exchange` for a fragment given by its tile coordinates ``coords[t, v, d]``, stored along tile dimension
    `run_dim`: the coordinates are linearized with `run_dim` last, so runs are contiguous only along it and
    aligned in tile coordinates (the window's own alignment is the lowering's run-time condition)."""
    coords = np.asarray(coords, dtype=np.int64)
    positions = np.zeros(coords.shape[:2], dtype=np.int64)
    for d in [d for d in range(coords.shape[2]) if d != run_dim] + [run_dim]:
        positions = positions * (1 << 20) + coords[:, :, d]
    return lane_exchange(positions, element_bytes)
