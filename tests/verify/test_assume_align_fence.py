"""Declared assumptions (T.assume), the alignment checks that depend on them, proxy fences, mbarrier arrive
counts against the interpreter and the code generator, masked global windows, and the reductions' shuffles.
(The corpus, tests/verify/corpus, holds the seeded bugs; these tests pin the behaviour around them.)"""

import importlib

import numpy as np
import pytest

import argus
import argus.lang as T
from argus.ir.nodes import MbarrierArrive, Reduce, walk
from argus.kernels import all_kernels, get_kernel
from argus.lang import DSLError
from argus.verify import Verdict, verify


def _corpus(name: str):
    return importlib.import_module(f"tests.verify.corpus.kernels_{name}").KERNEL


# --- T.assume ------------------------------------------------------------------------------------------------


def test_assume_records_conditions_on_the_shape_symbols() -> None:
    @argus.kernel
    def k(A: T.Tensor[("M", "K"), T.bf16], BM: int = 64):  # noqa: F821
        T.assume("K % 8 == 0 and M >= 64")
        with T.grid(T.cdiv(M, BM), threads=128) as (bm,):  # noqa: F821 - shape symbols are injected
            T.assume(T.eq(K % 8, 0))  # noqa: F821
            T.assume(K > 3)  # noqa: F821

    texts = [str(a) for a in k.trace().assumptions]
    assert texts == ["(1 <= M)", "(1 <= K)", "(((K % 8) == 0) and (64 <= M))", "((K % 8) == 0)", "(3 < K)"]


@pytest.mark.parametrize(
    ("condition", "fragment"),
    [
        (False, "T.eq"),  # what `K % 8 == 0` evaluates to while tracing (identity of two expressions)
        ("K % 8 = 0", "not a Python expression"),
        ("Q % 8 == 0", "'Q' is not a shape symbol"),
        ("K ** 2 < 9", "not supported"),
    ],
)
def test_assume_rejects_what_is_not_a_condition_on_sizes(condition, fragment) -> None:
    @argus.kernel
    def k(A: T.Tensor[("M", "K"), T.bf16], C: object = None):  # noqa: F821
        T.assume(C)
        with T.grid(T.cdiv(M, 64), threads=128) as (bm,):  # noqa: F821
            pass

    with pytest.raises(DSLError) as info:
        k.trace(C=condition)
    assert info.value.code == "DSL_ASSUME" and fragment in str(info.value)


def test_assume_rejects_runtime_values() -> None:
    @argus.kernel
    def k(A: T.Tensor[("M", "K"), T.bf16]):  # noqa: F821
        with T.grid(T.cdiv(M, 64), threads=128) as (bm,):  # noqa: F821
            T.assume(bm < 4)

    with pytest.raises(DSLError, match="bm is not one"):
        k.trace()


# --- alignment ------------------------------------------------------------------------------------------------


def test_tma_stride_needs_the_assumption_for_every_size() -> None:
    unaligned = _corpus("align_tma_stride")
    result = verify(unaligned, shapes={"K": 4097})
    finding = next(f for f in result.errors if f.code == "ALIGN_TMA")
    assert finding.counterexample.shapes["K"] == 4097
    assert finding.counterexample.variables["stride_bytes"] == 8194
    assert "8194 bytes" in finding.render_text()
    any_size = next(f for f in verify(unaligned).errors if f.code == "ALIGN_TMA")
    assert any_size.counterexample.shapes["K"] % 8 != 0  # Z3's counterexample is a size that breaks it
    assert "ALIGN_TMA" not in {f.code for f in verify(unaligned, shapes={"K": 4096}).findings}
    assert verify(_corpus("hopper_gemm_ok")).verdict == Verdict.VERIFIED  # the same with T.assume


def test_vector_alignment_follows_the_assumptions() -> None:
    unaligned = _corpus("align_vector_cp_async")
    finding = next(f for f in verify(unaligned, shapes={"N": 4097}).errors if f.code == "ALIGN_VECTOR")
    assert finding.counterexample.variables["stride_0"] == 4097
    assert verify(unaligned, shapes={"N": 4096}).verdict == Verdict.VERIFIED
    assert not verify(_corpus("align_vector_assumed_ok")).findings


