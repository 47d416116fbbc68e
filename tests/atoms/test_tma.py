"""TMA tile copies: fields, layouts, and every constraint of cuTensorMapEncodeTiled that argus checks."""

from __future__ import annotations

import pytest

from argus.atoms import AtomError, CopyKind, MemorySpace, Scope, tma_load, tma_store
from argus.ir.types import DType, DTypeKind, bf16, e4m3, f16, f32
from argus.layout import Layout

# A legal 2-d load: a 4096 x 4096 bf16 row-major matrix, boxes of 64 (inner, 128 bytes) x 128 rows.
LEGAL_2D = dict(
    dtype=bf16,
    global_shape=(4096, 4096),
    global_strides=(4096 * 2,),
    box=(64, 128),
    global_address=0x7F00_0000_0000,
    smem_address=1024 * 3,
    swizzle=128,
)
LEGAL_3D = dict(
    dtype=f32,
    global_shape=(128, 64, 12),
    global_strides=(128 * 4, 128 * 64 * 4),
    box=(32, 16, 2),
    global_address=256,
    smem_address=128,
    swizzle=0,
)


def _codes(atom, **overrides):
    args = dict(LEGAL_2D if atom.rank == 2 else LEGAL_3D)
    args.update(overrides)
    return [p.code for p in atom.diagnose(**args)]


def test_fields():
    load, store = tma_load(2), tma_store(3)
    assert load.name == "tma.load.2d" and store.name == "tma.store.3d"
    assert load.ptx == "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    assert store.ptx == "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group"
    assert load.kind is CopyKind.TMA_LOAD and store.kind is CopyKind.TMA_STORE
    assert (load.src_space, load.dst_space) == (MemorySpace.GLOBAL, MemorySpace.SHARED)
    assert (store.src_space, store.dst_space) == (MemorySpace.SHARED, MemorySpace.GLOBAL)
    assert load.thread_count == 1 and load.scope is Scope.THREAD
    assert load.smem_alignment == 128 and load.global_alignment == 16 and load.max_box == 256


@pytest.mark.parametrize("make", [tma_load, tma_store])
def test_legal_copies_pass(make):
    for rank, args in ((2, LEGAL_2D), (3, LEGAL_3D)):
        atom = make(rank)
        assert atom.diagnose(**args) == ()
        atom.check(**args)


def test_layouts():
    atom = tma_load(3)
    assert atom.tile_shape((8, 4, 2)) == (8, 4, 2)
    assert atom.tv_layout((8, 4, 2)) == Layout((1, 64), (0, 1))
    plain = atom.smem_layout(f16, (8, 4, 2))
    assert [plain(x, y, z) for z in range(2) for y in range(4) for x in range(8)] == list(range(64))
    swizzled = tma_load(2).smem_layout(bf16, (64, 8), 128)
    # 128-byte swizzle: the 16-byte chunk (8 bf16) of row r moves to chunk (c ^ r)
    for r in range(8):
        for chunk in range(8):
            assert swizzled(8 * chunk, r) == 64 * r + 8 * (chunk ^ r)


@pytest.mark.parametrize("box", [(0, 128), (64, 257), (512, 8)])
def test_box_range(box):
    assert "ATOM_TMA_BOX" in _codes(tma_load(2), box=box, swizzle=0)


@pytest.mark.parametrize("dtype, inner", [(bf16, 4), (bf16, 12), (f32, 2), (f16, 36)])
def test_inner_box_must_be_16_byte_multiple(dtype, inner):
    codes = _codes(tma_load(2), dtype=dtype, box=(inner, 8), swizzle=0)
    assert codes == ["ATOM_TMA_BOX_INNER"]
    problem = tma_load(2).diagnose(**{**LEGAL_2D, "dtype": dtype, "box": (inner, 8), "swizzle": 0})[0]
    assert str(inner) in problem.actual and "16" in problem.requirement and "multiple of" in problem.hint


@pytest.mark.parametrize("swizzle, inner_ok, inner_bad", [(32, 16, 24), (64, 32, 40), (128, 64, 72)])
def test_inner_box_must_fit_the_swizzle(swizzle, inner_ok, inner_bad):
    smem = {"smem_address": 4096}
    assert _codes(tma_load(2), box=(inner_ok, 64), swizzle=swizzle, **smem) == []
    assert _codes(tma_load(2), box=(inner_bad, 64), swizzle=swizzle, **smem) == ["ATOM_TMA_SWIZZLE_SPAN"]


def test_unknown_swizzle():
    assert _codes(tma_load(2), swizzle=256) == ["ATOM_TMA_SWIZZLE"]


@pytest.mark.parametrize("strides", [(8194,), (8200,), (0,), (2**40,)])
def test_global_strides(strides):
    assert _codes(tma_load(2), global_strides=strides) == ["ATOM_TMA_GLOBAL_STRIDE"]


