"""A generated solution's kernel policies swept on a GPU at a problem's own sizes, through the whole `ModelNew`.

Each variant is the solution's forward with one kernel's parameters set (its `_launch` wrapped, so every other
kernel and every allocation stays as emitted), timed interleaved with the problem's `Model` in eager mode and with
the forward as emitted (`argus.eval.timing`: one call of each per round, order rotating, L2 flushed). Each
variant's output is compared with eager's first (the largest absolute difference, relative to eager's largest
magnitude, is printed). With `--alone`, a single-kernel flat solution (a pointwise kernel on flattened tensors) is
also launched alone on a preallocated output: the difference to the forward is what the ModelNew's call costs. A
diagnostic for choosing a template's defaults, not the judge.

    python benchmarks/solution_policy_gpu.py PROBLEM.py SOLUTION.py --kernel reduction_0
        --grid "BR=4,8,16;BN=256,512" [--rounds 10] [--alone]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path


def _grid(text: str) -> list[dict[str, int]]:
    """``"BR=4,8;BN=256"`` -> every combination, as parameter dicts."""
    if not text:
        return []
    names, values = [], []
    for part in text.split(";"):
        name, _, items = part.partition("=")
        names.append(name.strip())
        values.append([int(v) for v in items.split(",")])
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def main() -> None:
    import torch

    from argus.eval.candidates import import_file
    from argus.eval.timing import Contender, time_interleaved_cuda

    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--grid", default="")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--alone", action="store_true")
    args = ap.parse_args()
    problem, solution = import_file(Path(args.problem), "problem"), import_file(Path(args.solution), "solution")
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    new = solution.ModelNew(*problem.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    with torch.no_grad():
        want = model(*inputs)
    scale = float(want.abs().max()) or 1.0
    emitted_launch = solution._launch
    target = getattr(solution, args.kernel) if args.kernel else None

    def forward_with(params: dict[str, int]):
        def launch(kernel, tensors, shapes=None, **given):
            if kernel is target:
                given = {**given, **params}
            emitted_launch(kernel, tensors, shapes, **given)

        def run():
            solution._launch = launch
            try:
                return new(*inputs)
            finally:
                solution._launch = emitted_launch

        return run

    contenders = {"eager": Contender(lambda: model(*inputs)), "as emitted": Contender(lambda: new(*inputs))}
    checks = []
    variants = [("as emitted", {})] + [(",".join(f"{k}={v}" for k, v in p.items()), p) for p in _grid(args.grid)]
    for label, params in variants:
        run = forward_with(params)
        try:
            with torch.no_grad():
                out = run()
            torch.cuda.synchronize()
        except Exception as exc:  # a variant the kernel refuses (a tile it cannot take) is reported, not timed
            checks.append(f"{label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
            continue
        diff = float((out.double() - want.double()).abs().max()) / scale
        checks.append(f"{label}: max |out - eager| / max |eager| = {diff:.2e}")
        del out
        if params:
            contenders[label] = Contender(run)
    if args.alone:
        out = torch.empty_like(want)
        kernel = getattr(solution, args.kernel)
        contenders["kernel alone"] = Contender(lambda: emitted_launch(kernel, [*inputs, out]))
    del want
    with torch.no_grad():
        timing = time_interleaved_cuda(contenders, reference="eager", rounds=args.rounds, warmup=2, graph=False)
    print("\n".join(checks))
    print("| variant | ms | eager ms / variant ms (median of rounds) |\n|---|---:|---:|")
    for name, t in timing.timings.items():
        ratio = "1" if name == "eager" else f"{1.0 / timing.ratios[name].median:.3f}"
        print(f"| {name} | {t.median_ms:.3f} | {ratio} |")


if __name__ == "__main__":
    main()
