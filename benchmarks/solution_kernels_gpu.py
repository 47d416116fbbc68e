"""Where a KernelBench solution's GPU time goes, kernel by kernel, beside eager PyTorch's on the same inputs: each
(problem, solution) pair is loaded as the judge loads it (`argus.tasks.kernelbench.load_problem`, the solution file
imported), run a few times to compile and warm up, then `torch.profiler` records `--iters` calls of the solution and
of the problem's `Model` (eager), and the table lists each one's GPU kernels by total time (name, calls per
forward, ms per forward). Times under the profiler are not the judge's: use them for the breakdown, the judge for
the ratio.

    PYTHONPATH=src ARGUS_KERNELBENCH_DIR=... python benchmarks/solution_kernels_gpu.py LEVEL SOLUTIONS_DIR IDS
        [--iters 5] [--top 8]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _kernels(torch, fn, iters: int) -> list[tuple[str, int, float]]:  # noqa: ANN001
    """(kernel name, launches per call, GPU ms per call) of `fn`, by total time."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type.name != "CUDA":
            continue
        r = rows.setdefault(e.name, [0, 0.0])
        r[0] += 1
        r[1] += (getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)) / 1000.0
    out = [(name, round(n / iters), ms / iters) for name, (n, ms) in rows.items()]
    return sorted(out, key=lambda r: -r[2])


def main() -> None:
    import torch

    from argus.tasks.kernelbench import default_kernelbench_dir

    ap = argparse.ArgumentParser()
    ap.add_argument("level", type=int)
    ap.add_argument("solutions", type=Path)
    ap.add_argument("ids")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    root = default_kernelbench_dir()
    for pid in [int(i) for i in args.ids.split(",")]:
        try:
            _one(torch, args, root, pid)
        except Exception:  # noqa: BLE001 - one problem's failure is printed, the next one runs
            import traceback

            print(f"## L{args.level}/{pid}: failed")
            traceback.print_exc(limit=4)


def _one(torch, args, root, pid: int) -> None:  # noqa: ANN001
    """Load problem `pid` and its solution, print both kernel tables (see the module docstring)."""
    from argus.tasks.kernelbench import discover, load_problem

    (found,) = discover(root, args.level, [pid])
    problem = load_problem(found.path)
    files = list(args.solutions.glob(f"{pid}_*.py"))
    if not files:
        print(f"## L{args.level}/{pid}: no solution in {args.solutions}")
        return
    os.environ["ARGUS_PROBLEM"] = str(found.path)  # where a solution finds its problem's Model, as the judge says
    spec = importlib.util.spec_from_file_location(f"solution_{pid}", files[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    init = problem.get_init_inputs()
    model = problem.model(*init).cuda()
    new = module.ModelNew(*init).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.sample(0, "cuda")]
    with torch.no_grad():
        for _ in range(3):
            new(*inputs)
            model(*inputs)
        torch.cuda.synchronize()
        print(f"## L{args.level}/{pid} {found.path.stem}")
        for label, module_ in (("argus", new), ("eager", model)):
            rows = _kernels(torch, lambda m=module_, xs=inputs: m(*xs), args.iters)
            total = sum(r[2] for r in rows)
            print(f"{label}: {total:.3f} ms of GPU kernels a call")
            for name, n, ms in rows[: args.top]:
                print(f"  {ms:8.3f} ms  x{n:<3d} {name[:150]}")
    del model, new, inputs
    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
