"""Convolution (issue #21): `argus.kernels.conv.LibraryConv` (im2col gather, the GEMM, the output pass) against
torch's `conv2d` (cuDNN), interleaved in one process, L2 flushed before every launch, CUDA events
(`gemm_parity.interleaved_times`). A call of ours includes its host work (it prepares the GEMM's launches on every
call), as a user's call does.

    PYTHONPATH=src python benchmarks/conv_sweep.py [--rounds 10] [--json F]

Rows: 2-d convolutions of ResNet-like layers in bf16 (3x3, 1x1, the strided 7x7 stem, a depthwise 3x3) and one in
f32 (cuDNN's default for f32 convolutions is TF32: `torch.backends.cudnn.allow_tf32`; ours is the bf16x3 split).
Every output is checked against torch's conv2d in float64 on the GPU first (relative max error: bf16 2e-2, f32
1e-3).
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

#: (label, N, C, F, H, W, kernel, stride, padding, groups, dtype)
ROWS = [
    ("3x3 64->64 56x56", 16, 64, 64, 56, 56, 3, 1, 1, 1, "bf16"),
    ("3x3 128->128 28x28", 16, 128, 128, 28, 28, 3, 1, 1, 1, "bf16"),
    ("3x3 256->256 14x14", 16, 256, 256, 14, 14, 3, 1, 1, 1, "bf16"),
    ("1x1 256->64 56x56", 16, 256, 64, 56, 56, 1, 1, 0, 1, "bf16"),
    ("7x7/2 3->64 224x224", 16, 3, 64, 224, 224, 7, 2, 3, 1, "bf16"),
    ("depthwise 3x3 128 56x56", 16, 128, 128, 56, 56, 3, 1, 1, 128, "bf16"),
    ("3x3 64->64 56x56 f32", 16, 64, 64, 56, 56, 3, 1, 1, 1, "f32"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch

    from argus.kernels.conv import Conv, LibraryConv

    for line in environment(torch):
        print(line)
    print(f"cuDNN {torch.backends.cudnn.version()}, allow_tf32 (conv) {torch.backends.cudnn.allow_tf32}")
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    results = []
    print("\n| row | argus ms | cuDNN ms | × cuDNN | TFLOP/s argus | err |\n|---|---|---|---|---|---|")
    for label, n, c, f, h, w, k, s, p, g, dt in ROWS:
        conv = Conv(2, n, c, f, g, (1, h, w), (1, k, k), (1, s, s), (0, p, p), (1, 1, 1), False, dt)
        gen = torch.Generator(device="cuda").manual_seed(n + c + f + h + k)
        x = torch.randn(n, c, h, w, device="cuda", generator=gen).to(dtypes[dt])
        wt = torch.randn(f, c // g, k, k, device="cuda", generator=gen).to(dtypes[dt]) / (c // g * k * k) ** 0.5
        row = {"row": label}
        try:
            call = LibraryConv("conv", conv)
            out = call.empty_output(x, wt)
            call(x, wt, out)
            ref = torch.nn.functional.conv2d(x.double(), wt.double(), stride=s, padding=p, groups=g)
            torch.cuda.synchronize()
            err = ((out.double().view_as(ref) - ref).abs().max() / ref.abs().max().clamp_min(1.0)).item()
            row["err"] = err
        except Exception as e:  # noqa: BLE001 - a row that fails is reported, the sweep goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            print(f"| {label} | FAILED: {row['error']} |")
            results.append(row)
            continue

        def ours(call=call, x=x, wt=wt, out=out) -> None:  # noqa: ANN001
            call(x, wt, out)

        def theirs(x=x, wt=wt, s=s, p=p, g=g) -> None:  # noqa: ANN001
            torch.nn.functional.conv2d(x, wt, stride=s, padding=p, groups=g)

        times = interleaved_times(torch, {"argus": ours, "cudnn": theirs}, args.rounds, scratch)
        ms = {name: statistics.median(t) for name, t in times.items()}
        flops = 2.0 * n * f * conv.positions * (c // g) * k * k
        row.update(argus_ms=ms["argus"], cudnn_ms=ms["cudnn"], x_cudnn=ms["cudnn"] / ms["argus"])
        ok = "" if err <= (2e-2 if dt == "bf16" else 1e-3) else " WRONG"
        print(
            f"| {label} | {ms['argus']:.4f} | {ms['cudnn']:.4f} | {row['x_cudnn']:.2f} | "
            f"{flops / ms['argus'] / 1e9:.0f} | {err:.1e}{ok} |"
        )
        results.append(row)
    for line in environment(torch):
        print(f"after: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
