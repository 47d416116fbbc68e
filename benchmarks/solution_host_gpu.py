"""Where a small solution's time goes on the host: a generated `ModelNew` called back to back (no synchronization
between calls, one at the end), its wall time per call against the problem's `Model` in eager mode, and the
Python functions that take it (`cProfile`, by own time). A diagnostic for the solution's launch path, not a test.

    python benchmarks/solution_host_gpu.py PROBLEM.py SOLUTION.py [--calls 2000] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path


def main() -> None:
    import torch

    from argus.eval.candidates import import_file

    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    problem, solution = import_file(Path(args.problem), "problem"), import_file(Path(args.solution), "solution")
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    model = problem.Model(*problem.get_init_inputs()).cuda()
    new = solution.ModelNew(*problem.get_init_inputs()).cuda()

    def per_call(fn) -> float:
        with torch.no_grad():
            for _ in range(20):
                fn(*inputs)
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(args.calls):
                fn(*inputs)
            torch.cuda.synchronize()
        return (time.perf_counter() - start) / args.calls * 1e3

    for _ in range(2):  # interleaved: eager, then the solution, twice
        print(f"eager {per_call(model):.4f} ms a call, argus {per_call(new):.4f} ms a call (back to back, wall)")
    profiler = cProfile.Profile()
    with torch.no_grad():
        profiler.enable()
        for _ in range(args.calls):
            new(*inputs)
        profiler.disable()
        torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
