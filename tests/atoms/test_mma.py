"""MMA atoms: constructors validate, register layouts are bijections onto their tiles, shared operands
are warpgroup-collective, and the register-packing convention holds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from argus.atoms import WGMMA_N_VALUES, AtomError, Major, MemorySpace, Scope, mma_sync_m16n8k16, wgmma
from argus.atoms.mma import tf32_operand, wgmma_k
from argus.ir.types import bf16, e4m3, e5m2, f16, f32, i32
from argus.layout import Layout


def _is_bijection_onto_tile(layout: Layout, threads: int, tile_size: int) -> bool:
    values = layout.size() // threads
    image = [layout(t, v) for t in range(threads) for v in range(values)]
    return sorted(image) == list(range(tile_size))


def _all_mma_atoms():
    """Every N with bf16, and the other dtype combinations at a few N (layouts do not depend on dtype;
    `test_layouts_do_not_depend_on_dtype` checks that)."""
    atoms = []
    for ab, acc in ((bf16, f32), (f16, f32), (f16, f16)):
        atoms.append(mma_sync_m16n8k16(ab, ab, acc))
        for n in WGMMA_N_VALUES if ab is bf16 else (8, 64, 256):
            atoms.append(wgmma(n, ab, ab, acc, a_source="registers"))
            atoms.append(wgmma(n, ab, ab, acc, a_source="shared"))
    return atoms


def test_layouts_do_not_depend_on_dtype():
    for n in WGMMA_N_VALUES:
        for source in ("shared", "registers"):
            reference = wgmma(n, bf16, a_source=source)
            for ab, acc in ((f16, f32), (f16, f16)):
                other = wgmma(n, ab, ab, acc, a_source=source)
                assert [other.layout(op) for op in "ABC"] == [reference.layout(op) for op in "ABC"]


@pytest.mark.parametrize("atom", _all_mma_atoms(), ids=lambda a: a.name)
def test_register_operands_are_bijections_onto_their_tiles(atom):
    for operand in ("A", "B", "C"):
        rows, cols = atom.tile_shape(operand)
        layout = atom.layout(operand)
        if atom.source(operand) is MemorySpace.REGISTERS:
            assert layout.size() == rows * cols, (atom.name, operand)
            assert _is_bijection_onto_tile(layout, atom.thread_count, rows * cols), (atom.name, operand)
        else:
            # warpgroup-collective: every thread sees the whole tile, column-major
            assert atom.scope is Scope.WARPGROUP
            assert atom.values_per_thread(operand) == rows * cols
            for thread in (0, 1, 37, 127):
                assert [layout(thread, v) for v in range(rows * cols)] == list(range(rows * cols))


def test_mma_sync_shape_and_fields():
    atom = mma_sync_m16n8k16()
    assert atom.shape == (16, 8, 16) and (atom.m, atom.n, atom.k) == (16, 8, 16)
    assert atom.thread_count == 32 and atom.scope is Scope.WARP
    assert atom.ptx == "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    assert atom.name == "mma.m16n8k16.f32.bf16.bf16.f32"
    assert (atom.a_dtype, atom.b_dtype, atom.acc_dtype) == (bf16, bf16, f32)
    assert atom.a_source is atom.b_source is MemorySpace.REGISTERS
    assert [atom.values_per_thread(op) for op in "ABC"] == [8, 4, 4]
    assert atom.tile_shape("A") == (16, 16) and atom.tile_shape("B") == (8, 16) and atom.tile_shape("C") == (16, 8)


def test_wgmma_fields():
    atom = wgmma(256, "bf16")
    assert atom.shape == (64, 256, 16)
    assert atom.ptx == "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
    assert atom.name == "wgmma.m64n256k16.f32.bf16.bf16.ss"
    assert atom.thread_count == 128 and atom.scope is Scope.WARPGROUP
    assert atom.a_source is MemorySpace.SHARED and atom.b_source is MemorySpace.SHARED
    assert atom.a_majors == (Major.K, Major.MN) and atom.b_majors == (Major.K, Major.MN)
    assert atom.values_per_thread("C") == 128
    rs = wgmma(256, "f16", a_source="registers")
    assert (
        rs.name == "wgmma.m64n256k16.f32.f16.f16.rs" and rs.ptx == "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
    )
    assert rs.a_source is MemorySpace.REGISTERS and rs.a_majors == ()
    assert rs.values_per_thread("A") == 8


def test_wgmma_a_registers_per_warp_is_the_mma_sync_a_fragment():
    mma, wg = mma_sync_m16n8k16(), wgmma(8, a_source="registers")
    for warp, lane, value in itertools.product(range(4), range(32), range(8)):
        m, k = mma.coord("A", lane, value)
        assert wg.coord("A", 32 * warp + lane, value) == (16 * warp + m, k)


def test_wgmma_d_per_warp_and_8_columns_is_the_mma_sync_c_fragment():
    mma, wg = mma_sync_m16n8k16(), wgmma(32)
    for warp, lane, block, value in itertools.product(range(4), range(32), range(4), range(4)):
        m, n = mma.coord("C", lane, value)
        assert wg.coord("C", 32 * warp + lane, 4 * block + value) == (16 * warp + m, 8 * block + n)


def test_register_packing():
    atom = mma_sync_m16n8k16(f16, f16, f16)
    assert [atom.register("A", v) for v in range(8)] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]
    assert [atom.register("C", v) for v in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    f32_acc = wgmma(16)
    assert [f32_acc.register("C", v) for v in range(8)] == [(v, 0) for v in range(8)]
    with pytest.raises(AtomError) as err:
        f32_acc.register("A", 0)
    assert err.value.code == "ATOM_OPERAND_SOURCE"


@pytest.mark.parametrize("n", [0, 4, 12, 100, 264, -8, 7.5, "16", True, None])
def test_wgmma_rejects_bad_n(n):
    with pytest.raises(AtomError) as err:
        wgmma(n)
    assert err.value.code == "ATOM_WGMMA_N"
    text = str(err.value)
    assert "multiple of 8" in text and "256" in text and repr(n) in text


def test_wgmma_n_error_suggests_valid_values():
    with pytest.raises(AtomError) as err:
        wgmma(100)
    assert "96" in err.value.hint and "104" in err.value.hint


@pytest.mark.parametrize("n", WGMMA_N_VALUES)
def test_wgmma_accepts_every_valid_n(n):
    assert wgmma(n).n == n


@pytest.mark.parametrize(
    "kwargs, code",
    [
        (dict(a_dtype=i32), "ATOM_MMA_DTYPE"),
        (dict(a_dtype=bf16, b_dtype=f16), "ATOM_MMA_DTYPE"),
        (dict(a_dtype=bf16, acc_dtype=f16), "ATOM_MMA_ACC_DTYPE"),
        (dict(a_dtype=bf16, acc_dtype=bf16), "ATOM_MMA_ACC_DTYPE"),
        (dict(a_dtype=f16, acc_dtype=i32), "ATOM_MMA_ACC_DTYPE"),
    ],
)
def test_dtype_errors(kwargs, code):
    for make in (lambda **kw: mma_sync_m16n8k16(**kw), lambda **kw: wgmma(64, **kw)):
        with pytest.raises(AtomError) as err:
            make(**kwargs)
        assert err.value.code == code
        assert err.value.actual is not None


def test_fp8_is_wgmma_at_k32_only() -> None:
    atom = wgmma(256, e4m3)
    assert atom.shape == (64, 256, 32) and atom.ptx == "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"
    assert atom.a_layout == Layout((128, (64, 32)), (0, (1, 64))) and atom.c_layout == wgmma(256).c_layout
    assert atom.a_majors == atom.b_majors == (Major.K,)  # no transposed 8-bit operands
    assert wgmma_k(e4m3) == wgmma_k(e5m2) == 32 and wgmma_k(bf16) == wgmma_k(f16) == 16
    mixed = wgmma(64, e5m2, e4m3, f16)
    assert mixed.ptx.endswith("k32.f16.e5m2.e4m3") and mixed.acc_dtype == f16
    for kwargs, code in (
        (dict(a_dtype=e4m3, b_dtype=bf16), "ATOM_MMA_DTYPE"),
        (dict(a_dtype=bf16, b_dtype=e4m3), "ATOM_MMA_DTYPE"),
        (dict(a_dtype=e4m3, acc_dtype=bf16), "ATOM_MMA_ACC_DTYPE"),
        (dict(a_dtype=e4m3, a_source="registers"), "ATOM_OPERAND_SOURCE"),
    ):
        with pytest.raises(AtomError) as err:
            wgmma(64, **kwargs)
        assert err.value.code == code, kwargs
    for kwargs in (dict(a_dtype=e4m3), dict(a_dtype=e5m2)):
        with pytest.raises(AtomError) as err:
            mma_sync_m16n8k16(**kwargs)
        assert err.value.code == "ATOM_MMA_DTYPE"


def test_tf32_is_wgmma_at_k8_on_f32_data() -> None:
    """f32 operands are wgmma's k8 form, read as TF32 (``.tf32.tf32``), K-major, A from shared memory, f32
    accumulators; mma.sync's m16n8k16 does not take f32."""
    atom = wgmma(128, f32)
    assert atom.shape == (64, 128, 8) and atom.ptx == "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32"
    assert atom.name == "wgmma.m64n128k8.f32.tf32.tf32.ss" and atom.reads_tf32 and not wgmma(128).reads_tf32
    assert atom.a_dtype == atom.b_dtype == atom.acc_dtype == f32
    assert atom.a_layout == Layout((128, (64, 8)), (0, (1, 64))) and atom.c_layout == wgmma(128).c_layout
    assert atom.a_majors == atom.b_majors == (Major.K,)  # no transposed 32-bit operands
    assert wgmma_k(f32) == 8
    for kwargs, code in (
        (dict(a_dtype=f32, b_dtype=bf16), "ATOM_MMA_DTYPE"),
        (dict(a_dtype=f32, acc_dtype=f16), "ATOM_MMA_ACC_DTYPE"),
        (dict(a_dtype=f32, a_source="registers"), "ATOM_OPERAND_SOURCE"),
    ):
        with pytest.raises(AtomError) as err:
            wgmma(64, **kwargs)
        assert err.value.code == code, kwargs
    with pytest.raises(AtomError) as err:
        mma_sync_m16n8k16(f32)
    assert err.value.code == "ATOM_MMA_DTYPE"


