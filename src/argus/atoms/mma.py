"""MMA atoms: ``mma.sync.aligned.m16n8k16`` (one warp), ``wgmma.mma_async.m64nNk16`` (one warpgroup; 16-bit
inputs), ``wgmma.mma_async.m64nNk32`` (8-bit floats, FP8 e4m3/e5m2) and ``wgmma.mma_async.m64nNk8`` (f32 data read
as TF32), and the per-thread FMA atom (`fma`: one thread, ``1x1x1``, CUDA-core ``fma.rn.f32``).

An `MmaAtom` computes ``C[M,N] += A[M,K] * B[K,N]``. Its operand layouts map ``(thread, value)`` to
the column-major index of the element in the operand's tile:

* A: tile ``(M, K)``, index ``m + M*k``;
* B: tile ``(N, K)`` (B *transposed*, as CuTe writes it), index ``n + N*k``;
* C/D: tile ``(M, N)``, index ``m + M*n``.

The thread mode counts lanes 0..31 (``mma.sync``) or threads 0..127 of the warpgroup (``wgmma``;
``threadIdx.x % 128`` for a warpgroup of four consecutive warps). The value mode counts the PTX
fragment's elements in the order the ISA names them: value ``i`` is ``ai``/``bi``/``ci``/``di``.
A shared-memory operand of ``wgmma`` is read by the whole warpgroup through a matrix descriptor; its
layout ``(128, (rows, K)) : (0, (1, rows))`` says that every thread "holds" the whole tile (stride 0
over threads), and `argus.atoms.smem` gives the canonical layouts that tile may have in memory.

**The tiled MMA's register-slot rule** (`slot_element`) is written here once: a ``(M, N)`` accumulator is
split over a grid of thread groups (`group_subtile`, `group_origin`), each group repeats the atom over its
sub-tile, and register slot ``(lane, value)`` of a group's fragment holds, for the instruction, the sub-tile
element `slot_element` names. The DSL builds its fragment layouts from it (`argus.lang.fragments.mma_tv`),
the interpreter reads registers by it and the verifier encodes it; its arithmetic is `argus.layout.arith`'s
(or a caller's `Arithmetic`), so one definition works on ints, numpy arrays and Z3 bit-vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from argus.atoms.common import WARP_SIZE, WARPGROUP_SIZE, MemorySpace, Scope, memory_space, supported_dtype
from argus.atoms.errors import AtomError, raise_first
from argus.atoms.smem import DESCRIPTOR_ALIGNMENT, Major, check_swizzle_base
from argus.ir.types import DType, bf16, e4m3, e5m2, f16, f32
from argus.layout import Layout, arith

Operand = Literal["A", "B", "C"]


def _unchanged(x: Any) -> Any:
    return x


@dataclass(frozen=True)
class Arithmetic:
    """How the register-slot rule divides: ``floordiv(a, b)`` and ``mod(a, b)`` by a positive int ``b``, and `lift`
    applied to an index the atom's layout returns (a plain int where the layout is constant), so that a caller
    can keep every term in its own domain. Both must agree with ``//`` and ``%`` on non-negative values."""

    floordiv: Callable[[Any, int], Any]
    mod: Callable[[Any, int], Any]
    lift: Callable[[Any], Any] = _unchanged


#: `argus.layout.arith`'s operations: ints, numpy arrays (elementwise) and Z3 terms (bit-vectors unsigned).
LAYOUT_ARITHMETIC = Arithmetic(arith.floordiv, arith.mod)

#: The N extents ``wgmma.mma_async.m64nNk16`` accepts (PTX ISA, wgmma "Matrix Shape").
WGMMA_N_VALUES = tuple(range(8, 257, 8))

#: Input dtypes of the k16 shapes and the accumulators each allows (PTX ISA §9.7.14.5.8 "mma" and the
#: wgmma "Matrix Shape" table).
_K16_ACCUMULATORS: dict[str, tuple[DType, ...]] = {"bf16": (f32,), "f16": (f32, f16)}

