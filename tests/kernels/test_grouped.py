"""The MoE grouped GEMM (`argus.kernels.grouped`): on the interpreter with empty, tiny, skewed and tile-straddling
groups; verified (every check but the two that do not read bounded stores, which say so); compiled for sm_90a with
the wgmma and TMA instructions it needs; its library call's refusals; and, on a GPU, against torch."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.interp.machine import interpret
from argus.ir.types import bf16, round_to
from argus.kernels import grouped, moe
from argus.kernels.grouped import grouped_gemm_persistent, search_steps
from argus.kernels.moe import tile_counts
from argus.kernels.workloads import grouped_product
from argus.verify import verify
from argus.verify.engine import CHECKS
from argus.verify.report import Verdict


def _run(offs: list[int], rows: int, k: int, n: int, **params: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(len(offs) * 1000 + rows)
    experts = len(offs)
    a = round_to(bf16, rng.standard_normal((rows, k)))
    b = round_to(bf16, rng.standard_normal((experts, k, n)))
    ends = np.asarray(offs, dtype=np.int64)
    c = np.full((rows, n), 12345.0)  # poison: rows no expert owns keep it
    cfg = {"BM": 128, "BN": 128, "BK": 64, "STAGES": 3, "BLOCKS": 3, "SEARCH": search_steps(experts)} | params
    interpret(grouped_gemm_persistent, a, b, ends, tile_counts(ends, cfg["BM"]), c, **cfg)
    return c, grouped_product(a, b, ends)


@pytest.mark.parametrize(
    ("offs", "rows"),
    [
        ([0, 70, 70, 250, 290], 300),  # empty first and third experts, groups straddling row tiles, rows past the end
        ([300], 300),  # one expert: a dense GEMM with a partial last tile
        ([1, 2, 3, 3, 131, 260, 261, 300], 300),  # tiny groups (one row), skew, eight experts (SEARCH = 3)
    ],
)
def test_every_expert_s_rows_are_its_product_and_no_other_row_is_written(offs: list[int], rows: int) -> None:
    c, ref = _run(offs, rows, 128, 256)
    last = offs[-1]
    scale = np.abs(ref[:last]).max()
    assert np.abs(c[:last] - ref[:last]).max() / scale < 1e-2  # bf16 output
    assert np.all(c[last:] == 12345.0)  # rows past offs[E-1] belong to no expert: never written


def test_full_tiles_through_tma_stores_and_partial_ones_bounded_agree() -> None:
    """EPILOGUE "tma": a tile whose rows all belong to its expert goes out through TMA stores, the expert's last,
    partial tile through the bounded window; rows no expert owns keep their poison. Both kinds compiled: the TMA
    stores (UTMASTG) and no spills."""
    offs, rows = [0, 70, 70, 256, 290, 420], 430  # expert 3's rows 70 .. 256: one full tile (70 .. 198), one partial
    c, ref = _run(offs, rows, 128, 256, EPILOGUE="tma")
    assert np.abs(c[:420] - ref[:420]).max() / np.abs(ref[:420]).max() < 1e-2
    assert np.all(c[420:] == 12345.0)
    compiled = compile_kernel(grouped_gemm_persistent.trace(EPILOGUE="tma", BN=256, STAGES=4))
    assert compiled.instruction_mix().get("UTMASTG", 0) >= 1 and compiled.resources.spill_stores == 0
    with pytest.raises(Exception, match="EPILOGUE 'direct' or 'tma'"):
        grouped_gemm_persistent.trace(EPILOGUE="smem")


def test_one_consumer_and_64_row_tiles_agree() -> None:
    c, ref = _run([10, 10, 150, 200], 200, 64, 128, BM=64, BN=64, CONSUMERS=1, STAGES=2)
    assert np.abs(c[:200] - ref[:200]).max() / np.abs(ref).max() < 1e-2


def test_decode_sizes_take_64_row_tiles_that_verify_and_compile() -> None:
    """`moe.choose` at decode sizes (at most DECODE_ROWS_PER_EXPERT rows per expert on average): one consumer over
    64-row tiles, 8 stages, or the wider tiles of `DECODE_WIDE_CONFIGS` (4-5 stages) where the experts are wide
    enough; both kernels at those parameters (and the library's 132 blocks, 256 experts) verify with every tile of C
    written once, and compile without spills."""
    plain = moe.choose(2, 4096, 14336, 8)  # Mixtral's down-projection for one token (top 2): 2 experts' tiles
    assert (plain["BM"], plain["BN"], plain["STAGES"], plain["CONSUMERS"]) == (64, 128, 8, 1)
    wide = moe.choose(16, 4096, 14336, 8)  # 8 tokens: up to 8 experts x 16 tiles of 256 columns
    assert (wide["BM"], wide["BN"], wide["STAGES"], wide["CONSUMERS"]) == (64, 256, 4, 1)
    assert moe.choose(16, 14336, 4096, 8, "swiglu")["BN"] == 128  # Mixtral's wide experts
    assert moe.choose(128, 2048, 7168, 256, "swiglu")["BN"] == 128  # DeepSeek-V3's
    assert moe.choose(64, 768, 2048, 128, "swiglu")["BN"] == 64  # Qwen3-30B-A3B's narrow ones
    assert moe.choose(512, 4096, 14336, 8)["BM"] == 128  # 64 rows per expert (256 tokens): the prefill tiles
    assert moe.choose(512, 4096, 14336, 8)["EPILOGUE"] == "tma" and "EPILOGUE" not in plain  # TMA stores at prefill
    assert "CONSUMERS" not in moe.choose(32768, 4096, 7168, 256)  # prefill
    assert moe.choose(2048, 2048, 7168, 256, "scaled")["BM"] == 128  # FP8 keeps its configurations
    cases = ((grouped_gemm_persistent, "plain", 1024), (grouped.grouped_gemm_swiglu, "swiglu", 1024),
             (grouped.grouped_gemm_swiglu, "swiglu", 4096))  # fmt: skip
    for kernel, epilogue, n in cases:  # the wide plain tiles (64 experts x 4 tiles), both SwiGLU widths
        params = moe.choose(64, n, 7168, 256, epilogue)
        assert (params["BM"], params["CONSUMERS"]) == (64, 1)
        report = verify(kernel.trace(**params), checks=CHECKS)
        assert not report.findings, [f.message for f in report.findings]
        proved = {c.check for c in report.checks if c.verdict == Verdict.VERIFIED}
        assert {"output written once", "tag assertion", "register budget", "mbarrier arrive count", "race"} <= proved
        compiled = compile_kernel(kernel.trace(**params))
        assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0


@pytest.mark.parametrize(("offs", "splits"), [([0, 70, 70, 150, 190], 2), ([1, 2, 3, 3, 9], 4)])
def test_split_k_slices_sum_to_each_expert_s_product(offs: list[int], splits: int) -> None:
    """SPLITS > 1: the persistent blocks walk (unit, split) pairs, split s multiplying its share of the K-blocks
    into slice s of the f32 workspace (S, R, N): the slices sum to the product, every split computed a share, and
    rows no expert owns keep their poison in every slice."""
    rows, k, n = 200, 512, 128
    rng = np.random.default_rng(splits)
    a = round_to(bf16, rng.standard_normal((rows, k)))
    b = round_to(bf16, rng.standard_normal((len(offs), k, n)))
    ends = np.asarray(offs, dtype=np.int64)
    c = np.full((splits, rows, n), 12345.0)
    cfg = {"BM": 64, "BN": 64, "BK": 64, "STAGES": 3, "BLOCKS": 5, "CONSUMERS": 1, "SEARCH": search_steps(len(offs))}
    interpret(grouped_gemm_persistent, a, b, ends, tile_counts(ends, 64), c, **cfg, SPLITS=splits, OUT="f32")
    ref, last = grouped_product(a, b, ends), offs[-1]
    assert np.abs(c[:, :last].sum(axis=0) - ref[:last]).max() / np.abs(ref[:last]).max() < 1e-5  # f32 slices
    assert all(np.abs(part[:last]).max() > 0 for part in c)
    assert np.all(c[:, last:] == 12345.0)


def test_the_split_k_kernel_verifies_and_refuses_what_it_does_not_split() -> None:
    """Mixtral's down-projection at one token as the layer launches it (`decode_plan`: 2 x 16 wide tiles split four
    ways; the same parameters as its split up-projection, `decode_up_split`): every check proved over the (unit,
    split) walk — the tags at the split's K-blocks, each slice's routed rows written once and whole, every K-block of
    A and B loaded by some split; split-K is the persistent, directly stored, f32 form."""
    plan = moe.decode_plan(2, 4096, 14336, 8)
    assert plan["SPLITS"] == 4 and moe.decode_up_split(2, 14336, 4096, 8) == plan
    params = {name: value for name, value in plan.items() if name != "SPLITS"}
    kernel = grouped_gemm_persistent.trace(**params, SPLITS=4, OUT="f32")
    report = verify(kernel, checks=CHECKS)
    assert not report.findings, [f.message for f in report.findings]
    proved = {c.check for c in report.checks if c.verdict == Verdict.VERIFIED}
    assert {"tag assertion", "output written once", "output coverage", "contraction coverage"} <= proved
    coverage = {c.target.split()[0]: c.not_checked for c in report.checks if c.check == "contraction coverage"}
    assert coverage == {"A": False, "B": False}, coverage
    assert compile_kernel(kernel).resources.spill_stores == 0
    with pytest.raises(Exception, match="OUT='f32'"):
        grouped_gemm_persistent.trace(**params, SPLITS=2)
    with pytest.raises(Exception, match="direct store"):
        grouped_gemm_persistent.trace(**params, SPLITS=2, OUT="f32", EPILOGUE="tma")


def test_decode_splits_fill_the_sms_only_where_the_units_leave_them_idle() -> None:
    """`moe.decode_splits`: Mixtral's down-projection at one token splits K two ways (2 experts x 32 tiles, 224
    K-blocks); at two tokens (4 experts) it fills the SMs unsplit; Qwen3-30B-A3B and DeepSeek-V3 at one token (8
    experts' tiles) too; a prefill configuration never splits; splits divide the K-blocks into shares of at least
    `DECODE_SPLIT_MIN_BYTES`."""
    mixtral = moe.choose(2, 4096, 14336, 8)
    assert moe.decode_splits(mixtral, 2, 4096, 14336, 8) == 2
    assert moe.decode_splits(moe.choose(4, 4096, 14336, 8), 4, 4096, 14336, 8) == 1
    assert moe.decode_splits(moe.choose(8, 2048, 768, 128), 8, 2048, 768, 128) == 1
    assert moe.decode_splits(moe.choose(8, 7168, 2048, 256), 8, 7168, 2048, 256) == 1
    assert moe.decode_splits(moe.choose(4096, 4096, 14336, 8), 4096, 4096, 14336, 8) == 1  # prefill
    assert moe.decode_splits(mixtral, 2, 4096, 14336, 8, sms=264) == 4  # twice the SMs: 4 x 64 pairs
    assert moe.decode_splits(mixtral, 1, 4096, 1024, 8) == 1  # 16 K-blocks of 16 KiB: no share of 512 KiB


def test_the_decode_plans_split_where_the_waves_are_filled_better() -> None:
    """`moe.wave_fill` and the decode plans: the plain product takes the wide decode tile split where its (unit,
    split) pairs fill the waves better (Mixtral's down-projection at one token: 2 x 16 tiles of 256 columns split
    four ways; at two tokens two ways), never in shares under `DECODE_SPLIT_MIN_BYTES` (DeepSeek-V3's 32 K-blocks
    of 1 MiB at one token: 1.7 waves either way, unsplit), and the narrow tile where the wide one cannot be split and
    the narrow one fills better (Qwen3-30B-A3B at one token); the up-projection runs split (`decode_up_split`) where
    the fused kernel's units leave the last wave emptier by `DECODE_UP_SPLIT_GAIN` (Mixtral at one and two tokens),
    not where they fill it (DeepSeek-V3's 8 x 16 units at one token, Mixtral's 8 x 112 at eight tokens) nor where
    no split pays (Qwen3-30B-A3B: 96 units of 1 MiB, 1.7 waves of 132 split in two or not)."""
    assert moe.wave_fill(64, 132) == 64 / 132 and moe.wave_fill(224, 132) == 224 / 264 and moe.wave_fill(0) == 0.0
    assert moe.wave_fill(264, 132) == 1.0
    mixtral, qwen, deepseek = (4096, 14336, 8), (2048, 768, 128), (7168, 2048, 256)

    def plan(rows: int, shape: tuple[int, int, int]) -> tuple[int, int]:
        params = moe.decode_plan(rows, *shape)
        return params["BN"], params.get("SPLITS", 1)

    assert plan(2, mixtral) == (256, 4) and plan(4, mixtral) == (256, 2) and plan(16, mixtral) == (256, 1)
    assert plan(8, deepseek) == (256, 1)  # shares of 512 KiB would not fill the waves better; 256 KiB too short
    assert plan(8, qwen) == (128, 1)  # 12 K-blocks of the wide tile: no share of 512 KiB; 128 narrow units
    assert moe.decode_plan(16 * 8, *deepseek) == moe.choose(16 * 8, *deepseek)  # many waves: as `choose`
    assert "SPLITS" not in moe.decode_plan(8192, *mixtral)  # prefill
    up = moe.decode_up_split(2, mixtral[1], mixtral[0], mixtral[2])
    assert up is not None and (up["BN"], up["SPLITS"], up["CONSUMERS"]) == (256, 4, 1)
    pairs = 2 * -(-2 * mixtral[1] // up["BN"]) * up["SPLITS"]
    assert moe.wave_fill(pairs) >= moe.wave_fill(2 * mixtral[1] // 128) + moe.DECODE_UP_SPLIT_GAIN
    assert moe.decode_up_split(4, mixtral[1], mixtral[0], mixtral[2]) is not None
    assert moe.decode_up_split(16, mixtral[1], mixtral[0], mixtral[2]) is None
    assert moe.decode_up_split(8, deepseek[1], deepseek[0], deepseek[2]) is None
    assert moe.decode_up_split(8, qwen[1], qwen[0], qwen[2]) is None
    assert moe.decode_up_split(16, qwen[1], qwen[0], qwen[2]) is None
    assert moe.decode_up_split(8192, mixtral[1], mixtral[0], mixtral[2]) is None  # prefill: the fused kernel
    assert moe.decode_up_split(2, mixtral[1], mixtral[0], mixtral[2], sms=16) is None  # 224 units fill 16 SMs


def test_a_stage_count_that_is_not_a_power_of_two_pairs_the_release_after_the_loop() -> None:
    """One consumer releases each tile's last stage after its loop (the deferred-release pass) on
    ``empty[(it * k_tiles + k_tiles - 1) % 5]``: the verifier pairs it with the loop's releases (at 5 stages the
    index is a remainder of a division the claim spells differently; it answered UNKNOWN_WARP_ROLES after minutes
    until session 51)."""
    params = dict(BM=64, BN=64, BK=64, STAGES=5, CONSUMERS=1, SEARCH=3)
    report = verify(grouped_gemm_persistent.trace(**params), checks=("pipeline",))
    assert not report.findings, [(f.code, f.reason) for f in report.findings]
    records = [c for c in report.checks if c.check == "mbarrier arrive count"]
    assert len(records) == 2 and all(c.verdict == Verdict.VERIFIED for c in records)


def test_tile_counts_on_numpy_and_torch_agree() -> None:
    ends = np.array([0, 70, 70, 250, 290, 290, 1000])
    assert tile_counts(ends, 128).tolist() == [0, 1, 1, 3, 4, 4, 10]
    torch = pytest.importorskip("torch")
    got = tile_counts(torch.tensor(ends, dtype=torch.int32), 128)
    assert got.dtype == torch.int32 and got.tolist() == [0, 1, 1, 3, 4, 4, 10]
    assert [search_steps(e) for e in (1, 2, 3, 8, 9, 128, 256, 257)] == [1, 1, 2, 3, 4, 7, 8, 9]


def test_the_grouped_gemm_verifies_and_says_which_checks_it_could_not_make() -> None:
    report = verify(grouped_gemm_persistent.trace(BLOCKS=3, STAGES=3, SEARCH=3))
    assert not report.findings, [f.message for f in report.findings]
    unknown = {c.check for c in report.checks if c.verdict == Verdict.UNKNOWN}
    # every check is proved: tags, pipeline, races, wgmma, TMA, output written once, every routed row written (since
    # 2026-12-03), and since session 52 every routed row of A loaded at every K, every expert with a row's B
    assert "output written once" not in unknown and "output coverage" not in unknown
    coverage = {c.target.split()[0]: c.not_checked for c in report.checks if c.check == "contraction coverage"}
    assert coverage == {"A": False, "B": False}, coverage
    proved = {c.check for c in report.checks if c.verdict == Verdict.VERIFIED}
    assert {"tag assertion", "race", "mbarrier arrive count", "wgmma operand layout", "TMA alignment"} <= proved
    assert "output written once" in proved and "output coverage" in proved and "contraction coverage" in proved


def _with_floor_k(kernel):  # noqa: ANN001, ANN202
    """`kernel` with every ``cdiv(K, c)`` (the K loop's count of K-blocks, in both roles and the pipeline's phases)
    read as ``K // c``: a consistent seeded bug that drops the tail of K."""
    import dataclasses

    from tests.kernels.seeding import replace_exprs

    from argus.ir.expr import BinaryOp, BinOp, Const, binary

    (k,) = [v for v in kernel.shape_vars if v.name == "K"]

    def floor(x):  # noqa: ANN001, ANN202
        lhs = x.lhs
        if x.op == BinaryOp.FLOORDIV and isinstance(lhs, BinOp) and lhs.op == BinaryOp.ADD and lhs.lhs is k:
            if isinstance(lhs.rhs, Const) and isinstance(x.rhs, Const) and lhs.rhs.value == x.rhs.value - 1:
                return binary(BinaryOp.FLOORDIV, k, x.rhs)
        return None

    return dataclasses.replace(kernel, body=replace_exprs(kernel.body, floor))


