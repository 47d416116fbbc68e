"""Reducing GEMM epilogues (`argus.kernels.epilogue.Epilogue.reduce`, issue #20): each row of ``f(A @ B, operands)``
reduced (sum, mean, max, min, logsumexp) without C ever being stored: each tile's share reduced in registers and
stored as a partial (`gemm.epilogue_reduce`), the partials combined by `gemm.gemm_reduce_partials`. The kernels match
numpy on the interpreter through exactly the plans a GPU call launches (unsplit, split-K, swap-AB with a split,
padded N, f32 split precision), verify (tag assertions on the partials; padding kept out of every reduction by
index, and a reduction that lets it in is caught; a partial stored in another tile's column is caught), compile
without spills, and bad requests are refused with the reason. On a GPU, `matmul(..., reduce=)` matches torch."""

from __future__ import annotations

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import compile_kernel
from argus.interp import run_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import gemm
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue, EpilogueError, fused_kernels

OPS = ("sum", "mean", "max", "min", "logsumexp")


def _reduced(v: np.ndarray, op: str) -> np.ndarray:
    top = v.max(1)
    return {
        "sum": v.sum(1),
        "mean": v.mean(1),
        "max": top,
        "min": v.min(1),
        "logsumexp": top + np.log(np.exp(v - top[:, None]).sum(1)),
    }[op]


def _sigmoid_bias(op: str) -> Epilogue:
    return Epilogue.of("T.sigmoid(acc * 0.1 + bias) * 3.0 - 1.0", reduce=op, bias="columns")


def _check(shape, dtype, majors, config, op, seed=0) -> float:
    m, n, k = shape
    plan = mm.plan(mm.GemmProblem(m, n, k, dtype, "f32", *majors), config, epilogue=_sigmoid_bias(op))
    assert plan.reducing
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.uniform(-1, 1, (k, n))
    if dtype != "f32":
        a, b = (np.asarray(round_to(bf16, x), np.float64) for x in (a, b))
    bias = rng.standard_normal(n)
    out = plan.run_on_interpreter(a, b, operands={"bias": bias})
    assert out.shape == (m,)
    ref = _reduced(3.0 / (1 + np.exp(-(a @ b * 0.1 + bias))) - 1.0, op)
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))  # NaN (a row never written) fails the caller


@pytest.mark.parametrize("op", OPS)
def test_each_reduction_is_correct_on_the_interpreter(op) -> None:
    # the GEMM's tiles reduce their rows: partial row and column tiles on one consumer warpgroup, N padded past 67
    assert _check((100, 72, 136), "bf16", ("K", "K"), mm.GemmConfig(64, 64, 1, 2), op) < 1e-5
    assert _check((40, 67, 64), "bf16", ("K", "N"), mm.GemmConfig(64, 64, 1, 2), op) < 1e-5


@pytest.mark.parametrize(
    ("shape", "dtype", "majors", "config"),
    [
        # split-K: the reduction kernel applies the epilogue to the summed slices and stores the partials
        ((70, 136, 300), "bf16", ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=3)),
        # swap-AB with a split: the slices are stored transposed, the reduction reads the user's rows
        ((8, 136, 300), "bf16", ("K", "K"), mm.GemmConfig(128, 8, 2, 2, SPLITS=3, SWAP=True)),
        # f32 by split precision, N padded to 48
        ((33, 45, 96), "f32", ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=2)),
        # two consumer warpgroups; the TMA store the configuration names stores nothing here (planned 'direct')
        ((130, 136, 64), "bf16", ("K", "N"), mm.GemmConfig(128, 128, 2, 2, EPILOGUE="tma")),
    ],
)
def test_every_plan_kind_reduces_correctly(shape, dtype, majors, config) -> None:
    assert _check(shape, dtype, majors, config, "logsumexp", seed=1) < (4e-5 if dtype == "f32" else 1e-5)


def test_the_partials_combine_as_the_reduction_says() -> None:
    rng = np.random.default_rng(2)
    p = rng.standard_normal((45, 150)) * 10
    p[3, :] = -np.inf  # a row of -inf: logsumexp -inf (not NaN), max -inf
    for op in OPS:
        out = np.full(45, np.nan)
        run_kernel(gemm.gemm_reduce_partials.trace(OP=op, SCALE=0.25 if op == "mean" else 1.0), {"P": p, "O": out})
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = {"sum": p.sum(1), "mean": p.sum(1) * 0.25, "max": p.max(1), "min": p.min(1)}.get(op)
            if op == "logsumexp":
                top = np.where(np.isfinite(p.max(1)), p.max(1), 0.0)
                ref = top + np.log(np.exp(p - top[:, None]).sum(1))
        finite = np.isfinite(ref)
        assert np.array_equal(np.isfinite(out), finite), op
        assert np.allclose(out[finite], ref[finite], rtol=1e-5, atol=1e-5), op
        if op in ("max", "logsumexp"):
            assert out[3] == -np.inf


