"""Where an f32 implicit-GEMM convolution call's GPU time goes (issue #21): the NCHW -> NHWC permute of the input,
the split planes of the input (`split_bf16x3`), the kernel, and the NHWC -> NCHW copy of the output, each timed with
CUDA events (median of ROUNDS, no L2 flush: the stages run back to back as in a call), beside the whole call.

    PYTHONPATH=src python benchmarks/conv_implicit_stages.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conv_implicit_sweep import F32_ROWS, _pad3  # noqa: E402
from gemm_variants import environment  # noqa: E402


def _row(torch, C, row: tuple, rounds: int) -> tuple[str, dict[str, float]]:  # noqa: ANN001, N803
    """(label, median ms of each stage and of the whole call) for one f32 row."""
    label, rank, n, c, f, size, k, st, p, d, has_bias = row
    conv = C.Conv(
        rank, n, c, f, 1, _pad3(size, 1), _pad3(k, 1), _pad3(st, 1), _pad3(p, 0), _pad3(d, 1), has_bias, "f32"
    )
    x = torch.rand(n, c, *size, device="cuda")
    w = torch.rand(f, c, *k, device="cuda") - 0.5
    b = torch.rand(f, device="cuda") if has_bias else None
    call = C.LibraryConv("conv", conv)
    inputs = [x, w] + ([b] if has_bias else [])
    out = call.empty_output(*inputs)
    config = C.implicit_config(conv)
    xs, ws, ys = C._implicit_shapes(conv)
    loaded = C._loaded("implicit", C._key(C.implicit_params(conv, config, nchw=False)))
    split = C._loaded("split", C._key(C.split_params(conv.size[1] * conv.size[2], c, "A", batch=True)))
    wl = w.reshape(f, c, -1).permute(0, 2, 1).contiguous().view(-1, c)
    wv = C._split_on_gpu(wl, c, "B", C.implicit_channels(conv)).view(ws)
    bias = b if has_bias else torch.zeros(1, device="cuda")
    xl = torch.empty((n, conv.size[1], conv.size[2], c), device="cuda")
    rows = conv.size[1] * conv.size[2]  # each image's three planes together (the kernel's image 3n + t)
    planes = torch.empty((n, 3, rows, C.implicit_channels(conv)), dtype=torch.bfloat16, device="cuda")
    y = torch.empty(ys, device="cuda")
    x4 = x.reshape(n, c, conv.size[1], conv.size[2])
    prepared_split = split.prepare(xl.view(n, rows, c), planes)
    prepared = loaded.prepare(planes.view(xs), wv, bias, y)
    o4 = out.view(n, f, conv.out[1], conv.out[2])
    stages = {
        "permute": lambda: xl.copy_(x4.permute(0, 2, 3, 1)),
        "split": prepared_split.launch,
        "kernel": prepared.launch,
        "output": lambda: o4.copy_(y.permute(0, 3, 1, 2)),
        "call": lambda: call(*inputs, out),
    }
    times: dict[str, list[float]] = {s: [] for s in stages}
    for _ in range(2):
        for fn in stages.values():
            fn()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for name, fn in stages.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return label, {s: statistics.median(t) for s, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    import torch

    from argus.kernels import conv as C  # noqa: N812

    for line in environment(torch):
        print(line)
    print(
        "\n| f32 row | permute ms | split ms | kernel ms | output copy ms | sum | whole call ms |\n"
        "|---|---|---|---|---|---|---|"
    )
    for row in F32_ROWS:
        label, ms = _row(torch, C, row, args.rounds)
        parts = sum(ms[s] for s in ("permute", "split", "kernel", "output"))
        print(
            f"| {label} | {ms['permute']:.3f} | {ms['split']:.3f} | {ms['kernel']:.3f} | {ms['output']:.3f} | "
            f"{parts:.3f} | {ms['call']:.3f} |"
        )
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
