"""The agent's GPU acceptance run: `argus optimize` from a kernel (default the naive GEMM of the lineage) with the
bandit planner and the transform coder, every candidate gated and timed on the GPU at the start task's first
benchmark size; then, in the same run and with the same gate options, the expert kernel (default `gemm_hopper`)
and cuBLAS (`torch.matmul`) at that size. Prints the trajectory with TFLOP/s and the best candidate's fraction of
the expert's TFLOP/s, and writes it all as JSON.

Usage (repository root, on a GPU machine)::

    PYTHONPATH=src python benchmarks/agent_gpu.py --budget 40 --out out/agent
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:  # run from a checkout without PYTHONPATH=src
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _flops(sizes: dict[str, int]) -> float:
    return 2.0 * sizes["M"] * sizes["N"] * sizes["K"]


def _cublas_ms(sizes: dict[str, int], options: object) -> float:
    """torch.matmul on bf16 (M, K) x (K, N), timed like the gate times a kernel."""
    import torch

    from argus.eval.timing import time_cuda

    a = torch.randn(sizes["M"], sizes["K"], device="cuda", dtype=torch.bfloat16)
    b = torch.randn(sizes["K"], sizes["N"], device="cuda", dtype=torch.bfloat16)
    t = time_cuda(lambda: torch.matmul(a, b), reps=options.reps, warmup=options.warmup, flush_l2=options.flush_l2)
    return float(t.median_ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", default="gemm_naive", help="the kernel the agent starts from")
    parser.add_argument("--expert", default="gemm_hopper", help="the library kernel to compare with")
    parser.add_argument("--budget", type=int, default=40, help="gated candidates after the start")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wall-s", type=float, default=None, help="stop planning after this many seconds")
    parser.add_argument("--timeout-s", type=float, default=150, help="per candidate (a hung kernel fails then)")
    parser.add_argument("--out", default="out/agent", help="directory for the store, the JSON and the plot")
    parser.add_argument("--store", default="", help="the run store (default OUT/runs.db)")
    parser.add_argument("--resume", default="", help="continue this run of the store (after a cut-off)")
    args = parser.parse_args(argv)

    import dataclasses

    from argus.agent.arms import task_for
    from argus.agent.loop import Budget, optimize
    from argus.eval import KernelCandidate, gate_kernel
    from argus.eval.device import environment
    from argus.eval.gate import GateOptions
    from argus.kernels import get_kernel

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start_entry = get_kernel(args.start)
    sizes = dict(task_for(start_entry.kernel, start_entry.params).bench_sizes[0])
    options = GateOptions(trials=5, baselines=(), cost_sizes=sizes)

    def show(event: object) -> None:
        if getattr(event, "kind", "") in ("finished", "invalid"):
            print(f"  [{time.monotonic() - t0:6.0f} s] step {event.step}: {event.arm} -> {event.verdict}, "
                  f"{event.ms} ms, best {event.best_ms} ms", flush=True)

    t0 = time.monotonic()
    store = Path(args.store) if args.store else out / "runs.db"
    budget = Budget(candidates=args.budget, wall_s=args.wall_s)
    if args.resume:
        result = optimize(None, resume=args.resume, budget=budget, store=store, on_step=show, timeout_s=args.timeout_s,
                          force=True)  # the run was cut off on another machine
    else:
        result = optimize(args.start, planner="bandit", coder="transform", budget=budget, store=store, seed=args.seed,
                          gate_options=options, on_step=show, candidates_dir=out / "candidates",
                          timeout_s=args.timeout_s)  # fmt: skip
    loop_s = time.monotonic() - t0

    import torch

    gpu = torch.cuda.is_available()
    expert_entry = get_kernel(args.expert)
    expert_task = task_for(expert_entry.kernel, expert_entry.params)
    expert = gate_kernel(
        expert_task,
        KernelCandidate(args.expert, expert_entry.kernel, dict(expert_entry.params)),
        sizes if gpu else None,  # without a GPU: the interpreter at the task's small sizes, and an estimate
        options=dataclasses.replace(options, cost_sizes=sizes),
    ).to_json()
    from argus.agent.loop import gate_time

    expert_ms, metric = gate_time(expert)
    cublas_ms = _cublas_ms(sizes, options) if gpu else None  # no GPU: estimates only
    flops = _flops(sizes)

    def tflops(ms: float | None) -> float | None:
        return flops / (ms * 1e-3) / 1e12 if ms else None

    rows = []
    best_so_far = None
    for row in result.trajectory:
        if row["status"] == "accepted" and row["ms"]:
            best_so_far = min(best_so_far or row["ms"], row["ms"])
        rows.append({**row, "tflops": tflops(row["ms"]), "best_tflops": tflops(best_so_far)})
    best_ms = result.best["ms"] if result.best else None
    first_90 = next(
        (r["step"] for r in rows if expert_ms and r["best_tflops"] and r["best_tflops"] >= 0.9 * tflops(expert_ms)),
        None,
    )
    report = {
        "environment": environment("cuda"),
        "sizes": sizes,
        "metric": result.metric,
        "budget": args.budget,
        "seed": args.seed,
        "loop_wall_s": loop_s,
        "stop_reason": result.stop_reason,
        "start": args.start,
        "best": result.best,
        "best_tflops": tflops(best_ms),
        "expert": {"kernel": args.expert, "params": expert_entry.params, "ms": expert_ms, "metric": metric,
                   "verdict": expert.get("verdict"), "tflops": tflops(expert_ms)},  # fmt: skip
        "cublas": {"ms": cublas_ms, "tflops": tflops(cublas_ms)},
        "fraction_of_expert": (expert_ms / best_ms) if expert_ms and best_ms else None,
        "first_step_at_90pct_of_expert": first_90,
        "trajectory": rows,
    }
    (out / "agent.json").write_text(json.dumps(report, indent=1, default=str))
    print(f"\n{result.metric} at {sizes}; loop {loop_s:.0f} s; stopped: {result.stop_reason}")
    print("| step | action | kernel | params | verdict | ms | TFLOP/s | best TFLOP/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ms = f"{r['ms']:.4f}" if r["ms"] else "-"
        tf = f"{r['tflops']:.1f}" if r["tflops"] else "-"
        bt = f"{r['best_tflops']:.1f}" if r["best_tflops"] else "-"
        params = json.dumps(r["params"], separators=(",", ":"))
        print(f"| {r['step']} | {r['action']} | {r['kernel']} | {params} | {r['status']} | {ms} | {tf} | {bt} |")
    print(f"\nexpert {args.expert} {expert_entry.params}: {expert_ms} ms = {tflops(expert_ms)} TFLOP/s ({metric}, "
          f"{expert.get('verdict')})")  # fmt: skip
    if cublas_ms:
        print(f"cuBLAS torch.matmul bf16: {cublas_ms:.4f} ms = {tflops(cublas_ms):.1f} TFLOP/s")
    frac = report["fraction_of_expert"]
    print(f"best: {report['best_tflops']} TFLOP/s = {frac:.3f} of the expert; first step at >= 90 %: {first_90}"
          if frac else "best: none")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
