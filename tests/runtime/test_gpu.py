"""GPU tier: generated kernels run on an NVIDIA Hopper GPU through argus.runtime and give the interpreter's
numbers (and, for the library, the reference's within its tolerance). Skipped where torch or a GPU is absent.

Run on a GPU machine with ``python -m pytest tests/runtime/test_gpu.py -m gpu``."""

from __future__ import annotations

import numpy as np
import pytest

from argus.backend.cuda.codegen import compile_kernel
from argus.interp import run_kernel
from argus.kernels.registry import get_kernel
from argus.runtime import load
from tests.runtime.kernels_codegen import CASES

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible to torch"),
]

LIBRARY = (
    "vector_add",
    "softmax",
    "layer_norm",
    "gemm_mma_sync",
    "gemm_cp_async",
    "gemm_warp_specialized",  # TMA, mbarriers, warp roles with setmaxnreg, wgmma
    "gemm_hopper",  # the expert: bf16 C stored in 16-byte runs after a lane exchange (shuffles)
    "gemm_warp_specialized_persistent",  # 3 blocks walking the tiles, the pipeline running on across them
    "gemm_tma_store_epilogue",  # the same with C through shared memory and TMA stores (f32 C, partial tiles)
    "gemm_hopper_persistent",  # the persistent expert at its GPU parameters (132 blocks, grouped order)
    "gemm_hopper_nn",  # B given as (K, N): four TMA boxes per stage into 64-column panels, wgmma with trans-b
    "gemm_hopper_persistent_nn",
    "flash_attention_fwd",  # the same, 3-d TMA with a squeezed dimension, MN-major wgmma B, fence.proxy.async
)
_TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "i32": "int32"}


def _run_on_gpu(kernel, arrays: dict[str, np.ndarray], unchanged: list[str] | None = None) -> dict[str, np.ndarray]:
    """Launch on CUDA copies of `arrays` (in the kernel's dtypes); return every tensor afterwards. Names in
    `unchanged` must come back bit for bit as they went in."""
    compiled = compile_kernel(kernel)
    tensors = {}
    for p in compiled.generated.tensors:
        dtype = getattr(torch, _TORCH_DTYPES[p.dtype.name])
        tensors[p.name] = torch.as_tensor(arrays[p.name], device="cuda").to(dtype).contiguous()
    before = {name: tensors[name].clone() for name in unchanged or ()}
    load(compiled)(*(tensors[p.name] for p in compiled.generated.tensors))
    torch.cuda.synchronize()
    for name, copy in before.items():
        assert torch.equal(copy, tensors[name]), f"the kernel modified its input {name}"
    return {name: t.double().cpu().numpy() for name, t in tensors.items()}


def _run_on_interpreter(kernel, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    copies = {k: v.copy() for k, v in arrays.items()}
    run_kernel(kernel, copies)
    return copies


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.abs(got - want).max()) / max(1.0, float(np.abs(want).max()))


@pytest.mark.parametrize("name", LIBRARY)
@pytest.mark.parametrize("which", ["default", "partial"])
def test_library_kernel_matches_reference_and_interpreter(name: str, which: str) -> None:
    entry = get_kernel(name)
    shape = entry.default_shape if which == "default" else entry.partial_shape
    arrays = entry.make(shape, np.random.default_rng(1))
    expected = entry.reference({k: v.copy() for k, v in arrays.items()})
    kernel = entry.kernel.trace(**entry.params)
    gpu = _run_on_gpu(kernel, arrays, unchanged=[n for n in arrays if n not in expected])
    interp = _run_on_interpreter(kernel, arrays)
    for out, want in expected.items():
        assert _relative_error(gpu[out], want) <= entry.tolerance, out
        assert _relative_error(gpu[out], interp[out]) <= entry.tolerance, out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_codegen_paths_match_the_interpreter(case) -> None:
    kernel = case.kernel.trace(**case.params)
    for shape in case.shapes:
        arrays = case.make(shape, np.random.default_rng(2))
        gpu = _run_on_gpu(kernel, arrays)
        interp = _run_on_interpreter(kernel, arrays)
        for name, want in interp.items():
            assert _relative_error(gpu[name], want) <= case.tolerance, (case.name, shape, name)


def test_repeated_calls_reuse_the_checked_launch_but_still_check_new_arguments() -> None:
    from argus.kernels.elementwise import vector_add
    from argus.runtime.errors import ArgumentError

    loaded = load(compile_kernel(vector_add.trace()))
    a = torch.arange(1000, dtype=torch.float32, device="cuda")
    b = torch.ones(1000, device="cuda")
    c = torch.zeros(1000, device="cuda")
    for _ in range(3):
        loaded(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, a + 1) and len(loaded._prepared) == 1
    assert loaded.prepare(a, b, c) is loaded.prepare(a, b, c)  # prepare shares the cache: bound once
    c2 = torch.zeros(999, device="cuda")  # same pointers are not enough: the shape changed
    with pytest.raises(ArgumentError):
        loaded(a, b, c2)
    with pytest.raises(ArgumentError):
        loaded(a, b.double(), c)


def test_a_chain_of_dependent_launches_keeps_stream_order() -> None:
    # each launch reads what the one before it wrote: launched as programmatic dependents (each may start while the
    # previous finishes), every kernel's griddepcontrol.wait must still order them, so the chain sums exactly
    from argus.kernels.elementwise import vector_add

    kernel = load(compile_kernel(vector_add, dependent=True))
    n = 1 << 22
    ones = torch.ones(n, device="cuda")
    buffers = [torch.zeros(n, device="cuda"), torch.empty(n, device="cuda")]
    chain = [
        kernel.prepare(buffers[i % 2], ones, buffers[(i + 1) % 2], dependent=True) for i in range(2)
    ]  # x -> x + 1, alternating buffers
    for step in range(200):
        chain[step % 2].launch()
    torch.cuda.synchronize()
    assert torch.equal(buffers[0], torch.full((n,), 200.0, device="cuda"))
