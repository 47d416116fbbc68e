"""The registry of atoms: every concrete atom instance by its unique name.

Registered: ``mma.sync.m16n8k16`` for each legal dtype combination; ``wgmma.m64nNk16`` for every N,
dtype combination and A source; ``wgmma.m64nNk32`` (FP8, A from shared memory) for every N and e4m3/e5m2 pair with
an f32 accumulator; ``wgmma.m64nNk8`` (f32 read as TF32, A from shared memory) for every N; the per-thread FMA atom
(``fma.f32.*``) for bf16, f16 and f32 inputs;
16-byte global loads and stores and ``cp.async`` (every legal size and cache operator) for 8-, 16- and
32-bit elements; ``ldmatrix``/``stmatrix`` ``.x1/.x2/.x4`` with
and without ``.trans``; TMA loads and stores of rank 2 and 3. Constructors (`wgmma`, `cp_async`,
`tma_load`, ...) build the same objects, so ``get_atom(a.name) == a`` for every registered ``a``.
"""

from __future__ import annotations

import difflib
from functools import cache
from types import MappingProxyType
from typing import Any

from argus.atoms.copy import (
    CP_ASYNC_SIZES,
    MATRIX_COUNTS,
    VECTOR_ELEMENT_BITS,
    cp_async,
    global_load,
    global_store,
    ldmatrix,
    stmatrix,
)
from argus.atoms.errors import AtomError
from argus.atoms.mma import FMA_INPUT_DTYPES, FP8_DTYPES, WGMMA_N_VALUES, fma, mma_sync_m16n8k16, wgmma
from argus.atoms.tma import TMA_RANKS, tma_load, tma_store
from argus.ir.types import bf16, f16, f32

#: (A/B dtype, accumulator dtype) pairs of the k16 MMA atoms.
_MMA_DTYPES = ((bf16, f32), (f16, f32), (f16, f16))


def _build() -> list[Any]:
    atoms: list[Any] = []
    for ab, acc in _MMA_DTYPES:
        atoms.append(mma_sync_m16n8k16(ab, ab, acc))
    for ab, acc in _MMA_DTYPES:
        for source in ("shared", "registers"):
            for n in WGMMA_N_VALUES:
                atoms.append(wgmma(n, ab, ab, acc, a_source=source))
    for a in FP8_DTYPES:
        for b in FP8_DTYPES:
            for n in WGMMA_N_VALUES:
                atoms.append(wgmma(n, a, b, f32))
    for n in WGMMA_N_VALUES:
        atoms.append(wgmma(n, f32, f32, f32))  # f32 read as TF32
    for ab in FMA_INPUT_DTYPES:
        atoms.append(fma(ab, ab, f32))
    for bits in VECTOR_ELEMENT_BITS:
        atoms.append(global_load(bits))
        atoms.append(global_store(bits))
        for nbytes in CP_ASYNC_SIZES:
            if nbytes * 8 < bits:
                continue
            atoms.append(cp_async(nbytes, "ca", bits))
            if nbytes == 16:
                atoms.append(cp_async(nbytes, "cg", bits))
    for num in MATRIX_COUNTS:
        for trans in (False, True):
            atoms.append(ldmatrix(num, trans))
            atoms.append(stmatrix(num, trans))
    for rank in TMA_RANKS:
        atoms.append(tma_load(rank))
        atoms.append(tma_store(rank))
    return atoms


@cache
def _registry() -> MappingProxyType:
    table: dict[str, Any] = {}
    for atom in _build():
        if atom.name in table:  # pragma: no cover - a bug in _build
            raise AssertionError(f"duplicate atom name {atom.name}")
        table[atom.name] = atom
    return MappingProxyType(table)


def all_atoms() -> tuple[Any, ...]:
    """Every registered atom, MMA atoms first, then copy atoms."""
    return tuple(_registry().values())


def atom_names() -> tuple[str, ...]:
    """The names `get_atom` accepts."""
    return tuple(_registry())


def get_atom(name: str) -> Any:
    """The registered atom called `name`; raises `AtomError` ``ATOM_UNKNOWN`` (with the closest
    names as a hint) for anything else."""
    table = _registry()
    if name in table:
        return table[name]
    close = difflib.get_close_matches(str(name), list(table), n=3)
    raise AtomError(
        "ATOM_UNKNOWN",
        f"no atom is called {name!r}",
        hint=("did you mean " + ", ".join(repr(c) for c in close) + "?") if close else "see atom_names()",
    )
