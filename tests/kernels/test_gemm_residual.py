"""The held-out family C = relu(A @ B + R) (`argus.kernels.gemm_residual`, lineage ``"gemm_residual"``): its rungs
mirror the GEMM lineage mechanism by mechanism, each is correct on the interpreter against its task's PyTorch
reference (partial tiles included), verifies with no error (its tag assertions proved), compiles for sm_90a with
the SASS of its mechanism and a fused epilogue, belongs to the right task, and the agent's `next_rung` climbs the
family without leaving it. The GPU test runs where a CUDA GPU is visible."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import argus
import argus.lang as T
from argus.agent.arms import KernelRef, next_rung, task_for
from argus.backend.cuda.codegen import CompiledKernel, compile_kernel
from argus.interp import run_kernel
from argus.ir.nodes import Alloc, Copy, Gemm, Role, Space, walk
from argus.ir.tags import AssertTag
from argus.kernels import get_kernel, lineage, lineages
from argus.lang.errors import DSLError
from argus.layout import ComposedLayout
from argus.lineage.mechanisms import RUNGS as MECHANISM_RUNGS
from argus.tasks import get_task, task_of_kernel
from argus.verify import Verdict, verify

RUNGS = (
    "gemm_residual_naive",
    "gemm_residual_smem_tiled",
    "gemm_residual_mma_sync",
    "gemm_residual_cp_async",
    "gemm_residual_cp_async_swizzled",
    "gemm_residual_tma_wgmma",
    "gemm_residual_warp_specialized",
    "gemm_residual_warp_specialized_persistent",
    "gemm_residual_tma_store_epilogue",
)
#: The GEMM rung each mirrors.
COUNTERPART = {name: name.replace("gemm_residual_", "gemm_") for name in RUNGS}
NT_RUNGS = RUNGS[5:]  # B given as (N, K): the TMA + wgmma rungs


def _task_name(name: str) -> str:
    return "gemm_nt_residual" if name in NT_RUNGS else "gemm_residual"


# --- the ladder --------------------------------------------------------------------------------------------------


def test_the_family_is_a_lineage_with_the_gemm_mechanisms() -> None:
    assert "gemm_residual" in lineages() and "gemm" in lineages()
    steps = lineage("gemm_residual")
    assert tuple(s.kernel for s in steps) == RUNGS
    gemm_steps = lineage("gemm")
    assert [s.mechanism for s in steps] == [s.mechanism for s in gemm_steps]  # the same moves, by the same names
    assert [COUNTERPART[s.kernel] for s in steps] == [s.kernel for s in gemm_steps]
    assert all(MECHANISM_RUNGS[s.mechanism].entry for s in steps[1:])  # the agent knows which entry names each move
    assert all(s.adds for s in steps)
    # the last two rungs are one kernel, as in the GEMM ladder: the TMA-store rung changes EPILOGUE and nothing else
    persistent, staged = get_kernel(RUNGS[-2]), get_kernel(RUNGS[-1])
    assert staged.kernel is persistent.kernel and staged.params == {**persistent.params, "EPILOGUE": "tma"}
    assert all(shape["N"] % 8 == 0 for shape in (staged.default_shape, staged.partial_shape, PARTIAL))


def test_the_gemm_lineage_is_the_issues_ladder() -> None:
    assert [(s.kernel, s.mechanism) for s in lineage("gemm")] == [
        ("gemm_naive", "naive_fma"),
        ("gemm_smem_tiled", "smem_tiling"),
        ("gemm_mma_sync", "mma_sync"),
        ("gemm_cp_async", "cp_async_pipeline"),
        ("gemm_cp_async_swizzled", "smem_swizzle"),
        ("gemm_tma_wgmma", "tma_wgmma"),
        ("gemm_warp_specialized", "warp_specialization"),
        ("gemm_warp_specialized_persistent", "persistent_grid"),
        ("gemm_tma_store_epilogue", "tma_store"),
    ]


def test_next_rung_climbs_the_family_and_stays_in_it() -> None:
    climbed = [RUNGS[0]]
    while (step := next_rung(KernelRef(library=climbed[-1]))) is not None:
        kernel, lineage_step = step
        assert lineage_step.kernel == kernel
        climbed.append(kernel)
    assert tuple(climbed) == RUNGS
    assert next_rung(KernelRef(library="gemm_cp_async_swizzled"))[0] == "gemm_tma_wgmma"  # GEMM's own ladder intact


@pytest.mark.parametrize("name", RUNGS)
def test_task_for_maps_the_rung_to_its_task(name: str) -> None:
    entry = get_kernel(name)
    assert task_for(entry.kernel, entry.params).name == _task_name(name)
    assert task_of_kernel(name).name == _task_name(name)
    # and the GEMM rung it mirrors keeps its own task: R makes the two interfaces differ
    other = get_kernel(COUNTERPART[name])
    assert task_for(other.kernel, other.params).name in ("gemm", "gemm_nt")


def test_tasks() -> None:
    for name, b_shape in (("gemm_residual", ("K", "N")), ("gemm_nt_residual", ("N", "K"))):
        task = get_task(name)
        assert [(t.name, t.shape, t.dtype, t.output) for t in task.tensors] == [
            ("A", ("M", "K"), "bf16", False),
            ("B", b_shape, "bf16", False),
            ("R", ("M", "N"), "f32", False),
            ("C", ("M", "N"), "f32", True),
        ]
        assert task.bench_sizes[0] == {"M": 4096, "N": 4096, "K": 4096}
        assert task.bench_sizes == get_task("gemm" if name == "gemm_residual" else "gemm_nt").bench_sizes
        sizes = {"M": 64, "N": 32, "K": 16}
        assert task.moved_bytes(sizes) == 2 * 64 * 16 + 2 * 16 * 32 + 4 * 64 * 32 + 4 * 64 * 32
        a, b, r = task.sample(task.small_sizes, seed=0)
        product = a.double() @ (b.double().T if name == "gemm_nt_residual" else b.double())
        out = task.reference(a.double(), b.double(), r.double())
        assert torch.equal(out, torch.relu(product + r.double()))
        assert 0.2 < float((out == 0).double().mean()) < 0.8  # the ReLU clamps: a plain GEMM would not pass


# --- the rungs ---------------------------------------------------------------------------------------------------


def _features(name: str) -> set[str]:
    """The mechanisms a kernel's IR shows (as tests/interp/test_lineage.py reads them for the GEMM lineage)."""
    entry = get_kernel(name)
    out: set[str] = set()
    for s in walk(entry.kernel.trace(**entry.params).body):
        if isinstance(s, Gemm):
            out.add({"fma": "fma", "mma": "mma.sync", "wgmma": "wgmma"}[s.atom.split(".")[0]])
        elif isinstance(s, Copy) and (s.atom in ("cp.async", "tma") or s.atom.startswith("ldmatrix")):
            out.add(s.atom.split(".x")[0])
        elif isinstance(s, Alloc) and s.buffer.space == Space.SHARED:
            out.add("shared tiles")
            if isinstance(s.buffer.layout, ComposedLayout):
                out.add("swizzle")
        elif isinstance(s, Alloc) and s.buffer.space == Space.MBARRIER:
            out.add("mbarrier")
        elif isinstance(s, Role):
            out.add("warp roles" + (" + setmaxnreg" if s.registers else ""))
    return out


