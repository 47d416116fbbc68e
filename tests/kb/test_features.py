"""Features read off the library kernels' IR, plus profile and verifier facts passed in as data."""

from __future__ import annotations

import pytest

from argus.kb import FEATURES, KBError, kernel_features
from argus.kb.features import check_value
from argus.kernels import all_kernels, get_kernel
from argus.verify import verify


@pytest.fixture(scope="module")
def features():
    return {e.name: kernel_features(e) for e in all_kernels()}


def test_every_feature_is_declared_and_well_typed(features) -> None:
    for name, f in features.items():
        for key, value in f.items():
            assert key in FEATURES, f"{name}: undeclared feature {key}"
            assert check_value(FEATURES[key], value), f"{name}: {key} = {value!r} is not a {FEATURES[key].type}"


def test_hopper_gemm(features) -> None:
    f = features["gemm_warp_specialized"]
    assert f["mma.kind"] == "wgmma" and f["mma.a_source"] == "shared" and f["mma.n"] == 128
    assert "tma" in f["copy.global_loads"] and f["pipeline.kind"] == "mbarrier"
    assert f["pipeline.stages"] == 3 and f["pipeline.mbarriers"] == 6
    assert f["roles.count"] == 2 and f["roles.names"] == {"producer", "consumer"}
    assert f["roles.warp_specialized"] and f["roles.register_split"] == (40, 232)
    assert f["roles.consumer_warpgroups"] == 2
    assert f["smem.swizzle"] == 128 and f["smem.unswizzled_buffers"] == 0
    assert f["smem.bytes"] == 3 * (128 + 128) * 64 * 2 + 6 * 8  # stages x (A + B tiles) + mbarriers
    assert f["mma.accumulator_registers"] == 128 * 128 // 256  # f32 accumulator over two warpgroups
    assert {"tile_shape", "stages"} <= f["policies.declared"] <= f["policies.present"]
    assert f["policies.stages"] == 3 and f["policies.tile_shape"] == (128, 128, 64)
    assert f["dtypes.mma_operands"] == {"bf16"} and f["dtypes.accumulator"] == {"f32"}


def test_ampere_style_gemms(features) -> None:
    plain, piped = features["gemm_mma_sync"], features["gemm_cp_async"]
    for f in (plain, piped):
        assert f["mma.kind"] == "mma.sync" and f["mma.a_source"] == "register"
        assert f["copy.shared_to_register"] == {"ldmatrix"} and f["smem.staged"]
        assert f["smem.swizzle"] == 0 and f["smem.unswizzled_buffers"] == 2
        assert not f["roles.warp_specialized"] and f["roles.count"] == 0
    assert plain["pipeline.kind"] == "none" and plain["pipeline.stages"] == 1
    assert piped["pipeline.kind"] == "cp.async" and piped["pipeline.stages"] == 2
    assert "cp.async" in piped["copy.global_loads"] and "cp.async" not in plain["copy.atoms"]


def test_persistent_gemm(features) -> None:
    f = features["gemm_persistent"]
    assert f["grid.persistent"] and f["grid.tile_order"] == "grouped" and f["grid.blocks"] == 3
    assert features["gemm_mma_sync"]["grid.tile_order"] == "none"


def test_elementwise_and_row_kernels(features) -> None:
    add = features["vector_add"]
    assert add["ops.elementwise_only"] and add["mma.kind"] == "none" and not add["ops.gemm"]
    assert add["dtypes.inputs"] == {"f32"} and not add["dtypes.tensor_core_inputs"]
    sm = features["softmax"]
    assert sm["ops.reductions"] == {"max", "sum"} and sm["ops.shuffle_reduction"] and sm["ops.exp2"]
    assert not sm["ops.exp"] and not sm["ops.online_softmax"]


def test_attention(features) -> None:
    f = features["flash_attention_fwd"]
    assert f["ops.online_softmax"] and f["ops.chained_gemm"] and f["ops.gemm_count"] == 2
    assert f["ops.masked"] and not f["ops.causal_mask"]  # masks key positions past S only
    assert f["mma.kind"] == "wgmma" and f["roles.register_split"] == (40, 240)
    assert f["policies.declared"] == frozenset() and f["policies.stages"] == 2  # read off the trace


def test_trace_parameters_change_the_features() -> None:
    f = kernel_features(get_kernel("gemm_cp_async"), STAGES=4, BM=128)
    assert f["pipeline.stages"] == 4 and f["policies.tile_shape"] == (128, 64, 32)
    assert f["smem.bytes"] == 4 * (128 * 32 + 32 * 64) * 2
    assert f.params == {"STAGES": 4, "BM": 128}


