"""The rules several layers apply, written once in `argus.atoms`, against enumerations written from the PTX ISA:

* the tiled MMA's register-slot rule (`argus.atoms.mma.slot_element`), for every MMA atom and operand, on ints,
  numpy arrays and Z3 bit-vectors alike, and the DSL's fragment layouts built from it (`mma_tv`);
* ``ldmatrix``'s ``.trans`` (`argus.atoms.copy`): which lane holds what, what a transposing variant delivers, and
  when a forced variant transposes.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import z3

from argus.atoms import MmaAtom, all_atoms, ldmatrix
from argus.atoms.copy import (
    FORCED_TRANS,
    forced_trans,
    ldmatrix_trans,
    ldmatrix_transposes,
    matrix_holder,
    matrix_transpose,
)
from argus.atoms.mma import group_origin, group_subtile, slot_count, slot_element
from argus.lang.fragments import mma_tv

# --- the operand element of each atom's slots, as the PTX ISA's figures state them -------------------------------


def _ptx_element(atom: MmaAtom, operand: str, thread: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` of operand tile (A ``(M, K)``, B ``(K, N)``, C ``(M, N)``) that value ``i`` of `thread` is,
    written from the PTX ISA (``groupID = lane / 4``, ``threadID_in_group = lane % 4``), not from the atoms."""
    warp, lane = thread // 32, thread % 32
    group, in_group = lane // 4, lane % 4
    m, n, _ = atom.shape
    if atom.ptx.startswith("fma"):  # one thread, one element of each 1x1 operand
        return 0 * thread + 0 * i, 0 * thread + 0 * i
    if atom.ptx.startswith("mma.sync"):  # §9.7.14.5.8, m16n8k16 with .bf16/.f16
        if operand == "A":  # a0..a7: row groupID (+8 for a2, a3, a6, a7), col 2*tig + (i & 1) (+8 for i >= 4)
            return group + 8 * ((i // 2) % 2), 2 * in_group + i % 2 + 8 * (i // 4)
        if operand == "B":  # b0..b3: row (k) 2*tig + (i & 1) (+8 for b2, b3), col (n) groupID
            return 2 * in_group + i % 2 + 8 * (i // 2), group + 0 * i
        return group + 8 * (i // 2), 2 * in_group + i % 2  # c0..c3
    # wgmma.m64nNk16: warp w of the warpgroup holds rows 16w..16w+15 of the register fragments
    if operand == "C" or (operand == "A" and atom.a_source.value == "registers"):
        row = 16 * warp + group + 8 * ((i // 2) % 2)
        col = 2 * in_group + i % 2 + 8 * (i // 4)
        return row, col
    if operand == "A":  # from shared memory: every thread "holds" the whole 64 x 16 tile, column-major
        return 0 * thread + i % m, 0 * thread + i // m
    return 0 * thread + i // n, 0 * thread + i % n  # B from shared memory: the (N, K) tile, as (K, N)


def _distinct_atoms() -> list[MmaAtom]:
    """Every MMA atom of the registry whose layouts differ (they do not depend on the dtypes)."""
    seen: dict[tuple, MmaAtom] = {}
    for atom in all_atoms():
        if isinstance(atom, MmaAtom):
            seen.setdefault((atom.ptx.split(".")[0], atom.shape, atom.a_source), atom)
    return list(seen.values())


def _distinct_operands(atoms: list[MmaAtom]) -> list[tuple[MmaAtom, str]]:
    """Every (atom, operand) whose layout differs (e.g. B and C of ``.ss`` and ``.rs`` are the same)."""
    seen: dict[tuple, tuple[MmaAtom, str]] = {}
    for atom, op in itertools.product(atoms, "ABC"):
        seen.setdefault((atom.ptx.split(".")[0], op, atom.tile_shape(op), str(atom.layout(op))), (atom, op))
    return list(seen.values())


ATOMS = _distinct_atoms()
CASES = _distinct_operands(ATOMS)


def _expected(atom: MmaAtom, operand: str, repeats: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of shape (lanes, values) for a sub-tile of `repeats` atom tiles: the atom's values of each
    repeat, the repeats taken along rows first."""
    rows, cols = atom.operand_tile(operand)
    lanes = np.arange(atom.thread_count)[:, None]
    atom_values = np.arange(atom.values_per_thread(operand))[None, :]
    r0, c0 = (
        np.broadcast_to(x, (lanes.size, atom_values.size)) for x in _ptx_element(atom, operand, lanes, atom_values)
    )
    blocks_r, blocks_c = [], []
    for repeat_col in range(repeats[1]):
        for repeat_row in range(repeats[0]):
            blocks_r.append(repeat_row * rows + r0)
            blocks_c.append(repeat_col * cols + c0)
    return np.concatenate(blocks_r, axis=1), np.concatenate(blocks_c, axis=1)


def test_the_atoms_cover_every_kind() -> None:
    kinds = {(a.ptx.split(".")[0], a.a_source.value) for a in ATOMS}
    assert kinds == {("mma", "registers"), ("wgmma", "shared"), ("wgmma", "registers"), ("fma", "registers")}
    assert len({a.n for a in ATOMS if a.ptx.startswith("wgmma")}) == 32  # every N of m64nNk16


@pytest.mark.parametrize(("atom", "operand"), CASES, ids=[f"{a.name}-{op}" for a, op in CASES])
def test_slot_element_on_numpy_is_the_ptx_fragment(atom: MmaAtom, operand: str) -> None:
    sizes = [(1, 1), (2, 1), (1, 3), (2, 2)] if atom.n <= 64 else [(1, 1), (2, 1)]
    for repeats in sizes:
        rows, cols = atom.operand_tile(operand)
        sub = (rows * repeats[0], cols * repeats[1])
        want_r, want_c = _expected(atom, operand, repeats)
        assert slot_count(atom, operand, sub) == want_r.shape[1]
        lanes = np.arange(atom.thread_count)[:, None]
        values = np.arange(want_r.shape[1])[None, :]
        got_r, got_c = slot_element(atom, operand, sub, lanes, values)
        assert np.array_equal(np.broadcast_to(got_r, want_r.shape), want_r), (atom.name, operand, repeats)
        assert np.array_equal(np.broadcast_to(got_c, want_c.shape), want_c), (atom.name, operand, repeats)


@pytest.mark.parametrize(("atom", "operand"), CASES, ids=[f"{a.name}-{op}" for a, op in CASES])
def test_slot_element_on_ints_and_on_z3_agrees_with_numpy(atom: MmaAtom, operand: str) -> None:
    rows, cols = atom.operand_tile(operand)
    sub = (2 * rows, 3 * cols)
    want_r, want_c = _expected(atom, operand, (2, 3))
    slots = list(itertools.product(range(atom.thread_count), range(want_r.shape[1])))
    rng = random.Random(0)
    lane_z, value_z = z3.BitVec("lane", 32), z3.BitVec("value", 32)
    row_z, col_z = (z3.simplify(x) if z3.is_expr(x) else x for x in slot_element(atom, operand, sub, lane_z, value_z))
    for lane, value in rng.sample(slots, min(len(slots), 100)):
        want = (int(want_r[lane, value]), int(want_c[lane, value]))
        assert slot_element(atom, operand, sub, lane, value) == want
        point = [(lane_z, z3.BitVecVal(lane, 32)), (value_z, z3.BitVecVal(value, 32))]
        got = tuple(z3.simplify(z3.substitute(x, *point)).as_long() if z3.is_expr(x) else x for x in (row_z, col_z))
        assert got == want, (lane, value)


@pytest.mark.parametrize(("atom", "operand"), CASES, ids=[f"{a.name}-{op}" for a, op in CASES])
def test_the_dsl_fragment_layout_holds_what_the_instruction_reads(atom: MmaAtom, operand: str) -> None:
    """`mma_tv` (the DSL's fragment layout) puts at every slot of every thread group the element `slot_element`
    says the instruction reads there, in the group's sub-tile at `group_origin`."""
    rows, cols = atom.operand_tile(operand)
    for groups in [(1, 1), (2, 2), (4, 1), (1, 3)]:
        if atom.thread_count * groups[0] * groups[1] > 1024:
            continue
        gm, gn = groups
        repeats = (2, 1) if atom.n > 64 else (2, 2)
        sub_c = (
            atom.operand_tile("C")[0] * repeats[0],
            atom.operand_tile("C")[1] * repeats[1],
        )
        k = 32 if atom.k > 1 else 3
        tile = {"A": (sub_c[0] * gm, k), "B": (k, sub_c[1] * gn), "C": (sub_c[0] * gm, sub_c[1] * gn)}[operand]
        sub = group_subtile(operand, tile, groups)
        if sub[0] % rows or sub[1] % cols:
            continue
        tv = mma_tv(atom, operand, tile, groups)
        threads = np.arange(atom.thread_count * gm * gn)[:, None]
        values = np.arange(slot_count(atom, operand, sub))[None, :]
        group = threads // atom.thread_count
        r, c = slot_element(atom, operand, sub, threads % atom.thread_count, values)
        r0, c0 = group_origin(operand, sub, group % gm, group // gm)
        want = np.broadcast_to(r0 + r + tile[0] * (c0 + c), (threads.size, values.size))
        assert np.array_equal(np.broadcast_to(tv(threads, values), want.shape), want), (atom.name, operand, groups)


def test_group_subtiles_and_origins() -> None:
    assert group_subtile("C", (128, 64), (2, 4)) == (64, 16)
    assert group_subtile("A", (128, 32), (2, 4)) == (64, 32)
    assert group_subtile("B", (32, 64), (2, 4)) == (32, 16)
    assert group_origin("C", (64, 16), 1, 3) == (64, 48)
    assert group_origin("A", (64, 32), 1, 3) == (64, 0)  # A is replicated over the column groups
    assert group_origin("B", (32, 16), 1, 3) == (0, 48)  # B over the row groups


# --- ldmatrix / stmatrix: .trans -------------------------------------------------------------------------------


def test_matrix_transpose_stays_in_its_matrix_and_is_an_involution() -> None:
    r, c = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    tr, tc = matrix_transpose(r, c)
    assert np.array_equal(tr // 8, r // 8) and np.array_equal(tc // 8, c // 8)
    assert np.array_equal(tr % 8, c % 8) and np.array_equal(tc % 8, r % 8)
    back = matrix_transpose(tr, tc)
    assert np.array_equal(back[0], r) and np.array_equal(back[1], c)
    x, y = z3.BitVecs("x y", 32)
    zr, zc = matrix_transpose(x, y)
    for row, col in [(0, 0), (3, 5), (13, 2), (31, 15)]:
        point = [(x, z3.BitVecVal(row, 32)), (y, z3.BitVecVal(col, 32))]
        got = tuple(z3.simplify(z3.substitute(t, *point)).as_long() for t in (zr, zc))
        assert got == matrix_transpose(row, col) == (int(tr[row, col]), int(tc[row, col]))


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_matrix_holder_inverts_the_atoms_fragment_layout(num: int, trans: bool) -> None:
    """The fragment layouts are checked cell by cell against the PTX figures (test_fragments.py); the holder of
    every element is the (lane, register half) those layouts put it at."""
    layout = ldmatrix(num, trans).fragment_layout
    rows = 8 * num
    for lane, value in itertools.product(range(32), range(2 * num)):
        index = layout(lane, value)
        row, col = index % rows, index // rows
        assert row // 8 == value // 2  # register j holds matrix j
        assert matrix_holder(row % 8, col, trans) == (lane, value % 2)
    r, e = np.arange(8)[:, None], np.arange(8)[None, :]
    lane, half = matrix_holder(r, e, trans)
    for row, col in itertools.product(range(8), range(8)):
        assert (int(np.broadcast_to(lane, (8, 8))[row, col]), int(np.broadcast_to(half, (8, 8))[row, col])) == (
            matrix_holder(row, col, trans)
        )


def _row_major(cols: int):
    return lambda coord: coord[0] * cols + coord[1]


def _column_major(rows: int):
    return lambda coord: coord[0] + coord[1] * rows


def test_ldmatrix_needs_trans_when_k_neighbours_are_not_memory_neighbours() -> None:
    # A (M, K): register pairs along K (columns); B (K, N): along K (rows)
    assert not ldmatrix_trans("A", _row_major(32)) and ldmatrix_trans("A", _column_major(64))
    assert ldmatrix_trans("B", _row_major(64)) and not ldmatrix_trans("B", _column_major(32))


def test_forced_variants_transpose_exactly_when_they_disagree() -> None:
    assert FORCED_TRANS == {"ldmatrix.x4": False, "ldmatrix.x4.trans": True}
    assert forced_trans("ldmatrix") is None and forced_trans("stmatrix") is None

    def never(coord):  # the layouts are not consulted where nothing is forced
        raise AssertionError("offset read for an unforced copy")

    assert not ldmatrix_transposes("ldmatrix", "A", never) and not ldmatrix_transposes("stmatrix", "B", never)
    for operand, natural, trans_layout in (
        ("A", _row_major(32), _column_major(64)),
        ("B", _column_major(32), _row_major(64)),
    ):
        assert not ldmatrix_transposes("ldmatrix.x4", operand, natural)
        assert ldmatrix_transposes("ldmatrix.x4.trans", operand, natural)
        assert ldmatrix_transposes("ldmatrix.x4", operand, trans_layout)
        assert not ldmatrix_transposes("ldmatrix.x4.trans", operand, trans_layout)
