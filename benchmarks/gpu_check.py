"""Run every library kernel on an NVIDIA GPU: correctness against the registry's reference, and timing.

Usage (from the repository root, no install needed)::

    PYTHONPATH=src python benchmarks/gpu_check.py [--large] [--kernels NAME,...] [--reps 50] [--warmup 10]

For each library kernel at its default and partial (not a multiple of the tiles) shapes, and with
``--large`` at a larger shape too: trace, generate CUDA, compile for sm_90a, launch on torch tensors made by
the registry's ``make`` (converted to the kernel's dtypes; outputs poisoned with NaN first), compare with the
registry's ``reference`` (float64) under the registry's tolerance (the largest error relative to the
reference's scale, as ``check_on_interpreter`` measures it), and check the inputs were not modified. Each
kernel is then timed with CUDA events (median of ``--reps`` after ``--warmup`` launches, the L2 cache
flushed before each), next to a PyTorch baseline on the same shapes in the same run (``torch.matmul`` for the
GEMMs, ``A @ B.T`` for ``gemm_warp_specialized`` whose B is given as (N, K); ``scaled_dot_product_attention`` for
flash attention, which returns bf16 where argus writes f32), and the ratio printed (baseline time / argus
time: above 1 means argus is faster).

Prints the GPU, driver, CUDA, torch and NVRTC versions, then one table. Exits 1 if any kernel fails
correctness (kernels the code generator does not support yet are listed as skipped, not failed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    import argus  # noqa: F401
except ImportError:  # run from a checkout without PYTHONPATH=src
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

LARGE_SHAPES = {
    "vector_add": {"N": 1 << 24},
    "softmax": {"M": 65536, "N": 128},
    "layer_norm": {"M": 65536, "N": 128},
    "gemm_mma_sync": {"M": 2048, "N": 2048, "K": 2048},
    "gemm_cp_async": {"M": 2048, "N": 2048, "K": 2048},
    "gemm_warp_specialized": {"M": 4096, "N": 4096, "K": 4096},
    "flash_attention_fwd": {"BH": 32, "S": 2048},
}


@dataclass
class Row:
    kernel: str
    shape: str
    status: str
    error: float | None = None
    tolerance: float | None = None
    ours_us: float | None = None
    base_us: float | None = None
    baseline: str = ""
    detail: str = ""


def _torch_dtype(torch, dtype):  # noqa: ANN001
    return {
        "f32": torch.float32,
        "bf16": torch.bfloat16,
        "f16": torch.float16,
        "i32": torch.int32,
        "u32": torch.uint32,
        "bool": torch.bool,
    }[dtype.name]


def _time(torch, fn, reps: int, warmup: int, flush) -> float:  # noqa: ANN001
    """Median microseconds of `fn` over `reps` launches (after `warmup`), each timed by CUDA events with
    the L2 flushed just before (the flush also keeps the GPU busy while the CPU enqueues the launch)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def _baseline(torch, name: str, tensors: dict):  # noqa: ANN001
    """A PyTorch implementation of the same computation on the same tensors, and its label."""
    import torch.nn.functional as F

    if name.startswith("gemm"):
        a, b = tensors["A"], tensors["B"]
        if name == "gemm_warp_specialized":
            return (lambda: torch.matmul(a, b.t())), "torch.matmul bf16 (A @ B^T)"
        return (lambda: torch.matmul(a, b)), "torch.matmul bf16"
    if name == "flash_attention_fwd":
        # 4-D (batch=1, heads=BH, S, D) so that SDPA can take its fused paths; the backend is named.
        q, k, v = (tensors[n].unsqueeze(0) for n in ("Q", "K", "V"))
        from torch.nn.attention import SDPBackend, sdpa_kernel

        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            try:
                with sdpa_kernel(backend):
                    F.scaled_dot_product_attention(q, k, v)
            except RuntimeError:
                continue

            def run(backend=backend):  # noqa: ANN001, ANN202
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v)

            return run, f"SDPA {backend.name.lower()} bf16"
        return (lambda: F.scaled_dot_product_attention(q, k, v)), "SDPA default bf16"
    if name == "vector_add":
        a, b, c = tensors["A"], tensors["B"], tensors["C"]
        return (lambda: torch.add(a, b, out=c)), "torch.add"
    if name == "softmax":
        x = tensors["X"]
        return (lambda: torch.softmax(x, dim=1)), "torch.softmax"
    if name == "layer_norm":
        x, w, bias = tensors["X"], tensors["W"], tensors["Bias"]
        return (lambda: F.layer_norm(x, (x.shape[1],), w, bias, 1e-5)), "F.layer_norm"
    return None, ""


