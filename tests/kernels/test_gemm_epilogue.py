"""Fused GEMM epilogues (`argus.kernels.epilogue`, issue #20): ``C = f(A @ B, vectors, tiles)`` applied by the
persistent Hopper GEMM's store, or by the split-K reduction when the plan splits K. The generated kernels verify
(their operand loads carry tag assertions, and a load of the wrong tile is caught), match numpy on the interpreter
through exactly the plan a GPU call launches (every operand kind, split-K, f32 split precision, padded N), compile
to HGMMA and TMA without spills, and bad epilogues are refused with a reason. On a GPU, `matmul` with an epilogue
matches torch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import bf16, round_to
from argus.kernels import gemm
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue, EpilogueError, EpilogueOperand, fused_kernels
from argus.verify import verify

RELU_BIAS = Epilogue.of("T.maximum(acc + bias, 0.0)", bias="columns")
#: every operand kind, one in bf16, constants and a transcendental: the scale-residual-sigmoid chain of level 2
EVERYTHING = Epilogue(
    (
        "y = acc * 0.5 + bias - shift",
        "z = T.sigmoid(y) * y + res",
        "out = T.minimum(T.maximum(z, -4.0), 4.0)",
    ),
    "out",
    (
        EpilogueOperand("bias", "columns"),
        EpilogueOperand("shift", "rows", "bf16"),
        EpilogueOperand("res", "tile"),
    ),
)


def _everything(c: np.ndarray, ops: dict[str, np.ndarray]) -> np.ndarray:
    y = c * 0.5 + ops["bias"] - ops["shift"][:, None]
    z = y / (1 + np.exp(-y)) + ops["res"]
    return np.clip(z, -4.0, 4.0)


def _operands(ep: Epilogue, m: int, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    shapes = {"columns": (n,), "rows": (m,), "tile": (m, n)}
    found = {}
    for o in ep.operands:
        x = rng.standard_normal(shapes[o.kind])
        found[o.name] = np.asarray(round_to(bf16, x), np.float64) if o.dtype == "bf16" else x
    return found


def _run(plan: mm.GemmPlan, reference, seed: int = 0) -> float:
    p = plan.problem
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p.M, p.K))
    b = rng.uniform(-1, 1, (p.K, p.N))
    if p.dtype != "f32":
        a, b = np.asarray(round_to(bf16, a), np.float64), np.asarray(round_to(bf16, b), np.float64)
    ops = _operands(plan.epilogue, p.M, p.N, rng)
    c = plan.run_on_interpreter(a, b, operands=ops)
    assert c.shape == (p.M, p.N)
    ref = reference(a @ b, ops)
    return float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))  # NaN (an element never written) fails below


@pytest.mark.parametrize(
    ("shape", "dtype", "majors", "config", "epilogue"),
    [
        # the GEMM's direct store applies it: partial tiles on one consumer warpgroup
        ((100, 72, 136), "bf16", ("K", "K"), mm.GemmConfig(64, 64, 1, 2), EVERYTHING),
        # two consumer warpgroups, TMA-store epilogue
        ((130, 136, 64), "bf16", ("K", "N"), mm.GemmConfig(128, 128, 2, 2, EPILOGUE="tma"), EVERYTHING),
        # split-K: the reduction applies it to the sum of the slices
        ((70, 136, 300), "bf16", ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=3), EVERYTHING),
        # the same with the slices stored through TMA (the planner's split store, `SPLIT_TMA_STORE`)
        ((70, 136, 300), "bf16", ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=3, EPILOGUE="tma"), EVERYTHING),
        # N-major B with N % 8 != 0: C, the bias and the residual are padded to N = 72 and sliced back
        ((40, 67, 64), "bf16", ("K", "N"), mm.GemmConfig(64, 64, 1, 2), EVERYTHING),
        # f32 operands by split precision, with split-K
        ((33, 40, 96), "f32", ("K", "K"), mm.GemmConfig(64, 64, 1, 2, SPLITS=2), RELU_BIAS),
    ],
)
def test_the_fused_epilogue_is_correct_on_the_interpreter(shape, dtype, majors, config, epilogue) -> None:
    problem = mm.GemmProblem(*shape, dtype, "f32", *majors)
    plan = mm.plan(problem, config, epilogue=epilogue)
    ref = _everything if epilogue is EVERYTHING else (lambda c, ops: np.maximum(c + ops["bias"], 0.0))
    assert _run(plan, ref) < (4e-5 if dtype == "f32" else 1e-5)


@pytest.mark.parametrize(
    ("shape", "majors", "config"),
    [
        # swap-AB with a split: the kernel writes the workspace transposed, the reduction applies the epilogue to
        # the user's C (bias per column of C, shift per row, the residual as C's own tile)
        ((8, 136, 300), ("K", "K"), mm.GemmConfig(128, 8, 2, 2, SPLITS=3, SWAP=True)),
        ((20, 70, 520), ("K", "N"), mm.GemmConfig(128, 24, 2, 4, SPLITS=2, BK=128, SWAP=True)),
    ],
)
def test_a_split_swap_ab_plan_applies_the_epilogue_in_its_reduction(shape, majors, config) -> None:
    plan = mm.plan(mm.GemmProblem(*shape, "bf16", "f32", *majors), config, epilogue=EVERYTHING)
    assert plan.swap_ab and not plan.fused_main
    assert _run(plan, _everything) < 1e-5


def test_an_unsplit_swap_ab_plan_refuses_an_epilogue_and_the_planner_picks_a_split_one() -> None:
    problem = mm.GemmProblem(8, 8192, 8192)
    with pytest.raises(mm.GemmError, match="unsplit swap-AB"):
        mm.plan(problem, mm.GemmConfig(128, 8, 2, 4, SWAP=True), epilogue=RELU_BIAS)
    chosen = mm.plan(problem, epilogue=RELU_BIAS).config
    assert chosen.SWAP and chosen.SPLITS > 1, chosen.label  # the decode product with a bias keeps swap-AB
    assert mm.plan(problem).config.SWAP  # and without one


@pytest.mark.parametrize(
    ("shape", "majors", "kernel", "splits", "bound"),
    [
        # (the bound: the tensor-core plan's three bf16 products measured 2.3e-6, 4.3e-6, 2.9e-6 and 9.3e-6)
        ((2, 48, 16), ("K", "K"), "rows", 1, 5e-7),  # a GRU cell's recurrent product (x @ W.T + b) at two rows
        ((3, 20, 40), ("K", "N"), "columns", 1, 5e-7),  # B stored (K, N); C's 20 columns
        ((5, 36, 24), ("M", "N"), "columns", 1, 5e-7),  # A stored transposed
        ((8, 40, 24), ("K", "K"), "rows", 1, 5e-7),  # 8 rows of x @ W.T: past the 4 the plan takes without epilogue
        ((1, 6, 9000), ("K", "K"), "rows", None, 4e-6),  # long K: split, the reduction sums the slices, applies it
    ],
)
def test_a_small_f32_product_with_an_epilogue_runs_on_the_gemv_kernels(shape, majors, kernel, splits, bound) -> None:
    # f32 FMAs where the tensor-core plan multiplies three bf16 parts (2^-16 of |A||B| a product): a recurrent
    # cell's gates amplify that past the f32 tolerance (level 3's GRUs at two rows were rejected by the gate)
    plan = mm.plan(mm.GemmProblem(*shape, "f32", "f32", *majors), epilogue=EVERYTHING)
    assert plan.is_gemv and plan.config.REDUCE and plan.config.KERNEL == kernel, plan.config.label
    assert (plan.config.SPLITS == splits) if splits else plan.config.SPLITS > 1, plan.config.label
    assert [k.name for k in plan.kernels()][1].startswith("gemm_split_reduce_fused_")
    assert _run(plan, _everything) < bound


def test_the_gemv_path_takes_an_epilogue_only_where_its_reduction_can_apply_it() -> None:
    f32 = mm.GemmProblem(2, 48, 16, "f32", "f32")
    assert mm.plan(f32, epilogue=RELU_BIAS).is_gemv
    assert mm.plan(mm.GemmProblem(8, 48, 16, "f32", "f32"), epilogue=RELU_BIAS).is_gemv
    assert not mm.plan(mm.GemmProblem(8, 48, 16, "f32", "f32")).is_gemv  # (measured slower without one)
    assert not mm.plan(mm.GemmProblem(9, 48, 16, "f32", "f32"), epilogue=RELU_BIAS).is_gemv
    # 16-bit operands stay on the tensor cores (the GEMV kernels are slower there); a matrix times a vector is the
    # swapped GEMV, whose reduction runs over C's columns; a reducing epilogue's partials come from the GEMM's tiles
    assert not mm.plan(mm.GemmProblem(2, 48, 16, "bf16", "f32"), epilogue=RELU_BIAS).is_gemv
    assert not mm.plan(mm.GemmProblem(300, 1, 64, "f32", "f32"), epilogue=RELU_BIAS).is_gemv
    assert mm.plan(mm.GemmProblem(300, 1, 64, "f32", "f32")).is_gemv  # (without an epilogue it is a GEMV)
    reducing = Epilogue.of("acc + bias", reduce="sum", bias="columns")
    assert not mm.plan(f32, epilogue=reducing).is_gemv
    unreduced = replace(mm.gemv_config(f32), REDUCE=False)
    with pytest.raises(mm.GemmError, match="REDUCE=True"):
        mm.plan(f32, unreduced, epilogue=RELU_BIAS)
    with pytest.raises(mm.GemmError, match="swapped"):
        mm.plan(mm.GemmProblem(300, 1, 64, "f32", "f32"), replace(mm.gemv_config(mm.GemmProblem(300, 1, 64, "f32",
                "f32")), REDUCE=True), epilogue=RELU_BIAS)  # fmt: skip


def test_the_fused_kernels_verify_with_their_tag_assertions() -> None:
    main, reduce, _ = fused_kernels(EVERYTHING)
    # SPLITS=1: the reduction a one-split GEMV plan launches to apply the epilogue
    kernels = (
        main.trace(BM=64, CONSUMERS=1, CONSUMER_REGS=232, OUT="bf16"),
        reduce.trace(SPLITS=3),
        reduce.trace(SPLITS=1),
    )
    for kernel in kernels:
        result = verify(kernel)
        assert result.verdict.value == "verified" and not result.unknowns, result
        asserted = [c for c in result.checks if c.check == "tag assertion"]
        # the main kernel: A's and B's stages and the three operands; the reduction: the slices after the first
        # (two of three, none of one) and the operands
        want = 5 if kernel.name.startswith("gemm_fused") or dict(kernel.params)["SPLITS"] == 3 else 3
        assert len(asserted) == want, [c.target for c in asserted]
        assert all(c.verdict.value == "verified" for c in asserted)


@argus.kernel
def _bias_of_the_next_tile(
    A: T.Tensor[("M", "K"), T.bf16],
    B: T.Tensor[("N", "K"), T.bf16],
    C: T.Tensor[("M", "N"), T.f32],
    epi_bias: T.Tensor[("N",), T.f32],
    BM: int = 64,
    BN: int = 64,
):
    """A seeded bug: the epilogue adds the bias of the next column tile, under the assertion of its own."""

    def epilogue(acc, tile):
        bm, bn, rows, cols = tile
        v = T.alloc_reduced(acc, axis=0)
        T.copy(epi_bias.tile(bn + 1, cols), v)  # <- the wrong tile
        T.assert_tag(lambda x: x[0] == bn * cols + x.coord[0], v)
        return acc + v[None, :]

    gemm.persistent_gemm(
        A, B, C, BM=BM, BN=BN, BK=64, STAGES=2, PRODUCER_REGS=40, CONSUMER_REGS=232, BLOCKS=4, ORDER="grouped",
        GROUP=8, EPILOGUE="direct", A_MAJOR="K", B_MAJOR="K", CONSUMERS=1, SPLITS=1, BATCH=False, epilogue=epilogue,
    )  # fmt: skip


def test_an_epilogue_that_reads_another_tile_s_operand_is_caught() -> None:
    result = verify(_bias_of_the_next_tile.trace())
    assert result.verdict.value == "violated"
    assert [f.code for f in result.errors] == ["TAG_ASSERT"]


def test_the_fused_kernels_compile_to_hgmma_and_tma_without_spills() -> None:
    main, reduce, _ = fused_kernels(EVERYTHING)
    wide = compile_kernel(fused_kernels(RELU_BIAS)[0], BM=128, BN=256, STAGES=4, OUT="bf16", EPILOGUE="tma")
    big = compile_kernel(main, BM=128, BN=128, STAGES=6, OUT="bf16", EPILOGUE="tma")
    small = compile_kernel(main, BM=64, BN=128, STAGES=8, CONSUMERS=1, CONSUMER_REGS=240, OUT="f32")
    for compiled in (wide, big, small):
        mix = compiled.instruction_mix()
        assert mix.get("HGMMA", 0) > 0 and mix.get("UTMALDG", 0) > 0, mix
        assert compiled.resources.spill_stores == 0 and compiled.resources.spill_loads == 0
    assert big.instruction_mix().get("UTMASTG", 0) > 0
    assert compile_kernel(reduce, SPLITS=4, OUT="bf16").resources.spill_stores == 0


def test_an_epilogue_with_a_residual_tile_is_planned_on_tiles_that_do_not_spill() -> None:
    problem = mm.GemmProblem(8192, 8192, 8192, "bf16", "bf16")
    assert mm.plan(problem, epilogue=RELU_BIAS).config.BN == 256  # the heuristic's own choice at this shape
    assert mm.plan(problem, epilogue=EVERYTHING).config.BN == 128


def test_one_epilogue_gives_one_pair_of_kernels() -> None:
    again = Epilogue.of("T.maximum(acc + bias, 0.0)", bias="columns")
    assert again == RELU_BIAS and fused_kernels(again) is fused_kernels(RELU_BIAS)
    assert fused_kernels(EVERYTHING)[0].name == f"gemm_fused_{EVERYTHING.key}" != fused_kernels(again)[0].name


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Epilogue.of("acc + N", N="columns"), "not a usable identifier"),
        (lambda: Epilogue.of("acc + b", b="diagonal"), "kind 'diagonal'"),
        (lambda: Epilogue.of("acc + b", b=("columns", "f64")), "dtype 'f64'"),
        (lambda: Epilogue.of("acc +* b", b="columns"), "is not Python"),
        (lambda: Epilogue(("out = acc\nimport os",), "out"), "one line"),
    ],
)
def test_a_bad_epilogue_is_refused_with_the_reason(build, match) -> None:
    with pytest.raises(EpilogueError, match=match):
        build()


def test_the_plan_checks_the_operands_it_is_given() -> None:
    plan = mm.plan(mm.GemmProblem(64, 64, 64, "bf16", "f32"), mm.GemmConfig(64, 64, 1, 2), epilogue=RELU_BIAS)
    a, b = np.zeros((64, 64)), np.zeros((64, 64))
    with pytest.raises(mm.GemmError, match="reads \\['bias'\\]"):
        plan.run_on_interpreter(a, b, operands={})
    with pytest.raises(mm.GemmError, match="must have shape \\(64,\\)"):
        plan.run_on_interpreter(a, b, operands={"bias": np.zeros(63)})
    with pytest.raises(mm.GemmError, match="batched GEMM is not built"):
        mm.plan(mm.GemmProblem(64, 64, 64, "bf16", "f32", batch=2), epilogue=RELU_BIAS)


def test_the_library_call_applies_the_epilogue_on_the_cpu() -> None:
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(37, 48, generator=g), torch.randn(40, 48, generator=g)
    bias = torch.randn(1, 40, generator=g)  # (1, N): read as the (N,) columns
    call = mm.LibraryGemm(
        "linear_relu", mm.GemmProblem(37, 40, 48, "f32", "f32", "K", "K"), transpose_b=True, order=(0, 1),
        epilogue=RELU_BIAS, epilogue_order=(2,),
    )  # fmt: skip
    out = call.empty_output(x, w, bias)
    call(x, w, bias, out)
    ref = torch.relu(x.double() @ w.double().T + bias.double())
    assert float((out.double() - ref).abs().max() / ref.abs().max()) < 4e-5


@pytest.mark.gpu
def test_matmul_with_an_epilogue_matches_torch_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.eval.tolerance import compare, input_scale, tolerance_for

    g = torch.Generator(device="cuda").manual_seed(0)
    shapes = (
        (1000, 1536, 4000, torch.bfloat16),
        (64, 4096, 8192, torch.bfloat16),  # swap-AB, split: the reduction applies the epilogue
        (8, 8192, 8192, torch.bfloat16),
        (500, 700, 9000, torch.float32),
        (2, 48, 16, torch.float32),  # the GEMV kernels, the reduction applying the epilogue
        (4, 3000, 5000, torch.float32),  # the same, split
    )
    for m, n, k, dtype in shapes:
        # KernelBench's draw (uniform in [0, 1)), as the gate's trials; the epilogue's operands signed
        x = torch.rand(m, k, device="cuda", generator=g).to(dtype)
        w = torch.rand(n, k, device="cuda", generator=g).to(dtype)
        bias = torch.randn(n, device="cuda", generator=g)
        res = torch.randn(m, n, device="cuda", generator=g)
        out = mm.matmul(x, w.T, epilogue="T.sigmoid(acc * 0.01 + bias) * res", bias=bias, res=res, out_dtype=dtype)
        ref = torch.sigmoid(x.double() @ w.double().T * 0.01 + bias.double()) * res.double()
        verdict = compare(out, ref, tolerance_for(dtype), input_scale=input_scale([x, w]))
        assert verdict.ok, (m, n, k, dtype, verdict.reason)
