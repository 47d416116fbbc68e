"""Copy atoms: vector loads/stores, cp.async, ldmatrix/stmatrix: layouts, constructors and checks."""

from __future__ import annotations

import itertools

import pytest

from argus.atoms import (
    AtomError,
    CopyKind,
    MemorySpace,
    Scope,
    cp_async,
    global_load,
    global_store,
    ldmatrix,
    matrix_accepts,
    stmatrix,
)
from argus.ir.types import DType, DTypeKind, bf16, boolean, e4m3, f16, f32, i32
from argus.layout import Layout

# --- 16-byte global vectors -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, values", [(bf16, 8), (f16, 8), (f32, 4), (i32, 4), (boolean, 16), (16, 8), (32, 4)])
def test_global_vector_layouts(dtype, values):
    for make, kind in ((global_load, CopyKind.GLOBAL_LOAD), (global_store, CopyKind.GLOBAL_STORE)):
        atom = make(dtype)
        assert atom.kind is kind and atom.scope is Scope.THREAD and atom.thread_count == 1
        assert atom.vector_bytes == 16 and atom.alignment == 16
        assert atom.values_per_thread == values and atom.tile_shape == (values,)
        # one thread, contiguous values, lowest address first
        assert atom.src_layout == atom.dst_layout == Layout((1, values), (0, 1))
        assert [atom.src_layout(0, v) for v in range(values)] == list(range(values))
    assert global_load(bf16).ptx == "ld.global.v4.b32" and global_store(f32).ptx == "st.global.v4.b32"
    assert global_load(bf16).src_space is MemorySpace.GLOBAL and global_load(bf16).dst_space is MemorySpace.REGISTERS
    assert global_store(bf16).src_space is MemorySpace.REGISTERS and global_store(bf16).dst_space is MemorySpace.GLOBAL


def test_global_vector_alignment():
    atom = global_load(bf16)
    for good in (0, 16, 4096, 2**40):
        atom.check(good)
        assert atom.diagnose(good) == ()
    for bad in (2, 8, 24, 4097):
        with pytest.raises(AtomError) as err:
            atom.check(bad)
        assert err.value.code == "ATOM_VECTOR_ALIGN"
        assert "16" in err.value.requirement and str(bad) in err.value.actual and err.value.hint


def test_vector_accepts_by_width():
    atom = global_load(16)
    assert atom.accepts(bf16) and atom.accepts("f16") and not atom.accepts(f32)
    assert global_load(8).accepts(e4m3) and not global_load(16).accepts(e4m3)
    e3m4 = DType("e3m4", 8, DTypeKind.FLOAT, exponent_bits=3, mantissa_bits=4, supported=False)
    assert not global_load(8).accepts(e3m4)  # known but not supported


def test_vector_element_width_errors():
    with pytest.raises(AtomError) as err:
        global_load(64)
    assert err.value.code == "ATOM_ELEMENT_BITS"
    with pytest.raises(AtomError) as err:
        global_load(DType("e3m4", 8, DTypeKind.FLOAT, exponent_bits=3, mantissa_bits=4, supported=False))
    assert err.value.code == "ATOM_DTYPE_UNSUPPORTED"


# --- cp.async --------------------------------------------------------------------------------------


@pytest.mark.parametrize("nbytes, cache", [(4, "ca"), (8, "ca"), (16, "ca"), (16, "cg")])
def test_cp_async_legal(nbytes, cache):
    atom = cp_async(nbytes, cache, bf16)
    assert atom.ptx == f"cp.async.{cache}.shared.global" and atom.name == f"cp.async.{cache}.{nbytes}.b16"
    assert atom.src_space is MemorySpace.GLOBAL and atom.dst_space is MemorySpace.SHARED
    assert atom.alignment == nbytes and atom.values_per_thread == nbytes // 2
    atom.check(0, nbytes * 3)
    atom.check(nbytes, 0, src_size=0)
    atom.check(nbytes, 0, src_size=nbytes)


@pytest.mark.parametrize(
    "nbytes, cache, code",
    [
        (2, "ca", "ATOM_CP_ASYNC_SIZE"),
        (32, "cg", "ATOM_CP_ASYNC_SIZE"),
        (12, "ca", "ATOM_CP_ASYNC_SIZE"),
        (4, "cg", "ATOM_CP_ASYNC_CACHE"),
        (8, "cg", "ATOM_CP_ASYNC_CACHE"),
        (16, "cs", "ATOM_CP_ASYNC_CACHE"),
    ],
)
def test_cp_async_illegal(nbytes, cache, code):
    with pytest.raises(AtomError) as err:
        cp_async(nbytes, cache)
    assert err.value.code == code
    assert str(nbytes) in str(err.value) or cache in str(err.value)


def test_cp_async_element_wider_than_copy():
    with pytest.raises(AtomError) as err:
        cp_async(4, "ca", 64)
    assert err.value.code == "ATOM_ELEMENT_BITS"


