"""The attention family against PyTorch: ``aten.scaled_dot_product_attention`` (kept whole by the capture) becomes a
call of argus's attention step, the FlashAttention kernel for bf16/f16 with head dims multiples of 8, else the
composed plan (batched GEMM, streamed row softmax, batched GEMM); every kernel of the plan verified, the call
checked on the CPU interpreter against the group's FX subgraph, and the emitted ModelNew judged by the gate. The
level-1 problems are pinned (`SOLVED`, at small odd sizes); an ``attn_mask`` and dropout are reported not covered
with their reasons."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from argus.frontend import solve

#: Level-1 problems the attention family solves end to end, at small sizes (a length and head dim that are not
#: multiples of the tiles: the softmax's key tail and the GEMMs' padding are exercised).
SOLVED: dict[str, dict[str, Any]] = {
    "97_ScaledDotProductAttention": {"batch_size": 2, "num_heads": 2, "sequence_length": 37, "embedding_dimension": 48},
}


def _solved(path: Path, out: Path, plan: str, sizes: dict[str, Any] | None = None) -> str:
    """Solve `path`, check it is solved by one attention group whose plan is `plan`, return the solution's text."""
    result = solve(path, sizes=sizes, out=out)
    assert result.status() == "solved", (result.uncovered, [k.to_json() for k in result.kernels], result.gate)
    assert [g["family"] for g in result.groups] == ["attention"]
    (report,) = result.kernels
    assert report.verdict == "verified" and report.interpreter_ok, report.to_json()
    assert "kernels of its plan" in report.verify_summary
    assert result.gate.verdict == "accepted"
    text = Path(result.solution).read_text()
    forward = text[text.index("    def forward(") :]
    assert "torch.ops" not in forward and "_launch(attention_0" in forward
    assert "LibraryAttention(" in text and f": {plan} (" in text, text
    return text


def test_the_level1_attention_problems_are_pinned(kernelbench_dir: Path) -> None:
    # every level-1 problem that calls SDPA is in the table: the table cannot silently miss one
    calls = {
        p.stem for p in (kernelbench_dir / "level1").glob("*.py") if "scaled_dot_product_attention" in p.read_text()
    }
    assert calls == set(SOLVED)


@pytest.mark.parametrize("name", sorted(SOLVED))
def test_the_level1_attention_problems_are_solved(kernelbench_dir: Path, tmp_path: Path, name: str) -> None:
    # float32 with head dim 48: the composed plan at f32 accuracy (the GEMMs' split precision)
    _solved(kernelbench_dir / "level1" / f"{name}.py", tmp_path / f"{name}.py", "composed", SOLVED[name])


@pytest.mark.parametrize("d", [64, 80])  # 80: a head dim between the kernel's 64-column panels
def test_bf16_runs_the_flash_attention_kernel(problem: Callable[..., Path], tmp_path: Path, d: int) -> None:
    path = problem(
        "F.scaled_dot_product_attention(q, k, v)",
        inputs=f"[torch.randn(1, 2, 37, {d}, dtype=torch.bfloat16) for _ in range(3)]",
        args="q, k, v",
    )
    text = _solved(path, tmp_path / "s.py", "fused")
    assert "dtype='bf16'" in text


def test_causal_grouped_query_attention_with_equal_lengths_is_fused(
    problem: Callable[..., Path], tmp_path: Path
) -> None:
    # SQ == SK: torch's top-left causal mask is the kernel's bottom-right one; 4 query heads over 2 key/value heads
    path = problem(
        "F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)",
        inputs="[torch.randn(1, 4, 33, 64, dtype=torch.bfloat16), torch.randn(1, 2, 33, 64, dtype=torch.bfloat16), "
        "torch.randn(1, 2, 33, 64, dtype=torch.bfloat16)]",
        args="q, k, v",
    )
    text = _solved(path, tmp_path / "s.py", "fused")
    assert "causal=True" in text and "kv_heads=2" in text


def test_causal_with_unequal_lengths_applies_torchs_top_left_mask(problem: Callable[..., Path], tmp_path: Path) -> None:
    # SQ = 5 < SK = 9 in bf16 with head dim 64: the kernel's bottom-right mask would differ, so the composed plan
    # runs (its softmax masks keys j > i); GQA and an explicit scale on the same call
    path = problem(
        "F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True)",
        inputs="[torch.randn(2, 4, 5, 64, dtype=torch.bfloat16), torch.randn(2, 2, 9, 64, dtype=torch.bfloat16), "
        "torch.randn(2, 2, 9, 64, dtype=torch.bfloat16)]",
        args="q, k, v",
    )
    text = _solved(path, tmp_path / "s.py", "composed")
    assert "causal=True" in text and "scale=0.3" in text


def test_float32_causal_self_attention_of_rank_3(problem: Callable[..., Path], tmp_path: Path) -> None:
    # one tensor as q, k and v: (N, L, E) without a heads axis, causal with SQ == SK on the composed plan (f32)
    path = problem(
        "F.scaled_dot_product_attention(x, x, x, is_causal=True)", inputs="[torch.randn(3, 11, 20)]", args="x"
    )
    text = _solved(path, tmp_path / "s.py", "composed")
    assert "order=(0, 0, 0)" in text


@pytest.mark.parametrize(
    ("body", "inputs", "reason"),
    [
        (
            "F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
            "[torch.randn(1, 2, 5, 16), torch.randn(1, 2, 7, 16), torch.randn(1, 2, 7, 16), torch.randn(5, 7)]",
            "an attn_mask (an explicit boolean mask or additive bias) is not built: only is_causal masks",
        ),
        (
            "F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)",
            "[torch.randn(1, 2, 5, 16), torch.randn(1, 2, 7, 16), torch.randn(1, 2, 7, 16), torch.randn(5, 7)]",
            "dropout_p = 0.1: attention with dropout (random attention weights) is not built",
        ),
    ],
    ids=["attn_mask", "dropout"],
)
def test_masks_and_dropout_are_reported_not_covered(
    problem: Callable[..., Path], tmp_path: Path, body: str, inputs: str, reason: str
) -> None:
    path = problem(body, inputs=inputs, args="q, k, v, m")
    result = solve(path, out=tmp_path / "s.py", judge=False)
    assert not result.groups
    (u,) = result.uncovered
    assert u["op"] == "aten.scaled_dot_product_attention.default" and u["family"] == "attention"
    assert u["reason"] == reason
    assert "# not covered: " in Path(result.solution).read_text()


def test_float32_contractions_beyond_the_batched_gemm_are_refused(problem: Callable[..., Path], tmp_path: Path) -> None:
    # f32 keys longer than the batched GEMM accumulates at f32 accuracy without split-K (P V contracts over SK; two
    # (batch, head) pairs make it batched: one pair would be a plain GEMM, which splits K)
    path = problem(
        "F.scaled_dot_product_attention(q, k, v)",
        inputs="[torch.randn(2, 1, 1, 8), torch.randn(2, 1, 4097, 8), torch.randn(2, 1, 4097, 8)]",
        args="q, k, v",
    )
    result = solve(path, out=tmp_path / "s.py", judge=False)
    (u,) = result.uncovered
    assert u["family"] == "attention" and "O = P V over SK = 4097" in u["reason"] and "split-K" in u["reason"], u
