"""The MoE layer (`argus.kernels.moe.moe_layer`): the up-projection with SwiGLU in its epilogue
(`grouped_gemm_swiglu`) on the interpreter, verified, seeded with a wrong column panel and compiled; the routing and
the combine; the whole layer composed on the CPU (routing and combine in PyTorch, both grouped GEMMs on the
interpreter) against a per-token reference; its refusals; and, on a GPU, the layer against the same reference."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.interp.machine import interpret
from argus.ir.types import bf16, round_to
from argus.kernels import grouped, moe
from argus.kernels.grouped import grouped_gemm_persistent, grouped_gemm_swiglu, search_steps
from argus.kernels.moe import tile_counts
from argus.verify import verify
from argus.verify.report import Verdict

torch = pytest.importorskip("torch")


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _swiglu(a: np.ndarray, w: np.ndarray, offs: list[int], scale: np.ndarray, **params: int) -> np.ndarray:
    """The kernel on the interpreter; rows past offs[E-1] keep their poison."""
    experts, n = len(offs), w.shape[2] // 2
    ends = np.asarray(offs, dtype=np.int64)
    c = np.full((a.shape[0], n), 12345.0)
    cfg = {"BM": 128, "BN": 128, "BK": 64, "STAGES": 3, "BLOCKS": 3, "SEARCH": search_steps(experts)} | params
    interpret(grouped_gemm_swiglu, a, w, ends, tile_counts(ends, cfg["BM"]), scale, c, **cfg)
    return c


@pytest.mark.parametrize(
    ("offs", "rows", "n", "bn", "decode"),
    [
        ([0, 70, 70, 250, 290], 300, 128, 128, False),  # empty experts, groups straddling row tiles, rows past the end
        ([40, 40, 200], 200, 72, 64, False),  # I not a multiple of the tile: the up columns start inside a panel
        ([1, 1, 3, 9, 9, 12], 14, 128, 64, True),  # decode: `moe.DECODE_CONFIGS`' 64-row tiles, one consumer
    ],
)
def test_swiglu_rows_are_silu_gate_times_up_of_their_expert(
    offs: list[int], rows: int, n: int, bn: int, decode: bool
) -> None:
    rng = np.random.default_rng(rows + n)
    k = 128
    a = round_to(bf16, rng.standard_normal((rows, k)))
    w = round_to(bf16, rng.standard_normal((len(offs), k, 2 * n)) * k**-0.5)
    scale = rng.uniform(0.0, 1.0, rows)  # each row's router weight
    chosen = moe.choose(rows, n, k, len(offs), "swiglu")
    params = {name: value for name, value in chosen.items() if name != "SEARCH"} if decode else {}
    c = _swiglu(a, w, offs, scale, **(params | {"BN": bn}))
    ref = np.zeros((rows, n))
    start = 0
    for g, end in enumerate(offs):
        h = a[start:end] @ w[g]
        ref[start:end] = scale[start:end, None] * _silu(h[:, :n]) * h[:, n:]
        start = end
    last = offs[-1]
    assert np.abs(c[:last] - ref[:last]).max() / np.abs(ref[:last]).max() < 1e-2  # bf16 output
    assert np.all(c[last:] == 12345.0)


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh"])
def test_geglu_rows_are_gelu_gate_times_up_of_their_expert(act: str) -> None:
    """ACT "gelu" / "gelu_tanh": GeGLU, ``gelu(gate) * up`` (exact and tanh-approximated GELU, as torch's)."""
    offs, rows, n = [0, 70, 70, 250, 290], 300, 128
    rng = np.random.default_rng(5)
    a = round_to(bf16, rng.standard_normal((rows, 128)))
    w = round_to(bf16, rng.standard_normal((len(offs), 128, 2 * n)) * 128**-0.5)
    scale = rng.uniform(0.0, 1.0, rows)
    c = _swiglu(a, w, offs, scale, ACT=act)
    ref, start = np.zeros((rows, n)), 0
    for g, end in enumerate(offs):
        h = torch.from_numpy(a[start:end] @ w[g])
        gate = torch.nn.functional.gelu(h[:, :n], approximate="tanh" if act == "gelu_tanh" else "none")
        ref[start:end] = scale[start:end, None] * (gate * h[:, n:]).numpy()
        start = end
    assert np.abs(c[:290] - ref[:290]).max() / np.abs(ref[:290]).max() < 1e-2  # bf16 output
    silu = _swiglu(a, w, offs, scale)  # another activation: another result
    assert np.abs(silu[:290] - ref[:290]).max() / np.abs(ref[:290]).max() > 5e-2
    assert np.all(c[290:] == 12345.0)


def test_the_gated_kernel_refuses_an_unknown_activation() -> None:
    from argus.lang.errors import DSLError

    with pytest.raises(DSLError, match="ACT='relu'"):
        grouped_gemm_swiglu.trace(ACT="relu")


def test_the_swiglu_kernel_verifies() -> None:
    report = verify(grouped_gemm_swiglu.trace())  # the library configuration: 132 blocks, 4 stages, deferred release
    assert not report.findings, [f.message for f in report.findings]
    proved = {(c.check, c.target) for c in report.checks if c.verdict == Verdict.VERIFIED}
    # the three stage invariants: A's rows, the gate's columns and the up columns (N further on) of expert g
    assert sum(1 for check, _ in proved if check == "tag assertion") == 3
    # every K-block of A and of B's gate and up columns enters each accumulator once (the up columns' panels, N
    # further on, were "not checked" until the over-approximation bounded its origins: a free value wrapped around)
    assert sum(1 for check, _ in proved if check == "contraction accumulated once") == 4
    assert {c for c, _ in proved} >= {"race", "mbarrier arrive count", "wgmma operand layout", "TMA box layout"}


def test_up_columns_one_panel_off_are_caught() -> None:
    """Seeded bug: the up projection's boxes loaded one 64-column panel too far (an off-by-one panel offset)."""
    import argus.lang as T

    original = grouped.load_columns
    calls = []

    def shifted(tensor, stage, g, k, col0, bn, bk, bar):  # noqa: ANN001, ANN202
        calls.append(None)
        up = len(calls) % 2 == 0  # the producer loads the gate's boxes, then the up boxes
        return original(tensor, stage, g, k, col0 + 64 if up else col0, bn, bk, bar)

    grouped.load_columns = T.macro(shifted)
    grouped_gemm_swiglu._cache.clear()  # traces are cached by parameters: trace the seeded kernel afresh
    try:
        report = verify(grouped_gemm_swiglu.trace(BLOCKS=3, STAGES=3, SEARCH=3))
    finally:
        grouped.load_columns = original
        grouped_gemm_swiglu._cache.clear()
    bad = [f for f in report.findings if f.code == "TAG_ASSERT" and f.verdict == Verdict.VIOLATED]
    assert bad and all(f.loc.line == bad[0].loc.line for f in bad)  # the up stage's invariant only


def test_swiglu_full_tiles_through_tma_stores_equal_the_direct_store_and_verify() -> None:
    """EPILOGUE "tma": a tile whose rows all belong to its expert stored through TMA stores, the expert's partial tile
    through the bounded window; the same values as the direct store everywhere, rows no expert owns untouched; compiled
    to UTMASTG without spills; every tile written once (proved)."""
    rng = np.random.default_rng(11)
    offs, rows, n = [0, 70, 70, 256, 290, 420], 430, 128
    a = round_to(bf16, rng.standard_normal((rows, 128)))
    w = round_to(bf16, rng.standard_normal((len(offs), 128, 2 * n)) * 128**-0.5)
    scale = rng.uniform(0.0, 1.0, rows)
    direct, tma = _swiglu(a, w, offs, scale), _swiglu(a, w, offs, scale, EPILOGUE="tma")
    np.testing.assert_array_equal(tma, direct)
    assert np.all(tma[420:] == 12345.0)
    compiled = compile_kernel(grouped_gemm_swiglu.trace(EPILOGUE="tma"))
    assert compiled.instruction_mix().get("UTMASTG", 0) >= 1 and compiled.resources.spill_stores == 0
    report = verify(grouped_gemm_swiglu.trace(EPILOGUE="tma", BLOCKS=3, STAGES=3, SEARCH=3), checks=("coverage",))
    once = [c for c in report.checks if c.check == "output written once"]
    assert once and all(c.verdict == Verdict.VERIFIED for c in once)


def test_the_swiglu_kernel_compiles_with_two_accumulators_and_no_block_barrier() -> None:
    compiled = compile_kernel(grouped_gemm_swiglu.trace())
    source = compiled.generated.source
    assert source.count("wgmma.mma_async") >= 2 and "expf" in source and "min(R, row_end" in source
    # the deferred-release pass took the two-MMA loop: both statements wait_group 2, no consumer barrier
    assert source.count("wgmma_wait<2>") == 2 and "bar.sync %0" not in source
    mix = compiled.instruction_mix()
    assert mix.get("HGMMA", 0) >= 2 and mix.get("UTMALDG", 0) >= 2


def _layer_inputs(tokens: int, hidden: int, inter: int, experts: int, seed: int = 0):  # noqa: ANN202
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g).to(torch.bfloat16)
    router = torch.randn(hidden, experts, generator=g) * hidden**-0.5
    w1 = (torch.randn(experts, hidden, 2 * inter, generator=g) * hidden**-0.5).to(torch.bfloat16)
    w2 = (torch.randn(experts, inter, hidden, generator=g) * inter**-0.5).to(torch.bfloat16)
    return x, router, w1, w2