@pytest.mark.parametrize("name", ["grouped_gemm_persistent", "grouped_gemm_swiglu_units"])
def test_a_grouped_k_loop_that_drops_the_tail_of_k_is_caught(name: str) -> None:
    """The seeded bug: the K loop runs ``K // BK`` K-blocks (for ``cdiv(K, BK)``): for K not a multiple of BK the
    tail of every routed row of A is never loaded. Every other check holds (each sum is accumulated once, every tag
    holds, every routed row is written); contraction coverage projects A's loads on the proved cells of C (the same
    search finds the expert) and finds an element of a routed row, in the tail of K."""
    from argus.kernels.registry import get_kernel

    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    report = verify(_with_floor_k(kernel), checks=("coverage",))
    found = [f for f in report.findings if f.code == "COVERAGE_CONTRACTION" and "of A" in f.message]
    assert found, [f.message for f in report.findings]
    shapes = found[0].counterexample.shapes
    column = int(found[0].counterexample.variables["element"].strip("()").split(",")[1])
    bk = entry.params.get("BK", 64)
    assert column >= shapes["K"] // bk * bk, (column, shapes)
    # B's experts are read too (SwiGLU's up columns, N past the gate's, as the store's cells shifted by N)
    assert any("of B" in f.message for f in report.findings if f.code == "COVERAGE_CONTRACTION")