def test_tf32_operands_keep_the_top_ten_mantissa_bits() -> None:
    """The instruction multiplies f32 data truncated to TF32: sign, exponent and the top 10 mantissa bits."""
    x = np.array([1.0 + 2.0**-10, 1.0 + 2.0**-11, -(1.0 + 2.0**-10 + 2.0**-11), 3.0e38, 2.0**-149, 0.0, np.inf])
    want = np.array([1.0 + 2.0**-10, 1.0, -(1.0 + 2.0**-10), None, 0.0, 0.0, np.inf], dtype=object)
    got = tf32_operand(x)
    for g, w in zip(got, want, strict=True):
        if w is not None:
            assert g == w
    bits = np.asarray(got[3], dtype=np.float32).view(np.uint32)
    assert bits & 0x1FFF == 0 and abs(got[3] - 3.0e38) <= 3.0e38 * 2.0**-10  # low 13 bits cleared, toward zero
    assert np.isnan(tf32_operand(np.array([np.nan])))[0]
    rng = np.random.default_rng(0)
    y = rng.standard_normal(10_000).astype(np.float32)
    t = tf32_operand(y)
    assert np.all(np.abs(t) <= np.abs(y)) and np.all(np.abs(y - t) < np.abs(y) * 2.0**-10)
    assert wgmma(64, f32).operand_values(y) is not y and np.array_equal(wgmma(64).operand_values(y), y)


