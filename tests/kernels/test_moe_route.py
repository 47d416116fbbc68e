"""The MoE routing's sort by expert as two DSL kernels (`argus.kernels.moe_route`, `argus.kernels.moe.sort_by_expert`):
on the CPU interpreter, through the parameters a GPU call launches, every field of the `Routing` equals the
definition (numpy's stable argsort, bincount and cumulative sum) for balanced, skewed and one-expert routings, more
experts than choices, choices over several tiles and a single token, and the top-k kernel takes torch's choices and
their softmax; the kernels verify with every padded choice
masked out of every sum (the verifier flagged the first version, which relied on the padding's value); they compile
for sm_90a without spills; on a GPU (skipped without one) `route` with and without them agree, and so does the layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from argus.kernels import moe
from argus.kernels.moe_route import moe_route_rank, moe_route_sorted


def _choices(kind: str, tokens: int, k: int, experts: int, seed: int) -> np.ndarray:
    """(tokens, k) distinct experts per token: "balanced" uniform, "zipf" skewed toward low ids, "hot": expert 3
    every token's first choice."""
    rng = np.random.default_rng(seed)
    if kind == "zipf":
        p = 1.0 / np.arange(1, experts + 1) ** 1.2
        rows = [rng.choice(experts, k, replace=False, p=p / p.sum()) for _ in range(tokens)]
    else:
        rows = [rng.choice(experts, k, replace=False) for _ in range(tokens)]
    out = np.array(rows, dtype=np.int64)
    if kind == "hot":
        for row in out:
            j = np.nonzero(row == 3)[0]
            row[j[0] if j.size else 0], row[0] = row[0], 3
    return out


