"""The staged TMA-store epilogue (``T.copy(acc, C.tile(...), atom="tma.store", staging=sC)``) and the persistent
expert that uses it (EPILOGUE="tma"): correct on the interpreter for bf16, f16 and f32 C with partial tiles, verified,
compiled to TMA stores (``UTMASTG``) whose staging protocol is in the generated code, and every misuse refused with
a clear error: no or a wrong staging buffer, the staging buffer or the destination used elsewhere, a fragment that
is not a wgmma accumulator, and C rows the tensor map cannot describe (a seeded missing assumption the verifier
reports with a size)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.kernels.kernels_tma_store import tma_store_tile

from argus.backend.cuda.codegen import compile_kernel, generate
from argus.backend.cuda.codegen.errors import CodegenError
from argus.interp import run_kernel
from argus.ir.nodes import Copy, walk
from argus.ir.types import bf16, round_to
from argus.kernels import get_kernel
from argus.kernels.gemm import gemm_warp_specialized_persistent
from argus.kernels.registry import check_on_interpreter
from argus.lang.errors import DSLError
from argus.verify import verify


@pytest.mark.parametrize(("out", "tol"), [("bf16", 2**-8), ("f16", 2**-10), ("f32", 1e-6)])
def test_the_store_writes_every_element_once_with_partial_tiles(out: str, tol: float) -> None:
    a = np.random.default_rng(0).standard_normal((200, 136))  # 2 x 3 tiles, the last row and column partial
    arrays = {"A": a, "C": np.full((200, 136), np.nan)}
    run_kernel(tma_store_tile.trace(OUT=out), arrays)
    assert not np.isnan(arrays["C"]).any()
    assert np.max(np.abs(arrays["C"] - a) / np.maximum(np.abs(a), 1)) < tol


@pytest.mark.parametrize(
    ("variant", "needle"),
    [
        ("no_staging", "needs staging="),
        ("bad_shape", "two 128-byte-swizzled chunks of 128 rows and 64 columns"),
        ("no_swizzle", "two 128-byte-swizzled chunks"),
        ("staging_reused", "staging buffer of a tma.store"),
        ("dst_read", "C is the destination of a tma.store"),
        ("staging_on_plain_copy", "only atom='tma.store' takes a staging buffer"),
    ],
)
def test_misuses_are_refused_when_traced(variant: str, needle: str) -> None:
    with pytest.raises(DSLError) as err:
        tma_store_tile.trace(VARIANT=variant)
    assert err.value.code == "DSL_TMA_STAGING"
    assert needle in str(err.value)


def test_a_fragment_that_is_not_a_wgmma_accumulator_is_refused_by_the_generator() -> None:
    with pytest.raises(CodegenError) as err:
        generate(tma_store_tile.trace(VARIANT="not_wgmma"))
    assert "64 whole rows" in str(err.value)


def test_the_small_kernel_verifies_and_a_missing_row_alignment_assumption_is_reported_with_a_size() -> None:
    assert verify(tma_store_tile.trace()).verdict.value == "verified"
    result = verify(tma_store_tile.trace(VARIANT="no_assume"))
    tma = [f for f in result.findings if f.code == "ALIGN_TMA"]
    assert tma and "TMA copy of C" in tma[0].message
    n = tma[0].counterexample.shapes["N"]
    assert (n * 2) % 16 != 0  # a size whose bf16 rows the tensor map cannot describe


def test_the_persistent_expert_uses_it_and_still_verifies() -> None:
    entry = get_kernel("gemm_hopper_persistent")
    assert entry.params["EPILOGUE"] == "tma"
    kernel = entry.kernel.trace(**entry.params)
    assert "((N % 8) == 0)" in [str(a) for a in kernel.assumptions]
    assert verify(kernel).verdict.value == "verified"
    # the same kernel without the assumption: C's rows are not 16-byte aligned for some N
    loose = dataclasses.replace(kernel, assumptions=tuple(a for a in kernel.assumptions if "N %" not in str(a)))
    assert any(f.code == "ALIGN_TMA" for f in verify(loose).findings)


def test_the_lineage_rung_is_the_persistent_rung_with_the_tma_epilogue() -> None:
    rung, persistent = get_kernel("gemm_tma_store_epilogue"), get_kernel("gemm_warp_specialized_persistent")
    assert rung.kernel is persistent.kernel
    assert rung.params == {**persistent.params, "EPILOGUE": "tma"} and persistent.params.get("EPILOGUE") is None
    assert (rung.default_shape, rung.partial_shape) == (persistent.default_shape, persistent.partial_shape)
    for shape in (rung.default_shape, rung.partial_shape):
        assert shape["N"] % 8 == 0  # C's rows 16-byte aligned, as the staged store assumes
    # the partial shape still has partial tiles in M and N and a partial last K-block
    assert rung.partial_shape["M"] % 128 and rung.partial_shape["N"] % 128 and rung.partial_shape["K"] % 64
    kernel = rung.kernel.trace(**rung.params)
    assert any(s.atom == "tma.store" for s in walk(kernel.body) if isinstance(s, Copy))
    assert check_on_interpreter(rung, rung.partial_shape) < 1e-5


def _operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    a = np.asarray(round_to(bf16, rng.standard_normal((m, k))), dtype=np.float64)
    b = np.asarray(round_to(bf16, rng.uniform(-1, 1, (n, k))), dtype=np.float64)
    return a, b


@pytest.mark.parametrize(
    ("m", "n", "k", "params", "tol"),
    [
        # 2 x 4 partial tiles on 3 blocks walking several tiles each, bf16 C: 1 chunk pair per 64-column tile
        (200, 200, 200, {"BN": 64, "BLOCKS": 3, "GROUP": 2, "OUT": "bf16"}, 5e-3),
        # f32 C (32-column chunks: 4 per 128-column tile, each buffer used twice per tile), one block for all tiles
        (256, 136, 136, {"BLOCKS": 1, "OUT": "f32"}, 1e-5),
    ],
)
def test_the_persistent_kernel_with_the_tma_epilogue_is_correct_on_the_interpreter(
    m: int, n: int, k: int, params: dict, tol: float
) -> None:
    kernel = gemm_warp_specialized_persistent.trace(EPILOGUE="tma", **params)
    a, b = _operands(m, n, k)
    arrays = {"A": a, "B": b, "C": np.full((m, n), np.nan)}
    run_kernel(kernel, arrays)
    ref = a @ b.T
    assert float(np.max(np.abs(arrays["C"] - ref)) / np.max(np.abs(ref))) < tol


def test_an_unknown_epilogue_is_refused() -> None:
    with pytest.raises(DSLError) as err:
        gemm_warp_specialized_persistent.trace(EPILOGUE="stmatrix")
    assert err.value.code == "DSL_BAD_PARAM"


@pytest.fixture(scope="module")
def expert():
    entry = get_kernel("gemm_hopper_persistent")
    return entry, compile_kernel(entry.kernel.trace(**entry.params))


def test_the_expert_compiles_to_tma_stores_without_spills(expert) -> None:
    entry, compiled = expert
    mix = compiled.instruction_mix()
    for opcode in ("UTMASTG", "UTMALDG", "HGMMA", "USETMAXREG"):
        assert mix.get(opcode, 0) > 0, (opcode, mix)
    assert mix.get("STG", 0) == 0  # C leaves through TMA only
    assert mix.get("UTMACCTL", 0) == 3  # thread 0 prefetches the three tensor maps at the start
    r = compiled.resources
    assert r.spill_stores == 0 and r.spill_loads == 0, r
    g = compiled.generated
    assert g.shared_bytes <= 232448  # the four 48 KB stages and two 2 x 128 x 128-byte chunk buffers
    assert [m.box for m in g.tensor_maps if m.tensor == "C"] == [(64, 64)]


def test_the_generated_protocol_waits_before_reusing_a_buffer_and_before_exit(expert) -> None:
    src = expert[1].generated.source
    epilogue = src[src.index("through sC") :]
    # four chunks, alternating buffers: each waits until the store that last read its buffer has, then writes (the
    # first for every earlier store: the previous tile's last one may have read its buffer; tests/backend/
    # test_staged_store_reuse.py)
    assert epilogue.count("argus::tma_store_wait_read<0>();") == 1
    assert epilogue.count("argus::tma_store_wait_read<1>();") == 3
    assert epilogue.count("argus::fence_proxy_async_shared();") == 4
    assert epilogue.count("argus::tma_store_commit();") == 4
    # each warpgroup has its own named barrier, clear of the roles' (1 and 2)
    assert epilogue.count("argus::named_barrier(warpgroup + 14, 128);") == 8
    assert src.rstrip().endswith(
        "argus::tma_store_wait_all();  // every TMA store has read its shared memory before the block exits\n}"
    )


# --- the GPU -----------------------------------------------------------------------------------------------------


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.gpu
@pytest.mark.parametrize("out", ["bf16", "f16", "f32"])
def test_the_staged_store_is_correct_on_the_gpu(out: str) -> None:
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.runtime import load

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[out]
    small = load(compile_kernel(tma_store_tile.trace(OUT=out)))
    a = torch.randn(200, 136, device="cuda")
    c = torch.full((200, 136), float("nan"), device="cuda", dtype=dtype)
    small(a, c)
    torch.cuda.synchronize()
    assert torch.equal(c, a.to(dtype))  # every element written, once, with the conversion the interpreter does
    # the persistent kernel: blocks walking several partial tiles (f32: 32-column chunks, each buffer twice a tile)
    traced = gemm_warp_specialized_persistent.trace(EPILOGUE="tma", OUT=out, BN=256, STAGES=4, BLOCKS=5)
    kernel = load(compile_kernel(traced))
    for m, n, k in ((1000, 1000, 1000), (2048, 776, 264)):
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
        kernel(a, b, c)
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        assert float((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2, (out, m, n, k)