#: Input dtypes of the k32 ``wgmma`` shapes (8-bit floats; A and B may differ: ``.e4m3.e5m2`` is legal) and their
#: accumulators (PTX ISA, wgmma "Matrix Shape": ``.m64nNk32`` for ``.e4m3``/``.e5m2`` with ``.f32`` or ``.f16``).
_K32_ACCUMULATORS: dict[str, tuple[DType, ...]] = {"e4m3": (f32, f16), "e5m2": (f32, f16)}

#: Input dtypes the FP8 ``wgmma`` atoms take.
FP8_DTYPES: tuple[DType, ...] = (e4m3, e5m2)

#: Input dtypes of the k8 ``wgmma`` shapes: f32 data, which the instruction reads as TF32 (PTX ``.tf32``: f32's sign
#: and 8 exponent bits, the top 10 of its 23 mantissa bits), with an f32 accumulator (PTX ISA, wgmma "Matrix Shape":
#: ``.m64nNk8`` for ``.tf32``). Both operands K-major (transposition exists for 16-bit types only).
_K8_ACCUMULATORS: dict[str, tuple[DType, ...]] = {"f32": (f32,)}

#: The mantissa bits of f32 that a TF32 operand drops.
TF32_DROPPED_BITS = 13


def tf32_operand(x: Any) -> Any:
    """f32 values as a TF32 instruction multiplies them: the low `TF32_DROPPED_BITS` mantissa bits cleared (the
    tensor core reads the top 19 bits of each 32-bit element: truncation toward zero; infinities and NaNs keep
    their class). Checked bit for bit on an H200's ``wgmma ... .tf32`` (benchmarks/gemm_tf32.py: every element of
    ``A @ I`` equals this; cuBLAS's TF32 instead rounds to nearest-even first). The interpreter reads ``.tf32``
    operands through this; argus's kernels that want rounding to nearest convert first (``cvt.rna.tf32.f32``), as
    the split-precision scheme does."""
    import numpy as np

    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFFFFF ^ ((1 << TF32_DROPPED_BITS) - 1))).view(np.float32).astype(np.float64)


def wgmma_k(dtype: DType | str) -> int:
    """The K extent of one ``wgmma`` for inputs of `dtype`: 32 bytes of each operand's row, 16 elements of a 16-bit
    type, 32 of an 8-bit one."""
    dt = supported_dtype(dtype, "wgmma.mma_async", "A dtype")
    return 256 // dt.bits


