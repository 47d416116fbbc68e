"""The atom registry: unique names, lookup, round trips with the constructors."""

from __future__ import annotations

import pytest

from argus.atoms import (
    WGMMA_N_VALUES,
    AtomError,
    CopyAtom,
    MmaAtom,
    all_atoms,
    atom_names,
    cp_async,
    get_atom,
    global_load,
    ldmatrix,
    mma_sync_m16n8k16,
    stmatrix,
    tma_load,
    tma_store,
    wgmma,
)


def test_names_are_unique_and_complete():
    atoms = all_atoms()
    names = [a.name for a in atoms]
    assert len(names) == len(set(names)) == len(atom_names())
    assert all(isinstance(a, (MmaAtom, CopyAtom)) for a in atoms)
    wgmmas = [a for a in atoms if a.name.startswith("wgmma.")]
    # N x (bf16/f32, f16/f32, f16/f16) x (ss, rs), N x (e4m3, e5m2)^2 with f32 accumulators from shared memory, and
    # N x TF32 (f32 data) from shared memory
    assert len(wgmmas) == len(WGMMA_N_VALUES) * (3 * 2 + 4 + 1)
    assert sum(a.reads_tf32 for a in wgmmas) == len(WGMMA_N_VALUES)


def test_every_atom_round_trips():
    for atom in all_atoms():
        assert get_atom(atom.name) is atom


@pytest.mark.parametrize(
    "name, build",
    [
        ("mma.m16n8k16.f32.bf16.bf16.f32", lambda: mma_sync_m16n8k16()),
        ("mma.m16n8k16.f16.f16.f16.f16", lambda: mma_sync_m16n8k16("f16", acc_dtype="f16")),
        ("wgmma.m64n256k16.f32.bf16.bf16.ss", lambda: wgmma(256)),
        ("wgmma.m64n8k16.f32.f16.f16.rs", lambda: wgmma(8, "f16", a_source="registers")),
        ("wgmma.m64n128k32.f32.e4m3.e5m2.ss", lambda: wgmma(128, "e4m3", "e5m2")),
        ("ldg.128.b16", lambda: global_load("bf16")),
        ("cp.async.cg.16.b32", lambda: cp_async(16, "cg", "f32")),
        ("cp.async.ca.4.b8", lambda: cp_async(4, "ca", 8)),
        ("ldmatrix.x4.trans.b16", lambda: ldmatrix(4, True)),
        ("stmatrix.x1.b16", lambda: stmatrix(1)),
        ("tma.load.2d", lambda: tma_load(2)),
        ("tma.store.3d", lambda: tma_store(3)),
    ],
)
def test_lookup_equals_constructor(name, build):
    assert get_atom(name) == build()


def test_unknown_name():
    with pytest.raises(AtomError) as err:
        get_atom("wgmma.m64n256k16.f32.bf16.bf16.sss")
    assert err.value.code == "ATOM_UNKNOWN"
    assert "wgmma.m64n256k16.f32.bf16.bf16.ss" in err.value.hint
    with pytest.raises(AtomError) as err:
        get_atom("nothing like it at all")
    assert err.value.code == "ATOM_UNKNOWN"


def test_no_atom_accepts_fp8():
    for atom in all_atoms():
        if isinstance(atom, MmaAtom):
            assert atom.a_dtype.supported and atom.b_dtype.supported and atom.acc_dtype.supported
