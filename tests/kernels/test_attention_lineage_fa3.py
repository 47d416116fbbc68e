"""The attention lineage's rungs 8-10 (`argus.kernels.attention_lineage.attention_p_registers` and its two switches):
FlashAttention-3's mechanisms on top of the warp-specialized rung, one a rung — P kept in registers as the register-A
``wgmma``'s operand, ping-pong turns between the consumer warpgroups, the intra-warpgroup overlap of P V with the next
softmax. Each computes the float64 definition within P's rounding bound on the interpreter (sequences that fill no
tile, D = 64 and 128, bf16 and f16), passes the registry's checks, verifies with no finding and compiles to what its
mechanism is in SASS (a register-A ``HGMMA``, the turns' named-barrier arrivals, a ``wgmma`` group left in flight);
each step down is one mechanism by the lineage's check, the last one onto rung 7 itself."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from argus.interp import run_kernel
from argus.kernels import attention_lineage
from argus.kernels.registry import check_on_interpreter, get_kernel, lineage, torch_check
from argus.lineage import check, library_variant, state
from argus.lineage.operators import features_of, get_operator

#: rungs 8, 9, 10 and their parameters on `attention_p_registers`
FA3_RUNGS = {
    "attention_p_registers": {},
    "attention_pingpong": {"PINGPONG": True},
    "attention_overlap": {"PINGPONG": True, "OVERLAP": True},
}

#: (label, BH, S, D, dtype): S a multiple of no tile; S = 300 runs three key tiles through two stages
CASES = [
    ("S=37 D=64 bf16", 2, 37, 64, "bf16"),
    ("S=300 D=64 f16", 1, 300, 64, "f16"),
    ("S=70 D=128 bf16", 1, 70, 128, "bf16"),
]

#: The unit roundoff of the input dtypes: P's rounding error bound
UNIT_ROUNDOFF = {"bf16": 2.0**-8, "f16": 2.0**-11}


def _inputs(bh: int, s: int, d: int, dtype: str) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(5)
    low = torch.bfloat16 if dtype == "bf16" else torch.float16
    return tuple(torch.randn(bh, s, d, generator=gen).to(low).double() for _ in range(3))


def _output(params: dict, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> np.ndarray:
    o = np.full(tuple(q.shape), np.nan, np.float32)  # every element must be written
    kernel = attention_lineage.attention_p_registers.trace(**params)
    run_kernel(kernel, {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "O": o})
    return o


def _rounded_p_excess(o: np.ndarray, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dtype: str) -> np.ndarray:
    """Each element's distance from the float64 definition in units of the bound rounding P to `dtype` allows."""
    probabilities = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)
    bound = UNIT_ROUNDOFF[dtype] * (probabilities @ v.abs()) + 1e-5
    return np.abs(o - (probabilities @ v).numpy()) / bound.numpy()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_three_rungs_compute_the_definition_within_p_s_rounding(case: tuple) -> None:
    """Each rung within P's rounding bound of the float64 definition; the turns change when MMAs are issued, not
    what they compute (ping-pong's output is rung 8's bit for bit); the overlap adds the same products in the same
    order per tile (rescale, then P V), so its output is within f32 rounding of rung 8's."""
    _, bh, s, d, dtype = case
    q, k, v = _inputs(bh, s, d, dtype)
    out = {name: _output({"D": d, "IN": dtype, **params}, q, k, v) for name, params in FA3_RUNGS.items()}
    for name, o in out.items():
        assert not np.isnan(o).any(), name
        assert _rounded_p_excess(o, q, k, v, dtype).max() <= 1.0, name
    np.testing.assert_array_equal(out["attention_pingpong"], out["attention_p_registers"])
    base = out["attention_p_registers"]
    assert np.abs(out["attention_overlap"] - base).max() <= 1e-5 * max(1.0, float(np.abs(base).max()))


@pytest.mark.parametrize("name", list(FA3_RUNGS))
def test_each_rung_passes_the_registry_s_checks(name: str) -> None:
    entry = get_kernel(name)
    assert entry.workload.problem.name == "attention" and entry.params == FA3_RUNGS[name]
    assert check_on_interpreter(entry, entry.partial_shape) <= entry.tolerance
    ref_gap, kernel_gap = torch_check(entry, entry.partial_shape)
    assert ref_gap <= 1e-6 and kernel_gap <= entry.tolerance


def test_the_lineage_adds_one_mechanism_a_rung_above_the_warp_roles() -> None:
    steps = lineage("attention")
    assert [(s.kernel, s.mechanism) for s in steps[-4:]] == [
        ("attention_warp_specialized", "warp_specialization"),
        ("attention_p_registers", "register_operand"),
        ("attention_pingpong", "pingpong"),
        ("attention_overlap", "intra_overlap"),
    ]
    roles, regs, turns, overlap = (state(features_of(library_variant(s.kernel))) for s in steps[-4:])
    present = lambda s: {m: v for m, v in s.items() if v}  # noqa: E731
    assert present(regs) == {**present(roles), "register_operand": 1}
    assert present(turns) == {**present(regs), "pingpong": 1}
    assert present(overlap) == {**present(turns), "intra_overlap": 1}


