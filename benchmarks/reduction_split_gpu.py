"""When a reduction into few outputs should run in two stages (`argus.frontend.families.reduction.split_of`): a sum
of one vector of R elements, solved by `argus solve` as one kernel (one block walks R) and as the two-stage split
(`SPLIT_MIN_ELEMENTS` lowered to 0), each `ModelNew` timed interleaved with `torch.sum` in eager mode
(`argus.eval.timing.time_interleaved_cuda`). A diagnostic for the threshold, not a test.

    python benchmarks/reduction_split_gpu.py [--sizes 4096,32768,262144,1048576] [--rounds 20]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

PROBLEM = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum()


def get_inputs():
    return [torch.randn({r})]


def get_init_inputs():
    return []
"""


def main() -> None:
    import torch

    import argus.frontend.families.reduction as red
    from argus.eval.candidates import import_file
    from argus.eval.gate import GateOptions
    from argus.eval.timing import Contender, time_interleaved_cuda
    from argus.frontend import solve

    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,32768,262144,1048576")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    options = GateOptions(device="cuda", trials=5, reps=5, baselines=())
    default = red.SPLIT_MIN_ELEMENTS
    print("| R | eager ms | one kernel ms | two stages ms | x eager (one) | x eager (two) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in (int(v) for v in args.sizes.split(",")):
        path = work / f"sum_{r}.py"
        path.write_text(PROBLEM.format(r=r))
        models = {}
        for label, threshold in (("one", 1 << 62), ("two", 0)):
            red.SPLIT_MIN_ELEMENTS = threshold
            try:
                result = solve(path, out=work / f"sum_{r}_{label}.py", judge=False, options=options)
            finally:
                red.SPLIT_MIN_ELEMENTS = default
            staged = "Stages(" in Path(result.solution).read_text()
            models[label] = (import_file(Path(result.solution), f"sum_{r}_{label}").ModelNew().cuda(), staged)
        x = torch.randn(r, device="cuda")
        contenders = {"eager": Contender(lambda x=x: x.sum())}
        for label, (model, _) in models.items():
            contenders[label] = Contender(lambda m=model, x=x: m(x))
        with torch.no_grad():
            timing = time_interleaved_cuda(contenders, reference="eager", rounds=args.rounds, warmup=3, graph=False)
        ms = {k: t.median_ms for k, t in timing.timings.items()}
        note = "" if models["two"][1] else " (split_of found no split)"
        print(
            f"| {r} | {ms['eager']:.4f} | {ms['one']:.4f} | {ms['two']:.4f}{note} | {ms['eager'] / ms['one']:.3f} | "
            f"{ms['eager'] / ms['two']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