def test_the_task_reference_rounds_once_in_bf16() -> None:
    """The grouped_swiglu task's reference on bf16 tensors is its f32 computation rounded once (in bf16 throughout
    it missed the gate's tolerance on a few elements per million at the bench sizes, and the gate then judged
    candidates against it instead of float64: `argus.eval.correctness.reference_choice`)."""
    from argus.kernels.workloads import grouped_swiglu_product

    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 32, generator=g).to(torch.bfloat16)
    b = (torch.randn(3, 32, 16, generator=g) * 32**-0.5).to(torch.bfloat16)
    offs, scale = torch.tensor([10, 10, 64], dtype=torch.int32), torch.rand(64, generator=g)
    got = grouped_swiglu_product(a, b, offs, None, scale)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, grouped_swiglu_product(a.float(), b.float(), offs, None, scale).to(torch.bfloat16))
    want = grouped_swiglu_product(a.double(), b.double(), offs, None, scale.double())
    assert float((got.double() - want).abs().max()) <= float(want.abs().max()) * 2**-8


def test_routing_sorts_rows_by_expert_and_keeps_each_token_s_weights() -> None:
    x, router, _, _ = _layer_inputs(50, 16, 8, 6)
    bias = torch.zeros(50, 6)
    bias[:, 5] = -1e9  # expert 5 receives no token
    r = moe.route(x, router, 2, bias=bias)
    counts = torch.diff(r.offs.long(), prepend=torch.zeros(1, dtype=torch.long))
    assert r.offs.dtype == torch.int32 and int(r.offs[-1]) == 100 and int(counts[5]) == 0
    expert = torch.repeat_interleave(torch.arange(6), counts)  # the expert owning each routed row
    probs = torch.softmax(x.float() @ router + bias, -1)
    weights, chosen = probs.topk(2, -1)
    assert torch.equal(chosen.reshape(-1)[r.order], expert)
    assert torch.equal(r.token, r.order // 2)
    assert torch.allclose(r.weight, (weights / weights.sum(-1, keepdim=True)).reshape(-1)[r.order])
    assert torch.equal(torch.sort(r.order).values, torch.arange(100))  # every (token, choice) routed once
    assert r.positions().dtype == torch.int32 and torch.equal(r.order[r.positions().long()], torch.arange(100))


@pytest.mark.parametrize(("tokens", "hidden", "top_k"), [(7, 264, 2), (5, 1096, 8), (3, 40, 1)])
def test_the_combine_kernel_adds_each_token_s_routed_rows_once(tokens: int, hidden: int, top_k: int) -> None:
    """`moe_combine` on the interpreter: row widths inside one block, over two blocks (a partial one) and narrower
    than a block's 32 threads' vectors; against the sums over each token's choices in float64."""
    experts = 10
    x, router, _, _ = _layer_inputs(tokens, 16, 8, experts, seed=hidden)
    r = moe.route(x, router, top_k)
    rng = np.random.default_rng(tokens)
    y = round_to(bf16, rng.standard_normal((tokens * top_k, hidden)))
    got = moe.combine_on_interpreter(y, r.positions().numpy(), tokens, top_k)
    flat = np.empty_like(y)
    flat[r.order.numpy()] = y  # row r is (token, choice) order[r]
    want = flat.reshape(tokens, top_k, hidden).sum(axis=1)
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2**-8 * np.abs(want) + 1e-6)  # the f32 sum rounded once to bf16


