"""GEMV-class products (issue #20): a decode batch (M <= GEMV_ROWS) or a matrix-vector product (N = 1) planned on
`argus.kernels.gemv` and the split-K reduction: correct on the interpreter in every layout and dtype, at odd sizes;
verified; the plan falls back to the tensor-core GEMM where the GEMV does not apply."""

from __future__ import annotations

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.backend.cuda.codegen import compile_kernel
from argus.ir.types import round_to
from argus.kernels import matmul as mm
from argus.kernels.epilogue import Epilogue
from argus.kernels.gemv import gemv_columns, gemv_rows, gemv_rows_tma
from argus.lang import DSLError
from argus.layout import Layout
from argus.verify import Verdict, verify


def _operands(m: int, n: int, k: int, dtype: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if dtype == "f32":
        return a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
    return round_to(dtype, a), round_to(dtype, b)


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "majors", "kernel"),
    [
        (1, 64, 100, "bf16", ("K", "N"), "gemv-columns"),  # x @ W, W (K, N) row-major; K not a multiple of BK
        (3, 72, 200, "f32", ("K", "K"), "gemv-rows"),  # x @ W.T, W (N, K) row-major (nn.Linear)
        (8, 136, 64, "f16", ("M", "N"), "gemv-columns"),  # x given transposed: copied to rows
        (4, 13, 264, "bf16", ("K", "K"), "gemv-rows"),  # 13 outputs: the workspace rows padded to 16
        (50, 1, 96, "bf16", ("K", "N"), "gemv-rows_tma swap"),  # A (M, K) @ b in 16 bits: the TMA ring
        (1, 200, 136, "f16", ("K", "K"), "gemv-rows_tma"),  # one row times an nn.Linear weight: the TMA ring
        (50, 1, 96, "f32", ("K", "N"), "gemv-rows swap"),  # A (M, K) @ b in f32
        (52, 1, 96, "f32", ("M", "K"), "gemv-columns swap"),  # A given transposed
    ],
)
def test_a_gemv_plan_is_correct_on_the_interpreter(m, n, k, dtype, majors, kernel) -> None:
    problem = mm.GemmProblem(m, n, k, dtype, dtype, *majors)
    plan = mm.GemmPlan(problem, mm.gemv_config(problem, dtypes=mm.INPUTS))  # 16-bit ones on request (see below)
    assert plan.is_gemv and plan.config.label.startswith(kernel), plan.config.label
    # a 16-bit row-major matrix times a vector, or one 16-bit row times a weight stored (N, K)
    tma = dtype != "f32" and ((n == 1 and majors[0] == "K") or (m == 1 and n > 1 and majors[1] == "K"))
    assert mm.plan(problem).is_gemv == (dtype == "f32" or tma)
    assert (plan.config.KERNEL == "rows_tma") == tma
    # one split: the GEMV kernel writes C in its dtype, no reduction launch; more: an f32 workspace and the reduction
    assert (plan.reduce_kernel() is None) == (plan.config.SPLITS == 1)
    assert dict(plan.main_params())["OUT"] == (dtype if plan.config.SPLITS == 1 else "f32")
    a, b = _operands(m, n, k, dtype)
    c = plan.run_on_interpreter(a, b)
    ref = a @ b
    assert c.shape == (m, n)
    # f32 inputs multiply in f32 (no split precision); 16-bit outputs round once
    bound = 1e-6 if dtype == "f32" else 2.0**-7
    assert float(np.abs(c - ref).max() / np.abs(ref).max()) < bound


def test_the_split_k_gemv_sums_every_k_block_once() -> None:
    """K = 4096 over 16 splits of 16-row blocks: every split's slice of the workspace is one K-range."""
    plan = mm.plan(mm.GemmProblem(2, 1024, 4096, "f32", "f32", "K", "N"))
    assert plan.is_gemv and plan.config.SPLITS > 1
    a, b = _operands(2, 1024, 4096, "f32", seed=3)
    c = plan.run_on_interpreter(a, b)
    assert float(np.abs(c - a @ b).max()) < 1e-3


