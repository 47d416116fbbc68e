"""The layout family's copy kernels (`argus.frontend.families.layout`) against PyTorch's own copy of the same
operator (``.contiguous()`` of the view, ``torch.cat``, ``F.pad``, ...), interleaved in one process, L2 flushed
before every launch, CUDA events (`gemm_parity.interleaved_times`).

    PYTHONPATH=src python benchmarks/layout_bench.py [--rounds 30] [--json F]

Each row is a one-operator problem (written to a temporary directory), captured and generated as ``argus solve``
does; its layout group's kernel is built for the GPU and run on the tensors viewed as its `KernelSource.shapes`
say. Every output is checked equal to PyTorch's first (a copy is exact). GB/s counts twice the output's bytes
(written, and as much read) over the median time; "% HBM" is that over the data sheet's bandwidth
(`argus.atoms.target`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (label, forward body over x (and y), input shapes, dtype, PyTorch's copy as a lambda of the inputs)
ROWS = [
    ("heads (B,S,H,D)->(B,H,S,D) bf16", "x.permute(0, 2, 1, 3)", [(16, 2048, 16, 128)], "bfloat16",
     lambda x: x.permute(0, 2, 1, 3).contiguous()),
    ("transpose (B,C,HW)->(B,HW,C) f32", "x.transpose(1, 2)", [(32, 256, 3136)], "float32",
     lambda x: x.transpose(1, 2).contiguous()),
    ("cat channels NCHW f32", "torch.cat([x, y], dim=1)", [(32, 256, 56, 56), (32, 128, 56, 56)], "float32",
     lambda x, y: torch.cat([x, y], dim=1)),
    ("LSTM gates chunk(4)[2] f32", "x.chunk(4, dim=1)[2]", [(4096, 4096)], "float32",
     lambda x: x.chunk(4, dim=1)[2].contiguous()),
    ("select a time step f32", "x[:, -1, :]", [(64, 512, 1024)], "float32", lambda x: x[:, -1, :].contiguous()),
    ("expand (B,1,D)->(B,S,D) bf16", "x.expand(32, 1024, 1024)", [(32, 1, 1024)], "bfloat16",
     lambda x: x.expand(32, 1024, 1024).contiguous()),
    ("roll (3, -3) on (H, W) f32", "torch.roll(x, shifts=(3, -3), dims=(1, 2))", [(64, 224, 224)], "float32",
     lambda x: torch.roll(x, shifts=(3, -3), dims=(1, 2))),
    ("pad (1, 1, 1, 1) f32", "torch.nn.functional.pad(x, (1, 1, 1, 1))", [(32, 64, 112, 112)], "float32",
     lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1))),
]  # fmt: skip

torch = None  # set in main (the lambdas above read it)


def _problem(directory: Path, i: int, body: str, shapes: list, dtype: str) -> Path:
    names = "xy"[: len(shapes)]
    inputs = ", ".join(f"torch.randn({', '.join(map(str, s))}).to(torch.{dtype})" for s in shapes)
    path = directory / f"layout_row{i}.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def forward(self, {', '.join(names)}):\n        return {body}\n\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    return path


def main() -> int:
    global torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch as _torch

    torch = _torch
    import argus.runtime
    from argus.atoms.target import H200
    from argus.eval.candidates import import_file
    from argus.frontend import capture, generate
    from argus.frontend.emit import emit
    from argus.frontend.partition import Family

    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    results, wrong = [], False
    print("\n| row | argus ms | PyTorch ms | x PyTorch | argus GB/s | % HBM | kernel |")
    print("|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, body, shapes, dtype, reference) in enumerate(ROWS):
            path = _problem(Path(tmp), i, body, shapes, dtype)
            part, sources = generate(capture(path))
            groups = [g for g in part.groups if g.family is Family.LAYOUT]
            if len(groups) != 1 or part.uncovered:
                print(f"| {label} | not one layout kernel: {[g.ops for g in part.groups]} {part.uncovered} |")
                wrong = True
                continue
            (g,) = groups
            src = sources[g.kernel]
            target = Path(tmp) / f"layout_row{i}_solution.py"
            target.write_text(emit(part, sources))
            kernel = getattr(import_file(target, f"layout_bench_{i}"), g.kernel)
            built = argus.runtime.build(kernel)
            gen = torch.Generator(device="cuda").manual_seed(i)
            xs = [torch.randn(*s, device="cuda", generator=gen).to(getattr(torch, dtype)) for s in shapes]
            want = reference(*xs)
            out = torch.empty_like(want)
            views = [x.view(src.shapes[n]) for x, n in zip(xs, src.inputs, strict=True)]
            views.append(out.view(src.shapes[src.outputs[0]]))
            built(*views)
            torch.cuda.synchronize()
            if not torch.equal(out, want):
                print(f"| {label} | WRONG: max difference {float((out.float() - want.float()).abs().max())} |")
                wrong = True
                continue
            times = interleaved_times(
                torch, {"argus": lambda b=built, v=views: b(*v), "torch": lambda r=reference, x=xs: r(*x)},
                args.rounds, scratch,
            )  # fmt: skip
            med = {k: statistics.median(v) for k, v in times.items()}
            moved = 2 * want.numel() * want.element_size()  # the output written and as much read
            gbs = moved / (med["argus"] * 1e-3) / 1e9
            hbm = 100 * gbs / H200.hbm_gbs
            ratio = med["torch"] / med["argus"]
            row = {"row": label, "argus_ms": med["argus"], "torch_ms": med["torch"], "ratio": ratio, "gbs": gbs,
                   "kernel": src.kernel}  # fmt: skip
            results.append(row)
            print(f"| {label} | {med['argus']:.4f} | {med['torch']:.4f} | {row['ratio']:.3f} | {gbs:.0f} | "
                  f"{hbm:.0f} | {g.kernel} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"environment": environment(torch), "rows": results}, indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
