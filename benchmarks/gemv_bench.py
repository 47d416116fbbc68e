"""GEMV-class products (issue #20): argus's GEMV kernels (`argus.kernels.gemv` + the split-K reduction, in every
dtype: `gemv_config(..., dtypes=INPUTS)`; `argus.kernels.matmul.matmul` runs them for f32 only) against cuBLAS
(``torch.matmul``) and against argus's tensor-core plan for the same shape, interleaved in one process.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemv_bench.py [--rounds 30] [--json F]

Every contender is checked against the float64 product first (relative max error <= 1e-2 for bf16, 1e-5 for f32;
the script exits 1 if one is wrong), then timed with `gemm_parity.interleaved_times` (L2 flushed before every
launch, CUDA events, order rotating; argus as prepared launches, the host's per-call cost not in the time). GB/s
counts the matrix's bytes once (what a GEMV must stream) over the median time; "% HBM" is that over the data
sheet's bandwidth (`argus.atoms.target`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (M, N, K, layout): decode projections of LLMs (x @ W.T with an nn.Linear weight (N, K): "NT"; x @ W with W
#: (K, N): "NN") and matrix-vector products (N = 1; KernelBench level 1 problem 4 is 256 x 131072 times a vector).
SHAPES = [
    (1, 4096, 4096, "NT"), (1, 14336, 4096, "NT"), (1, 4096, 14336, "NT"), (4, 11008, 4096, "NT"),
    (8, 28672, 4096, "NT"), (1, 4096, 4096, "NN"), (4, 14336, 4096, "NN"), (8, 4096, 11008, "NN"),
    (4096, 1, 8192, "NN"), (8192, 1, 8192, "NN"), (256, 1, 131072, "NN"),
]  # fmt: skip


def main() -> int:
    import torch

    from argus.atoms.target import H200
    from argus.kernels import matmul as mm

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--dtypes", nargs="+", default=["bf16", "f32"])
    ap.add_argument("--unroll", type=int, nargs="+", default=[0], help="UNROLL values to run (0: the plan's)")
    ap.add_argument("--json")
    args = ap.parse_args()
    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, wrong = [], False
    print(
        "\n| M×N×K | layout | dtype | GEMV | GEMV ms | cuBLAS ms | x cuBLAS [q1, q3] | tensor-core plan ms "
        "| x TC | GB/s | % HBM |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m, n, k, layout in SHAPES:
        for name in args.dtypes:
            dtype = mm.torch_dtype(name)
            torch.manual_seed(0)
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            if layout == "NT":
                b = torch.randn(n, k, device="cuda", dtype=dtype).t()
            else:
                b = torch.randn(k, n, device="cuda", dtype=dtype)
            problem = mm.problem_of(a, b)
            the_plan = mm.plan(problem)  # what `matmul` runs (the GEMV for f32 only, `GEMV_DTYPES`)
            planned = mm.gemv_config(problem, dtypes=mm.INPUTS)  # the GEMV kernels, in every dtype
            if planned is None:
                print(f"| {m}×{n}×{k} | {layout} | {name} | no GEMV plan for this shape |")
                continue
            for unroll in args.unroll:
                gemv_config = planned if unroll == 0 else dataclasses.replace(planned, UNROLL=unroll)
                wrong |= _row(
                    torch, mm, H200, args, scratch, rows, (m, n, k, layout, name), a, b, problem, the_plan, gemv_config
                )
    return _summary(rows, args, wrong)


def _row(torch, mm, H200, args, scratch, rows, shape, a, b, problem, the_plan, gemv_config) -> bool:  # noqa: ANN001
    """Check and time one GEMV configuration against cuBLAS and the tensor-core plan; print its row."""
    m, n, k, layout, name = shape
    c, launches = mm.prepare(a, b, config=gemv_config)
    tc_config = mm.choose(problem)
    c_tc, tc_launches = mm.prepare(a, b, config=tc_config)
    ref = a.double() @ b.double()
    bound = 1e-5 if name == "f32" else 1e-2
    contenders = {"cublas": lambda a=a, b=b: torch.matmul(a, b)}
    contenders["argus"] = lambda launches=launches: [x.launch() for x in launches]
    contenders["tc"] = lambda launches=tc_launches: [x.launch() for x in launches]
    errors = {}
    for label, fn in contenders.items():
        out = fn() if label == "cublas" else (fn(), c if label == "argus" else c_tc)[1]
        torch.cuda.synchronize()
        errors[label] = float((out.double() - ref).abs().max() / ref.abs().max())
    times = interleaved_times(torch, contenders, args.rounds, scratch)
    med = {label: statistics.median(t) for label, t in times.items()}
    per_round = sorted(cb / ar for cb, ar in zip(times["cublas"], times["argus"], strict=True))
    q1, q3 = per_round[len(per_round) // 4], per_round[3 * len(per_round) // 4]
    matrix_bytes = (n if m <= mm.GEMV_ROWS else m) * k * a.element_size()
    gbs = matrix_bytes / (med["argus"] * 1e-3) / 1e9
    row = {
        "M": m, "N": n, "K": k, "layout": layout, "dtype": name, "gemv": gemv_config.label,
        "plan": the_plan.config.label,
        "tc_plan": tc_config.label, "ms": med["argus"], "cublas_ms": med["cublas"], "tc_ms": med["tc"],
        "x_cublas": med["cublas"] / med["argus"], "q1": q1, "q3": q3, "x_tc": med["tc"] / med["argus"],
        "gbs": gbs, "hbm_pct": 100 * gbs / H200.hbm_gbs, "errors": errors,
    }  # fmt: skip
    rows.append(row)
    flag = " WRONG" if errors["argus"] > bound else ""
    print(
        f"| {m}×{n}×{k} | {layout} | {name} | {row['gemv']}{flag} | {row['ms']:.4f} | {row['cublas_ms']:.4f} "
        f"| {row['x_cublas']:.3f} [{q1:.3f}, {q3:.3f}] | {row['tc_ms']:.4f} ({row['tc_plan']}) "
        f"| {row['x_tc']:.2f} | {gbs:.0f} | {row['hbm_pct']:.0f} |",
        flush=True,
    )
    return errors["argus"] > bound


def _summary(rows, args, wrong) -> int:  # noqa: ANN001
    bf = [r["x_cublas"] for r in rows if r["dtype"] == "bf16"]
    if bf:
        print(f"\nbf16 geometric mean x cuBLAS: {statistics.geometric_mean(bf):.3f} over {len(bf)} shapes")
    f32 = [r["x_cublas"] for r in rows if r["dtype"] == "f32"]
    if f32:
        print(f"f32 geometric mean x cuBLAS: {statistics.geometric_mean(f32):.3f} over {len(f32)} shapes")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
