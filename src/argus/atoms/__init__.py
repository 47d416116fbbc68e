"""Hopper's instruction atoms as data: the one place their thread-value layouts and constraints live.

The interpreter, the verifier and the code generator read every fact about an instruction from
here and duplicate none of it. An atom is a frozen dataclass: its PTX opcode, shape, dtypes, thread
count, operand sources, thread-value (TV) layouts written with `argus.layout`, and a
``check``/``diagnose`` pair that validates a use of it (``diagnose`` returns every `AtomError`,
``check`` raises the first).

TV layouts follow CuTe: a layout of shape ``(threads, values)`` maps ``(thread, value)`` to the
*column-major* index of the element in the atom's tile (``row + rows * col`` for a 2-D tile).

The rules that several layers apply are written here once, with `argus.layout.arith`'s arithmetic so
that the same function runs on ints, numpy arrays and Z3 terms: the tiled MMA's register-slot rule
(`argus.atoms.mma.slot_element`: which operand element a fragment register means to the instruction),
``ldmatrix``'s ``.trans`` (`argus.atoms.copy.ldmatrix_transposes`, `argus.atoms.copy.matrix_transpose`,
`argus.atoms.copy.matrix_holder`), and Hopper's swizzle modes (`argus.atoms.swizzle`: widths,
``Swizzle(B, M, S)``, repeats, descriptor and tensor-map encodings).

Value-index conventions (the code generator relies on these):

* ``mma.sync.aligned.m16n8k16`` (32 lanes): value ``i`` of A, B, C is PTX's ``ai``, ``bi``, ``ci``.
  A has ``a0..a7``, B ``b0..b3``, C ``c0..c3``. 16-bit values pack two per 32-bit register
  (``.f16x2``): value ``i`` is in register ``i // 2``, the even one in the low half
  (`MmaAtom.register`); f32 accumulators are one value per register. Tiles: A ``(16, 16)``
  indexed ``(m, k)``, B ``(8, 16)`` indexed ``(n, k)`` (the PTX figure draws B as K x N), C
  ``(16, 8)`` indexed ``(m, n)``.
* ``wgmma.mma_async.m64nNk16`` (128 threads, ``threadIdx.x % 128`` of a warpgroup of four
  consecutive warps): value ``i`` of D is ``di``, ``i = 0 .. N/2 - 1``: thread ``t`` holds rows
  ``16*(t/32) + (t%32)/4`` (+8 for ``i % 4 >= 2``), columns ``8*(i/4) + 2*(t%4) + i%2``. A from
  registers: value ``i`` is ``ai`` (``a0..a7``, packed as for ``mma.sync``). f32 accumulators are
  one register per value; f16 accumulators pack two (register ``i // 2``, the even one low). A and B
  in shared memory are warpgroup-collective: their layouts broadcast the whole tile to every thread
  (stride 0 over threads), and `argus.atoms.smem` gives the canonical shared-memory layouts.
* the per-thread FMA atom (``fma.f32.{bf16,f16,f32}.*``, one thread, ``1x1x1``): one value per operand;
  tiled over a block, value ``r + rows*c`` of a thread's operand fragment is element ``(r, c)`` of its
  sub-tile (A ``(rows of its micro-tile, K)``, B ``(K, its columns)``, C its micro-tile).
* ``ldmatrix`` / ``stmatrix`` ``.x{num}`` (32 lanes): value ``2*j + h`` is half ``h`` of register
  ``r_j`` (``h = 0`` low), ``r_j`` holding matrix ``j``; the tile is ``(8*num, 8)`` with matrix ``j``
  in rows ``8j .. 8j+7``; lane ``8j + r`` supplies the address of row ``r`` of matrix ``j``.
* per-thread vector copies (16-byte ``LDG``/``STG``, ``cp.async``): value ``v`` is the ``v``-th
  element of the vector, lowest address first.
* TMA: value ``v`` is the box element of column-major index ``v`` (dimension 0 innermost), i.e. its
  offset in the unswizzled shared-memory box.

Sources: NVIDIA PTX ISA (8.x numbering) §9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating
point type"; the wgmma sections "Register Fragments" (figures "WGMMA .m64nNk16 register fragment
layout for matrix A" and "... for accumulator matrix D"), "Shared Memory Matrix Layout",
"Canonical Layouts" and "Matrix Descriptor Format"; "ldmatrix", "stmatrix", "cp.async" and
"cp.async.bulk.tensor"; the CUDA Driver API ``cuTensorMapEncodeTiled``; the CUDA C++ Programming
Guide's "TMA Swizzle". CUTLASS/CuTe was read to match its conventions; no code was taken from it.
"""

from argus.atoms.common import WARP_SIZE, WARPGROUP_SIZE, MemorySpace, Scope
from argus.atoms.copy import (
    CP_ASYNC_SIZES,
    MATRIX_COUNTS,
    CopyAtom,
    CopyKind,
    CpAsyncAtom,
    GlobalVectorAtom,
    MatrixCopyAtom,
    VectorCopyAtom,
    cp_async,
    global_load,
    global_store,
    ldmatrix,
    matrix_accepts,
    stmatrix,
)
from argus.atoms.errors import AtomError
from argus.atoms.mma import FMA_INPUT_DTYPES, WGMMA_N_VALUES, MmaAtom, fma, mma_sync_m16n8k16, wgmma
from argus.atoms.registry import all_atoms, atom_names, get_atom
from argus.atoms.smem import (
    DESCRIPTOR_ALIGNMENT,
    Major,
    canonical_smem_layout,
    check_swizzle_base,
    descriptor_offsets,
    swizzle_atom,
)
from argus.atoms.swizzle import (
    DESCRIPTOR_SWIZZLE_ENCODING,
    HOPPER_SWIZZLE_BYTES,
    SWIZZLE_MODES,
    SWIZZLE_REPEAT_BYTES,
    SWIZZLE_WIDTHS,
    hopper_swizzle,
)
from argus.atoms.tma import TMA_RANKS, TmaCopyAtom, tma_load, tma_store

__all__ = [
    "CP_ASYNC_SIZES",
    "DESCRIPTOR_ALIGNMENT",
    "DESCRIPTOR_SWIZZLE_ENCODING",
    "FMA_INPUT_DTYPES",
    "HOPPER_SWIZZLE_BYTES",
    "MATRIX_COUNTS",
    "SWIZZLE_MODES",
    "SWIZZLE_REPEAT_BYTES",
    "SWIZZLE_WIDTHS",
    "TMA_RANKS",
    "WARPGROUP_SIZE",
    "WARP_SIZE",
    "WGMMA_N_VALUES",
    "AtomError",
    "CopyAtom",
    "CopyKind",
    "CpAsyncAtom",
    "GlobalVectorAtom",
    "Major",
    "MatrixCopyAtom",
    "MemorySpace",
    "MmaAtom",
    "Scope",
    "TmaCopyAtom",
    "VectorCopyAtom",
    "all_atoms",
    "atom_names",
    "canonical_smem_layout",
    "check_swizzle_base",
    "cp_async",
    "descriptor_offsets",
    "fma",
    "get_atom",
    "global_load",
    "global_store",
    "hopper_swizzle",
    "ldmatrix",
    "matrix_accepts",
    "mma_sync_m16n8k16",
    "stmatrix",
    "swizzle_atom",
    "tma_load",
    "tma_store",
    "wgmma",
]