@pytest.mark.parametrize("name", RUNGS)
def test_each_rung_has_its_counterpart_s_mechanisms_and_policies(name: str) -> None:
    mine, theirs = get_kernel(name), get_kernel(COUNTERPART[name])
    assert _features(name) == _features(COUNTERPART[name])
    k_mine, k_theirs = mine.kernel.trace(**mine.params), theirs.kernel.trace(**theirs.params)
    assert k_mine.policies == k_theirs.policies
    assert mine.params == theirs.params and (mine.default_shape, mine.partial_shape) == (
        theirs.default_shape,
        theirs.partial_shape,
    )
    # not mirrored: the Hopper rungs' C dtype (f32 here), operand dtype (IN: bf16 here), operand layouts (A_MAJOR,
    # B_MAJOR: K-major here), on the 2-D grid gemm_warp_specialized's tile order (ORDER, GROUP: the 2-D grid by
    # default; the persistent rungs mirror theirs), and the GEMM library's mechanisms of the persistent kernel
    # (CONSUMERS, SPLITS, BATCH, BATCH_GRID, PART, C_MAJOR, CLUSTER: `argus.kernels.matmul`; off in the ladder's
    # rungs, which these mirror)
    library = ("CONSUMERS", "SPLITS", "BATCH", "BATCH_GRID", "PART", "C_MAJOR", "CLUSTER")
    skipped = ("OUT", "IN", "A_MAJOR", "B_MAJOR", *library) + (
        () if "ORDER" in mine.kernel.defaults else ("ORDER", "GROUP")
    )
    defaults = {k: v for k, v in theirs.kernel.defaults.items() if k not in skipped}
    assert mine.kernel.defaults == defaults