def test_the_walk_steps_down_one_mechanism_at_a_time_onto_the_warp_specialized_rung() -> None:
    """OVERLAP off, PINGPONG off (parameter operators on the same kernel), then P through shared memory: rung 7 with
    rung 8's tile shape and stages carried over. Each edge passes the mechanism check on the IR and in the generated
    code; two steps at once are refused."""
    top = library_variant("attention_overlap")
    ((in_order, note),) = get_operator("overlap-to-in-order").candidates(top)
    assert "OVERLAP=True->False" in note and in_order.params == {"PINGPONG": True, "OVERLAP": False}
    verdict = check(top, in_order, "intra_overlap", 1)
    assert verdict.ok and verdict.code["checked"], (verdict.reason, verdict.code)
    ((free, _),) = get_operator("free-running-consumers").candidates(in_order)
    assert check(in_order, free, "pingpong", 1).ok
    ((shared, note), *_) = get_operator("p-through-shared").candidates(free)
    assert shared.library == "attention_warp_specialized" and shared.params["BM"] == 128 and "carried" in note
    verdict = check(free, shared, "register_operand", 1)
    assert verdict.ok, verdict.reason
    assert not check(top, free, "intra_overlap", 1, code=False).ok  # two switches at once
    assert not check(top, shared, "register_operand", 1, code=False).ok  # three mechanisms at once
    # P V's register operand is what the overlap keeps: the vocabulary removes the overlap first
    from argus.lineage.mechanisms import blockers

    assert blockers(state(features_of(top)), "register_operand", 0) == ["intra_overlap (overlapped)"]


@pytest.mark.parametrize(
    ("name", "d"), [(n, 64) for n in FA3_RUNGS] + [("attention_overlap", 128)], ids=[*FA3_RUNGS, "overlap D=128"]
)
def test_each_rung_verifies_and_compiles_to_its_mechanism(name: str, d: int) -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify

    kernel = attention_lineage.attention_p_registers.trace(D=d, **FA3_RUNGS[name])
    result = verify(kernel)
    assert result.verdict.value == "verified" and not result.findings, [f.message for f in result.findings]
    assert any(c.check == "tag assertion" for c in result.checks)
    assert all(c.verdict.value == "verified" for c in result.checks if c.check == "tag assertion")
    compiled = compile_kernel(kernel)
    mix, sass = compiled.instruction_mix(), compiled.module.sass
    assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0 and mix.get("USETMAXREG", 0) == 2, mix
    # P V reads P from registers (``HGMMA ... R<acc>, R<P>, gdesc[...]``) and P is never stored to shared memory
    assert re.search(r"HGMMA\.64x\d+x16\.F32\.BF16 R\d+, R\d+, gdesc", sass), "no register-A HGMMA"
    assert mix.get("STS", 0) == 0, mix
    # the turns pass by named-barrier arrivals; the overlap leaves a wgmma group in flight across the softmax
    assert ("BAR.ARV" in sass) == FA3_RUNGS[name].get("PINGPONG", False)
    assert ("WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass) == FA3_RUNGS[name].get("OVERLAP", False)
    resources = compiled.resources
    assert resources.spill_stores == 0 and resources.spill_loads == 0, resources


def test_the_rungs_refuse_what_they_cannot_take() -> None:
    from argus.lang.errors import DSLError

    with pytest.raises(DSLError, match="CONSUMERS must be 2"):  # one consumer warpgroup has no one to take turns with
        attention_lineage.attention_p_registers.trace(BM=64, PINGPONG=True)
    with pytest.raises(DSLError, match="a positive multiple of 8 up to 256"):
        attention_lineage.attention_p_registers.trace(D=36)


def test_the_three_rungs_match_torch_on_the_gpu() -> None:
    """Each rung on the GPU against SDPA's math backend in f32, within P's rounding (bf16: 2^-8 of |V|'s scale), at
    sequences that fill no tile and at D = 64 and 128 (each of the three kernels compiled for the device)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    g = torch.Generator(device="cuda").manual_seed(3)
    for bh, s, d in [(3, 1000, 64), (2, 777, 128), (1, 4096, 128)]:
        q, k, v = (torch.randn(bh, s, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
        with sdpa_kernel(SDPBackend.MATH):
            ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
        for name, params in FA3_RUNGS.items():
            module = load(compile_kernel(attention_lineage.attention_p_registers.trace(D=d, **params)))
            o = torch.full((bh, s, d), float("nan"), device="cuda")
            module.prepare(q, k, v, o).launch()
            torch.cuda.synchronize()
            assert not o.isnan().any(), (name, bh, s, d)
            err = float((o - ref).abs().max())
            assert err <= UNIT_ROUNDOFF["bf16"] * float(v.float().abs().max()) + 1e-4, (name, bh, s, d, err)
