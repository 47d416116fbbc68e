"""Does the programmatic-dependent-launch prologue (``griddepcontrol.wait; griddepcontrol.launch_dependents`` at the
start of every generated kernel in session 28; since then only of kernels generated with ``dependent=True``) cost
time in kernels of many short blocks, launched plainly? A/B on generated KernelBench solutions: each ``ModelNew``
built twice, its kernels generated with the prologue (``argus.runtime.build(..., dependent=True)``) and without it
(the default), timed interleaved with eager in one process (CUDA events around each call, median of the rounds,
order rotating). Run 5 of benchmarks/results/2026-11-30-level1-judge/ measured the tree of session 28, where the
prologue was the default and ``Emitter.grid_dependency = False`` turned it off.

    PYTHONPATH=src python benchmarks/grid_dependency_ab.py --problems .kbdata/kernelbench/level1 \
        --solutions .gen29/b/solutions 44_Average_Pooling_1D 41_Max_Pooling_1D ...
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("names", nargs="+")
    p.add_argument("--problems", type=Path, required=True)
    p.add_argument("--solutions", type=Path, nargs="+", required=True)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    import torch

    import argus.runtime

    plain_build = argus.runtime.build

    out = []
    for name in args.names:
        problem = _load(args.problems / f"{name}.py", f"problem_{len(out)}")
        solution = next(f for d in args.solutions for f in [d / f"{name}.py"] if f.exists())
        torch.manual_seed(0)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
        init = problem.get_init_inputs()
        ref = problem.Model(*init).cuda()
        models = {}
        for label, flag in (("no prologue", False), ("prologue", True)):
            argus.runtime.build = lambda kernel, flag=flag, **params: plain_build(kernel, dependent=flag, **params)
            module = _load(solution, f"solution_{len(out)}_{flag}")
            m = module.ModelNew(*init).cuda()
            got = m(*inputs)  # builds the kernels with this flag
            torch.cuda.synchronize()
            want = ref(*inputs)
            err = (got.float() - want.float()).abs().max().item()
            models[label] = (m, err)
        argus.runtime.build = plain_build
        contenders = {"eager": lambda ref=ref, inputs=inputs: ref(*inputs)}
        for label, (m, _e) in models.items():
            contenders[label] = lambda m=m, inputs=inputs: m(*inputs)
        names = list(contenders)
        times = {k: [] for k in names}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for fn in contenders.values():
            fn()
        for r in range(args.rounds):
            for k in names[r % len(names) :] + names[: r % len(names)]:
                torch.cuda.synchronize()
                start.record()
                contenders[k]()
                end.record()
                end.synchronize()
                times[k].append(start.elapsed_time(end))
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {
            "problem": name,
            **{f"{k} ms": med[k] for k in names},
            **{f"{k} max err": models[k][1] for k in models},
        }
        out.append(row)
        with_, none = med["prologue"], med["no prologue"]
        print(
            f"{name:<34} eager {med['eager']:8.3f}  prologue {with_:8.3f} ({med['eager'] / with_:.3f}x)"
            f"  none {none:8.3f} ({med['eager'] / none:.3f}x)"
            f"  err {models['prologue'][1]:.2e}/{models['no prologue'][1]:.2e}",
            flush=True,
        )
        contenders.clear()
        models.clear()
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