CASES = {  # (kind, tokens, k, experts): what each adds
    "balanced_several_tiles": ("balanced", 40, 4, 64, 1),  # 160 choices: five row tiles, two choice tiles
    "zipf_empty_experts": ("zipf", 24, 2, 96, 2),  # most experts get no row; more experts than choices
    "one_expert_hot": ("hot", 33, 3, 8, 3),  # expert 3 takes a third of the rows, in token order
    "one_token_many_experts": ("balanced", 1, 8, 256, 4),  # a decode step of DeepSeek-V3's width
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_kernels_sort_the_choices_by_expert_as_a_stable_argsort(case: str) -> None:
    kind, tokens, k, experts, seed = CASES[case]
    chosen = _choices(kind, tokens, k, experts, seed)
    weights = np.random.default_rng(seed + 10).random((tokens, k)).astype(np.float32)
    routing = moe.sort_by_expert(torch.from_numpy(chosen), torch.from_numpy(weights), experts)
    flat = chosen.reshape(-1)
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=experts)
    positions = np.empty_like(order)
    positions[order] = np.arange(order.size)
    assert np.array_equal(routing.order.numpy(), order)
    assert np.array_equal(routing.token.numpy(), order // k)
    assert np.array_equal(routing.weight.numpy(), weights.reshape(-1)[order])  # moved, not recomputed: exact
    assert np.array_equal(routing.counts.numpy(), counts)
    assert np.array_equal(routing.offs.numpy(), np.cumsum(counts))
    assert np.array_equal(routing.positions().numpy(), positions)
    assert routing.offs.dtype == torch.int32 and routing.pos.dtype == torch.int32
    # what the grouped products take from it: the row-tile counts the sort made (tiles of 64 rows), and from its
    # counts for another tile
    assert routing.made_tiles[0] == 64
    assert np.array_equal(routing.tiles(64).numpy(), moe.tile_counts(np.cumsum(counts), 64))
    assert np.array_equal(routing.tiles(16).numpy(), moe.tile_counts(np.cumsum(counts), 16))
    sixteen = moe.sort_by_expert(torch.from_numpy(chosen), torch.from_numpy(weights), experts, block_m=16)
    assert np.array_equal(sixteen.made_tiles[1].numpy(), moe.tile_counts(np.cumsum(counts), 16))


def test_the_torch_routing_and_the_kernels_agree_on_a_softmax_top_k() -> None:
    """`route`'s own choices and weights (the top-k of the logits and their softmax) sorted by the kernels: the same
    routed rows, weights and row ends as `route`'s PyTorch sort."""
    g = torch.Generator().manual_seed(5)
    x, router = torch.randn(19, 32, generator=g), torch.randn(32, 16, generator=g)
    reference = moe.route(x, router, 4)
    top, chosen = (x @ router).topk(4, dim=-1)
    routing = moe.sort_by_expert(chosen, top.softmax(dim=-1), 16)
    assert torch.equal(routing.token.long(), reference.token) and torch.equal(routing.order.long(), reference.order)
    assert torch.equal(routing.offs, reference.offs) and torch.equal(routing.counts.long(), reference.counts)
    assert torch.equal(routing.weight, reference.weight)
    assert torch.equal(routing.positions(), reference.positions())  # the kernel's POS; PyTorch's scatter of order


@pytest.mark.parametrize("experts, top_k", [(8, 2), (40, 3), (128, 8), (256, 8), (160, 6)])
def test_the_top_k_kernel_takes_torch_s_choices_and_their_softmax(experts: int, top_k: int) -> None:
    """`moe_route_topk` (the routing's top-k of the logits and their own softmax, one launch) on the interpreter:
    torch's `topk` choices exactly, in order, and its softmax of them within 4 ulp (the exponential's rounding);
    rows of 8 to 256 experts (one warp a row: 32 lanes of 1 to 8 values), tokens not a multiple of the block's."""
    g = torch.Generator().manual_seed(experts + top_k)
    logits = torch.randn(7, experts, generator=g) * 3
    chosen, weights = moe.top_k_softmax(logits, top_k)
    top, want = logits.topk(top_k, dim=-1)
    assert chosen.dtype == torch.int32 and torch.equal(chosen.long(), want)
    torch.testing.assert_close(weights, top.softmax(dim=-1), rtol=5e-7, atol=0)


def test_equal_logits_choose_the_lowest_expert_first() -> None:
    logits = torch.tensor([[0.0, 2.0, 1.0, 2.0, 2.0, -1.0, 0.5, 0.0]])
    chosen, weights = moe.top_k_softmax(logits, 4)
    assert chosen.tolist() == [[1, 3, 4, 2]]
    e = torch.exp(torch.tensor([0.0, 0.0, 0.0, -1.0]))
    torch.testing.assert_close(weights[0], e / e.sum(), rtol=5e-7, atol=0)


def test_a_row_of_nan_logits_chooses_real_experts_with_nan_weights() -> None:
    """NaN logits propagate as PyTorch's do (NaN weights, so NaN outputs), and every choice stays an expert id: a
    choice past the last expert would land in routed rows no product writes."""
    logits = torch.randn(3, 8, generator=torch.Generator().manual_seed(2))
    logits[1] = float("nan")
    chosen, weights = moe.top_k_softmax(logits, 2)
    assert ((chosen >= 0) & (chosen < 8)).all() and torch.isnan(weights[1]).all()
    assert torch.equal(chosen[[0, 2]].long(), logits[[0, 2]].topk(2, dim=-1).indices)


def test_the_top_k_kernel_verifies_and_refuses_what_it_does_not_take() -> None:
    from argus.kernels.moe_route import moe_route_topk
    from argus.lang.errors import DSLError
    from argus.verify import verify_kernel

    for experts, top_k in [(8, 2), (128, 8)]:  # Mixtral's and Qwen3's rows
        report = verify_kernel(moe_route_topk.trace(**dict(moe.route_params("topk", top_k, experts))))
        assert not report.findings, report.findings
        assert {c.verdict.value for c in report.checks if c.check == "masked reduction"} == {"verified"}
    # 256 experts: eight values a lane, 32-byte runs split in two loads (a performance note, nothing else)
    report = verify_kernel(moe_route_topk.trace(**dict(moe.route_params("topk", 8, 256))))
    assert {f.code for f in report.findings} <= {"PERF_UNCOALESCED"}
    assert moe.topk_refusal(6, 2) is not None and moe.topk_refusal(1024, 8) is not None
    with pytest.raises(moe.GroupedError, match="multiple of 4 experts"):
        moe.top_k_softmax(torch.zeros(3, 6), 2)
    with pytest.raises(DSLError, match="BT \\* BE"):
        moe_route_topk.trace(BE=128, BT=8)


def test_bad_choices_are_refused_with_the_shapes() -> None:
    with pytest.raises(moe.GroupedError, match="T \\* k > 0"):
        moe.sort_by_expert(torch.zeros((0, 2), dtype=torch.int64), torch.zeros((0, 2)), 8)
    with pytest.raises(moe.GroupedError, match=r"\(3, 2\), \(3, 1\)"):
        moe.sort_by_expert(torch.zeros((3, 2), dtype=torch.int64), torch.zeros((3, 1)), 8)


def test_both_kernels_verify_with_the_padding_masked_out_of_every_sum() -> None:
    from argus.verify import verify_kernel

    for kernel in (moe_route_rank.trace(**dict(moe.route_params("rank"))),
                   moe_route_sorted.trace(**dict(moe.route_params("sorted", 8)))):  # fmt: skip
        report = verify_kernel(kernel)
        assert not report.findings, report.findings
        masked = [c.verdict.value for c in report.checks if c.check == "masked reduction"]
        assert masked and set(masked) == {"verified"}
        assert {c.verdict.value for c in report.checks if c.check == "output coverage"} == {"verified"}


def test_both_kernels_compile_for_sm90a_without_spills() -> None:
    from argus.backend.cuda.codegen import compile_kernel

    for kernel in (moe_route_rank.trace(**dict(moe.route_params("rank"))),
                   moe_route_sorted.trace(**dict(moe.route_params("sorted", 2)))):  # fmt: skip
        resources = compile_kernel(kernel).resources
        assert resources.spill_stores == 0 and resources.spill_loads == 0


def test_route_with_the_kernels_matches_route_without_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    g = torch.Generator().manual_seed(3)
    for tokens, hidden, experts, k in [(1, 256, 128, 8), (16, 256, 8, 2), (256, 128, 256, 8)]:
        x = torch.randn(tokens, hidden, generator=g).cuda()
        router = torch.randn(hidden, experts, generator=g).cuda()
        monkeypatch.setattr(moe, "ROUTE_KERNEL", False)
        want = moe.route(x, router, k)
        monkeypatch.setattr(moe, "ROUTE_KERNEL", True)
        got = moe.route(x, router, k)
        assert got.pos is not None
        assert torch.equal(got.token.long(), want.token) and torch.equal(got.order.long(), want.order)
        assert torch.equal(got.offs, want.offs) and torch.equal(got.positions(), want.positions())
        torch.testing.assert_close(got.weight, want.weight, rtol=5e-7, atol=0)  # the top-k kernel's softmax