def _arrays(name: str, shape: dict[str, int], seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The rung's inputs at `shape` and the task's PyTorch reference for them (float64)."""
    entry = get_kernel(name)
    arrays = entry.make(shape, np.random.default_rng(seed))
    task = get_task(_task_name(name))
    inputs = [torch.from_numpy(arrays[t.name].copy()) for t in task.inputs]
    return arrays, task.reference(*inputs).numpy()


#: Shapes that are not multiples of any rung's tiles (M, N and K partial; K and N multiples of 8 as the cp.async and
#: TMA rungs assume).
PARTIAL = {"M": 72, "N": 40, "K": 24}


@pytest.mark.parametrize("name", RUNGS)
def test_correct_on_the_interpreter_against_the_task_reference(name: str) -> None:
    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    for shape in (PARTIAL, entry.partial_shape):
        arrays, want = _arrays(name, shape, seed=7)
        run_kernel(kernel, arrays)
        got = arrays["C"]
        assert np.all(np.isfinite(got))
        assert float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max())) <= entry.tolerance, shape
        assert np.array_equal(got == 0, want == 0)  # clamped exactly where the reference is
        # the epilogue is there: neither the plain product nor its ReLU without R gives these numbers
        plain = np.maximum(arrays["A"] @ (arrays["B"].T if name in NT_RUNGS else arrays["B"]), 0.0)
        assert float(np.abs(got - plain).max()) > 1.0


@pytest.mark.parametrize("name", RUNGS)
def test_verifies_with_its_epilogue_invariant(name: str) -> None:
    entry = get_kernel(name)
    kernel = entry.kernel.trace(**entry.params)
    asserts = [s for s in walk(kernel.body) if isinstance(s, AssertTag)]
    assert len(asserts) == 3 and all(a.loc.file.endswith("gemm_residual.py") for a in asserts)
    assert "r.coord[0]" in asserts[-1].text  # the epilogue's: element (i, j) adds R[bm * BM + i, bn * BN + j]
    result = verify(entry)
    assert result.verdict == Verdict.VERIFIED and not result.errors, result.render_text()
    conflicts = {f.details["buffer"] for f in result.warnings if f.code == "PERF_BANK_CONFLICT"}
    if name == "gemm_residual_cp_async":
        assert conflicts == {"sA", "sB"}  # ldmatrix reads 4- and 8-way conflicted rows ...
    if name in ("gemm_residual_cp_async_swizzled", *NT_RUNGS):
        assert conflicts == set()  # ... which the swizzle removes


#: Tensor shapes of the seeded-bug kernels below (names, not forward references: kept out of the annotations' text).
MK, KN, MN = ("M", "K"), ("K", "N"), ("M", "N")


@argus.kernel(policies={"tile_shape": ("BM", "BN", "BK")})
def _residual_of_the_transposed_block(
    A: T.Tensor[MK, T.bf16],
    B: T.Tensor[KN, T.bf16],
    R: T.Tensor[MN, T.f32],
    C: T.Tensor[MN, T.f32],
    BM: int = 64,
    BN: int = 64,
    BK: int = 32,
    SWAP: bool = True,
):
    """`gemm_residual_mma_sync` with the residual tile of block (bn, bm) when SWAP: a seeded bug (square tiles,
    so every shape still matches)."""
    m, k_extent = A.shape
    n = C.shape[1]
    with T.grid(T.cdiv(m, BM), T.cdiv(n, BN), threads=128) as (bm, bn):
        sA = T.alloc_shared((BM, BK), T.bf16)
        sB = T.alloc_shared((BK, BN), T.bf16)
        atom = T.mma_sync(T.bf16, T.f32)
        acc = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        rA = T.alloc_fragment((BM, BK), T.bf16, mma=atom, operand="A", groups=(2, 2))
        rB = T.alloc_fragment((BK, BN), T.bf16, mma=atom, operand="B", groups=(2, 2))
        T.fill(acc, 0.0)
        for k in T.serial(T.cdiv(k_extent, BK)):
            T.copy(A.tile((bm, k), (BM, BK)), sA)
            T.copy(B.tile((k, bn), (BK, BN)), sB)
            T.barrier()
            T.copy(sA, rA, atom="ldmatrix")
            T.copy(sB, rB, atom="ldmatrix")
            T.gemm(rA, rB, acc)
            T.barrier()
        rR = T.alloc_fragment((BM, BN), T.f32, mma=atom, groups=(2, 2))
        T.copy(R.tile((bn, bm) if SWAP else (bm, bn), (BM, BN)), rR)
        T.assert_tag(lambda r: (r[0] == bm * BM + r.coord[0]) & (r[1] == bn * BN + r.coord[1]), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (BM, BN)))


def test_the_epilogue_invariant_catches_the_residual_of_another_block() -> None:
    assert verify(_residual_of_the_transposed_block.trace(SWAP=False)).verdict == Verdict.VERIFIED
    result = verify(_residual_of_the_transposed_block.trace(SWAP=True))
    assert result.verdict == Verdict.VIOLATED
    finding = result.errors[0]
    assert finding.counterexample is not None and "T.assert_tag" in finding.render_text()
    # and the interpreter gives wrong numbers for it
    arrays, want = _arrays("gemm_residual_mma_sync", {"M": 128, "N": 128, "K": 32}, seed=1)
    run_kernel(_residual_of_the_transposed_block.trace(SWAP=True), arrays)
    assert float(np.abs(arrays["C"] - want).max()) > 1.0


@argus.kernel
def _blocked_residual(A: T.Tensor[MK, T.bf16], R: T.Tensor[MN, T.f32], C: T.Tensor[MN, T.f32]):
    with T.grid(1, 1, threads=128) as (bm, bn):
        acc = T.alloc_fragment((64, 64), T.f32, mma=T.mma_sync(T.bf16, T.f32), groups=(2, 2))
        rR = T.alloc_fragment((64, 64), T.f32)  # 16-byte runs of rows: not the accumulator's layout
        T.fill(acc, 0.0)
        T.copy(R.tile((bm, bn), (64, 64)), rR)
        T.copy(T.maximum(acc + rR, 0.0), C.tile((bm, bn), (64, 64)))


def test_a_residual_fragment_in_another_layout_is_refused() -> None:
    """The epilogue allocates R's fragment with the accumulator's atom and groups: a blocked fragment holds other
    elements in each thread, and the DSL says so at the addition."""

    with pytest.raises(DSLError) as err:
        _blocked_residual.trace()
    assert err.value.code == "DSL_FRAGMENT_MISMATCH"


# --- sm_90a ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built() -> dict[str, CompiledKernel]:
    out = {}
    for name in RUNGS:
        entry = get_kernel(name)
        out[name] = compile_kernel(entry.kernel.trace(**entry.params), cache=False)
    return out


#: The accumulator elements per thread: the ReLU is one FMNMX (max with 0) per element, in registers.
ELEMENTS_PER_THREAD = {
    "gemm_residual_naive": 1,
    "gemm_residual_smem_tiled": 8 * 8,
    "gemm_residual_mma_sync": 64 * 64 // 128,
    "gemm_residual_cp_async": 64 * 64 // 128,
    "gemm_residual_cp_async_swizzled": 64 * 64 // 128,
    "gemm_residual_tma_wgmma": 128 * 128 // 256,
    "gemm_residual_warp_specialized": 128 * 128 // 256,
    "gemm_residual_warp_specialized_persistent": 128 * 128 // 256,
    "gemm_residual_tma_store_epilogue": 128 * 128 // 256,
}


@pytest.mark.parametrize("name", RUNGS)
def test_compiles_with_a_fused_epilogue_and_no_spills(name: str, built) -> None:
    compiled = built[name]
    assert compiled.module.arch == "sm_90a" and compiled.module.warnings == ()
    resources = compiled.resources
    assert (resources.spill_stores, resources.spill_loads, resources.stack_frame) == (0, 0, 0), str(resources)
    mix = compiled.instruction_mix()
    assert mix["LDL"] == 0 and mix["STL"] == 0
    assert compiled.generated.notes == ()
    assert mix["FMNMX"] == ELEMENTS_PER_THREAD[name]
    assert [p.name for p in compiled.generated.tensors] == ["A", "B", "R", "C"]


def test_the_sass_shows_each_rung_s_mechanism(built) -> None:
    def mix(name: str, modifiers: bool = False):
        return built[name].instruction_mix(modifiers=modifiers)

    naive = mix("gemm_residual_naive")
    assert naive["FFMA"] >= 16 and naive["FFMA"] % 16 == 0
    assert naive["HMMA"] == naive["LDS"] == naive["BAR"] == 0
    assert built["gemm_residual_naive"].generated.shared_bytes == 0

    tiled = mix("gemm_residual_smem_tiled")
    assert tiled["FFMA"] == 8 * 8 * 8 and mix("gemm_residual_smem_tiled", True)["LDS.128"] == 16
    assert tiled["HMMA"] == 0 and tiled["BAR"] == 2

    for name in ("gemm_residual_mma_sync", "gemm_residual_cp_async", "gemm_residual_cp_async_swizzled"):
        detailed = mix(name, True)
        assert detailed["HMMA.16816.F32.BF16"] == 16 and mix(name)["LDSM"] == 8, name
        assert (mix(name)["LDGSTS"] > 0) == (name != "gemm_residual_mma_sync"), name
    assert mix("gemm_residual_cp_async_swizzled", True)["LDGSTS.E.BYPASS.128.ZFILL"] == 8
    source = built["gemm_residual_cp_async_swizzled"].generated.source
    assert "Sw<2,3,3>" in source and "Sw<3,3,3>" in source

    for name in NT_RUNGS:
        detailed, plain = mix(name, True), mix(name)
        assert detailed["HGMMA.64x128x16.F32.BF16"] == 4 and plain["UTMALDG"] >= 2, name
        assert plain["HMMA"] == plain["LDGSTS"] == 0, name
        # A and B through TMA, and C on the last rung; R is read by the threads
        maps = [m.tensor for m in built[name].generated.tensor_maps]
        assert maps == (["A", "B", "C"] if name == "gemm_residual_tma_store_epilogue" else ["A", "B"]), name
    assert mix("gemm_residual_tma_wgmma")["USETMAXREG"] == 0  # the register split is the next rung's
    for name in RUNGS[6:]:
        assert mix(name)["USETMAXREG"] >= 2, name  # producer dec, consumer inc
    persistent = mix("gemm_residual_warp_specialized_persistent")
    assert persistent["UTMASTG"] == 0 < persistent["STG"]
    assert mix("gemm_residual_tma_store_epilogue")["UTMASTG"] > 0 == mix("gemm_residual_tma_store_epilogue")["STG"]


# --- the GPU -----------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch")
@pytest.mark.parametrize("name", RUNGS)
def test_correct_on_the_gpu(name: str) -> None:
    from argus.runtime import load

    entry = get_kernel(name)
    compiled = compile_kernel(entry.kernel.trace(**entry.params))
    for shape in (PARTIAL, entry.partial_shape, entry.default_shape):
        arrays, want = _arrays(name, shape, seed=3)
        dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
        tensors = {
            p.name: torch.as_tensor(arrays[p.name], device="cuda").to(dtypes[p.dtype.name]).contiguous()
            for p in compiled.generated.tensors
        }
        load(compiled)(*(tensors[p.name] for p in compiled.generated.tensors))
        torch.cuda.synchronize()
        got = tensors["C"].double().cpu().numpy()
        assert float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max())) <= entry.tolerance, shape
