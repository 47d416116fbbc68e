"""The attention lineage (`argus.kernels.attention_lineage`, lineage ``"attention"``): forward attention rungs, each
adding one mechanism, every one matching a float64 definition and torch's `scaled_dot_product_attention` on the
interpreter at odd shapes (sequences that fill no tile, two batch-heads, bf16 and f16, head dims 64 and 128),
verified with no finding but performance warnings, compiled for sm_90a with its mechanism in the SASS and no spills."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from argus.interp import run_kernel
from argus.kernels import attention_lineage
from argus.kernels.registry import check_on_interpreter, get_kernel, lineage, lineages, torch_check
from argus.lineage import library_variant, state
from argus.lineage.operators import features_of

RUNGS = ("attention_naive", "attention_smem_tiled")

#: (label, BH, S, D, dtype): S a multiple of no tile (nor of 4, the naive rung's key tile)
CASES = [
    ("S=37 D=64 bf16", 2, 37, 64, "bf16"),
    ("S=101 D=64 f16", 2, 101, 64, "f16"),
    ("S=70 D=128 bf16", 1, 70, 128, "bf16"),
]


def _run(name: str, bh: int, s: int, d: int, dtype: str) -> tuple[float, float]:
    """(largest error against the float64 definition, against torch's SDPA in float64), relative to O's scale."""
    gen = torch.Generator().manual_seed(11)
    low = torch.bfloat16 if dtype == "bf16" else torch.float16
    q, k, v = (torch.randn(bh, s, d, generator=gen).to(low).double() for _ in range(3))
    definition = torch.softmax(q @ k.transpose(1, 2) / d**0.5, dim=-1) @ v
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    o = np.full((bh, s, d), np.nan, np.float32)  # every element must be written
    kernel = getattr(attention_lineage, name).trace(D=d, IN=dtype)
    run_kernel(kernel, {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "O": o})
    scale = max(1.0, float(definition.abs().max()))
    return (
        float(np.abs(o - definition.numpy()).max()) / scale,
        float(np.abs(o - sdpa.numpy()).max()) / scale,
    )


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("name", RUNGS)
def test_each_rung_matches_the_definition_and_torch_on_the_interpreter(name: str, case: tuple) -> None:
    to_definition, to_sdpa = _run(name, *case[1:])
    assert to_definition <= 1e-5 and to_sdpa <= 1e-5, (to_definition, to_sdpa)


@pytest.mark.parametrize("name", RUNGS)
def test_each_registered_rung_passes_the_registry_s_checks(name: str) -> None:
    entry = get_kernel(name)
    assert entry.workload.problem.name == "attention"
    assert check_on_interpreter(entry, entry.partial_shape) <= entry.tolerance
    ref_gap, kernel_gap = torch_check(entry, entry.partial_shape)
    assert ref_gap <= 1e-6 and kernel_gap <= entry.tolerance


def test_the_lineage_lists_the_rungs_in_order_with_their_mechanisms() -> None:
    assert lineages()[-1] == "attention"
    steps = lineage("attention")
    assert [(s.kernel, s.mechanism) for s in steps] == [
        ("attention_naive", "naive_fma"),
        ("attention_smem_tiled", "smem_tiling"),
    ]
    assert [s.mechanism for s in steps] == [s.mechanism for s in lineage("gemm")[: len(steps)]]
    naive, tiled = (state(features_of(library_variant(r))) for r in RUNGS)
    assert all(level == 0 for level in naive.values()), naive
    assert {m: v for m, v in tiled.items() if v} == {"smem_tiling": 1}


@pytest.mark.parametrize("name", RUNGS)
def test_each_rung_is_verified_and_compiles_without_spills(name: str) -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify

    entry = get_kernel(name)
    result = verify(entry)
    assert result.verdict.value == "verified", [e.code for e in result.errors] + [u.code for u in result.unknowns]
    assert {f.code for f in result.findings} <= {"PERF_UNCOALESCED", "PERF_BANK_CONFLICT"}
    compiled = compile_kernel(entry.kernel.trace(**entry.params))
    mix = compiled.instruction_mix()
    assert mix.get("FFMA", 0) > 0 and mix.get("MUFU", 0) > 0 and mix.get("HMMA", 0) == 0
    assert (mix.get("LDS", 0) > 0 and mix.get("STS", 0) > 0) == (name == "attention_smem_tiled")
    resources = compiled.resources
    assert resources.spill_stores == 0 and resources.spill_loads == 0, resources


def test_a_head_dim_the_blocks_do_not_divide_is_refused() -> None:
    from argus.lang.errors import DSLError

    with pytest.raises(DSLError, match="D \\(the head dim\\) must be a positive multiple of 8"):
        attention_lineage.attention_naive.trace(D=60)
    with pytest.raises(DSLError, match="positive multiple of 8, not 12"):
        attention_lineage.attention_smem_tiled.trace(D=12)
