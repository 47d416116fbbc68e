"""Each kernel's GPU time in a GEMM plan, next to cuBLAS's kernels (issue #20: where a plan that loses to cuBLAS
spends its time, e.g. a split-K product's partial GEMM against its reduction). For every shape, the heuristic's plan
and the next `--top` configurations by the model's estimate are launched `--rounds` times under the PyTorch
profiler (warm; no L2 flush), and so is ``torch.matmul``; prints, per plan, the median µs of each of its kernels
and the sum.

    PYTHONPATH=src python benchmarks/gemm_kernel_times.py --shapes 512,512,65536 --top 6 --rounds 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def kernel_medians(torch, fn, rounds: int) -> list[tuple[str, float]]:  # noqa: ANN001
    """(kernel name, median µs) of the kernels `fn` launches, in first-launch order, over `rounds` calls (none, and
    no profiler, with 0 rounds: `fn` launched once)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    if rounds == 0:
        return []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(rounds):
            fn()
        torch.cuda.synchronize()
    times: dict[str, list[float]] = defaultdict(list)
    for ev in prof.events():
        if ev.device_type.name == "CUDA" and ev.device_time_total > 0:
            times[ev.name].append(ev.device_time_total)
    return [(name, statistics.median(v)) for name, v in times.items()]


def main() -> int:
    import torch

    from argus.kernels import matmul as mm

    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="+", default=["512,512,65536", "1000,1000,1000", "256,7168,2048"])
    parser.add_argument("--top", type=int, default=6, help="configurations after the heuristic's, by estimate")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--no-pdl",
        action="store_true",
        help="launch a plan's kernels without programmatic dependent launches (a dependent kernel that starts early "
        "and waits is timed from its start: with them, each kernel's time includes its wait)",
    )
    parser.add_argument("--launch-only", action="store_true", help="launch each plan once, no profiler (for ncu)")
    args = parser.parse_args()
    if args.launch_only:
        args.rounds = 0
    mm.DEPENDENT_LAUNCHES = not args.no_pdl
    for spec in args.shapes:
        m, n, k = (int(x) for x in spec.split(","))
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()  # nn.Linear's weight (N, K): layout NT
        problem = mm.problem_of(a, b)
        chosen = mm.plan(problem).config
        configs = [chosen]
        if isinstance(chosen, mm.GemmConfig):
            ranked = sorted(mm.candidates(mm.padded_extent(problem)), key=lambda c: mm.estimate(problem, c))
            configs += [c for c in ranked if c != chosen][: args.top]
        print(f"## {m}x{n}x{k}", flush=True)
        rows = [("cuBLAS", kernel_medians(torch, lambda a=a, b=b: torch.matmul(a, b), args.rounds))]
        ref = a.float() @ b.float()
        for config in configs:
            try:
                c, launches = mm.prepare(a, b, config=config)
            except Exception as err:  # noqa: BLE001 - reported per configuration
                print(f"  {config.label}: {type(err).__name__}: {str(err)[:200]}")
                continue
            for launch in launches:
                launch.launch()
            torch.cuda.synchronize()
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            tag = config.label + ("  (heuristic)" if config == chosen else "")
            tag += "" if err <= 1e-2 else f" WRONG {err}"
            rows.append((tag, kernel_medians(torch, lambda ls=launches: [x.launch() for x in ls], args.rounds)))
        for tag, kernels in rows:
            total = sum(t for _, t in kernels)
            parts = ", ".join(f"{name[:40]} {t:.1f}" for name, t in kernels)
            print(f"  {total:8.1f} µs  {tag}: {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
