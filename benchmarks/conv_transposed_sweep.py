"""Transposed convolution (issue #21): the stride phases on the implicit kernel (`argus.kernels.conv.transposed_phases`,
through `LibraryConv`) against torch's `conv_transpose{1,2}d` (cuDNN, strict fp32 and TF32) and against argus's
gather path on the upsampled input (`LibraryConv(implicit=False)`, what ran before), interleaved in one process, L2
flushed before every launch, CUDA events (`gemm_parity.interleaved_times`). A call of ours includes its host work.

    PYTHONPATH=src ARGUS_KERNELBENCH_DIR=... python benchmarks/conv_transposed_sweep.py [--rounds 10] [--json F]
        [--no-gather] [--only LABEL,...]

Rows: the first transposed convolution (without groups, 1-d or 2-d) of each KernelBench problem named in `PROBLEMS`,
at the problem's own sizes and inputs (read from the KernelBench directory, never copied here), f32; and decoder
layers in bf16 at batch 32 (`LAYERS`). Every output is checked first against torch in float64 on the first two images
(relative max error: f32 1e-4, bf16 2e-2); a wrong row is marked and not timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

#: (level, problem id): the KernelBench problems whose transposed convolution has no groups (1-d and 2-d)
PROBLEMS = [
    (1, 57), (1, 64), (1, 65), (1, 69), (1, 71), (1, 74), (1, 78), (1, 79), (1, 81),
    (2, 2), (2, 5), (2, 10), (2, 11), (2, 16), (2, 19), (2, 36), (2, 42), (2, 44), (2, 91), (2, 93),
]  # fmt: skip
#: (label, N, C, F, H, W, kernel, stride, padding, output padding): decoder layers, bf16
LAYERS = [
    ("DCGAN 4x4/2 512->256 8x8", 32, 512, 256, 8, 8, 4, 2, 1, 0),
    ("DCGAN 4x4/2 256->128 16x16", 32, 256, 128, 16, 16, 4, 2, 1, 0),
    ("UNet 2x2/2 512->256 32x32", 32, 512, 256, 32, 32, 2, 2, 0, 0),
    ("UNet 2x2/2 128->64 128x128", 32, 128, 64, 128, 128, 2, 2, 0, 0),
    ("3x3/2 op1 256->128 28x28", 32, 256, 128, 28, 28, 3, 2, 1, 1),
    ("3x3/1 128->128 56x56", 32, 128, 128, 56, 56, 3, 1, 1, 0),
]


def kernelbench_rows(torch, only, problems=None, kinds=None):  # noqa: ANN001, ANN201
    """(label, module, x) of each problem's first convolution of `kinds` (default: transposed 1-d and 2-d) without
    groups, at the problem's own sizes (`problems`: (level, id) pairs, default `PROBLEMS`)."""
    from argus.tasks.kernelbench import default_kernelbench_dir, discover, load_problem

    kinds = kinds or (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d)
    root = default_kernelbench_dir()
    for level, pid in problems or PROBLEMS:
        found = discover(root, level, [pid])
        if not found:
            print(f"| L{level}/{pid} | not found under {root} |")
            continue
        task = load_problem(found[0].path, {}, strict=False)
        label = f"L{level}/{found[0].path.stem}"[:48]
        if only and not any(o in label for o in only):
            continue
        torch.manual_seed(0)
        model = task.model(*task.get_init_inputs())
        convs = [m for m in model.modules() if isinstance(m, kinds)]
        if not convs or convs[0].groups != 1:
            print(f"| {label} | no {'/'.join(k.__name__ for k in kinds)} without groups |")
            continue
        x = task.get_inputs()[0]
        yield label, convs[0].cuda(), x.cuda()


def conv_of(m, x, dtype: str):  # noqa: ANN001, ANN201
    """The `Conv` of module m (a torch convolution, forward or transposed, without groups) applied to x."""
    import torch

    from argus.kernels.conv import Conv

    transposed = isinstance(m, torch.nn.modules.conv._ConvTransposeNd)
    rank = x.dim() - 2
    pre = 3 - rank

    def three(v, fill):  # noqa: ANN001, ANN202
        return (fill,) * pre + tuple(v)

    return Conv(
        rank, x.shape[0], x.shape[1], m.out_channels, 1, three(x.shape[2:], 1), three(m.kernel_size, 1),
        three(m.stride, 1), three(m.padding, 0), three(m.dilation, 1), m.bias is not None, dtype,
        transposed=transposed, output_padding=three(m.output_padding, 0) if transposed else (0, 0, 0),
    )  # fmt: skip


