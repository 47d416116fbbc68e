"""Decoding against a paged KV cache (`argus.kernels.sdpa_paged`, `argus.kernels.attention_paged`): keys and
values in pages listed by a block table. On the CPU interpreter at small shapes (a sequence with no token, a partial
last page, two key tiles per page, split keys and their combine, grouped and multi-query heads, DV != D) against the
float64 definition, through the kernels and parameters a GPU call launches; the library configuration verifies
with every page read proved to be the sequence's own (for every table and length the declarations allow), and two
seeded paging bugs are caught; it compiles to HGMMA and TMA without spills; on a GPU (skipped without one), against
torch on the gathered keys."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.atoms.common import WARPGROUP_SIZE
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.printer import format_kernel
from argus.ir.types import bf16, f16, round_to
from argus.kernels import sdpa_paged as SP
from argus.kernels.attention import LOG2E, PANEL
from argus.kernels.attention_paged import flash_attention_paged, load_page_tile, lse_shape, o_shape
from argus.kernels.attention_varlen import softmax_result, softmax_step
from argus.kernels.sdpa import AttentionError
from argus.lang.errors import DSLError

CASES = {
    # (B, H, HK, D, DV, page, max pages, pool pages, lengths, max_seqlen, dtype): what each adds
    "one_tile_per_page": (3, 8, 2, 64, 64, 128, 3, 9, [200, 0, 64], 0, "bf16"),  # an empty sequence, a partial page
    "split_two_tiles_per_page_mqa": (2, 8, 1, 64, 128, 128, 4, 8, [300, 77], 4096, "f16"),  # 16 splits, DV != D
    "shared_pages": (2, 4, 4, 128, 128, 64, 3, 4, [150, 192], 0, "bf16"),  # two sequences reading the same pages
    "pages_of_16": (3, 8, 2, 64, 64, 16, 12, 40, [150, 0, 17], 0, "bf16"),  # four pages a key tile, a partial one
    "pages_of_32_split": (2, 8, 1, 128, 64, 32, 10, 30, [300, 33], 4096, "f16"),  # two a tile, split and merged
    "head_dims_between_panels": (2, 8, 2, 80, 112, 64, 4, 8, [200, 77], 4096, "bf16"),  # 80 and 112 columns
}


@pytest.mark.parametrize("case", list(CASES))
def test_paged_decode_matches_the_definition_on_the_interpreter(case: str) -> None:
    b, h, hk, d, dv, page, maxp, pages, lens, longest, dtype = CASES[case]
    rng = np.random.default_rng(len(case))
    kind = bf16 if dtype == "bf16" else f16
    table = rng.integers(0, pages, (b, maxp)).astype(np.int32)
    kc, vc = (round_to(kind, rng.standard_normal(s)) for s in [(pages, page, hk, d), (pages, page, hk, dv)])
    q = round_to(kind, rng.standard_normal((b, h, d)))
    plan = SP.PagedPlan(SP.PagedProblem(b, h, hk, page, maxp, d, dv, dtype, "f32", max_seqlen=longest))
    o, lse = plan.run_on_interpreter(q, kc, vc, table, np.array(lens, dtype=np.int32))
    ref_o, ref_lse = SP.reference(q, kc, vc, table, lens)
    np.testing.assert_allclose(o, ref_o, atol=2e-2, rtol=0)
    assert np.array_equal(np.isinf(lse), np.isinf(ref_lse))
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[finite], ref_lse[finite], atol=2e-3, rtol=0)


#: Sliding windows: CASES' fields and the window: what each adds
WINDOWED = {
    # a window inside one tile, one across two, one longer than a sequence (every token), an empty sequence
    "one_tile_per_page": ((4, 8, 2, 64, 64, 128, 3, 9, [200, 0, 300, 90], 0, "bf16"), 100),
    # the keys split over the window's tiles (300 tokens: at most 4 tiles of 128, 2 splits), DV != D
    "split_mqa": ((2, 8, 1, 64, 128, 128, 4, 8, [380, 77], 4096, "f16"), 300),
    # pages of 16, four a key tile: the window starts inside a page of its first tile
    "pages_of_16": ((3, 8, 2, 64, 64, 16, 12, 40, [150, 0, 17], 0, "bf16"), 70),
    # pages of 32, two a tile, the window's 10 tiles split 3 ways and merged in the launch
    "pages_of_32_split": ((2, 8, 1, 128, 64, 32, 40, 90, [1100, 33], 4096, "f16"), 500),
    # a window of one token: the query sees itself only
    "one_token": ((2, 4, 4, 128, 128, 64, 3, 4, [150, 192], 0, "bf16"), 1),
}


@pytest.mark.parametrize("case", list(WINDOWED))
def test_a_sliding_window_matches_the_definition_on_the_interpreter(case: str) -> None:
    (b, h, hk, d, dv, page, maxp, pages, lens, longest, dtype), window = WINDOWED[case]
    rng = np.random.default_rng(len(case) + 1)
    kind = bf16 if dtype == "bf16" else f16
    table = rng.permutation(np.resize(np.arange(pages), b * maxp)).reshape(b, maxp).astype(np.int32)
    kc, vc = (round_to(kind, rng.standard_normal(s)) for s in [(pages, page, hk, d), (pages, page, hk, dv)])
    q = round_to(kind, rng.standard_normal((b, h, d)))
    problem = SP.PagedProblem(b, h, hk, page, maxp, d, dv, dtype, "f32", max_seqlen=longest, window=window)
    plan = SP.PagedPlan(problem)
    assert dict(plan.params())["WINDOW"] == window
    assert (plan.splits, plan.combined) == {"split_mqa": (2, True), "pages_of_32_split": (3, True)}.get(
        case, (1, False)
    )
    o, lse = plan.run_on_interpreter(q, kc, vc, table, np.array(lens, dtype=np.int32))
    ref_o, ref_lse = SP.reference(q, kc, vc, table, lens, window=window)
    np.testing.assert_allclose(o, ref_o, atol=2e-2, rtol=0)
    assert np.array_equal(np.isinf(lse), np.isinf(ref_lse))
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[finite], ref_lse[finite], atol=2e-3, rtol=0)
    # the window changes the result: attention over every token differs on these shapes
    assert np.abs(SP.reference(q, kc, vc, table, lens)[0] - ref_o).max() > 1e-2


def test_a_window_bounds_the_split_of_the_keys_and_is_refused_where_it_means_nothing() -> None:
    long = SP.PagedProblem(4, 32, 8, 256, 256, 128, 128, max_seqlen=65536)
    windowed = SP.PagedProblem(4, 32, 8, 256, 256, 128, 128, max_seqlen=65536, window=200)
    assert SP.PagedPlan(long).splits == 4
    assert SP.PagedPlan(windowed).splits == 1  # 200 tokens lie in 3 tiles of 128 at most, not 512: too few to split
    assert SP.PagedPlan(SP.PagedProblem(4, 32, 8, 256, 256, 128, 128, window=1)).splits == 1
    for bad in (-1, 2.5, True):
        with pytest.raises(AttentionError, match="window"):
            SP.PagedProblem(4, 32, 8, 256, 256, 128, 128, window=bad)
    with pytest.raises(DSLError, match="WINDOW"):
        flash_attention_paged.trace(WINDOW=-3)


def test_split_keys_merged_in_the_kernel_s_launch_give_the_two_launches_result_bit_for_bit() -> None:
    """The split case's plan merges in its own launch (one kernel, `flash_attention_paged_combined`); its O and LSE
    equal the paged kernel's then `attention_combine`'s exactly, also where only two of the sixteen split blocks merge
    (REDUCERS = 2: the others only arrive at the barrier), and a relaunch on the same counters (the barrier's next
    generation) gives the same again."""
    from argus.interp import run_kernel

    b, h, hk, d, dv, page, maxp, pages, lens, longest, dtype = CASES["split_two_tiles_per_page_mqa"]
    rng = np.random.default_rng(7)
    table = rng.integers(0, pages, (b, maxp)).astype(np.int32)
    kc, vc = (round_to(f16, rng.standard_normal(s)) for s in [(pages, page, hk, d), (pages, page, hk, dv)])
    q = round_to(f16, rng.standard_normal((b, h, d)))
    problem = SP.PagedProblem(b, h, hk, page, maxp, d, dv, dtype, "f32", max_seqlen=longest)
    merged, two = SP.PagedPlan(problem, combined=True), SP.PagedPlan(problem, combined=False)
    assert merged.combined and merged.splits == 16 and len(merged.kernels()) == 1 and len(two.kernels()) == 2
    lens = np.array(lens, dtype=np.int32)
    o2, lse2 = two.run_on_interpreter(q, kc, vc, table, lens)
    o1, lse1 = merged.run_on_interpreter(q, kc, vc, table, lens)
    assert np.array_equal(o1, o2) and np.array_equal(lse1, lse2)

    g, splits = h // hk, merged.splits
    kernel = SP.flash_attention_paged_combined.trace(**{**dict(merged.params()), "REDUCERS": 2})
    o, lse = np.full((b, hk, g, dv), np.nan), np.full((b, hk, g), np.nan)
    counters = np.zeros(merged.counters(), np.int32)
    tensors = {
        "Q": q.astype(np.float64).reshape(b, hk, g, d), "KC": kc, "VC": vc, "TABLE": table, "LENS": lens,
        "OP": np.full((splits, b, hk, g, dv), np.nan), "LP": np.full((splits, b, hk, g), np.nan),
        "O": o, "LSE": lse, "F": counters,
    }  # fmt: skip
    for _ in range(3):
        o[...], lse[...] = np.nan, np.nan
        run_kernel(kernel, tensors)
        assert np.array_equal(o.reshape(b, h, dv), o2) and np.array_equal(lse.reshape(b, h), lse2)
    assert (counters == np.int32(-(2**31))).all()  # each launch adds 2^31 (its generation): never reset


def test_the_merge_in_one_launch_is_refused_where_the_grid_is_more_than_a_wave() -> None:
    wide = SP.PagedProblem(3, 32, 8, 256, 512, 128, 128, max_seqlen=65536)  # 24 units split 11 ways: two waves
    plan = SP.PagedPlan(wide)
    assert plan.splits > 1 and plan.blocks() > 132 and not plan.combined and len(plan.kernels()) == 2
    assert "not one wave" in SP.combined_refusal(plan)
    with pytest.raises(AttentionError, match="not one wave"):
        SP.PagedPlan(wide, combined=True)
    narrow = SP.PagedPlan(SP.PagedProblem(4, 32, 8, 256, 256, 128, 128, max_seqlen=65536), combined=True)
    assert narrow.combined and "not one wave" in SP.combined_refusal(narrow, sms=narrow.blocks() - 1)
    assert SP.combined_refusal(SP.PagedPlan(SP.PagedProblem(64, 32, 8, 64, 64, 128, 128, max_seqlen=4096))) == (
        "the keys are not split: there is nothing to merge"
    )


def test_the_plan_splits_by_the_longest_sequence_in_whole_waves() -> None:
    p = SP.PagedProblem(4, 32, 8, 256, 256, 128, 128, max_seqlen=65536)  # 32 blocks of 512 key tiles
    assert SP.PagedPlan(p).splits == 4 and SP.PagedPlan(p).block_n == 128
    assert SP.PagedPlan(SP.PagedProblem(64, 32, 8, 64, 64, 128, 128, max_seqlen=4096)).splits == 1  # 512 blocks
    assert SP.PagedPlan(SP.PagedProblem(1, 8, 8, 64, 8, 256, 256)).block_n == 64  # d256: 64-key tiles


def test_bad_tables_and_shapes_are_refused_with_the_reason() -> None:
    with pytest.raises(AttentionError, match=r"block_table\[1, 0\] = 9"):
        SP.check_cache_tables(np.array([[0, 1], [9, 2]]), np.array([10, 10]), 9, 64)
    with pytest.raises(AttentionError, match=r"seqlens_k\[0\] = 129"):
        SP.check_cache_tables(np.array([[0, 1]]), np.array([129]), 9, 64)
    with pytest.raises(AttentionError, match=r"block_table\[1, 0\] and block_table\[1, 2\] both name page 5"):
        SP.check_cache_tables(np.array([[0, 1, 2], [5, 3, 5]]), np.array([150, 129]), 9, 64)
    SP.check_cache_tables(np.array([[0, 1, 0], [5, 3, 5]]), np.array([128, 128]), 9, 64)  # a repeat past the length
    # a sliding window reads the pages of its last W tokens only: a cache may reuse the pages behind it
    SP.check_cache_tables(np.array([[5, 3, 5]]), np.array([150]), 9, 64, window=60)  # tokens 90..149: pages 1, 2
    with pytest.raises(AttentionError, match=r"block_table\[0, 0\] and block_table\[0, 2\] both name page 5"):
        SP.check_cache_tables(np.array([[5, 3, 5]]), np.array([150]), 9, 64, window=100)  # tokens 50..149: 0, 1, 2
    with pytest.raises(AttentionError, match="multiple of 64"):
        SP.PagedProblem(1, 8, 8, 8, 4, 128, 128)
    with pytest.raises(AttentionError, match="at most 64"):
        SP.PagedProblem(1, 128, 1, 64, 4, 128, 128)
    with pytest.raises(AttentionError, match="scale = 0"):
        SP.PagedProblem(1, 8, 8, 64, 4, 128, 128, scale=0.0)
    q = np.zeros((2, 8, 64), dtype=np.float16)
    cache = np.zeros((4, 64, 2, 64), dtype=np.float16)
    table, lens = np.zeros((2, 3), dtype=np.int32), np.zeros(2, dtype=np.int32)
    with pytest.raises(AttentionError, match="one token per sequence"):
        SP.problem_of(q[:, :, None], cache, cache, table, lens)
    with pytest.raises(AttentionError, match="int32"):
        SP.problem_of(q, cache, cache, table.astype(np.int64), lens)
    with pytest.raises(AttentionError, match=r"\(B, max pages\)"):
        SP.problem_of(q, cache, cache, table[:1], lens)
    assert SP.problem_of(q, cache, cache, table, lens).group == 4


def test_the_kernel_refuses_pages_that_split_a_key_tile() -> None:
    with pytest.raises(DSLError, match="PAGE_SIZE=64 a multiple of BN=128"):
        flash_attention_paged.trace(BN=128, PAGE_SIZE=64)
    with pytest.raises(DSLError, match="or pages of 16 or 32 tokens"):
        flash_attention_paged.trace(BN=64, PAGE_SIZE=8)
    with pytest.raises(AttentionError, match="or 16 or 32"):
        SP.PagedProblem(1, 8, 8, 48, 4, 128, 128)
    assert SP.PagedPlan(SP.PagedProblem(1, 8, 8, 16, 4, 128, 128)).block_n == 64


def _twice_is_a_page_listed_twice(report: Any) -> None:
    """The report's one finding is V's `COVERAGE_CONTRACTION_TWICE` and its witness a table listing one page at two
    places of one sequence (two of its key tiles read the same page; the kernel then attends those tokens twice, as
    the definition says). Found since session 63: the check missed double loads through one stage slot of a
    warp-specialized pipeline before (`checks.once._consumed_between`)."""
    assert [(f.code, f.verdict.value) for f in report.findings] == [("COVERAGE_CONTRACTION_TWICE", "violated")]
    finding = report.findings[0]
    assert "of VC" in finding.message and finding.counterexample is not None
    loads = [a for a in finding.counterexample.accesses if a.element is not None]
    assert len(loads) == 2 and loads[0].element.coord == loads[1].element.coord  # one element of VC, two loads


def test_pages_of_16_verify_but_for_a_page_a_sequence_would_list_twice() -> None:
    """vLLM's 16-token pages, four a key tile: the stages hold, row by row, the rows of the pages the table lists
    for this sequence (the tag assertions read the table at each row's own page), the stale rows are masked, and
    with split keys the merge verifies; the one finding is V's "accumulated once", whose counterexample is a table
    listing one page at two places of a sequence (the kernel then attends those tokens twice, as the definition
    says): a contract of the call, which `check_cache_tables` enforces (`validate=True`)."""
    from argus.verify import verify_kernel

    plan = SP.PagedPlan(SP.PagedProblem(4, 32, 8, 16, 4096, 128, 128, max_seqlen=65536), combined=True)
    assert plan.block_n == 64 and plan.splits > 1 and plan.combined
    report = verify_kernel(plan.kernels()[0])
    _twice_is_a_page_listed_twice(report)
    assert [c.verdict.value for c in report.checks if c.check == "tag assertion"] == ["verified"] * (3 + plan.splits)
    assert {c.verdict.value for c in report.checks if c.check == "masked reduction"} == {"verified"}


def test_every_head_dim_compiles_to_hgmma_and_tma_without_spills() -> None:
    for d in (64, 128, 256):
        for longest in (1024, 65536):  # one split, several (f32 partial results)
            plan = SP.PagedPlan(SP.PagedProblem(4, 32, 8, 256, 256, d, d, max_seqlen=longest))
            compiled = compile_kernel(plan.kernels()[0])
            mix = compiled.instruction_mix()
            assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0, mix
            assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    for page in (16, 32):  # several pages a key tile: each its own boxes
        plan = SP.PagedPlan(SP.PagedProblem(4, 32, 8, page, 65536 // page, 128, 128, max_seqlen=65536), combined=True)
        compiled = compile_kernel(plan.kernels()[0])
        assert compiled.instruction_mix().get("UTMALDG", 0) > 0 and compiled.resources.spill_stores == 0


@pytest.mark.parametrize("longest", [1024, 65536])
def test_the_library_configuration_verifies_with_every_page_proved_the_sequence_s_own(longest: int) -> None:
    """d128, 32/8 heads, pages of 256: the stages hold the rows of the page the table lists for this sequence at the
    tile's offset, of this key/value head, for every table and length the declarations allow (TABLE's entries pages
    of the pool, LENS within the table's capacity); the tokens past a sequence's length are masked before the row
    maximum, the row sum and P V; with split keys the merge (and the two-launch plan's combine) verifies too. The one
    finding: V's "accumulated once", whose counterexample is a table listing one page at two places of a sequence
    (`_twice_is_a_page_listed_twice`): a contract of the call that `check_cache_tables` enforces and the declarations
    cannot state yet."""
    from argus.verify import verify_kernel

    batch = 64 if longest == 1024 else 4  # 512 blocks: no split; 32 blocks of a long sequence: split keys
    problem = SP.PagedProblem(batch, 32, 8, 256, 256, 128, 128, max_seqlen=longest)
    plan = SP.PagedPlan(problem, combined=longest > 1024)  # split: merged in the same launch
    assert (plan.splits > 1) == (longest > 1024)
    report = verify_kernel(plan.kernels()[0])
    _twice_is_a_page_listed_twice(report)
    merges = plan.splits if plan.combined else 0  # the merge's one assertion a split: the partial result it adds
    assert [c.verdict.value for c in report.checks if c.check == "tag assertion"] == ["verified"] * (3 + merges)
    assert {c.verdict.value for c in report.checks if c.check == "masked reduction"} == {"verified"}
    if plan.splits > 1:
        assert {c.verdict.value for c in report.checks if c.check == "group barrier arrivals"} == {"verified"}
        two_launches = SP.PagedPlan(plan.problem, combined=False)
        assert len(two_launches.kernels()) == 2
        combine = verify_kernel(two_launches.kernels()[1])
        assert not combine.findings, combine.findings


#: `flash_attention_paged` with a seeded bug (BUG = "" is the library kernel, statement for statement):
#: "next_sequence_page" reads the page from the next sequence's table row, "table_capacity" masks the keys at the
#: table's capacity instead of the sequence's length (the stale rows of the last page contribute), "window_wide" keeps
#: one token more than the WINDOW (the one WINDOW behind the query).
@argus.kernel(policies={"tile_shape": ("BN",), "stages": "STAGES"})
def paged_seeded(
    Q: T.Tensor[lambda D: ("B", "HK", "ROWS", D), "IN"],
    KC: T.Tensor[lambda D: ("PAGES", "PAGE", "HK", D), "IN"],
    VC: T.Tensor[lambda DV: ("PAGES", "PAGE", "HK", DV), "IN"],
    TABLE: T.Tensor[("B", "MAXP"), T.i32],
    LENS: T.Tensor[("B",), T.i32],
    O: T.Tensor[o_shape, "OUT"],
    LSE: T.Tensor[lse_shape, T.f32],
    D: int = 128,
    DV: int = 128,
    BN: int = 128,
    PAGE_SIZE: int = 128,
    STAGES: int = 2,
    SPLITS: int = 1,
    WINDOW: int = 0,
    SCALE: float = 0.0,
    IN: str = "bf16",
    OUT: str = "bf16",
    PRODUCER_REGS: int = 24,
    CONSUMER_REGS: int = 240,
    BUG: str = "",
):
    """`flash_attention_paged` statement for statement, with BUG seeded."""
    B, HK, ROWS, _ = Q.shape  # noqa: N806 - the kernel's shape symbols
    _, MAXP = TABLE.shape  # noqa: N806
    BM = 64  # noqa: N806 - one consumer warpgroup: a decode's packed rows fit one 64-row tile
    if D % PANEL or DV % PANEL or not 0 < D <= 256 or not 0 < DV <= 256:
        raise DSLError("DSL_BAD_PARAM", f"head dims D={D}, DV={DV}: multiples of {PANEL} up to 256 are supported")
    if BN % PANEL or PAGE_SIZE % BN:
        raise DSLError(
            "DSL_BAD_PARAM",
            f"PAGE_SIZE={PAGE_SIZE} a multiple of BN={BN}, a multiple of {PANEL}: a key tile in one page",
        )
    if SPLITS > 1 and O.dtype != T.f32:
        raise DSLError("DSL_BAD_PARAM", f"SPLITS={SPLITS} writes f32 partial results, not OUT={O.dtype.name!r}")
    if not isinstance(WINDOW, int) or isinstance(WINDOW, bool) or WINDOW < 0:
        raise DSLError("DSL_BAD_PARAM", f"WINDOW={WINDOW!r}: 0, or the number of last tokens the query sees")
    T.assume(f"PAGE == {PAGE_SIZE}")
    T.assume(f"ROWS <= {BM}")
    if SPLITS > 1:
        T.assume(f"P == {SPLITS}")
    PAGES = KC.shape[0]  # noqa: N806
    T.assume_values(LENS, lo=0, hi=MAXP * PAGE_SIZE)
    T.assume_values(TABLE, lo=0, hi=PAGES - 1)  # every entry a page of the pool (unused ones too: 0, say)
    per_page = PAGE_SIZE // BN  # key tiles per page
    scale = SCALE if SCALE else 1.0 / D**0.5
    scale_log2, sign = LOG2E * abs(scale), (1.0 if scale > 0 else -1.0)
    extents = (B, HK, SPLITS) if SPLITS > 1 else (B, HK)
    with T.grid(*extents, threads=2 * WARPGROUP_SIZE) as blocks:
        b, kvh = blocks[0], blocks[1]
        split = blocks[2] if SPLITS > 1 else 0
        sQ = T.alloc_shared((BM, D), Q.dtype, swizzle=128, panels=True)
        sK = T.alloc_shared((STAGES, BN, D), Q.dtype, swizzle=128, panels=True)
        sV = T.alloc_shared((STAGES, BN, DV), Q.dtype, swizzle=128, panels=True)
        q_ready = T.alloc_mbarrier(1, arrive_count=1)
        full = T.alloc_mbarrier(STAGES, arrive_count=1)
        empty = T.alloc_mbarrier(STAGES, arrive_count=1)

        def tiles_of(lk: Any) -> tuple[Any, Any]:
            """(the block's first key tile, how many it reads) of a sequence of `lk` tokens: all of them, or with
            SPLITS > 1 the split's share."""
            n_tiles = T.cdiv(lk, BN)
            start = 0
            if WINDOW:
                start = T.maximum(lk - WINDOW, 0) // BN
                n_tiles = n_tiles - start
            if SPLITS == 1:
                return start, n_tiles
            share = T.cdiv(n_tiles, SPLITS)
            first = start + split * share if WINDOW else split * share
            return first, T.maximum(T.minimum(share, n_tiles - split * share), 0)

        def page_of(t: Any) -> Any:
            """The page of key tile `t` (its table entry clamped inside the table: a tile past the sequence is never
            loaded, the clamp only keeps every read of TABLE inside it)."""
            row = T.minimum(b + 1, B - 1) if BUG == "next_sequence_page" else b  # the next sequence's table row
            return TABLE[row, T.minimum(t // per_page, MAXP - 1)]

        with T.role("producer", warpgroups=(0,), registers=PRODUCER_REGS), T.let(LENS[b], "lk") as lk:
            first, n_tiles = tiles_of(lk)
            T.mbarrier_arrive(q_ready[0], expect_bytes=BM * D * Q.dtype.itemsize)
            for c in range(D // PANEL):
                T.copy(Q.window((b, kvh, 0, PANEL * c), (None, None, BM, PANEL)),
                       sQ.window((0, PANEL * c), (BM, PANEL)), atom="tma", mbarrier=q_ready[0])  # fmt: skip
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(empty[s], phase=(j // STAGES + 1) % 2)
                T.mbarrier_arrive(full[s], expect_bytes=BN * (D + DV) * Q.dtype.itemsize)
                t = first + j
                load_page_tile(KC, page_of(t), (t % per_page) * BN, kvh, BN, D, sK[s], full[s])
                load_page_tile(VC, page_of(t), (t % per_page) * BN, kvh, BN, DV, sV[s], full[s])
        with T.role("consumer", warpgroups=(1,), registers=CONSUMER_REGS), T.let(LENS[b], "lk") as lk:
            first, n_tiles = tiles_of(lk)
            scores = T.alloc_fragment((BM, BN), T.f32, mma=T.wgmma_atom(BN, Q.dtype))
            pv = T.wgmma_atom(DV, Q.dtype, a_source="registers")
            o = T.alloc_fragment((BM, DV), T.f32, mma=pv)
            m = T.alloc_reduced(scores, axis=1)
            l = T.alloc_reduced(scores, axis=1)
            T.fill(o, 0.0)
            T.fill(m, float("-inf"))
            T.fill(l, 0.0)
            T.mbarrier_wait(q_ready[0], phase=0)
            for j, s in T.pipeline(n_tiles, stages=STAGES):
                T.mbarrier_wait(full[s], phase=(j // STAGES) % 2)
                t = first + j
                # invariant: the stages hold key tile t of this sequence: the rows of its page (as the table lists
                # it for this sequence) at the tile's offset, of this key/value head
                T.assert_tag(lambda x: (x[0] == TABLE[b, T.minimum(t // per_page, MAXP - 1)])
                             & (x[1] // BN == t % per_page) & (x[2] == kvh), sK[s])  # fmt: skip
                T.assert_tag(lambda x: (x[0] == TABLE[b, T.minimum(t // per_page, MAXP - 1)])
                             & (x[1] // BN == t % per_page) & (x[2] == kvh), sV[s])  # fmt: skip
                T.fill(scores, 0.0)
                T.gemm(sQ, sK[s].T, scores)  # S = Q K^T
                # invariant: the tokens of the last page past the sequence's length do not contribute; nor, with a
                # WINDOW, a token WINDOW or more behind the query, the sequence's last (declared before anything is
                # computed from S)
                T.exclude(scores, lambda r, c: c >= lk - t * BN)
                if WINDOW:
                    T.exclude(scores, lambda r, c: c < lk - WINDOW - t * BN)
                raw = scores if sign > 0 else -scores
                end = MAXP * PAGE_SIZE if BUG == "table_capacity" else lk  # the mask at the table's capacity
                x = T.where(T.index(scores, 1, T.i32) < end - t * BN, raw, float("-inf"))
                if WINDOW:
                    kept = WINDOW + 1 if BUG == "window_wide" else WINDOW  # one token more than the window
                    x = T.where(T.index(scores, 1, T.i32) >= lk - kept - t * BN, x, float("-inf"))
                p = softmax_step(x, m, l, o, scale_log2)
                pa = T.alloc_fragment((BM, BN), Q.dtype, mma=pv, operand="A")
                T.copy(p, pa)
                T.gemm(pa, sV[s], o)  # O += P V
                T.mbarrier_arrive(empty[s], per_warpgroup=True)
            inv, lse = softmax_result(m, l, scale_log2)
            if SPLITS > 1:
                T.copy(o * inv[:, None], O.tile((split, b, kvh, 0, 0), (None, None, None, BM, DV)))
                T.copy(lse, LSE.tile((split, b, kvh, 0), (None, None, None, BM)))
            else:
                T.copy(o * inv[:, None], O.tile((b, kvh, 0, 0), (None, None, BM, DV)))
                T.copy(lse, LSE.tile((b, kvh, 0), (None, None, BM)))


def _statements(kernel: Any) -> list[str]:
    lines = [line for line in format_kernel(kernel).splitlines() if not line.startswith(("kernel ", "  params "))]
    return [re.sub(r"  # [^#]*$", "", line) for line in lines]


@pytest.mark.parametrize("window", [0, 300])
def test_the_seeded_copy_without_a_bug_is_the_library_kernel(window: int) -> None:
    params = dict(D=64, DV=64, BN=64, PAGE_SIZE=128, SPLITS=3, OUT="f32", WINDOW=window)
    assert _statements(paged_seeded.trace(**params)) == _statements(flash_attention_paged.trace(**params))


@pytest.mark.parametrize(
    "bug, checks, code",
    [
        ("next_sequence_page", ("asserts",), "TAG_ASSERT"),
        ("table_capacity", ("oob",), "OOB_MASKED_REDUCTION"),
        ("window_wide", ("oob",), "OOB_MASKED_REDUCTION"),
    ],
)
def test_seeded_paging_bugs_are_caught_with_a_witness(bug: str, checks: tuple[str, ...], code: str) -> None:
    from argus.verify import verify_kernel

    window = 100 if bug.startswith("window") else 0
    report = verify_kernel(paged_seeded.trace(D=64, DV=64, BN=64, PAGE_SIZE=128, WINDOW=window, BUG=bug), checks=checks)
    found = [f for f in report.findings if f.code == code]
    assert found and found[0].verdict.value == "violated", report.findings
    assert found[0].counterexample is not None


@pytest.mark.parametrize("merged", [False, True])
def test_paged_decode_matches_torch_on_the_gpu(merged: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against torch on the gathered keys, with the split keys merged in the kernel's launch and in two launches,
    pages of 16 to 256 tokens."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    monkeypatch.setattr(SP, "COMBINE_IN_KERNEL", merged)
    g = torch.Generator().manual_seed(1)
    for b, h, hk, d, page, dtype in [
        (4, 32, 8, 128, 256, torch.bfloat16),
        (3, 16, 1, 64, 64, torch.float16),
        (2, 8, 8, 256, 128, torch.bfloat16),
        (3, 32, 8, 128, 16, torch.bfloat16),
        (2, 16, 2, 64, 32, torch.float16),
        (3, 32, 8, 80, 64, torch.bfloat16),
    ]:  # fmt: skip  (80: between the panels)
        maxp = 40 if page >= 64 else 400
        pages = 5 * maxp
        lens = torch.randint(0, maxp * page + 1, (b,), generator=g)
        lens[0] = 0
        table = torch.stack([torch.randperm(pages, generator=g)[:maxp] for _ in range(b)]).to(torch.int32)
        kc = torch.randn(pages, page, hk, d, generator=g).to("cuda", dtype)
        vc = torch.randn(pages, page, hk, d, generator=g).to("cuda", dtype)
        q = torch.randn(b, h, d, generator=g).to("cuda", dtype)
        o, lse = SP.sdpa_paged(q, kc, vc, table.cuda(), lens.to(torch.int32).cuda(), return_lse=True)
        torch.cuda.synchronize()
        for i in range(b):
            n = int(lens[i])
            if n == 0:
                assert o[i].abs().max().item() == 0 and torch.isinf(lse[i]).all()
                continue
            t = torch.arange(n)
            k, v = (c[table[i, t // page].long().cuda(), (t % page).cuda()].transpose(0, 1).float() for c in (kc, vc))
            k, v = k.repeat_interleave(h // hk, dim=0), v.repeat_interleave(h // hk, dim=0)
            ref = torch_sdpa(q[i][:, None].float(), k, v)[:, 0]
            assert (o[i].float() - ref).abs().max().item() < 2e-2, (b, h, hk, d, page, i)


def test_a_sliding_window_matches_torch_on_the_gpu() -> None:
    """The query sees its sequence's last W tokens: against torch on the gathered window, pages of 16 to 256, windows
    inside a page, across pages, longer than the sequence, and split keys over a long window."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from torch.nn.functional import scaled_dot_product_attention as torch_sdpa

    g = torch.Generator().manual_seed(2)
    for b, h, hk, d, page, window, dtype in [
        (4, 32, 8, 128, 256, 4096, torch.bfloat16),
        (3, 16, 1, 64, 64, 100, torch.float16),
        (3, 32, 8, 128, 16, 1000, torch.bfloat16),
        (2, 8, 8, 256, 128, 7000, torch.bfloat16),
    ]:
        maxp = 40 if page >= 64 else 400
        pages = 5 * maxp
        lens = torch.randint(0, maxp * page + 1, (b,), generator=g)
        lens[0] = min(int(window) // 2, maxp * page)  # shorter than the window
        table = torch.stack([torch.randperm(pages, generator=g)[:maxp] for _ in range(b)]).to(torch.int32)
        kc = torch.randn(pages, page, hk, d, generator=g).to("cuda", dtype)
        vc = torch.randn(pages, page, hk, d, generator=g).to("cuda", dtype)
        q = torch.randn(b, h, d, generator=g).to("cuda", dtype)
        o = SP.sdpa_paged(q, kc, vc, table.cuda(), lens.to(torch.int32).cuda(), window=window)
        torch.cuda.synchronize()
        for i in range(b):
            n = int(lens[i])
            if n == 0:
                continue
            t = torch.arange(max(n - window, 0), n)
            k, v = (c[table[i, t // page].long().cuda(), (t % page).cuda()].transpose(0, 1).float() for c in (kc, vc))
            k, v = k.repeat_interleave(h // hk, dim=0), v.repeat_interleave(h // hk, dim=0)
            ref = torch_sdpa(q[i][:, None].float(), k, v)[:, 0]
            assert (o[i].float() - ref).abs().max().item() < 2e-2, (b, h, hk, d, page, window, i)