def test_dtype_names_are_accepted():
    assert wgmma(64, "bfloat16", "bf16", "float32").a_dtype is bf16
    assert mma_sync_m16n8k16("f16", acc_dtype="f16").acc_dtype is f16


@pytest.mark.parametrize("source", ["global", "smem", "tmem"])
def test_wgmma_a_source_errors(source):
    with pytest.raises(AtomError) as err:
        wgmma(64, a_source=source)
    assert err.value.code == "ATOM_OPERAND_SOURCE"


def test_bad_operand_name():
    with pytest.raises(AtomError) as err:
        wgmma(64).layout("E")
    assert err.value.code == "ATOM_OPERAND"


def test_atoms_are_frozen_and_hashable():
    atom = wgmma(64)
    with pytest.raises(AttributeError):
        atom.name = "x"  # type: ignore[misc]
    assert wgmma(64) == atom and hash(wgmma(64)) == hash(atom)
    assert wgmma(64, a_source="registers") != atom


def test_smem_operand_checks():
    atom = wgmma(128)
    atom.check_smem_operand("A", 1024 + 32, swizzle_bytes=128, tile_base=1024)
    atom.check_smem_operand("B", 48)
    assert [p.code for p in atom.diagnose_smem_operand("B", 40)] == ["ATOM_WGMMA_SMEM_ALIGN"]
    problems = atom.diagnose_smem_operand("A", 8, swizzle_bytes=128, tile_base=512)
    assert [p.code for p in problems] == ["ATOM_WGMMA_SMEM_ALIGN", "ATOM_SMEM_SWIZZLE_ALIGN"]
    with pytest.raises(AtomError) as err:
        wgmma(128, a_source="registers").check_smem_operand("A", 0)
    assert err.value.code == "ATOM_OPERAND_SOURCE"
    with pytest.raises(AtomError) as err:
        mma_sync_m16n8k16().check_smem_operand("B", 0)
    assert err.value.code == "ATOM_OPERAND_SOURCE"