def test_an_at_argus_kernel_and_a_traced_kernel_work_too() -> None:
    entry = get_kernel("gemm_cp_async")
    from_function = kernel_features(entry.kernel)
    from_trace = kernel_features(entry.kernel.trace())
    assert {"tile_shape", "stages"} <= from_function["policies.declared"]
    assert from_trace["policies.declared"] == frozenset()  # a traced kernel does not know its declarations
    assert {k: v for k, v in from_function.items() if k != "policies.declared"} == {
        k: v for k, v in from_trace.items() if k != "policies.declared"
    }
    with pytest.raises(KBError) as info:
        kernel_features(entry.kernel.trace(), STAGES=3)
    assert info.value.code == "KB_FEATURES_PARAMS"
    with pytest.raises(KBError) as info:
        kernel_features("gemm_cp_async")
    assert info.value.code == "KB_FEATURES_TARGET"


def test_profile_facts() -> None:
    gemm = get_kernel("gemm_mma_sync")
    f = kernel_features(gemm, profile={"compute_fraction": 0.3, "memory_fraction": 0.8, "occupancy": 0.5})
    assert f["profile.bound"] == "memory" and f["profile.fraction_of_ceiling"] == 0.8
    assert f["profile.occupancy"] == 0.5
    assert "profile.bound" not in kernel_features(gemm)  # unknown, not guessed
    with pytest.raises(KBError) as info:
        kernel_features(gemm, profile={"boundness": "memory"})
    assert info.value.code == "KB_PROFILE" and "boundness" in info.value.message
    with pytest.raises(KBError):
        kernel_features(gemm, profile={"bound": "disk"})


def test_verifier_findings_become_features() -> None:
    gemm = get_kernel("gemm_mma_sync")
    result = verify(gemm)
    f = kernel_features(gemm, findings=result)
    assert f["verify.bank_conflict_degree"] == 8.0  # the B tile read by ldmatrix.trans, row-major
    assert "PERF_BANK_CONFLICT" in f["verify.codes"] and f["verify.errors"] == 0
    assert f["verify.codes"] == {x.code for x in result.findings}
    as_json = kernel_features(gemm, findings=[x.to_json() for x in result.findings])
    assert as_json["verify.bank_conflict_degree"] == 8.0
    clean = kernel_features(get_kernel("gemm_warp_specialized"), findings=verify(get_kernel("gemm_warp_specialized")))
    assert clean["verify.bank_conflict_degree"] == 1.0 and "PERF_BANK_CONFLICT" not in clean["verify.codes"]
    with pytest.raises(KBError):
        kernel_features(gemm, findings=[{"code": "NOT_A_CODE"}])


def test_problem_shape_facts() -> None:
    f = kernel_features(get_kernel("gemm_warp_specialized"), shapes={"M": 4096, "N": 4096, "K": 4096})
    assert f["shape.output_tiles"] == 32 * 32 and f["shape.k_tiles"] == 64
    assert f["shape.waves"] == pytest.approx(1024 / 132)
    assert f["shape.wave_efficiency"] == pytest.approx(1024 / (8 * 132))
    assert kernel_features(get_kernel("gemm_warp_specialized"), shapes={"G": 8})["shape.groups"] == 8
    # a grouped kernel's groups are the extent its offsets and its per-group operand share (E: experts)
    grouped = {"R": 8192, "E": 8, "K": 4096, "N": 28672}
    assert kernel_features(get_kernel("grouped_gemm_expert_grid"), shapes=grouped)["shape.groups"] == 8
    assert "shape.groups" not in kernel_features(get_kernel("gemm_warp_specialized"), shapes={"M": 8, "N": 8, "E": 8})


def test_hardware_facts() -> None:
    gemm = get_kernel("gemm_mma_sync")
    assert kernel_features(gemm)["hardware.wgmma"] is True
    older = kernel_features(gemm, arch="sm_80")
    assert older["hardware.tma"] is False and older["hardware.wgmma"] is False
    with pytest.raises(KBError):
        kernel_features(gemm, arch="sm_120")


def test_statements_under_a_let_binding_are_seen(features) -> None:
    """The persistent GEMM's producer loads its K-steps under T.let bindings of the tile's coordinates: features
    (and the cost model, which counts the same statements) read the program with its bindings inlined, as the
    verifier does, so the TMA loads and the producer's pipeline are there."""
    from argus.eval.costmodel import estimate
    from argus.ir.nodes import Let, walk

    entry = get_kernel("gemm_warp_specialized_persistent")
    assert any(isinstance(s, Let) for s in walk(entry.kernel.trace(**entry.params).body))  # the binding in question
    f = features["gemm_warp_specialized_persistent"]
    assert "tma" in f["copy.global_loads"] and f["pipeline.kind"] == "mbarrier" and f["pipeline.stages"] >= 2
    sizes = {"M": 4096, "N": 4096, "K": 4096}
    loads = (4096 // 128) ** 2 * (128 + 128) * 4096 * 2  # every 128x128 tile's bf16 A and B panels (the TMA loads)
    assert estimate(entry, sizes).counts["global_bytes"] >= loads
