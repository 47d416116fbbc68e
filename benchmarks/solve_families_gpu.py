"""`argus solve`'s solutions at KernelBench's own sizes on a GPU, outside the judge: each solution's ModelNew against
the problem's Model on the same inputs (float64 reference on the device), then timed interleaved with eager
(`argus.eval.timing.time_interleaved_cuda`: one call of each per round, order rotating, L2 flushed). A diagnostic
before the judge's run (`argus kernelbench`), which is the number of record: it does not run the candidate in a
sandbox, and it draws one input.

    python benchmarks/solve_families_gpu.py PROBLEMS_DIR SOLUTIONS_DIR [--only 19,23] [--rounds 10] [--compile]
        [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import traceback
from pathlib import Path


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _one(problem: Path, sol: Path, pid: int, args) -> list[str]:
    import torch

    from argus.eval.timing import Contender, time_interleaved_cuda
    from argus.frontend.solve import relative_error
    from argus.tasks.kernelbench import PROBLEM_ENV

    os.environ[PROBLEM_ENV] = str(problem)  # where a solution that rebuilds the problem's Model finds it
    ref_mod = _load(problem, f"p{pid}")
    sol_mod = _load(sol, f"s{pid}")
    torch.manual_seed(0)
    init = ref_mod.get_init_inputs()
    torch.manual_seed(0)
    model = ref_mod.Model(*init).cuda()
    torch.manual_seed(0)
    new = sol_mod.ModelNew(*init).cuda()
    torch.manual_seed(1)
    with torch.device("cuda"):
        inputs = ref_mod.get_inputs()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        t0 = time.perf_counter()
        out = new(*inputs)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        high = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        want = model.double()(*high)
        model.float()
        err = relative_error(out, want)
        del want, high, out
        torch.cuda.empty_cache()
        contenders = {"argus": Contender(lambda: new(*inputs)), "eager": Contender(lambda: model(*inputs))}
        if args.compile:
            compiled = torch.compile(model)
            compiled(*inputs)
            contenders["compile"] = Contender(lambda: compiled(*inputs))
        timing = time_interleaved_cuda(contenders, reference="argus", rounds=args.rounds, warmup=2, graph=False)
    ms = {k: t.median_ms for k, t in timing.timings.items()}
    ratio = {k: r.median for k, r in timing.ratios.items()}
    row = [sol.stem, f"{err:.2e}", f"{ms['argus']:.3f}", f"{ms['eager']:.3f}", f"{ratio['eager']:.3f}"]
    row += [f"{ms['compile']:.3f}", f"{ratio['compile']:.3f}"] if args.compile else ["—", "—"]
    row.append(f"{first:.1f}")
    return row


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("problems")
    ap.add_argument("solutions")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--budget", type=float, default=500.0)
    args = ap.parse_args()
    only = {int(x) for x in args.only.split(",") if x}
    start = time.perf_counter()
    print("| problem | max rel. error | argus ms | eager ms | x eager | compile ms | x compile | first call s |")
    print("|---|---|---|---|---|---|---|---|")
    for sol in sorted(Path(args.solutions).glob("*.py"), key=lambda p: int(p.name.split("_")[0])):
        pid = int(sol.name.split("_")[0])
        if only and pid not in only:
            continue
        if time.perf_counter() - start > args.budget:
            print(f"| {sol.stem} | not run: budget of {args.budget:.0f} s spent | | | | | | |")
            continue
        try:
            row = _one(Path(args.problems) / sol.name, sol, pid, args)
        except Exception as e:  # noqa: BLE001 - a diagnostic: every problem gets its row
            row = [sol.stem, f"FAILED: {type(e).__name__}: {str(e)[:200]}".replace("|", "/").replace("\n", " ")]
            row += [""] * 6
            traceback.print_exc(file=sys.stderr)
        torch.cuda.empty_cache()
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