def check_one(torch, entry, shape: dict[str, int], args, flush) -> Row:  # noqa: ANN001
    from argus.backend.cuda.codegen import CodegenError, compile_kernel
    from argus.runtime import load

    label = ",".join(f"{k}={v}" for k, v in shape.items())
    try:
        kernel = entry.kernel.trace(**entry.params)
        compiled = compile_kernel(kernel)
    except CodegenError as err:
        if err.code == "CODEGEN_UNSUPPORTED":
            return Row(entry.name, label, "skip", detail=err.message)
        raise
    loaded = load(compiled)
    rng = np.random.default_rng(0)
    arrays = entry.make(shape, rng)
    expected = entry.reference({k: v.copy() for k, v in arrays.items()})
    written = {t.name for t in compiled.generated.tensors if t.written}
    tensors = {}
    for param in compiled.generated.tensors:
        t = torch.as_tensor(arrays[param.name], device="cuda").to(_torch_dtype(torch, param.dtype)).contiguous()
        if param.name in written and param.dtype.is_float:
            t.fill_(float("nan"))  # poison: an element the kernel forgets to write fails the comparison
        tensors[param.name] = t
    inputs_before = {n: t.clone() for n, t in tensors.items() if n not in written}
    ordered = [tensors[p.name] for p in compiled.generated.tensors]
    loaded(*ordered)
    torch.cuda.synchronize()
    worst = 0.0
    for name, want in expected.items():
        got = tensors[name].double().cpu().numpy()
        if not np.all(np.isfinite(got)):
            worst = float("inf")
            break
        scale = max(1.0, float(np.abs(want).max()))
        worst = max(worst, float(np.abs(got - want).max()) / scale)
    torch_gap = None
    if entry.torch_reference is not None:  # the same check against PyTorch's own operators, on the GPU
        ref_in = {k: torch.from_numpy(v.copy()).to("cuda", torch.float64) for k, v in arrays.items()}
        torch_gap = 0.0
        for name, want_t in entry.torch_reference(ref_in).items():
            want = want_t.cpu().numpy()
            got = tensors[name].double().cpu().numpy()
            scale = max(1.0, float(np.abs(want).max()))
            gap = float(np.abs(got - want).max()) / scale if np.all(np.isfinite(got)) else float("inf")
            torch_gap = max(torch_gap, gap)
        worst = max(worst, torch_gap)
    modified = [n for n, before in inputs_before.items() if not torch.equal(before, tensors[n])]
    ok = worst <= entry.tolerance and not modified
    row = Row(entry.name, label, "pass" if ok else "FAIL", worst, entry.tolerance)
    if modified:
        row.detail = f"inputs modified: {', '.join(modified)}"
    try:
        resources = compiled.resources
        usage = (
            f"{resources.registers} regs, {resources.spill_stores + resources.spill_loads} B spills, "
            f"{compiled.generated.shared_bytes} B smem"
        )
    except Exception as err:  # noqa: BLE001 - cuobjdump missing: the run goes on without resource figures
        usage = f"resources unknown ({type(err).__name__})"
    row.detail = (row.detail + " " if row.detail else "") + usage
    if args.reps > 0:
        prepared = loaded.prepare(*ordered)
        row.ours_us = _time(torch, prepared.launch, args.reps, args.warmup, flush)
        fn, row.baseline = _baseline(torch, entry.name, tensors)
        if fn is not None:
            row.base_us = _time(torch, fn, args.reps, args.warmup, flush)
    return row


