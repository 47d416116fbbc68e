"""Cross-entropy and NLL over class indices (`argus.frontend.families.indexing`) on a GPU, at shapes beyond
KernelBench's: each case is written as a problem file, solved by `argus solve` at its size (kernels verified and
checked on the GPU, not judged), and its `ModelNew` timed interleaved with the problem's `Model` in eager mode and
under `torch.compile` (`argus.eval.timing.time_interleaved_cuda`: one call of each per round, order rotating, L2
flushed). The output is compared with eager's first. A benchmark, not a test.

    python benchmarks/class_loss_gpu.py [--rounds 20] [--out DIR] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

#: name -> (forward body, batch, classes, dtype, extra inputs): LLM vocabularies, ImageNet, KernelBench's own.
CASES: dict[str, tuple[str, int, int, str, str]] = {
    "kb95_f32_32768x4096": ("F.cross_entropy(x, t)", 32768, 4096, "float32", ""),
    "imagenet_f32_4096x1000": ("F.cross_entropy(x, t)", 4096, 1000, "float32", ""),
    "llama_bf16_8192x32000": ("F.cross_entropy(x, t)", 8192, 32000, "bfloat16", ""),
    "gpt2_bf16_4096x50257": ("F.cross_entropy(x, t)", 4096, 50257, "bfloat16", ""),
    "smooth_f32_16384x8192": ("F.cross_entropy(x, t, label_smoothing=0.1)", 16384, 8192, "float32", ""),
    "weighted_sum_f32_16384x1000": ("F.cross_entropy(x, t, weight=w, reduction='sum')", 16384, 1000, "float32", "w"),
    "nll_logsoftmax_f32_16384x8192": ("F.nll_loss(F.log_softmax(x, 1), t)", 16384, 8192, "float32", ""),
    "none_bf16_65536x1024": ("F.cross_entropy(x, t, reduction='none')", 65536, 1024, "bfloat16", ""),
}

PROBLEM = """
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, {args}):
        return {body}


def get_inputs():
    x = torch.randn({b}, {c}, dtype=torch.{dtype}) * 3
    t = torch.randint(0, {c}, ({b},))
    return [x, t{extra}]


def get_init_inputs():
    return []
"""


def main() -> None:
    import torch

    from argus.eval.candidates import import_file
    from argus.eval.gate import GateOptions
    from argus.eval.timing import Contender, time_interleaved_cuda
    from argus.frontend import solve

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    work = Path(args.out or tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        body, b, c, dtype, extra = CASES[name]
        path = work / f"{name}.py"
        extra_input = f", torch.rand({c}, dtype=torch.{dtype}) + 0.5" if extra else ""
        path.write_text(
            PROBLEM.format(args="x, t, w" if extra else "x, t", body=body, b=b, c=c, dtype=dtype, extra=extra_input)
        )
        options = GateOptions(device="cuda", trials=5, reps=5, baselines=())
        result = solve(path, out=work / f"{name}_solution.py", judge=False, options=options)
        kernels = ", ".join(f"{k.name}:{k.verdict}" for k in result.kernels)
        if not result.covered or not all(k.interpreter_ok for k in result.kernels):
            rows.append(f"| {name} | not solved: {result.uncovered} {kernels} | | | | |")
            continue
        problem = import_file(path, f"problem_{name}")
        solution = import_file(Path(result.solution), f"solution_{name}")
        torch.manual_seed(0)
        inputs = [x.cuda() for x in problem.get_inputs()]
        model = problem.Model().cuda()
        new = solution.ModelNew().cuda()
        compiled = torch.compile(model)
        with torch.no_grad():
            want, got, comp = model(*inputs), new(*inputs), compiled(*inputs)
        err = float((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30))
        contenders = {
            "eager": Contender(lambda m=model, x=inputs: m(*x)),
            "compile": Contender(lambda m=compiled, x=inputs: m(*x)),
            "argus": Contender(lambda m=new, x=inputs: m(*x)),
        }
        with torch.no_grad():
            timing = time_interleaved_cuda(contenders, reference="eager", rounds=args.rounds, warmup=3, graph=False)
        ms = {k: t.median_ms for k, t in timing.timings.items()}
        rows.append(
            f"| {name} | {ms['eager']:.4f} | {ms['compile']:.4f} | {ms['argus']:.4f} | "
            f"{ms['eager'] / ms['argus']:.3f} | {ms['compile'] / ms['argus']:.3f} | {err:.1e} | "
            f"{len(result.kernels)} |"
        )
        del comp
        print(rows[-1], flush=True)
    print("| case | eager ms | compile ms | argus ms | x eager | x compile | rel. err | kernels |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