@pytest.mark.parametrize(
    ("name", "assumption"), [("gemm_warp_specialized", "((K % 8) == 0)"), ("gemm_cp_async", "K % 8")]
)
def test_library_kernels_declare_what_their_copies_need(name: str, assumption: str) -> None:
    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    assert any(assumption in str(a) for a in kernel.assumptions)
    for shape in (entry.default_shape, entry.partial_shape):
        for a in kernel.assumptions[len(kernel.shape_vars) :]:
            from argus.ir.expr import evaluate

            env = {v: shape[v.name] for v in kernel.shape_vars}
            assert bool(evaluate(a, env)), f"{name}'s registered shape {shape} violates {a}"


def test_runtime_rejects_a_launch_that_violates_a_declared_assumption() -> None:
    from argus.backend.cuda.codegen import generate
    from argus.runtime import ArgumentError
    from argus.runtime.arguments import bind
    from tests.runtime.test_arguments import FakeTorchTensor

    entry = get_kernel("gemm_cp_async")
    generated = generate(entry.kernel.trace(**entry.params))

    def args(m: int, n: int, k: int):
        return (
            FakeTorchTensor((m, k), "torch.bfloat16", 0x7F0000000000),
            FakeTorchTensor((k, n), "torch.bfloat16", 0x7F0010000000),
            FakeTorchTensor((m, n), "torch.float32", 0x7F0020000000),
        )

    assert bind(generated, args(128, 72, 4096)).shapes == {"M": 128, "K": 4096, "N": 72}
    with pytest.raises(ArgumentError) as info:
        bind(generated, args(128, 72, 4097))
    assert info.value.code == "RUNTIME_ASSUMPTION" and "K % 8" in info.value.message


# --- proxy fences ---------------------------------------------------------------------------------------------


def test_the_library_attention_is_fenced_and_the_corpus_copy_without_the_fence_is_not() -> None:
    assert not [f for f in verify(get_kernel("flash_attention_fwd")).findings if f.code == "FENCE_PROXY_ASYNC"]
    finding = next(f for f in verify(_corpus("fence_attention_missing")).errors if f.code == "FENCE_PROXY_ASYNC")
    write, read = finding.counterexample.accesses
    assert "T.copy(p, sP)" in write.loc.text and "T.gemm(sP" in read.loc.text
    assert "before the barrier at line" in finding.message


# --- mbarrier arrive counts: the check's notion of an arrival is the interpreter's and the code generator's ----


def test_arrive_counts_agree_with_the_interpreter() -> None:
    from argus.interp import InterpError, run_kernel

    rng = np.random.default_rng(0)
    m, n, k = 128, 128, 256  # four K tiles over three stages: the producer waits for a released stage
    arrays = {"A": rng.standard_normal((m, k)), "B": rng.standard_normal((n, k)), "C": np.zeros((m, n))}
    run_kernel(_corpus("hopper_gemm_ok").trace(), dict(arrays))  # arrive_count=1: one role, one arrival
    with pytest.raises(InterpError) as info:
        run_kernel(_corpus("mbarrier_arrive_count_per_warpgroup").trace(), dict(arrays))
    assert info.value.code == "INTERP_DEADLOCK"
    with pytest.raises(InterpError) as info:
        run_kernel(_corpus("mbarrier_double_arrive").trace(), dict(arrays))
    assert info.value.code in ("INTERP_MBARRIER_OVERARRIVE", "INTERP_DEADLOCK", "INTERP_STALE_READ")
    # an arrival per warpgroup: two per phase, right against a count of 2, one too many against a count of 1
    run_kernel(_corpus("mbarrier_per_warpgroup_ok").trace(), dict(arrays))
    with pytest.raises(InterpError) as info:
        run_kernel(_corpus("mbarrier_per_warpgroup_one_count").trace(), dict(arrays))
    assert info.value.code in ("INTERP_MBARRIER_OVERARRIVE", "INTERP_STALE_READ")