def launch_overhead(torch, launches: int = 20000) -> list[str]:  # noqa: ANN001
    """Host cost of calling a compiled kernel, after warm-up: the prepared fast path (arguments checked
    once), the checked call (every argument validated per call), and torch.add as a reference."""
    import time

    from argus.backend.cuda.codegen import compile_kernel
    from argus.kernels.elementwise import vector_add
    from argus.runtime import load

    loaded = load(compile_kernel(vector_add.trace()))
    a, b, c = (torch.ones(1024, device="cuda") for _ in range(3))
    prepared = loaded.prepare(a, b, c)
    lines = []
    for label, fn in (
        ("prepared launch (checked once)", prepared.launch),
        ("checked call loaded(a, b, c)", lambda: loaded(a, b, c)),
        ("torch.add(a, b, out=c)", lambda: torch.add(a, b, out=c)),
    ):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(launches):
            fn()
        host = (time.perf_counter() - start) / launches * 1e6
        torch.cuda.synchronize()
        lines.append(f"{label:<34} {host:7.2f} us per call (host, mean of {launches})")
    return lines


def versions(torch) -> list[str]:  # noqa: ANN001
    from argus.backend.cuda import toolchain_info

    props = torch.cuda.get_device_properties(0)
    lines = [f"GPU: {props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs)"]
    try:
        from cuda.bindings import driver

        _, version = driver.cuDriverGetVersion()
        lines.append(f"driver CUDA version: {version // 1000}.{version % 1000 // 10}")
    except Exception as err:  # noqa: BLE001
        lines.append(f"driver version: unknown ({err})")
    lines.append(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
    try:
        info = toolchain_info()
        lines.append(f"NVRTC {'.'.join(str(x) for x in info.nvrtc_version)}")
    except Exception as err:  # noqa: BLE001
        lines.append(f"NVRTC: unknown ({err})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help="also run each kernel at a larger shape")
    parser.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    parser.add_argument("--reps", type=int, default=50, help="timed launches per measurement (0: no timing)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed launches before timing")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU visible to torch", file=sys.stderr)
        return 2
    from argus.kernels.registry import all_kernels

    os.environ.setdefault("ARGUS_CACHE_DIR", str(Path.home() / ".cache" / "argus-gpu-check"))
    print("\n".join(versions(torch)))
    wanted = {k for k in args.kernels.split(",") if k}
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    rows: list[Row] = []
    for entry in all_kernels():
        if wanted and entry.name not in wanted:
            continue
        shapes = [entry.default_shape, entry.partial_shape]
        if args.large and entry.name in LARGE_SHAPES:
            shapes.append(LARGE_SHAPES[entry.name])
        for shape in shapes:
            try:
                rows.append(check_one(torch, entry, shape, args, flush))
            except Exception as err:  # noqa: BLE001 - a failing kernel is a row, not the end of the run
                label = ",".join(f"{k}={v}" for k, v in shape.items())
                rows.append(Row(entry.name, label, "FAIL", detail=f"{type(err).__name__}: {err}".splitlines()[0]))
                traceback.print_exc()
    _print(rows)
    print("\nmax error: the larger of the errors against the numpy reference and against PyTorch's own operators")
    if args.reps > 0:
        print("\nlaunch overhead (vector_add, 1024 elements):")
        print("\n".join(launch_overhead(torch)))
    failed = [r for r in rows if r.status == "FAIL"]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} rows passed or skipped; {len(failed)} failed")
    return 1 if failed else 0


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _print(rows: list[Row]) -> None:
    header = ["kernel", "shape", "result", "max error", "tol", "argus us", "baseline us", "ratio", "baseline", "notes"]
    table = []
    for r in rows:
        ratio = r.base_us / r.ours_us if r.base_us and r.ours_us else None
        table.append(
            [
                r.kernel,
                r.shape,
                r.status,
                _fmt(r.error, ".2e"),
                _fmt(r.tolerance, ".0e"),
                _fmt(r.ours_us, ".1f"),
                _fmt(r.base_us, ".1f"),
                _fmt(ratio, ".2f"),
                r.baseline,
                r.detail,
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *table, strict=True)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for line in table:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))
    print("\nratio = baseline time / argus time (above 1: argus is faster); times are medians of CUDA-event timings")


if __name__ == "__main__":
    sys.exit(main())