def test_the_reducing_kernels_verify_with_their_tag_assertions() -> None:
    from argus.verify import verify  # (here: the GPU machine that runs this module's GPU test has no z3)

    main, reduce, tail = fused_kernels(_sigmoid_bias("logsumexp"))
    assert tail is None  # a split tail is not planned for a reducing epilogue
    kernels = (
        main.trace(BM=64, BN=64, CONSUMERS=1, CONSUMER_REGS=232, STAGES=2),
        main.trace(BM=128, BN=128, CONSUMERS=2, STAGES=2, COLS=67),
        reduce.trace(SPLITS=3, BN=128),
        gemm.gemm_reduce_partials.trace(OP="logsumexp"),
        gemm.gemm_reduce_partials.trace(OP="mean", SCALE=0.5),
    )
    for kernel in kernels:
        result = verify(kernel)
        assert result.verdict.value == "verified" and not result.unknowns, (kernel.name, result)
    asserted = [c for c in verify(kernels[3]).checks if c.check == "tag assertion"]
    assert len(asserted) == 2 and all(c.verdict.value == "verified" for c in asserted)


def _reducing_gemm(A, B, BM: int, BN: int, epilogue) -> None:  # noqa: ANN001, N803
    """The persistent GEMM on one consumer warpgroup, storing no C: `epilogue` stores the partials (a seeded copy's)."""
    gemm.persistent_gemm(
        A, B, None, BM=BM, BN=BN, BK=64, STAGES=2, PRODUCER_REGS=40, CONSUMER_REGS=232, BLOCKS=4, ORDER="grouped",
        GROUP=8, EPILOGUE="direct", A_MAJOR="K", B_MAJOR="K", CONSUMERS=1, SPLITS=1, BATCH=False, epilogue=epilogue,
    )  # fmt: skip


@argus.kernel
def _padding_in_the_sum(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    P: T.Tensor[("M", "NP"), T.f32],
    BM: int = 64,
    BN: int = 64,
):
    """A seeded bug: each tile's row sums take every column of the tile, also those past N (out of the tensor)."""
    T.assume(f"NP == (N + {BN - 1}) // {BN}")

    def epilogue(acc, tile):
        bm, bn, rows, cols = tile
        T.copy(T.reduce_sum(acc, axis=1), P.tile((bm, bn), (rows, None)))  # <- no mask
        return None

    _reducing_gemm(A, B, BM, BN, epilogue)


@argus.kernel
def _partial_in_the_next_column(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    P: T.Tensor[("M", "NP"), T.f32],
    BM: int = 64,
    BN: int = 64,
):
    """A seeded bug: a tile's partials stored into the next column tile's place."""
    T.assume(f"NP == (N + {BN - 1}) // {BN}")

    def epilogue(acc, tile):
        bm, bn, rows, cols = tile
        gemm.epilogue_reduce(acc, (bm, bn + 1, rows, cols), P, "sum", N)  # <- bn + 1
        return None

    _reducing_gemm(A, B, BM, BN, epilogue)


def test_a_reduction_that_lets_the_padding_in_is_caught() -> None:
    from argus.verify import verify

    result = verify(_padding_in_the_sum.trace())
    assert result.verdict.value == "violated"
    assert "OOB_MASKED_REDUCTION" in [f.code for f in result.errors]


def test_a_partial_stored_in_another_tile_s_place_is_caught() -> None:
    from argus.verify import verify

    result = verify(_partial_in_the_next_column.trace())
    assert result.verdict.value == "violated"
    assert "COVERAGE_OUTPUT" in [f.code for f in result.errors], result.errors


def test_the_reducing_kernels_compile_without_spills() -> None:
    main, reduce, _ = fused_kernels(_sigmoid_bias("logsumexp"))
    # the index masks take a tile of registers: at BN <= 128 no spill; at 128 x 256 the consumers spill once per
    # tile, after the main loop, and the wide tile was still measured faster (`mm.REDUCE_WIDE_TILES`)
    assert all(_sigmoid_bias(op).holds_tiles for op in OPS)
    summed = compile_kernel(fused_kernels(_sigmoid_bias("sum"))[0], BM=128, BN=128, STAGES=6)
    big = compile_kernel(main, BM=128, BN=128, STAGES=6)
    small = compile_kernel(main, BM=64, BN=128, STAGES=8, CONSUMERS=1, CONSUMER_REGS=240)
    wide = compile_kernel(main, BM=128, BN=256, STAGES=4)
    for compiled in (summed, big, small, wide):
        mix = compiled.instruction_mix()
        assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0, mix
        if compiled is not wide:
            assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    assert compile_kernel(reduce, SPLITS=4, BN=128).resources.spill_stores == 0
    assert compile_kernel(gemm.gemm_reduce_partials, OP="logsumexp", OUT="bf16").resources.spill_stores == 0


