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
from argus.kernels.gemv import gemv_columns, gemv_rows
from argus.lang import DSLError
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
        (50, 1, 96, "bf16", ("K", "N"), "gemv-rows swap"),  # A (M, K) @ b: the matrix-vector product
        (52, 1, 96, "f32", ("M", "K"), "gemv-columns swap"),  # A given transposed
    ],
)
def test_a_gemv_plan_is_correct_on_the_interpreter(m, n, k, dtype, majors, kernel) -> None:
    problem = mm.GemmProblem(m, n, k, dtype, dtype, *majors)
    plan = mm.GemmPlan(problem, mm.gemv_config(problem, dtypes=mm.INPUTS))  # 16-bit ones on request (see below)
    assert plan.is_gemv and plan.config.label.startswith(kernel), plan.config.label
    assert mm.plan(problem).is_gemv == (dtype == "f32")
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
    assert mm.gemv_config(mm.GemmProblem(1, 4096, 4096)) is None  # bf16: the tensor cores, unless asked for
    assert mm.gemv_config(mm.GemmProblem(1, 4096, 4096), dtypes=mm.INPUTS) is not None
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
    "shape", [(1, 4096, 4096, "N"), (4, 14336, 4096, "K"), (8, 4096, 11008, "K"), (4096, 1, 8192, "N")]
)
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
        forced = mm.gemv_config(problem, dtypes=mm.INPUTS)  # the 16-bit GEMV too, which plans leave out
        if forced is not None:
            c, launches = mm.prepare(a, b, config=forced)
            for launch in launches:
                launch.launch()
            results.append((c, True))
        for c, gemv in results:
            err = float((c.double() - ref).abs().max() / ref.abs().max())
            # f32: FMAs in f32 on the GEMV, split precision (the gate's 1e-4) on the tensor cores
            bound = (1e-5 if gemv else 1e-4) if dtype == torch.float32 else 1e-2
            assert err < bound, (shape, dtype, gemv, err)


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
    return list(found)


@pytest.mark.parametrize(("kernel", "params"), _planned_gemv_kernels())
def test_every_gemv_kernel_the_plan_launches_verifies(kernel, params) -> None:
    """The registers the verifier counts (`BUDGET_REGISTERS`) bound the blocks loaded ahead (UNROLL) per row count."""
    report = verify(mm._traced_gemv(kernel, params))
    assert report.verdict == Verdict.VERIFIED, report.render_text()