@pytest.mark.parametrize("splits", [2, 3])
def test_the_combine_kernel_adds_each_token_s_split_k_slices(splits: int) -> None:
    """`moe_combine` with SPLITS: Y is the down-projection's f32 slices (S, R, H) and each token's output is the
    sum of its k rows' slices; against the float64 sum over the choices and the slices, rounded once to bf16; it
    verifies (a tag assertion per (choice, slice)) and compiles."""
    from argus.kernels.moe_combine import moe_combine

    tokens, hidden, top_k = 5, 264, 2
    x, router, _, _ = _layer_inputs(tokens, 16, 8, 6, seed=splits)
    r = moe.route(x, router, top_k)
    y = np.random.default_rng(splits).standard_normal((splits, tokens * top_k, hidden)).astype(np.float32)
    got = moe.combine_on_interpreter(y, r.positions().numpy(), tokens, top_k)
    flat = np.empty_like(y[0], dtype=np.float64)
    flat[r.order.numpy()] = y.astype(np.float64).sum(axis=0)
    want = flat.reshape(tokens, top_k, hidden).sum(axis=1)
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2**-8 * np.abs(want) + 1e-5)
    params = dict(moe.combine_params(4096, top_k, "f32", splits, "bf16"))
    result = verify(moe_combine.trace(**params))
    assert not result.findings, [f.message for f in result.findings]
    tags = [c for c in result.checks if c.check == "tag assertion"]
    assert len(tags) == top_k * splits and all(c.verdict == Verdict.VERIFIED for c in tags)
    assert compile_kernel(moe_combine.trace(**params)).resources.spill_stores == 0
    # the PyTorch combine of the same slices (CPU tensors): the same sums
    torch_sum = moe.combine(torch.from_numpy(y), r, tokens, top_k, kernel=False, dtype=torch.bfloat16)
    assert torch_sum.dtype == torch.bfloat16
    assert np.all(np.abs(torch_sum.double().numpy() - want) <= 2**-7 * np.abs(want) + 1e-5)


def test_the_combine_kernel_verifies_and_compiles() -> None:
    from argus.kernels.moe_combine import moe_combine

    for top_k in (2, 8):
        result = verify(moe_combine.trace(**dict(moe.combine_params(7168, top_k))))
        assert not result.findings, [f.message for f in result.findings]
        tags = [c for c in result.checks if c.check == "tag assertion"]
        assert len(tags) == top_k and all(c.verdict == Verdict.VERIFIED for c in tags)  # each choice's row
        once = [c for c in result.checks if c.check == "output written once"]
        assert once and all(c.verdict == Verdict.VERIFIED for c in once)
    compiled = compile_kernel(moe_combine.trace(**dict(moe.combine_params(7168, 8))))
    assert compiled.resources.spill_stores == 0
    assert compiled.instruction_mix().get("LDG", 0) >= 8  # a load of each choice's row


