"""The gathered TMA load (``X.gather(index, position, shape, origin)``) and the MoE up-projection that reads each
routed row's token through it (`argus.kernels.grouped.grouped_gemm_swiglu_gathered`): a probe kernel on the
interpreter (rows past the index's end read 0) and compiled (one-row boxes, swizzled rows named by their
unswizzled start); the misuses refused; the gathered kernel equal to the plain one on ``index_select``-ed rows,
verified (the stage's invariant: row m holds token ``TOK[row0 + m]``), with a seeded off-by-one gather caught;
the layer composed on the CPU with it; and on a GPU, the probe's rows and the layer with and without the fused
gather."""

from __future__ import annotations

import numpy as np
import pytest
from tests.kernels.kernels_gather import MISUSES, gather_misuse, gather_probe, gathered_up_one_row_late

from argus.atoms.smem import _swizzled, tma_box_start, tma_box_swizzle
from argus.atoms.swizzle import hopper_swizzle
from argus.backend.cuda.codegen import compile_kernel
from argus.interp.machine import interpret
from argus.ir.types import bf16, round_to
from argus.kernels import moe
from argus.kernels.grouped import grouped_gemm_swiglu, grouped_gemm_swiglu_gathered, search_steps
from argus.kernels.moe import tile_counts
from argus.lang.errors import DSLError
from argus.verify import verify
from argus.verify.report import Verdict


def test_a_box_inside_a_swizzle_pattern_is_named_by_its_unswizzled_start() -> None:
    """Row 3 of a 128-byte-swizzled (8, 64) bf16 tile: relative to its first element its chunks are XORed by 3, which
    no box starting at a pattern's start gives; by the absolute address it is the box whose start is row 3's
    unswizzled offset (192), and rows at a pattern's start are their own offsets."""
    sw = hopper_swizzle(128, 16)
    tile = _swizzled(sw, np.arange(8 * 64)).reshape(8, 64)
    row = tile[3][None, :]
    assert tma_box_swizzle(row - row[:, :1], (1, 64), 16) is None
    mode, starts = tma_box_start(row, (1, 64), 16)
    assert mode == 128 and starts.tolist() == [192]
    assert tma_box_start(tile[0][None, :], (1, 64), 16)[1].tolist() == [0]
    assert tma_box_start(tile[3][None, ::-1].copy(), (1, 64), 16) is None  # a row written backwards: no box


