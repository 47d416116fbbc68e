"""The built-in tasks: their tensors match the library kernels, their references match the kernels' numpy
references, their baselines compute the task, and their declared work is right."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from argus.eval.baselines import check_baselines
from argus.eval.correctness import allocate_outputs
from argus.kernels import moe
from argus.kernels.registry import get_kernel
from argus.tasks import TaskError, all_tasks, get_task, task_of_kernel, torch_dtype

TASKS = {t.name: t for t in all_tasks()}
KERNELS = [(t.name, k) for t in all_tasks() for k in t.kernels]


def test_registry() -> None:
    assert set(TASKS) == {
        "vector_add",
        "softmax",
        "layer_norm",
        "gemm",
        "gemm_nt",
        "gemm_nt_bf16",
        "gemm_residual",
        "gemm_nt_residual",
        "attention",
        "grouped_gemm",
        "grouped_swiglu",
        "conv2d_nhwc",
    }
    assert task_of_kernel("flash_attention_fwd").name == "attention"
    assert task_of_kernel("conv_cp_async").name == "conv2d_nhwc"
    assert task_of_kernel("grouped_gemm_swiglu").name == "grouped_swiglu"
    assert task_of_kernel("gemm_hopper").name == "gemm_nt_bf16" and task_of_kernel("gemm_naive").name == "gemm"
    with pytest.raises(TaskError) as e:
        get_task("gem")
    assert e.value.code == "TASK_UNKNOWN" and "did you mean 'gemm'" in str(e.value)
    with pytest.raises(TaskError):
        task_of_kernel("nope")


@pytest.mark.parametrize(("task_name", "kernel_name"), KERNELS)
def test_task_tensors_are_the_kernel_s_parameters(task_name: str, kernel_name: str) -> None:
    task, entry = TASKS[task_name], get_kernel(kernel_name)
    traced = entry.kernel.trace(**entry.params)
    assert [t.name for t in traced.tensors] == [t.name for t in task.tensors]
    assert [t.dtype.name for t in traced.tensors] == [t.dtype for t in task.tensors]


@pytest.mark.parametrize(("task_name", "kernel_name"), KERNELS)
def test_task_reference_agrees_with_the_library_reference(task_name: str, kernel_name: str) -> None:
    task, entry = TASKS[task_name], get_kernel(kernel_name)
    arrays = entry.make(task.small_sizes, np.random.default_rng(0))
    want = entry.reference({k: v.copy() for k, v in arrays.items()})
    inputs = [torch.from_numpy(arrays[t.name]) for t in task.inputs]
    got = task.reference(*inputs)
    (out_name,) = [t.name for t in task.outputs]
    scale = max(1.0, float(np.abs(want[out_name]).max()))
    assert float(np.abs(got.numpy() - want[out_name]).max()) / scale < 1e-10


@pytest.mark.parametrize("name", list(TASKS))
def test_samples_have_the_declared_shapes_and_dtypes(name: str) -> None:
    task = TASKS[name]
    inputs = task.sample(task.small_sizes, seed=1)
    for spec, x in zip(task.inputs, inputs, strict=True):
        assert tuple(x.shape) == spec.resolve(task.small_sizes) and x.dtype == torch_dtype(spec.dtype)
    outs = allocate_outputs(task, task.small_sizes, "cpu")
    assert all(bool(torch.isnan(o).all()) for o in outs)  # poisoned
    assert task.flops(task.small_sizes) > 0 and task.moved_bytes(task.small_sizes) > 0
    assert not torch.equal(inputs[0], task.sample(task.small_sizes, seed=2)[0])


@pytest.mark.parametrize("name", list(TASKS))
def test_baselines_compute_the_task(name: str) -> None:
    task = TASKS[name]
    checks = check_baselines(task, task.small_sizes, task.baseline_names, "cpu")
    ran = {n for n, c in checks.items() if "correct" in c}
    assert "eager" in ran
    for n in ran:
        assert checks[n]["correct"], (n, checks[n])
    # those PyTorch runs on a CPU: cuBLAS's stand-in, the flash and math SDPA backends, grouped_mm
    assert {"cublas", "sdpa-flash", "sdpa-math", "grouped_mm"} & set(task.baselines) <= ran


def test_grouped_gemm_offsets_split_the_rows() -> None:
    task = get_task("grouped_gemm")
    sizes = {"R": 128, "E": 5, "K": 16, "N": 8}
    for seed in range(5):
        offs, tiles = task.sample(sizes, seed)[2:4]
        assert offs.dtype == torch.int32 and int(offs[-1]) == 128
        # the row-tile counts are derived from the offsets (128-row tiles), not drawn
        rows = torch.diff(offs.long(), prepend=torch.zeros(1, dtype=torch.long))
        assert tiles.dtype == torch.int32 and tiles.tolist() == torch.cumsum((rows + 127) // 128, 0).tolist()
        assert bool((offs % 16 == 0).all()) and bool((offs[1:] >= offs[:-1]).all())
    with pytest.raises(TaskError, match="multiple of 16"):
        task.sample({**sizes, "R": 100}, 0)


def test_a_cpu_device_draws_as_before() -> None:
    # the CPU draw (float64 rounded to the dtype) is the one every recorded CPU result was made with
    task = get_task("grouped_gemm")
    sizes = {"R": 64, "E": 3, "K": 16, "N": 8}
    for a, b in zip(task.sample(sizes, 3), task.sample(sizes, 3, "cpu"), strict=True):
        assert torch.equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["grouped_gemm", "layer_norm"])
def test_a_gpu_draw_is_made_on_the_gpu(name: str) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    task = get_task(name)
    sizes = dict(task.small_sizes)
    draw = task.sample(sizes, 5, "cuda")
    again = task.sample(sizes, 5, "cuda")
    for spec, x, y, cpu in zip(task.inputs, draw, again, task.sample(sizes, 5), strict=True):
        assert x.device.type == "cuda" and x.dtype == cpu.dtype and x.shape == cpu.shape, spec.name
        assert torch.equal(x, y), spec.name  # reproducible from the seed
    if name == "grouped_gemm":
        offs, tiles = draw[2:4]
        assert int(offs[-1]) == sizes["R"] and torch.equal(tiles.cpu(), moe.tile_counts(offs.cpu(), 128))


def test_missing_size_is_named() -> None:
    with pytest.raises(TaskError) as e:
        get_task("gemm").sample({"M": 4, "N": 4}, 0)
    assert e.value.code == "TASK_SIZE_MISSING" and "'K'" in str(e.value)