@pytest.mark.parametrize(
    ("scoring", "act"), [("softmax", "silu"), ("sigmoid", "gelu")], ids=["softmax SwiGLU", "sigmoid GeGLU"]
)
def test_the_layer_composed_on_the_cpu_matches_the_per_token_reference(scoring: str, act: str) -> None:
    """`moe_layer`'s steps with both grouped GEMMs on the interpreter: routing, gather, the gated up-projection,
    down GEMM, combine; an expert with no token (bias) and uneven groups; softmax routing with SwiGLU (Mixtral,
    Qwen3) and sigmoid routing with GeGLU."""
    tokens, hidden, inter, experts, top_k = 48, 64, 64, 5, 2
    x, router, w1, w2 = _layer_inputs(tokens, hidden, inter, experts, seed=3)
    bias = torch.zeros(tokens, experts)
    bias[:, 2] = -1e9
    r = moe.route(x, router, top_k, bias=bias, scoring=scoring)
    rows = x.index_select(0, r.token).double().numpy()
    offs = r.offs.tolist()
    h = round_to(bf16, _swiglu(rows, w1.double().numpy(), offs, r.weight.double().numpy(), BN=64, ACT=act))
    y = np.full((rows.shape[0], hidden), 12345.0)
    ends = np.asarray(offs, dtype=np.int64)
    params = {"BM": 128, "BN": 64, "BK": 64, "STAGES": 3, "BLOCKS": 3, "SEARCH": search_steps(experts)}
    interpret(grouped_gemm_persistent, h, w2.double().numpy(), ends, tile_counts(ends, 128), y, **params)
    y = round_to(bf16, y)
    out = moe.combine(torch.from_numpy(y).to(torch.bfloat16), r, tokens, top_k)
    want = _reference_layer(x, router, bias, w1, w2, top_k, scoring, act)
    assert float((out.double() - want).abs().max() / want.abs().max()) < 2e-2
    # the combine kernel on the interpreter: the same sums, each rounded once to bf16 (as PyTorch's f32 sums are)
    summed = moe.combine_on_interpreter(y, r.positions().numpy(), tokens, top_k)
    assert np.all(np.abs(summed - out.double().numpy()) <= 2**-7 * np.abs(summed) + 1e-6)
    assert not (r.offs.diff() < 0).any() and int(r.offs[2] - r.offs[1]) == 0  # the biased-out expert has no row


def test_the_layer_with_a_split_down_projection_on_the_cpu_matches_the_reference() -> None:
    """The decode form of `moe_layer`'s down-projection (`decode_splits` > 1): `grouped_gemm_persistent` with
    SPLITS = 2 writes the f32 slices of each routed row's product, and `moe_combine` with SPLITS adds every token's
    rows' slices; both on the interpreter, against the per-token reference."""
    tokens, hidden, inter, experts, top_k = 3, 64, 256, 4, 2
    x, router, w1, w2 = _layer_inputs(tokens, hidden, inter, experts, seed=11)
    bias = torch.zeros(tokens, experts)
    r = moe.route(x, router, top_k)
    rows = x.index_select(0, r.token).double().numpy()
    offs = r.offs.tolist()
    h = round_to(bf16, _swiglu(rows, w1.double().numpy(), offs, r.weight.double().numpy(), BN=64))
    ends = np.asarray(offs, dtype=np.int64)
    slices = np.full((2, rows.shape[0], hidden), np.nan)
    params = {"BM": 64, "BN": 64, "BK": 64, "STAGES": 4, "BLOCKS": 5, "CONSUMERS": 1, "SEARCH": search_steps(experts)}
    interpret(grouped_gemm_persistent, h, w2.double().numpy(), ends, tile_counts(ends, 64), slices, **params,
              SPLITS=2, OUT="f32")  # fmt: skip
    out = moe.combine_on_interpreter(slices, r.positions().numpy(), tokens, top_k)
    want = _reference_layer(x, router, bias, w1, w2, top_k).numpy()
    assert float(np.abs(out - want).max() / np.abs(want).max()) < 2e-2


@pytest.mark.parametrize(("splits", "act"), [(1, "silu"), (3, "silu"), (2, "gelu"), (4, "gelu_tanh")])
def test_the_gated_sum_of_split_slices_is_the_activation_of_their_sums(splits: int, act: str) -> None:
    """`moe_glu_sum`: each routed row's output is its scale times act(the gate slices' sum) times the up slices'
    sum, in f32 rounded once; I not a multiple of the block's columns (the last block's columns masked); against
    float64 with torch's activations."""
    rows, inter = 5, 200
    rng = np.random.default_rng(splits)
    slices = rng.standard_normal((splits, rows, 2 * inter)).astype(np.float32)
    scale = rng.uniform(0.0, 1.0, rows).astype(np.float32)
    got = moe.glu_sum_on_interpreter(slices, scale, act)
    total = torch.from_numpy(slices.astype(np.float64)).sum(0)
    approximate = "tanh" if act == "gelu_tanh" else "none"
    gate = total[:, :inter]
    gate = torch.nn.functional.silu(gate) if act == "silu" else torch.nn.functional.gelu(gate, approximate=approximate)
    want = (torch.from_numpy(scale.astype(np.float64))[:, None] * gate * total[:, inter:]).numpy()
    assert not np.isnan(got).any()
    assert np.all(np.abs(got - want) <= 2**-8 * np.abs(want) + 1e-5)


def test_the_gated_sum_verifies_and_its_seeded_bugs_are_found() -> None:
    """`moe_glu_sum` verifies (a tag per slice and half, the output covered and written once) and compiles without
    spills (its seeded bugs, the gate taken from the up half and one slice read for every split, are in the
    verifier's corpus: `kernels_tag_moe_glu_sum_*`)."""
    from argus.kernels.moe_combine import moe_glu_sum

    params = dict(moe.glu_params(14336, 4))
    result = verify(moe_glu_sum.trace(**params))
    assert not result.findings, [f.message for f in result.findings]
    tags = [c for c in result.checks if c.check == "tag assertion"]
    assert len(tags) == 2 * 4 and all(c.verdict == Verdict.VERIFIED for c in tags)
    proved = {c.check for c in result.checks if c.verdict == Verdict.VERIFIED}
    assert {"output coverage", "output written once"} <= proved
    assert compile_kernel(moe_glu_sum.trace(**params)).resources.spill_stores == 0