def test_the_generated_code_keeps_the_ratio_of_arrivals_to_the_count() -> None:
    """The verifier counts one arrival per T.mbarrier_arrive of a role against `arrive_count` (one per warpgroup for an
    arrival made per warpgroup). The code generator makes one elected thread of the role arrive (`tid == 0`), or, for
    an arrival the deferred-release pass made per warpgroup (`MbarrierArrive.per_warpgroup`), one per warpgroup
    (`tid % 128 == 0`), and initialises the barrier with the IR's count, which that pass multiplied by the
    warpgroups (`MbarrierInit.warpgroups`): the generated arrivals per phase match the generated count exactly when
    the IR's do."""
    import re

    from argus.backend.cuda.codegen import generate
    from argus.ir.nodes import MbarrierInit, Role

    for name, params in (
        ("gemm_warp_specialized", {}),
        ("gemm_warp_specialized", {"STAGES": 4}),
        ("flash_attention_fwd", {}),
    ):
        kernel = get_kernel(name).kernel.trace(**params)
        source = generate(kernel).source
        inits = {
            m[0]: int(m[1]) for m in re.findall(r"mbarrier_init\(argus::smem_u32\(&(\w+)\[\w+\]\), (\d+)\)", source)
        }
        for init in (s for s in walk(kernel.body) if isinstance(s, MbarrierInit)):
            buf = init.barriers.buffer
            arrives = [s for s in walk(kernel.body) if isinstance(s, MbarrierArrive) and s.barrier.buffer is buf]
            lines = [
                ln
                for ln in source.splitlines()
                if re.search(rf"argus::mbarrier_arrive(_expect_tx)?\(argus::smem_u32\(&{buf.name}\[", ln)
            ]
            assert lines, (name, buf.name)
            per_warpgroup = all(a.per_warpgroup for a in arrives)
            assert per_warpgroup == all("% 128 == 0" in ln for ln in lines), lines
            assert per_warpgroup or all("_tid == 0" in ln or "(tid == 0)" in ln for ln in lines), lines
            roles = [r for r in walk(kernel.body) if isinstance(r, Role) and any(a in walk(r.body) for a in arrives)]
            factor = len(roles[0].warpgroups) if per_warpgroup else 1
            assert init.warpgroups == factor and init.arrive_count % factor == 0, (name, buf.name)
            assert inits[buf.name] == init.arrive_count, (name, buf.name, inits[buf.name])


# --- masked global windows ------------------------------------------------------------------------------------