def start(torch):  # noqa: ANN001, ANN201
    """Print the environment and cuDNN's version; the L2-flush buffer `interleaved_times` zeroes."""
    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}")
    return torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


def finish(torch, results: list, path: Path | None) -> int:  # noqa: ANN001
    """Print the environment after the sweep and write the rows to `path` (JSON) where given."""
    for line in environment(torch):
        print(f"after: {line}")
    if path:
        path.write_text(json.dumps(results, indent=1))
    return 0


def cudnn(torch, fn, tf32: bool, *args, **kw) -> None:  # noqa: ANN001
    """torch's convolution `fn` with cuDNN's TF32 switch as given (the strict fp32 or the TF32 baseline)."""
    torch.backends.cudnn.allow_tf32 = tf32
    fn(*args, **kw)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-gather", action="store_true")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    only = [o for o in args.only.split(",") if o]

    import torch
    import torch.nn.functional as F

    from argus.kernels.conv import LibraryConv, conv_plan

    scratch = start(torch)
    rows = list(kernelbench_rows(torch, only))
    for label, n, c, f, h, w, k, s, p, op in LAYERS:
        if only and not any(o in label for o in only):
            continue
        m = torch.nn.ConvTranspose2d(c, f, k, s, p, op).cuda().to(torch.bfloat16)
        rows.append((label, m, torch.randn(n, c, h, w, device="cuda", dtype=torch.bfloat16)))
    results = []
    print(
        "\n| row | plan | argus ms | cuDNN fp32 ms | x cuDNN fp32 | cuDNN TF32 ms | x TF32 | gather ms | x gather "
        "| err |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    for label, m, x in rows:
        dt = "bf16" if x.dtype == torch.bfloat16 else "f32"
        conv = conv_of(m, x, dt)
        wt, b = m.weight.detach(), (m.bias.detach() if m.bias is not None else None)
        fn = F.conv_transpose1d if x.dim() == 3 else F.conv_transpose2d
        kw = {"stride": m.stride, "padding": m.padding, "output_padding": m.output_padding, "dilation": m.dilation}
        row = {"row": label, "plan": conv_plan(conv).describe(), "conv": str(conv)}
        inputs = [x, wt] + ([b] if b is not None else [])
        try:
            call = LibraryConv("conv", conv)
            out = call.empty_output(*inputs)
            call(*inputs, out)
            ref = fn(x[:2].double(), wt.double(), None if b is None else b.double(), **kw)
            torch.cuda.synchronize()
            err = ((out[:2].double() - ref).abs().max() / ref.abs().max().clamp_min(1.0)).item()
            row["err"] = err
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the sweep goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"| {label} | FAILED: {row['error']} |")
            results.append(row)
            continue
        if err > (2e-2 if dt == "bf16" else 1e-4):
            print(f"| {label} | {row['plan']} | WRONG: err {err:.2e} |")
            results.append(row)
            continue

        def ours(call=call, inputs=inputs, out=out) -> None:  # noqa: ANN001
            call(*inputs, out)

        launches = {
            "argus": ours,
            "fp32": lambda x=x, wt=wt, b=b, fn=fn, kw=kw: cudnn(torch, fn, False, x, wt, b, **kw),
        }
        if dt == "f32":
            launches["tf32"] = lambda x=x, wt=wt, b=b, fn=fn, kw=kw: cudnn(torch, fn, True, x, wt, b, **kw)
        if not args.no_gather:
            gather = LibraryConv("conv", conv, implicit=False)
            o2 = torch.empty_like(out)
            launches["gather"] = lambda gather=gather, inputs=inputs, o2=o2: gather(*inputs, o2)
        times = interleaved_times(torch, launches, args.rounds, scratch)
        torch.backends.cudnn.allow_tf32 = True
        ms = {name: statistics.median(t) for name, t in times.items()}
        row.update({f"{k}_ms": v for k, v in ms.items()})

        cells = [f"{ms[k]:.3f} | {ms[k] / ms['argus']:.2f}" if k in ms else "— | —" for k in ("fp32", "tf32", "gather")]
        print(f"| {label} | {row['plan']} | {ms['argus']:.3f} | {' | '.join(cells)} | {err:.1e} |")
        results.append(row)
    return finish(torch, results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