@dataclass(frozen=True, kw_only=True)
class MmaAtom:
    """One MMA instruction as data.

    Attributes:
        name: unique registry name, e.g. ``"wgmma.m64n128k16.f32.bf16.bf16.ss"``.
        ptx: the PTX opcode, e.g. ``"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"``.
        shape: ``(M, N, K)``.
        a_dtype, b_dtype, acc_dtype: the element types of this instance.
        ab_dtypes: input dtypes the instruction family accepts at this K.
        acc_dtypes: accumulator dtypes allowed with `a_dtype`.
        thread_count: 32 or 128.
        scope: warp or warpgroup.
        a_source, b_source: registers or shared memory.
        a_layout, b_layout, c_layout: thread-value layouts (see the module docstring).
        a_majors, b_majors: major-ness accepted for an operand in shared memory (empty when the
            operand is in registers, whose layout is fixed).
        arch: the PTX target argus requires for the instruction (the one that introduced it, or sm_80
            for instructions older than argus's oldest target).
    """

    name: str
    ptx: str
    shape: tuple[int, int, int]
    a_dtype: DType
    b_dtype: DType
    acc_dtype: DType
    ab_dtypes: tuple[DType, ...]
    acc_dtypes: tuple[DType, ...]
    thread_count: int
    scope: Scope
    a_source: MemorySpace
    b_source: MemorySpace
    a_layout: Layout
    b_layout: Layout
    c_layout: Layout
    a_majors: tuple[Major, ...]
    b_majors: tuple[Major, ...]
    arch: str

    @property
    def m(self) -> int:
        return self.shape[0]

    @property
    def n(self) -> int:
        return self.shape[1]

    @property
    def k(self) -> int:
        return self.shape[2]

    @property
    def reads_tf32(self) -> bool:
        """True when the instruction reads its f32 operands as TF32 (``.tf32`` in the PTX opcode)."""
        return ".tf32" in self.ptx

    def operand_values(self, x: Any) -> Any:
        """An operand's element values (float64 numpy) as the instruction multiplies them: TF32 atoms drop the low
        mantissa bits of f32 data (`tf32_operand`); the others multiply the stored values exactly."""
        return tf32_operand(x) if self.reads_tf32 else x

    def layout(self, operand: Operand) -> Layout:
        """The thread-value layout of ``"A"``, ``"B"`` or ``"C"`` (C is also D)."""
        return {"A": self.a_layout, "B": self.b_layout, "C": self.c_layout, "D": self.c_layout}[_operand(operand)]

    def tile_shape(self, operand: Operand) -> tuple[int, int]:
        """``(rows, cols)`` of an operand's tile: A ``(M, K)``, B ``(N, K)``, C ``(M, N)``."""
        m, n, k = self.shape
        return {"A": (m, k), "B": (n, k), "C": (m, n), "D": (m, n)}[_operand(operand)]

    def operand_tile(self, operand: Operand) -> tuple[int, int]:
        """``(rows, cols)`` of an operand's tile as the GEMM indexes it: A ``(M, K)``, B ``(K, N)`` (the atom's
        layouts index B as ``(N, K)``, `tile_shape`), C ``(M, N)``."""
        rows, cols = self.tile_shape(operand)
        return (cols, rows) if _operand(operand) == "B" else (rows, cols)

    def operand_element(
        self, operand: Operand, index: Any, arithmetic: Arithmetic = LAYOUT_ARITHMETIC
    ) -> tuple[Any, Any]:
        """``(row, col)`` in `operand_tile` of the element at `index` of the operand's layout (column-major in
        `tile_shape`: for B, ``n + N*k`` is element ``(k, n)``). `index` is an int, a numpy array or a Z3 term."""
        op = _operand(operand)
        rows = self.tile_shape(op)[0]
        first, second = arithmetic.mod(index, rows), arithmetic.floordiv(index, rows)
        return (second, first) if op == "B" else (first, second)

    def source(self, operand: Operand) -> MemorySpace:
        op = _operand(operand)
        if op == "A":
            return self.a_source
        if op == "B":
            return self.b_source
        return MemorySpace.REGISTERS

    def dtype(self, operand: Operand) -> DType:
        return {"A": self.a_dtype, "B": self.b_dtype, "C": self.acc_dtype, "D": self.acc_dtype}[_operand(operand)]

    def values_per_thread(self, operand: Operand) -> int:
        """Elements one thread holds of a register operand (``a0..a7`` is 8); for a shared-memory
        operand, the whole tile."""
        layout = self.layout(operand)
        return layout.size() // self.thread_count

    def coord(self, operand: Operand, thread: int, value: int) -> tuple[int, int]:
        """``(row, col)`` in the operand's tile of value `value` of thread `thread`:
        ``(m, k)`` for A, ``(n, k)`` for B, ``(m, n)`` for C."""
        rows, _ = self.tile_shape(operand)
        index = self.layout(operand)(thread, value)
        return index % rows, index // rows

    def register(self, operand: Operand, value: int) -> tuple[int, int]:
        """``(register, slot)``: the 32-bit register of the fragment that holds value `value`, and its
        position in it (16-bit elements pack two per register, ``.f16x2``, the even value in the low
        half). Only register operands have registers."""
        op = _operand(operand)
        if self.source(op) is not MemorySpace.REGISTERS:
            raise AtomError(
                "ATOM_OPERAND_SOURCE",
                f"{self.name}: operand {op} is read from shared memory and has no registers",
                actual=f"operand {op} in {self.source(op)}",
            )
        per_register = 32 // self.dtype(op).bits
        return value // per_register, value % per_register

    def diagnose_smem_operand(
        self, operand: Operand, address: int, swizzle_bytes: int = 0, tile_base: int | None = None
    ) -> tuple[AtomError, ...]:
        """Problems with a shared-memory operand's matrix-descriptor start `address` (16-byte aligned,
        PTX ISA "Register Fragments and Shared Memory Matrix Layouts") and, when given, the start
        `tile_base` of the swizzled tile it lies in (at a swizzle-pattern boundary, see
        `argus.atoms.smem.check_swizzle_base`)."""
        op = _operand(operand)
        if self.source(op) is not MemorySpace.SHARED:
            return (
                AtomError(
                    "ATOM_OPERAND_SOURCE",
                    f"{self.name}: operand {op} is not read from shared memory",
                    actual=f"operand {op} in {self.source(op)}",
                ),
            )
        problems: list[AtomError] = []
        if address % DESCRIPTOR_ALIGNMENT:
            problems.append(
                AtomError(
                    "ATOM_WGMMA_SMEM_ALIGN",
                    f"{self.name}: operand {op}'s shared-memory start address is not 16-byte aligned",
                    requirement="matrix start address % 16 == 0",
                    actual=f"address {address} (% 16 = {address % 16})",
                    hint="advance descriptors by whole 16-byte chunks; align the buffer to at least 16 bytes",
                )
            )
        if tile_base is not None:
            problems.extend(check_swizzle_base(tile_base, swizzle_bytes, f"{self.name}'s operand {op} tile"))
        return tuple(problems)

    def check_smem_operand(
        self, operand: Operand, address: int, swizzle_bytes: int = 0, tile_base: int | None = None
    ) -> None:
        """Raise the first problem `diagnose_smem_operand` finds."""
        raise_first(self.diagnose_smem_operand(operand, address, swizzle_bytes, tile_base))


