"""Where a KernelBench judge spends its time: one problem at a time through `evaluate_problem` (the gate as
`argus kernelbench` runs it, the candidate in its sandbox), under cProfile in this process. Prints each stage's
wall time and the functions with the most cumulative time (this process only: time the sandbox spends shows up as
waiting in `Sandbox.call`).

    python benchmarks/gate_cost.py --level 1 --only 19,23,1 --trials 3 --reps 20
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.eval.gate import GateOptions  # noqa: E402
from argus.eval.kernelbench import evaluate_problem  # noqa: E402
from argus.tasks.kernelbench import default_kernelbench_dir, discover  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--only", default="19")
    ap.add_argument("--problems", default=None, help="KernelBench directory (default: the project's)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    root = Path(args.problems) if args.problems else default_kernelbench_dir()
    wanted = [int(x) for x in args.only.split(",") if x.strip()]
    records = []
    for problem in discover(root, args.level, wanted):
        options = GateOptions(trials=args.trials, reps=args.reps)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        try:
            out = evaluate_problem(problem, "identity", options=options)
        except KeyboardInterrupt:  # stopped from outside (a time limit): the profile so far is still the answer
            out = None
        prof.disable()
        wall = time.perf_counter() - t0
        stages = (
            [(s["stage"], s["status"], round(float(s.get("seconds", 0.0)), 2)) for s in out["gate"]["stages"]]
            if (out is not None)
            else "interrupted"
        )
        print(f"\n== {problem.key}: {wall:.1f} s; stages {stages}", flush=True)
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(args.top)
        print("\n".join(line[:220] for line in text.getvalue().splitlines()[-args.top - 3 :]), flush=True)
        records.append({"problem": problem.key, "wall_s": wall, "stages": stages, "row": out and out["row"]})
        if out is None:
            break
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