def test_a_wrong_expert_for_b_is_caught_by_the_tag_assertion() -> None:
    """Seeded bug: B's box loaded from the expert after the right one (an off-by-one group index)."""
    import argus.lang as T
    from argus.kernels import gemm

    original = gemm.load_operand

    def shifted(tensor, major, stage, mn, k, bmn, bk, bar, batch=None):  # noqa: ANN001, ANN202
        return original(tensor, major, stage, mn, k, bmn, bk, bar, None if batch is None else batch + 1)

    grouped.load_operand = T.macro(shifted)
    grouped_gemm_persistent._cache.clear()  # traces are cached by parameters: trace the seeded kernel afresh
    try:
        report = verify(grouped_gemm_persistent.trace(BLOCKS=3, STAGES=3, SEARCH=3))
    finally:
        grouped.load_operand = original
        grouped_gemm_persistent._cache.clear()
    assert any(f.code == "TAG_ASSERT" and f.verdict == Verdict.VIOLATED for f in report.findings)


def test_the_grouped_gemm_compiles_for_hopper() -> None:
    compiled = compile_kernel(grouped_gemm_persistent.trace())
    sass_or_ptx = compiled.generated.source
    assert "wgmma" in sass_or_ptx and "tma_load" in sass_or_ptx and "__ldg(offs" in sass_or_ptx
    assert "min(R, row_end" in sass_or_ptx  # the store is masked at the expert's end
    # the deferred-release pass reaches the consumer loop under the unit's T.let bindings: one wgmma group in
    # flight, each warpgroup releasing its stage itself (no barrier among the consumers per K-block); before the
    # pass looked inside Let bodies, this kernel ran at 0.83x the dense GEMM on one expert's shape
    assert "wgmma_wait<1>" in sass_or_ptx and "bar.sync %0" not in sass_or_ptx