def test_the_layer_with_a_split_up_projection_on_the_cpu_matches_the_reference() -> None:
    """The decode form of `moe_layer`'s up-projection (`decode_up_split`): the plain grouped kernel on the (E, H, 2I)
    gate-and-up weight with SPLITS = 2 writes f32 slices, `moe_glu_sum` takes their sums' SwiGLU times each row's
    router weight, then the down-projection and the combine; all on the interpreter, against the per-token
    reference (and equal within rounding to the fused SwiGLU kernel's rows)."""
    tokens, hidden, inter, experts, top_k = 3, 256, 128, 4, 2
    x, router, w1, w2 = _layer_inputs(tokens, hidden, inter, experts, seed=13)
    r = moe.route(x, router, top_k)
    rows = x.index_select(0, r.token).double().numpy()
    ends = np.asarray(r.offs.tolist(), dtype=np.int64)
    params = {"BM": 64, "BN": 64, "BK": 64, "STAGES": 4, "BLOCKS": 5, "CONSUMERS": 1, "SEARCH": search_steps(experts)}
    slices = np.full((2, rows.shape[0], 2 * inter), np.nan)
    interpret(grouped_gemm_persistent, rows, w1.double().numpy(), ends, tile_counts(ends, 64), slices, **params,
              SPLITS=2, OUT="f32")  # fmt: skip
    h = moe.glu_sum_on_interpreter(slices, r.weight.double().numpy())
    fused = round_to(bf16, _swiglu(rows, w1.double().numpy(), r.offs.tolist(), r.weight.double().numpy(), BN=64))
    assert np.all(np.abs(h - fused) <= 2**-7 * np.abs(fused) + 1e-6)
    y = np.full((rows.shape[0], hidden), 12345.0)
    interpret(grouped_gemm_persistent, h, w2.double().numpy(), ends, tile_counts(ends, 64), y, **params)
    out = moe.combine_on_interpreter(round_to(bf16, y), r.positions().numpy(), tokens, top_k)
    want = _reference_layer(x, router, torch.zeros(tokens, experts), w1, w2, top_k).numpy()
    assert float(np.abs(out - want).max() / np.abs(want).max()) < 2e-2


def test_the_gated_sum_refuses_what_it_cannot_take() -> None:
    slices, scale = torch.zeros(2, 3, 64), torch.zeros(3)
    with pytest.raises(moe.GroupedError, match="contiguous f32"):
        moe.prepare_glu_sum(slices.to(torch.bfloat16), scale)
    with pytest.raises(moe.GroupedError, match="contiguous f32"):
        moe.prepare_glu_sum(torch.zeros(3, 64), scale)
    with pytest.raises(moe.GroupedError, match=r"one factor per row \(3,\)"):
        moe.prepare_glu_sum(slices, torch.zeros(4))
    with pytest.raises(moe.GroupedError, match="activation is one of"):
        moe.prepare_glu_sum(slices, scale, "relu")
    with pytest.raises(moe.GroupedError, match="one CUDA device"):
        moe.prepare_glu_sum(slices, scale)


def _reference_layer(x, router, bias, w1, w2, top_k, scoring="softmax", act="silu"):  # noqa: ANN001, ANN202
    """Per token, in float64: the sum over its top-k experts (softmax, or each expert's sigmoid, of the f32 logits
    plus `bias`, renormalized) of weight * (act(x @ gate) * (x @ up)) @ w2[e]."""
    x64, router64, w1_64, w2_64 = (t.double() for t in (x, router, w1, w2))
    inter = w2.shape[1]
    logits = x.float() @ router.float() + bias
    probs = (torch.softmax(logits, dim=-1) if scoring == "softmax" else torch.sigmoid(logits)).double()
    weights, chosen = probs.topk(top_k, dim=-1)
    weights = weights / weights.sum(-1, keepdim=True)
    approximate = "tanh" if act == "gelu_tanh" else "none"
    gate = torch.nn.functional.silu if act == "silu" else lambda h: torch.nn.functional.gelu(h, approximate=approximate)
    out = torch.zeros_like(x64)
    for t in range(x.shape[0]):
        for j in range(top_k):
            e = int(chosen[t, j])
            h = x64[t] @ w1_64[e]
            out[t] += weights[t, j] * ((gate(h[:inter]) * h[inter:]) @ w2_64[e])
    return out


def test_sigmoid_routing_weights_each_choice_by_its_own_sigmoid() -> None:
    """scoring="sigmoid" (DeepSeek-V3): each expert's score is its logit's sigmoid, not a softmax over the experts;
    the chosen k renormalized. Softmax and sigmoid pick the same experts (both increase with the logit) but weigh
    them differently."""
    x, router, _, _ = _layer_inputs(16, 32, 8, 6, seed=9)
    soft, sig = moe.route(x, router, 3), moe.route(x, router, 3, scoring="sigmoid")
    logits = x.float() @ router.float()
    top, chosen = logits.sigmoid().topk(3, dim=-1)
    want = (top / top.sum(-1, keepdim=True)).reshape(-1)[sig.order]
    assert torch.allclose(sig.weight, want) and torch.equal(sig.token, soft.token)
    assert not torch.allclose(sig.weight, soft.weight)
    unnormalized = moe.route(x, router, 3, scoring="sigmoid", renormalize=False)
    assert torch.allclose(unnormalized.weight, top.reshape(-1)[unnormalized.order])
    with pytest.raises(moe.GroupedError, match="scoring is one of softmax, sigmoid"):
        moe.route(x, router, 3, scoring="relu")