def _operand(operand: str) -> str:
    op = str(operand).upper()
    if op not in ("A", "B", "C", "D"):
        raise AtomError("ATOM_OPERAND", "an MMA operand is 'A', 'B' or 'C' (also 'D')", actual=repr(operand))
    return op


def _input_dtypes(atom: str, a_dtype: DType | str, b_dtype: DType | str | None, acc_dtype: DType | str) -> tuple:
    a = supported_dtype(a_dtype, atom, "A dtype")
    if a.name not in _K16_ACCUMULATORS:
        raise AtomError(
            "ATOM_MMA_DTYPE",
            f"{atom} multiplies 16-bit floats",
            requirement="A and B dtypes in {bf16, f16}",
            actual=f"A dtype {a.name}",
            hint="convert the operand to bf16 or f16 first (wgmma also multiplies e4m3/e5m2, at k32, and f32 as "
            "TF32, at k8)",
        )
    return _same_dtypes(atom, a, b_dtype, acc_dtype, _K16_ACCUMULATORS)


def _same_dtypes(
    atom: str,
    a_dtype: DType | str,
    b_dtype: DType | str | None,
    acc_dtype: DType | str,
    table: dict[str, tuple[DType, ...]],
) -> tuple:
    """(A, B, accumulator dtypes, the accumulators allowed) of an instruction whose A and B share one dtype."""
    a = supported_dtype(a_dtype, atom, "A dtype")
    b = a if b_dtype is None else supported_dtype(b_dtype, atom, "B dtype")
    if b != a:
        raise AtomError(
            "ATOM_MMA_DTYPE",
            f"{atom} needs A and B of the same dtype",
            requirement=f"B dtype == A dtype ({a.name})",
            actual=f"B dtype {b.name}",
            hint=f"convert B to {a.name}",
        )
    acc, allowed = _accumulator(atom, a, acc_dtype, table)
    return a, b, acc, allowed


def _accumulator(atom: str, a: DType, acc_dtype: DType | str, table: dict[str, tuple[DType, ...]]) -> tuple:
    """(the accumulator dtype, those allowed with `a`'s inputs by `table`), or ``ATOM_MMA_ACC_DTYPE``."""
    acc = supported_dtype(acc_dtype, atom, "accumulator dtype")
    allowed = table[a.name]
    if acc not in allowed:
        raise AtomError(
            "ATOM_MMA_ACC_DTYPE",
            f"{atom} with {a.name} inputs accumulates in {' or '.join(d.name for d in allowed)}",
            requirement=f"accumulator dtype in {{{', '.join(d.name for d in allowed)}}}",
            actual=f"accumulator dtype {acc.name}",
            hint="accumulate in f32",
        )
    return acc, allowed