def test_the_library_call_refuses_what_the_kernel_does_not_take() -> None:
    torch = pytest.importorskip("torch")
    a = torch.zeros(64, 32, dtype=torch.bfloat16)
    b = torch.zeros(4, 32, 24, dtype=torch.bfloat16)
    offs = torch.tensor([16, 32, 48, 64], dtype=torch.int32)
    with pytest.raises(moe.GroupedError, match="int32"):
        moe.prepare(a, b, offs.long())
    with pytest.raises(moe.GroupedError, match="must both be bf16"):
        moe.prepare(a.float(), b, offs)
    with pytest.raises(moe.GroupedError, match="K and N must be multiples of 8"):
        moe.prepare(torch.zeros(64, 30, dtype=torch.bfloat16), torch.zeros(4, 30, 24, dtype=torch.bfloat16), offs)
    with pytest.raises(moe.GroupedError, match="one end per expert"):
        moe.prepare(a, b, offs[:3])
    with pytest.raises(moe.GroupedError, match="CUDA"):
        moe.prepare(a, b, offs)


@pytest.mark.gpu
def test_grouped_mm_matches_torch_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for experts, rows, k, n in ((8, 4096, 1024, 2048), (37, 3000, 264, 1032)):
        sizes = torch.randint(0, 2 * rows // experts, (experts,))
        sizes[0] = 0
        offs = sizes.cumsum(0).clamp_max(rows).to("cuda", torch.int32)
        a = torch.randn(rows, k, device="cuda").to(torch.bfloat16)
        b = (torch.randn(experts, k, n, device="cuda") * k**-0.5).to(torch.bfloat16)
        c = moe.grouped_mm(a, b, offs)
        ref = torch.zeros(rows, n, device="cuda")
        start = 0
        for g, end in enumerate(offs.tolist()):
            ref[start:end] = a[start:end].float() @ b[g].float()
            start = end
        last = int(offs[-1])
        assert float((c[:last].float() - ref[:last]).abs().max() / ref[:last].abs().max()) < 1e-2


def test_element_reads_and_bounded_windows_cross_the_wire() -> None:
    """The IR of a kernel that reads tensor elements and stores through a bounded window serializes and comes back
    the same (the judge receives a candidate's IR this way)."""
    from argus.ir import serialize
    from argus.ir.printer import format_kernel

    kernel = grouped_gemm_persistent.trace(SEARCH=3, BLOCKS=3, STAGES=3)
    back = serialize.kernel_from_data(serialize.kernel_to_data(kernel))
    assert format_kernel(back) == format_kernel(kernel)
    assert "offs[" in format_kernel(back) and "below (row_end, _)" in format_kernel(back)


# --- FP8 with row-wise scales (`grouped_gemm_scaled`, `moe.scaled_grouped_mm`) ------------------------------------


def _run_scaled(offs: list[int], rows: int, k: int, n: int, **params: int) -> tuple[np.ndarray, np.ndarray]:
    from argus.ir.types import e4m3
    from argus.kernels.grouped import grouped_gemm_scaled

    rng = np.random.default_rng(len(offs) * 1000 + rows + k)
    experts = len(offs)
    a = round_to(e4m3, rng.standard_normal((rows, k)))
    w = round_to(e4m3, rng.standard_normal((experts, n, k)))  # each expert's weight (N, K), as nn.Linear holds it
    scale_a, scale_b = rng.uniform(0.25, 4.0, rows), rng.uniform(0.25, 4.0, (experts, n))
    ends = np.asarray(offs, dtype=np.int64)
    c = np.full((rows, n), 12345.0)
    cfg = {"BM": 128, "BN": 128, "BK": 128, "STAGES": 2, "BLOCKS": 3, "SEARCH": search_steps(experts), "OUT": "f32"}
    interpret(grouped_gemm_scaled, a, w, ends, tile_counts(ends, cfg["BM"]), scale_a, scale_b, c, **cfg | params)
    ref = grouped_product(a, np.swapaxes(w, 1, 2), ends) * scale_a[:, None]
    start = 0
    for g, end in enumerate(offs):
        ref[start:end] *= scale_b[g][None, :]
        start = end
    return c, ref


@pytest.mark.parametrize(
    ("offs", "rows", "k"),
    [
        ([0, 70, 70, 250, 290], 300, 256),  # empty experts, groups straddling row tiles, rows past the end
        ([1, 2, 3, 3, 131, 260, 261, 300], 300, 208),  # tiny groups, K not a K-block multiple (TMA zeros)
    ],
)
def test_fp8_grouped_rows_are_their_expert_s_scaled_product(offs: list[int], rows: int, k: int) -> None:
    c, ref = _run_scaled(offs, rows, k, 256)
    last = offs[-1]
    assert np.abs(c[:last] - ref[:last]).max() <= 1e-6 * np.abs(ref[:last]).max()  # FP8 products are exact in f32
    assert np.all(c[last:] == 12345.0)


def test_the_fp8_grouped_gemm_verifies_compiles_to_qgmma_and_catches_another_expert_s_scales(tmp_path) -> None:
    from argus.eval.candidates import import_file
    from argus.kernels.grouped import grouped_gemm_scaled
    from argus.kernels.source import module_source

    report = verify(grouped_gemm_scaled.trace(BLOCKS=3, STAGES=3, SEARCH=3))
    assert not report.findings, [f.message for f in report.findings]
    tags = [c for c in report.checks if c.check == "tag assertion"]
    assert len(tags) == 4 and all(c.verdict == Verdict.VERIFIED for c in tags)
    compiled = compile_kernel(grouped_gemm_scaled.trace(SEARCH=3))
    qgmma = {op: n for op, n in compiled.instruction_mix(modifiers=True).items() if op.startswith("QGMMA")}
    assert qgmma and all(".E4M3.E4M3" in op for op in qgmma), qgmma
    assert compiled.resources.spill_stores == 0
    # seeded bug: the column scales of the next expert
    text = module_source(grouped_gemm_scaled)
    good = "T.copy(SB.tile((g, bn), (None, BN)), column_scale)"
    assert text.count(good) == 1
    path = tmp_path / "broken_grouped_scaled.py"
    path.write_text(text.replace(good, "T.copy(SB.tile((T.minimum(g + 1, E - 1), bn), (None, BN)), column_scale)"))
    broken = getattr(import_file(path, "broken_grouped_scaled"), grouped_gemm_scaled.name)
    found = verify(broken.trace(BLOCKS=3, STAGES=3, SEARCH=3))
    assert any(f.code == "TAG_ASSERT" and f.verdict == Verdict.VIOLATED for f in found.findings)


def test_scaled_grouped_mm_refuses_what_it_cannot_run() -> None:
    torch = pytest.importorskip("torch")
    a = torch.zeros(64, 32).to(torch.float8_e4m3fn)
    w = torch.zeros(4, 24, 32).to(torch.float8_e4m3fn)
    offs = torch.tensor([16, 32, 48, 64], dtype=torch.int32)
    sa, sb = torch.ones(64), torch.ones(4, 24)
    with pytest.raises(moe.GroupedError, match="transpose of a contiguous"):
        moe.prepare_scaled(a, w.transpose(1, 2).contiguous(), sa, sb, offs)
    with pytest.raises(moe.GroupedError, match="float8"):
        moe.prepare_scaled(a.to(torch.bfloat16), w.transpose(1, 2), sa, sb, offs)
    with pytest.raises(moe.GroupedError, match="scale_b"):
        moe.prepare_scaled(a, w.transpose(1, 2), sa, torch.ones(4, 23), offs)
    with pytest.raises(moe.GroupedError, match="CUDA"):
        moe.prepare_scaled(a, w.transpose(1, 2), sa, sb, offs)


@pytest.mark.gpu
def test_scaled_grouped_mm_matches_torch_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for experts, rows, k, n in ((8, 4096, 1024, 2048), (37, 3000, 272, 1040)):
        sizes = torch.randint(0, 2 * rows // experts, (experts,))
        sizes[0] = 0
        offs = sizes.cumsum(0).clamp_max(rows).to("cuda", torch.int32)
        a = torch.randn(rows, k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(experts, n, k, device="cuda").to(torch.float8_e4m3fn)
        scale_a = torch.rand(rows, device="cuda") + 0.5
        scale_b = torch.rand(experts, n, device="cuda") + 0.5
        c = moe.scaled_grouped_mm(a, w.transpose(1, 2), scale_a, scale_b, offs)
        ref = torch.zeros(rows, n, device="cuda")
        start = 0
        for g, end in enumerate(offs.tolist()):
            ref[start:end] = (a[start:end].float() @ w[g].float().t()) * scale_a[start:end, None] * scale_b[g]
            start = end
        last = int(offs[-1])
        err = float((c[:last].float() - ref[:last]).abs().max() / ref[:last].abs().max())
        assert c.dtype == torch.bfloat16 and err < 1e-2, (experts, rows, k, n, err)