def test_windows_outside_the_tensor_are_masked_on_the_interpreter() -> None:
    from argus.interp import run_kernel

    m, n = 40, 28  # the kernel assumes N <= 32: its window starts 4 columns before the first
    x = np.arange(m * n, dtype=np.float64).reshape(m, n)
    y = np.full((m, n), -7.0)
    run_kernel(_corpus("oob_masked_windows_ok").trace(), {"X": x, "Y": y})
    expected = np.full((m, n), -7.0)
    for bm in range(-(-m // 16) + 2):
        r0, c0 = bm * 16 - 8, max(n - 32, 0)
        for r in range(max(r0, 0), min(r0 + 16, m)):
            expected[r, c0:n] = x[r, c0:n] + 1.0
    assert np.array_equal(y, expected)
    assert not (y == -7.0).any()  # every element written (COVERAGE_OUTPUT proves it for all sizes)


# --- reductions: the tracer derives the shuffles, so none can miss a lane -----------------------------------


def test_every_reduction_shuffles_over_exactly_the_lanes_that_share_its_row() -> None:
    from argus.verify.access import np_layout

    checked = 0
    for entry in all_kernels():
        for s in walk(entry.kernel.trace(**entry.params).body):
            if not isinstance(s, Reduce):
                continue
            src = s.src.buffer
            rows, cols = src.static_shape
            t = np.arange(src.threads)[:, None]
            v = np.arange(src.values_per_thread)[None, :]
            idx = np_layout(src.tv, (t, v))
            key = (idx % rows) if s.axis == 1 else (idx // rows)  # the row (or column) each value belongs to
            holders: dict[int, set[int]] = {}
            for thread in range(src.threads):
                for k in set(key[thread].tolist()):
                    holders.setdefault(k, set()).add(thread)
            for thread in range(src.threads):
                reached = {thread}
                for lane in s.shuffle_lanes:
                    reached |= {x ^ lane for x in reached}
                for k in set(key[thread].tolist()):
                    assert holders[k] == reached, (entry.name, s.loc, thread, k)
            checked += 1
    assert checked >= 4


@argus.kernel
def _refilled_for_the_next_iteration(
    A: T.Tensor[("M", 64), T.bf16],  # noqa: F821
    B: T.Tensor[(64, 64), T.bf16],
    C: T.Tensor[("M", 64), T.f32],  # noqa: F821
    FENCED: bool = False,
):
    with T.grid(T.cdiv(M, 64), threads=128) as (bm,):  # noqa: F821
        sA = T.alloc_shared((64, 64), T.bf16, swizzle=128)
        sB = T.alloc_shared((64, 64), T.bf16, swizzle=128)
        acc = T.alloc_fragment((64, 64), T.f32, mma=T.wgmma_atom(64))
        rA = T.alloc_fragment((64, 64), T.bf16)
        T.copy(A.tile((bm, 0), (64, 64)), sA)
        T.copy(B.tile((0, 0), (64, 64)), sB)
        T.fence_proxy_async()
        T.barrier()
        T.fill(acc, 0.0)
        for i in T.serial(4):  # noqa: B007 - the counterexample names the loop by its variable
            T.gemm(sA, sB, acc)
            T.barrier()  # every wgmma is done with sA
            T.copy(A.tile((bm, 0), (64, 64)), rA)
            T.copy(rA * 0.5, sA)  # the next iteration's A, through registers
            if FENCED:
                T.fence_proxy_async()
            T.barrier()
        T.copy(acc, C.tile((bm, 0), (64, 64)))


def test_a_store_read_by_the_next_iterations_wgmma_needs_the_fence_too() -> None:
    result = verify(_refilled_for_the_next_iteration, FENCED=False)
    finding = next(f for f in result.errors if f.code == "FENCE_PROXY_ASYNC")
    assert "T.copy(rA * 0.5, sA)" in finding.loc.text and "the next iteration of i" in finding.message
    write, read = finding.counterexample.accesses
    assert read.loops["i"] == write.loops["i"] + 1
    # fenced, only the exactly-once check objects: the same tile of A enters the one accumulation in every
    # iteration (a fence test, not a GEMM), which COVERAGE_CONTRACTION_TWICE reports
    assert {f.code for f in verify(_refilled_for_the_next_iteration, FENCED=True).errors} == {
        "COVERAGE_CONTRACTION_TWICE"
    }


def test_the_interpreter_call_path_refuses_sizes_outside_the_assumptions_too() -> None:
    from argus.runtime import ArgumentError

    kernel = _corpus("align_vector_assumed_ok")  # T.assume("N % 4 == 0")
    x = np.arange(8 * 64, dtype=np.float64).reshape(8, 64)
    y = np.zeros_like(x)
    kernel(x, y, device="cpu")
    assert np.array_equal(x, y)
    with pytest.raises(ArgumentError) as info:
        kernel(np.zeros((8, 63)), np.zeros((8, 63)), device="cpu")
    assert info.value.code == "RUNTIME_ASSUMPTION" and "N % 4" in info.value.message


def test_pinned_sizes_must_be_sizes_the_kernel_allows() -> None:
    from argus.verify.engine import PinnedShapeError

    with pytest.raises(PinnedShapeError, match="violate kernel gemm_warp_specialized's assumption"):
        verify(get_kernel("gemm_warp_specialized"), shapes={"K": 4097})  # would be vacuously verified
    with pytest.raises(PinnedShapeError, match="no problem size 'Q'"):
        verify(get_kernel("gemm_warp_specialized"), shapes={"Q": 4})


def test_a_block_barrier_inside_one_of_several_roles_is_reported() -> None:
    import pathlib

    path = pathlib.Path(__file__).parent / "corpus" / "kernels_attention_ok.py"
    source = path.read_text().replace("T.barrier(1, 128)", "T.barrier()")
    namespace: dict = {"__name__": "attention_block_barrier"}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - the corpus kernel, one line changed
    findings = [f for f in verify(namespace["KERNEL"]).errors if f.code == "RACE_BARRIER_THREADS"]
    assert len(findings) == 2 and "only role 'consumer'" in findings[0].message
    assert findings[0].details == {"barrier_threads": 256, "executing_threads": 128}


def test_a_fill_fenced_before_the_tma_load_that_overwrites_it_verifies() -> None:
    kernel = _corpus("fence_fill_then_tma")
    assert "FENCE_PROXY_ASYNC" in {f.code for f in verify(kernel).errors}
    assert verify(kernel, FENCED=True).verdict == Verdict.VERIFIED


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "gemm_mma_sync", "gemm_cp_async", "gemm_persistent"])
def test_vector_findings_are_the_generated_codes_run_time_guards(name: str) -> None:
    """Every copy the verifier says may lose its vectors is one the generated code guards with a run-time
    `vector_ok` test of the same width; in a kernel that declares nothing, every guarded copy is reported."""
    import os
    import re

    from argus.backend.cuda.codegen import generate

    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    guards: dict[int, int] = {}
    line = None
    for text in generate(kernel).source.splitlines():
        m = re.search(r"// (\S+\.py):(\d+)  copy ", text)
        if m and os.path.basename(kernel.loc.file) == m[1]:
            line = int(m[2])
        g = re.search(r"const bool vector_ok\w* = .*// every (\d+)-element run is aligned", text)
        if g and line is not None:
            guards[line] = int(g[1])
    findings = {
        f.loc.line: f.counterexample.variables["vector_elements"]
        for f in verify(kernel).findings
        if f.code in ("ALIGN_VECTOR", "ALIGN_ASSUMPTION")
    }
    assert all(guards.get(line) == width for line, width in findings.items()), (findings, guards)
    if len(kernel.assumptions) == len(kernel.shape_vars):  # nothing declared beyond sizes >= 1
        assert findings and set(findings) == set(guards), (findings, guards)


# --- assumptions with divisors that are not powers of two ----------------------------------------------------------


@argus.kernel
def _whole_tiles_of_96(X: T.Tensor[("N",), T.f32], Y: T.Tensor[("N",), T.f32], ASSUME: bool = True):  # noqa: F821
    """Y = X in tiles of 32 elements, one block per tile, N // 32 blocks: every element is written only where N is a
    multiple of 32, which ``N % 96 == 0`` implies (96 is not a power of two: the remainder is a variable of the
    encoding with a defining constraint, where N // 32 is a shift)."""
    if ASSUME:
        T.assume("N % 96 == 0")
    with T.grid(N // 32, threads=32) as (b,):  # noqa: F821
        x = T.alloc_fragment((32,), T.f32, vector_bytes=4)
        T.copy(X.tile(b, 32), x)
        T.copy(x, Y.tile(b, 32))


def test_an_assumption_with_a_divisor_that_is_not_a_power_of_two_constrains_every_check() -> None:
    # the remainder in ``N % 96 == 0`` is a fresh variable with a defining constraint; the assumption used to reach
    # the solver without that definition and constrained nothing, so the last partial tile was reported unwritten
    assert verify(_whole_tiles_of_96).verdict == Verdict.VERIFIED
    found = verify(_whole_tiles_of_96, ASSUME=False)  # without it the bug is real, and still found
    assert [f.code for f in found.findings] == ["COVERAGE_OUTPUT"]
    assert found.findings[0].counterexample.shapes["N"] % 32 != 0


def test_pinned_sizes_are_checked_against_an_assumption_with_any_divisor() -> None:
    from argus.verify.engine import PinnedShapeError

    assert verify(_whole_tiles_of_96, shapes={"N": 192}).verdict == Verdict.VERIFIED
    with pytest.raises(PinnedShapeError, match="violate"):
        verify(_whole_tiles_of_96, shapes={"N": 200})


def test_the_coalescing_counts_use_sizes_the_assumptions_allow() -> None:
    # the windows start at multiples of Q // 3, 16-byte aligned for every Q the assumption allows; counted at the
    # plain 2^14 (which the assumption excludes) they were not, and the copy was reported uncoalesced
    @argus.kernel
    def thirds(X: T.Tensor[("Q",), T.f32], Y: T.Tensor[("Q",), T.f32]):  # noqa: F821
        T.assume("Q % 192 == 0")
        with T.grid(Q // 192, threads=32) as (b,):  # noqa: F821
            for s in T.serial(3):
                x = T.alloc_fragment((64,), T.f32, vector_bytes=8)
                T.copy(X.window(s * (Q // 3) + b * 64, 64), x)  # noqa: F821 - 8-byte runs: Q // 3 % 64 == 0
                T.copy(x, Y.window(s * (Q // 3) + b * 64, 64))  # noqa: F821

    result = verify(thirds)
    assert not [f for f in result.findings if f.code == "PERF_UNCOALESCED"], result.findings
