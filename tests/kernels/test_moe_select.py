"""Any top-k routing in one launch (`argus.kernels.moe_route.moe_route_select`, `argus.kernels.moe.top_k_select`):
on the CPU interpreter against a definition written here in PyTorch (softmax or sigmoid scores, a correction bias
for choosing, DeepSeek-V3's groups scored by their two best, renormalization, scaling), with rows of 12 to 256
experts and token counts that are not a multiple of the block's; NaN logits; the refusals; verified and compiled."""

from __future__ import annotations

import pytest
import torch

from argus.kernels import moe
from argus.kernels.moe_route import moe_route_select


def _definition(logits, top_k, scoring, correction, groups, top_groups, renormalize, scaling):  # noqa: ANN001, ANN202, PLR0913
    """The routing by its definition: per token, the experts of the `top_groups` groups with the best sums of their
    two best choice scores, the `top_k` best choice scores among them, their scores as weights."""
    scores = logits.softmax(dim=-1) if scoring == "softmax" else logits.sigmoid()
    choice = scores + (0.0 if correction is None else correction)
    tokens, experts = logits.shape
    size = experts // groups
    chosen, weights = [], []
    for t in range(tokens):
        group_score = [sorted(choice[t, g * size : (g + 1) * size].tolist())[-2:] for g in range(groups)]
        best = sorted(range(groups), key=lambda g: -sum(group_score[g]))[:top_groups]
        allowed = [e for e in range(experts) if e // size in best]
        row = sorted(allowed, key=lambda e: -float(choice[t, e]))[:top_k]
        w = scores[t, row]
        if renormalize:
            w = w / w.sum()
        chosen.append(row)
        weights.append(w * scaling)
    return torch.tensor(chosen), torch.stack(weights)


CASES = {  # (tokens, experts, top_k, scoring, correction, groups, top_groups, renormalize, scaling)
    "deepseek_v3_groups": (5, 64, 6, "sigmoid", True, 8, 4, True, 2.5),  # V3's routing at a quarter of its experts
    "deepseek_v3_width": (3, 256, 8, "sigmoid", True, 8, 4, True, 2.5),  # its 256 experts: eight values a lane
    "softmax_not_renormalized": (6, 12, 3, "softmax", False, 1, 1, False, 1.0),  # Qwen-style norm_topk_prob off
    "sigmoid_plain": (2, 128, 8, "sigmoid", False, 1, 1, True, 1.0),
    "softmax_groups": (9, 32, 4, "softmax", True, 4, 2, True, 1.0),  # group-limited softmax, nine tokens
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_select_kernel_chooses_and_weights_as_the_definition(case: str) -> None:
    tokens, experts, top_k, scoring, corrected, groups, top_groups, renormalize, scaling = CASES[case]
    g = torch.Generator().manual_seed(len(case))
    logits = torch.randn(tokens, experts, generator=g) * 2
    correction = torch.randn(experts, generator=g) * 0.3 if corrected else None
    chosen, weights = moe.top_k_select(logits, top_k, scoring=scoring, correction=correction, groups=groups,
                                       top_groups=top_groups, renormalize=renormalize, scaling=scaling)  # fmt: skip
    want_chosen, want_weights = _definition(logits, top_k, scoring, correction, groups, top_groups, renormalize,
                                            scaling)  # fmt: skip
    assert chosen.dtype == torch.int32 and torch.equal(chosen.long(), want_chosen), (chosen, want_chosen)
    torch.testing.assert_close(weights, want_weights.float(), rtol=2e-6, atol=0)


def test_the_select_kernel_takes_route_s_other_routings(monkeypatch: pytest.MonkeyPatch) -> None:
    """`route`'s PyTorch operators (off the kernel path) and the kernel agree on DeepSeek-V3's routing; the kernel
    is what `route` takes for it where the routing kernels apply (`SELECT_KERNEL`)."""
    g = torch.Generator().manual_seed(11)
    logits = torch.randn(4, 64, generator=g)
    correction = torch.randn(64, generator=g) * 0.3
    chosen, weights = moe.top_k_select(logits, 8, scoring="sigmoid", correction=correction, groups=8, top_groups=4,
                                       scaling=2.5)  # fmt: skip
    # on CPU tensors `route` takes its PyTorch operators; the router the identity, so the logits are x
    routing = moe.route(logits, torch.eye(64), 8, scoring="sigmoid", correction=correction, groups=8, top_groups=4,
                        scaling=2.5)  # fmt: skip
    flat = chosen.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    assert torch.equal(routing.order, order) and torch.equal(routing.token, order // 8)
    torch.testing.assert_close(routing.weight, weights.reshape(-1)[order], rtol=2e-6, atol=0)
    assert moe.SELECT_KERNEL and moe.select_refusal(64, 8, 8, 4) is None


def test_a_row_of_nan_logits_chooses_real_experts_with_nan_weights() -> None:
    logits = torch.randn(3, 32, generator=torch.Generator().manual_seed(3))
    logits[1] = float("nan")
    chosen, weights = moe.top_k_select(logits, 4, scoring="sigmoid", groups=4, top_groups=2)
    assert ((chosen >= 0) & (chosen < 32)).all() and torch.isnan(weights[1]).all()
    want, _ = _definition(logits[[0, 2]], 4, "sigmoid", None, 4, 2, True, 1.0)
    assert torch.equal(chosen[[0, 2]].long(), want)


def test_routings_the_kernel_does_not_take_are_refused_with_why() -> None:
    from argus.lang.errors import DSLError

    assert moe.select_refusal(64, 8, 8, 4) is None
    assert "groups of two experts" in moe.select_refusal(16, 2, 16, 4)  # groups of one expert
    assert "groups of two experts" in moe.select_refusal(64, 8, 6, 2)  # 64 experts do not split in six
    assert "groups of two experts" in moe.select_refusal(64, 20, 8, 2)  # two groups of 8 hold fewer than 20
    assert "multiple of 4 experts" in moe.select_refusal(6, 2)
    with pytest.raises(moe.GroupedError, match="groups of two experts"):
        moe.top_k_select(torch.zeros(2, 16), 2, groups=16)
    with pytest.raises(DSLError, match="SCORING"):
        moe_route_select.trace(SCORING="relu")
    with pytest.raises(DSLError, match="TOP_GROUPS"):
        moe_route_select.trace(GROUPS=4, TOP_GROUPS=5)


def test_the_select_kernel_verifies_and_compiles_without_spills() -> None:
    """DeepSeek-V3's routing (256 experts in 8 groups, sigmoid, scaled) and a softmax over 128 experts that is not
    renormalized: no finding but the 256-expert rows' performance note (eight values a lane: two 16-byte loads),
    every padded expert masked out of every maximum and sum; compiled without spills, but for one 8-byte value of
    DeepSeek-V3's eight unrolled groups at the 64 registers a thread the kernel is compiled for."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify_kernel

    deepseek = moe.route_params("topk", 8, 256) + (("SCORING", "sigmoid"), ("GROUPS", 8), ("TOP_GROUPS", 4),
                                                   ("SCALING", 2.5))  # fmt: skip
    plain = moe.route_params("topk", 8, 128) + (("SCORING", "softmax"), ("RENORMALIZE", False))
    for params, notes, spilled in ((deepseek, {"PERF_UNCOALESCED"}, 8), (plain, set(), 0)):
        kernel = moe_route_select.trace(**dict(params))
        report = verify_kernel(kernel)
        assert {f.code for f in report.findings} <= notes, report.findings
        assert {c.verdict.value for c in report.checks if c.check == "masked reduction"} == {"verified"}
        resources = compile_kernel(kernel).resources
        assert resources.spill_stores <= spilled and resources.spill_loads <= spilled


@pytest.mark.gpu
def test_route_and_the_layer_with_deepseek_v3_s_routing_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU: `route` with the select kernel equals `route` with PyTorch's operators (DeepSeek-V3's sigmoid,
    correction and groups; a softmax that does not renormalize), and the layer with that routing matches the layer
    with the kernel off."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    g = torch.Generator().manual_seed(4)
    for tokens, hidden, experts, k, kwargs in [
        (1, 256, 256, 8, {"scoring": "sigmoid", "groups": 8, "top_groups": 4, "scaling": 2.5}),
        (24, 128, 64, 6, {"scoring": "sigmoid", "groups": 8, "top_groups": 4, "scaling": 2.5}),
        (5, 128, 60, 4, {"scoring": "softmax", "renormalize": False}),
    ]:
        x = torch.randn(tokens, hidden, generator=g).cuda()
        router = torch.randn(hidden, experts, generator=g).cuda()
        correction = (torch.randn(experts, generator=g) * 0.3).cuda() if "groups" in kwargs else None
        monkeypatch.setattr(moe, "SELECT_KERNEL", False)
        want = moe.route(x, router, k, correction=correction, **kwargs)
        monkeypatch.setattr(moe, "SELECT_KERNEL", True)
        got = moe.route(x, router, k, correction=correction, **kwargs)
        assert torch.equal(got.order, want.order) and torch.equal(got.offs, want.offs)
        torch.testing.assert_close(got.weight, want.weight, rtol=2e-6, atol=0)
    hidden, inter, experts = 256, 128, 64
    x = torch.randn(3, hidden, generator=g).cuda().to(torch.bfloat16)
    router = torch.randn(hidden, experts, generator=g).cuda() * hidden**-0.5
    w1 = (torch.randn(experts, hidden, 2 * inter, generator=g) * hidden**-0.5).cuda().to(torch.bfloat16)
    w2 = (torch.randn(experts, inter, hidden, generator=g) * inter**-0.5).cuda().to(torch.bfloat16)
    correction = (torch.randn(experts, generator=g) * 0.1).cuda()
    layer = {"scoring": "sigmoid", "correction": correction, "groups": 8, "top_groups": 4, "scaling": 2.5}
    monkeypatch.setattr(moe, "SELECT_KERNEL", False)
    want = moe.moe_layer(x, router, w1, w2, 6, **layer).float()
    monkeypatch.setattr(moe, "SELECT_KERNEL", True)
    got = moe.moe_layer(x, router, w1, w2, 6, **layer).float()
    assert float((got - want).abs().max() / want.abs().max()) < 1e-2


def test_a_16_bit_router_s_logits_are_one_product_only_on_a_cuda_device() -> None:
    """On CPU tensors (and for an f32 router anywhere) the logits are ``x.float() @ router.float()``, bit for bit."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(3, 64, generator=g).to(torch.bfloat16)
    for router in (torch.randn(64, 16, generator=g), torch.randn(64, 16, generator=g).to(torch.bfloat16)):
        assert torch.equal(moe.router_logits(x, router), x.float() @ router.float())


@pytest.mark.gpu
def test_a_16_bit_router_s_logits_and_layer_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bf16 router: its logits in one product with f32 accumulation equal the f32 conversions' product within f32
    rounding, and the layer with it equals the layer with the conversions."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    g = torch.Generator().manual_seed(7)
    hidden, inter, experts = 512, 128, 32
    x = torch.randn(5, hidden, generator=g).cuda().to(torch.bfloat16)
    router = (torch.randn(hidden, experts, generator=g) * hidden**-0.5).cuda().to(torch.bfloat16)
    got = moe.router_logits(x, router)
    want = x.float() @ router.float()
    assert got.dtype == torch.float32 and got.shape == (5, experts)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    w1 = (torch.randn(experts, hidden, 2 * inter, generator=g) * hidden**-0.5).cuda().to(torch.bfloat16)
    w2 = (torch.randn(experts, inter, hidden, generator=g) * inter**-0.5).cuda().to(torch.bfloat16)
    out = moe.moe_layer(x, router, w1, w2, 4).float()
    monkeypatch.setattr(moe, "LOGITS_16BIT", False)
    ref = moe.moe_layer(x, router, w1, w2, 4).float()
    assert float((out - ref).abs().max() / ref.abs().max()) < 1e-2