def _probe(rows_idx: list[int], tokens: int, k: int, bm: int, swizzle: int = 128) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(len(rows_idx) + k)
    x = round_to(bf16, rng.standard_normal((tokens, k)))
    m = -(-len(rows_idx) // bm) * bm
    y = np.full((m, k), 12345.0)
    interpret(gather_probe, x, np.asarray(rows_idx, dtype=np.int64), y, BM=bm, BK=swizzle // 2, SWIZZLE=swizzle)
    want = np.zeros((m, k))
    want[: len(rows_idx)] = x[rows_idx]
    return y, want


@pytest.mark.parametrize(
    ("rows_idx", "bm", "swizzle"),
    [([5, 0, 9, 9, 3, 7, 1, 2, 8, 4], 16, 128), ([2] * 9, 8, 64), ([9, 1, 0] * 20, 40, 32)],
)
def test_the_interpreter_gathers_the_index_s_rows_and_zeros_past_its_end(rows_idx, bm, swizzle) -> None:
    y, want = _probe(rows_idx, 10, 128, bm, swizzle)
    np.testing.assert_array_equal(y, want)  # repeated rows, every row past the index's end 0


def test_the_probe_compiles_to_one_row_boxes_at_their_unswizzled_starts_and_verifies() -> None:
    compiled = compile_kernel(gather_probe.trace())
    source = compiled.generated.source
    assert "gather_row" in source and "__ldg(IDX" in source  # a loop over the rows, each row's token read
    assert "argus::swizzle" not in source.split("gathered rows of X")[1].split("}")[1]  # the start is not swizzled
    assert compiled.instruction_mix().get("UTMALDG", 0) >= 1
    report = verify(gather_probe.trace())
    assert not report.findings, [f.message for f in report.findings]
    assert any(c.check == "TMA box layout" and c.verdict == Verdict.VERIFIED for c in report.checks)


def test_rows_narrower_than_128_bytes_are_refused_by_the_code_generator() -> None:
    """A TMA box's shared address is 128-byte aligned: one-row boxes of 64-byte rows (a 64-byte-swizzled tile of 32
    bf16 columns) cannot start at every row. The interpreter takes them (it has no addresses); the code generator
    refuses with the atom's rule."""
    from argus.backend.cuda.codegen.errors import CodegenError

    with pytest.raises(CodegenError, match="ATOM_TMA_SMEM_ALIGN"):
        compile_kernel(gather_probe.trace(BM=8, BK=32, SWIZZLE=64))


@pytest.mark.parametrize("variant", MISUSES)
def test_misuses_of_gather_are_refused_at_trace_time(variant: str) -> None:
    with pytest.raises(DSLError) as err:
        gather_misuse.trace(VARIANT=variant)
    assert err.value.code == "DSL_GATHER"


def _routed(offs: list[int], tokens: int, k: int, n: int, seed: int = 0):  # noqa: ANN202
    rng = np.random.default_rng(seed)
    rows = offs[-1] + 5  # routed rows past offs[E-1] too (they belong to no expert)
    x = round_to(bf16, rng.standard_normal((tokens, k)))
    tok = rng.integers(0, tokens, rows)
    tok[-1] = tokens - 1  # the last token
    w = round_to(bf16, rng.standard_normal((len(offs), k, 2 * n)) * k**-0.5)
    scale = rng.uniform(0.0, 1.0, rows)
    return x, tok, w, scale


@pytest.mark.parametrize(
    ("offs", "tokens", "n", "params"),
    [
        ([0, 70, 70, 250, 290], 160, 128, {}),  # empty experts, groups straddling row tiles, rows past the end
        ([40, 40, 200], 90, 72, {"BN": 64}),  # I not a multiple of the tile
        ([1, 1, 3, 9, 9, 12], 6, 128, {"BM": 64, "BN": 64, "CONSUMERS": 1, "STAGES": 4}),  # decode tiles
    ],
)
def test_the_gathered_kernel_equals_the_plain_one_on_gathered_rows(offs, tokens, n, params) -> None:
    x, tok, w, scale = _routed(offs, tokens, 128, n, seed=tokens)
    ends = np.asarray(offs, dtype=np.int64)
    cfg = {"BM": 128, "BN": 128, "BK": 64, "STAGES": 3, "BLOCKS": 3, "SEARCH": search_steps(len(offs))} | params
    rows = tok.shape[0]
    plain, gathered = np.full((rows, n), 12345.0), np.full((rows, n), 12345.0)
    interpret(grouped_gemm_swiglu, x[tok], w, ends, tile_counts(ends, cfg["BM"]), scale, plain, **cfg)
    interpret(grouped_gemm_swiglu_gathered, x, tok, w, ends, tile_counts(ends, cfg["BM"]), scale, gathered, **cfg)
    np.testing.assert_array_equal(gathered, plain)  # the same products in the same order
    assert np.all(gathered[offs[-1] :] == 12345.0) and not np.isnan(gathered).any()


def test_the_gathered_kernel_verifies_and_an_off_by_one_gather_is_caught() -> None:
    report = verify(grouped_gemm_swiglu_gathered.trace(BLOCKS=3, STAGES=3, SEARCH=3))
    assert not report.findings, [f.message for f in report.findings]
    proved = [c.check for c in report.checks if c.verdict == Verdict.VERIFIED]
    assert proved.count("tag assertion") == 3  # the gathered rows, the gate's and the up columns
    assert "output written once" in proved and proved.count("contraction accumulated once") == 4
    found = verify(gathered_up_one_row_late.trace())
    bad = [f for f in found.findings if f.code == "TAG_ASSERT" and f.verdict == Verdict.VIOLATED]
    assert bad and "of sA: sA has X(" in bad[0].message  # a gathered row holds some other token's row
    assert "TOK[" in bad[0].message and any(k.startswith("TOK[") for k in bad[0].counterexample.variables)


def test_the_gathered_kernel_compiles_without_spills() -> None:
    compiled = compile_kernel(grouped_gemm_swiglu_gathered.trace())
    assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    mix = compiled.instruction_mix()
    assert mix.get("UTMALDG", 0) >= 3 and mix.get("HGMMA", 0) >= 2  # the row boxes, the gate's and the up boxes


def test_the_library_call_checks_the_tokens() -> None:
    torch = pytest.importorskip("torch")
    x = torch.zeros(8, 16, dtype=torch.bfloat16)
    w = torch.zeros(4, 16, 16, dtype=torch.bfloat16)
    offs = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(moe.GroupedError, match="token must be a contiguous int32"):
        moe.prepare(x, w, offs, epilogue="swiglu", token=torch.zeros(3, dtype=torch.int64))
    with pytest.raises(moe.GroupedError, match="taken by the SwiGLU epilogue only"):
        moe.prepare(x, w, offs, token=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(moe.GroupedError, match="epilogue is one of"):  # the gathered kernel: through token= only
        moe.prepare(x, w, offs, epilogue="swiglu_gathered")


@pytest.mark.gpu
def test_the_gpu_gathers_what_the_interpreter_gathers_and_the_layer_agrees_with_and_without_it() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.runtime import load

    for bm, swizzle in ((16, 128), (40, 128)):  # rows of 128 bytes: each row's box starts 128-byte aligned
        idx = [int(i) for i in np.random.default_rng(bm).integers(0, 10, bm + 3)]
        y_cpu, want = _probe(idx, 10, 128, bm, swizzle)
        rng = np.random.default_rng(len(idx) + 128)
        x = torch.from_numpy(round_to(bf16, rng.standard_normal((10, 128)))).to(torch.bfloat16).cuda()
        y = torch.full(want.shape, float("nan"), dtype=torch.bfloat16, device="cuda")
        loaded = load(compile_kernel(gather_probe.trace(BM=bm, BK=swizzle // 2, SWIZZLE=swizzle)))
        loaded(x, torch.tensor(idx, dtype=torch.int32, device="cuda"), y)
        torch.cuda.synchronize()
        np.testing.assert_array_equal(y.float().cpu().numpy(), want)
    g = torch.Generator().manual_seed(1)
    for tokens, hidden, inter, experts, top_k in ((200, 256, 192, 8, 2), (1000, 512, 264, 37, 4), (3, 256, 128, 8, 2)):
        x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16).cuda()
        router = (torch.randn(hidden, experts, generator=g) * hidden**-0.5).cuda()
        w1 = (torch.randn(experts, hidden, 2 * inter, generator=g) * hidden**-0.5).to(torch.bfloat16).cuda()
        w2 = (torch.randn(experts, inter, hidden, generator=g) * inter**-0.5).to(torch.bfloat16).cuda()
        fused = moe.moe_layer(x, router, w1, w2, top_k, fused_gather=True)
        composed = moe.moe_layer(x, router, w1, w2, top_k, fused_gather=False)
        assert torch.equal(fused, composed)  # the same rows in the same order: the same products