def test_the_gemv_applies_only_where_it_should() -> None:
    def f32(m, n, k, **kw):  # noqa: ANN001, ANN202
        return mm.GemmProblem(m, n, k, "f32", "f32", **kw)

    assert mm.gemv_config(f32(8, 4096, 4096, b_major="N")) is not None
    assert mm.gemv_config(f32(9, 4096, 4096, b_major="N")) is None  # more rows: the tensor cores
    assert mm.gemv_config(f32(4, 4096, 4096)) is not None  # x @ W.T: up to 4 rows
    assert mm.gemv_config(f32(8, 4096, 4096)) is None  # measured slower than the tensor cores there
    assert mm.gemv_config(f32(4096, 1, 4096)) is not None  # matrix-vector
    assert mm.gemv_config(f32(4096, 2, 4096)) is None
    assert mm.gemv_config(f32(4, 4096, 4096, batch=2)) is None  # batched: the batched GEMM
    assert mm.gemv_config(f32(4, 4098, 4096, b_major="N")) is None  # rows not in 16-byte runs: the padded GEMM
    assert mm.gemv_config(f32(4, 4098, 4096, b_major="K")) is not None  # K-major: K is what must align
    # bf16 decode rows: the tensor cores, unless asked for; one row times a weight stored (N, K): the TMA ring
    assert mm.gemv_config(mm.GemmProblem(2, 4096, 4096)) is None
    assert mm.gemv_config(mm.GemmProblem(2, 4096, 4096), dtypes=mm.INPUTS).KERNEL == "rows"
    assert mm.gemv_config(mm.GemmProblem(1, 4096, 4096)).KERNEL == "rows_tma"
    assert mm.gemv_config(mm.GemmProblem(1, 4096, 4096, b_major="N")) is None  # W (K, N): the tensor cores
    # a 16-bit row-major matrix times a vector: the TMA ring, planned by default
    for dtype in ("bf16", "f16"):
        assert mm.gemv_config(mm.GemmProblem(4096, 1, 4096, dtype, dtype)).KERNEL == "rows_tma"
    assert mm.gemv_config(mm.GemmProblem(4096, 1, 4096, "bf16", "bf16", "M")) is None  # A (K, M): tensor cores
    assert mm.gemv_config(mm.GemmProblem(4096, 1, 4100, "bf16")) is None  # K not whole 16-byte runs: TMA cannot
    assert mm.gemv_config(mm.GemmProblem(4096, 1, 4096, "e4m3")) is None  # FP8: the scaled GEMM
    # an explicit tensor-core configuration keeps the tensor-core GEMM
    config = mm.choose(f32(4, 4096, 4096))
    assert not mm.plan(f32(4, 4096, 4096), config).is_gemv
    # enough blocks to keep the memory busy: a 4096-column product (8 column tiles of 512) splits K
    g = mm.gemv_config(f32(1, 4096, 4096, b_major="N"))
    assert g.SPLITS * (4096 // g.BN) >= 132


@pytest.mark.parametrize("kernel", [gemv_columns, gemv_rows])
def test_the_gemv_kernels_verify(kernel) -> None:
    report = verify(kernel.trace(ROWS=4, SPLITS=8))
    assert report.verdict == Verdict.VERIFIED, report.render_text()
    proved = {c.check for c in report.checks if c.verdict == Verdict.VERIFIED}
    assert "tag assertion" in proved and "output coverage" in proved


def test_a_gemv_that_pairs_the_wrong_k_is_caught() -> None:
    """Seeded bug: V's chunk read one K-block ahead of the matrix's (an off-by-one in the window origin)."""

    @argus.kernel
    def gemv_skewed(
        V: T.Tensor[("R", "K"), T.f32], Mat: T.Tensor[("K", "N"), T.f32], P: T.Tensor[("S", "R", "N"), T.f32]
    ):
        T.assume("S == 2")
        k_split = T.cdiv(T.cdiv(K, 16), 2)
        with T.grid(T.cdiv(N, 128), 2, threads=32) as (bn, s):
            w = T.alloc_fragment((16, 128), T.f32)
            v = T.alloc_reduced(w, axis=1)
            acc = T.alloc_reduced(w, axis=0)
            T.fill(acc, 0.0)
            for k in T.serial(k_split):
                kb = s * k_split + k
                T.copy(Mat.tile((kb, bn), (16, 128)), w)
                T.copy(V.window((0, (kb + 1) * 16), (None, 16)), v)
                T.assert_tag(lambda y, x: (x[1] == y[0]) & (y[1] // 128 == bn), w, v[:, None])
                T.copy(acc + T.reduce_sum(v[:, None] * w, axis=0), acc)
            T.copy(acc, P.window((s, 0, bn * 128), (None, None, 128)))

    report = verify(gemv_skewed.trace())
    assert any(f.code == "TAG_ASSERT" for f in report.errors), report.render_text()


def test_the_gemv_kernels_compile_to_vector_loads_without_spills() -> None:
    for kernel, params in ((gemv_columns, {"ROWS": 4, "BK": 8, "UNROLL": 2}), (gemv_rows, {"ROWS": 4})):
        compiled = compile_kernel(kernel.trace(**params))
        assert compiled.resources.spill_stores == 0, compiled.resources
        mix = compiled.instruction_mix(modifiers=True)
        assert any(op.startswith("LDG") and "128" in op for op in mix), mix  # 16-byte loads of the matrix
    rows = compile_kernel(gemv_rows.trace(ROWS=1)).instruction_mix()
    assert rows.get("SHFL", 0) > 0  # the K sum finished across the lanes


def test_the_gemv_kernels_refuse_bad_parameters() -> None:
    with pytest.raises(DSLError, match="BN a multiple"):
        gemv_columns.trace(BN=1020)
    with pytest.raises(DSLError, match="power-of-two"):
        gemv_rows.trace(BK=24 * 8)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape",
    [
        (1, 4096, 4096, "N"), (4, 14336, 4096, "K"), (8, 4096, 11008, "K"), (4096, 1, 8192, "N"),
        # one launch (`gemv_tma_one_launch`): 16 stages; 8 stages; a partial last row tile and a K tail
        (1, 4096, 4096, "K"), (1, 14336, 4096, "K"), (1, 2200, 1000, "K"),
    ],
)  # fmt: skip
def test_gemv_matches_torch_on_the_gpu(shape) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    m, n, k, b_major = shape
    for dtype in (torch.bfloat16, torch.float32):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        if b_major == "N":
            b = torch.randn(k, n, device="cuda", dtype=dtype)
        else:
            b = torch.randn(n, k, device="cuda", dtype=dtype).t()
        ref = a.double() @ b.double()
        problem = mm.problem_of(a, b)
        results = [(mm.matmul(a, b), mm.plan(problem).is_gemv)]
        forced = [mm.gemv_config(problem, dtypes=mm.INPUTS)]  # the 16-bit GEMV too, which plans leave out
        stored_k_major = problem.b_major == "K" if m <= mm.GEMV_ROWS else problem.a_major == "K"
        if dtype != torch.float32 and stored_k_major:
            forced.append(mm.gemv_tma_config(problem))  # the TMA ring, wherever the plan takes it or not
        for config in forced:
            if config is not None:
                c, launches = mm.prepare(a, b, config=config)
                for launch in launches:
                    launch.launch()
                results.append((c, True))
        for c, gemv in results:
            err = float((c.double() - ref).abs().max() / ref.abs().max())
            # f32: FMAs in f32 on the GEMV, split precision (the gate's 1e-4) on the tensor cores
            bound = (1e-5 if gemv else 1e-4) if dtype == torch.float32 else 1e-2
            assert err < bound, (shape, dtype, gemv, err)


RELU_BIAS = Epilogue.of("T.maximum(acc + bias, 0.0)", bias="columns")


def _planned_gemv_kernels() -> list[tuple[str, tuple]]:
    """The distinct GEMV kernels the plan launches for 1..8 rows, both matrix layouts, bf16 and f32."""
    found = {}
    for rows in (1, 2, 3, 4, 8):
        for dtype in ("bf16", "f32"):
            for b_major in ("N", "K"):
                g = mm.gemv_config(mm.GemmProblem(rows, 4096, 4096, dtype, dtype, "K", b_major), dtypes=mm.INPUTS)
                if g is not None:
                    params = mm.GemmPlan(mm.GemmProblem(rows, 4096, 4096, dtype, dtype, "K", b_major), g).main_params()
                    found[(g.KERNEL, params)] = None
    for rows in (5, 8):  # with a fused epilogue the rows kernel takes up to GEMV_ROWS rows (`gemv_epilogue_config`)
        problem = mm.GemmProblem(rows, 4096, 4096, "f32", "f32", "K", "K")
        g = mm.gemv_epilogue_config(problem, RELU_BIAS)
        found[(g.KERNEL, mm.GemmPlan(problem, g, RELU_BIAS).main_params())] = None
    for m, k in ((4096, 4096), (16384, 4096), (8192, 8192), (1000, 72)):  # 16-bit matrix-vector products
        for dtype in ("bf16", "f16"):
            problem = mm.GemmProblem(m, 1, k, dtype, dtype)
            g = mm.gemv_config(problem)
            found[(g.KERNEL, mm.GemmPlan(problem, g).main_params())] = None

    # an f16 kernel whose bf16 twin (every other parameter the same) is listed is the same program on another 16-bit
    # type: verified once, as the bf16 one (each deep TMA ring costs two minutes of a CI core)
    def as_bf16(params: tuple) -> tuple:
        return tuple((n, "bf16" if v == "f16" else v) for n, v in params)

    return [(k, p) for k, p in found if dict(p).get("IN") != "f16" or (k, as_bf16(p)) not in found]


@pytest.mark.parametrize(("kernel", "params"), _planned_gemv_kernels())
def test_every_gemv_kernel_the_plan_launches_verifies(kernel, params) -> None:
    """The registers the verifier counts (`BUDGET_REGISTERS`) bound the blocks loaded ahead (UNROLL) per row count."""
    report = verify(mm._traced_gemv(kernel, params))
    assert report.verdict == Verdict.VERIFIED, report.render_text()


# --- gemv_rows_tma: the matrix streamed through a TMA ring of shared-memory stages ------------------------------------


@pytest.mark.parametrize(
    ("m", "n", "k", "dtype", "bn", "stages", "threads", "partial"),
    [
        (3, 300, 520, "bf16", 64, 3, 128, False),  # 5 column tiles, the last partial; K not a multiple of 64
        (1, 130, 4096, "bf16", 128, 4, 256, True),  # split-K: several splits of 64-element K-blocks
        (8, 77, 72, "f16", 32, 2, 128, False),  # 8 rows of A, one split: the kernel writes C
        (4, 77, 200, "bf16", 64, 2, 256, True),  # per-lane partial sums for 4 rows of A
        (50, 1, 264, "bf16", 16, 2, 128, False),  # A (M, K) @ b: the matrix-vector product (swap)
    ],
)
def test_the_tma_gemv_is_correct_on_the_interpreter(m, n, k, dtype, bn, stages, threads, partial) -> None:
    from dataclasses import replace

    problem = mm.GemmProblem(m, n, k, dtype, dtype, "K", "K")
    g = mm.gemv_tma_config(problem, replace(mm.DEFAULT_TARGET, sms=4), bn=bn, stages=stages, threads=threads,
                           partial=partial)  # fmt: skip
    assert g.KERNEL == "rows_tma" and g.SWAP == (n == 1)
    assert g.SPLITS * stages <= max(stages, -(-k // 64))  # every split at least STAGES K-blocks long (or one split)
    plan = mm.GemmPlan(problem, g)
    a, b = _operands(m, n, k, dtype, seed=m + n)
    c = plan.run_on_interpreter(a, b)
    ref = a @ b
    assert c.shape == (m, n)
    assert float(np.abs(c - ref).max() / np.abs(ref).max()) < 2.0**-7


@pytest.mark.parametrize(("rows", "partial"), [(1, False), (8, False), (1, True), (4, True)])
def test_the_tma_gemv_verifies(rows, partial) -> None:
    report = verify(gemv_rows_tma.trace(ROWS=rows, BN=128, SPLITS=4, STAGES=4, THREADS=256, PARTIAL=partial))
    assert report.verdict == Verdict.VERIFIED, report.render_text()
    proved = {c.check for c in report.checks if c.verdict == Verdict.VERIFIED}
    assert "tag assertion" in proved and "output coverage" in proved


@pytest.mark.parametrize(
    ("m", "n", "k", "bn", "stages", "threads", "partial", "splits"),
    [
        (1, 130, 1000, 16, 8, 128, True, 1),  # one launch: 16 rows a block, a deep ring, K not a multiple of 64
        (3, 77, 200, 32, 2, 128, False, 1),  # 3 rows of V in each stage (a box of 3 rows)
        (1, 40, 520, 16, 3, 128, True, 2),  # split-K: each split's K-blocks of V
    ],
)
def test_the_tma_gemv_with_v_in_the_stages_is_correct_on_the_interpreter(
    m, n, k, bn, stages, threads, partial, splits
) -> None:
    """VSTAGE: V's K-block comes by TMA with the matrix's, into the same stage, and is read from shared memory."""
    problem = mm.GemmProblem(m, n, k, "bf16", "bf16", "K", "K")
    g = mm.GemvConfig("rows_tma", False, m, splits, 64, bn, STAGES=stages, THREADS=threads, LANES=8,
                      PARTIAL=partial, VSTAGE=True)  # fmt: skip
    assert "vstage" in g.label and g.kernel_params(problem)["VSTAGE"] is True
    a, b = _operands(m, n, k, "bf16", seed=m + n + k)
    c = mm.GemmPlan(problem, g).run_on_interpreter(a, b)
    ref = a @ b
    assert float(np.abs(c - ref).max() / np.abs(ref).max()) < 2.0**-7


def test_one_row_and_matrix_vector_products_take_one_launch_where_the_rows_fill_the_sms(monkeypatch) -> None:
    """`gemv_tma_one_launch`: 16 rows a block, V in the stages, no split: one kernel writes C, where the row tiles
    are at least one per SM and all resident at once; otherwise the split plan (`gemv_tma_config`)."""
    one = mm.plan(mm.GemmProblem(1, 4096, 4096))  # 256 blocks: two a SM
    g = one.config
    assert (g.KERNEL, g.SPLITS, g.BN, g.STAGES, g.THREADS, g.VSTAGE, g.PARTIAL) == (
        "rows_tma",
        1,
        16,
        8,
        128,
        True,
        True,
    )
    assert g.reduce_params(one.problem) is None and len(one.kernels()) == 1
    assert mm.plan(mm.GemmProblem(16384, 1, 4096, "f16", "f16")).config.VSTAGE  # a matrix-vector product too
    few = mm.plan(mm.GemmProblem(1, 2048, 4096)).config  # 128 row tiles of 16 on 132 SMs: split as before
    assert few.SPLITS > 1 and not few.VSTAGE
    many = mm.plan(mm.GemmProblem(1, 28672, 4096)).config  # 1792 tiles of 16 rows: two waves; 64-row tiles instead
    assert (many.BN, many.SPLITS, many.VSTAGE) == (64, 1, False)
    monkeypatch.setattr(mm, "GEMV_TMA_ONE_LAUNCH", False)
    assert mm.gemv_config(mm.GemmProblem(1, 4096, 4096)).SPLITS > 1


def test_a_one_launch_gemv_plan_gives_tma_a_row_major_aligned_v() -> None:
    """VSTAGE loads V by TMA: a row of A whose stride or base TMA cannot take (`x.T` of a column: strides (1, 1),
    which torch calls contiguous; a slice starting mid-vector) is copied; an aligned row-major one is used as it is."""
    torch = pytest.importorskip("torch")
    k = 4096
    b = torch.randn(4096, k, dtype=torch.bfloat16).T  # an nn.Linear weight (N, K), as (K, N)
    column = torch.randn(k, 1, dtype=torch.bfloat16).T
    shifted = torch.randn(1, k + 1, dtype=torch.bfloat16)[:, 1:]
    plain = torch.randn(1, k, dtype=torch.bfloat16)
    for a, copied in ((column, True), (shifted, True), (plain, False)):
        plan = mm.plan(mm.problem_of(a, b))
        assert plan.config.VSTAGE
        v, _, _ = plan.gemv_operands(a, b, torch)
        assert v.stride() == (k, 1) and v.data_ptr() % 16 == 0 and torch.equal(v, a)
        assert (v.data_ptr() != a.data_ptr()) == copied


def test_a_one_launch_gemv_plan_is_correct_on_the_interpreter() -> None:
    from dataclasses import replace

    target = replace(mm.DEFAULT_TARGET, sms=4)
    problem = mm.GemmProblem(1, 70, 1000, "bf16", "bf16", "K", "K")  # 5 blocks of 16 rows, the last partial
    g = mm.gemv_config(problem, target)
    assert g.SPLITS == 1 and g.VSTAGE and g.BN == 16
    a, b = _operands(1, 70, 1000, "bf16", seed=5)
    c = mm.GemmPlan(problem, g).run_on_interpreter(a, b, target=target)
    ref = a @ b
    assert float(np.abs(c - ref).max() / np.abs(ref).max()) < 2.0**-7


@pytest.mark.parametrize(("rows", "partial"), [(1, True), (3, False)])
def test_the_tma_gemv_with_v_in_the_stages_verifies(rows, partial) -> None:
    traced = gemv_rows_tma.trace(ROWS=rows, BN=16, SPLITS=2, STAGES=3, THREADS=128, PARTIAL=partial, VSTAGE=True)
    report = verify(traced)
    assert report.verdict == Verdict.VERIFIED, report.render_text()
    proved = {c.check for c in report.checks if c.verdict == Verdict.VERIFIED}
    assert "tag assertion" in proved and "output coverage" in proved


@argus.kernel
def _gemv_tma_seeded(
    V: T.Tensor[("R", "K"), T.bf16], MT: T.Tensor[("N", "K"), T.bf16], P: T.Tensor[("R", "N"), T.f32], MISTAKE: str = ""
):
    """gemv_rows_tma's ring at one split and one row of V, with a seeded mistake."""
    T.assume("K % 8 == 0 and R == 1")
    k_blocks = T.cdiv(K, 64)
    with T.grid(T.cdiv(N, 32), threads=128) as (bn,):
        sW = T.alloc_shared((2, 32, 64), T.bf16, swizzle=128)  # noqa: N806
        staged = MISTAKE.startswith("staged")  # V's K-blocks in the stages (gemv_rows_tma's VSTAGE)
        sV = T.alloc_shared((2, 1, 64), T.bf16)  # noqa: N806
        rows_of = sV.view(Layout((2, 64), (64, 1)))
        full = T.alloc_mbarrier(2, arrive_count=1)
        acc = T.alloc_reduced(T.alloc_fragment((32, 64), T.bf16), axis=1, dtype=T.f32)
        T.fill(acc, 0.0)
        nbytes = 32 * 128 + (128 if staged else 0)

        def load(kb, st) -> None:  # noqa: ANN001
            T.mbarrier_arrive(full[st], expect_bytes=nbytes)
            T.copy(MT.tile((bn, kb), (32, 64)), sW[st], atom="tma", mbarrier=full[st])
            if staged:
                T.copy(V.tile((0, kb), (1, 64)), sV[st], atom="tma", mbarrier=full[st])

        with T.if_(k_blocks > 0):
            load(0, 0)
        for k, st in T.pipeline(k_blocks, stages=2):
            nxt = k + 1
            with T.if_(nxt < k_blocks):
                load(nxt, nxt % 2)
            if MISTAKE != "no wait":
                T.mbarrier_wait(full[st], phase=(k // 2) % 2)
            w = T.alloc_fragment((32, 64), T.bf16)
            T.copy(sW[st], w)
            v = T.alloc_reduced(w, axis=0, dtype=T.f32)
            if staged:  # "staged other stage": V read from the stage not yet waited for
                T.copy(rows_of[(st + (1 if MISTAKE == "staged other stage" else 0)) % 2], v)
            else:
                T.copy(V.window((0, (k + (1 if MISTAKE == "v ahead" else 0)) * 64), (None, 64)), v)
            T.assert_tag(lambda y, x: (x[1] == y[1]) & (y[0] // 32 == bn), w, v[None, :])
            T.copy(acc + T.reduce_sum(T.cast(w, T.f32) * v[None, :], axis=1), acc)
            if MISTAKE != "no barrier":
                T.barrier()
        T.copy(acc, P.window((0, bn * 32), (None, 32)))


def test_the_tma_gemv_seeded_mistakes_are_caught() -> None:
    assert verify(_gemv_tma_seeded.trace()).verdict == Verdict.VERIFIED
    assert verify(_gemv_tma_seeded.trace(MISTAKE="staged")).verdict == Verdict.VERIFIED
    found = {m: {f.code for f in verify(_gemv_tma_seeded.trace(MISTAKE=m)).errors} for m in
             ("v ahead", "no wait", "no barrier", "staged other stage")}  # fmt: skip
    assert "TAG_ASSERT" in found["v ahead"], found
    assert "TAG_ASSERT" in found["staged other stage"], found
    assert found["no wait"] and found["no barrier"], found


def test_the_tma_gemv_compiles_to_tma_loads_without_spills() -> None:
    cases = ((1, False, 0), (4, False, 0), (8, False, 0), (1, True, 0), (8, True, 0), (1, True, 1))
    for rows, partial, vstage in cases:
        extra = {"VSTAGE": True} if vstage else {}
        traced = gemv_rows_tma.trace(ROWS=rows, BN=64, SPLITS=4, STAGES=4, THREADS=256, PARTIAL=partial, **extra)
        compiled = compile_kernel(traced)
        assert compiled.resources.spill_stores == 0, (rows, compiled.resources)
        mix = compiled.instruction_mix()
        assert mix.get("UTMALDG", 0) > 0 and mix.get("SHFL", 0) > 0, mix


def test_the_tma_gemv_refuses_bad_parameters() -> None:
    with pytest.raises(DSLError, match="BN a multiple"):
        gemv_rows_tma.trace(BN=24)  # 128 threads cover 16 rows per pass
    with pytest.raises(DSLError, match="STAGES >= 2"):
        gemv_rows_tma.trace(STAGES=1)
    with pytest.raises(mm.GemmError, match="at most 8 rows"):
        mm.gemv_tma_config(mm.GemmProblem(16, 4096, 4096))


def test_a_batch_of_one_takes_the_gemv_path_with_its_matrices() -> None:
    """A batched product of one matrix (a 1x1 convolution of one image: (1, 8, 4) @ (1, 4, 16)) is a GEMV-class
    problem of batch 1: its operands' leading extent of 1 is dropped as for the GEMM kernels (`INTERP_ARGUMENT_RANK`
    "V must have 2 dimensions" until 2026-12-05: KernelBench level 3's MobileNetV1 at batch 1 was refused)."""
    plan = mm.plan(mm.GemmProblem(8, 16, 4, "f32", "f32", "K", "N", batch=1))
    assert plan.is_gemv
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((1, 8, 4)), rng.standard_normal((1, 4, 16))
    c = plan.run_on_interpreter(a, b)
    np.testing.assert_allclose(np.asarray(c).reshape(8, 16), (a @ b)[0], rtol=1e-5, atol=1e-5)
