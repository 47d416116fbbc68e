"""The workload declarations (`argus.kernels.workloads`) are the one description of the library: every kernel entry
and every built-in task is derived from them, each workload is declared once, each reference is written once, old
kernel names still resolve, and the GEMM ladder is declared, registered and written in ladder order."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from argus.kernels import all_kernels, get_kernel, lineage, lineages
from argus.kernels import attention_lineage as attention_lineage_module
from argus.kernels import conv_lineage as conv_lineage_module
from argus.kernels import gemm as gemm_module
from argus.kernels import gemm_residual as gemm_residual_module
from argus.kernels import grouped as grouped_module
from argus.kernels.registry import KernelLookupError, canonical_name, library_kernel, load
from argus.kernels.workloads import OLD_NAMES, PROBLEMS, WORKLOADS
from argus.tasks import all_tasks, get_task, task_of_kernel

SRC = Path(__file__).resolve().parents[2] / "src" / "argus"


def test_each_workload_and_problem_is_declared_once() -> None:
    names = [w.name for w in WORKLOADS]
    assert len(names) == len(set(names))
    problems = [p.name for p in PROBLEMS]
    assert len(problems) == len(set(problems))
    # two entries may share a kernel (an expert configuration is a kernel at other parameters), never its parameters
    configurations = [(w.kernel.name, tuple(sorted(w.params.items()))) for w in WORKLOADS]
    assert len(configurations) == len(set(configurations))
    assert all(any(w.problem is p for p in PROBLEMS) for w in WORKLOADS)  # every workload's problem is declared


def test_every_kernel_entry_is_derived_from_its_declaration() -> None:
    entries = all_kernels()
    assert [e.name for e in entries] == [w.name for w in WORKLOADS]
    for entry, workload in zip(entries, WORKLOADS, strict=True):
        assert entry.workload is workload and entry.kernel is workload.kernel
        assert entry.default_shape == workload.shapes.default and entry.partial_shape == workload.shapes.partial
        assert entry.params == workload.params and entry.tolerance == workload.tolerance
        assert entry.make is workload.problem.make
        assert get_kernel(workload.name) == library_kernel(workload)
    first = get_kernel("gemm_hopper")
    first.params["BN"] = 64  # an entry is a copy: changing it changes neither the declaration nor the next lookup
    assert get_kernel("gemm_hopper").params["BN"] == 256


def test_every_builtin_task_is_derived_from_its_problem() -> None:
    tasks = all_tasks()
    assert [t.name for t in tasks] == [p.name for p in PROBLEMS]
    for task, problem in zip(tasks, PROBLEMS, strict=True):
        assert task.reference is problem.reference
        assert [(t.name, t.shape, t.dtype, t.output) for t in task.tensors] == [
            (t.name, t.shape, t.dtype, t.output) for t in problem.tensors
        ]
        assert task.small_sizes == problem.cpu_sizes and list(task.bench_sizes) == list(problem.bench_sizes)
        assert task.kernels == tuple(w.name for w in WORKLOADS if w.problem is problem)
        assert task.forbidden == problem.forbidden and task.forbidden_ops == problem.forbidden_ops
        assert get_task(problem.name).kernels == task.kernels
    for workload in WORKLOADS:
        assert task_of_kernel(workload.name).name == workload.problem.name


def test_a_reference_is_one_function_on_numpy_and_on_torch() -> None:
    """The kernel's reference (numpy), its torch reference and the task's reference are the declared one."""
    torch = pytest.importorskip("torch")
    entry = get_kernel("softmax")
    arrays = entry.make(entry.partial_shape, np.random.default_rng(0))
    on_numpy = entry.reference(arrays)["Y"]
    on_torch = get_task("softmax").reference(torch.from_numpy(arrays["X"])).numpy()
    assert isinstance(on_numpy, np.ndarray) and np.abs(on_numpy - on_torch).max() < 1e-12
    assert np.allclose(on_numpy.sum(axis=1), 1.0)


def test_pytorch_operators_appear_once_in_the_library() -> None:
    """The operators a reference needs are called in `argus.kernels.arrays` only: no second copy of a reference
    elsewhere in the package (forbidden-call lists name them as strings, which this does not count)."""
    for call in ("torch.softmax(", "functional.layer_norm(", "torch.relu(", ".var(axis=", "keepdims=True)"):
        where = [p.relative_to(SRC) for p in SRC.rglob("*.py") if call in p.read_text()]
        assert [str(p) for p in where] == ["kernels/arrays.py"], (call, where)


@pytest.mark.parametrize(("old", "new"), sorted(OLD_NAMES.items()))
def test_old_kernel_names_resolve(old: str, new: str) -> None:
    assert old not in {w.name for w in WORKLOADS}
    assert canonical_name(old) == new
    entry = get_kernel(old)
    assert entry.name == new and entry.kernel.name == new
    assert load(old).name == new
    assert task_of_kernel(old).name == task_of_kernel(new).name


def test_an_unknown_name_suggests_a_current_one() -> None:
    with pytest.raises(KernelLookupError, match="did you mean 'gemm_warp_specialized'"):
        get_kernel("gemm_warp_specialised")


def test_the_ladders_are_in_registry_order() -> None:
    """Each lineage is one run of consecutive registry entries, in lineage order, and its kernels are defined in
    their module in the same order."""
    names = [e.name for e in all_kernels()]
    assert lineages() == ("gemm", "gemm_residual", "grouped", "grouped_swiglu", "conv", "attention")
    families = (
        ("gemm", gemm_module),
        ("gemm_residual", gemm_residual_module),
        ("grouped", grouped_module),
        ("grouped_swiglu", grouped_module),
        ("conv", conv_lineage_module),
        ("attention", attention_lineage_module),
    )
    for family, module in families:
        rungs = [s.kernel for s in lineage(family)]
        start = names.index(rungs[0])
        assert names[start : start + len(rungs)] == rungs
        kernels = list(dict.fromkeys(get_kernel(r).kernel for r in rungs))
        lines = [inspect.getsourcelines(k.fn)[1] for k in kernels]
        assert all(k.fn.__module__ == module.__name__ for k in kernels)
        assert lines == sorted(lines), (family, [k.name for k in kernels])


def test_the_gemm_ladder_adds_one_named_mechanism_per_rung() -> None:
    ladder = lineage("gemm")
    assert [(s.kernel, s.mechanism) for s in ladder] == [
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
    residual = lineage("gemm_residual")
    assert [s.mechanism for s in residual] == [s.mechanism for s in ladder]
    assert [s.kernel for s in residual] == [s.kernel.replace("gemm_", "gemm_residual_", 1) for s in ladder]