# --- mma.sync.aligned.m16n8k16 ---------------------------------------------------------------------

#: A (16x16): lane = (threadID_in_group, groupID) = (lane % 4, lane / 4); value i = (i % 2, i / 2 % 2,
#: i / 4) steps one column, eight rows, eight columns (PTX ISA §9.7.14.5.8, Figure "MMA .m16n8k16
#: fragment layout for matrix A with .f16 / .bf16 type").
_MMA_A = Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128)))
#: B as (N, K) = (8x16): value i = (i % 2, i / 2) steps one k, eight k; groupID is the column n.
_MMA_B = Layout(((4, 8), (2, 2)), ((16, 1), (8, 64)))
#: C/D (16x8): value i = (i % 2, i / 2) steps one column, eight rows.
_MMA_C = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))


def mma_sync_m16n8k16(
    a_dtype: DType | str = bf16, b_dtype: DType | str | None = None, acc_dtype: DType | str = f32
) -> MmaAtom:
    """The warp-wide ``mma.sync.aligned.m16n8k16.row.col`` atom for bf16/f16 inputs.

    Accumulators: f32 (bf16 or f16 inputs) or f16 (f16 inputs). Raises `AtomError`
    (``ATOM_MMA_DTYPE``, ``ATOM_MMA_ACC_DTYPE``, ``ATOM_DTYPE_UNSUPPORTED``) for other dtypes.
    """
    a, b, acc, allowed = _input_dtypes("mma.sync.aligned.m16n8k16", a_dtype, b_dtype, acc_dtype)
    types = f"{acc.name}.{a.name}.{b.name}.{acc.name}"
    return MmaAtom(
        name=f"mma.m16n8k16.{types}",
        ptx=f"mma.sync.aligned.m16n8k16.row.col.{types}",
        shape=(16, 8, 16),
        a_dtype=a,
        b_dtype=b,
        acc_dtype=acc,
        ab_dtypes=(bf16, f16),
        acc_dtypes=allowed,
        thread_count=WARP_SIZE,
        scope=Scope.WARP,
        a_source=MemorySpace.REGISTERS,
        b_source=MemorySpace.REGISTERS,
        a_layout=_MMA_A,
        b_layout=_MMA_B,
        c_layout=_MMA_C,
        a_majors=(),
        b_majors=(),
        arch="sm_80",
    )


# --- wgmma.mma_async.sync.aligned.m64nNk16 -------------------------------------------------------

#: A from registers (64x16): thread = (threadID_in_group, groupID, warp) = (t % 4, t / 4 % 8, t / 32);
#: each warp holds rows 16*warp.. of the mma.sync A fragment (PTX ISA §9.7.15.5.1.1.1, Figure
#: "WGMMA .m64nNk16 register fragment layout for matrix A").
_WGMMA_A_REGISTERS = Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512)))


def _wgmma_c(n: int) -> Layout:
    """D (64xN): value i = (i % 2, i / 2 % 2, i / 4) steps one column, eight rows, eight columns."""
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


def _collective(rows: int, k: int) -> Layout:
    """A shared-memory operand: every thread of the warpgroup reads the whole ``rows x k`` tile."""
    return Layout((WARPGROUP_SIZE, (rows, k)), (0, (1, rows)))


