"""fp32 GEMM at fp32 accuracy on tensor cores (issue #20): `argus.kernels.matmul.matmul` on f32 tensors (split
precision, bf16x3) against strict fp32 cuBLAS (``torch.backends.cuda.matmul.allow_tf32 = False``), at 4096^3 and the
sizes and layouts of KernelBench level 1's plain matmul problems, judged by the gate's own comparison.

Usage (from the repository root on a GPU machine)::

    PYTHONPATH=src python benchmarks/gemm_fp32.py [--json F] [--budget 1.0]

Inputs as KernelBench draws them (``torch.rand``: uniform in [0, 1)). Every output (argus's, strict fp32 cuBLAS's,
and TF32 cuBLAS's for contrast) is compared with the float64 product by `argus.eval.tolerance.compare` under the fp32
tolerance (1e-4, every element and the relative norm), then the contenders are timed interleaved
(`gemm_parity.interleaved_times`: L2 flushed, CUDA events, rotating order). argus's time includes the two split
passes (`split_bf16x3`) and, where the configuration splits K, the reduction.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (label, M, N, K, layout): NN is torch.matmul(A, B) of row-major A (M, K), B (K, N); T marks a transposed view.
ROWS = [
    ("4096^3", 4096, 4096, 4096, "NN"),
    ("L1/1 square", 4096, 4096, 4096, "NN"),
    ("L1/2 standard", 2048, 4096, 8192, "NN"),
    ("L1/4 matrix-vector", 2048, 1, 1048576, "NN"),
    ("L1/6 large K", 256, 256, 524288, "NN"),
    ("L1/7 small K", 32768, 32768, 64, "NN"),
    ("L1/16 A transposed", 2048, 4096, 8192, "TN"),
    ("L1/18 both transposed", 2048, 4096, 8192, "TT"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed launches per row")
    args = parser.parse_args()

    import torch

    from argus.eval.tolerance import compare, input_scale, tolerance_for
    from argus.kernels import matmul as mm

    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    tol = tolerance_for(torch.float32)
    rows, failed = [], False
    print(f"{'problem':<24} {'M x N x K':>22} {'lay':>3} {'fp32 ms':>9} {'argus ms':>9} {'x fp32':>7} {'tf32 ms':>8}  "
          "argus / fp32 / tf32 under the fp32 tolerance (max rel. element error)")  # fmt: skip
    for label, m, n, k, layout in ROWS:
        g = torch.Generator(device="cuda").manual_seed(m + 3 * n + 7 * k)
        a = torch.rand(m, k, device="cuda", generator=g) if layout[0] == "N" else torch.rand(k, m, device="cuda").T
        b = torch.rand(k, n, device="cuda", generator=g) if layout[1] == "N" else torch.rand(n, k, device="cuda").T
        ref = a.double() @ b.double()
        scale = input_scale([a, b])
        t0 = time.time()
        c, prepared = mm.prepare(a, b)
        config = mm.plan(mm.problem_of(a, b)).config.label

        def run_argus(prepared=prepared) -> None:
            for p in prepared:
                p.launch()

        def run_fp32(a=a, b=b) -> None:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.matmul(a, b)

        def run_tf32(a=a, b=b) -> None:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.matmul(a, b)
            torch.backends.cuda.matmul.allow_tf32 = False

        run_argus()
        torch.backends.cuda.matmul.allow_tf32 = False
        fp32 = torch.matmul(a, b)
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32 = torch.matmul(a, b)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.cuda.synchronize()
        verdicts = {}
        for name, out in (("argus", c), ("fp32", fp32), ("tf32", tf32)):
            cmp = compare(out, ref, tol, input_scale=scale)
            err = float(((out.double() - ref).abs() / ref.abs().clamp_min(1e-30)).max())
            verdicts[name] = {"ok": cmp.ok, "code": cmp.code, "reason": cmp.reason, "max_rel_err": err}
        if not verdicts["argus"]["ok"]:
            failed = True
        del fp32, tf32, ref
        launches = {"fp32": run_fp32, "argus": run_argus, "tf32": run_tf32}
        t = time.time()
        for fn in launches.values():
            fn()
        torch.cuda.synchronize()
        per_round = max(time.time() - t, 1e-5)
        rounds = int(min(100, max(5, args.budget / per_round)))
        times = interleaved_times(torch, launches, rounds, scratch)
        med = {name: statistics.median(v) for name, v in times.items()}
        row = {
            "problem": label, "shape": [m, n, k], "layout": layout, "config": config, "rounds": rounds,
            "fp32_ms": med["fp32"], "argus_ms": med["argus"], "tf32_ms": med["tf32"],
            "speedup_vs_fp32": med["fp32"] / med["argus"], "verdicts": verdicts,
            "setup_s": time.time() - t0,
        }  # fmt: skip
        rows.append(row)
        ok = "/".join(("ok" if verdicts[x]["ok"] else "FAIL") for x in ("argus", "fp32", "tf32"))
        errs = "/".join(f"{verdicts[x]['max_rel_err']:.1e}" for x in ("argus", "fp32", "tf32"))
        print(
            f"{label:<24} {f'{m}x{n}x{k}':>22} {layout:>3} {med['fp32']:9.3f} {med['argus']:9.3f} "
            f"{row['speedup_vs_fp32']:7.2f} {med['tf32']:8.3f}  {ok} ({errs}) {config}",
            flush=True,
        )
        del a, b, c, prepared
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
