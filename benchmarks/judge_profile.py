"""Where the judge's time goes on one KernelBench problem: `argus.eval.gate.gate_module` (the sandboxed gate, as
`argus kernelbench` runs it) under cProfile in this process, with every stage's seconds and the sandbox's transfer
time. The candidate's own process shows here as waiting (``select``); its run time is the stage's
``seconds_candidate``.

    python benchmarks/judge_profile.py PROBLEM.py SOLUTION.py [--sizes batch_size=512] [--trials 2] [--reps 20]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--sizes", default="")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--baselines", default="eager,compile")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--dump-every", type=float, default=0.0, help="every S seconds, every thread's stack to stderr")
    args = ap.parse_args()

    from argus.eval.candidates import ModuleCandidate
    from argus.eval.gate import GateOptions, gate_module
    from argus.tasks.kernelbench import load_problem

    sizes = dict(kv.split("=") for kv in args.sizes.split(",") if kv) if args.sizes else {}
    sizes = {k: int(v) for k, v in sizes.items()}
    task = load_problem(Path(args.problem), sizes)
    baselines = tuple(b for b in args.baselines.split(",") if b)
    options = GateOptions(trials=args.trials, reps=args.reps, baselines=baselines)
    if args.dump_every > 0:
        import faulthandler
        import sys

        faulthandler.dump_traceback_later(args.dump_every, repeat=True, file=sys.stderr)
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    result = gate_module(task, ModuleCandidate(Path(args.solution).name, path=Path(args.solution)), options)
    profiler.disable()
    wall = time.perf_counter() - t0
    print(f"# {Path(args.problem).name}: {result.summary()}  ({wall:.1f} s)")
    for stage in result.stages:
        print(f"stage {stage.stage:10s} {stage.status.value:8s} {stage.seconds:8.2f} s")
    correct = result.stage("correct")
    if correct is not None:
        for t in correct.details.get("trials", []):
            print("trial", json.dumps(t))
        print("judge copies:", correct.details.get("judge_copies", "device"))
    print("sandbox:", json.dumps(result.environment.get("sandbox", {}), default=str)[:600])
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(args.top)
        print(f"## by {key}")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])


if __name__ == "__main__":
    main()