def test_global_dims():
    assert _codes(tma_load(2), global_shape=(0, 16)) == ["ATOM_TMA_GLOBAL_DIM"]
    assert _codes(tma_load(2), global_shape=(64, 2**32 + 1)) == ["ATOM_TMA_GLOBAL_DIM"]
    assert _codes(tma_load(2), global_shape=(64, 2**32)) == []


@pytest.mark.parametrize("address", [8, 4, 0x1001])
def test_global_alignment(address):
    assert _codes(tma_store(2), global_address=address) == ["ATOM_TMA_GLOBAL_ALIGN"]


@pytest.mark.parametrize("address", [64, 16, 1024 + 8])
def test_smem_alignment(address):
    assert _codes(tma_load(2), smem_address=address, swizzle=0, box=(8, 8)) == ["ATOM_TMA_SMEM_ALIGN"]


@pytest.mark.parametrize("swizzle, address", [(128, 512), (128, 128), (64, 256), (32, 128)])
def test_swizzled_smem_must_start_at_the_pattern(swizzle, address):
    box = (swizzle // 2, 8)
    assert _codes(tma_load(2), smem_address=address, swizzle=swizzle, box=box) == ["ATOM_SMEM_SWIZZLE_ALIGN"]
    repeat = {32: 256, 64: 512, 128: 1024}[swizzle]
    assert _codes(tma_load(2), smem_address=2 * repeat, swizzle=swizzle, box=box) == []


def test_rank_mismatches():
    assert _codes(tma_load(2), box=(64, 64, 2)) == ["ATOM_TMA_RANK"]
    assert _codes(tma_load(2), global_shape=(64,)) == ["ATOM_TMA_RANK"]
    assert _codes(tma_load(3), global_strides=(512,)) == ["ATOM_TMA_RANK"]
    assert _codes(tma_load(2), element_strides=(1,)) == ["ATOM_TMA_RANK"]


def test_element_strides():
    assert _codes(tma_load(2), element_strides=(1, 8)) == []
    assert _codes(tma_load(2), element_strides=(1, 9)) == ["ATOM_TMA_ELEMENT_STRIDE"]
    assert _codes(tma_load(2), element_strides=(0, 1)) == ["ATOM_TMA_ELEMENT_STRIDE"]


def test_every_problem_is_reported_and_check_raises_the_first():
    bad = dict(LEGAL_2D, box=(60, 300), global_strides=(100,), global_address=3, smem_address=64)
    problems = tma_load(2).diagnose(**bad)
    codes = [p.code for p in problems]
    for code in (
        "ATOM_TMA_BOX",
        "ATOM_TMA_BOX_INNER",
        "ATOM_TMA_GLOBAL_STRIDE",
        "ATOM_TMA_GLOBAL_ALIGN",
        "ATOM_TMA_SMEM_ALIGN",
    ):
        assert code in codes
    with pytest.raises(AtomError) as err:
        tma_load(2).check(**bad)
    assert err.value.code == codes[0]
    text = str(err.value)
    assert "requires:" in text and "actual:" in text


def test_errors_name_requirement_actual_and_fix():
    problem = tma_load(2).diagnose(**dict(LEGAL_2D, box=(128, 64)))[0]  # 256 bytes > 128-byte swizzle
    assert problem.code == "ATOM_TMA_SWIZZLE_SPAN"
    assert "128" in problem.requirement and "256 bytes" in problem.actual and "box[0] <= 64" in problem.hint


@pytest.mark.parametrize("rank", [0, 6, 2.0, True])
def test_bad_rank(rank):
    with pytest.raises(AtomError) as err:
        tma_load(rank)
    assert err.value.code == "ATOM_TMA_RANK"


def test_fp8_boxes_count_bytes():
    # FP8 elements are one byte: a 128-element inner box is the 128-byte swizzle span, 129 elements exceed it
    assert tma_load(2).diagnose(**dict(LEGAL_2D, dtype=e4m3, box=(128, 64), swizzle=128)) == ()
    codes = {p.code for p in tma_load(2).diagnose(**dict(LEGAL_2D, dtype=e4m3, box=(136, 64), swizzle=128))}
    assert codes, "a 136-byte inner box under a 128-byte swizzle must be refused"
    e3m4 = DType("e3m4", 8, DTypeKind.FLOAT, exponent_bits=3, mantissa_bits=4, supported=False)
    with pytest.raises(AtomError) as err:
        tma_load(2).diagnose(**dict(LEGAL_2D, dtype=e3m4))
    assert err.value.code == "ATOM_DTYPE_UNSUPPORTED"


def test_bad_box_for_layouts():
    with pytest.raises(AtomError) as err:
        tma_load(2).tv_layout((64,))
    assert err.value.code == "ATOM_TMA_BOX"
    with pytest.raises(AtomError) as err:
        tma_load(2).smem_layout(bf16, (64, 8), 48)
    assert err.value.code == "ATOM_TMA_SWIZZLE"
