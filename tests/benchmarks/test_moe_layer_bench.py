"""benchmarks/moe_layer_bench.py on the CPU: its composed PyTorch MoE layer (the baseline argus's layer is timed
against) and its f32 reference (what every contender is checked against) agree with the layer written out token
by token, with an expert no token chooses; the check rejects a layer that drops the router weights."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "moe_layer_bench.py"
TOKENS, HIDDEN, INTER, EXPERTS, TOP_K = 32, 16, 8, 4, 2


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("moe_layer_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(TOKENS, HIDDEN, generator=g).to(torch.bfloat16)
    router = torch.randn(HIDDEN, EXPERTS, generator=g) * HIDDEN**-0.5
    bias = torch.zeros(TOKENS, EXPERTS)
    bias[:, 3] = -1e4  # expert 3 receives no token
    w1 = (torch.randn(EXPERTS, HIDDEN, 2 * INTER, generator=g) * HIDDEN**-0.5).to(torch.bfloat16)
    w2 = (torch.randn(EXPERTS, INTER, HIDDEN, generator=g) * INTER**-0.5).to(torch.bfloat16)
    return x, router, bias, w1, w2


def _by_token(x, router, bias, w1, w2, weighted: bool = True) -> torch.Tensor:  # noqa: ANN001
    x, w1, w2 = x.double(), w1.double(), w2.double()
    out = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        weights, experts = torch.topk(torch.softmax(x[t].float() @ router + bias[t], dim=-1), TOP_K)
        weights = weights / weights.sum() if weighted else torch.ones(TOP_K)
        for weight, e in zip(weights.tolist(), experts.tolist(), strict=True):
            gate, up = x[t] @ w1[e, :, :INTER], x[t] @ w1[e, :, INTER:]
            out[t] += weight * ((torch.nn.functional.silu(gate) * up) @ w2[e])
    return out


def test_the_composed_layer_and_the_reference_are_the_layer(script: ModuleType) -> None:
    x, router, bias, w1, w2 = _inputs()
    want = _by_token(x, router, bias, w1, w2)
    scale = float(want.abs().max())
    ref = script.reference(x, router, bias, w1, w2, TOP_K)
    assert float((ref.double() - want).abs().max()) / scale < 1e-4  # f32 throughout
    got = script.composed(x, router, bias, w1, w2, TOP_K)
    assert got.dtype == torch.bfloat16
    assert float((got.double() - want).abs().max()) / scale < 2e-2  # bf16 products and output
    unweighted = _by_token(x, router, bias, w1, w2, weighted=False)
    assert float((got.double() - unweighted).abs().max()) / scale > 2e-2  # the check sees missing weights