def test_the_planner_keeps_reducing_plans_to_what_is_built() -> None:
    ep = _sigmoid_bias("sum")
    problem = mm.GemmProblem(4096, 4096, 4096)
    chosen = mm.plan(problem, epilogue=ep)
    assert chosen.reducing and chosen.config.TAIL == 1 and chosen.config.EPILOGUE == "direct"
    # every fused tile (the wide ones measured faster despite their spills), or BN <= 128 with the switch off
    assert mm.plan_tiles(ep) == (mm.FUSED_TILES if mm.REDUCE_WIDE_TILES else mm.EPILOGUE_TILES)
    residual = Epilogue.of("acc + r", reduce="sum", r="tile")
    assert mm.plan_tiles(residual) == mm.EPILOGUE_TILES  # a residual tile keeps the narrower tiles
    assert [k.name for k in chosen.kernels()][-1] == "gemm_reduce_partials"
    with pytest.raises(mm.GemmError, match="split tail is not built"):
        mm.plan(problem, mm.GemmConfig(128, 128, 2, 4, TAIL=2), epilogue=ep)
    skinny = mm.plan(mm.GemmProblem(8, 8192, 8192), epilogue=ep)  # decode: swap-AB with a split
    assert skinny.config.SWAP and skinny.config.SPLITS > 1, skinny.config.label
    assert skinny.partials_shape() == (8, 8192 // mm.REDUCE_ROW_BN)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Epilogue.of("acc", reduce="median"), "row reduction is one of"),
        (lambda: Epilogue.of("acc + P", P="columns"), "not a usable identifier"),
    ],
)
def test_a_bad_reduction_is_refused_with_the_reason(build, match) -> None:
    with pytest.raises(EpilogueError, match=match):
        build()


def test_one_reduction_gives_its_own_kernels() -> None:
    plain = Epilogue.of("T.sigmoid(acc * 0.1 + bias) * 3.0 - 1.0", bias="columns")
    assert plain.reducing("sum") == _sigmoid_bias("sum") and plain.reducing("sum").key != plain.key
    assert _sigmoid_bias("sum").key != _sigmoid_bias("max").key
    assert Epilogue.of("acc + u", u="rows").transposed().operands[0].kind == "columns"


@pytest.mark.gpu
def test_matmul_with_a_reduction_matches_torch_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    g = torch.Generator(device="cuda").manual_seed(0)
    shapes = (
        (1024, 8192, 8192, torch.bfloat16),
        (8, 8192, 8192, torch.bfloat16),  # swap-AB, split: the reduction kernel stores the partials
        (1000, 1200, 3000, torch.float32),
        (128, 5, 10, torch.float32),  # N padded to 8
    )
    for m, n, k, dtype in shapes:
        x = torch.rand(m, k, device="cuda", generator=g).to(dtype) / k**0.5
        w = torch.randn(n, k, device="cuda", generator=g).to(dtype)
        bias = torch.randn(n, device="cuda", generator=g)
        y = torch.sigmoid(x.double() @ w.double().T + bias.double())
        for op, dim in (("sum", -1), ("logsumexp", -1), ("max", -1), ("mean", 0), ("min", 0)):
            out = mm.matmul(x, w.T, epilogue="T.sigmoid(acc + bias)", reduce=op, dim=dim, bias=bias, out_dtype=dtype)
            ref = {"sum": y.sum(dim), "mean": y.mean(dim), "logsumexp": y.logsumexp(dim)}.get(op)
            ref = y.amax(dim) if op == "max" else y.amin(dim) if op == "min" else ref
            err = float((out.double() - ref).abs().max() / ref.abs().max())
            assert err < (2e-2 if dtype == torch.bfloat16 else 1e-4), (m, n, k, dtype, op, dim, err)


def test_a_reduction_along_another_dimension_is_refused_with_the_reason() -> None:
    torch = pytest.importorskip("torch")
    a, b = torch.zeros(4, 3, 8), torch.zeros(8, 5)  # a 3-d product (4, 3, 5)
    with pytest.raises(mm.GemmError, match="its columns \\(dim=0\\), not dim=0 of a 3-d product"):
        mm.matmul(a, b, reduce="sum", dim=0)
    with pytest.raises(mm.GemmError, match="not dim=2 of a 2-d product"):
        mm.matmul(a[0], b, reduce="sum", dim=2)
