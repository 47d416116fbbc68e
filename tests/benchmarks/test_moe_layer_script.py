"""benchmarks/moe_layer.py on the CPU: its composed MoE layer (the baseline the GPU contenders are timed against)
and its f32 reference (what every contender is checked against) agree with the layer written out token by token,
with the per-expert loop `grouped_loop` standing in for ``torch._grouped_mm``; the check's tolerance rejects layers
that drop the router weights, swap gate and up, or route to fewer experts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "moe_layer.py"
TOKENS, HIDDEN, INTER, EXPERTS, TOP_K = 32, 16, 8, 4, 2
EMPTY = 3  # the expert no token chooses


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("moe_layer_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def inputs(seed: int = 0) -> tuple[torch.Tensor, ...]:
    """x (T, H), router (H, E), bias (T, E) keeping expert EMPTY out of every top k, w1 (E, H, 2I), w2 (E, I, H)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(TOKENS, HIDDEN, generator=g)
    router = torch.randn(HIDDEN, EXPERTS, generator=g) * HIDDEN**-0.5
    bias = torch.zeros(TOKENS, EXPERTS)
    bias[:, EMPTY] = -1e4
    w1 = torch.randn(EXPERTS, HIDDEN, 2 * INTER, generator=g) * HIDDEN**-0.5
    w2 = torch.randn(EXPERTS, INTER, HIDDEN, generator=g) * INTER**-0.5
    return x, router, bias, w1, w2


def by_token(x, router, bias, w1, w2, top_k: int, weighted: bool = True) -> torch.Tensor:  # noqa: ANN001
    """The layer from its definition, one token at a time: the renormalized top-k softmax weights (all 1 when not
    `weighted`) times silu(x @ gate) * (x @ up) @ w2[e], summed over the token's experts."""
    out = torch.zeros(x.shape)
    for t in range(x.shape[0]):
        weights, experts = torch.topk(torch.softmax(x[t] @ router + bias[t], dim=-1), top_k)
        weights = weights / weights.sum() if weighted else torch.ones(top_k)
        for weight, e in zip(weights.tolist(), experts.tolist(), strict=True):
            gate, up = x[t] @ w1[e, :, :INTER], x[t] @ w1[e, :, INTER:]
            out[t] += weight * ((torch.nn.functional.silu(gate) * up) @ w2[e])
    return out


def test_the_inputs_leave_one_expert_without_tokens_and_use_the_others() -> None:
    x, router, bias, _, _ = inputs()
    chosen = torch.topk(x @ router + bias, TOP_K, dim=-1).indices
    assert set(chosen.unique().tolist()) == set(range(EXPERTS)) - {EMPTY}


def test_grouped_loop_multiplies_each_experts_rows_by_its_matrix(script: ModuleType) -> None:
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(10, 4, generator=g), torch.randn(3, 4, 8, generator=g)
    offs = torch.tensor([3, 3, 10], dtype=torch.int32)  # expert 1 has no rows
    expected = torch.cat([a[:3] @ b[0], a[3:] @ b[2]])
    torch.testing.assert_close(script.grouped_loop(a, b, offs), expected)
    # the operator it stands in for, where it runs on the CPU (16-byte aligned strides)
    torch.testing.assert_close(torch._grouped_mm(a, b, offs=offs), expected)


def test_the_reference_is_the_layer_token_by_token(script: ModuleType) -> None:
    x, router, bias, w1, w2 = inputs()
    ref = script.reference_layer(x, router, bias, w1, w2, TOP_K)
    assert ref.dtype == torch.float32 and ref.abs().max() > 0.1  # O(1) outputs, not vanishing
    torch.testing.assert_close(ref, by_token(x, router, bias, w1, w2, TOP_K), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("grouped", ["grouped_loop", "torch._grouped_mm"])
def test_composed_layer_matches_the_reference(script: ModuleType, grouped: str) -> None:
    x, router, bias, w1, w2 = inputs()
    fn = script.grouped_loop if grouped == "grouped_loop" else torch._grouped_mm
    got = script.composed_layer(x, router, bias, w1, w2, TOP_K, grouped=fn)
    ref = script.reference_layer(x, router, bias, w1, w2, TOP_K)
    assert got.shape == (TOKENS, HIDDEN) and got.dtype == x.dtype
    assert script.relative_error(got, ref) < 1e-5


def test_composed_layer_without_renormalizing(script: ModuleType) -> None:
    x, router, bias, w1, w2 = inputs()
    got = script.composed_layer(x, router, bias, w1, w2, TOP_K, False, grouped=script.grouped_loop)
    ref = script.reference_layer(x, router, bias, w1, w2, TOP_K, renormalize=False)
    assert script.relative_error(got, ref) < 1e-5
    assert script.relative_error(got, script.reference_layer(x, router, bias, w1, w2, TOP_K)) > script.TOLERANCE


def test_the_tolerance_rejects_wrong_layers(script: ModuleType) -> None:
    """Each wrong layer lands above the benchmark's TOLERANCE against the reference, so the check can fail."""
    x, router, bias, w1, w2 = inputs()
    ref = script.reference_layer(x, router, bias, w1, w2, TOP_K)
    swapped = torch.cat([w1[:, :, INTER:], w1[:, :, :INTER]], dim=-1)  # up first, gate second
    wrong = {
        "router weights not applied": by_token(x, router, bias, w1, w2, TOP_K, weighted=False),
        "gate and up swapped": script.composed_layer(x, router, bias, swapped, w2, TOP_K, grouped=script.grouped_loop),
        "top 1 instead of top 2": script.composed_layer(x, router, bias, w1, w2, 1, grouped=script.grouped_loop),
        "a NaN": torch.where(torch.arange(TOKENS)[:, None] == 5, torch.nan, ref),
    }
    for name, out in wrong.items():
        assert script.relative_error(out, ref) > script.TOLERANCE, name


def test_routing_biases_steer_the_load(script: ModuleType) -> None:
    cpu = torch.device("cpu")
    assert script.routing_bias("balanced", 64, 8, cpu).abs().max() == 0
    zipf = script.routing_bias("zipf", 64, 8, cpu)  # one bias per expert, the same for every token
    assert torch.equal(zipf[0], zipf[-1]) and zipf.max() == 0.0
    torch.testing.assert_close(zipf[0].sort(descending=True).values, -1.2 * torch.log(torch.arange(1.0, 9.0)))
    hot = script.routing_bias("hot", 4096, 8, cpu)
    assert 0.65 < (hot[:, script.HOT_EXPERT] > 0).float().mean() < 0.75
    assert torch.equal(hot, script.routing_bias("hot", 4096, 8, cpu))  # seeded
    with pytest.raises(ValueError, match="routing must be one of"):
        script.routing_bias("uniform", 4, 4, cpu)