def test_cp_async_checks():
    atom = cp_async(16, "cg", f32)
    problems = atom.diagnose(8, 20, src_size=17)
    assert [p.code for p in problems] == ["ATOM_CP_ASYNC_ALIGN", "ATOM_CP_ASYNC_ALIGN", "ATOM_CP_ASYNC_SRC_SIZE"]
    assert "global source" in problems[0].message and "shared destination" in problems[1].message
    with pytest.raises(AtomError) as err:
        atom.check(0, 0, src_size=-1)
    assert err.value.code == "ATOM_CP_ASYNC_SRC_SIZE"
    cp_async(8, "ca").check(8, 24)
    with pytest.raises(AtomError):
        cp_async(8, "ca").check(4, 24)


# --- ldmatrix / stmatrix -------------------------------------------------------------------------


@pytest.mark.parametrize("num, trans", list(itertools.product([1, 2, 4], [False, True])))
def test_matrix_atoms_fields(num, trans):
    for make, op in ((ldmatrix, "ldmatrix"), (stmatrix, "stmatrix")):
        atom = make(num, trans)
        suffix = f".x{num}" + (".trans" if trans else "")
        assert atom.ptx == f"{op}.sync.aligned.m8n8{suffix}.shared.b16" and atom.name == f"{op}{suffix}.b16"
        assert atom.thread_count == 32 and atom.scope is Scope.WARP and atom.tile_shape == (8 * num, 8)
        assert atom.address_lanes == tuple(range(8 * num))
        assert atom.fragment_layout.size() == 32 * 2 * num  # num 32-bit registers of two b16 each


@pytest.mark.parametrize("num, trans", list(itertools.product([1, 2, 4], [False, True])))
def test_matrix_layouts_are_bijections(num, trans):
    atom = ldmatrix(num, trans)
    rows = 8 * num
    frag = atom.fragment_layout
    assert sorted(frag(t, v) for t in range(32) for v in range(2 * num)) == list(range(rows * 8))
    # address side: lane t < 8*num reads row t (all 8 elements); higher lanes alias lower lanes
    addr = atom.address_layout
    for lane in range(32):
        row = lane % rows
        assert [addr(lane, v) for v in range(8)] == [row + rows * c for c in range(8)]
    lanes = {atom.row_address_lane(j, r) for j in range(num) for r in range(8)}
    assert lanes == set(atom.address_lanes)


@pytest.mark.parametrize("num, trans", list(itertools.product([1, 2, 4], [False, True])))
def test_ldmatrix_moves_each_element_to_its_fragment_slot(num, trans):
    """Simulate ldmatrix on a numbered shared-memory tile with the atom's two layouts and compare with
    the PTX description of each lane's registers."""
    atom = ldmatrix(num, trans)
    rows = 8 * num
    smem = {}  # tile index -> (matrix, row, col) as stored in shared memory
    for lane in atom.address_lanes:
        for v in range(8):
            smem[atom.src_layout(lane, v)] = (lane // 8, lane % 8, v)
    for lane, j, h in itertools.product(range(32), range(num), range(2)):
        matrix, row, col = smem[atom.dst_layout(lane, 2 * j + h)]
        expected = (j, 2 * (lane % 4) + h, lane // 4) if trans else (j, lane // 4, 2 * (lane % 4) + h)
        assert (matrix, row, col) == expected
        assert atom.register(2 * j + h) == (j, h)
    assert len(smem) == rows * 8


def test_matrix_spaces():
    assert ldmatrix().src_space is MemorySpace.SHARED and ldmatrix().dst_space is MemorySpace.REGISTERS
    assert stmatrix().src_space is MemorySpace.REGISTERS and stmatrix().dst_space is MemorySpace.SHARED
    assert ldmatrix().src_layout == stmatrix().dst_layout
    assert ldmatrix().kind is CopyKind.LDMATRIX and stmatrix().kind is CopyKind.STMATRIX


@pytest.mark.parametrize("num", [0, 3, 8, "4"])
def test_matrix_num_errors(num):
    for make in (ldmatrix, stmatrix):
        with pytest.raises(AtomError) as err:
            make(num)
        assert err.value.code == "ATOM_MATRIX_NUM"


def test_matrix_address_checks():
    atom = ldmatrix(2)
    good = [1024 + 64 * r for r in range(16)]
    atom.check(good)
    bad = list(good)
    bad[5] += 8
    problems = atom.diagnose(bad)
    assert [p.code for p in problems] == ["ATOM_MATRIX_ALIGN"] and "lane 5" in problems[0].message
    with pytest.raises(AtomError) as err:
        atom.check(good[:8])
    assert err.value.code == "ATOM_MATRIX_ADDRESSES"
    with pytest.raises(AtomError) as err:
        atom.row_address_lane(2, 0)
    assert err.value.code == "ATOM_MATRIX_INDEX"


def test_matrix_accepts():
    assert matrix_accepts(bf16) and matrix_accepts("f16")
    assert not matrix_accepts(f32) and not matrix_accepts(e4m3)