def wgmma(
    n: int,
    a_dtype: DType | str = bf16,
    b_dtype: DType | str | None = None,
    acc_dtype: DType | str = f32,
    a_source: MemorySpace | Literal["shared", "registers"] = "shared",
) -> MmaAtom:
    """The warpgroup-wide ``wgmma.mma_async`` atom: ``m64nNk16`` for 16-bit inputs, ``m64nNk32`` for FP8,
    ``m64nNk8`` for f32 inputs read as TF32 (``.f32.tf32.tf32``: `tf32_operand`).

    `n` must be a multiple of 8 in [8, 256]; inputs bf16 (f32 accumulators), f16 (f32 or f16), the 8-bit floats
    e4m3 and e5m2 (f32 or f16; A and B may be of different FP8 types), or f32 (as TF32; f32 accumulators); B always
    comes from shared memory, A from shared memory (``"shared"``, the ``.ss`` form) or, for 16-bit inputs,
    registers (``"registers"``, the ``.rs`` form, which must be K-major). FP8 and TF32 operands in shared memory are
    K-major (PTX: transposition exists for 16-bit types only). Raises `AtomError` (``ATOM_WGMMA_N``,
    ``ATOM_MMA_DTYPE``, ``ATOM_MMA_ACC_DTYPE``, ``ATOM_OPERAND_SOURCE``).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n not in WGMMA_N_VALUES:
        lower = max(8, min(256, (n // 8) * 8)) if isinstance(n, int) and not isinstance(n, bool) else 8
        hint = f"use N = {lower}" + (f" or {lower + 8}" if lower + 8 <= 256 and lower != n else "")
        raise AtomError(
            "ATOM_WGMMA_N",
            "wgmma.mma_async.m64nNk16 has no such N",
            requirement="N a multiple of 8 with 8 <= N <= 256",
            actual=f"N = {n!r}",
            hint=hint + ", and cover a wider tile with several instructions",
        )
    first = supported_dtype(a_dtype, "wgmma.mma_async", "A dtype")
    fp8, tf32 = first in FP8_DTYPES, first == f32
    if fp8:
        a, b, acc, allowed = _fp8_dtypes(f"wgmma.mma_async.m64n{n}k32", a_dtype, b_dtype, acc_dtype)
    elif tf32:
        a, b, acc, allowed = _same_dtypes(f"wgmma.mma_async.m64n{n}k8", a_dtype, b_dtype, acc_dtype, _K8_ACCUMULATORS)
    else:
        a, b, acc, allowed = _input_dtypes(f"wgmma.mma_async.m64n{n}k16", a_dtype, b_dtype, acc_dtype)
    k = wgmma_k(a)
    source = memory_space(a_source, "wgmma's A operand source")
    if source not in (MemorySpace.SHARED, MemorySpace.REGISTERS):
        raise AtomError(
            "ATOM_OPERAND_SOURCE",
            "wgmma reads A from shared memory or from registers",
            actual=f"a_source = {source.value!r}",
            hint="stage global data in shared memory first (TMA or cp.async)",
        )
    from_registers = source is MemorySpace.REGISTERS
    if from_registers and (fp8 or tf32):
        raise AtomError(
            "ATOM_OPERAND_SOURCE",
            f"wgmma.mma_async.m64n{n}k{k} with A in registers (the .rs form for {'FP8' if fp8 else 'TF32'}) is not "
            f"built: its register fragment ({'four 8-bit values' if fp8 else 'one 32-bit value'} per register) has "
            "no layout in argus.atoms yet",
            actual=f"A dtype {a.name} from registers",
            hint="read A from shared memory (a_source='shared')",
        )
    operand_types = "tf32.tf32" if tf32 else f"{a.name}.{b.name}"
    types = f"{acc.name}.{operand_types}"
    k_major_only = fp8 or tf32
    return MmaAtom(
        name=f"wgmma.m64n{n}k{k}.{types}.{'rs' if from_registers else 'ss'}",
        ptx=f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{types}",
        shape=(64, n, k),
        a_dtype=a,
        b_dtype=b,
        acc_dtype=acc,
        ab_dtypes=FP8_DTYPES if fp8 else ((f32,) if tf32 else (bf16, f16)),
        acc_dtypes=allowed,
        thread_count=WARPGROUP_SIZE,
        scope=Scope.WARPGROUP,
        a_source=source,
        b_source=MemorySpace.SHARED,
        a_layout=_WGMMA_A_REGISTERS if from_registers else _collective(64, k),
        b_layout=_collective(n, k),
        c_layout=_wgmma_c(n),
        a_majors=() if from_registers else ((Major.K,) if k_major_only else (Major.K, Major.MN)),
        b_majors=(Major.K,) if k_major_only else (Major.K, Major.MN),
        arch="sm_90a",
    )


def _fp8_dtypes(atom: str, a_dtype: DType | str, b_dtype: DType | str | None, acc_dtype: DType | str) -> tuple:
    a = supported_dtype(a_dtype, atom, "A dtype")
    b = a if b_dtype is None else supported_dtype(b_dtype, atom, "B dtype")
    if b not in FP8_DTYPES:
        raise AtomError(
            "ATOM_MMA_DTYPE",
            f"{atom} multiplies 8-bit floats",
            requirement="B dtype in {e4m3, e5m2} when A is",
            actual=f"A dtype {a.name}, B dtype {b.name}",
            hint="convert B to e4m3 or e5m2",
        )
    acc, allowed = _accumulator(atom, a, acc_dtype, _K32_ACCUMULATORS)
    return a, b, acc, allowed


# --- fma.rn.f32: the per-thread ("universal") FMA atom ---------------------------------------------------

#: Input dtypes the FMA atom converts to f32 before ``fma.rn.f32``.
FMA_INPUT_DTYPES: tuple[DType, ...] = (bf16, f16, f32)

#: One thread, one element of each operand tile (stride 0: the single value is element 0).
_FMA_ONE = Layout((1, 1), (0, 0))


def fma(a_dtype: DType | str = bf16, b_dtype: DType | str | None = None, acc_dtype: DType | str = f32) -> MmaAtom:
    """The per-thread FMA atom: ``C[1,1] += A[1,1] * B[1,1]`` by one thread with ``fma.rn.f32`` on CUDA cores
    (bf16/f16 operands converted to f32 first, exactly). Tiled over a block (`argus.lang.fragments.mma_tv`)
    it gives each thread group of one thread a ``(M/GM, N/GN)`` accumulator micro-tile, the ``(M/GM, K)`` rows
    of A and the ``(K, N/GN)`` columns of B it needs, all in its own registers; value ``r + rows*c`` of an
    operand fragment is element ``(r, c)`` of the thread's sub-tile (the repeats of a ``1x1`` atom, rows
    first). Operands come from registers: load them with `T.copy` from global or shared memory.

    Inputs bf16, f16 or f32 (A and B alike), accumulator f32. Raises `AtomError` (``ATOM_MMA_DTYPE``,
    ``ATOM_MMA_ACC_DTYPE``, ``ATOM_DTYPE_UNSUPPORTED``) otherwise.
    """
    atom = "fma.rn.f32"
    a = supported_dtype(a_dtype, atom, "A dtype")
    if a not in FMA_INPUT_DTYPES:
        raise AtomError(
            "ATOM_MMA_DTYPE",
            f"{atom} multiplies floats converted to f32",
            requirement="A and B dtypes in {bf16, f16, f32}",
            actual=f"A dtype {a.name}",
            hint="convert the operand to bf16, f16 or f32 first",
        )
    b = a if b_dtype is None else supported_dtype(b_dtype, atom, "B dtype")
    if b != a:
        raise AtomError(
            "ATOM_MMA_DTYPE",
            f"{atom}: the FMA atom needs A and B of the same dtype",
            requirement=f"B dtype == A dtype ({a.name})",
            actual=f"B dtype {b.name}",
            hint=f"convert B to {a.name}",
        )
    acc = supported_dtype(acc_dtype, atom, "accumulator dtype")
    if acc != f32:
        raise AtomError(
            "ATOM_MMA_ACC_DTYPE",
            f"{atom} accumulates in f32",
            requirement="accumulator dtype f32",
            actual=f"accumulator dtype {acc.name}",
            hint="accumulate in f32",
        )
    return MmaAtom(
        name=f"fma.{acc.name}.{a.name}.{b.name}",
        ptx=atom,
        shape=(1, 1, 1),
        a_dtype=a,
        b_dtype=b,
        acc_dtype=acc,
        ab_dtypes=FMA_INPUT_DTYPES,
        acc_dtypes=(f32,),
        thread_count=1,
        scope=Scope.THREAD,
        a_source=MemorySpace.REGISTERS,
        b_source=MemorySpace.REGISTERS,
        a_layout=_FMA_ONE,
        b_layout=_FMA_ONE,
        c_layout=_FMA_ONE,
        a_majors=(),
        b_majors=(),
        arch="sm_80",
    )


# --- the tiled MMA: the atom over a thread group's sub-tile, thread groups over the tile ---------------------------


def group_subtile(operand: str, tile: tuple[int, int], groups: tuple[int, int]) -> tuple[int, int]:
    """``(rows, cols)`` of the part of an operand tile one thread group works on, for a ``groups = (GM, GN)`` grid
    of groups over the ``(M, N)`` accumulator: C ``(M/GM, N/GN)``; A ``(M/GM, K)``, the same for every ``gn``
    (replicated); B ``(K, N/GN)``, replicated over ``gm``."""
    rows, cols = tile
    gm, gn = groups
    if operand == "C":
        return rows // gm, cols // gn
    if operand == "A":
        return rows // gm, cols
    return rows, cols // gn


def group_origin(operand: str, sub: tuple[int, int], gm: Any, gn: Any) -> tuple[Any, Any]:
    """``(row, col)`` in the operand tile where group ``(gm, gn)``'s `sub` sub-tile (`group_subtile`) starts: A's
    row blocks follow ``gm``, B's column blocks ``gn``, C's both. `gm`, `gn`: ints, numpy arrays or Z3 terms."""
    row = gm * sub[0] if operand in ("A", "C") else 0
    col = gn * sub[1] if operand in ("B", "C") else 0
    return row, col


def slot_count(atom: MmaAtom, operand: Operand, sub: tuple[int, int]) -> int:
    """Register slots (values) per thread of one group's fragment of the `sub` sub-tile: the atom's values times
    the atom's repeats over `sub`."""
    rows, cols = atom.operand_tile(operand)
    return atom.layout(operand)[1].size() * (sub[0] // rows) * (sub[1] // cols)


def slot_element(
    atom: MmaAtom,
    operand: Operand,
    sub: tuple[int, int],
    lane: Any,
    value: Any,
    arithmetic: Arithmetic = LAYOUT_ARITHMETIC,
) -> tuple[Any, Any]:
    """The element ``(row, col)`` of one thread group's `sub` sub-tile of the operand (A ``(M, K)``, B ``(K, N)``,
    C ``(M, N)``) that register slot ``(lane, value)`` of the group's fragment means to the instruction.

    The atom repeats over the sub-tile along rows first, then columns; ``value = atom value + atom values *
    (repeat row + repeats along rows * repeat col)``, and atom value ``a`` of lane `lane` is the element the atom's
    layout gives (`MmaAtom.operand_element`) in repeat ``(repeat row, repeat col)``. This is the one statement of
    the rule: the DSL's fragment layouts (`argus.lang.fragments.mma_tv`), the interpreter's MMA and the verifier's
    MMA checks all use it. `lane` and `value` are ints, numpy arrays (broadcast together) or Z3 terms; the
    divisions are `arithmetic`'s (by default `argus.layout.arith`'s, which works on all three; the verifier passes
    its own bit-vector operations so that its terms stay exactly as it builds them).
    """
    layout = atom.layout(operand)
    atom_values = layout[1].size()
    rows, cols = atom.operand_tile(operand)
    repeats_along_rows = sub[0] // rows
    atom_value, repeat = arithmetic.mod(value, atom_values), arithmetic.floordiv(value, atom_values)
    repeat_row, repeat_col = arithmetic.mod(repeat, repeats_along_rows), arithmetic.floordiv(repeat, repeats_along_rows)
    index = arithmetic.lift(layout((lane, atom_value)))
    row, col = atom.operand_element(operand, index, arithmetic)
    return repeat_row * rows + row, repeat_col * cols + col