@pytest.mark.parametrize(("tokens", "experts", "top_k"), [(1, 8, 2), (37, 16, 4), (64, 128, 8)])
def test_softmax_routing_takes_the_top_logits_and_their_own_softmax(tokens: int, experts: int, top_k: int) -> None:
    """The renormalized top-k of a softmax is the softmax of the k largest logits (`route`'s fast path): the same
    experts, rows and weights as the softmax over every expert, gathered and renormalized; `scaling` multiplies
    them."""
    x, router, _, _ = _layer_inputs(tokens, 32, 8, experts, seed=tokens + experts)
    bias = torch.randn(tokens, experts, generator=torch.Generator().manual_seed(5))
    r = moe.route(x, router, top_k, bias=bias, scaling=1.5)
    scores = (x.float() @ router.float() + bias).softmax(dim=-1)
    top, chosen = scores.topk(top_k, dim=-1)
    flat = chosen.reshape(-1)
    order = torch.argsort(flat, stable=True)
    assert torch.equal(r.order, order) and torch.equal(r.token, order // top_k)
    want = (1.5 * top / top.sum(-1, keepdim=True)).reshape(-1)[order]
    assert torch.allclose(r.weight, want, rtol=1e-6, atol=1e-7)
    counts = torch.bincount(flat, minlength=experts)
    assert torch.equal(r.offs, torch.cumsum(counts, 0).to(torch.int32))


@pytest.mark.parametrize("block_m", [64, 128])
def test_the_routing_s_tile_counts_are_the_grouped_kernels(block_m: int) -> None:
    """`Routing.tiles` (from the routing's counts, two launches) equals `tile_counts` from its offsets (which the
    kernels are verified against), with empty experts and experts of more rows than a tile."""
    x, router, _, _ = _layer_inputs(300, 32, 8, 16, seed=3)
    bias = torch.zeros(300, 16)
    bias[:, 3] = 30.0  # expert 3 takes every token: several tiles
    bias[:, 7] = -30.0  # expert 7 none
    r = moe.route(x, router, 2, bias=bias)
    got = r.tiles(block_m)
    assert got.dtype == torch.int32 and torch.equal(got, moe.tile_counts(r.offs, block_m))
    assert int(r.counts[7]) == 0 and int(r.counts[3]) == 300
    no_counts = moe.Routing(r.token, r.weight, r.offs, r.order)
    assert torch.equal(no_counts.tiles(block_m), got)


def test_deepseek_selection_corrects_the_choice_not_the_weights_and_keeps_to_the_best_groups() -> None:
    """`correction` (E,) moves which experts are chosen, not their weights (the uncorrected sigmoid scores); with
    `groups`, every choice lies in one of the `top_groups` groups whose two best corrected scores sum highest;
    `scaling` multiplies the renormalized weights."""
    tokens, experts, top_k = 32, 16, 4
    x, router, _, _ = _layer_inputs(tokens, 32, 8, experts, seed=21)
    scores = (x.float() @ router.float()).sigmoid()
    correction = torch.zeros(experts)
    correction[5] = 10.0  # expert 5 chosen by every token, weighted by its own score
    r = moe.route(x, router, top_k, scoring="sigmoid", correction=correction, renormalize=False)
    token = r.token.view(-1)
    chosen = torch.zeros(tokens, experts, dtype=torch.bool)
    expert_of_row = torch.bucketize(torch.arange(tokens * top_k), r.offs.long(), right=True)
    chosen[token, expert_of_row] = True
    assert chosen[:, 5].all() and torch.allclose(r.weight, scores[token, expert_of_row])
    plain = moe.route(x, router, top_k, scoring="sigmoid", renormalize=False)
    assert int(plain.offs[5] - plain.offs[4]) < tokens  # without the correction not every token takes it
    # groups: 4 groups of 4 experts, choices within the best 2 groups of each token
    g = moe.route(x, router, top_k, scoring="sigmoid", groups=4, top_groups=2, scaling=2.5)
    expert_of_row = torch.bucketize(torch.arange(tokens * top_k), g.offs.long(), right=True)
    group_score = scores.view(tokens, 4, 4).topk(2, dim=-1).values.sum(-1)
    best = group_score.topk(2, dim=-1).indices
    assert all(int(e) // 4 in best[int(t)].tolist() for t, e in zip(g.token, expert_of_row, strict=True))
    sums = torch.zeros(tokens).index_add_(0, g.token, g.weight)
    assert torch.allclose(sums, torch.full((tokens,), 2.5))  # renormalized, then scaled
    with pytest.raises(moe.GroupedError, match="groups=3 must divide the 16 experts"):
        moe.route(x, router, top_k, groups=3)
    with pytest.raises(moe.GroupedError, match="top_k=4 fit in the chosen groups' 2 experts"):
        moe.route(x, router, top_k, groups=8, top_groups=1)
    with pytest.raises(moe.GroupedError, match=r"correction is one value per expert, \(16,\)"):
        moe.route(x, router, top_k, correction=torch.zeros(3))


def test_the_layer_refuses_what_it_does_not_take() -> None:
    x, router, w1, w2 = _layer_inputs(8, 16, 8, 4)
    with pytest.raises(moe.GroupedError, match=r"w1 must be \(E, H, 2I\)"):
        moe.moe_layer(x, router, w1[:, :, :10], w2, 2)
    with pytest.raises(moe.GroupedError, match="top_k must be between 1"):
        moe.moe_layer(x, router, w1, w2, 5)
    with pytest.raises(moe.GroupedError, match="bias must be"):
        moe.moe_layer(x, router, w1, w2, 2, bias=torch.zeros(8, 3))
    with pytest.raises(moe.GroupedError, match="activation is one of silu, gelu, gelu_tanh"):
        moe.moe_layer(x, router, w1, w2, 2, activation="relu")
    with pytest.raises(moe.GroupedError, match="CUDA"):
        moe.moe_layer(x, router, w1, w2, 2)
    with pytest.raises(moe.GroupedError, match="2I must be even"):
        moe.prepare(
            x, torch.zeros(4, 16, 9, dtype=torch.bfloat16), torch.zeros(4, dtype=torch.int32), epilogue="swiglu"
        )
    with pytest.raises(moe.GroupedError, match="pass epilogue='swiglu'"):
        moe.prepare(x, w1, torch.zeros(4, dtype=torch.int32), scale=torch.ones(8))
    with pytest.raises(moe.GroupedError, match="epilogue is one of"):
        moe.prepare(x, w1, torch.zeros(4, dtype=torch.int32), epilogue="geglu")


def test_dependent_launches_load_the_layer_s_kernels_with_the_griddepcontrol_prologue() -> None:
    """Inside the layer's decode launches (`_launched_as(True)`) the routing, product, gated-sum and combine kernels
    are generated for programmatic dependent launch (each waits for the grid before it first); outside a layer, and
    in a prefill layer's, plain."""
    loads = (
        lambda: moe._loaded_small("combine", moe.combine_params(1024, 2, "bf16", 1, "bf16")),
        lambda: moe._loaded_small("glu_sum", moe.glu_params(256, 2)),
        lambda: moe._loaded_route("topk", moe.route_params("topk", 2, 8)),
        lambda: moe._loaded("plain", tuple(sorted(moe.launch_params(moe.choose(2, 256, 512, 8), 8, "bf16").items()))),
    )
    for on in (True, False):
        with moe._launched_as(on):
            for load in loads:
                kernel = load()
                assert kernel.generated.dependent is on
                assert ("argus::grid_dependency_wait();" in kernel.generated.source) is on
    assert loads[0]().generated.dependent is False  # a library call alone: plain


def test_the_layer_launches_dependents_at_decode_sizes_only(monkeypatch) -> None:
    """Measured on an H100: dependent launches speed a decode step (a chain of short kernels) and slow a prefill
    one, so the layer takes them where `choose` takes the decode tiles (at most DECODE_ROWS_PER_EXPERT routed rows
    an expert on average), and never with `DEPENDENT_LAUNCHES` off."""
    per = moe.DECODE_ROWS_PER_EXPERT
    assert moe.dependent_launches(8, 128) and moe.dependent_launches(2, 8) and moe.dependent_launches(per * 8, 8)
    assert not moe.dependent_launches(per * 8 + 1, 8) and not moe.dependent_launches(4096 * 8, 128)
    assert "CONSUMERS" in moe.choose(per * 8, 4096, 1024, 8) and "CONSUMERS" not in moe.choose(
        per * 8 + 1, 4096, 1024, 8
    )
    monkeypatch.setattr(moe, "DEPENDENT_LAUNCHES", False)
    assert not moe.dependent_launches(1, 8)


@pytest.mark.gpu
def test_the_layer_matches_the_reference_on_the_gpu() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for tokens, hidden, inter, experts, top_k in ((200, 256, 192, 8, 2), (1000, 512, 264, 37, 4)):
        x, router, w1, w2 = (t.cuda() for t in _layer_inputs(tokens, hidden, inter, experts, seed=tokens))
        bias = torch.zeros(tokens, experts, device="cuda")
        bias[:, 1] = -1e9  # an expert with no token
        out = moe.moe_layer(x, router, w1, w2, top_k, bias=bias)
        want = _reference_layer(x.cpu(), router.cpu(), bias.cpu(), w1.cpu(), w2.cpu(), top_k)
        assert out.dtype == torch.bfloat16 and out.shape == (tokens, hidden)
        assert float((out.cpu().double() - want).abs().max() / want.abs().max()) < 2e-2
        # the SwiGLU GEMM alone against torch._grouped_mm and silu * mul, with and without the rows' weights
        r = moe.route(x, router, top_k, bias=bias)
        rows = x.index_select(0, r.token)
        full = torch._grouped_mm(rows, w1, offs=r.offs).float()
        ref = torch.nn.functional.silu(full[:, :inter]) * full[:, inter:]
        h = moe.grouped_swiglu(rows, w1, r.offs).float()
        assert float((h - ref).abs().max() / ref.abs().max()) < 2e-2
        h = moe.grouped_swiglu(rows, w1, r.offs, scale=r.weight).float()
        ref = ref * r.weight[:, None]
        assert float((h - ref).abs().max() / ref.abs().max()) < 2e-2
        # sigmoid routing (DeepSeek-V3) with GeGLU (tanh-approximated GELU)
        out = moe.moe_layer(x, router, w1, w2, top_k, bias=bias, scoring="sigmoid", activation="gelu_tanh")
        want = _reference_layer(x.cpu(), router.cpu(), bias.cpu(), w1.cpu(), w2.cpu(), top_k, "sigmoid", "gelu_tanh")
        assert float((out.cpu().double() - want).abs().max() / want.abs().max()) < 2e-2
        # the combine kernel: the same sums as PyTorch's combine (both in f32, rounded once to bf16)
        y = torch.randn(tokens * top_k, hidden, device="cuda").to(torch.bfloat16)
        fused, composed = (moe.combine(y, r, tokens, top_k, kernel=k).double() for k in (True, False))
        assert bool(((fused - composed).abs() <= 2**-7 * composed.abs() + 1e-6).all())


@pytest.mark.gpu
def test_edge_shapes_of_the_layer_and_the_grouped_calls_on_the_gpu() -> None:
    """One token and one expert; top-k of every expert; I of one 8-column vector; H not a multiple of 64; 300
    experts (nine search steps); no token at all (an empty output, no launch, as torch's); each with the gather fused
    and not; and grouped products of no routed row."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    for tokens, hidden, inter, experts, top_k in ((1, 64, 64, 1, 1), (3, 264, 200, 3, 3), (5, 72, 8, 2, 2),
                                                  (7, 128, 64, 300, 8), (0, 128, 64, 4, 2)):  # fmt: skip
        x, router, w1, w2 = (t.cuda() for t in _layer_inputs(tokens, hidden, inter, experts, seed=experts))
        for fused in (False, True):
            out = moe.moe_layer(x, router, w1, w2, top_k, fused_gather=fused)
            assert out.shape == (tokens, hidden) and out.dtype == torch.bfloat16
            if tokens:
                no_bias = torch.zeros(tokens, experts)
                want = _reference_layer(x.cpu(), router.cpu(), no_bias, w1.cpu(), w2.cpu(), top_k)
                assert float((out.cpu().double() - want).abs().max() / want.abs().max()) < 2e-2
    a, b = torch.zeros(0, 64, dtype=torch.bfloat16, device="cuda"), torch.ones(2, 64, 64, dtype=torch.bfloat16).cuda()
    assert moe.grouped_mm(a, b, torch.zeros(2, dtype=torch.int32, device="cuda")).shape == (0, 64)
    c, launch = moe.prepare(a, torch.ones(2, 64, 128, dtype=torch.bfloat16).cuda(),
                            torch.zeros(2, dtype=torch.int32, device="cuda"), epilogue="swiglu")  # fmt: skip
    launch.launch()
    assert c.shape == (0, 64)
    with pytest.raises(moe.GroupedError, match="token names 3 rows of a, which has none"):
        moe.prepare(a, torch.ones(2, 64, 128, dtype=torch.bfloat16).cuda(), torch.zeros(2, dtype=torch.int32).cuda(),
                    epilogue="swiglu", token=torch.zeros(3, dtype=torch.int32, device="cuda"))  # fmt: skip


@pytest.mark.gpu
def test_a_split_down_projection_at_one_token_on_the_gpu_matches_the_reference(monkeypatch) -> None:
    """Mixtral's layer for one token (2 experts x 32 tiles of the down-projection: `decode_splits` 2; the
    up-projection split too, `decode_up_split`) with the splits and without (`DECODE_SPLITS`, `DECODE_UP_SPLITS`),
    against the per-token reference in float64; and `grouped_mm` with a split
    configuration (the slices summed) against torch._grouped_mm."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    tokens, hidden, inter, experts, top_k = 1, 4096, 14336, 8, 2
    assert moe.decode_splits(moe.choose(2, hidden, inter, experts), 2, hidden, inter, experts) == 2
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(tokens, hidden, device="cuda", generator=gen).to(torch.bfloat16)
    router = torch.randn(hidden, experts, device="cuda", generator=gen) * hidden**-0.5
    w1 = (torch.randn(experts, hidden, 2 * inter, device="cuda", generator=gen) * hidden**-0.5).to(torch.bfloat16)
    w2 = (torch.randn(experts, inter, hidden, device="cuda", generator=gen) * inter**-0.5).to(torch.bfloat16)
    bias = torch.zeros(tokens, experts, device="cuda")
    want = _reference_layer(x, router, bias, w1, w2, top_k)  # float64, on the GPU
    assert moe.decode_up_split(2, inter, hidden, experts) is not None
    for split, up_split in ((True, True), (True, False), (False, False)):
        monkeypatch.setattr(moe, "DECODE_SPLITS", split)
        monkeypatch.setattr(moe, "DECODE_UP_SPLITS", up_split)
        out = moe.moe_layer(x, router, w1, w2, top_k)
        assert out.dtype == torch.bfloat16 and out.shape == (tokens, hidden)
        assert float((out.double() - want).abs().max() / want.abs().max()) < 2e-2, (split, up_split)
    monkeypatch.setattr(moe, "DEPENDENT_LAUNCHES", True)  # every kernel of the layer a programmatic dependent
    for tokens_now in (1, 3):
        xs = x if tokens_now == 1 else torch.randn(tokens_now, hidden, device="cuda", generator=gen).to(torch.bfloat16)
        bias_now = torch.zeros(tokens_now, experts, device="cuda")
        want_now = want if tokens_now == 1 else _reference_layer(xs, router, bias_now, w1, w2, top_k)
        out = moe.moe_layer(xs, router, w1, w2, top_k)
        assert float((out.double() - want_now).abs().max() / want_now.abs().max()) < 2e-2, tokens_now
    monkeypatch.setattr(moe, "DEPENDENT_LAUNCHES", False)
    r = moe.route(x, router, top_k)
    h = torch.randn(tokens * top_k, inter, device="cuda", generator=gen).to(torch.bfloat16)
    config = moe.choose(2, hidden, inter, experts) | {"SPLITS": 2}
    got = moe.grouped_mm(h, w2, r.offs, config=config).float()
    ref = torch._grouped_mm(h, w2, offs=r.offs).float()
    assert float((got - ref).abs().max() / ref.abs().max()) < 1e-2
