"""Split-key attention merged in its own launch (`argus.kernels.attention.flash_attention_combined`,
`AttentionConfig.COMBINED`): the SPLITS blocks of a (query block, head) unit store their partial results, meet at a
group barrier and merge the unit's rows, with no `attention_combine` launch. On the interpreter bit for bit the two
launches' result; the plan's refusals with their reasons; `choose` takes it where the split grid is one wave;
verified, and compiled to HGMMA, TMA and the barrier; on a GPU (skipped without one) against the two launches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from tests.kernels.test_sdpa import _inputs

from argus.backend.cuda.codegen import compile_kernel
from argus.kernels import attention
from argus.kernels import sdpa as S
from argus.lang.errors import DSLError
from argus.verify import Verdict, verify

CASES = {
    # one token, four query heads over one key/value head: packed, 3 splits of which 2 merge 32 rows each
    "packed_token_split3": (S.AttentionProblem(1, 4, 1, 1, 700, 64, 64, False, "bf16", "f32"), None),
    # causal, more than one token: not packed, 2 splits, bf16 out, rows past SQ in the tile
    "causal_unpacked_bf16": (
        S.AttentionProblem(1, 2, 1, 20, 520, 64, 64, True, "bf16", "bf16"),
        S.AttentionConfig(64, 128, 2, 1, SPLITS=2),
    ),
    # two batches of grouped heads, DV < D, f16, 4 splits on two consumer warpgroups (128-row tiles)
    "gqa_two_consumers_f16": (
        S.AttentionProblem(2, 4, 2, 1, 900, 128, 64, False, "f16", "f16"),
        S.AttentionConfig(128, 64, 2, 2, SPLITS=4, PACK=True, P_REGISTERS=True),
    ),
    # a head dim of 144: 192 columns merged, shares of a multiple of 8 rows (4 rows of 192 values do not spread
    # evenly over 128 threads: the random sweep's `DSL_FRAGMENT_LAYOUT` on a one-token decode, session 74)
    "head_dim_144_split4": (
        S.AttentionProblem(1, 1, 1, 1, 600, 144, 144, False, "bf16", "bf16"),
        S.AttentionConfig(64, 64, 2, 1, SPLITS=4),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_merge_in_the_kernel_s_launch_is_the_two_launches_result(case: str) -> None:
    problem, config = CASES[case]
    split = S.plan(problem, replace(config or S.choose(problem), COMBINED=False))
    assert split.config.SPLITS > 1 and not split.config.COMBINED
    combined = S.plan(problem, replace(split.config, COMBINED=True))
    assert [k.name for k in combined.kernels()] == ["flash_attention_combined"]
    q, k, v = _inputs(problem, seed=3)
    o, lse = combined.run_on_interpreter(q, k, v)
    o2, lse2 = split.run_on_interpreter(q, k, v)
    # the same partial results merged in the same order: bit for bit
    np.testing.assert_array_equal(o, o2)
    np.testing.assert_array_equal(lse, lse2)
    ref_o, ref_lse = S.reference(q, k, v, causal=problem.causal)
    np.testing.assert_allclose(o, ref_o, atol=1e-2 if problem.out == "f32" else 2e-2, rtol=0)
    np.testing.assert_allclose(lse, ref_lse, atol=1e-4, rtol=0)


def test_the_merging_blocks_share_the_rows_in_whole_vectors() -> None:
    # 64 rows of 64 values on 128 threads: shares of at least 8 rows (one 4-value vector a thread)
    assert attention.merge_reducers(64, 3, 64, 128) == 2
    assert attention.merge_reducers(64, 32, 64, 128) == 8
    assert attention.merge_reducers(64, 32, 128, 128) == 16
    assert attention.merge_reducers(128, 6, 128, 256) == 4
    assert attention.merge_reducers(16, 4, 16, 384) == 0  # not even all rows together (16 x 64 merged columns)
    # a value head dim between the panels is merged whole panels wide (the columns past it padding, not stored)
    assert attention.merge_reducers(64, 32, 72, 128) == attention.merge_reducers(64, 32, 128, 128) == 16
    # 192 merged columns (head dims 136-192): shares of a multiple of 8 rows, so that the 128 threads hold the same
    # number of vectors each (4 rows of 192 = 768 values do not spread over 128 x 4)
    assert attention.merge_reducers(64, 32, 192, 128) == 8 and attention.merge_reducers(64, 3, 176, 128) == 2
    for d in (136, 144, 176, 192):  # the sweep's one-token decodes: every chosen plan traces
        problem = S.AttentionProblem(1, 1, 1, 1, 4048, d, d)
        S.plan(problem).kernels()
    with pytest.raises(DSLError, match="REDUCERS"):
        attention.flash_attention_combined.trace(D=64, DV=64, BM=64, SPLITS=4, REDUCERS=3)


@pytest.mark.parametrize(
    "problem, config, reason",
    [
        (S.AttentionProblem(1, 4, 1, 1, 700, 64, 64), S.AttentionConfig(64, 128, 2, 1, PACK=True), "not split"),
        # 4 x 32 heads x 2 splits: 256 blocks that wait for each other on 132 SMs
        (S.AttentionProblem(4, 32, 32, 1, 4096, 64, 64), S.AttentionConfig(64, 128, 2, 1, SPLITS=2), "one wave"),
        (
            S.AttentionProblem(1, 2, 2, 300, 4096, 128, 128),
            S.AttentionConfig(128, 128, 2, 2, SPLITS=2, P_REGISTERS=True, OVERLAP=True),
            "overlapped loop",
        ),
    ],
    ids=["unsplit", "two-waves", "overlap"],
)
def test_what_cannot_merge_in_its_launch_is_refused_with_the_reason(problem, config, reason) -> None:  # noqa: ANN001
    assert reason in (S.combined_refusal(problem, replace(config, COMBINED=True)) or "")
    if config.SPLITS == 1:  # nothing to merge: the plan runs the one launch it is (as `replace(choose(), SPLITS=1)`)
        assert not S.plan(problem, replace(config, COMBINED=True)).config.COMBINED
        return
    with pytest.raises(S.AttentionError, match=reason):
        S.plan(problem, replace(config, COMBINED=True))


def test_the_chooser_merges_in_the_launch_where_the_split_grid_is_one_wave(monkeypatch) -> None:  # noqa: ANN001
    decode = S.AttentionProblem(1, 32, 8, 1, 8192, 128, 128)
    chosen = S.choose(decode)
    assert chosen.COMBINED and chosen.SPLITS > 1
    assert S.plan(decode, chosen).combine_params() is None
    # no split (the blocks fill the GPU): nothing to merge
    assert not S.choose(S.AttentionProblem(64, 32, 8, 1, 8192, 128, 128)).COMBINED
    monkeypatch.setattr(S, "COMBINE_IN_KERNEL", False)  # the A/B switch
    assert not S.choose(decode).COMBINED and S.choose(decode).SPLITS == chosen.SPLITS


def test_the_combined_kernel_verifies_and_compiles_to_hgmma_tma_and_the_barrier() -> None:
    decode = S.AttentionProblem(1, 32, 8, 1, 2048, 128, 128)  # 8 splits (8192 keys: 16, the proof 4-5x longer)
    the_plan = S.plan(decode, replace(S.choose(decode), COMBINED=True))
    result = verify(the_plan.kernel())
    assert result.verdict == Verdict.VERIFIED, result.render_text()
    tags = [c for c in result.checks if c.check == "tag assertion"]
    # K's and V's stages, the row statistics, and the merge's one per split (each split's partial result of the
    # unit's rows)
    assert len(tags) == 3 + the_plan.config.SPLITS and all(c.verdict == Verdict.VERIFIED for c in tags), tags
    arrivals = [c for c in result.checks if c.check == "group barrier arrivals"]
    assert [c.verdict for c in arrivals] == [Verdict.VERIFIED], arrivals
    compiled = compile_kernel(the_plan.kernel())
    mix = compiled.instruction_mix()
    assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0, mix
    assert "argus::group_barrier(" in compiled.generated.source
    assert compiled.resources.spill_stores == 0


def test_the_combined_launch_matches_torch_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for b, h, hk, sq, sk, d, dv, causal in [
        (1, 32, 8, 1, 8192, 128, 128, False),  # packed, split
        (2, 32, 8, 1, 30000, 128, 128, True),  # packed causal token
        (1, 4, 4, 16, 20000, 64, 64, True),  # causal, unpacked
    ]:
        q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hk, sk, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hk, sk, dv, device="cuda", dtype=torch.bfloat16)
        problem = S.problem_of(q, k, v, causal=causal)
        config = replace(S.choose(problem), COMBINED=True)
        o, lse, launches = S.prepare(q, k, v, causal=causal, config=config)
        for _ in range(3):  # relaunched: the counters carry on to the barriers' next generation
            for launch in launches:
                launch.launch()
        o2, lse2 = S.sdpa(q, k, v, causal=causal, return_lse=True)  # the two launches
        torch.cuda.synchronize()
        assert torch.equal(o, o2) and torch.equal(lse, lse2), (b, h, sq, sk, causal)
