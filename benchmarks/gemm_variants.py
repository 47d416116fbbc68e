"""GEMM on the GPU: the lineage (naive → expert) and variants of the expert kernel, against cuBLAS in the same run.

Usage (from the repository root on a GPU machine, no install needed)::

    PYTHONPATH=src python benchmarks/gemm_variants.py [--lineage] [--variants] [--shapes all|square] [--json F]

For each kernel (and parameter set): trace, compile for sm_90a, launch on random bf16 inputs (normal A, uniform B),
check the output against ``torch.matmul`` in f32 on the same inputs (largest error relative to the largest
reference value; outputs poisoned with NaN first), then time it with CUDA events (median, L2 flushed before each
launch; the number of repetitions adapts so that a slow rung takes about a second) next to cuBLAS through
``torch.matmul`` on the same bf16 inputs with a bf16 output, timed the same way in the same process. The ratio is
cuBLAS time / argus time (above 1: argus is faster). Kernels taking B as (N, K) are compared with
``A @ B.T`` (cuBLAS "TN"), the others with ``A @ B`` ("NN").

Prints the GPU, versions and clocks, then one table per section; exits 1 if any kernel computes a wrong result.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:  # run from a checkout without PYTHONPATH=src
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SQUARE = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
ISSUE_SHAPES = [(8192, 7168, 2048), (4096, 14336, 4096), (16384, 4096, 4096), (2048, 8192, 28672)]
PARTIAL = [(200, 72, 136), (4096 + 64, 4096 - 40, 1000)]  # correctness only: tiles cut by the problem edges

#: Variants of the expert kernel: (label, params).
#: A/B of the deferred stage release (the pass `argus.ir.passes.defer_releases`): "as written" compiles the IR
#: before the passes (`trace_as_written`).
AB_VARIANTS = [
    ("128x128 s3 f32 deferred", {}),
    ("128x128 s3 f32 as written", {"_deferred": False}),
    ("128x128 s4 bf16 deferred", {"STAGES": 4, "OUT": "bf16"}),
    ("128x128 s4 bf16 as written", {"STAGES": 4, "OUT": "bf16", "_deferred": False}),
    ("128x256 s4 bf16 deferred", {"BN": 256, "STAGES": 4, "OUT": "bf16"}),
    ("128x256 s4 bf16 as written", {"BN": 256, "STAGES": 4, "OUT": "bf16", "_deferred": False}),
]

EXPERT_VARIANTS = [
    ("128x128x64 s3 f32", {}),
    ("128x128x64 s4 bf16", {"STAGES": 4, "OUT": "bf16"}),
    ("128x192x64 s4 bf16", {"BN": 192, "STAGES": 4, "OUT": "bf16"}),
    ("128x256x64 s3 bf16", {"BN": 256, "STAGES": 3, "OUT": "bf16"}),
    ("128x256x64 s4 bf16", {"BN": 256, "STAGES": 4, "OUT": "bf16"}),
]

#: Blocks per SM (session 3's finding: the program-order rung at 128x128x64 with 3 stages, two blocks per SM, is as
#: fast as the expert at 4096^3): (label, kernel, params). Two warp-specialized blocks of 384 threads are compiled
#: within 80 registers a thread, which fits a 128x64 accumulator, not a 128x128 one.
OCCUPANCY_VARIANTS = [
    ("expert 128x256 s4 bf16 1/SM", "gemm_warp_specialized", {"BN": 256, "STAGES": 4, "OUT": "bf16"}),
    ("expert 128x256 s4 f32 1/SM", "gemm_warp_specialized", {"BN": 256, "STAGES": 4}),
    ("program order 128x128 s3 2/SM", "gemm_tma_wgmma", {}),
    ("program order 128x128 s4 1/SM", "gemm_tma_wgmma", {"STAGES": 4}),
    ("ws 128x128 s3 f32 1/SM", "gemm_warp_specialized", {}),
    (
        "ws 128x64 s3 f32 2/SM",
        "gemm_warp_specialized",
        {"BN": 64, "BLOCKS_PER_SM": 2, "PRODUCER_REGS": 24, "CONSUMER_REGS": 104},
    ),
    (
        "ws 128x64 s4 bf16 2/SM",
        "gemm_warp_specialized",
        {"BN": 64, "STAGES": 4, "OUT": "bf16", "BLOCKS_PER_SM": 2, "PRODUCER_REGS": 24, "CONSUMER_REGS": 104},
    ),
]


#: Session 4: the expert's bf16 epilogue stored as the accumulator holds it (4-byte pairs, half sectors) or widened
#: to 16-byte runs by a lane exchange (`argus.atoms.copy.lane_exchange`, the code generator's default now).
EPILOGUE_VARIANTS = [
    ("expert bf16 lane exchange", "gemm_warp_specialized", {"BN": 256, "STAGES": 4, "OUT": "bf16"}),
    ("expert bf16 4-byte pairs", "gemm_warp_specialized", {"BN": 256, "STAGES": 4, "OUT": "bf16", "_exchange": False}),
    ("expert f32", "gemm_warp_specialized", {"BN": 256, "STAGES": 4}),
]

#: Session 4: the expert on its 2-D grid against the persistent kernel (`gemm_warp_specialized_persistent`: one block
#: per SM, the mbarrier pipeline running on across each block's tiles, tiles in grouped order).
_EXPERT = {"BN": 256, "STAGES": 4, "OUT": "bf16"}
PARITY_VARIANTS = [
    ("expert 2-D grid", "gemm_warp_specialized", _EXPERT),
    ("expert grouped 16", "gemm_warp_specialized", {**_EXPERT, "ORDER": "grouped", "GROUP": 16}),
    ("persistent grouped 8", "gemm_warp_specialized_persistent", {**_EXPERT, "GROUP": 8}),
    ("persistent grouped 16", "gemm_warp_specialized_persistent", {**_EXPERT, "GROUP": 16}),
    ("persistent grouped 4", "gemm_warp_specialized_persistent", {**_EXPERT, "GROUP": 4}),
]

COMPARE_SETS = {"occupancy": OCCUPANCY_VARIANTS, "epilogue": EPILOGUE_VARIANTS, "parity": PARITY_VARIANTS}


def _flush(torch):  # noqa: ANN001, ANN202
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    return lambda: scratch.zero_()


def time_ms(torch, fn, flush, budget_s: float = 0.5, max_reps: int = 50) -> float:  # noqa: ANN001
    """Median CUDA-event time of `fn` with L2 flushed before each launch; repetitions adapt to the kernel."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    first = start.elapsed_time(end)
    reps = max(3, min(max_reps, int(budget_s * 1000 / max(first, 1e-3))))
    for _ in range(min(5, reps)):
        fn()
    samples = []
    for _ in range(reps):
        flush()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def run_kernel(torch, kernel_fn, params: dict, shape: tuple[int, int, int], flush, timing: bool = True) -> dict:  # noqa: ANN001
    from argus.backend.cuda.codegen import compile_kernel
    from argus.backend.cuda.codegen.emitter import Emitter
    from argus.runtime import load

    m, n, k = shape
    params = dict(params)
    deferred = params.pop("_deferred", True)
    exchange = params.pop("_exchange", True)
    # A/B: the consumer loop as written (wgmma.wait_group 0, a barrier, one arrival): the IR before the passes
    traced = kernel_fn.trace(**params) if deferred else kernel_fn.trace_as_written(**params)
    Emitter.lane_exchange_stores = exchange  # A/B: bf16 C stored as the accumulator holds it (4-byte pairs)
    try:
        compiled = compile_kernel(traced)
    finally:
        Emitter.lane_exchange_stores = True
    loaded = load(compiled)
    specs = {t.name: t for t in compiled.generated.tensors}
    b_is_nk = tuple(str(d) for d in specs["B"].shape) == ("N", "K")  # the traced shape (it may follow B_MAJOR)
    g = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
    b = (torch.rand((n, k) if b_is_nk else (k, n), device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
    out_dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[specs["C"].dtype.name]
    c = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
    tensors = {"A": a, "B": b, "C": c}
    ordered = [tensors[t.name] for t in compiled.generated.tensors]
    loaded(*ordered)
    torch.cuda.synchronize()
    ref = a.float() @ (b.float().T if b_is_nk else b.float())
    err = float((c.float() - ref).abs().max() / ref.abs().max())
    tol = 1e-2 if out_dtype != torch.float32 else 1e-3
    row = {"shape": shape, "ok": bool(math.isfinite(err) and err <= tol), "err": err, "out": specs["C"].dtype.name}
    try:
        r = compiled.resources
        row["regs"], row["spills"] = r.registers, r.spill_stores + r.spill_loads
    except Exception:  # noqa: BLE001 - no cuobjdump here: resources unknown
        row["regs"] = row["spills"] = None
    row["smem"] = compiled.generated.shared_bytes
    if not timing:
        return row
    prepared = loaded.prepare(*ordered)
    row["ms"] = time_ms(torch, prepared.launch, flush)
    bt = b.T if b_is_nk else b
    row["cublas_ms"] = time_ms(torch, lambda: torch.matmul(a, bt), flush)
    row["tflops"] = 2 * m * n * k / row["ms"] / 1e9
    row["cublas_tflops"] = 2 * m * n * k / row["cublas_ms"] / 1e9
    row["ratio"] = row["cublas_ms"] / row["ms"]
    return row


def environment(torch) -> list[str]:  # noqa: ANN001
    props = torch.cuda.get_device_properties(0)
    lines = [f"GPU: {props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs)"]
    lines.append(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
    try:
        q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu"
        smi = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
        lines.append(f"nvidia-smi ({q}): {smi.stdout.strip()}")
    except Exception as err:  # noqa: BLE001
        lines.append(f"nvidia-smi: {err}")
    try:
        from argus.backend.cuda import toolchain_info

        lines.append(f"NVRTC {'.'.join(str(x) for x in toolchain_info().nvrtc_version)}")
    except Exception as err:  # noqa: BLE001
        lines.append(f"NVRTC: unknown ({err})")
    return lines


def _fmt_row(label: str, row: dict) -> str:
    shape = "x".join(str(x) for x in row["shape"])
    if "ms" not in row:
        return f"{label:<28} {shape:>17} {'ok' if row['ok'] else 'WRONG':>5} err {row['err']:.1e}"
    return (
        f"{label:<28} {shape:>17} {'ok' if row['ok'] else 'WRONG':>5} {row['ms']:9.4f} {row['tflops']:7.1f} "
        f"{row['cublas_ms']:9.4f} {row['cublas_tflops']:7.1f} {row['ratio']:6.3f}  err {row['err']:.1e} "
        f"regs {row['regs']} smem {row['smem']}"
    )


HEADER = (
    f"{'kernel':<28} {'M x N x K':>17} {'check':>5} {'argus ms':>9} {'TFLOP/s':>7} {'cuBLAS ms':>9} {'TFLOP/s':>7} "
    f"{'ratio':>6}"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lineage", action="store_true", help="every rung of the GEMM lineage at 4096^3 and 8192^3")
    parser.add_argument("--variants", action="store_true", help="the expert kernel's variants at the benchmark shapes")
    parser.add_argument("--shapes", default="all", choices=("all", "square"), help="benchmark shapes for --variants")
    parser.add_argument("--ab", action="store_true", help="deferred stage release on/off at three shapes")
    parser.add_argument("--occupancy", action="store_true", help="one vs two resident blocks per SM (7 shapes)")
    parser.add_argument("--compare", nargs="*", default=[], choices=sorted(COMPARE_SETS), help="named sets, 7 shapes")
    parser.add_argument("--json", default="", help="write every row as JSON")
    args = parser.parse_args()
    import torch

    from argus.kernels import get_kernel, lineage

    for line in environment(torch):
        print(line)
    flush = _flush(torch)
    rows: list[dict] = []
    failed = False
    if args.variants:
        expert = get_kernel("gemm_warp_specialized").kernel
        print("\n== correctness of the expert variants on partial tiles ==")
        for label, params in EXPERT_VARIANTS:
            for shape in PARTIAL:
                row = {**run_kernel(torch, expert, params, shape, flush, timing=False), "kernel": label}
                rows.append(row)
                failed |= not row["ok"]
                print(_fmt_row(label, row), flush=True)
        shapes = SQUARE + (ISSUE_SHAPES if args.shapes == "all" else [])
        print("\n== expert variants vs cuBLAS (bf16 in; cuBLAS bf16 out) ==")
        print(HEADER)
        by_label: dict[str, list[float]] = {}
        for shape in shapes:
            for label, params in EXPERT_VARIANTS:
                try:
                    row = {**run_kernel(torch, expert, params, shape, flush), "kernel": label}
                except Exception as err:  # noqa: BLE001 - one variant failing to build must not hide the others
                    print(f"{label:<28} {'x'.join(map(str, shape)):>17} ERROR {type(err).__name__}: {err}", flush=True)
                    failed = True
                    continue
                rows.append(row)
                failed |= not row["ok"]
                by_label.setdefault(label, []).append(row["ratio"])
                print(_fmt_row(label, row), flush=True)
        print("\ngeometric mean ratio to cuBLAS over the shapes, and the worst shape:")
        for label, ratios in by_label.items():
            gm = math.exp(statistics.fmean(math.log(r) for r in ratios))
            print(f"  {label:<28} geomean {gm:.3f}  min {min(ratios):.3f}  ({len(ratios)} shapes)")
    sets = (["occupancy"] if args.occupancy else []) + list(args.compare)
    for name in sets:
        variants = COMPARE_SETS[name]
        print(f"\n== {name} ==")
        for label, kname, params in variants:  # correctness where tiles are cut by the problem's edges
            for shape in PARTIAL:
                row = {**run_kernel(torch, get_kernel(kname).kernel, params, shape, flush, timing=False)}
                rows.append({**row, "kernel": label, "set": name})
                failed |= not row["ok"]
                print(_fmt_row(label, row), flush=True)
        print(HEADER)
        by_label = {}
        for shape in SQUARE + ISSUE_SHAPES:
            for label, kname, params in variants:
                try:
                    row = {**run_kernel(torch, get_kernel(kname).kernel, params, shape, flush), "kernel": label}
                except Exception as err:  # noqa: BLE001 - one variant failing to build must not hide the others
                    print(f"{label:<28} {'x'.join(map(str, shape)):>17} ERROR {type(err).__name__}: {err}", flush=True)
                    failed = True
                    continue
                rows.append({**row, "set": name})
                failed |= not row["ok"]
                by_label.setdefault(label, []).append(row["ratio"])
                print(_fmt_row(label, row), flush=True)
        print("\ngeometric mean ratio to cuBLAS over the shapes, and the worst shape:")
        for label, ratios in by_label.items():
            gm = math.exp(statistics.fmean(math.log(r) for r in ratios))
            print(f"  {label:<28} geomean {gm:.3f}  min {min(ratios):.3f}  ({len(ratios)} shapes)")
    if args.ab:
        expert = get_kernel("gemm_warp_specialized").kernel
        print("\n== deferred stage release on/off (gemm_warp_specialized) ==")
        print(HEADER)
        for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 7168, 2048)):
            for label, params in AB_VARIANTS:
                row = {**run_kernel(torch, expert, params, shape, flush), "kernel": label}
                rows.append(row)
                failed |= not row["ok"]
                print(_fmt_row(label, row), flush=True)
    if args.lineage:
        print("\n== the GEMM lineage (each rung adds one mechanism), library parameters ==")
        print(HEADER)
        # the registry's rungs; the persistent ones at one block per SM (their entries run 3 blocks, for the
        # interpreter), then the expert (the last rung's mechanisms at the expert's tiles)
        from argus.kernels.registry import GEMM_HOPPER_PERSISTENT_PARAMS

        rungs = []
        for step in lineage("gemm"):
            params = dict(get_kernel(step.kernel).params)
            if "BLOCKS" in params:
                params["BLOCKS"] = GEMM_HOPPER_PERSISTENT_PARAMS["BLOCKS"]
            rungs.append((step.kernel, step.mechanism, params))
        rungs.append(("gemm_hopper_persistent", "expert", dict(GEMM_HOPPER_PERSISTENT_PARAMS)))
        for name, mechanism, params in rungs:
            entry = get_kernel(name)
            params = dict(entry.params) if params is None else params
            for shape in ((4096, 4096, 4096), (8192, 8192, 8192)):
                try:
                    row = {**run_kernel(torch, entry.kernel, params, shape, flush), "kernel": name}
                except Exception as err:  # noqa: BLE001
                    print(f"{name:<28} {'x'.join(map(str, shape)):>17} ERROR {type(err).__name__}: {err}")
                    failed = True
                    continue
                row["mechanism"] = mechanism
                rows.append(row)
                failed |= not row["ok"]
                print(_fmt_row(name, row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
